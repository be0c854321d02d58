# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The stack upgrade's and the weekly update's filters: what they pass to module_utils, and their refusals."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.stack_upgrade import (
    FilterModule,
    model_dir_choice,
    stack_package_record,
    stack_previous_packages,
    stack_rollback_plan,
    stack_upgrade_steps,
)


def test_every_filter_is_registered():
    assert sorted(FilterModule().filters()) == ['model_dir_choice', 'stack_package_record', 'stack_previous_packages',
                                                'stack_rollback_plan', 'stack_upgrade_steps']


def test_steps_refuse_what_is_not_a_dict_or_a_component():
    with pytest.raises(AnsibleFilterError, match='wanted .the versions to install. must be a dict, not list'):
        stack_upgrade_steps({}, [])
    with pytest.raises(AnsibleFilterError, match='stack_upgrade_steps: unknown stack component.s. cann'):
        stack_upgrade_steps({'cann': '8.1.RC1'}, {})


def test_previous_packages_add_the_message_with_the_folders():
    result = stack_previous_packages({'toolkit': '8.1.RC1'}, ['/p/Ascend-cann-nnal_8.1.RC1_linux-x86_64.run'],
                                     where=['/p', '/etc/ascend/cann-packages.json'])
    assert result['complete'] is False
    assert result['message'] == ('no package of the installed toolkit 8.1.RC1 (Ascend-cann-toolkit_8.1.RC1_linux-<arch>.run)'
                                 ' in /p, /etc/ascend/cann-packages.json')
    with pytest.raises(AnsibleFilterError, match='files must be a list of paths'):
        stack_previous_packages({}, '/p')


def test_package_record_and_model_choice_refuse_bad_input():
    assert stack_package_record(None, '8.2.RC1', None) == {'current': {'version': '8.2.RC1', 'packages': {}},
                                                           'previous': None}
    with pytest.raises(AnsibleFilterError, match='packages must be a dict'):
        stack_package_record(None, '8.2.RC1', ['/p'])
    with pytest.raises(AnsibleFilterError, match='the input must be the list of files'):
        model_dir_choice({'files': []}, '/data/models')
    assert model_dir_choice([], '/data/models') == {'chosen': None, 'directories': []}


def test_rollback_plan_refuses_bad_input_and_takes_null_found():
    with pytest.raises(AnsibleFilterError, match='installed .the installed versions. must be a dict, not str'):
        stack_rollback_plan({}, 'x')
    with pytest.raises(AnsibleFilterError, match='stack_rollback_plan: unknown stack component.s. cann in the stack'):
        stack_rollback_plan({'cann': '8.1.RC1'}, {})
    result = stack_rollback_plan({'cann_toolkit': '8.1.RC1', 'cann_kernels': '8.1.RC1'},
                                 {'toolkit': '8.2.RC1', 'kernels': '8.2.RC1'}, None, where=['/p'])
    assert result['needs'] == {'toolkit': '8.1.RC1', 'kernels': '8.1.RC1'}
    assert result['message'].startswith('no package of the installed toolkit 8.1.RC1 (Ascend-cann-toolkit_8.1.RC1_')
    assert result['message'].endswith(') in /p')
