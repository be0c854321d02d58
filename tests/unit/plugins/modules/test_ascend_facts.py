# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ascend_facts' main() against fake roots and sysfs trees in tmp_path. (The facts of a root the simulator's fake
Ascend packages were installed into are in tests/integration/test_ascend_facts_of_installed_packages.py.)"""

from __future__ import annotations

import json
import os
from unittest import mock

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _ascend_files
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import ascend_facts
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    ExitJson,
    FailJson,
    fails_after,
    load_fixture,
    make_tree,
    run_main,
    simulator_module,
)
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.ascend.test__ascend_files import (
    DRIVER_25,
    FIRMWARE,
    INSTALL_INFO,
    NNAL,
    OPP_KERNEL_82,
    REQUIRED_82,
    TOOLKIT_800,
    VERSION_CFG,
)

fake_sysfs = simulator_module('fake_sysfs', 'fake_sysfs.py')

NO_ACCOUNT = {'user': None, 'group': None, 'user_in_group': False}
EMPTY_FACTS = {'driver': None, 'firmware': None, 'install_record': None, 'cann_install_record': None, 'toolkit': None,
               'kernels': None, 'nnal': None, 'docker_runtime': None, 'npu_devices': [], 'npu_count': 0,
               'hwhiaiuser': NO_ACCOUNT}


@pytest.fixture
def warn(fake_host):
    """AnsibleModule.warn of the fake host (ascend_facts runs no command: only its results and warnings count)."""
    return fake_host.warn


def run_module(args, outcome=ExitJson):
    return run_main(ascend_facts.main, args, outcome)


def warnings_of(warn):
    return [call.args[0] for call in warn.call_args_list]


def sysfs_tree(tmp_path, profile='910b-8', numa=True):
    path = str(tmp_path / 'sys')
    fake_sysfs.write_sysfs(path, profile, numa=numa)
    return path


def a2_host_files():
    """A 910B host as the samples show it: driver 25.3.rc1, firmware, CANN 8.0.0 with version.cfg, NNAL."""
    return {
        '/etc/ascend_install.info': load_fixture(INSTALL_INFO),
        '/usr/local/Ascend/driver/version.info': load_fixture(DRIVER_25),
        '/usr/local/Ascend/firmware/version.info': load_fixture(FIRMWARE),
        '/etc/Ascend/ascend_cann_install.info': 'Install_Path=/usr/local/Ascend\n',
        '/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux/ascend_toolkit_install.info': load_fixture(TOOLKIT_800),
        '/usr/local/Ascend/ascend-toolkit/8.0.0/version.cfg': load_fixture(VERSION_CFG),
        '/usr/local/Ascend/ascend-toolkit/set_env.sh': '',
        '/usr/local/Ascend/nnal/atb/8.0.T63/version.info': load_fixture(NNAL),
        '/usr/local/Ascend/nnal/atb/set_env.sh': '',
        '/etc/passwd': 'root:x:0:0:root:/root:/bin/bash\nHwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n',
        '/etc/group': 'root:x:0:\nHwHiAiUser:x:1000:vllm\n',
    }


A2_LINKS = {'/usr/local/Ascend/ascend-toolkit/latest': '8.0.0', '/usr/local/Ascend/nnal/atb/latest': '8.0.T63'}


# --- a full host ----------------------------------------------------------------------------------------------------

def test_a2_host_from_the_samples(tmp_path, warn):
    root = make_tree(tmp_path / 'root', a2_host_files(), A2_LINKS)
    result = run_module({'root': root, 'sysfs_path': sysfs_tree(tmp_path)})
    assert sorted(result) == ['ansible_facts', 'changed']
    assert result['changed'] is False
    assert list(result['ansible_facts']) == ['ascend']
    facts = result['ansible_facts']['ascend']
    assert sorted(facts) == sorted(EMPTY_FACTS)
    driver = dict(facts['driver'])
    assert driver.pop('values')['package_version'] == '25.3.rc1'
    assert driver == {
        'path': '/usr/local/Ascend/driver', 'version_info': '/usr/local/Ascend/driver/version.info',
        'version': '25.3.rc1', 'package_version': '25.3.rc1', 'inner_version': 'V100R001C23SPC002B212',
        'ascendhal_version': '7.35.23',
        'compatible_versions': ['V100R001C19', 'V100R001C20', 'V100R001C21', 'V100R001C22', 'V100R001C23'],
        'compatible_firmware': [{'min': '7.0.0', 'max': '8.9.9'}],
    }
    assert (facts['firmware']['version'], facts['firmware']['compatible_drivers'][0]) == \
        ('7.1.0.11.220', {'min': '23.0.rc3', 'max': '23.0.rc3.'})
    assert (facts['install_record']['user_name'], facts['install_record']['driver_install_for_all']) == ('HwHiAiUser', True)
    assert facts['cann_install_record'] == {'path': '/etc/Ascend/ascend_cann_install.info', 'install_path': '/usr/local/Ascend',
                                            'toolkit_install_path': None, 'values': {'Install_Path': '/usr/local/Ascend'}}
    toolkit = facts['toolkit']
    assert (toolkit['version'], toolkit['layout'], toolkit['path'], toolkit['set_env']) == \
        ('8.0.0', 'ascend-toolkit', '/usr/local/Ascend/ascend-toolkit/8.0.0', '/usr/local/Ascend/ascend-toolkit/set_env.sh')
    assert facts['kernels'] == {'version': '8.0.T63', 'inner_version': '7.6.T13.0.B094', 'source': 'version_cfg',
                                'path': '/usr/local/Ascend/ascend-toolkit/8.0.0/version.cfg', 'socs': None,
                                'required_packages': None}
    assert (facts['nnal']['version'], facts['nnal']['path']) == ('8.0.T63', '/usr/local/Ascend/nnal/atb/8.0.T63')
    assert facts['docker_runtime'] is None
    assert facts['npu_count'] == 8
    assert [(npu['bus_id'], npu['chip_family'], npu['numa_node'], npu['numa_cpulist']) for npu in facts['npu_devices']] == [
        ('0000:01:00.0', '910B', 1, '96-191'), ('0000:02:00.0', '910B', 1, '96-191'),
        ('0000:41:00.0', '910B', 1, '96-191'), ('0000:42:00.0', '910B', 1, '96-191'),
        ('0000:81:00.0', '910B', 0, '0-95'), ('0000:82:00.0', '910B', 0, '0-95'),
        ('0000:c1:00.0', '910B', 0, '0-95'), ('0000:c2:00.0', '910B', 0, '0-95')]
    assert facts['npu_devices'][0]['numa_cpus'] == list(range(96, 192))
    assert facts['hwhiaiuser'] == {
        'user': {'name': 'HwHiAiUser', 'uid': 1000, 'gid': 1000, 'home': '/home/HwHiAiUser', 'shell': '/bin/bash'},
        'group': {'name': 'HwHiAiUser', 'gid': 1000, 'members': ['vllm']},
        'user_in_group': True}
    # The samples carry a documentation line each (a file path, a shell prompt): reported with file and line.
    assert warnings_of(warn) == [
        '%s/etc/ascend_install.info line 1: not a "key=value" line, ignored: \'> cat /etc/ascend_install.info\'' % root,
        '%s/usr/local/Ascend/driver/version.info line 1: not a "key=value" line, ignored: '
        "'/usr/local/Ascend/driver/version.info'" % root,
    ]


def test_check_mode_gathers_the_same_facts(tmp_path, warn):
    root = make_tree(tmp_path / 'root', a2_host_files(), A2_LINKS)
    args = {'root': root, 'sysfs_path': sysfs_tree(tmp_path)}
    assert run_module(dict(args, _ansible_check_mode=True)) == run_module(args)


def test_new_cann_layout_a3_host(tmp_path, warn):
    root = make_tree(tmp_path / 'root', {
        '/usr/local/Ascend/driver/version.info': 'Version=25.3.rc1\n',
        '/etc/Ascend/ascend_cann_install.info': 'Install_Path=/usr/local/Ascend\nToolkit_InstallPath=/usr/local/Ascend/cann-8.5.0\n',
        '/usr/local/Ascend/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info': 'version=8.5.0\narch=aarch64\n',
        '/usr/local/Ascend/cann-8.5.0/set_env.sh': '',
    }, {'/usr/local/Ascend/ascend-toolkit/latest': '/usr/local/Ascend/cann-8.5.0',
        '/usr/local/Ascend/cann': 'cann-8.5.0'})
    facts = run_module({'root': root, 'sysfs_path': sysfs_tree(tmp_path, 'a3-16')})['ansible_facts']['ascend']
    toolkit = facts['toolkit']
    assert (toolkit['version'], toolkit['layout'], toolkit['path'], toolkit['found_via'], toolkit['set_env']) == \
        ('8.5.0', 'cann', '/usr/local/Ascend/cann-8.5.0', '/usr/local/Ascend/cann-8.5.0', '/usr/local/Ascend/cann-8.5.0/set_env.sh')
    assert (facts['npu_count'], {npu['chip_family'] for npu in facts['npu_devices']}) == (16, {'910_93'})
    assert [npu['numa_node'] for npu in facts['npu_devices']].count(0) == 8
    assert (facts['driver']['version'], facts['firmware'], facts['install_record']) == ('25.3.rc1', None, None)
    assert warnings_of(warn) == []


def test_empty_root_has_every_component_null(tmp_path, warn):
    os.makedirs(str(tmp_path / 'sys' / 'bus' / 'pci' / 'devices'))
    os.makedirs(str(tmp_path / 'root'), exist_ok=True)
    result = run_module({'root': str(tmp_path / 'root'), 'sysfs_path': str(tmp_path / 'sys')})
    assert result == {'changed': False, 'ansible_facts': {'ascend': EMPTY_FACTS}}
    assert warnings_of(warn) == []


def test_without_numa_the_devices_have_no_node(tmp_path, warn):
    result = run_module({'root': str(tmp_path), 'sysfs_path': sysfs_tree(tmp_path, '310p-duo', numa=False)})
    devices = result['ansible_facts']['ascend']['npu_devices']
    assert [(npu['bus_id'], npu['chip_family'], npu['numa_node'], npu['numa_cpus']) for npu in devices] == [
        ('0000:01:00.0', '310P', None, None), ('0000:03:00.0', '310P', None, None),
        ('0000:81:00.0', '310P', None, None), ('0000:84:00.0', '310P', None, None)]


def test_a_missing_sysfs_gives_a_warning(tmp_path, warn):
    result = run_module({'root': str(tmp_path), 'sysfs_path': str(tmp_path / 'nosys')})
    assert result['ansible_facts']['ascend']['npu_devices'] == []
    assert warnings_of(warn) == ['sysfs_path: %s has no bus/pci/devices directory, so no NPU can be listed; set '
                                 'sysfs_path to where sysfs is mounted' % (tmp_path / 'nosys')]


def test_unreadable_and_malformed_files_are_null_with_warnings(tmp_path, warn, monkeypatch):
    root = make_tree(tmp_path / 'root', {
        '/usr/local/Ascend/driver/version.info': 'Version=24.1.rc1\ncompatible_version_fw=7.0.0-7.7.99\n',
        '/usr/local/Ascend/firmware/version.info': 'Version=7.5.0.3.220\n',
    })
    real_open = os.open

    def denying_open(path, *args, **kwargs):
        if path.endswith('/firmware/version.info'):
            raise PermissionError(13, 'Permission denied', path)
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(os, 'open', denying_open)
    facts = run_module({'root': root, 'sysfs_path': sysfs_tree(tmp_path)})['ansible_facts']['ascend']
    assert (facts['driver']['version'], facts['driver']['compatible_firmware'], facts['firmware']) == ('24.1.rc1', None, None)
    assert warnings_of(warn) == [
        '%s/usr/local/Ascend/driver/version.info line 2: compatible_version_fw=7.0.0-7.7.99 is not a list of [min,max] '
        'ranges: not a list of [..] groups; it is returned as null' % root,
        '%s/usr/local/Ascend/firmware/version.info: cannot be opened: Permission denied; it is not read' % root,
    ]


def test_files_that_are_not_what_they_seem_are_warnings_and_never_block(tmp_path, warn):
    root = make_tree(tmp_path / 'root', {'/usr/local/Ascend/firmware/version.info': 'Version=7.5.0.3.220\n'})
    sysfs = sysfs_tree(tmp_path)
    numa_node = os.path.join(sysfs, 'bus/pci/devices/0000:01:00.0/numa_node')
    os.remove(numa_node)
    records = ('etc/ascend_install.info', 'etc/Ascend/ascend_cann_install.info', 'etc/passwd')
    fifos = [os.path.join(root, path) for path in records] + [numa_node]
    for fifo in fifos:
        os.makedirs(os.path.dirname(fifo), exist_ok=True)
        os.mkfifo(fifo)
    os.makedirs(os.path.join(root, 'usr/local/Ascend/driver/version.info'))
    with fails_after(10):
        facts = run_module({'root': root, 'sysfs_path': sysfs})['ansible_facts']['ascend']
    assert (facts['install_record'], facts['cann_install_record'], facts['driver'], facts['hwhiaiuser']) == \
        (None, None, None, NO_ACCOUNT)
    assert facts['firmware']['version'] == '7.5.0.3.220'
    assert [npu['numa_node'] for npu in facts['npu_devices'] if npu['bus_id'] == '0000:01:00.0'] == [None]
    fifo_warnings = ['%s: a FIFO (named pipe), not a regular file; it is not read' % fifo for fifo in fifos]
    assert warnings_of(warn) == fifo_warnings[:2] + fifo_warnings[3:] + [
        '%s/usr/local/Ascend/driver/version.info: a directory, not a regular file; it is not read' % root,
        fifo_warnings[2]]


def test_an_absurd_numa_cpulist_is_null_with_a_warning(tmp_path, warn):
    sysfs = sysfs_tree(tmp_path)
    make_tree(sysfs, {'/devices/system/cpu/possible': '0-191\n', '/devices/system/node/node1/cpulist': '96-4000000000\n'})
    devices = run_module({'root': str(tmp_path), 'sysfs_path': sysfs})['ansible_facts']['ascend']['npu_devices']
    assert [(npu['numa_node'], npu['numa_cpulist'], npu['numa_cpus'] and len(npu['numa_cpus'])) for npu in devices] == \
        [(1, '96-4000000000', None)] * 4 + [(0, '0-95', 96)] * 4
    assert warnings_of(warn) == [
        '%s/devices/system/node/node1/cpulist line 1: CPU 4000000000 is beyond the 192 CPUs this machine can have '
        '(0-191); the CPUs of NUMA node 1 are returned as null' % sysfs]


def test_kernels_of_cann_8_2_from_their_opp_kernel_record(tmp_path, warn):
    toolkit = '/usr/local/Ascend/ascend-toolkit/8.2.RC1/'
    root = make_tree(tmp_path / 'root', {
        toolkit + 'aarch64-linux/ascend_toolkit_install.info': 'version=8.2.RC1\n',
        toolkit + 'opp_kernel/version.info': load_fixture(OPP_KERNEL_82),
        toolkit + 'opp/built-in/op_impl/ai_core/tbe/kernel/ascend910b/bin/op.o': '',
    }, {'/usr/local/Ascend/ascend-toolkit/latest': '8.2.RC1'})
    facts = run_module({'root': root, 'sysfs_path': sysfs_tree(tmp_path)})['ansible_facts']['ascend']
    assert facts['kernels'] == {'version': '8.2.RC1', 'inner_version': '8.2.0.0.201', 'source': 'opp_kernel',
                                'path': toolkit + 'opp_kernel/version.info', 'socs': ['ascend910b'],
                                'required_packages': REQUIRED_82}
    assert warnings_of(warn) == []


def test_names_that_are_not_utf8_are_returned_with_replacement_characters(tmp_path, warn):
    """ansible-core 2.19's controller refuses a whole result holding a string that is not valid UTF-8."""
    root = str(tmp_path / 'root')
    toolkit = os.path.join(os.fsencode(root), b'usr/local/Ascend/ascend-toolkit')
    os.makedirs(os.path.join(toolkit, b'8.0.\xff/aarch64-linux'))
    with open(os.path.join(toolkit, b'8.0.\xff/aarch64-linux/ascend_toolkit_install.info'), 'wb') as handle:
        handle.write(b'version=8.0.\xff\n')
    os.symlink(b'8.0.\xff', os.path.join(toolkit, b'latest'))
    os.symlink(b'8.2.\xfe', os.path.join(toolkit, b'8.2.\xfe'))
    os.makedirs(os.path.join(toolkit, b'8.1.\xfe'))
    result = run_module({'root': root, 'sysfs_path': sysfs_tree(tmp_path)})
    json.dumps(result, ensure_ascii=False).encode('utf-8')  # raises UnicodeEncodeError on a lone surrogate
    facts = result['ansible_facts']['ascend']['toolkit']
    assert (facts['version'], facts['path'], facts['install_info'], facts['installed_versions']) == (
        '8.0.\ufffd', '/usr/local/Ascend/ascend-toolkit/8.0.\ufffd',
        '/usr/local/Ascend/ascend-toolkit/8.0.\ufffd/aarch64-linux/ascend_toolkit_install.info', ['8.1.\ufffd', '8.0.\ufffd'])
    # the link loop is met while looking for the toolkit and while listing its versions: one warning
    assert warnings_of(warn) == [
        '%s/usr/local/Ascend/ascend-toolkit/8.2.\ufffd: a symbolic link loop; it is ignored' % root,
        '%s/usr/local/Ascend/ascend-toolkit/8.0.\ufffd/aarch64-linux/ascend_toolkit_install.info: not UTF-8 text (invalid '
        'start byte); unreadable characters are replaced' % root]
    for message in warnings_of(warn):
        message.encode('utf-8')


def test_root_that_is_not_a_directory(tmp_path, warn):
    assert run_module({'root': str(tmp_path / 'missing')}, FailJson) == {
        'msg': 'root: %s is not a directory' % (tmp_path / 'missing')}


def test_the_real_root_uses_the_system_account_database(tmp_path, warn, monkeypatch):
    seen = {}

    def gather(fs, sysfs, warn=None, user_db=None):
        seen.update(root=fs.root, sysfs=sysfs.root, user_db=user_db)
        return dict(EMPTY_FACTS)
    monkeypatch.setattr(ascend_facts, 'gather_ascend_facts', gather)
    run_module({'sysfs_path': str(tmp_path)})
    assert seen == {'root': '/', 'sysfs': str(tmp_path), 'user_db': (_ascend_files.system_user, _ascend_files.system_group)}
    run_module({'root': str(tmp_path), 'sysfs_path': str(tmp_path)})
    assert seen['user_db'] is None


def test_system_account_lookups(monkeypatch):
    monkeypatch.setattr(_ascend_files.pwd, 'getpwnam', mock.Mock(
        return_value=mock.Mock(pw_name='HwHiAiUser', pw_uid=1000, pw_gid=1001, pw_dir='/home/HwHiAiUser', pw_shell='/bin/bash')))
    monkeypatch.setattr(_ascend_files.grp, 'getgrnam', mock.Mock(side_effect=KeyError('getgrnam(): name not found')))
    assert _ascend_files.system_user('HwHiAiUser') == {'name': 'HwHiAiUser', 'uid': 1000, 'gid': 1001,
                                                       'home': '/home/HwHiAiUser', 'shell': '/bin/bash'}
    assert _ascend_files.system_group('HwHiAiUser') is None
    _ascend_files.pwd.getpwnam.assert_called_once_with('HwHiAiUser')
