#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: hccn_tool
short_description: Read and set the NPU NICs (RoCE) of an Ascend host with C(hccn_tool), persisted in C(/etc/hccn.conf)
version_added: 0.1.0
description:
  - Reads every NPU NIC named in O(devices) with C(hccn_tool -i N -ip -g), C(-gateway -g), C(-netdetect -g),
    C(-tls -g), C(-link -g) and C(-net_health -g), and returns the values.
  - With O(state=present), sets what differs from O(devices) (C(-ip -s), C(-gateway -s), C(-netdetect -s),
    C(-tls -s), in that order, device by device), reads the set devices back to check that the values took, and
    writes the declared values into O(conf_path) (C(address_N), C(netmask_N), C(gateway_N), C(netdetect_N)),
    keeping every other line, comment and unknown key of the file as it is. Keys a device entry leaves unset are
    left alone.
  - Some driver releases write C(/etc/hccn.conf) themselves on C(-s); the module then writes the file only where
    it still differs, so a second run changes nothing.
  - Addresses and netmasks are checked before anything runs (IPv4; a host address of its subnet, in no network that is
    not for hosts - unspecified C(0.0.0.0/8), loopback, link-local, multicast, reserved C(240.0.0.0/4) with the
    broadcast address; the gateway inside it; no address on two devices; a netmask that is a prefix length from 1 to
    32 or a dotted netmask whose ones come first, never C(0) or C(0.0.0.0)); a mistake fails naming the entry, such
    as C(devices[2].netmask).
  - A device id the host does not have fails with hccn_tool's own message and the entry to fix.
  - At most 20 warnings are reported, then one with the count of the others.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Runs only the C(-g) reads and predicts the commands (RV(commands)), the values and C(changed).
  diff_mode:
    support: full
    details:
      - The difference of O(conf_path) before and after.
  platform:
    support: full
    platforms: posix
options:
  devices:
    description:
      - The NPU NICs, one entry per device id. With O(state=read) only their C(id) is used.
      - With O(state=read) and no entries, the devices that O(conf_path) names are read.
    type: list
    elements: dict
    default: []
    suboptions:
      id:
        description: The device's logical id, as given to C(hccn_tool -i) (C(npu-smi info -m) lists them).
        type: int
        required: true
      address:
        description: The NIC's IPv4 address. Given alone, the device's current netmask is kept.
        type: str
      netmask:
        description: Its netmask, dotted with its ones first (C(255.255.255.0)) or as a prefix length from 1 to 32
          (C(24)).
        type: str
      gateway:
        description: The NIC's default gateway (C(hccn_tool -gateway -s gateway G)); inside the NIC's subnet.
        type: str
      netdetect:
        description: The address the NIC's health detection probes (C(hccn_tool -netdetect -s address D)), often the
          gateway.
        type: str
      tls:
        description:
          - Whether the NIC's TLS check is on (C(hccn_tool -tls -s enable 1|0)).
          - It must be the same on every device of a job; the published multi-node recipes turn it off.
        type: bool
  state:
    description:
      - V(present) sets what differs from O(devices) and persists it; V(read) only reports.
    type: str
    choices: [present, read]
    default: present
  hccn_tool_path:
    description: Path of C(hccn_tool).
    type: path
    default: /usr/local/Ascend/driver/tools/hccn_tool
  conf_path:
    description: The file the NIC settings persist in, read by the driver at boot.
    type: path
    default: /etc/hccn.conf
  timeout:
    description:
      - Seconds each C(hccn_tool) run may take before coreutils C(timeout) stops it; V(0) means no limit.
    type: int
    default: 30
requirements:
  - The Ascend NPU driver, which provides C(hccn_tool); root.
notes:
  - C(/etc/hccn.conf) does not hold the TLS switch; the device keeps it.
  - A gateway or detection address cannot be removed with C(hccn_tool); an entry without them leaves them alone.
"""

EXAMPLES = r"""
- name: Give the eight NPU NICs of an Atlas 800I A2 their addresses and turn TLS off
  kunpeng_ascend.vllm.hccn_tool:
    devices:
      - {id: 0, address: 10.20.11.11, netmask: 255.255.255.0, gateway: 10.20.11.1, netdetect: 10.20.11.1, tls: false}
      - {id: 1, address: 10.20.11.12, netmask: 255.255.255.0, gateway: 10.20.11.1, netdetect: 10.20.11.1, tls: false}

- name: Read the NICs
  kunpeng_ascend.vllm.hccn_tool:
    state: read
    devices: [{id: 0}, {id: 1}, {id: 2}, {id: 3}, {id: 4}, {id: 5}, {id: 6}, {id: 7}]
  register: npu_net

- name: Every NIC is up and healthy
  ansible.builtin.assert:
    that:
      - npu_net.devices | rejectattr('link', 'eq', 'UP') | list | length == 0
      - npu_net.devices | rejectattr('net_health', 'eq', 'Success') | list | length == 0
"""

RETURN = r"""
devices:
  description:
    - One entry per device, in the order of O(devices), with its values as read (after the change), or as
      predicted in check mode (C(link) and C(net_health) as read before).
    - A value that is not set, or that the tool did not print, is null.
  returned: success
  type: list
  elements: dict
  contains:
    id:
      description: The device id.
      type: int
      sample: 0
    address:
      description: The NIC's IPv4 address.
      type: str
      sample: 10.20.11.11
    netmask:
      description: Its netmask.
      type: str
      sample: 255.255.255.0
    gateway:
      description: Its default gateway.
      type: str
      sample: 10.20.11.1
    netdetect:
      description: Its detection address.
      type: str
      sample: 10.20.11.1
    tls:
      description: Whether its TLS check is on.
      type: bool
      sample: false
    link:
      description: "C(-link -g): C(UP) or C(DOWN)."
      type: str
      sample: UP
    net_health:
      description: "C(-net_health -g): C(Success), C(Init), C(Fault), C(Socket fail), ..."
      type: str
      sample: Success
commands:
  description: The C(hccn_tool) set commands run (in check mode, that would run), in order.
  returned: success
  type: list
  elements: str
  sample: ["hccn_tool -i 0 -ip -s address 10.20.11.11 netmask 255.255.255.0", "hccn_tool -i 0 -tls -s enable 0"]
conf_changed:
  description: Whether O(conf_path) was (in check mode, would be) written.
  returned: success
  type: bool
  sample: true
hccn_conf:
  description: "The device values O(conf_path) holds (after the change), as C({device id: {key: value}})."
  returned: success
  type: dict
  sample: {"0": {"address": 10.20.11.11, "netmask": 255.255.255.0}}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._hccn_run import set_nics


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type='list', elements='dict', default=[], options=dict(
                id=dict(type='int', required=True),
                address=dict(type='str'),
                netmask=dict(type='str'),
                gateway=dict(type='str'),
                netdetect=dict(type='str'),
                tls=dict(type='bool'),
            )),
            state=dict(type='str', default='present', choices=['present', 'read']),
            hccn_tool_path=dict(type='path', default='/usr/local/Ascend/driver/tools/hccn_tool'),
            conf_path=dict(type='path', default='/etc/hccn.conf'),
            timeout=dict(type='int', default=30),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**set_nics(module))


if __name__ == '__main__':
    main()
