# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""model_quality_info's main(): a quantized model with a passing, failed, foreign or missing record, a float model,
and bad inputs."""

from __future__ import annotations

import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _agreement
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import model_quality_info
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ExitJson, FailJson, run_main

DIGEST = '7e' * 32
QUANTIZED = {'architectures': ['DeepseekV3ForCausalLM'], 'quantization_config': {'quant_method': 'compressed-tensors'}}


@pytest.fixture
def model(tmp_path):
    directory = tmp_path / 'model'
    directory.mkdir()
    (directory / 'config.json').write_text(json.dumps(QUANTIZED))
    (tmp_path / 'records').mkdir()
    return directory


def write_record(tmp_path, status, digest=DIGEST):
    record = _agreement.record_of(digest, status, [] if status == 'PASS' else ['top-1 agreement 0.0 is low'], {}, {},
                                  {}, {})
    (tmp_path / 'records' / ('%s.json' % DIGEST)).write_text(_agreement.record_text(record))


def run(tmp_path, model, outcome=ExitJson, **more):
    return run_main(model_quality_info.main, dict({'path': str(model), 'digest': DIGEST,
                                                   'record_dir': str(tmp_path / 'records')}, **more), outcome)


def test_a_passing_record_lets_the_quantized_model_serve(fake_host, tmp_path, model):
    write_record(tmp_path, 'PASS')
    result = run(tmp_path, model)
    assert (result['changed'], result['quantized'], result['serving_problems']) == (False, True, [])
    assert result['record']['status'] == 'PASS'


@pytest.mark.parametrize('status, digest, problem', [
    (None, None, 'there is none'),
    ('FAIL', DIGEST, 'its agreement check failed: top-1 agreement 0.0 is low'),
    ('PASS', '00' * 32, 'it is the record of manifest "%s"' % ('00' * 32)),
])
def test_no_failed_or_foreign_record_is_a_problem_naming_the_file(fake_host, tmp_path, model, status, digest, problem):
    if status:
        write_record(tmp_path, status, digest)
    result = run(tmp_path, model)
    assert result['serving_problems'] == ['the quality record %s/records/%s.json: %s' % (tmp_path, DIGEST, problem)]


def test_a_float_model_is_not_quantized(fake_host, tmp_path, model):
    (model / 'config.json').write_text(json.dumps({'architectures': ['DeepseekV3ForCausalLM']}))
    assert run(tmp_path, model)['quantized'] is False


def test_bad_inputs_fail(fake_host, tmp_path, model):
    assert run(tmp_path, model, FailJson, digest='x')['msg'].startswith('digest must be a SHA-256')
    assert run(tmp_path, model, FailJson, path=str(tmp_path / 'none'))['msg'].endswith('none is not a directory')
    (model / 'config.json').write_text('{')
    assert 'config.json is not JSON' in run(tmp_path, model, FailJson)['msg']
