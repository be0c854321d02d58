# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The IPv4 rules of the NPU network, shared by its planner on the controller (_network_plan, filter npu_network_plan)
and module hccn_tool on the node, so that both refuse the same input under the name the user set:

* a netmask is read strictly - a prefix length from 1 to 32 (``24``, ``'24'``, ``'/24'``) or a dotted mask whose
  ones come first (``255.255.255.0``); ``0`` and ``0.0.0.0`` (every address on the NIC's network), a hostmask
  (``0.0.0.255``), a mask with holes (``255.0.255.0``), a boolean and anything else are refused;
* no NIC address, and no range NIC addresses come from, lies in a network that is not for hosts: unspecified
  (``0.0.0.0/8``), loopback, link-local, multicast, reserved (``240.0.0.0/4``, the broadcast address
  ``255.255.255.255`` with it).

Standard library only.
"""

from __future__ import annotations

import ipaddress
import re

# The networks no NIC address comes from, and how a message names each.
SPECIAL_NETWORKS = (
    (ipaddress.IPv4Network('0.0.0.0/8'), 'the unspecified network 0.0.0.0/8'),
    (ipaddress.IPv4Network('127.0.0.0/8'), 'the loopback network 127.0.0.0/8'),
    (ipaddress.IPv4Network('169.254.0.0/16'), 'the link-local network 169.254.0.0/16'),
    (ipaddress.IPv4Network('224.0.0.0/4'), 'the multicast network 224.0.0.0/4'),
    (ipaddress.IPv4Network('240.0.0.0/4'), 'the reserved network 240.0.0.0/4 (with the broadcast address '
                                           '255.255.255.255)'),
)
NETMASK_HELP = 'give a prefix length from 1 to 32 (such as 24) or a dotted netmask such as 255.255.255.0'
# What the RoCE network may use instead, for a message refusing a special network.
PRIVATE_HELP = 'give a private range such as 10.20.0.0/16, 172.16.0.0/16 or 192.168.100.0/24'

_OCTET = r'(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
_DOTTED = re.compile(r'^%s(?:\.%s){3}$' % (_OCTET, _OCTET))
_PREFIX = re.compile(r'^/?[0-9]{1,2}$')
_ALL = 0xFFFFFFFF


def netmask_prefix(value):
    """The prefix length (1 to 32) of the netmask ``value``: a prefix length (an int, or its digits with or without
    a leading ``/``) or a dotted netmask whose ones come first. :raises ValueError: saying why it is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError('a netmask is a number or a text, not %s' % type(value).__name__)
    text = str(value).strip()
    if _PREFIX.match(text):
        prefix = int(text.lstrip('/'))
        if prefix == 0:
            raise ValueError('prefix 0 would put every address on the NIC\'s network')
        if prefix > 32:
            raise ValueError('an IPv4 prefix length is at most 32')
        return prefix
    if not _DOTTED.match(text):
        raise ValueError('neither a prefix length nor a dotted netmask')
    mask = int(ipaddress.IPv4Address(text))
    if mask == 0:
        raise ValueError('0.0.0.0 would put every address on the NIC\'s network')
    inverted = _ALL ^ mask
    if inverted & (inverted + 1):
        raise ValueError('its ones do not all come first')
    return 32 - inverted.bit_length()


def netmask_text(prefix):
    """The dotted netmask of ``prefix``."""
    return str(ipaddress.IPv4Network('0.0.0.0/%d' % prefix).netmask)


def special_network(first, last):
    """How a message names the first network not for hosts that the addresses ``first`` to ``last`` (ints, or
    IPv4 addresses) touch; None when they touch none."""
    first, last = int(first), int(last)
    for network, name in SPECIAL_NETWORKS:
        if first <= int(network.broadcast_address) and int(network.network_address) <= last:
            return name
    return None
