# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""npu_smi_info's main() against the fake host: run_command, get_bin_path and the executables are mocked."""

from __future__ import annotations

import json
from unittest import mock

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _command
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import parse_npu_smi_info
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import npu_smi_info
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    PARSABLE_LOCALE,
    TIMEOUT,
    ExitJson,
    FailJson,
    load_fixture,
    run_main,
)
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.ascend.test__npu_smi import HWHIAIUSER_HINT

NPU_SMI = '/usr/local/bin/npu-smi'
TIMED_OUT_HINT = ('npu-smi hung and was stopped by the timeout: a driver or device problem '
                  '(see dmesg and the device health; raise timeout only if the host is merely slow)')

BUSY_910B3 = 'npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'
DUO_310P3 = 'npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt'


@pytest.fixture
def host(fake_host):
    """The fake host with npu-smi where the driver installs it, on PATH; its answers are keyed by its path."""
    fake_host.on_path['npu-smi'] = NPU_SMI
    fake_host.executables.add(NPU_SMI)
    return fake_host


def run_module(args, outcome=ExitJson):
    return run_main(npu_smi_info.main, args, outcome)


def npu_smi_call(*args, **prefix):
    """The run_command call for ``npu-smi ARGS`` with the default 60 s timeout prefix (or ``prefix=[...]``)."""
    argv = prefix.get('prefix', [TIMEOUT, '--kill-after=5', '60']) + [prefix.get('npu_smi', NPU_SMI)] + list(args)
    return mock.call(argv, data=None, environ_update=PARSABLE_LOCALE, check_rc=False)


def board_output(npu_id):
    return ('        NPU ID                         : %d\n'
            '        Chip Count                     : 2\n'
            '\n'
            '        Chip ID                        : 0\n'
            '        Chip Name                      : 310P3\n' % npu_id)


# --- success ------------------------------------------------------------------------------------------------------

def test_runs_npu_smi_info_once_under_timeout_with_a_parsable_locale(host):
    stdout = load_fixture(BUSY_910B3)
    host.answers[(NPU_SMI, 'info')] = (0, stdout, '')
    result = run_module({})
    assert host.calls() == [npu_smi_call('info')]
    assert result == {'changed': False, 'found': True, 'npu_smi': dict(parse_npu_smi_info(stdout), details={})}
    npu = result['npu_smi']
    assert (npu['version'], npu['driver_version'], npu['npu_count'], npu['chip_count'], npu['all_healthy']) == \
        ('25.0.rc1.b010', '25.0.rc1.b010', 8, 8, True)
    assert npu['chips'][0]['hbm_used_mb'] == 59718
    assert npu['processes'][5] == {'npu_id': 5, 'chip_id': 0, 'pid': 1079652, 'name': '', 'memory_mb': 56374,
                                   'container_pid': None}
    host.warn.assert_not_called()


def test_check_mode_reads_the_same(host):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(BUSY_910B3), '')
    real = run_module({})
    assert run_module({'_ansible_check_mode': True}) == real
    assert host.calls() == [npu_smi_call('info')] * 2


def test_parser_warnings_become_module_warnings(host):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture('npu-smi-info_910B1_23.0.rc2.b090_8npu_training-load_elided.txt'), '')
    result = run_module({})
    assert (result['npu_smi']['chip_count'], result['npu_smi']['complete']) == (2, True)
    assert host.warn.call_args_list == [mock.call("npu-smi info line 10: ignored text inside the table: '...'"),
                                        mock.call("npu-smi info line 22: ignored text inside the table: '...'")]


def test_a_table_cut_off_part_way_is_returned_as_incomplete_with_a_warning(host):
    # The case: the first 15 lines of an 8-NPU table; it used to return 3 healthy chips and no warning.
    host.answers[(NPU_SMI, 'info')] = (0, ''.join(load_fixture(BUSY_910B3).splitlines(True)[:15]), '')
    npu = run_module({})['npu_smi']
    reason = ("the output ends at line 15 before the table does (no process table), so it is incomplete (cut off?): "
              "'+===========================+===============+====================================================+'")
    assert (npu['chip_count'], npu['all_healthy'], npu['complete'], npu['incomplete_reason']) == (3, False, False, reason)
    host.warn.assert_called_once_with('npu-smi info: ' + reason)


def test_a_process_name_that_is_not_utf8_is_returned_as_valid_utf8(host):
    stdout = load_fixture(BUSY_910B3).encode('utf-8').replace(
        b'| 1067983       |                          |', b'| 1067983       | py\xff\xfe                   |')
    host.answers[(NPU_SMI, 'info')] = (0, stdout, b'warning: \xff\n')
    result = run_module({})
    assert result['npu_smi']['processes'][0]['name'] == 'py\ufffd\ufffd'
    # What ansible-core 2.19's controller needs: the whole result encodes as UTF-8 (a lone surrogate would not).
    assert json.dumps(result, ensure_ascii=False).encode('utf-8')


def test_a_failing_npu_smi_with_bytes_that_are_not_utf8_fails_with_valid_utf8(host):
    host.answers[(NPU_SMI, 'info')] = (255, b'dcmi module initialize failed. ret is -8005 \xff\n', b'\xfe\n')
    result = run_module({}, FailJson)
    assert (result['stdout'], result['stderr']) == ('dcmi module initialize failed. ret is -8005 \ufffd\n', '\ufffd\n')
    assert json.dumps(result, ensure_ascii=False).encode('utf-8')


def before_the_process_table(lines):
    """The busy 910B3 table with ``lines`` inserted between its chip and its process table (lines 31 on)."""
    table = load_fixture(BUSY_910B3).splitlines(True)
    return ''.join(table[:30] + lines + table[30:])


def test_warnings_are_capped_at_20_and_counted(host):
    host.answers[(NPU_SMI, 'info')] = (0, before_the_process_table(['garbage %d\n' % number for number in range(1000)]), '')
    result = run_module({})
    assert result['npu_smi']['complete'] is True
    assert host.warn.call_args_list == [
        mock.call("npu-smi info line %d: ignored text inside the table: 'garbage %d'" % (31 + number, number))
        for number in range(20)] + [mock.call('... and 980 more warnings')]


def test_a_warning_quoting_a_long_line_is_cut(host):
    host.answers[(NPU_SMI, 'info')] = (0, before_the_process_table(['x' * 100000 + '\n']), '')
    run_module({})
    message = "npu-smi info line 31: ignored text inside the table: '" + 'x' * 100000 + "'"
    host.warn.assert_called_once_with(message[:500] + '... (%d characters in all)' % len(message))


def test_details_board_runs_one_extra_call_per_npu(host):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(DUO_310P3), '')
    for npu_id in (2, 3, 5, 6):
        host.answers[(NPU_SMI, 'info', '-t', 'board', '-i', str(npu_id))] = (0, board_output(npu_id), '')
    result = run_module({'details': ['board']})
    assert host.calls() == [npu_smi_call('info')] + [
        npu_smi_call('info', '-t', 'board', '-i', str(npu_id)) for npu_id in (2, 3, 5, 6)]
    assert result['npu_smi']['chip_count'] == 8
    assert result['npu_smi']['details'] == {'board': [
        {'npu_id': npu_id, 'sections': [{'NPU ID': str(npu_id), 'Chip Count': '2'},
                                        {'Chip ID': '0', 'Chip Name': '310P3'}]}
        for npu_id in (2, 3, 5, 6)]}


def test_detail_warnings_name_the_command(host):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture('npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt'), '')
    host.answers[(NPU_SMI, 'info', '-t', 'memory', '-i', '0')] = (0, 'garbage\n        HBM Capacity(MB)  : 32768\n', '')
    result = run_module({'details': ['memory']})
    assert result['npu_smi']['details'] == {'memory': [{'npu_id': 0, 'sections': [{'HBM Capacity(MB)': '32768'}]}]}
    host.warn.assert_called_once_with(
        """npu-smi info -t memory -i 0: line 1: not a "key : value" line, ignored: 'garbage'""")


def test_npu_smi_path_and_timeout_options(host):
    host.executables.add('/usr/local/Ascend/driver/tools/npu-smi')
    host.answers[('/usr/local/Ascend/driver/tools/npu-smi', 'info')] = (0, load_fixture(BUSY_910B3), '')
    run_module({'npu_smi_path': '/usr/local/Ascend/driver/tools/npu-smi', 'timeout': 5})
    assert host.calls() == [npu_smi_call('info', prefix=[TIMEOUT, '--kill-after=5', '5'],
                                         npu_smi='/usr/local/Ascend/driver/tools/npu-smi')]


def test_timeout_0_runs_without_a_limit(host):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(BUSY_910B3), '')
    run_module({'timeout': 0})
    assert host.calls() == [npu_smi_call('info', prefix=[])]


def test_without_coreutils_timeout_it_warns_and_runs_without_a_limit(host):
    del host.on_path['timeout']
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(BUSY_910B3), '')
    run_module({})
    assert host.calls() == [npu_smi_call('info', prefix=[])]
    host.warn.assert_called_once_with('coreutils timeout was not found, so commands run without a time limit')


def test_npu_smi_off_path_is_found_where_the_driver_installs_it(host):
    del host.on_path['npu-smi']
    host.executables.clear()
    host.executables.add('/usr/local/sbin/npu-smi')
    host.answers[('/usr/local/sbin/npu-smi', 'info')] = (0, load_fixture(BUSY_910B3), '')
    run_module({})
    assert host.calls() == [npu_smi_call('info', npu_smi='/usr/local/sbin/npu-smi')]


# --- failures -----------------------------------------------------------------------------------------------------

def failure(rc, stdout, stderr, msg, args=('info',)):
    return {'msg': msg, 'cmd': [TIMEOUT, '--kill-after=5', '60', NPU_SMI] + list(args), 'rc': rc,
            'stdout': stdout, 'stderr': stderr}


@pytest.mark.parametrize('rc', [255, 0])
def test_dcmi_8005_fails_with_the_group_hint_whatever_the_rc(host, rc):
    stdout = load_fixture('npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt')
    host.answers[(NPU_SMI, 'info')] = (rc, stdout, '')
    assert run_module({}, FailJson) == failure(
        rc, stdout, '',
        'npu-smi info failed (rc=%d): dcmi module initialize failed. ret is -8005. Hint: %s.' % (rc, HWHIAIUSER_HINT))


def test_dcmi_8020_fails_with_retry_hint(host):
    stdout = 'dcmi get device health failed. ret is -8020\n'
    host.answers[(NPU_SMI, 'info')] = (255, stdout, '')
    assert run_module({}, FailJson) == failure(
        255, stdout, '', 'npu-smi info failed (rc=255): dcmi get device health failed. ret is -8020. '
                         'Hint: the device is busy or being reset: retry later.')


class Clock:
    """The command runner's time module: every run takes ``seconds`` (it reads the clock before and after)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.readings = 0

    def monotonic(self):
        # Readings 1 and 2 are 0 and seconds, readings 3 and 4 seconds and twice that, and so on.
        self.readings += 1
        return self.seconds * (self.readings // 2)


# -9: an npu-smi that ignores TERM is killed with KILL together with timeout, so run_command sees the kill.
@pytest.mark.parametrize('rc', [124, 137, -9])
def test_an_npu_smi_stopped_at_the_time_limit_fails_with_the_hung_hint(host, monkeypatch, rc):
    monkeypatch.setattr(_command, 'time', Clock(60))
    host.answers[(NPU_SMI, 'info')] = (rc, '', '')
    assert run_module({}, FailJson) == failure(
        rc, '', '', 'npu-smi info failed (rc=%d): no output. Hint: %s.' % (rc, TIMED_OUT_HINT))


@pytest.mark.parametrize('rc', [124, -9, -11])
def test_the_same_status_before_the_time_limit_is_no_timeout(host, monkeypatch, rc):
    monkeypatch.setattr(_command, 'time', Clock(2))
    host.answers[(NPU_SMI, 'info')] = (rc, '', '')
    assert run_module({}, FailJson) == failure(rc, '', '', 'npu-smi info failed (rc=%d): no output.' % rc)


def test_a_failing_detail_query_names_its_command_after_the_warnings_so_far(host):
    table = load_fixture(DUO_310P3).replace('| No running processes found in NPU 2',
                                            '...\n| No running processes found in NPU 2')
    host.answers[(NPU_SMI, 'info')] = (0, table, '')
    host.answers[(NPU_SMI, 'info', '-t', 'board', '-i', '2')] = (0, board_output(2), '')
    host.answers[(NPU_SMI, 'info', '-t', 'board', '-i', '3')] = (255, 'ret is -8020\n', '')
    assert run_module({'details': ['board']}, FailJson) == failure(
        255, 'ret is -8020\n', '',
        'npu-smi info -t board -i 3 failed (rc=255): ret is -8020. Hint: the device is busy or being reset: '
        'retry later.', args=('info', '-t', 'board', '-i', '3'))
    host.warn.assert_called_once_with("npu-smi info line 34: ignored text inside the table: '...'")


def test_npu_smi_not_found(host):
    del host.on_path['npu-smi']
    host.executables.clear()
    assert run_module({}, FailJson) == {
        'msg': 'npu-smi was found neither in PATH nor as /usr/local/bin/npu-smi or /usr/local/sbin/npu-smi: '
               'install the Ascend NPU driver, or set npu_smi_path to its location'}
    assert host.calls() == []


def test_npu_smi_path_that_is_not_executable(host):
    assert run_module({'npu_smi_path': '/nowhere/npu-smi'}, FailJson) == {
        'msg': 'npu_smi_path: /nowhere/npu-smi is not an executable file'}
    assert host.calls() == []


def test_the_messages_name_the_callers_variable(host):
    # A role passes its own variable as npu_smi_path and names it: its user sets that, never the module's option.
    assert run_module({'npu_smi_path': '/nowhere/npu-smi', 'npu_smi_path_option': 'vllm_service_npu_smi_path'},
                      FailJson) == {'msg': 'vllm_service_npu_smi_path: /nowhere/npu-smi is not an executable file'}
    del host.on_path['npu-smi']
    host.executables.clear()
    assert run_module({'npu_smi_path_option': 'vllm_service_npu_smi_path'}, FailJson) == {
        'msg': 'npu-smi was found neither in PATH nor as /usr/local/bin/npu-smi or /usr/local/sbin/npu-smi: '
               'install the Ascend NPU driver, or set vllm_service_npu_smi_path to its location'}
    # A real run with missing_ok false fails the same in check mode.
    assert run_module({'_ansible_check_mode': True}, FailJson)['msg'].endswith('set npu_smi_path to its location')
    # A caller whose user has no variable for it (role npu_driver, which installs the driver) names none.
    assert run_module({'npu_smi_path_option': ''}, FailJson) == {
        'msg': 'npu-smi was found neither in PATH nor as /usr/local/bin/npu-smi or /usr/local/sbin/npu-smi: '
               'install the Ascend NPU driver'}


def test_missing_ok_returns_found_false_on_a_host_without_the_driver(host):
    del host.on_path['npu-smi']
    host.executables.clear()
    assert run_module({'missing_ok': True}) == {'changed': False, 'found': False}
    assert run_module({'missing_ok': True, '_ansible_check_mode': True}) == {'changed': False, 'found': False}
    assert host.calls() == []
    # A path given must be there, whatever missing_ok says.
    assert run_module({'missing_ok': True, 'npu_smi_path': '/nowhere/npu-smi',
                       'npu_smi_path_option': 'npu_driver_npu_smi_path'}, FailJson) == {
        'msg': 'npu_driver_npu_smi_path: /nowhere/npu-smi is not an executable file'}


def test_missing_ok_reads_npu_smi_when_it_is_there(host):
    host.answers[(NPU_SMI, 'info')] = (0, load_fixture(BUSY_910B3), '')
    result = run_module({'missing_ok': True})
    assert result['found'] is True and result['npu_smi']['npu_count'] == 8
    assert host.calls() == [npu_smi_call('info')]


def test_negative_timeout(host):
    assert run_module({'timeout': -1}, FailJson) == {
        'msg': 'timeout must be 0 (no limit) or a number of seconds, not -1'}
