# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The benchmark's priority class (its inputs, its share of the load, the classes merged as vllm bench serve
computes its own numbers) and the comparison with a second target."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import BenchmarkError
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES

SAMPLES = os.path.join(FIXTURES, 'benchmark', 'priority-classes')


def _sample(name):
    with open(os.path.join(SAMPLES, name + '.json'), encoding='utf-8') as sample:
        return json.load(sample)


PRIORITY, REST = _sample('priority'), _sample('rest')
DIGEST = 'ab' * 32


# ----------------------------------------------------------------------------- inputs

@pytest.mark.parametrize('share, priority', [(None, -1), (0.25, -1), (1, -10), (1.0, -1)])
def test_a_share_up_to_one_and_a_negative_priority_are_accepted(share, priority):
    assert _benchmark.priority_problems(share, priority) == []


@pytest.mark.parametrize('share', [0, 0.0, -0.5, 1.01, 'a quarter', True, float('nan')])
def test_a_share_outside_0_to_1_is_refused_naming_the_variable(share):
    assert _benchmark.priority_problems(share, -1) == [
        'vllm_benchmark_priority_share must be null (no priority class) or a number above 0 and up to 1, the share '
        'of the requests sent with vllm_benchmark_priority; got %r' % (share,)]


@pytest.mark.parametrize('priority', [0, 3, -1.5, '-1', True, None])
def test_a_priority_that_is_no_integer_below_0_is_refused_naming_the_variable(priority):
    assert _benchmark.priority_problems(0.5, priority) == [
        'vllm_benchmark_priority must be an integer below 0 (vLLM serves lower values first, and the other requests '
        'have 0); got %r' % (priority,)]


def test_the_module_names_its_own_options():
    assert _benchmark.priority_problems(2, 0, prefix='')[0].startswith('priority_share must be')
    assert _benchmark.priority_problems(2, 0, prefix='')[1].startswith('priority must be')


# ----------------------------------------------------------------------------- the load of each class

def test_the_share_splits_the_requests_the_concurrency_and_the_rate():
    assert _benchmark.priority_loads(1000, 16, '8', 0.25) == {
        'priority': {'num_prompts': 250, 'max_concurrency': 4, 'request_rate': '2'},
        'rest': {'num_prompts': 750, 'max_concurrency': 12, 'request_rate': '6'}}


def test_each_class_sends_one_request_and_has_one_in_flight_at_least():
    assert _benchmark.priority_loads(10, 1, 'inf', 0.01) == {
        'priority': {'num_prompts': 1, 'max_concurrency': 1, 'request_rate': 'inf'},
        'rest': {'num_prompts': 9, 'max_concurrency': 1, 'request_rate': 'inf'}}
    assert _benchmark.priority_loads(10, 4, 'inf', 0.99)['rest'] == {
        'num_prompts': 1, 'max_concurrency': 1, 'request_rate': 'inf'}


def test_a_share_of_one_leaves_no_rest():
    assert _benchmark.priority_loads(64, 8, 'inf', 1)['rest'] is None
    assert _benchmark.priority_loads(64, 8, 'inf', 1)['priority']['num_prompts'] == 64


# ----------------------------------------------------------------------------- the classes merged

@pytest.mark.parametrize('result', [PRIORITY, REST], ids=['priority', 'rest'])
def test_one_class_merged_alone_gives_vllm_bench_serves_own_latencies(result):
    merged = _benchmark.merged_metrics({'one': result})
    own = _benchmark.metrics_from_vllm_bench(result, pytest.fail)
    assert merged['completed'] == own['completed'] and merged['failed'] == own['failed'] == 0
    for key in _benchmark.LATENCY_METRICS:
        assert merged[key] == pytest.approx(own[key], rel=1e-9), key
    # vllm bench serve's duration also counts its own set-up and gathering around the requests.
    assert own['duration_s'] * 0.8 < merged['duration_s'] <= own['duration_s']
    assert merged['output_throughput'] >= own['output_throughput']


def test_both_classes_merged_count_every_request_over_the_time_they_all_ran():
    merged = _benchmark.merged_metrics({'priority': PRIORITY, 'rest': REST})
    assert merged['completed'] == 48 and merged['failed'] == 0
    ends = [start + latency for result in (PRIORITY, REST)
            for start, latency in zip(result['start_times'], result['latencies'])]
    duration = max(ends) - min(PRIORITY['start_times'] + REST['start_times'])
    assert merged['duration_s'] == pytest.approx(duration)
    assert merged['output_throughput'] == pytest.approx(48 * 8 / duration)
    assert merged['total_token_throughput'] == pytest.approx(
        (48 * 8 + sum(PRIORITY['input_lens']) + sum(REST['input_lens'])) / duration)
    e2els = sorted(PRIORITY['latencies'] + REST['latencies'])
    assert merged['e2el_ms_mean'] == pytest.approx(1000 * sum(e2els) / 48)
    # The 50th percentile of 48 values lies halfway between the 24th and the 25th.
    assert merged['e2el_ms_p50'] == pytest.approx(1000 * (e2els[23] + e2els[24]) / 2)
    assert merged['ttft_ms_p99'] <= max(PRIORITY['ttfts'] + REST['ttfts']) * 1000
    assert all(merged[key] is None for key in _benchmark.NPU_METRICS + _benchmark.LOADGEN_METRICS)


def test_a_failed_request_counts_as_failed_and_out_of_the_latencies():
    result = dict(PRIORITY, errors=['Bad Request'] + PRIORITY['errors'][1:],
                  latencies=[0.0] + PRIORITY['latencies'][1:], ttfts=[0.0] + PRIORITY['ttfts'][1:])
    merged = _benchmark.merged_metrics({'priority': result})
    assert (merged['completed'], merged['failed']) == (11, 1)
    assert merged['e2el_ms_p50'] == pytest.approx(_percentile_ms(PRIORITY['latencies'][1:], 50))


def _percentile_ms(values, percent):
    ordered = sorted(values)
    position = (len(ordered) - 1) * percent / 100.0
    low = int(position)
    return 1000 * (ordered[low] + (ordered[min(low + 1, len(ordered) - 1)] - ordered[low]) * (position - low))


def test_every_request_failed_gives_counts_and_no_latency():
    result = dict(PRIORITY, errors=['refused'] * 12)
    merged = _benchmark.merged_metrics({'priority': result})
    assert (merged['completed'], merged['failed'], merged['e2el_ms_p99'], merged['duration_s']) == (0, 12, None, None)


def test_a_result_without_its_per_request_lists_is_refused():
    result = dict((key, value) for key, value in REST.items() if key != 'itls')
    with pytest.raises(BenchmarkError, match=r'the result of rest has no per-request lists .* --save-detailed\?'):
        _benchmark.merged_metrics({'rest': result})


def test_the_overlap_of_the_captured_classes_is_the_share_of_the_priority_class_beside_the_rest():
    overlap = _benchmark.priority_overlap({'priority': PRIORITY, 'rest': REST})
    first = min(PRIORITY['start_times'])
    last = max(s + l for s, l in zip(PRIORITY['start_times'], PRIORITY['latencies']))
    rest_first = min(REST['start_times'])
    rest_last = max(s + l for s, l in zip(REST['start_times'], REST['latencies']))
    assert overlap == pytest.approx((min(last, rest_last) - max(first, rest_first)) / (last - first))
    assert 0 < overlap <= 1


def test_classes_that_ran_apart_do_not_overlap_and_one_class_has_no_overlap():
    later = dict(REST, start_times=[start + 1000 for start in REST['start_times']])
    assert _benchmark.priority_overlap({'priority': PRIORITY, 'rest': later}) == 0.0
    assert _benchmark.priority_overlap({'priority': PRIORITY}) is None


def test_a_class_report_gives_its_load_count_and_latencies():
    metrics = _benchmark.metrics_from_vllm_bench(PRIORITY, pytest.fail)
    report = _benchmark.class_report('priority', -5, {'num_prompts': 12, 'max_concurrency': 2, 'request_rate': 'inf'},
                                     metrics)
    assert (report['class'], report['priority'], report['num_prompts'], report['completed']) == ('priority', -5, 12, 12)
    assert report['metrics']['e2el_ms_p99'] == metrics['e2el_ms_p99']
    assert 'npu_aicore_percent_mean' not in report['metrics']


# ----------------------------------------------------------------------------- the second target

TARGET = {'base_url': 'http://127.0.0.1:8001', 'model': 'w8a8', 'tokenizer': '/srv/models/w8a8'}


@pytest.mark.parametrize('target', [None, TARGET, dict(TARGET, role='baseline', api_key='k', candidate_digest=DIGEST),
                                    dict(TARGET, base_url='https://[::1]:8443/prefix')])
def test_a_complete_second_target_is_accepted(target):
    assert _benchmark.compare_target_problems(target) == []


@pytest.mark.parametrize('target, problem', [
    ('http://x', "vllm_benchmark_compare must be null or a dict {base_url, model, tokenizer, and optionally api_key, "
                 "role, candidate_digest}; got 'http://x'"),
    ({'base_url': 'http://h:1', 'model': 'm'}, "vllm_benchmark_compare.tokenizer must be its model directory on the "
                                               "node, for the load generator's tokenizer; got None"),
    (dict(TARGET, model=''), "vllm_benchmark_compare.model must be the model name it serves; got ''"),
    (dict(TARGET, base_url='h:8000'), "vllm_benchmark_compare.base_url must be http(s)://host:port (no query, no /v1 "
                                      "needed); got 'h:8000'"),
    (dict(TARGET, role='reference'), "vllm_benchmark_compare.role must be candidate (the service is the baseline) or "
                                     "baseline (the service is the candidate); got 'reference'"),
    (dict(TARGET, candidate_digest='ABC'), "vllm_benchmark_compare.candidate_digest must be null or the SHA-256 (64 "
                                           "lowercase hex digits) of the candidate model's manifest; got 'ABC'"),
    (dict(TARGET, api_key=5), 'vllm_benchmark_compare.api_key must be a string or null'),
    (dict(TARGET, url='x'), 'vllm_benchmark_compare has unknown key url: the keys are base_url, model, tokenizer, '
                            'api_key, role, candidate_digest'),
])
def test_an_incomplete_or_wrong_second_target_is_refused_naming_the_key(target, problem):
    assert _benchmark.compare_target_problems(target) == [problem]


def test_the_ratios_are_candidate_over_baseline_whichever_the_second_target_is():
    service = {'output_throughput': 100.0, 'e2el_ms_p50': 50.0, 'ttft_ms_p99': 0.0, 'request_throughput': None}
    other = {'output_throughput': 150.0, 'e2el_ms_p50': 40.0, 'ttft_ms_p99': 5.0, 'request_throughput': 3.0}
    ratios = _benchmark.comparison(service, other)
    assert set(ratios) == set(_benchmark.RATIO_METRICS)
    assert ratios['output_throughput'] == pytest.approx(1.5) and ratios['e2el_ms_p50'] == pytest.approx(0.8)
    # A baseline of 0 or a metric missing on either side gives no ratio.
    assert ratios['ttft_ms_p99'] is None and ratios['request_throughput'] is None and ratios['tpot_ms_p50'] is None
    inverse = _benchmark.comparison(service, other, role='baseline')
    assert inverse['output_throughput'] == pytest.approx(100 / 150.0) and inverse['e2el_ms_p50'] == pytest.approx(1.25)
