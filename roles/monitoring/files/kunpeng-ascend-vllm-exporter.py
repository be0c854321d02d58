# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node's metrics exporter (role kunpeng_ascend.vllm.monitoring): the collection's module_utils, copied beside
this file under ansible_collections/, do the work (_textfile_exporter.main). Run with an isolated Python 3.9 or newer
(python3 -I), which does not put this file's directory on the path: it is added here."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The import needs the path above.
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._textfile_exporter import main  # noqa: E402  pylint: disable=wrong-import-position

if __name__ == '__main__':
    sys.exit(main())
