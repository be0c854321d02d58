# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The stack upgrade's decisions: the order of the steps, and the package files of the installed versions (Huawei's
file names, as the Ascend download pages and the install guide give them)."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._stack_upgrade import (
    missing_message,
    package_record,
    previous_packages,
    read_package_record,
    recorded_package_files,
    rollback_plan,
    upgrade_steps,
)

OLD = {'driver': '24.1.rc1', 'firmware': '7.5.0.3.220', 'toolkit': '8.1.RC1', 'kernels': '8.1.RC1', 'nnal': '8.1.RC1'}
NEW = {'driver': '24.1.0', 'firmware': '7.7.0.1.231', 'toolkit': '8.2.RC1', 'kernels': '8.2.RC1', 'nnal': '8.2.RC1'}
DIR = '/var/cache/ascend-packages/'
FILES = [DIR + name for name in (
    'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run',
    'Ascend-hdk-910b-npu-firmware_7.5.0.3.220.run',
    'Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run',
    'Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run',
    'Atlas-A3-cann-kernels_8.1.RC1_linux-aarch64.run',
    'Ascend-cann-nnal_8.1.RC1_linux-aarch64.run',
    'Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run',
    'Ascend-cann-toolkit_8.1.RC1_linux-x86_64.run',
)]


def components(result):
    return [step['component'] for step in result['steps']]


def test_upgrade_runs_firmware_before_driver_then_cann_in_order():
    result = upgrade_steps(OLD, NEW)
    assert components(result) == ['firmware', 'driver', 'toolkit', 'kernels', 'nnal']
    assert result['steps'][1] == {'component': 'driver', 'before': '24.1.rc1', 'after': '24.1.0'}
    assert (result['hdk'], result['cann'], result['drain']) == (True, True, True)


def test_first_install_runs_driver_before_firmware():
    result = upgrade_steps({}, {'driver': '24.1.0', 'firmware': '7.7.0.1.231', 'toolkit': '8.2.RC1'})
    assert components(result) == ['driver', 'firmware', 'toolkit']


def test_versions_equal_ignoring_case_need_nothing_and_no_drain():
    installed = dict(OLD, toolkit='8.1.rc1', driver='24.1.RC1')
    result = upgrade_steps(installed, OLD)
    assert result == {'steps': [], 'hdk': False, 'cann': False, 'drain': False, 'versions': installed}


def test_the_versions_after_the_steps_are_the_installed_ones_with_each_step_done():
    result = upgrade_steps(dict(OLD, nnal=None), {'driver': NEW['driver'], 'toolkit': NEW['toolkit']})
    assert result['versions'] == dict(OLD, nnal=None, driver=NEW['driver'], toolkit=NEW['toolkit'])


def test_a_record_names_its_files_current_first_and_a_dict_of_records_all_of_theirs():
    record = package_record(package_record(None, '8.1.RC1', {'toolkit': '/p/t81.run'}), '8.2.RC1',
                            {'toolkit': '/p/t82.run', 'nnal': ''})
    assert recorded_package_files(record) == ['/p/t82.run', '/p/t81.run']
    assert recorded_package_files({'a': record, 'b': 'not an entry'}) == ['/p/t82.run', '/p/t81.run']
    assert recorded_package_files({}) == []


def test_a_record_that_is_no_json_is_named_in_the_error():
    for content in (base64.b64encode(b'{"current": ').decode(), base64.b64encode(b'[]').decode(), 'not base64!'):
        with pytest.raises(ValueError, match='/etc/ascend/cann-packages.json is no package record'):
            read_package_record({'content': content}, '/etc/ascend/cann-packages.json')


def test_the_rollback_gives_the_roles_sources_of_its_files():
    result = rollback_plan(OLD, NEW, FOUND)
    assert result['cann']['sources'] == {'toolkit': {'path': FOUND['toolkit']}, 'kernels': {'path': FOUND['kernels']},
                                         'nnal': {'path': FOUND['nnal']}}
    assert result['hdk']['sources'] == {'driver': {'path': FOUND['driver']}, 'firmware': {'path': FOUND['firmware']}}
    assert rollback_plan(dict(OLD, nnal=None), NEW, FOUND)['cann']['sources']['nnal'] is None


def test_only_cann_changes_leaves_the_driver_alone():
    result = upgrade_steps(OLD, {'toolkit': '8.2.RC1', 'kernels': '8.2.RC1', 'nnal': '8.2.RC1', 'driver': None})
    assert components(result) == ['toolkit', 'kernels', 'nnal']
    assert (result['hdk'], result['cann']) == (False, True)


def test_unknown_component_is_refused():
    with pytest.raises(ValueError, match='unknown stack component.*docker'):
        upgrade_steps(OLD, {'docker': '1'})


def test_previous_packages_finds_each_installed_version_for_arch_and_chip():
    result = previous_packages(OLD, FILES, arch='arm64', chip='910b')
    assert result['complete'] is True
    assert result['found'] == {
        'driver': DIR + 'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run',
        'firmware': DIR + 'Ascend-hdk-910b-npu-firmware_7.5.0.3.220.run',
        'toolkit': DIR + 'Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run',
        'kernels': DIR + 'Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run',
        'nnal': DIR + 'Ascend-cann-nnal_8.1.RC1_linux-aarch64.run',
    }


def test_previous_packages_prefers_the_first_listed():
    recorded = '/srv/kept/Ascend-cann-toolkit_8.1.rc1_linux-aarch64.run'
    result = previous_packages({'toolkit': '8.1.RC1'}, [recorded] + FILES, arch='aarch64')
    assert result['found'] == {'toolkit': recorded}


def test_previous_packages_names_what_is_missing():
    result = previous_packages(dict(OLD, nnal='8.0.0', driver=None), FILES[1:], arch='x86_64', chip='A3')
    assert result['complete'] is False
    assert result['found'] == {'toolkit': DIR + 'Ascend-cann-toolkit_8.1.RC1_linux-x86_64.run'}
    assert [(item['component'], item['version']) for item in result['missing']] == [
        ('firmware', '7.5.0.3.220'), ('kernels', '8.1.RC1'), ('nnal', '8.0.0')]
    assert result['missing'][2]['name'] == 'Ascend-cann-nnal_8.0.0_linux-<arch>.run'
    assert missing_message(result['missing'], ['/var/cache/ascend-packages']) == (
        'no package of the installed firmware 7.5.0.3.220 (Ascend-hdk-<chip>-npu-firmware_7.5.0.3.220.run), kernels '
        '8.1.RC1 (Ascend-cann-kernels-<chip>_8.1.RC1_linux-<arch>.run (or Ascend-cann-<chip>-ops_, '
        'Atlas-A3-cann-kernels_)), nnal 8.0.0 (Ascend-cann-nnal_8.0.0_linux-<arch>.run) in /var/cache/ascend-packages')


def test_previous_packages_takes_the_a3_kernels_for_an_a3_host():
    result = previous_packages({'kernels': '8.1.RC1'}, FILES, arch='aarch64', chip='a3')
    assert result['found'] == {'kernels': DIR + 'Atlas-A3-cann-kernels_8.1.RC1_linux-aarch64.run'}


def test_nothing_installed_needs_nothing():
    assert previous_packages({'driver': None, 'toolkit': ''}, []) == {'found': {}, 'missing': [], 'complete': True}
    assert missing_message([], ['/x']) == ''


def test_package_record_keeps_the_previous_version_on_a_change():
    first = package_record(None, '8.1.RC1', {'toolkit': '/p/t81.run'})
    assert first == {'current': {'version': '8.1.RC1', 'packages': {'toolkit': '/p/t81.run'}}, 'previous': None}
    second = package_record(first, '8.2.RC1', {'toolkit': '/p/t82.run', 'nnal': '/p/n82.run'})
    assert second == {'current': {'version': '8.2.RC1', 'packages': {'toolkit': '/p/t82.run', 'nnal': '/p/n82.run'}},
                      'previous': first['current']}


def test_package_record_on_the_same_version_merges_and_keeps_previous():
    record = {'current': {'version': '8.2.RC1', 'packages': {'toolkit': '/p/t82.run'}},
              'previous': {'version': '8.1.RC1', 'packages': {}}}
    assert package_record(record, '8.2.rc1', {'nnal': '/p/n82.run'}) == {
        'current': {'version': '8.2.rc1', 'packages': {'toolkit': '/p/t82.run', 'nnal': '/p/n82.run'}},
        'previous': {'version': '8.1.RC1', 'packages': {}}}
    assert package_record(record, '8.2.RC1', {}) == record


KNOWN_GOOD = {'driver': '24.1.rc1', 'firmware': '7.5.0.3.220', 'cann_toolkit': '8.1.RC1', 'cann_kernels': '8.1.RC1',
              'nnal': '8.1.RC1'}
FOUND = previous_packages(OLD, FILES, arch='aarch64', chip='910b')['found']


def test_rollback_goes_back_cann_first_then_firmware_then_driver():
    result = rollback_plan(KNOWN_GOOD, NEW, FOUND)
    assert components(result) == ['toolkit', 'kernels', 'nnal', 'firmware', 'driver']
    assert result['steps'][4] == {'component': 'driver', 'before': '24.1.0', 'after': '24.1.rc1'}
    assert result['needs'] == OLD
    assert result['cann']['version'] == '8.1.RC1'
    assert result['cann']['packages'] == {'toolkit': FOUND['toolkit'], 'kernels': FOUND['kernels'], 'nnal': FOUND['nnal']}
    assert (result['hdk']['driver'], result['hdk']['firmware']) == ('24.1.rc1', '7.5.0.3.220')
    assert result['hdk']['packages'] == {'driver': FOUND['driver'], 'firmware': FOUND['firmware']}
    assert (result['missing'], result['complete']) == ([], True)


def test_rollback_of_the_firmware_alone_still_gives_the_driver_package():
    installed = dict(OLD, firmware='7.7.0.1.231')
    result = rollback_plan(OLD, installed, FOUND)
    assert components(result) == ['firmware']
    assert result['cann'] is None
    assert result['needs'] == {'driver': '24.1.rc1', 'firmware': '7.5.0.3.220'}
    assert result['hdk']['packages'] == {'driver': FOUND['driver'], 'firmware': FOUND['firmware']}


def test_rollback_of_cann_takes_the_whole_cann_and_no_nnal_the_target_lacks():
    target = dict(OLD, nnal=None)
    result = rollback_plan(target, dict(OLD, kernels='8.2.RC1', nnal='8.2.RC1'), FOUND)
    assert components(result) == ['kernels']
    assert result['needs'] == {'toolkit': '8.1.RC1', 'kernels': '8.1.RC1'}
    assert result['cann']['packages'] == {'toolkit': FOUND['toolkit'], 'kernels': FOUND['kernels'], 'nnal': None}
    assert result['hdk'] is None


def test_rollback_at_the_known_good_needs_nothing():
    result = rollback_plan(KNOWN_GOOD, dict(OLD, toolkit='8.1.rc1'), {})
    assert result == {'steps': [], 'needs': {}, 'cann': None, 'hdk': None, 'missing': [], 'unknown': [],
                      'complete': True}
    assert rollback_plan({'driver': None, 'toolkit': ''}, NEW) == result


def test_rollback_names_each_missing_file_for_the_message():
    found = dict(FOUND)
    del found['firmware'], found['kernels']
    result = rollback_plan(KNOWN_GOOD, NEW, found)
    assert result['complete'] is False
    assert result['hdk']['packages'] == {'driver': FOUND['driver'], 'firmware': None}
    assert missing_message(result['missing'], ['/srv/kept']) == (
        'no package of the installed kernels 8.1.RC1 (Ascend-cann-kernels-<chip>_8.1.RC1_linux-<arch>.run (or '
        'Ascend-cann-<chip>-ops_, Atlas-A3-cann-kernels_)), firmware 7.5.0.3.220 '
        '(Ascend-hdk-<chip>-npu-firmware_7.5.0.3.220.run) in /srv/kept')


def test_rollback_refuses_an_unknown_component():
    with pytest.raises(ValueError, match='unknown stack component.*docker.*in the installed stack'):
        rollback_plan(KNOWN_GOOD, {'docker': '1'})


# What a version nobody knows arrives as: null, empty, null written out by str() or templating, or "unknown".
NOT_KNOWN = [None, '', '  ', 'None', 'none', 'null', 'NULL', '~', 'unknown', 'N/A']


@pytest.mark.parametrize('nothing', NOT_KNOWN, ids=repr)
def test_an_unknown_firmware_is_said_unknown_and_the_driver_and_firmware_not_planned(nothing):
    """The driver goes back, the firmware is to stay as it is (null in the known good) and the node cannot say which
    it has: no "firmware None" package is asked for; the plan says it cannot put them back and what to set."""
    target = dict(KNOWN_GOOD, firmware=nothing)
    installed = dict(NEW, firmware=nothing)
    result = rollback_plan(target, installed, FOUND)
    assert result['hdk'] is None and 'firmware' not in result['needs'] and 'driver' not in result['needs']
    assert result['complete'] is False
    assert result['unknown'] == [{
        'component': 'firmware', 'variable': 'npu_driver_firmware_version',
        'message': "no known firmware version to go back to (neither the last known good's stack nor the installed "
                   "stack gives one), so the rollback cannot put the driver and firmware back: set "
                   "npu_driver_firmware_version and npu_driver_version to the known good's and run role npu_driver"}]
    assert [step['component'] for step in result['steps']][-1] == 'driver'
    assert result['cann']['version'] == '8.1.RC1'                  # what can go back still does
    message = missing_message(result['missing'], ['/p'], result['unknown'])
    assert 'None' not in message and 'null' not in message and message.startswith('no known firmware version')


@pytest.mark.parametrize('nothing', NOT_KNOWN, ids=repr)
@pytest.mark.parametrize('component', ['driver', 'firmware', 'toolkit', 'kernels', 'nnal'])
def test_no_unknown_version_is_ever_formatted_into_a_name_or_a_message(nothing, component):
    """Every component unknown on both sides in turn, each other one changing: no None, null or unknown text in
    any file name, step or message; each unknown need names the variable that sets it."""
    for changing in STACK_COMPONENTS:
        target = dict(OLD, **{component: nothing})
        installed = dict(NEW, **{component: nothing})
        if changing != component:
            installed[changing] = NEW[changing]
        result = rollback_plan(target, installed, {})
        text = repr([result['missing'], result['needs'], result['cann'], result['hdk']])
        message = missing_message(result['missing'], ['/p'], result['unknown'])
        for word in ('None', 'null', 'unknown', '~', 'N/A'):
            assert ("'%s'" % word) not in text and ('_%s' % word) not in text, (component, text)
        assert 'None' not in message and 'null' not in message, message
        for item in result['unknown']:
            assert item['variable'] in item['message'] and item['variable'] in message
        assert result['complete'] == (not result['missing'] and not result['unknown'])


STACK_COMPONENTS = ('driver', 'firmware', 'toolkit', 'kernels', 'nnal')


def test_cann_goes_back_at_the_installed_toolkit_when_only_nnal_changes_and_unknown_says_so():
    result = rollback_plan({'nnal': '8.1.RC1'}, dict(NEW, nnal='8.2.RC1'), FOUND)
    assert result['cann']['version'] == '8.2.RC1' and result['needs'] == {'toolkit': '8.2.RC1', 'kernels': '8.2.RC1',
                                                                          'nnal': '8.1.RC1'}
    result = rollback_plan({'nnal': '8.1.RC1'}, {'nnal': '8.2.RC1'}, FOUND)
    assert result['cann'] is None and result['needs'] == {}
    assert [item['variable'] for item in result['unknown']] == ['cann_version']
    assert result['unknown'][0]['message'].startswith('no known CANN version to go back to')


@pytest.mark.parametrize('value', [True, ['8.1.RC1'], {'v': 1}, float('nan'), float('inf'), '8.1\nRC1'], ids=repr)
def test_something_that_is_no_version_is_an_error_naming_it(value):
    with pytest.raises(ValueError, match='the firmware version in the stack to go back to must be a version'):
        rollback_plan(dict(KNOWN_GOOD, firmware=value), NEW)
    with pytest.raises(ValueError, match='the installed toolkit version must be a version'):
        previous_packages({'toolkit': value}, FILES)
    with pytest.raises(ValueError, match='the driver version to install must be a version'):
        upgrade_steps(OLD, {'driver': value})


def test_a_previous_package_of_an_unknown_version_is_not_needed_and_names_use_no_none():
    expected = {'found': {}, 'missing': [], 'complete': True}
    assert previous_packages({'firmware': 'None', 'driver': None}, FILES) == expected
    assert missing_message([{'component': 'firmware', 'version': None, 'name': 'x'}], []) == (
        'no package of the installed firmware of unknown version (x) in no folder')


def test_read_package_record_reads_back_what_package_record_wrote():
    import base64
    import json

    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._stack_upgrade import (
        package_record,
        read_package_record,
    )
    record = package_record(None, '8.2.RC1', {'toolkit': '/p/t.run'})
    slurped = {'content': base64.b64encode(json.dumps(record).encode()).decode(), 'encoding': 'base64'}
    assert read_package_record(slurped) == record
    assert read_package_record({'failed': True, 'msg': 'file not found: /etc/ascend/cann-packages.json'}) == {}
    assert read_package_record(None) == {}
    with pytest.raises(ValueError):
        read_package_record({'content': base64.b64encode(b'[1]').decode()})
