# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The one way this collection's modules run a command line tool: an argv list through ``module.run_command``
(never a shell), a parsable locale so that messages can be matched, a time limit through coreutils ``timeout``,
output that is valid UTF-8 whatever bytes the tool printed, and failures that report the command, its exit code,
stdout and stderr.
"""

from __future__ import annotations

import collections
import os
import time

from ansible.module_utils.common.locale import get_best_parsable_locale

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import replace_undecodable

# Seconds between timeout's TERM and its KILL, for a tool stuck in the kernel driver.
KILL_AFTER_SECONDS = 5
# coreutils timeout exits with these when it stopped the command (TERM; KILL in --foreground mode).
TIMED_OUT_RCS = (124, 137)

# timed_out: coreutils timeout stopped the command at the time limit.
CommandResult = collections.namedtuple('CommandResult', 'argv rc stdout stderr timed_out', defaults=(False,))


def failure_data(result):
    """What a failure reports of the CommandResult it is about."""
    return dict(cmd=result.argv, rc=result.rc, stdout=result.stdout, stderr=result.stderr)


def is_executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def locate_executable(module, name, configured=None, option=None, fallbacks=()):
    """Path of ``name``: ``configured`` when given, else on PATH, else the first executable of ``fallbacks``; None
    when none has it. A ``configured`` path that is no executable file is a ValueError naming ``option``."""
    if configured:
        if not is_executable(configured):
            raise ValueError('%s: %s is not an executable file' % (option, configured))
        return configured
    return module.get_bin_path(name) or next((path for path in fallbacks if is_executable(path)), None)


def find_executable(module, name, configured=None, option=None, fallbacks=(), missing_hint=None):
    """Path of ``name`` (see locate_executable); fail the module when there is none.

    The failure names ``option`` and starts its advice with ``missing_hint`` (what usually provides the tool).
    """
    try:
        found = locate_executable(module, name, configured, option, fallbacks)
    except ValueError as error:
        module.fail_json(msg=str(error))
    if found:
        return found
    where = 'neither in PATH nor as ' + ' or '.join(fallbacks) if fallbacks else 'not in PATH'
    advice = [missing_hint] if missing_hint else []
    if option:
        advice.append('set %s to its location' % option)
    module.fail_json(msg='%s was found %s%s' % (name, where, ': ' + ', or '.join(advice) if advice else ''))


class CommandRunner:
    """Runs commands for one module under a time limit (seconds; 0 = none) and a parsable locale."""

    def __init__(self, module, timeout):
        self._module = module
        self._seconds = timeout
        self._prefix = self._timeout_prefix(timeout)
        locale = get_best_parsable_locale(module)
        self._environ = {'LANG': locale, 'LC_ALL': locale, 'LC_MESSAGES': locale}

    def _timeout_prefix(self, seconds):
        if seconds < 0:
            self._module.fail_json(msg='timeout must be 0 (no limit) or a number of seconds, not %d' % seconds)
        if seconds == 0:
            return []
        timeout = self._module.get_bin_path('timeout')
        if not timeout:
            self._module.warn('coreutils timeout was not found, so commands run without a time limit')
            return []
        return [timeout, '--kill-after=%d' % KILL_AFTER_SECONDS, str(seconds)]

    def run(self, argv, data=None, environ_update=None, cwd=None):
        """Run ``argv`` (in directory ``cwd`` when given); return a CommandResult whatever the exit code."""
        environ = dict(self._environ, **(environ_update or {}))
        full_argv = self._prefix + list(argv)
        where = {'cwd': cwd} if cwd else {}
        started = time.monotonic()
        rc, stdout, stderr = self._module.run_command(full_argv, data=data, environ_update=environ, check_rc=False,
                                                      **where)
        # run_command keeps undecodable bytes as lone surrogates, which make ansible-core 2.19's controller refuse
        # the whole task result; a process name with odd bytes must not break the task.
        return CommandResult(full_argv, rc, replace_undecodable(stdout), replace_undecodable(stderr),
                             self._timed_out(rc, time.monotonic() - started))

    def _timed_out(self, rc, elapsed):
        """Whether coreutils timeout stopped the command: it ran until the limit and ended as timeout ends it.

        That is timeout's own status or a kill: a command that ignores TERM is killed KILL_AFTER_SECONDS later
        together with timeout itself (it signals its whole process group), so run_command sees -9. The same
        statuses before the limit are the command's own (a crash, its exit code).
        """
        return bool(self._prefix) and elapsed >= self._seconds and (rc in TIMED_OUT_RCS or rc < 0)

    def fail(self, result, msg, **extra):
        """Fail the module with ``msg`` and the command's data."""
        self._module.fail_json(msg=msg, **dict(failure_data(result), **extra))

    def output(self, name, args):
        """``(stdout, None)`` of the tool ``name`` found on PATH run with ``args``, or ``(None, error text)`` when it is
        not there, runs out of time or exits non-zero: for what a module reports and never fails over."""
        path = self._module.get_bin_path(name)
        if not path:
            return None, '%s was not found in PATH' % name
        argv = [path] + list(args)
        result = self.run(argv)
        if result.timed_out:
            return None, '%s did not answer within %d s' % (' '.join(argv), self._seconds)
        if result.rc != 0:
            return None, '%s failed (rc %d): %s' % (' '.join(argv), result.rc, (result.stderr or result.stdout).strip())
        return result.stdout, None
