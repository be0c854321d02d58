# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_benchmark's run without the module: its options checked, its load generators planned, their CPU sampled
from scripted readings, and a run summarised from the real result files of vllm bench serve (vLLM 0.32.0 and the
priority classes' detailed results); tests/unit/plugins/modules/test_vllm_benchmark.py runs it whole."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark, _benchmark_run
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import BenchmarkError
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES, load_fixture

RESULT = json.loads(load_fixture('vllm-bench-serve-result_0.32.0_cpu_tiny-llama.txt'))
SAMPLES = os.path.join(FIXTURES, 'benchmark', 'priority-classes')


def _sample(name):
    with open(os.path.join(SAMPLES, name + '.json'), encoding='utf-8') as sample:
        return json.load(sample)


def options(tmp_path, **changes):
    """vllm_benchmark's options as AnsibleModule gives them (its defaults, the load generator's included)."""
    params = dict(command=['/opt/vllm/venv/bin/vllm'], base_url='http://127.0.0.1:8000', endpoint='/v1/completions',
                  backend='openai', model='tiny-llama', tokenizer='/srv/models/tiny', api_key='secret', ca_path=None,
                  input_len=32, output_len=16, seed=0, extra_args=[], sample_npus='never', npu_ids=[],
                  npu_smi_path=None, num_prompts=40, max_concurrency=4, request_rate='inf', work_dir=str(tmp_path),
                  sample_interval=1.0, measure_loadgen_cpu=True, targets=[], timeout=3600, priority_share=None,
                  priority=-1)
    params.update(changes)
    return params


# ----------------------------------------------------------------------------- the options

def test_good_options_have_no_problem(tmp_path):
    assert _benchmark_run.option_problems(options(tmp_path)) == []
    assert _benchmark_run.option_problems(options(tmp_path, priority_share=0.25, priority=-5)) == []


def test_every_problem_is_named_at_once_with_its_option(tmp_path):
    problems = _benchmark_run.option_problems(options(
        tmp_path, num_prompts=0, output_len=-3, sample_interval=0.01, command=[], work_dir=str(tmp_path / 'none'),
        priority_share=1.5))
    assert problems == [
        'num_prompts must be 1 or more, not 0',
        'output_len must be 1 or more, not -3',
        'sample_interval must be 0.1 or more seconds, at most 31622400; got 0.01',
        'command must name vLLM\'s CLI, such as [/opt/vllm/venv/bin/vllm]',
        'work_dir %s is not a directory (nothing is there): give an existing directory for the result file'
        % (tmp_path / 'none'),
        'priority_share must be null (no priority class) or a number above 0 and up to 1, the share of the requests '
        'sent with priority; got 1.5']


# ----------------------------------------------------------------------------- the load generators

def test_without_a_share_one_load_generator_runs_the_options_load(tmp_path):
    assert _benchmark_run.load_plan(options(tmp_path, num_prompts=40, max_concurrency=4, request_rate='7')) == [
        {'class': None, 'priority': None, 'loads': {'num_prompts': 40, 'max_concurrency': 4, 'request_rate': '7'},
         'result_file': 'vllm-bench-result.json', 'extra': []}]


def test_a_share_runs_the_priority_class_with_its_priority_in_the_body_and_the_rest_beside_it(tmp_path):
    plan = _benchmark_run.load_plan(options(tmp_path, num_prompts=48, max_concurrency=8, request_rate='8',
                                            priority_share=0.25, priority=-5))
    assert plan == [
        {'class': 'priority', 'priority': -5, 'loads': {'num_prompts': 12, 'max_concurrency': 2, 'request_rate': '2'},
         'result_file': 'vllm-bench-result-priority.json',
         'extra': ['--extra-body', '{"priority": -5}', '--save-detailed']},
        {'class': 'rest', 'priority': 0, 'loads': {'num_prompts': 36, 'max_concurrency': 6, 'request_rate': '6'},
         'result_file': 'vllm-bench-result-rest.json', 'extra': ['--save-detailed']}]


def test_a_share_of_one_runs_the_priority_class_alone(tmp_path):
    plan = _benchmark_run.load_plan(options(tmp_path, priority_share=1, priority=-2))
    assert [(entry['class'], entry['loads']['num_prompts']) for entry in plan] == [('priority', 40)]


def test_each_load_generators_command_line_has_its_own_load_and_result_file(tmp_path):
    params = options(tmp_path, num_prompts=48, max_concurrency=8, priority_share=0.25, priority=-5,
                     extra_args=['--num-warmups', '2'])
    argv = _benchmark_run.load_argv(params, _benchmark_run.load_plan(params)[0])
    flags = dict(zip(argv, argv[1:]))
    assert (flags['--num-prompts'], flags['--max-concurrency'], flags['--request-rate']) == ('12', '2', 'inf')
    assert (flags['--result-dir'], flags['--result-filename']) == (str(tmp_path), 'vllm-bench-result-priority.json')
    assert argv[-5:] == ['--extra-body', '{"priority": -5}', '--save-detailed', '--num-warmups', '2']
    assert 'secret' not in argv


class Processes:
    """Scripted readings: ``found[argv[0]]``, the PIDs find_child returns call after call (None: not started
    yet); ``cpu[pid]``, the CPU seconds tree_cpu_seconds returns call after call (None: gone)."""

    def __init__(self, found, cpu):
        self.found = found
        self.cpu = cpu
        self.looked_for = []

    def find_child(self, argv):
        self.looked_for.append(argv[0])
        return self.found[argv[0]].pop(0)

    def tree_cpu_seconds(self, root):
        return self.cpu[root].pop(0)


def test_the_cpu_of_every_load_generator_is_summed_one_that_ended_counting_as_last_seen():
    processes = Processes({'a': [10], 'b': [None, 20]}, {10: [1.0, 2.0, None, None], 20: [0.5, 1.5, None]})
    sampler = _benchmark_run.LoadgenCpuSampler(processes, [['a'], ['b']])
    for moment in (0.0, 1.0, 2.0, 3.0):
        sampler(moment)
    # b is not started at the first reading and looked for again; a ended at 2.0 and counts with its 2.0 s while b
    # runs; once both are gone there is no reading.
    assert processes.looked_for == ['a', 'b', 'b']
    assert sampler.samples == [{'t': 0.0, 'cpu_seconds': 1.0}, {'t': 1.0, 'cpu_seconds': 2.5},
                               {'t': 2.0, 'cpu_seconds': 3.5}]


def test_no_cpu_reading_while_no_load_generator_is_found():
    sampler = _benchmark_run.LoadgenCpuSampler(Processes({'a': [None, None]}, {}), [['a']])
    sampler(0.0)
    sampler(1.0)
    assert sampler.samples == []


# ----------------------------------------------------------------------------- the run summarised

def gen(result, ended, argv=('vllm', 'bench', 'serve'), name=None, priority=None, loads=None):
    """A load generator as run() hands it to summarize: its result read as read_bench_result reads it."""
    return {'class': name, 'priority': priority, 'loads': loads, 'argv': list(argv), 'raw': result, 'ended': ended,
            'metrics': _benchmark.metrics_from_vllm_bench(result, lambda message: None)}


def one(duration=3.0, ended=4.0, **changes):
    result = dict(RESULT, duration=duration, **changes)
    return [gen(result, ended)]


def npu(moment, aicore, hbm=5000):
    return {'t': moment, 'npu_id': 0, 'chip_id': 0, 'aicore_percent': aicore, 'hbm_used_mb': hbm,
            'hbm_total_mb': 65536}


def summarize(tmp_path, gens, targets=(), npu_samples=(), npu_watched=False, cpu_samples=(), **changes):
    warnings = []
    run = _benchmark_run.summarize(options(tmp_path, **changes), gens, list(targets), list(npu_samples), npu_watched,
                                   list(cpu_samples), warnings.append)
    return run, warnings


def test_the_window_is_the_benchmark_after_the_start_up_and_only_its_npu_readings_count(tmp_path):
    samples = [npu(0.5, 0), npu(1.0, 20), npu(2.5, 80), npu(4.0, 50), npu(4.5, 0)]
    run, warnings = summarize(tmp_path, one(), npu_samples=samples, npu_watched=True)
    assert run['window'] == [1.0, 4.0]
    assert (run['metrics']['npu_aicore_percent_mean'], run['metrics']['npu_aicore_percent_peak']) == (50.0, 80.0)
    assert run['npu_samples'] == samples and warnings == []
    assert run['argv'] == ['vllm', 'bench', 'serve'] and run['classes'] == []
    assert 'latencies' not in run['vllm_bench'] and run['vllm_bench']['completed'] == RESULT['completed']


def test_a_benchmark_longer_than_the_run_starts_its_window_at_0(tmp_path):
    assert summarize(tmp_path, one(duration=9.0))[0]['window'] == [0.0, 4.0]


def test_no_npu_reading_in_the_window_warns_only_when_the_npus_were_watched(tmp_path):
    run, warnings = summarize(tmp_path, one(), npu_samples=[npu(0.5, 0)], npu_watched=True)
    assert run['metrics']['npu_aicore_percent_mean'] is None
    assert warnings == ['no NPU reading fell inside the 3.00 s benchmark: lower sample_interval or raise num_prompts']
    assert summarize(tmp_path, one(), npu_samples=[npu(0.5, 0)], npu_watched=False)[1] == []


def cpu(share, until=4.0):
    """Cumulative CPU readings every half second: a whole core until 1.0, then ``share`` of one."""
    moments = [index * 0.5 for index in range(int(until * 2) + 1)]
    return [{'t': moment, 'cpu_seconds': min(moment, 1.0) + share * max(0.0, moment - 1.0)} for moment in moments]


@pytest.mark.parametrize('share, warned', [(0.95, True), (0.9, True), (0.896, False), (0.05, False)])
def test_the_load_generators_cpu_over_the_window_warns_from_90_percent(tmp_path, share, warned):
    run, warnings = summarize(tmp_path, one(), cpu_samples=cpu(share, until=3.5))
    assert run['metrics']['loadgen_cpu_percent'] == round(100 * share, 1)
    assert run['loadgen_samples'][0] == {'t': 0.5, 'cpu_percent': 100.0}
    assert warnings == ([
        'the load generator used %.0f %% of a CPU core during the run: it may be the bottleneck, not the server; run '
        'it on a less busy host or lower the concurrency' % (100 * share)] if warned else [])


def test_without_cpu_readings_the_load_generators_cpu_is_null(tmp_path):
    run, warnings = summarize(tmp_path, one())
    assert run['metrics']['loadgen_cpu_percent'] is None and run['loadgen_samples'] == [] and warnings == []


def test_targets_decide_the_status(tmp_path):
    targets = _benchmark.parse_targets([{'metric': 'completed', 'min': RESULT['completed']},
                                        {'metric': 'npu_aicore_percent_mean', 'min': 85}])
    run, _warnings = summarize(tmp_path, one(), targets=targets)
    assert [(target['metric'], target['status']) for target in run['targets']] == [
        ('completed', 'PASS'), ('npu_aicore_percent_mean', 'NOT_MEASURED')]
    assert run['status'] == 'PASS'
    failing = _benchmark.parse_targets([{'metric': 'completed', 'min': RESULT['completed'] + 1}])
    assert summarize(tmp_path, one(), targets=failing)[0]['status'] == 'FAIL'


def test_failed_requests_make_the_run_fail_with_a_warning(tmp_path):
    run, warnings = summarize(tmp_path, one(completed=30, failed=10))
    assert run['status'] == 'FAIL'
    assert warnings == ['10 of 40 requests failed: the run is FAIL; see the server\'s log']


def test_a_run_whose_every_request_failed_is_an_error_naming_what_to_check(tmp_path):
    with pytest.raises(BenchmarkError) as error:
        summarize(tmp_path, one(completed=0, failed=40))
    assert error.value.msg == (
        'every one of the 40 requests failed against http://127.0.0.1:8000: check that input_len + output_len (48) '
        'fits the server\'s max_model_len, that the model is served as tiny-llama, and the key')


def classes(rest=None):
    priority_load = {'num_prompts': 12, 'max_concurrency': 2, 'request_rate': 'inf'}
    rest_load = {'num_prompts': 36, 'max_concurrency': 6, 'request_rate': 'inf'}
    return [gen(_sample('priority'), 4.0, ['vllm', 'priority'], 'priority', -5, priority_load),
            gen(rest or _sample('rest'), 4.5, ['vllm', 'rest'], 'rest', 0, rest_load)]


def test_the_classes_are_merged_and_each_reported_apart(tmp_path):
    run, warnings = summarize(tmp_path, classes(), priority_share=0.25, priority=-5, num_prompts=48)
    merged = _benchmark.merged_metrics({'priority': _sample('priority'), 'rest': _sample('rest')})
    assert run['metrics']['completed'] == merged['completed'] == 48
    assert run['metrics']['e2el_ms_p99'] == pytest.approx(merged['e2el_ms_p99'])
    assert run['argv'] == ['vllm', 'rest'] and sorted(run['vllm_bench']) == ['priority', 'rest']
    assert [(c['class'], c['priority'], c['num_prompts'], c['argv']) for c in run['classes']] == [
        ('priority', -5, 12, ['vllm', 'priority']), ('rest', 0, 36, ['vllm', 'rest'])]
    assert 0 < run['classes'][0]['overlap'] <= 1 and warnings == []


def test_classes_that_ran_apart_are_warned_about(tmp_path):
    rest = _sample('rest')
    rest['start_times'] = [moment + 1000.0 for moment in rest['start_times']]
    run, warnings = summarize(tmp_path, classes(rest), priority_share=0.25, priority=-5, num_prompts=48)
    assert run['classes'][0]['overlap'] == 0.0
    assert warnings == ['the priority class ran only 0 % of its time beside the rest (its load generator started '
                        'apart): their latencies compare little; raise num_prompts']


def test_a_class_without_its_per_request_lists_is_an_error(tmp_path):
    gens = [gen(dict(RESULT), 4.0, name='priority', priority=-1,
                loads={'num_prompts': 40, 'max_concurrency': 4, 'request_rate': 'inf'})]
    with pytest.raises(BenchmarkError) as error:
        summarize(tmp_path, gens, priority_share=1)
    assert error.value.msg.startswith('the result of priority has no per-request lists')
