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

import os
import shutil
import stat
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.locale import get_best_parsable_locale

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _quantize as q
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_manifest import (
    MANIFEST_NAME,
    ManifestError,
    create_manifest,
    default_cache_path,
    default_workers,
    verify_manifest,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import normalise

TAIL = 4000
HINTS = (
    ('EOFError', 'msModelSlim asked for a confirmation on stdin: give it a config (model_quantize_msmodelslim_config)'),
    ('not in act_stats', 'msModelSlim\'s smoothing does not fit this model: use a config without anti_cfg or smoothing'),
    ('torch_npu', 'the backend wants an NPU: set model_quantize_device to cpu on a host without one'),
)


def _backend_version(module, python, backend):
    distribution = {'msmodelslim': 'msmodelslim', 'llmcompressor': 'llmcompressor'}[backend]
    cmd = [python, '-c', 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))', distribution]
    rc, out, err = module.run_command(cmd)
    if rc != 0:
        module.fail_json(msg='cannot read the version of %s in model_quantize_venv' % backend, cmd=cmd, rc=rc,
                         stdout=out, stderr=err)
    return out.strip()


def _make_readable(top):
    """The service's account reads the output vllm_service serves: nothing in it stays root's only."""
    for root, _dirs, files in os.walk(top):
        for path, is_dir in [(root, True)] + [(os.path.join(root, name), False) for name in files]:
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode):
                os.chmod(path, q.readable_mode(stat.S_IMODE(mode), is_dir))


def _check_space(source, output, factor):
    parent = os.path.dirname(output) or '.'
    if not os.path.isdir(parent):
        raise q.QuantizeError('the parent directory of model_quantize_output %s does not exist' % output)
    filesystem = os.statvfs(parent)
    q.check_space(filesystem.f_bavail * filesystem.f_frsize, q.directory_size(source), factor, output)


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
    p = module.params
    problems = q.input_problems(p['source'], p['output'], p['venv'], p['configs_dir'], p['space_factor'], p['timeout'],
                                (('model_quantize_msmodelslim_config', p['config']),
                                 ('model_quantize_calibration_file', p['calibration_file'])))
    if problems:
        module.fail_json(msg='; '.join(problems))
    source, output = normalise(p['source']), normalise(p['output'])
    space_factor, timeout = float(p['space_factor']), int(p['timeout'])
    python = os.path.join(p['venv'] or '', 'bin', 'python')
    warnings = []
    try:
        q.check_scheme(p['backend'], p['scheme'])
        info = q.read_source(source)
        model_type = q.backend_model_type(p['backend'], info, p['model_type'])
        q.check_output_path(source, output)
        found = q.examine_output(output)
        texts = q.read_calibration(p['calibration_file']) if p['calibration_file'] else []
        # In check mode the role's built-in set may still be to copy (a user's file was read by check_only before).
        calibration_missing = texts is None
        if calibration_missing and not (module.check_mode and not p['check_only']):
            raise q.QuantizeError('cannot read model_quantize_calibration_file %s: does not exist'
                                  % p['calibration_file'])
        if p['backend'] == 'msmodelslim':
            tool = p['config'] or os.path.join(p['configs_dir'], q.default_msmodelslim_config(info['model_type']))
            what = 'model_quantize_msmodelslim_config'
        else:
            tool, what = p['runner'], 'the llm-compressor runner'
        # The role's own config and runner are copied in the same run: check mode may find them still missing.
        tool_missing = not os.path.isfile(tool or '')
        if tool_missing and (p['config'] or not (p['check_only'] or module.check_mode)):
            raise q.QuantizeError('%s %s is not a file' % (what, tool))
        if p['check_only']:
            _check_space(source, output, space_factor)
            module.exit_json(changed=False, source=info, model_type=model_type)
        if tool_missing or calibration_missing or not os.path.isfile(python):
            if module.check_mode:
                # The role installs the venv (and its files) in the same run: without them there is no output to keep.
                module.exit_json(changed=True, output=output, manifest_sha256='', record={}, summary={},
                                 replaces=q.replaced(output, found, 'stale'))
            raise q.QuantizeError('model_quantize_venv %s has no bin/python' % p['venv'])
        tool_sha256 = q.file_sha256(tool, what)
    except q.QuantizeError as error:
        module.fail_json(msg=str(error))

    ignore = q.llmcompressor_ignore(info['model_type']) if p['backend'] == 'llmcompressor' else []
    workers = default_workers()
    try:
        source_manifest = create_manifest(source, os.path.join(source, MANIFEST_NAME), default_cache_path(source),
                                          workers, 0, warnings.append, check_mode=True)['manifest_sha256']
    except ManifestError as error:
        module.fail_json(msg='cannot hash model_quantize_source %s: %s' % (source, error.msg))
    calibration = q.calibration_jsonl(texts)
    wanted = q.make_record(source_manifest, p['backend'], _backend_version(module, python, p['backend']), p['scheme'],
                           model_type, tool_sha256, q.sha256_text(calibration), ignore)

    verified, manifest_sha256 = False, ''
    if found['kind'] == 'made':
        try:
            manifest_sha256 = verify_manifest(output, os.path.join(output, MANIFEST_NAME), default_cache_path(output),
                                              workers, 'fail', 0, warnings.append, module.check_mode)['manifest_sha256']
            verified = True
        except ManifestError:
            verified = False
    state = q.output_state(found['record'], wanted, verified)
    diff = dict(before=q.record_text(found['record']) if found['record'] else '', after=q.record_text(wanted))
    result = dict(output=output, record=wanted, replaces=q.replaced(output, found, state),
                  diff=diff if module._diff else {})
    for message in warnings[:20]:
        module.warn(message)
    del warnings[:]
    if state == 'current':
        try:
            summary = q.summarize(output)
        except q.QuantizeError as error:
            module.fail_json(msg='model_quantize_output %s is not usable: %s' % (output, error))
        module.exit_json(changed=False, manifest_sha256=manifest_sha256, summary=summary, **result)

    parent = os.path.dirname(output) or '.'
    try:
        _check_space(source, output, space_factor)
    except q.QuantizeError as error:
        module.fail_json(msg=str(error))
    if module.check_mode:
        module.exit_json(changed=True, manifest_sha256='', summary={}, **result)

    partial = tempfile.mkdtemp(prefix=os.path.basename(output) + '.partial.', dir=parent)
    scratch = tempfile.mkdtemp(prefix='model-quantize.')
    try:
        calibration_path = os.path.join(scratch, 'calibration.jsonl')
        with open(calibration_path, 'w', encoding='utf-8') as stream:
            stream.write(calibration)
        if p['backend'] == 'msmodelslim':
            cmd = q.msmodelslim_argv(os.path.join(p['venv'], 'bin', 'msmodelslim'), source, partial, model_type,
                                     tool, p['device'])
        else:
            cmd = q.llmcompressor_argv(python, tool, source, partial, p['scheme'], calibration_path, ignore)
        locale = get_best_parsable_locale(module)
        started = time.monotonic()
        rc, out, err = module.run_command(['timeout', str(timeout)] + cmd, data='', binary_data=True, cwd=scratch,
                                          environ_update=dict(LANG=locale, LC_ALL=locale, LC_MESSAGES=locale,
                                                              HF_HUB_OFFLINE='1', TRANSFORMERS_OFFLINE='1'))
        seconds = round(time.monotonic() - started, 1)
        if rc != 0:
            text = out + err
            hint = next((h for needle, h in HINTS if needle in text), '')
            module.fail_json(msg='%s failed (rc %d)%s%s' % (p['backend'], rc, ' after the timeout' if rc == 124 else '',
                                                            ': ' + hint if hint else ''),
                             cmd=cmd, rc=rc, stdout=out[-TAIL:], stderr=err[-TAIL:], hint=hint)
        with open(os.path.join(partial, q.RECORD_NAME), 'w', encoding='utf-8') as stream:
            stream.write(q.record_text(wanted))
        _make_readable(partial)
        try:
            summary = q.summarize(partial)
            made = create_manifest(partial, os.path.join(partial, MANIFEST_NAME), os.path.join(scratch, 'record.json'),
                                   workers, 0, warnings.append)
        except (q.QuantizeError, ManifestError) as error:
            module.fail_json(msg='the output of %s is not usable: %s' % (p['backend'], error), cmd=cmd)
        try:
            q.put_in_place(partial, output, found)
        except (q.QuantizeError, OSError) as error:
            module.fail_json(msg='cannot put the output in place at model_quantize_output %s: %s' % (output, error))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if os.path.isdir(partial):
            shutil.rmtree(partial, ignore_errors=True)
    for message in warnings[:20]:
        module.warn(message)
    module.exit_json(changed=True, manifest_sha256=made['manifest_sha256'], summary=summary, cmd=cmd, seconds=seconds,
                     **result)


if __name__ == '__main__':
    main()
