# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Roles container_runtime's and npu_driver's inputs, each role's checked in one call before anything changes."""

from __future__ import annotations

import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._host_role_inputs import container_runtime_problems, npu_driver_problems

# Role container_runtime's defaults (roles/container_runtime/defaults/main.yml) without their prefix, with a runtime
# package and its EULA accepted, as an inventory gives them. Written out: this file also runs on the managed hosts'
# Pythons, which have no PyYAML to read the role's file with.
CONTAINER_RUNTIME = {
    'engine': 'docker', 'install_packages': True, 'docker_source': 'distribution', 'docker_ce_repo': None,
    'ascend_runtime': True, 'ascend_runtime_accept_eula': True,
    'ascend_runtime_package': {'path': '/srv/ascend/Ascend-docker-runtime_6.0.0_linux-aarch64.run'},
    'ascend_runtime_install_path': '/usr/local/Ascend', 'package_dir': '/var/cache/ascend-packages',
    'config_path': None, 'images': [], 'image_load_timeout': 1800,
}


def defaults(**given):
    """CONTAINER_RUNTIME with ``given``."""
    return dict(CONTAINER_RUNTIME, **given)


def test_the_good_values_are_the_role_s_defaults():
    # On the controller's suite only: the managed hosts' Pythons (make targets) have no PyYAML.
    yaml = pytest.importorskip('yaml')
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), *['..'] * 5)
    path = os.path.join(repo, 'roles', 'container_runtime', 'defaults', 'main.yml')
    with open(path, encoding='utf-8') as handle:
        role_defaults = dict((name[len('container_runtime_'):], value) for name, value in yaml.safe_load(handle).items())
    given = ('ascend_runtime_accept_eula', 'ascend_runtime_package')
    assert dict((name, value) for name, value in role_defaults.items() if name in CONTAINER_RUNTIME and name not in given) == \
        dict((name, value) for name, value in CONTAINER_RUNTIME.items() if name not in given)


EULA = ("The Ascend Docker Runtime is licensed under Huawei's End User License Agreement: read it and set "
        'container_runtime_ascend_runtime_accept_eula: true to install it, or set container_runtime_ascend_runtime: '
        'false to pass the NPU devices to containers one by one instead.')
PODMAN = ('container_runtime_engine podman has no Ascend Docker Runtime install scene: set '
          'container_runtime_ascend_runtime: false (containers get the NPU devices one by one), or use docker or '
          'containerd.')
REPO_PROBLEM = ('container_runtime_docker_ce_repo must be a dict with url and gpg_key_url, each an http or https URL '
                'without blanks or control characters, when container_runtime_docker_source is docker-ce; got %s')
IMAGE = ('container_runtime_images[%d] must have archive, the absolute path of an image archive on the host (not ending '
         'in /), and optionally name, a reference without blanks or control characters; got %s')
GOOD_REPO = {'url': 'https://download.docker.com/linux/debian', 'gpg_key_url': 'https://download.docker.com/linux/debian/gpg'}


@pytest.mark.parametrize('given, problems', [
    ({}, []),
    ({'ascend_runtime': 'yes', 'ascend_runtime_accept_eula': 'no'}, [EULA]),
    ({'ascend_runtime': False, 'ascend_runtime_accept_eula': False, 'ascend_runtime_package': None}, []),
    ({'engine': 'podman'}, [PODMAN]),
    ({'engine': 'podman', 'ascend_runtime': False}, []),
    ({'ascend_runtime_package': '/srv/x.run'}, [
        'container_runtime_ascend_runtime_package must be the package source of the Ascend Docker Runtime (a dict with '
        'src, path or url, such as {path: /srv/ascend/Ascend-docker-runtime_6.0.0_linux-aarch64.run}) when '
        'container_runtime_ascend_runtime is true; got "/srv/x.run"']),
    ({'ascend_runtime_package': {'url': 'https://example.invalid/x.run'}},
     ['container_runtime_ascend_runtime_package must be a dict with exactly one of src (a file on the controller), path'
      ' (a file on the host) or url, and no other key than checksum; container_runtime_ascend_runtime_package.checksum'
      ' (for example "sha256:<hex>") is required with container_runtime_ascend_runtime_package.url; got'
      ' {"url": "https://example.invalid/x.run"}']),
    # Checked whenever it is set, and when docker-ce would be installed from it.
    ({'docker_ce_repo': GOOD_REPO}, []),
    ({'docker_ce_repo': dict(GOOD_REPO, url='ftp://mirror/debian')},
     [REPO_PROBLEM % '{"url": "ftp://mirror/debian", "gpg_key_url": "https://download.docker.com/linux/debian/gpg"}']),
    ({'docker_ce_repo': {'url': 'https://mirror/debian'}}, [REPO_PROBLEM % '{"url": "https://mirror/debian"}']),
    ({'docker_source': 'docker-ce', 'docker_ce_repo': None}, [REPO_PROBLEM % 'null']),
    ({'docker_source': 'docker-ce', 'docker_ce_repo': None, 'install_packages': False}, []),
    ({'docker_ce_repo': {'url': 'https://robot:s3cret@mirror/debian', 'gpg_key_url': 'https://mirror/gpg key'}},
     [REPO_PROBLEM % '{"url": "https://********@mirror/debian", "gpg_key_url": "https://mirror/gpg key"}']),
    ({'package_dir': 'relative', 'config_path': None}, [
        'container_runtime_package_dir must be an absolute path without control characters; got "relative"']),
    ({'config_path': '/etc/docker/daemon.json\n'}, [
        'container_runtime_config_path must be an absolute path without control characters, or null; got '
        '"/etc/docker/daemon.json\\n"']),
    ({'ascend_runtime_install_path': None}, [
        'container_runtime_ascend_runtime_install_path must be an absolute path without control characters; got null']),
    ({'image_load_timeout': -1}, ['container_runtime_image_load_timeout must be seconds, 0 (no limit) or more; got -1']),
    ({'image_load_timeout': '600'}, []),
    ({'images': [{'archive': '/srv/images/vllm.tar', 'name': 'vllm:v1'}]}, []),
    ({'images': [{'archive': '/srv/images/'}, {'archive': '/srv/a.tar', 'name': 'a b'}, 'x']},
     [IMAGE % (0, '{"archive": "/srv/images/"}'), IMAGE % (1, '{"archive": "/srv/a.tar", "name": "a b"}'),
      IMAGE % (2, '"x"')]),
    ({'images': [{'archive': '/srv/a.tar'}], 'engine': 'containerd'}, [
        'container_runtime_images needs the docker or podman CLI; container_runtime_engine is containerd: import the '
        'archives with ctr images import, or leave container_runtime_images empty.']),
    ({'images': {'archive': '/srv/a.tar'}}, ['container_runtime_images must be a list of {archive, name}; got '
                                             '{"archive": "/srv/a.tar"}']),
    # Every problem at once, in order.
    ({'ascend_runtime_accept_eula': False, 'engine': 'podman', 'image_load_timeout': 'soon'},
     [EULA, PODMAN, 'container_runtime_image_load_timeout must be seconds, 0 (no limit) or more; got "soon"']),
])
def test_every_problem_names_its_variable_and_masks_passwords(given, problems):
    assert container_runtime_problems(defaults(**given)) == problems


DRIVER = '/root/ascend-packages/Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run'
NPU_DRIVER = {'version': '24.1.rc1', 'firmware_version': '7.5.0.3.220', 'package_dir': '/var/cache/ascend',
              'package_record': '/var/lib/kunpeng-ascend-vllm/npu-driver-packages.json', 'sysfs_path': '/sys',
              'expected_chips': 8, 'reboot_timeout': 600, 'ready_retries': 30, 'ready_delay': 10, 'install_timeout': 0,
              'min_free_gb': 2.5, 'driver_package': {'path': DRIVER},
              'firmware_package': {'path': '/root/ascend-packages/Ascend-hdk-910b-npu-firmware_7.5.0.3.220.run'}}


@pytest.mark.parametrize('given, problems', [
    ({}, []),
    ({'version': '25.0.RC1.1', 'expected_chips': '16', 'min_free_gb': '0'}, []),
    ({'version': '24.1;rm -rf /'}, ['npu_driver_version must be the driver version of npu_driver_driver_package, such '
                                    'as 24.1.rc1, 24.1.0 or 25.0.rc1.1; got "24.1;rm -rf /"']),
    ({'version': 24.1, 'firmware_version': None}, [
        'npu_driver_version must be the driver version of npu_driver_driver_package, such as 24.1.rc1, 24.1.0 or '
        '25.0.rc1.1; got 24.1',
        'npu_driver_firmware_version must be the firmware version of npu_driver_firmware_package, such as 7.5.0.3.220; '
        'got null']),
    ({'package_record': 'record.json'}, [
        'npu_driver_package_record must be an absolute path without control characters; got "record.json"']),
    ({'expected_chips': 0, 'ready_delay': True, 'min_free_gb': '1e3'}, [
        'npu_driver_expected_chips must be the number of NPU chips npu-smi shows, 1 or more; got 0',
        'npu_driver_ready_delay must be seconds, 0 or more; got true',
        'npu_driver_min_free_gb must be GiB, 0 or more; got "1e3"']),
    ({'driver_package': {'url': 'https://robot:s3cret@mirror/driver.run'}}, [
        'npu_driver_driver_package must be a dict with exactly one of src (a file on the controller), path (a file on the '
        'host) or url, and no other key than checksum; npu_driver_driver_package.checksum (for example "sha256:<hex>") '
        'is required with npu_driver_driver_package.url; got {"url": "https://********@mirror/driver.run"}']),
])
def test_npu_driver_s_problems_name_their_variables(given, problems):
    assert npu_driver_problems(dict(NPU_DRIVER, **given)) == problems
