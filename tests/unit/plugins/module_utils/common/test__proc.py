# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one /proc reader of the collection, on planted trees and on this machine's own /proc."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _proc

# A real stat line (Linux 6.1), of a process whose name holds a space and a parenthesis.
STAT = ('4101 (vllm (engine) 0) S 4100 4100 4100 0 -1 4194560 19000 0 12 0 300 45 7 3 20 0 57 0 1234 '
        '9876543210 123456 18446744073709551615 1 1 0 0 0 0 0 16781312 17642 0 0 0 17 1 0 0 0 0 0\n')
STATUS = 'Name:\tpython3\nState:\tS (sleeping)\nVmPeak:\t 9000000 kB\nVmRSS:\t  493824 kB\nThreads:\t57\n'


def test_stat_fields_after_the_last_parenthesis():
    assert _proc.parse_stat(STAT) == {'comm': 'vllm (engine) 0', 'state': 'S', 'ppid': 4100, 'cpu_ticks': 355}
    assert _proc.parse_stat('') is None
    assert _proc.parse_stat('12 (cut') is None
    assert _proc.parse_stat('12 (x) S') is None


def test_rss_from_status():
    assert _proc.parse_status_rss(STATUS) == 493824 * 1024
    # A kernel thread has no VmRSS line.
    assert _proc.parse_status_rss('Name:\tkthreadd\nState:\tS (sleeping)\n') is None
    assert _proc.parse_status_rss(None) is None


def _plant(root, pid, ppid, rss_kb=None, cmdline=b''):
    directory = root / str(pid)
    directory.mkdir()
    (directory / 'stat').write_text('%d (p%d) S %d 1 1 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0 1 1 1\n' % (pid, pid, ppid))
    (directory / 'status').write_text('Name:\tp\n' + ('VmRSS:\t%d kB\n' % rss_kb if rss_kb is not None else ''))
    (directory / 'cmdline').write_bytes(cmdline)


def test_a_tree_its_memory_and_its_ancestors(tmp_path):
    _plant(tmp_path, 1, 0)
    _plant(tmp_path, 100, 1, 1000, b'vllm\0serve\0/m\0')
    _plant(tmp_path, 101, 100, 2000)
    _plant(tmp_path, 102, 101, 3000)
    _plant(tmp_path, 103, 102)  # a zombie: no memory
    _plant(tmp_path, 200, 1, 50)
    (tmp_path / 'self').mkdir()
    (tmp_path / '300').mkdir()  # gone while read: no stat
    reader = _proc.ProcReader(str(tmp_path))
    assert reader.pids() == [1, 100, 101, 102, 103, 200, 300]
    assert sorted(reader.table()) == [1, 100, 101, 102, 103, 200]
    assert reader.descendants(100) == [100, 101, 102, 103]
    assert reader.descendants(999) == []
    assert reader.tree_rss_bytes(100) == 6000 * 1024
    assert reader.tree_rss_bytes(999) is None
    assert reader.ancestors(102) == [101, 100]
    assert reader.cmdline(100) == ['vllm', 'serve', '/m']
    assert reader.cmdline(101) == []
    assert reader.table()[100]['cpu_ticks'] == 15


def test_a_parent_loop_ends(tmp_path):
    _plant(tmp_path, 5, 6)
    _plant(tmp_path, 6, 5)
    reader = _proc.ProcReader(str(tmp_path))
    assert reader.descendants(5) == [5, 6]
    assert len(reader.ancestors(5, limit=10)) == 10


def test_this_machines_proc():
    reader = _proc.ProcReader()
    me = os.getpid()
    assert reader.stat(me)['ppid'] == os.getppid()
    assert reader.rss_bytes(me) > 0
    child = subprocess.Popen(['sleep', '600'])  # pylint: disable=consider-using-with
    try:
        assert child.pid in reader.descendants(me)
        assert reader.tree_rss_bytes(me) >= reader.rss_bytes(me)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in reader.descendants(me)


@pytest.mark.parametrize('stdout, pid', [('4242\n', 4242), ('0\n', None), ('', None), ('<no value>\n', None)])
def test_the_containers_pid_from_inspect(stdout, pid):
    assert _proc.parse_container_pid(stdout) == pid


def test_inspect_puts_the_name_after_the_options():
    assert _proc.container_pid_argv('/usr/bin/podman', 'vllm-vllm') == [
        '/usr/bin/podman', 'inspect', '--format', '{{.State.Pid}}', '--', 'vllm-vllm']
