# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The decisions of a multi-node group's recovery (role vllm_cluster's ``vllm-group-watch`` and vllm_service's
``tcp-port-wait`` programs, docs/crash-recovery.md). vLLM 0.32.0's data-parallel engines do not notice a member of
their group dying: the head keeps giving requests to a dead rank, and a restarted rank waits for a front end that
never answers. The watch on each node reads, from the node's own socket table, whether each other member is joined:
an established TCP connection of the service's user with that member's address on a port other than the
group's RPC port (a rank waiting in its handshake holds only that one). A member seen joined since the service's
current start and then missing for ``polls`` reads in a row restarts the local service, once per start; the other
ranks wait for the head's RPC port before they start, so the group comes back head first.

Everything here is pure: the host's ``/proc`` texts and the unit's state come in, decisions and messages go out.
Standard library only: the roles ship this file to the host beside the programs.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._bounded_wait import tries_for
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import parse_show_one

# /proc/net/tcp's state column: only established connections count.
TCP_ESTABLISHED = '01'
# Exit codes of the programs.
OK = 0
FAILED = 1
USAGE = 2

_HEX_ADDRESS = re.compile(r'^([0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}):([0-9A-Fa-f]{4})$')


def _hex_ip(text):
    """The address of /proc/net/tcp's hex form: IPv4 is one little-endian word, IPv6 four of them."""
    raw = bytes.fromhex(text)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b''.join(raw[index:index + 4][::-1] for index in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    # A v4 peer of a dual-stack socket shows as ::ffff:a.b.c.d: compare it as the v4 address it is.
    return str(address.ipv4_mapped) if address.ipv4_mapped else str(address)


def normalise_address(text):
    """``text`` as the watch compares addresses (IPv4-mapped IPv6 as IPv4); ValueError when it is not an address."""
    address = ipaddress.ip_address(str(text).strip().strip('[]'))
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return str(address.ipv4_mapped)
    return str(address)


def parse_proc_net_tcp(text):
    """The connections of a ``/proc/net/tcp`` or ``/proc/net/tcp6`` text: dicts ``local`` and ``remote`` (address,
    port), ``state`` (the hex state, '01' established) and ``uid`` (the socket's owner). Returns ``(connections, warnings)``: a line
    that does not have the kernel's columns is a warning, never a guess."""
    connections = []
    warnings = []
    for number, line in enumerate((text or '').splitlines(), 1):
        fields = line.split()
        if not fields or fields[0] == 'sl':
            continue
        if len(fields) < 10:
            warnings.append('line %d of the socket table has %d columns, not the kernel\'s 10 or more: %r'
                            % (number, len(fields), line.strip()))
            continue
        local, remote = _HEX_ADDRESS.match(fields[1]), _HEX_ADDRESS.match(fields[2])
        if not local or not remote or not fields[7].isdigit():
            warnings.append('line %d of the socket table is not in the kernel\'s format: %r' % (number, line.strip()))
            continue
        connections.append({
            'local': (_hex_ip(local.group(1)), int(local.group(2), 16)),
            'remote': (_hex_ip(remote.group(1)), int(remote.group(2), 16)),
            'state': fields[3].upper(),
            'uid': int(fields[7]),
        })
    return connections, warnings


def joined_peers(connections, peers, rpc_port, uid=None):
    """For each address of ``peers``: whether one established connection of the service (its sockets are owned by
    ``uid``, the user the service runs as; None counts every socket, as for a container running as root) has that
    address at its other end and uses no ``rpc_port`` at either end."""
    wanted = {normalise_address(peer): peer for peer in peers}
    joined = {peer: False for peer in peers}
    for connection in connections:
        if connection['state'] != TCP_ESTABLISHED or (uid is not None and connection['uid'] != uid):
            continue
        if rpc_port in (connection['local'][1], connection['remote'][1]):
            continue
        peer = wanted.get(connection['remote'][0])
        if peer is not None:
            joined[peer] = True
    return joined


def decide(state, unit, joined, polls):
    """One read of the watch. ``state`` is the previous read's (a dict, or None the first time), ``unit`` the
    service's ``{active, invocation}`` now, ``joined`` the members' (joined_peers), ``polls`` the reads in a row a
    member seen joined must be missing before the service restarts.

    Returns ``(state, action, messages)``: ``action`` is ``restart`` or None; the state starts again at each start
    of the service (its invocation id), so that a start, which joins its members over minutes, never counts as a
    loss, a member never seen joined (a node that did not come back) never restarts the service, and one start
    restarts at most once."""
    if polls < 1:
        raise ValueError('the reads in a row before a restart must be 1 or more')
    state = state if isinstance(state, dict) else {}
    invocation = unit.get('invocation') or ''
    if not unit.get('active') or not invocation:
        return {'invocation': '', 'seen': [], 'missing': {}, 'restarted': False}, None, []
    if state.get('invocation') != invocation:
        state = {'invocation': invocation, 'seen': [], 'missing': {}, 'restarted': False}
    seen = list(state.get('seen') or [])
    missing = dict(state.get('missing') or {})
    messages = []
    for peer in sorted(joined):
        if joined[peer]:
            if peer not in seen:
                seen.append(peer)
                messages.append('%s joined' % peer)
            if missing.pop(peer, 0):
                messages.append('%s is back' % peer)
        elif peer in seen:
            missing[peer] = missing.get(peer, 0) + 1
            if missing[peer] == 1:
                messages.append('%s holds no connection of the group any more' % peer)
    lost = sorted(peer for peer, count in missing.items() if count >= polls)
    action = None
    restarted = bool(state.get('restarted'))
    if lost and not restarted:
        action = 'restart'
        restarted = True
        messages.append('lost %s for %d reads in a row: restarting the service so that the group forms again'
                        % (', '.join(lost), polls))
    return {'invocation': invocation, 'seen': sorted(seen), 'missing': missing, 'restarted': restarted}, action, messages


def parse_unit_show(text):
    """``systemctl show --property=ActiveState,InvocationID`` (key=value lines, read by _systemd.parse_show_one, the
    collection's one reader of systemctl show) as ``{active, invocation}``."""
    values = parse_show_one(text)
    return {'active': values.get('ActiveState') == 'active', 'invocation': values.get('InvocationID', '')}


# What an endpoint may hold: a host name, an IPv4 address or an IPv6 one (in brackets), and a port. Nothing else, so
# that a URL with a scheme, a path or user:password@ is refused, and shown only when it holds nothing but these.
_ENDPOINT_TEXT = re.compile(r'\A[A-Za-z0-9._:\[\]-]+\Z')


def parse_endpoint(text):
    """``host:port`` (``[v6]:port`` for IPv6) as ``(host, port)``; ValueError naming what is wrong (the text quoted
    only when it holds nothing but a host's and a port's characters: never a password a URL may carry)."""
    text = str(text).strip()
    written, colon, port = text.rpartition(':')
    bracketed = written.startswith('[') and written.endswith(']')
    host = written[1:-1] if bracketed else written
    if (not colon or not host or not _ENDPOINT_TEXT.match(text) or not port.isdigit() or not 0 < int(port) < 65536
            or '[' in host or ']' in host):
        raise ValueError('%s is not host:port (such as 10.0.0.1:13389)'
                         % (repr(text) if _ENDPOINT_TEXT.match(text) else 'the endpoint given'))
    return host, int(port)


def wait_for_port(connect, endpoint, timeout, interval, sleep, log, unit='the service'):
    """Wait, bounded, until ``connect(host, port)`` succeeds (returns None; an error text otherwise): one try at
    once, then one every ``interval`` seconds until ``timeout`` seconds. Returns ``(code, message)``: OK or FAILED,
    the message naming the endpoint and the last error."""
    host, port = endpoint
    tries = tries_for(timeout, interval)
    error = None
    for attempt in range(tries):
        error = connect(host, port)
        if error is None:
            message = '%s: %s:%d accepts connections%s' % (
                unit, host, port, '' if attempt == 0 else ' after %d s' % (attempt * interval))
            log(message)
            return OK, message
        if attempt == 0:
            log('%s: waiting up to %d s for %s:%d (the head of its group) to accept connections: %s'
                % (unit, timeout, host, port, error))
        if attempt < tries - 1:
            sleep(interval)
    message = ('%s: %s:%d still refuses connections after %d s (%s): the head of the group is not serving; not '
               'starting' % (unit, host, port, timeout, error))
    log(message)
    return FAILED, message
