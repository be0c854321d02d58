# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Whether a host's package lists must be refreshed before packages can be installed, decided once for every role that
installs packages. The age of the lists tells nothing: a freshly built image or golden image has an empty
``/var/lib/apt/lists`` whose time stamp is minutes old, so ``cache_valid_time`` takes it for a fresh cache. What tells
is whether the lists know the packages that are still to be installed:

* a package already installed needs nothing;
* the Debian family (APT): the lists are refreshed when a package to install has no candidate in them (an empty or
  stale list, or a repository just added), whatever their age;
* the RedHat family (dnf): never, as dnf refreshes its metadata itself when it is older than its ``metadata_expire``.

One backend class per package manager (as ansible-core's package_facts); the parsers and the decision are pure
functions over the tools' text output.
"""

from __future__ import annotations

import collections
import os
import re

# What a name given to the roles' package tasks may carry after the package name: a version (apt: name=1.2, dnf:
# name-1.2 is not split here) or an architecture qualifier (name:arm64), which dpkg and apt read themselves.
_VERSION_SUFFIX = re.compile(r'[=<>].*$')
_PACKAGE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.+_-]*(:[A-Za-z0-9_-]+)?$')

Decision = collections.namedtuple('Decision', 'missing unknown refresh reason')


def package_name(requested):
    """The package name (with its :arch qualifier) of ``requested`` (``name``, ``name=1.2``, ``name>=1.2``)."""
    return _VERSION_SUFFIX.sub('', requested.strip())


def invalid_names(names):
    """The names that are no package name (after their version suffix is cut), for the module's message."""
    return [name for name in names if not _PACKAGE_NAME.match(package_name(name))]


def parse_dpkg_query(text, warn):
    """``dpkg-query -W -f '${Package}\\t${Architecture}\\t${Status}\\n'`` output: the set of installed packages, each
    as ``name`` and ``name:arch``. A package dpkg knows but has removed (status ``deinstall ok config-files``) is not
    installed."""
    installed = set()
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split('\t')
        if len(fields) != 3:
            warn('dpkg-query printed a line this module does not understand (skipped): %r' % line)
            continue
        name, arch, status = fields
        if status.split()[-1:] == ['installed']:
            installed.update((name, '%s:%s' % (name, arch)))
    return installed


_POLICY_HEADER = re.compile(r'^(\S+):$')
_POLICY_FIELD = re.compile(r'^\s+(Installed|Candidate):\s*(.*)$')
_POLICY_OTHER = re.compile(r'^\s+(Version table:|\S.*\s\d+$|\d+\s|\*\*\*)')


def parse_apt_cache_policy(text, warn):
    """``apt-cache policy NAME...`` output (LANG=C): {name: candidate version, or None for ``(none)``}. A name apt
    knows nothing of gets no block at all (apt prints 'Unable to locate package' on stderr)."""
    candidates = {}
    current = None
    for line in text.splitlines():
        if not line.strip():
            continue
        header = _POLICY_HEADER.match(line)
        if header:
            current = header.group(1)
            candidates[current] = None
            continue
        field = _POLICY_FIELD.match(line)
        if field and current is not None:
            if field.group(1) == 'Candidate':
                value = field.group(2).strip()
                candidates[current] = None if value in ('', '(none)') else value
            continue
        if current is not None and line[:1].isspace():
            continue  # the version table
        warn('apt-cache policy printed a line this module does not understand (skipped): %r' % line)
    return candidates


def lists_are_empty(filenames):
    """Whether a listing of /var/lib/apt/lists holds no package index (``*_Packages``, possibly compressed)."""
    return not any(re.search(r'_Packages(\.(gz|xz|lz4|bz2|zst))?$', name) for name in filenames)


def missing_packages(names, installed):
    """The package names of ``names`` (version suffixes cut, each once, in order) that are not in ``installed``."""
    return [name for name in dict.fromkeys(package_name(name) for name in names) if name not in installed]


def decide(missing, candidates, lists_empty):
    """The Decision for the packages still to install (``missing``): which the lists do not know, whether to refresh
    and why (a sentence, empty when no refresh is needed)."""
    if not missing:
        return Decision([], [], False, '')
    unknown = [name for name in missing if candidates.get(name) is None]
    if lists_empty:
        return Decision(missing, unknown, True, 'the package lists are empty, and %s %s not installed'
                        % (', '.join(missing), 'is' if len(missing) == 1 else 'are'))
    if unknown:
        return Decision(missing, unknown, True, 'the package lists know no %s to install' % ', '.join(unknown))
    return Decision(missing, [], False, '')


class AptLists:
    """The Debian family: dpkg-query for what is installed, apt-cache policy for what the lists offer, apt-get update
    to refresh them."""

    name = 'apt'

    def __init__(self, runner, executables, lists_path, warn):
        self.runner = runner
        self.executables = executables
        self.lists_path = lists_path
        self.warn = warn

    def _run(self, tool, args):
        return self.runner.run([self.executables[tool]] + args)

    def installed(self, names):
        result = self._run('dpkg-query', ['-W', '-f', '${Package}\\t${Architecture}\\t${Status}\\n', '--'] + names)
        # rc 1: some name matched no package, which is what this asks.
        if result.rc not in (0, 1):
            self.runner.fail(result, 'dpkg-query could not read the package database')
        return parse_dpkg_query(result.stdout, self.warn)

    def candidates(self, names):
        result = self._run('apt-cache', ['policy', '--'] + names)
        if result.rc != 0:
            self.runner.fail(result, 'apt-cache policy could not read the package lists')
        return parse_apt_cache_policy(result.stdout, self.warn)

    def lists_empty(self):
        try:
            return lists_are_empty(os.listdir(self.lists_path))
        except OSError:
            return True

    def refresh(self):
        result = self._run('apt-get', ['-q', 'update'])
        if result.rc != 0:
            self.runner.fail(result, 'apt-get update failed%s: check the host\'s APT sources (/etc/apt/sources.list, '
                             '/etc/apt/sources.list.d/) and that it reaches them'
                             % (' (it did not end within the time limit: timeout)' if result.timed_out else ''))


class DnfLists:
    """The RedHat family: dnf refreshes expired metadata by itself, so only what is installed is read."""

    name = 'dnf'

    def __init__(self, runner, executables, warn):
        self.runner = runner
        self.executables = executables
        self.warn = warn

    def installed(self, names):
        # No '--' before the names: invalid_names() has refused any that starts with '-'.
        result = self.runner.run([self.executables['rpm'], '-q', '--qf', '%{NAME}\\t%{ARCH}\\tinstalled\\n'] + names)
        installed = set()
        for line in result.stdout.splitlines():
            fields = line.split('\t')
            if len(fields) == 3:
                installed.update((fields[0], '%s:%s' % (fields[0], fields[1])))
        return installed

    def candidates(self, names):
        return dict((name, 'by dnf') for name in names)

    def lists_empty(self):
        return False

    def refresh(self):
        raise AssertionError('dnf refreshes its metadata itself')
