# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role vllm_service's wait before each start (files/npu-free-wait), run for real as the unit runs it: laid out as the
role installs it (the program, and under lib/ the module_utils the role's copy loops over: lookup module_utils_closure
of its programs, computed from their imports), with the simulator's npu-smi (tests/simulator/ascend-sim) on PATH. Its
decisions are tested in tests/unit/plugins/module_utils/ascend/test__npu_wait.py; here: the files it needs are all
shipped (the program fails without any one of them), and the program's exit codes and journal lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import HANG_SECONDS, SIMULATOR, TESTS
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import (
    module_utils_closure, module_utils_copy_loops, ship_module_utils,
)

COLLECTION = os.path.dirname(TESTS)
ROLE = os.path.join(COLLECTION, 'roles', 'vllm_service')


def wait_programs():
    with open(os.path.join(ROLE, 'vars', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)['__vllm_service_wait_programs']


def test_the_role_ships_what_its_programs_import():
    # The waits before each start (npu-free-wait, tcp-port-wait) share one lib/: the lookup's answer for both.
    assert wait_programs() == ['npu-free-wait', 'tcp-port-wait']
    assert module_utils_copy_loops('vllm_service') == {
        'npu_free_wait.yml': ["{{ query('kunpeng_ascend.vllm.module_utils_closure', __vllm_service_wait_programs) }}"]}


@pytest.mark.parametrize('missing', [name for name in module_utils_closure('vllm_service', 'npu-free-wait')
                                     if not name.endswith('/__init__.py')])
def test_without_any_file_it_imports_the_program_fails(tmp_path, missing):
    libexec = tmp_path / 'libexec'
    ship_module_utils(libexec / 'lib', 'vllm_service', 'npu-free-wait', leave_out=[missing])
    shutil.copy(os.path.join(ROLE, 'files', 'npu-free-wait'), str(libexec / 'npu-free-wait'))
    done = subprocess.run([sys.executable, str(libexec / 'npu-free-wait'), '--npus', '0', '--timeout', '0'],
                          env={'PATH': os.path.dirname(sys.executable)}, capture_output=True, text=True, check=False,
                          timeout=HANG_SECONDS)
    # ModuleNotFoundError for a module imported by its name, ImportError for one imported from its package.
    assert done.returncode == 1 and done.stderr.splitlines()[-1].startswith(('ModuleNotFoundError: ', 'ImportError: ')), done


@pytest.fixture(name='host')
def host_fixture(tmp_path):
    """The program installed as the role installs it, npu-smi the simulator's, and a function that runs it."""
    libexec = tmp_path / 'libexec'
    ship_module_utils(libexec / 'lib', 'vllm_service', *wait_programs())
    shutil.copy(os.path.join(ROLE, 'files', 'npu-free-wait'), str(libexec / 'npu-free-wait'))
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'npu-smi').symlink_to(os.path.join(SIMULATOR, 'ascend-sim'))
    (bin_dir / 'ascend-sim').symlink_to(os.path.join(SIMULATOR, 'ascend-sim'))
    # Nothing of this checkout on the program's path: it must find the collection's files under its own lib/.
    env = dict(PATH='%s:%s' % (bin_dir, os.path.dirname(sys.executable)), ASCEND_SIM_ROOT=str(tmp_path / 'root'),
               LC_ALL='C.UTF-8')

    def run(*args, program='npu-free-wait'):
        argv = [sys.executable, str(libexec / 'npu-free-wait')] if program == 'npu-free-wait' \
            else [sys.executable, str(bin_dir / 'ascend-sim')]
        return subprocess.run(argv + list(args), env=env, capture_output=True, text=True, check=False,
                              timeout=HANG_SECONDS, cwd=str(tmp_path))
    assert run('init', program='ascend-sim').returncode == 0
    assert run('set', 'driver_version="24.1.rc1"', program='ascend-sim').returncode == 0
    return run


def test_free_npus_let_the_start_go_on_silently(host):
    done = host('--npus', '0-7', '--timeout', '0', '--unit', 'vllm.service')
    assert (done.returncode, done.stdout, done.stderr) == (0, '', '')


def test_a_stale_holder_is_named_and_fails_the_start_at_the_deadline(host):
    # preset leftover: a python3 process on NPU 0 only.
    assert host('preset', 'leftover', program='ascend-sim').returncode == 0
    done = host('--npus', '0,1', '--timeout', '1', '--interval', '1', '--unit', 'vllm.service')
    assert done.returncode == 1, done
    assert done.stdout.splitlines() == [
        'vllm.service: NPU held by pid 1067983 (python3) on NPU 0; waiting up to 1 s for NPU 0, 1 to be free '
        '(try 1 of 2)',
        'vllm.service: NPU 0, 1 still held after 2 tries in 1 s by pid 1067983 (python3) on NPU 0; not starting (a '
        'start would fail with EJ0001). Stop that process (kill it, or stop the service or container it belongs to), '
        'then `systemctl reset-failed vllm.service` and start the service again',
    ]
    # Another service's NPUs are free.
    assert host('--npus', '1-7', '--timeout', '0').returncode == 0


def test_an_npu_smi_that_fails_is_no_free_npu(host):
    assert host('set', 'fault=dcmi-8020', program='ascend-sim').returncode == 0
    done = host('--npus', '0', '--timeout', '0', '--unit', 'vllm.service')
    assert done.returncode == 3
    assert done.stdout.startswith('vllm.service: cannot read the NPUs: ')
    assert done.stdout.splitlines()[-1].startswith('vllm.service: cannot tell whether NPU 0 is free after 1 tries in 0 s')


@pytest.mark.parametrize('args, message', [
    (['--npus', 'x'], "npu-free-wait: 'x' is not an NPU id or a range of them (such as 0,1 or 0-7)"),
    (['--npus', '0', '--interval', '0'], 'npu-free-wait: the interval must be more than 0 seconds'),
])
def test_bad_usage_exits_2(host, args, message):
    done = host(*args)
    assert (done.returncode, done.stdout.strip()) == (2, message)


def test_without_npu_smi_the_start_fails_naming_it(host, tmp_path):
    (tmp_path / 'bin' / 'npu-smi').unlink()
    done = host('--npus', '0', '--timeout', '0', '--unit', 'vllm.service')
    assert done.returncode == 3
    assert done.stdout.startswith('vllm.service: npu-smi was not found (PATH, /usr/local/bin/npu-smi, ')
