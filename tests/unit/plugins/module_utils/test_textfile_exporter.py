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

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils import _npu_metrics, _textfile_exporter
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.test_npu_metrics import parse_exposition

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
