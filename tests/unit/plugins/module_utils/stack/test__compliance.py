# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor's compliance findings (_compliance) from observations, and the host reader's side of them
(_doctor_host: the planted EFI variable, ip route get's real answers, the key's owner and mode)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _doctor, _doctor_host
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _known_good
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _compliance
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

ROUTE_V4 = load_fixture('ip-j-route-get_iproute2-6.1_ipv4-default-via-gateway.txt')
ROUTE_V6 = load_fixture('ip-j-route-get_iproute2-6.1_ipv6-default-via-gateway.txt')
NO_ROUTE = dict(line.split('|', 1) for line in load_fixture('ip-route-get_iproute2-6.1_no-route-refusals.txt').splitlines())
# efivarfs gives the variable's 4 attribute bytes (NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS = 6, little
# endian), then its value (the kernel's Documentation/filesystems/efivarfs.rst).
SECURE_BOOT_ON = b'\x06\x00\x00\x00\x01'
SECURE_BOOT_OFF = b'\x06\x00\x00\x00\x00'
KEY = '/etc/kunpeng-ascend-vllm/tls/vllm/key.pem'
TLS_RECORD = {'name': 'vllm', 'endpoint': 'https://localhost:8000',
              'tls': {'cert': '/etc/kunpeng-ascend-vllm/tls/vllm/cert.pem', 'key': KEY,
                      'ca': '/etc/kunpeng-ascend-vllm/tls/vllm/ca.pem'}}


def status(finding):
    return finding['status'], finding['summary']


# --------------------------------------------------------------------------------------------------- secure boot

def test_secure_boot_from_the_efi_variable():
    assert status(_compliance.check_secure_boot(True, SECURE_BOOT_ON)) == (
        'pass', 'UEFI boot with Secure Boot on (SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c = 1)')
    found = _compliance.check_secure_boot(True, SECURE_BOOT_OFF)
    assert found['status'] == 'fail' and found['evidence']['variable'] == 0 and 'BIOS setup' in found['fix']


def test_no_efi_is_a_legacy_boot_and_fails():
    found = _compliance.check_secure_boot(False, None)
    assert status(found) == ('fail', 'legacy BIOS boot (no /sys/firmware/efi): Secure Boot needs UEFI')
    assert found['fix'] == _compliance.UEFI_FIX


# mokutil's messages (mokutil.c of github.com/lcp/mokutil: print_sb_state and its "not supported" case).
@pytest.mark.parametrize('text, expected', [('SecureBoot enabled\n', 'pass'), ('SecureBoot disabled\n', 'fail'),
                                            ("This system doesn't support Secure Boot\n", 'fail'),
                                            ('EFI variables are not supported on this system', 'unknown'),
                                            (None, 'unknown')])
def test_secure_boot_from_mokutil_when_the_variable_is_unreadable(text, expected):
    assert _compliance.check_secure_boot(True, None, text)['status'] == expected


# --------------------------------------------------------------------------------------------------- no internet

def lookups(**answers):
    return dict((address, _compliance.parse_route_get(*answer)) for address, answer in answers.items())


def test_a_real_default_route_to_a_public_address_fails_where_the_site_is_declared_offline():
    found = _compliance.check_offline_routes(True, {'1.1.1.1': _compliance.parse_route_get(0, ROUTE_V4, ''),
                                                    '2001:4860:4860::8888': _compliance.parse_route_get(0, ROUTE_V6, '')})
    assert status(found) == ('fail', 'the site is declared offline, but the node has a route to the internet: 1.1.1.1 '
                                     'via 10.9.0.1 dev v0; 2001:4860:4860::8888 via 2001:db8::1 dev v0')
    assert found['evidence']['routes']['1.1.1.1']['gateway'] == '10.9.0.1'
    assert 'ip route del default' in found['fix']


@pytest.mark.parametrize('case', sorted(NO_ROUTE))
def test_each_real_no_route_answer_passes(case):
    found = _compliance.check_offline_routes(True, {'8.8.8.8': _compliance.parse_route_get(2, '', NO_ROUTE[case])})
    assert status(found) == ('pass', 'the site is declared offline and the node has no route to any of 1 public '
                                     'addresses (8.8.8.8)')
    assert found['evidence']['no_route'] == {'8.8.8.8': NO_ROUTE[case]}


def test_a_blackhole_route_printed_as_json_is_no_route():
    assert _compliance.parse_route_get(0, '[{"type":"blackhole","dst":"8.8.8.8"}]', '') == {
        'route': None, 'no_route': 'blackhole route', 'error': None}


def test_not_declared_offline_is_unknown_with_the_routes_as_evidence():
    found = _compliance.check_offline_routes(False, {'1.1.1.1': _compliance.parse_route_get(0, ROUTE_V4, '')})
    assert found['status'] == 'unknown' and found['summary'].endswith('1.1.1.1 via 10.9.0.1 dev v0')
    assert 'doctor_site_offline: true' in found['fix']


def test_an_unexplained_failure_or_no_ip_is_unknown_not_a_pass():
    odd = _compliance.check_offline_routes(True, {'8.8.8.8': _compliance.parse_route_get(1, '', 'Object "route" is unknown')})
    assert odd['status'] == 'unknown' and 'could not be looked up' in odd['summary']
    assert _compliance.check_offline_routes(True, {}, error='ip was not found (iproute2)')['status'] == 'unknown'


@pytest.mark.parametrize('address, problem', [
    ('10.0.0.1', 'must be a public'), ('127.0.0.1', 'must be a public'), ('::1', 'must be a public'),
    ('224.0.0.1', 'must be a public'), ('example.com', 'must be an IP address'), (5, 'must be an IP address')])
def test_only_public_addresses_are_looked_up(address, problem):
    assert _doctor.check_inputs({'public_addresses': ['1.1.1.1', address]}, 'doctor_')[0].startswith(
        'doctor_public_addresses[1] ' + problem)


def test_the_compliance_inputs_name_their_variables():
    assert _doctor.check_inputs({'public_addresses': []}, 'doctor_') == [
        'doctor_public_addresses must be null or a non-empty list of public IP addresses; got []']
    assert _doctor.check_inputs({'ip_path': 'ip\n'}, 'doctor_') == [
        'doctor_ip_path must be null or an absolute path without control characters; got "ip\\n"']
    assert _doctor.check_inputs({'site_offline': True, 'public_addresses': list(_compliance.PUBLIC_ADDRESSES),
                                 'ip_path': '/usr/sbin/ip'}) == []


# --------------------------------------------------------------------------------------------------- the TLS key

def test_a_root_only_key_passes_and_a_readable_one_fails_naming_the_fix():
    good = {'exists': True, 'type': 'file', 'owner': 'root', 'group': 'root', 'mode': 0o600}
    assert status(_compliance.check_tls_key(TLS_RECORD, good)) == (
        'pass', 'the TLS key %s is file, owner root:root, mode 0600' % KEY)
    loose = _compliance.check_tls_key(TLS_RECORD, dict(good, mode=0o640, group='vllm'))
    assert status(loose) == ('fail', 'the TLS key %s is file, owner root:vllm, mode 0640: it must be a regular file of '
                                     'root that no one else may read or write' % KEY)
    assert loose['fix'].startswith('Make the key readable by root only: `chown root:root %s && chmod 0600 %s`'
                                   % (KEY, KEY))
    assert _compliance.check_tls_key(TLS_RECORD, dict(good, owner='vllm'))['status'] == 'fail'
    assert _compliance.check_tls_key(TLS_RECORD, dict(good, type='link'))['status'] == 'fail'
    assert _compliance.check_tls_key(TLS_RECORD, {'exists': False})['summary'].endswith('is missing')


def test_plain_http_fails_and_no_record_is_unknown():
    plain = _compliance.check_tls_key({'name': 'vllm', 'endpoint': 'http://127.0.0.1:8000', 'tls': None}, None)
    assert status(plain) == ('fail', 'the service vllm serves plain http (http://127.0.0.1:8000): no TLS key')
    assert _compliance.check_tls_key(None, None)['status'] == 'unknown'


def test_a_status_outside_the_three_is_a_bug():
    with pytest.raises(ValueError):
        _compliance.compliance_finding('x', 'ok', '', {})


# ----------------------------------------------------------------------------------------------- the host reader

class Host:
    """A reader over planted trees, ``ip`` answering from ``routes`` (address -> (rc, stdout, stderr))."""

    def __init__(self, tmp_path, routes=None, tools=('ip',)):
        self.root = tmp_path / 'root'
        self.sysfs = tmp_path / 'sys'
        self.root.mkdir()
        self.sysfs.mkdir()
        self.routes = routes or {}
        self.tools = dict((tool, '/usr/sbin/' + tool) for tool in tools)
        self.argvs = []

    def run(self, argv):
        self.argvs.append(list(argv))
        if argv[0] == '/usr/bin/mokutil':
            return CommandResult(list(argv), 0, 'SecureBoot disabled\n', '')
        rc, stdout, stderr = self.routes.get(argv[-1], (2, '', NO_ROUTE['none']))
        return CommandResult(list(argv), rc, stdout, stderr)

    def reader(self):
        return _doctor_host.HostReader(self.run, self.tools.get, str(self.root), str(self.sysfs), str(self.sysfs))


def plant_efi(host, value=None):
    efivars = host.sysfs / 'firmware' / 'efi' / 'efivars'
    efivars.mkdir(parents=True)
    if value is not None:
        (efivars / _compliance.SECURE_BOOT_VARIABLE).write_bytes(value)


def test_the_reader_reads_the_planted_efi_variable_and_asks_mokutil_only_without_it(tmp_path):
    host = Host(tmp_path, tools=('ip', 'mokutil'))
    host.tools['mokutil'] = '/usr/bin/mokutil'
    assert host.reader().secure_boot()['summary'].startswith('legacy BIOS boot (no %s/firmware/efi)' % host.sysfs)
    plant_efi(host, SECURE_BOOT_ON)
    assert host.reader().secure_boot()['status'] == 'pass' and host.argvs == []
    os.remove(str(host.sysfs / 'firmware' / 'efi' / 'efivars' / _compliance.SECURE_BOOT_VARIABLE))
    found = host.reader().secure_boot()
    assert (found['status'], found['evidence']['mokutil'], host.argvs) == (
        'fail', 'SecureBoot disabled', [['/usr/bin/mokutil', '--sb-state']])


def test_the_reader_looks_each_public_address_up_with_ip_route_get(tmp_path):
    host = Host(tmp_path, routes={'1.1.1.1': (0, ROUTE_V4, '')})
    found = host.reader().offline_routes(True, ['1.1.1.1', '8.8.8.8'])
    assert host.argvs == [['/usr/sbin/ip', '-j', 'route', 'get', '1.1.1.1'],
                          ['/usr/sbin/ip', '-j', 'route', 'get', '8.8.8.8']]
    assert found['status'] == 'fail' and list(found['evidence']['routes']) == ['1.1.1.1']
    without_ip = tmp_path / 'without-ip'
    without_ip.mkdir()
    assert Host(without_ip, tools=()).reader().offline_routes(True, ['8.8.8.8'])['summary'] == \
        'the routing table could not be read: ip was not found (iproute2)'


def test_compliance_reads_the_key_the_record_names_under_root(tmp_path):
    host = Host(tmp_path)
    plant_efi(host, SECURE_BOOT_ON)
    key = host.root / KEY.lstrip('/')
    key.parent.mkdir(parents=True)
    key.write_text('not a real key')
    key.chmod(0o644)
    found = _doctor_host.compliance(host.reader(), {'site_offline': True, 'public_addresses': ['8.8.8.8']}, TLS_RECORD)
    assert [(item['id'], item['status']) for item in found] == [
        ('secure_boot', 'pass'), ('offline_routes', 'pass'), ('tls_key', 'fail'), ('model_manifest', 'unknown')]
    assert found[2]['evidence']['key']['mode'] == 0o644
    key.chmod(0o600)
    found = _doctor_host.compliance(host.reader(), {}, TLS_RECORD)
    assert [(item['id'], item['status']) for item in found] == [
        ('secure_boot', 'pass'), ('offline_routes', 'unknown'), ('tls_key', 'pass' if os.geteuid() == 0 else 'fail'),
        ('model_manifest', 'unknown')]
    assert json.dumps(found)


# ------------------------------------------------------------------------------- the served model vs the known good

RECORD = {'name': 'vllm', 'model': '/srv/models/deepseek-v3-w8a8', 'endpoint': 'http://127.0.0.1:8000/v1'}
KNOWN_GOOD = {'model': '/srv/models/deepseek-v3-w8a8', 'model_digest': 'a' * 64, 'time': '2026-12-01T02:00:00Z'}


def test_the_served_model_with_the_known_good_manifest_passes():
    found = _compliance.check_model_manifest(RECORD, KNOWN_GOOD, '/srv/models/deepseek-v3-w8a8/SHA256SUMS', 'a' * 64)
    assert found['status'] == 'pass' and found['evidence']['known_good']['model_digest'] == 'a' * 64


@pytest.mark.parametrize('known_good, digest, status, summary', [
    (KNOWN_GOOD, 'b' * 64, 'fail', 'has digest %s, not the known good' % ('b' * 64)),
    (KNOWN_GOOD, None, 'fail', 'is missing or unreadable'),
    (dict(KNOWN_GOOD, model='/srv/models/deepseek-v3'), 'a' * 64, 'fail', 'but its known good'),
    (dict(KNOWN_GOOD, model_digest=None), 'a' * 64, 'unknown', 'recorded no manifest digest'),
    (None, 'a' * 64, 'unknown', 'no known good is recorded for the service vllm'),
])
def test_a_changed_missing_or_other_model_fails_and_no_known_good_is_unknown(known_good, digest, status, summary):
    found = _compliance.check_model_manifest(RECORD, known_good, '/srv/models/deepseek-v3-w8a8/SHA256SUMS', digest)
    assert (found['status'], summary in found['summary']) == (status, True)
    if status == 'fail':
        assert 'playbooks/rollback.yml' in found['fix']


def test_no_deployment_record_leaves_the_model_unknown():
    assert _compliance.check_model_manifest(None, KNOWN_GOOD, None, None)['status'] == 'unknown'


def test_the_reader_hashes_the_served_manifest_and_reads_the_known_good_fact(tmp_path):
    host = Host(tmp_path)
    model = host.root / 'srv' / 'models' / 'deepseek-v3-w8a8'
    model.mkdir(parents=True)
    (model / 'SHA256SUMS').write_bytes(b'0' * 64 + b'  config.json\n')
    digest = hashlib.sha256(b'0' * 64 + b'  config.json\n').hexdigest()
    facts = host.root / 'etc' / 'ansible' / 'facts.d'
    facts.mkdir(parents=True)
    summary = dict((key, None) for key in _known_good.SUMMARY_KEYS)
    summary.update(KNOWN_GOOD, model_digest=digest, stack=dict((key, None) for key in _known_good.STACK_FACTS),
                   mode='native')
    (facts / 'kunpeng_ascend_vllm_known_good.fact').write_text(json.dumps(
        {'schema': _known_good.FACT_SCHEMA, 'services': {'vllm': {'current': summary, 'previous': None}}}))
    reader = host.reader()
    assert reader.file_sha256('/srv/models/deepseek-v3-w8a8/SHA256SUMS') == digest
    assert _doctor_host.model_manifest(reader, RECORD)['status'] == 'pass'
    (model / 'SHA256SUMS').write_bytes(b'1' * 64 + b'  config.json\n')
    assert _doctor_host.model_manifest(reader, RECORD)['status'] == 'fail'
