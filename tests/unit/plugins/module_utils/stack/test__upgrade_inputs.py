# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What playbooks/upgrade.yml decides before a drain: versions, package sources, what is missing, the rollback's
package files."""

from __future__ import annotations

import base64
import json

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._stack_upgrade import package_record
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._upgrade_inputs import (
    installed_versions,
    missing_packages,
    package_dirs,
    package_sources,
    rollback_packages,
    wanted_versions,
)

DIR = '/var/cache/ascend-packages'
KERNELS_910B = '/srv/k/Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run'
KERNELS_A3 = '/srv/k/Atlas-A3-cann-kernels_8.1.RC1_linux-aarch64.run'
TOOLKIT = '/srv/t/Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run'
DRIVER = '/srv/d/Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run'


def test_installed_versions_read_each_component_and_null_where_none():
    ascend = {'driver': {'version': '24.1.0'}, 'firmware': None, 'toolkit': {'version': '8.1.RC1'}}
    assert installed_versions(ascend) == {'driver': '24.1.0', 'firmware': None, 'toolkit': '8.1.RC1',
                                          'kernels': None, 'nnal': None}
    assert installed_versions(None) == dict.fromkeys(('driver', 'firmware', 'toolkit', 'kernels', 'nnal'))


def test_nnal_is_wanted_only_with_its_package():
    assert wanted_versions('24.1.0', '7.7', '8.2.RC1')['nnal'] is None
    with_nnal = wanted_versions('24.1.0', '7.7', '8.2.RC1', {'path': '/p/nnal.run'})
    assert with_nnal == {'driver': '24.1.0', 'firmware': '7.7', 'toolkit': '8.2.RC1', 'kernels': '8.2.RC1',
                         'nnal': '8.2.RC1'}


STEPS = [{'component': 'driver'}, {'component': 'kernels'}, {'component': 'toolkit'}]
GIVEN = {'driver': {'path': DRIVER}, 'toolkit': {'url': 'https://mirror.example/t.run'},
         'kernels': {'910b': {'src': 'files/k910b.run'}, 'A3': {'path': KERNELS_A3}},
         'firmware': {'path': '/srv/f/fw.run'}, 'nnal': None}


def test_sources_name_their_variable_and_split_by_where_they_are_looked_for():
    sources = package_sources(STEPS, GIVEN)
    assert [item['variable'] for item in sources['all']] == [
        'npu_driver_driver_package', 'cann_kernels_package.910b', 'cann_kernels_package.A3', 'cann_toolkit_package']
    assert [item['variable'] for item in sources['on_node']] == ['npu_driver_driver_package', 'cann_kernels_package.A3']
    assert [item['variable'] for item in sources['on_controller']] == ['cann_kernels_package.910b']
    assert [item['variable'] for item in sources['at_url']] == ['cann_toolkit_package']


def test_a_component_changing_without_a_package_variable_has_an_empty_source():
    sources = package_sources([{'component': 'nnal'}], GIVEN)
    assert sources['all'] == [{'component': 'nnal', 'variable': 'cann_nnal_package', 'source': {}}]
    assert sources['on_node'] == sources['on_controller'] == sources['at_url'] == []


def test_package_dirs_are_the_roles_then_the_given_paths_then_the_extra_each_once():
    assert package_dirs([DIR, DIR], GIVEN, ['/srv/k', '/extra']) == [DIR, '/srv/d', '/srv/f', '/srv/k', '/extra']
    assert package_dirs([DIR], {'driver': {'path': None}, 'toolkit': 'not a source'}) == [DIR]


def _stat(item, isreg):
    return {'item': item, 'stat': {'exists': isreg, 'isreg': isreg} if isreg is not None else {'exists': False}}


def test_missing_names_each_component_with_none_of_its_sources_there():
    sources = package_sources(STEPS, GIVEN)
    on_node = [_stat(sources['on_node'][0], True), _stat(sources['on_node'][1], None)]
    on_controller = [_stat(sources['on_controller'][0], False)]
    at_url = [{'item': sources['at_url'][0], 'status': 404}]
    assert missing_packages(sources['all'], on_node, on_controller, at_url) == [
        'kernels (cann_kernels_package.910b, cann_kernels_package.A3: not on the node, the controller or its server)',
        'toolkit (cann_toolkit_package: not on the node, the controller or its server)']
    at_url = [{'item': sources['at_url'][0], 'status': 200}]
    on_controller = [_stat(sources['on_controller'][0], True)]
    assert missing_packages(sources['all'], on_node, on_controller, at_url) == []


def test_a_component_without_any_source_is_missing():
    sources = package_sources([{'component': 'nnal'}], GIVEN)
    assert missing_packages(sources['all'], [], [], []) == [
        'nnal (cann_nnal_package: not on the node, the controller or its server)']


def test_the_rollback_takes_the_recorded_files_first_and_the_kernels_of_the_npus_chip():
    record = base64.b64encode(json.dumps(package_record(None, '8.1.RC1', {'toolkit': TOOLKIT})).encode()).decode()
    records = [{'item': '/etc/ascend/cann-packages.json', 'content': record},
               {'item': '/etc/ascend/npu-driver-packages.json', 'failed': True}]
    found_files = [{'path': KERNELS_A3}, {'path': KERNELS_910B}, {'path': '/var/cache/Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run'}]
    needs = {'toolkit': '8.1.RC1', 'kernels': '8.1.RC1'}
    result = rollback_packages(needs, records, found_files, [DIR], [{'chip_family': '910B'}])
    assert result == {'found': {'toolkit': TOOLKIT, 'kernels': KERNELS_910B}, 'complete': True, 'message': ''}
    assert rollback_packages(needs, records, found_files, [DIR], [{'chip_family': '910_93'}])['found']['kernels'] == KERNELS_A3


def test_the_rollback_names_what_is_missing_and_every_place_it_looked():
    records = [{'item': '/etc/ascend/cann-packages.json', 'failed': True}]
    result = rollback_packages({'driver': '24.1.rc1', 'firmware': '7.5.0.3.220', 'toolkit': '8.1.RC1'}, records,
                               [{'path': DRIVER}], [DIR])
    assert result['found'] == {'driver': DRIVER}
    assert result['complete'] is False
    cann, hdk = result['message'].split('; ')
    assert cann.startswith('no package of the installed toolkit 8.1.RC1') and cann.endswith(
        'in %s, /etc/ascend/cann-packages.json' % DIR)
    assert 'firmware 7.5.0.3.220' in hdk and 'driver' not in hdk.split(' in ')[0].replace('npu-firmware', '')
