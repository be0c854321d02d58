# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_doctor: each check's pass and fail path, on the real npu-smi samples where a check reads npu-smi."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _doctor, _failure_catalogue
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import with_site_rows
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._hccn_tool import parse_status, parse_tls, tls_expiry
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import parse_show
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import (
    parse_npu_smi_info,
    parse_npu_smi_key_values,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

ALARM_950 = 'npu-smi-info_Ascend950PR_25.7.rc1_3npu_Alarm-health_procs.txt'
BUSY_910B3 = 'npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'
IDLE_910B4 = 'npu-smi-info_910A-as-910B_24.1.0_8npu_noproc_deepseek-doc.txt'


def info(name):
    return parse_npu_smi_info(load_fixture(name))


# --- the verdict ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('statuses, verdict', [
    (['ok', 'skipped'], 'healthy'), (['ok', 'warn', 'skipped'], 'degraded'), (['warn', 'fail', 'ok'], 'broken'), ([], 'healthy')])
def test_overall(statuses, verdict):
    assert _doctor.overall([_doctor.finding('x', status, 's') for status in statuses]) == verdict


def test_a_finding_has_one_of_the_statuses():
    with pytest.raises(ValueError):
        _doctor.finding('x', 'bad', 's')


def test_order_follows_the_checks():
    shuffled = [_doctor.finding(name, 'ok', name) for name in reversed(_doctor.CHECKS)]
    assert [item['check'] for item in _doctor.order(shuffled)] == list(_doctor.CHECKS)


# --- versions ------------------------------------------------------------------------------------------------------

def test_versions_ok_for_a_supported_pair():
    result = _doctor.check_versions('24.1.rc1', '7.5.0.3.220', None, '0.7.3', 'container')
    assert result['status'] == 'ok'
    assert result['summary'] == 'driver 24.1.rc1, firmware 7.5.0.3.220, CANN -, vllm-ascend 0.7.3: a supported combination'
    assert result['fix'] is None


def test_versions_fail_names_the_row_that_fits_the_driver():
    result = _doctor.check_versions('24.1.rc1', '7.5.0.3.220', None, '0.13.0', 'container')
    assert result['status'] == 'fail'
    assert result['summary'].startswith('vllm-ascend 0.13.0 does not fit NPU driver 24.1.rc1: ')
    assert 'vllm-ascend 0.11.0 with CANN 8.3.RC2 (quay.io/ascend/vllm-ascend:v0.11.0)' in result['fix']
    assert 'vllm_service_vllm_ascend_version' in result['fix']
    assert result['details']['suggestion']['vllm_ascend'] == '0.11.0'


def test_versions_fail_without_a_driver_and_warn_without_a_release():
    assert _doctor.check_versions(None, None, None, '0.7.3')['status'] == 'fail'
    unknown = _doctor.check_versions('24.1.rc1', '7.5.0.3.220', None, None)
    assert unknown['status'] == 'warn'
    assert 'vllm_service_vllm_ascend_version' in unknown['fix']


def test_versions_warn_on_a_native_cann_of_another_row_and_without_firmware():
    cann = _doctor.check_versions('24.1.rc1', '7.5.0.3.220', '8.0.0', '0.7.3', 'native')
    assert cann['status'] == 'warn' and 'CANN 8.0.0' in cann['summary'] and 'Install CANN 8.1.RC1' in cann['fix']
    assert _doctor.check_versions('24.1.rc1', None, None, '0.7.3')['status'] == 'warn'


def test_versions_under_a_waiver_warn_with_its_reason_and_expiry_and_an_expired_one_fails():
    waiver = {'reason': 'CHG-4711: validated on two A2 nodes', 'expires': '2027-01-31'}
    waived = _doctor.check_versions('24.1.rc1', '7.5.0.3.220', None, '0.31.0', 'container', waiver=waiver,
                                    today=datetime.date(2026, 12, 1))
    assert waived['status'] == 'warn'
    assert waived['summary'].startswith('vllm-ascend 0.31.0 on NPU driver 24.1.rc1 is outside the compatibility set and '
                                        'runs under a waiver until 2027-01-31 (reason: CHG-4711: validated on two A2 '
                                        'nodes): vllm-ascend 0.31.0 is in no row')
    assert waived['details']['waiver']['reason'] == waiver['reason']
    assert 'renew the waiver (ascend_compat_waiver)' in waived['fix']
    expired = _doctor.check_versions('24.1.rc1', '7.5.0.3.220', None, '0.31.0', 'container', waiver=waiver,
                                     today=datetime.date(2027, 2, 1))
    assert expired['status'] == 'fail' and 'the waiver expired on 2027-01-31' in expired['summary']
    assert expired['details']['waiver'] is None


# A site's rows (ascend_compat_site_rows): vllm-ascend 0.13.0 validated on driver 24.1.RC1 (the built-in row asks for
# 25.5), and a release the collection has no row of, 0.29.0 on the driver 25.6.RC3.1 of the 950PR products.
SITE_0_13 = {'vllm_ascend': '0.13.0', 'vllm': '0.13.0', 'python': '>=3.10,<3.12', 'cann': '8.5.0', 'torch': '2.8.0',
             'torch_npu': '2.8.0.post2', 'triton_ascend': '3.2.0', 'driver': '24.1.RC1'}
SITE_0_29 = {'vllm_ascend': '0.29.0', 'vllm': '0.29.0', 'cann': '9.2.0', 'driver': '25.6.RC3.1'}


def test_versions_of_a_site_row_are_supported_and_name_the_row():
    rows = with_site_rows([SITE_0_13])
    assert _doctor.check_versions('24.1.rc1', '7.5.0.3.220', None, '0.13.0', 'container')['status'] == 'fail'
    result = _doctor.check_versions('24.1.rc1', '7.5.0.3.220', None, '0.13.0', 'container', rows=rows)
    assert result['status'] == 'ok'
    assert result['summary'] == (
        'driver 24.1.rc1, firmware 7.5.0.3.220, CANN -, vllm-ascend 0.13.0: a supported combination, by the row '
        'vllm-ascend 0.13.0 (site row) (vLLM 0.13.0, Python >=3.10,<3.12, CANN 8.5.0, torch 2.8.0, torch_npu 2.8.0.post2, '
        'triton-ascend 3.2.0, NPU driver >= 24.1.RC1, image quay.io/ascend/vllm-ascend:v0.13.0)')
    assert result['details']['row']['source'] == 'site'
    # A built-in row stays as it was said.
    assert _doctor.check_versions('24.1.rc1', '7.5.0.3.220', None, '0.7.3', 'container', rows=rows)['summary'] == \
        'driver 24.1.rc1, firmware 7.5.0.3.220, CANN -, vllm-ascend 0.7.3: a supported combination'


def test_versions_fix_and_cann_warning_name_the_site_row():
    failed = _doctor.check_versions('25.6.RC3.1', '7.8.0.5.216', None, '0.30.0', 'container',
                                    rows=with_site_rows([SITE_0_29]))
    assert failed['status'] == 'fail'
    assert 'or choose vllm-ascend 0.29.0 (site row) (CANN 9.2.0), the newest release driver 25.6.RC3.1 runs' \
        in failed['summary']
    assert failed['fix'].startswith('Use the row that fits driver 25.6.RC3.1: vllm-ascend 0.29.0 (site row) with CANN '
                                    '9.2.0 (quay.io/ascend/vllm-ascend:v0.29.0); ')
    cann = _doctor.check_versions('24.1.rc1', '7.5.0.3.220', '8.3.RC2', '0.13.0', 'native', rows=with_site_rows([SITE_0_13]))
    assert cann['status'] == 'warn'
    assert cann['fix'].startswith('Install CANN 8.5.0, the CANN of vllm-ascend 0.13.0 (site row) (cann_version, ')


def test_npu_health_ok_on_a_healthy_table():
    result = _doctor.check_npu_health(info(BUSY_910B3))
    assert (result['status'], result['summary']) == ('ok', 'all 8 NPU chips are healthy')


def test_npu_health_fails_per_unhealthy_chip_with_its_error_code():
    sections = parse_npu_smi_key_values('        Health Status                  : Alarm\n'
                                        '        Error Code                     : 80E18005\n')
    result = _doctor.check_npu_health(info(ALARM_950), {0: _doctor.health_error_codes(sections)})
    assert result['status'] == 'fail'
    assert result['summary'] == ('2 of 3 NPU chips are not healthy: NPU 0: Alarm (error code 80E18005), NPU 1: Alarm')
    assert 'npu-smi info -t health -i 0' in result['fix']


def test_npu_health_fails_on_a_cut_table_and_when_npu_smi_does_not_answer():
    cut = parse_npu_smi_info(''.join(load_fixture(BUSY_910B3).splitlines(True)[:15]))
    assert _doctor.check_npu_health(cut)['status'] == 'fail'
    findings = _doctor.npu_smi_unavailable('npu-smi info failed (rc=1): dcmi model initialized failed')
    assert [(item['check'], item['status']) for item in findings] == [
        ('npu_health', 'fail'), ('npu_memory', 'skipped'), ('npu_temperature', 'skipped'), ('npu_processes', 'skipped')]
    assert 'dcmi model initialized failed' in findings[0]['summary']


def test_npu_memory_warns_over_the_threshold():
    assert _doctor.check_npu_memory(info(IDLE_910B4), 97.0)['status'] == 'ok'
    busy = _doctor.check_npu_memory(info(BUSY_910B3), 90.0)
    assert busy['status'] == 'warn'
    assert 'NPU 0 chip 0 at 91.1 % (59718 of 65536 MB)' in busy['summary']


def test_npu_temperature_warns_over_the_threshold():
    assert _doctor.check_npu_temperature(info(ALARM_950), 85)['status'] == 'ok'
    hot = _doctor.check_npu_temperature(info(ALARM_950), 65)
    assert (hot['status'], hot['summary']) == ('warn', 'NPU chips over 65 C: NPU 0 at 71 C')


def test_npu_processes_of_the_service_and_its_children_are_fine():
    processes = info(ALARM_950)['processes']
    assert _doctor.check_npu_processes(processes, {1530715, 1655234}, unit='vllm.service')['status'] == 'ok'
    child = _doctor.check_npu_processes(processes, {100}, {1530715: [100], 1655234: [1530715, 100]}, 'vllm.service')
    assert (child['status'], child['summary']) == ('ok', '2 NPU process(es), all of vllm.service')


def test_npu_processes_fail_names_the_foreign_pids():
    result = _doctor.check_npu_processes(info(ALARM_950)['processes'], {1530715}, unit='vllm.service')
    assert result['status'] == 'fail'
    assert result['summary'] == '1 process(es) not of vllm.service hold NPUs: 1655234 (python, NPU 0)'
    assert 'kill 1655234' in result['fix'] and 'vllm_service_npus' in result['fix']


# --- tuning --------------------------------------------------------------------------------------------------------

SYSCTL = '# managed\nvm.nr_hugepages = 1024\nvm.swappiness = 0\nkernel.numa_balancing = 0\n'
TMPFILES = ('# managed\nw /sys/kernel/mm/transparent_hugepage/enabled - - - - always\n'
            'w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - performance\n')
SOURCES = {'sysctl': '/etc/sysctl.d/90-kunpeng-ascend-vllm.conf', 'tmpfiles': '/etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf'}


def live(**changes):
    values = {'sysctl': {'vm.nr_hugepages': '1024', 'vm.swappiness': '0', 'kernel.numa_balancing': '0'},
              'sys': {'kernel/mm/transparent_hugepage/enabled': 'always'}}
    for key, value in changes.items():
        values['sys' if '/' in key else 'sysctl'][key] = value
    return values


def test_tuning_parsers():
    assert _doctor.parse_sysctl_conf(SYSCTL + '-net.core.somaxconn=  4096 \n') == {
        'vm.nr_hugepages': '1024', 'vm.swappiness': '0', 'kernel.numa_balancing': '0', 'net.core.somaxconn': '4096'}
    assert _doctor.parse_tmpfiles_writes(TMPFILES) == {
        '/sys/kernel/mm/transparent_hugepage/enabled': 'always',
        '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor': 'performance'}
    assert _doctor.sysfs_value('always [madvise] never\n') == 'madvise'
    assert _doctor.parse_meminfo('MemTotal:  1000 kB\nHugePages_Total:    512\n') == {'MemTotal': 1000, 'HugePages_Total': 512}


def test_tuning_ok_when_live_matches_the_persisted_files():
    result = _doctor.tuning_drift(live(), _doctor.parse_sysctl_conf(SYSCTL), _doctor.parse_tmpfiles_writes(TMPFILES),
                                  meminfo={'HugePages_Total': 1024}, sources=SOURCES)
    assert (result['status'], result['summary']) == ('ok', '4 tuning value(s) as os_tuning set them')


def test_tuning_warns_per_drifted_key_with_the_fix():
    result = _doctor.tuning_drift(live(**{'vm.swappiness': '60', 'kernel/mm/transparent_hugepage/enabled': 'madvise'}),
                                  _doctor.parse_sysctl_conf(SYSCTL), _doctor.parse_tmpfiles_writes(TMPFILES), sources=SOURCES)
    assert result['status'] == 'warn'
    drifted = [item['key'] for item in result['details']['drift']]
    assert drifted == ['/sys/kernel/mm/transparent_hugepage/enabled', 'vm.swappiness']
    assert 'vm.swappiness is 60, /etc/sysctl.d/90-kunpeng-ascend-vllm.conf says 0' in result['summary']
    assert 'sysctl --system' in result['fix'] and 'os_tuning' in result['fix']


def test_tuning_hugepages_not_reserved_and_explicit_expectations():
    short = _doctor.tuning_drift(live(), _doctor.parse_sysctl_conf(SYSCTL), None, meminfo={'HugePages_Total': 300})
    assert short['status'] == 'warn' and short['details']['drift'][0]['key'] == 'HugePages_Total (/proc/meminfo)'
    expected = _doctor.tuning_drift(live(), None, None, expected_sysctl={'vm.swappiness': '10'})
    assert expected['details']['drift'] == [{'key': 'vm.swappiness', 'live': '0', 'expected': '10', 'source': 'expected'}]


def test_tuning_skipped_without_settings():
    assert _doctor.tuning_drift(live(), None, None)['status'] == 'skipped'


# --- services ------------------------------------------------------------------------------------------------------

SHOW = ('Id=vllm.service\nLoadState=loaded\nActiveState=active\nSubState=running\nNRestarts=0\nResult=success\n'
        'MainPID=4242\nControlGroup=/system.slice/vllm.service\n\n'
        'Id=docker.service\nLoadState=loaded\nActiveState=failed\nSubState=failed\nNRestarts=0\nResult=exit-code\n'
        'MainPID=0\nControlGroup=\n')


def test_systemctl_show_blocks():
    # The collection's one parser (_systemd): MainPID and NRestarts come as numbers.
    service, engine = parse_show(SHOW)
    assert (service['MainPID'], engine['ActiveState']) == (4242, 'failed')
    assert _doctor.service_pids_from(service, {7, 8}) == {7, 8, 4242}
    assert _doctor.service_pids_from(engine, set()) == set()


def test_service_ok_warn_and_fail():
    service = parse_show(SHOW)[0]
    assert _doctor.check_service('vllm.service', service)['status'] == 'ok'
    restarted = _doctor.check_service('vllm.service', dict(service, NRestarts=3))
    assert restarted['status'] == 'warn'
    down = _doctor.check_service('vllm.service', dict(service, ActiveState='failed', SubState='failed', Result='exit-code'))
    assert (down['status'], down['summary']) == ('fail', 'vllm.service is not running: failed (failed), result exit-code, 0 restart(s)')
    assert 'systemctl restart vllm.service' in down['fix'] and 'journalctl -u vllm.service' in down['fix']
    missing = _doctor.check_service('vllm.service', {'LoadState': 'not-found', 'ActiveState': 'inactive'})
    assert missing['status'] == 'fail' and 'vllm_service_name' in missing['fix']


def test_container_runtime():
    engine = parse_show(SHOW)[1]
    assert _doctor.check_container_runtime('native', 'docker')['status'] == 'skipped'
    down = _doctor.check_container_runtime('container', 'docker', engine)
    assert down['status'] == 'fail' and 'systemctl enable --now docker.service' in down['fix']
    assert _doctor.check_container_runtime('container', 'docker', dict(engine, ActiveState='active'))['status'] == 'ok'
    assert _doctor.check_container_runtime('container', 'podman', found=False)['status'] == 'fail'
    assert _doctor.check_container_runtime('container', 'podman')['status'] == 'ok'


JOURNAL = [
    'INFO:     Started server process [4242]',
    '[rank0]: RuntimeError: HCCL function error: HcclAllReduce, error code is 7: EI0002: The wait execution of the '
    'Notify register times out.',
    'EJ0001: Failed to initialize the HCCP process. Reason: Maybe the last training process is running.',
    'RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB',
    'WARNING: loss is nan at step 3',
    'INFO: 200 OK /v1/completions',
]


def test_journal_ok_on_plain_lines():
    result = _doctor.scan_journal([JOURNAL[0], JOURNAL[-1], 'information: inference ready'], 'vllm.service', '1 hour ago')
    assert result['status'] == 'ok' and result['details']['lines_read'] == 3


def test_journal_fails_on_each_kind_with_the_lines_and_fixes():
    result = _doctor.scan_journal(JOURNAL, 'vllm.service', '1 hour ago')
    assert result['status'] == 'fail'
    assert result['details']['counts'] == {'hccl_timeout': 1, 'ej0001': 1, 'out_of_memory': 1, 'nan_inf': 1}
    assert result['details']['matches']['hccl_timeout'] == [JOURNAL[1]]
    for text in ('HCCL_CONNECT_TIMEOUT', 'vllm_service_npus', 'vllm_service_gpu_memory_utilization', 'vllm_service_dtype'):
        assert text in result['fix']


def test_journal_keeps_the_last_few_lines_and_nan_alone_warns():
    lines = ['[rank%d]: EI0006: [PID: %d] 2025-08-05-18:15:21.270.506 Getting socket times out. Reason: Remote Rank did '
             'not send the data in time.' % (rank, 4242 + rank) for rank in range(10)]
    result = _doctor.scan_journal(lines, 'vllm.service', 'today')
    assert result['details']['matches']['hccl_timeout'] == lines[-3:] and result['details']['counts']['hccl_timeout'] == 10
    assert _doctor.scan_journal([JOURNAL[4]], 'vllm.service', 'today')['status'] == 'warn'
    assert _doctor.scan_journal([], 'vllm.service', 'today', error='journalctl was not found')['status'] == 'warn'


def test_journal_ok_summary_and_no_false_alarm_on_the_hccl_exec_timeout_setting_warning():
    # torch_npu's start-up warning about HCCL_EXEC_TIMEOUT against the watchdog (built from the text of its
    # TORCH_NPU_WARN in ProcessGroupHCCL.cpp: no sample has it) names HCCL and a timeout, but nothing timed out; the
    # journal scan of old reported it as an HCCL timeout.
    warning = ('[rank0]:[W1015 16:32:16.549993460 compiler_depend.ts:1041] Warning: The watchdog timeout 600000ms(which '
               'is set by init_process_group) is less than or equal to HCCL execution timeout 1836000ms! The plog may '
               'not be recorded. (function ProcessGroupHCCL)')
    result = _doctor.scan_journal([JOURNAL[0], warning], 'vllm.service', '1 hour ago')
    assert (result['status'], result['fix']) == ('ok', None)
    assert result['summary'] == ('none of the %d known failures of the catalogue in 2 journal line(s) of vllm.service '
                                 'since 1 hour ago' % len(_failure_catalogue.CATALOGUE))


def test_journal_of_a_real_failed_start_names_the_catalogue_ids_and_joins_their_fixes():
    lines = load_fixture('serve-log_vllm-ascend-2546_EJ0001_ERR02200.txt').splitlines()
    result = _doctor.scan_journal(lines, 'vllm.service', '1 hour ago')
    assert result['status'] == 'fail'
    assert list(result['details']['counts']) == ['hccl_init_failed', 'ej0001', 'npu_device_start_failed']
    assert result['summary'].startswith('the journal of vllm.service since 1 hour ago has ej0001 x1, last: (VllmWorker '
                                        'TP0 pid=35532) ERROR 08-26 04:05:22 [multiproc_executor.py:559] EJ0001: ')
    assert '; npu_device_start_failed x1, last: ' in result['summary'] and '; hccl_init_failed x2, last: ' in result['summary']
    assert result['fix'] == ' | '.join(_failure_catalogue.ENTRIES[kind]['fix']
                                       for kind in ('ej0001', 'npu_device_start_failed', 'hccl_init_failed'))
    assert result['details']['causes']['ej0001'] == _failure_catalogue.ENTRIES['ej0001']['cause']


def test_journal_of_a_successful_start_is_ok():
    lines = load_fixture('serve-log_lmcache-pr5138_startup-SUCCESS.txt').splitlines()
    assert _doctor.scan_journal(lines, 'vllm.service', '1 hour ago')['status'] == 'ok'


def test_journal_lines_are_cut_in_the_report():
    line = 'RuntimeError: NPU out of memory. ' + 'x' * 50000
    result = _doctor.scan_journal([line], 'vllm.service', 'today')
    assert result['details']['matches']['out_of_memory'] == [line[:_doctor.JOURNAL_LINE_CHARS]]


# --- network -------------------------------------------------------------------------------------------------------

def test_hccn_status():
    # The doctor reads the NICs with the hccn_tool module's parser.
    assert parse_status('net health status: Success\n', 'net health') == 'Success'
    assert parse_status('link status: DOWN\n', 'link') == 'DOWN'
    assert parse_status('Cmd execute failed!\n', 'link') is None


def test_network_skipped_ok_and_fail():
    assert _doctor.check_network(False, {})['status'] == 'skipped'
    good = {'0': {'net_health': 'Success', 'link': 'UP'}, '1': {'net_health': 'Success', 'link': 'UP'}}
    assert _doctor.check_network(True, good)['status'] == 'ok'
    bad = _doctor.check_network(True, dict(good, **{'1': {'net_health': 'Init', 'link': 'DOWN'}}))
    assert (bad['status'], bad['summary']) == ('fail', '1 of 2 NPU NICs are not healthy: device 1: net health Init, link DOWN')
    assert 'hccn_tool -i 1 -link -g' in bad['fix']
    assert _doctor.check_network(True, {}, error='hccn_tool was not found')['status'] == 'fail'


TLS_DOC = 'hccn_tool-tls-g_dev0_pub-ca1-ca2-crl_crl-near-expiration_hccn-doc.txt'
TLS_EXPIRED = 'hccn_tool-tls-g_dev3_tls-on_pub-and-crl-expired_BUILT-from-documented-format.txt'
# 2026-02-20T00:00:00Z: ten days before the documented CRL's end.
FEB_20_2026 = 1771545600


def nic(tls_fixture=None, warn_days=30, now=FEB_20_2026):
    parsed = parse_tls(load_fixture(tls_fixture)) if tls_fixture else None
    tls = {'enabled': parsed['enabled'], 'certificates': tls_expiry(parsed, now, warn_days)} if parsed else None
    return {'net_health': 'Success', 'link': 'UP', 'tls': tls}


def test_network_warns_on_a_crl_near_its_end_and_names_the_fix():
    result = _doctor.check_network(True, {'0': nic(TLS_DOC), '1': nic()}, tls_warn_days=30)
    assert (result['status'], result['summary']) == (
        'warn', 'NPU NIC TLS certificates or CRLs expire within 30 days: device 0: crl expires in 10 day(s) '
                '(Mon Mar  2 03:10:27 2026 GMT)')
    assert 'hccn_tool -i 0 -tls -s path DIR' in result['fix'] and 'crl crl.pem' in result['fix']
    # Past the threshold (but inside hccn_tool's own 60 days, which it says as "near expiration"): still a warning.
    assert _doctor.check_network(True, {'0': nic(TLS_DOC, warn_days=5)}, tls_warn_days=5)['status'] == 'warn'
    # A NIC without a TLS answer (an older driver) has no certificate to judge.
    assert _doctor.check_network(True, {'0': nic()}, tls_warn_days=30)['status'] == 'ok'


def test_network_fails_on_an_expired_certificate_while_tls_is_on():
    result = _doctor.check_network(True, {'3': nic(TLS_EXPIRED)}, tls_warn_days=30)
    assert (result['status'], result['summary']) == (
        'fail', '1 of 1 NPU NICs are not healthy: device 3: pub cert expired on Thu Jan  2 08:00:00 2025 GMT, '
                'crl expired on Wed Feb  5 08:00:00 2025 GMT')
    assert '-tls -s path DIR' in result['fix']
    # The same certificates with TLS off: HCCL does not use them now, so a warning.
    off = nic(TLS_EXPIRED)
    off['tls']['enabled'] = False
    warned = _doctor.check_network(True, {'3': off}, tls_warn_days=30)
    assert warned['status'] == 'warn' and 'TLS is off' in warned['summary']


# --- inputs --------------------------------------------------------------------------------------------------------

GOOD_INPUTS = {'service_name': None, 'service_mode': None, 'container_engine': None, 'vllm_ascend_version': None,
               'sysctl_file': '/etc/sysctl.d/90-kunpeng-ascend-vllm.conf',
               'tmpfiles_file': '/etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf', 'proc_path': '/proc', 'sysfs_path': '/sys',
               'expected_sysctl': {'vm.nr_hugepages': 1024},
               'expected_sys': {'kernel/mm/transparent_hugepage/enabled': 'never',
                                '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor': 'performance'},
               'journal_since': '1 hour ago', 'journal_lines': 5000, 'timeout': 30, 'temperature_warn_c': 85,
               'hbm_warn_percent': 97.0, 'tls_warn_days': 30, 'network_devices': None}


def test_good_inputs_have_no_problem():
    assert _doctor.check_inputs(GOOD_INPUTS) == []
    assert _doctor.check_inputs(dict(GOOD_INPUTS, service_name='vllm-a.service', network_devices=[0, '1'],
                                     journal_lines='200', sysctl_file='/usr/lib/sysctl.d/50-x.conf',
                                     report_dir='doctor-reports')) == []


@pytest.mark.parametrize('name', ['-H x', '--all', 'a;b', 'a/b', '', '.hidden', 'a b', 'x' * 300])
def test_service_names_that_systemctl_would_misread_are_refused(name):
    problems = _doctor.check_inputs(dict(GOOD_INPUTS, service_name=name), 'doctor_')
    assert len(problems) == 1 and 'doctor_service_name' in problems[0]


@pytest.mark.parametrize('key', ['../../etc/shadow', 'vm/swappiness', '.vm.swappiness', 'vm..swappiness', '/proc/sys/vm/x',
                                 'vm.swappiness\n', ''])
def test_sysctl_keys_must_be_names(key):
    problems = _doctor.check_inputs(dict(GOOD_INPUTS, expected_sysctl={key: 1}), 'doctor_')
    assert problems == ['a key of doctor_expected_sysctl must be a sysctl name such as vm.swappiness (words of letters, '
                        'digits, _ and - joined by dots); got %s' % _doctor._show(key)]


@pytest.mark.parametrize('key', ['../../etc/shadow', 'kernel/../../etc/shadow', '/etc/shadow', '/sys/../etc/passwd',
                                 'kernel/./mm', 'kernel//mm', '/sys/', 'kernel/mm x'])
def test_sys_keys_must_stay_under_sys(key):
    problems = _doctor.check_inputs(dict(GOOD_INPUTS, expected_sys={key: 'x'}))
    assert len(problems) == 1 and problems[0].startswith('a key of expected_sys must be a path under /sys')


@pytest.mark.parametrize('path', ['/etc/shadow', '/etc/sysctl.d/../shadow', '/etc/sysctl.d/sub/x.conf', 'etc/sysctl.d/x.conf',
                                  '/etc/sysctl.d/x', '/etc/sysctl.d/.conf', '/tmp/90-x.conf', '/etc/sysctl.d//x.conf'])
def test_persisted_files_only_in_their_directories(path):
    for key in ('sysctl_file', 'tmpfiles_file'):
        value = path.replace('sysctl.d', 'tmpfiles.d') if key == 'tmpfiles_file' else path
        problems = _doctor.check_inputs(dict(GOOD_INPUTS, **{key: value}), 'doctor_')
        assert len(problems) == 1 and problems[0].startswith('doctor_%s must be a .conf file directly in /etc/' % key)


@pytest.mark.parametrize('key, value, named', [
    ('service_mode', 'docker', 'service_mode'), ('container_engine', 'lxc', 'container_engine'),
    ('vllm_ascend_version', '-v', 'vllm_ascend_version'), ('journal_lines', 0, 'journal_lines'),
    ('journal_since', '--all', 'journal_since'), ('timeout', -1, 'timeout'), ('tls_warn_days', 'x', 'tls_warn_days'),
    ('hbm_warn_percent', 150, 'hbm_warn_percent'), ('network_devices', [-1], 'network_devices'),
    ('proc_path', 'proc', 'proc_path'), ('container_name', '--privileged', 'container_name'),
    ('report_dir', 'reports\n', 'report_dir'),
    ('expected_sys', {'kernel/mm/x': [1]}, 'expected_sys["kernel/mm/x"]'), ('expected_sysctl', 'vm.x=1', 'expected_sysctl')])
def test_each_bad_input_names_its_variable(key, value, named):
    problems = _doctor.check_inputs(dict(GOOD_INPUTS, **{key: value}), 'doctor_')
    assert len(problems) == 1 and problems[0].startswith(('doctor_' + named, 'a key of doctor_' + named)), problems


def test_site_rows_are_checked_as_the_inventory_variable_whatever_the_prefix():
    assert _doctor.check_inputs(dict(GOOD_INPUTS, compat_site_rows=[SITE_0_13, SITE_0_29]), 'doctor_') == []
    assert _doctor.check_inputs(dict(GOOD_INPUTS, compat_site_rows=[]), 'doctor_') == []
    assert _doctor.check_inputs(dict(GOOD_INPUTS, compat_site_rows=[{'vllm_ascend': '0.13.0', 'vllm': '0.13.0'}]),
                                'doctor_') == ['ascend_compat_site_rows[0].cann is missing: every row names its CANN version']
    assert _doctor.check_inputs(dict(GOOD_INPUTS, compat_site_rows=[SITE_0_13, dict(SITE_0_29, cann=9.2)])) == [
        'ascend_compat_site_rows[1].cann: 9.2 is a float, not a version string: quote it (YAML reads 9.10 as the number 9.1)']
    assert _doctor.check_inputs(dict(GOOD_INPUTS, compat_site_rows={'vllm_ascend': '0.13.0'})) == [
        'ascend_compat_site_rows must be a list of rows (each a dict with vllm_ascend, vllm, cann), not dict']


# ---------------------------------------------------------------------------------------------------- restart storm

STORM_JOURNAL = 'journal_vllm-0.32.0-cpu_headless-rank-killed_restarts.txt'
LOADED = {'LoadState': 'loaded', 'StartLimitBurst': 5}


def test_last_failure_lines_are_the_last_that_tell_of_a_failure():
    lines = load_fixture(STORM_JOURNAL).splitlines()
    # Each line once, where it last occurred.
    assert _doctor.last_failure_lines(lines) == [
        'raise RuntimeError(',
        'RuntimeError: Did not receive response from front-end process within 5 minutes',
        "vllm.service: State 'stop-sigterm' timed out. Killing.",
        "vllm.service: Failed with result 'timeout'.",
    ]
    assert _doctor.last_failure_lines(lines, 1) == ["vllm.service: Failed with result 'timeout'."]
    assert _doctor.last_failure_lines(['INFO ready', 'x' * 400 + ' error'])[0] == 'x' * _doctor.JOURNAL_LINE_CHARS


def test_a_unit_that_hit_its_start_limit_is_a_restart_storm():
    lines = load_fixture(STORM_JOURNAL).splitlines() + [
        'vllm.service: NPU 0 still held after 61 tries in 120 s by pid 4242 (VLLM::Worker) on NPU 0; not starting',
        'vllm.service: Start request repeated too quickly.']
    properties = dict(LOADED, ActiveState='failed', SubState='failed', Result='start-limit-hit', NRestarts=5)
    result = _doctor.check_restart_storm('vllm.service', properties, lines)
    assert result['status'] == 'fail'
    assert result['summary'] == (
        'restart storm: systemd gave up on vllm.service after 5 restart(s), at most 5 starts in the interval '
        '(start limit hit, result start-limit-hit). Last failure lines: RuntimeError: Did not receive response from front-end process within '
        "5 minutes | vllm.service: State 'stop-sigterm' timed out. Killing. | vllm.service: Failed with result "
        "'timeout'. | vllm.service: NPU 0 still held after 61 tries in 120 s by pid 4242 (VLLM::Worker) on NPU 0; "
        'not starting | vllm.service: Start request repeated too quickly.')
    assert result['details']['NRestarts'] == 5 and result['details']['Result'] == 'start-limit-hit'
    assert result['fix'].startswith('Fix the cause the lines name')
    assert 'systemctl reset-failed vllm.service' in result['fix'] and 'vllm_service_restart_burst' in result['fix']


@pytest.mark.parametrize('properties, status, summary', [
    ({'ActiveState': 'activating', 'SubState': 'auto-restart', 'Result': 'exit-code', 'NRestarts': 2}, 'warn',
     'vllm.service is failing and being restarted: 2 restart(s) so far, at most 5 starts in the interval.'),
    ({'ActiveState': 'failed', 'SubState': 'failed', 'Result': 'exit-code', 'NRestarts': 1}, 'warn',
     'vllm.service is failing and being restarted: 1 restart(s) so far, at most 5 starts in the interval.'),
    # Restarted before but running now: the service check warns about the restarts; no storm.
    ({'ActiveState': 'active', 'SubState': 'running', 'Result': 'success', 'NRestarts': 2}, 'ok',
     'no restart storm: vllm.service restarted 2 time(s), at most 5 starts in the interval'),
    ({'ActiveState': 'inactive', 'SubState': 'dead', 'Result': 'success', 'NRestarts': 0}, 'ok',
     'no restart storm: vllm.service restarted 0 time(s), at most 5 starts in the interval'),
])
def test_restart_storm_states(properties, status, summary):
    result = _doctor.check_restart_storm('vllm.service', dict(LOADED, **properties), ['INFO ready'])
    assert (result['status'], result['summary']) == (status, summary)


def test_restart_storm_is_skipped_when_the_unit_is_not_known():
    assert _doctor.check_restart_storm('vllm.service', {'LoadState': 'not-found'}, [])['status'] == 'skipped'
    assert _doctor.check_restart_storm('vllm.service', {}, [], error='systemctl was not found')['status'] == 'skipped'
    # systemd prints no number for a limit it does not know.
    result = _doctor.check_restart_storm('vllm.service', {'LoadState': 'loaded', 'Result': 'start-limit-hit',
                                                          'NRestarts': 3}, [])
    assert result['summary'] == ('restart storm: systemd gave up on vllm.service after 3 restart(s), its start limit '
                                 '(start limit hit, result start-limit-hit).')


def test_systemd_252_refusing_its_own_restart_is_a_storm_too():
    # systemd 252 keeps the last start's result (exit-code) when it refuses an automatic restart; NRestarts is at
    # the burst.
    lines = load_fixture('journal_vllm-service_systemd-252_start-limit_npu-held.txt').splitlines()
    properties = {'LoadState': 'loaded', 'ActiveState': 'failed', 'SubState': 'failed', 'Result': 'exit-code',
                  'NRestarts': 2, 'StartLimitBurst': 2}
    result = _doctor.check_restart_storm('vllm.service', properties, lines)
    assert result['status'] == 'fail'
    assert result['summary'].startswith('restart storm: systemd gave up on vllm.service after 2 restart(s), at most 2 '
                                        'starts in the interval (start limit hit, result exit-code). Last failure '
                                        'lines: vllm.service: NPU 0, 1, 2, 3, 4, 5, 6, 7 still held after 1 tries in 0 '
                                        's by pid 424242 (python3) on NPU 0; not starting')
    assert result['details']['last_failure_lines'][-2:] == ["vllm.service: Failed with result 'exit-code'.",
                                                            'Failed to start vllm.service - vLLM OpenAI-compatible '
                                                            'server vllm (deepseek).']
    # One restart short of the burst: still restarting, a warning.
    assert _doctor.check_restart_storm('vllm.service', dict(properties, NRestarts=1), lines)['status'] == 'warn'


# --- the verdict order and the records the role writes ----------------------------------------------------------------

@pytest.mark.parametrize('healths, verdict', [
    ([], 'healthy'), (['healthy', 'healthy'], 'healthy'), (['healthy', 'degraded'], 'degraded'),
    (['degraded', 'broken', 'healthy'], 'broken'), (['healthy', 'unreachable'], 'broken'),
    (['degraded', 'unreachable'], 'broken')])
def test_worst_health(healths, verdict):
    assert _doctor.worst_health(healths) == verdict


def _result(status, findings, compliance=(), record=None):
    return {'status': status, 'mode': 'native', 'findings': list(findings), 'compliance': list(compliance),
            'service': {'name': 'vllm', 'vllm_ascend': '0.13.0', 'unit': 'vllm.service', 'record': record}}


def test_finding_lines_one_per_finding_then_per_compliance_item():
    result = _result('degraded', [_doctor.finding('versions', 'ok', 'fine'),
                                  _doctor.finding('journal', 'warn', 'errors', fix='look')],
                     [{'id': 'ssh', 'status': 'fail', 'summary': 'open', 'fix': None}])
    assert _doctor.finding_lines(result) == [
        'OK      versions          fine',
        'WARN    journal           errors -- fix: look',
        'FAIL    compliance:ssh    open']
    assert _doctor.finding_lines({'findings': [], 'compliance': []}) == []


def test_host_report_is_the_doctor_report_schema():
    result = _result('healthy', [_doctor.finding('versions', 'ok', 'fine')], record={'a': 1})
    report = _doctor.host_report('node1', result, {}, '2026-01-01T00:00:00Z')
    assert report == {'schema': 'kunpeng_ascend.vllm/doctor-report/1', 'host': 'node1',
                      'generated': '2026-01-01T00:00:00Z', 'status': 'healthy', 'mode': 'native',
                      'inputs': {'service': 'vllm', 'vllm_ascend': '0.13.0', 'unit': 'vllm.service', 'recorded': True,
                                 'compat_waiver': None},
                      'findings': result['findings'], 'compliance': []}
    waiver = {'reason': 'r', 'expires': '2027-01-01'}
    report = _doctor.host_report('node1', _result('healthy', []), waiver, 'now')
    assert report['inputs']['compat_waiver'] == waiver and report['inputs']['recorded'] is False


def test_fleet_summary_per_host_and_the_worst_verdict():
    results = {'a': _result('degraded', [_doctor.finding('journal', 'warn', 'w'), _doctor.finding('x', 'ok', 'o')]),
               'b': _result('healthy', [], [{'id': 'ssh', 'status': 'fail', 'summary': 's', 'fix': None},
                                            {'id': 'fw', 'status': 'pass', 'summary': 's', 'fix': None}])}
    fleet = _doctor.fleet_summary(results, 'now')
    assert fleet['schema'] == 'kunpeng_ascend.vllm/doctor-fleet/1' and fleet['generated'] == 'now'
    assert fleet['status'] == 'degraded'
    assert fleet['hosts'] == {
        'a': {'status': 'degraded', 'failing': [], 'warning': ['journal'], 'compliance_failing': [], 'report': 'a.json'},
        'b': {'status': 'healthy', 'failing': [], 'warning': [], 'compliance_failing': ['ssh'], 'report': 'b.json'}}
    results['c'] = None
    fleet = _doctor.fleet_summary(results, 'now')
    assert fleet['status'] == 'broken'
    assert fleet['hosts']['c'] == {'status': 'unreachable', 'failing': [], 'warning': [], 'compliance_failing': [],
                                   'report': None}
    broken = _doctor.fleet_summary({'a': _result('broken', [_doctor.finding('versions', 'fail', 'f')])}, 'now')
    assert broken['status'] == 'broken' and broken['hosts']['a']['failing'] == ['versions']
    assert _doctor.fleet_summary({}, 'now')['status'] == 'healthy'
