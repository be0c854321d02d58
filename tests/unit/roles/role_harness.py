# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Run a role's task file for many cases in ONE ``ansible-playbook`` run on this machine, in check mode.

A run costs seconds, so each case is a host of a generated inventory (all of them this machine, through the local
connection) with its variables as host variables, and the results are read from the default callback's JSON lines.
Used by the roles' tests; what runs must only read this machine (the validation and set_vars files do).

Also the collection's module_utils that a role ships to a host for its programs, laid out as the role lays them out:
the answer of the lookup the role's task loops over (module_utils_closure), for the programs of the role's files/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import yaml
from ansible.parsing.dataloader import DataLoader

from ansible_collections.kunpeng_ascend.vllm.plugins.lookup.module_utils_closure import LookupModule

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODULE_UTILS = os.path.join(REPO, 'plugins', 'module_utils')
# Where a program shipped to a host finds the collection's module_utils: under the lib/ beside it.
SHIPPED_MODULE_UTILS = ('ansible_collections', 'kunpeng_ascend', 'vllm', 'plugins', 'module_utils')


def run_play(tmp_path, role, cases, tasks_from='validate', before=(), report='true', check_mode=True):
    """Include ``role``'s ``tasks_from`` for each of ``cases`` (a list of host variable dicts), in check mode; return one
    result each: {'accepted': the value of ``report`` (a template) after the role} or {'accepted': False, 'messages': the
    messages of the task that refused}. ``before``: tasks to run first; ``check_mode``: the include's (the play runs in
    check mode).

    Each case is a host of the inventory (all of them this machine through the local connection) with its variables
    as host variables: one play runs them all, and Ansible loads the role's tasks once for all of them. A case that
    fails leaves the play; the others report that they got through."""
    inventory = {'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
        'hosts': {'case%d' % index: variables for index, variables in enumerate(cases)},
    }}
    play = {
        'name': 'Run %s of %s' % (tasks_from, role),
        'hosts': 'all',
        'gather_facts': False,
        'check_mode': True,
        'tasks': list(before) + [
            {'name': 'Run %s of %s' % (tasks_from, role),
             'ansible.builtin.include_role': {'name': 'kunpeng_ascend.vllm.' + role, 'tasks_from': tasks_from, 'public': True,
                                              'apply': {'check_mode': check_mode}}},
            {'name': 'Report the inputs accepted', 'ansible.builtin.debug': {'msg': {'accepted': '{{ %s }}' % report}}},
        ],
    }
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory, width=1000), encoding='utf-8')
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([play], width=1000), encoding='utf-8')
    env = dict(os.environ,
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.cache'),
               ANSIBLE_HOME=str(tmp_path / 'ansible-home'),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-local'),
               ANSIBLE_REMOTE_TEMP=str(tmp_path / 'ansible-remote'),
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default',
               ANSIBLE_CALLBACK_RESULT_FORMAT='json',
               ANSIBLE_CALLBACK_FORMAT_PRETTY='0',
               ANSIBLE_NOCOLOR='1',
               ANSIBLE_RETRY_FILES_ENABLED='0')
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    run = subprocess.run([ansible_playbook, '-i', 'inventory.yml', 'play.yml'], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, check=False)
    # The default callback, one JSON result a line: 'fatal: [case3]: FAILED! => {...}' for a task, 'failed: [case3]
    # (item=...) => {...}' for each failed item of a loop, 'ok: [case3] => {"msg": {"accepted": ...}}' at the end.
    messages, accepted = {}, {}
    for line in run.stdout.splitlines():
        failure = re.match(r'(?:fatal: \[(case\d+)\]: FAILED!|failed: \[(case\d+)\] \(item=.*?\)) => (\{.*\})$', line)
        success = re.match(r'ok: \[(case\d+)\] => (\{"msg": \{"accepted": .*\}\})$', line)
        if failure:
            messages.setdefault(failure.group(1) or failure.group(2), []).append(json.loads(failure.group(3))['msg'])
        elif success:
            accepted[success.group(1)] = json.loads(success.group(2))['msg']['accepted']
    names = ['case%d' % index for index in range(len(cases))]
    assert not set(accepted) & set(messages) and set(accepted) | set(messages) == set(names), run.stdout[-5000:] + run.stderr[-5000:]
    return [{'accepted': accepted[name]} if name in accepted else {'accepted': False, 'messages': messages[name]} for name in names]


def module_utils_closure(role, *programs):
    """The lookup's answer in a task of ``role``: the module_utils the ``programs`` (files of the role) import."""
    role_dir = os.path.join(REPO, 'roles', role)
    return LookupModule(loader=DataLoader()).run(list(programs), {'ansible_search_path': [role_dir], 'role_path': role_dir})


def ship_module_utils(lib, role, *programs, leave_out=()):
    """The module_utils ``role`` ships for its ``programs``, copied under ``lib`` in their import path as the role copies
    them, but those named in ``leave_out``; returns the names copied."""
    shipped = [name for name in module_utils_closure(role, *programs) if name not in leave_out]
    for name in shipped:
        target = os.path.join(str(lib), *SHIPPED_MODULE_UTILS + tuple(name.split('/')))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(os.path.join(MODULE_UTILS, name), target)
    return shipped


def _tasks(tasks):
    for task in tasks or []:
        yield task
        for section in ('block', 'rescue', 'always'):
            yield from _tasks(task.get(section))


def module_utils_copy_loops(role):
    """The loop of each copy task of ``role`` whose source is under the collection's plugins/module_utils/, by task
    file."""
    loops = {}
    tasks_dir = os.path.join(REPO, 'roles', role, 'tasks')
    for name in sorted(os.listdir(tasks_dir)):
        with open(os.path.join(tasks_dir, name), encoding='utf-8') as handle:
            for task in _tasks(yaml.safe_load(handle)):
                copy = task.get('ansible.builtin.copy') or {}
                if '/plugins/module_utils/' in str(copy.get('src', '')):
                    loops.setdefault(name, []).append(task.get('loop'))
    return loops
