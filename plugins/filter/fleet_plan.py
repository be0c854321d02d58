# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The fleet plan's filters (each documented in its own .yml): which roles' input checks run on a node, plan.yml's
own input problems, and a JMESPath query on a fleet plan read back. The record and every decision are
module_utils/operations/_fleet_plan.py's."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_fleet_plan = lazy_module('operations._fleet_plan')


def fleet_plan_checks(plan, roles, stage, install_cann=None, monitoring=False, cluster=False, npu_network=True,
                      state='started'):
    """The roles of ``roles`` (plan_roles) whose input checks run on a node ``before`` its serving plan or ``after``
    it, as its plan ``plan`` (vllm_service_plan; null before the plan) decides."""
    if plan is not None and not isinstance(plan, dict):
        raise AnsibleFilterError('fleet_plan_checks: the input must be the serving plan (vllm_service_plan) or null')
    try:
        return _fleet_plan.input_checks(roles, stage, plan, install_cann, monitoring, cluster, npu_network, state)
    except ValueError as error:
        raise AnsibleFilterError('fleet_plan_checks: %s' % error)


def fleet_plan_input_problems(inputs):
    """The problems of plan.yml's inputs (``max_failed``, ``query``, ``output_dir``, ``install_cann``), each naming
    its variable."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('fleet_plan_input_problems: the input must be a dict of plan.yml\'s inputs')
    return _fleet_plan.input_problems(inputs)


def fleet_plan_query(plan, expression):
    """What the JMESPath ``expression`` selects of a fleet plan ``plan`` (the text of fleet-plan.json, or it parsed)."""
    record, problems = _fleet_plan.read(plan) if isinstance(plan, str) else _fleet_plan.check(plan)
    if record is None:
        raise AnsibleFilterError('fleet_plan_query: the input is not a fleet plan: %s' % '; '.join(problems))
    try:
        return _fleet_plan.run_query(record, expression, variable='the expression')
    except _fleet_plan.QueryError as error:
        raise AnsibleFilterError('fleet_plan_query: %s' % error)


class FilterModule(object):
    def filters(self):
        return {'fleet_plan_checks': fleet_plan_checks, 'fleet_plan_input_problems': fleet_plan_input_problems,
                'fleet_plan_query': fleet_plan_query}
