# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Layer ascend: the readers of an Ascend host - npu-smi and its tables, the version and install-record files,
hccn_tool and the NPU network plan, the wait for free NPUs, the NPU metrics.

May import: common.
The layers, lowest first: common < ascend < stack < serving < operations (docs/architecture.md)."""
