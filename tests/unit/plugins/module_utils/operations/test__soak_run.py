# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_soak's run without the module: its options checked, its load, the service sampled through a scripted
runner (systemctl, journalctl, the container engine) and the run judged from the real result file of vllm bench
serve (vLLM 0.32.0); tests/unit/plugins/modules/test_vllm_soak.py runs it whole."""

from __future__ import annotations

import json
import types

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark, _soak, _soak_run
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import BenchmarkError
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

RESULT = json.loads(load_fixture('vllm-bench-serve-result_0.32.0_cpu_tiny-llama.txt'))
OOM = 'RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB'


def options(work_dir=None, **changes):
    """vllm_soak's options as AnsibleModule gives them (its defaults, the load generator's included)."""
    params = dict(command=['/opt/vllm/venv/bin/vllm'], base_url='http://127.0.0.1:8000', endpoint='/v1/completions',
                  backend='openai', model='tiny-llama', tokenizer='/srv/models/tiny', api_key='secret', ca_path=None,
                  input_len=32, output_len=16, seed=0, extra_args=[], sample_npus='never', npu_ids=[],
                  npu_smi_path=None, rate=1.5, duration=20.0, interval=1.0, warmup=0.25, work_dir=work_dir,
                  unit='vllm.service', mode='native', engine=None, container_name=None, timeout=None)
    params.update(dict((key, value) for key, value in _soak.DEFAULTS.items() if key not in params))
    params.update(changes)
    return params


# ----------------------------------------------------------------------------- the options

def test_good_options_have_no_problem(tmp_path):
    assert _soak_run.option_problems(options(str(tmp_path)), check_mode=False) == []


def test_every_problem_is_named_at_once_with_its_option():
    problems = _soak_run.option_problems(options(rate=0, command=[], unit='-H evil', mode='container'),
                                         check_mode=False)
    assert problems[0] == 'rate must be requests/s, more than 0; got 0'
    assert problems[1:] == [
        'command must name vLLM\'s CLI, such as [/opt/vllm/venv/bin/vllm]',
        'the unit \'-H evil\' starts with "-", which systemd tools would read as an option',
        'container mode needs engine and container_name',
        'work_dir is required to run the load']


def test_work_dir_is_checked_only_when_the_load_runs(tmp_path):
    assert _soak_run.option_problems(options(), check_mode=True) == []
    (tmp_path / 'vllm-bench-result.json').mkdir()
    assert _soak_run.option_problems(options(str(tmp_path)), check_mode=True) == []
    assert _soak_run.option_problems(options(str(tmp_path)), check_mode=False) == [
        'work_dir %s holds a directory named vllm-bench-result.json, where the load generator writes its result '
        'file: remove it or give another work_dir' % tmp_path]


# ----------------------------------------------------------------------------- the load

def test_the_load_sends_rate_x_duration_requests_at_the_rate(tmp_path):
    num_prompts, argv, work_dir = _soak_run.load(options(str(tmp_path), rate=1.5, duration=20.0))
    flags = dict(zip(argv, argv[1:]))
    assert num_prompts == 30 and work_dir == str(tmp_path)
    assert (flags['--num-prompts'], flags['--request-rate'], flags['--max-concurrency']) == ('30', '1.5', '256')
    assert (flags['--result-dir'], flags['--result-filename']) == (str(tmp_path), 'vllm-bench-result.json')


def test_without_work_dir_the_load_points_at_the_current_directory():
    num_prompts, argv, work_dir = _soak_run.load(options(rate=0.3, duration=10))
    assert num_prompts == 3 and work_dir == '.' and argv[argv.index('--result-dir') + 1] == '.'


# ----------------------------------------------------------------------------- the service sampled

class Memory:
    def __init__(self, mib=1000.0):
        self.mib = mib
        self.roots = []

    def tree_rss_bytes(self, root):
        self.roots.append(root)
        return int(self.mib * _soak.MIB)


def host(unit='MainPID=1234\nNRestarts=2\n', journal=(0, '-- cursor: c0\n', ''), pid='4711\n'):
    """The answers of systemctl show, journalctl and the engine's inspect."""
    def answers(argv):
        if argv[0] == '/bin/systemctl':
            return unit if isinstance(unit, tuple) else (0, unit, '')
        if argv[0] == '/bin/journalctl':
            return journal(argv) if callable(journal) else journal
        return 0, pid, ''
    return answers


def sampler(answers, tools=('systemctl', 'journalctl', 'podman'), **changes):
    warnings, calls = [], []

    def run(argv):
        calls.append(list(argv))
        return CommandResult(list(argv), *answers(argv))

    # A CommandRunner whose commands answer from ``answers`` (a function of the argv: (rc, stdout, stderr)).
    runner = types.SimpleNamespace(run=run, calls=calls)
    found = dict((name, '/bin/' + name) for name in tools)
    service = _soak_run.ServiceSampler(found.get, runner, Memory(), options(**changes), 1700000000.5, warnings.append)
    return service, runner, warnings


def test_a_native_service_is_its_units_main_process_with_its_restarts_and_memory():
    service, runner, warnings = sampler(host())
    service(1.0004)
    assert service.samples == [{'t': 1.0, 'rss_mib': 1000.0, 'main_pid': 1234, 'restarts': 2, 'known_failures': 0}]
    assert runner.calls[0] == ['/bin/systemctl', 'show', '--property=MainPID,NRestarts', '--', 'vllm.service']
    assert service.processes.roots == [1234] and warnings == []


def test_the_journal_is_read_since_the_start_then_after_the_last_cursor_and_tallied():
    batches = iter([(0, 'loading\n%s\n-- cursor: c2\n' % OOM, ''), (1, '', ''), (0, '%s\n-- cursor: c3\n' % OOM, '')])
    service, runner, _warnings = sampler(host(journal=lambda argv: next(batches)))
    for moment in (0.0, 1.0, 2.0):
        service(moment)
    journal_calls = [call for call in runner.calls if call[0] == '/bin/journalctl']
    assert [call[2] for call in journal_calls] == ['--since=@1700000000', '--after-cursor=c2', '--after-cursor=c2']
    assert [sample['known_failures'] for sample in service.samples] == [1, 1, 2]
    journal = service.journal_result()
    assert journal['found'] == ['out_of_memory'] and journal['lines_read'] == 3 and journal['counts'] == {
        'out_of_memory': 2}


def test_a_journal_that_fails_is_read_no_more_with_a_warning():
    service, runner, warnings = sampler(host(journal=(2, '', 'Failed to open journal\n')))
    service(0.0)
    service(1.0)
    assert warnings == ['the journal is no longer read: journalctl failed (rc 2): Failed to open journal']
    assert [call[0] for call in runner.calls].count('/bin/journalctl') == 1
    assert [sample['known_failures'] for sample in service.samples] == [None, None]
    assert service.journal_result() is None


def test_missing_tools_are_warned_about_and_their_readings_are_null():
    service, runner, warnings = sampler(host(), tools=())
    service(0.0)
    assert warnings == ['systemctl was not found: the unit\'s restarts and main process are not sampled',
                        'journalctl was not found: the unit\'s journal are not sampled']
    assert service.samples == [{'t': 0.0, 'rss_mib': None, 'main_pid': None, 'restarts': None,
                                'known_failures': None}]
    assert runner.calls == [] and service.journal_result() is None


def test_systemctl_failing_is_a_warning_and_a_null_reading():
    service, _runner, warnings = sampler(host(unit=(1, '', 'Failed to connect to bus\n')))
    service(0.0)
    assert warnings == ['systemctl show vllm.service failed (rc 1): Failed to connect to bus']
    assert service.samples[0]['restarts'] is None and service.samples[0]['rss_mib'] is None


def test_a_container_service_is_the_containers_init_process():
    service, runner, warnings = sampler(host(), mode='container', engine='podman', container_name='vllm-vllm')
    service(0.0)
    assert ['/bin/podman', 'inspect', '--format', '{{.State.Pid}}', '--', 'vllm-vllm'] in runner.calls
    assert service.samples[0]['main_pid'] == 4711 and service.samples[0]['restarts'] == 2 and warnings == []


def test_a_stopped_container_or_a_missing_engine_reads_no_memory():
    service, _runner, _warnings = sampler(host(pid='0\n'), mode='container', engine='podman', container_name='v')
    service(0.0)
    assert service.samples[0]['main_pid'] is None and service.samples[0]['rss_mib'] is None
    service, _runner, warnings = sampler(host(), tools=('systemctl', 'journalctl'), mode='container', engine='docker',
                                         container_name='v')
    service(0.0)
    assert warnings == ['docker (engine) was not found: the container\'s memory is not sampled']
    assert service.samples[0]['main_pid'] is None


# ----------------------------------------------------------------------------- the run judged

def flat(count=21, mib=1000.0):
    return [{'t': float(moment), 'rss_mib': mib, 'main_pid': 1234, 'restarts': 2, 'known_failures': 0}
            for moment in range(count)]


def summarize(samples, journal=None, **changes):
    warnings = []
    result = dict(RESULT, **changes)
    metrics = _benchmark.metrics_from_vllm_bench(result, lambda message: None)
    params = options()
    soak = _soak_run.summarize(params, 30, result, metrics, samples, [], journal, warnings.append)
    return soak, warnings


def test_a_flat_service_passes_with_what_the_verdict_rests_on():
    journal = _soak.JournalTally().result()
    soak, warnings = summarize(flat(), journal)
    assert soak['verdict'] == 'PASS' and warnings == []
    assert [check['status'] for check in soak['checks']] == ['PASS', 'NOT_MEASURED', 'PASS', 'PASS']
    assert soak['schema'] == _soak.SOAK_SCHEMA and soak['num_prompts'] == 30 and soak['journal'] == journal
    assert soak['metrics']['completed'] == RESULT['completed'] and 'latencies' not in soak['vllm_bench']
    assert soak['settings'] == dict((key, options()[key]) for key in _soak.OPTIONS)


def test_an_unread_journal_is_not_measured():
    soak, _warnings = summarize(flat(), None)
    assert [check['status'] for check in soak['checks']][-1] == 'NOT_MEASURED' and soak['journal'] is None


def test_failed_requests_are_warned_about():
    _soak_result, warnings = summarize(flat(), completed=30, failed=10)
    assert warnings == ['10 of 40 requests failed: see the server\'s log']


def test_a_run_whose_every_request_failed_is_an_error_naming_what_to_check():
    with pytest.raises(BenchmarkError) as error:
        summarize(flat(), completed=0, failed=30)
    assert error.value.msg == (
        'every one of the 30 requests failed against http://127.0.0.1:8000: check that input_len + output_len fits '
        'the server\'s max_model_len, that the model is served as tiny-llama, and the key')
