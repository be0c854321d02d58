# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_failure_catalogue: each entry found in the real samples it was learned from, the successful start-ups giving no
failure, the look-alike lines not reported, the catalogue's own rules, and the matcher's work on pathological input
counted in steps against a fixed budget (nothing is timed)."""

from __future__ import annotations

import glob
import os
import re

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _failure_catalogue as catalogue
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES, load_fixture

REPO = os.path.dirname(os.path.dirname(FIXTURES))
IN_FIXTURES = 'tests/fixtures/'
IDS = [entry['id'] for entry in catalogue.CATALOGUE]


def sample_lines(name):
    """The lines of a sample as the doctor gets them from journalctl; a capture that had CRLF endings gets its CR back
    (the fixture keeps LF, as ansible-test's line-endings rule asks), split as LF ones are."""
    text = load_fixture(name)
    if 'from-CRLF' in name:
        text = text.replace('\n', '\r\n')
    return text.splitlines()


def found_in(name):
    return catalogue.scan(sample_lines(name), steps=catalogue.Steps())['found']


def samples_of(entry):
    return [source[len(IN_FIXTURES):] for source in entry['sources'] if source.startswith(IN_FIXTURES)]


# What each serving sample gives, in catalogue order: every serve-log sample of tests/fixtures/ is here.
EXPECTED = {
    'serve-log_ascend-pytorch-99_libtbe_adapter-undefined-symbol.txt': ['cann_version_mismatch'],
    'serve-log_gpustack-2021_HcclCommInitRootInfo-failed.txt': ['hccl_init_failed'],
    'serve-log_hami-615_npu-smi-libc_sec.so-missing.txt': ['driver_libraries_missing'],
    'serve-log_llamafactory-5071_EI0006-getting-socket-times-out.txt': ['hccl_timeout'],
    'serve-log_lmcache-pr5138_startup-SUCCESS.txt': [],
    'serve-log_omni-infer_model-inspection-failed_from-CRLF.txt': ['model_inspection_failed'],
    'serve-log_sglang-30453_aicore-timeout-507014_HCCL-watchdog.txt': [
        'hccl_watchdog_abort', 'aicore_timeout', 'torch_npu_error', 'cann_inner_error'],
    'serve-log_verl-849_c10d-client-socket-timed-out.txt': ['hccl_timeout'],
    'serve-log_vime-434_TsdOpen-failed_Failed-to-start-the-device.txt': ['npu_device_start_failed', 'cann_inner_error'],
    'serve-log_vllm-17363_SetDevice-107001_EE1001-invalid-device.txt': ['set_device_failed', 'torch_npu_error'],
    'serve-log_vllm-8638_Errno98-address-already-in-use.txt': ['port_in_use'],
    'serve-log_vllm-ascend-1047_ERR00100-PTA-call-acl-api-failed.txt': ['torch_npu_error'],
    'serve-log_vllm-ascend-117_libtorch_npu-undefined-symbol.txt': ['cann_version_mismatch'],
    'serve-log_vllm-ascend-13399_310P3_rtGetDeviceCount-507899.txt': ['npu_not_visible'],
    'serve-log_vllm-ascend-13565_startup-SUCCESS.txt': [],
    'serve-log_vllm-ascend-1955_HCCL-listen-16666-fail_wait-socket-establish-timeout.txt': [
        'hccl_port_in_use', 'hccl_socket_timeout'],
    'serve-log_vllm-ascend-19_NPU-out-of-memory.txt': ['out_of_memory'],
    'serve-log_vllm-ascend-2248_c10d-waitForInput-timed-out-every-rank.txt': ['c10d_store_timeout'],
    'serve-log_vllm-ascend-2542_310P-second-service_halGetDeviceInfo-ret87_soc-version-507008.txt': ['npu_occupied'],
    'serve-log_vllm-ascend-2546_EJ0001_ERR02200.txt': ['ej0001', 'npu_device_start_failed', 'hccl_init_failed'],
    'serve-log_vllm-ascend-3162_EI0009-transport-init-error.txt': ['hccl_init_failed'],
    'serve-log_vllm-ascend-3479_EngineCore-failed-to-start_EL0004.txt': ['out_of_memory', 'engine_core_failed',
                                                                         'torch_npu_error'],
    'serve-log_vllm-ascend-4284_SetDevice-507033_E30006-OPP.txt': ['set_device_failed', 'npu_device_start_failed',
                                                                   'cann_version_mismatch', 'torch_npu_error'],
    'serve-log_vllm-ascend-4744_AclSetCompileopt-500001.txt': ['cann_version_mismatch', 'torch_npu_error'],
    'serve-log_vllm-ascend-540_Failed-to-infer-device-type.txt': ['device_type_unknown', 'torch_npu_error'],
    'serve-log_vllm-ascend-5707_no-memory-for-cache-blocks.txt': ['no_kv_cache_memory'],
    'serve-log_vllm-ascend-5949_c10d-server-socket-will-retry.txt': ['c10d_rendezvous_waiting'],
    'serve-log_vllm-ascend-632_dcmi-8020-device-is-used.txt': ['npu_in_use', 'npu_not_visible'],
    'serve-log_vllm-ascend-633_no-available-ascend-quantizer.txt': ['quantization_mismatch'],
    'serve-log_vllm-ascend-780_Torch-not-compiled-with-CUDA.txt': ['cuda_path_on_npu', 'engine_core_failed'],
    # A hang while loading weights, 16 ranks' lines garbled together: no error line to find.
    'serve-log_vllm-ascend-8898_garbled-interleaved-hang.txt': [],
    'serve-log_vllm-ascend-902_invalid-choice-ascend-quantization.txt': ['quantization_mismatch'],
    'serve-log_vllm-ascend-955_SafetensorError-HeaderTooLarge.txt': ['corrupt_weights'],
    'serve-log_vllm-ascend-pr12609_startup-SUCCESS_from-GB18030.txt': [],
    # A hang after the ranks were assigned (max model len 262144): no error line to find.
    'serve-log_vllm-ascend-pr3795_hang-max-model-len-262144.txt': [],
    'bench_vllm-ascend-pr12609_request-rate-inf_from-GB18030.txt': [],
    'npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt': ['dcmi_error'],
}

# The entries no sample of tests/fixtures/ shows, and the line each is checked on instead.
WITHOUT_SAMPLE = {
    # The error of https://github.com/vllm-project/vllm/issues/641 (its title); no serving sample shows nan or inf.
    'nan_inf': 'RuntimeError: probability tensor contains either `inf`, `nan` or element < 0',
}


# --- the catalogue against the real samples --------------------------------------------------------------------------

@pytest.mark.parametrize('entry_id, sample', [(entry['id'], sample) for entry in catalogue.CATALOGUE
                                              for sample in samples_of(entry)])
def test_each_entry_is_found_in_every_sample_it_was_learned_from(entry_id, sample):
    assert entry_id in found_in(sample)


def test_every_entry_has_a_real_sample_or_says_why_not():
    without = set(entry['id'] for entry in catalogue.CATALOGUE if not samples_of(entry))
    assert without == set(WITHOUT_SAMPLE)
    for entry_id, line in WITHOUT_SAMPLE.items():
        assert catalogue.match_line(line, catalogue.Steps()) is catalogue.ENTRIES[entry_id]


@pytest.mark.parametrize('sample', sorted(EXPECTED))
def test_each_sample_gives_exactly_its_entries(sample):
    assert found_in(sample) == EXPECTED[sample]


def test_every_serving_sample_is_in_the_table():
    names = set(os.path.basename(path) for path in glob.glob(os.path.join(FIXTURES, 'serve-log_*')))
    assert names <= set(EXPECTED) and len(names) == 35


@pytest.mark.parametrize('sample', sorted(name for name in EXPECTED if 'startup-SUCCESS' in name))
def test_a_successful_start_up_gives_no_failure(sample):
    assert [item for item in found_in(sample) if catalogue.ENTRIES[item]['status'] == 'fail'] == []


def test_scan_counts_and_keeps_the_last_lines_of_each_entry():
    lines = sample_lines('serve-log_vllm-ascend-5949_c10d-server-socket-will-retry.txt')
    result = catalogue.scan(lines, per_kind=2, line_chars=40, steps=catalogue.Steps())
    assert (result['lines_read'], result['counts']) == (len(lines), {'c10d_rendezvous_waiting': 4})
    assert result['matches'] == {'c10d_rendezvous_waiting': [line.strip()[:40] for line in lines if 'retry' in line][-2:]}


# --- what an entry is not -------------------------------------------------------------------------------------------

NOT_THIS = [(entry['id'], index) for entry in catalogue.CATALOGUE for index in range(len(entry['not_this']))]


@pytest.mark.parametrize('entry_id, index', NOT_THIS, ids=['%s-%d' % case for case in NOT_THIS])
def test_a_look_alike_line_is_not_reported_as_the_entry(entry_id, index):
    case = catalogue.ENTRIES[entry_id]['not_this'][index]
    assert case['line'] and case['why'] and case['source']
    assert catalogue.match_line(case['line'], catalogue.Steps()) is not catalogue.ENTRIES[entry_id]
    if case['source'].startswith(IN_FIXTURES):
        # Taken from a real sample, as it is there.
        assert case['line'] in sample_lines(case['source'][len(IN_FIXTURES):])
    for token in case.get('tokens', ()):
        assert token.lower() in case['line'].lower()


@pytest.mark.parametrize('entry_id, line', [
    ('hccl_timeout', catalogue.ENTRIES['hccl_timeout']['not_this'][0]['line']),
    ('nan_inf', catalogue.ENTRIES['nan_inf']['not_this'][0]['line']),
    ('nan_inf', catalogue.ENTRIES['nan_inf']['not_this'][1]['line']),
], ids=['c10d-will-retry', 'bench-request-rate', 'argument-dump'])
def test_the_exclusion_is_what_keeps_these_lines_out(entry_id, line):
    entry = catalogue.ENTRIES[entry_id]
    assert catalogue.pattern_matches(entry, line) and catalogue.match_line(line, catalogue.Steps()) is not entry


def test_the_hccl_exec_timeout_setting_warnings_are_no_failure_at_all():
    # Built from the text torch_npu prints (TORCH_NPU_WARN in ProcessGroupHCCL.cpp): no sample has them. The journal
    # scan of old took them for HCCL timeouts.
    for case in catalogue.ENTRIES['hccl_timeout']['not_this'][1:]:
        assert 'HCCL execution timeout' in case['line']
        assert catalogue.match_line(case['line'], catalogue.Steps()) is None


def test_the_will_retry_line_is_a_warning_and_the_client_giving_up_a_failure():
    retry = catalogue.ENTRIES['hccl_timeout']['not_this'][0]['line']
    assert catalogue.match_line(retry, catalogue.Steps())['id'] == 'c10d_rendezvous_waiting'
    (client,) = [line for line in sample_lines('serve-log_verl-849_c10d-client-socket-timed-out.txt') if 'c10d' in line]
    assert catalogue.match_line(client, catalogue.Steps())['id'] == 'hccl_timeout'


@pytest.mark.parametrize('line, expected', [
    ('EJ0001: [PID: 35532] Failed to initialize the HCCP process.', 'ej0001'),
    ('AEJ0001 is a part number', None),
    ('error code EJ00012', None),
    ('error code EJ0001_2', None),
    ('ret code 5070140', None),
    ('EJ0001EJ0001 EJ0001', 'ej0001'),
    (' ' * (catalogue.MAX_LINE_CHARS - 6) + 'EJ0001', 'ej0001'),
    (' ' * catalogue.MAX_LINE_CHARS + 'EJ0001', None),  # beyond the cut
    ('loss is NaN', 'nan_inf'),
    ('INFO_NAN_MODE', None),
], ids=['code', 'letter-before', 'digit-after', 'underscore-after', 'inside-a-number', 'later-occurrence', 'at-the-cut',
        'beyond-the-cut', 'nan', 'inside-a-name'])
def test_codes_are_whole_words_and_lines_are_cut(line, expected):
    entry = catalogue.match_line(line, catalogue.Steps())
    assert (entry['id'] if entry else None) == expected


def test_bytes_and_undecodable_text_never_raise():
    gb18030 = 'EJ0001: 设备被占用'.encode('gb18030')
    assert catalogue.match_line(gb18030, catalogue.Steps())['id'] == 'ej0001'
    assert catalogue.match_line(b'\xff\xfe\x00' * 1000, catalogue.Steps()) is None
    result = catalogue.scan(['NPU out of memory \udcff', b'NPU out of memory \xff'], steps=catalogue.Steps())
    assert result['matches']['out_of_memory'] == ['NPU out of memory \ufffd', 'NPU out of memory \ufffd']


# --- issue 32: HCCL's own socket lines, c10d's store timeout, an occupied NPU -------------------------------------------

# The entries learned from the samples of issue 32, and those samples.
ISSUE_32 = ('hccl_port_in_use', 'hccl_socket_timeout', 'c10d_store_timeout', 'npu_occupied')
ISSUE_32_SAMPLES = {
    'serve-log_vllm-ascend-1955_HCCL-listen-16666-fail_wait-socket-establish-timeout.txt': [
        'hccl_port_in_use', 'hccl_socket_timeout'],
    'serve-log_vllm-ascend-2248_c10d-waitForInput-timed-out-every-rank.txt': ['c10d_store_timeout'],
    'serve-log_vllm-ascend-2542_310P-second-service_halGetDeviceInfo-ret87_soc-version-507008.txt': ['npu_occupied'],
}


@pytest.mark.parametrize('sample', sorted(ISSUE_32_SAMPLES))
def test_each_issue_32_sample_is_found_by_its_new_entries_and_nothing_else(sample):
    assert found_in(sample) == ISSUE_32_SAMPLES[sample] == EXPECTED[sample]


def test_before_issue_32_the_catalogue_knew_no_line_of_its_samples():
    # What the doctor and the health gate said of these journals: nothing known to be wrong.
    older = [entry for entry in catalogue.CATALOGUE if entry['id'] not in ISSUE_32]
    for sample in ISSUE_32_SAMPLES:
        assert [line for line in sample_lines(sample) if any(catalogue.pattern_matches(entry, line) for entry in older)] \
            == [], sample


def test_no_line_of_the_older_samples_goes_to_an_issue_32_entry():
    # Line by line, not only the entries found: no line of a sample learned before moved to a new entry.
    for sample in sorted(set(EXPECTED) - set(ISSUE_32_SAMPLES)):
        taken = [(line, catalogue.match_line(line, catalogue.Steps())['id']) for line in sample_lines(sample)
                 if catalogue.match_line(line, catalogue.Steps()) in [catalogue.ENTRIES[key] for key in ISSUE_32]]
        assert taken == [], sample


@pytest.mark.parametrize('sample, text, expected', [
    # vLLM's own HTTP port in use: the API server's, not HCCL's.
    ('serve-log_vllm-8638_Errno98-address-already-in-use.txt', '[Errno 98]', 'port_in_use'),
    # The c10d server side that will retry: a warning.
    ('serve-log_vllm-ascend-5949_c10d-server-socket-will-retry.txt', 'will retry', 'c10d_rendezvous_waiting'),
    # The c10d client that never connected to the store: not a connected client without an answer.
    ('serve-log_verl-849_c10d-client-socket-timed-out.txt', 'client socket has timed out', 'hccl_timeout'),
    # torch_npu's EI0006: the timeout entry it always was.
    ('serve-log_llamafactory-5071_EI0006-getting-socket-times-out.txt', 'EI0006', 'hccl_timeout'),
    # The NPU used by another container: npu-smi's dcmi -8020, and the runtime's drvRet=87 of the same sample.
    ('serve-log_vllm-ascend-632_dcmi-8020-device-is-used.txt', 'because the device is used', 'npu_in_use'),
    ('serve-log_vllm-ascend-632_dcmi-8020-device-is-used.txt', 'halGetDeviceInfo failed: drvRet=87', 'npu_not_visible'),
    ('serve-log_vllm-ascend-632_dcmi-8020-device-is-used.txt', 'cur soc version', 'npu_not_visible'),
    # vllm-ascend's SoC-version lookup in the traceback of another failure.
    ('serve-log_vllm-ascend-4744_AclSetCompileopt-500001.txt', 'in init_ascend_soc_version', None),
], ids=['vllm-errno-98', 'c10d-will-retry', 'c10d-connect-timeout', 'EI0006', 'dcmi-8020', 'drvRet-87',
        'cur-soc-version', 'init_ascend_soc_version-frame'])
def test_the_look_alikes_keep_their_entry(sample, text, expected):
    lines = [line for line in sample_lines(sample) if text in line]
    assert lines
    for line in lines:
        entry = catalogue.match_line(line, catalogue.Steps())
        assert (entry['id'] if entry else None) == expected


# Spellings the new entries know beyond their samples, each a line as printed in its (public) source.
HCCL_PARAM_LINK = catalogue.HCCL_PARAM_LINK_DOC
HCCL_CLUSTER_NEGO = catalogue.HCCL_CLUSTER_NEGO_DOC
VLLM_ASCEND_1815 = 'https://github.com/vllm-project/vllm-ascend/issues/1815'
VLLM_ASCEND_2542 = 'https://github.com/vllm-project/vllm-ascend/issues/2542'
VLLM_PR_10502 = 'https://github.com/vllm-project/vllm/pull/10502'
OTHER_SPELLINGS = [
    # Newer CANN: 'is being used', the device NIC (socket type 0).
    (HCCL_PARAM_LINK, '[ERROR] HCCL(1009464,all_reduce_test):2025-03-15-00:41:48.470.172 [hccl_socket.cc:110] '
                      '[1009464][InitGroupStage][RanktableDetect] socket type[0], listen on ip[192.168.2.199] and specific '
                      'port[16666] fail. Please check the port status and whether the port is being used by other process.',
     'hccl_port_in_use'),
    # The host NIC's port of the cluster negotiation (socket type 2), and its error code.
    (HCCL_CLUSTER_NEGO, '[ERROR] HCCL(3626636,all_reduce_test):2025-11-21-13:18:47.639.860 [hccl_socket.cc:110] '
                        '[3626636][InitChannelStage][RanktableDetect] socket type[2], listen on ip[192.168.1.100%enp53s0f2] '
                        'and specific port[60000] fail. Please check the port status and whether the port is being used '
                        'by other process.',
     'hccl_port_in_use'),
    (HCCL_CLUSTER_NEGO, '[PID: 2267203] 2025-11-21-11:38:29.575.404 Communication_Error_Bind_IP_Port(EI0019): Failed to '
                        'enable listening for the host network adapter socket.Reason: The IP address 192.168.1.100 and '
                        'port 50001 have already been bound.',
     'hccl_port_in_use'),
    # The same listen failure after the NPU's network port went down (EJ0002 in that issue's title).
    (VLLM_ASCEND_1815, '[ERROR] HCCL(38011,python):2025-07-15-12:45:32.997.787 [hccl_socket.cc:100] '
                       '[38011][HcclSocket][Listen] socket type[1], listen on ip[192.168.20.148] and specific port[16666] '
                       'fail. Please check the port status and whether the port is been using by other process.',
     'hccl_port_in_use'),
    # Newer CANN: 'timeout[120 s]'.
    (HCCL_PARAM_LINK, '[ERROR] HCCL(17528,python3):2026-03-18-10:33:52.113.403 [hccl_socket_manager.cc:797] '
                      '[18744][Wait][LinkEstablish]wait socket establish timeout, role[1] rank[1] timeout[120 s]',
     'hccl_socket_timeout'),
    # The cluster negotiation's sockets to the root rank, on both sides (the agent's line ends in a space there).
    (HCCL_CLUSTER_NEGO, '[ERROR] HCCL(7988,all_reduce_test):2025-03-19-04:16:13.978.979 [topoinfo_exchange_agent.cc:190] '
                        '[7988][InitGroupStage][RanktableDetect]topo exchange agent get socket timeout! timeout[120] ',
     'hccl_socket_timeout'),
    (HCCL_CLUSTER_NEGO, '[ERROR] HCCL(1041081,all_reduce_test):2025-11-21-01:20:01.624.966 '
                        '[topoinfo_exchange_server.cc:314] [1041362][InitGroupStage][RanktableDetect]topo exchange server '
                        'get socket timeout! timeout[120 s]',
     'hccl_socket_timeout'),
    # The plog lines of the occupied 310P, printed to stdout before the TraceBack of the sample.
    (VLLM_ASCEND_2542, '[ERROR] PROFILING(278,python3):2025-08-26-03:01:18.166.955 [config_manager.cpp:60] >>> (tid:278) '
                       'halGetDeviceInfo get device type version failed , ret:87',
     'npu_occupied'),
    (VLLM_ASCEND_2542, '[ERROR] ASCENDCL(278,python3):2025-08-26-03:01:18.167.116 [acl.cpp:370]278 aclInit: '
                       '[INIT][DEFAULT][Init][Version]init soc version failed, ret = 507008',
     'npu_occupied'),
    # Another torch release's socket.cpp line and a [localhost] address; the warning printed just before it is not
    # counted (the 'timed out after' line always follows it).
    (VLLM_PR_10502, '[rank1]:[W411 00:33:04.669049648 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=135, '
                    'addr=[localhost]:10002, remote=[localhost]:14581) timed out after 300000ms',
     'c10d_store_timeout'),
    (VLLM_PR_10502, '[rank1]:[W411 00:33:04.667467898 socket.cpp:464] [c10d] waitForInput: poll for socket '
                    'SocketImpl(fd=135, addr=[localhost]:10002, remote=[localhost]:14581) returned 0, likely a timeout',
     None),
]


@pytest.mark.parametrize('source, line, expected', OTHER_SPELLINGS,
                         ids=['%d-%s' % (index, case[2]) for index, case in enumerate(OTHER_SPELLINGS)])
def test_other_real_spellings_of_the_issue_32_failures(source, line, expected):
    assert source in [item for key in ISSUE_32 for item in catalogue.ENTRIES[key]['sources']]
    entry = catalogue.match_line(line, catalogue.Steps())
    assert (entry['id'] if entry else None) == expected


@pytest.mark.parametrize('line', [
    'init soc version failed, ret = 5070080',
    'init soc version failed, ret = 500000',
    'halGetDeviceInfo get device type version failed , ret:870',
    'halGetDeviceInfo get device type version failed , ret:-1',
    'error EL00050 is not a code',
    '[c10d] waitForInput: socket SocketImpl(fd=3) returned 0, likely a timeout',
    'INFO HCCL listen on ip[10.0.0.1] and specific port[16666] succeeded',
])
def test_near_misses_of_the_issue_32_entries_are_nothing(line):
    assert catalogue.match_line(line, catalogue.Steps()) is None


def test_every_rank_of_the_c10d_sample_is_counted_and_the_last_lines_kept():
    lines = sample_lines('serve-log_vllm-ascend-2248_c10d-waitForInput-timed-out-every-rank.txt')
    result = catalogue.scan(lines, steps=catalogue.Steps())
    assert result['counts'] == {'c10d_store_timeout': 7}
    assert [line.split(']:')[0] for line in result['matches']['c10d_store_timeout']] == ['[rank1', '[rank7', '[rank0']


def test_the_hccl_sample_names_the_port_first_and_the_timeout_it_caused_after():
    known = catalogue.explain(sample_lines(
        'serve-log_vllm-ascend-1955_HCCL-listen-16666-fail_wait-socket-establish-timeout.txt'))
    assert [item['id'] for item in known] == ['hccl_port_in_use', 'hccl_socket_timeout']
    assert 'specific port[16666] fail' in known[0]['lines'][0] and 'rank[12] timeout[120]' in known[1]['lines'][0]
    assert 'HCCL_NPU_SOCKET_PORT_RANGE' in known[0]['fix'] and 'HCCL_CONNECT_TIMEOUT' in known[1]['fix']


# --- the catalogue's own rules ----------------------------------------------------------------------------------------

def test_ids_are_unique_snake_case_and_statuses_known():
    assert len(IDS) == len(set(IDS)) == len(catalogue.ENTRIES)
    for entry in catalogue.CATALOGUE:
        assert re.match(r'^[a-z][a-z0-9]*(_[a-z0-9]+)*$', entry['id']), entry['id']
        assert entry['status'] in catalogue.STATUSES


@pytest.mark.parametrize('entry_id', IDS)
def test_every_entry_has_its_fields(entry_id):
    entry = catalogue.ENTRIES[entry_id]
    assert set(entry) == {'id', 'status', 'cause', 'fix', 'patterns', 'not_this', 'sources'}
    assert entry['cause'].strip() == entry['cause'] and entry['cause'].endswith('.') and len(entry['cause']) > 30
    assert entry['fix'].strip() == entry['fix'] and len(entry['fix']) > 30
    assert entry['sources'] and entry['patterns']
    for source in entry['sources']:
        assert source.startswith('https://') or os.path.isfile(os.path.join(REPO, source)), source
    for pattern in entry['patterns']:
        assert isinstance(pattern, tuple) and pattern
        for token in pattern:
            text = token.text if isinstance(token, catalogue.Token) else token
            assert isinstance(text, str) and text.strip() and text == text.strip(), (entry_id, token)
    for case in entry['not_this']:
        assert set(case) <= {'line', 'why', 'source', 'tokens'}
        assert all(isinstance(token, str) and token.strip() for token in case.get('tokens', ()))


def test_the_fixes_name_variables_that_exist():
    # Stage targets runs these tests on the hosts' Pythons, whose images have no PyYAML: the role files are the
    # controller's business, checked where it runs.
    yaml = pytest.importorskip('yaml')
    options = set()
    for path in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml')):
        with open(path, encoding='utf-8') as handle:
            for spec in (yaml.safe_load(handle).get('argument_specs') or {}).values():
                options.update(spec.get('options') or {})
    named = set()
    for entry in catalogue.CATALOGUE:
        named.update(re.findall(r'\b((?:vllm_service|vllm_cluster|doctor|cann|npu_driver)_[a-z0-9_]+)', entry['fix']))
    assert 'vllm_service_npus' in named and 'vllm_service_gpu_memory_utilization' in named
    assert named - options == set()


def test_the_doctor_guide_lists_the_catalogue():
    with open(os.path.join(REPO, 'docs', 'doctor.md'), encoding='utf-8') as handle:
        rows = re.findall(r'^\| `([a-z0-9_]+)` \| (fail|warn) \|', handle.read(), re.MULTILINE)
    assert rows == [(entry['id'], entry['status']) for entry in catalogue.CATALOGUE]


def test_word_tokens_never_make_a_search_read_a_character_twice():
    # The premise of the work bound: after an occurrence whose neighbours fail, the next search starts at its end.
    for token in catalogue.TOKENS:
        assert token.text and token.text == token.text.lower()
        if token.word:
            assert catalogue.skip(token) == len(token.text), token
    assert catalogue.period('abab') == 2 and catalogue.period('-8020') == 5 and catalogue.period('aaaa') == 1


# --- the matcher's work: linear in its input, counted in steps --------------------------------------------------------

# The budget (module docstring): a line of n characters (after the cut) costs at most 1 + 3 n + T (2 n + 1) steps for
# the T distinct tokens of the catalogue, so STEPS_PER_CHAR * characters + STEPS_PER_LINE * lines in all. The
# catalogue may not grow beyond MAX_TOKENS tokens, which keeps both constants fixed.
MAX_TOKENS = 250
T = len(catalogue.TOKENS)
STEPS_PER_CHAR = 3 + 2 * T
STEPS_PER_LINE = 1 + T


def test_the_budget_is_a_fixed_constant():
    assert T <= MAX_TOKENS
    assert STEPS_PER_CHAR <= 3 + 2 * MAX_TOKENS and STEPS_PER_LINE <= 1 + MAX_TOKENS


def work(lines):
    """The steps scan() takes for ``lines``, and the budget of that input."""
    steps = catalogue.Steps()
    result = catalogue.scan(lines, steps=steps)
    chars = sum(min(len(line), catalogue.MAX_LINE_CHARS) for line in lines)
    return steps.count, STEPS_PER_CHAR * chars + STEPS_PER_LINE * len(lines), result


def near_misses():
    """For each token, a line that nearly holds it: cut short by a character, or a code glued to a digit."""
    lines = []
    for token in catalogue.TOKENS:
        lines.append('INFO near miss: %s end' % token.text[:-1])
        if token.word:
            lines.append('INFO near miss: 0%s0 end' % token.text.upper())
    return lines


PATHOLOGICAL = {
    '48K characters of HCCL': ['HCCL ' * 9600],
    'HCCL and time out far apart': ['HCCL ' * 4000 + 'timed out ' * 4000],
    'repeated EJ000': ['EJ000' * 10000],
    'repeated EJ0001, no word boundary anywhere': ['EJ0001' * 8000],
    'repeated nan, glued': ['nan' * 20000],
    'a line of a million a': ['a' * 10 ** 6],
    'every near miss on one line': [' '.join(near_misses()) * 3],
    '5000 lines of near misses': [near_misses()[index % len(near_misses())] for index in range(5000)],
    '5000 long lines of HCCL': ['HCCL ' * 1000] * 5000,
}


@pytest.mark.parametrize('name', sorted(PATHOLOGICAL))
def test_pathological_input_stays_within_the_budget(name):
    steps, budget, result = work(PATHOLOGICAL[name])
    assert 0 < steps <= budget, (steps, budget)
    assert result['found'] == []


def test_a_line_is_cut_before_matching():
    # A line of a million characters costs what its first MAX_LINE_CHARS cost, plus the cut itself.
    for long in ('a' * 10 ** 6, 'HCCL ' * 200000, 'EJ0001' * 200000):
        steps_long, _budget, _result = work([long])
        steps_cut, _budget, _result = work([long[:catalogue.MAX_LINE_CHARS]])
        assert steps_long == steps_cut
    steps, budget, _result = work(['a' * 10 ** 6])
    assert steps <= STEPS_PER_CHAR * catalogue.MAX_LINE_CHARS + STEPS_PER_LINE == budget


def test_the_work_grows_linearly():
    # k copies of a line cost exactly k times one; twice as long a line (under the cut) at most twice as much.
    line = 'EJ0001x' * 200 + 'HCCL ' * 200
    one, _budget, _result = work([line])
    assert work([line] * 1000)[0] == 1000 * one
    double, _budget, _result = work([line * 2])
    assert double <= 2 * one


def test_a_matching_line_costs_within_the_budget_too():
    lines = sample_lines('serve-log_vllm-ascend-pr12609_startup-SUCCESS_from-GB18030.txt') * 20
    steps, budget, _result = work(lines)
    assert steps <= budget
    steps, budget, result = work(sample_lines('serve-log_sglang-30453_aicore-timeout-507014_HCCL-watchdog.txt'))
    assert steps <= budget and result['found']


def test_bytes_lines_are_cut_before_decoding():
    steps = catalogue.Steps()
    assert catalogue.match_line(b'\xff' * 10 ** 6, steps) is None
    assert steps.count <= (STEPS_PER_CHAR + 4) * catalogue.MAX_LINE_CHARS + STEPS_PER_LINE


def test_without_a_counter_each_call_counts_on_its_own():
    # No state is kept between calls: the same line costs the same and matches the same, however often it is read.
    line = 'RuntimeError: [ERROR] 2025-10-28-09:12:12 (PID:981, Device:0, RankID:-1) ERR02200 DIST call hccl api failed.'
    first = catalogue.match_line(line)
    assert all(catalogue.match_line(line) is first for _time in range(3))
    assert first is not None
    counted = catalogue.Steps()
    catalogue.match_line(line, counted)
    assert counted.count > 0


def test_the_gb18030_capture_as_bytes_never_raises_and_gives_no_failure():
    # The source's own encoding: its banner lines are not UTF-8, which the matcher replaces rather than raises on.
    lines = [line.encode('gb18030') for line in sample_lines('serve-log_vllm-ascend-pr12609_startup-SUCCESS_from-GB18030.txt')]
    assert any(_undecodable(line) for line in lines)
    result = catalogue.scan(lines)
    assert all(catalogue.ENTRIES[key]['status'] != 'fail' for key in result['found'])


def _undecodable(raw):
    try:
        raw.decode('utf-8')
    except UnicodeDecodeError:
        return True
    return False
