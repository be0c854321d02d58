# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""model_quantize's main(): the inputs refused before anything is run or written, and check mode's prediction."""

from __future__ import annotations

import json
import re

import pytest

from ansible.module_utils import basic

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import model_quantize
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FailJson, capture_results, run_main


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
