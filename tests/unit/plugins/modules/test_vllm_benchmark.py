# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_benchmark with real processes: a stand-in for `vllm bench serve` that writes the real result file of vLLM
0.32.0, and the simulator's npu-smi. The sampling is timed by a clock of the test's (time passes only when the
sampling loop sleeps, and the benchmark ends when that clock says so), the NPUs follow a script on that clock and the
load generator's CPU readings are scripted, so that every sample, mean and warning is exact whatever the machine's
load; ProcessReader is tested on its own, against a scratch /proc and this machine's.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _load_generator
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import vllm_benchmark
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._load_generator import ProcessReader
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    FIXTURES,
    HANG_SECONDS,
    SIMULATOR,
    ExitJson,
    FailJson,
    capture_results,
    load_fixture,
    run_main,
    simulator_module,
)

ASCEND_SIM = simulator_module('ascend_sim', 'ascend-sim')

RESULT = load_fixture('vllm-bench-serve-result_0.32.0_cpu_tiny-llama.txt')

# The stand-in: checks its arguments, then waits until the file GATE exists (the test creates it when its clock says
# the benchmark is over) or, without GATE, DURATION seconds, and saves the real result with DURATION as its duration.
FAKE_BENCH = textwrap.dedent('''\
    #!{python}
    import json, os, sys, time
    args = sys.argv[1:]
    # The priority class's load generator (with a request body of its own) logs and answers apart.
    suffix = '-priority' if '--extra-body' in args else ''
    with open(os.environ['FAKE_BENCH_LOG'] + suffix, 'w') as log:
        json.dump({{'argv': args, 'key': os.environ.get('OPENAI_API_KEY'), 'ca': os.environ.get('SSL_CERT_FILE')}}, log)
    if os.environ.get('FAKE_BENCH_RC'):
        sys.stderr.write('boom: cannot reach the server\\n')
        sys.exit(int(os.environ['FAKE_BENCH_RC']))
    assert args[:2] == ['bench', 'serve'], args
    duration = float(os.environ.get('DURATION', '0'))
    if os.environ.get('GATE'):
        while not os.path.exists(os.environ['GATE']):
            time.sleep(0.01)
    else:
        time.sleep(duration)
    if os.environ.get('NO_RESULT'):
        sys.exit(0)
    result = json.loads(os.environ.get('RESULT' + suffix.upper().replace('-', '_'), os.environ['RESULT']))
    result['duration'] = duration
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
    for name in ('DURATION', 'GATE', 'NO_RESULT', 'FAKE_BENCH_RC', 'OPENAI_API_KEY', 'SSL_CERT_FILE'):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / 'work'
    work.mkdir()
    # The time limit only stops a hung stand-in.
    args = dict(command=[str(fake)], base_url='http://127.0.0.1:8000', model='tiny-llama', tokenizer='/srv/models/tiny',
                api_key='secret-key-1', max_concurrency=4, num_prompts=40, input_len=32, output_len=16,
                work_dir=str(work), npu_smi_path=str(npu_smi), sample_interval=0.1, timeout=HANG_SECONDS)
    return tmp_path, args


# The benchmark of the scripted runs: the load generator starts up until START, then runs the benchmark until END
# (seconds on the test's clock), sampled every INTERVAL (binary fractions, so that every moment is exact).
START = 1.0
END = 4.0
INTERVAL = 0.5


class Timeline:
    """The module's clock and sleep: time passes only when the sampling loop sleeps, so the samples fall at exact
    multiples of the interval; ``on_tick(now)`` runs after each sleep. At ``end`` the stand-in's gate opens and the
    clock stands still until the module's thread has seen the stand-in exit, so the run ends at ``end`` exactly."""

    def __init__(self, gate, end=END, on_tick=None):
        self.now = 0.0
        self.gate = gate
        self.end = end
        self.on_tick = on_tick

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        if self.on_tick:
            self.on_tick(self.now)
        if self.now >= self.end and not self.gate.exists():
            self.gate.touch()
            for thread in threading.enumerate():
                if thread.name == 'vllm-bench-serve':
                    thread.join(HANG_SECONDS)
                    assert not thread.is_alive(), 'the stand-in did not end after its gate opened'


class ScriptedCpu:
    """The CPU sampler's readings of a load generator that uses a whole core to start up, until START, then
    ``share`` of one during the benchmark, by the timeline's clock; it is gone once its gate opened."""

    PID = 4242

    def __init__(self, timeline, share):
        self.timeline = timeline
        self.share = share
        self.argv = None

    def find_child(self, argv):
        self.argv = argv
        return self.PID

    def tree_cpu_seconds(self, root):
        assert root == self.PID
        if self.timeline.gate.exists():
            return None
        now = self.timeline.now
        return min(now, START) + self.share * max(0.0, now - START)


@pytest.fixture
def scripted(bench, monkeypatch):
    """run(args, share=..., on_tick=...): the module run on a Timeline against the gated stand-in, the load
    generator's CPU scripted at ``share`` of a core; its result, with the ScriptedCpu as ``cpu``."""
    tmp_path, _args = bench
    gate = tmp_path / 'gate'
    monkeypatch.setenv('GATE', str(gate))
    monkeypatch.setenv('DURATION', str(END - START))

    def run(args, share=0.05, on_tick=None, outcome=ExitJson):
        timeline = Timeline(gate, on_tick=on_tick)
        cpu = ScriptedCpu(timeline, share)
        main = functools.partial(vllm_benchmark.main, clock=timeline, sleep=timeline.sleep, processes=cpu)
        result = run_main(main, dict(args, sample_interval=INTERVAL), outcome)
        return dict(result, cpu=cpu)
    return run


# AI core utilisation and HBM per step of the script, and when each starts (seconds into the benchmark).
SCRIPT = [{'at': 0, 'aicore_percent': 20, 'hbm_used': 4000}, {'at': 1.0, 'aicore_percent': 80, 'hbm_used': 9000},
          {'at': 2.0, 'aicore_percent': 50, 'hbm_used': 6000}]


def test_sampled_mean_and_peak_are_those_of_the_scripted_curve_in_the_window(bench, scripted):
    tmp_path, args = bench
    state_path = tmp_path / 'state.json'
    idle_hbm = ASCEND_SIM.default_state('910b-8')['chips'][0]['hbm_used']

    def drive_npus(now):
        # The simulator's own usage script, applied at the test's clock instead of the wall clock.
        state = json.loads(state_path.read_text())
        state['usage_script'] = {'start': START, 'npu_ids': [0, 1], 'steps': SCRIPT}
        ASCEND_SIM.apply_usage_script(state, now)
        del state['usage_script']
        state_path.write_text(json.dumps(state))

    run = scripted(dict(args, npu_ids=[0, 1]), on_tick=drive_npus)['benchmark']
    assert run['warnings'] == []
    assert run['window'] == [START, END] and run['metrics']['duration_s'] == END - START
    assert {sample['npu_id'] for sample in run['npu_samples']} == {0, 1}
    # Every interval, and once more when the load generator ended; before the benchmark, the idle chips.
    assert [(sample['t'], sample['aicore_percent'], sample['hbm_used_mb']) for sample in run['npu_samples']
            if sample['npu_id'] == 0] == [
        (0.0, 0, idle_hbm), (0.5, 0, idle_hbm), (1.0, 20, 4000), (1.5, 20, 4000), (2.0, 80, 9000), (2.5, 80, 9000),
        (3.0, 50, 6000), (3.5, 50, 6000), (4.0, 50, 6000), (4.0, 50, 6000)]
    metrics = run['metrics']
    # The window's eight readings: two at 20, two at 80, four at 50 (the start-up's idle readings left out).
    assert (metrics['npu_aicore_percent_mean'], metrics['npu_aicore_percent_peak']) == (50.0, 80.0)
    assert (metrics['npu_hbm_used_mb_mean'], metrics['npu_hbm_used_mb_peak']) == (6250.0, 9000.0)
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


def test_the_ca_reaches_the_load_generator_as_ssl_cert_file_only_when_given(bench):
    tmp_path, args = bench
    run_main(vllm_benchmark.main, dict(args, sample_npus='never'))
    assert json.loads((tmp_path / 'bench.json').read_text())['ca'] is None
    run_main(vllm_benchmark.main, dict(args, sample_npus='never', base_url='https://localhost:8000',
                                       ca_path='/etc/kunpeng-ascend-vllm/tls/vllm/ca.pem'))
    assert json.loads((tmp_path / 'bench.json').read_text())['ca'] == '/etc/kunpeng-ascend-vllm/tls/vllm/ca.pem'


# The CPU the scripted load generator used, as a share of a core between consecutive readings: a whole core for its
# start-up, then its share; no reading at END, where it is gone.
def loadgen_series(percent):
    return [{'t': 0.5, 'cpu_percent': 100.0}, {'t': 1.0, 'cpu_percent': 100.0}] + [
        {'t': moment, 'cpu_percent': percent} for moment in (1.5, 2.0, 2.5, 3.0, 3.5)]


@pytest.mark.parametrize('share, percent', [(0.95, 95.0), (0.9, 90.0)])
def test_a_busy_load_generator_is_measured_and_warned_about(bench, scripted, share, percent):
    tmp_path, args = bench
    result = scripted(dict(args, sample_npus='never'), share=share)
    run = result['benchmark']
    # Its share over the benchmark's window (START to its last reading), the start-up's whole core left out.
    assert run['metrics']['loadgen_cpu_percent'] == percent
    assert run['loadgen_samples'] == loadgen_series(percent)
    assert run['warnings'] == [
        'the load generator used %d %% of a CPU core during the run: it may be the bottleneck, not the server; run '
        'it on a less busy host or lower the concurrency' % percent]
    # The sampler looked for the module's own child running the load generator's command line.
    assert result['cpu'].argv == run['argv']


def test_an_idle_load_generator_is_measured_low(bench, scripted):
    tmp_path, args = bench
    run = scripted(dict(args, sample_npus='never'), share=0.05)['benchmark']
    assert run['metrics']['loadgen_cpu_percent'] == 5.0
    assert run['loadgen_samples'] == loadgen_series(5.0)
    assert run['warnings'] == []


def test_just_below_the_busy_share_is_no_warning(bench, scripted):
    tmp_path, args = bench
    run = scripted(dict(args, sample_npus='never'), share=0.896)['benchmark']
    assert run['metrics']['loadgen_cpu_percent'] == 89.6
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
    ({'priority_share': 1.5}, 'priority_share must be null (no priority class) or a number above 0 and up to 1'),
    ({'priority_share': 0.5, 'priority': 2}, 'priority must be an integer below 0 (vLLM serves lower values first'),
    ({'sample_interval': 0.01}, 'sample_interval must be 0.1 or more seconds'),
    ({'request_rate': 'fast'}, "request_rate must be inf or a positive number; got 'fast'"),
    ({'command': []}, 'command must name vLLM'),
    ({'work_dir': '/nonexistent/dir'}, 'work_dir /nonexistent/dir is not a directory'),
    ({'targets': [{'metric': 'p99'}]}, "targets[0]: metric 'p99' is not one of"),
    ({'sample_npus': 'always', 'npu_smi_path': None}, 'sample_npus is always but npu-smi was found neither'),
])
def test_bad_arguments_fail_before_anything_runs(bench, monkeypatch, changes, message):
    tmp_path, args = bench
    monkeypatch.setenv('PATH', '/nonexistent')
    monkeypatch.setattr(_load_generator, 'NPU_SMI_FALLBACK_PATHS', ('/nonexistent/npu-smi',))
    failure = run_main(vllm_benchmark.main, dict(args, **changes), FailJson)
    assert message in failure['msg']
    assert not (tmp_path / 'bench.json').exists()


def test_the_load_generators_cpu_is_not_measured_when_asked_not_to(bench, scripted):
    tmp_path, args = bench
    result = scripted(dict(args, sample_npus='never', measure_loadgen_cpu=False), share=1.0)
    run = result['benchmark']
    assert run['metrics']['loadgen_cpu_percent'] is None and run['loadgen_samples'] == []
    assert run['warnings'] == []
    # A load generator using a whole core was never looked for.
    assert result['cpu'].argv is None


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


# --- ProcessReader: what the CPU sampler reads ------------------------------------------------------------------------

def proc_stat(pid, name, ppid, utime, stime, cutime, cstime):
    """A /proc/PID/stat line of proc(5): utime..cstime are its fields 14 to 17, in clock ticks."""
    return '%d (%s) S %d %d %d 0 -1 4194304 10 0 0 0 %d %d %d %d 20 0 1 0 100 0 0\n' % (
        pid, name, ppid, pid, pid, utime, stime, cutime, cstime)


def test_the_process_reader_sums_the_cpu_of_the_childs_tree_from_proc(tmp_path):
    # This process (4000) runs the load generator behind timeout (4100), whose Python (4101, a name with a
    # parenthesis and a space) has a worker (4102); another child (4200) runs something else; 1 is unrelated.
    stats = {1: proc_stat(1, 'systemd', 0, 500, 500, 0, 0), 4000: proc_stat(4000, 'python3', 1, 7, 3, 0, 0),
             4100: proc_stat(4100, 'timeout', 4000, 1, 1, 0, 0),
             4101: proc_stat(4101, 'vllm) (x', 4100, 230, 20, 40, 10),
             4102: proc_stat(4102, 'worker', 4101, 50, 0, 0, 0), 4200: proc_stat(4200, 'sleep', 4000, 9, 9, 9, 9)}
    argv = ['/opt/vllm/bin/vllm', 'bench', 'serve', '--seed', '0']
    cmdlines = {4100: ['/usr/bin/timeout', '--kill-after=5', '60'] + argv, 4101: argv, 4200: ['sleep', '600']}
    for pid, text in stats.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / 'stat').write_text(text)
        (tmp_path / str(pid) / 'cmdline').write_bytes(b''.join(arg.encode() + b'\0' for arg in cmdlines.get(pid, [])))
    # What /proc also holds: a process that ended between the listing and the read, one whose stat was cut short,
    # a non-process entry.
    (tmp_path / '4300').mkdir()
    (tmp_path / '4400').mkdir()
    (tmp_path / '4400' / 'stat').write_text('4400 (cut')
    (tmp_path / 'self').mkdir()
    reader = ProcessReader(str(tmp_path), pid=4000, ticks=100)
    assert reader.table() == {1: (0, 10.0), 4000: (1, 0.1), 4100: (4000, 0.02), 4101: (4100, 3.0), 4102: (4101, 0.5),
                              4200: (4000, 0.36)}
    assert reader.find_child(argv) == 4100
    assert reader.find_child(['/opt/vllm/bin/vllm', 'bench', 'throughput']) is None
    assert reader.tree_cpu_seconds(4100) == pytest.approx(3.52)
    assert reader.tree_cpu_seconds(4300) is None
    assert ProcessReader(str(tmp_path), pid=1, ticks=100).find_child(argv) is None


def test_the_process_reader_finds_a_real_child_until_it_is_gone():
    child = subprocess.Popen(['sleep', '600'])  # pylint: disable=consider-using-with
    try:
        # Popen returns once the child has begun exec; the kernel sets the new command line a moment later
        # (create_elf_tables runs after the close-on-exec pipe Popen waits on is closed), so look a few times.
        reader = ProcessReader()
        found = None
        for _try in range(500):
            found = reader.find_child(['sleep', '600'])
            if found is not None:
                break
            time.sleep(0.01)
        assert found == child.pid
        assert reader.tree_cpu_seconds(child.pid) >= 0.0
    finally:
        child.kill()
        child.wait()
    assert reader.find_child(['sleep', '600']) is None and reader.tree_cpu_seconds(child.pid) is None


def _detailed(name):
    with open(os.path.join(FIXTURES, 'benchmark', 'priority-classes', name + '.json'), encoding='utf-8') as sample:
        return sample.read()


def test_a_priority_share_runs_two_load_generators_and_reports_each_class_apart(bench, monkeypatch):
    tmp_path, args = bench
    monkeypatch.setenv('RESULT', _detailed('rest'))
    monkeypatch.setenv('RESULT_PRIORITY', _detailed('priority'))
    run = run_main(vllm_benchmark.main, dict(args, num_prompts=48, max_concurrency=8, priority_share=0.25,
                                             priority=-5, sample_npus='never'))['benchmark']
    with open(str(tmp_path / 'bench.json-priority')) as log:
        priority_argv = json.load(log)['argv']
    with open(str(tmp_path / 'bench.json')) as log:
        rest_argv = json.load(log)['argv']
    assert priority_argv[priority_argv.index('--num-prompts') + 1] == '12'
    assert priority_argv[priority_argv.index('--max-concurrency') + 1] == '2'
    assert priority_argv[priority_argv.index('--extra-body') + 1] == '{"priority": -5}'
    assert priority_argv[priority_argv.index('--result-filename') + 1] == 'vllm-bench-result-priority.json'
    assert '--save-detailed' in priority_argv and '--save-detailed' in rest_argv
    assert rest_argv[rest_argv.index('--num-prompts') + 1] == '36' and '--extra-body' not in rest_argv
    assert rest_argv[rest_argv.index('--max-concurrency') + 1] == '6'
    assert [(c['class'], c['priority'], c['num_prompts'], c['max_concurrency'], c['completed']) for c in run['classes']] \
        == [('priority', -5, 12, 2, 12), ('rest', 0, 36, 6, 36)]
    assert run['classes'][0]['metrics']['e2el_ms_p50'] == pytest.approx(json.loads(_detailed('priority'))['p50_e2el_ms'])
    assert run['metrics']['completed'] == 48 and run['metrics']['failed'] == 0
    assert sorted(run['vllm_bench']) == ['priority', 'rest'] and 'ttfts' not in run['vllm_bench']['rest']
    assert 0 < run['classes'][0]['overlap'] <= 1 and run['warnings'] == []


def test_without_a_priority_share_there_is_one_load_generator_and_no_class(bench):
    tmp_path, args = bench
    run = run_main(vllm_benchmark.main, dict(args, sample_npus='never'))['benchmark']
    assert run['classes'] == [] and not (tmp_path / 'bench.json-priority').exists()
    assert '--extra-body' not in run['argv'] and '--save-detailed' not in run['argv']


def test_a_priority_class_without_per_request_lists_fails_saying_so(bench, monkeypatch):
    tmp_path, args = bench
    failure = run_main(vllm_benchmark.main, dict(args, priority_share=0.5, sample_npus='never'), FailJson)
    assert failure['msg'].startswith('the result of priority has no per-request lists')


@pytest.mark.parametrize('priority_share, names', [
    (None, ['vllm-bench-result.json']),
    (0.5, ['vllm-bench-result-priority.json', 'vllm-bench-result-rest.json']),
])
@pytest.mark.parametrize('make, kind', [
    (lambda path: path.mkdir(), 'a directory'),
    (lambda path: os.mkfifo(str(path)), 'a FIFO (named pipe)'),
    (lambda path: path.mkdir() or (path / 'inside').write_text('x'), 'a directory'),
])
def test_a_result_file_that_cannot_be_one_fails_naming_work_dir_before_any_load(bench, priority_share, names, make,
                                                                                kind):
    """Each result file's place, a directory or a FIFO there: a message naming work_dir, nothing run or removed."""
    tmp_path, args = bench
    for name in names:
        make(tmp_path / 'work' / name)
    changes = {'priority_share': priority_share, 'priority': -1} if priority_share else {}
    failure = run_main(vllm_benchmark.main, dict(args, **changes), FailJson)
    assert failure['msg'] == '; '.join(
        'work_dir %s holds %s named %s, where the load generator writes its result file: remove it or give another '
        'work_dir' % (tmp_path / 'work', kind, name) for name in names)
    assert not (tmp_path / 'bench.json').exists() and not (tmp_path / 'bench.json-priority').exists()
    assert all(os.path.lexists(str(tmp_path / 'work' / name)) for name in names)


def test_an_old_result_file_is_removed_and_a_device_is_named_without_removing_it(bench, monkeypatch, tmp_path):
    _tmp, args = bench
    old = tmp_path / 'work' / 'vllm-bench-result.json'
    old.write_text('{"not": "this run"}')
    monkeypatch.setenv('NO_RESULT', '1')
    failure = run_main(vllm_benchmark.main, args, FailJson)
    assert 'was not written' in failure['msg'] or 'does not exist' in failure['msg'], failure['msg']
    assert not old.exists()                     # the last run's file is not read as this one's
    monkeypatch.delenv('NO_RESULT')
    # A character device where the result goes (mknod needs root: lstat says so instead); it is never removed.
    device, real_lstat = os.stat('/dev/null'), os.lstat
    monkeypatch.setattr(_load_generator.os, 'lstat', lambda path: device if path == str(old) else real_lstat(path))
    assert run_main(vllm_benchmark.main, args, FailJson)['msg'] == (
        'work_dir %s holds a character device named vllm-bench-result.json, where the load generator writes its result '
        'file: remove it or give another work_dir' % (tmp_path / 'work'))


@pytest.mark.parametrize('changes, message', [
    ({'sample_interval': float('nan')}, 'sample_interval must be 0.1 or more seconds, at most 31622400; got nan'),
    ({'sample_interval': float('inf')}, 'sample_interval must be 0.1 or more seconds, at most 31622400; got inf'),
    ({'sample_interval': 1e300}, 'sample_interval must be 0.1 or more seconds, at most 31622400; got 1e+300'),
    ({'timeout': 10 ** 12}, 'timeout must be 1 to 31622400 seconds; got 1000000000000'),
    ({'timeout': 0}, 'timeout must be 1 to 31622400 seconds; got 0'),
    ({'request_rate': 'nan'}, "request_rate must be inf or a positive number; got 'nan'"),
    ({'request_rate': '1e400'}, "request_rate must be inf or a positive number; got '1e400'"),
    ({'request_rate': '-inf'}, "request_rate must be inf or a positive number; got '-inf'"),
])
def test_numbers_that_would_overflow_or_are_not_finite_fail_before_anything_runs(bench, changes, message):
    tmp_path, args = bench
    failure = run_main(vllm_benchmark.main, dict(args, **changes), FailJson)
    assert message in failure['msg']
    assert not (tmp_path / 'bench.json').exists()
