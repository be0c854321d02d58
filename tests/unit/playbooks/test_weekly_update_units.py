# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The weekly update's systemd units (playbooks/weekly_update_schedule.yml), rendered with the playbook's own defaults
by Ansible's templating, checked by systemd-analyze verify, and the job's command line they would run."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 trusts every string
    def trust_as_template(text):
        return text

PLAYBOOKS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'playbooks')
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


def render(tmp_path, **overrides):
    """The service and the timer as the playbook writes them, under tmp_path, and the play's variables."""
    with open(os.path.join(PLAYBOOKS, 'weekly_update_schedule.yml'), encoding='utf-8') as handle:
        play = yaml.safe_load(handle)[0]
    variables = dict(((key, trust_as_template(value) if isinstance(value, str) else value)
                      for key, value in play['vars'].items()), weekly_update_inventory='/etc/ansible/fleet/inventory.yml',
                     weekly_update_model_root='/data/models', **overrides)
    templar = Templar(loader=DataLoader(), variables=variables)
    paths = {}
    for kind in ('service', 'timer'):
        with open(os.path.join(PLAYBOOKS, 'templates', 'weekly-update.%s.j2' % kind), encoding='utf-8') as handle:
            text = templar.template(trust_as_template(handle.read()))
        paths[kind] = tmp_path / ('%s.%s' % (variables['weekly_update_name'], kind))
        paths[kind].write_text(text, encoding='utf-8')
    return paths, variables


def unit_lines(path, key):
    return [line.split('=', 1)[1] for line in path.read_text(encoding='utf-8').splitlines() if line.startswith(key + '=')]


def test_timer_is_weekly_persistent_and_spread(tmp_path):
    paths, _variables = render(tmp_path)
    assert unit_lines(paths['timer'], 'OnCalendar') == ['Mon *-*-* 02:00:00']
    assert unit_lines(paths['timer'], 'Persistent') == ['true']
    assert unit_lines(paths['timer'], 'RandomizedDelaySec') == ['30min']
    assert unit_lines(paths['service'], 'Type') == ['oneshot']


def test_the_job_runs_the_weekly_update_playbook_with_the_root_and_batch(tmp_path):
    paths, _variables = render(tmp_path, weekly_update_batch=2,
                               weekly_update_extra_args=['--vault-password-file', '/etc/ansible/vault 50%.txt'])
    [exec_start] = unit_lines(paths['service'], 'ExecStart')
    # systemd's own quoting: the words shlex reads back, % doubled as systemd writes a literal %.
    assert shlex.split(exec_start) == [
        '/usr/bin/ansible-playbook', '-i', '/etc/ansible/fleet/inventory.yml', 'kunpeng_ascend.vllm.weekly_update',
        '-e', 'weekly_update_model_root=/data/models', '-e', 'ascend_rolling_batch=2',
        '--vault-password-file', '/etc/ansible/vault 50%%.txt']


@pytest.mark.needs_tools('systemd-analyze')
def test_systemd_analyze_verifies_the_units(tmp_path):
    paths, _variables = render(tmp_path, weekly_update_ansible_playbook=ANSIBLE_PLAYBOOK,
                               weekly_update_workdir=str(tmp_path))
    result = subprocess.run(['systemd-analyze', 'verify', str(paths['timer']), str(paths['service'])],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert 'weekly-update' not in result.stderr, result.stderr


@pytest.mark.needs_tools('systemd-analyze')
def test_systemd_analyze_refuses_a_broken_calendar(tmp_path):
    """The check above can fail: a calendar systemd cannot read is reported."""
    paths, _variables = render(tmp_path, weekly_update_ansible_playbook=ANSIBLE_PLAYBOOK,
                               weekly_update_workdir=str(tmp_path), weekly_update_on_calendar='every blue moon')
    result = subprocess.run(['systemd-analyze', 'verify', str(paths['timer']), str(paths['service'])],
                            capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert 'Failed to parse calendar specification, ignoring: every blue moon' in result.stderr
