# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The role npu_network's check filters (plugins/filter/npu_network_check.py): each host's variables read from
hostvars (a host without them: None), bad input an AnsibleFilterError."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.npu_network_check import FilterModule

FILTERS = FilterModule().filters()
NICS = [{'device': 0, 'address': '10.0.0.1', 'prefix': 24}]
HOSTVARS = {
    'a': {'npu_network_nics': NICS, '__npu_network_apply': {'changed': True},
          '__npu_network_read': {'devices': [{'id': 0, 'address': '10.0.0.1', 'link': 'UP', 'net_health': 'Success'}]},
          '__npu_network_ping': {'failed_pings': [], 'results': [{}], 'seconds': 1}},
    'b': {},
}


def test_npu_network_node():
    node = FILTERS['npu_network_node']('a', {'ascend': {'npu_count': 2}}, None, {}, None)
    assert node['devices'] == [0, 1] and node['host_addresses'] == []
    with pytest.raises(AnsibleFilterError):
        FILTERS['npu_network_node']('a', {}, None, {}, None)


def test_npu_network_predicted():
    assert FILTERS['npu_network_predicted'](['a', 'b'], HOSTVARS, True) is True
    assert FILTERS['npu_network_predicted'](['b'], HOSTVARS, True) is False
    assert FILTERS['npu_network_predicted'](['a'], HOSTVARS, False) is False


def test_npu_network_pings():
    plan = {'a': NICS, 'b': [{'device': 0, 'address': '10.0.0.2', 'prefix': 24}]}
    assert FILTERS['npu_network_pings'](NICS, 'a', ['a', 'b'], plan, 'same_device') == [
        {'device': 0, 'address': '10.0.0.2', 'name': 'b dev 0'}]
    with pytest.raises(AnsibleFilterError):
        FILTERS['npu_network_pings'](NICS, 'a', ['a', 'b'], plan, 'everything')


def test_npu_network_outcome_and_report():
    outcome = FILTERS['npu_network_outcome'](['a', 'b'], HOSTVARS, False, False, '/r/', 'id')
    assert [item['host'] for item in outcome['failures']] == ['b'] and outcome['run_dir'] == '/r/id'
    assert outcome['report']['report'] == '/r/id/report.json' and outcome['report']['passed'] is False
    report = FILTERS['npu_network_report'](['a', 'b'], HOSTVARS, outcome['report'], 'same_device', 'now')
    assert report['record']['hosts']['a']['ping_seconds'] == 1
    assert report['summary'].startswith('NPU network of 2 node(s): FAILED\n1 NICs checked, 1 pings (same_device)\n')
    with pytest.raises(AnsibleFilterError):
        FILTERS['npu_network_outcome']('a', HOSTVARS, False, False, '/r', 'id')
