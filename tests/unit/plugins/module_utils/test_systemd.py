# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one systemctl show parser and the one unit-name rule of the collection."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils import _systemd

# systemctl show of a service and the docker engine (systemd 252, Debian 12), trimmed to the properties asked.
TWO_UNITS = '''Id=vllm.service
LoadState=loaded
ActiveState=activating
SubState=auto-restart
NRestarts=3
Result=exit-code
MainPID=0

Id=docker.service
LoadState=not-found
ActiveState=inactive
SubState=dead
NRestarts=[not set]
MainPID=
'''


def test_blocks_are_parsed_with_numbers_and_unknown_numbers_as_none():
    service, engine = _systemd.parse_show(TWO_UNITS)
    assert service == {'Id': 'vllm.service', 'LoadState': 'loaded', 'ActiveState': 'activating',
                       'SubState': 'auto-restart', 'NRestarts': 3, 'Result': 'exit-code', 'MainPID': 0}
    assert engine['NRestarts'] is None and engine['MainPID'] is None and engine['LoadState'] == 'not-found'


def test_one_unit_and_noise():
    assert _systemd.parse_show_one('ActiveState=active\nnoise without equals\nMainPID=42\n') == {
        'ActiveState': 'active', 'MainPID': 42}
    assert _systemd.parse_show_one('') == {}
    assert _systemd.parse_show(None) == []
    # A value holding "=" keeps it.
    assert _systemd.parse_show_one('Environment=A=1 B=2\n') == {'Environment': 'A=1 B=2'}


@pytest.mark.parametrize('name', ['vllm', 'vllm.service', 'vllm-prod_2', 'vllm@0.service', 'a:b', 'x' * 255])
def test_unit_names_systemd_allows(name):
    assert _systemd.unit_name_problem(name) is None


@pytest.mark.parametrize('name, words', [
    ('-H root@host', 'starts with "-"'),
    ('--all', 'starts with "-"'),
    ('', 'empty'),
    (None, 'empty'),
    ('.hidden', 'starts with "."'),
    ('vllm service', "' '"),
    ('vllm;reboot', "';'"),
    ('a/../etc', "'/'"),
    ('x' * 256, 'longer than 255'),
])
def test_names_that_are_not_units_are_refused_with_the_reason(name, words):
    assert words in _systemd.unit_name_problem(name)


def test_the_units_go_after_the_double_dash():
    assert _systemd.show_argv('/bin/systemctl', ['vllm.service', 'docker.service'], ['Id', 'MainPID']) == [
        '/bin/systemctl', 'show', '--property=Id,MainPID', '--', 'vllm.service', 'docker.service']
    with pytest.raises(ValueError, match='starts with "-"'):
        _systemd.show_argv('systemctl', ['-H host'], ['Id'])


def test_service_unit_completes_a_service_name():
    assert _systemd.service_unit('vllm') == 'vllm.service'
    assert _systemd.service_unit('vllm.service') == 'vllm.service'
    assert _systemd.service_unit('ray-head.timer') == 'ray-head.timer'
    with pytest.raises(ValueError):
        _systemd.service_unit('--help')


@pytest.mark.parametrize('text, version', [
    ('systemd 252 (252.22-1~deb12u1)\n+PAM +AUDIT +SELINUX\n', 252),
    ('systemd 239 (239-78.el8)\n', 239),
    ('  systemd 249\n', 249),
    ('', None), ('command not found', None), ('systemd x', None),
])
def test_the_version_is_the_first_lines_number(text, version):
    assert _systemd.parse_version(text) == version
