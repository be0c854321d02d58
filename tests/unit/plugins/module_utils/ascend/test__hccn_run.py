# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_hccn_run: the one check of hccn_tool_path, hccn.conf read through _files (missing, a directory, a FIFO, a
dangling link, too large, not UTF-8), a device's returned values, and hccn_ping's check of its input. The runs
themselves (set_nics, run_pings) are covered through the modules in tests/unit/plugins/modules/."""

from __future__ import annotations

import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _hccn_run as R
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _command


# --------------------------------------------------------------------------------------------------------- tool path

def test_an_executable_tool_has_no_problem(tmp_path):
    tool = tmp_path / 'hccn_tool'
    tool.write_text('#!/bin/sh\n')
    tool.chmod(0o755)
    assert R.tool_problem(str(tool)) is None


@pytest.mark.parametrize('make', ['missing', 'not executable', 'directory'])
def test_a_tool_that_is_no_executable_file_names_the_option_and_the_role(tmp_path, make):
    tool = tmp_path / 'hccn_tool'
    if make == 'not executable':
        tool.write_text('#!/bin/sh\n')
        tool.chmod(0o644)
    elif make == 'directory':
        tool.mkdir()
    assert R.tool_problem(str(tool)) == (
        'hccn_tool_path: %s is not an executable file: install the NPU driver (role kunpeng_ascend.vllm.npu_driver) '
        'or set hccn_tool_path to hccn_tool' % tool)


def test_the_tool_check_is_the_command_runners(monkeypatch):
    # The one executable check of the collection decides (the fake host of the module tests replaces it).
    monkeypatch.setattr(_command, 'is_executable', lambda path: path == '/x/hccn_tool')
    assert R.tool_problem('/x/hccn_tool') is None and R.tool_problem('/y/hccn_tool') is not None


# --------------------------------------------------------------------------------------------------------- hccn.conf

def test_a_missing_conf_is_empty(tmp_path):
    assert R.read_conf(str(tmp_path / 'hccn.conf')) == ''
    assert R.read_conf(str(tmp_path / 'no-dir' / 'hccn.conf')) == ''


def test_a_conf_is_read_as_text(tmp_path):
    conf = tmp_path / 'hccn.conf'
    conf.write_bytes(u'# d\u00e9j\u00e0\naddress_0=10.0.0.2\n'.encode('utf-8'))
    assert R.read_conf(str(conf)) == u'# d\u00e9j\u00e0\naddress_0=10.0.0.2\n'


def test_a_directory_is_refused_naming_conf_path(tmp_path):
    with pytest.raises(R.ConfError) as error:
        R.read_conf(str(tmp_path))
    assert str(error.value) == 'conf_path: %s is not a regular file; fix it or set conf_path' % tmp_path


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / 'hccn.conf'
    os.mkfifo(str(fifo))
    with pytest.raises(R.ConfError) as error:
        R.read_conf(str(fifo))
    assert str(error.value) == 'conf_path: %s is not a regular file; fix it or set conf_path' % fifo


def test_a_dangling_link_is_refused_rather_than_written_through(tmp_path):
    link = tmp_path / 'hccn.conf'
    link.symlink_to(tmp_path / 'nowhere' / 'hccn.conf')
    with pytest.raises(R.ConfError) as error:
        R.read_conf(str(link))
    assert str(error.value) == 'conf_path: %s is not a regular file; fix it or set conf_path' % link


def test_a_conf_larger_than_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(R, 'MAX_CONF_BYTES', 16)
    conf = tmp_path / 'hccn.conf'
    conf.write_text('address_0=10.0.0.2\n')
    with pytest.raises(R.ConfError) as error:
        R.read_conf(str(conf))
    assert str(error.value) == 'conf_path: %s: larger than 16 bytes, not an hccn.conf; fix it or set conf_path' % conf


def test_a_conf_that_is_not_utf8_is_left_unchanged(tmp_path):
    conf = tmp_path / 'hccn.conf'
    conf.write_bytes(b'address_0=\xff\n')
    with pytest.raises(R.ConfError, match=r'^conf_path: .* is not UTF-8 text \(.*\): fix it; it was left unchanged$'):
        R.read_conf(str(conf))


# --------------------------------------------------------------------------------------------------------- values

def test_public_keeps_the_returned_keys_in_order_and_fills_the_missing():
    values = {'id': 0, 'address': '10.0.0.2', 'netmask': '255.255.255.0', 'iface': 'eth0'}
    assert list(R.public(values).items()) == [
        ('id', 0), ('address', '10.0.0.2'), ('netmask', '255.255.255.0'), ('gateway', None), ('netdetect', None),
        ('tls', None), ('link', None), ('net_health', None)]


def test_public_of_a_prediction_takes_link_and_health_from_before():
    before = {'id': 1, 'address': '10.0.0.1', 'tls': True, 'link': 'UP', 'net_health': 'Success'}
    predicted = {'id': 1, 'address': '10.0.0.3', 'tls': False}
    assert R.public(predicted, before) == {'id': 1, 'address': '10.0.0.3', 'netmask': None, 'gateway': None,
                                           'netdetect': None, 'tls': False, 'link': 'UP', 'net_health': 'Success'}


# --------------------------------------------------------------------------------------------------------- pings

def ping_params(**more):
    return dict(dict(pings=[{'device': 3, 'address': ' 10.20.0.12 ', 'name': 'node2 dev 3'},
                            {'device': 0, 'address': '10.20.0.13'}],
                     count=3, timeout=10, parallel=8, max_loss_percent=0.0), **more)


def test_pings_are_normalised():
    assert R.check_pings(ping_params()) == [{'device': 3, 'address': '10.20.0.12', 'name': 'node2 dev 3'},
                                            {'device': 0, 'address': '10.20.0.13', 'name': None}]


@pytest.mark.parametrize('more, message', [
    ({'count': 0}, 'count: give a whole number from 1 to 100, not 0'),
    ({'count': 101}, 'count: give a whole number from 1 to 100, not 101'),
    ({'timeout': 301}, 'timeout: give a whole number from 1 to 300, not 301'),
    ({'parallel': 0}, 'parallel: give a whole number from 1 to 64, not 0'),
    ({'max_loss_percent': 100.5}, 'max_loss_percent: give a percentage from 0 to 100, not 100.5'),
    ({'max_loss_percent': -1}, 'max_loss_percent: give a percentage from 0 to 100, not -1'),
    ({'pings': [{'device': -1, 'address': '10.0.0.1'}]},
     'pings[0].device: give the NPU device id (a number >= 0, as in hccn_tool -i), not -1'),
    ({'pings': [{'device': 0, 'address': '10.0.0.1'}, {'device': 0, 'address': 'node2'}]},
     "pings[1].address: 'node2' is not an IPv4 address"),
    ({'pings': [{'device': 0, 'address': '127.0.0.1'}]}, 'pings[0].address: 127.0.0.1 cannot be an NPU NIC address'),
    ({'pings': [{'device': 0, 'address': '224.0.0.1'}]}, 'pings[0].address: 224.0.0.1 cannot be an NPU NIC address'),
    ({'pings': [{'device': 0, 'address': '0.0.0.0'}]}, 'pings[0].address: 0.0.0.0 cannot be an NPU NIC address'),
    ({'pings': [{'device': 0, 'address': '255.255.255.255'}]},
     'pings[0].address: 255.255.255.255 cannot be an NPU NIC address'),
])
def test_wrong_ping_input_names_the_option(more, message):
    with pytest.raises(ValueError) as error:
        R.check_pings(ping_params(**more))
    assert str(error.value) == message


def test_the_bounds_themselves_are_accepted():
    params = ping_params(count=100, timeout=1, parallel=64, max_loss_percent=100)
    assert len(R.check_pings(params)) == 2
