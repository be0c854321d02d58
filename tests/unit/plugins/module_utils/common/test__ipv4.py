# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The NPU network's IPv4 rules: a netmask read strictly (every prefix and every dotted mask, and what is neither),
and the networks no NIC address comes from."""

from __future__ import annotations

import ipaddress

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._ipv4 import (
    SPECIAL_NETWORKS,
    netmask_prefix,
    netmask_text,
    special_network,
)


@pytest.mark.parametrize('prefix', range(1, 33))
def test_every_prefix_and_its_dotted_mask_read_the_same(prefix):
    dotted = str(ipaddress.IPv4Network('0.0.0.0/%d' % prefix).netmask)
    for value in (prefix, str(prefix), '/%d' % prefix, ' %d ' % prefix, dotted, ' %s\n' % dotted):
        assert netmask_prefix(value) == prefix
    assert netmask_text(prefix) == dotted


@pytest.mark.parametrize('bit', range(32))
def test_a_mask_with_a_hole_or_a_stray_bit_is_refused(bit):
    """Every mask one bit away from a contiguous one that is not itself contiguous."""
    for prefix in range(1, 33):
        mask = (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF ^ (1 << bit)
        text = str(ipaddress.IPv4Address(mask))
        inverted = 0xFFFFFFFF ^ mask
        if mask and not inverted & (inverted + 1):
            assert netmask_prefix(text) == 32 - inverted.bit_length()
        else:
            with pytest.raises(ValueError):
                netmask_prefix(text)


@pytest.mark.parametrize('value', [0, '0', '/0', '00', '0.0.0.0', 33, '64', -1, '-1', '+24', '24.0', 24.0, True, False,
                                   None, [], {}, '', ' ', '/', '//24', '24/', '0x18', '255.255.255', '255.255.255.0.0',
                                   '255.255.255.0/24', '255.255.255.00', '0255.255.255.0', '256.0.0.0', '0.0.0.255',
                                   '255.0.255.0', '\u0662\u0664', '２４', '255.255.255.0\x00', 'ff.ff.ff.0'])
def test_what_is_not_a_netmask_is_refused_saying_why(value):
    with pytest.raises(ValueError) as raised:
        netmask_prefix(value)
    assert str(raised.value)


@pytest.mark.parametrize('network', [network for network, _name in SPECIAL_NETWORKS])
def test_each_special_network_is_named_at_its_edges_and_not_just_outside(network):
    first, last = int(network.network_address), int(network.broadcast_address)
    name = special_network(first, first)
    assert name and name == special_network(last, last) and str(network) in name
    if first > 0:
        assert special_network(first - 1, first - 1) != name
    if last < 0xFFFFFFFF:
        assert special_network(last + 1, last + 1) != name


@pytest.mark.parametrize('address', ['10.0.0.1', '172.16.0.1', '192.168.100.2', '29.1.137.205', '100.64.0.1',
                                     '1.0.0.0', '126.255.255.255', '128.0.0.0', '169.253.255.255', '169.255.0.0',
                                     '223.255.255.255'])
def test_host_addresses_are_no_special_network(address):
    value = ipaddress.IPv4Address(address)
    assert special_network(value, value) is None
