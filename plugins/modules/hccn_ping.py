#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: hccn_ping
short_description: Ping peer NPU NICs from this host's NPU NICs with C(hccn_tool -ping), several at once
version_added: 0.1.0
description:
  - Runs C(hccn_tool -i DEVICE -ping -g address ADDRESS pkt COUNT) for every entry of O(pings), at most O(parallel)
    at a time, each under a time limit of O(timeout) seconds, and returns one result per entry.
  - A path that loses packets, or that does not answer within O(timeout), is a result with RV(results[].ok) false
    and RV(results[].error) saying why, listed again in RV(failed_pings) (not C(failed), which would fail the
    task); the module itself succeeds. Deciding what a failed path means is left to the caller (the role
    C(kunpeng_ascend.vllm.npu_network) reports and gates on it).
  - The module fails, before or after the pings, when its input is wrong rather than the network, naming what to
    fix; an entry whose address is not IPv4 (C(pings[2].address)), a device id the host does not have (hccn_tool's
    own "Device ID is out of the valid range" answer, naming the device and the entry) or an O(hccn_tool_path) that
    is no executable.
  - It never changes the host.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Pings only read, so check mode runs them and returns the same result.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  pings:
    description:
      - The pings to run, one per entry.
    type: list
    elements: dict
    required: true
    suboptions:
      device:
        description: This host's NPU device id whose NIC sends (C(hccn_tool -i DEVICE)).
        type: int
        required: true
      address:
        description: The IPv4 address to ping, normally another NPU NIC's.
        type: str
        required: true
      name:
        description: A label of the target returned as it is, such as C(node2 dev 3).
        type: str
  count:
    description: Packets per ping (C(pkt COUNT)), from 1 to 100.
    type: int
    default: 3
  timeout:
    description:
      - Seconds one ping may take before coreutils C(timeout) stops it (and kills it 5 seconds later), from 1 to 300.
      - The whole run takes at most about ceil(len(O(pings)) / O(parallel)) * (O(timeout) + 5) seconds.
    type: int
    default: 10
  parallel:
    description: How many pings run at once, from 1 to 64.
    type: int
    default: 8
  max_loss_percent:
    description: The packet loss, in percent, up to which a ping is still ok; V(0) makes every lost packet a failure.
    type: float
    default: 0
  hccn_tool_path:
    description: Path of C(hccn_tool).
    type: path
    default: /usr/local/Ascend/driver/tools/hccn_tool
requirements:
  - The Ascend NPU driver, which provides C(hccn_tool); root.
notes:
  - The results come back in the order of O(pings), whatever order the pings ran in.
seealso:
  - module: kunpeng_ascend.vllm.hccn_tool
"""

EXAMPLES = r"""
- name: Device 3 of this node pings device 3 of two peers
  kunpeng_ascend.vllm.hccn_ping:
    pings:
      - {device: 3, address: 10.20.0.12, name: node2 dev 3}
      - {device: 3, address: 10.20.0.20, name: node3 dev 3}
    count: 3
    timeout: 10
  register: npu_ping

- name: Every path answers
  ansible.builtin.assert:
    that: npu_ping.failed_pings | length == 0
    fail_msg: "{{ npu_ping.failed_pings | map(attribute='name') | join(', ') }} do not answer"
"""

RETURN = r"""
results:
  description: One entry per ping, in the order of O(pings).
  returned: success
  type: list
  elements: dict
  contains:
    device:
      description: The sending device id.
      type: int
      sample: 3
    address:
      description: The address pinged.
      type: str
      sample: 10.20.0.12
    name:
      description: The entry's O(pings[].name); null when not given.
      type: str
      sample: node2 dev 3
    transmitted:
      description: Packets sent, from the summary line; null without one.
      type: int
      sample: 3
    received:
      description: Packets received; null without a summary.
      type: int
      sample: 3
    loss_percent:
      description: Packet loss in percent; null without a summary.
      type: float
      sample: 0.0
    avg_ms:
      description: The mean of the reply times, in milliseconds; null without replies.
      type: float
      sample: 0.08
    ok:
      description: Whether the summary was printed and the loss is at most O(max_loss_percent).
      type: bool
      sample: true
    error:
      description: Why the ping is not ok (C(100% loss (0 of 3 packets received)), the time limit, hccn_tool's error
        line); null when ok.
      type: str
      sample: null
failed_pings:
  description: The entries of RV(results) that are not ok.
  returned: success
  type: list
  elements: dict
  sample: [{"device": 3, "address": "10.20.0.12", "name": "node2 dev 3", "transmitted": 3, "received": 0,
            "loss_percent": 100.0, "avg_ms": null, "ok": false, "error": "100% loss (0 of 3 packets received)"}]
seconds:
  description: How long the pings took, in seconds.
  returned: success
  type: float
  sample: 0.42
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._hccn_run import run_pings


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pings=dict(type='list', elements='dict', required=True, options=dict(
                device=dict(type='int', required=True),
                address=dict(type='str', required=True),
                name=dict(type='str'),
            )),
            count=dict(type='int', default=3),
            timeout=dict(type='int', default=10),
            parallel=dict(type='int', default=8),
            max_loss_percent=dict(type='float', default=0),
            hccn_tool_path=dict(type='path', default='/usr/local/Ascend/driver/tools/hccn_tool'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**run_pings(module))


if __name__ == '__main__':
    main()
