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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._image_load import load_archive


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
    module.exit_json(**load_archive(module))


if __name__ == '__main__':
    main()
