# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ascend_package's main() with the simulator's fake Ascend packages (tests/simulator/build_packages.py), run for
real (run_command is NOT mocked) into a scratch root: ASCEND_SIM_ROOT for the installers, the module's root option
for reading what they wrote. Packages are built for this machine's architecture, so the module's own check passes.
"""

from __future__ import annotations

import os
import re
from unittest import mock

import pytest

from ansible.module_utils import basic

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _ascend_packages
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import ascend_package
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    ExitJson,
    FailJson,
    SimRoot,
    build_packages,
    capture_results,
    run_main,
    this_machine_arch,
)
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.stack.test__ascend_packages import (
    ALL_MARKERS,
    NOT_MAKESELF,
)
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.modules.test_ascend_package import outcome, without_run

# The fake installers are shell scripts in makeself archives; build_packages.py makes the .deb files with dpkg-deb.
pytestmark = pytest.mark.needs_tools('bash', 'makeself', 'dpkg-deb')

ARCH = this_machine_arch()
ARCH_NAME = 'aarch64' if ARCH == 'aarch64' else 'x86-64'


def build(out, *args):
    """The .run packages built into ``out``, by the stem of their name."""
    return dict((name.split('_')[0], os.path.join(str(out), name)) for name in build_packages(out, '--arch', ARCH, *args)
                if name.endswith('.run'))


@pytest.fixture(scope='module')
def sim_packages(tmp_path_factory):
    first = build(tmp_path_factory.mktemp('packages'))
    newer = build(tmp_path_factory.mktemp('newer'), '--only', 'driver,toolkit', '--formats', 'run',
                  '--driver', '24.1.0', '--cann', '8.0.1')
    return first, newer


@pytest.fixture
def sim_root(tmp_path, monkeypatch):
    """The path of a SimRoot of this machine's architecture, whose installers the module runs from this process."""
    root = SimRoot(tmp_path, arch=ARCH)
    root.export(monkeypatch)
    capture_results(monkeypatch)
    monkeypatch.setattr(basic.AnsibleModule, 'warn', mock.Mock())
    (tmp_path / 'run-lock').mkdir()
    monkeypatch.setattr(_ascend_packages, 'LOCK_DIRS', (str(tmp_path / 'run-lock'),))
    return root.root


def sim_run(args, outcome_class=ExitJson):
    assert os.environ.get('ASCEND_SIM_ROOT') not in (None, '', '/')
    return run_main(ascend_package.main, args, outcome_class)


def four_runs(args, changes):
    """Check mode, real run, idempotent check mode, idempotent real run; check mode predicts the real run."""
    predicted = sim_run(dict(args, _ansible_check_mode=True))
    result = sim_run(args)
    assert predicted == without_run(result)
    assert result['changed'] is changes
    again = sim_run(dict(args, _ansible_check_mode=True))
    assert again['changed'] is False and again['action'] == 'none'
    assert sim_run(args) == again
    return result


def sim_cmd(result):
    """The installer command of a real run, after the coreutils timeout prefix (wherever timeout is)."""
    assert os.path.basename(result['cmd'][0]) == 'timeout' and result['cmd'][1:3] == ['--kill-after=5', '1800']
    return result['cmd'][3:]


def read_version(path, key='Version'):
    with open(str(path), encoding='utf-8') as handle:
        return dict(line.strip().split('=', 1) for line in handle if '=' in line)[key]


def test_sim_driver_install_upgrade_and_uninstall(sim_packages, sim_root):
    first, newer = sim_packages
    driver, newer_driver = first['Ascend-hdk-910b-npu-driver'], newer['Ascend-hdk-910b-npu-driver']
    version_info = sim_root / 'usr' / 'local' / 'Ascend' / 'driver' / 'version.info'

    predicted = sim_run({'path': driver, 'root': str(sim_root), '_ansible_check_mode': True})
    assert predicted == outcome('driver', '24.1.rc1', None, '24.1.rc1', 'install')
    assert not version_info.exists()
    result = four_runs({'path': driver, 'root': str(sim_root)}, True)
    assert sim_cmd(result) == [driver, '--full', '--quiet', '--nox11', '--install-for-all']
    assert 'Driver package installed successfully! The new version takes effect immediately.' in result['stdout']
    assert read_version(version_info) == '24.1.rc1'

    result = four_runs({'path': newer_driver, 'root': str(sim_root), 'state': 'latest'}, True)
    assert without_run(result) == outcome('driver', '24.1.0', '24.1.rc1', '24.1.0', 'upgrade', reboot=True)
    assert sim_cmd(result) == [newer_driver, '--upgrade', '--quiet', '--nox11']
    assert read_version(version_info) == '24.1.0'

    # the older package file removes the newer driver with the driver's own uninstall.sh
    result = four_runs({'path': driver, 'root': str(sim_root), 'state': 'absent'}, True)
    assert without_run(result) == outcome('driver', '24.1.rc1', '24.1.0', None, 'uninstall', reboot=True)
    assert sim_cmd(result) == [str(sim_root / 'usr' / 'local' / 'Ascend' / 'driver' / 'script' / 'uninstall.sh')]
    assert not version_info.exists()


def test_sim_whole_stack_install_upgrade_and_removal(sim_packages, sim_root):
    first, newer = sim_packages
    stack = [('driver', 'Ascend-hdk-910b-npu-driver', '24.1.rc1'),
             ('firmware', 'Ascend-hdk-910b-npu-firmware', '7.5.0.3.220'),
             ('toolkit', 'Ascend-cann-toolkit', '8.0.0'),
             ('kernels', 'Ascend-cann-kernels-910b', '8.0.0'),
             ('nnal', 'Ascend-cann-nnal', '8.0.0'),
             ('docker-runtime', 'Ascend-docker-runtime', '6.0.0')]
    for component, stem, version in stack:
        args = {'path': first[stem], 'root': str(sim_root), 'accept_eula': True}
        result = four_runs(args, True)
        assert without_run(result) == outcome(component, version, None, version, 'install',
                                              reboot=component == 'firmware'), result['stdout']
    daemon = (sim_root / 'etc' / 'docker' / 'daemon.json').read_text()
    assert '/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime' in daemon

    # a newer toolkit replaces the old version directory, and the kernels installed in it with it
    result = four_runs({'path': newer['Ascend-cann-toolkit'], 'root': str(sim_root), 'state': 'latest',
                        'accept_eula': True}, True)
    assert without_run(result) == outcome('toolkit', '8.0.1', '8.0.0', '8.0.1', 'upgrade')
    assert sim_run({'path': first['Ascend-cann-kernels-910b'], 'root': str(sim_root),
                    '_ansible_check_mode': True, 'accept_eula': True})['before'] is None

    for component, stem, version in reversed(stack):
        if component == 'kernels':
            continue
        args = {'path': first[stem], 'root': str(sim_root), 'state': 'absent'}
        result = four_runs(args, True)
        assert result['action'] == 'uninstall' and result['after'] is None, result
    ascend = sim_root / 'usr' / 'local' / 'Ascend'
    assert sorted(os.listdir(str(ascend))) == []


def test_sim_failure_reports_the_installer_error_and_its_log(sim_packages, sim_root):
    first = sim_packages[0]
    driver = first['Ascend-hdk-910b-npu-driver']
    (sim_root / 'etc' / 'passwd').write_text('root:x:0:0:root:/root:/bin/bash\n')
    result = sim_run({'path': driver, 'root': str(sim_root)}, FailJson)
    assert result['msg'] == (
        'Installing driver 24.1.rc1 from Ascend-hdk-910b-npu-driver_24.1.rc1_linux-%s.run failed (rc=1): '
        '[ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser. Hint: create the run user and '
        'group first (HwHiAiUser by default, see the Ascend install guide), or set install_username and '
        'install_usergroup to existing ones' % ARCH_NAME)
    assert result['rc'] == 1
    assert any(line.endswith('[ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser')
               for line in result['install_log'])
    assert not (sim_root / 'usr' / 'local' / 'Ascend' / 'driver').exists()


def test_sim_corrupted_archive_fails_its_check(tmp_path, sim_root):
    driver = build(tmp_path / 'corrupted', '--only', 'driver', '--formats', 'run', '--corrupt', 'npu-driver')
    driver = driver['Ascend-hdk-910b-npu-driver']
    for check_mode in (True, False):
        result = sim_run({'path': driver, 'root': str(sim_root), '_ansible_check_mode': check_mode}, FailJson)
        assert result['msg'].startswith('Ascend-hdk-910b-npu-driver_24.1.rc1_linux-%s.run failed its archive check '
                                        '(--check, rc=2), so nothing was installed: ' % ARCH_NAME)
        assert 'Error in SHA256 checksums' in result['msg']
        assert sim_cmd(result) == [driver, '--check']
    assert not (sim_root / 'usr').joinpath('local').exists()


def test_sim_a_script_named_like_a_package_is_never_executed(tmp_path, sim_root):
    marker = tmp_path / 'executed'
    path = tmp_path / ('Ascend-hdk-910b-npu-driver_24.1.rc1_linux-%s.run' % ARCH_NAME)
    path.write_text('#!/bin/sh\ntouch %s\n' % marker)
    path.chmod(0o755)
    for check_mode in (True, False):
        result = sim_run({'path': str(path), 'root': str(sim_root), '_ansible_check_mode': check_mode}, FailJson)
        assert result == {'msg': str(path) + ' ' + NOT_MAKESELF % ALL_MARKERS}
    assert not marker.exists()


def test_sim_half_a_run_is_never_executed(sim_packages, tmp_path, sim_root):
    driver = sim_packages[0]['Ascend-hdk-910b-npu-driver']
    with open(driver, 'rb') as handle:
        data = handle.read()
    path = tmp_path / os.path.basename(driver)
    path.write_bytes(data[:len(data) // 2])
    path.chmod(0o755)
    for check_mode in (True, False):
        result = sim_run({'path': str(path), 'root': str(sim_root), '_ansible_check_mode': check_mode}, FailJson)
        assert re.match(r'^%s has %d bytes, (which end inside its [0-9]+-line makeself header|but its makeself header '
                        r'announces [0-9]+ .*): it is cut short' % (re.escape(str(path)), len(data) // 2),
                        result['msg']), result
    assert not (sim_root / 'usr' / 'local').exists()


@pytest.mark.needs_tools('dpkg-query')
def test_sim_a_whole_deb_passes_its_checks_and_half_of_it_does_not(tmp_path, sim_root):
    """Check mode only (it reads this machine's dpkg database, where the fake driver is not installed)."""
    out = tmp_path / 'debs'
    deb = str(out / build_packages(out, '--arch', ARCH, '--only', 'driver', '--formats', 'deb')[0])
    assert deb.endswith('.deb')
    result = sim_run({'path': deb, '_ansible_check_mode': True})
    assert (result['action'], result['after']) == ('install', '24.1.rc1')
    with open(deb, 'rb') as handle:
        data = handle.read()
    half = tmp_path / os.path.basename(deb)
    half.write_bytes(data[:len(data) // 2])
    result = sim_run({'path': str(half), '_ansible_check_mode': True}, FailJson)
    assert re.match(r'^%s is cut short: its member data\.tar(\.[a-z]+)? ends at byte [0-9]+, but the file has %d bytes'
                    % (re.escape(str(half)), len(data) // 2), result['msg']), result
