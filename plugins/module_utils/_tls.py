# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The TLS files of a service checked as its clients will use them, before they are put in place: a certificate, its
key and the CA clients verify against, and the name clients ask for. Python's ``ssl`` does the checking (nothing
else is needed on the controller or a node): the key and certificate are loaded as a server loads them, and one
handshake runs in memory between that server and a client that trusts only the CA and checks the name, so what
passes here is what the health gate, the benchmark and a scraper accept (the chain, the validity dates, the name in
the subjectAltName). No traffic: the handshake's bytes go from one memory buffer to the other.
"""

from __future__ import annotations

import ssl

# Handshake rounds between the two ends in memory: TLS 1.2 and 1.3 need 2 to 3; more is a bug, not a slow peer.
MAX_ROUNDS = 16


class _Refused(Exception):
    """An encrypted key: vLLM (--ssl-keyfile) takes no passphrase."""


def _no_passphrase():
    raise _Refused()


def _readable(role, path):
    """Why ``path`` cannot be read as the file ``role`` names, '' when it can."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read(1 << 20)
    except (IOError, OSError) as error:
        return '%s %s cannot be read: %s' % (role, path, error.strerror or error)
    if b'-----BEGIN ' not in data:
        return '%s %s is not PEM (no -----BEGIN line)' % (role, path)
    return ''


def _pump(client, server, client_out, client_in, server_out, server_in):
    """Run the handshake of ``client`` and ``server`` (SSLObjects over memory BIOs) to its end; raises the ssl error
    of the side that refused."""
    client_done = server_done = False
    for _round in range(MAX_ROUNDS):
        for name, end, done in (('client', client, client_done), ('server', server, server_done)):
            if done:
                continue
            try:
                end.do_handshake()
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                continue
            if name == 'client':
                client_done = True
            else:
                server_done = True
        server_in.write(client_out.read())
        client_in.write(server_out.read())
        if client_done and server_done:
            return
    raise ssl.SSLError('the handshake did not end within %d rounds' % MAX_ROUNDS)


def check_pair(cert, key, ca, server_name, variables=None):
    """``{'problems': [...], 'not_after', 'subject_alt_names'}`` of the certificate file ``cert``, the key file ``key``
    and the CA file ``ca`` for clients that ask for ``server_name``: problems name the variable of each file
    (``variables``: {'cert', 'key', 'ca', 'server_name'} -> the variable's name) and say why: unreadable, not PEM,
    an encrypted key, a key that is not the certificate's, a certificate the CA did not sign, expired or not yet
    valid, or without ``server_name`` in its subjectAltName."""
    names = {'cert': 'the certificate', 'key': 'the key', 'ca': 'the CA', 'server_name': 'the server name'}
    names.update(variables or {})
    result = {'problems': [], 'not_after': None, 'subject_alt_names': []}
    for role, path in (('cert', cert), ('key', key), ('ca', ca)):
        problem = _readable(names[role], path)
        if problem:
            result['problems'].append(problem)
    if result['problems']:
        return result
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        server_context.load_cert_chain(cert, key, password=_no_passphrase)
    except _Refused:
        result['problems'].append('%s %s is encrypted: vLLM takes no passphrase (--ssl-keyfile); give it unencrypted, '
                                  'readable by root only' % (names['key'], key))
        return result
    except ssl.SSLError as error:
        reason = getattr(error, 'reason', None) or str(error)
        if 'KEY_VALUES_MISMATCH' in str(error) or reason == 'KEY_VALUES_MISMATCH':
            why = 'it is not the key of %s %s' % (names['cert'], cert)
        else:
            why = 'they do not load as a certificate and its key (%s)' % reason
        result['problems'].append('%s %s and %s %s: %s' % (names['cert'], cert, names['key'], key, why))
        return result
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        client_context.load_verify_locations(cafile=ca)
    except ssl.SSLError as error:
        result['problems'].append('%s %s holds no CA certificate that loads (%s)' % (names['ca'], ca, error))
        return result
    client_in, client_out, server_in, server_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    try:
        client = client_context.wrap_bio(client_in, client_out, server_hostname=server_name)
    except (TypeError, ValueError, UnicodeError) as error:
        result['problems'].append('%s %r is not a host name or address (%s)' % (names['server_name'], server_name, error))
        return result
    server = server_context.wrap_bio(server_in, server_out, server_side=True)
    try:
        _pump(client, server, client_out, client_in, server_out, server_in)
    except ssl.SSLCertVerificationError as error:
        result['problems'].append(
            'certificate verification failed: %s %s against %s %s for the name %s (%s): %s' % (
                names['cert'], cert, names['ca'], ca, server_name, names['server_name'],
                error.verify_message or error.reason))
        return result
    except ssl.SSLError as error:
        result['problems'].append('%s %s with %s %s: the TLS handshake failed (%s)' % (
            names['cert'], cert, names['key'], key, error))
        return result
    peer = client.getpeercert() or {}
    result['not_after'] = peer.get('notAfter')
    result['subject_alt_names'] = ['%s:%s' % (kind, value) for kind, value in peer.get('subjectAltName', ())]
    return result
