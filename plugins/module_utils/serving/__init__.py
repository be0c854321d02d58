# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Layer serving: the model and the vLLM deployment - the model's format, manifest and rollout, the sizing, the
serving plan, the deployment record, the data-parallel group's watch, quantization, TLS, the known good, the vLLM
endpoint's checks, the quantized model's agreement with its parent.

May import: common, ascend, stack.
The layers, lowest first: common < ascend < stack < serving < operations (docs/architecture.md)."""
