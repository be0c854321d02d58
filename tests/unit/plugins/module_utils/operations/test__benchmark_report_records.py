# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_benchmark_report's records: the run file of a benchmark run and of a soak, and summary.json, built where they are
read back - each written as the role writes it, then read by load_run_dir."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark_report as report_utils
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import BenchmarkError

REPORT = {'endpoint': 'http://127.0.0.1:18000/v1', 'served_model_name': 'tiny', 'model': '/models/tiny',
          'mode': 'native', 'unit': 'vllm.service'}
BENCHMARK = {'status': 'PASS', 'metrics': {'output_throughput': 100.0, 'e2el_ms_p50': 20.0}, 'targets': [],
             'npu_samples': [], 'loadgen_samples': [], 'warnings': [], 'vllm_bench': {}, 'argv': ['vllm']}
RUN = {'run_id': 'r1', 'host': 'node1', 'label': 'c4', 'grid_point': None, 'started': 's', 'finished': 'f',
       'service': {'max_num_seqs': 16}}
LOAD = {'num_prompts': 40, 'input_len': 32, 'output_len': 16, 'max_concurrency': 4, 'request_rate': float('inf'),
        'seed': '7', 'sample_interval': 1.0, 'priority_share': None, 'priority': 0}
SOAK = {'argv': ['vllm', 'bench'], 'num_prompts': 600, 'verdict': 'PASS', 'metrics': {'completed': 600},
        'vllm_bench': {'x': 1}, 'warnings': ['w'], 'checks': [], 'samples': []}


def _write(directory, name, record):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), 'w') as handle:
        json.dump(record, handle)


def test_run_record_keeps_the_benchmark_and_adds_the_run_and_its_configuration():
    record = report_utils.run_record({'results': [{'benchmark': BENCHMARK}]}, None, None, RUN, REPORT, LOAD)
    assert list(record)[:len(BENCHMARK)] == list(BENCHMARK)
    assert record['schema'] == report_utils.RUN_SCHEMA == 'kunpeng_ascend.vllm/benchmark-run/1'
    assert record['comparison'] is None and record['label'] == 'c4' and record['status'] == 'PASS'
    assert record['config'] == {
        'service': {'max_num_seqs': 16, 'mode': 'native', 'unit': 'vllm.service', 'model': '/models/tiny'},
        'load': {'num_prompts': 40, 'input_len': 32, 'output_len': 16, 'max_concurrency': 4, 'request_rate': 'inf',
                 'seed': 7, 'endpoint': 'http://127.0.0.1:18000/v1/completions', 'model': 'tiny',
                 'sample_interval': 1.0, 'priority_share': None, 'priority': 0}}
    assert RUN['service'] == {'max_num_seqs': 16}


def test_run_record_with_a_second_target_holds_the_comparison():
    other = dict(BENCHMARK, metrics={'output_throughput': 50.0, 'e2el_ms_p50': 40.0})
    compare = {'base_url': 'http://b:1', 'model': 'm', 'tokenizer': '/t', 'api_key': 'secret'}
    record = report_utils.run_record({'results': [{'benchmark': BENCHMARK}, {'benchmark': other}]}, compare,
                                     None, RUN, REPORT, LOAD)
    assert record['comparison']['role'] == 'candidate'
    assert record['comparison']['ratios']['output_throughput'] == 0.5
    assert 'secret' not in json.dumps(record)
    with pytest.raises(BenchmarkError):
        report_utils.run_record({'results': [{'benchmark': BENCHMARK}, {'benchmark': other}]}, {'model': 'm'},
                                None, RUN, REPORT, LOAD)


def test_soak_record_and_none_when_the_soak_did_not_run():
    run = dict((key, RUN[key]) for key in ('run_id', 'host', 'started', 'finished', 'service'))
    load = {'input_len': 32, 'output_len': 16, 'max_concurrency': 64, 'request_rate': 2.5, 'seed': 7}
    assert report_utils.soak_record({'argv': ['vllm'], 'num_prompts': 3}, run, REPORT, load) is None
    record = report_utils.soak_record(SOAK, run, REPORT, load)
    assert record['label'] == 'soak' and record['status'] == 'PASS' and record['argv'] == ['vllm', 'bench']
    assert record['soak'] == {'num_prompts': 600, 'verdict': 'PASS', 'checks': [], 'samples': []}
    assert record['warnings'] == ['w'] and record['targets'] == [] and record['grid_point'] is None
    assert record['config']['load'] == {'num_prompts': 600, 'input_len': 32, 'output_len': 16, 'max_concurrency': 64,
                                        'request_rate': '2.5', 'seed': 7,
                                        'endpoint': 'http://127.0.0.1:18000/v1/completions', 'model': 'tiny'}


def test_summary_record_leaves_the_tables_out_and_says_whether_the_grid_was_restored():
    summary = {'schema': 'kunpeng_ascend.vllm/benchmark-summary/1', 'hosts': {}, 'grid': None, 'results_csv': 'a',
               'optimization_csv': None}
    assert report_utils.summary_record(summary, True) == {'schema': summary['schema'], 'hosts': {}, 'grid': None}
    summary['grid'] = {'best': None}
    assert report_utils.summary_record(summary, False)['grid'] == {'best': None, 'restored': True}
    assert report_utils.summary_record(summary, True)['grid'] == {'best': None, 'restored': False}
    assert summary['grid'] == {'best': None}


def test_the_records_read_back(tmp_path):
    record = report_utils.run_record({'results': [{'benchmark': BENCHMARK}]}, None, None, RUN, REPORT, LOAD)
    soak = report_utils.soak_record(SOAK, RUN, REPORT, dict(LOAD, max_concurrency=64))
    _write(str(tmp_path / 'runs' / 'node1'), 'c4.json', record)
    _write(str(tmp_path / 'runs' / 'node1'), 'soak.json', soak)
    _write(str(tmp_path), 'summary.json', report_utils.summary_record(
        {'schema': report_utils.SUMMARY_SCHEMA, 'hosts': {}, 'grid': None, 'results_csv': ''}, True))
    runs, summary = report_utils.load_run_dir(str(tmp_path))
    assert [run['label'] for run in runs] == ['c4', 'soak']
    assert runs[0]['concurrency'] == 4 and runs[0]['status'] == 'PASS'
    assert runs[1]['soak']['verdict'] == 'PASS'
    assert summary['schema'] == report_utils.SUMMARY_SCHEMA
