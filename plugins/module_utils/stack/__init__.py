# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Layer stack: the packages and the software stack - the Ascend packages and their backends, the OS package
lists, package sources, pip and venvs, the compatibility set and its rows, compliance, the stack upgrade, the
preflight checks and their host reader, the container engine's configuration, image archives.

May import: common, ascend.
The layers, lowest first: common < ascend < stack < serving < operations (docs/architecture.md)."""
