# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The NPU network plan: examples, every rejection, and properties over many random inventories (fixed seeds)."""

from __future__ import annotations

import ipaddress
import random
import re

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._hccn_tool import validate_devices
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._network_plan import (
    MAX_DEVICES,
    NetworkPlanError,
    plan_network,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

CARD_SUBNETS = ['192.168.%d.0/24' % (100 + card) for card in range(8)]
ATLAS_800_SUBNETS = CARD_SUBNETS[:4]


def nic(device, address, prefix, gateway=None):
    entry = {'device': device, 'address': address, 'netmask': str(ipaddress.ip_network('0.0.0.0/%d' % prefix).netmask),
             'prefix': prefix}
    if gateway is not None:
        entry['gateway'] = gateway
    return entry


def problems(nodes, **plan):
    with pytest.raises(NetworkPlanError) as raised:
        plan_network(nodes, **plan)
    assert str(raised.value) == '; '.join(raised.value.problems)
    return raised.value.problems


def the_problem(nodes, **plan):
    found = problems(nodes, **plan)
    assert len(found) == 1, found
    return found[0]


def a2(name, **extra):
    return dict({'name': name, 'npu_count': 8}, **extra)


# ------------------------------------------------------------------------------------------------------ examples

def test_two_a2_nodes_with_a_subnet_per_card():
    plan = plan_network([a2('node2', host_addresses=['10.0.0.12/24']), a2('node1', host_addresses=['10.0.0.11/24'])],
                        per_card_subnets=CARD_SUBNETS)
    assert plan == {
        'node1': [nic(card, '192.168.%d.1' % (100 + card), 24) for card in range(8)],
        'node2': [nic(card, '192.168.%d.2' % (100 + card), 24) for card in range(8)],
    }
    assert list(plan) == ['node1', 'node2']


def test_the_atlas_800_plan_puts_cards_0_to_3_and_4_to_7_on_matching_subnets():
    plan = plan_network([a2('node1'), a2('node2')], per_card_subnets=ATLAS_800_SUBNETS, gateway='first')
    assert plan['node1'] == [nic(card, '192.168.%d.%d' % (100 + card % 4, 2 + card // 4), 24,
                                 '192.168.%d.1' % (100 + card % 4)) for card in range(8)]
    assert plan['node2'] == [nic(card, '192.168.%d.%d' % (100 + card % 4, 4 + card // 4), 24,
                                 '192.168.%d.1' % (100 + card % 4)) for card in range(8)]


def test_two_a2_nodes_on_one_16():
    plan = plan_network([a2('node2'), a2('node1')], cidr='10.20.0.0/16')
    assert plan == {'node1': [nic(card, '10.20.0.%d' % (1 + card), 16) for card in range(8)],
                    'node2': [nic(card, '10.20.0.%d' % (9 + card), 16) for card in range(8)]}


def test_the_allocation_crosses_octets_and_skips_the_gateway():
    plan = plan_network([{'name': 'n%02d' % number, 'npu_count': 16} for number in range(17)],
                        cidr='10.20.0.0/16', gateway='10.20.1.0')
    # n00-n14 hold 10.20.0.1-240; n15 ends the octet and skips the gateway 10.20.1.0.
    assert [entry['address'] for entry in plan['n15'][-2:]] == ['10.20.0.255', '10.20.1.1']
    assert plan['n16'][0]['address'] == '10.20.1.2'
    assert {entry['gateway'] for entries in plan.values() for entry in entries} == {'10.20.1.0'}


def test_gateway_last_and_a_list_of_gateways():
    assert plan_network([{'name': 'a', 'npu_count': 1}], cidr='10.20.0.0/24', gateway='last') == {
        'a': [nic(0, '10.20.0.1', 24, '10.20.0.254')]}
    plan = plan_network([{'name': 'a', 'npu_count': 2}], per_card_subnets=CARD_SUBNETS[:2],
                        gateway=['192.168.100.1', '192.168.101.254'])
    assert plan == {'a': [nic(0, '192.168.100.2', 24, '192.168.100.1'), nic(1, '192.168.101.1', 24, '192.168.101.254')]}


def test_a_netmask_wider_than_the_range():
    plan = plan_network([{'name': 'a', 'npu_count': 2}], cidr='10.20.11.0/24', netmask='255.255.0.0', gateway='first')
    # 10.20.11.0 is a host address of 10.20.0.0/16; the gateway is that network's first host, outside the range.
    assert plan == {'a': [nic(0, '10.20.11.0', 16, '10.20.0.1'), nic(1, '10.20.11.1', 16, '10.20.0.1')]}
    assert plan_network([{'name': 'a', 'npu_count': 1}], cidr='10.20.11.0/24', netmask=16) == \
        plan_network([{'name': 'a', 'npu_count': 1}], cidr='10.20.11.0/24', netmask='/16')


def test_per_card_subnets_sharing_one_wider_network():
    plan = plan_network([{'name': 'a', 'npu_count': 2}], per_card_subnets=['10.20.0.0/24', '10.20.1.0/24'],
                        netmask='16')
    assert plan == {'a': [nic(0, '10.20.0.1', 16), nic(1, '10.20.1.0', 16)]}


def test_a_gateway_in_another_cards_range_is_never_a_nic_address():
    # Both cards on 10.20.0.0/16; card 0's gateway lies in card 1's range.
    plan = plan_network([{'name': 'a', 'npu_count': 2}, {'name': 'b', 'npu_count': 2}],
                        per_card_subnets=['10.20.0.0/24', '10.20.1.0/30'], netmask=16,
                        gateway=['10.20.1.1', '10.20.0.1'])
    assert [(entry['address'], entry['gateway']) for entry in plan['a'] + plan['b']] == [
        ('10.20.0.2', '10.20.1.1'), ('10.20.1.0', '10.20.0.1'), ('10.20.0.3', '10.20.1.1'), ('10.20.1.2', '10.20.0.1')]
    assert the_problem([{'name': 'a', 'npu_count': 2, 'explicit': {1: '10.20.1.1'}}],
                       per_card_subnets=['10.20.0.0/24', '10.20.1.0/30'], netmask=16,
                       gateway=['10.20.1.1', '10.20.0.1']) == (
        'npu_network_addresses of host a, device 1: 10.20.1.1 is the gateway of npu_network_per_card_subnets[0] '
        '10.20.0.0/24 (npu_network_gateway)')
    assert the_problem([{'name': name, 'npu_count': 2} for name in 'abc'],
                       per_card_subnets=['10.20.0.0/24', '10.20.1.0/30'], netmask=16,
                       gateway=['10.20.1.1', '10.20.1.2']) == (
        'npu_network_per_card_subnets[1] 10.20.1.0/30 is too small: the 3 node(s) need 3 address(es) there but it '
        'has 2 free (the network and broadcast addresses of 10.20.0.0/16, 2 gateways); give a wider range')


def test_explicit_addresses_from_a_real_hccn_conf_are_kept_and_reserved():
    conf = dict(re.findall(r'^address_(\d+)=(\S+)$', load_fixture('hccn.conf_8npu_address-netmask-only.txt'), re.M))
    assert len(conf) == 8
    nodes = [{'name': 'b', 'npu_count': 8}, {'name': 'c', 'npu_count': 8}, a2('a', explicit=conf)]
    plan = plan_network(nodes, cidr='10.20.11.0/24')
    assert plan['a'] == [nic(card, '10.20.11.%d' % (11 + card), 24) for card in range(8)]
    assert [entry['address'] for entry in plan['b']] == ['10.20.11.%d' % host for host in range(1, 9)]
    assert [entry['address'] for entry in plan['c']] == ['10.20.11.%d' % host for host in (9, 10, 19, 20, 21, 22,
                                                                                           23, 24)]


def test_an_explicit_prefix_and_integer_device_keys():
    plan = plan_network([{'name': 'a', 'npu_count': 3, 'explicit': {1: '10.20.0.1/24', '2': ' 10.20.9.9 '}}],
                        cidr='10.20.0.0/16')
    assert plan == {'a': [nic(0, '10.20.0.2', 16), nic(1, '10.20.0.1', 24), nic(2, '10.20.9.9', 16)]}


def test_an_explicit_address_outside_the_range_but_inside_the_network():
    plan = plan_network([{'name': 'a', 'npu_count': 1, 'explicit': {0: '10.20.200.7'}}], cidr='10.20.11.0/24',
                        netmask=16)
    assert plan == {'a': [nic(0, '10.20.200.7', 16)]}


def test_device_ids_npu_count_zero_and_ipv6_host_addresses():
    plan = plan_network([{'name': 'b', 'devices': [6, 2], 'npu_count': 2, 'host_addresses': ['fe80::1/64', '::1']},
                         {'name': 'a', 'npu_count': 0, 'host_addresses': []}], per_card_subnets=ATLAS_800_SUBNETS)
    assert plan == {'a': [], 'b': [nic(2, '192.168.102.1', 24), nic(6, '192.168.102.2', 24)]}


def test_indexed_nodes_come_first_by_index_then_the_others_by_name():
    plan = plan_network([{'name': 'a', 'npu_count': 1}, {'name': 'z', 'npu_count': 1, 'index': 1},
                         {'name': 'm', 'npu_count': 1, 'index': 0}, {'name': 'b', 'npu_count': 1}],
                        cidr='10.20.0.0/24')
    assert {name: entries[0]['address'] for name, entries in plan.items()} == {
        'm': '10.20.0.1', 'z': '10.20.0.2', 'a': '10.20.0.3', 'b': '10.20.0.4'}


def test_a_range_that_fits_exactly():
    assert len(plan_network([{'name': 'a', 'npu_count': 6}], cidr='10.20.0.0/29')['a']) == 6
    assert plan_network([{'name': 'a', 'npu_count': 1}], cidr='10.20.0.0/30', gateway='first') == {
        'a': [nic(0, '10.20.0.2', 30, '10.20.0.1')]}


# ---------------------------------------------------------------------------------------------------- rejections

@pytest.mark.parametrize('plan, message', [
    ({}, 'give either npu_network_cidr (one range for every NPU NIC) or npu_network_per_card_subnets (one range per '
         'card), none is set'),
    ({'cidr': '', 'per_card_subnets': []}, 'give either npu_network_cidr (one range for every NPU NIC) or '
                                           'npu_network_per_card_subnets (one range per card), none is set'),
    ({'cidr': '10.20.0.0/16', 'per_card_subnets': CARD_SUBNETS},
     'give either npu_network_cidr (one range for every NPU NIC) or npu_network_per_card_subnets (one range per '
     'card), not both'),
    ({'per_card_subnets': '192.168.100.0/24'},
     'npu_network_per_card_subnets must be a list of ranges such as [192.168.100.0/24, 192.168.101.0/24], not str'),
])
def test_the_plan_must_be_one_of_cidr_and_per_card_subnets(plan, message):
    assert the_problem([a2('a')], **plan) == message


@pytest.mark.parametrize('value', ['10.20.0.0', '10.20.0.0/33', '2001:db8::/64', '010.20.0.0/16', 'ten/8',
                                   '10.20.0/16', 16, None])
def test_a_range_that_is_not_ipv4_with_a_prefix(value):
    assert the_problem([a2('a')], per_card_subnets=[CARD_SUBNETS[0], value]) == (
        'npu_network_per_card_subnets[1] %r is not an IPv4 range a.b.c.d/prefix such as 10.20.0.0/16' % (value,))


def test_a_range_with_host_bits_set():
    assert the_problem([a2('a')], cidr=' 10.20.3.4/16') == (
        'npu_network_cidr 10.20.3.4/16 has host bits set: the range is 10.20.0.0/16')


NETMASK_HELP = 'give a prefix length from 1 to 32 (such as 24) or a dotted netmask such as 255.255.255.0'


@pytest.mark.parametrize('netmask, why', [
    ('0', "prefix 0 would put every address on the NIC's network"),
    (0, "prefix 0 would put every address on the NIC's network"),
    ('/0', "prefix 0 would put every address on the NIC's network"),
    ('00', "prefix 0 would put every address on the NIC's network"),
    ('0.0.0.0', "0.0.0.0 would put every address on the NIC's network"),
    (' 0.0.0.0 ', "0.0.0.0 would put every address on the NIC's network"),
    ('255.0.255.0', 'its ones do not all come first'),
    ('0.0.0.255', 'its ones do not all come first'),           # a hostmask
    ('255.255.255.1', 'its ones do not all come first'),
    ('128.0.0.1', 'its ones do not all come first'),
    (33, 'an IPv4 prefix length is at most 32'),
    ('99', 'an IPv4 prefix length is at most 32'),
    ('wide', 'neither a prefix length nor a dotted netmask'),
    ('0.0.0', 'neither a prefix length nor a dotted netmask'),
    ('255.255.255.256', 'neither a prefix length nor a dotted netmask'),
    ('255.255.0.0/16', 'neither a prefix length nor a dotted netmask'),
    ('-16', 'neither a prefix length nor a dotted netmask'),
    ('016.0.0.0', 'neither a prefix length nor a dotted netmask'),
    ('\u0661\u0666', 'neither a prefix length nor a dotted netmask'),    # Arabic-Indic digits 16
    (True, 'a netmask is a number or a text, not bool'),
    (16.0, 'a netmask is a number or a text, not float'),
    ([16], 'a netmask is a number or a text, not list'),
])
def test_a_netmask_that_is_not_one(netmask, why):
    assert the_problem([a2('a')], cidr='10.20.0.0/16', netmask=netmask) == (
        'npu_network_netmask %r is not a netmask (%s): %s' % (netmask, why, NETMASK_HELP))


@pytest.mark.parametrize('netmask, prefix', [(16, 16), ('16', 16), ('/16', 16), (' 255.255.0.0 ', 16), ('8', 8),
                                             ('255.0.0.0', 8), ('255.255.254.0', 23), (24, 24)])
def test_a_netmask_is_read_strictly_as_a_prefix_or_a_contiguous_mask(netmask, prefix):
    plan = plan_network([{'name': 'a', 'npu_count': 1}], cidr='10.20.11.0/24', netmask=netmask)
    assert plan['a'][0]['prefix'] == prefix


SPECIAL = [
    ('127.0.0.0/24', 'the loopback network 127.0.0.0/8'),
    ('127.1.2.0/30', 'the loopback network 127.0.0.0/8'),
    ('0.0.0.0/8', 'the unspecified network 0.0.0.0/8'),
    ('0.0.0.0/0', 'the unspecified network 0.0.0.0/8'),
    ('0.0.0.0/1', 'the unspecified network 0.0.0.0/8'),
    ('64.0.0.0/2', 'the loopback network 127.0.0.0/8'),
    ('169.254.0.0/16', 'the link-local network 169.254.0.0/16'),
    ('169.254.10.0/24', 'the link-local network 169.254.0.0/16'),
    ('169.0.0.0/8', 'the link-local network 169.254.0.0/16'),
    ('224.0.0.0/24', 'the multicast network 224.0.0.0/4'),
    ('239.255.0.0/16', 'the multicast network 224.0.0.0/4'),
    ('240.0.0.0/24', 'the reserved network 240.0.0.0/4 (with the broadcast address 255.255.255.255)'),
    ('255.255.255.0/24', 'the reserved network 240.0.0.0/4 (with the broadcast address 255.255.255.255)'),
    ('255.255.255.255/32', 'the reserved network 240.0.0.0/4 (with the broadcast address 255.255.255.255)'),
    ('192.0.0.0/2', 'the multicast network 224.0.0.0/4'),
]
PRIVATE_HELP = 'give a private range such as 10.20.0.0/16, 172.16.0.0/16 or 192.168.100.0/24'


@pytest.mark.parametrize('cidr, special', SPECIAL)
def test_a_range_that_is_not_for_hosts_is_refused_naming_the_variable(cidr, special):
    assert the_problem([a2('a')], cidr=cidr) == (
        'npu_network_cidr %s is in %s, which is not for NIC addresses: %s' % (cidr, special, PRIVATE_HELP))


@pytest.mark.parametrize('cidr, special', SPECIAL)
def test_a_card_subnet_that_is_not_for_hosts_is_refused_naming_its_entry(cidr, special):
    found = problems([a2('a')], per_card_subnets=['10.20.0.0/24', cidr])
    assert found[0] == ('npu_network_per_card_subnets[1] %s is in %s, which is not for NIC addresses: %s'
                        % (cidr, special, PRIVATE_HELP))


@pytest.mark.parametrize('cidr, netmask, network, special', [
    ('10.0.0.0/24', 1, '0.0.0.0/1', 'the unspecified network 0.0.0.0/8'),
    ('126.255.255.0/24', 7, '126.0.0.0/7', 'the loopback network 127.0.0.0/8'),
    ('169.0.0.0/24', '255.0.0.0', '169.0.0.0/8', 'the link-local network 169.254.0.0/16'),
    ('192.168.0.0/24', '128.0.0.0', '128.0.0.0/1', 'the link-local network 169.254.0.0/16'),
])
def test_a_netmask_that_widens_the_network_into_one_not_for_hosts_is_refused(cidr, netmask, network, special):
    assert the_problem([a2('a')], cidr=cidr, netmask=netmask) == (
        'the NIC network %s of npu_network_cidr %s (npu_network_netmask %s) reaches %s: give a longer '
        'npu_network_netmask' % (network, cidr, netmask, special))


@pytest.mark.parametrize('address', ['10.20.0.9/0', '10.20.0.9/00'])
def test_an_explicit_address_with_prefix_0_is_refused(address):
    assert the_problem([a2('a', explicit={0: address})], cidr='10.20.0.0/16') == (
        "npu_network_addresses of host a, device 0: %r has no usable netmask (prefix 0 would put every address on the "
        "NIC's network): %s" % (address, NETMASK_HELP))


def test_a_netmask_narrower_than_the_range():
    assert the_problem([a2('a')], cidr='10.20.0.0/16', netmask='255.255.255.0') == (
        'npu_network_cidr 10.20.0.0/16 is wider than the NIC network /24 of npu_network_netmask: the netmask must '
        'hold the whole range')


def test_overlapping_subnets_are_named_in_pairs():
    assert problems([a2('a')], per_card_subnets=['10.1.0.0/24', '10.2.0.0/24', '10.1.0.0/25', '10.2.0.0/24']) == [
        'npu_network_per_card_subnets[2] 10.1.0.0/25 overlaps npu_network_per_card_subnets[0] 10.1.0.0/24: the ranges '
        'must be disjoint',
        'npu_network_per_card_subnets[3] 10.2.0.0/24 overlaps npu_network_per_card_subnets[1] 10.2.0.0/24: the ranges '
        'must be disjoint']


def test_a_range_too_small_says_how_many_are_needed_and_how_many_fit():
    assert the_problem([a2('a'), a2('b')], cidr='10.20.0.0/28') == (
        'npu_network_cidr 10.20.0.0/28 is too small: the 2 node(s) need 16 address(es) there but it has 14 free '
        '(the network and broadcast addresses); give a wider range')
    assert the_problem([{'name': 'a', 'npu_count': 7}], cidr='10.20.0.0/29') == (
        'npu_network_cidr 10.20.0.0/29 is too small: the 1 node(s) need 7 address(es) there but it has 6 free '
        '(the network and broadcast addresses); give a wider range')


def test_too_small_counts_the_gateway_and_the_explicit_addresses():
    nodes = [{'name': 'a', 'npu_count': 4}, {'name': 'b', 'npu_count': 2, 'explicit': {0: '10.20.0.3'}}]
    assert the_problem(nodes, cidr='10.20.0.0/29', gateway='first') == (
        'npu_network_cidr 10.20.0.0/29 is too small: the 2 node(s) need 5 address(es) there but it has 4 free '
        '(the network and broadcast addresses, the gateway, 1 taken by npu_network_addresses); give a wider range')


def test_too_small_per_card_names_the_subnet():
    nodes = [{'name': 'n%d' % number, 'npu_count': 8} for number in range(4)]
    assert the_problem(nodes, per_card_subnets=['10.1.0.0/24', '10.2.0.0/29'], netmask=None) == (
        'npu_network_per_card_subnets[1] 10.2.0.0/29 is too small: the 4 node(s) need 16 address(es) there but it has '
        '6 free (the network and broadcast addresses); give a wider range')


@pytest.mark.parametrize('cidr', ['10.20.0.0/31', '10.20.0.0/32'])
def test_ranges_without_host_addresses(cidr):
    assert 'has 0 free' in the_problem([{'name': 'a', 'npu_count': 1}], cidr=cidr)


@pytest.mark.parametrize('host, message', [
    ('10.20.3.4', 'npu_network_cidr 10.20.0.0/16 overlaps the interface address 10.20.3.4 of host b: the NPU (RoCE) '
                  'network must not be a host network'),
    ('10.0.0.9/8', 'npu_network_cidr 10.20.0.0/16 overlaps the interface address 10.0.0.9/8 of host b: the NPU (RoCE) '
                   'network must not be a host network'),
    ('10.20.200.1/24', 'npu_network_cidr 10.20.0.0/16 overlaps the interface address 10.20.200.1/24 of host b: the NPU '
                       '(RoCE) network must not be a host network'),
])
def test_a_host_interface_network_must_not_touch_the_npu_network(host, message):
    assert the_problem([a2('a'), a2('b', host_addresses=['192.168.1.5/24', host])], cidr='10.20.0.0/16') == message


def test_a_widened_network_must_not_touch_a_host_network():
    assert the_problem([a2('a', host_addresses=['10.20.99.1/24'])], cidr='10.20.11.0/24', netmask=16) == (
        'the NIC network 10.20.0.0/16 of npu_network_cidr 10.20.11.0/24 overlaps the interface address 10.20.99.1/24 '
        'of host a: the NPU (RoCE) network must not be a host network')


@pytest.mark.parametrize('explicit, message', [
    ({0: '10.21.0.1'}, 'device 0: 10.21.0.1 is outside 10.20.0.0/16, the NIC network of npu_network_cidr '
                       '10.20.0.0/16'),
    ({1: '10.20.0.0'}, 'device 1: 10.20.0.0 is the network or broadcast address of 10.20.0.0/16'),
    ({1: '10.20.255.255'}, 'device 1: 10.20.255.255 is the network or broadcast address of 10.20.0.0/16'),
    ({1: '10.20.0.255/24'}, 'device 1: 10.20.0.255 is the network or broadcast address of 10.20.0.0/24'),
    ({1: '10.20.0.1'}, 'device 1: 10.20.0.1 is the gateway of npu_network_cidr 10.20.0.0/16 (npu_network_gateway)'),
    ({1: '10.20.9.9/24'}, 'device 1: the gateway 10.20.0.1 of npu_network_gateway is outside 10.20.9.9/24'),
    ({8: '10.20.0.9'}, "device 8 is not one of the node's NPUs [0, 1, 2, 3, 4, 5, 6, 7]"),
    ({'eth0': '10.20.0.9'}, "key 'eth0' is not an NPU device id"),
    ({True: '10.20.0.9'}, 'key True is not an NPU device id'),
    ({0: '10.20.0.9/40'}, "device 0: '10.20.0.9/40' is not an address a.b.c.d or a.b.c.d/prefix"),
    ({0: 5}, 'device 0: 5 is not an address a.b.c.d or a.b.c.d/prefix'),
])
def test_a_wrong_explicit_address_names_the_host_and_device(explicit, message):
    assert the_problem([a2('a'), a2('b', explicit=explicit)], cidr='10.20.0.0/16', gateway='first') == (
        'npu_network_addresses of host b, ' + message)


def test_explicit_addresses_must_be_a_dict():
    assert the_problem([a2('b', explicit=['10.20.0.9'])], cidr='10.20.0.0/16') == (
        'npu_network_addresses of host b must be a dict {device id: address or address/prefix}, not list')


def test_an_explicit_address_outside_its_card_subnet():
    assert the_problem([a2('b', explicit={4: '192.168.101.9'})], per_card_subnets=ATLAS_800_SUBNETS) == (
        'npu_network_addresses of host b, device 4: 192.168.101.9 is outside 192.168.100.0/24, the NIC network of '
        'npu_network_per_card_subnets[0] 192.168.100.0/24')


def test_an_explicit_address_given_twice():
    assert the_problem([a2('b', explicit={3: '10.20.0.9'}), a2('a', explicit={5: '10.20.0.9', 6: '10.20.0.10'})],
                       cidr='10.20.0.0/16') == (
        'npu_network_addresses: 10.20.0.9 is given to both host a device 5 and host b device 3')


def test_an_explicit_prefix_that_reaches_a_host_network():
    assert the_problem([a2('a', host_addresses=['10.21.0.1/16']), a2('b', explicit={0: '10.20.0.9/8'})],
                       cidr='10.20.0.0/16') == (
        'npu_network_addresses of host b, device 0: 10.20.0.9/8 overlaps the interface address 10.21.0.1/16 of host a')


@pytest.mark.parametrize('plan, message', [
    ({'cidr': '10.20.0.0/16', 'gateway': 'gw'}, "npu_network_gateway 'gw' is not an IPv4 address, first or last"),
    ({'cidr': '10.20.0.0/16', 'gateway': '10.21.0.1'},
     'npu_network_gateway 10.21.0.1 is not a host address of the NIC network 10.20.0.0/16 of npu_network_cidr '
     '10.20.0.0/16'),
    ({'cidr': '10.20.0.0/16', 'gateway': '10.20.255.255'},
     'npu_network_gateway 10.20.255.255 is not a host address of the NIC network 10.20.0.0/16 of npu_network_cidr '
     '10.20.0.0/16'),
    ({'cidr': '10.20.0.0/16', 'gateway': ['10.20.0.1']},
     'npu_network_gateway: with npu_network_cidr give first, last or one address, not a list'),
    ({'per_card_subnets': ATLAS_800_SUBNETS, 'gateway': ['192.168.100.1']},
     'npu_network_gateway as a list needs one address per range of npu_network_per_card_subnets: 4, not 1'),
    ({'per_card_subnets': ATLAS_800_SUBNETS, 'gateway': '192.168.100.1'},
     "npu_network_gateway '192.168.100.1': with npu_network_per_card_subnets give first, last or a list of one "
     "address per range"),
    ({'cidr': '10.20.0.0/31', 'gateway': 'first'},
     'npu_network_gateway first: the NIC network 10.20.0.0/31 of npu_network_cidr 10.20.0.0/31 has no room for a '
     'gateway'),
])
def test_a_wrong_gateway(plan, message):
    assert problems([{'name': 'a', 'npu_count': 0}], **plan) == [message]


@pytest.mark.parametrize('nodes, message', [
    ('node1', 'the nodes must be a list of dicts (name, npu_count or devices, host_addresses, explicit), not str'),
    ([['node1', 8]], "node 0 of the list: a node is a dict with a non-empty name, not ['node1', 8]"),
    ([{'npu_count': 8}], "node 0 of the list: a node is a dict with a non-empty name, not {'npu_count': 8}"),
    ([a2('a'), a2('a')], 'host a is in the node list twice'),
    ([a2('a', ip='1.2.3.4')], 'host a: unknown key(s) ip; the keys are name, npu_count, devices, host_addresses, '
                              'explicit, index'),
    ([{'name': 'a'}], 'host a: give npu_count or devices (its NPU device ids)'),
    ([{'name': 'a', 'npu_count': '8'}], "host a: npu_count must be a whole number from 0 to 64, not '8'"),
    ([{'name': 'a', 'npu_count': -1}], 'host a: npu_count must be a whole number from 0 to 64, not -1'),
    ([{'name': 'a', 'npu_count': True}], 'host a: npu_count must be a whole number from 0 to 64, not True'),
    ([{'name': 'a', 'npu_count': MAX_DEVICES + 1}], 'host a: npu_count must be a whole number from 0 to 64, not 65'),
    ([{'name': 'a', 'devices': [0, 0]}], 'host a: devices must be a list of distinct NPU device ids from 0 to 63, '
                                         'not [0, 0]'),
    ([{'name': 'a', 'devices': [64]}], 'host a: devices must be a list of distinct NPU device ids from 0 to 63, '
                                       'not [64]'),
    ([{'name': 'a', 'devices': '0,1'}], "host a: devices must be a list of distinct NPU device ids from 0 to 63, "
                                        "not '0,1'"),
    ([{'name': 'a', 'devices': [0, 1], 'npu_count': 8}], 'host a: npu_count 8 disagrees with the 2 devices [0, 1]'),
    ([a2('a', host_addresses='10.0.0.1')], "host a: host_addresses must be a list of the host's interface addresses, "
                                           "not str"),
    ([a2('a', host_addresses=['eth0'])], "host a: host_addresses item 'eth0' is not an address a.b.c.d or "
                                         "a.b.c.d/prefix"),
    ([a2('a', host_addresses=['fe80::zz'])], "host a: host_addresses item 'fe80::zz' is not an address a.b.c.d or "
                                             "a.b.c.d/prefix"),
    ([a2('a', index=-1)], 'npu_network_index of host a must be a whole number from 0, not -1'),
    ([a2('a', index='1')], "npu_network_index of host a must be a whole number from 0, not '1'"),
    ([a2('a', index=1), a2('b', index=1)], 'npu_network_index 1 is given to both host a and host b'),
])
def test_a_wrong_node(nodes, message):
    assert problems(nodes, cidr='10.20.0.0/16') == [message]


def test_every_problem_of_the_inputs_is_reported_at_once():
    found = problems([a2('a', host_addresses=['10.20.0.1/24']), a2('b', explicit={9: '10.20.0.9'})],
                     cidr='10.20.0.0/16', gateway='nowhere')
    assert [problem.split(' ')[0] for problem in found] == [
        'npu_network_gateway', 'npu_network_addresses', 'npu_network_cidr']


def test_a_traceback_never_replaces_a_message():
    for nodes in (None, 5, [None], [{'name': ''}], [{'name': 3}]):
        with pytest.raises(NetworkPlanError):
            plan_network(nodes, cidr='10.20.0.0/16')


# ---------------------------------------------------------------------------------------------------- properties

def random_inventory(rng):
    """A random plan that fits, and its nodes: host networks outside it, some explicit addresses, some indexes."""
    per_card = rng.random() < 0.5
    gateway = rng.choice([None, 'first', 'last'])
    if per_card:
        count = rng.randint(1, 8)
        prefix = rng.randint(22, 27)
        base = int(ipaddress.ip_address('192.168.0.0'))
        step = 2 ** (32 - prefix)
        starts = rng.sample(range(0, 2 ** 16, step), count)
        ranges = [ipaddress.ip_network((base + start, prefix)) for start in starts]
        plan = {'per_card_subnets': [str(network) for network in ranges]}
    else:
        prefix = rng.randint(18, 24)
        network = ipaddress.ip_network(('10.%d.0.0' % rng.randint(0, 255), 16)).subnets(new_prefix=prefix)
        ranges = [rng.choice(list(network))]
        plan = {'cidr': str(ranges[0])}
    if gateway:
        plan['gateway'] = gateway
    names = rng.sample(['node%d' % number for number in range(40)] + ['a', 'b', 'ascend-%s' % rng.random()],
                       rng.randint(1, 8))
    nodes, taken = [], set()
    for name in names:
        devices = sorted(rng.sample(range(16), rng.randint(0, 16)))
        host = '172.%d.%d.%d/%d' % (rng.randint(16, 31), rng.randint(0, 255), rng.randint(1, 254), rng.randint(16, 30))
        node = {'name': name, 'host_addresses': [host, '127.0.0.1/8', 'fe80::%x/64' % rng.randint(1, 9999)]}
        if rng.random() < 0.5:
            node['npu_count'], devices = len(devices), list(range(len(devices)))
        else:
            node['devices'] = list(reversed(devices))
        if rng.random() < 0.3:
            node['index'] = rng.randint(0, 1000)
        explicit = {}
        for device in devices:
            if rng.random() < 0.15:
                network = ranges[device % len(ranges)]
                address = str(network[rng.randint(2, network.num_addresses - 3)])
                if address not in taken:
                    taken.add(address)
                    explicit[rng.choice([device, str(device)])] = address
        if explicit:
            node['explicit'] = explicit
        nodes.append(node)
    indexes = [node['index'] for node in nodes if 'index' in node]
    for node in nodes:
        if 'index' in node and indexes.count(node['index']) > 1:
            del node['index']
    return nodes, plan, ranges


def devices_of(node):
    return sorted(node['devices']) if 'devices' in node else list(range(node['npu_count']))


def check_plan(nodes, plan, ranges, result):
    assert sorted(result) == sorted(node['name'] for node in nodes)
    addresses = [entry['address'] for entries in result.values() for entry in entries]
    assert len(addresses) == len(set(addresses))
    hosts = [ipaddress.ip_interface(host) for node in nodes for host in node['host_addresses'] if ':' not in host]
    for node in nodes:
        entries = result[node['name']]
        assert [entry['device'] for entry in entries] == devices_of(node)
        explicit = {int(device): address for device, address in node.get('explicit', {}).items()}
        for entry in entries:
            network = ranges[entry['device'] % len(ranges)]
            address = ipaddress.ip_address(entry['address'])
            if entry['device'] in explicit:
                assert entry['address'] == explicit[entry['device']]
            assert address in network
            assert address not in (network.network_address, network.broadcast_address)
            assert entry['prefix'] == network.prefixlen and entry['netmask'] == str(network.netmask)
            assert all(address != host.ip and address not in host.network for host in hosts)
            if plan.get('gateway'):
                assert entry['gateway'] == str(network[1] if plan['gateway'] == 'first' else network[-2])
                assert entry['address'] != entry['gateway']
            else:
                assert 'gateway' not in entry


@pytest.mark.parametrize('seed', range(60))
def test_random_inventories(seed):
    rng = random.Random(seed)
    nodes, plan, ranges = random_inventory(rng)
    result = plan_network(nodes, **plan)
    check_plan(nodes, plan, ranges, result)
    for _shuffle in range(3):
        shuffled = list(nodes)
        rng.shuffle(shuffled)
        assert plan_network(shuffled, **plan) == result
    # A node that sorts last (no index, a name after every other) leaves every other node's addresses unchanged.
    grown = plan_network(nodes + [{'name': 'zzz', 'npu_count': 8}], **plan)
    assert {name: entries for name, entries in grown.items() if name != 'zzz'} == result
    check_plan(nodes + [{'name': 'zzz', 'npu_count': 8, 'host_addresses': []}], plan, ranges, grown)


@pytest.mark.parametrize('seed', range(60))
def test_every_nic_the_plan_gives_hccn_tool_takes(seed):
    """The plan and module hccn_tool judge addresses and netmasks by the same rules: every NIC planned is a device
    entry hccn_tool accepts (as role npu_network passes it), so nothing is refused later under a name the user did
    not set."""
    nodes, plan, _ranges = random_inventory(random.Random(seed))
    for entries in plan_network(nodes, **plan).values():
        devices = [dict({'id': nic['device'], 'address': nic['address'], 'netmask': nic['netmask']},
                        **({'gateway': nic['gateway'], 'netdetect': nic['gateway']} if 'gateway' in nic else {}))
                   for nic in entries]
        checked = validate_devices(devices)
        assert [item['netmask'] for item in checked] == [nic['netmask'] for nic in entries]


@pytest.mark.parametrize('seed', range(20))
def test_random_inventories_that_do_not_fit_are_rejected_with_the_counts(seed):
    rng = random.Random(1000 + seed)
    nodes = [{'name': 'n%d' % number, 'npu_count': rng.randint(1, 16)} for number in range(rng.randint(1, 6))]
    total = sum(node['npu_count'] for node in nodes)
    prefix = 32 - (total + 1).bit_length()  # room for at most total - 1 addresses (or fewer)
    if (2 ** (32 - prefix)) - 2 >= total:
        prefix += 1
    message = the_problem(nodes, cidr='10.20.0.0/%d' % prefix)
    assert message.startswith('npu_network_cidr 10.20.0.0/%d is too small: the %d node(s) need %d address(es)'
                              % (prefix, len(nodes), total))
    assert 'has %d free' % max(2 ** (32 - prefix) - 2, 0) in message
