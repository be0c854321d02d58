# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ascend_package's main() against the fake host: run_command mocked, installed files in a temporary root. (Its
runs of the simulator's fake Ascend packages for real are in tests/integration/test_ascend_package_installs.py.)"""

from __future__ import annotations

import os
import re
import subprocess
from unittest import mock

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _ascend_packages
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._ascend_packages import HostLock
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import ascend_package
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    DEB_MEMBERS,
    PARSABLE_LOCALE,
    TIMEOUT,
    ExitJson,
    FailJson,
    LockHolder,
    ar_archive,
    held_by,
    load_fixture,
    makeself_archive,
    run_main,
)
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.stack.test__ascend_packages import (
    ALL_MARKERS,
    DRIVER_OK,
    DRIVER_REBOOT,
    FIRMWARE_OK,
    NOT_MAKESELF,
    TOOLKIT_DEB_NO_PYTHON,
    TOOLKIT_OK,
)

DPKG = '/usr/bin/dpkg'
DPKG_DEB = '/usr/bin/dpkg-deb'
DPKG_QUERY = '/usr/bin/dpkg-query'
RPM = '/usr/bin/rpm'
PREFIX = [TIMEOUT, '--kill-after=5', '1800']
# Where the tests put package files on the fake host.
SRV = '/srv/ascend'
CHECK_OK = 'Verifying archive integrity...  100%   SHA256 checksums are OK. All good.\n'

# component: (package file, its version, an older version, the file saying what is installed, its text)
PACKAGES = {
    'driver': ('Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run', '25.0.rc1.1', '24.1.rc3.7',
               'usr/local/Ascend/driver/version.info', 'Version={}\nascendhal_version=7.35.23\n'),
    'firmware': ('Ascend-hdk-910-npu-firmware_7.5.0.2.220.run', '7.5.0.2.220', '6.3.0.1.241',
                 'usr/local/Ascend/firmware/version.info', 'Version={}\nfirmware_version=1.0\n'),
    'toolkit': ('Ascend-cann-toolkit_8.0.0_linux-aarch64.run', '8.0.0', '8.0.RC3',
                'usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info',
                'package_name=Ascend-cann-toolkit\nversion={}\n'),
    'kernels': ('Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run', '8.0.0', '8.0.RC3',
                'usr/local/Ascend/ascend-toolkit/latest/version.cfg',
                '# version: 1.0\nopp_kernel_installed_version=[7.6.0.1.220:{}]\n'),
    'nnal': ('Ascend-cann-nnal_8.0.0_linux-aarch64.run', '8.0.0', '8.0.T63',
             'usr/local/Ascend/nnal/atb/latest/version.info', '    Ascend-cann-atb : {}\n    Platform : aarch64\n'),
    'docker-runtime': ('Ascend-docker-runtime_6.0.0_linux-aarch64.run', '6.0.0', '5.0.RC3',
                       'usr/local/Ascend/Ascend-Docker-Runtime/version.info', 'Version={}\n'),
}
# What each installer prints on success (real captures where there are some).
INSTALL_OUTPUT = {
    'driver': load_fixture(DRIVER_OK),
    'firmware': load_fixture(FIRMWARE_OK),
    'toolkit': load_fixture(TOOLKIT_OK),
    'kernels': '[Kernels] [20250101-00:00:00] [INFO] install success\n',
    'nnal': '[NNAL] [20250101-00:00:00] [INFO] install success\n',
    'docker-runtime': '[INFO] please reboot daemon and container engine to take effect\n',
}
FIRST_INSTALL_FLAGS = {
    'driver': ['--full', '--quiet', '--nox11', '--install-for-all'],
    'firmware': ['--full', '--quiet', '--nox11'],
    'toolkit': ['--install', '--quiet', '--nox11', '--install-for-all'],
    'kernels': ['--install', '--quiet', '--nox11', '--install-for-all'],
    'nnal': ['--install', '--quiet', '--nox11', '--install-for-all'],
    'docker-runtime': ['--install', '--quiet', '--nox11'],
}
EULA = ('toolkit', 'kernels', 'nnal', 'docker-runtime')


@pytest.fixture
def host(fake_host):
    """The fake host with dpkg and rpm on PATH; ``package`` puts package files in its /srv/ascend."""
    fake_host.on_path.update({'dpkg': DPKG, 'dpkg-deb': DPKG_DEB, 'dpkg-query': DPKG_QUERY, 'rpm': RPM})
    fake_host.mkdir(SRV)
    return fake_host


def package(host, name, mode=0o755, data=None):
    """A package file (never run: run_command is mocked) that passes the checks of its format's file layout: a
    real makeself header for a .run, an ar archive of a .deb's members for a .deb; else ``data``."""
    if data is None:
        by_format = {'.run': makeself_archive(), '.deb': ar_archive(DEB_MEMBERS)}
        data = by_format.get(os.path.splitext(name)[1], b'#!/bin/sh\nexit 99\n')
    return host.write(SRV + '/' + name, data, mode)


def install(host, component, version):
    _name, _version, _older, version_file, text = PACKAGES[component]
    host.write(version_file, text.format(version))


def remove(host, component):
    os.remove(host.path(PACKAGES[component][3]))


def installs(host, component, version, stdout, rc=0):
    """An installer answer that leaves ``version`` installed."""
    def answer():
        install(host, component, version)
        return rc, stdout, ''
    return answer


def removes(host, component, stdout=''):
    def answer():
        remove(host, component)
        return 0, stdout, ''
    return answer


def run_module(args, outcome=ExitJson):
    return run_main(ascend_package.main, args, outcome)


def call(*argv, **kwargs):
    """The run_command call of ``argv`` under the default 1800 s timeout."""
    return mock.call(PREFIX + list(argv), data=kwargs.get('data'),
                     environ_update=dict(PARSABLE_LOCALE, **kwargs.get('environ', {})), check_rc=False)


def outcome(component, version, before, after, action, reboot=False, command=None, stdout=None):
    result = {'changed': before != after, 'component': component, 'package_version': version, 'before': before,
              'after': after, 'action': action, 'reboot_required': reboot,
              'diff': {'before': {'version': before}, 'after': {'version': after}}}
    if command is not None:
        result.update(cmd=PREFIX + command, stdout=stdout, stderr='')
    return result


def without_run(result):
    return dict((key, value) for key, value in result.items() if key not in ('cmd', 'stdout', 'stderr'))


def module_args(host, package_of, **extra):
    """Arguments for the package of component ``package_of`` (with accept_eula where it is needed)."""
    args = {'path': package(host, PACKAGES[package_of][0]), 'root': host.root}
    if package_of in EULA:
        args['accept_eula'] = True
    args.update(extra)
    return args


# ---------------------------------------------------------------------------------------------------- .run, each component

@pytest.mark.parametrize('component', sorted(PACKAGES))
def test_first_install_checks_the_archive_then_installs(host, component):
    name, version = PACKAGES[component][:2]
    args = module_args(host, component)
    path = args['path']
    data = 'y' if component == 'docker-runtime' else None
    host.answers[(path, '--check')] = (0, CHECK_OK, '')
    host.answers[tuple([path] + FIRST_INSTALL_FLAGS[component])] = installs(host, component, version,
                                                                            INSTALL_OUTPUT[component])

    predicted = run_module(dict(args, _ansible_check_mode=True))
    assert host.calls() == [call(path, '--check')]
    assert not os.path.exists(host.path(PACKAGES[component][3]))

    result = run_module(args)
    assert host.calls() == [call(path, '--check')] * 2 + [call(path, *FIRST_INSTALL_FLAGS[component], data=data)]
    assert result == outcome(component, version, None, version, 'install', reboot=component == 'firmware',
                             command=[path] + FIRST_INSTALL_FLAGS[component], stdout=INSTALL_OUTPUT[component])
    assert predicted == without_run(result)

    # idempotent: check mode and real run do nothing, not even --check
    again = outcome(component, version, version, version, 'none')
    assert run_module(dict(args, _ansible_check_mode=True)) == again
    assert run_module(args) == again
    assert len(host.calls()) == 3
    host.warn.assert_not_called()
    assert os.path.basename(path) == name


@pytest.mark.parametrize('component', sorted(PACKAGES))
def test_latest_upgrades_an_older_version(host, component):
    version, older = PACKAGES[component][1:3]
    install(host, component, older)
    args = module_args(host, component, state='latest')
    path = args['path']
    data = 'y' if component == 'docker-runtime' else None
    stdout = load_fixture(DRIVER_REBOOT) if component == 'driver' else INSTALL_OUTPUT[component]
    host.answers[(path, '--check')] = (0, CHECK_OK, '')
    host.answers[(path, '--upgrade', '--quiet', '--nox11')] = installs(host, component, version, stdout)

    predicted = run_module(dict(args, _ansible_check_mode=True))
    result = run_module(args)
    assert host.calls() == [call(path, '--check')] * 2 + [call(path, '--upgrade', '--quiet', '--nox11', data=data)]
    assert result == outcome(component, version, older, version, 'upgrade',
                             reboot=component in ('driver', 'firmware'),
                             command=[path, '--upgrade', '--quiet', '--nox11'], stdout=stdout)
    assert predicted == without_run(result)
    assert run_module(args) == outcome(component, version, version, version, 'none')


@pytest.mark.parametrize('component', sorted(PACKAGES))
def test_present_leaves_another_installed_version_alone(host, component):
    version, older = PACKAGES[component][1:3]
    install(host, component, older)
    assert run_module(module_args(host, component)) == outcome(component, version, older, older, 'none')
    assert host.calls() == []


@pytest.mark.parametrize('component', sorted(PACKAGES))
def test_absent_uninstalls_with_the_run(host, component):
    version = PACKAGES[component][1]
    install(host, component, version)
    args = module_args(host, component, state='absent', accept_eula=False)
    path = args['path']
    stdout = 'Driver package uninstalled successfully! Reboot needed for uninstallation to take effect!\n'
    host.answers[(path, '--check')] = (0, CHECK_OK, '')
    host.answers[(path, '--uninstall', '--quiet', '--nox11')] = removes(host, component, stdout)

    predicted = run_module(dict(args, _ansible_check_mode=True))
    assert os.path.exists(host.path(PACKAGES[component][3]))
    result = run_module(args)
    assert host.calls() == [call(path, '--check')] * 2 + [call(path, '--uninstall', '--quiet', '--nox11')]
    assert result == outcome(component, version, version, None, 'uninstall',
                             reboot=component in ('driver', 'firmware'),
                             command=[path, '--uninstall', '--quiet', '--nox11'], stdout=stdout)
    assert predicted == without_run(result)
    assert run_module(args) == outcome(component, version, None, None, 'none')
    assert len(host.calls()) == 3


@pytest.mark.parametrize('component', ['driver', 'firmware', 'toolkit', 'docker-runtime'])
def test_absent_of_another_version_runs_its_own_uninstall_script(host, component):
    version, older, version_file = PACKAGES[component][1:4]
    install(host, component, older)
    script = host.write(os.path.join(os.path.dirname(version_file), 'script', 'uninstall.sh'), '#!/bin/sh\n', 0o755)
    args = module_args(host, component, state='absent')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[(script,)] = removes(host, component)
    result = run_module(args)
    assert host.calls() == [call(args['path'], '--check'), call(script)]
    assert result == outcome(component, version, older, None, 'uninstall', reboot=component == 'firmware',
                             command=[script], stdout='')


def test_absent_of_another_version_without_a_script_uses_the_run(host):
    install(host, 'nnal', '8.0.T63')
    args = module_args(host, 'nnal', state='absent')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[(args['path'], '--uninstall', '--quiet', '--nox11')] = removes(host, 'nnal')
    assert run_module(args)['action'] == 'uninstall'
    assert host.calls()[-1] == call(args['path'], '--uninstall', '--quiet', '--nox11')


# ---------------------------------------------------------------------------------------------------- .run options

def test_driver_install_path_and_user_on_a_first_install(host):
    args = module_args(host, 'driver', install_path='/data/Ascend', install_username='root', install_usergroup='root',
                       extra_args=['--install-type=full'])
    path = args['path']
    argv = [path, '--full', '--quiet', '--nox11', '--install-for-all', '--install-path=/data/Ascend',
            '--install-username=root', '--install-usergroup=root', '--install-type=full']
    host.answers[(path, '--check')] = (0, CHECK_OK, '')

    def install():
        host.write('/data/Ascend/driver/version.info', 'Version=25.0.rc1.1\n')
        return 0, INSTALL_OUTPUT['driver'], ''
    host.answers[tuple(argv)] = install
    result = run_module(args)
    assert host.calls() == [call(path, '--check'), call(*argv)]
    assert result['after'] == '25.0.rc1.1'
    assert run_module(args)['action'] == 'none'


def test_driver_upgrade_keeps_its_recorded_path(host):
    host.write('/etc/ascend_install.info', 'Driver_Install_Path_Param=/data/Ascend\n')
    host.write('/data/Ascend/driver/version.info', 'Version=24.1.rc3.7\n')
    args = module_args(host, 'driver', state='latest', install_path='/data/Ascend', extra_args=['--force'])
    argv = (args['path'], '--upgrade', '--quiet', '--nox11', '--force')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')

    def upgrade():
        host.write('/data/Ascend/driver/version.info', 'Version=25.0.rc1.1\n')
        return 0, load_fixture(DRIVER_REBOOT), ''
    host.answers[argv] = upgrade
    result = run_module(args)
    assert host.calls()[-1] == call(*argv)
    assert (result['before'], result['after'], result['reboot_required']) == ('24.1.rc3.7', '25.0.rc1.1', True)


@pytest.mark.parametrize('action', ['upgrade', 'absent'])
def test_toolkit_install_path_on_upgrade_and_removal(host, action):
    host.write('/etc/Ascend/ascend_cann_install.info', 'Install_Path=/data/cann\n')
    info = '/data/cann/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info'
    host.write(info, 'version=%s\n' % ('8.0.RC3' if action == 'upgrade' else '8.0.0'))
    args = module_args(host, 'toolkit', state='latest' if action == 'upgrade' else 'absent',
                       install_path='/data/cann')
    flag = '--upgrade' if action == 'upgrade' else '--uninstall'
    argv = (args['path'], flag, '--quiet', '--nox11', '--install-path=/data/cann')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')

    def answer():
        if action == 'upgrade':
            host.write(info, 'version=8.0.0\n')
        else:
            os.remove(host.path(info))
        return 0, '', ''
    host.answers[argv] = answer
    result = run_module(args)
    assert host.calls()[-1] == call(*argv)
    assert result['after'] == ('8.0.0' if action == 'upgrade' else None)


def test_docker_runtime_scene_through_extra_args(host):
    args = module_args(host, 'docker-runtime', extra_args=['--install-scene=containerd'])
    argv = (args['path'], '--install', '--quiet', '--nox11', '--install-scene=containerd')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[argv] = installs(host, 'docker-runtime', '6.0.0', INSTALL_OUTPUT['docker-runtime'])
    assert run_module(args)['action'] == 'install'
    assert host.calls()[-1] == call(*argv, data='y')


def test_install_username_is_ignored_with_a_warning_for_the_firmware(host):
    args = module_args(host, 'firmware', install_username='root', install_usergroup='root')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[(args['path'], '--full', '--quiet', '--nox11')] = installs(host, 'firmware', '7.5.0.2.220', '')
    assert run_module(args)['action'] == 'install'
    host.warn.assert_called_once_with('install_username and install_usergroup are ignored for the firmware package')


def test_install_username_needs_install_usergroup(host):
    args = module_args(host, 'driver', install_username='root')
    assert run_module(args, FailJson) == {'msg': 'parameters are required together: install_username, '
                                                 'install_usergroup'}


def test_timeout_option(host):
    args = module_args(host, 'driver', timeout=0)
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[tuple([args['path']] + FIRST_INSTALL_FLAGS['driver'])] = installs(host, 'driver', '25.0.rc1.1', '')
    result = run_module(args)
    assert host.calls()[-1] == mock.call([args['path']] + FIRST_INSTALL_FLAGS['driver'], data=None,
                                         environ_update=PARSABLE_LOCALE, check_rc=False)
    assert result['cmd'] == [args['path']] + FIRST_INSTALL_FLAGS['driver']


def test_firmware_exit_code_2_counts_as_success(host):
    args = module_args(host, 'firmware')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[(args['path'], '--full', '--quiet', '--nox11')] = installs(host, 'firmware', '7.5.0.2.220',
                                                                            INSTALL_OUTPUT['firmware'], rc=2)
    result = run_module(args)
    assert (result['changed'], result['after'], result['reboot_required']) == (True, '7.5.0.2.220', True)


def test_component_option_for_a_renamed_run(host):
    path = package(host, 'npu-driver_25.0.rc1.1_linux-aarch64.run')
    host.answers[(path, '--check')] = (0, CHECK_OK, '')
    host.answers[tuple([path] + FIRST_INSTALL_FLAGS['driver'])] = installs(host, 'driver', '25.0.rc1.1', '')
    result = run_module({'path': path, 'root': host.root, 'component': 'driver'})
    assert (result['component'], result['package_version'], result['action']) == ('driver', '25.0.rc1.1', 'install')


def test_component_option_overrides_the_name_with_a_warning(host):
    args = module_args(host, 'driver', component='firmware')
    install(host, 'firmware', '25.0.rc1.1')
    assert run_module(args)['action'] == 'none'
    host.warn.assert_called_once_with(
        'component is firmware, but Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run is named like a driver '
        'package: it is handled as firmware')


# ---------------------------------------------------------------------------------------------------- refusals

@pytest.mark.parametrize('component', EULA)
def test_eula_must_be_accepted_before_anything_runs(host, component):
    args = module_args(host, component, accept_eula=False)
    for check_mode in (True, False):
        assert run_module(dict(args, _ansible_check_mode=check_mode), FailJson) == {
            'msg': 'installing the %s means accepting its End User License Agreement: set accept_eula to true '
                   '(nothing was run)' % component}
    assert host.calls() == []


def test_no_eula_needed_when_nothing_is_to_be_done(host):
    install(host, 'toolkit', '8.0.0')
    assert run_module(module_args(host, 'toolkit', accept_eula=False))['action'] == 'none'


def test_downgrade_is_refused_unless_allowed(host):
    install(host, 'driver', '26.0.rc1')
    args = module_args(host, 'driver', state='latest')
    assert run_module(args, FailJson) == {
        'msg': 'the package version 25.0.rc1.1 is older than the installed 26.0.rc1: set allow_downgrade to true '
               'to downgrade'}
    assert host.calls() == []
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[(args['path'], '--upgrade', '--quiet', '--nox11')] = installs(host, 'driver', '25.0.rc1.1', '')
    result = run_module(dict(args, allow_downgrade=True))
    assert (result['action'], result['before'], result['after']) == ('upgrade', '26.0.rc1', '25.0.rc1.1')


def test_a_package_for_another_architecture_is_refused_before_anything_runs(host):
    path = package(host, 'Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-x86-64.run')
    for check_mode in (True, False):
        assert run_module({'path': path, '_ansible_check_mode': check_mode}, FailJson) == {
            'msg': 'Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-x86-64.run is built for x86_64, but this host is '
                   'aarch64: use the package built for aarch64'}
    assert host.calls() == []


def test_archive_check_failure_installs_nothing(host):
    args = module_args(host, 'driver')
    # what makeself prints (on stderr, without a terminal) for a damaged payload
    stderr = 'Verifying archive integrity...     0%    65%  100%  Error in SHA256 checksums: 06a6 is different from 0be4\n'
    host.answers[(args['path'], '--check')] = (2, '', stderr)
    expected = {
        'msg': 'Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run failed its archive check (--check, rc=2), so '
               'nothing was installed: Verifying archive integrity...     0%    65%  100%  Error in SHA256 checksums: '
               '06a6 is different from 0be4. Download the package again',
        'cmd': PREFIX + [args['path'], '--check'], 'rc': 2, 'stdout': '', 'stderr': stderr}
    assert run_module(dict(args, _ansible_check_mode=True), FailJson) == expected
    assert run_module(args, FailJson) == expected
    assert host.calls() == [call(args['path'], '--check')] * 2


def test_a_run_that_is_not_executable(host):
    path = package(host, PACKAGES['driver'][0], mode=0o644)
    assert run_module({'path': path, 'root': host.root}, FailJson) == {
        'msg': '%s is not executable: copy it with mode 0755 (or chmod +x it)' % path}
    assert host.calls() == []


def test_unknown_extension(host):
    path = package(host, 'Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.zip')
    assert run_module({'path': path}, FailJson) == {
        'msg': 'path: %s is not a .run, .deb or .rpm file (the package format is chosen by the file name extension)'
               % path}


def test_path_that_is_not_a_file(host):
    assert run_module({'path': host.path(SRV)}, FailJson) == {
        'msg': 'path: %s is not a file on the managed host' % host.path(SRV)}


def test_unknown_run_name(host):
    path = package(host, 'driver.run')
    assert run_module({'path': path}, FailJson) == {
        'msg': 'cannot tell which Ascend component driver.run is from its name (Huawei names them like '
               'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run): set the component option'}
    assert run_module({'path': path, 'component': 'driver'}, FailJson) == {
        'msg': "cannot read the package version from the file name driver.run: keep Huawei's name, which ends in "
               "_<version>_linux-<arch>.run (or _<version>.run)"}


def test_install_path_is_refused_for_a_deb(host):
    path = package(host, 'Ascend-cann-toolkit_8.0.0_linux-aarch64.deb')
    assert run_module({'path': path, 'install_path': '/data/cann'}, FailJson) == {
        'msg': 'install_path is only supported for .run packages, not for Ascend-cann-toolkit_8.0.0_linux-aarch64.deb'}
    assert host.calls() == []


# ---------------------------------------------------------------------------------------------------- failures

def test_installer_failure_reports_its_error_lines_and_the_new_log_lines(host):
    log = host.write('/var/log/ascend_seclog/ascend_install.log',
                     '[Driver] [2025-07-16 09:00:00] [ERROR]ERR_NO:0x0080;ERR_DES:an older failure\n')
    args = module_args(host, 'driver')
    path = args['path']
    error = '[Driver] [2025-07-17 10:35:21] [ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser'
    stdout = ('[Driver] [2025-07-17 10:35:21] [INFO]Start time: 2025-07-17 10:35:21\n'
              '[Driver] [2025-07-17 10:35:21] [INFO]LogFile: /var/log/ascend_seclog/ascend_install.log\n' + error + '\n')

    def failing_install():
        with open(log, 'a', encoding='utf-8') as handle:
            handle.write(error + '\n[Driver] [2025-07-17 10:35:21] [INFO]End time: 2025-07-17 10:35:21\n')
        return 1, stdout, ''
    host.answers[(path, '--check')] = (0, CHECK_OK, '')
    host.answers[tuple([path] + FIRST_INSTALL_FLAGS['driver'])] = failing_install
    assert run_module(args, FailJson) == {
        'msg': 'Installing driver 25.0.rc1.1 from Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run failed '
               '(rc=1): [ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser. Hint: create the '
               'run user and group first (HwHiAiUser by default, see the Ascend install guide), or set '
               'install_username and install_usergroup to existing ones',
        'cmd': PREFIX + [path] + FIRST_INSTALL_FLAGS['driver'], 'rc': 1, 'stdout': stdout, 'stderr': '',
        'install_log': [error, '[Driver] [2025-07-17 10:35:21] [INFO]End time: 2025-07-17 10:35:21']}


def test_success_without_the_version_file_is_a_failure(host):
    args = module_args(host, 'nnal', install_path='/data/other')
    argv = [args['path'], '--install', '--quiet', '--nox11', '--install-for-all', '--install-path=/data/other']
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[tuple(argv)] = (0, 'done\n', '')
    assert run_module(args, FailJson) == {
        'msg': 'Installing nnal 8.0.0 from Ascend-cann-nnal_8.0.0_linux-aarch64.run reported success, but the '
               'installed version is unknown (no version file), not 8.0.0 (check install_path and root)',
        'cmd': PREFIX + argv, 'rc': 0, 'stdout': 'done\n', 'stderr': ''}


def test_uninstall_that_leaves_the_component_is_a_failure(host):
    install(host, 'firmware', '7.5.0.2.220')
    args = module_args(host, 'firmware', state='absent')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[(args['path'], '--uninstall', '--quiet', '--nox11')] = (0, '', '')
    assert run_module(args, FailJson)['msg'] == (
        'Removing firmware 7.5.0.2.220 with Ascend-hdk-910-npu-firmware_7.5.0.2.220.run reported success, but firmware '
        '7.5.0.2.220 is still installed')


def test_unreadable_version_file(host):
    host.write(PACKAGES['driver'][3], 'ascendhal_version=7.35.23\n')
    assert run_module(module_args(host, 'driver'), FailJson) == {
        'msg': 'cannot read the installed driver version: %s has no usable "Version=" line (check the file, or the '
               'root and install_path options)' % host.path(PACKAGES['driver'][3])}


# ---------------------------------------------------------------------------------------------------- .deb

DEB = 'Ascend-cann-toolkit_8.0.0_linux-aarch64.deb'
DEB_CONTROL = 'Package: ascend-cann-toolkit\nVersion: 8.0.0\nArchitecture: arm64\n'
NOT_FOUND = (1, '', 'dpkg-query: no packages found matching ascend-cann-toolkit\n')
DEB_LISTING = ('drwxr-xr-x root/root         0 2025-01-01 00:00 ./\n'
               '-rwxr-xr-x root/root      2915 2025-01-01 00:00 ./usr/lib/ascend-sim/packages/installer.sh\n')
DEBIAN = {'DEBIAN_FRONTEND': 'noninteractive'}


class Dpkg:
    """dpkg's view of ascend-cann-toolkit on the fake host."""

    def __init__(self, host, path, installed=None):
        self.installed = installed
        self.query = ('dpkg-query', '-W', '-f=${Status}\t${Version}', 'ascend-cann-toolkit')
        host.answers[(DPKG_DEB, '-f', path, 'Package', 'Version', 'Architecture')] = (0, DEB_CONTROL, '')
        host.answers[(DPKG_QUERY,) + self.query[1:]] = self.answer
        host.answers[(DPKG_DEB, '--contents', path)] = (0, DEB_LISTING, '')

    def answer(self):
        if self.installed is None:
            return NOT_FOUND
        return 0, 'install ok installed\t%s' % self.installed, ''

    def sets(self, version, stdout=''):
        def answer():
            self.installed = version
            return 0, stdout, ''
        return answer


def deb_reads(path):
    return [call(DPKG_DEB, '-f', path, 'Package', 'Version', 'Architecture'),
            call(DPKG_QUERY, '-W', '-f=${Status}\t${Version}', 'ascend-cann-toolkit')]


def deb_checks(path):
    """The reads and the archive check before an install or upgrade."""
    return deb_reads(path) + [call(DPKG_DEB, '--contents', path)]


def test_deb_install_check_mode_and_idempotence(host):
    path = package(host, DEB, 0o644)
    dpkg = Dpkg(host, path)
    host.answers[(DPKG, '-i', path)] = dpkg.sets('8.0.0', 'Setting up ascend-cann-toolkit (8.0.0) ...\n')
    args = {'path': path, 'accept_eula': True}
    predicted = run_module(dict(args, _ansible_check_mode=True))
    assert host.calls() == deb_checks(path)
    result = run_module(args)
    assert host.calls() == deb_checks(path) * 2 + [call(DPKG, '-i', path, environ=DEBIAN), deb_reads(path)[1]]
    assert result == outcome('toolkit', '8.0.0', None, '8.0.0', 'install', command=[DPKG, '-i', path],
                             stdout='Setting up ascend-cann-toolkit (8.0.0) ...\n')
    assert predicted == without_run(result)
    assert run_module(args) == outcome('toolkit', '8.0.0', '8.0.0', '8.0.0', 'none')


def test_deb_upgrade_with_extra_args_and_removal(host):
    path = package(host, DEB, 0o644)
    dpkg = Dpkg(host, path, installed='8.0.RC3')
    host.answers[(DPKG, '-i', '--force-overwrite', path)] = dpkg.sets('8.0.0')
    result = run_module({'path': path, 'state': 'latest', 'accept_eula': True, 'extra_args': ['--force-overwrite']})
    assert host.calls()[:4] == deb_checks(path) + [call(DPKG, '-i', '--force-overwrite', path, environ=DEBIAN)]
    assert (result['action'], result['before'], result['after']) == ('upgrade', '8.0.RC3', '8.0.0')

    host.answers[(DPKG, '-r', 'ascend-cann-toolkit')] = dpkg.sets(None)
    predicted = run_module({'path': path, 'state': 'absent', '_ansible_check_mode': True})
    result = run_module({'path': path, 'state': 'absent'})
    # removal does not use the file, so it is not checked
    assert host.calls()[-6:] == deb_reads(path) * 2 + [call(DPKG, '-r', 'ascend-cann-toolkit', environ=DEBIAN),
                                                       deb_reads(path)[1]]
    assert result == outcome('toolkit', '8.0.0', '8.0.0', None, 'uninstall', command=[DPKG, '-r', 'ascend-cann-toolkit'],
                             stdout='')
    assert predicted == without_run(result)


def test_deb_failure_reports_the_maintainer_script_errors(host):
    path = package(host, DEB, 0o644)
    Dpkg(host, path)
    stdout = load_fixture(TOOLKIT_DEB_NO_PYTHON)
    host.answers[(DPKG, '-i', path)] = (1, stdout, '')
    result = run_module({'path': path, 'accept_eula': True}, FailJson)
    assert result['msg'] == (
        'Installing toolkit 8.0.0 from Ascend-cann-toolkit_8.0.0_linux-aarch64.deb failed (rc=1): [ERROR] There is no '
        'python3.7,python3.8,python3.9,python3.10,python3.11 in the current environment !; dpkg: error processing '
        'package ascend-cann-toolkit (--configure):. Hint: install a Python 3 that this CANN release supports, as '
        'python3 on the PATH')
    assert result['cmd'] == PREFIX + [DPKG, '-i', path]


def test_deb_half_configured_counts_as_not_installed_with_a_warning(host):
    path = package(host, DEB, 0o644)
    host.answers[(DPKG_DEB, '-f', path, 'Package', 'Version', 'Architecture')] = (0, DEB_CONTROL, '')
    host.answers[(DPKG_QUERY, '-W', '-f=${Status}\t${Version}', 'ascend-cann-toolkit')] = (
        0, 'install ok half-configured\t8.0.0', '')
    host.answers[(DPKG_DEB, '--contents', path)] = (0, DEB_LISTING, '')
    result = run_module({'path': path, 'accept_eula': True, '_ansible_check_mode': True})
    assert (result['action'], result['before']) == ('install', None)
    host.warn.assert_called_once_with('dpkg lists ascend-cann-toolkit as half-configured: it counts as not installed')


def test_deb_component_from_its_package_name_and_architecture_from_its_control(host):
    path = package(host, 'toolkit.deb', 0o644)
    host.answers[(DPKG_DEB, '-f', path, 'Package', 'Version', 'Architecture')] = (
        0, 'Package: ascend-cann-toolkit\nVersion: 8.0.0\nArchitecture: amd64\n', '')
    assert run_module({'path': path, 'accept_eula': True}, FailJson) == {
        'msg': 'toolkit.deb is built for x86_64, but this host is aarch64: use the package built for aarch64'}
    assert host.calls() == [call(DPKG_DEB, '-f', path, 'Package', 'Version', 'Architecture')]


def test_deb_without_dpkg(host):
    path = package(host, DEB, 0o644)
    del host.on_path['dpkg-deb']
    assert run_module({'path': path}, FailJson) == {
        'msg': 'dpkg-deb was found not in PATH: install dpkg (needed for .deb packages)'}


# ---------------------------------------------------------------------------------------------------- .rpm

RPM_FILE = 'Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.rpm'


class Rpmdb:
    """rpm's view of ascend-hdk-910b-npu-driver on the fake host."""

    def __init__(self, host, path, installed=None):
        self.installed = installed
        host.answers[(RPM, '-qp', '--qf', '%{NAME}\\n%{VERSION}\\n%{ARCH}\\n', path)] = (
            0, 'ascend-hdk-910b-npu-driver\n25.0.rc1.1\naarch64\n', '')
        host.answers[(RPM, '-q', '--qf', '%{VERSION}\\n', 'ascend-hdk-910b-npu-driver')] = self.answer
        host.answers[(RPM, '-K', '--nosignature', path)] = (0, '%s: digests OK\n' % path, '')

    def answer(self):
        if self.installed is None:
            return 1, 'package ascend-hdk-910b-npu-driver is not installed\n', ''
        return 0, self.installed + '\n', ''

    def sets(self, version, stdout=''):
        def answer():
            self.installed = version
            return 0, stdout, ''
        return answer


def rpm_reads(path):
    return [call(RPM, '-qp', '--qf', '%{NAME}\\n%{VERSION}\\n%{ARCH}\\n', path),
            call(RPM, '-q', '--qf', '%{VERSION}\\n', 'ascend-hdk-910b-npu-driver')]


def rpm_checks(path):
    """The reads and the digest check before an install or upgrade."""
    return rpm_reads(path) + [call(RPM, '-K', '--nosignature', path)]


def test_rpm_install_upgrade_downgrade_and_removal(host):
    path = package(host, RPM_FILE, 0o644)
    rpmdb = Rpmdb(host, path)
    stdout = load_fixture(DRIVER_REBOOT)
    host.answers[(RPM, '-Uvh', path)] = rpmdb.sets('25.0.rc1.1', stdout)
    predicted = run_module({'path': path, '_ansible_check_mode': True})
    assert host.calls() == rpm_checks(path)
    result = run_module({'path': path})
    assert host.calls()[3:] == rpm_checks(path) + [call(RPM, '-Uvh', path), rpm_reads(path)[1]]
    assert result == outcome('driver', '25.0.rc1.1', None, '25.0.rc1.1', 'install', reboot=True,
                             command=[RPM, '-Uvh', path], stdout=stdout)
    # a first driver install cannot be known to need a reboot before it ran
    assert predicted == dict(without_run(result), reboot_required=False)
    assert run_module({'path': path})['action'] == 'none'

    rpmdb.installed = '24.1.rc3.7'
    result = run_module({'path': path, 'state': 'latest'})
    assert (result['action'], result['before'], result['after']) == ('upgrade', '24.1.rc3.7', '25.0.rc1.1')
    assert host.calls()[-2] == call(RPM, '-Uvh', path)

    rpmdb.installed = '26.0.rc1'
    host.answers[(RPM, '-Uvh', '--oldpackage', path)] = rpmdb.sets('25.0.rc1.1')
    result = run_module({'path': path, 'state': 'latest', 'allow_downgrade': True})
    assert (result['action'], result['before'], result['after']) == ('upgrade', '26.0.rc1', '25.0.rc1.1')
    assert host.calls()[-2] == call(RPM, '-Uvh', '--oldpackage', path)

    host.answers[(RPM, '-e', 'ascend-hdk-910b-npu-driver')] = rpmdb.sets(None)
    result = run_module({'path': path, 'state': 'absent'})
    assert host.calls()[-4:] == rpm_reads(path) + [call(RPM, '-e', 'ascend-hdk-910b-npu-driver'), rpm_reads(path)[1]]
    assert (result['action'], result['before'], result['after'], result['changed']) == (
        'uninstall', '25.0.rc1.1', None, True)


def test_rpm_several_installed_versions(host):
    path = package(host, RPM_FILE, 0o644)
    Rpmdb(host, path, installed='24.1.rc3.7\n25.0.rc1.1\n24.1.0')
    result = run_module({'path': path, 'state': 'latest'})
    assert (result['action'], result['before']) == ('none', '25.0.rc1.1')
    host.warn.assert_called_once_with('rpm lists ascend-hdk-910b-npu-driver in several versions (24.1.rc3.7, '
                                      '25.0.rc1.1, 24.1.0): the newest counts')


def test_rpm_query_failure(host):
    path = package(host, RPM_FILE, 0o644)
    host.answers[(RPM, '-qp', '--qf', '%{NAME}\\n%{VERSION}\\n%{ARCH}\\n', path)] = (
        1, '', 'error: open of %s failed: Permission denied\n' % path)
    assert run_module({'path': path}, FailJson) == {
        'msg': 'rpm -qp %s failed (rc=1): error: open of %s failed: Permission denied' % (RPM_FILE, path),
        'cmd': PREFIX + [RPM, '-qp', '--qf', '%{NAME}\\n%{VERSION}\\n%{ARCH}\\n', path], 'rc': 1, 'stdout': '',
        'stderr': 'error: open of %s failed: Permission denied\n' % path}


# ---------------------------------------------------------------------------------------------------- refusals of files
# Each refusal comes before any command that acts (in check mode too); the only commands allowed before it are the
# read-only queries named in each test.

DRIVER_RUN = PACKAGES['driver'][0]


@pytest.mark.parametrize('data,missing', [
    (b'#!/bin/sh\ncurl -s http://example.com/install | sh\n', ALL_MARKERS),
    (b'<!DOCTYPE html>\n<html><body><h1>403 Forbidden</h1></body></html>\n',
     'a first line starting with #!, ' + ALL_MARKERS),
    (makeself_archive()[:600], 'filesizes=, MS_Printf'),
])
def test_a_run_that_is_not_a_makeself_archive_is_never_run(host, data, missing):
    path = package(host, DRIVER_RUN, data=data)
    install(host, 'driver', '24.1.rc3.7')
    for state in ('present', 'latest', 'absent'):
        for check_mode in (True, False):
            assert run_module({'path': path, 'root': host.root, 'state': state, '_ansible_check_mode': check_mode},
                              FailJson) == {'msg': path + ' ' + NOT_MAKESELF % missing}
    assert host.calls() == []


def test_an_empty_or_cut_run_is_never_run(host):
    path = package(host, DRIVER_RUN, data=b'')
    for check_mode in (True, False):
        assert run_module({'path': path, 'root': host.root, '_ansible_check_mode': check_mode}, FailJson) == {
            'msg': '%s is empty, not a makeself archive, so nothing was run: download the package again' % path}
    path = package(host, DRIVER_RUN, data=makeself_archive()[:10000])
    for check_mode in (True, False):
        assert run_module({'path': path, 'root': host.root, '_ansible_check_mode': check_mode}, FailJson) == {
            'msg': '%s has 10000 bytes, which end inside its 719-line makeself header: it is cut short, so nothing was '
                   'run. Download the package again' % path}
    assert host.calls() == []


def test_a_relative_path_is_made_absolute_before_it_is_checked_or_run(host, monkeypatch):
    monkeypatch.chdir(host.path(SRV))
    path = package(host, DRIVER_RUN)
    host.answers[(path, '--check')] = (0, CHECK_OK, '')
    host.answers[tuple([path] + FIRST_INSTALL_FLAGS['driver'])] = installs(host, 'driver', '25.0.rc1.1', '')
    result = run_module({'path': DRIVER_RUN, 'root': host.root})
    assert host.calls() == [call(path, '--check'), call(path, *FIRST_INSTALL_FLAGS['driver'])]
    assert result['cmd'] == PREFIX + [path] + FIRST_INSTALL_FLAGS['driver']
    # a bare name that is not in the working directory is not looked up anywhere else
    monkeypatch.chdir(host.root)
    assert run_module({'path': DRIVER_RUN}, FailJson) == {
        'msg': 'path: %s is not a file on the managed host' % os.path.join(host.root, DRIVER_RUN)}


@pytest.mark.parametrize('name,version', [('Ascend-hdk-910b-npu-driver_8..0_linux-aarch64.run', '8..0'),
                                          ('Ascend-hdk-910b-npu-driver_24.1.0.._linux-aarch64.run', '24.1.0..'),
                                          ('Ascend-hdk-910b-npu-driver_24.1.spc1_linux-aarch64.run', '24.1.spc1')])
def test_a_run_version_that_does_not_parse_is_refused_before_anything_runs(host, name, version):
    path = package(host, name)
    error = {'8..0': "'8..0' is not a version: '' is neither a number nor a tag such as rc1, post2 or b010",
             '24.1.0..': "'24.1.0..' is not a version: '' is neither a number nor a tag such as rc1, post2 or b010",
             '24.1.spc1': "'24.1.spc1' is not a version: 'spc1' is neither a number nor a tag such as rc1, post2 or "
                          "b010"}[version]
    for check_mode in (True, False):
        assert run_module({'path': path, 'root': host.root, '_ansible_check_mode': check_mode}, FailJson) == {
            'msg': '%s: the package version %s from its file name does not parse (%s), so nothing was run: use the '
                   'package as Huawei names and builds it' % (name, version, error)}
    assert host.calls() == []


def test_a_deb_version_that_does_not_parse_is_refused_after_reading_its_control_data(host):
    path = package(host, DEB, 0o644)
    host.answers[(DPKG_DEB, '-f', path, 'Package', 'Version', 'Architecture')] = (
        0, 'Package: ascend-cann-toolkit\nVersion: 8..0\nArchitecture: arm64\n', '')
    for check_mode in (True, False):
        assert run_module({'path': path, 'accept_eula': True, '_ansible_check_mode': check_mode}, FailJson) == {
            'msg': "%s: the package version 8..0 from its Version field does not parse ('8..0' is not a version: '' is "
                   "neither a number nor a tag such as rc1, post2 or b010), so nothing was run: use the package as "
                   "Huawei names and builds it" % DEB}
    assert host.calls() == [call(DPKG_DEB, '-f', path, 'Package', 'Version', 'Architecture')] * 2


def test_an_rpm_version_that_does_not_parse_is_refused_after_reading_its_header(host):
    path = package(host, RPM_FILE, 0o644)
    query = (RPM, '-qp', '--qf', '%{NAME}\\n%{VERSION}\\n%{ARCH}\\n', path)
    host.answers[query] = (0, 'ascend-hdk-910b-npu-driver\n25..0\naarch64\n', '')
    assert run_module({'path': path, '_ansible_check_mode': True}, FailJson) == {
        'msg': "%s: the package version 25..0 from its VERSION tag does not parse ('25..0' is not a version: '' is "
               "neither a number nor a tag such as rc1, post2 or b010), so nothing was run: use the package as Huawei "
               "names and builds it" % RPM_FILE}
    assert host.calls() == [call(*query)]


def test_a_deb_cut_short_is_refused_before_dpkg_reads_it(host):
    path = package(host, DEB, 0o644, data=ar_archive(DEB_MEMBERS)[:647])
    Dpkg(host, path)
    for check_mode in (True, False):
        assert run_module({'path': path, 'accept_eula': True, '_ansible_check_mode': check_mode}, FailJson) == {
            'msg': '%s is cut short: its member data.tar.xz ends at byte 1293, but the file has 647 bytes, so nothing '
                   'was run. Download the package again' % path}
    assert host.calls() == []


@pytest.mark.needs_tools('dpkg-deb')
def test_the_first_half_of_a_real_deb_is_refused_in_check_mode(host, tmp_path):
    tree = tmp_path / 'tree'
    (tree / 'DEBIAN').mkdir(parents=True)
    (tree / 'DEBIAN' / 'control').write_text('Package: ascend-cann-toolkit\nVersion: 8.0.0\nArchitecture: arm64\n'
                                             'Maintainer: test <test@example.com>\nDescription: test\n')
    (tree / 'opt').mkdir()
    (tree / 'opt' / 'payload').write_bytes(os.urandom(100000))
    whole = str(tmp_path / DEB)
    subprocess.run(['dpkg-deb', '--root-owner-group', '-b', str(tree), whole], check=True, stdout=subprocess.DEVNULL)
    with open(whole, 'rb') as handle:
        data = handle.read()
    path = package(host, DEB, 0o644, data=data[:len(data) // 2])
    Dpkg(host, path)
    result = run_module({'path': path, 'accept_eula': True, '_ansible_check_mode': True}, FailJson)
    assert re.match(r'^%s is cut short: its member data\.tar(\.[a-z]+)? ends at byte [0-9]+, but the file has %d '
                    r'bytes, so nothing was run\. Download the package again$' % (re.escape(path), len(data) // 2),
                    result['msg']), result
    assert host.calls() == []


def test_a_deb_that_fails_its_archive_check_installs_nothing(host):
    path = package(host, DEB, 0o644)
    Dpkg(host, path)
    # what dpkg-deb 1.21.22 printed for a .deb with 100 bytes of its data.tar.xz inverted (only the size differs)
    stderr = ("dpkg-deb (subprocess): decompressing archive '%s' (size=1294) member 'data.tar': lzma error: "
              "compressed data is corrupt\ntar: Unexpected EOF in archive\ntar: Error is not recoverable: exiting now\n"
              "dpkg-deb: error: tar subprocess returned error exit status 2\n" % path)
    host.answers[(DPKG_DEB, '--contents', path)] = (2, DEB_LISTING, stderr)
    expected = {
        'msg': "%s failed its archive check (dpkg-deb --contents, rc=2), so nothing was installed: -rwxr-xr-x "
               "root/root      2915 2025-01-01 00:00 ./usr/lib/ascend-sim/packages/installer.sh; dpkg-deb "
               "(subprocess): decompressing archive '%s' (size=1294) member 'data.tar': lzma error: compressed data "
               "is corrupt; tar: Unexpected EOF in archive; tar: Error is not recoverable: exiting now; dpkg-deb: "
               "error: tar subprocess returned error exit status 2. Download the package again" % (DEB, path),
        'cmd': PREFIX + [DPKG_DEB, '--contents', path], 'rc': 2, 'stdout': DEB_LISTING, 'stderr': stderr}
    for check_mode in (True, False):
        assert run_module({'path': path, 'accept_eula': True, '_ansible_check_mode': check_mode}, FailJson) == expected
    assert host.calls() == deb_checks(path) * 2


def test_an_rpm_that_fails_its_digest_check_installs_nothing(host):
    path = package(host, RPM_FILE, 0o644)
    Rpmdb(host, path)
    # rpm 4.14 and later print the failing classes in upper case
    host.answers[(RPM, '-K', '--nosignature', path)] = (1, '%s: DIGESTS NOT OK\n' % path, '')
    for check_mode in (True, False):
        assert run_module({'path': path, '_ansible_check_mode': check_mode}, FailJson) == {
            'msg': '%s failed its digest check (rpm -K --nosignature, rc=1), so nothing was installed: %s: DIGESTS NOT '
                   'OK. Download the package again' % (RPM_FILE, path),
            'cmd': PREFIX + [RPM, '-K', '--nosignature', path], 'rc': 1, 'stdout': '%s: DIGESTS NOT OK\n' % path,
            'stderr': ''}
    assert host.calls() == rpm_checks(path) * 2


# ---------------------------------------------------------------------------------------------------- host-wide lock

def lock_is_held(path):
    """Whether some run holds the lock at ``path`` (tried from a new open file, as another run would)."""
    probe = HostLock(path, 'probe')
    try:
        probe.acquire(0)
    except _ascend_packages.PackageError:
        return True
    probe.release()
    return False


def test_the_lock_is_held_from_reading_the_installed_version_to_reading_it_again(host, monkeypatch):
    args = module_args(host, 'driver')
    path = args['path']
    held = []
    read_installed = _ascend_packages.InstalledRun.version

    def version(installed):
        held.append(('read', lock_is_held(host.lock)))
        return read_installed(installed)
    monkeypatch.setattr(_ascend_packages.InstalledRun, 'version', version)
    host.answers[(path, '--check')] = (0, CHECK_OK, '')
    install = installs(host, 'driver', '25.0.rc1.1', '')

    def installer():
        held.append(('install', lock_is_held(host.lock)))
        with open(host.lock, encoding='utf-8') as handle:
            held.append(handle.read().split(', since ')[0])
        return install()
    host.answers[tuple([path] + FIRST_INSTALL_FLAGS['driver'])] = installer
    assert run_module(dict(args, _ansible_check_mode=True))['action'] == 'install'
    assert held == [('read', True)]
    assert run_module(args)['action'] == 'install'
    assert held[1:] == [('read', True), ('install', True), 'pid %d: ascend_package state=present path=%s' % (
        os.getpid(), path), ('read', True)]
    assert not lock_is_held(host.lock)


@pytest.mark.parametrize('check_mode', [True, False])
def test_a_run_waits_for_the_lock_and_fails_naming_its_holder(host, check_mode):
    args = module_args(host, 'driver', lock_timeout=1, _ansible_check_mode=check_mode)
    with LockHolder(host.lock) as holder:
        message = run_module(args, FailJson)['msg']
        assert held_by(host.lock, holder.pid, 'the other run', 1).match(message), message
        assert host.calls() == []
    install(host, 'driver', '25.0.rc1.1')
    assert run_module(args)['action'] == 'none'
    install(host, 'driver', '25.0.rc1.1')
    assert run_module(args)['action'] == 'none'


def test_a_run_that_fails_releases_the_lock(host):
    args = module_args(host, 'driver')
    host.answers[(args['path'], '--check')] = (0, CHECK_OK, '')
    host.answers[tuple([args['path']] + FIRST_INSTALL_FLAGS['driver'])] = (1, '[ERROR]ERR_NO:0x0091', '')
    assert run_module(args, FailJson)['rc'] == 1
    assert not lock_is_held(host.lock)


def test_a_negative_lock_timeout_is_refused(host):
    assert run_module(module_args(host, 'driver', lock_timeout=-1), FailJson) == {
        'msg': 'lock_timeout must be 0 (do not wait) or a number of seconds, not -1'}
    assert host.calls() == []
