#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: npu_smi_info
short_description: Read Ascend NPU chips, health and processes from C(npu-smi info)
version_added: 0.1.0
description:
  - Runs C(npu-smi info) once and returns its chip table and process table as data.
  - The table is read by its structure (cells and header names), so the layouts of the Ascend 310, 310P, 910 (A),
    910B (A2), A3 and 950 families and of npu-smi releases from 20.x to 26.x all parse; a line that cannot be read
    gives a warning and null fields instead of a failure.
  - Output cut off part way (no closing border, no process table, NPUs missing from the process table) is reported
    as incomplete - RV(npu_smi.complete) false, RV(npu_smi.incomplete_reason) naming the last line read, a
    warning, and RV(npu_smi.all_healthy) false - rather than as a smaller host.
  - At most 20 warnings are reported, then one with the count of the others; a warning quoting a long line is cut
    to 500 characters.
  - Bytes of the output that are not UTF-8 (in a process name, say) are returned as U+FFFD.
  - Optionally runs one C(npu-smi info -t TYPE -i NPU) per NPU for each type in O(details).
  - Only reads; it never changes the host.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - The module only reads, so it runs C(npu-smi) in check mode too and returns the same result.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  npu_smi_path:
    description:
      - Path of the C(npu-smi) executable.
      - When not set, C(npu-smi) is looked up in E(PATH), then C(/usr/local/bin/npu-smi) and C(/usr/local/sbin/npu-smi)
        (where the Ascend driver installs it).
    type: path
  npu_smi_path_option:
    description:
      - The name the failure messages give O(npu_smi_path) - the caller's own variable, which its user sets (for
        example C(vllm_service_npu_smi_path) when role C(kunpeng_ascend.vllm.vllm_service) passes it as O(npu_smi_path)).
      - An empty string names none, for a caller that gives its user no such variable (role
        C(kunpeng_ascend.vllm.npu_driver), which installs the driver); a missing C(npu-smi) is then reported with the
        hint to install the driver only.
    type: str
    default: npu_smi_path
  missing_ok:
    description:
      - When C(npu-smi) is not found (and O(npu_smi_path) is not set), return RV(found=false) without RV(npu_smi)
        instead of failing - for a plan of a host whose NPU driver is not installed yet.
      - A set O(npu_smi_path) that is not an executable file fails whatever this says.
    type: bool
    default: false
  timeout:
    description:
      - Seconds each C(npu-smi) run may take before coreutils C(timeout) stops it (and kills it 5 seconds later).
      - C(npu-smi) hangs when the driver or a device is in a bad state; the module then fails with a hint.
      - V(0) runs without a time limit. Without coreutils C(timeout) on the host the module warns and runs without one.
    type: int
    default: 60
  details:
    description:
      - Extra C(npu-smi info -t TYPE -i NPU) queries, one run per NPU for each type listed.
      - "Their C(key : value) output is returned in RV(npu_smi.details)."
    type: list
    elements: str
    choices: [board, common, flash, health, memory, power, temp, usages]
    default: []
requirements:
  - The Ascend NPU driver, which provides C(npu-smi).
notes:
  - The user running the module must be root or in group C(HwHiAiUser), else C(npu-smi) fails with dcmi error -8005.
  - Numbers printed with a decimal point (power) are floats, the others integers; C(-) and C(NA) are returned as null.
"""

EXAMPLES = r"""
- name: Read the NPUs
  kunpeng_ascend.vllm.npu_smi_info:
  register: npu

- name: Stop unless every chip is healthy
  ansible.builtin.assert:
    that:
      - npu.npu_smi.all_healthy
      - npu.npu_smi.npu_count == 8
    fail_msg: "Unhealthy NPU chips: {{ npu.npu_smi.chips | rejectattr('health', 'eq', 'OK') | map(attribute='npu_id') | list }}"

- name: List the processes holding NPU memory, with board details, on a slow host
  kunpeng_ascend.vllm.npu_smi_info:
    npu_smi_path: /usr/local/bin/npu-smi
    timeout: 120
    details:
      - board
  register: npu

- name: Show the NPU processes
  ansible.builtin.debug:
    msg: "{{ npu.npu_smi.processes | map(attribute='pid') | list }}"

- name: Read the NPUs where the driver may not be installed yet, naming the role's variable when it fails
  kunpeng_ascend.vllm.npu_smi_info:
    npu_smi_path: "{{ vllm_service_npu_smi_path }}"
    npu_smi_path_option: vllm_service_npu_smi_path
    missing_ok: "{{ ansible_check_mode }}"
  register: npu
"""

RETURN = r"""
found:
  description: Whether C(npu-smi) was found (false only with O(missing_ok)).
  returned: success
  type: bool
  sample: true
npu_smi:
  description: What C(npu-smi info) printed.
  returned: when C(npu-smi) was found
  type: dict
  contains:
    version:
      description: Version of the npu-smi tool (the C(npu-smi X) field); null when not printed.
      returned: success
      type: str
      sample: 24.1.rc3.7
    driver_version:
      description: "Version of the NPU driver (the C(Version: Y) field); may differ from RV(npu_smi.version)."
      returned: success
      type: str
      sample: 24.1.rc3.7
    npu_count:
      description: Number of distinct NPU ids in the chip table.
      returned: success
      type: int
      sample: 8
    chip_count:
      description: Number of chips in the chip table.
      returned: success
      type: int
      sample: 16
    all_healthy:
      description: Whether the table is complete (RV(npu_smi.complete)), lists at least one chip and every chip's
        health is C(OK).
      returned: success
      type: bool
      sample: true
    complete:
      description:
        - Whether the whole table was read - it ends with a border after a process table that lists every NPU
          (the Ascend 950 layout lists only NPUs with processes).
        - When false, RV(npu_smi.chips) and RV(npu_smi.processes) hold what was read, which may miss chips and
          processes.
      returned: success
      type: bool
      sample: true
    incomplete_reason:
      description: Why the table is not complete, naming the last line read; null when it is complete.
      returned: success
      type: str
      sample: "the output ends at line 12 before the table does (no process table), so it is incomplete (cut off?):
        '+======================+===============+=======================+'"
    chips:
      description:
        - One entry per chip, in table order.
        - A field is null where the layout has no such column or prints C(-) or C(NA).
      returned: success
      type: list
      elements: dict
      contains:
        npu_id:
          description: NPU (card) id, as given to C(npu-smi info -i).
          type: int
          sample: 0
        chip_id:
          description: Chip id within the NPU (the C(Chip) column); null on layouts without it.
          type: int
          sample: 1
        device_id:
          description: Id printed beside the chip id (C(Device) on the 310 family, C(Phy-ID) on A3); null where absent.
          type: int
          sample: 1
        name:
          description: Chip name as printed.
          type: str
          sample: 910B3
        health:
          description: Health as printed, for example C(OK), C(Warning), C(Alarm), C(Critical).
          type: str
          sample: OK
        bus_id:
          description: PCIe bus id; null when printed as C(NA).
          type: str
          sample: "0000:C1:00.0"
        power_w:
          description: Power draw in watts.
          type: float
          sample: 93.4
        temp_c:
          description: Temperature in degrees Celsius.
          type: int
          sample: 41
        aicore_percent:
          description: AI core utilisation in percent (the C(AICore) column; C(NPU Util) on Ascend 950).
          type: int
          sample: 27
        hugepages_used:
          description: Huge pages in use.
          type: int
          sample: 0
        hugepages_total:
          description: Huge pages in total.
          type: int
          sample: 0
        memory_used_mb:
          description: Memory in use (MB); the only memory pair of the 310 family, DDR beside HBM on 910 cards.
          type: int
          sample: 1848
        memory_total_mb:
          description: Memory in total (MB).
          type: int
          sample: 21525
        hbm_used_mb:
          description: HBM in use (MB).
          type: int
          sample: 59718
        hbm_total_mb:
          description: HBM in total (MB).
          type: int
          sample: 65536
    processes:
      description: One entry per process row of the process table, in table order.
      returned: success
      type: list
      elements: dict
      contains:
        npu_id:
          description: NPU id the process uses.
          type: int
          sample: 5
        chip_id:
          description: Chip id within the NPU; null on layouts without it.
          type: int
          sample: 0
        pid:
          description: Process id on the host.
          type: int
          sample: 904545
        name:
          description: Process name as printed (truncated by npu-smi, empty for some container processes).
          type: str
          sample: python3
        memory_mb:
          description: NPU memory the process holds (MB).
          type: int
          sample: 101
        container_pid:
          description: Process id inside its container (npu-smi 26.x); null where absent or C(NA).
          type: int
          sample: 12
    details:
      description:
        - For each type in O(details), a list with one entry per NPU (in table order) holding the output of
          C(npu-smi info -t TYPE -i NPU), as a dict with the NPU's C(npu_id) and a list of C(sections).
        - "A section is one blank-line separated group of C(key : value) lines, as a dict of the values as printed."
        - An empty dict when O(details) is empty.
      returned: success
      type: dict
      sample:
        board:
          - npu_id: 0
            sections:
              - NPU ID: "0"
                Chip Count: "1"
              - Chip ID: "0"
                Chip Type: Ascend
                Chip Name: 910B4
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import (
    CommandRunner,
    find_executable,
    locate_executable,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import (
    NPU_SMI_FALLBACK_PATHS,
    NpuSmiFailure,
    read_npu_smi_details,
    read_npu_smi_info,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi_path=dict(type='path'),
            npu_smi_path_option=dict(type='str', default='npu_smi_path'),
            missing_ok=dict(type='bool', default=False),
            timeout=dict(type='int', default=60),
            details=dict(type='list', elements='str', default=[],
                         choices=['board', 'common', 'flash', 'health', 'memory', 'power', 'temp', 'usages']),
        ),
        # npu-smi info only reads, so check mode runs it as well.
        supports_check_mode=True,
    )
    params = module.params
    if params['missing_ok'] and not params['npu_smi_path'] and not locate_executable(
            module, 'npu-smi', fallbacks=NPU_SMI_FALLBACK_PATHS):
        module.exit_json(changed=False, found=False)
    # The option the messages name: the caller's variable; none ('') for a caller whose user has none to set.
    option = params['npu_smi_path_option'] or ('npu_smi_path' if params['npu_smi_path'] else None)
    npu_smi = find_executable(module, 'npu-smi', params['npu_smi_path'], option, NPU_SMI_FALLBACK_PATHS,
                              missing_hint='install the Ascend NPU driver')
    runner = CommandRunner(module, module.params['timeout'])

    def run(args):
        return runner.run([npu_smi] + args)

    warnings = WarningCap()
    try:
        info = read_npu_smi_info(run, warnings)
        info['details'] = read_npu_smi_details(run, module.params['details'], info, warnings)
    except NpuSmiFailure as failure:
        warnings.emit(module.warn)
        runner.fail(failure.result, failure.msg)
    warnings.emit(module.warn)
    module.exit_json(changed=False, found=True, npu_smi=info)


if __name__ == '__main__':
    main()
