# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The host roles' filters: what they pass to module_utils, and their refusals."""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter import host

yaml = pytest.importorskip('yaml')

FILTER_DIR = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'plugins', 'filter')


def test_every_filter_is_registered_and_documented():
    filters = host.FilterModule().filters()
    for name, function in filters.items():
        assert getattr(host, name) is function
        with open(os.path.join(FILTER_DIR, name + '.yml')) as handle:
            assert yaml.safe_load(handle)['DOCUMENTATION']['name'] == name


def test_package_fetch_target():
    assert host.package_fetch_target({'url': 'https://h/p/x.run'}, '/d') == {'path': '/d/x.run', 'mode': '0755'}
    with pytest.raises(AnsibleFilterError, match='none of path, src and url'):
        host.package_fetch_target({'checksum': 'sha256:0'}, '/d')
    with pytest.raises(AnsibleFilterError, match='must be a dict'):
        host.package_fetch_target('/p/x.run', '/d')


def test_containerd_config_version():
    assert host.containerd_config_version('containerd containerd.io 1.7.25 x') == 2
    with pytest.raises(AnsibleFilterError):
        host.containerd_config_version(['1.7.25'])


def test_container_runtime_report():
    assert host.container_runtime_report('podman', None, 'ascend', True, False, predict=True)['verified'] is False
    with pytest.raises(AnsibleFilterError, match='engine must be'):
        host.container_runtime_report('cri-o', '', 'ascend', True, False)
    with pytest.raises(AnsibleFilterError, match='info must be'):
        host.container_runtime_report('docker', None, 'ascend', True, False)
    with pytest.raises(AnsibleFilterError, match='docker info is no JSON'):
        host.container_runtime_report('docker', 'Cannot connect', 'ascend', True, False)


def test_npu_driver_filters():
    state = host.npu_driver_state({'driver': None, 'firmware': None}, '25.2.0', '7.7.0.6.236')
    assert state['order'] == ['driver', 'firmware']
    with pytest.raises(AnsibleFilterError, match='ascend_facts'):
        host.npu_driver_state(None, '25.2.0', '7.7.0.6.236')
    assert host.npu_driver_after([], {'driver': None, 'firmware': None}, False, True)['checkable'] is True
    with pytest.raises(AnsibleFilterError, match='results'):
        host.npu_driver_after({'results': []}, {}, False, True)
    assert host.npu_driver_skip_checks(True, False, True, True) == ['run_user']
    assert host.npu_driver_per_component(None, 'driver', '/d.run') == {'driver': '/d.run'}
    with pytest.raises(AnsibleFilterError, match='driver or firmware'):
        host.npu_driver_per_component({}, 'toolkit', '/t.run')
    assert host.ascend_reboot_needed([{'reboot_required': True}]) is True
    with pytest.raises(AnsibleFilterError):
        host.ascend_reboot_needed(None)


def test_os_tuning_filters():
    inputs = {'hugepages': 8, 'hugetlb_shm_group': None, 'swappiness': 0, 'numa_balancing': None,
              'sched_migration_cost_ns': None, 'sysctl_extra': None, 'transparent_hugepages': None,
              'cpu_governor': None, 'sysfs_path': '/sys'}
    items = host.os_tuning_settings(inputs)['live_items']
    assert items == [{'name': 'vm.nr_hugepages', 'pattern': '/proc/sys/vm/nr_hugepages', 'value': '8'},
                     {'name': 'vm.swappiness', 'pattern': '/proc/sys/vm/swappiness', 'value': '0'}]
    with pytest.raises(AnsibleFilterError, match='lacks sysfs_path'):
        host.os_tuning_settings(dict((k, v) for k, v in inputs.items() if k != 'sysfs_path'))
    with pytest.raises(AnsibleFilterError, match='os_tuning_sysctl_extra must be a dict'):
        host.os_tuning_settings(dict(inputs, sysctl_extra=['vm.x']))
    assert host.os_tuning_live_read_argv(items)[4:] == ['vm.nr_hugepages', '/proc/sys/vm/nr_hugepages',
                                                        'vm.swappiness', '/proc/sys/vm/swappiness']
    with pytest.raises(AnsibleFilterError, match='live items'):
        host.os_tuning_live_read_argv('- {}')
    rows = [{'name': 'vm.swappiness', 'path': '/proc/sys/vm/swappiness', 'state': 'rw', 'value': '0'}]
    assert host.os_tuning_live_plan(rows, items, True, False)['report'] == ['/proc/sys/vm/swappiness = 0: already set']
    with pytest.raises(AnsibleFilterError, match='the list the read printed'):
        host.os_tuning_live_plan('[]', items, True, False)
    assert host.os_tuning_hugepages_fit('MemTotal: 2048 kB\n', None, 1, 100)['fits'] is True
    with pytest.raises(AnsibleFilterError, match='no MemTotal'):
        host.os_tuning_hugepages_fit('', None, 1, 100)
    assert host.os_tuning_irqbalance_state('LoadState=loaded\n') == {'LoadState': 'loaded'}
    assert host.os_tuning_irqbalance_report('disabled', {'LoadState': 'loaded'}) == 'stopped and disabled'
    assert host.os_tuning_packages(['numactl'], [], 'irqbalance', 'enabled') == ['numactl', 'irqbalance']
    with pytest.raises(AnsibleFilterError, match='os_tuning_packages_extra must be a list'):
        host.os_tuning_packages(['numactl'], 'htop', 'irqbalance', 'enabled')


def test_cann_filters():
    import base64

    inputs = {'version': '8.2.RC1', 'toolkit_package': {'path': '/p/t.run'}, 'kernels_package': {'path': '/p/k.run'},
              'nnal_package': None, 'uninstall_first': True, 'package_dir': '/p', 'previous_package_dirs': [],
              'soc_keys': {'910B': ['910b']}, 'file_chip': {'910B': '910b'}}
    assert host.cann_plan(inputs)['components'] == ['toolkit', 'kernels']
    assert host.cann_plan(inputs, {'npu_devices': []})['install_needed'] == ['toolkit', 'kernels']
    with pytest.raises(AnsibleFilterError, match='lacks file_chip'):
        host.cann_plan(dict((k, v) for k, v in inputs.items() if k != 'file_chip'))
    with pytest.raises(AnsibleFilterError, match='stack_upgrade_steps'):
        host.cann_plan(inputs, {'toolkit': {'version': ['8.1.RC1']}})
    assert host.cann_env_set('A=1\n#### after set_env.sh ####\nA=2')['env'] == {'A': '2'}
    with pytest.raises(AnsibleFilterError, match='cann_env_set'):
        host.cann_env_set('A=1')
    assert host.ascend_install_path('/p/t.run', '/opt/Ascend') == '/opt/Ascend'
    assert host.cann_fetched([{'skipped': True}]) == {'missing': [], 'present': ['toolkit', 'kernels']}
    with pytest.raises(AnsibleFilterError, match='cann_fetched'):
        host.cann_fetched({'results': []})
    assert host.stack_package_record_read({'content': base64.b64encode(b'{"current": null}').decode()}) == {'current': None}
    with pytest.raises(AnsibleFilterError, match='no JSON'):
        host.stack_package_record_read({'content': base64.b64encode(b'{').decode()})
