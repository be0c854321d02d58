# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What module model_quantize does on a node, its one call: ``run(params, warn, make_runner, check_mode, diff)``
returns the result dict, or raises QuantizeFailure (the message, naming the option or role variable to fix, and the
data to fail with: cmd, rc, the tails of stdout and stderr, a hint).

The inputs are checked first (_quantize.py's decisions), then the record wanted is compared with the output's, and
only a missing or stale output is built: in ``<output>.partial.*`` beside it, the backend run through
common/_command.py (``make_runner(seconds)`` gives the CommandRunner, asked only once a command must run: check_only and
check mode without the venv run nothing), its record and manifest written, then renamed into place. Warnings (of the
manifests) go to ``warn``, the module's WarningCap.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import normalise
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _quantize as q
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_manifest import (
    MANIFEST_NAME,
    ManifestError,
    create_manifest,
    default_cache_path,
    default_workers,
    verify_manifest,
)

# How much of the backend's stdout and stderr a failure keeps (the end).
TAIL = 4000
# What a backend's output says -> what to do about it.
HINTS = (
    ('EOFError', 'msModelSlim asked for a confirmation on stdin: give it a config (model_quantize_msmodelslim_config)'),
    ('not in act_stats', 'msModelSlim\'s smoothing does not fit this model: use a config without anti_cfg or smoothing'),
    ('torch_npu', 'the backend wants an NPU: set model_quantize_device to cpu on a host without one'),
)
# The backends run offline: the model is the source directory, never a download.
OFFLINE = {'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1'}


class QuantizeFailure(Exception):
    """The module fails with ``msg`` and ``data`` (extra keys of the result)."""

    def __init__(self, msg, **data):
        super().__init__(msg)
        self.msg = msg
        self.data = data


def hint_for(text):
    """What to do about a backend's failure, from its output (empty when nothing known matches)."""
    return next((hint for needle, hint in HINTS if needle in text), '')


def backend_failure(backend, cmd, result):
    """The QuantizeFailure of a backend run that failed: the exit code, whether the time limit stopped it, a hint,
    the tails of its output."""
    hint = hint_for(result.stdout + result.stderr)
    return QuantizeFailure('%s failed (rc %d)%s%s' % (backend, result.rc, ' after the timeout' if result.timed_out
                                                      else '', ': ' + hint if hint else ''),
                           cmd=cmd, rc=result.rc, stdout=result.stdout[-TAIL:], stderr=result.stderr[-TAIL:],
                           hint=hint)


def backend_version(runner, python, backend):
    """The version of ``backend``'s distribution in the venv of ``python``."""
    cmd = [python, '-c', 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))', backend]
    result = runner.run(cmd)
    if result.rc != 0:
        raise QuantizeFailure('cannot read the version of %s in model_quantize_venv' % backend, cmd=cmd,
                              rc=result.rc, stdout=result.stdout, stderr=result.stderr)
    return result.stdout.strip()


def make_readable(top):
    """The service's account reads the output vllm_service serves: nothing in it stays root's only."""
    for root, _dirs, files in os.walk(top):
        for path, is_dir in [(root, True)] + [(os.path.join(root, name), False) for name in files]:
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode):
                os.chmod(path, q.readable_mode(stat.S_IMODE(mode), is_dir))


def check_space(source, output, factor):
    """:raises _quantize.QuantizeError: when the output's file system has less free space than ``factor`` times the
    source's size, or the output's parent directory is missing."""
    parent = os.path.dirname(output) or '.'
    if not os.path.isdir(parent):
        raise q.QuantizeError('the parent directory of model_quantize_output %s does not exist' % output)
    filesystem = os.statvfs(parent)
    q.check_space(filesystem.f_bavail * filesystem.f_frsize, q.directory_size(source), factor, output)


def checked_inputs(p, check_mode):
    """``(inputs, result)``: what the build needs, and the result to return at once (check_only; check mode while
    the role has still to install the venv, the config or the calibration set), else None.
    :raises QuantizeFailure: naming the option to fix."""
    problems = q.input_problems(p['source'], p['output'], p['venv'], p['configs_dir'], p['space_factor'], p['timeout'],
                                (('model_quantize_msmodelslim_config', p['config']),
                                 ('model_quantize_calibration_file', p['calibration_file'])))
    if problems:
        raise QuantizeFailure('; '.join(problems))
    source, output = normalise(p['source']), normalise(p['output'])
    inputs = dict(source=source, output=output, space_factor=float(p['space_factor']), timeout=int(p['timeout']),
                  python=os.path.join(p['venv'] or '', 'bin', 'python'))
    try:
        q.check_scheme(p['backend'], p['scheme'])
        info = q.read_source(source)
        inputs['model_type'] = q.backend_model_type(p['backend'], info, p['model_type'])
        q.check_output_path(source, output)
        inputs['found'] = found = q.examine_output(output)
        inputs['texts'] = texts = q.read_calibration(p['calibration_file']) if p['calibration_file'] else []
        # In check mode the role's built-in set may still be to copy (a user's file was read by check_only before).
        calibration_missing = texts is None
        if calibration_missing and not (check_mode and not p['check_only']):
            raise q.QuantizeError('cannot read model_quantize_calibration_file %s: does not exist'
                                  % p['calibration_file'])
        if p['backend'] == 'msmodelslim':
            tool = p['config'] or os.path.join(p['configs_dir'], q.default_msmodelslim_config(info['model_type']))
            what = 'model_quantize_msmodelslim_config'
        else:
            tool, what = p['runner'], 'the llm-compressor runner'
        inputs['tool'] = tool
        # The role's own config and runner are copied in the same run: check mode may find them still missing.
        tool_missing = not os.path.isfile(tool or '')
        if tool_missing and (p['config'] or not (p['check_only'] or check_mode)):
            raise q.QuantizeError('%s %s is not a file' % (what, tool))
        if p['check_only']:
            check_space(source, output, inputs['space_factor'])
            return inputs, dict(changed=False, source=info, model_type=inputs['model_type'])
        if tool_missing or calibration_missing or not os.path.isfile(inputs['python']):
            if check_mode:
                # The role installs the venv (and its files) in the same run: without them there is no output to keep.
                return inputs, dict(changed=True, output=output, manifest_sha256='', record={}, summary={},
                                    replaces=q.replaced(output, found, 'stale'))
            raise q.QuantizeError('model_quantize_venv %s has no bin/python' % p['venv'])
        inputs['tool_sha256'] = q.file_sha256(tool, what)
        inputs['ignore'] = q.llmcompressor_ignore(info['model_type']) if p['backend'] == 'llmcompressor' else []
    except q.QuantizeError as error:
        raise QuantizeFailure(str(error))
    return inputs, None


def build(p, inputs, runner, wanted, calibration, warn):
    """Run the backend into ``<output>.partial.*``, write the record, make it readable, summarize and hash it, and
    put it in place; ``(summary, manifest_sha256, cmd, seconds)``. Nothing partial is left, whatever happens."""
    output = inputs['output']
    partial = tempfile.mkdtemp(prefix=os.path.basename(output) + '.partial.', dir=os.path.dirname(output) or '.')
    scratch = tempfile.mkdtemp(prefix='model-quantize.')
    try:
        calibration_path = os.path.join(scratch, 'calibration.jsonl')
        with open(calibration_path, 'w', encoding='utf-8') as stream:
            stream.write(calibration)
        if p['backend'] == 'msmodelslim':
            cmd = q.msmodelslim_argv(os.path.join(p['venv'], 'bin', 'msmodelslim'), inputs['source'], partial,
                                     inputs['model_type'], inputs['tool'], p['device'])
        else:
            cmd = q.llmcompressor_argv(inputs['python'], inputs['tool'], inputs['source'], partial, p['scheme'],
                                       calibration_path, inputs['ignore'])
        started = time.monotonic()
        result = runner.run(cmd, data='', environ_update=OFFLINE, cwd=scratch)
        seconds = round(time.monotonic() - started, 1)
        if result.rc != 0:
            raise backend_failure(p['backend'], cmd, result)
        with open(os.path.join(partial, q.RECORD_NAME), 'w', encoding='utf-8') as stream:
            stream.write(q.record_text(wanted))
        make_readable(partial)
        try:
            summary = q.summarize(partial)
            made = create_manifest(partial, os.path.join(partial, MANIFEST_NAME), os.path.join(scratch, 'record.json'),
                                   default_workers(), 0, warn)
        except (q.QuantizeError, ManifestError) as error:
            raise QuantizeFailure('the output of %s is not usable: %s' % (p['backend'], error), cmd=cmd)
        try:
            q.put_in_place(partial, output, inputs['found'])
        except (q.QuantizeError, OSError) as error:
            raise QuantizeFailure('cannot put the output in place at model_quantize_output %s: %s' % (output, error))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if os.path.isdir(partial):
            shutil.rmtree(partial, ignore_errors=True)
    return summary, made['manifest_sha256'], cmd, seconds


def run(p, warn, make_runner, check_mode=False, diff=False):
    """The result of model_quantize with options ``p``. :raises QuantizeFailure:"""
    inputs, early = checked_inputs(p, check_mode)
    if early is not None:
        return early
    source, output, found = inputs['source'], inputs['output'], inputs['found']
    runner = make_runner(inputs['timeout'])
    workers = default_workers()
    try:
        source_manifest = create_manifest(source, os.path.join(source, MANIFEST_NAME), default_cache_path(source),
                                          workers, 0, warn, check_mode=True)['manifest_sha256']
    except ManifestError as error:
        raise QuantizeFailure('cannot hash model_quantize_source %s: %s' % (source, error.msg))
    calibration = q.calibration_jsonl(inputs['texts'])
    wanted = q.make_record(source_manifest, p['backend'], backend_version(runner, inputs['python'], p['backend']),
                           p['scheme'], inputs['model_type'], inputs['tool_sha256'], q.sha256_text(calibration),
                           inputs['ignore'])
    verified, manifest_sha256 = False, ''
    if found['kind'] == 'made':
        try:
            manifest_sha256 = verify_manifest(output, os.path.join(output, MANIFEST_NAME), default_cache_path(output),
                                              workers, 'fail', 0, warn, check_mode)['manifest_sha256']
            verified = True
        except ManifestError:
            verified = False
    state = q.output_state(found['record'], wanted, verified)
    changes = dict(before=q.record_text(found['record']) if found['record'] else '', after=q.record_text(wanted))
    result = dict(output=output, record=wanted, replaces=q.replaced(output, found, state),
                  diff=changes if diff else {})
    if state == 'current':
        try:
            summary = q.summarize(output)
        except q.QuantizeError as error:
            raise QuantizeFailure('model_quantize_output %s is not usable: %s' % (output, error))
        return dict(result, changed=False, manifest_sha256=manifest_sha256, summary=summary)
    try:
        check_space(source, output, inputs['space_factor'])
    except q.QuantizeError as error:
        raise QuantizeFailure(str(error))
    if check_mode:
        return dict(result, changed=True, manifest_sha256='', summary={})
    summary, manifest_sha256, cmd, seconds = build(p, inputs, runner, wanted, calibration, warn)
    return dict(result, changed=True, manifest_sha256=manifest_sha256, summary=summary, cmd=cmd, seconds=seconds)
