#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: container_image_load
short_description: Load a container image archive into docker or podman unless the same image is there
version_added: 0.1.0
description:
  - Loads an image archive made by C(docker save) or C(podman save) (docker-archive) or an OCI image layout archive
    (C(podman save --format oci-archive)) - plain or compressed with gzip, bzip2 or xz - with C(<engine> load -i),
    for hosts without a registry.
  - The image IDs are read from the archive without loading it - the SHA-256 of each image's config blob, named by
    C(manifest.json) (its C(Config) entries) or reached from C(index.json) through the manifests. Each is looked up
    with C(<engine> image inspect --format {{.Id}}); docker prints C(sha256:<hex>) and podman C(<hex>), so IDs
    compare by their hex digits. When every image of the archive is present, nothing is loaded.
  - With O(name), the image of the archive (which must then hold exactly one) is also tagged O(name) with
    C(<engine> tag) when O(name) does not already name that image.
  - An archive that is no image archive (not a tar, no C(manifest.json) or C(index.json), a missing config blob, a
    digest that is not C(sha256:<hex>)) fails the task, naming the archive, before anything runs.
  - After a load, the IDs are looked up again; an image still missing fails the task.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Check mode reads the archive and runs C(image inspect) only; it reports changed when it would load or tag.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  engine:
    description:
      - The engine whose CLI loads the image.
    type: str
    choices: [docker, podman]
    default: docker
  archive:
    description:
      - Path of the image archive on the managed host.
    type: path
    required: true
  name:
    description:
      - A reference (C(repository:tag)) the loaded image must have, such as C(quay.io/ascend/vllm-ascend:v0.9.1).
      - When set, the archive must hold exactly one image.
    type: str
  executable:
    description:
      - Path of the engine's CLI; looked up in E(PATH) when not set.
    type: path
  timeout:
    description:
      - Seconds each command may take before coreutils C(timeout) stops it; V(0) runs without a limit. Loading a
        large image from a slow disk takes minutes.
    type: int
    default: 1800
requirements:
  - The docker or podman CLI, and for docker a running daemon.
"""

EXAMPLES = r"""
- name: Load the vllm-ascend image copied to the host
  kunpeng_ascend.vllm.container_image_load:
    engine: docker
    archive: /var/cache/images/vllm-ascend-v0.9.1.tar
    name: quay.io/ascend/vllm-ascend:v0.9.1
  become: true
  register: image

- name: Show its ID
  ansible.builtin.debug:
    msg: "{{ image.images[0].id }}"
"""

RETURN = r"""
images:
  description: The images of the archive.
  returned: success
  type: list
  elements: dict
  contains:
    id:
      description: The image ID, C(sha256:<hex>).
      type: str
      sample: sha256:5f1a2c0e9d3b4a6f7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f
    tags:
      description: The tags the archive gives the image.
      type: list
      elements: str
      sample: [quay.io/ascend/vllm-ascend:v0.9.1]
    present_before:
      description: Whether the engine had the image before the task.
      type: bool
      sample: false
  sample:
    - id: sha256:5f1a2c0e9d3b4a6f7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f
      tags: [quay.io/ascend/vllm-ascend:v0.9.1]
      present_before: false
format:
  description: The archive's format, C(docker-archive) or C(oci-archive).
  returned: success
  type: str
  sample: docker-archive
loaded:
  description: Whether the archive was loaded (in check mode, whether it would be).
  returned: success
  type: bool
  sample: true
tagged:
  description: Whether O(name) was put on the image (in check mode, whether it would be).
  returned: success
  type: bool
  sample: false
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner, find_executable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._image_archive import (
    ArchiveError,
    image_id_hex,
    read_archive_images,
)

# What docker and podman print when the image looked up is not there (anything else failing is an error).
NOT_FOUND = re.compile(r'no such (image|object)|image not known|not found|unknown image', re.IGNORECASE)


class Engine:
    def __init__(self, module, engine, executable, runner):
        self.module = module
        self.name = engine
        self.executable = executable
        self.runner = runner

    def reference(self, hex_id):
        """How the CLI names an image by ID: docker as sha256:<hex>, podman by the hex it prints."""
        return 'sha256:' + hex_id if self.name == 'docker' else hex_id

    def image_id(self, reference):
        """The hex ID of the image ``reference`` names, or None when the engine has none."""
        result = self.runner.run([self.executable, 'image', 'inspect', '--format', '{{.Id}}', reference])
        if result.rc == 0:
            found = image_id_hex(result.stdout.strip().splitlines()[0] if result.stdout.strip() else '')
            if found is None:
                self.runner.fail(result, '%s image inspect printed no image ID for %s' % (self.name, reference))
            return found
        if result.timed_out:
            self.runner.fail(result, '%s image inspect did not end within %d seconds (timeout): is the engine running?'
                             % (self.name, self.module.params['timeout']))
        if NOT_FOUND.search(result.stderr + result.stdout):
            return None
        self.runner.fail(result, '%s image inspect %s failed: is the %s engine running and may this user use it?'
                         % (self.name, reference, self.name))

    def run(self, args, what):
        result = self.runner.run([self.executable] + args)
        if result.rc != 0:
            self.runner.fail(result, '%s %s failed%s' % (
                self.name, what, ' (it did not end within %d seconds: timeout)' % self.module.params['timeout']
                if result.timed_out else ''))
        return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type='str', default='docker', choices=['docker', 'podman']),
            archive=dict(type='path', required=True),
            name=dict(type='str'),
            executable=dict(type='path'),
            timeout=dict(type='int', default=1800),
        ),
        supports_check_mode=True,
    )
    params = module.params
    archive = params['archive']
    if not os.path.isfile(archive):
        module.fail_json(msg='archive %s is not a file on the host: copy the image archive there first' % archive)
    try:
        images = read_archive_images(archive)
    except ArchiveError as error:
        module.fail_json(msg='%s; nothing was loaded' % error)
    if params['name'] is not None and len(images) != 1:
        module.fail_json(msg='archive %s holds %d images; name %s can tag only an archive of one image: leave name out'
                         % (archive, len(images), params['name']))
    executable = find_executable(module, params['engine'], params['executable'], 'executable',
                                 missing_hint='install %s' % params['engine'])
    engine = Engine(module, params['engine'], executable, CommandRunner(module, params['timeout']))

    for image in images:
        image['present_before'] = engine.image_id(engine.reference(image['id'])) == image['id']
    load = not all(image['present_before'] for image in images)
    if load and not module.check_mode:
        engine.run(['load', '-i', archive], 'load -i %s' % archive)
        missing = [image['id'] for image in images if engine.image_id(engine.reference(image['id'])) != image['id']]
        if missing:
            module.fail_json(msg='%s load -i %s ended without error, but the engine has no image %s afterwards: is the '
                                 'archive complete?' % (params['engine'], archive, ', '.join('sha256:' + i for i in missing)))
    tag = False
    if params['name'] is not None:
        wanted = images[0]['id']
        current = engine.image_id(params['name']) if images[0]['present_before'] or not module.check_mode else None
        tag = current != wanted
        # In check mode an archive not loaded yet tags itself when it carries the name.
        if tag and module.check_mode and load and params['name'] in images[0]['tags']:
            tag = False
        if tag and not module.check_mode:
            engine.run(['tag', engine.reference(wanted), params['name']], 'tag %s' % params['name'])
    kind = images[0]['format']
    for image in images:
        image['id'] = 'sha256:' + image['id']
        del image['format']
    module.exit_json(changed=load or tag, images=images, format=kind, loaded=load, tagged=tag)


if __name__ == '__main__':
    main()
