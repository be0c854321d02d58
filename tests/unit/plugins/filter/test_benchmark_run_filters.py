# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The role vllm_benchmark's choice and record filters (plugins/filter/benchmark_run.py): each passes its input to
module_utils and turns a bad input into an AnsibleFilterError."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.benchmark_run import FilterModule

FILTERS = FilterModule().filters()
REPORT = {'endpoint': 'http://h:8000/v1', 'served_model_name': 'm', 'model': '/m', 'mode': 'container',
          'unit': 'vllm.service', 'npus': [0], 'tls': None,
          'cli': {'run': ['podman', 'run'], 'image': 'img', 'entrypoint': 'vllm'}}


def test_benchmark_prepare():
    prepared = FILTERS['benchmark_prepare'](REPORT['cli'], '/tmp/w', None, '/m')
    assert prepared['candidate'] is None and prepared['command'][-1] == 'img'
    assert FILTERS['benchmark_prepare'](REPORT['cli'], '/tmp/w', {'tokenizer': '/c'}, '/m')['candidate'] == '/c'
    with pytest.raises(AnsibleFilterError, match='scratch directory'):
        FILTERS['benchmark_prepare'](REPORT['cli'], None, None, '/m')


def test_benchmark_run_plan_and_soak_plan():
    plan = FILTERS['benchmark_run_plan'](None, 2, 1, [], REPORT, None, None, 'auto', [])
    assert plan['label'] == 'c2' and plan['seed'] == 1 and plan['npu_ids'] == [0]
    assert FILTERS['benchmark_soak_plan'](REPORT, {'container_name': 'c'}, 'auto', [])['container_name'] == 'c'
    with pytest.raises(AnsibleFilterError):
        FILTERS['benchmark_run_plan'](None, 2, 1, None, REPORT, None, None, 'auto', [])
    with pytest.raises(AnsibleFilterError):
        FILTERS['benchmark_soak_plan'](REPORT, {}, 'auto', [])


def test_benchmark_play_runs_host_after_host():
    hostvars = {'a': {'__vllm_benchmark_runs': [{'label': 'c1'}]}, 'b': {'__vllm_benchmark_runs': [{'label': 'c2'}]}}
    assert FILTERS['benchmark_play_runs'](['b', 'a'], hostvars) == [{'label': 'c2'}, {'label': 'c1'}]
    with pytest.raises(AnsibleFilterError):
        FILTERS['benchmark_play_runs'](['a'], {'a': {'__vllm_benchmark_runs': 'x'}})


def test_benchmark_final_config():
    best = {'index': 0, 'params': {'vllm_service_max_num_seqs': 64}}
    assert FILTERS['benchmark_final_config'](best, {'max_num_seqs': 8}, True)['max_num_seqs'] == 64
    assert FILTERS['benchmark_final_config'](best, {'max_num_seqs': 8}, False) == {'max_num_seqs': 8}


def test_the_record_filters():
    run = {'run_id': 'r', 'host': 'h', 'label': 'c1', 'grid_point': None, 'started': 's', 'finished': 'f',
           'service': {}}
    load = {'num_prompts': 1, 'input_len': 1, 'output_len': 1, 'max_concurrency': 1, 'request_rate': 'inf',
            'seed': 1, 'sample_interval': 1, 'priority_share': None, 'priority': 0}
    record = FILTERS['benchmark_run_record']({'results': [{'benchmark': {'status': 'PASS'}}]}, None, None, run,
                                             REPORT, load)
    assert record['schema'] == 'kunpeng_ascend.vllm/benchmark-run/1'
    assert FILTERS['benchmark_soak_record']({'argv': [], 'num_prompts': 1}, run, REPORT, load) is None
    assert FILTERS['benchmark_summary_record']({'grid': None, 'results_csv': ''}, True) == {'grid': None}
    with pytest.raises(AnsibleFilterError):
        FILTERS['benchmark_run_record']({'results': []}, None, None, run, REPORT, load)
    with pytest.raises(AnsibleFilterError):
        FILTERS['benchmark_summary_record']([], True)
