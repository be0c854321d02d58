# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role cann's plan, the environment its set_env.sh scripts set, and the install path, as its Jinja made them before."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._cann_plan import (
    ENV_MARK,
    env_set,
    fetched,
    install_path,
    kernels_single,
    plan,
)

SOC_KEYS = {'910B': ['910b', 'a2', '910B', 'A2'], '910_93': ['a3', '910_93', 'A3'], '310P': ['310p', '310P'],
            '910': ['910']}
FILE_CHIP = {'910B': '910b', '910_93': 'A3', '310P': '310p', '910': '910'}
TOOLKIT = {'path': '/srv/ascend/Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run'}
KERNELS = {'src': 'files/Ascend-cann-kernels-910b_8.2.RC1_linux-aarch64.run'}
NNAL = {'url': 'https://repo.example/Ascend-cann-nnal_8.2.RC1_linux-aarch64.run', 'checksum': 'sha256:' + '0' * 64}


def inputs(**changes):
    base = {'version': '8.2.RC1', 'toolkit_package': TOOLKIT, 'kernels_package': KERNELS, 'nnal_package': NNAL,
            'uninstall_first': True, 'package_dir': '/var/cache/ascend', 'previous_package_dirs': ['/srv/old'],
            'soc_keys': SOC_KEYS, 'file_chip': FILE_CHIP}
    base.update(changes)
    return base


def ascend(toolkit=None, kernels=None, nnal=None, families=('910B',)):
    def component(version):
        return {'version': version, 'path': '/usr/local/Ascend'} if version else None
    return {'toolkit': component(toolkit), 'kernels': component(kernels), 'nnal': component(nnal),
            'npu_devices': [{'chip_family': family} for family in families]}


@pytest.mark.parametrize('kernels, expected', [
    (KERNELS, True), ({}, True), ('x.run', True), (None, True),
    ({'910b': KERNELS, 'a3': KERNELS}, False), ({910: KERNELS}, False),
])
def test_kernels_single(kernels, expected):
    assert kernels_single(kernels) is expected


def test_the_variables_alone_give_the_sources_to_check_and_the_components():
    result = plan(inputs(nnal_package=None, kernels_package={'910b': KERNELS, 910: KERNELS, 'b4': KERNELS}))
    assert result['kernels_single'] is False
    assert result['known_socs'] == ['910b', 'a2', '910B', 'A2', 'a3', '910_93', 'A3', '310p', '310P', '910']
    assert result['unknown_soc_keys'] == ['b4']
    assert result['source_pairs'] == [['cann_toolkit_package', TOOLKIT], ['cann_kernels_package.910b', KERNELS],
                                      ['cann_kernels_package.910', KERNELS], ['cann_kernels_package.b4', KERNELS]]
    assert result['components'] == ['toolkit', 'kernels']
    assert 'sources' not in result
    single = plan(inputs())
    assert single['source_pairs'] == [['cann_toolkit_package', TOOLKIT], ['cann_kernels_package', KERNELS],
                                      ['cann_nnal_package', NNAL]]
    assert single['unknown_soc_keys'] == [] and single['components'] == ['toolkit', 'kernels', 'nnal']


def test_a_fresh_host_installs_everything_and_uninstalls_nothing():
    result = plan(inputs(), ascend())
    assert result['families'] == ['910B']
    assert result['sources'] == [
        {'component': 'toolkit', 'variable': 'cann_toolkit_package', 'source': TOOLKIT},
        {'component': 'kernels', 'variable': 'cann_kernels_package', 'source': KERNELS},
        {'component': 'nnal', 'variable': 'cann_nnal_package', 'source': NNAL}]
    assert result['install_needed'] == ['toolkit', 'kernels', 'nnal']
    assert result['remove'] == [] and result['uninstall_order'] == []
    assert result['installed'] == {'toolkit': '', 'kernels': '', 'nnal': ''}
    assert result['chip'] == '910b'
    assert result['previous_dirs'] == ['/var/cache/ascend', '/srv/ascend', '/srv/old']


def test_an_upgrade_uninstalls_the_other_version_in_reverse_order():
    result = plan(inputs(), ascend('8.1.RC1', '8.1.RC1', '8.2.rc1'))
    assert result['install_needed'] == ['toolkit', 'kernels']
    assert result['remove'] == [{'component': 'toolkit', 'before': '8.1.RC1', 'after': '8.2.RC1'},
                                {'component': 'kernels', 'before': '8.1.RC1', 'after': '8.2.RC1'}]
    assert result['remove_versions'] == {'toolkit': '8.1.RC1', 'kernels': '8.1.RC1'}
    assert result['uninstall_order'] == ['kernels', 'toolkit']
    assert result['installed'] == {'toolkit': '8.1.RC1', 'kernels': '8.1.RC1', 'nnal': '8.2.rc1'}
    assert plan(inputs(uninstall_first=False), ascend('8.1.RC1', '8.1.RC1'))['remove'] == []
    converged = plan(inputs(), ascend('8.2.RC1', '8.2.RC1', '8.2.RC1'))
    assert converged['install_needed'] == [] and converged['remove'] == []


def test_per_soc_kernels_pick_the_source_of_the_npus_family():
    a3 = {'path': '/srv/ascend/Atlas-A3-cann-kernels_8.2.RC1_linux-aarch64.run'}
    per_soc = {'910b': KERNELS, 'A3': a3, 910: {'src': 'k910.run'}}
    assert plan(inputs(kernels_package=per_soc), ascend(families=('910_93',)))['kernels_source'] == a3
    assert plan(inputs(kernels_package=per_soc), ascend(families=('910',)))['kernels_source'] == {'src': 'k910.run'}
    assert plan(inputs(kernels_package=per_soc), ascend(families=('310P',)))['kernels_source'] is None
    none = plan(inputs(kernels_package=per_soc), ascend(families=()))
    assert none['kernels_source'] is None and none['chip'] is None and none['families'] == []
    # Every source's folder is searched for the installed version's files, once each.
    assert plan(inputs(kernels_package=per_soc), ascend())['previous_dirs'] == ['/var/cache/ascend', '/srv/ascend',
                                                                                '/srv/old']
    assert plan(inputs(), ascend(families=('910B', '910B', '310P')))['families'] == ['910B', '310P']


def test_env_set_keeps_what_the_scripts_set_without_the_shells_own():
    before = 'PATH=/usr/bin:/bin\nSHLVL=1\nPWD=/root\n_=/usr/bin/env'
    after = ('PATH=/usr/local/Ascend/ascend-toolkit/latest/bin:/usr/bin:/bin\nSHLVL=1\nPWD=/root\n'
             'ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest\nASCEND_OPP_PATH=/a=b\n_=/usr/bin/env\n'
             'OLDPWD=/tmp')
    result = env_set(before + '\n' + ENV_MARK + after)
    assert result['lines'] == ['ASCEND_OPP_PATH=/a=b', 'ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest',
                               'PATH=/usr/local/Ascend/ascend-toolkit/latest/bin:/usr/bin:/bin']
    assert result['env'] == {'ASCEND_OPP_PATH': '/a=b', 'ASCEND_TOOLKIT_HOME': '/usr/local/Ascend/ascend-toolkit/latest',
                             'PATH': '/usr/local/Ascend/ascend-toolkit/latest/bin:/usr/bin:/bin'}
    assert env_set('A=1\n' + ENV_MARK + 'A=1') == {'lines': [], 'env': {}}


def test_install_path_only_for_a_run_installer():
    assert install_path('/srv/Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run', '/opt/Ascend') == '/opt/Ascend'
    assert install_path('/srv/ascend-cann-toolkit_8.2.RC1_arm64.deb', '/opt/Ascend') is None


def test_fetched_names_the_packages_check_mode_cannot_inspect():
    results = [{'item': {'component': 'toolkit'}, 'stat': {'exists': True}},
               {'item': {'component': 'kernels'}, 'stat': {'exists': False}},
               {'item': {'component': 'nnal'}, 'stat': {'exists': False}}]
    assert fetched(results) == {'missing': ['kernels', 'nnal'], 'present': ['toolkit']}
    skipped = [{'item': {'component': 'toolkit'}, 'skipped': True}, {'item': {'component': 'kernels'}, 'skipped': True}]
    assert fetched(skipped) == {'missing': [], 'present': ['toolkit', 'kernels']}
