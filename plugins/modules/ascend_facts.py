#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: ascend_facts
short_description: Gather what is installed on an Ascend NPU host, from its files only
version_added: 0.1.0
description:
  - Reads the version files of the Ascend NPU driver and firmware, the CANN toolkit, kernels (ops) and NNAL
    (ATB), the Ascend Docker Runtime, the install records C(/etc/ascend_install.info) and
    C(/etc/Ascend/ascend_cann_install.info), the NPU PCI devices with their NUMA nodes from sysfs, and the
    C(HwHiAiUser) user and group.
  - Runs no command (not even C(npu-smi)), so it is cheap, works when the driver is broken or not loaded, and
    works on a chroot or container image through O(root).
  - Returns only RV(ansible_facts.ascend). A component that is not installed is null, not an error. A file that
    exists but cannot be read, or a line or value that cannot be understood, gives a warning naming the file
    and line, and the value concerned is null.
  - "Only regular files are read (sysfs attributes are regular files), without ever waiting on one, and at most
    1 MiB of each: a file that is there but is something else - a directory, a FIFO, a device, a socket, a symbolic
    link loop - or lies in a directory that cannot be searched, cannot be opened, or is larger than 1 MiB gives a
    warning naming it and why, and the component it describes is null (not looked for elsewhere)."
  - File and directory names whose bytes are not UTF-8, and such bytes in the files read, are returned with the
    replacement character U+FFFD (as are the warnings), so that the controller accepts the result.
  - Files are found rather than assumed. The driver and firmware are looked up under the paths recorded in
    C(/etc/ascend_install.info), then C(/usr/local/Ascend). The CANN toolkit is looked up, in order, at the
    C(Toolkit_InstallPath) recorded in C(/etc/Ascend/ascend_cann_install.info), then under its C(Install_Path)
    and C(/usr/local/Ascend) at C(ascend-toolkit/latest), C(cann), the newest C(cann-<version>) and the newest
    C(ascend-toolkit/<version>); the first that holds an C(<arch>-linux/ascend_toolkit_install.info) or a
    C(version.cfg) is taken. This covers the layout up to CANN 8.3 (C(ascend-toolkit/<version>) with a
    C(latest) link) and the one from CANN 8.5 (C(cann-<version>), with C(ascend-toolkit/latest) and C(cann)
    pointing at it).
  - "The CANN kernels (ops) package is read, in order, from its record C(<toolkit>/opp_kernel/version.info)
    (C(version_dir=) is the CANN release it is named by, C(Version=) its ops build; seen on hosts with CANN 8.2.RC1
    and 8.3.RC1.alpha001), else from C(<toolkit>/opp/built-in/op_impl/ai_core/tbe/kernel/<soc>/version.info) (a
    record per SoC, which the collection's simulated kernels package writes), else from the C(opp_kernel) lines of
    the toolkit's C(version.cfg) (seen on CANN 8.0). The collection's C(docs/facts.md) lists the layouts by CANN
    release."
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
    details:
      - The module only reads files, so check mode returns the same facts.
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    support: full
    platforms: posix
options:
  root:
    description:
      - Directory that is the root of the system to inspect; every file is read under it, so that
        C(/usr/local/Ascend/driver/version.info) is read as C(<root>/usr/local/Ascend/driver/version.info).
      - Use it for a chroot, a mounted disk or an unpacked container image, and in tests.
      - Paths in the facts are the paths as that system sees them, without this prefix; warnings name the file
        actually read, with it.
      - Symbolic links are followed inside O(root). An absolute link target is taken from O(root), unless it
        already starts with O(root).
      - With the default V(/), the C(HwHiAiUser) user and group are looked up in this machine's account database
        (which includes LDAP or other NSS sources); with any other root, in C(<root>/etc/passwd) and
        C(<root>/etc/group).
    type: path
    default: /
  sysfs_path:
    description:
      - Directory where sysfs is mounted, read for the NPU PCI devices (C(bus/pci/devices)), the NUMA nodes'
        CPUs (C(devices/system/node)) and the CPUs the machine can have (C(devices/system/cpu/possible)).
      - It is not put under O(root); the devices are the running machine's, whatever root is inspected.
      - Tests point it at a copy of a sysfs tree.
    type: path
    default: /sys
notes:
  - NPU devices are listed in PCI bus id order, which is not the NPU id order of C(npu-smi); match them to
    C(npu-smi info) through RV(ansible_facts.ascend.npu_devices[].bus_id) (sysfs writes it in lower case).
  - The facts are also available as C(ansible_ascend) when fact injection is enabled.
seealso:
  - module: kunpeng_ascend.vllm.npu_smi_info
    description: Chip health, memory and processes, from C(npu-smi info).
"""

EXAMPLES = r"""
- name: Gather the Ascend facts
  kunpeng_ascend.vllm.ascend_facts:

- name: Stop unless the driver is installed and every NPU is on a NUMA node
  ansible.builtin.assert:
    that:
      - ansible_facts.ascend.driver is not none
      - ansible_facts.ascend.npu_count == 8
      - ansible_facts.ascend.npu_devices | selectattr('numa_node', 'none') | list | length == 0
    fail_msg: "Driver {{ ansible_facts.ascend.driver.version | default('not installed') }}, {{ ansible_facts.ascend.npu_count }} NPUs"

- name: Show the installed versions
  ansible.builtin.debug:
    msg: >-
      driver {{ ansible_facts.ascend.driver.version | default('-') }},
      firmware {{ ansible_facts.ascend.firmware.version | default('-') }},
      CANN {{ ansible_facts.ascend.toolkit.version | default('-') }},
      NNAL {{ ansible_facts.ascend.nnal.version | default('-') }}

- name: Bind to the CPUs of the first NPU's NUMA node
  ansible.builtin.set_fact:
    vllm_cpus: "{{ ansible_facts.ascend.npu_devices[0].numa_cpus }}"

- name: Inspect an unpacked image instead of the running system
  kunpeng_ascend.vllm.ascend_facts:
    root: /srv/images/vllm-ascend-rootfs
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to C(ansible_facts).
  returned: always
  type: complex
  contains:
    ascend:
      description: What the files of the Ascend host say. Every component is null when it is not installed.
      returned: always
      type: complex
      contains:
        driver:
          description:
            - The NPU driver, from C(<path>/version.info); null when not installed.
          returned: always
          type: complex
          contains:
            path:
              description: Directory of the driver.
              type: str
              sample: /usr/local/Ascend/driver
            version_info:
              description: The file read.
              type: str
              sample: /usr/local/Ascend/driver/version.info
            version:
              description: The C(Version=) value; null (with a warning) when the file has none.
              type: str
              sample: 24.1.rc1
            package_version:
              description: The C(package_version=) value (newer drivers); null when absent.
              type: str
              sample: 25.3.rc1
            inner_version:
              description: The C(Innerversion=) value; null when absent.
              type: str
              sample: V100R001C15SPC006B220
            ascendhal_version:
              description: The C(ascendhal_version=) value; null when absent.
              type: str
              sample: 7.35.19
            compatible_versions:
              description: The C(compatible_version=[a],[b]) value as a list; null when absent or malformed.
              type: list
              elements: str
              sample: [V100R001C30, V100R001C13, V100R001C15, V100R001C17]
            compatible_firmware:
              description:
                - The C(compatible_version_fw=[min,max]) value, the firmware versions this driver works with, as a
                  list of ranges; null when absent or malformed.
              type: list
              elements: dict
              sample: [{min: 7.0.0, max: 7.2.99}]
            values:
              description: Every C(key=value) of the file, as written.
              type: dict
              sample: {Version: 24.1.rc1, aicpu_version: "1.0"}
        firmware:
          description: The NPU firmware, from C(<path>/version.info); null when not installed.
          returned: always
          type: complex
          contains:
            path:
              description: Directory of the firmware.
              type: str
              sample: /usr/local/Ascend/firmware
            version_info:
              description: The file read.
              type: str
              sample: /usr/local/Ascend/firmware/version.info
            version:
              description: The C(Version=) value; null (with a warning) when the file has none.
              type: str
              sample: 7.1.0.11.220
            package_version:
              description: The C(package_version=) value (the HDK release); null when absent.
              type: str
              sample: 23.0.7
            firmware_version:
              description: The C(firmware_version=) value; null when absent.
              type: str
              sample: "1.0"
            compatible_drivers:
              description:
                - The C(compatible_version_drv=[min,max],...) value, the driver versions this firmware works with, as
                  printed (a trailing C(.) stands for any build of that version); null when absent or malformed.
              type: list
              elements: dict
              sample: [{min: 23.0.rc3, max: 23.0.rc3.}, {min: 23.0.0, max: 23.0.0.}]
            values:
              description: Every C(key=value) of the file, as written.
              type: dict
              sample: {Version: 7.1.0.11.220}
        install_record:
          description: C(/etc/ascend_install.info), written by the driver and firmware installers; null when absent.
          returned: always
          type: complex
          contains:
            path:
              description: The file read.
              type: str
              sample: /etc/ascend_install.info
            user_name:
              description: The C(UserName=) value, the driver's run user.
              type: str
              sample: HwHiAiUser
            user_group:
              description: The C(UserGroup=) value.
              type: str
              sample: HwHiAiUser
            driver_install_path:
              description: The C(Driver_Install_Path_Param=) value, the directory holding C(driver/).
              type: str
              sample: /usr/local/Ascend
            driver_install_type:
              description: The C(Driver_Install_Type=) value.
              type: str
              sample: full
            driver_install_for_all:
              description: The C(Driver_Install_For_All=yes|no) value as a boolean; null when absent or neither.
              type: bool
              sample: true
            firmware_install_path:
              description: The C(Firmware_Install_Path_Param=) value.
              type: str
              sample: /usr/local/Ascend
            firmware_install_type:
              description: The C(Firmware_Install_Type=) value.
              type: str
              sample: full
            values:
              description: Every C(key=value) of the file, as written.
              type: dict
              sample: {UserName: HwHiAiUser, Driver_Install_Status: complete}
        cann_install_record:
          description: C(/etc/Ascend/ascend_cann_install.info), written by the CANN installers; null when absent.
          returned: always
          type: complex
          contains:
            path:
              description: The file read.
              type: str
              sample: /etc/Ascend/ascend_cann_install.info
            install_path:
              description: The C(Install_Path=) value, the directory CANN is installed in.
              type: str
              sample: /usr/local/Ascend
            toolkit_install_path:
              description: The C(Toolkit_InstallPath=) value (CANN 8.5 and later); null when absent.
              type: str
              sample: /usr/local/Ascend/cann-8.5.0
            values:
              description: Every C(key=value) of the file, as written.
              type: dict
              sample: {Install_Path: /usr/local/Ascend}
        toolkit:
          description: The CANN toolkit (see the description for how it is found); null when none is found.
          returned: always
          type: complex
          contains:
            version:
              description:
                - The CANN version, from C(ascend_toolkit_install.info) (C(version=)), else from the C(toolkit)
                  component of C(version.cfg); null when neither says.
              type: str
              sample: 8.0.0
            version_source:
              description: Where RV(ansible_facts.ascend.toolkit.version) came from.
              type: str
              choices: [install_info, version_cfg]
              sample: install_info
            inner_version:
              description: The internal version (C(innerversion=), or the first half of the version.cfg entry).
              type: str
              sample: V100R001C20SPC001B251
            arch:
              description: The C(arch=) value of C(ascend_toolkit_install.info).
              type: str
              sample: aarch64
            compatible_versions:
              description: The C(compatible_version=[a],[b]) value of C(ascend_toolkit_install.info) as a list.
              type: list
              elements: str
              sample: [V100R001C15, V100R001C17]
            path:
              description: The toolkit directory, symbolic links resolved.
              type: str
              sample: /usr/local/Ascend/ascend-toolkit/8.0.0
            found_via:
              description: The candidate path it was found through (for example the C(latest) link).
              type: str
              sample: /usr/local/Ascend/ascend-toolkit/latest
            layout:
              description:
                - V(ascend-toolkit) when the toolkit directory is C(<base>/ascend-toolkit/<version>) (up to CANN 8.3),
                  V(cann) when it is C(<base>/cann-<version>) or another directory (CANN 8.5 and later).
              type: str
              choices: [ascend-toolkit, cann]
              sample: ascend-toolkit
            install_info:
              description: The C(<arch>-linux/ascend_toolkit_install.info) file read; null when there is none.
              type: str
              sample: /usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux/ascend_toolkit_install.info
            set_env:
              description:
                - The environment script to source, the first that exists of C(<base>/ascend-toolkit/set_env.sh),
                  C(<path>/set_env.sh) and C(<base>/cann/set_env.sh); null when none exists.
              type: str
              sample: /usr/local/Ascend/ascend-toolkit/set_env.sh
            installed_versions:
              description: Versions with a directory C(<base>/ascend-toolkit/<version>) or C(<base>/cann-<version>), newest first.
              type: list
              elements: str
              sample: [8.0.0]
            version_cfg:
              description: The toolkit's C(version.cfg); null when there is none.
              type: complex
              contains:
                path:
                  description: The file read.
                  type: str
                  sample: /usr/local/Ascend/ascend-toolkit/8.0.0/version.cfg
                file_version:
                  description: The format version of the C(# version:) header line; null when absent.
                  type: str
                  sample: "1.0"
                components:
                  description:
                    - For each component of the C(<component>_<kind>_version=[<inner>:<version>]) lines, a dict
                      by kind (V(running), V(upgrade), V(installed)) of lists (usually of one entry) of
                      C({inner_version, version}); a kind whose value is malformed is null.
                  type: dict
                  sample:
                    toolkit:
                      running: [{inner_version: 7.6.T13.0.B094, version: 8.0.T63}]
                      installed: [{inner_version: 7.6.T13.0.B094, version: 8.0.T63}]
            values:
              description: Every C(key=value) of C(ascend_toolkit_install.info), as written; empty without it.
              type: dict
              sample: {package_name: Ascend-cann-toolkit, version: 8.0.0}
        kernels:
          description:
            - The CANN kernels (ops) package of the toolkit, from its record C(<toolkit>/opp_kernel/version.info), else
              from the C(version.info) files of C(<toolkit>/opp/built-in/op_impl/ai_core/tbe/kernel/<soc>/), else from
              the C(opp_kernel) component of the toolkit's C(version.cfg); null when none exists, or when the record is
              there but cannot be read (with a warning).
          returned: always
          type: complex
          contains:
            version:
              description:
                - The CANN release of the kernels, as their package is named - the C(version_dir=) of
                  C(opp_kernel/version.info) (null, with a warning, without one), the C(Version=) of the first SoC's
                  C(version.info) in name order, or the version of the C(version.cfg) entry.
              type: str
              sample: 8.2.RC1
            inner_version:
              description:
                - Its internal version - the ops build of C(opp_kernel/version.info) (C(Version=)), the C(innerversion=)
                  of a SoC's C(version.info), or the first half of the version.cfg entry; null when not recorded.
              type: str
              sample: 8.2.0.0.201
            source:
              description:
                - Which file said so - V(opp_kernel) (C(opp_kernel/version.info)), V(version_info) (a SoC's C(version.info))
                  or V(version_cfg).
              type: str
              choices: [opp_kernel, version_info, version_cfg]
              sample: opp_kernel
            path:
              description: The file read.
              type: str
              sample: /usr/local/Ascend/ascend-toolkit/8.2.RC1/opp_kernel/version.info
            socs:
              description:
                - The SoCs with kernels - the C(ascend*) directories of C(<toolkit>/opp/built-in/op_impl/ai_core/tbe/kernel)
                  with V(opp_kernel), the C(soc=) values (else the directory names) with V(version_info); null from
                  version.cfg.
              type: list
              elements: str
              sample: [ascend910b]
            required_packages:
              description:
                - The versions of the other CANN packages the kernels need, by package, from the
                  C(required_package_<name>_version="<range>") lines of C(opp_kernel/version.info) (quotes removed);
                  null from the other sources.
              type: dict
              sample: {toolkit: ">=7.6, <=8.2", runtime: ">=7.6, <=8.2"}
        nnal:
          description:
            - NNAL (ATB), from C(<base>/nnal/atb/latest/version.info), else the newest C(<base>/nnal/atb/<version>/);
              null when not installed.
          returned: always
          type: complex
          contains:
            version:
              description: The C(Ascend-cann-atb :) value.
              type: str
              sample: 8.0.T63
            build_version:
              description: The C(Ascend-cann-atb Version :) value.
              type: str
              sample: 8.0.T63.B020
            platform:
              description: The C(Platform :) value.
              type: str
              sample: aarch64
            branch:
              description: The C(branch :) value.
              type: str
              sample: br_feature_cann_8.0.0_POC_20250130
            commit_id:
              description: The C(commit id :) value.
              type: str
              sample: 92b4e43b9b62dca25a47b73bef75432005378e9d
            path:
              description: The NNAL version directory, symbolic links resolved.
              type: str
              sample: /usr/local/Ascend/nnal/atb/8.0.0
            found_via:
              description: The candidate path it was found through.
              type: str
              sample: /usr/local/Ascend/nnal/atb/latest
            version_info:
              description: The file read.
              type: str
              sample: /usr/local/Ascend/nnal/atb/8.0.0/version.info
            set_env:
              description: C(<base>/nnal/atb/set_env.sh) when it exists, else null.
              type: str
              sample: /usr/local/Ascend/nnal/atb/set_env.sh
            installed_versions:
              description: Versions with a directory C(<base>/nnal/atb/<version>), newest first.
              type: list
              elements: str
              sample: [8.0.0]
            values:
              description: "Every C(key : value) of the file, as written."
              type: dict
              sample: {Platform: aarch64}
        docker_runtime:
          description:
            - The Ascend Docker Runtime, from C(/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info),
              else from its C(version.info); null when not installed.
          returned: always
          type: complex
          contains:
            version:
              description: The C(version=) value without its leading C(v) (or the C(Version=) of C(version.info)).
              type: str
              sample: 6.0.0
            path:
              description: Directory of the runtime.
              type: str
              sample: /usr/local/Ascend/Ascend-Docker-Runtime
            install_info:
              description: The install record read; null when the version came from C(version.info).
              type: str
              sample: /usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info
            runtime:
              description: The C(ascend-docker-runtime) executable when it exists, else null.
              type: str
              sample: /usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime
            install_path:
              description: The recorded install path (C(path=)); null when not recorded.
              type: str
              sample: /usr/local/Ascend/Ascend-Docker-Runtime
            install_scene:
              description: The recorded container engine (C(install_scene=)); null when not recorded.
              type: str
              sample: docker
            injection_mode:
              description: The recorded device injection mode (C(injection-mode=), V(cdi) or V(legacy)); null when not recorded.
              type: str
              sample: legacy
            values:
              description: Every C(key=value) of the file read, as written.
              type: dict
              sample: {version: v6.0.0, arch: aarch64}
        npu_devices:
          description:
            - The Ascend NPUs on the PCI bus (vendor C(0x19e5), class C(0x1200)), in bus id order; empty when none.
          returned: always
          type: list
          elements: dict
          contains:
            bus_id:
              description: PCI address, as sysfs names it (lower case).
              type: str
              sample: "0000:c1:00.0"
            vendor:
              description: PCI vendor id.
              type: str
              sample: "0x19e5"
            device:
              description: PCI device id; null when unreadable.
              type: str
              sample: "0xd802"
            class:
              description: PCI class code.
              type: str
              sample: "0x120000"
            chip_family:
              description:
                - Chip family of the device id, V(310) (C(0xd100)), V(310P) (C(0xd500)), V(910) (C(0xd801)), V(910B)
                  (C(0xd802), Atlas A2) or V(910_93) (C(0xd803), Atlas A3); V(unknown) for any other id (see RV(ansible_facts.ascend.npu_devices[].device)).
              type: str
              sample: 910B
            numa_node:
              description: The device's NUMA node; null when sysfs gives none (C(-1)) or it cannot be read.
              type: int
              sample: 0
            numa_cpulist:
              description: That node's CPU list as sysfs prints it; null without a node.
              type: str
              sample: 0-23,48-71
            numa_cpus:
              description:
                - That node's CPUs, expanded; null without a node or when the list cannot be read.
                - Also null, with a warning, when the list names a CPU the machine cannot have (beyond the highest
                  of sysfs C(devices/system/cpu/possible), or beyond 8192 without that file) or more CPUs than it
                  can have, so that a corrupt list is never expanded.
              type: list
              elements: int
              sample: [0, 1, 2, 3]
        npu_count:
          description: Number of entries in RV(ansible_facts.ascend.npu_devices) (PCI devices, not chips as npu-smi counts them).
          returned: always
          type: int
          sample: 8
        hwhiaiuser:
          description: The C(HwHiAiUser) account the driver runs as and whose group owns the NPU devices.
          returned: always
          type: complex
          contains:
            user:
              description: The user, as C({name, uid, gid, home, shell}); null when it does not exist.
              type: dict
              sample: {name: HwHiAiUser, uid: 1000, gid: 1000, home: /home/HwHiAiUser, shell: /bin/bash}
            group:
              description: The group, as C({name, gid, members}) (members as listed in the group entry); null when it does not exist.
              type: dict
              sample: {name: HwHiAiUser, gid: 1000, members: [vllm]}
            user_in_group:
              description: Whether both exist and the group is the user's primary group or lists the user.
              type: bool
              sample: true
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import (
    RootFS,
    gather_ascend_facts,
    system_group,
    system_user,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', default='/'),
            sysfs_path=dict(type='path', default='/sys'),
        ),
        # Only files are read, so check mode gathers the same facts.
        supports_check_mode=True,
    )
    root = module.params['root']
    sysfs_path = module.params['sysfs_path']
    if not os.path.isdir(root):
        module.fail_json(msg='root: %s is not a directory' % root)
    fs = RootFS(root)
    sysfs = RootFS(sysfs_path)
    if not sysfs.is_dir('/bus/pci/devices'):
        module.warn('sysfs_path: %s has no bus/pci/devices directory, so no NPU can be listed; set sysfs_path to '
                    'where sysfs is mounted' % sysfs_path)
    user_db = (system_user, system_group) if fs.root == '/' else None
    facts = gather_ascend_facts(fs, sysfs, warn=module.warn, user_db=user_db)
    module.exit_json(changed=False, ansible_facts={'ascend': facts})


if __name__ == '__main__':
    main()
