# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A data-parallel group's recovery as the hosts run it: vllm_service's tcp-port-wait (the other ranks' wait for the
head's RPC port) run for real against a port of this machine, and vllm_cluster's vllm-group-watch shipped with every
module it imports (lookup module_utils_closure, computed from the imports). Their decisions are tested in
tests/unit/plugins/module_utils/serving/test__group_watch.py; the whole recovery runs in scenario multinode_vllm."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import HANG_SECONDS, TESTS
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import (
    module_utils_copy_loops, ship_module_utils,
)
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.test_npu_free_wait import wait_programs

COLLECTION = os.path.dirname(TESTS)
CLUSTER = os.path.join(COLLECTION, 'roles', 'vllm_cluster')
SERVICE = os.path.join(COLLECTION, 'roles', 'vllm_service')


def test_the_role_ships_what_the_watch_imports():
    assert module_utils_copy_loops('vllm_cluster') == {
        'watch.yml': ["{{ query('kunpeng_ascend.vllm.module_utils_closure', 'vllm-group-watch') }}"]}


def test_the_watch_runs_from_the_shipped_files(tmp_path):
    # Its imports, run with nothing of this checkout on the path: the files it needs are all shipped.
    ship_module_utils(tmp_path / 'lib', 'vllm_cluster', 'vllm-group-watch')
    shutil.copy(os.path.join(CLUSTER, 'files', 'vllm-group-watch'), str(tmp_path / 'vllm-group-watch'))
    done = subprocess.run([sys.executable, str(tmp_path / 'vllm-group-watch'), '--help'], capture_output=True, text=True,
                          check=False, timeout=HANG_SECONDS, env={'PATH': os.path.dirname(sys.executable)})
    assert done.returncode == 0 and done.stdout.startswith('usage: vllm-group-watch'), done


@pytest.fixture(name='wait')
def wait_fixture(tmp_path):
    """tcp-port-wait laid out as the role installs it, run with nothing of this checkout on its path."""
    ship_module_utils(tmp_path / 'lib', 'vllm_service', *wait_programs())
    shutil.copy(os.path.join(SERVICE, 'files', 'tcp-port-wait'), str(tmp_path / 'tcp-port-wait'))

    def run(*args):
        return subprocess.run([sys.executable, str(tmp_path / 'tcp-port-wait')] + list(args), capture_output=True,
                              text=True, check=False, timeout=HANG_SECONDS, cwd=str(tmp_path),
                              env={'PATH': os.path.dirname(sys.executable), 'LC_ALL': 'C.UTF-8'})
    return run


def test_an_open_port_lets_the_start_go_on(wait):
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        server.listen(1)
        port = server.getsockname()[1]
        done = wait('--endpoint', '127.0.0.1:%d' % port, '--timeout', '0', '--unit', 'vllm.service')
    assert done.returncode == 0, done
    assert done.stdout == 'vllm.service: 127.0.0.1:%d accepts connections\n' % port


def test_a_closed_port_fails_the_start_at_the_deadline_naming_it(wait):
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        port = server.getsockname()[1]
    # Bound, never listening: nothing accepts on that port.
    done = wait('--endpoint', '127.0.0.1:%d' % port, '--timeout', '1', '--interval', '1', '--unit', 'vllm.service')
    assert done.returncode == 1, done
    lines = done.stdout.splitlines()
    assert lines[0].startswith('vllm.service: waiting up to 1 s for 127.0.0.1:%d (the head of its group)' % port)
    assert lines[-1].startswith('vllm.service: 127.0.0.1:%d still refuses connections after 1 s (' % port)
    assert lines[-1].endswith('): the head of the group is not serving; not starting')


def test_bad_usage_exits_2(wait):
    done = wait('--endpoint', 'head-without-port')
    assert (done.returncode, done.stdout.strip()) == (
        2, "tcp-port-wait: 'head-without-port' is not host:port (such as 10.0.0.1:13389)")
