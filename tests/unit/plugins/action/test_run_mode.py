# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_mode: check mode and diff mode as the task runs them, from the command line and from check_mode on a block,
an include or the task, without a connection to the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import TESTS

PLAYBOOK = """
- hosts: unreachable-host
  gather_facts: false
  tasks:
    - name: plain
      kunpeng_ascend.vllm.run_mode:
    - name: check mode on the task
      kunpeng_ascend.vllm.run_mode:
      check_mode: true
    - name: check mode off on the task
      kunpeng_ascend.vllm.run_mode:
      check_mode: false
    - name: a block in check mode
      check_mode: true
      diff: true
      block:
        - name: in the block
          kunpeng_ascend.vllm.run_mode:
"""


# The roles' shared start: an OS without per-OS variables is refused in the probe's task, before anything else runs.
REFUSING_PLAYBOOK = """
- hosts: unreachable-host
  gather_facts: false
  tasks:
    - name: supported
      kunpeng_ascend.vllm.run_mode:
        supported: "{{ 'Debian.yml' | length > 0 }}"
        fail_msg: never shown
    - name: not supported
      kunpeng_ascend.vllm.run_mode:
        supported: "{{ '' | length > 0 }}"
        fail_msg: my_role does not support Arch Linux
    - name: never reached
      kunpeng_ascend.vllm.run_mode:
"""


def play(tmp_path, text, *args):
    """ansible-playbook on ``text`` against a host that does not exist (the action must not connect to it): the
    return code and each task's result on the host, by task name."""
    (tmp_path / 'play.yml').write_text(text, encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.abspath(os.path.join(TESTS, *[os.pardir] * 4)),
               ANSIBLE_STDOUT_CALLBACK='json', ANSIBLE_LOAD_CALLBACK_PLUGINS='1')
    env.pop('ANSIBLE_CALLBACKS_ENABLED', None)
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    # The host does not exist: the action must not connect to it.
    completed = subprocess.run([playbook, '-i', 'unreachable-host,', '-e', 'ansible_host=192.0.2.1',
                                '-e', 'ansible_connection=ssh', str(tmp_path / 'play.yml')] + list(args),
                               env=env, capture_output=True, text=True, check=False)
    tasks = json.loads(completed.stdout)['plays'][0]['tasks']
    return completed, {task['task']['name']: task['hosts']['unreachable-host'] for task in tasks}


def run(tmp_path, *args):
    completed, results = play(tmp_path, PLAYBOOK, *args)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return {name: (result['check_mode'], result['diff_mode'], result['changed']) for name, result in results.items()}


@pytest.mark.parametrize('args, plain, block', [
    ((), (False, False, False), (True, True, False)),
    (('--check',), (True, False, False), (True, True, False)),
    (('--check', '--diff'), (True, True, False), (True, True, False)),
])
def test_the_mode_of_each_task(tmp_path, args, plain, block):
    modes = run(tmp_path, *args)
    assert modes['plain'] == plain
    assert modes['check mode on the task'] == (True,) + plain[1:]
    assert modes['check mode off on the task'] == (False,) + plain[1:]
    assert modes['in the block'] == block


def test_an_unsupported_host_is_refused_with_the_message_and_the_play_stops_there(tmp_path):
    completed, results = play(tmp_path, REFUSING_PLAYBOOK, '--check')
    assert completed.returncode == 2
    assert results['supported']['check_mode'] is True and not results['supported'].get('failed')
    assert results['not supported']['failed'] is True
    assert results['not supported']['msg'] == 'my_role does not support Arch Linux'
    assert 'check_mode' not in results['not supported']
    assert 'never reached' not in results
