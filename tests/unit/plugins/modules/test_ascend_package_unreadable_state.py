# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ascend_package's main() when a file that says what is installed is there but cannot be read (a directory, a
FIFO, a symbolic link loop, a directory without permission): what is installed is unknown, so the module fails,
in check mode too, naming the file, and runs nothing; it never plans an install over an installed component."""

from __future__ import annotations

import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import ascend_package
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    UNREADABLE_KINDS,
    ExitJson,
    FailJson,
    fails_after,
    makeself_archive,
    plant,
    run_main,
)

DRIVER_RUN = 'Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run'
KERNELS_RUN = 'Ascend-cann-kernels-910b_8.2.RC1_linux-aarch64.run'
DRIVER_VERSION_INFO = '/usr/local/Ascend/driver/version.info'
TOOLKIT = '/usr/local/Ascend/ascend-toolkit/8.2.RC1'
CHECK_OK = 'Verifying archive integrity...  100%   SHA256 checksums are OK. All good.\n'
HINT = ' (make it a readable regular file or remove it, or check the root and install_path options)'


@pytest.fixture
def host(fake_host):
    """The fake host: only ``locale -a`` answers unless told otherwise."""
    return fake_host


def package(host, name):
    return host.write('/srv/' + name, makeself_archive(), 0o755)


def run_module(args, outcome=ExitJson):
    with fails_after(10):
        return run_main(ascend_package.main, args, outcome)


def refusal(component, warning):
    """The failure of a run whose component's state could not be read, from the warning the facts give."""
    unreadable = warning[:-len('; it is not read')]
    return {'msg': 'cannot tell which %s version is installed, so nothing was done: %s%s' % (component, unreadable, HINT)}


def test_an_absent_driver_is_installed_so_check_mode_plans_it(host):
    """The difference the refusals below make: without the file, check mode plans an install."""
    path = package(host, DRIVER_RUN)
    host.answers[(path, '--check')] = (0, CHECK_OK, '')
    result = run_module({'path': path, 'root': host.root, '_ansible_check_mode': True})
    assert (result['action'], result['before'], result['changed']) == ('install', None, True)


@pytest.mark.parametrize('check_mode', [True, False])
@pytest.mark.parametrize('kind', UNREADABLE_KINDS)
def test_a_driver_version_file_that_cannot_be_read_refuses_the_decision(host, monkeypatch, kind, check_mode):
    path = package(host, DRIVER_RUN)
    warning = plant(monkeypatch, host.root, DRIVER_VERSION_INFO, kind)
    result = run_module({'path': path, 'root': host.root, '_ansible_check_mode': check_mode}, FailJson)
    assert result == refusal('driver', warning)
    assert host.calls() == []


def test_the_refusal_names_the_file_and_why(host, monkeypatch):
    path = package(host, DRIVER_RUN)
    os.makedirs(os.path.join(host.root, DRIVER_VERSION_INFO.lstrip('/')))
    assert run_module({'path': path, 'root': host.root, 'state': 'latest', '_ansible_check_mode': True}, FailJson) == {
        'msg': 'cannot tell which driver version is installed, so nothing was done: %s/usr/local/Ascend/driver/'
               'version.info: a directory, not a regular file' % host.root + HINT}
    assert os.path.isdir(os.path.join(host.root, DRIVER_VERSION_INFO.lstrip('/')))


def test_a_fifo_in_place_of_the_install_record_refuses_the_decision(host, monkeypatch):
    """/etc/ascend_install.info says where the driver is: without it the driver may be anywhere."""
    path = package(host, DRIVER_RUN)
    host.write(DRIVER_VERSION_INFO, 'Version=24.1.rc1\n')
    warning = plant(monkeypatch, host.root, '/etc/ascend_install.info', 'fifo')
    assert run_module({'path': path, 'root': host.root, '_ansible_check_mode': True}, FailJson) == refusal('driver', warning)
    assert host.calls() == []


@pytest.mark.parametrize('kind', ['directory', 'fifo'])
def test_a_kernels_record_that_cannot_be_read_refuses_the_decision(host, monkeypatch, kind):
    path = package(host, KERNELS_RUN)
    host.write(TOOLKIT + '/aarch64-linux/ascend_toolkit_install.info', 'version=8.2.RC1\n')
    os.symlink('8.2.RC1', os.path.join(host.root, 'usr/local/Ascend/ascend-toolkit/latest'))
    warning = plant(monkeypatch, host.root, TOOLKIT + '/opp_kernel/version.info', kind)
    args = {'path': path, 'root': host.root, 'accept_eula': True, '_ansible_check_mode': True}
    assert run_module(args, FailJson) == refusal('kernels', warning)
    assert host.calls() == []
