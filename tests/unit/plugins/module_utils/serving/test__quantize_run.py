# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""module_utils/serving/_quantize_run.py: model_quantize's run with a fake command runner - what runs when (nothing
for check_only or check mode without the venv), how the backend is run (offline, stdin empty, in its scratch
directory), the failures with their data and hints, and nothing partial left behind."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _quantize as q
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _quantize_run as qr


class FakeRunner:
    """A CommandRunner whose venv python prints a version and whose msmodelslim writes a small output (or fails
    with ``fail``: (rc, stdout, stderr, timed_out))."""

    def __init__(self, fail=None):
        self.fail = fail
        self.calls = []

    def run(self, argv, data=None, environ_update=None, cwd=None):
        self.calls.append(dict(argv=argv, data=data, environ_update=environ_update, cwd=cwd,
                               cwd_was_there=bool(cwd) and os.path.isdir(cwd)))
        if '-c' in argv:
            return CommandResult(argv, 0, '26.1.0\n', '')
        if self.fail:
            return CommandResult(argv, *self.fail)
        save = argv[argv.index('--save_path') + 1]
        with open(os.path.join(save, 'quant_model_description.json'), 'w') as handle:
            json.dump({'model_quant_type': 'W8A8', 'lm_head.weight': 'FLOAT', 'model.layers.0.q_proj.weight': 'W8A8'},
                      handle)
        with open(os.path.join(save, 'quant_model_w8a8.safetensors'), 'wb') as handle:
            handle.write(b'\1' * 64)
        os.chmod(os.path.join(save, 'quant_model_w8a8.safetensors'), 0o400)
        return CommandResult(argv, 0, '', '')


@pytest.fixture
def source(tmp_path, monkeypatch):
    path = tmp_path / 'tiny'
    path.mkdir()
    (path / 'config.json').write_text(json.dumps({'model_type': 'qwen2', 'dtype': 'float32'}))
    (path / 'model.safetensors').write_bytes(b'\0' * 100)
    (tmp_path / 'calibration.jsonl').write_text('{"text": "a"}\n')
    (tmp_path / 'msmodelslim-w8a8.yaml').write_text('apiversion: modelslim_v1\n')
    monkeypatch.setattr(qr, 'default_cache_path', lambda path: str(tmp_path / 'cache' / 'record.json'))
    (tmp_path / 'cache').mkdir()
    return path


def venv(source):
    bin_dir = source.parent / 'venv' / 'bin'
    bin_dir.mkdir(parents=True)
    for name in ('python', 'msmodelslim'):
        (bin_dir / name).write_text('#!/bin/sh\n')
        (bin_dir / name).chmod(0o755)
    return str(bin_dir.parent)


def params(source, **changes):
    values = dict(source=str(source), output=str(source) + '-w8a8', backend='msmodelslim', scheme='w8a8',
                  model_type='', venv=str(source.parent / 'venv'), config=None, configs_dir=str(source.parent),
                  check_only=False, runner=None, calibration_file=str(source.parent / 'calibration.jsonl'),
                  device='cpu', space_factor=2.0, timeout=7200)
    values.update(changes)
    return values


def run(p, runner=None, check_mode=False, diff=False, warnings=None):
    made = []

    def make_runner(seconds):
        made.append(seconds)
        return runner or FakeRunner()
    result = qr.run(p, (warnings if warnings is not None else []).append, make_runner, check_mode, diff)
    return result, made


def beside(source):
    return sorted(name for name in os.listdir(str(source.parent)) if name.startswith('tiny-w8a8'))


def test_check_only_and_check_mode_without_the_venv_make_no_runner(source):
    result, made = run(params(source, check_only=True))
    assert (result['changed'], result['model_type'], made) == (False, 'DeepSeek-R1-Distill-Qwen-7B', [])
    result, made = run(params(source), check_mode=True)
    assert (result['changed'], result['manifest_sha256'], result['replaces'], made) == (True, '', None, [])


def test_without_the_venv_a_real_run_fails_naming_it(source):
    with pytest.raises(qr.QuantizeFailure) as failed:
        run(params(source))
    assert failed.value.msg == 'model_quantize_venv %s has no bin/python' % (source.parent / 'venv')


def test_the_backend_runs_offline_without_stdin_in_its_scratch_directory_under_the_timeout(source):
    venv(source)
    runner = FakeRunner()
    result, made = run(params(source, timeout='60'), runner)
    assert made == [60]
    version, backend = runner.calls
    assert version['argv'][1:] == ['-c', 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))',
                                   'msmodelslim']
    assert (backend['data'], backend['environ_update'], backend['cwd_was_there']) == (
        '', {'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1'}, True)
    assert os.path.basename(backend['cwd']).startswith('model-quantize.') and not os.path.exists(backend['cwd'])
    assert result['cmd'] == backend['argv'] and result['cmd'][:2] == [str(source.parent / 'venv/bin/msmodelslim'),
                                                                      'quant']
    assert (result['changed'], result['summary']['layers']) == (True, {'FLOAT': 1, 'W8A8': 1})
    assert beside(source) == ['tiny-w8a8']
    # What msModelSlim wrote root-only, the service's account reads.
    weights = source.parent / 'tiny-w8a8' / 'quant_model_w8a8.safetensors'
    assert stat.S_IMODE(os.stat(str(weights)).st_mode) == 0o444
    again, _made = run(params(source), runner)
    assert (again['changed'], again['manifest_sha256']) == (False, result['manifest_sha256'])
    assert len(runner.calls) == 3  # only the version again


def test_check_mode_predicts_the_record_of_the_real_run_and_builds_nothing(source):
    venv(source)
    runner = FakeRunner()
    predicted, _made = run(params(source), runner, check_mode=True, diff=True)
    assert (predicted['changed'], predicted['manifest_sha256'], predicted['diff']['before']) == (True, '', '')
    # Only the version, which the record holds, is asked.
    assert [call['argv'][:2] for call in runner.calls] == [[str(source.parent / 'venv/bin/python'), '-c']]
    assert 'cmd' not in predicted
    assert beside(source) == []
    real, _made = run(params(source), runner)
    assert real['record'] == predicted['record'] and real['diff'] == {}


@pytest.mark.parametrize('fail, message, hint', [
    ((1, 'Traceback\nEOFError: EOF when reading a line\n', '', False), 'msmodelslim failed (rc 1): ', qr.HINTS[0][1]),
    ((124, '', 'x' * 5000, True), 'msmodelslim failed (rc 124) after the timeout', ''),
    ((-9, '', '', True), 'msmodelslim failed (rc -9) after the timeout', ''),
    ((124, '', '', False), 'msmodelslim failed (rc 124)', ''),
])
def test_a_failed_backend_fails_with_its_data_and_leaves_nothing(source, fail, message, hint):
    venv(source)
    runner = FakeRunner(fail)
    with pytest.raises(qr.QuantizeFailure) as failed:
        run(params(source), runner)
    assert failed.value.msg == message + hint
    data = failed.value.data
    assert (data['cmd'], data['rc'], data['hint']) == (runner.calls[-1]['argv'], fail[0], hint)
    assert data['stderr'] == fail[2][-qr.TAIL:] and len(data['stderr']) <= qr.TAIL
    assert beside(source) == [] and not os.path.exists(runner.calls[-1]['cwd'])


def test_a_backend_without_its_version_fails_naming_the_venv():
    class NoVersion:
        def run(self, argv):
            return CommandResult(argv, 1, '', 'PackageNotFoundError: msmodelslim')
    with pytest.raises(qr.QuantizeFailure) as failed:
        qr.backend_version(NoVersion(), '/opt/q/bin/python', 'msmodelslim')
    assert failed.value.msg == 'cannot read the version of msmodelslim in model_quantize_venv'
    assert (failed.value.data['rc'], failed.value.data['stderr']) == (1, 'PackageNotFoundError: msmodelslim')
    assert failed.value.data['cmd'][0] == '/opt/q/bin/python'


@pytest.mark.parametrize('text, hint', [('ValueError: x not in act_stats', qr.HINTS[1][1]),
                                        ("No module named 'torch_npu'", qr.HINTS[2][1]), ('Killed', '')])
def test_hints_come_from_the_output(text, hint):
    assert qr.hint_for(text) == hint


def test_space_is_checked_against_the_output_parent(source, tmp_path):
    with pytest.raises(q.QuantizeError) as failed:
        qr.check_space(str(source), str(tmp_path / 'missing' / 'out'), 2.0)
    assert str(failed.value) == ('the parent directory of model_quantize_output %s does not exist'
                                 % (tmp_path / 'missing' / 'out'))
    qr.check_space(str(source), str(tmp_path / 'out'), 1.0)
    with pytest.raises(q.QuantizeError, match='model_quantize_space_factor'):
        qr.check_space(str(source), str(tmp_path / 'out'), 1e18)


def test_input_problems_fail_before_anything(source):
    with pytest.raises(qr.QuantizeFailure) as failed:
        run(params(source, output='/usr'))
    assert failed.value.msg.startswith('model_quantize_output /usr ')
