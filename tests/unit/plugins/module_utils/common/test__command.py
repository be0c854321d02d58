# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The command runner against real commands under coreutils timeout: what a timeout is, and output as valid UTF-8."""

from __future__ import annotations

import json
import shutil

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _command
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner

pytestmark = pytest.mark.needs_tools('timeout')


@pytest.fixture
def module():
    with patch_module_args({}):
        return AnsibleModule(argument_spec={})


@pytest.fixture
def quick_kill(monkeypatch):
    """KILL one second after TERM instead of five, to keep the tests short."""
    monkeypatch.setattr(_command, 'KILL_AFTER_SECONDS', 1)


def test_a_command_that_ignores_term_is_killed_and_that_is_a_timeout(module, quick_kill):
    # timeout kills the command and itself (its process group) with KILL, so run_command sees -9, not 124 or 137.
    result = CommandRunner(module, 1).run(['sh', '-c', 'trap "" TERM; sleep 30'])
    assert (result.rc, result.timed_out) == (-9, True)
    assert result.argv[:3] == [shutil.which('timeout'), '--kill-after=1', '1']


def test_a_command_stopped_by_term_is_a_timeout(module, quick_kill):
    result = CommandRunner(module, 1).run(['sleep', '30'])
    assert (result.rc, result.timed_out) == (124, True)


def test_a_command_killed_before_the_time_limit_is_no_timeout(module):
    result = CommandRunner(module, 30).run(['sh', '-c', 'kill -KILL $$'])
    assert (result.rc, result.timed_out) == (-9, False)


@pytest.mark.parametrize('seconds', [30, 0])
def test_timeouts_status_from_the_command_itself_is_no_timeout(module, seconds):
    result = CommandRunner(module, seconds).run(['sh', '-c', 'echo broken >&2; exit 124'])
    assert (result.rc, result.stderr, result.timed_out) == (124, 'broken\n', False)


def test_output_that_is_not_utf8_becomes_valid_utf8(module):
    result = CommandRunner(module, 30).run(['printf', r'py\377\376 ok\n'])
    assert (result.rc, result.stdout) == (0, 'py\ufffd\ufffd ok\n')
    assert json.dumps({'stdout': result.stdout}, ensure_ascii=False).encode('utf-8')


def test_utf8_output_is_kept(module):
    result = CommandRunner(module, 30).run(['printf', '名字\n'])
    assert result.stdout == '名字\n'


# ------------------------------------------------------------------------------------------------ output

def test_output_of_a_tool_on_path_is_its_stdout(module):
    assert CommandRunner(module, 30).output('sh', ['-c', 'echo ActiveState=active']) == ('ActiveState=active\n', None)


def test_output_of_a_tool_not_on_path_is_an_error_text(module, monkeypatch):
    monkeypatch.setattr(module, 'get_bin_path', lambda name, *args, **kwargs: None)
    assert CommandRunner(module, 30).output('journalctl', ['-u', 'vllm']) == (
        None, 'journalctl was not found in PATH')


def test_output_of_a_failing_tool_is_its_argv_rc_and_stderr(module):
    sh = module.get_bin_path('sh')
    assert CommandRunner(module, 30).output('sh', ['-c', 'echo out; echo " no such unit " >&2; exit 4']) == (
        None, '%s -c echo out; echo " no such unit " >&2; exit 4 failed (rc 4): no such unit' % sh)


def test_output_of_a_failing_tool_without_stderr_quotes_its_stdout(module):
    sh = module.get_bin_path('sh')
    assert CommandRunner(module, 30).output('sh', ['-c', 'echo only out; exit 1']) == (
        None, '%s -c echo only out; exit 1 failed (rc 1): only out' % sh)


def test_output_of_a_tool_that_runs_out_of_time_says_so(module, quick_kill):
    sleep = module.get_bin_path('sleep')
    assert CommandRunner(module, 1).output('sleep', ['30']) == (None, '%s 30 did not answer within 1 s' % sleep)


def test_a_command_runs_in_the_directory_given(module, tmp_path):
    assert CommandRunner(module, 30).run(['pwd']).stdout != str(tmp_path) + '\n'
    assert CommandRunner(module, 30).run(['pwd'], cwd=str(tmp_path)).stdout == str(tmp_path) + '\n'
