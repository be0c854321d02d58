# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node's exporter run in this process, the commands it runs answered from captures: what it writes, and what a
failing or missing command costs (its metrics and a warning, never the others)."""

from __future__ import annotations

import io
import json
import os
import threading

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _npu_metrics
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _textfile_exporter
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import HANG_SECONDS, load_fixture
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.ascend.test__npu_metrics import parse_exposition

NPU_SMI = load_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt')
FAILED_LOG = load_fixture('serve-log_vllm-ascend-2546_EJ0001_ERR02200.txt')


class Node:
    """The commands of one node: their answers by program name, and the argv of every call."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def run(self, argv, timeout):
        self.calls.append(argv)
        rc, stdout, stderr = self.answers[os.path.basename(argv[0])](argv)
        return _textfile_exporter.Result(argv, rc, stdout, stderr, False)


def journal(lines, cursor):
    return lambda argv: (0, ''.join(line + '\n' for line in lines) + ('-- cursor: %s\n' % cursor if lines else ''), '')


def answers(**changes):
    base = {'npu-smi': lambda argv: (0, NPU_SMI, ''),
            'systemctl': lambda argv: (0, 'NRestarts=1\nMainPID=0\nActiveState=active\n', ''),
            'journalctl': journal([], None)}
    base.update(changes)
    return base


def run_once(tmp_path, node, clock=1000.0):
    stderr = io.StringIO()
    argv = ['--output', str(tmp_path / 'out.prom'), '--state', str(tmp_path / 'state.json'), '--unit', 'vllm',
            '--npu-smi', '/opt/npu-smi', '--systemctl', 'systemctl', '--journalctl', 'journalctl', '--proc', str(tmp_path)]
    rc = _textfile_exporter.main(argv, run=node.run, clock=lambda: clock, stderr=stderr)
    families = parse_exposition((tmp_path / 'out.prom').read_text(encoding='utf-8'))
    return rc, families, stderr.getvalue()


def test_one_run_writes_every_family_and_the_state(tmp_path):
    node = Node(answers())
    rc, families, warnings = run_once(tmp_path, node)
    assert rc == 0 and warnings == ''
    assert families[_npu_metrics.NPU_SMI_UP]['samples'][0][1] == 1
    assert families['npu_chip_info_utilization']['samples'][0][1] == 27
    assert families[_npu_metrics.RESTARTS]['samples'] == [({'unit': 'vllm.service'}, 1.0, None)]
    assert _npu_metrics.RESIDENT not in families  # MainPID 0: nothing runs
    assert [call[:2] for call in node.calls] == [['/opt/npu-smi', 'info'], ['systemctl', 'show'], ['journalctl', '--unit=vllm.service']]
    assert node.calls[1][-2:] == ['--', 'vllm.service']
    assert node.calls[2][2] == '--since=@1000'
    state = json.loads((tmp_path / 'state.json').read_text(encoding='utf-8'))
    assert state == _npu_metrics.new_state('vllm.service', 1000)
    assert oct(os.stat(str(tmp_path / 'out.prom')).st_mode & 0o777) == '0o644'
    assert [name for name in os.listdir(str(tmp_path)) if name.endswith('.tmp')] == []


def test_failures_in_the_journal_are_counted_across_runs(tmp_path):
    lines = FAILED_LOG.splitlines()
    node = Node(answers(journalctl=journal(lines, 's=first')))
    run_once(tmp_path, node)
    node = Node(answers(journalctl=journal(lines[:3], 's=second')))
    rc, families, warnings = run_once(tmp_path, node, clock=2000.0)
    assert node.calls[2][2] == '--after-cursor=s=first'
    counts = dict((labels['failure'], value) for labels, value, _ts in families[_npu_metrics.FAILURES]['samples'])
    assert counts['ej0001'] >= 1 and counts['hccl_timeout'] == 0
    assert families[_npu_metrics.JOURNAL_LINES]['samples'][0][1] == len(lines) + 3
    assert json.loads((tmp_path / 'state.json').read_text(encoding='utf-8'))['cursor'] == 's=second'


def test_a_failing_npu_smi_costs_the_npu_metrics_only(tmp_path):
    node = Node(answers(**{'npu-smi': lambda argv: (255, 'dcmi module initialize failed. ret is -8005', '')}))
    rc, families, warnings = run_once(tmp_path, node)
    assert rc == 0
    assert families[_npu_metrics.NPU_SMI_UP]['samples'][0][1] == 0
    assert 'npu_chip_info_utilization' not in families and _npu_metrics.RESTARTS in families
    assert 'HwHiAiUser' in warnings
    assert families[_npu_metrics.WARNINGS]['samples'][0][1] == 1


def test_a_cut_npu_smi_table_is_no_metrics(tmp_path):
    cut = '\n'.join(NPU_SMI.splitlines()[:12])
    rc, families, warnings = run_once(tmp_path, Node(answers(**{'npu-smi': lambda argv: (0, cut, '')})))
    assert families[_npu_metrics.NPU_SMI_UP]['samples'][0][1] == 0 and 'incomplete' in warnings


def test_failing_systemctl_and_journalctl_warn_and_keep_the_rest(tmp_path):
    node = Node(answers(systemctl=lambda argv: (1, '', 'Failed to connect to bus'),
                        journalctl=lambda argv: (1, '', 'Failed to seek to cursor: Invalid argument')))
    rc, families, warnings = run_once(tmp_path, node)
    assert rc == 0 and 'Failed to connect to bus' in warnings and 'Failed to seek to cursor' in warnings
    assert _npu_metrics.RESTARTS not in families and families['npu_chip_info_utilization']['samples']
    assert families[_npu_metrics.FAILURES]['samples'], 'the counters are still written (from the state)'


def test_the_resident_memory_of_the_service_tree(tmp_path):
    for pid, ppid, kib in ((40, 1, 100), (41, 40, 50), (42, 41, 25), (50, 1, 999)):
        os.makedirs(str(tmp_path / str(pid)))
        (tmp_path / str(pid) / 'stat').write_text('%d (python3) S %d 0 0 0 0 0 0 0 0 0 1 1 0 0\n' % (pid, ppid))
        (tmp_path / str(pid) / 'status').write_text('Name:\tpython3\nVmRSS:\t%d kB\n' % kib)
    node = Node(answers(systemctl=lambda argv: (0, 'NRestarts=0\nMainPID=40\nActiveState=active\n', '')))
    rc, families, warnings = run_once(tmp_path, node)
    assert families[_npu_metrics.RESIDENT]['samples'][0][1] == (100 + 50 + 25) * 1024


def test_a_missing_program_is_a_result_not_an_exception():
    result = _textfile_exporter.run_command(['/nonexistent/npu-smi', 'info'], 5)
    assert result.rc == _textfile_exporter.NOT_FOUND_RC and 'No such file' in result.stderr


def test_an_unwritable_output_fails_naming_it(tmp_path):
    stderr = io.StringIO()
    rc = _textfile_exporter.main(['--output', str(tmp_path / 'missing' / 'out.prom'), '--state', str(tmp_path / 's.json'),
                                  '--unit', 'vllm', '--npu-smi', '/opt/npu-smi'], run=Node(answers()).run, stderr=stderr)
    assert rc == 1 and 'missing' in stderr.getvalue()


def test_a_unit_with_no_journal_line_yet_is_not_a_journal_failure(tmp_path):
    # journalctl --quiet --since=@T exits 1 without output when the unit has logged nothing since T (systemd 252).
    node = Node(answers(journalctl=lambda argv: (1, '', '')))
    rc, _families, warnings = run_once(tmp_path, node)
    assert rc == 0 and warnings == ''
    assert json.loads((tmp_path / 'state.json').read_text(encoding='utf-8')) == _npu_metrics.new_state('vllm.service', 1000)
    # A journalctl that says why it failed still is one.
    node = Node(answers(journalctl=lambda argv: (1, '', 'Failed to open journal')))
    rc, _families, warnings = run_once(tmp_path, node, clock=2000.0)
    assert 'failed (rc=1): Failed to open journal); the journal is read from now on' in warnings


# ------------------------------------------------------------------------------------------ an unusable state

def _state(**changes):
    return json.dumps(dict(_npu_metrics.new_state('vllm.service', 500), **dict({'cursor': 's=old'}, **changes))).encode()


def _fifo(path):
    os.mkfifo(str(path))


def _directory(path):
    os.mkdir(str(path))
    (path / 'x').write_text('{}')


def _device(path):
    os.symlink('/dev/zero', str(path))


# Each state file the exporter may find: of another type, garbage, not JSON as the collection reads it, not a file,
# too large; a cursor, start time or line count of a type the journal reading cannot take. None writes the file as
# bytes, a function makes it.
BAD_STATES = {
    'a number as cursor': _state(cursor=5),
    'a cursor alone': b'{"cursor": 5}',
    'a null cursor alone': b'{"cursor": null}',
    'a list as cursor': _state(cursor=['s=1']),
    'an empty cursor': _state(cursor=''),
    'a cursor with a line break': _state(cursor='s=1\n--since=@0'),
    'a huge cursor': _state(cursor='s' * 5000),
    'a boolean start time': _state(cursor=None, since=True),
    'an overflowing start time': b'{"version": 1, "unit": "vllm.service", "cursor": "s=1", "since": 1e400, '
                                 b'"counts": {}, "lines": 0}',
    'a negative line count': _state(lines=-1),
    'a string line count': _state(lines='12'),
    'NaN': b'{"version": 1, "unit": "vllm.service", "cursor": null, "since": NaN, "counts": {}, "lines": 0}',
    'an array': b'[]',
    'null': b'null',
    'garbage': b'\x00\xff\xfe not json at all',
    'nested deep': b'[' * 100000 + b']' * 100000,
    'a huge file': b'{"cursor": "' + b'x' * (_textfile_exporter.MAX_STATE_BYTES + 1) + b'"}',
    'empty': b'',
    'a FIFO': _fifo,
    'a character device': _device,
    'a directory': _directory,
}


@pytest.mark.parametrize('name', sorted(BAD_STATES))
def test_an_unusable_state_is_a_warning_and_the_metrics_are_written_from_the_tail(tmp_path, name):
    state = tmp_path / 'state.json'
    bad = BAD_STATES[name]
    if callable(bad):
        bad(state)
    else:
        state.write_bytes(bad)
    node = Node(answers(journalctl=journal(['EJ0001: Failed to initialize the HCCP process.'], 's=new')))
    done = []
    # A FIFO must not block the run (a thread, so that a hang fails the test instead of stopping the suite).
    worker = threading.Thread(target=lambda: done.append(run_once(tmp_path, node)), daemon=True)
    worker.start()
    worker.join(HANG_SECONDS)
    assert done, 'the exporter hung or raised on %s' % name
    rc, families, warnings = done[0]
    assert 'journal state' in warnings, warnings
    assert 'Traceback' not in warnings
    # Read from the journal's tail (now), as on a first run, and every family written.
    assert node.calls[2][2] == '--since=@1000'
    assert families[_npu_metrics.NPU_SMI_UP]['samples'][0][1] == 1 and _npu_metrics.RESTARTS in families
    counts = dict((labels['failure'], value) for labels, value, _ts in families[_npu_metrics.FAILURES]['samples'])
    assert counts['ej0001'] == 1
    if name == 'a directory':
        # It cannot be replaced: the run says so (rc 1), and the metrics are written all the same.
        assert rc == 1 and 'cannot write %s' % state in warnings
    else:
        assert rc == 0
        assert json.loads(state.read_text(encoding='utf-8'))['cursor'] == 's=new'


def test_a_usable_state_is_read_on_without_a_warning(tmp_path):
    (tmp_path / 'state.json').write_bytes(_state(counts={'ej0001': 2}, lines=7))
    node = Node(answers())
    rc, families, warnings = run_once(tmp_path, node)
    assert (rc, warnings, node.calls[2][2]) == (0, '', '--after-cursor=s=old')
    assert families[_npu_metrics.JOURNAL_LINES]['samples'][0][1] == 7


BAD_ARGUMENTS = ([('--timeout', value) for value in ('nan', 'inf', '-inf', '1e400', '0', '-1', str(366 * 86400 + 1))]
                 + [('--max-journal-lines', value) for value in ('0', '-1', '1000001', '10' * 200, 'nan')])


@pytest.mark.parametrize('option, value', BAD_ARGUMENTS)
def test_an_exporter_argument_that_is_no_usable_number_is_refused_naming_it(option, value, capsys):
    with pytest.raises(SystemExit) as raised:
        _textfile_exporter.parse_args(['--output', 'o', '--state', 's', '--unit', 'vllm', option, value])
    assert raised.value.code == 2 and option in capsys.readouterr().err
