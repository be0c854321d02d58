# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The inputs are checked once per node in a site.yml run (issue 34, step 9: a converged fleet run's controller CPU):
playbooks/plan.yml checks each role's inputs (include_role tasks_from validate) and keeps which in
__plan_checked_roles, only when every check passed; site.yml gives each of those roles __<role>_inputs_checked from
it, and the role's tasks/validate.yml then skips its checks (tasks/inputs.yml) as one included file, not check by
check. Without the flag (a role alone, or tasks_from validate) every check still runs and refuses."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import REPO
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.test_role_inputs import GOOD

# A value each role's checks refuse (not its argument spec: the spec accepts it).
BAD = {
    'os_tuning': {'os_tuning_swappiness': 500},
    'npu_driver': {'npu_driver_version': '24.1.rc1\n'},
    'cann': {'cann_accept_eula': False},
    'container_runtime': {'container_runtime_ascend_runtime_accept_eula': False},
}
ROLES = tuple(sorted(BAD))


def _load(*path):
    with open(os.path.join(REPO, *path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize('role', ROLES)
def test_checks_run_unless_the_plan_checked_them(tmp_path, role):
    flag = '__%s_inputs_checked' % role
    good, bad = dict(GOOD[role]), dict(GOOD[role], **BAD[role])
    results = role_harness.run_play(tmp_path, role, [good, bad, dict(bad, **{flag: False}), dict(bad, **{flag: True})])
    assert results[0] == {'accepted': True}
    for refused in results[1:3]:
        assert refused['accepted'] is False and refused['messages'], refused
    # The plan checked them: nothing refuses here (the plan would have).
    assert results[3] == {'accepted': True}


@pytest.mark.parametrize('role', ROLES)
def test_validate_includes_the_checks_unless_the_plan_checked_them(role):
    validate = _load('roles', role, 'tasks', 'validate.yml')
    assert len(validate) == 1, validate
    include = validate[0]['ansible.builtin.include_tasks']
    assert include['file'] == 'inputs.yml'
    assert include['apply']['tags'] == [role, role + '_validate', 'always']
    assert validate[0]['when'] == 'not __%s_inputs_checked | default(false) | bool' % role
    assert os.path.isfile(os.path.join(REPO, 'roles', role, 'tasks', 'inputs.yml'))


def _site_entries():
    """{role: the roles: entry or include_role task of site.yml that runs it}."""
    entries = {}
    for play in _load('playbooks', 'site.yml'):
        for entry in play.get('roles', []):
            entries[entry['role'].rsplit('.', 1)[-1]] = entry
        for task in play.get('tasks', []):
            if 'ansible.builtin.include_role' in task:
                entries[task['ansible.builtin.include_role']['name'].rsplit('.', 1)[-1]] = task
    return entries


@pytest.mark.parametrize('role', ROLES)
def test_site_yml_says_which_inputs_the_plan_checked(role):
    assert _site_entries()[role]['vars']['__%s_inputs_checked' % role] == \
        "{{ '%s' in __plan_checked_roles | default([]) }}" % role


def test_plan_keeps_the_checked_roles_only_after_every_check():
    play = _load('playbooks', 'plan.yml')[0]
    block = [task for task in play['tasks'] if 'block' in task]
    assert len(block) == 1
    last = block[0]['block'][-1]
    assert last['ansible.builtin.set_fact'] == {'__plan_checked_roles': '{{ __plan_before + __plan_after }}'}
    # Each check before it; a failed one goes to the rescue, which keeps no list.
    checks = [task['ansible.builtin.include_role'].get('tasks_from') for task in block[0]['block'][:-1]]
    assert checks.count('validate') == 5
    assert all('__plan_checked_roles' not in str(task) for task in block[0]['rescue'])


@pytest.mark.parametrize('role', ('cann', 'monitoring'))
def test_site_yml_includes_a_role_it_may_skip_whole(role):
    """cann (native mode only) and monitoring (off by default) are one conditional include_role each: a node that
    needs neither pays one skipped task, not each of the role's tasks; tagged always, they apply the role's tag."""
    task = _site_entries()[role]
    assert task['tags'] == ['always'] and task['when']
    assert task['ansible.builtin.include_role']['apply'] == {'tags': [role]}
