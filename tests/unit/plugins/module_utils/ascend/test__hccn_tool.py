# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_hccn_tool: the parsers on the real hccn_tool samples (prompt-prefixed transcripts, error outputs, hccn.conf
with comments and elisions), malformed input, the check of declared devices and the plan of set commands."""

from __future__ import annotations

import re

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _hccn_tool as H
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

IP_DOLLAR = 'hccn_tool-i3-ip-g_and_route-g.txt'
IP_GT = 'hccn_tool-i3-ip-g_route-g_gt-prompt.txt'
PING_DOLLAR = 'hccn_tool-i3-ping-g.txt'
PING_GT = 'hccn_tool-i3-ping-g_10.20.11.16.txt'
OUT_OF_RANGE = 'hccn_tool_ip-set_errors_310_device-id-out-of-range.txt'
CONF_MINIMAL = 'hccn.conf_8npu_address-netmask-only.txt'
CONF_910B1 = 'hccn.conf_910B1_8npu_elided.txt'
TLS_DOC = 'hccn_tool-tls-g_dev0_pub-ca1-ca2-crl_crl-near-expiration_hccn-doc.txt'
TLS_EXPIRED = 'hccn_tool-tls-g_dev3_tls-on_pub-and-crl-expired_BUILT-from-documented-format.txt'

# Answers as printed in public Ascend documents (no captured sample of these in tests/fixtures yet):
# -gateway -g and -netdetect -g from multi-node deployment guides, -link -g / -net_health -g from MindCluster's
# fault docs, -tls -g from HCCL's troubleshooting page EI0016 (first device's block).
GATEWAY = 'default gateway:11.12.165.1, Iface:eth0\n'
NETDETECT = 'netdetect address: 11.12.165.1\n'
LINK = 'link status: UP\n'
HEALTH = 'net health status: Success\n'
TLS = ('dev_id:0, tls switch[0](0:disable, 1:enable), tls alarm time threshold[60]days\n'
       'dev_id:0, [pub cert] info:\n'
       '         issuer[/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA]\n'
       '         start_time[Wed Feb 19 03:19:21 2020 GMT]\n'
       '         end_time[Sat Feb 16 03:19:21 2030 GMT]\n'
       'dev_id:0, [ca1 cert] info:\n'
       '         issuer[/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA]\n'
       '         start_time[Wed Feb 19 03:19:07 2020 GMT]\n'
       '         end_time[Sat Feb 16 03:19:07 2030 GMT]\n')


def transcript_part(text, option):
    """The part of a captured transcript from the command line with ``option`` to the next command line."""
    lines = text.splitlines(True)
    start = next(i for i, line in enumerate(lines) if 'hccn_tool' in line and option in line)
    end = next((i for i in range(start + 1, len(lines)) if 'hccn_tool' in lines[i]), len(lines))
    return ''.join(lines[start:end])


class Warnings(list):
    def __call__(self, message):
        self.append(message)


# --- -ip -g ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('fixture, address, netmask', [
    (IP_DOLLAR, '29.1.112.213', '255.255.0.0'),
    (IP_GT, '10.20.11.24', '255.255.255.0'),
])
def test_ip_of_the_real_transcripts_with_their_prompt_and_blank_lines(fixture, address, netmask):
    warn = Warnings()
    part = transcript_part(load_fixture(fixture), '-ip -g')
    assert part.lstrip().startswith(('$', '>'))
    assert H.parse_ip(part, warn) == {'address': address, 'netmask': netmask}
    assert warn == []


def test_the_route_table_after_it_is_not_taken_for_an_address_but_named():
    warn = Warnings()
    assert H.parse_ip(load_fixture(IP_DOLLAR), warn)['address'] == '29.1.112.213'
    assert warn and all('was not understood' in message for message in warn)
    assert any('Routing table:' in message for message in warn)


def test_ip_not_set_is_null_without_a_warning():
    warn = Warnings()
    assert H.parse_ip('ipaddr:\nnetmask:\n', warn) == {'address': None, 'netmask': None}
    assert warn == []


@pytest.mark.parametrize('text, expected', [
    ('', 'printed no ipaddr line'),
    ('ipaddr:10.0.0.300\nnetmask:255.255.255.0\n', 'has no IPv4 address'),
    ('ipaddr 10.0.0.1\n', 'was not understood'),
])
def test_malformed_ip_answers_are_warnings_and_nulls(text, expected):
    warn = Warnings()
    result = H.parse_ip(text, warn)
    assert result['address'] is None
    assert any(expected in message for message in warn), warn


def test_console_log_level_noise_is_skipped():
    warn = Warnings()
    text = 'call drvMngGetConsoleLogLevel failed , g_conLogLevel = 3\nipaddr:10.0.0.1\nnetmask:255.255.255.0\n'
    assert H.parse_ip(text, warn) == {'address': '10.0.0.1', 'netmask': '255.255.255.0'}
    assert warn == []


# --- -gateway -g, -netdetect -g, -tls -g, -link -g, -net_health -g ---------------------------------------------------

def test_gateway_netdetect_link_health_as_documented():
    warn = Warnings()
    assert H.parse_gateway(GATEWAY, warn) == {'gateway': '11.12.165.1', 'iface': 'eth0'}
    assert H.parse_netdetect(NETDETECT, warn) == '11.12.165.1'
    assert H.parse_status(LINK, 'link', warn) == 'UP'
    assert H.parse_status(HEALTH, 'net health', warn) == 'Success'
    assert warn == []


@pytest.mark.parametrize('value', ['Socket fail', 'Receive timeout', 'Init', 'Fault'])
def test_health_values_with_spaces_are_whole(value):
    assert H.parse_status('net health status: %s\n' % value, 'net health') == value


def test_no_gateway_or_netdetect_is_null_and_zero_is_unset():
    warn = Warnings()
    assert H.parse_gateway('', warn)['gateway'] is None
    assert H.parse_gateway('default gateway:0.0.0.0, Iface:eth0\n', warn)['gateway'] is None
    assert H.parse_netdetect('', warn) is None
    assert warn == []


def test_status_missing_or_other_text_is_a_warning():
    warn = Warnings()
    assert H.parse_status('link is fine\n', 'link', warn) is None
    assert any('not understood' in m for m in warn) and any('no "link status' in m for m in warn)


def test_tls_off_with_its_certificate_blocks():
    warn = Warnings()
    parsed = H.parse_tls(TLS, warn)
    assert (parsed['enabled'], parsed['preconfigured'], parsed['alarm_days']) == (False, None, 60)
    assert [(cert['name'], cert['issuer'], cert['end'], cert['status']) for cert in parsed['certificates']] == [
        ('pub cert', '/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA', 'Sat Feb 16 03:19:21 2030 GMT', None),
        ('ca1 cert', '/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA', 'Sat Feb 16 03:19:07 2030 GMT', None)]
    assert parsed['certificates'][0]['end_epoch'] == 1897442361  # 2030-02-16T03:19:21Z
    assert warn == []
    assert H.parse_tls(TLS.replace('switch[0]', 'switch[1]'))['enabled'] is True


# 2026-02-20T00:00:00Z: ten days before the documented CRL's end (Mon Mar  2 03:10:27 2026 GMT).
FEB_20_2026 = 1771545600


def test_tls_expiry_lines_of_the_manual_are_read_not_warned_about():
    warn = Warnings()
    parsed = H.parse_tls(load_fixture(TLS_DOC), warn)
    assert warn == []
    assert (parsed['enabled'], parsed['preconfigured'], parsed['alarm_days']) == (False, False, 60)
    assert [(cert['name'], cert['subject'], cert['status']) for cert in parsed['certificates']] == [
        ('pub cert', '/C=CN/O=xxx/CN=www.xxx.com', 'normal'), ('ca1 cert', '/C=CN/O=xxx/CN=xxx RSA CA', 'normal'),
        ('ca2 cert', '/C=CN/O=xxx/CN=xxx RSA PSS Sub CA', 'normal'), ('crl', None, 'near expiration')]
    states = H.tls_expiry(parsed, FEB_20_2026, 30)
    assert [(state['name'], state['days_left'], state['state']) for state in states] == [
        ('pub cert', 9980, 'ok'), ('ca1 cert', 10940, 'ok'), ('ca2 cert', 29980, 'ok'), ('crl', 10, 'expiring')]
    # The threshold decides for the doctor; hccn_tool's own "near expiration" (its 60 days) counts too.
    assert H.tls_expiry(parsed, FEB_20_2026, 5)[3]['state'] == 'expiring'
    after = H.tls_expiry(parsed, H.cert_time('Mon Mar  2 03:10:27 2026 GMT'), 30)
    assert (after[3]['days_left'], after[3]['state']) == (0, 'expired')


def test_tls_expired_certificates_of_the_source_format():
    warn = Warnings()
    parsed = H.parse_tls(load_fixture(TLS_EXPIRED), warn)
    assert warn == []
    assert parsed['enabled'] is True
    states = H.tls_expiry(parsed, FEB_20_2026, 30)
    assert [(state['name'], state['state']) for state in states] == [
        ('pub cert', 'expired'), ('ca1 cert', 'ok'), ('crl', 'expired')]
    assert states[0]['days_left'] == -414  # 413 days and 16 hours ago, floored
    # hccn_tool's status wins over a clock that is behind: expired by its word even before the end time here.
    assert H.tls_expiry(parsed, H.cert_time('Mon Jan  1 00:00:00 2024 GMT'), 30)[0]['state'] == 'expired'


@pytest.mark.parametrize('end', ['Feb 30 03:19:21 2030 GMT', 'Sat Foo 16 03:19:21 2030 GMT', '2030-02-16', '',
                                 'Sat Feb 16 25:19:21 2030 GMT'])
def test_tls_end_time_not_understood_is_a_warning_and_unknown(end):
    warn = Warnings()
    parsed = H.parse_tls('dev_id:0, tls switch[1](0:disable, 1:enable)\ndev_id:0, [pub cert] info:\n'
                         '  end_time[%s]\n' % end, warn)
    assert parsed['certificates'][0]['end_epoch'] is None
    assert any('end time of pub cert' in message for message in warn)
    assert H.tls_expiry(parsed, FEB_20_2026, 30)[0]['state'] == 'unknown'


def test_tls_other_lines_in_a_block_are_still_not_understood():
    warn = Warnings()
    H.parse_tls('dev_id:0, tls switch[1](0:disable, 1:enable)\ndev_id:0, [pub cert] info:\n  serial[0x1f]\n'
                '  tls expiration status[7](0:normal)\n', warn)
    assert len([message for message in warn if 'not understood' in message]) == 2


def test_tls_without_a_switch_line_is_unknown_with_a_warning():
    warn = Warnings()
    assert H.parse_tls('tls: maybe\n', warn)['enabled'] is None
    assert any('tls switch' in m for m in warn)


# --- -ping -g ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('fixture, target, first', [(PING_DOLLAR, '29.1.137.205', 1.418), (PING_GT, '10.20.11.16', 0.137)])
def test_ping_of_the_real_transcripts(fixture, target, first):
    warn = Warnings()
    result = H.parse_ping(load_fixture(fixture), warn)
    assert result['device'] == 3 and result['target'] == target
    assert (result['transmitted'], result['received'], result['loss_percent']) == (3, 3, 0.0)
    assert result['times_ms'][0] == first and len(result['times_ms']) == 3 and result['complete']
    assert warn == []


def test_ping_cut_off_is_incomplete():
    warn = Warnings()
    text = ''.join(load_fixture(PING_GT).splitlines(True)[:3])
    result = H.parse_ping(text, warn)
    assert not result['complete'] and result['received'] is None
    assert any('summary' in m for m in warn)


def test_ping_total_loss():
    result = H.parse_ping('device 3 PING 10.0.0.9\n3 packets transmitted, 0 received, 100.00% packet loss\n')
    assert (result['received'], result['loss_percent']) == (0, 100.0)


# --- errors -----------------------------------------------------------------------------------------------------------

def test_errors_of_the_real_310_capture():
    text = load_fixture(OUT_OF_RANGE)
    first = ''.join(text.splitlines(True)[:4])
    assert H.hccn_error(first) == (H.OUT_OF_RANGE, 'Device ID is out of the valid range.')
    failed_only = 'call drvMngGetConsoleLogLevel failed , g_conLogLevel = 3\nCommand execute failed!\n'
    assert H.hccn_error(failed_only) == ('failed', 'Command execute failed!')
    assert H.hccn_error('ipaddr:1.2.3.4\n') is None


def test_out_of_range_fails_naming_the_entry():
    text = ''.join(line[4:] + '\n' for line in load_fixture(OUT_OF_RANGE).splitlines()[1:4])

    def run(args):
        return CommandResult(['hccn_tool'] + args, 1, text, '')
    with pytest.raises(H.HccnToolFailure) as raised:
        H.read_device(run, 9, where='devices[1]')
    assert raised.value.kind == H.OUT_OF_RANGE
    assert 'device 9 does not exist' in raised.value.msg and 'devices[1].id' in raised.value.msg


def test_an_error_line_with_rc_0_still_fails_and_a_timeout_says_so():
    def run(args):
        return CommandResult(['hccn_tool'] + args, 0, 'Cmd execute failed!\n', '')
    with pytest.raises(H.HccnToolFailure) as raised:
        H.run_checked(run, ['-i', '0', '-ip', '-g'])
    assert 'hccn_tool -i 0 -ip -g failed (rc 0): Cmd execute failed!' in raised.value.msg
    with pytest.raises(H.HccnToolFailure) as raised:
        H.run_checked(lambda args: CommandResult(args, 124, '', '', True), ['-i', '0', '-link', '-g'])
    assert raised.value.kind == 'timeout' and 'time limit' in raised.value.msg


# --- hccn.conf --------------------------------------------------------------------------------------------------------

def test_conf_minimal_sample_reads_eight_devices_and_names_the_prompt_line():
    warn = Warnings()
    conf = H.parse_hccn_conf(load_fixture(CONF_MINIMAL), warn)
    assert sorted(conf) == list(range(8))
    assert conf[7] == {'address': '10.20.11.18', 'netmask': '255.255.255.0'}
    assert len(warn) == 1 and 'line 1 is not KEY_N=VALUE' in warn[0]


def test_conf_910b1_sample_keeps_unknown_keys_and_names_the_elision():
    warn = Warnings()
    conf = H.parse_hccn_conf(load_fixture(CONF_910B1), warn)
    assert conf[0] == {'address': '29.1.137.205', 'netmask': '255.255.0.0', 'netdetect': '29.1.0.1',
                       'gateway': '29.1.0.1', 'send_arp_status': '1'}
    assert sorted(conf) == [0, 7]
    assert any("'...'" in m for m in warn)


def test_conf_duplicate_key_last_wins_with_a_warning():
    warn = Warnings()
    assert H.parse_hccn_conf('address_0=10.0.0.1\naddress_0=10.0.0.2\n', warn) == {0: {'address': '10.0.0.2'}}
    assert 'twice' in warn[0]


def test_render_keeps_comments_unknown_lines_and_order():
    text = load_fixture(CONF_910B1)
    after = H.render_hccn_conf(text, {0: {'gateway': '29.1.0.254'}, 3: {'address': '29.1.1.3', 'netmask': '255.255.0.0'}})
    before_lines, after_lines = text.splitlines(), after.splitlines()
    assert after_lines[0] == before_lines[0] and '...' in after_lines
    assert 'gateway_0=29.1.0.254' in after_lines and 'gateway_0=29.1.0.1' not in after_lines
    assert after_lines[-2:] == ['address_3=29.1.1.3', 'netmask_3=255.255.0.0']
    assert 'send_arp_status_7=1' in after_lines and len(after_lines) == len(before_lines) + 2
    assert H.parse_hccn_conf(after)[0]['send_arp_status'] == '1'


def test_render_adds_beside_the_device_and_sets_every_duplicate():
    text = 'address_0=10.0.0.1\n# card 1\naddress_1=10.0.0.2\naddress_1=10.0.0.9\n'
    after = H.render_hccn_conf(text, {0: {'netmask': '255.255.255.0'}, 1: {'address': '10.0.0.3'}})
    assert after == 'address_0=10.0.0.1\nnetmask_0=255.255.255.0\n# card 1\naddress_1=10.0.0.3\naddress_1=10.0.0.3\n'
    assert H.render_hccn_conf('', {2: {'address': '10.0.0.5'}}) == 'address_2=10.0.0.5\n'


# --- declared devices -------------------------------------------------------------------------------------------------

def test_validate_normalises_netmask_and_prefix():
    [item] = H.validate_devices([{'id': 0, 'address': '10.0.0.11', 'netmask': '24', 'tls': False}])
    assert item == {'id': 0, 'index': 0, 'address': '10.0.0.11', 'netmask': '255.255.255.0', 'gateway': None,
                    'netdetect': None, 'tls': False}


@pytest.mark.parametrize('devices, message', [
    ([{'id': 0, 'address': '10.0.0.300'}], r'^devices\[0\]\.address: .* is not an IPv4 address'),
    ([{'id': 0, 'address': '10.0.0.1', 'netmask': '255.0.255.0'}], r'^devices\[0\]\.netmask: .* not an IPv4 netmask'),
    ([{'id': 0, 'netmask': '0.0.0.0'}], r'^devices\[0\]\.netmask'),
    ([{'id': 0, 'address': '224.0.0.1'}], r'^devices\[0\]\.address: .*multicast'),
    ([{'id': 0, 'address': '10.0.0.0', 'netmask': '24'}], r'^devices\[0\]\.address: .* network address'),
    ([{'id': 0, 'address': '10.0.0.255', 'netmask': '24'}], r'^devices\[0\]\.address: .* broadcast address'),
    ([{'id': 0, 'address': '10.0.0.1', 'netmask': '24', 'gateway': '10.0.1.1'}], r'^devices\[0\]\.gateway: .*outside'),
    ([{'id': 0}, {'id': 0}], r'^devices\[1\]\.id: device 0 is already declared by devices\[0\]'),
    ([{'id': 0, 'address': '10.0.0.1'}, {'id': 1, 'address': '10.0.0.1'}], r'^devices\[1\]\.address: .*devices\[0\]'),
    ([{'id': -1}], r'^devices\[0\]\.id'),
    ([{'id': 0, 'mtu': 9000}], r'^devices\[0\]: unknown keys mtu'),
    ([{'id': 0, 'tls': 'no'}], r'^devices\[0\]\.tls'),
])
def test_validate_names_the_entry_to_fix(devices, message):
    with pytest.raises(ValueError, match=message):
        H.validate_devices(devices)


@pytest.mark.parametrize('netmask', ['0', 0, '/0', '00', '0.0.0.0', ' 0.0.0.0', '0.0.0.255', '255.0.255.0',
                                     '255.255.255.1', '33', '255.255.255.0/24', 'True', '24.0', '0x18', '\u0662\u0664'])
def test_a_netmask_is_read_strictly_and_0_is_never_planned(netmask):
    """No 0.0.0.0 (nor a hostmask, nor a mask with holes) ever reaches hccn_tool -ip -s: the entry is named."""
    with pytest.raises(ValueError, match=r"^devices\[0\]\.netmask: .* is not an IPv4 netmask \(.*\): give a prefix "
                                         r"length from 1 to 32"):
        H.validate_devices([{'id': 0, 'address': '10.0.0.11', 'netmask': netmask}])


@pytest.mark.parametrize('netmask, dotted', [('24', '255.255.255.0'), (' /16 ', '255.255.0.0'), ('1', '128.0.0.0'),
                                             ('32', '255.255.255.255'), ('255.255.254.0', '255.255.254.0')])
def test_a_netmask_as_a_prefix_or_a_contiguous_mask_is_dotted(netmask, dotted):
    assert H.validate_devices([{'id': 0, 'netmask': netmask}])[0]['netmask'] == dotted


@pytest.mark.parametrize('key', ['address', 'gateway', 'netdetect'])
@pytest.mark.parametrize('address, network', [
    ('127.0.0.1', 'loopback'), ('127.255.255.254', 'loopback'), ('0.0.0.0', 'unspecified'), ('0.1.2.3', 'unspecified'),
    ('169.254.1.1', 'link-local'), ('224.0.0.1', 'multicast'), ('239.1.1.1', 'multicast'), ('240.0.0.1', 'reserved'),
    ('255.255.255.255', 'reserved'),
])
def test_an_address_in_a_network_not_for_hosts_is_refused_naming_the_entry(key, address, network):
    with pytest.raises(ValueError, match=r'^devices\[0\]\.%s: %s cannot be a NIC address: it is in the %s network'
                       % (key, re.escape(address), network)):
        H.validate_devices([{'id': 0, key: address}])


# --- the plan ---------------------------------------------------------------------------------------------------------

NOW = {0: {'address': '10.20.11.11', 'netmask': '255.255.255.0', 'gateway': None, 'netdetect': None, 'tls': True},
       1: {'address': None, 'netmask': None, 'gateway': None, 'netdetect': None, 'tls': True}}


def test_plan_sets_only_what_differs_in_order_and_persists():
    declared = H.validate_devices([
        {'id': 0, 'address': '10.20.11.11', 'netmask': '255.255.255.0', 'gateway': '10.20.11.1', 'tls': False},
        {'id': 1, 'address': '10.20.11.12', 'netmask': '24', 'netdetect': '10.20.11.1'}])
    conf = load_fixture(CONF_MINIMAL)
    commands, after, expected = H.plan_changes(declared, NOW, conf)
    assert commands == [['-i', '0', '-gateway', '-s', 'gateway', '10.20.11.1'],
                        ['-i', '0', '-tls', '-s', 'enable', '0'],
                        ['-i', '1', '-ip', '-s', 'address', '10.20.11.12', 'netmask', '255.255.255.0'],
                        ['-i', '1', '-netdetect', '-s', 'address', '10.20.11.1']]
    added = [line for line in after.splitlines() if line not in conf.splitlines()]
    assert added == ['gateway_0=10.20.11.1', 'netdetect_1=10.20.11.1']
    assert expected[0]['tls'] is False and expected[1]['address'] == '10.20.11.12'


def test_plan_is_empty_when_everything_is_as_declared():
    declared = H.validate_devices([{'id': 0, 'address': '10.20.11.11', 'netmask': '255.255.255.0'}])
    conf = load_fixture(CONF_MINIMAL)
    assert H.plan_changes(declared, NOW, conf) == ([], conf, {0: NOW[0]})


def test_plan_persists_a_live_value_missing_from_the_file_without_a_command():
    declared = H.validate_devices([{'id': 0, 'address': '10.20.11.11', 'netmask': '255.255.255.0'}])
    commands, after, _expected = H.plan_changes(declared, NOW, '# mine\n')
    assert commands == [] and after == '# mine\naddress_0=10.20.11.11\nnetmask_0=255.255.255.0\n'


def test_plan_keeps_the_current_netmask_for_an_address_alone_and_needs_one_when_there_is_none():
    declared = H.validate_devices([{'id': 0, 'address': '10.20.11.21'}])
    commands = H.plan_changes(declared, NOW, '')[0]
    assert commands == [['-i', '0', '-ip', '-s', 'address', '10.20.11.21', 'netmask', '255.255.255.0']]
    with pytest.raises(ValueError, match=re.escape('devices[0].netmask: device 1 has no netmask')):
        H.plan_changes(H.validate_devices([{'id': 1, 'address': '10.20.11.22'}]), NOW, '')


def test_plan_rejects_a_gateway_outside_the_current_subnet():
    with pytest.raises(ValueError, match=r'devices\[0\]\.gateway: 10\.9\.9\.1 is outside'):
        H.plan_changes(H.validate_devices([{'id': 0, 'gateway': '10.9.9.1'}]), NOW, '')


def test_differences_name_entry_and_values():
    declared = H.validate_devices([{'id': 0, 'tls': False}])
    assert H.differences(declared, NOW) == ['devices[0].tls: declared False, hccn_tool -i 0 shows True']
