# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The NPU network plan: one IPv4 address for every NPU NIC (the RoCE port ``hccn_tool -i <device>`` configures) of
every node, computed from the inventory. Pure: no ``AnsibleModule``, no I/O; used on the controller by the
``npu_network_plan`` filter. It needs netaddr (``HAS_NETADDR`` says whether it imported).

The plan is one of:

``cidr``              one range for every NPU NIC of every node (``npu_network_cidr``, e.g. ``10.20.0.0/16``);
``per_card_subnets``  a list of ranges (``npu_network_per_card_subnets``): device ``d`` of every node gets its
                      address in range ``d mod len(list)``. With four ranges on 8-NPU nodes that is the documented
                      Atlas 800 plan (cards 0-3 and 4-7 on matching subnets: devices 0 and 4 in the first range, 1
                      and 5 in the second, ...); with eight, every card has a subnet of its own.

``netmask`` (``npu_network_netmask``, a dotted netmask or a prefix length) widens the NICs' network beyond the
range the addresses come from (addresses from ``10.20.11.0/24``, NICs on ``10.20.0.0/16``); by default a NIC's
network is its range. ``gateway`` (``npu_network_gateway``) is ``first`` or ``last`` (that host address of each
NIC network), one address (``cidr`` only) or a list of one address per range (``per_card_subnets``); the gateway
is never given to a NIC.

A node is a dict: ``name``, ``npu_count`` (devices ``0 .. npu_count-1``) or ``devices`` (the device ids),
``host_addresses`` (the host's own interface addresses, ``a.b.c.d`` or ``a.b.c.d/prefix``; IPv6 ones are
ignored), ``explicit`` (``npu_network_addresses``: ``{device: address or address/prefix}``, kept as given and
reserved so that no other NIC gets it) and ``index`` (``npu_network_index``, optional).

Allocation order, the rule that makes the plan deterministic and stable whatever the order of the node list:
nodes with an ``index`` first, by index, then the others by name; within a node by device id. Each NIC without
an explicit address takes the lowest free address of its range (free: not the NIC network's network or broadcast
address, not the gateway, not an explicit address). Adding a node that sorts last (or has the highest index)
leaves every other node's addresses as they were; give ``npu_network_index`` to grow a fleet in that order.

Rejected, each with the variable to fix and the host and device concerned: a plan that is neither or both of
``cidr`` and ``per_card_subnets``; a range that is not IPv4 ``a.b.c.d/prefix`` or has host bits set; a range in a
network that is not for hosts, or a netmask that widens the NIC network into one (_ipv4: unspecified, loopback,
link-local, multicast, reserved, broadcast), so that hccn_tool never refuses a planned address under a device's
name; a netmask that _ipv4 does not read (``0``, ``0.0.0.0``, a hostmask, holes) and an explicit prefix 0; ranges that
overlap; a range too small for its NICs (how many are needed and how many fit); a NIC network that overlaps a host
interface network of any node (the RoCE network must not be a host network); an explicit address outside its
device's network, equal to a network, broadcast or gateway address, or given twice; a gateway outside its network.
"""

from __future__ import annotations

import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._ipv4 import (
    NETMASK_HELP,
    PRIVATE_HELP,
    netmask_prefix,
    netmask_text,
    special_network,
)

try:
    import netaddr
except ImportError:  # pragma: no cover - netaddr is in requirements.txt; the filter reports its absence
    netaddr = None
    HAS_NETADDR = False
else:
    HAS_NETADDR = True

CIDR_VAR = 'npu_network_cidr'
SUBNETS_VAR = 'npu_network_per_card_subnets'
ADDRESSES_VAR = 'npu_network_addresses'
GATEWAY_VAR = 'npu_network_gateway'
NETMASK_VAR = 'npu_network_netmask'
INDEX_VAR = 'npu_network_index'

# hccn_tool device ids: 0-7 on an Atlas 800 A2, 0-15 on an A3; a larger number is a typo, not a server.
MAX_DEVICES = 64

_OCTET = r'(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
_IPV4 = re.compile(r'^(%s(?:\.%s){3})(?:/([0-9]{1,2}))?$' % (_OCTET, _OCTET))
_DEVICE_KEY = re.compile(r'^[0-9]{1,3}$')


class NetworkPlanError(ValueError):
    """The inputs cannot make a plan; ``problems`` holds one sentence per problem, each naming what to fix."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__('; '.join(self.problems))


def _ip(value):
    return str(netaddr.IPAddress(value))


def _parse_ipv4(text, allow_prefix):
    """``(address int, prefix or None)`` of ``'a.b.c.d'`` / ``'a.b.c.d/p'``, or None when it is not one."""
    if not isinstance(text, str):
        return None
    match = _IPV4.match(text.strip())
    if not match or (match.group(2) is not None and (not allow_prefix or int(match.group(2)) > 32)):
        return None
    prefix = None if match.group(2) is None else int(match.group(2))
    return int(netaddr.IPAddress(match.group(1))), prefix


def _network(address, prefix):
    return netaddr.IPNetwork('%s/%d' % (_ip(address), prefix)).cidr


def _overlap(first, second):
    return first.first <= second.last and second.first <= first.last


class _Pool:
    """One range addresses come from, the NIC network around it and its gateway."""

    def __init__(self, label, addresses, network):
        self.label = label            # how messages name it: "npu_network_cidr 10.20.0.0/16"
        self.addresses = addresses    # the range (IPNetwork)
        self.network = network        # the NICs' network (IPNetwork), the range or wider
        self.gateway = None           # int
        self.reserved = set()         # explicit addresses inside the range (ints)

    def is_edge(self, value):
        """Whether ``value`` is the network or broadcast address of the NIC network."""
        return value in (self.network.first, self.network.last)

    def free(self):
        """How many addresses of the range a NIC may get."""
        return self.addresses.size - len(self.taken())

    def taken(self):
        """The addresses of the range no NIC may get: explicit ones, gateways, the network's edges."""
        taken = set(self.reserved)
        taken.update(value for value in (self.network.first, self.network.last)
                     if self.addresses.first <= value <= self.addresses.last)
        return taken

    def allocate(self):
        """The free addresses of the range, lowest first."""
        taken = self.taken()
        for value in range(self.addresses.first, self.addresses.last + 1):
            if value not in taken:
                yield value


def _netmask_prefix(netmask, problems):
    """The prefix of ``npu_network_netmask`` (null or empty: none), read by _ipv4's strict rule; None after adding
    the problem."""
    if netmask is None or (isinstance(netmask, str) and not netmask.strip()):
        return None
    try:
        return netmask_prefix(netmask)
    except ValueError as error:
        problems.append('%s %r is not a netmask (%s): %s' % (NETMASK_VAR, netmask, error, NETMASK_HELP))
        return None


def _parse_range(value, label, prefix, problems):
    """The range ``value`` as an IPNetwork, or None after adding the problem."""
    parsed = _parse_ipv4(value, allow_prefix=True)
    if parsed is None or parsed[1] is None:
        problems.append('%s %r is not an IPv4 range a.b.c.d/prefix such as 10.20.0.0/16' % (label, value))
        return None
    addresses = _network(*parsed)
    if int(addresses.first) != parsed[0]:
        problems.append('%s %s has host bits set: the range is %s' % (label, value.strip(), addresses))
        return None
    if prefix is not None and prefix > addresses.prefixlen:
        problems.append('%s %s is wider than the NIC network /%d of %s: the netmask must hold the whole range'
                        % (label, addresses, prefix, NETMASK_VAR))
        return None
    return addresses


def _pools(cidr, per_card_subnets, netmask, problems):
    given = [name for name, value in ((CIDR_VAR, cidr), (SUBNETS_VAR, per_card_subnets))
             if value not in (None, '', [])]
    if len(given) != 1:
        problems.append('give either %s (one range for every NPU NIC) or %s (one range per card), %s'
                        % (CIDR_VAR, SUBNETS_VAR, 'not both' if given else 'none is set'))
        return []
    prefix = _netmask_prefix(netmask, problems)
    if cidr not in (None, ''):
        entries = [(CIDR_VAR, cidr)]
    elif not isinstance(per_card_subnets, (list, tuple)):
        problems.append('%s must be a list of ranges such as [192.168.100.0/24, 192.168.101.0/24], not %s'
                        % (SUBNETS_VAR, type(per_card_subnets).__name__))
        return []
    else:
        entries = [('%s[%d]' % (SUBNETS_VAR, number), value) for number, value in enumerate(per_card_subnets)]
    pools = []
    for label, value in entries:
        addresses = _parse_range(value, label, prefix, problems)
        if addresses is not None:
            network = addresses if prefix is None else _network(addresses.first, prefix)
            pools.append(_Pool('%s %s' % (label, addresses), addresses, network))
    if len(pools) != len(entries):
        return []
    # No NIC address from a network that is not for hosts, and no NIC network (a netmask widens it) reaching one:
    # refused here under the variable set, not later by hccn_tool under a device's name.
    for pool in pools:
        special = special_network(pool.addresses.first, pool.addresses.last)
        if special:
            problems.append('%s is in %s, which is not for NIC addresses: %s' % (pool.label, special, PRIVATE_HELP))
            continue
        special = special_network(pool.network.first, pool.network.last)
        if special:
            problems.append('the NIC network %s of %s (%s %s) reaches %s: give a longer %s'
                            % (pool.network, pool.label, NETMASK_VAR, netmask, special, NETMASK_VAR))
    if problems:
        return []
    for later, pool in enumerate(pools):
        for earlier in pools[:later]:
            if _overlap(earlier.addresses, pool.addresses):
                problems.append('%s overlaps %s: the ranges must be disjoint' % (pool.label, earlier.label))
    return pools


def _gateways(gateway, pools, problems):
    if gateway is None or gateway == '' or not pools:
        return
    if gateway in ('first', 'last'):
        for pool in pools:
            if pool.network.size < 4:
                problems.append('%s %s: the NIC network %s of %s has no room for a gateway'
                                % (GATEWAY_VAR, gateway, pool.network, pool.label))
            else:
                pool.gateway = pool.network.first + 1 if gateway == 'first' else pool.network.last - 1
        return
    per_card = not pools[0].label.startswith(CIDR_VAR)
    if isinstance(gateway, (list, tuple)):
        if not per_card:
            problems.append('%s: with %s give first, last or one address, not a list' % (GATEWAY_VAR, CIDR_VAR))
            return
        if len(gateway) != len(pools):
            problems.append('%s as a list needs one address per range of %s: %d, not %d'
                            % (GATEWAY_VAR, SUBNETS_VAR, len(pools), len(gateway)))
            return
        pairs = list(zip(pools, gateway))
    elif not per_card:
        pairs = [(pools[0], gateway)]
    else:
        problems.append('%s %r: with %s give first, last or a list of one address per range'
                        % (GATEWAY_VAR, gateway, SUBNETS_VAR))
        return
    for pool, value in pairs:
        parsed = _parse_ipv4(value, allow_prefix=False)
        if parsed is None:
            problems.append('%s %r is not an IPv4 address, first or last' % (GATEWAY_VAR, value))
        elif not pool.network.first < parsed[0] < pool.network.last:
            problems.append('%s %s is not a host address of the NIC network %s of %s'
                            % (GATEWAY_VAR, _ip(parsed[0]), pool.network, pool.label))
        else:
            pool.gateway = parsed[0]


def _devices(node, label, problems):
    count, devices = node.get('npu_count'), node.get('devices')
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_DEVICES):
        problems.append('%s: npu_count must be a whole number from 0 to %d, not %r' % (label, MAX_DEVICES, count))
        return None
    if devices is not None:
        if (not isinstance(devices, (list, tuple))
                or any(isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < MAX_DEVICES for d in devices)
                or len(set(devices)) != len(devices)):
            problems.append('%s: devices must be a list of distinct NPU device ids from 0 to %d, not %r'
                            % (label, MAX_DEVICES - 1, devices))
            return None
        if count is not None and count != len(devices):
            problems.append('%s: npu_count %d disagrees with the %d devices %r' % (label, count, len(devices), devices))
            return None
        return sorted(devices)
    if count is None:
        problems.append('%s: give npu_count or devices (its NPU device ids)' % label)
        return None
    return list(range(count))


def _host_networks(node, label, problems):
    values = node.get('host_addresses')
    if values is None:
        return []
    if not isinstance(values, (list, tuple)):
        problems.append('%s: host_addresses must be a list of the host\'s interface addresses, not %s'
                        % (label, type(values).__name__))
        return []
    networks = []
    for value in values:
        parsed = _parse_ipv4(value, allow_prefix=True)
        if parsed is not None:
            networks.append((value.strip(), _network(parsed[0], 32 if parsed[1] is None else parsed[1])))
            continue
        try:
            if isinstance(value, str) and ':' in value and netaddr.IPNetwork(value.strip()).version == 6:
                continue  # the NPU network is IPv4
        except (netaddr.AddrFormatError, ValueError, TypeError):
            pass
        problems.append('%s: host_addresses item %r is not an address a.b.c.d or a.b.c.d/prefix' % (label, value))
    return networks


def _pool_for(pools, device):
    return pools[device % len(pools)]


def _explicit(node, label, devices, pools, problems):
    """``{device: (address, prefix or None)}`` of the node's valid explicit addresses."""
    values = node.get('explicit')
    if values is None or values == {}:
        return {}
    where = '%s of %s' % (ADDRESSES_VAR, label)
    if not isinstance(values, dict):
        problems.append('%s must be a dict {device id: address or address/prefix}, not %s'
                        % (where, type(values).__name__))
        return {}
    gateways = dict((other.gateway, other.label) for other in reversed(pools) if other.gateway is not None)
    explicit = {}
    for key, value in values.items():
        if isinstance(key, int) and not isinstance(key, bool):
            device = key
        elif isinstance(key, str) and _DEVICE_KEY.match(key.strip()):
            device = int(key.strip())
        else:
            problems.append('%s, key %r is not an NPU device id' % (where, key))
            continue
        if device not in devices:
            problems.append('%s, device %d is not one of the node\'s NPUs %s' % (where, device, devices))
            continue
        parsed = _parse_ipv4(value, allow_prefix=True)
        if parsed is None:
            problems.append('%s, device %d: %r is not an address a.b.c.d or a.b.c.d/prefix' % (where, device, value))
            continue
        address, prefix = parsed
        if prefix is not None:
            try:
                netmask_prefix(prefix)
            except ValueError as error:
                problems.append('%s, device %d: %r has no usable netmask (%s): %s'
                                % (where, device, value, error, NETMASK_HELP))
                continue
        pool = _pool_for(pools, device)
        own = pool.network if prefix is None else _network(address, prefix)
        if not pool.network.first <= address <= pool.network.last:
            problems.append('%s, device %d: %s is outside %s, the NIC network of %s'
                            % (where, device, _ip(address), pool.network, pool.label))
        elif pool.is_edge(address) or address in (own.first, own.last):
            problems.append('%s, device %d: %s is the network or broadcast address of %s'
                            % (where, device, _ip(address), own if address in (own.first, own.last) else pool.network))
        elif address in gateways:
            problems.append('%s, device %d: %s is the gateway of %s (%s)'
                            % (where, device, _ip(address), gateways[address], GATEWAY_VAR))
        elif pool.gateway is not None and not own.first < pool.gateway < own.last:
            problems.append('%s, device %d: the gateway %s of %s is outside %s/%d'
                            % (where, device, _ip(pool.gateway), GATEWAY_VAR, _ip(address), own.prefixlen))
        else:
            explicit[device] = (address, prefix)
    return explicit


def _order_key(node):
    index = node.get('index')
    return (0, index, node['name']) if index is not None else (1, 0, node['name'])


# Long: the plan's stages (the pools, every node's devices, the sizes, the addresses) share one list of problems,
# so that each stage reports all of its problems at once before the next runs.
def plan_network(nodes, cidr=None, per_card_subnets=None, gateway=None, netmask=None):
    """The NPU network plan: ``{node name: [{device, address, netmask, prefix[, gateway]}]}`` by device id.

    Raises NetworkPlanError naming every problem found in a stage (inputs, then sizes).
    """
    if not HAS_NETADDR:
        raise NetworkPlanError(['the NPU network plan needs the Python library netaddr on the controller '
                                '(pip install netaddr)'])
    problems = []
    pools = _pools(cidr, per_card_subnets, netmask, problems)
    _gateways(gateway, pools, problems)
    if not isinstance(nodes, (list, tuple)):
        raise NetworkPlanError(problems + ['the nodes must be a list of dicts (name, npu_count or devices, '
                                           'host_addresses, explicit), not %s' % type(nodes).__name__])
    checked, names, indexes = [], {}, {}
    for position, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get('name'), str) or not node['name'].strip():
            problems.append('node %d of the list: a node is a dict with a non-empty name, not %r' % (position, node))
            continue
        name = node['name']
        label = 'host %s' % name
        if name in names:
            problems.append('%s is in the node list twice' % label)
            continue
        names[name] = node
        unknown = sorted(set(node) - {'name', 'npu_count', 'devices', 'host_addresses', 'explicit', 'index'})
        if unknown:
            problems.append('%s: unknown key(s) %s; the keys are name, npu_count, devices, host_addresses, explicit, '
                            'index' % (label, ', '.join(str(key) for key in unknown)))
        index = node.get('index')
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                problems.append('%s of %s must be a whole number from 0, not %r' % (INDEX_VAR, label, index))
                index = None
            elif index in indexes:
                problems.append('%s %d is given to both host %s and %s' % (INDEX_VAR, index, indexes[index], label))
            else:
                indexes[index] = name
        devices = _devices(node, label, problems)
        hosts = _host_networks(node, label, problems)
        explicit = _explicit(node, label, devices, pools, problems) if devices is not None and pools else {}
        checked.append({'name': name, 'index': index, 'devices': devices or [], 'hosts': hosts,
                        'explicit': explicit})

    # The NPU networks (and any wider network an explicit prefix makes) must not touch a host network.
    for node in sorted(checked, key=lambda item: item['name']):
        for text, host in node['hosts']:
            for pool in pools:
                if _overlap(pool.network, host):
                    problems.append('%s overlaps the interface address %s of host %s: the NPU (RoCE) network must '
                                    'not be a host network' % ('the NIC network %s of %s' % (pool.network, pool.label)
                                                               if pool.network != pool.addresses else pool.label,
                                                               text, node['name']))
            for other in sorted(checked, key=lambda item: item['name']):
                for device, (address, prefix) in sorted(other['explicit'].items()):
                    own = _network(address, prefix) if prefix is not None else None
                    if own is not None and _overlap(own, host) and not any(_overlap(p.network, host) for p in pools):
                        problems.append('%s of host %s, device %d: %s/%d overlaps the interface address %s of host '
                                        '%s' % (ADDRESSES_VAR, other['name'], device, _ip(address), prefix, text,
                                                node['name']))

    # An explicit address is one NIC's only.
    owners = {}
    for node in sorted(checked, key=lambda item: item['name']):
        for device, (address, _prefix) in sorted(node['explicit'].items()):
            if address in owners:
                problems.append('%s: %s is given to both host %s device %d and host %s device %d'
                                % (ADDRESSES_VAR, _ip(address), owners[address][0], owners[address][1],
                                   node['name'], device))
            else:
                owners[address] = (node['name'], device)
                for pool in pools:
                    if pool.addresses.first <= address <= pool.addresses.last:
                        pool.reserved.add(address)
    for pool in pools:
        for other in pools:
            if other.gateway is not None and pool.addresses.first <= other.gateway <= pool.addresses.last:
                pool.reserved.add(other.gateway)
    if problems:
        raise NetworkPlanError(problems)

    ordered = sorted(checked, key=_order_key)
    needed = {}
    for node in ordered:
        for device in node['devices']:
            if device not in node['explicit']:
                pool = _pool_for(pools, device)
                needed[id(pool)] = needed.get(id(pool), 0) + 1
    for pool in pools:
        if needed.get(id(pool), 0) > pool.free():
            excluded = ['the network and broadcast addresses' if pool.network == pool.addresses else
                        'the network and broadcast addresses of %s' % pool.network]
            gateways = set(other.gateway for other in pools) & pool.reserved
            if gateways:
                excluded.append('the gateway' if len(gateways) == 1 else '%d gateways' % len(gateways))
            if pool.reserved - gateways:
                excluded.append('%d taken by %s' % (len(pool.reserved - gateways), ADDRESSES_VAR))
            problems.append('%s is too small: the %d node(s) need %d address(es) there but it has %d free (%s); '
                            'give a wider range' % (pool.label, len(ordered), needed[id(pool)], max(pool.free(), 0),
                                                    ', '.join(excluded)))
    if problems:
        raise NetworkPlanError(problems)

    free = dict((id(pool), pool.allocate()) for pool in pools)
    plan = {}
    for node in ordered:
        entries = []
        for device in node['devices']:
            pool = _pool_for(pools, device)
            if device in node['explicit']:
                address, prefix = node['explicit'][device]
                prefix = pool.network.prefixlen if prefix is None else prefix
            else:
                address, prefix = next(free[id(pool)]), pool.network.prefixlen
            entry = {'device': device, 'address': _ip(address), 'netmask': netmask_text(prefix), 'prefix': prefix}
            if pool.gateway is not None:
                entry['gateway'] = _ip(pool.gateway)
            entries.append(entry)
        plan[node['name']] = entries
    return dict(sorted(plan.items()))
