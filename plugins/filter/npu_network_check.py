# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The role npu_network's check, on the controller (each filter documented in its own .yml): npu_network_node,
npu_network_predicted, npu_network_pings, npu_network_outcome and npu_network_report, all from
module_utils/ascend/_network_check.py, which owns the report's schema."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_network_check = lazy_module('ascend._network_check')


def _hosts(hosts, name):
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(host, str) for host in hosts):
        raise AnsibleFilterError('%s: the input must be the list of the group\'s hosts (npu_network_group)' % name)
    return hosts


def _var(hostvars, host, var):
    """``var`` of ``host`` in ``hostvars``; None when the host has none."""
    try:
        value = hostvars[host].get(var)
    except (KeyError, AttributeError, TypeError):
        return None
    return value


def _nodes(hosts, hostvars):
    return [(host, {'nics': _var(hostvars, host, 'npu_network_nics'), 'read': _var(hostvars, host, '__npu_network_read'),
                    'ping': _var(hostvars, host, '__npu_network_ping')}) for host in hosts]


def _call(name, function, *args):
    try:
        return function(*args)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        raise AnsibleFilterError('%s: the input lacks or mistypes %s' % (name, error))


def npu_network_node(name, facts, devices, explicit, index):
    """What node ``name`` gives the plan: its NPU devices and host networks from its ``facts``."""
    if not isinstance(facts, dict):
        raise AnsibleFilterError('npu_network_node: facts must be the host\'s ansible_facts')
    return _call('npu_network_node', _network_check.node_inputs, name, devices, facts, explicit, index)


def npu_network_predicted(hosts, hostvars, check_mode):
    """Whether the check is left out: check mode, and a NIC of ``hosts`` would change (their __npu_network_apply)."""
    return _network_check.check_predicted(check_mode, [_var(hostvars, host, '__npu_network_apply')
                                                       for host in _hosts(hosts, 'npu_network_predicted')])


def npu_network_pings(nics, host, group, plan, scope):
    """The pings of ``host``'s NICs ``nics`` to the other hosts of ``group`` in ``plan``, by ``scope``."""
    if scope not in _network_check.PING_SCOPES:
        raise AnsibleFilterError('npu_network_pings: scope must be one of %s, not %r'
                                 % (', '.join(_network_check.PING_SCOPES), scope))
    return _call('npu_network_pings', _network_check.pings, nics, host, _hosts(group, 'npu_network_pings'), plan, scope)


def npu_network_outcome(hosts, hostvars, predicted, check_mode, report_dir, run_id):
    """The failures of ``hosts``, the run's report folder and the fact npu_network_report."""
    return _call('npu_network_outcome', _network_check.outcome, _nodes(_hosts(hosts, 'npu_network_outcome'), hostvars),
                 predicted, check_mode, report_dir, run_id)


def npu_network_report(hosts, hostvars, fact, scope, generated):
    """``{'record', 'summary'}``: report.json (npu-network-report/1) and summary.txt of the check of ``hosts``."""
    return _call('npu_network_report', _network_check.report, _nodes(_hosts(hosts, 'npu_network_report'), hostvars),
                 fact, scope, generated)


class FilterModule:
    def filters(self):
        return {'npu_network_node': npu_network_node, 'npu_network_predicted': npu_network_predicted,
                'npu_network_pings': npu_network_pings, 'npu_network_outcome': npu_network_outcome,
                'npu_network_report': npu_network_report}
