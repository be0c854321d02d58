# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The host roles' decisions (package_fetch, container_runtime, npu_driver), as their Jinja made them before."""

from __future__ import annotations

import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._host_roles import (
    containerd_config_version,
    npu_driver_after,
    npu_driver_skip_checks,
    npu_driver_state,
    package_target,
    per_component,
    reboot_needed,
    runtime_report,
)


@pytest.mark.parametrize('source, expected', [
    ({'path': '/opt/pkgs/Ascend-hdk-910b-npu-driver.run'}, {'path': '/opt/pkgs/Ascend-hdk-910b-npu-driver.run', 'mode': '0755'}),
    ({'src': 'files/Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run'},
     {'path': '/var/cache/ascend/Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run', 'mode': '0755'}),
    ({'url': 'https://repo.example/a/b/toolkit.zip?token=x#frag', 'checksum': 'sha256:0'},
     {'path': '/var/cache/ascend/toolkit.zip', 'mode': '0644'}),
    ({'url': 'https://repo.example/pkgs/driver.run'}, {'path': '/var/cache/ascend/driver.run', 'mode': '0755'}),
    ({'src': '/srv/x.run.tar.gz'}, {'path': '/var/cache/ascend/x.run.tar.gz', 'mode': '0644'}),
], ids=['path', 'src run', 'url zip without query', 'url run', 'run inside a name'])
def test_package_target_is_the_path_given_else_the_file_name_under_the_directory(source, expected):
    assert package_target(source, '/var/cache/ascend') == expected


def test_package_target_prefers_path_over_src_and_src_over_url():
    assert package_target({'path': '/p/a.deb', 'src': 'b.run'}, '/d')['path'] == '/p/a.deb'
    assert package_target({'src': 'b.run', 'url': 'https://h/c.run'}, '/d')['path'] == '/d/b.run'


@pytest.mark.parametrize('output, expected', [
    ('containerd containerd.io 1.7.25 bcc810d6b9066471b0b6fa75f557a15a1cbf31bb\n', 2),
    ('containerd github.com/containerd/containerd/v2 v2.0.2 c507a0257ea6462fbd6f5ba4f5c74facb04021f4\n', 3),
    ('containerd github.com/containerd/containerd v1.6.20 2806fc1057397dbaeefbea0e4e17bddfbd388f38\n', 2),
    ('', None), (None, None), ('containerd: command not found', None),
])
def test_containerd_config_version_follows_the_major_version(output, expected):
    assert containerd_config_version(output) == expected


def test_runtime_report_predicts_from_the_variables_in_check_mode():
    assert runtime_report('docker', None, 'ascend', True, True, predict=True) == {
        'engine': 'docker', 'runtimes': ['ascend'], 'default_runtime': 'ascend', 'ascend_runtime': True,
        'verified': False}
    assert runtime_report('containerd', None, 'ascend', True, False, predict=True)['default_runtime'] is None
    assert runtime_report('podman', None, 'ascend', False, True, predict=True) == {
        'engine': 'podman', 'runtimes': [], 'default_runtime': None, 'ascend_runtime': False, 'verified': False}


def test_runtime_report_reads_docker_info():
    info = json.dumps({'Runtimes': {'runc': {'path': 'runc'}, 'ascend': {'path': '/usr/local/Ascend/x'}},
                       'DefaultRuntime': 'ascend'})
    assert runtime_report('docker', info, 'ascend', True, True) == {
        'engine': 'docker', 'runtimes': ['ascend', 'runc'], 'default_runtime': 'ascend', 'ascend_runtime': True,
        'verified': True}
    assert runtime_report('docker', '{}', 'ascend', True, True) == {
        'engine': 'docker', 'runtimes': [], 'default_runtime': None, 'ascend_runtime': False, 'verified': True}


def test_runtime_report_reads_the_runtime_podman_uses():
    info = json.dumps({'host': {'ociRuntime': {'name': 'crun', 'path': '/usr/bin/crun'}}})
    assert runtime_report('podman', info, 'ascend', True, False) == {
        'engine': 'podman', 'runtimes': ['crun'], 'default_runtime': 'crun', 'ascend_runtime': False, 'verified': True}
    assert runtime_report('podman', json.dumps({'host': {}}), 'ascend', True, False)['runtimes'] == ['unknown']
    assert runtime_report('podman', json.dumps({'host': {'ociRuntime': {'name': 'ascend'}}}), 'ascend', True,
                          False)['ascend_runtime'] is True


def test_runtime_report_reads_the_runtimes_of_containerd_config_dump():
    dump = '\n'.join([
        'version = 2',
        '[plugins."io.containerd.grpc.v1.cri".containerd]',
        '  default_runtime_name = "ascend"',
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
        '    runtime_type = "io.containerd.runc.v2"',
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ascend]',
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes."runc"]',
    ])
    assert runtime_report('containerd', dump, 'ascend', True, True) == {
        'engine': 'containerd', 'runtimes': ['ascend', 'runc'], 'default_runtime': 'ascend', 'ascend_runtime': True,
        'verified': True}
    assert runtime_report('containerd', "default_runtime_name = 'runc'", 'ascend', True, False) == {
        'engine': 'containerd', 'runtimes': [], 'default_runtime': 'runc', 'ascend_runtime': False, 'verified': True}


def test_runtime_report_refuses_docker_info_that_is_no_json():
    with pytest.raises(ValueError):
        runtime_report('docker', 'Cannot connect to the Docker daemon', 'ascend', True, True)


def test_npu_driver_state_on_a_fresh_host_installs_the_driver_first():
    assert npu_driver_state({'driver': None, 'firmware': None}, '25.2.0', '7.7.0.6.236') == {
        'installed': {'driver': None, 'firmware': None}, 'change_needed': True, 'order': ['driver', 'firmware']}


def test_npu_driver_state_upgrades_the_firmware_first_and_compares_as_lower_case_text():
    ascend = {'driver': {'version': '24.1.RC3'}, 'firmware': {'version': '7.5.0.1.129'}}
    state = npu_driver_state(ascend, '25.2.0', '7.7.0.6.236')
    assert state == {'installed': {'driver': '24.1.RC3', 'firmware': '7.5.0.1.129'}, 'change_needed': True,
                     'order': ['firmware', 'driver']}
    assert npu_driver_state(ascend, '24.1.rc3', '7.5.0.1.129')['change_needed'] is False
    assert npu_driver_state(ascend, '24.1.RC3', '7.5.0.1.130')['change_needed'] is True
    # A number in the inventory compares as its text.
    assert npu_driver_state({'driver': {'version': '25.0'}, 'firmware': {'version': '7'}}, 25.0, 7)['change_needed'] is False


def test_npu_driver_after_reads_the_facts_outside_check_mode():
    ascend = {'driver': {'version': '25.2.0'}, 'firmware': None}
    assert npu_driver_after([{'skipped': True}], ascend, False, True) == {
        'driver': '25.2.0', 'firmware': None, 'checkable': True}
    # Check mode without a change: the versions read before.
    assert npu_driver_after([], ascend, True, False)['checkable'] is True


def test_npu_driver_after_predicts_in_check_mode_from_both_packages_or_cannot_check():
    results = [{'component': 'firmware', 'after': '7.7.0.6.236'}, {'component': 'driver', 'after': '25.2.0'}]
    assert npu_driver_after(results, {'driver': None, 'firmware': None}, True, True) == {
        'driver': '25.2.0', 'firmware': '7.7.0.6.236', 'checkable': True}
    one = [{'component': 'firmware', 'after': '7.7.0.6.236'}, {'skipped': True}]
    assert npu_driver_after(one, {'driver': None, 'firmware': None}, True, True)['checkable'] is False


@pytest.mark.parametrize('change, force, check, account_new, expected', [
    (True, False, False, False, []),
    (False, False, False, False, ['npu_health', 'npu_processes']),
    (True, True, False, False, ['npu_health', 'npu_processes']),
    (True, False, True, True, ['run_user']),
    (True, False, False, True, []),
    (False, False, True, True, ['npu_health', 'npu_processes', 'run_user']),
])
def test_npu_driver_skip_checks(change, force, check, account_new, expected):
    assert npu_driver_skip_checks(change, force, check, account_new) == expected


def test_per_component_starts_anew_with_the_driver_and_keeps_the_firmware_after_it():
    first = per_component({'driver': '/old/d.run', 'firmware': '/old/f.run'}, 'driver', '/new/d.run')
    assert first == {'driver': '/new/d.run'}
    assert per_component(first, 'firmware', '/new/f.run') == {'driver': '/new/d.run', 'firmware': '/new/f.run'}
    assert per_component(None, 'firmware', False) == {'firmware': False}


def test_reboot_needed_when_one_package_says_so():
    assert reboot_needed([{'changed': True, 'reboot_required': True}, {'skipped': True}]) is True
    assert reboot_needed([{'changed': True, 'reboot_required': False}, {'skipped': True}]) is False
    assert reboot_needed([]) is False
