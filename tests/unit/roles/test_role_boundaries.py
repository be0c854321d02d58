# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Roles talk only through what they declare: a role reads another role's exported facts (``<role>_report``,
``vllm_service_plan``, ``vllm_service_credentials``), sets another role's options only where it includes that role (the ``vars`` of an
``include_role``, which must be options of that role's argument spec), and never reads another role's defaults,
vars or task files by path nor its other variables.

The crossings this test still finds are listed in KNOWN_CROSSINGS with the issue that removes them; an entry that no
longer crosses fails the test, so the list only shrinks."""

from __future__ import annotations

import os
import re

import yaml

from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import REPO

ROLES_DIR = os.path.join(REPO, 'roles')
_BY_PATH = re.compile(r'role_path\s*~\s*[\'"]/\.\./')
# Exported facts: the reports, the serving plan and the key for the service's clients, and the path the internal role package_fetch gives
# the roles that include it.
EXPORTED = re.compile(r'^[a-z][a-z0-9_]*_report$|^vllm_service_(credentials|plan)$|^package_fetch_path$')
_JINJA = re.compile(r'\{\{(.*?)\}\}|\{%(.*?)%\}', re.S)
_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"")
_COMMENT = re.compile(r'\{#.*?#\}', re.S)
# Task keys whose value is a bare Jinja expression.
_BARE = ('when', 'that', 'until', 'changed_when', 'failed_when', 'loop', 'with_items', 'with_dict', 'with_list')


def _expressions(text, bare=False):
    """The Jinja code in ``text`` (all of it when ``bare``), without its string literals: messages may name a
    variable, code that reads one is what counts."""
    text = _COMMENT.sub('', text)
    parts = [text] if bare else [first or second for first, second in _JINJA.findall(text)]
    return [_LITERAL.sub("''", part) for part in parts]


# The crossings left, by (role, other role's variable): each goes with the change named. None is left: the doctor
# learns the service from the host's deployment record (issue "Know what is wrong").
KNOWN_CROSSINGS = set()


def _spec_options(roles_dir, role):
    """Every option of every entry point of ``role``'s argument spec."""
    path = os.path.join(roles_dir, role, 'meta', 'argument_specs.yml')
    if not os.path.exists(path):
        return set()
    with open(path) as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    return {name for entry in specs.values() for name in (entry.get('options') or {})}


def _strings(node):
    for _key, value in _keyed_strings(node):
        yield value


def _keyed_strings(node, key=None):
    """(the nearest mapping key, string) for every string in ``node``."""
    if isinstance(node, str):
        yield key, node
    elif isinstance(node, dict):
        for name, value in node.items():
            yield from _keyed_strings(name, key)
            yield from _keyed_strings(value, name)
    elif isinstance(node, list):
        for item in node:
            yield from _keyed_strings(item, key)


def _included_role(task):
    for key in ('ansible.builtin.include_role', 'include_role', 'ansible.builtin.import_role', 'import_role'):
        if isinstance(task, dict) and isinstance(task.get(key), dict):
            return task[key].get('name', '').rsplit('.', 1)[-1]
    return None


def _walk_tasks(tasks, inherited_vars=None):
    """(task, the vars that set options of an included role: {name: role}) for every task, blocks included. A
    block's vars count for the include_role tasks inside it."""
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        if 'block' in task:
            block_vars = dict(inherited_vars or {}, **(task.get('vars') or {}))
            for part in ('block', 'rescue', 'always'):
                yield from _walk_tasks(task.get(part), block_vars)
            yield {key: value for key, value in task.items() if key not in ('block', 'rescue', 'always', 'vars')}, {}
            continue
        yield task, dict(inherited_vars or {}) if _included_role(task) else {}


def crossings(roles_dir=ROLES_DIR):
    """{(role, name): [where]} for every reference of a role under ``roles_dir`` to another role's variable or files
    that is not declared."""
    roles = sorted(name for name in os.listdir(roles_dir) if os.path.isdir(os.path.join(roles_dir, name)))
    # Longest first, so that vllm_service_x is vllm_service's and not a shorter role's.
    owned = re.compile(r'(?<![A-Za-z0-9_.])(%s)_[a-z0-9_]+' % '|'.join(sorted(roles, key=len, reverse=True)))
    found = {}
    options = {role: _spec_options(roles_dir, role) for role in roles}

    def note(role, name, where):
        owner = owned.match(name).group(1)
        if owner == role or EXPORTED.match(name):
            return
        found.setdefault((role, name), []).append(where)

    for role in roles:
        base = os.path.join(roles_dir, role)
        for sub in ('tasks', 'handlers', 'vars', 'defaults', 'templates'):
            folder = os.path.join(base, sub)
            for file_name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
                path = os.path.join(folder, file_name)
                where = '%s/%s' % (sub, file_name)
                with open(path) as handle:
                    text = handle.read()
                if sub in ('tasks', 'handlers', 'vars', 'defaults') and file_name.endswith('.yml'):
                    data = yaml.safe_load(text)
                    if any(_BY_PATH.search(value) for value in _strings(data)):
                        found.setdefault((role, 'role_path/../'), []).append(where)
                    if sub not in ('tasks', 'handlers'):
                        for value in _strings(data):
                            for code in _expressions(value):
                                for match in owned.finditer(code):
                                    note(role, match.group(0), where)
                        continue
                    for task, include_vars in _walk_tasks(data):
                        included = _included_role(task)
                        task_vars = dict(include_vars, **(task.get('vars') or {})) if included else {}
                        for name in task_vars:
                            # Setting an option of the included role: it must be one it declares.
                            if owned.match(name) and owned.match(name).group(1) == included and name not in options[included]:
                                found.setdefault((role, name), []).append(where + ' (no option of %s)' % included)
                        values = [(key, value) for key, value in task.items() if key != 'vars']
                        values += [('vars', value) for value in task_vars.values()]
                        if not included:
                            values += [('vars', value) for value in (task.get('vars') or {}).values()]
                        for key, value in values:
                            for inner, text_value in _keyed_strings(value, key):
                                for code in _expressions(text_value, bare=inner in _BARE):
                                    for match in owned.finditer(code):
                                        note(role, match.group(0), where)
                else:
                    if _BY_PATH.search(text):
                        found.setdefault((role, 'role_path/../'), []).append(where)
                    for code in _expressions(text):
                        for match in owned.finditer(code):
                            note(role, match.group(0), where)
    return found


def test_no_role_crosses_another_role_s_boundary():
    found = crossings()
    unexpected = {key: where for key, where in found.items() if key not in KNOWN_CROSSINGS}
    assert unexpected == {}, '\n'.join('%s reads %s (%s)' % (role, name, ', '.join(sorted(set(where))))
                                       for (role, name), where in sorted(unexpected.items()))


def test_the_known_crossings_are_still_crossings():
    stale = sorted(KNOWN_CROSSINGS - set(crossings()))
    assert stale == [], 'no longer crossing, drop from KNOWN_CROSSINGS: %s' % stale


def test_the_rule_catches_a_read_a_path_and_an_undeclared_option(tmp_path):
    roles = tmp_path / 'roles'
    for role in ('vllm_service', 'vllm_benchmark'):
        (roles / role / 'tasks').mkdir(parents=True)
        (roles / role / 'meta').mkdir()
    (roles / 'vllm_service' / 'meta' / 'argument_specs.yml').write_text(
        'argument_specs: {main: {options: {vllm_service_port: {type: int}}}}\n')
    (roles / 'vllm_benchmark' / 'meta' / 'argument_specs.yml').write_text('argument_specs: {main: {options: {}}}\n')
    (roles / 'vllm_benchmark' / 'tasks' / 'main.yml').write_text(yaml.safe_dump([
        {'name': 'read', 'ansible.builtin.debug': {'msg': '{{ vllm_service_api_key }} {{ vllm_service_report.unit }}'}},
        {'name': 'bare', 'ansible.builtin.assert': {'that': ['vllm_service_mode == "native"'],
                                                    'fail_msg': "set vllm_service_host {{ 'or vllm_service_port' }}"}},
        {'name': 'by path', 'ansible.builtin.include_vars': {'file': "{{ role_path ~ '/../vllm_service/defaults/main.yml' }}"}},
        {'name': 'set', 'ansible.builtin.include_role': {'name': 'kunpeng_ascend.vllm.vllm_service'},
         'vars': {'vllm_service_port': 1, 'vllm_service_nope': 2}},
        {'block': [{'name': 'inner', 'ansible.builtin.include_role': {'name': 'kunpeng_ascend.vllm.vllm_service'}}],
         'vars': {'vllm_service_port': '{{ vllm_service_gate }}'}},
    ]))
    found = crossings(str(roles))
    # Messages that name a variable (in text or a string literal) are no reads.
    assert set(found) == {('vllm_benchmark', 'vllm_service_api_key'), ('vllm_benchmark', 'role_path/../'),
                          ('vllm_benchmark', 'vllm_service_mode'),
                          ('vllm_benchmark', 'vllm_service_nope'), ('vllm_benchmark', 'vllm_service_gate')}


def test_vllm_benchmark_deploys_every_serving_parameter_the_plan_records():
    """A grid point or the restore sets each serving parameter of the report (SERVING_PARAMS), and only those: one
    left out would be deployed as the role's default instead of the service's value."""
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import SERVING_PARAMS
    with open(os.path.join(ROLES_DIR, 'vllm_benchmark', 'tasks', 'deploy.yml')) as handle:
        tasks = yaml.safe_load(handle)
    variables = tasks[0]['vars']
    assert sorted(variables) == sorted('vllm_service_' + name for name in SERVING_PARAMS)
    assert all(variables['vllm_service_' + name] == '{{ __vllm_benchmark_service.%s }}' % name for name in SERVING_PARAMS)
