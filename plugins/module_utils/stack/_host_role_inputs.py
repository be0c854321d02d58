# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The inputs of the host roles container_runtime and npu_driver, checked before anything changes (filters
container_runtime_input_problems and npu_driver_input_problems, the roles' tasks/inputs.yml): one call each, so that a
role's checks cost one task per node. Each problem names the variable and what it accepts; a value is quoted as JSON
with the passwords of its URLs masked.
Its tests: tests/unit/plugins/module_utils/stack/test__host_role_inputs.py.
"""

from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import shown_json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import is_written_ascend_version
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._package_source import sources_problems

# Whole-value patterns end in \Z (not $, which lets a trailing newline through) and admit no control character.
_ABSOLUTE_PATH = re.compile(r'/[^\x00-\x1f\x7f]*\Z')
_ARCHIVE = re.compile(r'/[^\x00-\x1f\x7f]*[^/\x00-\x1f\x7f]\Z')
_IMAGE_NAME = re.compile(r'[^\x00-\x20\x7f]+\Z')
_URL = re.compile(r'https?://[^\x00-\x20\x7f]+\Z')
_SECONDS = re.compile(r'[0-9]+\Z')
# The variables that hold paths, and whether null is one of their values.
PATHS = (('ascend_runtime_install_path', False), ('package_dir', False), ('config_path', True))


def _true(value):
    """A boolean as Ansible's bool filter reads it (yes, on, 1, true; anything else is false)."""
    return boolean(value, strict=False)


def _repo_problem(repo):
    def url(key):
        value = repo.get(key, '')
        return isinstance(value, str) and _URL.match(value) is not None
    if isinstance(repo, dict) and url('url') and url('gpg_key_url'):
        return None
    return ('container_runtime_docker_ce_repo must be a dict with url and gpg_key_url, each an http or https URL without '
            'blanks or control characters, when container_runtime_docker_source is docker-ce; got %s' % shown_json(repo))


def _image_problem(index, image):
    archive = image.get('archive') if isinstance(image, dict) else None
    name = image.get('name') if isinstance(image, dict) else None
    if isinstance(archive, str) and _ARCHIVE.match(archive) and (
            name is None or (isinstance(name, str) and _IMAGE_NAME.match(name))):
        return None
    return ('container_runtime_images[%d] must have archive, the absolute path of an image archive on the host (not '
            'ending in /), and optionally name, a reference without blanks or control characters; got %s'
            % (index, shown_json(image)))


def container_runtime_problems(inputs):
    """The problems of role container_runtime's ``inputs`` (its variables without the ``container_runtime_`` prefix,
    each as the inventory gives it), in the order of the role's former checks; empty when every input is fine."""
    get = inputs.get
    problems = []
    ascend_runtime = _true(get('ascend_runtime'))
    if ascend_runtime:
        if not _true(get('ascend_runtime_accept_eula')):
            problems.append(
                "The Ascend Docker Runtime is licensed under Huawei's End User License Agreement: read it and set "
                'container_runtime_ascend_runtime_accept_eula: true to install it, or set '
                'container_runtime_ascend_runtime: false to pass the NPU devices to containers one by one instead.')
        if get('engine') == 'podman':
            problems.append(
                'container_runtime_engine podman has no Ascend Docker Runtime install scene: set '
                'container_runtime_ascend_runtime: false (containers get the NPU devices one by one), or use docker or '
                'containerd.')
        if not isinstance(get('ascend_runtime_package'), dict):
            problems.append(
                'container_runtime_ascend_runtime_package must be the package source of the Ascend Docker Runtime (a dict '
                'with src, path or url, such as {path: /srv/ascend/Ascend-docker-runtime_6.0.0_linux-aarch64.run}) when '
                'container_runtime_ascend_runtime is true; got %s' % shown_json(get('ascend_runtime_package')))
    # Checked whenever it is set, so that a bad value never waits for the day docker-ce is chosen.
    repo = get('docker_ce_repo')
    if repo is not None or (get('docker_source') == 'docker-ce' and get('engine') != 'podman'
                            and _true(get('install_packages'))):
        problem = _repo_problem(repo)
        if problem:
            problems.append(problem)
    for name, nullable in PATHS:
        value = get(name)
        if not ((value is None and nullable) or (isinstance(value, str) and _ABSOLUTE_PATH.match(value))):
            problems.append('container_runtime_%s must be an absolute path without control characters%s; got %s'
                            % (name, ', or null' if nullable else '', shown_json(value)))
    if not _SECONDS.match(str(get('image_load_timeout'))):
        problems.append('container_runtime_image_load_timeout must be seconds, 0 (no limit) or more; got %s'
                        % shown_json(get('image_load_timeout')))
    images = get('images')
    if not isinstance(images, list):
        problems.append('container_runtime_images must be a list of {archive, name}; got %s' % shown_json(images))
        images = []
    if images and get('engine') == 'containerd':
        problems.append('container_runtime_images needs the docker or podman CLI; container_runtime_engine is containerd: '
                        'import the archives with ctr images import, or leave container_runtime_images empty.')
    problems.extend(problem for problem in (_image_problem(index, image) for index, image in enumerate(images)) if problem)
    # The source before the package is fetched (module_utils/stack/_package_source.py), once it is a source at all.
    if ascend_runtime and isinstance(get('ascend_runtime_package'), dict):
        problems.extend(sources_problems([('container_runtime_ascend_runtime_package', get('ascend_runtime_package'))]))
    return problems


# npu_driver's versions: (variable without its prefix, what it accepts).
NPU_DRIVER_VERSIONS = (
    ('version', 'the driver version of npu_driver_driver_package, such as 24.1.rc1, 24.1.0 or 25.0.rc1.1'),
    ('firmware_version', 'the firmware version of npu_driver_firmware_package, such as 7.5.0.3.220'),
)
NPU_DRIVER_PATHS = ('package_dir', 'package_record', 'sysfs_path')
_WHOLE = re.compile(r'[0-9]+\Z')
_DECIMAL = re.compile(r'[0-9]+(\.[0-9]+)?\Z')
# npu_driver's counts, seconds and sizes: (variable without its prefix, least, pattern, what it accepts).
NPU_DRIVER_NUMBERS = (
    ('expected_chips', 1, _WHOLE, 'the number of NPU chips npu-smi shows, 1 or more'),
    ('reboot_timeout', 1, _WHOLE, 'seconds, 1 or more'),
    ('ready_retries', 1, _WHOLE, 'how many times to read npu-smi, 1 or more'),
    ('ready_delay', 0, _WHOLE, 'seconds, 0 or more'),
    ('install_timeout', 0, _WHOLE, 'seconds, 0 (no limit) or more'),
    ('min_free_gb', 0, _DECIMAL, 'GiB, 0 or more'),
)


def npu_driver_problems(inputs):
    """The problems of role npu_driver's ``inputs`` (its variables without the ``npu_driver_`` prefix, each as the
    inventory gives it): the versions as Huawei writes them, the paths, the counts, seconds and sizes, then both
    package sources before either package is fetched; empty when every input is fine."""
    get = inputs.get
    problems = []
    for name, accepts in NPU_DRIVER_VERSIONS:
        if not is_written_ascend_version(get(name)):
            problems.append('npu_driver_%s must be %s; got %s' % (name, accepts, shown_json(get(name))))
    for name in NPU_DRIVER_PATHS:
        value = get(name)
        if not (isinstance(value, str) and _ABSOLUTE_PATH.match(value)):
            problems.append('npu_driver_%s must be an absolute path without control characters; got %s' % (name, shown_json(value)))
    for name, least, pattern, accepts in NPU_DRIVER_NUMBERS:
        value = get(name)
        if not (pattern.match(str(value)) and float(str(value)) >= least):
            problems.append('npu_driver_%s must be %s; got %s' % (name, accepts, shown_json(value)))
    problems.extend(sources_problems([('npu_driver_driver_package', get('driver_package')),
                                      ('npu_driver_firmware_package', get('firmware_package'))]))
    return problems
