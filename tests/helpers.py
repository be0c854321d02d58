# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the unit and integration tests share; tests/conftest.py makes fixtures of FakeHost and SimRoot.

* ``load_fixture(name)``: a captured sample of tests/fixtures/, without the SOURCE/NOTE header on top of it;
* ``make_tree``, ``plant``, ``deny_directory`` and ``fails_after``: scratch file trees, files that are there but
  cannot be read, and a guard that fails a read that would block;
* ``makeself_archive`` and ``ar_archive``: package files that pass the format checks, never to be run;
* ``run_main(main, args)``: a module's main() run in this process, returning what it exits or fails with;
* LockHolder and ``held_by``: another process holding ascend_package's host-wide lock, and the message of a wait;
* FakeHost (the ``fake_host`` fixture): the host such a run sees, with run_command and the system mocked;
* SimRoot (the ``sim_root`` fixture): a scratch root the simulator's fake Ascend installers really install into;
* ``build_packages`` and ``simulator_module``: the simulator's fake packages, and its programs as Python modules;
* ``HANG_SECONDS``: how long a test waits for a process or a thread before it calls it a hang.

Test modules import them from ``ansible_collections.kunpeng_ascend.vllm.tests.helpers``: one module object, so
that the ExitJson a fixture's module run raises is the ExitJson a test expects.
"""

from __future__ import annotations

import collections
import errno
import importlib.machinery
import importlib.util
import json
import os
import platform
import re
import signal
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from unittest import mock

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.testing import patch_module_args

TESTS = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(TESTS, 'fixtures')
SIMULATOR = os.path.join(TESTS, 'simulator')
TOOLS = os.path.join(os.path.dirname(TESTS), 'tools')
# How long a test waits for something that takes a moment (a process to start or stop, a thread to end) before it
# calls it a hang: far beyond what the slowest, most loaded machine takes, so that only a hang reaches it. Tests
# assert on what they waited for, never on how long it took.
HANG_SECONDS = 120


# --------------------------------------------------------------------------------------------------------- files

def load_fixture(name):
    """The captured text of tests/fixtures/``name``: what follows its SOURCE/NOTE header and the first '---' line."""
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as fixture:
        lines = fixture.read().splitlines(True)
    return ''.join(lines[[line.rstrip('\n') for line in lines].index('---') + 1:])


def make_tree(top, files=None, links=None):
    """Files (path -> text) and symlinks (path -> target) under ``top``; paths are absolute on the fake system."""
    for path, text in (files or {}).items():
        full = os.path.join(str(top), path.lstrip('/'))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w', encoding='utf-8') as handle:
            handle.write(text)
    for path, target in (links or {}).items():
        full = os.path.join(str(top), path.lstrip('/'))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(target, full)
    return str(top)


@contextmanager
def fails_after(seconds):
    """Make a read that blocks (as opening a FIFO without a writer does) fail the test instead of hanging it."""
    def expired(_signum, _frame):
        raise AssertionError('still blocked after %d seconds' % seconds)
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def deny_directory(monkeypatch, denied_dir):
    """Make one host directory behave as one without read and search permission: it can be looked at, but not
    listed, and nothing in it can be looked at or opened (the tests run as root, where chmod does not deny)."""
    def denying(real, denies):
        def fake(path, *args, **kwargs):
            if denies(str(path)):
                raise PermissionError(errno.EACCES, 'Permission denied', path)
            return real(path, *args, **kwargs)
        return fake
    below = denied_dir.rstrip('/') + '/'
    for name in ('stat', 'lstat', 'open'):
        monkeypatch.setattr(os, name, denying(getattr(os, name), lambda path: path.startswith(below)))
    monkeypatch.setattr(os, 'listdir', denying(os.listdir, lambda path: path == denied_dir or path.startswith(below)))


# What plant() can put in place of a file: something that is there but is no readable regular file.
UNREADABLE_KINDS = ['directory', 'fifo', 'link loop', 'in an unreadable directory']


def plant(monkeypatch, root, path, kind):
    """Put at ``path`` of the fake system under ``root`` something of UNREADABLE_KINDS; return the warning the
    file readers give for it."""
    host = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(host), exist_ok=True)
    if kind == 'directory':
        os.mkdir(host)
        return '%s: a directory, not a regular file; it is not read' % host
    if kind == 'fifo':
        os.mkfifo(host)
        return '%s: a FIFO (named pipe), not a regular file; it is not read' % host
    if kind == 'link loop':
        os.symlink(os.path.basename(host), host)
        return '%s: a symbolic link loop; it is not read' % host
    with open(host, 'w', encoding='utf-8') as handle:
        handle.write('Version=24.1.rc1\nDriver_Install_Path_Param=/usr/local/Ascend\n')
    deny_directory(monkeypatch, os.path.dirname(host))
    return '%s: cannot be looked at: Permission denied; it is not read' % host


# The header of a real makeself archive (payload left out; its header says skip="719", filesizes="142").
MAKESELF_HEADER = 'makeself-2.4.5_header_sha256_demo-1.0.0.txt'
MAKESELF_PAYLOAD_BYTES = 142
# The members of a .deb, with stand-in contents.
DEB_MEMBERS = [('debian-binary', b'2.0\n'), ('control.tar.xz', b'c' * 100), ('data.tar.xz', b'd' * 1001)]


def makeself_archive(payload_bytes=MAKESELF_PAYLOAD_BYTES):
    """A makeself archive as bytes: the real header of the fixture and a stand-in payload of the size it announces."""
    return load_fixture(MAKESELF_HEADER).encode('ascii') + b'\x1f\x8b' + b'\0' * (payload_bytes - 2)


def ar_archive(members):
    """An ar archive (the layout of a .deb) of (name, data) members."""
    parts = [b'!<arch>\n']
    for name, data in members:
        parts.append(b'%-16s%-12d%-6d%-6d%-8s%-10d`\n' % (name.encode('ascii'), 1735689600, 0, 0, b'100644', len(data)))
        parts.append(data + (b'\n' if len(data) % 2 else b''))
    return b''.join(parts)


# --------------------------------------------------------------------------------------------------------- modules

class ExitJson(Exception):
    """AnsibleModule.exit_json was called; the result is the first argument."""


class FailJson(Exception):
    """AnsibleModule.fail_json was called; the result is the first argument."""


def _exit_json(module, **result):
    raise ExitJson(result)


def _fail_json(module, **result):
    raise FailJson(result)


def capture_results(monkeypatch):
    """Make AnsibleModule.exit_json / fail_json raise ExitJson / FailJson with the result."""
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', _fail_json)


def run_main(main, args, outcome=ExitJson):
    """Call a module's ``main`` with module ``args``; return the result it exits with, which must be ``outcome``
    (results are captured by the fake_host fixture, or capture_results)."""
    with patch_module_args(args):
        with pytest.raises(outcome) as raised:
            main()
    return raised.value.args[0]


TIMEOUT = '/usr/bin/timeout'
LOCALE = '/usr/bin/locale'
# The locale the command runner chooses from the fake `locale -a`, and its environment.
PARSABLE_LOCALE = {'LANG': 'C.utf8', 'LC_ALL': 'C.utf8', 'LC_MESSAGES': 'C.utf8'}
# uname -r of the fake host.
RELEASE = '6.1.0-18-arm64'
GIB = 1024 ** 3

StatVfs = collections.namedtuple('StatVfs', 'f_bavail f_frsize')


class FakeHost:
    """The host a module run in this process sees (the fake_host fixture of tests/conftest.py puts it in place).

    ``root`` and ``sysfs``: scratch directories for the modules' root and sysfs_path options. ``on_path``: what
    get_bin_path finds, by tool name. ``executables``: the paths that count as executable files. ``answers``: the
    commands' answers, by argv after the coreutils timeout prefix (a tuple), each (rc, stdout, stderr) or a function
    giving it (stdout and stderr given as bytes are decoded as run_command decodes them). ``machine`` and
    ``release``: uname. ``free_bytes``: what statvfs reports. ``warn``: the mocked AnsibleModule.warn.
    """

    def __init__(self, tmp_path):
        self.root = str(tmp_path / 'root')
        self.sysfs = str(tmp_path / 'sys')
        self.lock_dir = str(tmp_path / 'run-lock')
        # ascend_package's host-wide lock, in lock_dir.
        self.lock = os.path.join(self.lock_dir, 'kunpeng_ascend_package.lock')
        os.makedirs(self.root, exist_ok=True)
        os.makedirs(self.lock_dir)
        self.machine = 'aarch64'
        self.release = RELEASE
        self.on_path = {'timeout': TIMEOUT, 'locale': LOCALE}
        self.executables = set()
        self.answers = {}
        self.free_bytes = 50 * GIB
        self.statvfs_paths = []
        self.run_command = mock.Mock(side_effect=self._run)
        self.get_bin_path = mock.Mock(side_effect=lambda name, required=False, opt_dirs=None: self.on_path.get(name))
        self.warn = mock.Mock()

    def _run(self, argv, **kwargs):
        if argv == [LOCALE, '-a']:
            return 0, 'C\nC.utf8\nPOSIX\nen_US.utf8\n', ''
        answer = self.answers[tuple(argv[3:] if argv[0] == TIMEOUT else argv)]
        rc, stdout, stderr = answer() if callable(answer) else answer
        return rc, to_native(stdout, errors='surrogate_or_strict'), to_native(stderr, errors='surrogate_or_strict')

    def calls(self):
        """The run_command calls, but the locale query of the command runner."""
        return [call for call in self.run_command.call_args_list if call.args[0] != [LOCALE, '-a']]

    def commands(self):
        """The argv of every command run, but the locale query."""
        return [call.args[0] for call in self.calls()]

    def warnings(self):
        return [call.args[0] for call in self.warn.call_args_list]

    def path(self, path, under=None):
        """Where ``path`` of the fake system (under ``root``, or ``under``) is on this machine."""
        return os.path.join(under or self.root, path.lstrip('/'))

    def write(self, path, text, mode=0o644, under=None):
        full = self.path(path, under)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'wb' if isinstance(text, bytes) else 'w') as handle:
            handle.write(text)
        os.chmod(full, mode)
        return full

    def mkdir(self, path, under=None):
        os.makedirs(self.path(path, under), exist_ok=True)

    def statvfs(self, path):
        self.statvfs_paths.append(path)
        return StatVfs(self.free_bytes // 4096, 4096)


# Another process that holds ascend_package's host-wide lock, as a concurrent run on the same host would.
HOLDER_SCRIPT = textwrap.dedent('''
    import sys
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._ascend_packages import HostLock
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


# --------------------------------------------------------------------------------------------------------- simulator

# The kernel whose headers the fake driver installer looks for under the simulated root.
SIM_KERNEL = '6.1.0-sim'


def this_machine_arch():
    """aarch64 or x86_64: the architecture of packages that run here."""
    return 'aarch64' if platform.machine() in ('aarch64', 'arm64') else 'x86_64'


def shown(text):
    """What a terminal shows of ``text``: makeself's progress counter goes back with backspaces."""
    lines = []
    for raw in text.split('\n'):
        kept = []
        for char in raw:
            if char == '\b':
                if kept:
                    kept.pop()
            else:
                kept.append(char)
        lines.append(''.join(kept))
    return '\n'.join(lines)


class SimRoot:
    """A scratch root the simulator's fake Ascend installers install into for real. With ASCEND_SIM_ROOT set they
    write only under it, and check the run user in its etc/passwd and etc/group (HwHiAiUser is there), the headers of
    ASCEND_SIM_KERNEL under it, ASCEND_SIM_ARCH against the package, and dkms on PATH (a stand-in in ``fakebin``).

    ``env()`` is the environment to run them with, ``run()`` runs one, ``export()`` puts that environment in this
    process (for a module run here whose run_command runs them).
    """

    def __init__(self, tmp_path, arch='aarch64', kernel=SIM_KERNEL):
        self.tmp = tmp_path
        self.root = tmp_path / 'root'
        self.fakebin = tmp_path / 'fakebin'
        self.arch = arch
        self.kernel = kernel
        (self.root / 'etc').mkdir(parents=True)
        self.fakebin.mkdir()
        self.set_users(hwhiaiuser=True)
        (self.root / 'usr' / 'src' / ('linux-headers-' + kernel)).mkdir(parents=True)
        dkms = self.fakebin / 'dkms'
        dkms.write_text('#!/bin/sh\necho dkms-2.8.7\n')
        dkms.chmod(0o755)
        self.path = str(self.fakebin) + os.pathsep + os.environ.get('PATH', '/usr/bin:/bin')

    def set_users(self, hwhiaiuser):
        passwd = 'root:x:0:0:root:/root:/bin/bash\n'
        group = 'root:x:0:\n'
        if hwhiaiuser:
            passwd += 'HwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n'
            group += 'HwHiAiUser:x:1000:\n'
        (self.root / 'etc' / 'passwd').write_text(passwd)
        (self.root / 'etc' / 'group').write_text(group)

    def variables(self):
        return {'ASCEND_SIM_ROOT': str(self.root), 'ASCEND_SIM_KERNEL': self.kernel, 'ASCEND_SIM_ARCH': self.arch,
                'PATH': self.path, 'TMPDIR': str(self.tmp)}

    def env(self, **extra):
        env = dict(os.environ, **self.variables())
        env.pop('ASCEND_SIM_DRIVER_REBOOT', None)
        env.update(extra)
        # Never let an installer loose on this machine's root.
        assert env['ASCEND_SIM_ROOT'] not in ('', '/')
        return env

    def export(self, monkeypatch):
        """Give this process the installers' environment (undone after the test)."""
        for name, value in self.variables().items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv('ASCEND_SIM_DRIVER_REBOOT', raising=False)
        assert os.environ['ASCEND_SIM_ROOT'] not in ('', '/')

    def run(self, cmd, *args, stdin='', **extra_env):
        """Run ``cmd ARGS``; the CompletedProcess has stdout and stderr together, and ``output`` as shown."""
        proc = subprocess.run([str(cmd)] + list(args), env=self.env(**extra_env), input=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                              cwd=str(self.tmp), check=False)
        proc.output = shown(proc.stdout)
        return proc

    def p(self, path):
        return self.root / path.lstrip('/')

    def installed_files(self):
        """Everything under the root except the inputs the test made and the logs."""
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                rel = os.path.relpath(os.path.join(dirpath, name), self.root)
                if rel in ('etc/passwd', 'etc/group') or rel.startswith('var/log/'):
                    continue
                found.append(rel)
        return sorted(found)


def build_packages(out, *args):
    """Build the simulator's fake Ascend packages into ``out`` (tests/simulator/build_packages.py ``ARGS``); return
    their file names, in the order it prints them."""
    proc = subprocess.run([sys.executable, os.path.join(SIMULATOR, 'build_packages.py'), '--out', str(out)] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def tool_module(filename):
    """The maintainer tool tools/``filename`` imported as a module."""
    return _program_module(filename.rsplit('.', 1)[0], os.path.join(TOOLS, filename))


def simulator_module(name, filename):
    """The program tests/simulator/``filename`` imported as the module ``name`` (such as ``ascend-sim``, which has
    no .py ending)."""
    return _program_module(name, os.path.join(SIMULATOR, filename))


def _program_module(name, path):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def ansible_debug(expression, variables):
    """The result of ``ansible localhost -m debug -a 'msg={{ expression }}'`` with ``variables`` as extra vars and this
    collection (a dict: ``msg``, or ``failed`` and the error's ``msg``)."""
    collections_path = os.path.abspath(os.path.join(TESTS, *[os.pardir] * 4))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_STDOUT_CALLBACK='json', ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    # No other callback: one enabled in the environment (such as profile_tasks) would print into the JSON.
    env.pop('ANSIBLE_CALLBACKS_ENABLED', None)
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible')
    completed = subprocess.run([ansible, 'localhost', '-m', 'ansible.builtin.debug', '-a', 'msg={{ %s }}' % expression,
                                '-e', json.dumps(variables)], env=env, capture_output=True, text=True, check=False)
    return json.loads(completed.stdout)['plays'][0]['tasks'][0]['hosts']['localhost']
