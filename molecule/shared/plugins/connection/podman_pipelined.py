# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Test-only connection: containers.podman.podman with Ansible pipelining, for the scenario that runs plain Ansible.

containers.podman's connection turns pipelining off because it runs `podman exec` without `--interactive`, so a
module sent on stdin never arrives. With it, a task costs one `podman exec` instead of five plus a `podman mount`:
on this project's machines each costs ~0.4 s, and under arm64 emulation every `/bin/sh` more besides.
"""

from __future__ import annotations

import shlex

from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ensure_connect
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection

DOCUMENTATION = """
    name: podman_pipelined
    short_description: Run tasks in a podman container with pipelining (tests only)
    description:
      - containers.podman.podman with C(podman exec --interactive), so that Ansible pipelining works.
      - Files are copied with C(podman cp) rather than through a C(podman mount) made for every task.
    author: kunpeng_ascend.vllm contributors
    extends_documentation_fragment:
      - connection_pipelining
    options:
      remote_addr:
        description: The name or ID of the container.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description: The user that runs commands in the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description: Extra arguments to pass to the podman command line.
        default: ''
        vars:
          - name: ansible_podman_extra_args
        env:
          - name: ANSIBLE_PODMAN_EXTRA_ARGS
      podman_executable:
        description: The podman executable.
        default: podman
        vars:
          - name: ansible_podman_executable
        env:
          - name: ANSIBLE_PODMAN_EXECUTABLE
"""


class Connection(PodmanConnection):
    """containers.podman.podman, with stdin passed to `podman exec` and no `podman mount`."""

    transport = "podman_pipelined"
    has_pipelining = True

    def _connect(self):
        # No `podman mount` for every task: put_file and fetch_file fall back to `podman cp` without a mount point.
        self._connected = True
        self._mount_point = None
        return self

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        super(PodmanConnection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        args = ["exec"]
        if in_data is not None:
            args.append("--interactive")
        if self.user:
            args.extend(("--user", self.user))
        return self._podman(args, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)
