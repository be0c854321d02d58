# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The restart_storm filter (playbooks/health.yml): the doctor's finding from the text health.yml reads."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.doctor import FilterModule
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

restart_storm = FilterModule().filters()['restart_storm']

GAVE_UP = ('LoadState=loaded\nActiveState=failed\nSubState=failed\nNRestarts=5\nResult=start-limit-hit\n'
           'StartLimitBurst=5\n')


def test_a_unit_that_gave_up_fails_with_its_last_failure_lines():
    journal = load_fixture('journal_vllm-0.32.0-cpu_headless-rank-killed_restarts.txt')
    result = restart_storm(GAVE_UP, 'vllm.service', journal)
    assert result['check'] == 'restart_storm' and result['status'] == 'fail'
    assert result['details']['NRestarts'] == 5 and result['details']['StartLimitBurst'] == 5
    assert result['details']['last_failure_lines'][-1] == "vllm.service: Failed with result 'timeout'."


def test_a_missing_unit_and_no_systemd_are_skipped():
    assert restart_storm('LoadState=not-found\nActiveState=inactive\n', 'vllm.service')['status'] == 'skipped'
    assert restart_storm('', 'vllm.service')['status'] == 'skipped'


def test_a_running_unit_is_no_storm():
    show = 'LoadState=loaded\nActiveState=active\nSubState=running\nNRestarts=0\nResult=success\nStartLimitBurst=5\n'
    assert restart_storm(show, 'vllm.service')['status'] == 'ok'


def test_the_inputs_must_be_text():
    with pytest.raises(AnsibleFilterError, match='must be strings'):
        restart_storm({'NRestarts': 1}, 'vllm.service')
