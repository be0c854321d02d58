# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""model_quantize's main(): the inputs refused before anything is run or written, and check mode's prediction."""

from __future__ import annotations

import json
import os
import re

import pytest

from ansible.module_utils import basic

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _quantize_run
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import model_quantize
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FailJson, capture_results, fails_after, run_main


@pytest.fixture
def source(tmp_path, monkeypatch):
    capture_results(monkeypatch)

    def no_command(*args, **kwargs):
        raise AssertionError('no command may run: %r' % (args,))
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', no_command)
    path = tmp_path / 'tiny'
    path.mkdir()
    (path / 'config.json').write_text(json.dumps({'model_type': 'qwen2', 'dtype': 'float32'}))
    (path / 'model.safetensors').write_bytes(b'\0' * 100)
    (tmp_path / 'calibration.jsonl').write_text('{"text": "a"}\n')
    return path


def args(source, **changes):
    values = dict(source=str(source), output=str(source) + '-w8a8', configs_dir=str(source.parent),
                  calibration_file=str(source.parent / 'calibration.jsonl'), check_only=True)
    values.update(changes)
    return values


def test_check_only_gives_the_model_type_and_runs_nothing(source):
    result = run_main(model_quantize.main, args(source))
    assert result['changed'] is False and result['model_type'] == 'DeepSeek-R1-Distill-Qwen-7B'
    assert not (source.parent / 'tiny-w8a8').exists()


@pytest.mark.parametrize('changes, message', [
    (dict(output='{source}/w8a8'), 'is inside model_quantize_source'),
    (dict(calibration_file='{source}/missing.jsonl'), 'cannot read model_quantize_calibration_file'),
    (dict(space_factor=1e15), 'model_quantize_space_factor'),
    (dict(scheme='w4a8'), "model_quantize_scheme 'w4a8'"),
    (dict(config='{source}/missing.yaml'), 'model_quantize_msmodelslim_config .* is not a file'),
])
def test_bad_inputs_fail_before_anything_runs(source, changes, message):
    changes = {key: value.format(source=source) if isinstance(value, str) else value for key, value in changes.items()}
    result = run_main(model_quantize.main, args(source, **changes), FailJson)
    assert re.search(message, result['msg'])
    assert not (source.parent / 'tiny-w8a8').exists() and not (source / 'w8a8').exists()


def test_check_mode_without_the_venv_predicts_a_build(source):
    result = run_main(model_quantize.main, dict(args(source, check_only=False, venv=str(source.parent / 'venv')),
                                                _ansible_check_mode=True))
    assert result['changed'] is True and result['manifest_sha256'] == ''
    assert not (source.parent / 'tiny-w8a8').exists()


# ------------------------------------------------------------------------- issue 32: nothing destroyed, nothing hung

def tree(top):
    """Every path under ``top`` with its bytes (None for a directory or anything else): what a refusal leaves."""
    found = {}
    for root, dirs, files in os.walk(str(top)):
        for name in dirs:
            found[os.path.join(root, name)] = None
        for name in files:
            path = os.path.join(root, name)
            found[path] = open(path, 'rb').read() if os.path.isfile(path) and not os.path.islink(path) else None
    return found


@pytest.mark.parametrize('check_only, check_mode', [(True, False), (False, True), (False, False)])
@pytest.mark.parametrize('output', ['/', '//', '/usr', '/usr/', '/usr/bin/..', '/./etc', '/etc/vllm', '/var/lib', '/root',
                                    '/home/alice', 'relative', '/srv/a\nb'])
def test_a_system_output_is_refused_before_anything(source, output, check_only, check_mode):
    result = run_main(model_quantize.main, dict(args(source, output=output, check_only=check_only,
                                                     venv=str(source.parent / 'venv')),
                                                _ansible_check_mode=check_mode), FailJson)
    assert result['msg'].startswith('model_quantize_output ')
    assert re.search("system directory|home directory|system's own files|must be an absolute path|"
                     "must not hold control characters", result['msg'])


@pytest.mark.parametrize('option, value, name', [
    ('venv', '/usr', 'model_quantize_venv'), ('venv', '/usr/bin/..', 'model_quantize_venv'),
    ('configs_dir', '/etc', 'model_quantize_work_dir'), ('configs_dir', '/var/lib/', 'model_quantize_work_dir'),
    ('venv', '{source}-w8a8/venv', 'model_quantize_venv'),
    ('space_factor', float('nan'), 'model_quantize_space_factor'), ('space_factor', 'nan', 'model_quantize_space_factor'),
    ('space_factor', float('inf'), 'model_quantize_space_factor'), ('space_factor', 1e400, 'model_quantize_space_factor'),
    ('space_factor', 0, 'model_quantize_space_factor'), ('space_factor', -1, 'model_quantize_space_factor'),
    ('space_factor', True, 'model_quantize_space_factor'), ('space_factor', '1e400', 'model_quantize_space_factor'),
    ('timeout', 0, 'model_quantize_timeout'), ('timeout', -1, 'model_quantize_timeout'),
    ('timeout', 10 ** 30, 'model_quantize_timeout'), ('timeout', 'nan', 'model_quantize_timeout'),
    ('timeout', True, 'model_quantize_timeout'), ('timeout', 1.5, 'model_quantize_timeout'),
])
def test_every_other_path_and_number_is_checked_in_check_only(source, option, value, name):
    value = value.format(source=source) if isinstance(value, str) else value
    result = run_main(model_quantize.main, args(source, **{option: value}), FailJson)
    assert result['msg'].startswith(name + ' ')


@pytest.mark.parametrize('factor, timeout', [(1.0, 1), ('2.5', '60'), (2, 7200.0), (100, model_quantize.q.MAX_SECONDS)])
def test_numbers_in_range_pass_in_any_form(source, factor, timeout):
    assert run_main(model_quantize.main, args(source, space_factor=factor, timeout=timeout))['changed'] is False


@pytest.mark.parametrize('kind', ['fifo', 'zero'])
@pytest.mark.parametrize('what', ['calibration', 'config.json'])
def test_a_fifo_or_dev_zero_is_refused_without_blocking(source, kind, what):
    path = str(source.parent / 'calibration.jsonl') if what == 'calibration' else str(source / 'config.json')
    os.unlink(path)
    if kind == 'fifo':
        os.mkfifo(path)
    else:
        os.symlink('/dev/zero', path)
    with fails_after(10):
        result = run_main(model_quantize.main, args(source), FailJson)
    assert result['msg'] == ('cannot read %s %s: a %s, not a regular file'
                             % ('model_quantize_calibration_file' if what == 'calibration'
                                else 'the config of model_quantize_source', path,
                                'FIFO (named pipe)' if kind == 'fifo' else 'character device'))


@pytest.mark.parametrize('config, key', [({'architectures': 5}, 'architectures'), ({'model_type': []}, 'model_type'),
                                         ({'torch_dtype': {}}, 'torch_dtype'), ([], None),
                                         ({'a': json.loads('[' * 70 + ']' * 70)}, None)])
def test_a_config_of_the_wrong_shape_fails_with_a_message(source, config, key):
    (source / 'config.json').write_text(json.dumps(config))
    result = run_main(model_quantize.main, args(source), FailJson)
    assert '%s/config.json' % source in result['msg']
    assert (' has %s as a JSON ' % key if key else 'cannot read the config of model_quantize_source') in result['msg']


FOREIGN = [
    ('a directory of someone else', lambda out: (out.mkdir(), (out / 'keep.txt').write_text('mine'))),
    ('a file', lambda out: out.write_text('mine')),
    ('a link to a directory', lambda out: (out.parent.joinpath('real').mkdir(), os.symlink(str(out.parent / 'real'), str(out)))),
    ('a directory with a record of another kind', lambda out: (out.mkdir(), (out / 'quantize-record.json').write_text('{}'))),
]


@pytest.mark.parametrize('check_only, check_mode', [(True, False), (False, True), (False, False)])
@pytest.mark.parametrize('name, make', FOREIGN, ids=[name for name, _make in FOREIGN])
def test_what_the_module_did_not_make_at_the_output_is_refused_and_left_as_it_was(source, backend, name, make,
                                                                                  check_only, check_mode):
    out = source.parent / 'tiny-w8a8'
    make(out)
    before = tree(source.parent)
    result = run_main(model_quantize.main, dict(backend.args(check_only=check_only), _ansible_check_mode=check_mode),
                      FailJson)
    assert result['msg'].startswith('model_quantize_output %s is ' % out)
    assert 'model_quantize replaces only an empty directory or an output it made' in result['msg']
    assert tree(source.parent) == before and backend.runs == []


class Backend:
    """A venv whose python prints a version and whose msmodelslim writes a small output into its --save_path."""

    def __init__(self, source):
        self.source = source
        self.runs = []
        venv = source.parent / 'venv' / 'bin'
        venv.mkdir(parents=True)
        for name in ('python', 'msmodelslim'):
            (venv / name).write_text('#!/bin/sh\n')
            (venv / name).chmod(0o755)
        (source.parent / 'msmodelslim-w8a8.yaml').write_text('apiversion: modelslim_v1\n')

    def args(self, **changes):
        values = dict(check_only=False, venv=str(self.source.parent / 'venv'))
        values.update(changes)
        return args(self.source, **values)

    def run_command(self, module, cmd, **kwargs):
        if '-c' in cmd:
            return 0, '26.1.0\n', ''
        if cmd[-1] == '-a':
            return 0, 'C\nC.utf8\nPOSIX\n', ''
        self.runs.append(cmd)
        save = cmd[cmd.index('--save_path') + 1]
        with open(os.path.join(save, 'quant_model_description.json'), 'w') as handle:
            json.dump({'model_quant_type': 'W8A8', 'lm_head.weight': 'FLOAT', 'model.layers.0.q_proj.weight': 'W8A8'},
                      handle)
        with open(os.path.join(save, 'quant_model_w8a8.safetensors'), 'wb') as handle:
            handle.write(b'\1' * 64)
        return 0, '', ''


@pytest.fixture
def backend(source, tmp_path, monkeypatch):
    fake = Backend(source)

    def run_command(module, cmd, **kwargs):  # AnsibleModule passes itself: the fake sees the module too
        return fake.run_command(module, cmd, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    # The source's manifest record is kept out of the source (the run's default_cache_path, moved from the module).
    monkeypatch.setattr(_quantize_run, 'default_cache_path', lambda path: str(tmp_path / 'cache' / 'record.json'))
    (tmp_path / 'cache').mkdir()
    return fake


def test_check_mode_predicts_the_build_and_a_rerun_keeps_the_output(source, backend):
    out = str(source.parent / 'tiny-w8a8')
    check = run_main(model_quantize.main, dict(backend.args(), _ansible_check_mode=True, _ansible_diff=True))
    assert (check['changed'], check['replaces'], check['diff']['before']) == (True, None, '')
    assert backend.runs == [] and not os.path.lexists(out)
    real = run_main(model_quantize.main, dict(backend.args(), _ansible_diff=True))
    assert (real['changed'], real['replaces'], real['record'], real['diff']) == (
        True, None, check['record'], check['diff'])
    assert len(backend.runs) == 1 and json.load(open(os.path.join(out, 'quantize-record.json'))) == real['record']
    again = run_main(model_quantize.main, dict(backend.args(), _ansible_check_mode=True))
    assert (again['changed'], again['replaces']) == (False, None)
    assert run_main(model_quantize.main, backend.args())['changed'] is False and len(backend.runs) == 1


def test_an_output_the_module_made_is_replaced_as_check_mode_says(source, backend):
    out = source.parent / 'tiny-w8a8'
    run_main(model_quantize.main, backend.args())
    (source.parent / 'msmodelslim-w8a8.yaml').write_text('apiversion: modelslim_v1\n# another config\n')
    check = run_main(model_quantize.main, dict(backend.args(), _ansible_check_mode=True, _ansible_diff=True))
    assert (check['changed'], check['replaces']) == (True, str(out))
    assert check['diff']['before'] != check['diff']['after'] and check['diff']['before']
    real = run_main(model_quantize.main, dict(backend.args(), _ansible_diff=True))
    assert (real['changed'], real['replaces'], real['diff']) == (True, str(out), check['diff'])
    assert json.load(open(str(out / 'quantize-record.json'))) == real['record']
    # The old output was moved aside and removed; nothing else is left beside the output.
    assert sorted(name for name in os.listdir(str(source.parent)) if name.startswith('tiny-w8a8')) == ['tiny-w8a8']


def test_an_empty_directory_at_the_output_is_replaced(source, backend):
    out = source.parent / 'tiny-w8a8'
    out.mkdir()
    check = run_main(model_quantize.main, dict(backend.args(), _ansible_check_mode=True))
    assert (check['changed'], check['replaces']) == (True, str(out))
    real = run_main(model_quantize.main, backend.args())
    assert (real['changed'], real['replaces']) == (True, str(out))
    assert (out / 'quantize-record.json').is_file()


def test_a_directory_that_fills_while_the_backend_runs_is_left_as_it_is(source, backend):
    out = source.parent / 'tiny-w8a8'
    out.mkdir()
    run = backend.run_command

    def fill_then_run(module, cmd, **kwargs):
        if '--save_path' in cmd:
            (out / 'arrived.txt').write_text('mine')
        return run(module, cmd, **kwargs)
    backend.run_command = fill_then_run
    result = run_main(model_quantize.main, backend.args(), FailJson)
    assert result['msg'].startswith('cannot put the output in place at model_quantize_output %s: ' % out)
    assert (out / 'arrived.txt').read_text() == 'mine'
    assert [name for name in os.listdir(str(source.parent)) if '.partial.' in name or '.old.' in name] == []
