# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Every role starts the same way (issue 8, one role skeleton): tasks/main.yml only imports - first validate.yml,
which checks the inputs, then set_vars.yml, both under every tag, then one file per concern, each tagged with the
role's name and its concern (or always). tasks/set_vars.yml, the same text in every role but for its name, gathers
the facts the role needs when they are missing, loads vars/<distribution>.yml or else vars/<OS family>.yml, fails
naming the OS and the supported ones on any other, and probes check mode into __<role>_check_mode.

The roles are those under roles/ (found, not listed). set_vars.yml runs for every OS case in one ``ansible-playbook``
run per role (role_harness.py), the OS facts of each case set on its host (or, in one case, gathered from this
machine: read only), in check mode; what it must load, or refuse, comes from the role's own vars/ files.
"""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import REPO

ROLES_DIR = os.path.join(REPO, 'roles')
ROLES = tuple(sorted(name for name in os.listdir(ROLES_DIR) if os.path.isdir(os.path.join(ROLES_DIR, name))))
IMPORTS = ('ansible.builtin.import_tasks', 'ansible.builtin.include_tasks')
# What an import in tasks/main.yml may carry besides its file: anything else (a module, a block) is work done inline.
IMPORT_KEYS = {'name', 'tags', 'when', 'vars', 'loop', 'loop_control'} | set(IMPORTS)
# vars/main.yml: the skeleton's variables (__<role>_<name>); all but supported_os are the same in every role.
SKELETON_VARS = ('required_facts', 'vars_file', 'supported_os', 'check_mode')
SHARED_VARS = ('required_facts', 'vars_file', 'check_mode')

# The OS facts of a case (None: gathered from this machine).
OS_CASES = {
    'Debian 12': {'distribution': 'Debian', 'os_family': 'Debian'},
    'Ubuntu 22.04': {'distribution': 'Ubuntu', 'os_family': 'Debian'},
    'openEuler 22.03 LTS': {'distribution': 'openEuler', 'os_family': 'RedHat'},
    'Kylin V10': {'distribution': 'Kylin Linux Advanced Server', 'os_family': 'RedHat'},
    'Arch Linux': {'distribution': 'Archlinux', 'os_family': 'Archlinux'},
    'SLES 15': {'distribution': 'SLES', 'os_family': 'Suse'},
    'facts not gathered yet (this machine)': None,
}
NOT_IN_CHECK_MODE = 'Debian 12, not in check mode'
UNSUPPORTED_OS = ('kunpeng_ascend.vllm.{role} does not support {distribution} (OS family {family}) on {host}: it supports'
                  ' {supported}. Another OS needs its own roles/{role}/vars/<distribution or OS family>.yml (vars/main.yml'
                  ' says what it holds).')
KERNEL = "{{ ansible_facts['kernel'] }}"


def _load(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def per_os_files(role_dir):
    """The role's per-OS variables: {file name: its variables} for each vars/*.yml but main.yml."""
    vars_dir = os.path.join(role_dir, 'vars')
    names = sorted(os.listdir(vars_dir)) if os.path.isdir(vars_dir) else []
    return {name: _load(os.path.join(vars_dir, name)) or {} for name in names if name.endswith('.yml') and name != 'main.yml'}


def skeleton_vars(role_dir, role):
    """The skeleton's variables in vars/main.yml, by their name without the role's prefix."""
    path = os.path.join(role_dir, 'vars', 'main.yml')
    role_vars = (_load(path) if os.path.exists(path) else None) or {}
    return {name: role_vars['__%s_%s' % (role, name)] for name in SKELETON_VARS if '__%s_%s' % (role, name) in role_vars}


def _tags(task):
    tags = task.get('tags', [])
    return set([tags] if isinstance(tags, str) else tags)


def skeleton_problems(role_dir):
    """What keeps the role at ``role_dir`` from the skeleton, one message each (none: it follows it)."""
    role = os.path.basename(role_dir)
    main_path = os.path.join(role_dir, 'tasks', 'main.yml')
    problems = []
    tasks = _load(main_path) if os.path.exists(main_path) else None
    if not isinstance(tasks, list) or len(tasks) < 2:
        return ['%s: tasks/main.yml must import validate.yml, then set_vars.yml' % role]
    for index, task in enumerate(tasks):
        where = '%s: tasks/main.yml, task %d (%s)' % (role, index + 1, task.get('name'))
        imported = [key for key in IMPORTS if key in task]
        inline = sorted(set(task) - IMPORT_KEYS)
        if len(imported) != 1 or inline:
            problems.append('%s does work inline (%s): main.yml holds imports only' % (where, ', '.join(inline) or 'no import'))
            continue
        tags, target = _tags(task), task[imported[0]]
        target_file = target.get('file') if isinstance(target, dict) else target
        if index == 0 and (imported[0] != IMPORTS[0] or target_file != 'validate.yml'
                           or not {role, role + '_validate', 'always'} <= tags):
            problems.append('%s: the first task must be import_tasks validate.yml tagged [%s, %s_validate, always]'
                            % (where, role, role))
        elif index == 1 and (imported[0] != IMPORTS[0] or target_file != 'set_vars.yml' or not {role, 'always'} <= tags):
            problems.append('%s: the second task must be import_tasks set_vars.yml tagged [%s, always]' % (where, role))
        elif index > 1 and (role not in tags or not ('always' in tags or any(tag.startswith(role + '_') for tag in tags))):
            problems.append('%s: tagged %s, not [%s, %s_<concern>] (or always)' % (where, sorted(tags), role, role))
        if imported[0] == IMPORTS[1]:
            apply_tags = set(((target.get('apply') or {}).get('tags') or []) if isinstance(target, dict) else [])
            if apply_tags != tags - {'always'}:
                problems.append('%s: include_tasks must apply its tags %s to what it includes (apply: tags), not %s'
                                % (where, sorted(tags - {'always'}), sorted(apply_tags)))
        if target_file and not os.path.exists(os.path.join(role_dir, 'tasks', target_file)):
            problems.append('%s: no tasks/%s' % (where, target_file))
    if not os.path.exists(os.path.join(role_dir, 'tasks', 'set_vars.yml')):
        problems.append('%s: no tasks/set_vars.yml' % role)
    missing = [name for name in SKELETON_VARS if name not in skeleton_vars(role_dir, role)]
    if missing:
        problems.append('%s: vars/main.yml lacks %s' % (role, ', '.join('__%s_%s' % (role, name) for name in missing)))
    per_os = per_os_files(role_dir)
    if not per_os:
        problems.append('%s: no per-OS file (vars/<distribution or OS family>.yml)' % role)
    elif len({tuple(sorted(variables)) for variables in per_os.values()}) > 1:
        problems.append('%s: the per-OS files set different variables: %s'
                        % (role, {name: sorted(variables) for name, variables in per_os.items()}))
    return problems


@pytest.mark.parametrize('role', ROLES)
def test_the_role_follows_the_skeleton(role):
    """main.yml imports only: validate.yml first and set_vars.yml second under every tag, each other import tagged with
    the role and its concern (an include applying its tags); set_vars.yml, the skeleton's variables, per-OS files."""
    assert skeleton_problems(os.path.join(ROLES_DIR, role)) == []


def test_the_roles_are_found():
    """Twelve roles today; a new role directory is checked without being listed here."""
    assert len(ROLES) >= 12 and {'doctor', 'npu_driver', 'package_fetch', 'vllm_benchmark', 'vllm_cluster'} <= set(ROLES)


def test_one_skeleton_in_every_role():
    """set_vars.yml and the shared skeleton variables of vars/main.yml are the same text in each role, but for its name."""
    texts = {}
    for role in ROLES:
        with open(os.path.join(ROLES_DIR, role, 'tasks', 'set_vars.yml'), encoding='utf-8') as tasks:
            set_vars = tasks.read().replace(role, 'ROLE')
        shared = {name: value for name, value in skeleton_vars(os.path.join(ROLES_DIR, role), role).items() if name in SHARED_VARS}
        texts[role] = (set_vars, json.dumps(shared, sort_keys=True).replace(role, 'ROLE'))
    assert len(set(texts.values())) == 1, texts


# ---- the guard fails where it should: a made-up role in tmp_path, good, then broken one way at a time ----------------
GOOD_MAIN = [
    {'name': 'Check every input', 'ansible.builtin.import_tasks': 'validate.yml', 'tags': ['demo', 'demo_validate', 'always']},
    {'name': 'Gather what the role needs', 'ansible.builtin.import_tasks': 'set_vars.yml', 'tags': ['demo', 'always']},
    {'name': 'Install', 'ansible.builtin.import_tasks': 'install.yml', 'tags': ['demo', 'demo_install']},
    {'name': 'Verify', 'ansible.builtin.include_tasks': {'file': 'verify.yml', 'apply': {'tags': ['demo', 'demo_verify']}},
     'when': 'demo_verify | bool', 'tags': ['demo', 'demo_verify']},
]


def _inline(main):
    main.insert(2, {'name': 'Do it here', 'ansible.builtin.command': {'argv': ['true']}, 'tags': ['demo', 'demo_install']})


def _validate_second(main):
    main[0], main[1] = main[1], main[0]


def _untagged(main):
    del main[2]['tags']


def _not_always(main):
    main[1]['tags'] = ['demo']


def _no_apply(main):
    main[3]['ansible.builtin.include_tasks'] = 'verify.yml'


def _block(main):
    main[2] = {'name': 'Install', 'block': [main[2]], 'tags': ['demo']}


BROKEN = {
    'an inline task': (_inline, "task 3 (Do it here) does work inline (ansible.builtin.command): main.yml holds imports only"),
    'a block': (_block, 'task 3 (Install) does work inline (block): main.yml holds imports only'),
    'set_vars first': (_validate_second, 'the first task must be import_tasks validate.yml tagged [demo, demo_validate, always]'),
    'an untagged import': (_untagged, "task 3 (Install): tagged [], not [demo, demo_<concern>] (or always)"),
    'set_vars not always': (_not_always, 'the second task must be import_tasks set_vars.yml tagged [demo, always]'),
    'an include without apply': (_no_apply, "task 4 (Verify): include_tasks must apply its tags ['demo', 'demo_verify'] to what"
                                            " it includes (apply: tags), not []"),
}


def _make_role(tmp_path, main, per_os=None):
    role = tmp_path / 'demo'
    (role / 'tasks').mkdir(parents=True)
    (role / 'vars').mkdir()
    (role / 'tasks' / 'main.yml').write_text(yaml.safe_dump(main), encoding='utf-8')
    for name in ('validate.yml', 'set_vars.yml', 'install.yml', 'verify.yml'):
        (role / 'tasks' / name).write_text('---\n[]\n', encoding='utf-8')
    (role / 'vars' / 'main.yml').write_text(yaml.safe_dump({'__demo_' + name: 'x' for name in SKELETON_VARS}), encoding='utf-8')
    for name, variables in (per_os or {'Debian.yml': {'__demo_packages': ['a']}, 'RedHat.yml': {'__demo_packages': ['b']}}).items():
        (role / 'vars' / name).write_text(yaml.safe_dump(variables), encoding='utf-8')
    return str(role)


def test_the_guard_passes_a_good_role(tmp_path):
    assert skeleton_problems(_make_role(tmp_path, [dict(task) for task in GOOD_MAIN])) == []


@pytest.mark.parametrize('case', sorted(BROKEN))
def test_the_guard_names_what_breaks_the_skeleton(tmp_path, case):
    main = [dict(task) for task in GOOD_MAIN]
    breaks, message = BROKEN[case]
    breaks(main)
    problems = skeleton_problems(_make_role(tmp_path, main))
    assert any(message in problem for problem in problems), problems


def test_the_guard_names_per_os_files_that_differ(tmp_path):
    role = _make_role(tmp_path, [dict(task) for task in GOOD_MAIN],
                      per_os={'Debian.yml': {'__demo_packages': ['a']}, 'RedHat.yml': {'__demo_other': 'b'}})
    assert skeleton_problems(role) == [
        "demo: the per-OS files set different variables: {'Debian.yml': ['__demo_packages'], 'RedHat.yml': ['__demo_other']}"]


# ---- set_vars.yml run for real, every OS case, each role ---------------------------------------------------------------
def expected_file(role, distribution, family):
    """The per-OS file set_vars.yml must load (vars/<distribution>.yml, else vars/<OS family>.yml), None: refused."""
    files = per_os_files(os.path.join(ROLES_DIR, role))
    return next((name for name in (distribution + '.yml', family + '.yml') if name in files), None)


@pytest.fixture(scope='module')
def set_vars_results(tmp_path_factory):
    """Every OS case through each role's set_vars.yml, in check mode and, for the first case, out of it (the play is
    in check mode; that case's include sets check_mode false: the probe must tell the difference)."""
    before = [{'name': 'Set the OS facts of the case',
               'ansible.builtin.set_fact': {'distribution': '{{ case_facts.distribution }}', 'os_family': '{{ case_facts.os_family }}',
                                            'kernel': '6.6.0-case', 'architecture': 'aarch64',
                                            'cacheable': True},
               'when': 'case_facts is defined'}]
    cases = [{'case_facts': facts} if facts else {} for facts in OS_CASES.values()]
    cases.append(dict(cases[0], case_check_mode=False))
    outcomes = {}
    for role in ROLES:
        names = sorted({name for variables in per_os_files(os.path.join(ROLES_DIR, role)).values() for name in variables})
        # The file loaded shows in what it sets (a role whose per-OS files set nothing: in being accepted at all);
        # __<role>_vars_file itself needs role_path, which the play after the role does not have.
        report = ("{'per_os': {%s}, 'check_mode': __%s_check_mode, 'distribution': ansible_facts.distribution,"
                  " 'family': ansible_facts.os_family, 'kernel': ansible_facts.kernel}"
                  % (', '.join("'%s': %s" % (name, name) for name in names), role))
        ran = role_harness.run_play(tmp_path_factory.mktemp(role + '-set-vars'), role, cases, tasks_from='set_vars', before=before,
                                    report=report, check_mode='{{ case_check_mode | default(true) }}')
        for index, name in enumerate(list(OS_CASES) + [NOT_IN_CHECK_MODE]):
            outcomes[(role, name)] = ('case%d' % index, ran[index])
    return outcomes


def _with_kernel(value, kernel):
    if isinstance(value, str):
        return value.replace(KERNEL, kernel)
    if isinstance(value, list):
        return [_with_kernel(item, kernel) for item in value]
    if isinstance(value, dict):
        return {key: _with_kernel(item, kernel) for key, item in value.items()}
    return value


@pytest.mark.parametrize('role', ROLES)
@pytest.mark.parametrize('name', sorted(OS_CASES))
def test_set_vars_loads_the_variables_of_the_os_or_refuses_it(set_vars_results, role, name):
    host, result = set_vars_results[(role, name)]
    facts = OS_CASES[name]
    supported = skeleton_vars(os.path.join(ROLES_DIR, role), role)['supported_os']
    if facts is None and not result['accepted']:
        # This machine's OS, refused: only right when the role has no file for it.
        pattern = re.escape(UNSUPPORTED_OS.format(role=role, distribution='DISTRIBUTION', family='FAMILY', host=host, supported=supported))
        found = re.fullmatch(pattern.replace('DISTRIBUTION', '(.+)').replace('FAMILY', '(.+)'), result['messages'][0])
        assert found and expected_file(role, found.group(1), found.group(2)) is None, result
        return
    if facts is not None and expected_file(role, facts['distribution'], facts['os_family']) is None:
        assert result['messages'] == [UNSUPPORTED_OS.format(role=role, distribution=facts['distribution'], family=facts['os_family'],
                                                            host=host, supported=supported)]
        return
    report = result['accepted']
    assert report, result
    vars_file = expected_file(role, report['distribution'], report['family'])
    assert vars_file, 'accepted an OS the role has no vars/ file for: %s' % report
    variables = _with_kernel(per_os_files(os.path.join(ROLES_DIR, role))[vars_file], report['kernel'])
    assert report == {'per_os': variables, 'check_mode': True, 'distribution': report['distribution'], 'family': report['family'],
                      'kernel': report['kernel']}
    if facts is not None:
        assert (report['distribution'], report['family'], report['kernel']) == (facts['distribution'], facts['os_family'], '6.6.0-case')


@pytest.mark.parametrize('role', ROLES)
def test_set_vars_tells_check_mode_set_on_an_include(set_vars_results, role):
    """check_mode false on the include, inside a play in check mode: ansible_check_mode would not tell, the probe does."""
    assert set_vars_results[(role, NOT_IN_CHECK_MODE)][1]['accepted']['check_mode'] is False


# ---- the entry points the playbooks, roles and scenarios call still exist ----------------------------------------------
def _role_calls(node):
    """(role, tasks_from) of every include_role or import_role of a collection role, anywhere in ``node``."""
    if isinstance(node, dict):
        for key in ('ansible.builtin.include_role', 'ansible.builtin.import_role', 'include_role', 'import_role'):
            call = node.get(key)
            if isinstance(call, dict) and str(call.get('name', '')).startswith('kunpeng_ascend.vllm.'):
                yield call['name'][len('kunpeng_ascend.vllm.'):], call.get('tasks_from', 'main')
        for value in node.values():
            yield from _role_calls(value)
    elif isinstance(node, list):
        for item in node:
            yield from _role_calls(item)


def test_every_entry_point_called_exists():
    calls = set()
    for top in ('roles', 'playbooks', 'molecule'):
        for folder, dummy, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith('.yml'):
                    calls |= {(role, tasks_from, os.path.relpath(os.path.join(folder, name), REPO))
                              for role, tasks_from in _role_calls(_load(os.path.join(folder, name)))}
    assert calls, 'no include_role found: the walk is broken'
    missing = sorted(call for call in calls
                     if not os.path.exists(os.path.join(ROLES_DIR, call[0], 'tasks', os.path.splitext(call[1])[0] + '.yml')))
    assert missing == []
