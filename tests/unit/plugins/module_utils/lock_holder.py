# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Another process that holds ascend_package's host-wide lock, as a concurrent run on the same host would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

HOLDER_SCRIPT = textwrap.dedent('''
    import sys
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._ascend_packages import HostLock
    lock = HostLock(sys.argv[1], 'the other run')
    lock.acquire(0)
    print('locked', flush=True)
    sys.stdin.readline()
    lock.release()
    print('released', flush=True)
''')


class LockHolder:
    """A process that takes the lock at ``path`` (as "the other run") and holds it until release(), or until it
    is killed (stop(), or leaving the ``with`` block)."""

    def __init__(self, path):
        self.process = subprocess.Popen(
            [sys.executable, '-c', HOLDER_SCRIPT, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        self.pid = self.process.pid
        assert self.process.stdout.readline() == 'locked\n'

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def release(self):
        self.process.stdin.write('\n')
        self.process.stdin.flush()
        assert self.process.stdout.readline() == 'released\n'

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()


def held_by(path, pid, description, timeout):
    """The message of a run that waited ``timeout`` seconds for the lock at ``path`` held by ``pid`` (a regexp: the
    holder's start time varies)."""
    return re.compile(
        r'^another ascend_package run holds the host-wide lock %s \(held by pid %d: %s, since '
        r'[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} [-+][0-9]{4}\) and did not release it within %d seconds '
        r'\(lock_timeout\): wait for it to end and run again, or stop it if it hangs$'
        % (re.escape(path), pid, re.escape(description), timeout))
