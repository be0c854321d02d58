# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ascend_preflight's main() against the fake host: a root directory and a sysfs tree in tmp_path, and run_command,
get_bin_path, uname values, statvfs and the executables mocked."""

from __future__ import annotations

import json
import os
from unittest import mock

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _ascend_files
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _command
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._preflight import CHECK_NAMES
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import ascend_preflight
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    GIB,
    PARSABLE_LOCALE,
    RELEASE,
    TIMEOUT,
    ExitJson,
    FailJson,
    load_fixture,
    run_main,
)

NPU_SMI = '/usr/local/bin/npu-smi'
DPKG = '/usr/bin/dpkg'
DPKG_QUERY = '/usr/bin/dpkg-query'
RPM = '/usr/bin/rpm'
TOOLS = {'dkms': '/usr/sbin/dkms', 'gcc': '/usr/bin/gcc', 'make': '/usr/bin/make', 'lspci': '/usr/bin/lspci',
         'ifconfig': '/usr/sbin/ifconfig'}
DPKG_QUERY_ARGS = ('-W', '-f=${db:Status-Abbrev} ${Package}\\n')
RPM_VERIFY_ARGS = ('-Va', '--nofiles', '--nodigest', '--noscripts')
HEALTHY_IDLE = 'npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt'
ALARM = 'npu-smi-info_Ascend950PR_25.7.rc1_3npu_Alarm-health_procs.txt'
BUSY = 'npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'
DRIVER_24_1 = 'driver-version.info_24.1.rc1_mindcluster-doc.txt'
MISSING_NPU_SMI = ('npu-smi is not installed: the NPU driver is not installed yet, which is normal before a first install, '
                   'so %s cannot be checked')
MISSING_FIX = 'none before the first driver install; if the driver is installed, set npu_smi_path'


@pytest.fixture
def host(fake_host):
    """The fake host with the build tools, dpkg and npu-smi on PATH."""
    fake_host.on_path.update(TOOLS, **{'dpkg': DPKG, 'dpkg-query': DPKG_QUERY, 'npu-smi': NPU_SMI})
    fake_host.executables.add(NPU_SMI)
    return fake_host


def npu(host, bus_id, device='0xd802'):
    for name, value in (('vendor', '0x19e5'), ('device', device), ('class', '0x120000'), ('numa_node', '-1')):
        host.write('/bus/pci/devices/%s/%s' % (bus_id, name), value + '\n', under=host.sysfs)


def ready_for_a_first_install(host):
    """A Debian host with headers, tools, the user, two NPUs, a clean dpkg and no driver yet."""
    host.mkdir('/usr/src/linux-headers-%s' % RELEASE)
    os.makedirs(os.path.join(host.root, 'lib/modules', RELEASE))
    os.symlink('/usr/src/linux-headers-%s' % RELEASE, os.path.join(host.root, 'lib/modules', RELEASE, 'build'))
    host.mkdir('/usr/local')
    host.write('/etc/passwd', 'root:x:0:0:root:/root:/bin/bash\nHwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n')
    host.write('/etc/group', 'root:x:0:\nHwHiAiUser:x:1000:\n')
    npu(host, '0000:c1:00.0')
    npu(host, '0000:01:00.0')
    host.write('/bus/pci/devices/0000:7d:00.0/vendor', '0x19e5\n', under=host.sysfs)   # a Huawei NIC, not an NPU
    host.write('/bus/pci/devices/0000:7d:00.0/class', '0x020000\n', under=host.sysfs)
    host.answers[(DPKG, '--audit')] = (0, '', '')
    host.answers[(DPKG_QUERY,) + DPKG_QUERY_ARGS] = (0, 'ii  adduser\nii  dkms\nrc  old-kernel\n', '')
    del host.on_path['npu-smi']
    host.executables.clear()


def with_driver(host, fixture=HEALTHY_IDLE):
    """The same host after the driver install: version.info 24.1.rc1 and npu-smi."""
    host.write('/usr/local/Ascend/driver/version.info', load_fixture(DRIVER_24_1))
    host.on_path['npu-smi'] = NPU_SMI
    host.executables.add(NPU_SMI)
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(fixture), '')


def run_module(host, args, outcome=ExitJson):
    args = dict({'root': host.root, 'sysfs_path': host.sysfs}, **args)
    return run_main(ascend_preflight.main, args, outcome)


def statuses(result):
    return dict((item['name'], item['status']) for item in result['checks'])


def by_name(result, name):
    return next(item for item in result['checks'] if item['name'] == name)


def command(*argv):
    return [TIMEOUT, '--kill-after=5', '120'] + list(argv)


# --- a host ready for a first install, and the same host after the driver ---------------------------------------

def test_first_install_host_passes_with_the_npu_checks_warning(host):
    ready_for_a_first_install(host)
    result = run_module(host, {})
    assert statuses(result) == {
        'architecture': 'pass', 'kernel_headers': 'pass', 'build_tools': 'pass', 'package_database': 'pass',
        'package_states': 'pass', 'disk_space': 'pass', 'run_user': 'pass', 'npu_devices': 'pass',
        'npu_processes': 'warn', 'npu_health': 'warn', 'driver_version': 'pass', 'compatibility': 'pass'}
    assert [item['name'] for item in result['checks']] == list(CHECK_NAMES)
    assert result['changed'] is False
    assert (result['failed_checks'], result['warned_checks']) == ([], ['npu_processes', 'npu_health'])
    assert result['counts'] == {'pass': 10, 'warn': 2, 'fail': 0}
    assert result['summary'] == '12 checks: 10 pass, 2 warn, 0 fail'
    assert by_name(result, 'kernel_headers')['message'] == ('headers of the running kernel %s are in /lib/modules/%s/build'
                                                            % (RELEASE, RELEASE))
    assert by_name(result, 'npu_devices')['message'] == '2 Ascend NPUs on the PCI bus: 2 x 910B (0xd802)'
    assert by_name(result, 'disk_space')['message'] == ('50.0 GB free on /usr/local (the nearest existing directory of '
                                                        '/usr/local/Ascend); min_free_gb is 10')
    assert host.statvfs_paths == [os.path.join(host.root, 'usr/local')]
    # Only reading commands, each once, under the time limit and a parsable locale; no npu-smi without one.
    assert host.run_command.call_args_list[1:] == [
        mock.call(command(DPKG, '--audit'), data=None, environ_update=PARSABLE_LOCALE, check_rc=False),
        mock.call(command(DPKG_QUERY, *DPKG_QUERY_ARGS), data=None, environ_update=PARSABLE_LOCALE, check_rc=False),
    ]
    assert host.warn.call_args_list == [
        mock.call('preflight npu_processes: %s (fix: %s)' % (MISSING_NPU_SMI % 'the processes holding NPUs', MISSING_FIX)),
        mock.call('preflight npu_health: %s (fix: %s)' % (MISSING_NPU_SMI % 'the NPU health', MISSING_FIX)),
    ]


def test_installed_driver_host_passes_and_runs_npu_smi_once(host):
    ready_for_a_first_install(host)
    with_driver(host)
    result = run_module(host, {'driver_version': '24.1.RC1', 'firmware_version': '7.1.0.11.220',
                               'vllm_ascend_version': 'v0.11.0', 'python_version': '3.11'})
    assert result['counts'] == {'pass': 12, 'warn': 0, 'fail': 0}
    assert host.commands() == [command(DPKG, '--audit'), command(DPKG_QUERY, *DPKG_QUERY_ARGS), command(NPU_SMI, 'info')]
    assert by_name(result, 'npu_health')['message'] == 'all 1 NPU chips are healthy (npu-smi info)'
    assert by_name(result, 'driver_version')['message'] == (
        'NPU driver 24.1.rc1 is installed, as driver_version asks; firmware 7.1.0.11.220 is within compatible_version_fw '
        '[7.0.0,7.2.99] of driver 24.1.rc1')
    assert by_name(result, 'compatibility')['message'].startswith('the requested versions are the row vllm-ascend 0.11.0 ')
    assert by_name(result, 'compatibility')['message'].endswith(' on the requested NPU driver 24.1.RC1')
    host.warn.assert_not_called()


def test_check_mode_reads_the_same(host):
    ready_for_a_first_install(host)
    with_driver(host)
    real = run_module(host, {})
    assert run_module(host, {'_ansible_check_mode': True}) == real
    assert host.commands() == [command(DPKG, '--audit'), command(DPKG_QUERY, *DPKG_QUERY_ARGS),
                               command(NPU_SMI, 'info')] * 2


# --- fail_on -------------------------------------------------------------------------------------------------

def test_fail_on_fail_fails_with_each_failed_check_and_its_fix(host):
    ready_for_a_first_install(host)
    with_driver(host, ALARM)
    result = run_module(host, {'checks': ['npu_processes', 'npu_health', 'architecture']}, FailJson)
    assert result['msg'] == (
        '2 of 3 preflight checks did not pass (fail_on=fail): npu_processes: 2 processes still hold NPUs: pid 1530715 '
        '(python) on NPU 0, pid 1655234 (python) on NPU 0 (fix: stop them (the vLLM service, its containers) first: a '
        'driver or firmware change and a new vLLM start need free NPUs); npu_health: NPU chips not healthy: NPU 0 chip 0: '
        'Alarm, NPU 1 chip 0: Alarm (fix: find the cause with npu-smi info -t health -i NPU (Huawei asks for all chips '
        'healthy before a driver or firmware change))')
    assert [item['name'] for item in result['checks']] == ['architecture', 'npu_processes', 'npu_health']
    assert (result['failed_checks'], result['summary'], result['changed']) == (
        ['npu_processes', 'npu_health'], '3 checks: 1 pass, 0 warn, 2 fail', False)
    assert host.commands() == [command(NPU_SMI, 'info')]


def test_fail_on_warn_fails_on_warnings(host):
    ready_for_a_first_install(host)
    result = run_module(host, {'fail_on': 'warn', 'checks': ['npu_health', 'run_user']}, FailJson)
    assert result['msg'] == ('1 of 2 preflight checks did not pass (fail_on=warn): npu_health: %s (fix: %s)'
                             % (MISSING_NPU_SMI % 'the NPU health', MISSING_FIX))
    assert result['warned_checks'] == ['npu_health']


def test_fail_on_never_reports_failures_and_succeeds(host):
    del host.on_path['npu-smi']
    host.executables.clear()
    host.mkdir('/bus/pci/devices', under=host.sysfs)
    result = run_module(host, {'fail_on': 'never', 'skip_checks': ['package_database', 'package_states']})
    assert result['failed_checks'] == ['kernel_headers', 'run_user', 'npu_devices']
    assert result['warned_checks'] == ['npu_processes', 'npu_health']
    assert by_name(result, 'run_user')['fix'] == ('groupadd HwHiAiUser && useradd -g HwHiAiUser -d /home/HwHiAiUser -m '
                                                  'HwHiAiUser -s /bin/bash')
    assert by_name(result, 'npu_devices')['message'] == ('no Ascend NPU among the PCI devices in %s/bus/pci/devices '
                                                         '(vendor 0x19e5, class 0x1200)' % host.sysfs)
    assert by_name(result, 'disk_space')['message'] == ('50.0 GB free on / (the nearest existing directory of '
                                                        '/usr/local/Ascend); min_free_gb is 10')


def test_a_missing_sysfs_tree_warns(host):
    ready_for_a_first_install(host)
    result = run_module(host, {'checks': ['npu_devices'], 'sysfs_path': os.path.join(host.root, 'no-sys')})
    assert by_name(result, 'npu_devices') == {
        'name': 'npu_devices', 'status': 'warn',
        'message': "cannot list PCI devices: %s/no-sys/bus/pci/devices does not exist (a container without the host's "
                   'sysfs?)' % host.root,
        'fix': "set sysfs_path to where the host's sysfs is mounted, or skip this check"}


# --- selection -----------------------------------------------------------------------------------------------

def test_checks_and_skip_checks_select_and_file_checks_run_no_command(host):
    ready_for_a_first_install(host)
    result = run_module(host, {'checks': ['run_user', 'kernel_headers', 'disk_space', 'architecture'],
                               'skip_checks': ['architecture']})
    assert [item['name'] for item in result['checks']] == ['kernel_headers', 'disk_space', 'run_user']
    host.run_command.assert_not_called()


# --- architecture, headers, tools ----------------------------------------------------------------------------

def test_x86_64_warns_unless_expected(host):
    host.machine = 'x86_64'
    assert by_name(run_module(host, {'checks': ['architecture']}), 'architecture')['status'] == 'warn'
    assert by_name(run_module(host, {'checks': ['architecture'], 'expected_architecture': 'x86_64'}),
                   'architecture')['status'] == 'pass'
    result = run_module(host, {'checks': ['architecture'], 'expected_architecture': 'aarch64'}, FailJson)
    assert result['msg'] == ('1 of 1 preflight checks did not pass (fail_on=fail): architecture: the host is x86_64, but '
                             'expected_architecture is aarch64 (fix: run on a aarch64 host or correct expected_architecture)')


def test_headers_of_another_kernel_and_a_dangling_build_link_fail(host):
    os.makedirs(os.path.join(host.root, 'lib/modules', RELEASE))
    os.symlink('/usr/src/linux-headers-%s' % RELEASE, os.path.join(host.root, 'lib/modules', RELEASE, 'build'))
    host.mkdir('/usr/src/linux-headers-6.1.0-20-arm64')
    os.makedirs(os.path.join(host.root, 'lib/modules/6.1.0-20-arm64'))
    os.symlink('/usr/src/linux-headers-6.1.0-20-arm64', os.path.join(host.root, 'lib/modules/6.1.0-20-arm64/build'))
    result = run_module(host, {'checks': ['kernel_headers']}, FailJson)
    assert result['msg'] == (
        '1 of 1 preflight checks did not pass (fail_on=fail): kernel_headers: no headers for the running kernel %(r)s '
        '(none of /lib/modules/%(r)s/build, /usr/src/linux-headers-%(r)s, /usr/src/kernels/%(r)s exists); '
        '/lib/modules/%(r)s/build points to /usr/src/linux-headers-%(r)s, which does not exist; headers exist for '
        "6.1.0-20-arm64 only (boot that kernel, or install the running one's headers) (fix: apt-get install -y "
        'linux-headers-%(r)s)' % {'r': RELEASE})


def test_rpm_host_uses_rpm_and_the_openeuler_paths(host):
    del host.on_path['dpkg'], host.on_path['dpkg-query'], host.on_path['dkms']
    host.on_path['rpm'] = RPM
    host.mkdir('/usr/src/kernels/%s' % RELEASE)
    host.answers[(RPM,) + RPM_VERIFY_ARGS] = (0, '', '')
    result = run_module(host, {'checks': ['kernel_headers', 'build_tools', 'package_database', 'package_states']},
                        FailJson)
    assert statuses(result) == {'kernel_headers': 'pass', 'build_tools': 'fail', 'package_database': 'pass',
                                'package_states': 'pass'}
    assert by_name(result, 'kernel_headers')['message'].endswith(' are in /usr/src/kernels/%s' % RELEASE)
    assert by_name(result, 'build_tools')['fix'] == 'dnf install -y dkms'
    assert host.commands() == [command(RPM, *RPM_VERIFY_ARGS)]


def test_no_package_manager_warns_and_runs_nothing(host):
    del host.on_path['dpkg'], host.on_path['dpkg-query']
    result = run_module(host, {'checks': ['package_database', 'package_states']})
    assert result['warned_checks'] == ['package_database', 'package_states']
    host.run_command.assert_not_called()


def test_broken_dpkg_fails(host):
    host.answers[(DPKG, '--audit')] = (1, ' dkms                 Dynamic Kernel Module System (DKMS)\n', '')
    host.answers[(DPKG_QUERY,) + DPKG_QUERY_ARGS] = (0, 'ii  adduser\niF  dkms\n', '')
    result = run_module(host, {'checks': ['package_database', 'package_states'], 'fail_on': 'never'})
    assert [item['message'] for item in result['checks']] == [
        'dpkg --audit reports broken packages: dkms', 'half-installed or broken packages: dkms (half-configured)']


# --- disk ----------------------------------------------------------------------------------------------------

def test_low_disk_fails_on_the_nearest_existing_directory(host):
    host.mkdir('/srv')
    host.free_bytes = 3 * GIB
    result = run_module(host, {'checks': ['disk_space'], 'install_path': '/srv/ascend/x', 'min_free_gb': 7.5}, FailJson)
    assert result['msg'] == ('1 of 1 preflight checks did not pass (fail_on=fail): disk_space: only 3.0 GB free on /srv '
                             '(the nearest existing directory of /srv/ascend/x), less than min_free_gb 7.5 (the CANN '
                             'toolkit needs 7 to 10 GB) (fix: free space there or choose another install_path)')
    assert host.statvfs_paths == [os.path.join(host.root, 'srv')]


def test_unreadable_disk_fails(host, monkeypatch):
    def denied(path):
        raise OSError(13, 'Permission denied')
    monkeypatch.setattr(os, 'statvfs', denied)
    result = run_module(host, {'checks': ['disk_space'], 'fail_on': 'never'})
    assert by_name(result, 'disk_space')['message'] == ('cannot read the free space of / (the nearest existing directory '
                                                        'of /usr/local/Ascend): Permission denied')


# --- run user ------------------------------------------------------------------------------------------------

def test_run_user_from_the_system_database_with_the_default_root(host, monkeypatch):
    looked_up = []

    def getpwnam(name):
        looked_up.append(('user', name))
        return mock.Mock(pw_name=name, pw_uid=1000, pw_gid=1000, pw_dir='/home/' + name, pw_shell='/bin/bash')

    def getgrnam(name):
        looked_up.append(('group', name))
        raise KeyError(name)
    monkeypatch.setattr(_ascend_files.pwd, 'getpwnam', getpwnam)
    monkeypatch.setattr(_ascend_files.grp, 'getgrnam', getgrnam)
    result = run_module(host, {'root': '/', 'checks': ['run_user']}, FailJson)
    assert result['msg'] == ('1 of 1 preflight checks did not pass (fail_on=fail): run_user: group HwHiAiUser does not '
                             'exist (user HwHiAiUser does) (fix: groupadd HwHiAiUser && usermod -a -G HwHiAiUser '
                             'HwHiAiUser)')
    assert looked_up == [('user', 'HwHiAiUser'), ('group', 'HwHiAiUser')]


def test_run_user_not_in_group(host):
    host.write('/etc/passwd', 'HwHiAiUser:x:1000:100::/home/HwHiAiUser:/bin/bash\n')
    host.write('/etc/group', 'users:x:100:\nHwHiAiUser:x:1000:other\n')
    result = run_module(host, {'checks': ['run_user'], 'fail_on': 'never'})
    assert by_name(result, 'run_user')['message'] == 'user HwHiAiUser is not in group HwHiAiUser'


# --- npu-smi -------------------------------------------------------------------------------------------------

def test_a_failing_npu_smi_fails_both_npu_checks_with_its_hint(host):
    host.answers[(NPU_SMI, 'info')] = (1, load_fixture('npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt'), '')
    result = run_module(host, {'checks': ['npu_processes', 'npu_health'], 'fail_on': 'never'})
    assert result['failed_checks'] == ['npu_processes', 'npu_health']
    message = by_name(result, 'npu_health')['message']
    assert message.startswith('npu-smi info failed (rc=1): ')
    assert 'Hint: the user running npu-smi is not in group HwHiAiUser' in message
    assert host.commands() == [command(NPU_SMI, 'info')]


INCOMPLETE_FIX = ('run npu-smi info on the host: output that stops short means npu-smi or the driver broke off (see '
                  'dmesg, then run the preflight again); a whole table is a parser bug to report with that output')


def test_an_npu_smi_table_cut_off_part_way_fails_both_npu_checks(host):
    # The case: 3 of 8 busy NPUs and no process table used to pass npu_health and npu_processes.
    host.answers[(NPU_SMI, 'info')] = (0, ''.join(load_fixture(BUSY).splitlines(True)[:15]), '')
    result = run_module(host, {'checks': ['npu_processes', 'npu_health'], 'fail_on': 'never'})
    reason = ("npu-smi info printed an incomplete table: the output ends at line 15 before the table does (no process "
              "table), so it is incomplete (cut off?): "
              "'+===========================+===============+====================================================+'")
    assert result['checks'] == [
        {'name': 'npu_processes', 'status': 'fail', 'message': 'the processes holding NPUs cannot be checked: ' + reason,
         'fix': INCOMPLETE_FIX},
        {'name': 'npu_health', 'status': 'fail', 'message': 'the NPU health cannot be checked: ' + reason,
         'fix': INCOMPLETE_FIX}]
    host.warn.assert_called_once_with('npu-smi info: ' + reason.split(': ', 1)[1])


def test_an_npu_smi_killed_at_the_time_limit_fails_with_the_hung_hint(host, monkeypatch):
    monkeypatch.setattr(_command, 'time', mock.Mock(monotonic=mock.Mock(side_effect=[0.0, 125.0])))
    host.answers[(NPU_SMI, 'info')] = (-9, '', '')
    result = run_module(host, {'checks': ['npu_health']}, FailJson)
    assert by_name(result, 'npu_health')['message'] == (
        'npu-smi info failed (rc=-9): no output. Hint: npu-smi hung and was stopped by the timeout: a driver or device '
        'problem (see dmesg and the device health; raise timeout only if the host is merely slow).')


def test_a_process_name_that_is_not_utf8_is_reported_as_valid_utf8(host):
    stdout = load_fixture(ALARM).encode('utf-8').replace(b'| 1530715       | python   ', b'| 1530715       | py\xff\xfen   ')
    host.answers[(NPU_SMI, 'info')] = (0, stdout, '')
    result = run_module(host, {'checks': ['npu_processes'], 'fail_on': 'never'})
    assert by_name(result, 'npu_processes')['message'] == ('2 processes still hold NPUs: pid 1530715 (py\ufffd\ufffdn) '
                                                           'on NPU 0, pid 1655234 (python) on NPU 0')
    assert json.dumps(result, ensure_ascii=False).encode('utf-8')


def test_warnings_of_what_was_read_are_capped_and_the_check_warnings_follow(host):
    table = load_fixture(HEALTHY_IDLE).splitlines(True)
    host.answers[(NPU_SMI, 'info')] = (0, ''.join(table[:9] + ['garbage %d\n' % number for number in range(30)] + table[9:]),
                                       '')
    host.machine = 'x86_64'
    result = run_module(host, {'checks': ['architecture', 'npu_health'], 'fail_on': 'never'})
    assert result['counts'] == {'pass': 1, 'warn': 1, 'fail': 0}
    messages = [call.args[0] for call in host.warn.call_args_list]
    assert messages[:20] == ["npu-smi info line %d: ignored text inside the table: 'garbage %d'" % (10 + number, number)
                             for number in range(20)]
    assert messages[20:] == ['... and 10 more warnings', 'preflight architecture: %s (fix: %s)' % (
        by_name(result, 'architecture')['message'], by_name(result, 'architecture')['fix'])]


def test_a_configured_npu_smi_that_is_not_executable_fails(host):
    result = run_module(host, {'checks': ['npu_health'], 'npu_smi_path': '/opt/x/npu-smi'}, FailJson)
    assert result['msg'] == ('1 of 1 preflight checks did not pass (fail_on=fail): npu_health: npu_smi_path: '
                             '/opt/x/npu-smi is not an executable file (fix: repair the driver or the access to it as '
                             'the message says)')
    host.run_command.assert_not_called()


def test_npu_smi_found_as_a_fallback_path(host):
    del host.on_path['npu-smi']
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(HEALTHY_IDLE), '')
    result = run_module(host, {'checks': ['npu_health']})
    assert result['counts'] == {'pass': 1, 'warn': 0, 'fail': 0}


# --- driver and compatibility ----------------------------------------------------------------------------------

def test_firmware_outside_the_installed_drivers_range_fails(host):
    with_driver(host)
    result = run_module(host, {'checks': ['driver_version'], 'firmware_version': '7.5.0.1.129'}, FailJson)
    version_info = os.path.join(host.root, 'usr/local/Ascend/driver/version.info')
    assert result['msg'] == (
        '1 of 1 preflight checks did not pass (fail_on=fail): driver_version: NPU driver 24.1.rc1 is installed (%s); '
        'firmware 7.5.0.1.129 is outside compatible_version_fw [7.0.0,7.2.99] of the installed driver 24.1.rc1 (%s) '
        '(fix: choose a firmware_version within [7.0.0,7.2.99], or first install the driver that goes with firmware '
        '7.5.0.1.129)' % (version_info, version_info))
    host.run_command.assert_not_called()


def test_the_driver_recorded_in_ascend_install_info_is_read(host):
    record = load_fixture('etc-ascend_install.info_driver-firmware_full.txt')
    # The sample keeps the shell prompt line of the page it was copied from; the file starts after it.
    host.write('/etc/ascend_install.info', record.split('\n', 1)[1].replace('=/usr/local/Ascend', '=/srv/Ascend'))
    host.write('/srv/Ascend/driver/version.info', 'Version=25.5.0\n')
    result = run_module(host, {'checks': ['driver_version']})
    assert by_name(result, 'driver_version')['message'] == ('NPU driver 25.5.0 is installed (%s)'
                                                            % os.path.join(host.root, 'srv/Ascend/driver/version.info'))
    host.warn.assert_not_called()


def test_cann_newer_than_the_installed_driver_fails(host):
    with_driver(host)
    result = run_module(host, {'checks': ['compatibility'], 'cann_version': '8.5.0'}, FailJson)
    assert result['msg'].startswith(
        '1 of 1 preflight checks did not pass (fail_on=fail): compatibility: NPU driver 24.1.rc1 is too old for '
        'vllm-ascend 0.13.0 (CANN 8.5.0), which needs 25.5 or later: upgrade the driver to 25.5 with '
        'playbooks/upgrade.yml (npu_driver_version), or choose vllm-ascend 0.11.0 (CANN 8.3.RC2), the newest release '
        'driver 24.1.rc1 runs (vllm_service_vllm_ascend_version or vllm_service_image) (fix: use the newest row the NPU '
        'driver 24.1.rc1 runs: vllm-ascend 0.11.0 ')
    host.run_command.assert_not_called()


def test_without_version_info_the_driver_npu_smi_prints_is_used(host):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(HEALTHY_IDLE), '')
    result = run_module(host, {'checks': ['driver_version', 'compatibility'], 'cann_version': '8.3.RC2'})
    assert [item['message'] for item in result['checks']][0] == 'NPU driver 24.1.rc1 is installed (npu-smi info)'
    assert result['checks'][1]['message'].endswith('on the installed NPU driver 24.1.rc1')
    assert host.commands() == [command(NPU_SMI, 'info')]


def test_a_requested_driver_replaces_the_installed_one_for_compatibility(host):
    with_driver(host)
    result = run_module(host, {'checks': ['compatibility'], 'cann_version': '8.5.0', 'driver_version': '25.5.0'})
    assert result['checks'][0]['message'].endswith('on the requested NPU driver 25.5.0')


# vllm-ascend 0.13.0 as a site validated it on driver 24.1.RC1 (the built-in row asks for 25.5).
SITE_0_13 = {'vllm_ascend': '0.13.0', 'vllm': '0.13.0', 'python': '>=3.10,<3.12', 'cann': '8.5.0', 'torch': '2.8.0',
             'torch_npu': '2.8.0.post2', 'triton_ascend': '3.2.0', 'driver': '24.1.RC1'}


def test_a_site_row_is_checked_against_and_named(host):
    with_driver(host)
    result = run_module(host, {'checks': ['compatibility'], 'vllm_ascend_version': '0.13.0', 'cann_version': '8.5.0',
                               'compat_site_rows': [SITE_0_13]})
    assert result['checks'] == [{
        'name': 'compatibility', 'status': 'pass', 'fix': None,
        'message': 'the requested versions are the row vllm-ascend 0.13.0 (site row) (vLLM 0.13.0, Python >=3.10,<3.12, '
                   'CANN 8.5.0, torch 2.8.0, torch_npu 2.8.0.post2, triton-ascend 3.2.0, NPU driver >= 24.1.RC1, image '
                   'quay.io/ascend/vllm-ascend:v0.13.0) on the installed NPU driver 24.1.rc1'}]


@pytest.mark.parametrize('rows, message', [
    ([{'vllm_ascend': '0.13.0', 'vllm': '0.13.0'}], 'ascend_compat_site_rows[0].cann is missing: every row names its CANN version'),
    ([SITE_0_13, dict(SITE_0_13, source='my notes')],
     "ascend_compat_site_rows[1].source: a site row's source is site (given or left out), not 'my notes': say where it "
     "comes from in a comment beside it"),
    ([dict(SITE_0_13, cann=8.5)],
     'ascend_compat_site_rows[0].cann: 8.5 is a float, not a version string: quote it (YAML reads 9.10 as the number 9.1)'),
])
def test_a_malformed_site_row_fails_before_any_check_naming_the_inventory_variable(host, rows, message):
    with_driver(host)
    assert run_module(host, {'compat_site_rows': rows}, FailJson)['msg'] == 'compat_site_rows: ' + message
    host.run_command.assert_not_called()


# --- option errors -------------------------------------------------------------------------------------------

@pytest.mark.parametrize('args, message', [
    ({'root': '/nonexistent/root'}, 'root: /nonexistent/root is not a directory'),
    ({'install_path': 'Ascend'}, 'install_path: Ascend is not an absolute path'),
    ({'min_free_gb': -1}, 'min_free_gb: must be 0 or more, not -1'),
])
def test_option_errors(host, args, message):
    assert run_module(host, args, FailJson)['msg'] == message
    host.run_command.assert_not_called()
