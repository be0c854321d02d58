# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_benchmark_role: the role vllm_benchmark's choices - the load generator, the targets, label and seed of a run, the
NPUs to sample, the soak's target and the configuration that stays after a grid."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark_role as role
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import BenchmarkError

REPORT = {'endpoint': 'http://10.0.0.1:8000/v1', 'served_model_name': 'qwen', 'model': '/models/qwen', 'tls': None,
          'npus': [0, 1], 'mode': 'native', 'unit': 'vllm.service'}
COMPARE = {'base_url': 'http://10.0.0.2:8000', 'model': 'qwen-w8a8', 'tokenizer': '/models/qwen-w8a8',
           'api_key': 'secret'}


def test_service_base_url_drops_only_a_final_v1():
    assert role.service_base_url('https://h:8000/v1') == 'https://h:8000'
    assert role.service_base_url('http://h/v1/x') == 'http://h/v1/x'


def test_loadgen_command_native_and_container():
    assert role.loadgen_command({'run': ['/opt/vllm/bin/vllm'], 'image': None}, '/tmp/w') == ['/opt/vllm/bin/vllm']
    cli = {'run': ['docker', 'run', '--rm'], 'image': 'quay.io/ascend/vllm-ascend:v0.13.0', 'entrypoint': 'vllm'}
    assert role.loadgen_command(cli, '/tmp/w') == ['docker', 'run', '--rm', '--env=OPENAI_API_KEY',
                                                   '--volume=/tmp/w:/tmp/w', '--entrypoint=vllm',
                                                   'quay.io/ascend/vllm-ascend:v0.13.0']
    with pytest.raises(BenchmarkError):
        role.loadgen_command(cli, None)


def test_candidate_path_is_the_second_targets_unless_it_is_the_baseline():
    assert role.candidate_path(COMPARE, '/models/qwen') == '/models/qwen-w8a8'
    assert role.candidate_path(dict(COMPARE, role='candidate'), '/models/qwen') == '/models/qwen-w8a8'
    assert role.candidate_path(dict(COMPARE, role='baseline'), '/models/qwen') == '/models/qwen'


@pytest.mark.parametrize('sample, ids, service, expected', [
    ('auto', [], [], {'sample_npus': 'never', 'npu_ids': []}),
    ('auto', [], None, {'sample_npus': 'never', 'npu_ids': []}),
    ('auto', [], [2, 3], {'sample_npus': 'auto', 'npu_ids': [2, 3]}),
    ('auto', [5], [], {'sample_npus': 'auto', 'npu_ids': [5]}),
    ('always', [], [], {'sample_npus': 'always', 'npu_ids': []}),
    ('never', [1], [2], {'sample_npus': 'never', 'npu_ids': [1]})])
def test_npu_sampling(sample, ids, service, expected):
    assert role.npu_sampling(sample, ids, service) == expected


def test_run_plan_outside_a_grid_without_a_second_target():
    plan = role.run_plan(None, 8, 42, [{}, {}], REPORT, None, None, 'auto', [])
    assert plan == {'label': 'c8', 'seed': 44, 'sample_npus': 'auto', 'npu_ids': [0, 1],
                    'targets': [{'service': True, 'credential': 'service', 'base_url': 'http://10.0.0.1:8000',
                                 'model': 'qwen', 'tokenizer': '/models/qwen', 'priority_share': None}]}


def test_run_plan_at_a_grid_point_with_tls_and_a_second_target_never_holds_a_key():
    report = dict(REPORT, tls={'ca': '/etc/ca.pem'}, npus=[])
    plan = role.run_plan({'index': 3, 'params': {}}, 4, 0, [], report, COMPARE, 0.2, 'auto', [])
    assert plan['label'] == 'p3-c4' and plan['seed'] == 0 and plan['sample_npus'] == 'never'
    service, other = plan['targets']
    assert service['ca_path'] == '/etc/ca.pem' and service['priority_share'] == 0.2
    assert other == {'service': False, 'credential': 'compare', 'base_url': 'http://10.0.0.2:8000',
                     'model': 'qwen-w8a8', 'tokenizer': '/models/qwen-w8a8'}
    assert 'secret' not in repr(plan)


def test_soak_plan():
    assert role.soak_plan(REPORT, {}, 'auto', []) == {
        'base_url': 'http://10.0.0.1:8000', 'sample_npus': 'auto', 'npu_ids': [0, 1]}
    plan = role.soak_plan(dict(REPORT, mode='container', tls={'ca': '/ca'}), {'container_name': 'vllm'}, 'auto', [])
    assert plan['container_name'] == 'vllm' and plan['ca_path'] == '/ca'


def test_final_config_keeps_the_best_point_only_when_asked_and_there_is_one():
    def config(best, original):
        return dict(original, **best['params'])
    original = {'max_num_seqs': 16}
    best = {'index': 1, 'params': {'max_num_seqs': 64}}
    assert role.final_config(best, original, True, config) == {'max_num_seqs': 64}
    assert role.final_config(best, original, False, config) is original
    assert role.final_config(None, original, True, config) is original
