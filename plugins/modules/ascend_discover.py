#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: ascend_discover
short_description: Read everything the collection reads of an Ascend node, with what its parsers did not understand
version_added: 0.8.0
description:
  - Runs the read commands the collection's modules run - C(npu-smi info), C(npu-smi info -m), C(hccn_tool -i N -ip -g)
    for each NPU NIC (the chips' logic ids), C(docker images) and C(podman images) - and reads the files they read -
    the driver, firmware, CANN, NNAL and runtime version files and install records, the NPU PCI devices and their NUMA
    nodes in sysfs, docker's C(daemon.json) and containerd's C(config.toml) - each handed to the collection's own
    parser, and returns the raw outputs, the facts and, per source and line, what the parsers did not understand.
  - A tool that is missing or fails is recorded in RV(discovery.sources) with its error, never a failure of the task.
  - Secrets in the raw outputs are always masked. Addresses (IPv4 and IPv6 addresses but netmasks, MAC addresses, the
    node's host names, registries other than public ones) are replaced by placeholders such as C(<ipv4-1>), the same
    address by the same placeholder, unless O(include_addresses); RV(discovery.facts) keeps the NICs' addresses (the
    host_vars need them), RV(discovery.shown_facts) is what an archive may show.
  - Playbook C(kunpeng_ascend.vllm.discover) runs it and writes the host_vars and the archive on the controller with
    M(kunpeng_ascend.vllm.ascend_discover_write).
  - Only reads; it never changes the node.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - The module only reads, so check mode reads the same and returns the same.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  npu_smi_path:
    description: Path of C(npu-smi); looked up in E(PATH), then C(/usr/local/bin) and C(/usr/local/sbin) when not set.
    type: path
  hccn_tool_path:
    description: Path of C(hccn_tool); the NICs are not read when it is not there.
    type: path
    default: /usr/local/Ascend/driver/tools/hccn_tool
  engines:
    description: The container engine CLIs asked for their images, when installed.
    type: list
    elements: str
    choices: [docker, podman]
    default: [docker, podman]
  root:
    description: The root the files are read under (a chroot, a mounted disk, a test's scratch root).
    type: path
    default: /
  sysfs_path:
    description: Where sysfs is mounted, read for the NPU PCI devices and NUMA nodes.
    type: path
    default: /sys
  include_addresses:
    description: Whether the raw outputs and RV(discovery.shown_facts) show the addresses instead of placeholders.
    type: bool
    default: false
  timeout:
    description: Seconds each command may take before coreutils C(timeout) stops it; V(0) runs without a limit.
    type: int
    default: 60
notes:
  - The user must be root or in group C(HwHiAiUser) for C(npu-smi), and root for C(hccn_tool).
seealso:
  - module: kunpeng_ascend.vllm.ascend_discover_write
  - module: kunpeng_ascend.vllm.npu_smi_info
  - module: kunpeng_ascend.vllm.ascend_facts
"""

EXAMPLES = r"""
- name: Read the node
  kunpeng_ascend.vllm.ascend_discover:
  register: discovered

- name: Show what the parsers did not understand
  ansible.builtin.debug:
    msg: "{{ discovered.discovery.not_understood | map(attribute='message') | list }}"
"""

RETURN = r"""
discovery:
  description: What was read.
  returned: success
  type: dict
  contains:
    sources:
      description: Each command run and file read, in order - C(name), C(kind) (command or file), C(where) (the argv
        or the path), C(rc), C(text) (the output as shown, null when not read), C(truncated), C(stderr), C(error).
      type: list
      elements: dict
    not_understood:
      description: Each warning of a parser - C(source), C(line) (null when it names none), C(text) (that line as
        shown), C(message).
      type: list
      elements: dict
    facts:
      description: C(npu_smi), C(chips) (with logic id and NUMA node), C(chip_map), C(chip_family), C(product),
        C(versions), C(npu_devices), C(nics), C(engines), C(images).
      type: dict
    shown_facts:
      description: RV(discovery.facts) as the archive shows them (addresses masked unless O(include_addresses)).
      type: dict
    include_addresses:
      description: O(include_addresses).
      type: bool
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import RootFS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _command
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._discovery import discover
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import NPU_SMI_FALLBACK_PATHS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi_path=dict(type='path'),
            hccn_tool_path=dict(type='path', default='/usr/local/Ascend/driver/tools/hccn_tool'),
            engines=dict(type='list', elements='str', choices=['docker', 'podman'], default=['docker', 'podman']),
            root=dict(type='path', default='/'),
            sysfs_path=dict(type='path', default='/sys'),
            include_addresses=dict(type='bool', default=False),
            timeout=dict(type='int', default=60),
        ),
        # Only reads: check mode reads the same.
        supports_check_mode=True,
    )
    params = module.params
    try:
        tools = {'npu-smi': _command.locate_executable(module, 'npu-smi', params['npu_smi_path'], 'npu_smi_path',
                                                       NPU_SMI_FALLBACK_PATHS)}
    except ValueError as error:
        module.fail_json(msg=str(error))
    tools['hccn_tool'] = params['hccn_tool_path'] if _command.is_executable(params['hccn_tool_path']) else None
    for engine in params['engines']:
        tools[engine] = module.get_bin_path(engine)
    runner = _command.CommandRunner(module, params['timeout'])
    discovery = discover(runner.run, RootFS(params['root']), RootFS(params['sysfs_path']), tools,
                         params['include_addresses'], (socket.gethostname(), socket.getfqdn()))
    warnings = WarningCap()
    for note in discovery['not_understood']:
        warnings(note['message'])
    warnings.emit(module.warn)
    module.exit_json(changed=False, discovery=discovery)


if __name__ == '__main__':
    main()
