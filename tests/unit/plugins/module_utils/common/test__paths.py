# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The rule for paths the collection replaces: normalised first, system directories refused by name."""

from __future__ import annotations

import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _paths
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import host_path_problem, normalise, path_problem

SYSTEM = ['/', '//', '/.', '/usr', '/usr/', '//usr', '/usr/.', '/usr/bin/..', '/./usr', '/opt', '/opt/', '/var',
          '/boot', '/etc', '/home', '/root', '/home/alice', '/home/alice/', '/usr/local', '/usr/lib64', '/var/lib',
          '/var/log/..', '/etc/ssl', '/etc/systemd/system', '/proc/1', '/sys/class', '/dev/shm', '/run/user/0',
          '/boot/efi', '/srv', '/tmp', '/usr/local/Ascend', '/opt/vllm/../../usr']
ACCEPTED = ['/opt/vllm/venv', '/opt/vllm', '/srv/models/DeepSeek-R1-w8a8', '/data/models/out', '/home/alice/venvs/vllm',
            '/tmp/kav-test/venv', '/usr/local/vllm/venv', '/var/lib/vllm']


@pytest.mark.parametrize('path', SYSTEM)
def test_system_directories_are_refused_by_name_after_normalisation(path):
    problem = path_problem('vllm_service_venv', path)
    assert problem and problem.startswith('vllm_service_venv %s' % path)
    assert 'system directory' in problem or 'home directory' in problem or 'system\'s own files' in problem


@pytest.mark.parametrize('path', ACCEPTED)
def test_directories_of_their_own_are_accepted(path):
    assert path_problem('vllm_service_venv', path) is None


@pytest.mark.parametrize('path', ['relative/venv', '', None, 7, ['/opt/x'], '/opt/x\n', '/opt/\x00x', '/opt/x\ty'])
def test_relative_paths_control_characters_and_other_types_are_refused(path):
    assert path_problem('model_quantize_output', path).startswith('model_quantize_output must')


def test_normalise_collapses_what_the_kernel_does_not_see():
    assert normalise('//usr//bin/../') == '/usr'
    assert normalise('/opt/vllm/./venv/') == '/opt/vllm/venv'


def test_an_account_home_is_refused_on_the_host_and_a_link_into_a_system_directory_too(tmp_path, monkeypatch):
    monkeypatch.setattr(_paths, 'home_directories', lambda: frozenset([str(tmp_path / 'svc')]))
    assert 'home directory' in host_path_problem('model_quantize_output', str(tmp_path / 'svc'))
    link = tmp_path / 'venv'
    os.symlink('/usr', str(link))
    problem = host_path_problem('vllm_service_venv', str(link))
    assert problem.startswith('vllm_service_venv %s resolves to /usr, which is a top-level system directory' % link)
    assert host_path_problem('vllm_service_venv', str(tmp_path / 'venv2')) is None
