# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The preflight checks as pure functions: every pass, warn and fail rule, with exact messages and fixes."""

from __future__ import annotations


import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import parse_driver_version_info
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import with_site_rows
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import (
    describe_npu_smi_failure,
    parse_npu_smi_info,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._preflight import (
    CHECK_NAMES,
    check_architecture,
    check_build_tools,
    check_compatibility,
    check_disk_space,
    check_driver_version,
    check_kernel_headers,
    check_npu_devices,
    check_npu_health,
    check_npu_processes,
    check_package_database,
    check_package_states,
    check_run_user,
    kernel_header_paths,
    selected_checks,
    summarize,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture


GIB = 1024 ** 3
RELEASE_VARIABLES = 'vllm_service_vllm_ascend_version or vllm_service_image'
NPU_SMI_MISSING_FIX = 'none before the first driver install; if the driver is installed, set npu_smi_path'
ROW_0_11 = ('vllm-ascend 0.11.0 (vLLM 0.11.0, Python >=3.9,<3.12, CANN 8.3.RC2, torch 2.7.1, torch_npu 2.7.1.post1, '
            'triton-ascend none, NPU driver >= 24.1.RC1 (inferred), image quay.io/ascend/vllm-ascend:v0.11.0)')
ROW_0_13 = ('vllm-ascend 0.13.0 (vLLM 0.13.0, Python >=3.10,<3.12, CANN 8.5.0, torch 2.8.0, torch_npu 2.8.0.post2, '
            'triton-ascend 3.2.0, NPU driver >= 25.5, image quay.io/ascend/vllm-ascend:v0.13.0)')
ROW_0_18 = ('vllm-ascend 0.18.0 (vLLM 0.18.0, Python >=3.10,<3.12, CANN 8.5.1, torch 2.9.0, torch_npu '
            '2.9.0.post1+git4c901a4, triton-ascend 3.2.0.dev20260322, NPU driver >= 25.5 (inferred), image '
            'quay.io/ascend/vllm-ascend:v0.18.0)')


def result(name, status, message, fix=None):
    return {'name': name, 'status': status, 'message': message, 'fix': fix}


def output(argv, rc=0, stdout='', stderr='', timed_out=False):
    return CommandResult(argv, rc, stdout, stderr, timed_out)


def test_fixture_loader_strips_the_source_header():
    assert load_fixture('driver-version.info_24.1.rc1_mindcluster-doc.txt').startswith('        Version=24.1.rc1\n')


# --- architecture --------------------------------------------------------------------------------------------

@pytest.mark.parametrize('machine', ['aarch64', 'arm64', 'AARCH64'])
def test_architecture_aarch64_passes(machine):
    assert check_architecture(machine) == result('architecture', 'pass', 'aarch64, as on Kunpeng servers')


def test_architecture_x86_64_warns():
    assert check_architecture('x86_64') == result(
        'architecture', 'warn', 'the host is x86_64, not a Kunpeng (aarch64) server; Ascend also ships x86-64 packages, '
        'which this host needs', 'set expected_architecture to x86_64 to accept this host')


def test_architecture_other_fails():
    assert check_architecture('ppc64le') == result(
        'architecture', 'fail', 'the host is ppc64le: Ascend NPU packages exist for aarch64 and x86_64 only',
        'run on a Kunpeng (aarch64) host')
    assert check_architecture('')['message'] == ('the host is of an unknown architecture: Ascend NPU packages exist for '
                                                 'aarch64 and x86_64 only')


def test_architecture_as_expected_passes():
    assert check_architecture('amd64', 'x86_64') == result('architecture', 'pass', 'x86_64, as expected_architecture asks')


def test_architecture_not_as_expected_fails():
    assert check_architecture('aarch64', 'x86_64') == result(
        'architecture', 'fail', 'the host is aarch64, but expected_architecture is x86_64',
        'run on a x86_64 host or correct expected_architecture')
    assert check_architecture('', 'x86_64')['message'] == ('the host is of an unknown architecture, but '
                                                           'expected_architecture is x86_64')


# --- kernel headers ------------------------------------------------------------------------------------------

RELEASE = '6.1.0-18-arm64'
CHECKED = ['/lib/modules/%s/build' % RELEASE, '/usr/src/linux-headers-%s' % RELEASE, '/usr/src/kernels/%s' % RELEASE]


def test_kernel_header_paths_are_the_dkms_link_then_the_debian_and_openeuler_directories():
    assert kernel_header_paths(RELEASE) == CHECKED


def test_kernel_headers_found_pass():
    assert check_kernel_headers(RELEASE, CHECKED, CHECKED[:2], manager='dpkg') == result(
        'kernel_headers', 'pass', 'headers of the running kernel 6.1.0-18-arm64 are in /lib/modules/6.1.0-18-arm64/build')


@pytest.mark.parametrize('manager, fix', [
    ('dpkg', 'apt-get install -y linux-headers-6.1.0-18-arm64'),
    ('rpm', 'dnf install -y kernel-devel-6.1.0-18-arm64 kernel-headers-6.1.0-18-arm64'),
    (None, 'install linux-headers-6.1.0-18-arm64 (Debian family) or kernel-devel-6.1.0-18-arm64 and '
           'kernel-headers-6.1.0-18-arm64 (openEuler family)'),
])
def test_kernel_headers_missing_fail_with_the_package_of_the_family(manager, fix):
    assert check_kernel_headers(RELEASE, CHECKED, [], manager=manager) == result(
        'kernel_headers', 'fail', 'no headers for the running kernel 6.1.0-18-arm64 (none of '
        '/lib/modules/6.1.0-18-arm64/build, /usr/src/linux-headers-6.1.0-18-arm64, /usr/src/kernels/6.1.0-18-arm64 exists)',
        fix)


def test_kernel_headers_missing_name_other_kernels_and_a_dangling_link():
    found = check_kernel_headers(RELEASE, CHECKED, [], ['6.1.0-20-arm64'],
                                 [(CHECKED[0], '/usr/src/linux-headers-%s' % RELEASE)], 'dpkg')
    assert found['status'] == 'fail'
    assert found['message'].endswith(
        'exists); /lib/modules/6.1.0-18-arm64/build points to /usr/src/linux-headers-6.1.0-18-arm64, which does not '
        "exist; headers exist for 6.1.0-20-arm64 only (boot that kernel, or install the running one's headers)")


def test_kernel_headers_name_each_other_kernel_once_and_never_the_running_one():
    """/lib/modules and /usr/src/kernels may both hold headers of one kernel, and of the running one (a broken link)."""
    found = check_kernel_headers(RELEASE, CHECKED, [], ['6.1.0-20-arm64', RELEASE, '5.10.0-136', '6.1.0-20-arm64'])
    assert found['message'].endswith("headers exist for 6.1.0-20-arm64, 5.10.0-136 only (boot that kernel, or install "
                                     "the running one's headers)")


# --- build tools ---------------------------------------------------------------------------------------------

ALL_TOOLS = {'dkms': '/usr/sbin/dkms', 'gcc': '/usr/bin/gcc', 'make': '/usr/bin/make', 'lspci': '/usr/bin/lspci',
             'ifconfig': '/usr/sbin/ifconfig'}


def test_build_tools_all_present_pass():
    assert check_build_tools(ALL_TOOLS, 'dpkg') == result('build_tools', 'pass',
                                                          'dkms, gcc, make, lspci, ifconfig are on PATH')


def test_build_tools_missing_required_fail():
    found = dict(ALL_TOOLS, dkms=None, make=None, ifconfig=None)
    assert check_build_tools(found, 'rpm') == result(
        'build_tools', 'fail', 'dkms, make not on PATH: the NPU driver builds its kernel module with DKMS '
        '(also missing: ifconfig of net-tools)', 'dnf install -y dkms make net-tools')


def test_build_tools_missing_useful_warn():
    assert check_build_tools(dict(ALL_TOOLS, lspci=None), 'dpkg') == result(
        'build_tools', 'warn', 'lspci (pciutils) not on PATH: the NPU driver installer uses pciutils and net-tools',
        'apt-get install -y pciutils')


def test_build_tools_without_a_package_manager():
    assert check_build_tools(dict(ALL_TOOLS, gcc=None))['fix'] == 'install gcc with the package manager'


# --- package database ----------------------------------------------------------------------------------------

DPKG_AUDIT = ['/usr/bin/dpkg', '--audit']
RPM_VERIFY = ['/usr/bin/rpm', '-Va', '--nofiles', '--nodigest', '--noscripts']
# dpkg --audit's report of a package whose configuration failed (the text dpkg prints for that state).
DPKG_AUDIT_HALF_CONFIGURED = (
    'The following packages are only half configured, probably due to problems\n'
    'configuring them the first time.  The configuration should be retried using\n'
    'dpkg --configure <package> or the configure menu option in dselect:\n'
    ' linux-headers-6.1.0-18-arm64 Header files for Linux 6.1.0-18-arm64\n'
    ' dkms                 Dynamic Kernel Module System (DKMS)\n'
    '\n')
DPKG_FIX = 'run dpkg --configure -a, then apt-get install -f'


def test_package_database_dpkg_clean_passes():
    assert check_package_database('dpkg', output(DPKG_AUDIT)) == result('package_database', 'pass',
                                                                        'dpkg --audit reports no problem')


@pytest.mark.parametrize('rc', [0, 1])
def test_package_database_dpkg_audit_findings_fail(rc):
    assert check_package_database('dpkg', output(DPKG_AUDIT, rc, DPKG_AUDIT_HALF_CONFIGURED)) == result(
        'package_database', 'fail', 'dpkg --audit reports broken packages: linux-headers-6.1.0-18-arm64, dkms', DPKG_FIX)


def test_package_database_dpkg_audit_text_without_package_lines():
    found = check_package_database('dpkg', output(DPKG_AUDIT, 1, 'dpkg: something odd\n'))
    assert found == result('package_database', 'fail', 'dpkg --audit reports broken packages: dpkg: something odd', DPKG_FIX)


def test_package_database_dpkg_error_fails_with_the_command():
    found = check_package_database('dpkg', output(
        DPKG_AUDIT, 2, '', 'dpkg: error: dpkg frontend lock was locked by another process with pid 4242\n'))
    assert found == result(
        'package_database', 'fail', '/usr/bin/dpkg --audit failed (rc=2): dpkg: error: dpkg frontend lock was locked by '
        'another process with pid 4242', 'repair dpkg (is another apt or dpkg running?), then run the preflight again')


def test_package_database_dpkg_stopped_at_the_time_limit_says_so():
    found = check_package_database('dpkg', output(DPKG_AUDIT, -9, timed_out=True))
    assert found == result('package_database', 'fail', '/usr/bin/dpkg --audit failed (rc=-9, stopped at the time limit): '
                           'no output', 'repair dpkg (is another apt or dpkg running?), then run the preflight again')


def test_package_database_rpm_clean_passes():
    assert check_package_database('rpm', output(RPM_VERIFY)) == result(
        'package_database', 'pass', 'rpm -Va --nofiles reports no dependency problem')


def test_package_database_rpm_unsatisfied_dependencies_warn():
    stdout = ('Unsatisfied dependencies for dkms-3.0.10-1.oe2203sp3.noarch:\n'
              '\tkernel-devel is needed by (installed) dkms-3.0.10-1.oe2203sp3.noarch\n')
    assert check_package_database('rpm', output(RPM_VERIFY, 1, stdout)) == result(
        'package_database', 'warn', 'rpm -Va --nofiles reports unsatisfied dependencies of dkms-3.0.10-1.oe2203sp3.noarch',
        'install the missing dependencies (dnf check lists them) or remove those packages')


def test_package_database_rpm_broken_database_fails():
    stderr = 'error: rpmdb: BDB0113 Thread/process 4242 failed\nerror: cannot open Packages database in /var/lib/rpm\n'
    found = check_package_database('rpm', output(RPM_VERIFY, 1, '', stderr))
    assert found == result('package_database', 'fail', '/usr/bin/rpm -Va --nofiles --nodigest --noscripts failed (rc=1): '
                           'error: cannot open Packages database in /var/lib/rpm',
                           'repair the rpm database (rpm --rebuilddb as root), then run the preflight again')


def test_package_database_without_a_package_manager_warns():
    assert check_package_database(None, None) == result(
        'package_database', 'warn', 'neither dpkg nor rpm is on PATH, so the package database cannot be checked',
        'check the package manager by hand, or skip this check')


# --- package states ------------------------------------------------------------------------------------------

DPKG_QUERY = ['/usr/bin/dpkg-query', '-W', '-f=${db:Status-Abbrev} ${Package}\\n']
STATES_CLEAN = 'ii  adduser\nii  apt\nrc  linux-image-6.1.0-17-arm64\nun  some-purged\n'


def test_package_states_clean_pass():
    assert check_package_states('dpkg', output(DPKG_QUERY, 0, STATES_CLEAN)) == result(
        'package_states', 'pass', 'no half-installed, broken or held package (dpkg-query)')


def test_package_states_held_warn():
    found = check_package_states('dpkg', output(DPKG_QUERY, 0, STATES_CLEAN + 'hi  linux-image-arm64\n'))
    assert found == result('package_states', 'warn', 'held packages (apt will not change them): linux-image-arm64',
                           'apt-mark unhold the packages the install must change (for example kernel headers)')


def test_package_states_half_installed_fail():
    stdout = STATES_CLEAN + 'iF  dkms\niU  gcc-12\niHR linux-headers-6.1.0-18-arm64\nhi  linux-image-arm64\n'
    found = check_package_states('dpkg', output(DPKG_QUERY, 0, stdout))
    assert found == result(
        'package_states', 'fail', 'half-installed or broken packages: dkms (half-configured), gcc-12 (unpacked), '
        'linux-headers-6.1.0-18-arm64 (half-installed, reinstall required); held packages: linux-image-arm64',
        'run dpkg --configure -a, then apt-get install -f (or apt-get install --reinstall the package)')


def test_package_states_reinstall_required_on_an_installed_package_fails():
    found = check_package_states('dpkg', output(DPKG_QUERY, 0, 'iiR dkms\n'))
    assert found['message'] == 'half-installed or broken packages: dkms (status \'i\', reinstall required)'


def test_package_states_unreadable_lines_warn_with_the_line():
    found = check_package_states('dpkg', output(DPKG_QUERY, 0, 'ii  apt\nii\n'))
    assert found['status'] == 'warn'
    assert found['message'] == "dpkg-query printed lines that are not a status and a package: line 2: 'ii'"


def test_package_states_dpkg_query_error_fails():
    found = check_package_states('dpkg', output(DPKG_QUERY, 2, '', 'dpkg-query: error: parsing file status\n'))
    assert found['status'] == 'fail'
    assert found['message'] == ("/usr/bin/dpkg-query -W -f=${db:Status-Abbrev} ${Package}\\n failed (rc=2): "
                                'dpkg-query: error: parsing file status')


def test_package_states_rpm_pass_without_a_command():
    assert check_package_states('rpm', None) == result(
        'package_states', 'pass', 'rpm keeps no half-installed or held states (package_database checks its dependencies)')


def test_package_states_without_a_package_manager_warns():
    assert check_package_states(None, None)['status'] == 'warn'


# --- disk space ----------------------------------------------------------------------------------------------

def test_disk_space_enough_passes():
    assert check_disk_space('/usr/local/Ascend', '/usr/local', 77 * GIB, 10) == result(
        'disk_space', 'pass', '77.0 GB free on /usr/local (the nearest existing directory of /usr/local/Ascend); '
        'min_free_gb is 10')
    assert check_disk_space('/opt/a', '/opt/a', 10 * GIB, 10)['message'] == '10.0 GB free on /opt/a; min_free_gb is 10'


def test_disk_space_short_fails():
    assert check_disk_space('/usr/local/Ascend', '/usr/local/Ascend', int(6.5 * GIB), 7.5) == result(
        'disk_space', 'fail', 'only 6.5 GB free on /usr/local/Ascend, less than min_free_gb 7.5 (the CANN toolkit needs '
        '7 to 10 GB)', 'free space there or choose another install_path')


def test_disk_space_unreadable_fails():
    assert check_disk_space('/usr/local/Ascend', '/usr/local', None, 10, 'Permission denied') == result(
        'disk_space', 'fail', 'cannot read the free space of /usr/local (the nearest existing directory of '
        '/usr/local/Ascend): Permission denied', 'check install_path (/usr/local/Ascend)')


# --- run user ------------------------------------------------------------------------------------------------

USER = {'name': 'HwHiAiUser', 'uid': 1000, 'gid': 1000, 'home': '/home/HwHiAiUser', 'shell': '/bin/bash'}
GROUP = {'name': 'HwHiAiUser', 'gid': 1000, 'members': []}
ADD_USER = 'useradd -g HwHiAiUser -d /home/HwHiAiUser -m HwHiAiUser -s /bin/bash'


def test_run_user_primary_group_passes():
    assert check_run_user('HwHiAiUser', 'HwHiAiUser', USER, GROUP) == result(
        'run_user', 'pass', 'user HwHiAiUser exists and is in group HwHiAiUser')


def test_run_user_secondary_group_passes():
    group = dict(GROUP, gid=1001, members=['root', 'HwHiAiUser'])
    assert check_run_user('HwHiAiUser', 'HwHiAiUser', USER, group)['status'] == 'pass'


def test_run_user_neither_fails():
    assert check_run_user('HwHiAiUser', 'HwHiAiUser', None, None) == result(
        'run_user', 'fail', 'neither user HwHiAiUser nor group HwHiAiUser exists; the NPU driver installer needs both',
        'groupadd HwHiAiUser && ' + ADD_USER)


def test_run_user_group_missing_fails():
    assert check_run_user('HwHiAiUser', 'HwHiAiUser', USER, None) == result(
        'run_user', 'fail', 'group HwHiAiUser does not exist (user HwHiAiUser does)',
        'groupadd HwHiAiUser && usermod -a -G HwHiAiUser HwHiAiUser')


def test_run_user_user_missing_fails():
    assert check_run_user('HwHiAiUser', 'HwHiAiUser', None, GROUP) == result(
        'run_user', 'fail', 'user HwHiAiUser does not exist (group HwHiAiUser does)', ADD_USER)


def test_run_user_not_in_group_fails():
    assert check_run_user('HwHiAiUser', 'HwHiAiUser', USER, dict(GROUP, gid=1001)) == result(
        'run_user', 'fail', 'user HwHiAiUser is not in group HwHiAiUser', 'usermod -a -G HwHiAiUser HwHiAiUser')


# --- NPU PCI devices -----------------------------------------------------------------------------------------

def device(bus_id, device_id='0xd802', family='910B'):
    return {'bus_id': bus_id, 'vendor': '0x19e5', 'device': device_id, 'class': '0x120000', 'chip_family': family}


def test_npu_devices_found_pass():
    devices = [device('0000:c1:00.0'), device('0000:01:00.0'), device('0000:81:00.0', '0xd500', '310P'),
               device('0000:82:00.0', '0xd8ff', None)]
    assert check_npu_devices(devices, '/sys/bus/pci/devices') == result(
        'npu_devices', 'pass', '4 Ascend NPUs on the PCI bus: 1 x 310P (0xd500), 2 x 910B (0xd802), 1 x unknown (0xd8ff)')
    assert check_npu_devices(devices[:1], '/sys/bus/pci/devices')['message'] == (
        '1 Ascend NPU on the PCI bus: 1 x 910B (0xd802)')


def test_npu_devices_none_fail():
    assert check_npu_devices([], '/sys/bus/pci/devices') == result(
        'npu_devices', 'fail', 'no Ascend NPU among the PCI devices in /sys/bus/pci/devices (vendor 0x19e5, class 0x1200)',
        'check that the NPU cards are seated, powered and enabled in the BIOS (lspci -d 19e5: lists them)')


def test_npu_devices_unlistable_warn():
    assert check_npu_devices([], '/x/bus/pci/devices', '/x/bus/pci/devices does not exist') == result(
        'npu_devices', 'warn', 'cannot list PCI devices: /x/bus/pci/devices does not exist',
        "set sysfs_path to where the host's sysfs is mounted, or skip this check")


# --- npu-smi -------------------------------------------------------------------------------------------------

def npu_smi(fixture):
    return {'found': True, 'failure': None, 'info': parse_npu_smi_info(load_fixture(fixture))}


MISSING = {'found': False, 'failure': None, 'info': None}
HEALTHY_IDLE = 'npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt'
BUSY = 'npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'
ALARM = 'npu-smi-info_Ascend950PR_25.7.rc1_3npu_Alarm-health_procs.txt'
DCMI_8005 = describe_npu_smi_failure('npu-smi info', 1, load_fixture('npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt'))
FAILED = {'found': True, 'failure': DCMI_8005, 'info': None}


def test_npu_processes_none_pass():
    assert check_npu_processes(npu_smi(HEALTHY_IDLE)) == result('npu_processes', 'pass',
                                                                'no process holds an NPU (npu-smi info)')


def test_npu_processes_busy_fail():
    found = check_npu_processes(npu_smi(ALARM))
    assert found == result('npu_processes', 'fail', '2 processes still hold NPUs: pid 1530715 (python) on NPU 0, '
                           'pid 1655234 (python) on NPU 0',
                           'stop them (the vLLM service, its containers) first: a driver or firmware change and a new '
                           'vLLM start need free NPUs')


def test_npu_processes_one_unnamed():
    info = {'processes': [{'npu_id': 5, 'chip_id': 0, 'pid': 1079652, 'name': '', 'memory_mb': 1, 'container_pid': None}],
            'chips': [], 'complete': True}
    found = check_npu_processes({'found': True, 'failure': None, 'info': info})
    assert found['message'] == '1 process still holds NPUs: pid 1079652 (no name) on NPU 5'


def test_npu_processes_busy_fixture_lists_all_eight():
    assert check_npu_processes(npu_smi(BUSY))['message'].startswith('8 processes still hold NPUs: pid ')


def test_npu_checks_without_npu_smi_warn_as_normal_before_a_first_install():
    assert check_npu_processes(MISSING) == result(
        'npu_processes', 'warn', 'npu-smi is not installed: the NPU driver is not installed yet, which is normal before a '
        'first install, so the processes holding NPUs cannot be checked', NPU_SMI_MISSING_FIX)
    assert check_npu_health(MISSING) == result(
        'npu_health', 'warn', 'npu-smi is not installed: the NPU driver is not installed yet, which is normal before a '
        'first install, so the NPU health cannot be checked', NPU_SMI_MISSING_FIX)


def test_npu_checks_with_a_failing_npu_smi_fail_with_its_hint():
    fix = 'repair the driver or the access to it as the message says'
    assert check_npu_processes(FAILED) == result('npu_processes', 'fail', DCMI_8005, fix)
    assert check_npu_health(FAILED) == result('npu_health', 'fail', DCMI_8005, fix)
    assert 'HwHiAiUser' in DCMI_8005


def test_npu_health_all_ok_pass():
    assert check_npu_health(npu_smi(BUSY)) == result('npu_health', 'pass', 'all 8 NPU chips are healthy (npu-smi info)')


def test_npu_health_alarm_fail():
    assert check_npu_health(npu_smi(ALARM)) == result(
        'npu_health', 'fail', 'NPU chips not healthy: NPU 0 chip 0: Alarm, NPU 1 chip 0: Alarm',
        'find the cause with npu-smi info -t health -i NPU (Huawei asks for all chips healthy before a driver or '
        'firmware change)')


def test_npu_health_warning_only_warns():
    state = npu_smi(HEALTHY_IDLE)
    state['info']['chips'][0]['health'] = 'Warning'
    found = check_npu_health(state)
    assert (found['status'], found['message']) == ('warn', 'NPU chips not healthy: NPU 0 chip 0: Warning')


INCOMPLETE_FIX = ('run npu-smi info on the host: output that stops short means npu-smi or the driver broke off (see '
                  'dmesg, then run the preflight again); a whole table is a parser bug to report with that output')


def cut_npu_smi(fixture, lines):
    """The state of an npu-smi info whose output stopped after its first ``lines`` lines."""
    text = ''.join(load_fixture(fixture).splitlines(True)[:lines])
    return {'found': True, 'failure': None, 'info': parse_npu_smi_info(text)}


def test_npu_checks_fail_on_a_table_cut_between_chips():
    # The case: 3 of the 8 busy NPUs read, no process table; it used to pass both checks.
    state = cut_npu_smi(BUSY, 15)
    reason = ("the output ends at line 15 before the table does (no process table), so it is incomplete (cut off?): "
              "'+===========================+===============+====================================================+'")
    assert (state['info']['chip_count'], state['info']['incomplete_reason']) == (3, reason)
    assert check_npu_health(state) == result(
        'npu_health', 'fail', 'the NPU health cannot be checked: npu-smi info printed an incomplete table: ' + reason,
        INCOMPLETE_FIX)
    assert check_npu_processes(state) == result(
        'npu_processes', 'fail', 'the processes holding NPUs cannot be checked: npu-smi info printed an incomplete '
        'table: ' + reason, INCOMPLETE_FIX)


def test_npu_processes_fail_when_the_process_table_is_cut_between_npus():
    # 4 of the 8 processes read, each block closed by its border: only the NPUs missing from the list tell.
    state = cut_npu_smi(BUSY, 41)
    assert len(state['info']['processes']) == 4
    assert check_npu_processes(state) == result(
        'npu_processes', 'fail', 'the processes holding NPUs cannot be checked: npu-smi info printed an incomplete '
        "table: the output ends at line 41 before the table does (the process table does not list NPU 4, 5, 6, 7), so "
        "it is incomplete (cut off?): "
        "'+===========================+===============+====================================================+'",
        INCOMPLETE_FIX)


def test_npu_health_without_a_chip_row_fails():
    # A chip table header and nothing after it: a complete table lists at least one chip.
    found = check_npu_health(cut_npu_smi(HEALTHY_IDLE, 6))
    assert found == result(
        'npu_health', 'fail', 'the NPU health cannot be checked: npu-smi info printed an incomplete table: the output '
        "ends at line 6 before the table does (no chip row), so it is incomplete (cut off?): "
        "'+===========================+===============+====================================================+'",
        INCOMPLETE_FIX)


# --- driver version ------------------------------------------------------------------------------------------

def installed_24_1():
    parsed = parse_driver_version_info(load_fixture('driver-version.info_24.1.rc1_mindcluster-doc.txt'), 'version.info')
    return {'version': parsed['version'], 'source': '/usr/local/Ascend/driver/version.info',
            'compatible_firmware': parsed['compatible_firmware']}


def test_driver_version_nothing_installed_nothing_requested():
    assert check_driver_version(None) == result('driver_version', 'pass', 'no NPU driver is installed')


def test_driver_version_first_install():
    assert check_driver_version(None, '24.1.RC1', '7.1.0.11.220') == result(
        'driver_version', 'pass', 'no NPU driver is installed; driver 24.1.RC1 will be a first install; firmware '
        '7.1.0.11.220 cannot be checked against a driver before one is installed')


def test_driver_version_installed_nothing_requested():
    assert check_driver_version(installed_24_1()) == result(
        'driver_version', 'pass', 'NPU driver 24.1.rc1 is installed (/usr/local/Ascend/driver/version.info)')


def test_driver_version_same_and_firmware_in_range():
    assert check_driver_version(installed_24_1(), '24.1.RC1', '7.1.0.11.220') == result(
        'driver_version', 'pass', 'NPU driver 24.1.rc1 is installed, as driver_version asks; firmware 7.1.0.11.220 is '
        'within compatible_version_fw [7.0.0,7.2.99] of driver 24.1.rc1')


def test_driver_version_firmware_out_of_range_fails():
    assert check_driver_version(installed_24_1(), None, '7.5.0.1.129') == result(
        'driver_version', 'fail', 'NPU driver 24.1.rc1 is installed (/usr/local/Ascend/driver/version.info); firmware '
        '7.5.0.1.129 is outside compatible_version_fw [7.0.0,7.2.99] of the installed driver 24.1.rc1 '
        '(/usr/local/Ascend/driver/version.info)',
        'choose a firmware_version within [7.0.0,7.2.99], or first install the driver that goes with firmware 7.5.0.1.129')


def test_driver_version_upgrade_passes_and_defers_the_firmware():
    assert check_driver_version(installed_24_1(), '25.5.0', '7.5.0.1.129') == result(
        'driver_version', 'pass', 'NPU driver 24.1.rc1 is installed; driver_version 25.5.0 is an upgrade; firmware '
        '7.5.0.1.129 cannot be checked against driver 25.5.0 before it is installed')


def test_driver_version_downgrade_warns():
    assert check_driver_version(installed_24_1(), '23.0.rc3') == result(
        'driver_version', 'warn', 'NPU driver 24.1.rc1 is installed, newer than driver_version 23.0.rc3: installing it is '
        'a downgrade', 'set driver_version to 24.1.rc1 or newer, or uninstall the driver before installing an older one')


def test_driver_version_without_firmware_ranges():
    installed = dict(installed_24_1(), compatible_firmware=None)
    assert check_driver_version(installed, None, '7.1.0')['message'].endswith(
        'driver 24.1.rc1 names no compatible firmware range (compatible_version_fw), so firmware 7.1.0 is not checked '
        'against it')


def test_driver_version_with_unreadable_ranges_warns():
    installed = dict(installed_24_1(), compatible_firmware=[{'min': '7.0.0', 'max': 'x'}])
    found = check_driver_version(installed, None, '7.1.0')
    assert found['status'] == 'warn'
    assert "compatible_version_fw [7.0.0,x] in /usr/local/Ascend/driver/version.info cannot be compared: 'x' is not a " \
        'version' in found['message']


def test_driver_version_file_without_a_version_warns():
    installed = {'version': None, 'source': '/usr/local/Ascend/driver/version.info', 'compatible_firmware': None}
    assert check_driver_version(installed) == result(
        'driver_version', 'warn', '/usr/local/Ascend/driver/version.info names no driver version (no Version= line)',
        'check /usr/local/Ascend/driver/version.info; reinstall the driver if it is damaged')


def test_driver_version_options_that_are_not_versions_fail():
    assert check_driver_version(installed_24_1(), 'latest', 'newest') == result(
        'driver_version', 'fail', "driver_version 'latest' is not a version; firmware_version 'newest' is not a version",
        'correct driver_version; correct firmware_version')


# --- compatibility -------------------------------------------------------------------------------------------

def requested(**versions):
    options = dict.fromkeys(('vllm_ascend_version', 'vllm_version', 'cann_version', 'torch_version', 'torch_npu_version',
                             'python_version'))
    options.update(versions)
    return options


def test_compatibility_nothing_to_check():
    assert check_compatibility(requested()) == result(
        'compatibility', 'pass', 'no version requested and no NPU driver installed: nothing to check')


def test_compatibility_driver_only_names_its_newest_row():
    assert check_compatibility(requested(), '24.1.rc1') == result(
        'compatibility', 'pass', 'no vllm-ascend, vLLM, CANN, torch or Python version requested; the newest row the '
        'installed NPU driver 24.1.rc1 runs is ' + ROW_0_11)


def test_compatibility_driver_older_than_every_row_warns():
    assert check_compatibility(requested(), '23.0.rc3') == result(
        'compatibility', 'warn', 'NPU driver 23.0.rc3 is too old for every release of the compatibility set, the oldest '
        'of which, vllm-ascend 0.11.0 (CANN 8.3.RC2), needs 24.1.RC1 or later: upgrade the driver to 24.1.RC1 with '
        'playbooks/upgrade.yml (npu_driver_version)', 'upgrade the NPU driver (driver_version)')


def test_compatibility_supported_row():
    assert check_compatibility(requested(vllm_ascend_version='0.13.0', cann_version='8.5.0', python_version='3.11'),
                               '25.5.0', 'requested') == result(
        'compatibility', 'pass', 'the requested versions are the row %s on the requested NPU driver 25.5.0' % ROW_0_13)


def test_compatibility_supported_row_without_a_driver():
    assert check_compatibility(requested(cann_version='8.5.0')) == result(
        'compatibility', 'pass', 'the requested versions are the row %s (no NPU driver installed or requested to check)'
        % ROW_0_13)


def test_compatibility_cann_too_new_for_the_driver_fails_with_both_ways_out():
    assert check_compatibility(requested(vllm_ascend_version='0.13.0'), '24.1.rc1') == result(
        'compatibility', 'fail', 'NPU driver 24.1.rc1 is too old for vllm-ascend 0.13.0 (CANN 8.5.0), which needs 25.5 '
        'or later: upgrade the driver to 25.5 with playbooks/upgrade.yml (npu_driver_version), or choose vllm-ascend '
        '0.11.0 (CANN 8.3.RC2), the newest release driver 24.1.rc1 runs (' + RELEASE_VARIABLES + ')',
        'use the newest row the NPU driver 24.1.rc1 runs: %s; or install NPU driver 25.5 or newer (driver_version) for '
        'vllm-ascend 0.13.0' % ROW_0_11)


def test_compatibility_mismatching_row_fails():
    assert check_compatibility(requested(vllm_ascend_version='0.18.0', cann_version='8.5.0'), '25.5') == result(
        'compatibility', 'fail', 'CANN 8.5.0 does not belong with vllm-ascend 0.18.0, whose row has CANN 8.5.1',
        'use the newest row the NPU driver 25.5 runs: ' + ROW_0_18)


def test_compatibility_mismatch_without_a_driver_points_at_the_rows():
    assert check_compatibility(requested(vllm_ascend_version='0.18.0', torch_version='2.8.0')) == result(
        'compatibility', 'fail', 'torch 2.8.0 does not belong with vllm-ascend 0.18.0, whose row has torch 2.9.0',
        'request one whole row of the compatibility set (the kunpeng_ascend.vllm.ascend_compat_rows filter lists them)')


# A site's rows (ascend_compat_site_rows): the driver the 950PR products need for vllm-ascend 0.30.0, which the
# built-in row (26.2.RC1, for A2 and A3) cannot say, and a release the collection has no row of.
SITE_0_30 = {'vllm_ascend': '0.30.0', 'vllm': '0.30.0', 'cann': '9.2.1', 'driver': '25.6.RC3.1'}
SITE_0_29 = {'vllm_ascend': '0.29.0', 'vllm': '0.29.0', 'cann': '9.2.0', 'driver': '25.6.RC3.1'}
SITE_ROW_0_30 = ('vllm-ascend 0.30.0 (site row) (vLLM 0.30.0, Python unpublished, CANN 9.2.1, torch unpublished, '
                 'torch_npu unpublished, triton-ascend unpublished, NPU driver >= 25.6.RC3.1, image '
                 'quay.io/ascend/vllm-ascend:v0.30.0)')


def test_compatibility_of_a_site_row_passes_and_names_it():
    request = requested(vllm_ascend_version='0.30.0', cann_version='9.2.1')
    assert check_compatibility(request, '25.6.RC3.1', 'requested')['status'] == 'fail'
    assert check_compatibility(request, '25.6.RC3.1', 'requested', with_site_rows([SITE_0_30])) == result(
        'compatibility', 'pass', 'the requested versions are the row %s on the requested NPU driver 25.6.RC3.1'
        % SITE_ROW_0_30)


def test_compatibility_driver_only_names_the_newest_site_row_it_runs():
    assert check_compatibility(requested(), '25.6.RC3.1', 'requested', with_site_rows([SITE_0_29])) == result(
        'compatibility', 'pass', 'no vllm-ascend, vLLM, CANN, torch or Python version requested; the newest row the '
        'requested NPU driver 25.6.RC3.1 runs is vllm-ascend 0.29.0 (site row) (vLLM 0.29.0, Python unpublished, CANN '
        '9.2.0, torch unpublished, torch_npu unpublished, triton-ascend unpublished, NPU driver >= 25.6.RC3.1, image '
        'quay.io/ascend/vllm-ascend:v0.29.0)')


def test_compatibility_options_that_are_not_versions_fail_naming_the_option():
    assert check_compatibility(requested(cann_version='8.5', torch_version='two'), 'n/a') == result(
        'compatibility', 'fail', "torch_version 'two' is not a version; the installed NPU driver version 'n/a' is not a "
        'version', 'correct the version options')


# --- summary -------------------------------------------------------------------------------------------------

CHECKS = [result('architecture', 'pass', 'aarch64'),
          result('run_user', 'fail', 'no user', 'add it'),
          result('npu_health', 'warn', 'no npu-smi', 'none')]


def test_summary_counts_and_names():
    report = summarize(CHECKS, 'never')
    assert report == {'counts': {'pass': 1, 'warn': 1, 'fail': 1}, 'failed_checks': ['run_user'],
                      'warned_checks': ['npu_health'], 'summary': '3 checks: 1 pass, 1 warn, 1 fail', 'message': None}


def test_summary_fail_on_fail_names_the_failed_checks_and_fixes():
    assert summarize(CHECKS, 'fail')['message'] == ('1 of 3 preflight checks did not pass (fail_on=fail): run_user: no user '
                                                    '(fix: add it)')


def test_summary_fail_on_warn_includes_warnings_in_check_order():
    assert summarize(CHECKS, 'warn')['message'] == ('2 of 3 preflight checks did not pass (fail_on=warn): run_user: no user '
                                                    '(fix: add it); npu_health: no npu-smi (fix: none)')


def test_summary_all_pass_has_no_message():
    assert summarize(CHECKS[:1], 'warn')['message'] is None


def test_check_names_are_the_documented_order():
    assert CHECK_NAMES == ('architecture', 'kernel_headers', 'build_tools', 'package_database', 'package_states',
                           'disk_space', 'run_user', 'npu_devices', 'npu_processes', 'npu_health', 'driver_version',
                           'compatibility')


@pytest.mark.parametrize('checks, skip, names', [
    (None, [], list(CHECK_NAMES)),
    (None, ['npu_processes', 'npu_health'], [name for name in CHECK_NAMES if not name.startswith('npu_')] + ['npu_devices']),
    (['compatibility', 'architecture'], [], ['architecture', 'compatibility']),
    (['compatibility', 'architecture'], ['architecture'], ['compatibility']),
    ([], [], []),
])
def test_selected_checks_keep_the_module_order(checks, skip, names):
    assert selected_checks(checks, skip) == [name for name in CHECK_NAMES if name in names]
