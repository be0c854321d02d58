# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The npu_network_plan filter, called directly and through a template; its documentation sidecar."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter import npu_network_plan as plugin
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _network_plan
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._network_plan import plan_network
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ansible_debug

FILTER_DIR = os.path.dirname(plugin.__file__)
NODES = [{'name': 'node2', 'npu_count': 8, 'host_addresses': ['10.0.0.12/24']},
         {'name': 'node1', 'npu_count': 8, 'host_addresses': ['10.0.0.11/24'], 'explicit': {'7': '10.20.0.10'}}]


def test_the_plugin_exposes_the_filter():
    assert plugin.FilterModule().filters() == {'npu_network_plan': plugin.npu_network_plan}


def test_the_filter_is_plan_network():
    assert plugin.npu_network_plan(NODES, cidr='10.20.0.0/16', gateway='first') == \
        plan_network(NODES, cidr='10.20.0.0/16', gateway='first')
    plain = [dict(node, explicit={}) for node in NODES]
    assert plugin.npu_network_plan(plain, per_card_subnets=['192.168.100.0/24'], netmask='255.255.255.0') == \
        plan_network(plain, per_card_subnets=['192.168.100.0/24'], netmask='255.255.255.0')


def test_a_plan_that_cannot_work_is_a_filter_error_naming_the_variable():
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.npu_network_plan(NODES, cidr='10.0.0.0/8')
    assert str(raised.value) == (
        'npu_network_plan: npu_network_cidr 10.0.0.0/8 overlaps the interface address 10.0.0.11/24 of host node1: the '
        'NPU (RoCE) network must not be a host network; npu_network_cidr 10.0.0.0/8 overlaps the interface address '
        '10.0.0.12/24 of host node2: the NPU (RoCE) network must not be a host network')


@pytest.mark.parametrize('plan, message', [
    ({'cidr': '127.0.0.0/24'}, 'npu_network_plan: npu_network_cidr 127.0.0.0/24 is in the loopback network 127.0.0.0/8, '
                               'which is not for NIC addresses'),
    ({'per_card_subnets': ['192.168.100.0/24', '169.254.0.0/24']},
     'npu_network_plan: npu_network_per_card_subnets[1] 169.254.0.0/24 is in the link-local network 169.254.0.0/16'),
    ({'cidr': '192.168.100.0/24', 'netmask': '0'}, "npu_network_plan: npu_network_netmask '0' is not a netmask (prefix 0"),
    ({'cidr': '192.168.100.0/24', 'netmask': '0.0.0.0'},
     "npu_network_plan: npu_network_netmask '0.0.0.0' is not a netmask (0.0.0.0 would put"),
])
def test_a_network_not_for_hosts_or_netmask_0_is_refused_by_the_variable_set(plan, message):
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.npu_network_plan([{'name': 'node1', 'npu_count': 8}], **plan)
    assert str(raised.value).startswith(message)


def test_without_netaddr_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(_network_plan, 'HAS_NETADDR', False)
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.npu_network_plan(NODES, cidr='10.20.0.0/16')
    assert str(raised.value) == ('npu_network_plan: the Python library netaddr is missing on the controller: install it '
                                 'in the Python that runs Ansible (pip install netaddr)')


def run_ansible_debug(expression, variables):
    return ansible_debug(expression, variables)


def test_through_a_template():
    result = run_ansible_debug("nodes | kunpeng_ascend.vllm.npu_network_plan(per_card_subnets=subnets, gateway='first')",
                               {'nodes': NODES[:1], 'subnets': ['192.168.100.0/24', '192.168.101.0/24']})
    assert result['msg'] == {'node2': [
        {'device': card, 'address': '192.168.%d.%d' % (100 + card % 2, 2 + card // 2), 'netmask': '255.255.255.0',
         'prefix': 24, 'gateway': '192.168.%d.1' % (100 + card % 2)} for card in range(8)]}


def test_an_error_through_a_template_names_the_variable():
    result = run_ansible_debug('nodes | kunpeng_ascend.vllm.npu_network_plan(cidr=cidr)',
                               {'nodes': NODES, 'cidr': '10.20.0.0/28'})
    assert result['failed'] is True
    assert ('npu_network_plan: npu_network_cidr 10.20.0.0/28 is too small: the 2 node(s) need 15 address(es) there '
            'but it has 13 free (the network and broadcast addresses, 1 taken by npu_network_addresses); give a wider '
            'range') in result['msg']


def test_the_documentation_sidecar():
    with open(os.path.join(FILTER_DIR, 'npu_network_plan.yml'), encoding='utf-8') as sidecar:
        docs = yaml.safe_load(sidecar)
    assert set(docs) == {'DOCUMENTATION', 'EXAMPLES', 'RETURN'}
    assert docs['DOCUMENTATION']['name'] == 'npu_network_plan'
    assert set(docs['DOCUMENTATION']['options']) == {'_input', 'cidr', 'per_card_subnets', 'netmask', 'gateway'}
    assert 'kunpeng_ascend.vllm.npu_network_plan' in docs['EXAMPLES']
    sample = docs['RETURN']['_value']['sample']
    assert plugin.npu_network_plan([{'name': 'node1', 'npu_count': 2}, {'name': 'node2', 'npu_count': 1}],
                                   cidr='10.20.0.0/16') == sample


def test_the_documented_atlas_800_example():
    nodes = [{'name': 'node1', 'npu_count': 8, 'host_addresses': ['10.0.0.11/24']},
             {'name': 'node2', 'npu_count': 8, 'host_addresses': ['10.0.0.12/24'], 'explicit': {0: '192.168.100.200'}}]
    plan = plugin.npu_network_plan(nodes, per_card_subnets=['192.168.100.0/24', '192.168.101.0/24',
                                                            '192.168.102.0/24', '192.168.103.0/24'], gateway='first')
    addresses = {name: [entry['address'] for entry in entries] for name, entries in plan.items()}
    # As the comments of the example in npu_network_plan.yml say.
    assert addresses['node1'][:2] + [addresses['node1'][4]] == ['192.168.100.2', '192.168.101.2', '192.168.100.3']
    assert addresses['node2'][:2] + [addresses['node2'][4]] == ['192.168.100.200', '192.168.101.4', '192.168.100.4']
    assert {entry['gateway'] for entry in plan['node1']} == {'192.168.%d.1' % third for third in range(100, 104)}
