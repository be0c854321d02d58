# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The npu_network_plan filter (documented in npu_network_plan.yml): every NPU NIC's address, on the controller."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_network_plan = lazy_module('ascend._network_plan')


def npu_network_plan(nodes, cidr=None, per_card_subnets=None, gateway=None, netmask=None):
    """The address plan of the NPU NICs of ``nodes`` (see _network_plan.plan_network)."""
    if not _network_plan.HAS_NETADDR:
        raise AnsibleFilterError('npu_network_plan: the Python library netaddr is missing on the controller: '
                                 'install it in the Python that runs Ansible (pip install netaddr)')
    try:
        return _network_plan.plan_network(nodes, cidr=cidr, per_card_subnets=per_card_subnets, gateway=gateway,
                                          netmask=netmask)
    except _network_plan.NetworkPlanError as error:
        raise AnsibleFilterError('npu_network_plan: %s' % error) from error


class FilterModule:
    """The NPU network plan filter."""

    def filters(self):
        return {'npu_network_plan': npu_network_plan}
