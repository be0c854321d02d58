# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What python_venv does with what it finds at a venv's path: nothing, a link or a real venv are taken (the venv moved
aside, kept); a system or home directory in any spelling, a directory that is no venv, a file, a FIFO, a socket are
refused and left exactly as they were."""

from __future__ import annotations

import os
import re
import socket

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _paths
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._venv import (
    VenvError,
    build_problem,
    examine,
    install_argv,
    is_venv,
    option_problems,
    plan_switch,
    python_range_problem,
    switch,
    uninstall_argv,
    venv_target,
)

SYSTEM = ['/', '//', '/.', '/usr', '/usr/', '//usr', '/usr/bin/..', '/./etc', '/etc', '/etc/', '/var/lib', '/usr/local',
          '/root', '/home/alice', '/opt', '/tmp', '/proc/1', '/opt/vllm/../../usr', '/usr/lib64/']


def fake_venv(path):
    os.makedirs(os.path.join(path, 'bin'))
    with open(os.path.join(path, 'pyvenv.cfg'), 'w', encoding='utf-8') as handle:
        handle.write('home = /usr/bin\n')
    python = os.path.join(path, 'bin', 'python')
    with open(python, 'w', encoding='utf-8') as handle:
        handle.write('#!/bin/sh\n')
    os.chmod(python, 0o755)
    return path


def tree(top):
    """Every path under ``top`` with its kind: what a refusal must leave as it was."""
    found = set()
    for root, dirs, files in os.walk(top):
        found.update((os.path.join(root, name), 'dir') for name in dirs)
        found.update((os.path.join(root, name), 'file') for name in files)
    return found


@pytest.mark.parametrize('path', SYSTEM)
def test_system_and_home_directories_are_refused_in_every_spelling(path):
    with pytest.raises(VenvError, match=r'^path %s .*(system directory|home directory|system\'s own files)' % path):
        examine(path)


@pytest.mark.parametrize('path', ['venv', 'relative/venv', '', '/opt/venv\n', '/opt/ve\x00nv', '/opt/\x1bvenv'])
def test_relative_paths_and_control_characters_are_refused(path):
    with pytest.raises(VenvError, match=r'^path must'):
        examine(path)


def test_a_link_to_a_system_directory_is_refused(tmp_path):
    os.symlink('/usr', str(tmp_path / 'venv'))
    with pytest.raises(VenvError, match='resolves to /usr, which is a top-level system directory'):
        examine(str(tmp_path / 'venv'))
    assert os.readlink(str(tmp_path / 'venv')) == '/usr'


def test_an_accounts_home_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(_paths, 'home_directories', lambda: frozenset([str(tmp_path / 'svc')]))
    with pytest.raises(VenvError, match='is a home directory'):
        examine(str(tmp_path / 'svc') + '/')


def test_nothing_a_link_and_a_venv_are_taken_and_the_path_is_normalised(tmp_path):
    path = str(tmp_path / 'venv')
    assert examine(path + '/') == dict(path=path, kind='missing', current=None)
    assert examine(str(tmp_path) + '/./x/../venv') == dict(path=path, kind='missing', current=None)
    fake_venv(path + '.d/one')
    os.symlink(path + '.d/one', path)
    assert examine(path) == dict(path=path, kind='link', current=path + '.d/one')
    os.unlink(path)
    os.symlink(path + '.d/gone', path)
    assert examine(path) == dict(path=path, kind='link', current=None)
    os.unlink(path)
    fake_venv(path)
    assert examine(path) == dict(path=path, kind='venv', current=path)
    assert is_venv(path) and not is_venv(str(tmp_path))


NO_VENV = r'a directory that is no venv \(no pyvenv.cfg and bin/python\)'


def fifo(path):
    os.mkfifo(path)


def unix_socket(path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.close()


@pytest.mark.parametrize('make, what', [
    (lambda path: os.makedirs(os.path.join(path, 'data')), NO_VENV),
    (os.mkdir, NO_VENV),
    (lambda path: os.makedirs(os.path.join(path, 'bin')) or open(os.path.join(path, 'pyvenv.cfg'), 'w').close(),
     NO_VENV),
    (lambda path: open(path, 'w').close(), 'a regular file'),
    (fifo, r'a FIFO \(named pipe\)'),
    (unix_socket, 'a socket'),
])
def test_anything_else_at_the_path_is_refused_and_left_as_it_was(tmp_path, make, what):
    path = str(tmp_path / 'venv')
    make(path)
    before = tree(str(tmp_path))
    with pytest.raises(VenvError, match=r'^path %s is %s: python_venv replaces only a link or a venv there, so it '
                                        r'leaves it as it is; move it away' % (path, what)):
        examine(path)
    assert tree(str(tmp_path)) == before


def test_a_venvs_folder_that_is_no_directory_or_leads_into_the_system_is_refused(tmp_path):
    path = str(tmp_path / 'venv')
    open(path + '.d', 'w').close()
    with pytest.raises(VenvError, match=r'%s\.d, where its venvs are built and kept, is a regular file' % path):
        examine(path)
    os.unlink(path + '.d')
    os.symlink('/usr', path + '.d')
    with pytest.raises(VenvError, match=r'%s\.d resolves to /usr' % path):
        examine(path)


def test_a_build_folder_holding_something_else_is_refused(tmp_path):
    target = str(tmp_path / 'venv.d' / 'torch-2.10.0-0123456789ab')
    assert build_problem(target) is None
    os.makedirs(target)
    assert build_problem(target) is None                                 # empty
    open(os.path.join(target, 'pyvenv.cfg'), 'w').close()
    assert build_problem(target) is None                                 # a venv that failed half way
    os.unlink(os.path.join(target, 'pyvenv.cfg'))
    open(os.path.join(target, 'notes.txt'), 'w').close()
    assert build_problem(target) == ('%s, where the venv of these pins is built, is a directory that is no venv: '
                                     'python_venv would empty it, so it leaves it as it is; move it away' % target)
    link = str(tmp_path / 'venv.d' / 'link')
    os.symlink(str(tmp_path), link)
    assert build_problem(link).startswith('%s, where the venv of these pins is built, is a symbolic link:' % link)


def test_a_real_venv_is_moved_aside_as_planned_and_kept(tmp_path):
    path = fake_venv(str(tmp_path / 'venv'))
    target = fake_venv(path + '.d/new')
    found = examine(path)
    planned = plan_switch(found, '20250101T000000')
    assert planned == (path + '.d/previous-20250101T000000',
                       dict(src=path, dest=path + '.d/previous-20250101T000000'))
    assert switch(found, target, '20250101T000000') == planned
    assert os.readlink(path) == target and is_venv(path + '.d/previous-20250101T000000')


def test_a_taken_previous_name_gets_a_number(tmp_path):
    path = fake_venv(str(tmp_path / 'venv'))
    os.makedirs(path + '.d/previous-T')
    assert plan_switch(examine(path), 'T')[1] == dict(src=path, dest=path + '.d/previous-T-1')


def test_a_link_is_replaced_and_its_target_kept(tmp_path):
    path = str(tmp_path / 'venv')
    old, new = fake_venv(path + '.d/old'), fake_venv(path + '.d/new')
    os.symlink(old, path)
    found = examine(path)
    assert plan_switch(found, 'T') == (old, None)
    assert switch(found, new, 'T') == (old, None)
    assert os.readlink(path) == new and is_venv(old)
    assert sorted(os.listdir(str(tmp_path))) == ['venv', 'venv.d']   # no temporary link left


def test_nothing_is_switched_when_the_path_changed_since_it_was_examined(tmp_path):
    path = str(tmp_path / 'venv')
    target = fake_venv(path + '.d/new')
    found = examine(path)
    os.makedirs(os.path.join(path, 'data'))
    with pytest.raises(VenvError, match='is a directory that is no venv'):
        switch(found, target, 'T')
    assert os.path.isdir(os.path.join(path, 'data')) and not os.path.islink(path)


@pytest.mark.parametrize('timeout', [-1, MAX_SECONDS + 1, 10 ** 30, float('nan'), float('inf'), True, 1.5, 'x'])
def test_a_time_limit_out_of_range_is_refused(timeout):
    assert option_problems(['torch==2.10.0'], timeout) == [
        'timeout must be a whole number at least 0 and at most %d; got %s'
        % (MAX_SECONDS, repr(timeout) if isinstance(timeout, (float, str)) else timeout)]


def test_pins_and_time_limits_that_are_fine_pass():
    assert option_problems(['torch==2.10.0', 'torch_npu==2.10.0.post4'], 0) == []
    assert option_problems(['torch==2.10.0'], MAX_SECONDS) == []
    assert option_problems([], 1) == ['packages: give at least one pin such as vllm==0.23.0']
    assert option_problems(['torch>=2.10'], 1) == ["packages: 'torch>=2.10' is not a pin such as vllm==0.23.0"]


def test_a_python_inside_the_range_or_without_one_may_be_used():
    assert python_range_problem('3.11.4', '/usr/bin/python3', 'python', None) is None
    assert python_range_problem('3.11.4', '/usr/bin/python3', 'python', '') is None
    assert python_range_problem('3.11.4', '/usr/bin/python3', 'python', '>=3.10,<3.13', 'vllm-ascend 0.23.0') is None


def test_a_python_outside_the_range_is_refused_naming_its_option_and_whose_range_it_is():
    assert python_range_problem('3.9.18', '/usr/bin/python3.9', 'vllm_service_python', '>=3.10,<3.13',
                                'vllm-ascend 0.23.0') == (
        'vllm_service_python /usr/bin/python3.9 is Python 3.9.18, outside >=3.10,<3.13, the Python range of '
        'vllm-ascend 0.23.0: point vllm_service_python at a Python in that range; nothing was installed')
    assert python_range_problem('3.13.1', '/p', 'python', '<3.13').endswith(
        'the Python range of the packages: point python at a Python in that range; nothing was installed')


def test_a_range_that_is_no_range_names_python_range():
    assert python_range_problem('3.11.4', '/p', 'python', 'three') == (
        "python_range: 'three' is not a Python version range such as >=3.10,<3.13")


def test_the_venv_of_the_pins_is_built_beside_the_path_the_same_in_any_order():
    one = venv_target('/opt/vllm', '3.11.4', ['vllm==0.23.0', 'torch==2.10.0'], [])
    assert one == venv_target('/opt/vllm', '3.11.4', ['torch==2.10.0', 'vllm==0.23.0'], [])
    assert re.match(r'^/opt/vllm\.d/vllm-0\.23\.0-[0-9a-f]{12}$', one), one
    assert one != venv_target('/opt/vllm', '3.12.1', ['vllm==0.23.0', 'torch==2.10.0'], [])
    assert one != venv_target('/opt/vllm', '3.11.4', ['vllm==0.23.0', 'torch==2.10.0'], ['triton'])


def test_pip_installs_the_missing_pins_offline_only_from_a_wheelhouse():
    pip = ['/v/bin/python', '-m', 'pip', 'install', '--disable-pip-version-check', '--quiet']
    assert install_argv('/v', ['torch==2.10.0']) == pip + ['torch==2.10.0']
    assert install_argv('/v', ('a==1', 'b==2'), '/wheels') == pip + ['--no-index', '--find-links', '/wheels',
                                                                     'a==1', 'b==2']
    assert uninstall_argv('/v', ('triton',)) == ['/v/bin/python', '-m', 'pip', 'uninstall', '--yes', '--quiet',
                                                 'triton']
