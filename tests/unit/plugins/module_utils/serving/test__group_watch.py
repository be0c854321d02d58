# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The decisions of a data-parallel group's recovery (module_utils/serving/_group_watch.py): the socket tables of a real
two-node vLLM 0.32.0 group (scenario multinode_vllm) read as joined or not, the watch's reads driven one by one, and
the bounded wait for the head's RPC port, driven try by try (no clock)."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _group_watch
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

HEAD_JOINED = 'proc-net-tcp_vllm-0.32.0-cpu_dp-head_rank-joined.txt'
NODE_JOINED = 'proc-net-tcp_vllm-0.32.0-cpu_dp-node_joined.txt'
NODE_WAITING = 'proc-net-tcp_vllm-0.32.0-cpu_dp-node_waiting-in-handshake.txt'
HEAD, NODE, RPC, VLLM_UID = '10.89.0.10', '10.89.0.11', 13389, 997


def table(name):
    connections, warnings = _group_watch.parse_proc_net_tcp(load_fixture(name))
    assert warnings == []
    return connections


def test_the_kernels_hex_addresses_read_as_addresses_and_ports():
    connections, warnings = _group_watch.parse_proc_net_tcp(
        '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n'
        '   0: 0B00590A:85D4 0A00590A:343D 01 00000000:00000000 00:00000000 00000000   997        0 2941041 1 0 20 4 '
        '30 10 -1\n'
        '   1: 0000000000000000FFFF00000A00590A:A0D2 0000000000000000FFFF00000B00590A:ACF4 01 00000000:00000000 '
        '00:00000000 00000000   997        0 2941099 1 0 20 4 30 10 -1\n'
        '   2: 00000000000000000000000001000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 '
        '00:00000000 00000000     0        0 2941100 1 0 100 0 0 10 0\n')
    assert warnings == []
    assert [(c['local'], c['remote'], c['state'], c['uid']) for c in connections] == [
        (('10.89.0.11', 34260), ('10.89.0.10', 13373), '01', 997),
        # An IPv4 peer of a dual-stack socket compares as the IPv4 address it is.
        (('10.89.0.10', 41170), ('10.89.0.11', 44276), '01', 997),
        (('::1', 8000), ('::', 0), '0A', 0),
    ]


@pytest.mark.parametrize('text, expected', [
    ('   0: 0B00590A:85D4 0A00590A:343D 01 00000000:00000000\n', 'has 5 columns'),
    ('   0: 0B00590A 0A00590A:343D 01 00000000:00000000 00:00000000 00000000 997 0 2941041 1\n', "not in the kernel's"),
    ('   0: 0B00590A:85D4 0A00590A:343D 01 00000000:00000000 00:00000000 00000000 vllm 0 2941041 1\n',
     "not in the kernel's"),
])
def test_a_line_not_in_the_kernels_format_is_a_warning_never_a_guess(text, expected):
    connections, warnings = _group_watch.parse_proc_net_tcp(text)
    assert connections == []
    assert len(warnings) == 1 and expected in warnings[0]


def test_a_joined_rank_holds_connections_beyond_the_rpc_port_on_both_sides():
    assert _group_watch.joined_peers(table(HEAD_JOINED), [NODE], RPC, VLLM_UID) == {NODE: True}
    assert _group_watch.joined_peers(table(NODE_JOINED), [HEAD], RPC, VLLM_UID) == {HEAD: True}


def test_a_rank_waiting_in_its_handshake_holds_only_the_rpc_port_and_is_not_joined():
    connections = table(NODE_WAITING)
    assert any(RPC in (c['local'][1], c['remote'][1]) and c['state'] == '01' for c in connections)
    assert _group_watch.joined_peers(connections, [HEAD], RPC, VLLM_UID) == {HEAD: False}


def test_only_the_service_users_sockets_count_unless_no_user_is_given():
    connections = table(HEAD_JOINED)
    assert _group_watch.joined_peers(connections, [NODE], RPC, 0) == {NODE: False}
    assert _group_watch.joined_peers(connections, [NODE], RPC) == {NODE: True}
    # A member with no connection at all, and one written as an IPv4-mapped address.
    assert _group_watch.joined_peers(connections, ['10.89.0.12', '::ffff:' + NODE], RPC, VLLM_UID) == {
        '10.89.0.12': False, '::ffff:' + NODE: True}


def run_reads(reads, polls=3):
    """The watch's reads one after another: (unit, joined) each; returns (action, messages) of each read."""
    state, results = None, []
    for unit, joined in reads:
        state, action, messages = _group_watch.decide(state, unit, joined, polls)
        results.append((action, messages))
    return results


UP = {'active': True, 'invocation': 'a1'}


def test_a_member_lost_for_the_polls_in_a_row_restarts_the_service_once():
    results = run_reads([(UP, {NODE: False})] * 2 + [(UP, {NODE: True})] + [(UP, {NODE: False})] * 5)
    assert [result[0] for result in results] == [None, None, None, None, None, 'restart', None, None]
    assert results[2][1] == ['10.89.0.11 joined']
    assert results[3][1] == ['10.89.0.11 holds no connection of the group any more']
    assert results[5][1] == ['lost 10.89.0.11 for 3 reads in a row: restarting the service so that the group forms '
                             'again']


def test_a_member_back_before_the_polls_restarts_nothing():
    reads = [(UP, {NODE: True}), (UP, {NODE: False}), (UP, {NODE: False}), (UP, {NODE: True}), (UP, {NODE: False}),
             (UP, {NODE: False})]
    results = run_reads(reads)
    assert [result[0] for result in results] == [None] * 6
    assert results[3][1] == ['10.89.0.11 is back']


def test_a_member_never_seen_joined_since_the_start_never_restarts_it():
    # The service's start (members join over minutes) and a node that does not come back are no loss.
    assert [result[0] for result in run_reads([(UP, {NODE: False})] * 10)] == [None] * 10


def test_each_start_of_the_service_starts_the_count_again():
    restarted = {'active': True, 'invocation': 'b2'}
    reads = ([(UP, {NODE: True})] + [(UP, {NODE: False})] * 3
             + [({'active': False, 'invocation': ''}, {NODE: False})]
             + [(restarted, {NODE: False})] * 4 + [(restarted, {NODE: True})] + [(restarted, {NODE: False})] * 3)
    assert [result[0] for result in run_reads(reads)] == [None, None, None, 'restart', None] + [None] * 5 + [
        None, None, 'restart']


def test_the_polls_must_be_one_or_more():
    with pytest.raises(ValueError, match='1 or more'):
        _group_watch.decide(None, UP, {NODE: True}, 0)


def test_the_units_state_reads_from_systemctl_show():
    assert _group_watch.parse_unit_show('ActiveState=active\nInvocationID=6a36ee80952c4fd4bdd435f5d31efe10\n') == {
        'active': True, 'invocation': '6a36ee80952c4fd4bdd435f5d31efe10'}
    assert _group_watch.parse_unit_show('ActiveState=activating\nInvocationID=\n') == {'active': False, 'invocation': ''}


@pytest.mark.parametrize('text, expected', [
    ('10.0.0.1:13389', ('10.0.0.1', 13389)),
    ('head-1.example:13389', ('head-1.example', 13389)),
    ('[fd00::1]:13389', ('fd00::1', 13389)),
])
def test_an_endpoint_is_host_and_port(text, expected):
    assert _group_watch.parse_endpoint(text) == expected


@pytest.mark.parametrize('text', ['10.0.0.1', '10.0.0.1:0', '10.0.0.1:65536', ':13389', '10.0.0.1:x'])
def test_an_endpoint_without_host_or_port_is_refused_by_name(text):
    with pytest.raises(ValueError, match='is not host:port'):
        _group_watch.parse_endpoint(text)


@pytest.mark.parametrize('text', ['http://10.0.0.1:13389', 'u:s3cret@10.0.0.1:13389', 'http://u:s3cret@10.0.0.1:13389',
                                  'head/x:13389', 'head 1:13389', '[fd00::1:13389', 'fd00::1]:13389',
                                  'h[1]x:13389'])
def test_a_url_path_or_credentials_is_no_endpoint_and_a_password_is_never_shown(text):
    with pytest.raises(ValueError, match='is not host:port') as raised:
        _group_watch.parse_endpoint(text)
    assert 's3cret' not in str(raised.value)


def test_the_wait_for_the_head_ends_when_its_port_accepts():
    answers = iter(['[Errno 111] Connection refused', '[Errno 111] Connection refused', None])
    lines, sleeps = [], []
    code, message = _group_watch.wait_for_port(lambda host, port: next(answers), ('10.0.0.1', 13389), 600, 2,
                                               sleeps.append, lines.append, unit='vllm.service')
    assert (code, sleeps) == (_group_watch.OK, [2, 2])
    assert lines == ['vllm.service: waiting up to 600 s for 10.0.0.1:13389 (the head of its group) to accept '
                     'connections: [Errno 111] Connection refused',
                     'vllm.service: 10.0.0.1:13389 accepts connections after 4 s']
    assert message == lines[-1]


def test_the_wait_for_the_head_is_bounded_and_names_the_last_error():
    lines, sleeps = [], []
    code, message = _group_watch.wait_for_port(lambda host, port: 'timed out', ('10.0.0.1', 13389), 5, 2,
                                               sleeps.append, lines.append, unit='vllm.service')
    assert (code, sleeps) == (_group_watch.FAILED, [2, 2, 2])
    assert message == ('vllm.service: 10.0.0.1:13389 still refuses connections after 5 s (timed out): the head of '
                       'the group is not serving; not starting')
