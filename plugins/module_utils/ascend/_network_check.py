# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The NPU network's check, as the role npu_network runs it on the controller around hccn_tool and hccn_ping: what one
node gives the plan (its NPU device ids and host networks), whether the check can run at all (check mode with NICs
that would change: no), the pings between the nodes, the failures of the group, and the report - the fact
``npu_network_report`` and the record ``report.json`` (schema REPORT_SCHEMA, owned here) with its summary.txt.
Pure functions: no I/O.
"""

from __future__ import annotations

REPORT_SCHEMA = 'kunpeng_ascend.vllm/npu-network-report/1'
PING_SCOPES = ('same_device', 'subnet')


def _pairs(nodes):
    """``(host, node)`` of ``nodes``: a dict, or a list of pairs in the group's order (a host listed twice twice)."""
    return list(nodes.items()) if isinstance(nodes, dict) else list(nodes)


def node_inputs(name, devices, facts, explicit, index):
    """What node ``name`` gives the plan: its NPU ``devices`` (None: 0 .. the NPU count of ascend_facts - 1, read
    from ``facts['ascend']['npu_count']`` only then), its host networks (each IPv4 address of each interface but loopback, with its prefix, from the
    Ansible ``facts`` of the network subset, so that a whole host network is kept clear), its ``explicit``
    addresses and its ``index``."""
    host_addresses = []
    for iface in facts.get('interfaces') or []:
        if iface == 'lo':
            continue
        data = facts.get(iface.replace('-', '_')) or {}
        entries = ([data['ipv4']] if 'ipv4' in data else []) + list(data.get('ipv4_secondaries') or [])
        for entry in entries:
            host_addresses.append('%s/%s' % (entry['address'], entry['prefix']) if 'prefix' in entry
                                  else entry['address'])
    if devices is None:
        devices = range(int(facts['ascend']['npu_count']))
    return {'name': name, 'devices': list(devices),
            'host_addresses': host_addresses, 'explicit': explicit, 'index': index}


def check_predicted(check_mode, apply_results):
    """Whether the check must be left out, its outcome predicted: in check mode a NIC that would change still has
    its old address (and the health of that), so checking it would test the wrong network. ``apply_results``: the
    hccn_tool results of the hosts that got to the apply (None for one that did not)."""
    return bool(check_mode) and any(result.get('changed') for result in apply_results if result is not None)


def _network(address, prefix):
    octets = [int(part) for part in address.split('.')]
    return (octets[0] * 16777216 + octets[1] * 65536 + octets[2] * 256 + octets[3]) // (2 ** (32 - int(prefix)))


def pings(nics, host, group, plan, scope):
    """The pings of ``host`` (its planned ``nics``) to the other hosts of ``group`` (``plan``: host -> its NICs):
    same_device - device d pings device d of every other node; subnet - every NIC of every other node in its network
    (same prefix, same network bits). Each ``{device, address, name}``."""
    result = []
    for nic in nics:
        own = _network(nic['address'], nic['prefix'])
        for peer in group:
            if peer == host:
                continue
            for other in plan[peer]:
                if ((scope == 'same_device' and other['device'] == nic['device'])
                        or (scope == 'subnet' and other['prefix'] == nic['prefix']
                            and _network(other['address'], other['prefix']) == own)):
                    result.append({'device': nic['device'], 'address': other['address'],
                                   'name': '%s dev %s' % (peer, other['device'])})
    return result


def failures(nodes, predicted):
    """The failures of the group, none when the check was ``predicted`` (not run). ``nodes``: host -> ``{nics: its
    planned NICs, read: its hccn_tool read result (None when it has none), ping: its hccn_ping result or None}``, or
    the list of those pairs in the group's order. A node that was not read (failed or unreachable before) fails as a whole; a NIC fails when its
    link is not UP or its health not Success; a pair when its ping failed. Each failure has a ``message``."""
    found = []
    if predicted:
        return found
    for host, node in _pairs(nodes):
        nics = node.get('nics') or []
        sources = dict((nic['device'], nic['address']) for nic in nics)
        read = node.get('read')
        if read is None or read.get('failed'):
            found.append({'kind': 'node', 'host': host,
                          'message': '%s: not checked (the node failed or was unreachable before the check)' % host})
            continue
        for nic in read['devices']:
            if nic['link'] == 'UP' and nic['net_health'] == 'Success':
                continue
            address = sources.get(nic['id'], nic['address'])
            found.append({'kind': 'nic', 'host': host, 'device': nic['id'], 'address': address, 'link': nic['link'],
                          'net_health': nic['net_health'],
                          'message': '%s dev %s %s: link %s, net_health %s'
                                     % (host, nic['id'], address, nic['link'], nic['net_health'])})
        for ping in (node.get('ping') or {}).get('failed_pings') or []:
            found.append({'kind': 'pair', 'host': host, 'device': ping['device'],
                          'source': sources.get(ping['device']), 'target': ping['name'], 'address': ping['address'],
                          'error': ping['error'],
                          'message': '%s dev %s %s -> %s %s: %s'
                                     % (host, ping['device'], sources.get(ping['device'], '?'), ping['name'],
                                        ping['address'], ping['error'])})
    return found


def run_dir(report_dir, run_id):
    """The folder of one run's report: ``run_id`` under ``report_dir`` (its trailing slashes dropped)."""
    return '%s/%s' % (report_dir.rstrip('/'), run_id)


def outcome(nodes, predicted, check_mode, report_dir, run_id):
    """The check's outcome: ``failures`` (see failures), ``run_dir`` (where the report goes) and ``report``, the fact
    npu_network_report - ``passed`` (no failure and checked), ``verified`` (checked), ``failures`` and ``report``
    (report.json's path; None in check mode, where no report is written)."""
    found = failures(nodes, predicted)
    folder = run_dir(report_dir, run_id)
    return {'failures': found, 'run_dir': folder,
            'report': {'passed': not found and not predicted, 'verified': not predicted, 'failures': found,
                       'report': None if check_mode else folder + '/report.json'}}


def report(nodes, fact, scope, generated):
    """``{'record', 'summary'}``: report.json (REPORT_SCHEMA: the verdict, the failures and each host's NICs, pings
    and ping time) and summary.txt of the check whose fact (npu_network_report) is ``fact``."""
    pairs = _pairs(nodes)
    hosts = {}
    for host, node in pairs:
        read = node.get('read') or {}
        ping = node.get('ping') or {}
        hosts[host] = {'nics': read.get('devices') or [], 'pings': ping.get('results') or [],
                       'ping_seconds': ping.get('seconds')}
    record = {'schema': REPORT_SCHEMA, 'generated': generated, 'passed': fact['passed'], 'ping_scope': scope,
              'failures': fact['failures'], 'hosts': hosts}
    lines = ['NPU network of %d node(s): %s' % (len(pairs), 'PASSED' if fact['passed'] else 'FAILED'),
             '%d NICs checked, %d pings (%s)' % (sum(len(item['nics']) for item in hosts.values()),
                                                 sum(len(item['pings']) for item in hosts.values()), scope)]
    lines.extend('FAIL %s' % failure['message'] for failure in fact['failures'])
    return {'record': record, 'summary': '\n'.join(lines) + '\n'}
