# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_service_npu_smi_path reaches every npu-smi the role runs: the unit's wait for free NPUs before each start
(roles/vllm_service/templates/vllm.service.j2), and the npu_smi_info calls of preflight and stop, which name it."""

from __future__ import annotations

import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _serving
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import a2_facts, inputs
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.test_vllm_service_unit import render

yaml = pytest.importorskip('yaml')
TASKS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'roles', 'vllm_service', 'tasks')


def npu_wait_line(unit):
    return next(line for line in unit.splitlines() if line.startswith('ExecStartPre=+/usr/bin/python3 ')
                and '/npu-free-wait ' in line)


def test_the_units_wait_runs_the_npu_smi_the_user_gives():
    plan = _serving.serving_plan(inputs(), a2_facts())
    assert plan['problems'] == []
    assert npu_wait_line(render(plan)).endswith('--interval 2')
    assert npu_wait_line(render(plan, vllm_service_npu_smi_path='/opt/ascend/bin/npu-smi')).endswith(
        '--interval 2 --npu-smi /opt/ascend/bin/npu-smi')


def test_every_npu_smi_info_call_of_the_role_names_the_roles_variable():
    calls = []
    for name in sorted(os.listdir(TASKS)):
        with open(os.path.join(TASKS, name), encoding='utf-8') as handle:
            for task in yaml.safe_load(handle) or []:
                if 'kunpeng_ascend.vllm.npu_smi_info' in task:
                    calls.append((name, task['kunpeng_ascend.vllm.npu_smi_info']))
    assert [name for name, _args in calls] == ['preflight.yml', 'stop.yml']
    for _name, args in calls:
        assert args['npu_smi_path'] == '{{ vllm_service_npu_smi_path }}'
        assert args['npu_smi_path_option'] == 'vllm_service_npu_smi_path'


def test_an_npu_smi_path_the_unit_cannot_run_is_refused_by_name():
    assert _serving.check_inputs(inputs(npu_smi_path='/opt/my tools/npu-smi')) == [
        'vllm_service_npu_smi_path must be null or an absolute path of letters, digits and ._+,:@=/- (the unit runs '
        'it); got "/opt/my tools/npu-smi"']
    assert _serving.check_inputs(inputs(npu_smi_path='/usr/local/sbin/npu-smi')) == []
