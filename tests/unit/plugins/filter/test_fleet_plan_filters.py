# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The fleet plan's filters: the input checks a node runs, plan.yml's own input problems, and a query on a fleet plan
read back (text or parsed); wrong inputs are filter errors naming what is wrong."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.fleet_plan import FilterModule
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _fleet_plan

FILTERS = FilterModule().filters()
ROLES = ['os_tuning', 'npu_driver', 'npu_network', 'cann', 'container_runtime', 'monitoring']


def test_the_filters_are_named():
    assert sorted(FILTERS) == ['fleet_plan_checks', 'fleet_plan_input_problems', 'fleet_plan_query']


def test_the_checks_before_and_after_the_plan():
    checks = FILTERS['fleet_plan_checks']
    assert checks(None, ROLES, 'before') == ['os_tuning', 'npu_driver']
    assert checks({'mode': 'container'}, ROLES, 'after', install_cann='false') == ['container_runtime']
    assert checks({'mode': 'native'}, ROLES, 'after', monitoring='true') == ['cann', 'monitoring']
    with pytest.raises(AnsibleFilterError, match='^fleet_plan_checks: ascend_install_cann must be true or false'):
        checks({'mode': 'native'}, ROLES, 'after', install_cann='perhaps')
    with pytest.raises(AnsibleFilterError, match='^fleet_plan_checks: the input must be the serving plan'):
        checks('native', ROLES, 'after')


def test_the_input_problems():
    problems = FILTERS['fleet_plan_input_problems']
    assert problems({'max_failed': '10%', 'query': None, 'output_dir': './fleet-plan'}) == []
    assert problems({'max_failed': -1, 'output_dir': '.'})[0].startswith('plan_max_failed must be')
    with pytest.raises(AnsibleFilterError):
        problems(['max_failed'])


def test_a_query_on_a_plan_read_back():
    record, _stops = _fleet_plan.build([{'host': 'a', 'failure': {'task': 't', 'message': 'm'}}], ['a', 'b'], 2)
    text = _fleet_plan.dumps(record)
    query = FILTERS['fleet_plan_query']
    assert query(text, "nodes[?status=='lost'].host") == ['b']
    assert query(record, 'verdict.proceed') is True
    with pytest.raises(AnsibleFilterError, match='^fleet_plan_query: the input is not a fleet plan: its schema is'):
        query('{"schema": "kunpeng_ascend.vllm/doctor-fleet/1"}', 'nodes')
    with pytest.raises(AnsibleFilterError, match='^fleet_plan_query: the expression "nodes\\[" is not a JMESPath'):
        query(text, 'nodes[')
