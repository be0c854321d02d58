# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_tls.check_pair on the TLS test set (tests/fixtures/tls): each way a client would refuse the pair, a key others
may read, a certificate without a subjectAltName, and files that are no regular file (never blocking)."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import tempfile

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _tls
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._tls import check_pair
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES, fails_after

FIXTURE_TLS = os.path.join(FIXTURES, 'tls')
NAMES = {'cert': 'vllm_service_tls_cert', 'key': 'vllm_service_tls_key', 'ca': 'vllm_service_tls_ca',
         'server_name': 'vllm_service_tls_server_name'}


@pytest.fixture
def tls(tmp_path):
    """The test set copied as an operator keeps it: the keys readable by their owner only (git checks them out 0644)."""
    directory = tmp_path / 'tls'
    shutil.copytree(FIXTURE_TLS, str(directory))
    for name in os.listdir(str(directory)):
        os.chmod(str(directory / name), 0o600 if name.endswith('.key') else 0o644)
    return str(directory)


def check(tls, cert='server.crt', key='server.key', ca='ca.crt', name='localhost'):
    return check_pair(os.path.join(tls, cert), os.path.join(tls, key), os.path.join(tls, ca), name, NAMES)


@pytest.mark.parametrize('name', ['localhost', 'vllm.example.internal', '127.0.0.1'])
def test_a_pair_the_ca_signed_for_the_name_passes_with_its_dates_and_names(tls, name):
    result = check(tls, name=name)
    assert result == {'problems': [], 'not_after': 'Jan  1 00:00:00 2126 GMT',
                      'subject_alt_names': ['DNS:localhost', 'DNS:vllm.example.internal', 'IP Address:127.0.0.1']}


@pytest.mark.parametrize('kwargs, expected', [
    ({'name': 'node9.example.internal'},
     "certificate verification failed: vllm_service_tls_cert %s/server.crt against vllm_service_tls_ca %s/ca.crt for "
     "the name node9.example.internal (vllm_service_tls_server_name): node9.example.internal is not in its "
     "subjectAltName (DNS:localhost, DNS:vllm.example.internal, IP Address:127.0.0.1)"),
    ({'name': '10.0.0.1'},
     "certificate verification failed: vllm_service_tls_cert %s/server.crt against vllm_service_tls_ca %s/ca.crt for "
     "the name 10.0.0.1 (vllm_service_tls_server_name): 10.0.0.1 is not in its subjectAltName (DNS:localhost, "
     "DNS:vllm.example.internal, IP Address:127.0.0.1)"),
    ({'ca': 'other-ca.crt'},
     'certificate verification failed: vllm_service_tls_cert %s/server.crt against vllm_service_tls_ca '
     '%s/other-ca.crt for the name localhost (vllm_service_tls_server_name): unable to get local issuer certificate'),
    ({'cert': 'expired.crt'},
     'certificate verification failed: vllm_service_tls_cert %s/expired.crt against vllm_service_tls_ca %s/ca.crt '
     'for the name localhost (vllm_service_tls_server_name): certificate has expired'),
    ({'key': 'other.key'},
     'vllm_service_tls_cert %s/server.crt and vllm_service_tls_key %s/other.key: it is not the key of '
     'vllm_service_tls_cert %s/server.crt'),
    ({'key': 'encrypted.key'},
     'vllm_service_tls_key %s/encrypted.key is encrypted: vLLM takes no passphrase (--ssl-keyfile); give it '
     'unencrypted, readable by its owner only'),
    ({'key': 'absent.key'}, 'vllm_service_tls_key %s/absent.key cannot be read: does not exist'),
    ({'ca': 'README.md'}, 'vllm_service_tls_ca %s/README.md is not PEM (no -----BEGIN line)'),
    ({'ca': 'server.key'}, 'vllm_service_tls_ca %s/server.key holds no CA certificate that loads ('),
])
def test_each_refusal_names_the_variable_the_file_and_why(tls, kwargs, expected):
    result = check(tls, **kwargs)
    text = expected.replace('%s', tls)
    assert len(result['problems']) == 1 and result['problems'][0].startswith(text), result['problems']
    assert (result['not_after'], result['subject_alt_names']) == (None, [])


def test_every_unreadable_file_is_named_at_once(tls):
    result = check(tls, cert='a.crt', key='b.key', ca='c.crt')
    assert [problem.split(' ', 1)[0] for problem in result['problems']] == \
        ['vllm_service_tls_cert', 'vllm_service_tls_key', 'vllm_service_tls_ca']


def test_a_name_that_is_no_host_name_is_refused_not_raised(tls):
    result = check(tls, name='bad\x00name')
    assert len(result['problems']) == 1 and 'is not a host name or address' in result['problems'][0]


# --------------------------------------------------------------------------------------------- subjectAltName

@pytest.mark.parametrize('name', ['localhost', 'LOCALHOST', '127.0.0.1', 'vllm.example.internal'])
def test_a_certificate_without_a_subject_alt_name_is_refused_whatever_its_cn(tls, name):
    result = check(tls, cert='nosan.crt', ca='nosan-ca.crt', name=name)
    assert result['problems'] == [
        'certificate verification failed: vllm_service_tls_cert %s/nosan.crt against vllm_service_tls_ca '
        '%s/nosan-ca.crt for the name %s (vllm_service_tls_server_name): it has no subjectAltName, which clients look '
        "for the name in (they ignore the subject's CN)" % (tls, tls, name)]
    assert (result['not_after'], result['subject_alt_names']) == (None, [])


def test_the_certificate_without_a_subject_alt_name_is_one_a_cn_checking_client_takes(tls):
    # The refusal above is the SAN rule's, not another fault of the test certificate: a client that still reads the
    # CN (Python's default, hostname_checks_common_name) accepts it for localhost.
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(os.path.join(tls, 'nosan.crt'), os.path.join(tls, 'server.key'))
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(os.path.join(tls, 'nosan-ca.crt'))
    assert client.hostname_checks_common_name
    peer = _tls._handshake(server, client, 'localhost').getpeercert()
    assert 'subjectAltName' not in peer and peer['subject'] == ((('commonName', 'localhost'),),)


def test_where_openssl_still_reads_the_cn_a_certificate_without_san_is_refused_after_the_handshake(tls, monkeypatch):
    # OpenSSL before 1.1.1l ignores hostname_checks_common_name: the handshake then passes on the CN alone.
    real = _tls._client_context

    def cn_reading(ca_text, check_name=True):
        context = real(ca_text, check_name)
        context.hostname_checks_common_name = True
        return context
    monkeypatch.setattr(_tls, '_client_context', cn_reading)
    result = check(tls, cert='nosan.crt', ca='nosan-ca.crt')
    assert result['problems'] == [
        "vllm_service_tls_cert %s/nosan.crt has no subjectAltName: clients look for the name localhost "
        "(vllm_service_tls_server_name) there only, never in the subject's CN" % tls]


# ------------------------------------------------------------------------------------------ the key's mode

@pytest.mark.parametrize('mode', [0o600, 0o400, 0o700])
def test_a_key_only_its_owner_may_open_passes(tls, mode):
    os.chmod(os.path.join(tls, 'server.key'), mode)
    assert check(tls)['problems'] == []


@pytest.mark.parametrize('mode, verb', [
    (0o644, 'read'), (0o640, 'read'), (0o604, 'read'), (0o660, 'read'), (0o666, 'read'), (0o440, 'read'),
    (0o404, 'read'), (0o610, 'open'), (0o620, 'open'), (0o601, 'open'), (0o602, 'open'), (0o777, 'read'),
])
def test_a_key_its_group_or_others_may_open_is_refused_naming_the_variable(tls, mode, verb):
    key = os.path.join(tls, 'server.key')
    os.chmod(key, mode)
    result = check(tls)
    assert result['problems'] == [
        'vllm_service_tls_key %s has mode %04o: its group or others may %s it; a private key must be readable by its '
        'owner only (chmod 600 %s)' % (key, mode, verb, key)]
    # Nothing is loaded from a key that is refused: no handshake, no dates.
    assert (result['not_after'], result['subject_alt_names']) == (None, [])


def test_the_certificate_and_the_ca_may_be_read_by_all(tls):
    for name in ('server.crt', 'ca.crt'):
        os.chmod(os.path.join(tls, name), 0o666)
    assert check(tls)['problems'] == []


# ------------------------------------------------------------------------------- files that are no regular file

def _created(path):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    return path


def _unix_socket(path):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    return server


# What stands where a PEM file is expected, and the reason the message gives.
HOSTILE = {
    'fifo': (os.mkfifo, 'a FIFO (named pipe), not a regular file'),
    'link to a fifo': (lambda path: (os.mkfifo(path + '.fifo'), os.symlink(path + '.fifo', path)),
                       'a FIFO (named pipe), not a regular file'),
    'dev zero': (lambda path: os.symlink('/dev/zero', path), 'a character device, not a regular file'),
    'directory': (os.mkdir, 'a directory, not a regular file'),
    'socket': (_unix_socket, 'a socket, not a regular file'),
    'huge': (lambda path: os.truncate(_created(path), _tls.MAX_PEM_BYTES + 1), 'larger than 1048576 bytes, not a PEM file'),
    'link loop': (lambda path: os.symlink(os.path.basename(path), path), 'cannot be opened: Too many levels of symbolic links'),
}


@pytest.mark.parametrize('role', ['cert', 'key', 'ca'])
@pytest.mark.parametrize('kind', sorted(HOSTILE))
def test_a_file_that_is_no_regular_file_is_refused_at_once_naming_its_variable(tls, tmp_path, role, kind):
    short = tempfile.mkdtemp(prefix='tls')  # a socket's path must be short
    path = os.path.join(short, 'hostile')
    make, reason = HOSTILE[kind]
    made = make(path)
    files = {'cert': os.path.join(tls, 'server.crt'), 'key': os.path.join(tls, 'server.key'),
             'ca': os.path.join(tls, 'ca.crt')}
    files[role] = path
    try:
        with fails_after(10):
            result = check_pair(files['cert'], files['key'], files['ca'], 'localhost', NAMES)
    finally:
        if isinstance(made, socket.socket):
            made.close()
        shutil.rmtree(short)
    assert result['problems'] == ['%s %s cannot be read: %s' % (NAMES[role], path, reason)]


# ------------------------------------------------------------------------------------- the private copies

def test_without_memfd_the_key_is_loaded_from_a_private_directory_removed_afterwards(tls, tmp_path, monkeypatch):
    monkeypatch.delattr(os, 'memfd_create', raising=False)
    scratch = tmp_path / 'scratch'
    scratch.mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(scratch))
    seen = []
    real = ssl.SSLContext.load_cert_chain

    def spying(context, certfile, keyfile=None, password=None):
        seen.append((certfile, oct(os.stat(os.path.dirname(keyfile)).st_mode & 0o777),
                     oct(os.stat(keyfile).st_mode & 0o777)))
        return real(context, certfile, keyfile, password)
    monkeypatch.setattr(ssl.SSLContext, 'load_cert_chain', spying)
    assert check(tls)['problems'] == []
    assert len(seen) == 1 and seen[0][0].startswith(str(scratch)) and seen[0][1:] == ('0o700', '0o600')
    assert os.listdir(str(scratch)) == []


def test_a_memfd_the_system_refuses_falls_back_to_the_private_directory(tls, monkeypatch):
    def refused(name, flags=0):
        raise OSError(38, 'Function not implemented')
    monkeypatch.setattr(os, 'memfd_create', refused, raising=False)
    assert check(tls)['problems'] == []


@pytest.mark.skipif(not hasattr(os, 'memfd_create'), reason='no memfd on this system')
def test_with_memfd_the_key_never_touches_a_disk(tls, monkeypatch):
    seen = []
    real = ssl.SSLContext.load_cert_chain

    def spying(context, certfile, keyfile=None, password=None):
        seen.append((certfile, keyfile))
        return real(context, certfile, keyfile, password)
    monkeypatch.setattr(ssl.SSLContext, 'load_cert_chain', spying)
    before = set(os.listdir('/proc/self/fd'))
    assert check(tls)['problems'] == []
    assert all(path.startswith('/proc/self/fd/') for path in seen[0])
    assert set(os.listdir('/proc/self/fd')) == before
