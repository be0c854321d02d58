# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role vllm_service's environment file round trip, in one ansible-playbook run on this machine: the role's own
template (templates/vllm.env.j2) writes the file, and the rollback's own task (tasks/rollback.yml, read from the file,
not copied) reads the API key back from it for the health gate. Every key the role accepts - printable, quotes,
backslashes, $, # and the rest - comes back as itself, as systemd gives it to the service (checked with this
machine's systemd where it can tell)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.common.test__systemd import _systemd_reads

yaml = pytest.importorskip('yaml')

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(REPO, 'roles', 'vllm_service')
PRINTABLE = ''.join(chr(code) for code in range(0x21, 0x7f))
# Keys as validate.yml accepts them (16 to 4096 printable characters without blanks), the hostile ones first.
KEYS = [
    'sk-"quoted"-0123456789', 'sk-back\\slash-0123456789', 'sk-\\"both\\"-0123456789', 'sk-trailing-0123456789\\',
    '"sk-leading-quote-0123', 'sk-$HOME-${PATH}-$(id)-`id`', 'sk-#not-a-comment;nor-this', "sk-'single'-0123456789",
    '\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\', '""""""""""""""""', PRINTABLE, PRINTABLE[::-1], 'sk-plain-0123456789abcdef',
]
# The plan's environment beside the key: blanks and quotes in a value stay as they are too.
ENVIRONMENT = {'HF_HUB_OFFLINE': '1', 'PYTORCH_NPU_ALLOC_CONF': 'expandable_segments:True',
               'EXTRA': ' a "quoted" \\ value with $ and # ', 'B_LOWER': 'x'}


def role_variable(name):
    """One of the role's variables as its vars/main.yml gives it."""
    with open(os.path.join(ROLE, 'vars', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)[name]


def rollback_key_task():
    """The rollback's task that reads the key back, as tasks/rollback.yml has it (without its condition)."""
    with open(os.path.join(ROLE, 'tasks', 'rollback.yml'), encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle)
    task = next(task for task in tasks if task.get('name') == "Keep the restored service's key for the gate")
    return {key: value for key, value in task.items() if key != 'when'}


def run_round_trip(tmp_path, keys):
    """{index: (the file the role wrote, the key the rollback read back)} for each of ``keys``."""
    out = tmp_path / 'out'
    out.mkdir()
    case_tasks = [
        # A fact, as in the role (checks.yml): the rollback's task below sets the same fact.
        {'name': 'Keep the key as the role does', 'ansible.builtin.set_fact': {'__vllm_service_key': '{{ keys[index | int] }}'}},
        {'name': 'Write the environment file as the role does',
         'ansible.builtin.template': {'src': os.path.join(ROLE, 'templates', 'vllm.env.j2'),
                                      'dest': '%s/env{{ index }}' % out, 'mode': '0600'},
         'vars': {'__vllm_service_environment': '{{ plan_environment }}', '__vllm_service_unit': 'vllm.service',
                  # The values as the role's vars/main.yml computes them (the environment and the key).
                  '__vllm_service_env_values': role_variable('__vllm_service_env_values')}},
        {'name': 'Forget the key before the rollback reads it back', 'ansible.builtin.set_fact': {'__vllm_service_key': ''}},
        {'name': 'Read it as the rollback does', 'ansible.builtin.slurp': {'src': '%s/env{{ index }}' % out},
         'register': '__vllm_service_restored_env'},
        rollback_key_task(),
        {'name': 'Report', 'ansible.builtin.debug': {'msg': {'index': '{{ index | int }}', 'read': '{{ __vllm_service_key }}'}}},
    ]
    (tmp_path / 'case.yml').write_text(yaml.safe_dump(case_tasks, width=1000), encoding='utf-8')
    play = [{'name': 'Round trip', 'hosts': 'localhost', 'gather_facts': False,
             'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
             'tasks': [{'name': 'Each key', 'ansible.builtin.include_tasks': str(tmp_path / 'case.yml'),
                        'loop': list(range(len(keys))), 'loop_control': {'loop_var': 'index'}}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play, width=1000), encoding='utf-8')
    (tmp_path / 'vars.json').write_text(json.dumps({'keys': keys, 'plan_environment': ENVIRONMENT}), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.cache'),
               ANSIBLE_HOME=str(tmp_path / 'ansible-home'), ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-local'),
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json', ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0', ANSIBLE_RETRY_FILES_ENABLED='0')
    env.pop('ANSIBLE_CALLBACKS_ENABLED', None)
    completed = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), 'play.yml',
                                '-e', '@vars.json'], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                               check=False)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = {}
    for play_result in json.loads(completed.stdout)['plays']:
        for task in play_result['tasks']:
            if task['task']['name'] == 'Report':
                message = task['hosts']['localhost']['msg']
                index = int(message['index'])
                results[index] = ((out / ('env%d' % index)).read_text(encoding='utf-8'), message['read'])
    assert sorted(results) == list(range(len(keys)))
    return results


@pytest.fixture(scope='module')
def round_trip(tmp_path_factory):
    return run_round_trip(tmp_path_factory.mktemp('env-file'), KEYS)


def test_every_key_the_role_writes_is_the_key_the_rollback_reads_back(round_trip, tmp_path):
    assert [round_trip[index][1] for index in range(len(KEYS))] == KEYS
    for index, key in enumerate(KEYS):
        written = round_trip[index][0]
        # The file holds the plan's environment beside the key.
        assert written.startswith('# #\n# Ansible managed\n#\n# Environment of vllm.service')
        assert [line.split('=', 1)[0] for line in written.splitlines() if not line.startswith('#')] == [
            'B_LOWER', 'EXTRA', 'HF_HUB_OFFLINE', 'PYTORCH_NPU_ALLOC_CONF', 'VLLM_API_KEY']
        # systemd (where this machine's can tell) gives the service the same key and values.
        assert _systemd_reads(tmp_path, written, dict(ENVIRONMENT, VLLM_API_KEY=key)) in (True, None), written


def test_plain_values_are_written_as_before_so_an_upgrade_restarts_nothing(round_trip):
    written = round_trip[KEYS.index('sk-plain-0123456789abcdef')][0]
    assert written.endswith('\nB_LOWER="x"\nEXTRA=\\ a\\ \\"quoted\\"\\ \\\\\\ value\\ with\\ \\$\\ and\\ \\#\\ \n'
                            'HF_HUB_OFFLINE="1"\nPYTORCH_NPU_ALLOC_CONF="expandable_segments:True"\n'
                            'VLLM_API_KEY="sk-plain-0123456789abcdef"\n')
