# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The Ascend file parsers against real samples (tests/fixtures/, each naming its source), and the readers against
fake roots and sysfs trees built in tmp_path."""

from __future__ import annotations

import errno
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _ascend_files
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import (
    MAX_CPUS,
    RootFS,
    UnreadableFile,
    chip_family,
    expand_cpulist,
    parse_ascend_install_info,
    parse_bracket_list,
    parse_cann_install_info,
    parse_cpu_ranges,
    parse_docker_runtime_install_info,
    parse_driver_version_info,
    parse_firmware_version_info,
    parse_group_entry,
    parse_key_values,
    parse_kernels_version_info,
    parse_nnal_version_info,
    parse_numa_node,
    parse_opp_kernel_version_info,
    parse_passwd_entry,
    parse_sysfs_hex,
    parse_toolkit_install_info,
    parse_version_cfg,
    possible_cpu_count,
    read_docker_runtime,
    read_driver,
    read_firmware,
    read_install_record,
    read_installed,
    read_kernels,
    read_nnal,
    read_npu_account,
    read_toolkit,
    scan_npu_devices,
    version_cfg_version,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import version_in_range
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    UNREADABLE_KINDS,
    deny_directory,
    fails_after,
    load_fixture,
    make_tree,
    plant,
)


DRIVER_24 = 'driver-version.info_24.1.rc1_mindcluster-doc.txt'
DRIVER_25 = 'driver-version.info_25.3.rc1_faq-indented.txt'
FIRMWARE = 'firmware-version.info_7.1.0.11.220_mindcluster-doc.txt'
TOOLKIT_800 = 'ascend_toolkit_install.info_cann8.0.0_from_issue237.txt'
TOOLKIT_850 = 'ascend_toolkit_install.info_cann8.5.0_from_issue4930.txt'
INSTALL_INFO = 'etc-ascend_install.info_driver-firmware_full.txt'
NNAL = 'nnal-atb-version.info_8.0.T63_indented.txt'
VERSION_CFG = 'version.cfg_ascend-toolkit-latest_7.6.T13.0.B094-8.0.T63.txt'
OPP_KERNEL_82 = 'opp_kernel-version.info_8.2.RC1_mindie-2.1.RC1-image.txt'
OPP_KERNEL_83 = 'opp_kernel-version.info_8.3.RC1.alpha001_tab-indented.txt'

CFG_ENTRY = [{'inner_version': '7.6.T13.0.B094', 'version': '8.0.T63'}]
CFG_COMPONENTS = ('runtime', 'compiler', 'hccl', 'opp', 'toolkit', 'aoe', 'ncs', 'opp_kernel')


def parse(parser, text, source='F', **kwargs):
    warnings = []
    return parser(text, source, warnings.append, **kwargs), warnings


def npu_sysfs_files(bus_id, device='0xd802', numa_node='0', vendor='0x19e5', pci_class='0x120000'):
    base = '/bus/pci/devices/%s/' % bus_id
    return {base + 'vendor': vendor + '\n', base + 'device': device + '\n', base + 'class': pci_class + '\n',
            base + 'numa_node': numa_node + '\n'}


def test_fixture_loader_strips_the_source_header():
    assert load_fixture(DRIVER_24).startswith('        Version=24.1.rc1\n')


# --- key=value files ---------------------------------------------------------------------------------------------

def test_key_values_accepts_indentation_comments_bom_crlf_and_blank_lines():
    text = '\ufeff# written by hand\r\n\r\n   Version = 1.2.3 \r\n\tkey=a=b\r\n  # indented comment\r\nempty=\r\n'
    values, warnings = parse(parse_key_values, text)
    assert values.values == {'Version': '1.2.3', 'key': 'a=b', 'empty': ''}
    assert (values.get('version'), values.get('missing', 'KEY'), values.where('key')) == ('1.2.3', 'a=b', 'F line 4')
    assert warnings == []


def test_key_values_reports_other_lines_with_their_line_number_and_the_last_value_wins():
    values, warnings = parse(parse_key_values, 'a=1\njust text\n=orphan\na=2\n')
    assert values.values == {'a': '2'}
    assert values.where('a') == 'F line 4'
    assert warnings == ['F line 2: not a "key=value" line, ignored: \'just text\'',
                        'F line 3: not a "key=value" line, ignored: \'=orphan\'']


def test_key_values_with_a_colon_separator():
    values, warnings = parse(parse_key_values, '    commit id : 92b4:e4\nno colon here\n', separator=':')
    assert values.values == {'commit id': '92b4:e4'}
    assert values.get('Commit  ID') == '92b4:e4'
    assert warnings == ['F line 2: not a "key:value" line, ignored: \'no colon here\'']


@pytest.mark.parametrize('value, groups', [
    ('[V100R001C30],[V100R001C13]', [['V100R001C30'], ['V100R001C13']]),
    ('[7.0.0,7.2.99]', [['7.0.0', '7.2.99']]),
    (' [23.0.rc3,23.0.rc3.], [23.0.0, 23.0.0.] ', [['23.0.rc3', '23.0.rc3.'], ['23.0.0', '23.0.0.']]),
    ('[a:b][c:d]', [['a:b'], ['c:d']]),
    ('', []),
])
def test_bracket_lists(value, groups):
    assert parse_bracket_list(value) == groups


@pytest.mark.parametrize('value', ['7.0.0,7.2.99', '[7.0.0,7.2.99', '[a]x[b]', '[[a]]'])
def test_bracket_list_rejects_other_text(value):
    with pytest.raises(ValueError, match=r'not a list of \[\.\.\] groups'):
        parse_bracket_list(value)


# --- driver / firmware -------------------------------------------------------------------------------------------

def test_driver_24_1_rc1_indented_sample():
    driver, warnings = parse(parse_driver_version_info, load_fixture(DRIVER_24))
    assert driver == {
        'version': '24.1.rc1',
        'package_version': None,
        'inner_version': 'V100R001C15SPC006B220',
        'ascendhal_version': '7.35.19',
        'compatible_versions': ['V100R001C30', 'V100R001C13', 'V100R001C15', 'V100R001C17'],
        'compatible_firmware': [{'min': '7.0.0', 'max': '7.2.99'}],
        'values': {'Version': '24.1.rc1', 'ascendhal_version': '7.35.19', 'aicpu_version': '1.0', 'tdt_version': '1.0',
                   'log_version': '1.0', 'prof_version': '2.0', 'dvppkernels_version': '1.1', 'tsfw_version': '1.0',
                   'Innerversion': 'V100R001C15SPC006B220',
                   'compatible_version': '[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]',
                   'compatible_version_fw': '[7.0.0,7.2.99]'},
    }
    assert warnings == []


def test_driver_25_3_rc1_sample_with_package_version_and_a_stray_path_line():
    driver, warnings = parse(parse_driver_version_info, load_fixture(DRIVER_25), '/r/usr/local/Ascend/driver/version.info')
    assert {key: value for key, value in driver.items() if key != 'values'} == {
        'version': '25.3.rc1',
        'package_version': '25.3.rc1',
        'inner_version': 'V100R001C23SPC002B212',
        'ascendhal_version': '7.35.23',
        'compatible_versions': ['V100R001C19', 'V100R001C20', 'V100R001C21', 'V100R001C22', 'V100R001C23'],
        'compatible_firmware': [{'min': '7.0.0', 'max': '8.9.9'}],
    }
    assert warnings == ['/r/usr/local/Ascend/driver/version.info line 1: not a "key=value" line, ignored: '
                        "'/usr/local/Ascend/driver/version.info'"]


def test_driver_malformed_lists_are_null_with_a_warning_naming_file_and_line():
    text = 'Version=24.1.rc1\ncompatible_version=[V100R001C30],V100R001C13\ncompatible_version_fw=[7.0.0]\n'
    driver, warnings = parse(parse_driver_version_info, text)
    assert (driver['version'], driver['compatible_versions'], driver['compatible_firmware']) == ('24.1.rc1', None, None)
    assert warnings == [
        'F line 2: compatible_version=[V100R001C30],V100R001C13 is not a list of [version]: not a list of [..] groups; '
        'it is returned as null',
        'F line 3: compatible_version_fw=[7.0.0] is not a list of [min,max] ranges: each [..] must hold "min,max"; '
        'it is returned as null',
    ]


def test_driver_without_a_version_line():
    driver, warnings = parse(parse_driver_version_info, 'garbage\n')
    assert (driver['version'], driver['compatible_versions'], driver['values']) == (None, None, {})
    assert warnings == ['F line 1: not a "key=value" line, ignored: \'garbage\'',
                        'F: no Version= line, the version is returned as null']


@pytest.mark.parametrize('value, ranges', [
    ('[7.0.0,7.2.99]', [{'min': '7.0.0', 'max': '7.2.99'}]),
    ('[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]', [{'min': '23.0.rc3', 'max': '23.0.rc3.'}, {'min': '23.0.0', 'max': '23.0.0.'}]),
    ('', []),
    ('7.0.0,7.2.99', None),
    ('[7.0.0]', None),
    ('[7.0.0,7.2.99] junk', None),
])
def test_compatible_firmware_ranges(value, ranges):
    driver, warnings = parse(parse_driver_version_info, 'Version=24.1.rc1\ncompatible_version_fw=%s\n' % value)
    assert driver['compatible_firmware'] == ranges
    assert len(warnings) == (1 if ranges is None else 0)


def test_compatible_firmware_ranges_of_other_text_are_read_as_written_and_cannot_be_compared():
    """The range is data until it is compared: a bound that is not a version is what the comparison refuses."""
    driver, warnings = parse(parse_driver_version_info, 'Version=24.1.rc1\ncompatible_version_fw=[a,b]\n')
    assert (driver['compatible_firmware'], warnings) == ([{'min': 'a', 'max': 'b'}], [])
    with pytest.raises(ValueError, match="'a' is not a version"):
        version_in_range('7.1.0', 'a', 'b')


def test_firmware_sample():
    firmware, warnings = parse(parse_firmware_version_info, load_fixture(FIRMWARE))
    assert firmware == {
        'version': '7.1.0.11.220',
        'package_version': '23.0.7',
        'firmware_version': '1.0',
        'compatible_drivers': [{'min': '23.0.rc3', 'max': '23.0.rc3.'}, {'min': '23.0.0', 'max': '23.0.0.'}],
        'values': {'Version': '7.1.0.11.220', 'firmware_version': '1.0', 'package_version': '23.0.7',
                   'compatible_version_drv': '[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]'},
    }
    assert warnings == []


# --- CANN --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, version, inner, compatible', [
    (TOOLKIT_800, '8.0.0', 'V100R001C20SPC001B251', ['V100R001C15', 'V100R001C17', 'V100R001C18', 'V100R001C19', 'V100R001C20']),
    (TOOLKIT_850, '8.5.0', 'V100R001C25B048',
     ['V100R001C15', 'V100R001C18', 'V100R001C19', 'V100R001C20', 'V100R001C21', 'V100R001C23']),
])
def test_toolkit_install_info_samples(name, version, inner, compatible):
    info, warnings = parse(parse_toolkit_install_info, load_fixture(name))
    assert {key: value for key, value in info.items() if key != 'values'} == {
        'package_name': 'Ascend-cann-toolkit', 'version': version, 'inner_version': inner,
        'compatible_versions': compatible, 'arch': 'aarch64',
        'path': '/usr/local/Ascend/ascend-toolkit/%s/aarch64-linux' % version}
    assert warnings == []


def test_toolkit_compatible_versions_hold_one_version_per_bracket():
    info, warnings = parse(parse_toolkit_install_info, 'version=8.0.0\ncompatible_version=[V100R001C15,V100R001C17],[]\n')
    assert (info['version'], info['compatible_versions']) == ('8.0.0', None)
    assert warnings == ['F line 2: compatible_version=[V100R001C15,V100R001C17],[] is not a list of [version]: '
                        'each [..] must hold one version; it is returned as null']


def test_version_cfg_sample():
    cfg, warnings = parse(parse_version_cfg, load_fixture(VERSION_CFG))
    assert cfg == {'file_version': '1.0', 'components': {
        name: {'running': CFG_ENTRY, 'upgrade': CFG_ENTRY, 'installed': CFG_ENTRY} for name in CFG_COMPONENTS}}
    assert warnings == []


def test_version_cfg_malformed_entries_are_null():
    text = 'runtime_running_version=[7.6:8.0],[7.7:8.1]\ntoolkit_running_version=8.0.0\nhccl_installed_version=[8.0]\nother=1\n'
    cfg, warnings = parse(parse_version_cfg, text)
    assert cfg == {'file_version': None, 'components': {
        'runtime': {'running': [{'inner_version': '7.6', 'version': '8.0'}, {'inner_version': '7.7', 'version': '8.1'}]},
        'toolkit': {'running': None},
        'hccl': {'installed': None}}}
    assert warnings == [
        'F line 2: toolkit_running_version=8.0.0 cannot be read: not a list of [..] groups; it is returned as null',
        'F line 3: hccl_installed_version=[8.0] cannot be read: each [..] must hold "inner:version"; it is returned as null',
    ]


def test_version_cfg_version_prefers_running_then_installed_then_upgrade():
    cfg = parse_version_cfg('a_upgrade_version=[1:3.0]\na_installed_version=[1:2.0]\na_running_version=[1:1.0]\n'
                            'b_upgrade_version=[1:3.0]\nb_installed_version=[1:2.0],[1:2.1]\nc_upgrade_version=[9:3.0]\n', 'F')
    assert [version_cfg_version(cfg, name) for name in ('a', 'b', 'c', 'd')] == \
        [('1.0', '1'), ('2.1', '1'), ('3.0', '9'), (None, None)]
    assert version_cfg_version(None, 'a') == (None, None)


def test_kernels_version_info():
    kernels, warnings = parse(parse_kernels_version_info, 'Version=8.0.0\nversion_dir=8.0.0\ninnerversion=V1\nsoc=ascend910b\n')
    assert kernels == {'version': '8.0.0', 'inner_version': 'V1', 'soc': 'ascend910b'}
    assert warnings == []


REQUIRED_82 = dict((name, '>=7.6, <=8.2') for name in (
    'amct_acl', 'aoe', 'compiler', 'fwkplugin', 'hccl', 'nca', 'ncs', 'opp', 'runtime', 'toolkit'))


def test_opp_kernel_version_info_of_cann_8_2_rc1():
    kernels, warnings = parse(parse_opp_kernel_version_info, load_fixture(OPP_KERNEL_82))
    assert kernels.pop('values')['ops_version'] == '8.2.0.0.201'
    # The release the package is named by is version_dir; Version is the ops build.
    assert kernels == {'version': '8.2.RC1', 'inner_version': '8.2.0.0.201', 'timestamp': '20250724_194044950',
                       'required_packages': REQUIRED_82}
    assert warnings == []


def test_opp_kernel_version_info_of_cann_8_3_rc1_alpha001_indented():
    kernels, warnings = parse(parse_opp_kernel_version_info, load_fixture(OPP_KERNEL_83))
    assert (kernels['version'], kernels['inner_version'], kernels['required_packages']['toolkit']) == \
        ('8.3.RC1.alpha001', '8.3.T5.0.B028', '>=7.6, <=8.3')
    assert warnings == []


def test_opp_kernel_version_info_without_version_dir():
    kernels, warnings = parse(parse_opp_kernel_version_info, 'Version=8.2.0.0.201\n')
    assert (kernels['version'], kernels['inner_version'], kernels['required_packages']) == (None, '8.2.0.0.201', {})
    assert warnings == ['F: no version_dir= line, the version is returned as null']


def test_nnal_sample():
    nnal, warnings = parse(parse_nnal_version_info, load_fixture(NNAL))
    assert nnal == {
        'version': '8.0.T63',
        'build_version': '8.0.T63.B020',
        'platform': 'aarch64',
        'branch': 'br_feature_cann_8.0.0_POC_20250130',
        'commit_id': '92b4e43b9b62dca25a47b73bef75432005378e9d',
        'values': {'Ascend-cann-atb': '8.0.T63', 'Ascend-cann-atb Version': '8.0.T63.B020', 'Platform': 'aarch64',
                   'branch': 'br_feature_cann_8.0.0_POC_20250130', 'commit id': '92b4e43b9b62dca25a47b73bef75432005378e9d'},
    }
    assert warnings == []


def test_cann_install_info_of_cann_8_5():
    record, warnings = parse(parse_cann_install_info, 'Install_Path=/usr/local/Ascend\nToolkit_InstallPath=/usr/local/Ascend/cann-8.5.2\n')
    assert record == {'install_path': '/usr/local/Ascend', 'toolkit_install_path': '/usr/local/Ascend/cann-8.5.2',
                      'values': {'Install_Path': '/usr/local/Ascend', 'Toolkit_InstallPath': '/usr/local/Ascend/cann-8.5.2'}}
    assert warnings == []


# --- install records ---------------------------------------------------------------------------------------------

def test_etc_ascend_install_info_sample_with_its_prompt_line():
    record, warnings = parse(parse_ascend_install_info, load_fixture(INSTALL_INFO), '/etc/ascend_install.info')
    assert record == {
        'user_name': 'HwHiAiUser', 'user_group': 'HwHiAiUser',
        'driver_install_path': '/usr/local/Ascend', 'driver_install_type': 'full', 'driver_install_for_all': True,
        'firmware_install_path': '/usr/local/Ascend', 'firmware_install_type': 'full',
        'values': {'UserName': 'HwHiAiUser', 'UserGroup': 'HwHiAiUser', 'Firmware_Install_Type': 'full',
                   'Firmware_Install_Path_Param': '/usr/local/Ascend', 'Driver_Install_Type': 'full',
                   'Driver_Install_Path_Param': '/usr/local/Ascend', 'Driver_Install_For_All': 'yes'},
    }
    assert warnings == ['/etc/ascend_install.info line 1: not a "key=value" line, ignored: \'> cat /etc/ascend_install.info\'']


@pytest.mark.parametrize('value, expected', [('no', False), ('YES', True), ('maybe', None)])
def test_install_for_all_flag(value, expected):
    record, warnings = parse(parse_ascend_install_info, 'Driver_Install_For_All=%s\n' % value)
    assert record['driver_install_for_all'] is expected
    assert warnings == ([] if expected is not None else
                        ['F line 1: Driver_Install_For_All=maybe is neither yes nor no; it is returned as null'])


def test_docker_runtime_install_info_as_the_real_installer_writes_it():
    # Keys as written by save_install_args of Ascend Docker Runtime's run_main.sh (5.0.RC3 capture), plus the
    # injection-mode key of recent releases.
    text = ('version=v5.0.RC3\narch=aarch64\nos=linux\npath=/usr/local/Ascend/Ascend-Docker-Runtime\n'
            'build=Ascend-docker-runtime_5.0.RC3-aarch64\na500=n\ninjection-mode=cdi\n')
    info, warnings = parse(parse_docker_runtime_install_info, text)
    assert {key: value for key, value in info.items() if key != 'values'} == {
        'version': '5.0.RC3', 'install_path': '/usr/local/Ascend/Ascend-Docker-Runtime', 'install_scene': None,
        'injection_mode': 'cdi'}
    assert info['values']['build'] == 'Ascend-docker-runtime_5.0.RC3-aarch64'
    assert warnings == []


def test_docker_runtime_install_info_as_the_simulator_writes_it():
    text = 'version=v6.0.0\ninstall_path=/usr/local/Ascend/Ascend-Docker-Runtime\ninstall_scene=containerd\ninjection_mode=legacy\n'
    info, warnings = parse(parse_docker_runtime_install_info, text)
    assert {key: value for key, value in info.items() if key != 'values'} == {
        'version': '6.0.0', 'install_path': '/usr/local/Ascend/Ascend-Docker-Runtime', 'install_scene': 'containerd',
        'injection_mode': 'legacy'}
    assert warnings == []


# --- sysfs values, versions, accounts ----------------------------------------------------------------------------

@pytest.mark.parametrize('text, cpus', [
    ('0-23,48-71\n', list(range(24)) + list(range(48, 72))),
    ('5', [5]),
    ('0,2-3, 7', [0, 2, 3, 7]),
    ('0-95', list(range(96))),
    ('\n', []),
])
def test_expand_cpulist(text, cpus):
    assert expand_cpulist(text, 96) == cpus


@pytest.mark.parametrize('text, message', [('0-x', "'0-x' is not a CPU number or range"),
                                           ('0-23:2', "'0-23:2' is not a CPU number or range"),
                                           ('7-3', "'7-3' is a descending range"),
                                           ('1,,2', "'' is not a CPU number or range"),
                                           ('0-96', 'CPU 96 is beyond the 96 CPUs this machine can have (0-95)'),
                                           ('0-4000000000', 'CPU 4000000000 is beyond the 96 CPUs this machine can have (0-95)'),
                                           ('0-95,0-95', '192 CPUs are listed, more than the 96 this machine can have')])
def test_expand_cpulist_rejects(text, message):
    with pytest.raises(ValueError) as raised:
        expand_cpulist(text, 96)
    assert str(raised.value) == message


def test_an_absurd_cpulist_is_refused_before_it_is_expanded(monkeypatch):
    expanded = []
    monkeypatch.setattr(_ascend_files, 'range', lambda *args: expanded.append(args) or [], raising=False)
    with pytest.raises(ValueError, match='CPU 4000000000 is beyond'):
        expand_cpulist('0-3,4-4000000000', 192)
    assert expanded == []
    assert parse_cpu_ranges('0-3,4-4000000000') == [(0, 3), (4, 4000000000)]


def test_sysfs_values():
    assert (parse_sysfs_hex('0x19e5\n'), parse_sysfs_hex('0x120000')) == (0x19e5, 0x120000)
    assert (parse_numa_node('1\n'), parse_numa_node('-1\n')) == (1, None)
    with pytest.raises(ValueError, match="'19e5' is not a hexadecimal number"):
        parse_sysfs_hex('19e5')
    with pytest.raises(ValueError):
        parse_numa_node('node0')


@pytest.mark.parametrize('device, family', [(0xd100, '310'), (0xd500, '310P'), (0xd801, '910'), (0xd802, '910B'),
                                            (0xd803, '910_93'), (0xd806, 'unknown'), (None, 'unknown')])
def test_chip_family(device, family):
    assert chip_family(device) == family


def test_passwd_and_group_entries():
    passwd = 'root:x:0:0:root:/root:/bin/bash\nHwHiAiUser:x:1000:1001::/home/HwHiAiUser:/bin/bash\n'
    group = 'root:x:0:\nHwHiAiUser:x:1001:vllm,HwHiAiUser\nempty:x:5:\n'
    assert parse_passwd_entry(passwd, 'HwHiAiUser', 'P') == {'name': 'HwHiAiUser', 'uid': 1000, 'gid': 1001,
                                                             'home': '/home/HwHiAiUser', 'shell': '/bin/bash'}
    assert parse_group_entry(group, 'HwHiAiUser', 'G') == {'name': 'HwHiAiUser', 'gid': 1001, 'members': ['vllm', 'HwHiAiUser']}
    assert parse_group_entry(group, 'empty', 'G') == {'name': 'empty', 'gid': 5, 'members': []}
    assert parse_passwd_entry(passwd, 'nobody', 'P') is None


def test_malformed_account_entries_are_null_with_a_warning():
    warnings = []
    assert parse_passwd_entry('HwHiAiUser:x:abc:1000::/home:/bin/sh\n', 'HwHiAiUser', 'P', warnings.append) is None
    assert parse_group_entry('x:1\nHwHiAiUser:x:1000\n', 'HwHiAiUser', 'G', warnings.append) is None
    assert warnings == [
        "P line 1: the HwHiAiUser entry cannot be read (invalid literal for int() with base 10: 'abc'), it is returned as null",
        'G line 2: the HwHiAiUser entry cannot be read (3 fields instead of 4), it is returned as null',
    ]


# --- RootFS --------------------------------------------------------------------------------------------------------

def test_rootfs_resolves_links_inside_the_root(tmp_path):
    root = make_tree(tmp_path, {'/a/real/file': 'x\n'}, {
        '/a/rel': 'real',                      # relative
        '/a/abs': '/a/real',                   # absolute, taken inside the root
        '/a/prefixed': str(tmp_path / 'a' / 'real'),  # absolute, already carrying the root
        '/a/loop1': 'loop2', '/a/loop2': 'loop1',
        '/a/up': '../a/./rel',
    })
    fs = RootFS(root)
    assert [fs.resolve(path) for path in ('/a/rel/file', '/a/abs/file', '/a/prefixed/file', '/a/up/file', '/a/loop1')] == \
        ['/a/real/file', '/a/real/file', '/a/real/file', '/a/real/file', None]
    assert fs.host_path('/a/rel/file') == os.path.join(root, 'a/rel/file')
    assert (fs.is_file('/a/abs/file'), fs.is_dir('/a/abs'), fs.exists('/a/missing'), fs.listdir('/a/up')) == \
        (True, True, False, ['file'])
    assert RootFS('/').host_path('/etc/passwd') == '/etc/passwd'


def test_rootfs_link_removed_while_it_is_resolved(tmp_path, monkeypatch):
    root = make_tree(tmp_path, {'/real/version.info': 'Version=1\n'}, {'/gone': 'real'})

    def vanished(path):
        raise FileNotFoundError(errno.ENOENT, 'No such file or directory', path)
    monkeypatch.setattr(os, 'readlink', vanished)
    warnings = []
    assert RootFS(root).resolve('/gone/version.info') == '/gone/version.info'
    assert RootFS(root).read('/gone/version.info', warnings.append) == 'Version=1\n'  # the link is still there
    assert warnings == []


def test_rootfs_read(tmp_path):
    root = make_tree(tmp_path, {'/bom': '\ufeffVersion=1\n', '/dir/x': ''}, {'/loop': 'loop'})
    with open(os.path.join(root, 'latin1'), 'wb') as handle:
        handle.write(b'Version=caf\xe9\n')
    with open(os.path.join(root, 'big'), 'wb') as handle:
        handle.write(b'x' * (_ascend_files.MAX_FILE_BYTES + 1))
    with open(os.path.join(root, 'limit'), 'wb') as handle:
        handle.write(b'x' * _ascend_files.MAX_FILE_BYTES)
    fs = RootFS(root)
    warnings = []
    assert fs.read('/bom', warnings.append) == 'Version=1\n'
    assert fs.read('/missing', warnings.append) is None
    assert fs.read('/dir/x/y', warnings.append) is None
    assert len(fs.read('/limit', warnings.append)) == _ascend_files.MAX_FILE_BYTES
    assert warnings == []
    assert fs.read('/latin1', warnings.append) == 'Version=caf\ufffd\n'
    assert fs.read('/dir', warnings.append) is None
    assert fs.read('/big', warnings.append) is None
    assert fs.read('/loop', warnings.append) is None
    assert warnings == [
        '%s/latin1: not UTF-8 text (invalid continuation byte); unreadable characters are replaced' % root,
        '%s/dir: a directory, not a regular file; it is not read' % root,
        '%s/big: larger than 1048576 bytes, not a version file; it is not read' % root,
        '%s/loop: a symbolic link loop; it is not read' % root,
    ]


def test_rootfs_never_opens_a_fifo_or_a_device(tmp_path):
    os.mkfifo(str(tmp_path / 'fifo'))
    warnings = []
    with fails_after(5):
        assert RootFS(str(tmp_path)).read('/fifo', warnings.append) is None
        assert RootFS('/').read('/dev/null', warnings.append) is None
    assert warnings == ['%s/fifo: a FIFO (named pipe), not a regular file; it is not read' % tmp_path,
                        '/dev/null: a character device, not a regular file; it is not read']


def test_rootfs_refuses_a_file_that_became_a_fifo_after_it_was_looked_at(tmp_path, monkeypatch):
    """Between stat() and open() a version file may be replaced: the opened file is checked again, and opening
    never waits for a FIFO's writer."""
    fifo = str(tmp_path / 'version.info')
    os.mkfifo(fifo)
    regular = os.stat(__file__)
    real_stat = os.stat
    monkeypatch.setattr(os, 'stat', lambda path, *args, **kwargs: regular if path == fifo else real_stat(path, *args, **kwargs))
    warnings = []
    with fails_after(5):
        assert RootFS(str(tmp_path)).read('/version.info', warnings.append) is None
    assert warnings == ['%s: a FIFO (named pipe), not a regular file; it is not read' % fifo]


def test_rootfs_reads_sysfs_attributes():
    """sysfs attributes are regular files whose size says 4096 whatever they hold."""
    text = RootFS('/sys').read('/devices/system/cpu/possible')
    if text is None:
        pytest.skip('this machine has no /sys/devices/system/cpu/possible')
    assert parse_cpu_ranges(text)


def test_strict_rootfs_raises_what_cannot_be_read(tmp_path):
    root = make_tree(tmp_path, {'/file': 'x\n'}, {'/loop': 'loop'})
    os.mkdir(os.path.join(root, 'dir'))
    fs = RootFS(root, strict=True)
    assert (fs.read('/file'), fs.read('/missing'), fs.listdir('/missing'), fs.is_dir('/missing')) == ('x\n', None, [], False)
    for path, reason in (('/dir', 'a directory, not a regular file'), ('/loop', 'a symbolic link loop')):
        with pytest.raises(UnreadableFile) as raised:
            fs.read(path)
        assert (raised.value.path, raised.value.reason, str(raised.value)) == \
            (root + path, reason, '%s%s: %s' % (root, path, reason))
    with pytest.raises(UnreadableFile, match='a symbolic link loop'):
        fs.is_dir('/loop')
    with pytest.raises(UnreadableFile, match='a symbolic link loop'):
        fs.listdir('/loop')


def deny_file(monkeypatch, denied_path):
    """Make opening one host path fail with EACCES (the tests run as root, where chmod does not deny)."""
    real_open = os.open

    def fake_open(path, *args, **kwargs):
        if path == denied_path:
            raise PermissionError(errno.EACCES, 'Permission denied', path)
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(os, 'open', fake_open)


def test_rootfs_in_a_directory_that_cannot_be_searched(tmp_path, monkeypatch):
    root = make_tree(tmp_path, {'/secret/file': 'x\n', '/secret/sub/file': 'y\n'})
    deny_directory(monkeypatch, os.path.join(root, 'secret'))
    fs = RootFS(root)
    warnings = []
    assert (fs.exists('/secret/file'), fs.is_file('/secret/file'), fs.is_dir('/secret')) == (True, False, True)
    assert fs.read('/secret/file', warnings.append) is None
    assert fs.listdir('/secret', warnings.append) == []
    assert fs.is_dir('/secret/sub', warnings.append) is False
    assert warnings == [
        '%s/secret/file: cannot be looked at: Permission denied; it is not read' % root,
        '%s/secret: cannot be listed: Permission denied; it is not listed' % root,
        '%s/secret/sub: cannot be looked at: Permission denied; it is ignored' % root,
    ]


def test_unreadable_driver_file_is_null_with_a_warning(tmp_path, monkeypatch):
    root = make_tree(tmp_path, {'/usr/local/Ascend/driver/version.info': 'Version=24.1.rc1\n'})
    deny_file(monkeypatch, os.path.join(root, 'usr/local/Ascend/driver/version.info'))
    warnings = []
    assert read_driver(RootFS(root), None, warnings.append) is None
    assert warnings == ['%s/usr/local/Ascend/driver/version.info: cannot be opened: Permission denied; it is not read' % root]


DRIVER_VERSION_INFO = '/usr/local/Ascend/driver/version.info'


@pytest.mark.parametrize('kind', UNREADABLE_KINDS)
def test_a_driver_version_file_that_cannot_be_read_is_a_warning_not_an_absent_driver(tmp_path, monkeypatch, kind):
    root = make_tree(tmp_path, {'/opt/Ascend/driver/version.info': 'Version=1.0\n'})
    warning = plant(monkeypatch, root, DRIVER_VERSION_INFO, kind)
    warnings = []
    with fails_after(5):
        # Not a guess from another install path either: the recorded one is taken before /usr/local/Ascend.
        assert read_driver(RootFS(root), {'driver_install_path': '/usr/local/Ascend'}, warnings.append) is None
        assert read_driver(RootFS(root), {'driver_install_path': '/opt/Ascend'})['version'] == '1.0'
    assert warnings == [warning]


@pytest.mark.parametrize('kind', UNREADABLE_KINDS)
def test_read_installed_refuses_to_guess_from_a_version_file_that_cannot_be_read(tmp_path, monkeypatch, kind):
    root = str(tmp_path)
    warning = plant(monkeypatch, root, DRIVER_VERSION_INFO, kind)
    with fails_after(5):
        with pytest.raises(UnreadableFile) as raised:
            read_installed(RootFS(root), 'driver')
    assert str(raised.value) + '; it is not read' == warning
    assert raised.value.path == os.path.join(root, DRIVER_VERSION_INFO.lstrip('/'))


@pytest.mark.parametrize('path', ['/etc/ascend_install.info', '/etc/Ascend/ascend_cann_install.info', '/etc/passwd'])
def test_a_fifo_in_place_of_a_record_never_blocks(tmp_path, monkeypatch, path):
    root = make_tree(tmp_path, {'/usr/local/Ascend/driver/version.info': 'Version=24.1.rc1\n'})
    warning = plant(monkeypatch, root, path, 'fifo')
    warnings = []
    fs = RootFS(root)
    with fails_after(5):
        records = (read_install_record(fs, warnings.append), _ascend_files.read_cann_install_record(fs, warnings.append),
                   read_npu_account(fs, warnings.append))
    assert records == (None, None, {'user': None, 'group': None, 'user_in_group': False})
    assert warnings == [warning]
    if path != '/etc/passwd':
        with pytest.raises(UnreadableFile, match='FIFO'):
            read_installed(fs, 'driver' if path == '/etc/ascend_install.info' else 'toolkit')


def test_unreadable_toolkit_nnal_runtime_and_kernels_files_are_warnings(tmp_path, monkeypatch):
    toolkit = '/usr/local/Ascend/ascend-toolkit/8.2.RC1/'
    root = make_tree(tmp_path, {toolkit + 'aarch64-linux/ascend_toolkit_install.info': 'version=8.2.RC1\n'},
                     {'/usr/local/Ascend/ascend-toolkit/latest': '8.2.RC1'})
    expected = [plant(monkeypatch, root, toolkit + 'opp_kernel/version.info', 'fifo'),
                plant(monkeypatch, root, '/usr/local/Ascend/nnal/atb/latest/version.info', 'directory'),
                plant(monkeypatch, root, '/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info',
                      'link loop')]
    make_tree(root, {'/usr/local/Ascend/Ascend-Docker-Runtime/version.info': 'Version=6.0.0\n'})
    fs = RootFS(root)
    warnings = []
    with fails_after(5):
        assert read_toolkit(fs, None, warnings.append)['version'] == '8.2.RC1'
        assert read_kernels(fs, read_toolkit(fs), warnings.append) is None
        assert read_nnal(fs, None, warnings.append) is None
        assert read_docker_runtime(fs, warnings.append) is None
    assert warnings == expected
    for component in ('kernels', 'nnal', 'docker-runtime'):
        with pytest.raises(UnreadableFile):
            read_installed(fs, component)
    assert read_installed(fs, 'toolkit')['version'] == '8.2.RC1'


def test_a_toolkit_link_loop_is_a_warning(tmp_path):
    root = make_tree(tmp_path, {}, {'/usr/local/Ascend/ascend-toolkit/latest': 'latest'})
    warnings = []
    assert read_toolkit(RootFS(root), None, warnings.append) is None
    assert warnings == ['%s/usr/local/Ascend/ascend-toolkit/latest: a symbolic link loop; it is ignored' % root]
    with pytest.raises(UnreadableFile, match='latest: a symbolic link loop'):
        read_installed(RootFS(root), 'toolkit')


# --- driver, firmware, install record under a root ---------------------------------------------------------------

def test_driver_and_firmware_at_the_recorded_install_path(tmp_path):
    root = make_tree(tmp_path, {
        '/etc/ascend_install.info': 'Driver_Install_Path_Param=/srv/Ascend\nFirmware_Install_Path_Param=/srv/Ascend\n',
        '/srv/Ascend/driver/version.info': load_fixture(DRIVER_24),
        '/srv/Ascend/firmware/version.info': load_fixture(FIRMWARE),
        '/usr/local/Ascend/driver/version.info': 'Version=1.0\n',
    })
    fs = RootFS(root)
    warnings = []
    record = read_install_record(fs, warnings.append)
    assert (record['path'], record['driver_install_path']) == ('/etc/ascend_install.info', '/srv/Ascend')
    driver = read_driver(fs, record, warnings.append)
    firmware = read_firmware(fs, record, warnings.append)
    assert (driver['version'], driver['path'], driver['version_info']) == \
        ('24.1.rc1', '/srv/Ascend/driver', '/srv/Ascend/driver/version.info')
    assert (firmware['version'], firmware['path']) == ('7.1.0.11.220', '/srv/Ascend/firmware')
    assert warnings == []


def test_driver_falls_back_to_the_default_path_and_absent_parts_are_null(tmp_path):
    root = make_tree(tmp_path, {
        '/etc/ascend_install.info': 'Driver_Install_Path_Param=/gone\n',
        '/usr/local/Ascend/driver/version.info': 'Version=24.1.rc1\n',
    })
    fs = RootFS(root)
    record = read_install_record(fs)
    assert read_driver(fs, record)['path'] == '/usr/local/Ascend/driver'
    assert read_firmware(fs, record) is None
    assert read_install_record(RootFS(str(tmp_path / 'usr'))) is None


# --- toolkit layouts ---------------------------------------------------------------------------------------------

def old_layout_files(version='8.0.0', install_info=TOOLKIT_800):
    base = '/usr/local/Ascend/ascend-toolkit/'
    return {
        base + version + '/aarch64-linux/ascend_toolkit_install.info': load_fixture(install_info),
        base + version + '/version.cfg': load_fixture(VERSION_CFG),
        base + 'set_env.sh': 'export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest\n',
        '/etc/Ascend/ascend_cann_install.info': 'Install_Path=/usr/local/Ascend\n',
    }


def test_old_layout_through_the_latest_link(tmp_path):
    files = dict(old_layout_files())
    files.update({'/usr/local/Ascend/ascend-toolkit/7.0.0/x': '', '/usr/local/Ascend/ascend-toolkit/tools/x': ''})
    root = make_tree(tmp_path, files, {'/usr/local/Ascend/ascend-toolkit/latest': '8.0.0'})
    warnings = []
    toolkit = read_toolkit(RootFS(root), None, warnings.append)
    assert {key: value for key, value in toolkit.items() if key not in ('values', 'version_cfg')} == {
        'version': '8.0.0',
        'version_source': 'install_info',
        'inner_version': 'V100R001C20SPC001B251',
        'arch': 'aarch64',
        'compatible_versions': ['V100R001C15', 'V100R001C17', 'V100R001C18', 'V100R001C19', 'V100R001C20'],
        'path': '/usr/local/Ascend/ascend-toolkit/8.0.0',
        'found_via': '/usr/local/Ascend/ascend-toolkit/latest',
        'layout': 'ascend-toolkit',
        'install_info': '/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux/ascend_toolkit_install.info',
        'set_env': '/usr/local/Ascend/ascend-toolkit/set_env.sh',
        'installed_versions': ['8.0.0', '7.0.0'],
    }
    assert toolkit['version_cfg']['path'] == '/usr/local/Ascend/ascend-toolkit/8.0.0/version.cfg'
    assert toolkit['version_cfg']['components']['toolkit']['running'] == CFG_ENTRY
    assert toolkit['values']['innerversion'] == 'V100R001C20SPC001B251'
    assert warnings == []


def test_new_cann_8_5_layout_found_through_the_recorded_toolkit_path(tmp_path):
    base = '/usr/local/Ascend/cann-8.5.0/'
    root = make_tree(tmp_path, {
        base + 'aarch64-linux/ascend_toolkit_install.info': load_fixture(TOOLKIT_850),
        base + 'set_env.sh': 'export ASCEND_HOME_PATH=/usr/local/Ascend/cann-8.5.0\n',
        '/usr/local/Ascend/ascend-toolkit/set_env.sh': '. /usr/local/Ascend/cann/set_env.sh\n',
        '/etc/Ascend/ascend_cann_install.info': 'Install_Path=/usr/local/Ascend\nToolkit_InstallPath=/usr/local/Ascend/cann-8.5.0\n',
    }, {
        # An absolute link, as on a real host: read inside the root, not on this machine.
        '/usr/local/Ascend/ascend-toolkit/latest': '/usr/local/Ascend/cann-8.5.0',
        '/usr/local/Ascend/cann': 'cann-8.5.0',
    })
    fs = RootFS(root)
    record = _ascend_files.read_cann_install_record(fs)
    toolkit = read_toolkit(fs, record)
    assert {key: toolkit[key] for key in ('version', 'path', 'found_via', 'layout', 'install_info', 'set_env',
                                          'installed_versions', 'version_cfg')} == {
        'version': '8.5.0',
        'path': '/usr/local/Ascend/cann-8.5.0',
        'found_via': '/usr/local/Ascend/cann-8.5.0',
        'layout': 'cann',
        'install_info': '/usr/local/Ascend/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info',
        'set_env': '/usr/local/Ascend/ascend-toolkit/set_env.sh',
        'installed_versions': ['8.5.0'],
        'version_cfg': None,
    }
    # Without the record, the ascend-toolkit/latest link finds the same directory.
    toolkit = read_toolkit(fs, None)
    assert (toolkit['path'], toolkit['found_via'], toolkit['layout']) == \
        ('/usr/local/Ascend/cann-8.5.0', '/usr/local/Ascend/ascend-toolkit/latest', 'cann')


def test_new_layout_without_links_takes_the_newest_cann_directory(tmp_path):
    root = make_tree(tmp_path, {
        '/usr/local/Ascend/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info': 'version=8.5.0\n',
        '/usr/local/Ascend/cann-8.5.1/aarch64-linux/ascend_toolkit_install.info': 'version=8.5.1\n',
        '/usr/local/Ascend/cann-8.5.1/set_env.sh': '',
    })
    toolkit = read_toolkit(RootFS(root))
    assert (toolkit['version'], toolkit['found_via'], toolkit['set_env'], toolkit['installed_versions']) == \
        ('8.5.1', '/usr/local/Ascend/cann-8.5.1', '/usr/local/Ascend/cann-8.5.1/set_env.sh', ['8.5.1', '8.5.0'])


def test_toolkit_in_a_recorded_install_path_with_only_a_version_cfg(tmp_path):
    root = make_tree(tmp_path, {
        '/etc/Ascend/ascend_cann_install.info': 'Install_Path=/home/ai/Ascend\n',
        '/home/ai/Ascend/ascend-toolkit/8.0.T63/version.cfg': load_fixture(VERSION_CFG),
    }, {'/home/ai/Ascend/ascend-toolkit/latest': '8.0.T63'})
    fs = RootFS(root)
    toolkit = read_toolkit(fs, _ascend_files.read_cann_install_record(fs))
    assert {key: toolkit[key] for key in ('version', 'version_source', 'inner_version', 'arch', 'path', 'install_info',
                                          'set_env', 'values')} == {
        'version': '8.0.T63', 'version_source': 'version_cfg', 'inner_version': '7.6.T13.0.B094', 'arch': None,
        'path': '/home/ai/Ascend/ascend-toolkit/8.0.T63', 'install_info': None, 'set_env': None, 'values': {}}
    kernels = read_kernels(fs, toolkit)
    assert kernels == {'version': '8.0.T63', 'inner_version': '7.6.T13.0.B094', 'source': 'version_cfg',
                       'path': '/home/ai/Ascend/ascend-toolkit/8.0.T63/version.cfg', 'socs': None, 'required_packages': None}


def test_no_toolkit(tmp_path):
    root = make_tree(tmp_path, {'/usr/local/Ascend/ascend-toolkit/set_env.sh': '', '/usr/local/Ascend/cann-8.5.0/README': ''},
                     {'/usr/local/Ascend/ascend-toolkit/latest': 'gone'})
    assert read_toolkit(RootFS(root)) is None
    assert read_kernels(RootFS(root), None) is None


def test_kernels_from_their_version_info_files(tmp_path):
    kernel = '/usr/local/Ascend/ascend-toolkit/8.0.0/opp/built-in/op_impl/ai_core/tbe/kernel/'
    root = make_tree(tmp_path, dict(old_layout_files(), **{
        kernel + 'ascend910b/version.info': 'Version=8.0.0\nversion_dir=8.0.0\ninnerversion=V100R001C20SPC001B251\nsoc=ascend910b\n',
        kernel + 'ascend910_93/version.info': 'Version=8.0.0\n',
        kernel + 'config/readme': '',
    }), {'/usr/local/Ascend/ascend-toolkit/latest': '8.0.0'})
    fs = RootFS(root)
    assert read_kernels(fs, read_toolkit(fs)) == {
        'version': '8.0.0', 'inner_version': None, 'source': 'version_info',
        'path': kernel + 'ascend910_93/version.info', 'socs': ['ascend910_93', 'ascend910b'], 'required_packages': None}


def test_kernels_from_their_opp_kernel_record(tmp_path):
    toolkit = '/usr/local/Ascend/ascend-toolkit/8.2.RC1/'
    kernel = toolkit + _ascend_files.KERNELS_DIR + '/'
    root = make_tree(tmp_path, {
        toolkit + 'aarch64-linux/ascend_toolkit_install.info': 'version=8.2.RC1\n',
        toolkit + 'opp_kernel/version.info': load_fixture(OPP_KERNEL_82),
        # the record wins over a per-SoC version.info and the toolkit's version.cfg
        kernel + 'ascend910b/version.info': 'Version=8.0.0\n',
        toolkit + 'version.cfg': 'opp_kernel_installed_version=[7.6:8.0.0]\n',
        kernel + 'ascend910_93/bin/op.o': '',
        kernel + 'config/ascend910b/readme': '',
        kernel + 'ascend_readme.txt': '',
    }, {'/usr/local/Ascend/ascend-toolkit/latest': '8.2.RC1'})
    fs = RootFS(root)
    warnings = []
    assert read_kernels(fs, read_toolkit(fs), warnings.append) == {
        'version': '8.2.RC1', 'inner_version': '8.2.0.0.201', 'source': 'opp_kernel',
        'path': toolkit + 'opp_kernel/version.info', 'socs': ['ascend910_93', 'ascend910b'],
        'required_packages': REQUIRED_82}
    found = read_installed(fs, 'kernels', chip='310P', warn=warnings.append)
    assert (found['version'], found['version_file'], found['version_line']) == \
        ('8.2.RC1', toolkit + 'opp_kernel/version.info', 'version_dir=')
    assert warnings == []


def test_kernels_record_without_version_dir(tmp_path):
    root = make_tree(tmp_path, {
        '/usr/local/Ascend/ascend-toolkit/latest/version.cfg': 'toolkit_installed_version=[7.6:8.2.RC1]\n',
        '/usr/local/Ascend/ascend-toolkit/latest/opp_kernel/version.info': 'Version=8.2.0.0.201\n'})
    fs = RootFS(root)
    warnings = []
    found = read_installed(fs, 'kernels', warn=warnings.append)
    assert (found['version'], found['inner_version'], found['version_line']) == (None, '8.2.0.0.201', 'version_dir=')
    assert warnings == ['%s/usr/local/Ascend/ascend-toolkit/latest/opp_kernel/version.info: no version_dir= line, the '
                        'version is returned as null' % root]


def test_toolkit_without_kernels(tmp_path):
    files = old_layout_files()
    files['/usr/local/Ascend/ascend-toolkit/8.0.0/version.cfg'] = 'toolkit_running_version=[7.6:8.0.0]\n'
    root = make_tree(tmp_path, files, {'/usr/local/Ascend/ascend-toolkit/latest': '8.0.0'})
    fs = RootFS(root)
    assert read_kernels(fs, read_toolkit(fs)) is None


# --- NNAL, Docker runtime -----------------------------------------------------------------------------------------

def test_nnal_through_latest(tmp_path):
    root = make_tree(tmp_path, {'/usr/local/Ascend/nnal/atb/8.0.T63/version.info': load_fixture(NNAL),
                                '/usr/local/Ascend/nnal/atb/set_env.sh': ''},
                     {'/usr/local/Ascend/nnal/atb/latest': '8.0.T63'})
    nnal = read_nnal(RootFS(root))
    assert {key: value for key, value in nnal.items() if key != 'values'} == {
        'version': '8.0.T63', 'build_version': '8.0.T63.B020', 'platform': 'aarch64',
        'branch': 'br_feature_cann_8.0.0_POC_20250130', 'commit_id': '92b4e43b9b62dca25a47b73bef75432005378e9d',
        'path': '/usr/local/Ascend/nnal/atb/8.0.T63', 'found_via': '/usr/local/Ascend/nnal/atb/latest',
        'version_info': '/usr/local/Ascend/nnal/atb/8.0.T63/version.info',
        'set_env': '/usr/local/Ascend/nnal/atb/set_env.sh', 'installed_versions': ['8.0.T63']}


def test_nnal_without_latest_takes_the_newest_and_absent_is_null(tmp_path):
    root = make_tree(tmp_path, {'/usr/local/Ascend/nnal/atb/8.0.0/version.info': 'Ascend-cann-atb : 8.0.0\n',
                                '/usr/local/Ascend/nnal/atb/8.1.RC1/version.info': 'Ascend-cann-atb : 8.1.RC1\n'})
    nnal = read_nnal(RootFS(root))
    assert (nnal['version'], nnal['set_env'], nnal['installed_versions']) == ('8.1.RC1', None, ['8.1.RC1', '8.0.0'])
    assert read_nnal(RootFS(str(tmp_path / 'usr'))) is None


def test_docker_runtime(tmp_path):
    base = '/usr/local/Ascend/Ascend-Docker-Runtime/'
    root = make_tree(tmp_path, {base + 'ascend_docker_runtime_install.info': 'version=v6.0.0\ninstall_scene=docker\n',
                                base + 'version.info': 'Version=6.0.0\n', base + 'ascend-docker-runtime': '#!/bin/sh\n'})
    runtime = read_docker_runtime(RootFS(root))
    assert {key: value for key, value in runtime.items() if key != 'values'} == {
        'version': '6.0.0', 'install_path': None, 'install_scene': 'docker', 'injection_mode': None,
        'path': '/usr/local/Ascend/Ascend-Docker-Runtime', 'install_info': base + 'ascend_docker_runtime_install.info',
        'runtime': base + 'ascend-docker-runtime'}


def test_docker_runtime_from_version_info_only(tmp_path):
    root = make_tree(tmp_path, {'/usr/local/Ascend/Ascend-Docker-Runtime/version.info': 'Version=5.0.0\n'})
    runtime = read_docker_runtime(RootFS(root))
    assert (runtime['version'], runtime['install_info'], runtime['runtime'], runtime['values']) == \
        ('5.0.0', None, None, {'Version': '5.0.0'})
    assert read_docker_runtime(RootFS(str(tmp_path / 'usr'))) is None


# --- what ascend_package reads: the same readers, with its options ------------------------------------------------

def test_install_path_confines_every_reader_to_it(tmp_path):
    root = make_tree(tmp_path, {
        '/etc/ascend_install.info': 'Driver_Install_Path_Param=/srv/Ascend\n',
        '/etc/Ascend/ascend_cann_install.info': 'Install_Path=/srv/Ascend\nToolkit_InstallPath=/srv/Ascend/cann-8.5.0\n',
        '/srv/Ascend/driver/version.info': 'Version=25.0.rc1.1\n',
        '/srv/Ascend/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info': 'version=8.5.0\n',
        '/srv/Ascend/nnal/atb/8.5.0/version.info': 'Ascend-cann-atb : 8.5.0\n',
        '/opt/other/driver/version.info': 'Version=24.1.rc1\n',
        '/opt/other/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info': 'version=8.0.0\n',
        '/opt/other/Ascend-Docker-Runtime/version.info': 'Version=6.0.0\n',
    })
    fs = RootFS(root)
    versions = {name: read_installed(fs, name)['version'] if read_installed(fs, name) else None
                for name in ('driver', 'toolkit', 'nnal', 'docker-runtime')}
    assert versions == {'driver': '25.0.rc1.1', 'toolkit': '8.5.0', 'nnal': '8.5.0', 'docker-runtime': None}
    versions = {name: read_installed(fs, name, install_path='/opt/other')['version']
                for name in ('driver', 'toolkit', 'docker-runtime')}
    assert versions == {'driver': '24.1.rc1', 'toolkit': '8.0.0', 'docker-runtime': '6.0.0'}
    assert read_installed(fs, 'nnal', install_path='/opt/other') is None


def test_read_installed_names_the_version_file_and_line(tmp_path):
    kernel = '/usr/local/Ascend/ascend-toolkit/8.0.0/' + _ascend_files.KERNELS_DIR
    root = make_tree(tmp_path, {
        '/usr/local/Ascend/driver/version.info': 'Version=\n',
        '/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux/ascend_toolkit_install.info': 'version=8.0.0\n',
        '/usr/local/Ascend/ascend-toolkit/8.0.0/x86_64-linux/ascend_toolkit_install.info': 'version=8.0.1\n',
        kernel + '/ascend310p/version.info': 'Version=8.0.0\n',
        kernel + '/ascend910b/version.info': 'Version=8.0.RC3\n',
        '/usr/local/Ascend/nnal/atb/latest/version.info': 'Platform : aarch64\n',
        '/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info': 'version=v6.0.0\n',
        '/usr/local/Ascend/Ascend-Docker-Runtime/version.info': 'Version=6.0.1\n',
    }, {'/usr/local/Ascend/ascend-toolkit/latest': '8.0.0'})
    fs = RootFS(root)
    warnings = []

    def found(component, **kwargs):
        facts = read_installed(fs, component, warn=warnings.append, **kwargs)
        return facts['version'], facts['version_file'], facts['version_line']
    assert found('driver') == (None, '/usr/local/Ascend/driver/version.info', 'Version=')
    toolkit = '/usr/local/Ascend/ascend-toolkit/8.0.0/'
    assert found('toolkit', arch='aarch64') == ('8.0.0', toolkit + 'aarch64-linux/ascend_toolkit_install.info', 'version=')
    assert found('toolkit', arch='x86_64') == ('8.0.1', toolkit + 'x86_64-linux/ascend_toolkit_install.info', 'version=')
    assert found('kernels') == ('8.0.0', kernel + '/ascend310p/version.info', 'Version=')
    assert found('kernels', chip='910B') == ('8.0.RC3', kernel + '/ascend910b/version.info', 'Version=')
    assert found('nnal') == (None, '/usr/local/Ascend/nnal/atb/latest/version.info', 'Ascend-cann-atb:')
    # ascend_package reads the Docker runtime's version.info first; the facts keep the install record's version.
    assert found('docker-runtime') == ('6.0.1', '/usr/local/Ascend/Ascend-Docker-Runtime/version.info', 'Version=')
    assert read_docker_runtime(fs)['version'] == '6.0.0'
    assert warnings == ['%s/usr/local/Ascend/driver/version.info: no Version= line, the version is returned as null' % root,
                        '%s/usr/local/Ascend/nnal/atb/latest/version.info: no Ascend-cann-atb: line, the version is '
                        'returned as null' % root]
    with pytest.raises(ValueError, match="'npu-smi' is not an Ascend component"):
        read_installed(fs, 'npu-smi')


def test_kernels_of_an_unreadable_opp_kernel_line_have_a_null_version(tmp_path):
    root = make_tree(tmp_path, {
        '/usr/local/Ascend/ascend-toolkit/latest/version.cfg': 'opp_kernel_installed_version=[8.0.0]\n'})
    fs = RootFS(root)
    warnings = []
    assert read_kernels(fs, read_toolkit(fs, None, warnings.append), warnings.append) == {
        'version': None, 'inner_version': None, 'source': 'version_cfg',
        'path': '/usr/local/Ascend/ascend-toolkit/latest/version.cfg', 'socs': None, 'required_packages': None}
    assert warnings == ['%s/usr/local/Ascend/ascend-toolkit/latest/version.cfg line 1: opp_kernel_installed_version=[8.0.0] '
                        'cannot be read: each [..] must hold "inner:version"; it is returned as null' % root]
    assert read_installed(fs, 'toolkit') is None  # a version.cfg without toolkit lines is no toolkit


# --- sysfs ---------------------------------------------------------------------------------------------------------

def npu(bus_id, node, cpulist, cpus, device='0xd802', family='910B'):
    return {'bus_id': bus_id, 'vendor': '0x19e5', 'device': device, 'class': '0x120000', 'chip_family': family,
            'numa_node': node, 'numa_cpulist': cpulist, 'numa_cpus': cpus}


def test_two_numa_nodes_and_other_pci_devices(tmp_path):
    files = {}
    files.update(npu_sysfs_files('0000:81:00.0', numa_node='1'))
    files.update(npu_sysfs_files('0000:01:00.0', numa_node='0'))
    files.update(npu_sysfs_files('0000:02:00.0', numa_node='0', device='0xd803'))
    files.update(npu_sysfs_files('0000:03:00.0', numa_node='0', device='0xd806'))
    files.update(npu_sysfs_files('0000:7d:00.0', device='0x1822', pci_class='0x020000'))    # Huawei NIC
    files.update(npu_sysfs_files('0000:05:00.0', vendor='0x10de', pci_class='0x120000'))   # other vendor
    files['/devices/system/node/node0/cpulist'] = '0-23,48-71\n'
    files['/devices/system/node/node1/cpulist'] = '24-47,72-95\n'
    warnings = []
    devices = scan_npu_devices(RootFS(make_tree(tmp_path, files)), warnings.append)
    node0 = list(range(24)) + list(range(48, 72))
    node1 = list(range(24, 48)) + list(range(72, 96))
    assert devices == [
        npu('0000:01:00.0', 0, '0-23,48-71', node0),
        npu('0000:02:00.0', 0, '0-23,48-71', node0, '0xd803', '910_93'),
        npu('0000:03:00.0', 0, '0-23,48-71', node0, '0xd806', 'unknown'),
        npu('0000:81:00.0', 1, '24-47,72-95', node1),
    ]
    assert warnings == []


def test_real_sysfs_links_are_followed(tmp_path):
    real = '/devices/pci0000:00/0000:00:01.0/0000:c1:00.0/'
    files = {real + name: text for name, text in
             (('vendor', '0x19e5\n'), ('device', '0xd802\n'), ('class', '0x120000\n'), ('numa_node', '-1\n'))}
    root = make_tree(tmp_path, files, {'/bus/pci/devices/0000:c1:00.0': '../../../devices/pci0000:00/0000:00:01.0/0000:c1:00.0'})
    assert scan_npu_devices(RootFS(root)) == [npu('0000:c1:00.0', None, None, None)]


def test_no_npus_and_no_sysfs(tmp_path):
    root = make_tree(tmp_path, npu_sysfs_files('0000:7d:00.0', device='0x1822', pci_class='0x020000'))
    assert scan_npu_devices(RootFS(root)) == []
    assert scan_npu_devices(RootFS(str(tmp_path / 'nowhere'))) == []


def test_malformed_sysfs_values_are_null_with_warnings(tmp_path):
    files = {}
    files.update(npu_sysfs_files('0000:01:00.0', numa_node='zero'))
    files.update(npu_sysfs_files('0000:02:00.0', numa_node='1'))
    files.update(npu_sysfs_files('0000:03:00.0', numa_node='2', device='d802'))
    files['/devices/system/node/node1/cpulist'] = '0-3:2\n'
    root = make_tree(tmp_path, files)
    warnings = []
    devices = scan_npu_devices(RootFS(root), warnings.append)
    assert devices == [npu('0000:01:00.0', None, None, None), npu('0000:02:00.0', 1, '0-3:2', None),
                       npu('0000:03:00.0', 2, None, None, None, 'unknown')]
    assert warnings == [
        "%s/bus/pci/devices/0000:01:00.0/numa_node line 1: invalid literal for int() with base 10: 'zero'; "
        "it is returned as null" % root,
        "%s/devices/system/node/node1/cpulist line 1: '0-3:2' is not a CPU number or range; the CPUs of NUMA node 1 "
        "are returned as null" % root,
        "%s/bus/pci/devices/0000:03:00.0/device line 1: 'd802' is not a hexadecimal number; it is returned as null" % root,
        '%s/devices/system/node/node2/cpulist: missing, the CPUs of NUMA node 2 are returned as null' % root,
    ]


def test_possible_cpu_count(tmp_path):
    def count(text):
        warnings = []
        root = make_tree(tmp_path / str(len(os.listdir(str(tmp_path)))), {} if text is None else {
            '/devices/system/cpu/possible': text})
        return possible_cpu_count(RootFS(root), warnings.append), [warning.split(': ', 1)[1] for warning in warnings]
    assert count('0-191\n') == (192, [])
    assert count('0,2-3\n') == (4, [])
    assert count(None) == (MAX_CPUS, [])
    assert count('0-4000000000\n') == (MAX_CPUS, [
        'CPU 4000000000 is beyond the 8192 CPUs Linux supports; NUMA CPU lists are checked against 8192 CPUs instead'])
    assert count('\n') == (MAX_CPUS, ['no CPU is listed; NUMA CPU lists are checked against 8192 CPUs instead'])
    assert count('all\n') == (MAX_CPUS, [
        "'all' is not a CPU number or range; NUMA CPU lists are checked against 8192 CPUs instead"])


def test_an_absurd_numa_cpulist_is_null_with_a_warning(tmp_path):
    files = npu_sysfs_files('0000:01:00.0', numa_node='0')
    files.update(npu_sysfs_files('0000:02:00.0', numa_node='1'))
    files['/devices/system/cpu/possible'] = '0-95\n'
    files['/devices/system/node/node0/cpulist'] = '0-4000000000\n'
    files['/devices/system/node/node1/cpulist'] = '48-96\n'
    root = make_tree(tmp_path, files)
    warnings = []
    assert scan_npu_devices(RootFS(root), warnings.append) == [
        npu('0000:01:00.0', 0, '0-4000000000', None), npu('0000:02:00.0', 1, '48-96', None)]
    assert warnings == [
        '%s/devices/system/node/node0/cpulist line 1: CPU 4000000000 is beyond the 96 CPUs this machine can have (0-95); '
        'the CPUs of NUMA node 0 are returned as null' % root,
        '%s/devices/system/node/node1/cpulist line 1: CPU 96 is beyond the 96 CPUs this machine can have (0-95); '
        'the CPUs of NUMA node 1 are returned as null' % root,
    ]
    assert [device['numa_cpus'] for device in scan_npu_devices(RootFS(root), cpu_count=97)] == [None, list(range(48, 97))]


def test_a_tree_without_possible_cpus_is_bounded_by_what_linux_supports(tmp_path):
    files = npu_sysfs_files('0000:01:00.0', numa_node='0')
    files['/devices/system/node/node0/cpulist'] = '0-8192\n'
    warnings = []
    assert scan_npu_devices(RootFS(make_tree(tmp_path, files)), warnings.append)[0]['numa_cpus'] is None
    assert warnings[0].endswith('cpulist line 1: CPU 8192 is beyond the 8192 CPUs this machine can have (0-8191); the CPUs '
                                'of NUMA node 0 are returned as null')


def test_sysfs_files_that_cannot_be_read_never_block(tmp_path, monkeypatch):
    files = npu_sysfs_files('0000:01:00.0', numa_node='0')
    del files['/bus/pci/devices/0000:01:00.0/numa_node']
    root = make_tree(tmp_path, files)
    expected = [plant(monkeypatch, root, '/bus/pci/devices/0000:01:00.0/numa_node', 'fifo')]
    warnings = []
    with fails_after(5):
        assert scan_npu_devices(RootFS(root), warnings.append) == [npu('0000:01:00.0', None, None, None)]
    assert warnings == expected


# --- HwHiAiUser -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('passwd, group, in_group', [
    ('HwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n', 'HwHiAiUser:x:1000:\n', True),
    ('HwHiAiUser:x:1000:100::/home/HwHiAiUser:/bin/bash\n', 'HwHiAiUser:x:1000:vllm,HwHiAiUser\n', True),
    ('HwHiAiUser:x:1000:100::/home/HwHiAiUser:/bin/bash\n', 'HwHiAiUser:x:1000:vllm\n', False),
    ('root:x:0:0:root:/root:/bin/bash\n', 'HwHiAiUser:x:1000:\n', False),
])
def test_npu_account_from_the_root_files(tmp_path, passwd, group, in_group):
    root = make_tree(tmp_path, {'/etc/passwd': passwd, '/etc/group': group})
    account = read_npu_account(RootFS(root))
    assert account['user_in_group'] is in_group
    assert account['group']['gid'] == 1000


def test_npu_account_absent_files_and_system_db(tmp_path):
    assert read_npu_account(RootFS(str(tmp_path))) == {'user': None, 'group': None, 'user_in_group': False}
    user = {'name': 'HwHiAiUser', 'uid': 7, 'gid': 8, 'home': '/h', 'shell': '/s'}
    group = {'name': 'HwHiAiUser', 'gid': 8, 'members': []}
    assert read_npu_account(RootFS(str(tmp_path)), user_db=(lambda name: user, lambda name: group)) == \
        {'user': user, 'group': group, 'user_in_group': True}


def test_read_regular_file_reads_a_file_and_refuses_the_rest(tmp_path):
    import os
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import UnreadableFile, read_regular_file
    regular = tmp_path / 'key'
    regular.write_bytes(b'0123456789')
    assert read_regular_file(str(regular), 10) == b'0123456789'
    assert read_regular_file(str(tmp_path / 'absent'), 10) is None
    with pytest.raises(UnreadableFile, match='larger than 9 bytes, not a key file'):
        read_regular_file(str(regular), 9, 'a key file')
    fifo = tmp_path / 'fifo'
    os.mkfifo(str(fifo))
    # Opened without waiting for a writer, then refused: the test ends instead of blocking.
    with pytest.raises(UnreadableFile, match='a FIFO'):
        read_regular_file(str(fifo), 10)
    with pytest.raises(UnreadableFile, match='a directory'):
        read_regular_file(str(tmp_path), 10)
