# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The benchmark's numbers: vllm bench serve's result read, samples summarised, targets, sweep, grid, CSV."""

from __future__ import annotations

import csv
import io
import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import BenchmarkError
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

RESULT = json.loads(load_fixture('vllm-bench-serve-result_0.32.0_cpu_tiny-llama.txt'))


def test_the_real_result_gives_every_latency_percentile_and_the_throughputs():
    warnings = []
    metrics = _benchmark.metrics_from_vllm_bench(RESULT, warnings.append)
    assert warnings == []
    assert metrics['completed'] == 40 and metrics['failed'] == 0
    assert metrics['output_throughput'] == pytest.approx(987.9431113985199)
    assert metrics['request_throughput'] == pytest.approx(61.746444462407496)
    assert metrics['e2el_ms_p99'] == pytest.approx(80.90629501057265)
    assert metrics['ttft_ms_p50'] == pytest.approx(16.80037500045728)
    assert metrics['itl_ms_p90'] == pytest.approx(4.912722000153735)
    assert metrics['tpot_ms_mean'] == pytest.approx(2.976164708337213)
    assert all(metrics[key] is not None for key in _benchmark.LATENCY_METRICS)
    assert all(metrics[key] is None for key in _benchmark.NPU_METRICS + _benchmark.LOADGEN_METRICS)


def test_a_missing_percentile_is_none_with_a_warning():
    result = dict(RESULT)
    del result['p99_itl_ms']
    result['p90_itl_ms'] = 'inf'
    warnings = []
    metrics = _benchmark.metrics_from_vllm_bench(result, warnings.append)
    assert metrics['itl_ms_p99'] is None and metrics['itl_ms_p90'] is None
    assert warnings == ['vllm bench serve reported no p99_itl_ms']


@pytest.mark.parametrize('result, message', [
    ([1, 2], 'is a JSON list, not an object'),
    ({'completed': 3}, 'has no number for duration'),
    ({'duration': 'x', 'completed': None}, 'has no number for completed, duration'),
])
def test_a_result_that_is_not_a_serving_benchmark_is_an_error(result, message):
    with pytest.raises(BenchmarkError, match=message):
        _benchmark.metrics_from_vllm_bench(result, lambda message: None)


def test_the_per_request_lists_are_dropped():
    fields = _benchmark.scalar_fields(RESULT)
    assert 'latencies' not in fields and 'queue_times' not in fields
    assert fields['p99_e2el_ms'] == RESULT['p99_e2el_ms']


def test_npu_samples_give_mean_over_readings_and_peak_of_any_reading():
    samples = [{'t': 0, 'aicore_percent': 10, 'hbm_used_mb': 1000}, {'t': 0, 'aicore_percent': 30, 'hbm_used_mb': 3000},
               {'t': 1, 'aicore_percent': 90, 'hbm_used_mb': 2000}, {'t': 1, 'aicore_percent': None, 'hbm_used_mb': None}]
    summary = _benchmark.summarize_npu_samples(samples)
    assert summary == {'npu_aicore_percent_mean': pytest.approx(130 / 3), 'npu_aicore_percent_peak': 90.0,
                       'npu_hbm_used_mb_mean': 2000.0, 'npu_hbm_used_mb_peak': 3000.0}
    assert _benchmark.summarize_npu_samples([]) == dict.fromkeys(_benchmark.NPU_METRICS)


def test_only_samples_inside_the_window_count():
    samples = [{'t': 0.5}, {'t': 1.0}, {'t': 2.0}, {'t': 2.5}]
    assert _benchmark.in_window(samples, (1.0, 2.0)) == [{'t': 1.0}, {'t': 2.0}]


def test_the_load_generators_cpu_is_interpolated_at_the_window_edges():
    # 1 CPU-second per second up to t=2, then idle.
    samples = [{'t': 0, 'cpu_seconds': 0}, {'t': 2, 'cpu_seconds': 2}, {'t': 4, 'cpu_seconds': 2}]
    assert _benchmark.cpu_percent_in_window(samples, (1, 3)) == pytest.approx(50.0)
    assert _benchmark.cpu_percent_in_window(samples, (0, 2)) == pytest.approx(100.0)
    assert _benchmark.cpu_percent_in_window(samples, (3, 5)) is None
    assert _benchmark.cpu_percent_in_window(samples[:1], (0, 0.5)) is None
    assert _benchmark.cpu_percent_series(samples) == [{'t': 2, 'cpu_percent': 100.0}, {'t': 4, 'cpu_percent': 0.0}]


def test_targets_are_read_and_bad_ones_named():
    assert _benchmark.parse_targets([{'metric': 'e2el_ms_p99', 'max': 150}, {'metric': 'output_throughput', 'min': 1200}]) \
        == [{'metric': 'e2el_ms_p99', 'op': '<=', 'value': 150.0}, {'metric': 'output_throughput', 'op': '>=', 'value': 1200.0}]


@pytest.mark.parametrize('targets, message', [
    ({'metric': 'x'}, 'vllm_benchmark_targets must be a list'),
    (['e2el'], r'vllm_benchmark_targets\[0\] must be a dict'),
    ([{'metric': 'p99', 'max': 1}], r"vllm_benchmark_targets\[0\]: metric 'p99' is not one of completed"),
    ([{'metric': 'e2el_ms_p99'}], r'vllm_benchmark_targets\[0\] \(e2el_ms_p99\) needs exactly one of max and min'),
    ([{'metric': 'e2el_ms_p99', 'max': 1, 'min': 0}], 'needs exactly one of max and min'),
    ([{'metric': 'e2el_ms_p99', 'max': '150ms'}], r"max must be a number, not '150ms'"),
    ([{'metric': 'e2el_ms_p99', 'max': True}], 'max must be a number, not True'),
    ([{'metric': 'e2el_ms_p99', 'below': 1}], r'has unknown key\(s\) below'),
])
def test_bad_targets_are_errors_naming_the_entry(targets, message):
    with pytest.raises(BenchmarkError, match=message):
        _benchmark.parse_targets(targets, 'vllm_benchmark_targets')


def test_targets_pass_fail_and_not_measured():
    metrics = dict.fromkeys(_benchmark.METRICS)
    metrics.update(e2el_ms_p99=80.0, output_throughput=900.0, failed=0)
    targets = _benchmark.parse_targets([{'metric': 'e2el_ms_p99', 'max': 150}, {'metric': 'e2el_ms_p99', 'max': 80},
                                        {'metric': 'output_throughput', 'min': 1200},
                                        {'metric': 'npu_aicore_percent_mean', 'min': 85}])
    evaluated, status = _benchmark.evaluate_targets(metrics, targets)
    assert [target['status'] for target in evaluated] == ['PASS', 'PASS', 'FAIL', 'NOT_MEASURED']
    assert status == 'FAIL'
    evaluated, status = _benchmark.evaluate_targets(metrics, targets[:2] + targets[3:])
    assert status == 'PASS'
    metrics['failed'] = 2
    assert _benchmark.evaluate_targets(metrics, [])[1] == 'FAIL'


def test_the_grid_is_every_combination_in_axis_order():
    points = _benchmark.grid_points({'vllm_service_max_num_seqs': [16, 32, 64], 'vllm_service_dtype': ['float16', 'bfloat16']})
    assert len(points) == 6
    assert points[0] == {'index': 1, 'params': {'vllm_service_max_num_seqs': 16, 'vllm_service_dtype': 'float16'}}
    assert points[1]['params'] == {'vllm_service_max_num_seqs': 16, 'vllm_service_dtype': 'bfloat16'}
    assert [point['index'] for point in points] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize('axes, message', [
    ({}, 'must be a non-empty dict'),
    ([16, 32], 'must be a non-empty dict'),
    ({'a': []}, r'grid.a must be a non-empty list'),
    ({'a': 16}, r'grid.a must be a non-empty list'),
    ({'a': [1, 1]}, 'grid.a lists 1 more than once'),
    ({'a': list(range(20)), 'b': list(range(20))}, 'has 400 points, more than 256'),
])
def test_bad_grids_are_errors(axes, message):
    with pytest.raises(BenchmarkError, match=message):
        _benchmark.grid_points(axes)


def run(host, concurrency, status, point=None, **metrics):
    return {'host': host, 'label': 'c%d' % concurrency, 'status': status,
            'grid_point': None if point is None else {'index': point, 'params': {}},
            'config': {'load': {'max_concurrency': concurrency}}, 'metrics': metrics}


def test_the_highest_concurrency_meeting_the_targets_is_the_end_of_the_passing_prefix():
    assert _benchmark.max_concurrency_meeting_targets(
        [run('a', 64, 'FAIL'), run('a', 1, 'PASS'), run('a', 16, 'PASS'), run('a', 500, 'PASS')]) == 16
    assert _benchmark.max_concurrency_meeting_targets([run('a', 1, 'FAIL'), run('a', 16, 'PASS')]) is None
    assert _benchmark.max_concurrency_meeting_targets([run('a', 1, 'PASS'), run('a', 16, 'PASS')]) == 16


def test_the_best_point_maximises_the_objective_among_runs_that_met_their_targets():
    points = _benchmark.grid_points({'max_num_seqs': [16, 32, 64]})
    runs = [run('a', 16, 'PASS', 1, output_throughput=100.0), run('a', 16, 'PASS', 2, output_throughput=300.0),
            run('a', 16, 'FAIL', 3, output_throughput=900.0)]
    objective = {'maximize': 'output_throughput', 'subject_to_targets': True}
    best = _benchmark.best_point(points, runs, objective)
    assert (best['index'], best['host'], best['score']) == (2, 'a', 300.0)
    assert _benchmark.best_point(points, runs, {'maximize': 'output_throughput', 'subject_to_targets': False})['index'] == 3
    assert _benchmark.best_point(points, runs, {'minimize': 'output_throughput'})['index'] == 1
    assert _benchmark.best_point(points, [run('a', 16, 'FAIL', 1, output_throughput=1.0)], objective) is None


@pytest.mark.parametrize('objective', [{}, {'maximize': 'x'}, {'maximize': 'output_throughput', 'minimize': 'e2el_ms_p99'},
                                       {'maximize': 'output_throughput', 'subject': True}, 'output_throughput'])
def test_bad_objectives_are_errors(objective):
    with pytest.raises(BenchmarkError, match='objective'):
        _benchmark.objective_direction(objective)


def test_the_optimization_table_has_one_row_per_point_and_host_with_its_parameters():
    points = _benchmark.grid_points({'vllm_service_max_num_seqs': [16, 32]})
    runs = [run('a', 1, 'PASS', 1, output_throughput=10.0), run('a', 8, 'PASS', 1, output_throughput=50.0),
            run('a', 1, 'FAIL', 2, output_throughput=70.0)]
    objective = {'maximize': 'output_throughput'}
    rows = _benchmark.optimization_rows(points, runs, objective)
    assert [(row['point'], row['vllm_service_max_num_seqs'], row['max_concurrency'], row['score'], row['status'])
            for row in rows] == [(1, 16, 8, 50.0, 'PASS'), (2, 32, 1, None, 'FAIL')]
    table = list(csv.reader(io.StringIO(_benchmark.csv_text(rows, _benchmark.optimization_columns(points)))))
    assert table[0][:6] == ['point', 'host', 'vllm_service_max_num_seqs', 'status', 'max_concurrency', 'score']
    assert table[1][:6] == ['1', 'a', '16', 'PASS', '8', '50']
    assert table[2][5] == ''
    assert len(table) == 3


def test_the_results_table_has_one_row_per_run():
    runs = [run('a', 1, 'PASS', output_throughput=10.5), run('b', 4, 'FAIL', 2, output_throughput=None)]
    text = _benchmark.csv_text(_benchmark.results_rows(runs), _benchmark.RESULTS_COLUMNS)
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == list(_benchmark.RESULTS_COLUMNS)
    assert table[1][:5] == ['a', 'c1', '', '1', 'PASS']
    assert table[2][:5] == ['b', 'c4', '2', '4', 'FAIL']
    assert table[1][table[0].index('output_throughput')] == '10.5'
    assert table[2][table[0].index('output_throughput')] == ''


def test_npu_rows_of_a_table_keep_the_chosen_npus():
    info = {'chips': [{'npu_id': 0, 'chip_id': 0, 'aicore_percent': 12, 'hbm_used_mb': 100, 'hbm_total_mb': 200},
                      {'npu_id': 1, 'chip_id': 0, 'aicore_percent': 'x'}]}
    assert _benchmark.npu_sample_rows(info, 1.23456) == [
        {'t': 1.235, 'npu_id': 0, 'chip_id': 0, 'aicore_percent': 12.0, 'hbm_used_mb': 100.0, 'hbm_total_mb': 200.0},
        {'t': 1.235, 'npu_id': 1, 'chip_id': 0, 'aicore_percent': None, 'hbm_used_mb': None, 'hbm_total_mb': None}]
    assert [row['npu_id'] for row in _benchmark.npu_sample_rows(info, 0, [1])] == [1]


class Clock:
    """A clock that advances only when the loop sleeps, or a sampler takes time."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_the_sampling_loop_samples_each_interval_and_once_more_at_the_end():
    clock = Clock()
    moments = []
    polls = iter([None, None, None, 0])
    rc = _benchmark.sample_until_done(lambda: next(polls), [moments.append], 0.5, clock() + 60, clock, clock.sleep)
    assert rc == 0
    assert moments == [0.0, 0.5, 1.0, 1.5, 1.5]


def test_a_slow_sampler_skips_ticks_instead_of_bunching_up():
    clock = Clock()
    moments = []

    def slow(moment):
        moments.append(moment)
        clock.now += 1.2

    polls = iter([None, None, 0])
    _benchmark.sample_until_done(lambda: next(polls), [slow], 0.5, clock() + 60, clock, clock.sleep)
    assert moments[:3] == [0.0, 1.5, 3.0]


def test_the_sampling_loop_stops_at_the_deadline():
    clock = Clock()
    assert _benchmark.sample_until_done(lambda: None, [], 1.0, clock() + 3, clock, clock.sleep) is None
    assert clock.now == pytest.approx(103.0)
