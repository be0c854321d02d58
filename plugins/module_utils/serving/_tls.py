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
the subjectAltName, never the subject's CN). No traffic: the handshake's bytes go from one memory buffer to the other.
Each file is read once, the collection's one safe way (_files: a regular file only, bounded), and the key must be
readable by its owner only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import stat
import tempfile

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, read_existing_file

# Handshake rounds between the two ends in memory: TLS 1.2 and 1.3 need 2 to 3; more is a bug, not a slow peer.
MAX_ROUNDS = 16
# A certificate chain, a key or a CA bundle larger than this is none (a system's whole CA bundle is a few hundred KB).
MAX_PEM_BYTES = 1 << 20
# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH: the name is not the certificate's.
NAME_MISMATCH = (62, 64)


class _Refused(Exception):
    """An encrypted key: vLLM (--ssl-keyfile) takes no passphrase."""


def _no_passphrase():
    raise _Refused()


def _read_pem(role, path):
    """``(bytes, problem)``: the PEM file ``path`` read the collection's one safe way (a regular file only, never a
    FIFO or a device, at most MAX_PEM_BYTES), or None and why not, naming ``role``."""
    try:
        data = read_existing_file(path, MAX_PEM_BYTES, 'a PEM file')
    except UnreadableFile as error:
        return None, '%s %s cannot be read: %s' % (role, path, error.reason)
    if b'-----BEGIN ' not in data:
        return None, '%s %s is not PEM (no -----BEGIN line)' % (role, path)
    return data, ''


def key_mode_problem(role, path):
    """Why the private key file ``path`` is open to others, '' when only its owner may read or write it. Its group too
    is refused: no account needs it - the role installs the key root-only (0600) and gives it to a native service as a
    systemd credential (LoadCredential=, read by systemd as root) and to a container's root - and a key its group may
    read is a key a group of people may read."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError as error:
        return '%s %s cannot be read: %s' % (role, path, error.strerror or error)
    if mode & 0o077:
        return ('%s %s has mode %04o: its group or others may %s it; a private key must be readable by its owner only '
                '(chmod 600 %s)' % (role, path, mode, 'read' if mode & 0o044 else 'open', path))
    return ''


def _write_all(descriptor, blob):
    view = memoryview(blob)
    while view:
        view = view[os.write(descriptor, view):]


def _memory_files(blobs):
    """Descriptors of anonymous memory files (memfd) holding ``blobs``, None where the system has none."""
    memfd_create = getattr(os, 'memfd_create', None)
    if memfd_create is None or not os.path.isdir('/proc/self/fd'):
        return None
    descriptors = []
    try:
        for blob in blobs:
            descriptors.append(memfd_create('kunpeng-ascend-vllm-tls', getattr(os, 'MFD_CLOEXEC', 0)))
            _write_all(descriptors[-1], blob)
    except OSError:  # a kernel or seccomp filter without memfd_create: the private directory instead
        for descriptor in descriptors:
            os.close(descriptor)
        return None
    return descriptors


@contextlib.contextmanager
def _private_copies(*blobs):
    """Paths of private copies of ``blobs`` for OpenSSL, which loads a key and its certificate only from files: the
    bytes already read (no file is opened twice, so none can have become a FIFO meanwhile), in anonymous memory where
    Linux has it (memfd: never on disk), else in a directory of this process's own (0700), removed afterwards."""
    descriptors = _memory_files(blobs)
    if descriptors is not None:
        try:
            yield ['/proc/self/fd/%d' % descriptor for descriptor in descriptors]
        finally:
            for descriptor in descriptors:
                os.close(descriptor)
        return
    directory = tempfile.mkdtemp(prefix='kunpeng-ascend-vllm-tls-')
    try:
        paths = []
        for position, blob in enumerate(blobs):
            paths.append(os.path.join(directory, str(position)))
            descriptor = os.open(paths[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _write_all(descriptor, blob)
            finally:
                os.close(descriptor)
        yield paths
    finally:
        shutil.rmtree(directory, ignore_errors=True)


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


def _handshake(server_context, client_context, server_name):
    """The client end of one handshake in memory between ``server_context`` and ``client_context`` asking for
    ``server_name``; raises what the client or the server raised (ValueError: the name is no host name)."""
    client_in, client_out, server_in, server_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context.wrap_bio(client_in, client_out, server_hostname=server_name)
    server = server_context.wrap_bio(server_in, server_out, server_side=True)
    _pump(client, server, client_out, client_in, server_out, server_in)
    return client


def _client_context(ca_text, check_name=True):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = check_name
    if check_name:
        # The name is looked for in the subjectAltName only, never in the subject's CN: browsers, Go and Python's own
        # HTTPS clients ignore the CN, so a certificate without a subjectAltName is one they refuse.
        context.hostname_checks_common_name = False
    context.load_verify_locations(cadata=ca_text)
    return context


def _alt_names(peer):
    return ['%s:%s' % (kind, value) for kind, value in (peer or {}).get('subjectAltName', ())]


def check_pair(cert, key, ca, server_name, variables=None):
    """``{'problems': [...], 'not_after', 'subject_alt_names'}`` of the certificate file ``cert``, the key file ``key``
    and the CA file ``ca`` for clients that ask for ``server_name``: problems name the variable of each file
    (``variables``: {'cert', 'key', 'ca', 'server_name'} -> the variable's name) and say why: unreadable (missing, not
    a regular file, too large), not PEM, a key its group or others may read, an encrypted key, a key that is not the
    certificate's, a certificate the CA did not sign, expired or not yet valid, without a subjectAltName, or without
    ``server_name`` in it. Each file is read once, the collection's one safe way (_files)."""
    names = {'cert': 'the certificate', 'key': 'the key', 'ca': 'the CA', 'server_name': 'the server name'}
    names.update(variables or {})
    result = {'problems': [], 'not_after': None, 'subject_alt_names': []}
    data = {}
    for role, path in (('cert', cert), ('key', key), ('ca', ca)):
        data[role], problem = _read_pem(names[role], path)
        if not problem and role == 'key':
            problem = key_mode_problem(names[role], path)
        if problem:
            result['problems'].append(problem)
    if result['problems']:
        return result
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        with _private_copies(data['cert'], data['key']) as (cert_copy, key_copy):
            server_context.load_cert_chain(cert_copy, key_copy, password=_no_passphrase)
    except _Refused:
        result['problems'].append('%s %s is encrypted: vLLM takes no passphrase (--ssl-keyfile); give it unencrypted, '
                                  'readable by its owner only' % (names['key'], key))
        return result
    except ssl.SSLError as error:
        reason = getattr(error, 'reason', None) or str(error)
        if 'KEY_VALUES_MISMATCH' in str(error) or reason == 'KEY_VALUES_MISMATCH':
            why = 'it is not the key of %s %s' % (names['cert'], cert)
        else:
            why = 'they do not load as a certificate and its key (%s)' % reason
        result['problems'].append('%s %s and %s %s: %s' % (names['cert'], cert, names['key'], key, why))
        return result
    ca_text = data['ca'].decode('ascii', 'replace')
    try:
        client_context = _client_context(ca_text)
    except ssl.SSLError as error:
        result['problems'].append('%s %s holds no CA certificate that loads (%s)' % (names['ca'], ca, error))
        return result
    try:
        client = _handshake(server_context, client_context, server_name)
    except ssl.SSLCertVerificationError as error:  # first: it is a ValueError too
        result['problems'].append(
            'certificate verification failed: %s %s against %s %s for the name %s (%s): %s' % (
                names['cert'], cert, names['ca'], ca, server_name, names['server_name'],
                _name_mismatch(server_context, ca_text, server_name, error) or error.verify_message or error.reason))
        return result
    except ssl.SSLError as error:
        result['problems'].append('%s %s with %s %s: the TLS handshake failed (%s)' % (
            names['cert'], cert, names['key'], key, error))
        return result
    except (TypeError, ValueError, UnicodeError) as error:
        result['problems'].append('%s %r is not a host name or address (%s)' % (names['server_name'], server_name, error))
        return result
    peer = client.getpeercert() or {}
    result['not_after'] = peer.get('notAfter')
    result['subject_alt_names'] = _alt_names(peer)
    if not result['subject_alt_names']:
        # Where OpenSSL ignores hostname_checks_common_name (before 1.1.1l) a CN alone passed the handshake.
        result['problems'].append('%s %s has no subjectAltName: clients look for the name %s (%s) there only, never in '
                                  'the subject\'s CN' % (names['cert'], cert, server_name, names['server_name']))
    return result


def _name_mismatch(server_context, ca_text, server_name, error):
    """When the handshake failed on the name alone, why, with the names the certificate has (from a handshake that
    checks everything but the name); None for any other failure."""
    if error.verify_code not in NAME_MISMATCH:
        return None
    try:
        peer = _handshake(server_context, _client_context(ca_text, check_name=False), server_name).getpeercert()
    except (ssl.SSLError, ValueError):
        return None
    alt_names = _alt_names(peer)
    if not alt_names:
        return 'it has no subjectAltName, which clients look for the name in (they ignore the subject\'s CN)'
    return '%s is not in its subjectAltName (%s)' % (server_name, ', '.join(alt_names))
