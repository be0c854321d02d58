# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""container_engine_config's main() on real files in a scratch directory: what it writes, keeps and refuses; with
tomllib proving the TOML edit, and again with the collection's own reader, which does on Python < 3.11."""

from __future__ import annotations

import json
import os
import socket

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _toml
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._engine_config import ConfigError
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import container_engine_config
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FailJson, load_fixture, run_main

try:
    import tomllib
except ImportError:  # Python < 3.11: the collection's reader, whose loads() gives what tomllib's gives.
    tomllib = _toml

RUNTIME = '/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime'
INSTALLER_TEMPLATE = 'daemon.json_ascend-docker-runtime-installer_template.txt'
V2_17 = 'containerd-config.toml_v2_containerd-1.7.34_cri-doc-full.txt'


# Every test runs twice: with the standard library's TOML reader and with the collection's own (tests/unit/plugins/
# conftest.py).
pytestmark = pytest.mark.usefixtures('toml_reader')


def run_module(args, outcome=None):
    if outcome is None:
        return run_main(container_engine_config.main, args)
    return run_main(container_engine_config.main, args, outcome)


def read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def test_docker_file_is_merged_keeping_mode_and_owner(fake_host):
    path = fake_host.write('/etc/docker/daemon.json', load_fixture(INSTALLER_TEMPLATE), mode=0o600)
    os.chown(path, 1234, 5678)
    result = run_module({'path': path, 'default_runtime': False})
    assert result['changed'] is True
    assert result['config'] == {'runtimes': {'ascend': {'path': RUNTIME, 'runtimeArgs': []}}}
    assert json.loads(read(path)) == result['config']
    assert result['diff']['before'] == load_fixture(INSTALLER_TEMPLATE)
    assert result['diff']['after'] == read(path)
    stat = os.stat(path)
    assert (stat.st_mode & 0o7777, stat.st_uid, stat.st_gid) == (0o600, 1234, 5678)
    assert os.listdir(os.path.dirname(path)) == ['daemon.json']
    # Run again: nothing to do, and the file is not rewritten.
    before = os.stat(path).st_ino
    again = run_module({'path': path, 'default_runtime': False})
    assert again['changed'] is False and 'diff' not in again
    assert os.stat(path).st_ino == before


def test_check_mode_predicts_and_writes_nothing(fake_host):
    text = '{"log-driver": "json-file"}\n'
    path = fake_host.write('/etc/docker/daemon.json', text)
    result = run_module({'path': path, '_ansible_check_mode': True, '_ansible_diff': True})
    assert result['changed'] is True
    expected = {'log-driver': 'json-file', 'runtimes': {'ascend': {'path': RUNTIME, 'runtimeArgs': []}}}
    assert json.loads(result['diff']['after']) == expected
    assert read(path) == text


def test_a_missing_file_and_directory_are_created(fake_host):
    path = fake_host.path('/etc/docker/daemon.json')
    result = run_module({'path': path, 'default_runtime': True})
    assert result['changed'] is True
    assert json.loads(read(path)) == {'runtimes': {'ascend': {'path': RUNTIME, 'runtimeArgs': []}}, 'default-runtime': 'ascend'}
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert result['diff']['before'] == ''


def test_backup_keeps_the_old_file(fake_host):
    text = '{"debug": true}\n'
    path = fake_host.write('/etc/docker/daemon.json', text)
    result = run_module({'path': path, 'backup': True})
    assert read(result['backup_file']) == text
    assert os.path.dirname(result['backup_file']) == os.path.dirname(path)


def test_invalid_json_fails_naming_the_file_and_is_not_touched(fake_host):
    text = '{"runtimes": {"ascend": {"path": "/x"}},}\n'
    path = fake_host.write('/etc/docker/daemon.json', text)
    result = run_module({'path': path}, FailJson)
    assert result['msg'].startswith('%s is not valid JSON (' % path)
    assert result['msg'].endswith('fix or remove it; it was left unchanged')
    assert read(path) == text


def test_a_directory_in_place_of_the_file_fails(fake_host):
    fake_host.mkdir('/etc/docker/daemon.json')
    result = run_module({'path': fake_host.path('/etc/docker/daemon.json')}, FailJson)
    assert result['msg'] == '%s is not a regular file: move it away or give another path' % fake_host.path('/etc/docker/daemon.json')


def test_a_hand_edited_path_in_another_case_is_corrected_with_a_warning(fake_host):
    path = fake_host.write('/etc/docker/daemon.json', json.dumps({'runtimes': {'ascend': {'path': RUNTIME.lower()}}}))
    result = run_module({'path': path})
    assert result['config']['runtimes']['ascend']['path'] == RUNTIME
    assert len(fake_host.warnings()) == 1 and 'differs from %s only in case' % RUNTIME in fake_host.warnings()[0]


def test_containerd_file_is_edited_by_table(fake_host):
    text = load_fixture(V2_17)
    path = fake_host.write('/etc/containerd/config.toml', text)
    result = run_module({'engine': 'containerd', 'path': path, 'default_runtime': True})
    assert result['changed'] is True and result['config'] is None
    data = tomllib.loads(read(path))['plugins']['io.containerd.grpc.v1.cri']['containerd']
    assert data['default_runtime_name'] == 'ascend'
    # runc's cgroup driver (the 1.7 doc's SystemdCgroup = false) is the runtime's too.
    assert data['runtimes']['ascend'] == {'runtime_type': 'io.containerd.runc.v2',
                                          'options': {'BinaryName': RUNTIME, 'SystemdCgroup': False}}
    assert len(read(path).splitlines()) == len(text.splitlines()) + 6
    assert run_module({'engine': 'containerd', 'path': path, 'default_runtime': True})['changed'] is False


def test_containerd_without_version_needs_config_version(fake_host):
    path = fake_host.path('/etc/containerd/config.toml')
    result = run_module({'engine': 'containerd', 'path': path}, FailJson)
    assert result['msg'].startswith('%s has no version line: give the config version' % path)
    assert not os.path.exists(path)
    run_module({'engine': 'containerd', 'path': path, 'config_version': 2})
    assert tomllib.loads(read(path))['version'] == 2


@pytest.mark.parametrize('text', [
    pytest.param('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n[plugins."io.containerd.grpc.v1.cri"]\n',
                 id='table-twice'),
    pytest.param('version = 2\n[grpc]\n  address = "/run/containerd/containerd.sock\x7f"\n', id='raw-del'),
])
def test_invalid_toml_fails_naming_the_file_and_is_not_touched(fake_host, text):
    path = fake_host.write('/etc/containerd/config.toml', text)
    result = run_module({'engine': 'containerd', 'path': path, 'default_runtime': True}, FailJson)
    assert result['msg'].startswith('%s is not valid TOML (' % path)
    assert result['msg'].endswith('): fix it; it was left unchanged')
    assert read(path) == text


def test_a_runtime_defined_by_dotted_keys_fails_and_is_not_touched(fake_host):
    text = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
            '  ascend.runtime_type = "io.containerd.runc.v2"\n'
            '  ascend.options.BinaryName = "/opt/ascend-docker-runtime"\n')
    path = fake_host.write('/etc/containerd/config.toml', text)
    result = run_module({'engine': 'containerd', 'path': path}, FailJson)
    assert 'the Ascend runtime cannot be added by table without breaking the file' in result['msg']
    assert read(path) == text


def test_a_runtime_path_with_control_characters_is_written_escaped(fake_host):
    runtime_path = '/opt/ascend\x7f\t"\\/ascend-docker-runtime'
    path = fake_host.write('/etc/containerd/config.toml', 'version = 3\n')
    assert run_module({'engine': 'containerd', 'path': path, 'runtime_path': runtime_path})['changed'] is True
    assert '\x7f' not in read(path) and '\t' not in read(path)
    for reader in (tomllib, _toml):
        containerd = reader.loads(read(path))['plugins']['io.containerd.cri.v1.runtime']['containerd']
        assert containerd['runtimes']['ascend']['options'] == {'BinaryName': runtime_path}
    assert run_module({'engine': 'containerd', 'path': path, 'runtime_path': runtime_path})['changed'] is False


def test_containerd_version_1_is_refused_unchanged(fake_host):
    text = '[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n'
    path = fake_host.write('/etc/containerd/config.toml', text)
    result = run_module({'engine': 'containerd', 'path': path, 'config_version': 3}, FailJson)
    assert 'reads it as config version 1, which is not supported' in result['msg']
    assert read(path) == text


@pytest.mark.parametrize('args, message', [
    ({'runtime_path': 'ascend-docker-runtime'}, 'runtime_path must be an absolute path; got ascend-docker-runtime'),
    ({'runtime_name': ' '}, "runtime_name must be a name of letters, digits, _, . and -; got ' '"),
    ({'runtime_name': 'asc end'}, "runtime_name must be a name of letters, digits, _, . and -; got 'asc end'"),
])
def test_bad_options_fail_naming_them(fake_host, args, message):
    result = run_module(dict({'path': fake_host.path('/etc/docker/daemon.json')}, **args), FailJson)
    assert result['msg'] == message


@pytest.mark.parametrize('make', ['fifo', 'socket', 'directory'])
def test_a_configuration_path_that_is_no_regular_file_is_refused_without_blocking(make, tmp_path):
    path = str(tmp_path / 'daemon.json')
    if make == 'fifo':
        os.mkfifo(path)
    elif make == 'directory':
        os.mkdir(path)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path)
    with pytest.raises(ConfigError, match='is not a regular file: move it away or give another path'):
        container_engine_config.read_config(path)
    assert container_engine_config.read_config(str(tmp_path / 'absent.json')) == ''
