# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_soak with real processes: vllm_benchmark's stand-in for `vllm bench serve`, stand-ins for systemctl,
journalctl and podman that answer from files the test writes, and the simulator's npu-smi. Time is the test's clock
(it passes only when the sampling loop sleeps), and the service's resident memory is scripted on it, so every sample
and slope is exact whatever the machine's load."""

from __future__ import annotations

import functools
import json
import os
import sys
import textwrap

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _soak
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import vllm_soak
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ExitJson, FailJson, capture_results, run_main
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.modules.test_vllm_benchmark import (
    FAKE_BENCH,
    RESULT,
    Timeline,
)

# The unit's state (MainPID, NRestarts) from the JSON file FAKE_UNIT; what the test asked, in FAKE_CALLS.
FAKE_SYSTEMCTL = textwrap.dedent('''\
    #!{python}
    import json, os, sys
    with open(os.environ['FAKE_CALLS'], 'a') as log:
        log.write(json.dumps(sys.argv[1:]) + '\\n')
    assert sys.argv[1:3] == ['show', '--property=MainPID,NRestarts'] and sys.argv[3] == '--', sys.argv
    state = json.load(open(os.environ['FAKE_UNIT']))
    print('MainPID=%d\\nNRestarts=%d' % (state['pid'], state['restarts']))
''')
# The unit's journal: the lines of FAKE_JOURNAL; the cursor is the number of lines printed so far.
FAKE_JOURNALCTL = textwrap.dedent('''\
    #!{python}
    import json, os, sys
    with open(os.environ['FAKE_CALLS'], 'a') as log:
        log.write(json.dumps(sys.argv[1:]) + '\\n')
    lines = open(os.environ['FAKE_JOURNAL']).read().splitlines()
    after = [int(a.split('=c', 1)[1]) for a in sys.argv if a.startswith('--after-cursor=')]
    new = lines[after[0]:] if after else lines
    if not lines:
        sys.exit(1)
    for line in new:
        print(line)
    print('-- cursor: c%d' % len(lines))
''')
FAKE_PODMAN = textwrap.dedent('''\
    #!{python}
    import sys
    assert sys.argv[1:] == ['inspect', '--format', '{{{{.State.Pid}}}}', '--', 'vllm-vllm'], sys.argv
    print(4711)
''')

INTERVAL = 1.0
DURATION = 20.0
OOM = 'RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB'


class ScriptedMemory:
    """The service's processes: resident memory ``base`` MiB growing ``per_second`` MiB per second of the clock."""

    def __init__(self, timeline, base=1000.0, per_second=0.0):
        self.timeline = timeline
        self.base = base
        self.per_second = per_second
        self.roots = []

    def tree_rss_bytes(self, root):
        self.roots.append(root)
        return int((self.base + self.per_second * self.timeline.now) * _soak.MIB)


@pytest.fixture
def soak(tmp_path, monkeypatch):
    """run(args, per_second=..., on_tick=...): the module on a Timeline against the gated stand-in, with its result
    and the ScriptedMemory as ``memory``."""
    capture_results(monkeypatch)
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for name, text in (('vllm', FAKE_BENCH), ('systemctl', FAKE_SYSTEMCTL), ('journalctl', FAKE_JOURNALCTL),
                       ('podman', FAKE_PODMAN)):
        (bin_dir / name).write_text(text.format(python=sys.executable))
        (bin_dir / name).chmod(0o755)
    (tmp_path / 'unit.json').write_text(json.dumps({'pid': 1234, 'restarts': 2}))
    (tmp_path / 'journal.txt').write_text('')
    gate = tmp_path / 'gate'
    for name, value in (('FAKE_BENCH_LOG', tmp_path / 'bench.json'), ('RESULT', RESULT), ('GATE', gate),
                        ('DURATION', DURATION), ('FAKE_UNIT', tmp_path / 'unit.json'),
                        ('FAKE_JOURNAL', tmp_path / 'journal.txt'), ('FAKE_CALLS', tmp_path / 'calls.txt'),
                        ('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))):
        monkeypatch.setenv(name, str(value))
    for name in ('NO_RESULT', 'FAKE_BENCH_RC', 'OPENAI_API_KEY'):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / 'work'
    work.mkdir()
    args = dict(command=[str(bin_dir / 'vllm')], base_url='http://127.0.0.1:8000', model='tiny-llama',
                tokenizer='/srv/models/tiny', api_key='secret-key-1', rate=1.5, duration=DURATION, interval=INTERVAL,
                warmup=0.25, unit='vllm.service', work_dir=str(work), sample_npus='never', input_len=32,
                output_len=16)

    def run(changes=None, per_second=0.0, on_tick=None, outcome=ExitJson):
        timeline = Timeline(gate, end=DURATION, on_tick=on_tick)
        memory = ScriptedMemory(timeline, per_second=per_second)
        main = functools.partial(vllm_soak.main, clock=timeline, sleep=timeline.sleep, wall=lambda: 1700000000.0,
                                 processes=memory)
        result = run_main(main, dict(args, **(changes or {})), outcome)
        return dict(result, memory=memory)
    return tmp_path, run


def check(run, name):
    return next(item for item in run['checks'] if item['check'] == name)


def test_a_growing_service_fails_with_its_exact_slope_and_the_load_keeps_the_rate(soak):
    tmp_path, run = soak
    result = run(per_second=0.25)
    soak_run = result['soak']
    # A sample at every second from 0 to the end, and once more after the load generator ended.
    assert [sample['t'] for sample in soak_run['samples']] == [float(t) for t in range(21)] + [20.0]
    assert soak_run['samples'][3] == {'t': 3.0, 'rss_mib': 1000.75, 'main_pid': 1234, 'restarts': 2,
                                      'known_failures': 0}
    assert set(result['memory'].roots) == {1234}
    rss = check(soak_run, 'host_rss_growth')
    assert rss['value'] == pytest.approx(900.0, rel=1e-9) and rss['status'] == 'FAIL'
    assert soak_run['fits']['host_rss']['from_s'] == 5.0
    assert soak_run['verdict'] == 'FAIL'
    bench = json.loads((tmp_path / 'bench.json').read_text())
    argv = bench['argv']
    assert argv[argv.index('--request-rate') + 1] == '1.5' and argv[argv.index('--num-prompts') + 1] == '30'
    assert bench['key'] == 'secret-key-1' and 'secret-key-1' not in json.dumps(soak_run)


def test_a_flat_service_passes(soak):
    _tmp_path, run = soak
    soak_run = run()['soak']
    assert check(soak_run, 'host_rss_growth')['value'] == 0.0
    assert [item['status'] for item in soak_run['checks']] == ['PASS', 'NOT_MEASURED', 'PASS', 'PASS']
    assert soak_run['verdict'] == 'PASS' and soak_run['metrics']['completed'] == 40


def test_a_restart_and_a_known_failure_in_the_journal_fail_the_run(soak):
    tmp_path, run = soak

    def trouble(now):
        if now == 8.0:
            (tmp_path / 'unit.json').write_text(json.dumps({'pid': 5678, 'restarts': 3}))
            (tmp_path / 'journal.txt').write_text('loading\n%s\nrestarting\n' % OOM)

    soak_run = run(on_tick=trouble)['soak']
    assert check(soak_run, 'restarts')['value'] == 1 and check(soak_run, 'restarts')['status'] == 'FAIL'
    assert check(soak_run, 'known_failures')['value'] == 1
    assert soak_run['journal']['found'] == ['out_of_memory'] and soak_run['journal']['lines_read'] == 3
    assert soak_run['samples'][8]['main_pid'] == 5678 and soak_run['samples'][8]['known_failures'] == 1
    assert soak_run['verdict'] == 'FAIL'
    calls = [json.loads(line) for line in (tmp_path / 'calls.txt').read_text().splitlines()]
    journal_calls = [call for call in calls if call[0] == '--unit=vllm.service']
    # Since the start until the first line, then after the cursor of the last line read.
    assert journal_calls[0][1] == '--since=@1700000000'
    assert journal_calls[-1][1] == '--after-cursor=c3'


def test_container_mode_reads_the_containers_init_process(soak):
    _tmp_path, run = soak
    result = run({'mode': 'container', 'engine': 'podman', 'container_name': 'vllm-vllm'})
    assert set(result['memory'].roots) == {4711}
    assert result['soak']['samples'][0]['main_pid'] == 4711


def test_check_mode_runs_no_load_and_says_what_it_would_run(soak):
    tmp_path, run = soak
    soak_run = run({'_ansible_check_mode': True, 'work_dir': None})['soak']
    assert soak_run['num_prompts'] == 30 and soak_run['argv'][1:3] == ['bench', 'serve']
    assert not (tmp_path / 'bench.json').exists() and not (tmp_path / 'calls.txt').exists()


@pytest.mark.parametrize('changes, message', [
    ({'rate': 0}, 'rate must be requests/s, more than 0; got 0'),
    ({'duration': 10, 'interval': 5}, 'duration (10 s) less its warm-up (warmup 0.25) leaves 7.5 s'),
    ({'unit': '-H evil'}, 'the unit \'-H evil\' starts with "-"'),
    ({'mode': 'container'}, 'container mode needs engine and container_name'),
    ({'work_dir': None}, 'work_dir is required to run the load'),
])
def test_bad_arguments_fail_before_anything_runs(soak, changes, message):
    tmp_path, run = soak
    failure = run(changes, outcome=FailJson)
    assert message in failure['msg']
    assert not (tmp_path / 'bench.json').exists()


NAN, INF = float('nan'), float('inf')
# Hostile values of every number the role passes the module: NaN, infinities, overflowing products, out of range,
# wrong types, and strings of those (as templating gives them).
HOSTILE = [
    {'rate': NAN}, {'rate': 'nan'}, {'rate': INF}, {'rate': '1e400'}, {'rate': 1e300}, {'rate': 1e300, 'duration': 1e300},
    {'rate': 3000, 'duration': 86400}, {'rate': True}, {'rate': '0.5'}, {'rate': 1e-300},
    {'duration': NAN}, {'duration': -INF}, {'duration': 1e20}, {'duration': 366 * 86400}, {'duration': 200000},
    {'duration': '90'}, {'interval': INF}, {'interval': NAN}, {'interval': 0.999}, {'interval': 1e300},
    {'warmup': NAN}, {'warmup': -0.0}, {'warmup': 0.9}, {'warmup': 0.95},
    {'max_hbm_growth': INF}, {'max_rss_growth': NAN}, {'max_hbm_growth': 1e308}, {'max_restarts': 1e300},
    {'max_restarts': 2.5}, {'max_known_failures': '3'}, {'max_known_failures': -1},
    {'max_concurrency': 0}, {'max_concurrency': 1.5}, {'max_concurrency': 10 ** 12},
    {'input_len': 0}, {'output_len': 2.0}, {'input_len': '7'},
]


@pytest.mark.parametrize('changes', HOSTILE, ids=repr)
def test_every_input_the_roles_filter_accepts_the_module_accepts_and_no_input_raises(soak, changes):
    """The role's validation (filter soak_input_problems: _soak.input_problems on the role's variables, which runs on
    the controller only, so called here without it) and the module decide alike: what the filter accepts the module
    runs (here in check mode: the same numbers, the requests and the time limit made), what it refuses the module
    refuses with the same message, never with a traceback."""
    _tmp_path, run = soak
    role = dict(duration=DURATION, interval=INTERVAL, rate=1.5, warmup=0.25, input_len=32, output_len=16)
    role.update(changes)
    problems = _soak.input_problems(role)
    args = dict(role, _ansible_check_mode=True, work_dir=None)
    if not problems:
        soak_run = run(args)['soak']
        assert soak_run['num_prompts'] == _soak.prompts(float(role['rate']), float(role['duration']))
        assert 1 <= soak_run['num_prompts'] <= _soak.MAX_REQUESTS
    elif any(isinstance(value, bool) for value in changes.values()):
        # Ansible's float type makes true 1.0 before the module sees it; the role's filter refuses the boolean.
        run(args, outcome=(ExitJson, FailJson))
    else:
        # The same messages, the value as the module got it after Ansible's conversion ('nan' is nan there), or
        # Ansible's own naming the option when its int type refuses a fraction first.
        failure = run(args, outcome=FailJson)
        assert (all(problem.split('; got ')[0] in failure['msg'] for problem in problems)
                or failure['msg'].startswith("argument '%s' is of type" % next(iter(changes)))), failure['msg']


@pytest.mark.parametrize('make, kind', [
    (lambda path: path.mkdir(), 'a directory'),
    (lambda path: os.mkfifo(str(path)), 'a FIFO (named pipe)'),
])
def test_a_result_file_that_cannot_be_one_fails_naming_work_dir_before_any_load(soak, make, kind):
    tmp_path, run = soak
    make(tmp_path / 'work' / 'vllm-bench-result.json')
    failure = run(outcome=FailJson)
    assert failure['msg'] == (
        'work_dir %s holds %s named vllm-bench-result.json, where the load generator writes its result file: remove it '
        'or give another work_dir' % (tmp_path / 'work', kind))
    assert not (tmp_path / 'bench.json').exists() and not (tmp_path / 'calls.txt').exists()


def test_a_work_dir_that_is_not_a_directory_fails_before_any_load(soak):
    tmp_path, run = soak
    (tmp_path / 'file').write_text('')
    assert run({'work_dir': str(tmp_path / 'file')}, outcome=FailJson)['msg'] == (
        'work_dir %s is not a directory (it is a regular file): give an existing directory for the result file'
        % (tmp_path / 'file'))
    assert run({'work_dir': str(tmp_path / 'none')}, outcome=FailJson)['msg'] == (
        'work_dir %s is not a directory (nothing is there): give an existing directory for the result file'
        % (tmp_path / 'none'))
    assert not (tmp_path / 'bench.json').exists()


def test_an_old_result_file_or_link_is_removed_before_the_run(soak):
    tmp_path, run = soak
    (tmp_path / 'elsewhere.json').write_text('{}')
    (tmp_path / 'work' / 'vllm-bench-result.json').symlink_to(tmp_path / 'elsewhere.json')
    assert run()['soak']['verdict'] == 'PASS'
    assert (tmp_path / 'elsewhere.json').read_text() == '{}'
