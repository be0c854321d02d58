# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ascend_doctor's main() against the fake host: every command answered by the fake host, every file planted in its
scratch root, /proc and cgroup trees."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _doctor, _doctor_host
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import parse_npu_smi_info
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import ascend_doctor
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    TIMEOUT,
    ExitJson,
    FailJson,
    load_fixture,
    run_main,
)

NPU_SMI = '/usr/local/bin/npu-smi'
HCCN_TOOL = '/usr/local/Ascend/driver/tools/hccn_tool'
SYSTEMCTL = '/usr/bin/systemctl'
JOURNALCTL = '/usr/bin/journalctl'
DOCKER = '/usr/bin/docker'
IDLE_910B4 = 'npu-smi-info_910A-as-910B_24.1.0_8npu_noproc_deepseek-doc.txt'
BUSY_910B3 = 'npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'
ALARM_950 = 'npu-smi-info_Ascend950PR_25.7.rc1_3npu_Alarm-health_procs.txt'
TLS_DOC = 'hccn_tool-tls-g_dev0_pub-ca1-ca2-crl_crl-near-expiration_hccn-doc.txt'
SHOW = ('systemctl', 'show', '--property=' + ','.join(_doctor_host.UNIT_PROPERTIES), '--')
JOURNAL = ('journalctl', '--unit=vllm.service', '--since', '1 hour ago', '-o', 'cat', '--no-pager', '-q', '-n', '5000')
ACTIVE = ('Id=vllm.service\nLoadState=loaded\nActiveState=active\nSubState=running\nNRestarts=0\nResult=success\n'
          'MainPID=4242\nControlGroup=/system.slice/vllm.service\n')
DOCKER_ACTIVE = ('Id=docker.service\nLoadState=loaded\nActiveState=active\nSubState=running\nNRestarts=0\n'
                 'Result=success\nMainPID=77\nControlGroup=/system.slice/docker.service\n')
SYSCTL = 'vm.nr_hugepages = 1024\nvm.swappiness = 0\n'
TMPFILES = 'w /sys/kernel/mm/transparent_hugepage/enabled - - - - always\n'


@pytest.fixture
def host(fake_host, tmp_path, monkeypatch):
    """A healthy native node: driver 24.1.rc1 and firmware files, an idle 8-NPU table, the service active, the
    journal quiet, the tuning as persisted."""
    for name, path in (('npu-smi', NPU_SMI), ('systemctl', SYSTEMCTL), ('journalctl', JOURNALCTL)):
        fake_host.on_path[name] = path
    fake_host.executables.update([NPU_SMI, HCCN_TOOL])
    fake_host.write('/usr/local/Ascend/driver/version.info', load_fixture('driver-version.info_24.1.rc1_mindcluster-doc.txt'))
    fake_host.write('/usr/local/Ascend/firmware/version.info',
                    load_fixture('firmware-version.info_7.1.0.11.220_mindcluster-doc.txt'))
    fake_host.write('/etc/sysctl.d/90-kunpeng-ascend-vllm.conf', SYSCTL)
    fake_host.write('/etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf', TMPFILES)
    fake_host.proc = str(tmp_path / 'proc')
    fake_host.cgroup = str(tmp_path / 'cgroup')
    fake_host.write('/sys/vm/nr_hugepages', '1024\n', under=fake_host.proc)
    fake_host.write('/sys/vm/swappiness', '0\n', under=fake_host.proc)
    fake_host.write('/meminfo', 'MemTotal:  1000 kB\nHugePages_Total:    1024\n', under=fake_host.proc)
    fake_host.write('/kernel/mm/transparent_hugepage/enabled', '[always] madvise never\n', under=fake_host.sysfs)
    fake_host.write('/system.slice/vllm.service/cgroup.procs', '4242\n4300\n', under=fake_host.cgroup)
    fake_host.answers[(NPU_SMI, 'info')] = (0, load_fixture(IDLE_910B4), '')
    fake_host.answers[(SYSTEMCTL,) + SHOW[1:] + ('vllm.service',)] = (0, ACTIVE, '')
    fake_host.answers[(JOURNALCTL,) + JOURNAL[1:]] = (0, 'INFO: started\nINFO: 200 OK\n', '')
    monkeypatch.setattr(_doctor_host, 'PROC', str(tmp_path / 'host-proc'))
    return fake_host


def run_module(host, args=None, outcome=ExitJson):
    base = {'root': host.root, 'proc_path': host.proc, 'sysfs_path': host.sysfs, 'cgroup_path': host.cgroup,
            'service_mode': 'native', 'vllm_ascend_version': 'v0.7.3'}
    # An argument given as None is one left out (the role omits its null variables).
    merged = dict(base, **(args or {}))
    return run_main(ascend_doctor.main, dict((key, value) for key, value in merged.items() if value is not None), outcome)


def statuses(result):
    return dict((item['check'], item['status']) for item in result['findings'])


def test_a_healthy_node(host):
    result = run_module(host)
    assert result['changed'] is False
    assert (result['status'], result['mode']) == ('healthy', 'native')
    assert statuses(result) == {'versions': 'ok', 'npu_health': 'ok', 'npu_memory': 'ok', 'npu_temperature': 'ok',
                                'npu_processes': 'ok', 'tuning': 'ok', 'container_runtime': 'skipped', 'service': 'ok',
                                'restart_storm': 'ok', 'journal': 'ok', 'network': 'skipped'}
    assert [item['check'] for item in result['findings']] == list(_doctor.CHECKS)
    # Every command under the time limit, each tool once.
    assert all(argv[0] == TIMEOUT for argv in host.commands())
    assert [argv[3] for argv in host.commands()] == [NPU_SMI, SYSTEMCTL, JOURNALCTL]
    host.warn.assert_not_called()


def test_check_mode_reads_the_same(host):
    assert run_module(host, {'_ansible_check_mode': True}) == run_module(host)


def test_versions_against_the_release(host):
    result = run_module(host, {'vllm_ascend_version': '0.13.0'})
    assert (result['status'], statuses(result)['versions']) == ('broken', 'fail')
    assert 'vllm-ascend 0.13.0 does not fit NPU driver 24.1.rc1' in result['findings'][0]['summary']


# vllm-ascend 0.13.0 as a site validated it on driver 24.1.RC1 (the built-in row asks for 25.5).
SITE_0_13 = {'vllm_ascend': '0.13.0', 'vllm': '0.13.0', 'python': '>=3.10,<3.12', 'cann': '8.5.0', 'torch': '2.8.0',
             'torch_npu': '2.8.0.post2', 'triton_ascend': '3.2.0', 'driver': '24.1.RC1'}


def test_versions_against_a_site_row(host):
    result = run_module(host, {'vllm_ascend_version': '0.13.0', 'compat_site_rows': [SITE_0_13]})
    versions = result['findings'][0]
    assert versions['status'] == 'ok'
    assert versions['summary'].startswith('driver 24.1.rc1, firmware 7.1.0.11.220, CANN -, vllm-ascend 0.13.0: a '
                                          'supported combination, by the row vllm-ascend 0.13.0 (site row) (vLLM 0.13.0, ')
    assert versions['details']['row']['source'] == 'site'


def test_a_malformed_site_row_fails_before_any_command_naming_the_inventory_variable(host):
    result = run_module(host, {'compat_site_rows': [SITE_0_13, {'vllm_ascend': '0.30.0', 'vllm': '0.30.0'}]}, FailJson)
    assert result['msg'] == 'ascend_compat_site_rows[1].cann is missing: every row names its CANN version'
    assert host.commands() == []


def test_an_unhealthy_chip_names_its_error_code_and_foreign_processes_fail(host):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(ALARM_950), '')
    host.answers[(NPU_SMI, 'info', '-t', 'health', '-i', '0')] = (
        0, '        Health Status                  : Alarm\n        Error Code                     : 80E18005\n', '')
    host.answers[(NPU_SMI, 'info', '-t', 'health', '-i', '1')] = (0, '        Health Status : Alarm\n        Error Code : NA\n', '')
    result = run_module(host)
    found = dict((item['check'], item) for item in result['findings'])
    assert found['npu_health']['summary'] == '2 of 3 NPU chips are not healthy: NPU 0: Alarm (error code 80E18005), NPU 1: Alarm'
    assert found['npu_processes']['status'] == 'fail'
    assert '1530715 (python, NPU 0), 1655234 (python, NPU 0)' in found['npu_processes']['summary']


def test_a_child_of_the_service_is_not_foreign(host, tmp_path):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(ALARM_950), '')
    for npu in ('0', '1'):
        host.answers[(NPU_SMI, 'info', '-t', 'health', '-i', npu)] = (0, '', '')
    host.write('/1530715/stat', '1530715 (python) S 4300 1 1\n', under=str(tmp_path / 'host-proc'))
    host.write('/1655234/stat', '1655234 (python) S 1530715 1 1\n', under=str(tmp_path / 'host-proc'))
    result = run_module(host)
    assert statuses(result)['npu_processes'] == 'ok'
    host.write('/1655234/stat', '1655234 (python) S 1 1 1\n', under=str(tmp_path / 'host-proc'))
    assert statuses(run_module(host))['npu_processes'] == 'fail'


def test_npu_smi_missing_or_failing_is_a_finding(host):
    del host.on_path['npu-smi']
    host.executables.discard(NPU_SMI)
    result = run_module(host, {'service_mode': 'auto'})
    assert (statuses(result)['npu_health'], result['mode']) == ('fail', 'native')
    assert 'npu-smi was not found' in result['findings'][1]['summary']
    host.on_path['npu-smi'] = NPU_SMI
    host.answers[(NPU_SMI, 'info')] = (1, load_fixture('npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt'), '')
    failed = run_module(host)
    assert statuses(failed)['npu_health'] == 'fail' and 'HwHiAiUser' in failed['findings'][1]['summary']
    assert statuses(failed)['npu_processes'] == 'skipped'


def test_tuning_drift_on_the_planted_tree(host):
    host.write('/sys/vm/swappiness', '60\n', under=host.proc)
    host.write('/kernel/mm/transparent_hugepage/enabled', 'always [madvise] never\n', under=host.sysfs)
    result = run_module(host, {'expected_sysctl': {'vm.nr_hugepages': 2048}})
    tuning = [item for item in result['findings'] if item['check'] == 'tuning'][0]
    assert (result['status'], tuning['status']) == ('degraded', 'warn')
    assert sorted(item['key'] for item in tuning['details']['drift']) == [
        '/sys/kernel/mm/transparent_hugepage/enabled', 'vm.nr_hugepages', 'vm.swappiness']


def test_service_down_and_journal_errors(host):
    host.answers[(SYSTEMCTL,) + SHOW[1:] + ('vllm.service',)] = (
        0, ACTIVE.replace('ActiveState=active', 'ActiveState=failed').replace('MainPID=4242', 'MainPID=0'), '')
    host.answers[(JOURNALCTL,) + JOURNAL[1:]] = (0, 'EI0002: HCCL timeout\nRuntimeError: NPU out of memory.\n', '')
    result = run_module(host)
    assert (statuses(result)['service'], statuses(result)['journal']) == ('fail', 'fail')


def test_container_mode_checks_the_engine_unit(host):
    host.on_path['docker'] = DOCKER
    show = (SYSTEMCTL,) + SHOW[1:] + ('vllm.service', 'docker.service')
    host.answers[show] = (0, ACTIVE + '\n' + DOCKER_ACTIVE, '')
    assert statuses(run_module(host, {'service_mode': 'container'}))['container_runtime'] == 'ok'
    host.answers[show] = (0, ACTIVE + '\n' + DOCKER_ACTIVE.replace('ActiveState=active', 'ActiveState=inactive'), '')
    assert statuses(run_module(host, {'service_mode': 'container'}))['container_runtime'] == 'fail'


def test_a_cpu_host_skips_the_npu_checks(host):
    del host.on_path['npu-smi']
    host.executables.discard(NPU_SMI)
    os.remove(host.path('/usr/local/Ascend/driver/version.info'))
    result = run_module(host, {'service_mode': 'auto'})
    assert (result['status'], result['mode']) == ('healthy', 'native')
    assert [item['check'] for item in result['findings'] if item['status'] == 'skipped'] == [
        'versions', 'npu_health', 'npu_memory', 'npu_temperature', 'npu_processes', 'container_runtime', 'network']
    # In container mode the same host is broken: the service needs NPUs there.
    assert statuses(run_module(host, {'service_mode': 'container', 'container_engine': 'podman'}))['versions'] == 'fail'


def test_tools_missing_are_findings(host):
    del host.on_path['systemctl']
    del host.on_path['journalctl']
    host.executables.discard(HCCN_TOOL)
    result = run_module(host, {'check_network': True})
    assert statuses(result)['service'] == 'fail' and 'systemctl was not found' in result['findings'][7]['summary']
    assert statuses(result)['journal'] == 'warn'
    assert statuses(result)['network'] == 'fail' and 'hccn_tool was not found' in result['findings'][-1]['summary']


def test_network_per_device(host):
    for device in range(8):
        host.answers[(HCCN_TOOL, '-i', str(device), '-net_health', '-g')] = (0, 'net health status: Success\n', '')
        host.answers[(HCCN_TOOL, '-i', str(device), '-link', '-g')] = (0, 'link status: %s\n' % ('DOWN' if device == 5 else 'UP'), '')
        host.answers[(HCCN_TOOL, '-i', str(device), '-tls', '-g')] = (0, load_fixture(TLS_DOC).replace(
            'Mon Mar  2 03:10:27 2026', 'Mon Mar  2 03:10:27 2099').replace('status[1]', 'status[0]'), '')
    result = run_module(host, {'check_network': True})
    network = result['findings'][-1]
    assert (network['status'], network['summary']) == ('fail', '1 of 8 NPU NICs are not healthy: device 5: link DOWN')
    host.answers[(HCCN_TOOL, '-i', '5', '-link', '-g')] = (0, 'link status: UP\n', '')
    assert run_module(host, {'check_network': True})['findings'][-1]['status'] == 'ok'


def test_bad_journal_lines(host):
    assert 'journal_lines' in run_module(host, {'journal_lines': 0}, FailJson)['msg']


def test_cgroup_v1_layout(host, tmp_path):
    host.cgroup = str(tmp_path / 'cgroup-v1')
    host.write('/systemd/system.slice/vllm.service/cgroup.procs', '1530715\n1655234\n', under=host.cgroup)
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(BUSY_910B3), '')
    result = run_module(host)
    assert os.path.isdir(host.cgroup)
    assert statuses(result)['npu_processes'] == 'fail'  # the busy sample's PIDs are others
    host.write('/systemd/system.slice/vllm.service/cgroup.procs',
               '\n'.join(str(process['pid']) for process in parse_npu_smi_info(load_fixture(BUSY_910B3))['processes']),
               under=host.cgroup)
    assert statuses(run_module(host))['npu_processes'] == 'ok'


@pytest.mark.parametrize('args, message', [
    ({'service_name': '-H x'}, 'the service_name \'-H x\' starts with "-", which systemd tools would read as an option'),
    ({'service_name': 'a;b'}, "the service_name 'a;b' holds ';'"),
    ({'expected_sysctl': {'../../etc/shadow': 1}}, 'a key of expected_sysctl must be a sysctl name'),
    ({'expected_sys': {'../../etc/shadow': 'x'}}, 'a key of expected_sys must be a path under /sys'),
    ({'sysctl_file': '/etc/shadow'}, 'sysctl_file must be a .conf file directly in /etc/sysctl.d'),
])
def test_inputs_out_of_bounds_are_refused_before_any_command(host, args, message):
    assert message in run_module(host, args, FailJson)['msg']
    assert host.commands() == []


def test_the_deployment_record_says_which_service_and_release(host):
    host.write('/etc/kunpeng-ascend-vllm/services/ds.json', json.dumps({
        'schema': 'kunpeng_ascend.vllm/deployment/1', 'name': 'ds', 'unit': 'ds.service', 'mode': 'native',
        'container_engine': None, 'container_name': None, 'image': None, 'vllm_ascend': '0.13.0',
        'endpoint': 'http://127.0.0.1:8000', 'served_model_name': 'ds', 'model': '/data/ds', 'npus': [0]}))
    host.answers[(SYSTEMCTL,) + SHOW[1:] + ('ds.service',)] = (0, ACTIVE.replace('vllm.service', 'ds.service'), '')
    host.answers[(JOURNALCTL, '--unit=ds.service') + JOURNAL[2:]] = (0, '', '')
    result = run_module(host, {'vllm_ascend_version': None, 'service_mode': None})
    assert (result['service']['unit'], result['service']['vllm_ascend']) == ('ds.service', '0.13.0')
    assert 'vllm-ascend 0.13.0 does not fit NPU driver 24.1.rc1' in result['findings'][0]['summary']
    host.write('/etc/kunpeng-ascend-vllm/services/other.json', '{}')
    assert 'set service_name (doctor_service_name)' in run_module(host, {'service_name': None}, FailJson)['msg']


def test_a_sys_glob_match_that_leaves_sysfs_is_not_read(host, tmp_path):
    outside = tmp_path / 'elsewhere'
    outside.mkdir()
    (outside / 'enabled').write_text('secret\n')
    os.makedirs(os.path.join(host.sysfs, 'kernel/mm/escape'))
    os.symlink(str(outside / 'enabled'), os.path.join(host.sysfs, 'kernel/mm/escape/enabled'))
    result = run_module(host, {'expected_sys': {'kernel/mm/*/enabled': 'never'}})
    tuning = [item for item in result['findings'] if item['check'] == 'tuning'][0]
    assert 'secret' not in json.dumps(tuning)
    assert any('outside %s' % host.sysfs in call.args[0] for call in host.warn.call_args_list)


def test_the_compliance_findings_beside_the_health_verdict(host):
    """Secure boot from the planted EFI variable, the routes through the ip option (a real default route), the TLS
    key the record names; the health status stays what the findings say."""
    ip = '/opt/tools/ip'
    host.executables.add(ip)
    host.write('/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c', b'\x06\x00\x00\x00\x01',
               under=host.sysfs)
    route = load_fixture('ip-j-route-get_iproute2-6.1_ipv4-default-via-gateway.txt')
    host.answers[(ip, '-j', 'route', 'get', '1.1.1.1')] = (0, route, '')
    result = run_module(host, {'site_offline': True, 'public_addresses': ['1.1.1.1'], 'ip_path': ip})
    assert [(item['id'], item['status']) for item in result['compliance']] == [
        ('secure_boot', 'pass'), ('offline_routes', 'fail'), ('tls_key', 'unknown'), ('model_manifest', 'unknown')]
    # Under the timeout, as every command.
    assert [[ip, '-j', 'route', 'get', '1.1.1.1']] == [list(call[-5:]) for call in host.commands() if ip in call]
    assert result['status'] == 'healthy'
