# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The rule for every path the collection may replace, move or delete (a venv's link, a quantized model's output):
it is judged after normalisation (``/usr/bin/..``, ``//usr``, ``/usr/.`` and ``/usr/`` are ``/usr``), and a system
directory is refused by name - ``/``, every top-level directory, the well-known directories below ``/usr``,
``/usr/local`` and ``/var``, anything inside ``/proc``, ``/sys``, ``/dev``, ``/run``, ``/boot`` and ``/etc``, and
home directories (``/root``, ``/home/<name>``, and on the host every account's). On the host the path is judged
again after its symbolic links are resolved. That it is something the collection made (its record, marker or link
inside) is each owner's own check, on top of this one. Pure, standard library only (``pwd`` on the host).
"""

from __future__ import annotations

import os
import posixpath

try:
    import pwd
except ImportError:  # pragma: no cover (not a POSIX host: no accounts to read)
    pwd = None

# Directories below the top level that hold the system's own files.
SYSTEM_DIRECTORIES = frozenset(
    ['/usr/' + name for name in ('bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32', 'libexec', 'include', 'share',
                                 'src', 'local', 'games')]
    + ['/usr/local/' + name for name in ('bin', 'sbin', 'lib', 'lib64', 'libexec', 'include', 'share', 'src', 'etc',
                                         'games', 'man', 'Ascend')]
    + ['/var/' + name for name in ('lib', 'log', 'cache', 'tmp', 'spool', 'mail', 'opt', 'backups', 'local', 'run',
                                   'lock', 'www')]
)
# Trees that hold nothing the collection makes: every path inside them is refused.
SYSTEM_TREES = ('/proc', '/sys', '/dev', '/run', '/boot', '/etc')


def normalise(path):
    """``path`` as the system resolves its name (without following links): ``.``, ``..``, repeated and trailing
    slashes removed. A leading ``//`` is ``/`` (Linux gives it no other meaning)."""
    normalised = posixpath.normpath(path)
    if normalised.startswith('//'):
        normalised = '/' + normalised.lstrip('/')
    return normalised


def home_directories():
    """The home directories of the host's accounts (``/`` and non-absolute ones left out)."""
    if pwd is None:
        return frozenset()
    homes = set()
    for account in pwd.getpwall():
        home = account.pw_dir
        if isinstance(home, str) and home.startswith('/') and home != '/':
            homes.add(normalise(home))
    return frozenset(homes)


def _system_reason(path, homes):
    if path == '/':
        return 'the root directory'
    if path.count('/') == 1:
        return 'a top-level system directory'
    if path in SYSTEM_DIRECTORIES:
        return 'a system directory'
    for tree in SYSTEM_TREES:
        if path.startswith(tree + '/'):
            return 'inside %s, which holds the system\'s own files' % tree
    if path == '/root' or (path.startswith('/home/') and path.count('/') == 2) or path in homes:
        return 'a home directory'
    return None


def path_problem(option, path, homes=()):
    """None when ``path`` may be a directory the collection makes and later replaces; otherwise the message naming
    ``option``: not an absolute path, a control character in it, or a system directory (judged normalised)."""
    if not isinstance(path, str) or not path.startswith('/'):
        return '%s must be an absolute path; got %r' % (option, path)
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return '%s must not hold control characters; got %r' % (option, path)
    normalised = normalise(path)
    reason = _system_reason(normalised, frozenset(homes))
    if reason:
        shown = path if normalised == path else '%s (that is %s)' % (path, normalised)
        return ('%s %s is %s: the collection replaces what it finds there, so it never takes a system directory; '
                'choose a directory of its own, such as /opt/<name> or /srv/<name>' % (option, shown, reason))
    return None


def host_path_problem(option, path):
    """:func:`path_problem` on the host: also after the path's symbolic links are resolved, and against every
    account's home directory."""
    homes = home_directories()
    problem = path_problem(option, path, homes)
    if problem:
        return problem
    real = os.path.realpath(path)
    if real != normalise(path):
        reason = _system_reason(normalise(real), homes)
        if reason:
            return ('%s %s resolves to %s, which is %s: the collection replaces what it finds there, so it never takes '
                    'a system directory; choose a directory of its own' % (option, path, real, reason))
    return None
