# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The benchmark filters: targets and grid checked with the variable named, a point's configuration, the summary."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter import benchmark
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import RESULTS_COLUMNS

SERVICE_PARAMS = ['max_num_seqs', 'dtype', 'extra_args', 'enforce_eager']


def test_the_filters_are_registered():
    assert sorted(benchmark.FilterModule().filters()) == ['benchmark_comparison', 'benchmark_grid', 'benchmark_input_problems',
                                                          'benchmark_point_config', 'benchmark_summary',
                                                          'benchmark_targets', 'soak_input_problems']


def test_the_priority_and_second_target_filter_names_the_role_variables():
    assert benchmark.benchmark_input_problems({'priority_share': None, 'priority': -1, 'compare': None}) == []
    assert benchmark.benchmark_input_problems({'priority_share': 0, 'priority': 1, 'compare': {'model': 'm'}}) == [
        'vllm_benchmark_priority_share must be null (no priority class) or a number above 0 and up to 1, the share of '
        'the requests sent with vllm_benchmark_priority; got 0',
        'vllm_benchmark_priority must be an integer below 0 (vLLM serves lower values first, and the other requests '
        'have 0); got 1',
        'vllm_benchmark_compare.base_url must be the URL of its OpenAI-compatible server, http(s)://host:port, without '
        '/v1; got None',
        "vllm_benchmark_compare.tokenizer must be its model directory on the node, for the load generator's tokenizer; "
        "got None"]
    # -e key=value gives strings.
    assert benchmark.benchmark_input_problems({'priority_share': '0.25', 'priority': '-5', 'compare': None}) == []
    assert len(benchmark.benchmark_input_problems({'priority_share': 'half', 'priority': '-1.5', 'compare': None})) == 2
    with pytest.raises(AnsibleFilterError, match='benchmark_input_problems takes a dict of priority_share, priority'):
        benchmark.benchmark_input_problems({'priority_share': 0.5})


COMPARE_TARGET = {'base_url': 'http://127.0.0.1:8001', 'model': 'w8a8', 'tokenizer': '/srv/models/w8a8',
                  'api_key': 'secret-key', 'candidate_digest': 'ab' * 32}


def test_the_comparison_gives_the_ratios_the_target_without_its_key_and_the_quality_record():
    service = {'status': 'PASS', 'metrics': {'output_throughput': 200.0, 'e2el_ms_p99': 100.0}}
    other = {'status': 'FAIL', 'metrics': {'output_throughput': 300.0, 'e2el_ms_p99': 80.0}}
    quality = {'quantized': True, 'record_path': '/var/lib/kunpeng_ascend/model_quality/x.json',
               'record': {'status': 'PASS'}, 'serving_problems': []}
    result = benchmark.benchmark_comparison(service, other, COMPARE_TARGET, quality)
    assert 'secret-key' not in repr(result)
    assert result['target'] == {'base_url': 'http://127.0.0.1:8001', 'model': 'w8a8', 'tokenizer': '/srv/models/w8a8',
                                'candidate_digest': 'ab' * 32}
    assert (result['role'], result['status']) == ('candidate', 'FAIL')
    assert result['ratios']['output_throughput'] == pytest.approx(1.5)
    assert result['ratios']['e2el_ms_p99'] == pytest.approx(0.8)
    assert result['quality'] == {'record_path': '/var/lib/kunpeng_ascend/model_quality/x.json', 'quantized': True,
                                 'status': 'PASS', 'problems': []}
    flipped = benchmark.benchmark_comparison(service, other, dict(COMPARE_TARGET, role='baseline'))
    assert flipped['ratios']['output_throughput'] == pytest.approx(200 / 300.0) and flipped['quality'] is None
    with pytest.raises(AnsibleFilterError, match=r'benchmark_comparison: target.role must be candidate'):
        benchmark.benchmark_comparison(service, other, dict(COMPARE_TARGET, role='x'))


def test_the_summary_lists_each_runs_comparison():
    comparison = {'role': 'candidate', 'ratios': {'output_throughput': 1.5}}
    runs = [{'host': 'n1', 'label': 'c4', 'status': 'PASS', 'grid_point': None, 'metrics': {},
             'config': {'load': {'max_concurrency': 4}}, 'comparison': comparison},
            {'host': 'n1', 'label': 'c8', 'status': 'PASS', 'grid_point': None, 'metrics': {},
             'config': {'load': {'max_concurrency': 8}}, 'comparison': None}]
    summary = benchmark.benchmark_summary(runs, [])
    assert summary['comparison'] == [dict(comparison, host='n1', label='c4', max_concurrency=4)]


@pytest.mark.parametrize('load, message', [
    ({'sample_interval': float('inf')}, 'vllm_benchmark_sample_interval must be 0.1 or more seconds, at most 31622400; '
                                        'got inf'),
    ({'sample_interval': 'nan'}, "vllm_benchmark_sample_interval must be 0.1 or more seconds, at most 31622400; got "
                                 "'nan'"),
    ({'timeout': 10 ** 12}, 'vllm_benchmark_timeout must be 1 to 31622400 seconds; got 1000000000000'),
    ({'timeout': 10 ** 400}, 'vllm_benchmark_timeout must be 1 to 31622400 seconds; got %d' % 10 ** 400),
    ({'request_rate': '9' * 400}, "vllm_benchmark_request_rate must be inf or a positive number; got '%s'" % ('9' * 400)),
    ({'request_rate': 'NaN'}, "vllm_benchmark_request_rate must be inf or a positive number; got 'NaN'"),
])
def test_the_load_numbers_the_module_refuses_the_role_refuses_first(load, message):
    values = dict({'priority_share': None, 'priority': -1, 'compare': None, 'sample_interval': 1.0, 'timeout': 3600,
                   'request_rate': 'inf'}, **load)
    assert benchmark.benchmark_input_problems(values) == [message]


@pytest.mark.parametrize('share', [10 ** 400, float('nan'), float('inf'), '1e400', True])
def test_a_priority_share_that_is_no_finite_number_is_named_never_raised(share):
    assert benchmark.benchmark_input_problems({'priority_share': share, 'priority': -1, 'compare': None})[0].startswith(
        'vllm_benchmark_priority_share must be null (no priority class) or a number above 0 and up to 1')


def test_the_soak_filter_names_the_role_variables():
    assert benchmark.soak_input_problems({'duration': 0, 'interval': 30, 'rate': 1, 'warmup': 0.2, 'max_hbm_growth': 1,
                                          'max_rss_growth': 1, 'max_restarts': 0, 'max_known_failures': 0}) == [
        'vllm_benchmark_soak_duration must be seconds, more than 0 and at most 31622400; got 0']
    # The load's lengths are the benchmark's variables, shared with the sweep.
    assert benchmark.soak_input_problems({'duration': 600, 'rate': 1, 'input_len': 0, 'max_concurrency': 0.5}) == [
        'vllm_benchmark_soak_max_concurrency must be a whole number, 1 or more; got 0.5',
        'vllm_benchmark_input_len must be a whole number of tokens, 1 or more; got 0']
    with pytest.raises(AnsibleFilterError, match='soak_input_problems takes a dict'):
        benchmark.soak_input_problems([1])
    with pytest.raises(AnsibleFilterError, match='soak_input_problems: unknown option.s. durations; the options are'):
        benchmark.soak_input_problems({'durations': 1})


def test_bad_targets_fail_naming_the_variable():
    with pytest.raises(AnsibleFilterError, match=r"vllm_benchmark_targets\[1\]: metric 'tokens' is not one of"):
        benchmark.benchmark_targets([{'metric': 'e2el_ms_p99', 'max': 1}, {'metric': 'tokens', 'min': 1}])


def test_grid_axes_are_serving_variables_or_vllm_options():
    points = benchmark.benchmark_grid({'vllm_service_max_num_seqs': [16, 32], 'block_size': [64]}, SERVICE_PARAMS)
    assert [point['params'] for point in points] == [{'vllm_service_max_num_seqs': 16, 'block_size': 64},
                                                     {'vllm_service_max_num_seqs': 32, 'block_size': 64}]


@pytest.mark.parametrize('axes, message', [
    ({'--max-num-seqs': [1]}, "vllm_benchmark_grid: '--max-num-seqs' is neither a serving variable"),
    ({'Max Seqs': [1]}, "vllm_benchmark_grid: 'Max Seqs' is neither"),
    ({'block_size': [[64]]}, r'vllm_benchmark_grid.block_size: \[64\] is not a string, number or boolean'),
    ({'max_num_seqs': []}, 'vllm_benchmark_grid.max_num_seqs must be a non-empty list'),
])
def test_bad_grids_fail_naming_the_axis(axes, message):
    with pytest.raises(AnsibleFilterError, match=message):
        benchmark.benchmark_grid(axes, SERVICE_PARAMS)


def test_a_points_configuration_sets_serving_variables_and_appends_options():
    original = {'max_num_seqs': 8, 'dtype': None, 'extra_args': ['--seed=1'], 'enforce_eager': False}
    point = {'index': 3, 'params': {'vllm_service_max_num_seqs': 32, 'dtype': 'bfloat16', 'block_size': 64,
                                    'enable_prefix_caching': False, 'enable_chunked_prefill': True}}
    config = benchmark.benchmark_point_config(point, original, SERVICE_PARAMS)
    assert config == {'max_num_seqs': 32, 'dtype': 'bfloat16', 'enforce_eager': False,
                      'extra_args': ['--seed=1', '--block-size=64', '--no-enable-prefix-caching', '--enable-chunked-prefill']}
    assert original['extra_args'] == ['--seed=1'] and original['max_num_seqs'] == 8


def run(point, status, throughput, concurrency=4, host='node1'):
    metrics = dict.fromkeys(RESULTS_COLUMNS[5:])
    metrics['output_throughput'] = throughput
    return {'host': host, 'label': 'p%d-c%d' % (point, concurrency), 'status': status,
            'grid_point': {'index': point, 'params': {}} if point else None,
            'config': {'load': {'max_concurrency': concurrency}}, 'metrics': metrics}


def test_the_summary_of_a_sweep_gives_each_hosts_status_and_highest_passing_concurrency():
    runs = [run(0, 'PASS', 10.0, 1), run(0, 'PASS', 20.0, 16), run(0, 'FAIL', 30.0, 64), run(0, 'PASS', 5.0, 1, 'node2')]
    summary = benchmark.benchmark_summary(runs, [{'metric': 'e2el_ms_p99', 'max': 150}], run_id='r1')
    assert summary['hosts'] == {'node1': {'status': 'FAIL', 'runs': 3, 'max_concurrency_meeting_targets': 16},
                                'node2': {'status': 'PASS', 'runs': 1, 'max_concurrency_meeting_targets': 1}}
    assert summary['grid'] is None and summary['optimization_csv'] is None
    assert summary['results_csv'].count('\n') == 5 and summary['run_id'] == 'r1'
    assert summary['targets'] == [{'metric': 'e2el_ms_p99', 'op': '<=', 'value': 150.0}]


def test_the_summary_of_a_grid_names_the_best_point_and_the_axes():
    points = benchmark.benchmark_grid({'max_num_seqs': [16, 32]}, SERVICE_PARAMS)
    runs = [run(1, 'PASS', 100.0), run(2, 'PASS', 200.0)]
    summary = benchmark.benchmark_summary(runs, [], points, {'maximize': 'output_throughput'})
    assert summary['grid']['best']['index'] == 2 and summary['grid']['best']['params'] == {'max_num_seqs': 32}
    # Without a sweep outside the grid, the best point's runs are the host's sweep.
    assert summary['hosts']['node1']['max_concurrency_meeting_targets'] == 4
    assert summary['grid']['axes'] == {'max_num_seqs': [16, 32]}
    assert summary['optimization_csv'].splitlines()[1].startswith('1,node1,16,PASS,4,100,')


def test_a_bad_objective_fails_naming_the_variable():
    points = benchmark.benchmark_grid({'max_num_seqs': [16]}, SERVICE_PARAMS)
    with pytest.raises(AnsibleFilterError, match='vllm_benchmark_objective'):
        benchmark.benchmark_summary([run(1, 'PASS', 1.0)], [], points, {'maximize': 'speed'})
    with pytest.raises(AnsibleFilterError, match='the input must be the list of runs'):
        benchmark.benchmark_summary('runs', [])
