#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_format_info
short_description: Read how a model directory says it is served (float, msModelSlim, compressed-tensors) and its size
version_added: 0.5.0
description:
  - Reads two files of the model directory O(path) - C(config.json) (architectures, model_type, torch_dtype,
    C(quantization_config) or the older C(compression_config)) and msModelSlim's C(quant_model_description.json)
    (model_quant_type and the per-tensor quant types) - and returns what they say, for the serving plan (filter
    C(kunpeng_ascend.vllm.serving_plan)) to check the serving flags against; and returns config.json itself and the
    weights' size (its safetensors index's C(metadata.total_size), the weight files' sizes) for the plan's sizing,
    which checks that the model fits the NPUs.
  - Only regular files are opened, without blocking, and at most 32 MiB of each is read (64 MiB of the one
    C(*.safetensors.index.json)); the directory itself is listed once, not its subdirectories, and at most 100000
    of its entries (it may hold hundreds of GB on NFS); the weight files are only looked at (their size), never
    opened.
  - Real description files are not always strict JSON (C(#) comments, C(...) lines, trailing commas); they are read
    with a warning. A file that cannot be read at all is a warning and RV(model_format.format=unknown), never a
    failure; a directory that does not exist is RV(model_format.exists=false).
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - It only reads.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  path:
    description:
      - The model directory, on the host the module runs on (the node, or the controller with C(delegate_to)).
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Read the model's format and size before serving it
  kunpeng_ascend.vllm.model_format_info:
    path: /data/models/DeepSeek-R1-W8A8
  register: model

- name: Serve an msModelSlim model with the ascend method
  ansible.builtin.assert:
    that: model.model_format.format != 'ascend' or vllm_service_quantization == 'ascend'
"""

RETURN = r"""
model_format:
  description: What the directory says.
  returned: always
  type: dict
  contains:
    path:
      description: The directory read.
      type: str
      sample: /data/models/DeepSeek-R1-W8A8
    exists:
      description: Whether it is a directory.
      type: bool
    error:
      description: Why the directory or one of its two files could not be read; empty when they could.
      type: str
      sample: ""
    config_found:
      description: Whether it has a C(config.json).
      type: bool
    format:
      description:
        - V(float) (a config.json without quantization), V(ascend) (an msModelSlim description, in
          C(quant_model_description.json) or embedded in config.json as MindIE writes it), V(quant_method) (a
          C(quantization_config) naming its C(quant_method), such as compressed-tensors, which vLLM detects) or
          V(unknown).
      type: str
      sample: ascend
    description_file:
      description: Whether C(quant_model_description.json) is there.
      type: bool
    model_quant_type:
      description: The description's model_quant_type (derived from the tensors' types when it names none and they
        agree); null otherwise.
      type: str
      sample: W8A8_DYNAMIC
    quant_types:
      description: Every quant type of the description but FLOAT, sorted.
      type: list
      elements: str
      sample: [W8A8_DYNAMIC]
    quant_method:
      description: The C(quant_method) of config.json's quantization_config.
      type: str
      sample: compressed-tensors
    quant_format:
      description: Its C(format).
      type: str
      sample: int-quantized
    architectures:
      description: config.json's architectures.
      type: list
      elements: str
      sample: [DeepseekV3ForCausalLM]
    model_type:
      description: config.json's model_type.
      type: str
      sample: deepseek_v3
    torch_dtype:
      description: config.json's torch_dtype (or dtype).
      type: str
      sample: bfloat16
    warnings:
      description: What could not be read as expected.
      type: list
      elements: str
config:
  description: The directory's C(config.json), parsed; null when the directory, the file or a JSON object in it is not
    there.
  returned: always
  type: dict
  sample: {architectures: [DeepseekV3ForCausalLM], model_type: deepseek_v3, hidden_size: 7168}
weights:
  description: What the directory says of its weights' size; null when it is not a directory.
  returned: always
  type: dict
  contains:
    index_total_size:
      description: The C(metadata.total_size) of its one C(*.safetensors.index.json) (bytes); null without one,
        with several, or when it is not a whole number above 0.
      type: int
      sample: 688586727753
    file_bytes:
      description: The bytes of its C(*.safetensors) files, else of its C(*.bin) and C(*.pt) files; null without
        any.
      type: int
      sample: 688603828224
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_format import read_model
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._sizing import read_model_weights
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import replace_undecodable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap


def main():
    module = AnsibleModule(argument_spec=dict(path=dict(type='path', required=True)), supports_check_mode=True)
    warnings = WarningCap()

    def warn(message):
        warnings(replace_undecodable(message))

    path = module.params['path']
    model_format, config = read_model(path, warn)
    weights = read_model_weights(path, warn) if model_format['exists'] else None
    warnings.emit(module.warn)
    module.exit_json(changed=False, model_format=replace_undecodable(model_format), config=replace_undecodable(config),
                     weights=weights)


if __name__ == '__main__':
    main()
