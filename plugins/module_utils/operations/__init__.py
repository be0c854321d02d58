# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Layer operations: running and watching a fleet - the benchmark, its report and load generator, the soak, the
failure catalogue, the doctor and its host reader, discovery, the fleet plan, monitoring and the node's textfile
exporter.

May import: common, ascend, stack, serving (every layer below it).
The layers, lowest first: common < ascend < stack < serving < operations (docs/architecture.md)."""
