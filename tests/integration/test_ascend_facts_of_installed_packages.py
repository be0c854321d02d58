# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ascend_facts' main() on a scratch root the simulator's fake Ascend packages were really installed into: the facts
read what the installers wrote, with no warning."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import ascend_facts
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import build_packages, run_main, simulator_module

# The fake installers are shell scripts in makeself archives; build_packages.py checks for dpkg-deb too.
pytestmark = pytest.mark.needs_tools('bash', 'makeself', 'dpkg-deb')

fake_sysfs = simulator_module('fake_sysfs', 'fake_sysfs.py')

PACKAGES = [
    ('Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run', '--full', '--install-for-all'),
    ('Ascend-hdk-910b-npu-firmware_7.5.0.3.220.run', '--full'),
    ('Ascend-cann-toolkit_8.0.0_linux-aarch64.run', '--install', '--install-for-all'),
    ('Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run', '--install'),
    ('Ascend-cann-nnal_8.0.0_linux-aarch64.run', '--install'),
    ('Ascend-docker-runtime_6.0.0_linux-aarch64.run', '--install'),
]


def test_facts_of_a_root_the_fake_packages_were_installed_into(tmp_path, sim_root, fake_host):
    out = tmp_path / 'pkgs'
    assert build_packages(out, '--formats', 'run') == [name for name, *flags in PACKAGES]
    for name, *flags in PACKAGES:
        proc = sim_root.run(out / name, *(flags + ['--quiet']))
        assert proc.returncode == 0, '%s: %s' % (name, proc.stdout)
    sysfs = str(tmp_path / 'sys')
    fake_sysfs.write_sysfs(sysfs, '910b-8')

    facts = run_main(ascend_facts.main, {'root': str(sim_root.root), 'sysfs_path': sysfs})['ansible_facts']['ascend']

    assert fake_host.warnings() == []
    driver = facts['driver']
    assert (driver['version'], driver['package_version'], driver['inner_version'], driver['compatible_firmware']) == \
        ('24.1.rc1', '24.1.rc1', 'V100R001C15SPC006B220', [{'min': '7.0.0', 'max': '7.7.99'}])
    firmware = facts['firmware']
    assert (firmware['version'], firmware['package_version'], firmware['compatible_drivers']) == \
        ('7.5.0.3.220', '24.1.rc1', [{'min': '24.1.rc1', 'max': '24.1.rc1.'}, {'min': '24.1.0', 'max': '24.1.0.'}])
    record = facts['install_record']
    assert (record['user_name'], record['driver_install_path'], record['driver_install_for_all'], record['firmware_install_type']) == \
        ('HwHiAiUser', '/usr/local/Ascend', True, 'full')
    assert facts['cann_install_record']['install_path'] == '/usr/local/Ascend'
    toolkit = facts['toolkit']
    assert {key: toolkit[key] for key in ('version', 'version_source', 'inner_version', 'arch', 'path', 'found_via', 'layout',
                                          'install_info', 'set_env', 'installed_versions')} == {
        'version': '8.0.0', 'version_source': 'install_info', 'inner_version': 'V100R001C20SPC001B251', 'arch': 'aarch64',
        'path': '/usr/local/Ascend/ascend-toolkit/8.0.0', 'found_via': '/usr/local/Ascend/ascend-toolkit/latest',
        'layout': 'ascend-toolkit',
        'install_info': '/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux/ascend_toolkit_install.info',
        'set_env': '/usr/local/Ascend/ascend-toolkit/set_env.sh', 'installed_versions': ['8.0.0']}
    assert {kind: entries[0]['version'] for kind, entries in toolkit['version_cfg']['components']['opp_kernel'].items()} == \
        {'running': '8.0.0', 'upgrade': '8.0.0', 'installed': '8.0.0'}
    assert facts['kernels'] == {
        'version': '8.0.0', 'inner_version': 'V100R001C20SPC001B251', 'source': 'version_info', 'socs': ['ascend910b'],
        'path': '/usr/local/Ascend/ascend-toolkit/8.0.0/opp/built-in/op_impl/ai_core/tbe/kernel/ascend910b/version.info',
        'required_packages': None}
    nnal = facts['nnal']
    assert (nnal['version'], nnal['build_version'], nnal['platform'], nnal['path'], nnal['set_env']) == \
        ('8.0.0', '8.0.0.B020', 'aarch64', '/usr/local/Ascend/nnal/atb/8.0.0', '/usr/local/Ascend/nnal/atb/set_env.sh')
    runtime = facts['docker_runtime']
    assert (runtime['version'], runtime['install_scene'], runtime['injection_mode'], runtime['runtime']) == \
        ('6.0.0', 'docker', 'legacy', '/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime')
    assert facts['npu_count'] == 8
    assert facts['hwhiaiuser']['user_in_group'] is True
