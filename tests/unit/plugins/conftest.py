# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Fixtures of the plugins' tests.

* ``toml_reader``: the TOML reader that proves containerd's config.toml edit, once the standard library's tomllib
  (Python 3.11+; skipped where it is absent) and once the collection's own ``_toml``, the reader of Python 3.9 and
  3.10, forced; the engine-config tests use it on every test (``pytest.mark.usefixtures``).
"""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _toml
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _engine_config


@pytest.fixture(params=['tomllib', 'fallback'])
def toml_reader(request, monkeypatch):
    """The reader ``_engine_config`` proves its edit with: the standard library's or the collection's own."""
    if request.param == 'tomllib':
        monkeypatch.setattr(_engine_config, 'toml_loads', pytest.importorskip('tomllib').loads)
    else:
        monkeypatch.setattr(_engine_config, 'toml_loads', _toml.loads)
    return request.param
