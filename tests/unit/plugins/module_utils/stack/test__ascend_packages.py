# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The Ascend package helpers: versions, file names, version files (real captures in tests/fixtures/, each naming
its source), installer output and logs, the checks of package files, the backends' contract, the host-wide lock and
the decisions of one ascend_package task."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _ascend_packages
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._ascend_packages import (
    Command,
    HostLock,
    InstalledRun,
    InstallLog,
    PackageBackend,
    PackageError,
    RunPackage,
    check_deb_layout,
    check_eula,
    check_makeself_header,
    check_options,
    component_of_package_name,
    ensure,
    error_lines,
    failure_message,
    host_lock_path,
    package_path,
    parse_any_run_name,
    parse_package_file_name,
    plan_action,
    predict_reboot,
    printable_lines,
    reboot_after,
    says_reboot_needed,
    version_order,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    DEB_MEMBERS,
    MAKESELF_HEADER,
    MAKESELF_PAYLOAD_BYTES,
    LockHolder,
    ar_archive,
    held_by,
    load_fixture,
    makeself_archive,
)


DRIVER_OK = 'installer_driver-910b-25.0.rc1.1_full-install-success.txt'
DRIVER_DIRECT = 'installer_driver-910-23.0.rc1_full-install-success_Direct.txt'
DRIVER_REBOOT = 'installer_driver-910-24.1.0_full-install-success_reboot-needed.txt'
FIRMWARE_OK = 'installer_firmware-910-7.5.0.2.220_full-install-success.txt'
FIRMWARE_CHECK_AND_FULL = 'installer_firmware-910-6.3.0.1.241_check-and-full.txt'
FIRMWARE_CHECK = 'installer_firmware-910b-7.7.0.1.231_check.txt'
TOOLKIT_OK = 'installer_cann-toolkit-6.3.RC1_install-success_summary.txt'
TOOLKIT_DEB_NO_PYTHON = 'installer_cann-toolkit-deb_error_no-python_dpkg.txt'


def test_fixture_loader_strips_the_source_header():
    assert load_fixture(DRIVER_OK).startswith('Verifying archive integrity...  100%')


# ---------------------------------------------------------------------------------------------------- versions

# The order itself is _version's (tests/unit/plugins/module_utils/common/test__version.py); here only what the package
# module adds: a text that is not a version makes the order unknown instead of an error.

@pytest.mark.parametrize('left,right,order', [
    ('24.1.rc1', '24.1.rc2', -1),
    ('24.1.0', '24.1.rc3.7', 1),
    ('8.0.T63', '8.0.t63', 0),
])
def test_version_order_is_the_ascend_order(left, right, order):
    assert version_order(left, right) == order


@pytest.mark.parametrize('version', ['', 'latest', '8.0.0~beta', '24.1.spc1', '1.0.RC1alpha'])
def test_version_order_of_unknown_forms_is_none(version):
    assert version_order(version, '8.0.0') is None
    assert version_order('8.0.0', version) is None


def test_unknown_forms_are_only_equal_or_unordered():
    assert version_order('8.0.SPC1', '8.0.spc1') == 0
    assert version_order('8.0.SPC1', '8.0.0') is None
    assert version_order('8.0.0', 'unknown') is None


# ---------------------------------------------------------------------------------------------------- plan

@pytest.mark.parametrize('state,package,installed,action', [
    ('present', '24.1.rc1', None, 'install'),
    ('present', '24.1.rc1', '23.0.rc3', 'none'),
    ('present', '24.1.rc1', '25.0.rc1', 'none'),
    ('latest', '24.1.rc1', None, 'install'),
    ('latest', '24.1.rc1', '24.1.RC1', 'none'),
    ('latest', '24.1.0', '24.1.rc3.7', 'upgrade'),
    ('absent', '24.1.rc1', None, 'none'),
    ('absent', '24.1.rc1', '24.1.rc1', 'uninstall'),
    ('absent', '24.1.rc1', '25.0.rc1', 'uninstall'),
])
def test_plan_action(state, package, installed, action):
    assert plan_action(state, package, installed) == action


def test_plan_refuses_a_downgrade_unless_allowed():
    with pytest.raises(PackageError) as raised:
        plan_action('latest', '24.1.rc1', '24.1.0')
    assert raised.value.msg == ('the package version 24.1.rc1 is older than the installed 24.1.0: set allow_downgrade '
                                'to true to downgrade')
    assert plan_action('latest', '24.1.rc1', '24.1.0', allow_downgrade=True) == 'upgrade'


def test_plan_refuses_an_unknown_order_unless_allowed():
    with pytest.raises(PackageError) as raised:
        plan_action('latest', '8.0.0', '8.0.SPC1')
    assert raised.value.msg == ('cannot tell whether the package version 8.0.0 is newer than the installed 8.0.SPC1; '
                                'set allow_downgrade to true to install it anyway')
    assert plan_action('latest', '8.0.0', '8.0.SPC1', allow_downgrade=True) == 'upgrade'


# ---------------------------------------------------------------------------------------------------- names

@pytest.mark.parametrize('name,expected', [
    ('Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run', ('driver', '910b', '24.1.rc1', 'aarch64')),
    ('Ascend-hdk-910-npu-driver_23.0.rc1_linux-aarch64.run', ('driver', '910', '23.0.rc1', 'aarch64')),
    ('Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-x86-64.run', ('driver', '910b', '25.0.rc1.1', 'x86_64')),
    ('Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.deb', ('driver', '910b', '24.1.rc1', 'aarch64')),
    ('Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run', ('firmware', '910b', '7.7.0.1.231', None)),
    ('Ascend-hdk-910-npu-firmware_6.3.0.1.241.run', ('firmware', '910', '6.3.0.1.241', None)),
    ('Ascend-cann-toolkit_6.3.RC1_linux-aarch64.run', ('toolkit', None, '6.3.RC1', 'aarch64')),
    ('Ascend-cann-toolkit_8.0.0_linux-x86_64.rpm', ('toolkit', None, '8.0.0', 'x86_64')),
    ('Ascend-cann-kernels-910b_8.3.RC1_linux-aarch64.run', ('kernels', '910b', '8.3.RC1', 'aarch64')),
    ('Atlas-A3-cann-kernels_8.0.0_linux-aarch64.run', ('kernels', 'A3', '8.0.0', 'aarch64')),
    ('Ascend-cann-910b-ops_9.1.0_linux-aarch64.run', ('kernels', '910b', '9.1.0', 'aarch64')),
    ('Ascend-cann-nnal_8.0.T63_linux-aarch64.run', ('nnal', None, '8.0.T63', 'aarch64')),
    ('Ascend-docker-runtime_6.0.0_linux-aarch64.run', ('docker-runtime', None, '6.0.0', 'aarch64')),
    ('Ascend-docker-runtime_7.0.RC1_linux-x86-64.run', ('docker-runtime', None, '7.0.RC1', 'x86_64')),
])
def test_parse_package_file_name(name, expected):
    parsed = parse_package_file_name(name)
    assert (parsed['component'], parsed['chip'], parsed['version'], parsed['arch']) == expected


@pytest.mark.parametrize('name', ['driver.run', 'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.tar.gz',
                                  'Ascend-cann-toolkit.run', 'Ascend-mindstudio-toolkit_6.0.RC1_linux-aarch64.run'])
def test_parse_package_file_name_rejects_other_names(name):
    assert parse_package_file_name(name) is None


def test_parse_any_run_name():
    assert parse_any_run_name('my-driver_24.1.rc1_linux-aarch64.run') == {'version': '24.1.rc1', 'arch': 'aarch64'}
    assert parse_any_run_name('fw_7.5.0.3.220.run') == {'version': '7.5.0.3.220', 'arch': None}
    assert parse_any_run_name('driver.run') is None


@pytest.mark.parametrize('name,expected', [
    ('ascend-hdk-910b-npu-driver', ('driver', '910b')),
    ('ascend-cann-toolkit', ('toolkit', None)),
    ('Ascend-cann-nnal', ('nnal', None)),
    ('atlas-a3-cann-kernels', ('kernels', 'a3')),
    ('ascend-cann-910b-ops', ('kernels', '910b')),
    ('ascend-cann-toolkit-doc', None),
])
def test_component_of_package_name(name, expected):
    assert component_of_package_name(name) == expected


# ---------------------------------------------------------------------------------------------------- version files

def installed_run(host, component, **kwargs):
    """What the .run installers left of ``component`` in the fake host's root."""
    return InstalledRun(component, host.root, arch='aarch64', **kwargs)


@pytest.mark.parametrize('component', ['driver', 'firmware', 'toolkit', 'kernels', 'nnal', 'docker-runtime'])
def test_nothing_installed(fake_host, component):
    assert installed_run(fake_host, component).version() is None
    assert installed_run(fake_host, component).uninstall_script() is None


def test_driver_and_firmware_from_real_version_files(fake_host):
    fake_host.write('/usr/local/Ascend/driver/version.info', load_fixture('driver-version.info_24.1.rc1_mindcluster-doc.txt'))
    fake_host.write('/usr/local/Ascend/firmware/version.info',
                    load_fixture('firmware-version.info_7.1.0.11.220_mindcluster-doc.txt'))
    assert installed_run(fake_host, 'driver').version() == '24.1.rc1'
    assert installed_run(fake_host, 'firmware').version() == '7.1.0.11.220'


def test_driver_path_recorded_in_ascend_install_info(fake_host):
    fake_host.write('/etc/ascend_install.info', 'UserName=HwHiAiUser\nDriver_Install_Path_Param=/data/Ascend\n')
    fake_host.write('/data/Ascend/driver/version.info', 'Version=25.0.rc1.1\n')
    fake_host.write('/usr/local/Ascend/driver/version.info', 'Version=23.0.rc1\n')
    assert installed_run(fake_host, 'driver').version() == '25.0.rc1.1'
    # the firmware goes where the driver went unless it recorded its own path
    fake_host.write('/data/Ascend/firmware/version.info', 'Version=7.7.0.1.231\n')
    assert installed_run(fake_host, 'firmware').version() == '7.7.0.1.231'
    # the install_path option wins
    assert installed_run(fake_host, 'driver', install_path='/usr/local/Ascend').version() == '23.0.rc1'


def test_toolkit_latest_and_cann_install_path(fake_host):
    fake_host.write('/etc/Ascend/ascend_cann_install.info', 'Install_Path=/data/cann\n')
    fake_host.write('/data/cann/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info',
                    load_fixture('ascend_toolkit_install.info_cann8.0.0_from_issue237.txt'))
    assert installed_run(fake_host, 'toolkit').version() == '8.0.0'


def test_toolkit_8_5_layout(fake_host):
    fake_host.write('/usr/local/Ascend/cann-8.3.RC2/aarch64-linux/ascend_toolkit_install.info', 'version=8.3.RC2\n')
    fake_host.write('/usr/local/Ascend/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info',
                    load_fixture('ascend_toolkit_install.info_cann8.5.0_from_issue4930.txt'))
    assert installed_run(fake_host, 'toolkit').version() == '8.5.0'
    fake_host.write('/usr/local/Ascend/cann/aarch64-linux/ascend_toolkit_install.info', 'version=8.5.1\n')
    assert installed_run(fake_host, 'toolkit').version() == '8.5.1'


def test_toolkit_of_another_architecture_is_not_this_one(fake_host):
    fake_host.write('/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info', 'version=8.0.0\n')
    assert installed_run(fake_host, 'toolkit').version() is None


def test_kernels_from_version_cfg_else_kernel_directory(fake_host):
    fake_host.write('/usr/local/Ascend/ascend-toolkit/latest/version.cfg',
                    load_fixture('version.cfg_ascend-toolkit-latest_7.6.T13.0.B094-8.0.T63.txt'))
    assert installed_run(fake_host, 'kernels').version() == '8.0.T63'
    fake_host.write('/usr/local/Ascend/ascend-toolkit/latest/version.cfg', '# version: 1.0\n'
                    'toolkit_installed_version=[7.6.0.1.220:8.0.0]\n')
    assert installed_run(fake_host, 'kernels').version() is None
    fake_host.write('/usr/local/Ascend/ascend-toolkit/latest/opp/built-in/op_impl/ai_core/tbe/kernel/ascend910b/'
                    'version.info', 'Version=8.0.0\nsoc=ascend910b\n')
    assert installed_run(fake_host, 'kernels', chip='910b').version() == '8.0.0'
    assert installed_run(fake_host, 'kernels').version() == '8.0.0'


def test_nnal_from_real_version_file(fake_host):
    fake_host.write('/usr/local/Ascend/nnal/atb/latest/version.info',
                    load_fixture('nnal-atb-version.info_8.0.T63_indented.txt'))
    assert installed_run(fake_host, 'nnal').version() == '8.0.T63'


def test_version_files_of_real_hosts_with_odd_lines_are_read_with_warnings(fake_host):
    fake_host.write('/etc/ascend_install.info', load_fixture('etc-ascend_install.info_driver-firmware_full.txt'))
    path = fake_host.write('/usr/local/Ascend/driver/version.info',
                           load_fixture('driver-version.info_25.3.rc1_faq-indented.txt'))
    installed = installed_run(fake_host, 'driver')
    assert installed.version() == '25.3.rc1'
    assert installed.warnings == [
        '%s line 1: not a "key=value" line, ignored: \'> cat /etc/ascend_install.info\'' % os.path.join(
            fake_host.root, 'etc/ascend_install.info'),
        '%s line 1: not a "key=value" line, ignored: \'/usr/local/Ascend/driver/version.info\'' % path]


def test_kernels_with_an_unreadable_version_cfg_line_are_an_error(fake_host):
    path = fake_host.write('/usr/local/Ascend/ascend-toolkit/latest/version.cfg',
                           '# version: 1.0\nopp_kernel_installed_version=[7.6.T13.0.B094]\n')
    installed = installed_run(fake_host, 'kernels')
    with pytest.raises(PackageError) as raised:
        installed.version()
    assert raised.value.msg == ('cannot read the installed kernels version: %s has no usable '
                                '"opp_kernel_installed_version=" line (check the file, or the root and install_path '
                                'options)' % path)
    assert installed.warnings == ['%s line 2: opp_kernel_installed_version=[7.6.T13.0.B094] cannot be read: each [..] '
                                  'must hold "inner:version"; it is returned as null' % path]


def test_docker_runtime_version_info_else_install_info(fake_host):
    fake_host.write('/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info',
                    'version=v6.0.0\ninstall_scene=docker\n')
    assert installed_run(fake_host, 'docker-runtime').version() == '6.0.0'
    fake_host.write('/usr/local/Ascend/Ascend-Docker-Runtime/version.info', 'Version=6.0.1\n')
    assert installed_run(fake_host, 'docker-runtime').version() == '6.0.1'


def test_a_version_file_without_a_version_is_an_error(fake_host):
    path = fake_host.write('/usr/local/Ascend/driver/version.info', 'ascendhal_version=7.35.19\nVersion=\n')
    with pytest.raises(PackageError) as raised:
        installed_run(fake_host, 'driver').version()
    assert raised.value.msg == ('cannot read the installed driver version: %s has no usable "Version=" line (check '
                                'the file, or the root and install_path options)' % path)


def test_uninstall_scripts(fake_host):
    script = fake_host.write('/usr/local/Ascend/driver/script/uninstall.sh', '#!/bin/sh\n', 0o755)
    fake_host.write('/usr/local/Ascend/driver/version.info', 'Version=24.1.rc1\n')
    assert installed_run(fake_host, 'driver').uninstall_script() == script
    fake_host.write('/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info', 'version=8.0.0\n')
    script = fake_host.write('/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/script/uninstall.sh', '#!/bin/sh\n',
                             0o755)
    assert installed_run(fake_host, 'toolkit').uninstall_script() == script
    fake_host.write('/usr/local/Ascend/firmware/script/uninstall.sh', 'not executable\n', 0o644)
    assert installed_run(fake_host, 'firmware').uninstall_script() is None


# ---------------------------------------------------------------------------------------------------- output

def test_printable_lines_apply_backspaces_and_carriage_returns():
    assert printable_lines('Verifying archive integrity...  0%\b\b100%   OK\r\nabc\rxyz\n') == [
        'Verifying archive integrity...  100%   OK', 'xyz']
    assert printable_lines('') == []


@pytest.mark.parametrize('name', [DRIVER_OK, DRIVER_DIRECT, DRIVER_REBOOT, FIRMWARE_OK, FIRMWARE_CHECK_AND_FULL,
                                  FIRMWARE_CHECK, TOOLKIT_OK])
def test_successful_installs_have_no_error_lines(name):
    assert error_lines(load_fixture(name)) == []


def test_reboot_needed():
    assert says_reboot_needed(load_fixture(DRIVER_REBOOT))
    assert not says_reboot_needed(load_fixture(DRIVER_OK))
    assert not says_reboot_needed(load_fixture(DRIVER_DIRECT))
    assert says_reboot_needed(load_fixture(FIRMWARE_OK))
    assert not says_reboot_needed('[INFO] please reboot daemon and container engine to take effect\n')


@pytest.mark.parametrize('component,action,predicted', [
    ('firmware', 'install', True), ('firmware', 'upgrade', True), ('firmware', 'uninstall', True),
    ('firmware', 'none', False), ('driver', 'install', False), ('driver', 'upgrade', True),
    ('driver', 'uninstall', True), ('driver', 'none', False), ('toolkit', 'upgrade', False),
    ('docker-runtime', 'install', False),
])
def test_predict_reboot(component, action, predicted):
    assert predict_reboot(component, action) is predicted


def test_reboot_after_reads_the_driver_output():
    assert reboot_after('driver', 'install', load_fixture(DRIVER_REBOOT)) is True
    assert reboot_after('driver', 'install', load_fixture(DRIVER_OK)) is False
    assert reboot_after('firmware', 'install', '') is True
    assert reboot_after('docker-runtime', 'install', 'please reboot daemon and container engine') is False


def test_failure_message_of_the_deb_toolkit_without_python():
    output = load_fixture(TOOLKIT_DEB_NO_PYTHON)
    assert failure_message('Installing toolkit 8.2.RC1 from x.deb', 1, output, '') == (
        'Installing toolkit 8.2.RC1 from x.deb failed (rc=1): [ERROR] There is no python3.7,python3.8,python3.9,'
        'python3.10,python3.11 in the current environment !; dpkg: error processing package ascend-cann-toolkit '
        '(--configure):. Hint: install a Python 3 that this CANN release supports, as python3 on the PATH')


def test_failure_message_merges_output_and_log_without_repeats():
    line = '[Driver] [2025-07-17 10:35:21] [ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser'
    log = ['[Driver] [2025-07-17 10:35:21] [INFO]Start time: 2025-07-17 10:35:21', line,
           '[Driver] [2025-07-17 10:35:22] [ERROR]ERR_NO:0x0095;ERR_DES:written only to the log']
    assert failure_message('Installing driver', 1, line + '\n', '', log) == (
        'Installing driver failed (rc=1): [ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser; '
        '[ERROR]ERR_NO:0x0095;ERR_DES:written only to the log. Hint: create the run user and group first '
        '(HwHiAiUser by default, see the Ascend install guide), or set install_username and install_usergroup to '
        'existing ones')


def test_failure_message_without_error_lines_gives_the_last_output():
    assert failure_message('x', 3, 'one\n\ntwo\n', 'three\n') == 'x failed (rc=3): one; two; three'
    assert failure_message('x', 124, '', '') == 'x failed (rc=124): no output'


def test_install_log_returns_only_the_lines_of_this_run(fake_host):
    path = fake_host.write('/var/log/ascend_seclog/ascend_install.log', 'old line\n')
    log = InstallLog(fake_host.root)
    log.mark()
    with open(path, 'a', encoding='utf-8') as handle:
        handle.write('new line 1\n\nnew line 2\n')
    fake_host.write('/var/log/ascend_seclog/ascend_toolkit_install.log', 'new line 2\ntoolkit line\n')
    assert log.new_lines() == ['new line 1', 'new line 2', 'toolkit line']


def test_install_log_rotated_during_the_run(fake_host):
    fake_host.write('/var/log/ascend_seclog/ascend_install.log', 'a long old line that was rotated away\n')
    log = InstallLog(fake_host.root)
    log.mark()
    fake_host.write('/var/log/ascend_seclog/ascend_install.log', 'fresh\n')
    assert log.new_lines() == ['fresh']


# ---------------------------------------------------------------------------------------------------- package files

def write_bytes(tmp_path, name, data, mode=0o755):
    path = str(tmp_path / name)
    with open(path, 'wb') as handle:
        handle.write(data)
    os.chmod(path, mode)
    return path


def refusal(function, *args):
    with pytest.raises(PackageError) as raised:
        function(*args)
    return raised.value.msg


def test_a_whole_makeself_archive_passes(tmp_path):
    check_makeself_header(write_bytes(tmp_path, 'demo_1.0.0.run', makeself_archive()))


NOT_MAKESELF = ('is not a makeself archive (the Ascend .run installers are), so nothing was run: its first 64 KiB lack '
                '%s. Download the package again; an error page or a script saved under the package name looks like '
                'this')
ALL_MARKERS = ('the "# This script was generated using Makeself" line, label=, filesizes=, a checksum (CRCsum=, MD5= '
               'or SHA=), MS_Printf')


@pytest.mark.parametrize('data,missing', [
    (b'#!/bin/sh\necho not an installer\n', ALL_MARKERS),
    (b'<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>Not Found</body></html>\n',
     'a first line starting with #!, ' + ALL_MARKERS),
    (b'\x00\x01binary junk\xff' * 100, 'a first line starting with #!, ' + ALL_MARKERS),
    # the first lines of a real header: cut before label=, filesizes= and MS_Printf
    (makeself_archive()[:300], 'label=, filesizes=, MS_Printf'),
])
def test_what_is_not_a_makeself_archive_is_refused(tmp_path, data, missing):
    path = write_bytes(tmp_path, 'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run', data)
    assert refusal(check_makeself_header, path) == path + ' ' + NOT_MAKESELF % missing


def test_an_empty_run_is_refused(tmp_path):
    path = write_bytes(tmp_path, 'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run', b'')
    assert refusal(check_makeself_header, path) == (
        '%s is empty, not a makeself archive, so nothing was run: download the package again' % path)


HEADER_BYTES = 18668  # the fixture's 719 lines


@pytest.mark.parametrize('size', [2000, 10000, HEADER_BYTES - 1])
def test_a_makeself_header_cut_short_is_refused(tmp_path, size):
    path = write_bytes(tmp_path, 'demo_1.0.0.run', makeself_archive()[:size])
    assert refusal(check_makeself_header, path) == (
        '%s has %d bytes, which end inside its 719-line makeself header: it is cut short, so nothing was run. Download '
        'the package again' % (path, size))


@pytest.mark.parametrize('size', [HEADER_BYTES, HEADER_BYTES + 100, HEADER_BYTES + MAKESELF_PAYLOAD_BYTES - 1,
                                  HEADER_BYTES + MAKESELF_PAYLOAD_BYTES + 1])
def test_a_makeself_archive_of_another_size_than_its_header_says_is_refused(tmp_path, size):
    whole = makeself_archive()
    assert len(whole) == HEADER_BYTES + MAKESELF_PAYLOAD_BYTES
    path = write_bytes(tmp_path, 'demo_1.0.0.run', (whole + b'\0')[:size])
    assert refusal(check_makeself_header, path) == (
        '%s has %d bytes, but its makeself header announces %d (a %d-byte header and a %d-byte payload): it is cut '
        'short or damaged, so nothing was run. Download the package again' % (
            path, size, HEADER_BYTES + MAKESELF_PAYLOAD_BYTES, HEADER_BYTES, MAKESELF_PAYLOAD_BYTES))


def test_a_makeself_header_without_its_size_lines_is_checked_against_its_payload(tmp_path):
    # makeself before 2.4 writes no skip= and totalsize=: the file must at least be longer than its payload.
    header = re.sub(r'(?m)^(skip|totalsize)=.*\n', '', load_fixture(MAKESELF_HEADER)).encode('ascii')
    check_makeself_header(write_bytes(tmp_path, 'old.run', header + b'\0' * MAKESELF_PAYLOAD_BYTES))
    header = header.replace(b'filesizes="142"', b'filesizes="1000000 200000"')
    path = write_bytes(tmp_path, 'cut.run', header + b'\0' * 5000)
    assert refusal(check_makeself_header, path) == (
        '%s has %d bytes, but its makeself header announces a 1200000-byte payload after the header: it is cut short, '
        'so nothing was run. Download the package again' % (path, len(header) + 5000))


def test_the_makeself_header_check_reads_only_the_head_of_a_huge_file(tmp_path):
    path = write_bytes(tmp_path, 'demo_1.0.0.run', makeself_archive())
    os.truncate(path, 64 * 1024 ** 3)  # sparse: reading it all would take minutes and all the memory
    assert refusal(check_makeself_header, path) == (
        '%s has %d bytes, but its makeself header announces %d (a %d-byte header and a %d-byte payload): it is cut '
        'short or damaged, so nothing was run. Download the package again' % (
            path, 64 * 1024 ** 3, HEADER_BYTES + MAKESELF_PAYLOAD_BYTES, HEADER_BYTES, MAKESELF_PAYLOAD_BYTES))


def test_a_run_named_with_a_version_that_does_not_parse_is_refused_before_its_header_is_read(tmp_path):
    path = write_bytes(tmp_path, 'Ascend-cann-toolkit_8..0_linux-aarch64.run', b'never read')
    package = RunPackage(path, runner=None, which=None, options={}, host_arch='aarch64')
    assert refusal(package.inspect) == (
        "Ascend-cann-toolkit_8..0_linux-aarch64.run: the package version 8..0 from its file name does not parse "
        "('8..0' is not a version: '' is neither a number nor a tag such as rc1, post2 or b010), so nothing was run: "
        "use the package as Huawei names and builds it")


def test_a_run_package_reads_its_header(tmp_path):
    path = write_bytes(tmp_path, 'Ascend-cann-toolkit_8.0.0_linux-aarch64.run', b'#!/bin/sh\nrm -rf /\n')
    package = RunPackage(path, runner=None, which=None, options={}, host_arch='aarch64')
    assert refusal(package.inspect) == path + ' ' + NOT_MAKESELF % ALL_MARKERS
    path = write_bytes(tmp_path, 'Ascend-cann-toolkit_8.0.1_linux-aarch64.run', makeself_archive())
    package = RunPackage(path, runner=None, which=None, options={}, host_arch='aarch64')
    package.inspect()
    assert (package.component, package.version) == ('toolkit', '8.0.1')


def test_a_whole_deb_layout_passes(tmp_path):
    check_deb_layout(write_bytes(tmp_path, 'a.deb', ar_archive(DEB_MEMBERS), 0o644))


@pytest.mark.parametrize('size,message', [
    (0, 'is not a Debian package (it does not start like an ar archive), so nothing was run: download the package '
        'again'),
    (8 + 30, 'is cut short or damaged: no valid ar member header at byte 8, so nothing was run. Download the package '
             'again'),
    (100, 'is cut short or damaged: no valid ar member header at byte 72, so nothing was run. Download the package '
          'again'),
    (200, 'is cut short: its member control.tar.xz ends at byte 232, but the file has 200 bytes, so nothing was run. '
          'Download the package again'),
    (1294 // 2, 'is cut short: its member data.tar.xz ends at byte 1293, but the file has 647 bytes, so nothing was '
                'run. Download the package again'),
    (1292, 'is cut short: its member data.tar.xz ends at byte 1293, but the file has 1292 bytes, so nothing was run. '
           'Download the package again'),
])
def test_a_deb_cut_short_is_refused(tmp_path, size, message):
    whole = ar_archive(DEB_MEMBERS)
    assert len(whole) == 1294
    path = write_bytes(tmp_path, 'a.deb', whole[:size], 0o644)
    assert refusal(check_deb_layout, path) == '%s %s' % (path, message)


def test_a_deb_without_its_members_is_refused(tmp_path):
    path = write_bytes(tmp_path, 'a.deb', ar_archive([('debian-binary', b'2.0\n'), ('control.tar.xz', b'c')]), 0o644)
    assert refusal(check_deb_layout, path) == (
        '%s is not a Debian package: its ar members are debian-binary, control.tar.xz, not debian-binary, '
        'control.tar* and data.tar*, so nothing was run' % path)
    path = write_bytes(tmp_path, 'b.deb', ar_archive(DEB_MEMBERS) + b'<html>garbage after the last member</html>\n' * 3,
                       0o644)
    assert refusal(check_deb_layout, path) == (
        '%s is cut short or damaged: no valid ar member header at byte 1294, so nothing was run. Download the package '
        'again' % path)


@pytest.mark.needs_tools('dpkg-deb')
def test_a_real_deb_cut_in_half_is_refused(tmp_path):
    """A .deb built by dpkg-deb passes; its first half, which dpkg-deb --info and -f still read, does not."""
    tree = tmp_path / 'tree'
    (tree / 'DEBIAN').mkdir(parents=True)
    (tree / 'DEBIAN' / 'control').write_text('Package: ascend-cann-toolkit\nVersion: 8.0.0\nArchitecture: arm64\n'
                                             'Maintainer: test <test@example.com>\nDescription: test\n')
    (tree / 'usr' / 'share').mkdir(parents=True)
    (tree / 'usr' / 'share' / 'payload').write_bytes(os.urandom(200000))
    deb = str(tmp_path / 'Ascend-cann-toolkit_8.0.0_linux-aarch64.deb')
    subprocess.run(['dpkg-deb', '--root-owner-group', '-b', str(tree), deb], check=True, stdout=subprocess.DEVNULL)
    check_deb_layout(deb)
    with open(deb, 'rb') as handle:
        half = write_bytes(tmp_path, 'half.deb', handle.read()[:os.path.getsize(deb) // 2], 0o644)
    assert subprocess.run(['dpkg-deb', '--info', half], stdout=subprocess.DEVNULL, check=False).returncode == 0
    message = refusal(check_deb_layout, half)
    assert re.match(r'^%s is cut short: its member data\.tar(\.[a-z]+)? ends at byte [0-9]+, but the file has %d '
                    r'bytes, so nothing was run\. Download the package again$'
                    % (re.escape(half), os.path.getsize(half)), message), message


# ---------------------------------------------------------------------------------------------------- host-wide lock

def test_a_second_process_waits_for_the_lock_and_times_out_naming_the_holder(tmp_path):
    path = str(tmp_path / 'package.lock')
    # A clock that advances only when the wait sleeps: the whole timeout passes, polling, however loaded the machine.
    now = [0.0]
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        now[0] += seconds

    with LockHolder(path) as holder:
        message = refusal(HostLock(path, 'this run').acquire, 1, lambda: now[0], sleep)
        # Tried again every 0.2 s until the second had passed, then gave up.
        assert (waits, now[0]) == (pytest.approx([0.2] * 5), pytest.approx(1.0))
        assert held_by(path, holder.pid, 'the other run', 1).match(message), message
        holder.release()
    lock = HostLock(path, 'this run')
    lock.acquire(0)
    with open(path, encoding='utf-8') as handle:
        assert handle.read().startswith('pid %d: this run, since ' % os.getpid())
    lock.release()
    with open(path, encoding='utf-8') as handle:
        assert handle.read() == ''


def test_the_lock_is_taken_as_soon_as_the_holder_releases_it(tmp_path):
    path = str(tmp_path / 'package.lock')
    waits = []
    with LockHolder(path) as holder:
        def sleep(seconds):
            waits.append(seconds)
            if len(waits) == 3:
                holder.release()
        lock = HostLock(path, 'this run')
        lock.acquire(600, sleep=sleep)
    assert waits == [0.2] * 3
    lock.release()


def test_a_killed_holder_releases_the_lock(tmp_path):
    path = str(tmp_path / 'package.lock')
    LockHolder(path).stop()
    with HostLock(path, 'this run').held(0):
        message = refusal(HostLock(path, 'a third run').acquire, 0)
    assert held_by(path, os.getpid(), 'this run', 0).match(message), message


def test_the_lock_is_released_when_the_block_fails(tmp_path):
    path = str(tmp_path / 'package.lock')
    with pytest.raises(PackageError):
        with HostLock(path, 'this run').held(0):
            raise PackageError('the installer failed')
    with HostLock(path, 'the next run').held(0):
        pass


def test_the_lock_is_a_regular_file_and_never_a_symlink(tmp_path):
    target = tmp_path / 'shadow'
    target.write_text('root:x:0:\n')
    link = tmp_path / 'link.lock'
    link.symlink_to(target)
    assert refusal(HostLock(str(link), 'this run').acquire, 0) == (
        'cannot open the host-wide lock %s: Too many levels of symbolic links (ascend_package runs as root: become: '
        'true)' % link)
    assert target.read_text() == 'root:x:0:\n'
    (tmp_path / 'dir.lock').mkdir()
    assert refusal(HostLock(str(tmp_path / 'dir.lock'), 'this run').acquire, 0) == (
        'cannot open the host-wide lock %s: Is a directory (ascend_package runs as root: become: true)'
        % (tmp_path / 'dir.lock'))
    os.mkfifo(str(tmp_path / 'fifo.lock'))
    assert refusal(HostLock(str(tmp_path / 'fifo.lock'), 'this run').acquire, 0) == (
        'the host-wide lock %s is not a regular file: remove it' % (tmp_path / 'fifo.lock'))


def test_host_lock_path_is_in_the_first_lock_directory_there_is(tmp_path, monkeypatch):
    monkeypatch.setattr(_ascend_packages, 'LOCK_DIRS', (str(tmp_path / 'missing'), str(tmp_path), '/run'))
    assert host_lock_path() == str(tmp_path / 'kunpeng_ascend_package.lock')


# ---------------------------------------------------------------------------------------------------- backends

def test_a_backend_must_implement_the_whole_contract():
    class WithoutSucceeded(PackageBackend):
        def inspect(self):
            pass

        def installed_version(self):
            return None

        def verify(self, action):
            pass

        def command(self, action, installed_version=None):
            return Command(['true'])

    with pytest.raises(TypeError, match='succeeded'):
        WithoutSucceeded('/srv/p.run', None, None, {})  # pylint: disable=abstract-class-instantiated  # the point
    for backend in _ascend_packages.BACKENDS:
        assert backend('/srv/p' + backend.extension, None, None, {}).file_name == 'p' + backend.extension


# ---------------------------------------------------------------------------------------------------- the task

class FakeBackend(PackageBackend):
    """A driver package 24.1.rc1 whose "installer" leaves ``after_run`` installed and exits ``rc``."""

    extension = '.fake'

    def __init__(self, installed=None, after_run='24.1.rc1', rc=0, component='driver'):
        super().__init__('/srv/Ascend-hdk-910b-npu-driver_24.1.rc1.fake', None, None, {}, 'aarch64')
        self.component, self.version = component, '24.1.rc1'
        self.installed, self.after_run, self.rc = installed, after_run, rc
        self.verified = []

    def inspect(self):
        pass

    def installed_version(self):
        return self.installed

    def verify(self, action):
        self.verified.append(action)

    def command(self, action, installed_version=None):
        return Command(['installer', '--' + action], data='y')

    def succeeded(self, result):
        return result.rc == 0


class FakeRunner:
    """The command runner of one task: it runs the fake installer (the backend's state changes) and records it."""

    def __init__(self, backend):
        self.backend = backend
        self.runs = []

    def run(self, argv, data=None, environ_update=None):
        self.runs.append((argv, data))
        self.backend.installed = self.backend.after_run
        return CommandResult(argv, self.backend.rc, 'installer output\n', '')


def task(tmp_path, **params):
    return dict({'state': 'present', 'allow_downgrade': False, 'accept_eula': False, 'install_username': None,
                 'root': str(tmp_path)}, **params)


def test_ensure_in_check_mode_predicts_the_run_after_the_archive_check_and_runs_nothing(tmp_path):
    backend = FakeBackend()
    runner = FakeRunner(backend)
    result = ensure(task(tmp_path), backend, runner, [].append, check_mode=True)
    assert result == {'component': 'driver', 'package_version': '24.1.rc1', 'before': None, 'after': '24.1.rc1',
                      'action': 'install', 'reboot_required': False}
    assert (backend.verified, runner.runs) == (['install'], [])


def test_ensure_runs_the_command_and_reads_the_version_again(tmp_path):
    backend = FakeBackend(installed='23.0.rc3')
    runner = FakeRunner(backend)
    result = ensure(task(tmp_path, state='latest'), backend, runner, [].append, check_mode=False)
    assert result == {'component': 'driver', 'package_version': '24.1.rc1', 'before': '23.0.rc3', 'after': '24.1.rc1',
                      'action': 'upgrade', 'reboot_required': False, 'cmd': ['installer', '--upgrade'],
                      'stdout': 'installer output\n', 'stderr': ''}
    assert runner.runs == [(['installer', '--upgrade'], 'y')]


def test_ensure_with_nothing_to_do_checks_and_runs_nothing(tmp_path):
    backend = FakeBackend(installed='23.0.rc3')
    runner = FakeRunner(backend)
    assert ensure(task(tmp_path), backend, runner, [].append, check_mode=False)['action'] == 'none'
    assert (backend.verified, runner.runs) == ([], [])


def test_ensure_refuses_a_success_that_left_another_version(tmp_path):
    backend = FakeBackend(after_run='23.0.rc3')
    with pytest.raises(PackageError) as raised:
        ensure(task(tmp_path), backend, FakeRunner(backend), [].append, check_mode=False)
    assert raised.value.msg == ('Installing driver 24.1.rc1 from Ascend-hdk-910b-npu-driver_24.1.rc1.fake reported '
                                'success, but the installed version is 23.0.rc3, not 24.1.rc1 (check install_path and '
                                'root)')
    assert raised.value.result.argv == ['installer', '--install']


def test_ensure_reports_a_failed_installer_with_its_output(tmp_path):
    backend = FakeBackend(after_run=None, rc=1)
    with pytest.raises(PackageError) as raised:
        ensure(task(tmp_path), backend, FakeRunner(backend), [].append, check_mode=False)
    assert raised.value.msg == ('Installing driver 24.1.rc1 from Ascend-hdk-910b-npu-driver_24.1.rc1.fake failed (rc=1): '
                                'installer output')
    assert raised.value.extra == {'install_log': []}


def test_ensure_warns_that_the_run_user_is_ignored_for_the_firmware(tmp_path):
    backend = FakeBackend(installed='7.5.0.1.129', component='firmware')
    warnings = []
    ensure(task(tmp_path, install_username='ascend'), backend, FakeRunner(backend), warnings.append, check_mode=True)
    assert warnings == ['install_username and install_usergroup are ignored for the firmware package']


@pytest.mark.parametrize('component,action,accepted,refused', [
    ('toolkit', 'install', False, True),
    ('docker-runtime', 'upgrade', False, True),
    ('toolkit', 'install', True, False),
    ('toolkit', 'uninstall', False, False),
    ('driver', 'install', False, False),
])
def test_check_eula(component, action, accepted, refused):
    if refused:
        with pytest.raises(PackageError, match='installing the %s means accepting' % component):
            check_eula({'accept_eula': accepted}, component, action)
    else:
        check_eula({'accept_eula': accepted}, component, action)


@pytest.mark.parametrize('option', ['install_path', 'install_username'])
def test_run_only_options_are_refused_for_a_deb(option):
    params = {'install_path': None, 'install_username': None}
    deb = _ascend_packages.DebPackage('/srv/Ascend-cann-toolkit_8.0.0_linux-aarch64.deb', None, None, {})
    check_options(params, deb)
    check_options(dict(params, **{option: '/opt/x'}), RunPackage('/srv/x.run', None, None, {}))
    with pytest.raises(PackageError) as raised:
        check_options(dict(params, **{option: '/opt/x'}), deb)
    assert raised.value.msg == '%s is only supported for .run packages, not for ' \
                               'Ascend-cann-toolkit_8.0.0_linux-aarch64.deb' % option


def test_package_path_is_made_absolute_and_must_be_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'p.run').write_text('x')
    assert package_path({'path': 'p.run', 'lock_timeout': 0}) == str(tmp_path / 'p.run')
    with pytest.raises(PackageError, match='^path: %s/missing.run is not a file on the managed host$' % tmp_path):
        package_path({'path': 'missing.run', 'lock_timeout': 0})
    with pytest.raises(PackageError, match='^lock_timeout must be 0 .do not wait. or a number of seconds, not -1$'):
        package_path({'path': 'p.run', 'lock_timeout': -1})
