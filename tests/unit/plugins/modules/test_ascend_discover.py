# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ascend_discover's and ascend_discover_write's main() against the fake host: the exact read commands with their
time limit and locale, check mode the same, a path that is not npu-smi refused naming the option; the files written
on a first run, none on a second, none in check mode."""

from __future__ import annotations

import os
from unittest import mock

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _discovery
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import ascend_discover, ascend_discover_write
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    PARSABLE_LOCALE,
    TIMEOUT,
    FailJson,
    load_fixture,
    run_main,
    simulator_module,
)

NPU_SMI = '/usr/local/bin/npu-smi'
HCCN_TOOL = '/usr/local/Ascend/driver/tools/hccn_tool'
PODMAN = '/usr/bin/podman'
INFO = load_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt')
CHIP_MAP = load_fixture('npu-smi-info-m_910B4_8npu_with-mcu_atlas800IA2.txt')
DRIVER_CAT = load_fixture('driver-version.info_25.3.rc1_faq-indented.txt')


def prepared(host):
    host.on_path.update({'npu-smi': NPU_SMI, 'podman': PODMAN})
    host.executables.update([NPU_SMI, HCCN_TOOL])
    host.write('/usr/local/Ascend/driver/version.info', DRIVER_CAT)
    simulator_module('fake_sysfs', 'fake_sysfs.py').write_sysfs(host.sysfs, '910b-8')
    host.answers[(NPU_SMI, 'info')] = (0, INFO, '')
    host.answers[(NPU_SMI, 'info', '-m')] = (0, CHIP_MAP, '')
    for device in range(8):
        host.answers[(HCCN_TOOL, '-i', str(device), '-ip', '-g')] = (0, 'ipaddr:10.0.0.%d\nnetmask:255.255.255.0\n'
                                                                     % (11 + device), '')
    host.answers[(PODMAN, 'images', '--format', _discovery.IMAGES_FORMAT)] = (0, '', '')
    return host


def args(host, **extra):
    return dict(dict(root=host.root, sysfs_path=host.sysfs, engines=['podman']), **extra)


def test_the_read_commands_run_with_a_time_limit_and_a_parsable_locale(fake_host):
    host = prepared(fake_host)
    result = run_main(ascend_discover.main, args(host))
    prefix = [TIMEOUT, '--kill-after=5', '60']
    assert host.run_command.call_args_list[1:] == [
        mock.call(prefix + argv, data=None, environ_update=PARSABLE_LOCALE, check_rc=False) for argv in
        [[NPU_SMI, 'info'], [NPU_SMI, 'info', '-m']] + [[HCCN_TOOL, '-i', str(device), '-ip', '-g'] for device in range(8)]
        + [[PODMAN, 'images', '--format', '{{.Repository}}\t{{.Tag}}\t{{.ID}}']]]
    assert result['changed'] is False
    assert result['discovery']['facts']['nics'][0]['address'] == '10.0.0.11'
    assert '10.0.0.11' not in str(result['discovery']['sources'])
    assert host.warnings() == [
        "%s line 1: not a \"key=value\" line, ignored: '/usr/local/Ascend/driver/version.info'"
        % host.path('/usr/local/Ascend/driver/version.info')]


def test_check_mode_reads_the_same(fake_host):
    host = prepared(fake_host)
    real = run_main(ascend_discover.main, args(host))
    checked = run_main(ascend_discover.main, args(host, _ansible_check_mode=True))
    assert checked == real


def test_a_configured_npu_smi_that_is_no_executable_is_refused_naming_the_option(fake_host):
    host = prepared(fake_host)
    result = run_main(ascend_discover.main, args(host, npu_smi_path='/opt/npu-smi'), FailJson)
    assert result['msg'] == 'npu_smi_path: /opt/npu-smi is not an executable file'


def test_the_files_are_written_once_and_not_in_check_mode(fake_host, tmp_path):
    yaml = pytest.importorskip('yaml', reason='PyYAML is the controller\'s: the hosts\' Pythons need not have it')
    host = prepared(fake_host)
    discovery = run_main(ascend_discover.main, args(host))['discovery']
    dest = str(tmp_path / 'out')
    options = dict(discovery=discovery, host='node1', dest=dest)
    checked = run_main(ascend_discover_write.main, dict(options, _ansible_check_mode=True, _ansible_diff=True))
    assert (checked['changed'], [item['action'] for item in checked['files']]) == (True, ['create', 'create'])
    assert checked['diff']['after'].startswith('---\n# node1 as kunpeng_ascend.vllm.discover read it')
    assert not os.path.exists(dest)
    written = run_main(ascend_discover_write.main, options)
    assert written['changed'] and os.path.isfile(os.path.join(dest, 'node1-discovery.tar.gz'))
    with open(os.path.join(dest, 'host_vars', 'node1.yml'), encoding='utf-8') as handle:
        assert yaml.safe_load(handle)['npu_network_addresses'][7] == '10.0.0.18/24'
    again = run_main(ascend_discover_write.main, options)
    assert (again['changed'], again['messages']) == (False, [])


def test_a_relative_folder_without_a_base_is_refused_naming_the_variable(fake_host):
    host = prepared(fake_host)
    discovery = run_main(ascend_discover.main, args(host))['discovery']
    result = run_main(ascend_discover_write.main, dict(discovery=discovery, host='node1', dest='out'), FailJson)
    assert result['msg'].startswith('discover_output_dir: out is relative')
