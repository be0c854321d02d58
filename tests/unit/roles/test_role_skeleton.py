# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The roles start the same way (issue 8, one role skeleton): tasks/main.yml checks the inputs, then
tasks/set_vars.yml gathers the facts the role needs when they are missing, loads vars/<distribution>.yml or else
vars/<OS family>.yml, fails naming the OS and the supported ones on any other, and probes check mode into
__<role>_check_mode.

set_vars.yml runs for every OS case in one ``ansible-playbook`` run per role (role_harness.py), the OS facts of
each case set on its host (or, in one case, gathered from this machine: read only), in check mode.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import REPO

# tasks/set_vars.yml, the start the roles share: the OS facts of a case (None: gathered from this machine) and
# the per-OS file the role must load (None: the role refuses the OS, naming it and the supported ones).
SKELETON_ROLES = ('os_tuning', 'npu_driver', 'cann', 'container_runtime', 'vllm_service')
PER_OS_LIST = {'os_tuning': '__os_tuning_packages', 'npu_driver': '__npu_driver_build_deps', 'cann': '__cann_dependencies',
               'container_runtime': '__container_runtime_packages', 'vllm_service': '__vllm_service_venv_packages'}
OS_CASES = {
    'Debian 12': ({'distribution': 'Debian', 'os_family': 'Debian'}, 'Debian.yml'),
    'Ubuntu 22.04': ({'distribution': 'Ubuntu', 'os_family': 'Debian'}, 'Debian.yml'),
    'openEuler 22.03 LTS': ({'distribution': 'openEuler', 'os_family': 'RedHat'}, 'RedHat.yml'),
    'Kylin V10': ({'distribution': 'Kylin Linux Advanced Server', 'os_family': 'RedHat'}, 'RedHat.yml'),
    'Arch Linux': ({'distribution': 'Archlinux', 'os_family': 'Archlinux'}, None),
    'SLES 15': ({'distribution': 'SLES', 'os_family': 'Suse'}, None),
    'facts not gathered yet (this machine)': (None, 'Debian.yml or RedHat.yml'),
}
UNSUPPORTED_OS = ('kunpeng_ascend.vllm.%s does not support %s (OS family %s) on %s: it supports the Debian family (Debian 12, Ubuntu 22.04)'
                  ' and the RedHat family (openEuler 22.03 LTS, Kylin V10). Another OS needs its package names in'
                  ' roles/%s/vars/<distribution or OS family>.yml.')


@pytest.fixture(scope='module')
def set_vars_results(tmp_path_factory):
    """Every OS case through each role's set_vars.yml, in check mode and, for the first case, out of it (the play is
    in check mode; that case's include sets check_mode false: the probe must tell the difference)."""
    before = [{'name': 'Set the OS facts of the case',
               'ansible.builtin.set_fact': {'distribution': '{{ case_facts.distribution }}', 'os_family': '{{ case_facts.os_family }}',
                                            'kernel': '6.6.0-case', 'cacheable': True},
               'when': 'case_facts is defined'}]
    cases = [{'case_facts': facts} if facts else {} for facts, dummy in OS_CASES.values()]
    cases.append(dict(cases[0], case_check_mode=False))
    outcomes = {}
    for role in SKELETON_ROLES:
        report = ("{'per_os': %s, 'check_mode': __%s_check_mode, 'family': ansible_facts.os_family, 'kernel': ansible_facts.kernel}"
                  % (PER_OS_LIST[role], role))
        ran = role_harness.run_play(tmp_path_factory.mktemp(role + '-set-vars'), role, cases, tasks_from='set_vars', before=before,
                                    report=report, check_mode='{{ case_check_mode | default(true) }}')
        for index, name in enumerate(list(OS_CASES) + ['Debian 12, not in check mode']):
            outcomes[(role, name)] = ('case%d' % index, ran[index])
    return outcomes


@pytest.mark.parametrize('role', SKELETON_ROLES)
@pytest.mark.parametrize('name', sorted(OS_CASES))
def test_set_vars_loads_the_variables_of_the_os_or_refuses_it(set_vars_results, role, name):
    host, result = set_vars_results[(role, name)]
    facts, vars_file = OS_CASES[name]
    if vars_file is None:
        assert result['messages'] == [UNSUPPORTED_OS % (role, facts['distribution'], facts['os_family'], host, role)]
        return
    report = result['accepted']
    if facts is None:
        vars_file = report['family'] + '.yml'
        assert vars_file in ('Debian.yml', 'RedHat.yml'), 'this machine is neither Debian nor RedHat family: %s' % report
    with open(os.path.join(REPO, 'roles', role, 'vars', vars_file), encoding='utf-8') as per_os:
        listed = yaml.safe_load(per_os)[PER_OS_LIST[role]]
    if isinstance(listed, list):
        listed = [name.replace("{{ ansible_facts['kernel'] }}", report['kernel']) for name in listed]
    assert report == {'per_os': listed, 'check_mode': True, 'family': report['family'], 'kernel': report['kernel']}


@pytest.mark.parametrize('role', SKELETON_ROLES)
def test_set_vars_tells_check_mode_set_on_an_include(set_vars_results, role):
    """check_mode false on the include, inside a play in check mode: ansible_check_mode would not tell, the probe does."""
    assert set_vars_results[(role, 'Debian 12, not in check mode')][1]['accepted']['check_mode'] is False


def test_one_skeleton_in_every_role():
    """set_vars.yml and the skeleton's variables in vars/main.yml are the same text in each role, but for its name."""
    texts = {}
    for role in SKELETON_ROLES:
        with open(os.path.join(REPO, 'roles', role, 'tasks', 'set_vars.yml'), encoding='utf-8') as tasks:
            set_vars = tasks.read().replace(role, 'ROLE')
        with open(os.path.join(REPO, 'roles', role, 'vars', 'main.yml'), encoding='utf-8') as role_vars:
            skeleton = {name: value for name, value in yaml.safe_load(role_vars).items()
                        if name in ('__%s_required_facts' % role, '__%s_vars_file' % role, '__%s_supported_os' % role,
                                    '__%s_check_mode' % role)}
        texts[role] = (set_vars, json.dumps(skeleton).replace(role, 'ROLE'))
    assert len(set(texts.values())) == 1, texts


@pytest.mark.parametrize('role', SKELETON_ROLES + ('doctor',))
def test_validation_comes_before_any_change(role):
    """tasks/main.yml starts with the validation, then the skeleton (set_vars.yml), both under every tag."""
    with open(os.path.join(REPO, 'roles', role, 'tasks', 'main.yml'), encoding='utf-8') as main:
        first, second = yaml.safe_load(main)[:2]
    assert first['ansible.builtin.import_tasks'] == 'validate.yml'
    assert 'always' in first['tags']
    assert second['ansible.builtin.import_tasks'] == 'set_vars.yml'
    assert 'always' in second['tags']
