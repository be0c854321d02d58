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
    assert model_dir_choice([], '/data/models') == {'chosen': None, 'directories': [], 'manifests': {}, 'problems': []}
    with pytest.raises(AnsibleFilterError, match='^model_dir_choice: root must be the absolute path'):
        model_dir_choice([], 'models')


def test_model_choice_passes_the_links_and_the_manifests():
    digest = '0' * 64
    files = [{'path': '/m/v1/SHA256SUMS', 'mtime': 2, 'isreg': True, 'isdir': False, 'islnk': False},
             {'path': '/m/v1/w', 'mtime': 1, 'isreg': False, 'isdir': False, 'islnk': True},
             {'path': '/m/blob', 'mtime': 1, 'isreg': True, 'isdir': False, 'islnk': False}]
    result = model_dir_choice(files, '/m/', {'/m/v1': '%s  w\n' % digest}, '/m/v1/w\0../blob\0')
    assert (result['chosen'], result['problems']) == ('/m/v1', [])


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


def test_rollback_plan_message_says_an_unknown_version_and_the_variable_never_none():
    result = stack_rollback_plan({'driver': '24.1.rc1', 'firmware': None}, {'driver': '24.1.0', 'firmware': 'None'},
                                 {'driver': '/p/d.run'}, where=['/p'])
    assert result['complete'] is False and result['hdk'] is None
    assert result['message'] == (
        "no known firmware version to go back to (neither the last known good's stack nor the installed stack gives "
        "one), so the rollback cannot put the driver and firmware back: set npu_driver_firmware_version and "
        "npu_driver_version to the known good's and run role npu_driver")
    with pytest.raises(AnsibleFilterError, match='^stack_previous_packages: the installed driver version must be'):
        stack_previous_packages({'driver': ['24.1.0']}, [])
    with pytest.raises(AnsibleFilterError, match='^stack_package_record: the version installed must be'):
        stack_package_record(None, {'v': 1}, {})
