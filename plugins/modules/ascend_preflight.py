#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: ascend_preflight
short_description: Check that a host is ready for the Ascend NPU driver, firmware, CANN and vllm-ascend
version_added: 0.1.0
description:
  - The "run the pre-install check script" step of the Ascend install guides, done properly - a structured
    report of named checks, each with a status (C(pass), C(warn) or C(fail)), a message and the fix.
  - "The checks, in order (O(checks) and O(skip_checks) choose among them):"
  - "C(architecture): C(uname -m) is aarch64 (Kunpeng); x86_64 warns unless O(expected_architecture) accepts it;
    any other fails, as does a mismatch with O(expected_architecture)."
  - "C(kernel_headers): the headers of the running kernel (C(uname -r)) exist as C(/lib/modules/RELEASE/build),
    C(/usr/src/linux-headers-RELEASE) (Debian family) or C(/usr/src/kernels/RELEASE) (openEuler family), which
    the driver's DKMS build needs; else fail, naming headers found for other kernels and a dangling C(build) link."
  - "C(build_tools): C(dkms), C(gcc) and C(make) are on E(PATH) (fail otherwise); C(lspci) (pciutils) and
    C(ifconfig) (net-tools), which the driver installer uses, warn when missing."
  - "C(package_database): on the Debian family (dpkg found) C(dpkg --audit) reports nothing (fail otherwise); on
    the openEuler family (rpm) C(rpm -Va --nofiles --nodigest --noscripts) passes (unsatisfied dependencies warn,
    an unreadable database fails). Neither dpkg nor rpm warns."
  - "C(package_states): (dpkg) C(dpkg-query -W) lists no package in a state other than installed, config-files
    or not-installed, and none needing a reinstall (fail), and none on hold (warn). rpm keeps no such states: pass."
  - "C(disk_space): the nearest existing directory of O(install_path) has at least O(min_free_gb) free."
  - "C(run_user): user C(HwHiAiUser) and group C(HwHiAiUser) exist and the user is in the group, as the driver
    installer requires."
  - "C(npu_devices): sysfs lists at least one Ascend NPU (PCI vendor 0x19e5, class 0x1200); a missing
    C(bus/pci/devices) under O(sysfs_path) warns."
  - "C(npu_processes) and C(npu_health), from one C(npu-smi info) run: no process holds an NPU (fail), and every
    chip's health is C(OK) (C(Warning) warns, anything else fails). Without C(npu-smi) both warn - the driver is
    not installed yet, which is normal before a first install; a failing C(npu-smi) fails them with its hint, and
    so does an incomplete table (output cut off part way, see RV(kunpeng_ascend.vllm.npu_smi_info#module:npu_smi.complete))."
  - "C(driver_version): the installed driver (C(Version=) of C(driver/version.info) under the driver install path
    of C(/etc/ascend_install.info), else C(/usr/local/Ascend); else what C(npu-smi info) prints) against
    O(driver_version) (an older requested driver, a downgrade, warns) and O(firmware_version) against the
    installed driver's C(compatible_version_fw) ranges (outside fails)."
  - "C(compatibility): O(vllm_ascend_version), O(vllm_version), O(cann_version), O(torch_version),
    O(torch_npu_version) and O(python_version) form one row of vllm-ascend's compatibility set, and that row runs
    on O(driver_version) (else the installed driver); else fail, with the row that driver runs as the fix. The
    rows are the collection's with the site's (O(compat_site_rows)). See the
    P(kunpeng_ascend.vllm.ascend_compat#filter) filter for the rows and the driver rule."
  - Only reads; it never changes the host.
  - At most 20 warnings of the files and outputs read are reported, then one with the count of the others.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - The module only reads, so check mode runs the same read-only commands and returns the same report.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  checks:
    description:
      - The checks to run, in the module's order whatever the order here. Default (null) is all of them.
    type: list
    elements: str
    choices: [architecture, kernel_headers, build_tools, package_database, package_states, disk_space, run_user,
              npu_devices, npu_processes, npu_health, driver_version, compatibility]
  skip_checks:
    description:
      - Checks not to run, taken out of O(checks).
    type: list
    elements: str
    choices: [architecture, kernel_headers, build_tools, package_database, package_states, disk_space, run_user,
              npu_devices, npu_processes, npu_health, driver_version, compatibility]
    default: []
  fail_on:
    description:
      - V(fail) makes the module fail when a check fails, V(warn) when a check fails or warns, with a message
        naming each such check, its message and its fix. The report is returned either way.
      - V(never) always succeeds; read RV(failed_checks) and RV(warned_checks).
    type: str
    choices: [fail, warn, never]
    default: fail
  root:
    description:
      - Directory that is the root of the system to check; files (kernel headers, C(/etc/ascend_install.info),
        C(version.info), C(/etc/passwd) and C(/etc/group)) are read under it and O(install_path) is looked up under it.
      - For a chroot, a mounted image and tests. Commands (C(dpkg), C(rpm), C(npu-smi)) still run on the host,
        and C(uname) values are the running kernel's.
      - With the default V(/) the HwHiAiUser account is looked up through the system's account database (NSS).
    type: path
    default: /
  sysfs_path:
    description:
      - Directory where sysfs is mounted, read for the NPU PCI devices (C(bus/pci/devices)). It is not put under
        O(root). Tests point it at a copy of a sysfs tree.
    type: path
    default: /sys
  install_path:
    description:
      - Where the Ascend packages go; O(min_free_gb) is checked on its nearest existing directory.
    type: path
    default: /usr/local/Ascend
  min_free_gb:
    description:
      - Free space, in GiB, that C(disk_space) asks for. The CANN toolkit needs 7 to 10 GB.
    type: float
    default: 10
  expected_architecture:
    description:
      - The architecture the host must have. When not set, aarch64 passes and x86_64 warns.
    type: str
    choices: [aarch64, x86_64]
  npu_smi_path:
    description:
      - Path of C(npu-smi). When not set, it is looked up in E(PATH), then as C(/usr/local/bin/npu-smi) and
        C(/usr/local/sbin/npu-smi).
    type: path
  timeout:
    description:
      - Seconds each command (C(dpkg --audit), C(dpkg-query), C(rpm -Va), C(npu-smi info)) may run before coreutils
        C(timeout) stops it. V(0) runs without a limit.
    type: int
    default: 120
  driver_version:
    description:
      - The NPU driver version about to be installed (for example C(24.1.RC1)); compared with the installed one
        and used for C(compatibility) instead of it.
    type: str
  firmware_version:
    description:
      - The NPU firmware version about to be installed (for example C(7.5.0.1.129)); checked against the installed
        driver's C(compatible_version_fw) when the driver stays as it is.
    type: str
  cann_version:
    description: The CANN toolkit version about to be used (for example C(8.5.0)).
    type: str
  vllm_ascend_version:
    description: The vllm-ascend version about to be used (for example C(0.13.0) or C(v0.13.0)).
    type: str
  vllm_version:
    description: The vLLM version about to be used.
    type: str
  torch_version:
    description: The torch version about to be used.
    type: str
  torch_npu_version:
    description: The torch_npu version about to be used (for example C(2.8.0.post2)).
    type: str
  python_version:
    description: The Python version vLLM will run under (for example C(3.11)); give it as a string.
    type: str
  compat_site_rows:
    description:
      - The rows the site adds to the compatibility set, or puts in place of the row of their release (the inventory
        variable C(ascend_compat_site_rows), which the npu_driver role passes) - each a dict in the format of the
        built-in rows, C(vllm_ascend), C(vllm) and C(cann) required (see
        P(kunpeng_ascend.vllm.ascend_compat#filter) and C(playbooks/compat_rows.yml), which prints them).
      - Checked as the built-in rows are, before any check runs - a malformed row fails the module, naming it as
        C(ascend_compat_site_rows[N]) and its key. A C(compatibility) message that names a site's row says so,
        "vllm-ascend VERSION (site row)".
    type: list
    elements: dict
    default: []
requirements:
  - On the Debian family C(dpkg) and C(dpkg-query), on the openEuler family C(rpm), for the package checks.
notes:
  - Check mode and real runs are the same; the module never reports a change.
  - Run it as root (become) so that C(npu-smi) may read the NPUs and C(rpm) its database.
seealso:
  - module: kunpeng_ascend.vllm.npu_smi_info
  - plugin: kunpeng_ascend.vllm.ascend_compat
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Check the host before installing driver 24.1.RC1 and vllm-ascend 0.13.0
  kunpeng_ascend.vllm.ascend_preflight:
    driver_version: 24.1.RC1
    firmware_version: 7.5.0.1.129
    vllm_ascend_version: 0.13.0
    cann_version: 8.5.0
  become: true

- name: Check the request against the compatibility set with the site's rows (a site row names itself in the report)
  kunpeng_ascend.vllm.ascend_preflight:
    checks: [driver_version, compatibility]
    driver_version: 26.2.RC1
    vllm_ascend_version: 0.30.0
    compat_site_rows: "{{ ascend_compat_site_rows | default([]) }}"
  become: true

- name: Report only, and decide later
  kunpeng_ascend.vllm.ascend_preflight:
    fail_on: never
    skip_checks:
      - npu_processes
  become: true
  register: preflight

- name: Show what is not ready
  ansible.builtin.debug:
    msg: "{{ preflight.checks | rejectattr('status', 'eq', 'pass') | map(attribute='message') | list }}"

- name: Accept an x86_64 test host with a smaller disk
  kunpeng_ascend.vllm.ascend_preflight:
    expected_architecture: x86_64
    min_free_gb: 8
    fail_on: warn
"""

RETURN = r"""
checks:
  description: One entry per check run, in the module's order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The check's name (see O(checks)).
      type: str
      sample: kernel_headers
    status:
      description: V(pass), V(warn) or V(fail).
      type: str
      sample: fail
    message:
      description: What the check found.
      type: str
      sample: no headers for the running kernel 6.1.0-18-arm64 (none of /lib/modules/6.1.0-18-arm64/build, ...)
    fix:
      description: What to do about it; null on a pass.
      type: str
      sample: apt-get install -y linux-headers-6.1.0-18-arm64
failed_checks:
  description: Names of the checks with status V(fail).
  returned: always
  type: list
  elements: str
  sample: [kernel_headers]
warned_checks:
  description: Names of the checks with status V(warn).
  returned: always
  type: list
  elements: str
  sample: [npu_processes, npu_health]
counts:
  description: Number of checks by status.
  returned: always
  type: dict
  sample: {"pass": 9, "warn": 2, "fail": 1}
summary:
  description: The counts in one line.
  returned: always
  type: str
  sample: "12 checks: 9 pass, 2 warn, 1 fail"
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import with_site_rows
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._preflight import (
    CHECK_NAMES,
    WARN,
    selected_checks,
    summarize,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._preflight_host import run_checks
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import replace_undecodable


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type='list', elements='str', choices=list(CHECK_NAMES)),
            skip_checks=dict(type='list', elements='str', choices=list(CHECK_NAMES), default=[]),
            fail_on=dict(type='str', choices=['fail', 'warn', 'never'], default='fail'),
            root=dict(type='path', default='/'),
            sysfs_path=dict(type='path', default='/sys'),
            install_path=dict(type='path', default='/usr/local/Ascend'),
            min_free_gb=dict(type='float', default=10),
            expected_architecture=dict(type='str', choices=['aarch64', 'x86_64']),
            npu_smi_path=dict(type='path'),
            timeout=dict(type='int', default=120),
            driver_version=dict(type='str'),
            firmware_version=dict(type='str'),
            cann_version=dict(type='str'),
            vllm_ascend_version=dict(type='str'),
            vllm_version=dict(type='str'),
            torch_version=dict(type='str'),
            torch_npu_version=dict(type='str'),
            python_version=dict(type='str'),
            compat_site_rows=dict(type='list', elements='dict', default=[]),
        ),
        # Every check only reads, so check mode runs them all and reports the same.
        supports_check_mode=True,
    )
    if not os.path.isdir(module.params['root']):
        module.fail_json(msg='root: %s is not a directory' % module.params['root'])
    if not os.path.isabs(module.params['install_path']):
        module.fail_json(msg='install_path: %s is not an absolute path' % module.params['install_path'])
    if module.params['min_free_gb'] < 0:
        module.fail_json(msg='min_free_gb: must be 0 or more, not %g' % module.params['min_free_gb'])
    try:
        rows = with_site_rows(module.params['compat_site_rows'])
    except ValueError as error:
        module.fail_json(msg='compat_site_rows: %s' % error)
    checks, warnings = run_checks(module, selected_checks(module.params['checks'], module.params['skip_checks']), rows)
    # The capped warnings of what was read first, then one per check that warns (at most one per check).
    warnings.emit(module.warn)
    for item in checks:
        if item['status'] == WARN:
            module.warn('preflight %s: %s (fix: %s)' % (item['name'], item['message'], item['fix']))
    report = summarize(checks, module.params['fail_on'])
    # Bus ids and paths come from directory names, which need not be UTF-8.
    result = replace_undecodable(dict(changed=False, checks=checks, failed_checks=report['failed_checks'],
                                      warned_checks=report['warned_checks'], counts=report['counts'],
                                      summary=report['summary']))
    if report['message']:
        module.fail_json(msg=report['message'], **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
