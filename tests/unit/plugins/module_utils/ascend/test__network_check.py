# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_network_check: the NPU network's check as the role npu_network runs it - the node's inputs to the plan, whether
the check can run, the pings, the failures, the fact and the report."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _network_check as check

PLAN = {
    'a': [{'device': 0, 'address': '10.20.0.1', 'prefix': 24}, {'device': 1, 'address': '10.20.1.1', 'prefix': 24}],
    'b': [{'device': 0, 'address': '10.20.0.2', 'prefix': 24}, {'device': 1, 'address': '10.20.1.2', 'prefix': 24}],
    'c': [{'device': 0, 'address': '10.20.0.3', 'prefix': 16}],
}


def test_node_inputs_devices_and_host_networks():
    facts = {'interfaces': ['lo', 'eth0', 'br-x', 'ib0'],
             'eth0': {'ipv4': {'address': '192.168.1.5', 'prefix': '24'},
                      'ipv4_secondaries': [{'address': '192.168.2.5', 'prefix': '24'}]},
             'br_x': {'ipv4': {'address': '172.17.0.1'}},
             'lo': {'ipv4': {'address': '127.0.0.1', 'prefix': '8'}},
             'ascend': {'npu_count': '3'}}
    node = check.node_inputs('a', None, facts, {}, None)
    assert node == {'name': 'a', 'devices': [0, 1, 2], 'host_addresses': ['192.168.1.5/24', '192.168.2.5/24', '172.17.0.1'],
                    'explicit': {}, 'index': None}
    assert check.node_inputs('a', [4, 5], {'interfaces': []}, {'4': '10.0.0.1'}, 2)['devices'] == [4, 5]
    assert check.node_inputs('a', [], {}, {}, None)['host_addresses'] == []


def test_check_predicted_only_in_check_mode_with_a_change():
    assert check.check_predicted(True, [{'changed': False}, None, {'changed': True}]) is True
    assert check.check_predicted(True, [{'changed': False}, None]) is False
    assert check.check_predicted(False, [{'changed': True}]) is False
    assert check.check_predicted(True, []) is False


def test_pings_same_device_and_subnet():
    assert check.pings(PLAN['a'], 'a', ['a', 'b'], PLAN, 'same_device') == [
        {'device': 0, 'address': '10.20.0.2', 'name': 'b dev 0'}, {'device': 1, 'address': '10.20.1.2', 'name': 'b dev 1'}]
    # subnet: the same prefix and network bits; c's /16 is another network though it holds a's address.
    assert check.pings(PLAN['a'], 'a', ['a', 'b', 'c'], PLAN, 'subnet') == [
        {'device': 0, 'address': '10.20.0.2', 'name': 'b dev 0'}, {'device': 1, 'address': '10.20.1.2', 'name': 'b dev 1'}]
    assert check.pings(PLAN['c'], 'c', ['a', 'b', 'c'], PLAN, 'same_device') == [
        {'device': 0, 'address': '10.20.0.1', 'name': 'a dev 0'}, {'device': 0, 'address': '10.20.0.2', 'name': 'b dev 0'}]
    assert check.pings(PLAN['a'], 'a', ['a'], PLAN, 'same_device') == []


def _nodes():
    read_a = {'devices': [{'id': 0, 'address': '10.20.0.1', 'link': 'UP', 'net_health': 'Success'},
                          {'id': 1, 'address': '9.9.9.9', 'link': 'DOWN', 'net_health': 'Init'}]}
    ping_a = {'failed_pings': [{'device': 0, 'name': 'b dev 0', 'address': '10.20.0.2', 'error': 'timeout'}],
              'results': [{'x': 1}, {'x': 2}], 'seconds': 1.5}
    return [('a', {'nics': PLAN['a'], 'read': read_a, 'ping': ping_a}),
            ('b', {'nics': PLAN['b'], 'read': {'failed': True, 'msg': 'x'}, 'ping': None}),
            ('c', {'nics': None, 'read': None, 'ping': None})]


def test_failures_of_the_group():
    found = check.failures(_nodes(), False)
    assert [item['message'] for item in found] == [
        'a dev 1 10.20.1.1: link DOWN, net_health Init',
        'a dev 0 10.20.0.1 -> b dev 0 10.20.0.2: timeout',
        'b: not checked (the node failed or was unreachable before the check)',
        'c: not checked (the node failed or was unreachable before the check)']
    assert found[0] == {'kind': 'nic', 'host': 'a', 'device': 1, 'address': '10.20.1.1', 'link': 'DOWN',
                        'net_health': 'Init', 'message': found[0]['message']}
    assert found[1]['source'] == '10.20.0.1' and found[1]['target'] == 'b dev 0' and found[1]['kind'] == 'pair'
    assert check.failures(_nodes(), True) == []
    unknown = check.failures([('a', {'nics': [], 'read': {'devices': []},
                                     'ping': {'failed_pings': [{'device': 3, 'name': 'b dev 3', 'address': 'x',
                                                                'error': 'e'}]}})], False)
    assert unknown[0]['source'] is None and unknown[0]['message'] == 'a dev 3 ? -> b dev 3 x: e'


def test_outcome_fact_and_report_folder():
    result = check.outcome(_nodes(), False, False, '/srv/reports//', '20260101T000000Z')
    assert result['run_dir'] == '/srv/reports/20260101T000000Z'
    assert result['report'] == {'passed': False, 'verified': True, 'failures': result['failures'],
                                'report': '/srv/reports/20260101T000000Z/report.json'}
    passed = check.outcome([('a', {'nics': [], 'read': {'devices': []}, 'ping': None})], False, False, 'r', 'id')
    assert passed['report']['passed'] is True and passed['failures'] == []
    predicted = check.outcome(_nodes(), True, True, 'r', 'id')
    assert predicted['report'] == {'passed': False, 'verified': False, 'failures': [], 'report': None}


def test_report_record_and_summary():
    fact = check.outcome(_nodes(), False, False, 'r', 'id')['report']
    result = check.report(_nodes(), fact, 'same_device', 'now')
    record = result['record']
    assert record['schema'] == check.REPORT_SCHEMA == 'kunpeng_ascend.vllm/npu-network-report/1'
    assert record['passed'] is False and record['ping_scope'] == 'same_device' and record['generated'] == 'now'
    assert record['hosts']['a'] == {'nics': _nodes()[0][1]['read']['devices'], 'pings': [{'x': 1}, {'x': 2}],
                                    'ping_seconds': 1.5}
    assert record['hosts']['c'] == {'nics': [], 'pings': [], 'ping_seconds': None}
    assert result['summary'] == ('NPU network of 3 node(s): FAILED\n2 NICs checked, 2 pings (same_device)\n'
                                 + ''.join('FAIL %s\n' % item['message'] for item in fact['failures']))
    passed = check.report([('a', {'read': {'devices': []}})], {'passed': True, 'failures': []}, 'subnet', 'now')
    assert passed['summary'] == 'NPU network of 1 node(s): PASSED\n0 NICs checked, 0 pings (subnet)\n'
