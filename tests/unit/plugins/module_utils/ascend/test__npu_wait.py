# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The decisions of the wait before a vLLM start (module_utils/ascend/_npu_wait.py) on real npu-smi tables: who holds the
service's NPUs, in words, and the bounded wait, driven try by try (no clock)."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _npu_wait
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

BUSY = 'npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'
ONE_PROCESS = 'npu-smi-info_910B3_26.1.0_8npu_1proc_container-pid-col.txt'
IDLE = 'npu-smi-info_A3-Ascend910_24.1.rc3.7_16chip_noproc.txt'


def runner(*names):
    """A run(args) that answers `npu-smi info` with the fixtures ``names``, one per call, and records the calls."""
    calls = []
    outputs = [load_fixture(name) for name in names]

    def run(args):
        calls.append(list(args))
        return CommandResult(['npu-smi'] + list(args), 0, outputs[min(len(calls), len(outputs)) - 1], '')
    return run, calls


@pytest.mark.parametrize('text, npus', [
    ('0', [0]), ('0,1', [0, 1]), ('4-7', [4, 5, 6, 7]), ('3,0-1,1', [0, 1, 3]), (' 2 , 5 ', [2, 5]),
])
def test_parse_npu_list(text, npus):
    assert _npu_wait.parse_npu_list(text) == npus


@pytest.mark.parametrize('text, message', [
    ('', 'no NPU id given'),
    ('a', "'a' is not an NPU id or a range of them (such as 0,1 or 0-7)"),
    ('1-', "'1-' is not an NPU id or a range of them (such as 0,1 or 0-7)"),
    ('-1', "'-1' is not an NPU id or a range of them (such as 0,1 or 0-7)"),
    ('5-2', "'5-2' is a range that ends before it starts"),
])
def test_parse_npu_list_refuses(text, message):
    with pytest.raises(ValueError) as error:
        _npu_wait.parse_npu_list(text)
    assert str(error.value) == message


def test_read_holders_keeps_the_service_npus_only():
    run, calls = runner(BUSY)
    held, problem = _npu_wait.read_holders(run, [2, 3])
    assert problem is None
    assert [(item['npu_id'], item['pid']) for item in held] == [(2, 1073093), (3, 1075396)]
    assert calls == [['info']]
    # The process name column of this capture is empty (a container's process).
    assert _npu_wait.describe_holders(held) == 'pid 1073093 (no name) on NPU 2; pid 1075396 (no name) on NPU 3'


def test_read_holders_on_an_idle_host_and_on_other_npus():
    assert _npu_wait.read_holders(runner(IDLE)[0], [0, 1]) == ([], None)
    # pytest holds NPU 0 only.
    assert _npu_wait.read_holders(runner(ONE_PROCESS)[0], [1, 2]) == ([], None)
    held, _problem = _npu_wait.read_holders(runner(ONE_PROCESS)[0], [0, 1])
    assert _npu_wait.describe_holders(held) == 'pid 485946 (pytest) on NPU 0'


def test_read_holders_distrusts_a_cut_table_and_a_failed_npu_smi():
    text = load_fixture(BUSY)
    cut = text[:text.index('| 3       0')]
    held, problem = _npu_wait.read_holders(lambda args: CommandResult(['npu-smi'] + args, 0, cut, ''), [0])
    assert held is None and problem.startswith('npu-smi printed an incomplete table (')
    held, problem = _npu_wait.read_holders(
        lambda args: CommandResult(['npu-smi'] + args, 1, 'dcmi model initialized failed, because the device is used. '
                                   'ret is -8020', ''), [0])
    assert held is None and 'npu-smi info' in problem and '-8020' in problem


def test_describe_holders_groups_a_process_on_several_npus_and_names_its_container_pid():
    held = [{'npu_id': 0, 'chip_id': 0, 'pid': 4242, 'name': 'VLLM::Worker', 'container_pid': 17},
            {'npu_id': 1, 'chip_id': 0, 'pid': 4242, 'name': 'VLLM::Worker', 'container_pid': 17},
            {'npu_id': 1, 'chip_id': 1, 'pid': 4242, 'name': 'VLLM::Worker', 'container_pid': 17},
            {'npu_id': 3, 'chip_id': 0, 'pid': None, 'name': '', 'container_pid': None}]
    assert _npu_wait.describe_holders(held) == ('pid 4242 (VLLM::Worker, pid 17 in its container) on NPU 0, 1; '
                                                'pid unknown (no name) on NPU 3')


def scripted(*reads):
    """A read() answering ``reads`` in turn (the last one again), and the sleeps and log lines of the wait."""
    answers = list(reads)
    sleeps, lines = [], []

    def read():
        return answers.pop(0) if len(answers) > 1 else answers[0]
    return read, sleeps.append, lines.append, sleeps, lines


HOLDER = [{'npu_id': 0, 'chip_id': 0, 'pid': 4242, 'name': 'VLLM::Worker', 'container_pid': None}]
OTHER = [{'npu_id': 1, 'chip_id': 0, 'pid': 5151, 'name': 'python3', 'container_pid': None}]


def test_free_at_once_says_nothing_and_does_not_sleep():
    read, sleep, log, sleeps, lines = scripted(([], None))
    assert _npu_wait.wait_until_free(read, [0, 1], 120, 2, sleep, log, 'vllm.service') == (0, 'NPU 0, 1 free')
    assert sleeps == [] and lines == []


def test_a_holder_that_leaves_is_named_once_then_the_start_goes_on():
    read, sleep, log, sleeps, lines = scripted((HOLDER, None), (HOLDER, None), (HOLDER, None), ([], None))
    assert _npu_wait.wait_until_free(read, [0, 1], 120, 2, sleep, log, 'vllm.service') == (0, 'NPU 0, 1 free')
    assert sleeps == [2, 2, 2]
    assert lines == [
        'vllm.service: NPU held by pid 4242 (VLLM::Worker) on NPU 0; waiting up to 120 s for NPU 0, 1 to be free '
        '(try 1 of 61)',
        'vllm.service: NPU 0, 1 free after 4 tries, starting',
    ]


def test_a_change_of_holder_is_logged():
    read, sleep, log, _sleeps, lines = scripted((HOLDER, None), (OTHER, None), ([], None))
    assert _npu_wait.wait_until_free(read, [0, 1], 10, 5, sleep, log, 'vllm.service')[0] == _npu_wait.FREE
    assert [line.split(';')[0] for line in lines] == [
        'vllm.service: NPU held by pid 4242 (VLLM::Worker) on NPU 0',
        'vllm.service: NPU held by pid 5151 (python3) on NPU 1',
        'vllm.service: NPU 0, 1 free after 3 tries, starting',
    ]


def test_still_held_at_the_deadline_fails_naming_the_holder():
    read, sleep, log, sleeps, lines = scripted((HOLDER, None))
    code, message = _npu_wait.wait_until_free(read, [0], 6, 2, sleep, log, 'vllm.service')
    assert code == _npu_wait.HELD == 1
    assert sleeps == [2, 2, 2]
    assert message == ('vllm.service: NPU 0 still held after 4 tries in 6 s by pid 4242 (VLLM::Worker) on NPU 0; not '
                       'starting (a start would fail with EJ0001). Stop that process (kill it, or stop the service or '
                       'container it belongs to), then `systemctl reset-failed vllm.service` and start the service '
                       'again')
    assert lines[-1] == message and len(lines) == 2


def test_an_unreadable_npu_smi_is_retried_then_fails_with_its_reason():
    read, sleep, log, sleeps, lines = scripted((None, 'npu-smi info timed out'), (None, 'npu-smi info timed out'),
                                               (None, 'npu-smi info timed out'))
    code, message = _npu_wait.wait_until_free(read, [0], 4, 2, sleep, log, 'vllm.service')
    assert code == _npu_wait.UNREADABLE == 3
    assert sleeps == [2, 2]
    assert message == ('vllm.service: cannot tell whether NPU 0 is free after 3 tries in 4 s: npu-smi info timed out; '
                       'not starting')
    assert lines[0].startswith('vllm.service: cannot read the NPUs: npu-smi info timed out; waiting up to 4 s')


def test_an_unreadable_npu_smi_that_recovers_lets_the_start_go_on():
    read, sleep, log, _sleeps, _lines = scripted((None, 'npu-smi info timed out'), ([], None))
    assert _npu_wait.wait_until_free(read, [0], 4, 2, sleep, log)[0] == _npu_wait.FREE
