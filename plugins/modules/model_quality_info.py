#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_quality_info
short_description: Read whether a model is quantized and the agreement record of its manifest
version_added: 0.4.0
description:
  - Reads whether the model directory O(path) holds a quantized model (its C(config.json) declares a
    C(quantization_config), or it holds msModelSlim's C(quant_model_description*.json)), and the quality record that
    M(kunpeng_ascend.vllm.vllm_model_agreement) wrote for the manifest digest O(digest).
  - RV(serving_problems) says why the model may not be served when serving requires a passing agreement check (no
    record, a record of another manifest, or a failed check); it is empty when the record says C(PASS).
  - Only reads; changes nothing.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  path:
    description: The model directory.
    type: path
    required: true
  digest:
    description: The SHA-256 of the model's manifest (RV(kunpeng_ascend.vllm.model_manifest#module:manifest_sha256)).
    type: str
    required: true
  record_dir:
    description: Where the quality records are.
    type: path
    default: /var/lib/kunpeng_ascend/model_quality
"""

EXAMPLES = r"""
- name: Read the quality record of the model about to be served
  kunpeng_ascend.vllm.model_quality_info:
    path: /data/models/DeepSeek-R1-Distill-Qwen-7B-W8A8
    digest: "{{ manifest.manifest_sha256 }}"
  register: quality

- name: Refuse a quantized model without a passing agreement check
  ansible.builtin.assert:
    that: not quality.quantized or quality.serving_problems | length == 0
    fail_msg: "{{ quality.serving_problems | join('; ') }}"
"""

RETURN = r"""
quantized:
  description: Whether the directory holds a quantized model.
  returned: success
  type: bool
record_path:
  description: Where the record of O(digest) is.
  returned: success
  type: str
record:
  description: The record, null when there is none that is valid.
  returned: success
  type: dict
serving_problems:
  description: Why the model may not be served under a required agreement check; empty when it may.
  returned: success
  type: list
  elements: str
  sample: [there is none]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _agreement
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, read_regular_file

CONFIG_MAX_BYTES = 1 << 20


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            digest=dict(type='str', required=True),
            record_dir=dict(type='path', default=_agreement.RECORD_DIR),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        record_path = _agreement.record_path(params['digest'], params['record_dir'])
    except ValueError as error:
        module.fail_json(msg=str(error).replace('candidate_digest', 'digest'))
    if not os.path.isdir(params['path']):
        module.fail_json(msg='path %s is not a directory' % params['path'])
    config_path = os.path.join(params['path'], 'config.json')
    try:
        data = read_regular_file(config_path, CONFIG_MAX_BYTES, 'a model configuration')
        config = _json.loads(data) if data is not None else None
        text = read_regular_file(record_path, _agreement.MAX_RECORD_BYTES, 'a quality record')
    except UnreadableFile as error:
        module.fail_json(msg=str(error))
    except ValueError as error:
        module.fail_json(msg='%s is not JSON: %s' % (config_path, error))
    record, problems = _agreement.parse_record(text.decode('utf-8', 'replace') if text is not None else None,
                                               params['digest'])
    module.exit_json(
        changed=False, quantized=_agreement.is_quantized(config, os.listdir(params['path'])), record_path=record_path,
        record=record, serving_problems=['the quality record %s: %s' % (record_path, problem) for problem in
                                         _agreement.serving_problems(record, problems)])


if __name__ == '__main__':
    main()
