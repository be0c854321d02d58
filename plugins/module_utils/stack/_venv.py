# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What module python_venv does with what it finds at a venv's path, decided once, and the runs of a venv's own Python
and pip. The path is judged normalised (``/usr/bin/..`` is ``/usr``), and no system or home directory is taken, also
through its links (``_paths``). At the path there may be nothing, a link (replaced in one rename; what it pointed at
is kept) or a real venv (moved aside into ``<path>.d/previous-<time>``, kept, never removed). A real directory that
is no venv, a file, a FIFO or anything else there is refused before anything changes, never moved; so is a
``<path>.d`` that is not a directory, and a folder in it the venv is to be built in that holds something other than
a venv (``python -m venv --clear`` would empty it).

``ensure(module)`` is everything the module does after its options are parsed, and gives what it exits with: a venv
in use that holds every pin and passes ``pip check`` is kept; else the venv of these pins is built (or completed) in
``<path>.d/<venv_name>``, checked, and the path switched to it; check mode predicts it.
"""

from __future__ import annotations

import errno
import os
import stat
import time

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner, is_executable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import FILE_TYPES
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS, number_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import host_path_problem, normalise
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._pip import (
    PipError,
    missing_pins,
    parse_pin,
    parse_pip_list,
    pip_check_problems,
    present,
    venv_name,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import python_in_range

VERSION_CODE = "import sys; print('%d.%d.%d' % sys.version_info[:3])"
SITE_CODE = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


class VenvError(ValueError):
    """What is at a venv's path (or beside it) is not the module's to replace; the message names it and why."""


def is_venv(path):
    """Whether ``path`` is a venv: its ``pyvenv.cfg`` and an executable ``bin/python``."""
    return os.path.isfile(os.path.join(path, 'pyvenv.cfg')) and is_executable(os.path.join(path, 'bin', 'python'))


def _kind(mode):
    """What a file of (lstat's) ``mode`` is, for messages."""
    if stat.S_ISLNK(mode):
        return 'a symbolic link'
    return next((name for test, name in FILE_TYPES if test(mode)), 'a regular file')


def option_problems(packages, timeout):
    """The problems of the pins (each ``name==version``, at least one) and of the time limit (whole seconds from 0,
    no limit, to a year)."""
    problems = []
    for pin in packages:
        try:
            parse_pin(pin)
        except ValueError as error:
            problems.append('packages: %s' % error)
    if not packages:
        problems.append('packages: give at least one pin such as vllm==0.23.0')
    problems.append(number_problem('timeout', timeout, minimum=0, maximum=MAX_SECONDS, integer=True))
    return [problem for problem in problems if problem]


def examine(path, option='path'):
    """What is at the venv path ``path``: {'path': it normalised, 'kind': 'missing', 'link' or 'venv' (a real one),
    'current': the venv in use there (the link's target resolved, the real venv) or None}.
    :raises VenvError: naming ``option`` - a system or home directory (also through links), a real directory that is
    no venv, a file or anything else at the path, a ``<path>.d`` that is no directory or a system one."""
    problem = host_path_problem(option, path)
    if problem:
        raise VenvError(problem)
    path = normalise(path)
    folder = path + '.d'
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        found = dict(path=path, kind='missing', current=None)
    except OSError as error:
        raise VenvError('cannot look at %s %s: %s' % (option, path, error.strerror or error))
    else:
        if stat.S_ISLNK(mode):
            found = dict(path=path, kind='link', current=os.path.realpath(path) if os.path.exists(path) else None)
        elif stat.S_ISDIR(mode) and is_venv(path):
            found = dict(path=path, kind='venv', current=path)
        else:
            what = 'a directory that is no venv (no pyvenv.cfg and bin/python)' if stat.S_ISDIR(mode) else _kind(mode)
            raise VenvError('%s %s is %s: python_venv replaces only a link or a venv there, so it leaves it as it is; '
                            'move it away, or choose another path' % (option, path, what))
    if os.path.lexists(folder):
        problem = host_path_problem(option, folder)
        if problem:
            raise VenvError(problem)
        if not os.path.isdir(folder):
            raise VenvError('%s %s: %s, where its venvs are built and kept, is %s, not a directory; move it away'
                            % (option, path, folder, _kind(os.stat(folder).st_mode) if os.path.exists(folder)
                               else 'a dangling link'))
    return found


def build_problem(target):
    """None when a venv may be built in ``target`` (a folder of ``<path>.d``): nothing is there, or a venv, or what a
    failed ``python -m venv`` left (its pyvenv.cfg); else why not - ``--clear`` would empty it."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode) and (os.path.lexists(os.path.join(target, 'pyvenv.cfg')) or not os.listdir(target)):
        return None
    what = 'a directory that is no venv' if stat.S_ISDIR(mode) else _kind(mode)
    return ('%s, where the venv of these pins is built, is %s: python_venv would empty it, so it leaves it as it is; '
            'move it away' % (target, what))


def _aside(path, stamp):
    """Where a real venv at ``path`` goes: ``<path>.d/previous-<stamp>``, with a number when that is taken."""
    base = os.path.join(path + '.d', 'previous-%s' % stamp)
    candidate, number = base, 1
    while os.path.lexists(candidate):
        candidate, number = '%s-%d' % (base, number), number + 1
    return candidate


def plan_switch(found, stamp):
    """What pointing the path of ``found`` (examine's) at another venv does: (previous, moved) - what the path was (a
    link's target, or where the real venv goes) or None, and {'src', 'dest'} of the real venv moved aside or None."""
    if found['kind'] == 'link':
        return os.path.realpath(found['path']), None
    if found['kind'] == 'venv':
        dest = _aside(found['path'], stamp)
        return dest, dict(src=found['path'], dest=dest)
    return None, None


def switch(found, target, stamp):
    """Point the path of ``found`` at ``target`` (a link put in place in one rename), once what is there is seen to
    be still what examine found; a real venv there is moved aside first. Returns plan_switch's (previous, moved).
    :raises VenvError: when what is there changed; OSError from the system."""
    path = found['path']
    if examine(path) != found:
        raise VenvError('path %s changed while the venv was built, so it was left as it is; run again' % path)
    previous, moved = plan_switch(found, stamp)
    if moved:
        os.rename(moved['src'], moved['dest'])
    number = 0
    while True:
        temporary = '%s.new-%d-%d' % (path, os.getpid(), number)
        try:
            os.symlink(target, temporary)
            break
        except OSError as error:
            if error.errno != errno.EEXIST:
                raise
            number += 1
    os.rename(temporary, path)
    return previous, moved


class Venvs:
    """The runs of venvs' own Python and pip for the pins ``packages`` and the removals ``remove``; a failure names
    ``path``, left as it was."""

    def __init__(self, runner, path, packages, remove, timeout):
        self.runner = runner
        self.path = path
        self.packages = packages
        self.remove = remove
        self.timeout = timeout

    def run(self, argv, what):
        result = self.runner.run(argv)
        if result.rc != 0:
            self.runner.fail(result, '%s failed%s; %s was left as it was' % (
                what, ' (it did not end within %d seconds: timeout)' % self.timeout if result.timed_out else '',
                self.path))
        return result

    def python_version(self, python):
        return self.run([python, '-c', VERSION_CODE], '%s -c (its version)' % python).stdout.strip()

    def holds(self, venv, version):
        """(missing pins, packages to remove still present) of an existing venv; everything missing when its Python
        is another version."""
        python = os.path.join(venv, 'bin', 'python')
        if self.python_version(python) != version:
            return list(self.packages), []
        listed = self.run([python, '-m', 'pip', 'list', '--format=json', '--disable-pip-version-check'],
                          'pip list in %s' % venv)
        try:
            installed = parse_pip_list(listed.stdout)
        except PipError as error:
            self.runner.fail(listed, '%s (in %s)' % (error, venv))
        return missing_pins(installed, self.packages), present(installed, self.remove)

    def check(self, venv):
        result = self.runner.run([os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'check',
                                  '--disable-pip-version-check'])
        problems = pip_check_problems(result.stdout, self.remove)
        if result.rc != 0 and not problems and not result.stdout.strip():
            problems = ['pip check failed without saying why: %s' % (result.stderr.strip() or 'rc %d' % result.rc)]
        return result, problems

    def site_packages(self, venv):
        return self.run([os.path.join(venv, 'bin', 'python'), '-c', SITE_CODE], 'reading site-packages').stdout.strip()


def python_range_problem(version, python, python_option, python_range, python_range_of=None):
    """Why Python ``version`` (of ``python``, given by option ``python_option``) may not be used: outside
    ``python_range`` (the range of ``python_range_of``, else of the packages), or the range unreadable; None when it
    may, or without a range."""
    if not python_range:
        return None
    try:
        inside = python_in_range(version, python_range)
    except ValueError as error:
        return 'python_range: %s' % error
    if inside:
        return None
    return ('%s %s is Python %s, outside %s, the Python range of %s: point %s at a Python in that range; nothing was '
            'installed' % (python_option, python, version, python_range, python_range_of or 'the packages',
                           python_option))


def venv_target(path, version, packages, remove):
    """The folder of ``<path>.d`` the venv of ``packages`` without ``remove`` on Python ``version`` is built in."""
    return os.path.join(path + '.d', venv_name(version, packages, remove))


def install_argv(target, missing, wheelhouse=None):
    """pip's argv installing the pins ``missing`` into the venv ``target``; offline from ``wheelhouse`` when given."""
    argv = [os.path.join(target, 'bin', 'python'), '-m', 'pip', 'install', '--disable-pip-version-check', '--quiet']
    if wheelhouse:
        argv += ['--no-index', '--find-links', wheelhouse]
    return argv + list(missing)


def uninstall_argv(target, still):
    """pip's argv removing the packages ``still`` from the venv ``target``."""
    return [os.path.join(target, 'bin', 'python'), '-m', 'pip', 'uninstall', '--yes', '--quiet'] + list(still)


def _checked(module, params):
    """(examine's find, the Venvs, the Python version) once the options, the path and the Python pass; else the
    module fails naming the option."""
    problems = option_problems(params['packages'], params['timeout'])
    try:
        found = examine(params['path'])
    except VenvError as error:
        found = None
        problems.append(str(error))
    if problems or not found:
        module.fail_json(msg='; '.join(problems))
    if not is_executable(params['python']):
        module.fail_json(msg='%s %s is not an executable file: install that Python or point %s at another'
                         % (params['python_option'], params['python'], params['python_option']))
    venvs = Venvs(CommandRunner(module, params['timeout']), found['path'], params['packages'], params['remove'],
                  params['timeout'])
    version = venvs.python_version(params['python'])
    problem = python_range_problem(version, params['python'], params['python_option'], params['python_range'],
                                   params['python_range_of'])
    if problem:
        module.fail_json(msg=problem)
    return found, venvs, version


def ensure(module, stamp=None):
    """Everything module python_venv does after its options are parsed; what it exits with. Fails the module naming
    the option to fix. ``stamp``: the time a real venv at the path is moved aside under (now by default)."""
    params = module.params
    # One time for the check and the run: where a real venv at the path goes is named after it.
    stamp = stamp or time.strftime('%Y%m%dT%H%M%S')
    found, venvs, version = _checked(module, params)
    path = found['path']
    result = dict(changed=False, venv=None, previous=None, moved=None, python_version=version, installed=[], removed=[],
                  switched=False, site_packages=None)

    current = found['current']
    if current and is_venv(current):
        missing, still = venvs.holds(current, version)
        if not missing and not still:
            check, problems = venvs.check(current)
            if problems:
                venvs.runner.fail(check, 'the venv %s holds every pin, but pip check reports: %s; remove %s to have it '
                                  'built again' % (current, '; '.join(problems), current))
            result.update(venv=current, site_packages=venvs.site_packages(current))
            return result

    target = venv_target(path, version, params['packages'], params['remove'])
    problem = build_problem(target)
    if problem:
        module.fail_json(msg=problem)
    missing, still = venvs.holds(target, version) if is_venv(target) else (list(params['packages']), [])
    # Compared as resolved: a link in the path's parents does not make the venv in use another one.
    switching = current != os.path.realpath(target)
    previous, moved = plan_switch(found, stamp) if switching else (None, None)
    result.update(changed=True, venv=target, installed=missing, removed=still, switched=switching,
                  previous=previous, moved=moved)
    if module.check_mode:
        if is_venv(target):
            result['site_packages'] = venvs.site_packages(target)
        return result

    if missing:
        if not is_venv(target):
            os.makedirs(path + '.d', exist_ok=True)
            # --clear: a venv whose creation failed half way (no ensurepip) is made again.
            venvs.run([params['python'], '-m', 'venv', '--clear', target], '%s -m venv %s' % (params['python'], target))
        venvs.run(install_argv(target, missing, params['wheelhouse']),
                  'pip install %s into %s' % (' '.join(missing), target))
        # pip may have brought packages that are to be removed.
        still = venvs.holds(target, version)[1]
        result['removed'] = still
    if still:
        venvs.run(uninstall_argv(target, still), 'pip uninstall %s in %s' % (' '.join(still), target))
    check, problems = venvs.check(target)
    if problems:
        venvs.runner.fail(check, 'pip check in the new venv %s reports: %s %s was not switched to it, so the service '
                          'runs as before; fix the pins (packages) and run again' % (target, '; '.join(problems), path))
    if switching:
        try:
            result['previous'], result['moved'] = switch(found, target, stamp)
        except (VenvError, OSError) as error:
            module.fail_json(msg='the venv %s is ready, but %s could not be pointed at it: %s' % (target, path, error))
    result['site_packages'] = venvs.site_packages(target)
    return result
