# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The hccn_ping module: main() against a fake host (answers, losses, a ping that times out, the results' order
when pings run at once, bad input, a missing device and tool, check mode), then two simulated nodes sharing a
fabric whose hccn_tool runs for real in scratch roots."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import hccn_ping
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    HANG_SECONDS,
    SIMULATOR,
    FailJson,
    capture_results,
    load_fixture,
    run_main,
    simulator_module,
)

TOOL = '/usr/local/Ascend/driver/tools/hccn_tool'
# The real capture: device 3 pings 10.20.11.16, three replies.
REAL_PING = load_fixture('hccn_tool-i3-ping-g_10.20.11.16.txt').split('\n', 1)[1]
OUT_OF_RANGE_TEXT = ''.join(line[4:] + '\n' for line in load_fixture(
    'hccn_tool_ip-set_errors_310_device-id-out-of-range.txt').splitlines()[1:4])


def lost(device, address, count=3, received=0):
    loss = 100.0 * (count - received) / count
    return (1 if received == 0 else 0,
            'device %d PING %s\n%s%d packets transmitted, %d received, %.2f%% packet loss\n'
            % (device, address, ''.join('recv seq=%d,time=0.05ms\n' % n for n in range(received)), count, received,
               loss), '')


def ping_argv(device, address, count=3):
    return (TOOL, '-i', str(device), '-ping', '-g', 'address', address, 'pkt', str(count))


@pytest.fixture
def host(fake_host):
    fake_host.executables.add(TOOL)
    return fake_host


def test_answers_losses_and_a_timeout_are_results_not_failures(host):
    host.answers[ping_argv(3, '10.20.11.16')] = (0, REAL_PING, '')
    host.answers[ping_argv(3, '10.20.0.12')] = lost(3, '10.20.0.12')
    host.answers[ping_argv(4, '10.20.0.13')] = lost(4, '10.20.0.13', received=2)
    # coreutils timeout stopped it: rc 124 after the time limit (the fake clock below says it was reached).
    host.answers[ping_argv(5, '10.20.0.14')] = (124, 'device 5 PING 10.20.0.14\n', '')
    pings = [{'device': 3, 'address': '10.20.11.16', 'name': 'node2 dev 3'}, {'device': 3, 'address': '10.20.0.12'},
             {'device': 4, 'address': '10.20.0.13'}, {'device': 5, 'address': '10.20.0.14'}]
    clock = iter(range(0, 1000, 20))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, 'monotonic', lambda: next(clock))
        result = run_main(hccn_ping.main, dict(pings=pings, timeout=10, parallel=1))
    assert result['changed'] is False
    first = result['results'][0]
    assert first == {'device': 3, 'address': '10.20.11.16', 'name': 'node2 dev 3', 'transmitted': 3, 'received': 3,
                     'loss_percent': 0.0, 'avg_ms': 0.08, 'ok': True, 'error': None}
    assert [(r['ok'], r['error']) for r in result['results'][1:]] == [
        (False, '100% loss (0 of 3 packets received)'),
        (False, '33.33% loss (2 of 3 packets received)'),
        (False, 'no answer within 10 s (timeout)')]
    assert [r['address'] for r in result['failed_pings']] == ['10.20.0.12', '10.20.0.13', '10.20.0.14']
    assert host.commands()[0] == ['/usr/bin/timeout', '--kill-after=5', '10'] + list(ping_argv(3, '10.20.11.16'))


def test_a_loss_up_to_max_loss_percent_is_ok(host):
    host.answers[ping_argv(4, '10.20.0.13', 10)] = lost(4, '10.20.0.13', count=10, received=9)
    result = run_main(hccn_ping.main, dict(pings=[{'device': 4, 'address': '10.20.0.13'}], count=10,
                                           max_loss_percent=10))
    assert result['results'][0]['ok'] is True and result['failed_pings'] == []


def test_pings_run_at_once_up_to_parallel_and_come_back_in_order(host):
    # Each ping waits at a barrier of 4 (parallel) before it answers, so they get through only when 4 run at once (and
    # the peak says never more); within each 4 the later ping answers first, so they end out of order. No sleeps.
    barrier = threading.Barrier(4, timeout=HANG_SECONDS)
    lock = threading.Lock()
    running = []
    peak = []
    answered = []
    done = dict((n, threading.Event()) for n in range(1, 13))

    def slow(n, device, address):
        def answer():
            with lock:
                running.append(address)
                peak.append(len(running))
            barrier.wait()
            if n % 4:
                assert done[n + 1].wait(HANG_SECONDS)
            with lock:
                running.remove(address)
                answered.append(n)
            done[n].set()
            return 0, REAL_PING.replace('10.20.11.16', address).replace('device 3', 'device %d' % device), ''
        return answer

    pings = [{'device': n % 8, 'address': '10.20.1.%d' % n} for n in range(1, 13)]
    for n, entry in enumerate(pings, start=1):
        host.answers[ping_argv(entry['device'], entry['address'])] = slow(n, entry['device'], entry['address'])
    result = run_main(hccn_ping.main, dict(pings=pings, parallel=4))
    assert max(peak) == 4
    assert answered == [4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9]
    assert [r['address'] for r in result['results']] == [entry['address'] for entry in pings]
    assert all(r['ok'] for r in result['results'])


def test_check_mode_pings_all_the_same(host):
    host.answers[ping_argv(3, '10.20.11.16')] = (0, REAL_PING, '')
    result = run_main(hccn_ping.main, dict(pings=[{'device': 3, 'address': '10.20.11.16'}], _ansible_check_mode=True))
    assert result['changed'] is False and result['results'][0]['ok'] is True and len(host.commands()) == 1


def test_no_pings_is_an_empty_result(host):
    result = run_main(hccn_ping.main, dict(pings=[]))
    assert result['results'] == [] and result['failed_pings'] == [] and host.commands() == []


@pytest.mark.parametrize('extra, message', [
    (dict(pings=[{'device': 0, 'address': '10.20.0.300'}]), "pings[0].address: '10.20.0.300' is not an IPv4 address"),
    (dict(pings=[{'device': 0, 'address': '10.0.0.1'}, {'device': -1, 'address': '10.0.0.2'}]), 'pings[1].device: '),
    (dict(pings=[{'device': 0, 'address': '127.0.0.1'}]), 'pings[0].address: 127.0.0.1 cannot be'),
    (dict(count=0), 'count: give a whole number from 1 to 100, not 0'),
    (dict(timeout=301), 'timeout: give a whole number from 1 to 300'),
    (dict(parallel=0), 'parallel: give a whole number from 1 to 64'),
    (dict(max_loss_percent=101), 'max_loss_percent: give a percentage from 0 to 100'),
])
def test_bad_input_fails_naming_the_option_before_any_ping(host, extra, message):
    result = run_main(hccn_ping.main, dict(dict(pings=[{'device': 0, 'address': '10.0.0.1'}]), **extra), FailJson)
    assert result['msg'].startswith(message) and host.commands() == []


def test_a_device_the_host_does_not_have_fails_naming_it(host):
    host.answers[ping_argv(0, '10.0.0.1')] = lost(0, '10.0.0.1')
    host.answers[ping_argv(8, '10.0.0.2')] = (1, OUT_OF_RANGE_TEXT, '')
    result = run_main(hccn_ping.main, dict(pings=[{'device': 0, 'address': '10.0.0.1'},
                                                  {'device': 8, 'address': '10.0.0.2'}]), FailJson)
    assert result['msg'].startswith('pings[1].device: device 8 does not exist on this host')
    assert 'Device ID is out of the valid range' in result['msg'] and 'npu-smi info -m' in result['msg']


def test_a_missing_tool_fails_naming_the_option(host):
    result = run_main(hccn_ping.main, dict(pings=[{'device': 0, 'address': '10.0.0.1'}], hccn_tool_path='/nope'),
                      FailJson)
    assert result['msg'].startswith('hccn_tool_path: /nope is not an executable file') and host.commands() == []


def test_an_answer_without_summary_is_a_failed_ping_with_the_tool_s_words(host):
    host.answers[ping_argv(0, '10.0.0.1')] = (1, 'Cmd execute failed!\n', '')
    result = run_main(hccn_ping.main, dict(pings=[{'device': 0, 'address': '10.0.0.1'}]))
    assert result['failed_pings'][0]['error'] == 'no "packets transmitted" summary (rc 1): Cmd execute failed!'


# --- two simulated nodes sharing a fabric, their hccn_tool run for real ----------------------------------------------

ASCEND_SIM = simulator_module('ascend_sim', 'ascend-sim')


@pytest.fixture
def sim(tmp_path, monkeypatch):
    """This process is node-a of a fabric shared with node-b (the simulator's state and hccn.conf in scratch roots);
    device 3 of node-a has 10.20.0.4, device 3 of node-b 10.20.0.12."""
    capture_results(monkeypatch)
    tool = tmp_path / 'bin' / 'hccn_tool'
    tool.parent.mkdir()
    tool.symlink_to(os.path.join(SIMULATOR, 'ascend-sim'))
    fabric = tmp_path / 'fabric'
    fabric.mkdir()
    for name, address in (('node-b', '10.20.0.12'), ('node-a', '10.20.0.4')):
        (tmp_path / name / 'etc').mkdir(parents=True)
        state = ASCEND_SIM.default_state('910b-8')
        state['network']['fabric_dir'] = str(fabric)
        (tmp_path / name / 'state.json').write_text(json.dumps(state))
        for variable, value in (('ASCEND_SIM_STATE', tmp_path / name / 'state.json'),
                                ('ASCEND_SIM_LOG', tmp_path / name / 'calls.log'),
                                ('ASCEND_SIM_ROOT', tmp_path / name), ('ASCEND_SIM_HOSTNAME', name)):
            monkeypatch.setenv(variable, str(value))
        assert ASCEND_SIM.main(['hccn_tool', '-i', '3', '-ip', '-s', 'address', address, 'netmask', '255.255.0.0']) == 0
    return dict(hccn_tool_path=str(tool), timeout=20, count=2), tmp_path / 'node-a' / 'state.json'


def test_the_simulator_answers_the_peer_and_not_a_planted_broken_path(sim):
    common, state_file = sim
    pings = [{'device': 3, 'address': '10.20.0.12', 'name': 'node-b dev 3'},
             {'device': 3, 'address': '10.20.0.99', 'name': 'nobody'}]
    result = run_main(hccn_ping.main, dict(common, pings=pings))
    assert [(r['name'], r['ok'], r['received']) for r in result['results']] == [('node-b dev 3', True, 2),
                                                                                ('nobody', False, 0)]
    assert result['failed_pings'][0]['error'] == '100% loss (0 of 2 packets received)'

    state = json.loads(state_file.read_text())
    state['network']['unreachable'] = ['10.20.0.12']
    state_file.write_text(json.dumps(state))
    result = run_main(hccn_ping.main, dict(common, pings=pings[:1]))
    assert result['results'][0]['ok'] is False and result['failed_pings'][0]['name'] == 'node-b dev 3'


def test_the_simulator_device_out_of_range_fails_the_module(sim):
    common, _state_file = sim
    result = run_main(hccn_ping.main, dict(common, pings=[{'device': 8, 'address': '10.20.0.12'}]), FailJson)
    assert result['msg'].startswith('pings[0].device: device 8 does not exist on this host')
