# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_benchmark with real processes: a stand-in for `vllm bench serve` that writes the real result file of vLLM
0.32.0 and the simulator's npu-smi, whose utilisation follows a script the stand-in starts when its benchmark starts.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import vllm_benchmark
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    SIMULATOR,
    FailJson,
    capture_results,
    load_fixture,
    run_main,
    simulator_module,
)

ASCEND_SIM = simulator_module('ascend_sim', 'ascend-sim')

RESULT = load_fixture('vllm-bench-serve-result_0.32.0_cpu_tiny-llama.txt')

# The stand-in: checks its arguments, "starts up" for STARTUP seconds, then starts the simulator's usage script and
# runs the "benchmark" for DURATION seconds (busy when BUSY), and saves the real result with that duration.
FAKE_BENCH = textwrap.dedent('''\
    #!{python}
    import json, os, sys, time
    args = sys.argv[1:]
    with open(os.environ['FAKE_BENCH_LOG'], 'w') as log:
        json.dump({{'argv': args, 'key': os.environ.get('OPENAI_API_KEY')}}, log)
    if os.environ.get('FAKE_BENCH_RC'):
        sys.stderr.write('boom: cannot reach the server\\n')
        sys.exit(int(os.environ['FAKE_BENCH_RC']))
    assert args[:2] == ['bench', 'serve'], args
    time.sleep(float(os.environ.get('STARTUP', '0.3')))
    duration = float(os.environ.get('DURATION', '0'))
    script = os.environ.get('USAGE_SCRIPT')
    start = time.time()
    if script:
        state_path = os.environ['ASCEND_SIM_STATE']
        with open(state_path) as handle:
            state = json.load(handle)
        state['usage_script'] = dict(json.loads(script), start=start)
        with open(state_path + '.new', 'w') as handle:
            json.dump(state, handle)
        os.rename(state_path + '.new', state_path)
    while time.time() - start < duration:
        if not os.environ.get('BUSY'):
            time.sleep(0.01)
    if os.environ.get('NO_RESULT'):
        sys.exit(0)
    result = json.loads(os.environ['RESULT'])
    result['duration'] = time.time() - start
    directory = args[args.index('--result-dir') + 1]
    with open(os.path.join(directory, args[args.index('--result-filename') + 1]), 'w') as handle:
        json.dump(result, handle)
    print('============ Serving Benchmark Result ============')
''')


@pytest.fixture
def bench(tmp_path, monkeypatch):
    """The stand-in vllm, a simulator npu-smi (910B, 8 NPUs) with its state file, and the module's arguments."""
    capture_results(monkeypatch)
    fake = tmp_path / 'vllm'
    fake.write_text(FAKE_BENCH.format(python=sys.executable))
    fake.chmod(0o755)
    npu_smi = tmp_path / 'bin' / 'npu-smi'
    npu_smi.parent.mkdir()
    npu_smi.symlink_to(os.path.join(SIMULATOR, 'ascend-sim'))
    driver = tmp_path / 'root' / 'usr/local/Ascend/driver/version.info'
    driver.parent.mkdir(parents=True)
    driver.write_text('Version=24.1.rc1\n')
    state = tmp_path / 'state.json'
    state.write_text(json.dumps(ASCEND_SIM.default_state('910b-8')))
    for name, value in (('ASCEND_SIM_STATE', state), ('ASCEND_SIM_LOG', tmp_path / 'calls.log'),
                        ('ASCEND_SIM_ROOT', tmp_path / 'root'), ('FAKE_BENCH_LOG', tmp_path / 'bench.json'),
                        ('RESULT', RESULT)):
        monkeypatch.setenv(name, str(value))
    for name in ('STARTUP', 'DURATION', 'USAGE_SCRIPT', 'BUSY', 'NO_RESULT', 'FAKE_BENCH_RC', 'OPENAI_API_KEY'):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / 'work'
    work.mkdir()
    args = dict(command=[str(fake)], base_url='http://127.0.0.1:8000', model='tiny-llama', tokenizer='/srv/models/tiny',
                api_key='secret-key-1', max_concurrency=4, num_prompts=40, input_len=32, output_len=16,
                work_dir=str(work), npu_smi_path=str(npu_smi), sample_interval=0.1, timeout=60)
    return tmp_path, args


# AI core utilisation per step of the script, and when each starts (seconds into the benchmark).
SCRIPT = [{'at': 0, 'aicore_percent': 20, 'hbm_used': 4000}, {'at': 1.0, 'aicore_percent': 80, 'hbm_used': 9000},
          {'at': 2.0, 'aicore_percent': 50, 'hbm_used': 6000}]
DURATION = 3.0


def test_sampled_mean_and_peak_follow_the_scripted_curve_within_the_sampling_resolution(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('DURATION', str(DURATION))
    monkeypatch.setenv('USAGE_SCRIPT', json.dumps({'steps': SCRIPT, 'npu_ids': [0, 1]}))
    run = run_main(vllm_benchmark.main, dict(args, npu_ids=[0, 1]))['benchmark']
    assert run['warnings'] == []
    metrics = run['metrics']
    start, end = run['window']
    assert end - start == pytest.approx(DURATION, abs=0.05)
    inside = [sample for sample in run['npu_samples'] if start <= sample['t'] <= end]
    assert {sample['npu_id'] for sample in run['npu_samples']} == {0, 1}
    moments = sorted({sample['t'] for sample in inside})
    # The resolution: the widest gap between readings (npu-smi takes time, so it exceeds the interval) and the
    # first and last readings' distance from the window's edges.
    gap = max([later - earlier for earlier, later in zip(moments, moments[1:])] + [moments[0] - start, end - moments[-1]])
    assert gap < 1.0, moments
    expected_mean = sum(step['aicore_percent'] for step in SCRIPT) / len(SCRIPT)
    # Each of the two steps' edges can move at most one gap's worth of readings to the neighbouring level.
    bound = (abs(80 - 20) + abs(50 - 80)) * gap / DURATION
    assert abs(metrics['npu_aicore_percent_mean'] - expected_mean) <= bound, (metrics, gap, bound)
    assert metrics['npu_aicore_percent_peak'] == 80.0
    assert metrics['npu_hbm_used_mb_peak'] == 9000.0
    # The NPUs outside npu_ids were not sampled; before the script started, npu-smi showed the idle state.
    before = [sample for sample in run['npu_samples'] if sample['t'] < start - 0.15]
    assert before and all(sample['aicore_percent'] == 0 for sample in before)
    assert run['status'] == 'PASS'


def test_targets_pass_fail_or_are_not_measured_and_fail_only_the_status(bench):
    tmp_path, args = bench
    targets = [{'metric': 'e2el_ms_p99', 'max': 150}, {'metric': 'output_throughput', 'min': 1200},
               {'metric': 'npu_aicore_percent_mean', 'min': 85}]
    run = run_main(vllm_benchmark.main, dict(args, targets=targets, sample_npus='never'))['benchmark']
    assert [(target['metric'], target['status']) for target in run['targets']] == [
        ('e2el_ms_p99', 'PASS'), ('output_throughput', 'FAIL'), ('npu_aicore_percent_mean', 'NOT_MEASURED')]
    assert run['targets'][0]['actual'] == pytest.approx(80.90629501057265)
    assert run['status'] == 'FAIL'
    assert run['npu_samples'] == []
    assert 'latencies' not in run['vllm_bench'] and run['vllm_bench']['completed'] == 40


def test_the_key_goes_in_the_environment_and_every_setting_on_the_command_line(bench):
    tmp_path, args = bench
    run = run_main(vllm_benchmark.main, dict(args, seed=7, request_rate='12.5', extra_args=['--num-warmups', '2']))
    seen = json.loads((tmp_path / 'bench.json').read_text())
    assert seen['key'] == 'secret-key-1'
    argv = run['benchmark']['argv']
    assert 'secret-key-1' not in ' '.join(argv) and seen['argv'] == argv[1:]
    options = dict(zip(argv[3::1], argv[4::1]))
    assert options['--seed'] == '7' and options['--request-rate'] == '12.5' and options['--max-concurrency'] == '4'
    assert options['--random-input-len'] == '32' and options['--random-output-len'] == '16'
    assert options['--num-prompts'] == '40' and options['--tokenizer'] == '/srv/models/tiny'
    assert '--ignore-eos' in argv and argv[-2:] == ['--num-warmups', '2']


def test_without_a_key_none_reaches_the_load_generator_from_the_controller(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('OPENAI_API_KEY', 'leaked-from-the-environment')
    run_main(vllm_benchmark.main, dict(args, api_key=None, sample_npus='never'))
    assert not json.loads((tmp_path / 'bench.json').read_text())['key']


def test_a_busy_load_generator_is_measured_and_warned_about(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('DURATION', '1.5')
    monkeypatch.setenv('BUSY', '1')
    run = run_main(vllm_benchmark.main, dict(args, sample_npus='never'))['benchmark']
    assert run['metrics']['loadgen_cpu_percent'] > 85, run['loadgen_samples']
    assert any('load generator used' in warning for warning in run['warnings'])


def test_an_idle_load_generator_is_measured_low(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('DURATION', '1.5')
    run = run_main(vllm_benchmark.main, dict(args, sample_npus='never'))['benchmark']
    assert run['metrics']['loadgen_cpu_percent'] < 50, run['loadgen_samples']
    assert run['warnings'] == []


def test_a_failing_load_generator_fails_with_its_exit_code_and_output(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('FAKE_BENCH_RC', '3')
    failure = run_main(vllm_benchmark.main, args, FailJson)
    assert failure['msg'] == 'vllm bench serve failed with exit code 3 against http://127.0.0.1:8000 (see stdout and stderr)'
    assert failure['rc'] == 3 and 'boom: cannot reach the server' in failure['stderr']


def test_a_missing_result_file_is_an_error_naming_it(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('NO_RESULT', '1')
    failure = run_main(vllm_benchmark.main, args, FailJson)
    assert failure['msg'].startswith('vllm bench serve exited 0 but its result %s/vllm-bench-result.json could not be '
                                     'read' % args['work_dir'])


def test_a_result_that_is_not_one_is_an_error(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('RESULT', '{"date": "x"}')
    failure = run_main(vllm_benchmark.main, args, FailJson)
    assert 'has no number for completed: is it' in failure['msg']


def test_a_run_past_the_timeout_is_killed(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('DURATION', '30')
    failure = run_main(vllm_benchmark.main, dict(args, timeout=1, sample_npus='never'), FailJson)
    assert failure['msg'].startswith('the load generator ran longer than timeout (1 s) and was killed')


def test_npu_smi_failing_mid_run_stops_the_sampling_with_a_warning_only(bench, monkeypatch):
    tmp_path, args = bench
    state = json.loads(os.environ['ASCEND_SIM_STATE'] and open(os.environ['ASCEND_SIM_STATE']).read())
    state['fault'] = 'dcmi-8020'
    with open(os.environ['ASCEND_SIM_STATE'], 'w') as handle:
        json.dump(state, handle)
    run = run_main(vllm_benchmark.main, args)['benchmark']
    assert run['npu_samples'] == [] and run['metrics']['npu_aicore_percent_mean'] is None
    assert run['warnings'][0].startswith('NPU sampling stopped: npu-smi info failed')


@pytest.mark.parametrize('changes, message', [
    ({'max_concurrency': 0}, 'max_concurrency must be 1 or more, not 0'),
    ({'sample_interval': 0.01}, 'sample_interval must be 0.1 or more seconds'),
    ({'request_rate': 'fast'}, "request_rate must be inf or a positive number, not 'fast'"),
    ({'command': []}, 'command must name vLLM'),
    ({'work_dir': '/nonexistent/dir'}, 'work_dir /nonexistent/dir is not a directory'),
    ({'targets': [{'metric': 'p99'}]}, "targets[0]: metric 'p99' is not one of"),
    ({'sample_npus': 'always', 'npu_smi_path': None}, 'sample_npus is always but npu-smi was found neither'),
])
def test_bad_arguments_fail_before_anything_runs(bench, monkeypatch, changes, message):
    tmp_path, args = bench
    monkeypatch.setenv('PATH', '/nonexistent')
    monkeypatch.setattr(vllm_benchmark, 'NPU_SMI_FALLBACK_PATHS', ('/nonexistent/npu-smi',))
    failure = run_main(vllm_benchmark.main, dict(args, **changes), FailJson)
    assert message in failure['msg']
    assert not (tmp_path / 'bench.json').exists()


def test_the_load_generators_cpu_is_not_measured_when_asked_not_to(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('DURATION', '1.0')
    monkeypatch.setenv('BUSY', '1')
    run = run_main(vllm_benchmark.main, dict(args, sample_npus='never', measure_loadgen_cpu=False))['benchmark']
    assert run['metrics']['loadgen_cpu_percent'] is None and run['loadgen_samples'] == []
    assert run['warnings'] == []


def test_a_run_whose_every_request_failed_fails_saying_what_to_check(bench, monkeypatch):
    tmp_path, args = bench
    result = json.loads(RESULT)
    result.update(completed=0, failed=40)
    monkeypatch.setenv('RESULT', json.dumps(result))
    failure = run_main(vllm_benchmark.main, dict(args, sample_npus='never'), FailJson)
    assert failure['msg'] == ('every one of the 40 requests failed against http://127.0.0.1:8000: check that input_len + '
                              "output_len (48) fits the server's max_model_len, that the model is served as tiny-llama, "
                              'and the key')
    assert 'Serving Benchmark Result' in failure['stdout']


def test_a_run_with_some_failed_requests_is_fail_with_a_warning(bench, monkeypatch):
    tmp_path, args = bench
    result = json.loads(RESULT)
    result.update(completed=30, failed=10)
    monkeypatch.setenv('RESULT', json.dumps(result))
    run = run_main(vllm_benchmark.main, dict(args, sample_npus='never'))['benchmark']
    assert run['status'] == 'FAIL'
    assert '10 of 40 requests failed: the run is FAIL; see the server\'s log' in run['warnings']
