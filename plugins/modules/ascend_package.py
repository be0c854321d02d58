#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: ascend_package
short_description: Install, upgrade or remove a Huawei Ascend package (.run, .deb or .rpm)
version_added: 0.1.0
description:
  - Installs, upgrades or removes one Huawei Ascend package given as a file on the managed host - the NPU driver or
    firmware, the CANN toolkit, kernels (ops) or NNAL, or the Ascend Docker Runtime - and runs its installer only when
    the installed version calls for it.
  - The format is chosen by the file name extension - C(.run) (Huawei's makeself installers), C(.deb) (dpkg) or
    C(.rpm) (rpm); any other extension fails.
  - "The package's component, version and architecture come from Huawei's file name (for example
    C(Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run), C(Ascend-hdk-910b-npu-firmware_7.5.0.3.220.run),
    C(Ascend-cann-toolkit_8.0.0_linux-aarch64.run), C(Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run),
    C(Atlas-A3-cann-kernels_8.0.0_linux-aarch64.run), C(Ascend-cann-910b-ops_9.0.0_linux-aarch64.run),
    C(Ascend-cann-nnal_8.0.0_linux-aarch64.run), C(Ascend-docker-runtime_6.0.0_linux-aarch64.run)); for a C(.deb)
    or C(.rpm) the version, package name and architecture come from its control data (C(dpkg-deb -f), C(rpm -qp))."
  - "The installed version of a C(.run) component is read from the files its installer writes, by the same reader
    as the M(kunpeng_ascend.vllm.ascend_facts) module: the driver's and the firmware's C(version.info)
    (C(Version=)) under the path recorded in C(/etc/ascend_install.info) (else C(/usr/local/Ascend)); the toolkit's
    C(<arch>-linux/ascend_toolkit_install.info) (C(version=), for this package's architecture) in the toolkit
    directory recorded by CANN 8.5 and later, else C(ascend-toolkit/latest), C(cann), the newest C(cann-<version>)
    or C(ascend-toolkit/<version>) of the CANN path recorded in C(/etc/Ascend/ascend_cann_install.info) (else
    C(/usr/local/Ascend)), or that directory's C(version.cfg) toolkit lines; the kernels' record
    C(opp_kernel/version.info) in the toolkit (C(version_dir=)), else the C(version.info) of the toolkit's kernel
    directory (the package's chip first), else the C(opp_kernel) lines of its C(version.cfg);
    NNAL's C(nnal/atb/latest/version.info) (C(Ascend-cann-atb :)), else the newest C(nnal/atb/<version>); the Docker
    runtime's C(Ascend-Docker-Runtime/version.info) (else the C(version=) of its
    C(ascend_docker_runtime_install.info)). With O(install_path), only the files under it are read. A version file
    without a usable version line fails the task, naming the file. So does, in check mode too and before anything
    runs, a version file or install record that is there but cannot be read as a regular file (a directory, a
    FIFO, a symbolic link loop, no permission, larger than 1 MiB): the installed version is then unknown, not
    absent, and no install is planned over it. For a C(.deb) or C(.rpm) the installed version is what dpkg or rpm
    has installed."
  - "Before anything is run or decided, the file must be a whole package of its format: a C(.run) must start with
    a makeself header (the module reads its first 64 KiB, never runs a file without one) and have the size that
    header announces; a C(.deb) must be an ar archive whose C(debian-binary), C(control.tar*) and C(data.tar*)
    members all end within the file. Its version (from the file name for a C(.run), else from its control data) must
    be one the module can compare. Otherwise the task fails, naming the file, and nothing has run."
  - "Before a package is used, its format's integrity check of the whole file runs, in check mode too, and when it
    fails nothing is installed - C(--check) (makeself's checksums) for a C(.run), C(dpkg-deb --contents) (which
    unpacks every member) for a C(.deb), C(rpm -K --nosignature) (header and payload digests; signatures are left
    out because Huawei's signing key is rarely imported) for a C(.rpm). A removal with C(dpkg -r) or C(rpm -e) does
    not use the file and does not check it. A C(.run) then runs with C(--quiet --nox11) and, for a first install,
    C(--full) (driver, firmware) or C(--install) (toolkit, kernels, NNAL, Docker runtime) plus C(--install-for-all)
    (driver, toolkit, kernels, NNAL); an upgrade runs C(--upgrade), a removal C(--uninstall)."
  - "Versions compare the way Ascend numbers its releases: case ignored, a leading C(v) and a C(+local) part
    dropped, parts split at C(.), C(-) and C(_); the release numbers first, numerically (trailing zeros ignored),
    then a test build (C(T63)) before a release candidate (C(rc1)) before the release itself, then build numbers
    (C(.7), C(.b090)) after the version they build on - so 24.1.rc3 < 24.1.rc3.7 < 24.1.0 < 24.1.0.1 and 8.0.T63 <
    8.0.RC1 < 8.0.0. The package's version must read so (C(8..0) is refused before anything runs); an installed
    version with other parts (C(8.0.SPC1)) is only equal (ignoring case) or of unknown order, and an unknown order
    counts as a downgrade for O(allow_downgrade)."
  - "Runs on one host never overlap: from reading the installed version to reading it again after the installer,
    a run holds an exclusive lock on C(/run/lock/kunpeng_ascend_package.lock) (else in C(/var/lock) or C(/run)), in
    which it writes its process id and what it does. Another run waits for it up to O(lock_timeout) seconds and
    then fails, naming the holder."
  - When the installer fails, the message gives its C([ERROR]) and C(ERR_NO) lines and those written to
    C(/var/log/ascend_seclog/ascend_install.log) during the run, with a hint when the cause is known.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Check mode runs only what reads - C(--check) of a C(.run), C(dpkg-deb -f), C(dpkg-deb --contents),
        C(dpkg-query), C(rpm -qp), C(rpm -K), C(rpm -q) and the version files - and returns the changed status,
        action, versions and RV(reboot_required) the real run would return.
      - RV(reboot_required) is predicted for the driver as true for an upgrade or removal (its installer asks for a
        reboot then) and false for a first install, which on some hosts asks for one too (only the real run tells).
      - Check mode takes the host-wide lock too (creating the empty lock file if there is none), so that it never
        predicts from a host another run is installing on.
  diff_mode:
    support: full
    details:
      - The diff is the installed version before and after.
  platform:
    support: full
    platforms: posix
options:
  path:
    description:
      - Path of the package file on the managed host, C(.run), C(.deb) or C(.rpm).
      - A relative path is taken from the module's working directory and made absolute before anything else; every
        check and command uses the absolute path. Prefer an absolute path.
      - A C(.run) must be executable (copy it with mode C(0755)) and keep Huawei's file name, which gives its
        component, version and architecture.
    type: path
    required: true
  state:
    description:
      - V(present) installs the package when no version of its component is installed, and otherwise does nothing.
      - V(latest) also upgrades when the installed version differs from the package's; a package older than the
        installed version is refused unless O(allow_downgrade=true).
      - V(absent) removes the component whatever version is installed - with the C(.run)'s C(--uninstall), or with
        the C(uninstall.sh) the installed driver, firmware, toolkit or Docker runtime left when another version is
        installed, or with C(dpkg -r) or C(rpm -e).
    type: str
    choices: [present, latest, absent]
    default: present
  component:
    description:
      - The Ascend component the package is, when its file name (or package name) does not say or says wrongly.
      - It decides the installer flags and where the installed version is read.
    type: str
    choices: [driver, firmware, toolkit, kernels, nnal, docker-runtime]
  accept_eula:
    description:
      - Accept the End User License Agreement of the package.
      - Required to install or upgrade the CANN toolkit, kernels and NNAL (their C(--quiet) accepts the EULA, and so
        do their C(.deb)/C(.rpm) maintainer scripts) and the Docker runtime (which asks on its standard input; the
        module answers C(y)). Without it the module fails before running anything.
    type: bool
    default: false
  allow_downgrade:
    description:
      - With O(state=latest), install a package older than the installed version (or of a version whose order
        cannot be told) with C(--upgrade), C(dpkg -i) or C(rpm -Uvh --oldpackage).
    type: bool
    default: false
  install_path:
    description:
      - Install path of a C(.run) (C(--install-path=)), where the installed version is read too.
      - Given on a first install, and also on upgrade and removal for the CANN packages and the Docker runtime (the
        driver and firmware keep the path they recorded in C(/etc/ascend_install.info)).
      - When not set, the installers' default C(/usr/local/Ascend) or the path they recorded is used.
      - Not supported with C(.deb) or C(.rpm) packages.
    type: path
  install_username:
    description:
      - User that owns the installed files (C(--install-username=)), on a first install of the driver, toolkit,
        kernels or NNAL from a C(.run); the installers default to C(HwHiAiUser), which must exist.
      - Needs O(install_usergroup). Ignored, with a warning, for the firmware and the Docker runtime.
    type: str
  install_usergroup:
    description:
      - Group of O(install_username) (C(--install-usergroup=)).
    type: str
  extra_args:
    description:
      - More arguments for the installer on install and upgrade, after the module's own - for example
        C(--install-scene=containerd) for the Docker runtime; for a C(.deb) or C(.rpm) they go to C(dpkg -i) or
        C(rpm -Uvh) before the file.
    type: list
    elements: str
    default: []
  timeout:
    description:
      - Seconds each command may take before coreutils C(timeout) stops it (and kills it 5 seconds later); V(0) runs
        without a limit.
      - The driver builds a kernel module and the CANN toolkit unpacks gigabytes, hence the long default.
    type: int
    default: 1800
  lock_timeout:
    description:
      - Seconds to wait for another C(ascend_package) run on the host to release the host-wide lock before failing
        with its process id and what it is doing; V(0) fails at once when another run holds it.
      - The default leaves time for a driver or toolkit install; a lock held longer usually means a hung run.
    type: int
    default: 600
  root:
    description:
      - Prefix of the file system the versions are read from, for containers, chroots and tests.
      - Only the version files, C(/etc/ascend_install.info), C(/etc/Ascend/ascend_cann_install.info), the installed
        C(uninstall.sh) scripts and the install log are looked up under it; it is passed to nothing else, so the
        installers still act on the host's own file system.
    type: path
    default: /
requirements:
  - C(dpkg-deb), C(dpkg-query) and C(dpkg) for C(.deb) packages; C(rpm) for C(.rpm) packages.
  - The driver installer needs C(dkms), C(gcc), C(make) and the headers of the running kernel, and the user
    C(HwHiAiUser) (or O(install_username)); see the Ascend installation guide.
notes:
  - Run as root (C(become=true)); the installers refuse otherwise.
  - Install in Huawei's order - driver, firmware, (reboot), CANN toolkit, kernels, NNAL - and upgrade the firmware
    before the driver.
  - The firmware installer's exit code 2 counts as success, as Huawei's own deployment tool counts it.
  - The firmware's C(--check) also runs its installer's own check, which writes its start and end time to the install
    log (in check mode too).
  - After the Docker runtime is installed or upgraded, its installer asks to restart the container engine; the
    module does not.
"""

EXAMPLES = r"""
- name: Install the NPU driver for all users
  kunpeng_ascend.vllm.ascend_package:
    path: /srv/ascend/Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run
  register: driver
  become: true

- name: Upgrade the firmware to this package's version
  kunpeng_ascend.vllm.ascend_package:
    path: /srv/ascend/Ascend-hdk-910b-npu-firmware_7.5.0.3.220.run
    state: latest
  register: firmware
  become: true

- name: Reboot when the driver or firmware asks for it
  ansible.builtin.reboot:
  when: driver.reboot_required or firmware.reboot_required
  become: true

- name: Install the CANN toolkit, accepting its EULA, owned by user ascend
  kunpeng_ascend.vllm.ascend_package:
    path: /srv/ascend/Ascend-cann-toolkit_8.0.0_linux-aarch64.run
    accept_eula: true
    install_username: ascend
    install_usergroup: HwHiAiUser
  become: true

- name: Install the Docker runtime for containerd
  kunpeng_ascend.vllm.ascend_package:
    path: /srv/ascend/Ascend-docker-runtime_6.0.0_linux-aarch64.run
    accept_eula: true
    extra_args:
      - --install-scene=containerd
  become: true

- name: Remove the CANN toolkit installed from a .deb
  kunpeng_ascend.vllm.ascend_package:
    path: /srv/ascend/Ascend-cann-toolkit_8.0.0_linux-aarch64.deb
    state: absent
  become: true
"""

RETURN = r"""
component:
  description: The Ascend component the package is.
  returned: success
  type: str
  sample: driver
package_version:
  description: Version of the package file.
  returned: success
  type: str
  sample: 24.1.rc1
before:
  description: Version of the component installed before the task; null when none was.
  returned: success
  type: str
  sample: 23.0.rc3
after:
  description:
    - Version of the component installed after the task (in check mode, the version it would be); null when none.
    - After a real install or upgrade it is read again from the host.
  returned: success
  type: str
  sample: 24.1.rc1
action:
  description: What was (or in check mode would be) done.
  returned: success
  type: str
  choices: [none, install, upgrade, uninstall]
  sample: upgrade
diff:
  description: The installed version before and after.
  returned: success
  type: dict
  sample:
    before:
      version: 23.0.rc3
    after:
      version: 24.1.rc1
reboot_required:
  description:
    - Whether the host must reboot for the change to take effect - after any firmware change, and after a driver
      change whose installer says so (in check mode, predicted for a driver upgrade or removal).
  returned: success
  type: bool
  sample: true
cmd:
  description: The installer command that ran, as a list (with the coreutils C(timeout) prefix).
  returned: when the installer ran
  type: list
  elements: str
  sample: [/usr/bin/timeout, --kill-after=5, "1800", /srv/ascend/Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run,
           --full, --quiet, --nox11, --install-for-all]
stdout:
  description: Standard output of the installer.
  returned: when the installer ran
  type: str
  sample: "[Driver] [2025-07-17 10:36:24] [INFO]Driver package installed successfully! The new version takes effect immediately. "
stderr:
  description: Standard error of the installer.
  returned: when the installer ran
  type: str
  sample: ""
install_log:
  description: The lines written to the Ascend install logs while the failed installer ran.
  returned: when the installer failed
  type: list
  elements: str
  sample: ["[Driver] [2025-07-17 10:35:21] [ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._ascend_packages import (
    COMPONENTS,
    TOOL_HINTS,
    PackageError,
    apply_package,
    package_path,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import (
    CommandRunner,
    failure_data,
    find_executable,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            state=dict(type='str', default='present', choices=['present', 'latest', 'absent']),
            component=dict(type='str', choices=list(COMPONENTS)),
            accept_eula=dict(type='bool', default=False),
            allow_downgrade=dict(type='bool', default=False),
            install_path=dict(type='path'),
            install_username=dict(type='str'),
            install_usergroup=dict(type='str'),
            extra_args=dict(type='list', elements='str', default=[]),
            timeout=dict(type='int', default=1800),
            lock_timeout=dict(type='int', default=600),
            root=dict(type='path', default='/'),
        ),
        required_together=[('install_username', 'install_usergroup')],
        supports_check_mode=True,
    )
    try:
        path = package_path(module.params)
        runner = CommandRunner(module, module.params['timeout'])
        result = apply_package(module.params, path, runner,
                               lambda name: find_executable(module, name, missing_hint=TOOL_HINTS[name]),
                               module.warn, module.check_mode)
    except PackageError as error:
        command = failure_data(error.result) if error.result is not None else {}
        module.fail_json(msg=error.msg, **dict(command, **error.extra))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
