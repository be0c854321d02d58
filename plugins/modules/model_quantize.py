#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_quantize
short_description: Quantize a float model directory to W8A8 with msModelSlim or llm-compressor
version_added: 0.3.0
description:
  - Checks every input first (the source is a float model, not quantized already; a model type the backend knows;
    the scheme; the calibration file; the output not inside the source; free space), then builds the output in
    C(<output>.partial.*) beside it and renames it into place only when complete, with its C(SHA256SUMS) manifest and
    C(quantize-record.json) (what made it).
  - An output whose record matches the one wanted and whose files match its manifest is kept (not changed).
  - Nothing the module did not make is replaced. What O(output) names is replaced only when it is an empty directory
    or a directory holding a C(quantize-record.json) this module wrote (RV(replaces)); a directory without one, a
    file, a link or anything else there is refused before anything changes, naming what is there.
  - O(output), O(venv) and O(configs_dir) are judged normalised (C(/usr/bin/..) is C(/usr)) and after their links are
    resolved; none may be a system directory (C(/), C(/usr), C(/etc), C(/var/lib) and the like) or a home
    directory, and neither O(venv) nor O(configs_dir) may lie inside O(output).
  - Every file read (the calibration file, C(config.json), C(quant_model_description.json), the record, the config
    or runner) must be a regular file of bounded size; a FIFO, a device or a socket is refused, never read.
  - V(msmodelslim) runs C(msmodelslim quant) with O(config) (a config is always given; without one its CLI asks for a
    confirmation on stdin). V(llmcompressor) runs O(runner) with the venv's python.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Checks the inputs and predicts a change when the output is missing or stale, without running the backend;
        RV(replaces) names what the run would replace.
  diff_mode:
    support: full
    details:
      - The record before and after.
  platform:
    support: full
    platforms: posix
options:
  source:
    description: The float model directory.
    type: path
    required: true
  output:
    description:
      - The quantized model directory to make; not inside O(source), nor a system or home directory.
      - Replaced only when it is an empty directory or an output this module made (with its C(quantize-record.json)).
    type: path
    required: true
  backend:
    description: The quantization tool.
    type: str
    choices: [msmodelslim, llmcompressor]
    default: msmodelslim
  scheme:
    description: The scheme; V(w8a8) is msModelSlim's static W8A8, or llm-compressor's W8A8 (dynamic activations).
    type: str
    default: w8a8
  model_type:
    description: The backend's model type; empty takes the one known for the source's C(model_type).
    type: str
    default: ''
  venv:
    description:
      - The venv that holds the backend (its C(bin/python), C(bin/msmodelslim)); required unless O(check_only).
      - The role installs it, so a system or home directory is refused (in the message as C(model_quantize_venv)).
    type: path
  config:
    description:
      - The msModelSlim config.
      - Unset, C(msmodelslim-deepseek-w8a8.yaml) (DeepSeek-V2/V3 sources) or C(msmodelslim-w8a8.yaml) in O(configs_dir).
    type: path
  configs_dir:
    description:
      - Where the role's msModelSlim configs are, for an unset O(config) - the role's work directory, which it creates,
        so a system or home directory is refused (in the message as C(model_quantize_work_dir)).
    type: path
  check_only:
    description:
      - Check the inputs that need no venv (source, model type, scheme, the paths, what is at the output path, the
        calibration file when given, the space factor, the time limit, free space) and stop, changing nothing; the
        role runs this before it installs anything.
    type: bool
    default: false
  runner:
    description: The llm-compressor runner script (required for V(llmcompressor) unless O(check_only)).
    type: path
  calibration_file:
    description:
      - Calibration texts, JSON lines with a C(text) string or plain text lines (used by V(llmcompressor); part of the
        record for both).
      - Required unless O(check_only).
    type: path
  device:
    description: msModelSlim's C(--device).
    type: str
    default: cpu
  space_factor:
    description:
      - Free space needed on the output's file system, as a multiple of the source's size.
      - A finite number from V(1.0) to V(1e9); NaN, infinity and smaller values (which would turn the check off) are
        refused.
    type: raw
    default: 2.0
  timeout:
    description: Seconds the backend may run, a whole number from V(1) to a year.
    type: raw
    default: 7200
"""

EXAMPLES = r"""
- name: Quantize DeepSeek-R1-Distill-Qwen-7B to W8A8 with msModelSlim
  kunpeng_ascend.vllm.model_quantize:
    source: /data/models/DeepSeek-R1-Distill-Qwen-7B
    output: /data/models/DeepSeek-R1-Distill-Qwen-7B-W8A8
    venv: /opt/model-quantize
    config: /opt/model-quantize/configs/msmodelslim-w8a8.yaml
    calibration_file: /opt/model-quantize/calibration.jsonl
    device: npu
"""

RETURN = r"""
output:
  description: The quantized model directory.
  returned: success
  type: str
  sample: /data/models/DeepSeek-R1-Distill-Qwen-7B-W8A8
manifest_sha256:
  description: SHA-256 of the output's manifest (predicted as empty in check mode when it would be built).
  returned: success
  type: str
  sample: 5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef
record:
  description: What made the output (source manifest digest, backend and version, scheme, model type, digests).
  returned: success
  type: dict
summary:
  description: Layers by quantization kind and the layers kept float (empty in check mode before a build).
  returned: success
  type: dict
  sample: {format: ascend, model_quant_type: W8A8, layers: {FLOAT: 3, W8A8: 14}, float_layers: [lm_head]}
replaces:
  description:
    - The existing O(output) the build replaced (in check mode, would replace) - an empty directory, or an output this
      module made whose record or files differ from those wanted; moved aside, then removed once the new output is in
      place. Null when nothing was there or the output was kept.
  returned: success, unless O(check_only)
  type: str
  sample: /data/models/DeepSeek-R1-Distill-Qwen-7B-W8A8
cmd:
  description: The backend's argv.
  returned: when the backend ran or failed
  type: list
  elements: str
seconds:
  description: How long the backend ran.
  returned: when the backend ran
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _quantize as q
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._quantize_run import QuantizeFailure, run


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type='path', required=True),
            output=dict(type='path', required=True),
            backend=dict(type='str', default='msmodelslim', choices=list(q.BACKENDS)),
            scheme=dict(type='str', default='w8a8'),
            model_type=dict(type='str', default=''),
            venv=dict(type='path'),
            config=dict(type='path'),
            configs_dir=dict(type='path'),
            check_only=dict(type='bool', default=False),
            runner=dict(type='path'),
            calibration_file=dict(type='path'),
            device=dict(type='str', default='cpu'),
            # Raw, judged by _numbers: Ansible's float and int would turn true into 1 and let NaN through.
            space_factor=dict(type='raw', default=q.DEFAULT_SPACE_FACTOR),
            timeout=dict(type='raw', default=7200),
        ),
        required_if=[('check_only', False, ['venv', 'calibration_file']),
                     ('backend', 'msmodelslim', ['config', 'configs_dir'], True)],
        supports_check_mode=True,
    )
    warnings = WarningCap()
    try:
        result = run(module.params, warnings, lambda seconds: CommandRunner(module, seconds), module.check_mode,
                     module._diff)
    except QuantizeFailure as failure:
        warnings.emit(module.warn)
        module.fail_json(msg=failure.msg, **failure.data)
    warnings.emit(module.warn)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
