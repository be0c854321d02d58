# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What the ``ascend_preflight`` module reads of the host for its checks: files under the root, sysfs, PATH, the
kernel, free space and read-only commands (through the collection's command runner), each read once, handed to
the pure checks of ``_preflight``. This is the preflight's only code that reads the host.
"""

from __future__ import annotations

import os
import platform

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import (
    NPU_GROUP,
    NPU_USER,
    RootFS,
    read_driver,
    read_install_record,
    read_npu_account,
    scan_npu_devices,
    system_group,
    system_user,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import (
    CommandRunner,
    locate_executable,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import ROWS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import (
    NPU_SMI_FALLBACK_PATHS,
    NpuSmiFailure,
    read_npu_smi_info,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._preflight import (
    REQUIRED_TOOLS,
    USEFUL_TOOLS,
    VERSION_OPTIONS,
    check_architecture,
    check_build_tools,
    check_compatibility,
    check_disk_space,
    check_driver_version,
    check_kernel_headers,
    check_npu_devices,
    check_npu_health,
    check_npu_processes,
    check_package_database,
    check_package_states,
    check_run_user,
    kernel_header_paths,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap

DPKG_QUERY_FORMAT = '${db:Status-Abbrev} ${Package}\\n'


class Host:
    """What the checks read of the host for one module run, each thing read once. ``warn`` collects the warnings
    of the files and outputs read; the module reports them when it ends. ``rows`` is the compatibility set the
    versions are checked against: _compatibility.ROWS, or with_site_rows's with the site's rows."""

    def __init__(self, module, rows=ROWS):
        self.module = module
        self.params = module.params
        self.rows = rows
        self.fs = RootFS(module.params['root'])
        self.warn = WarningCap()
        self._runner = None
        self._cache = {}

    def _once(self, key, read):
        if key not in self._cache:
            self._cache[key] = read()
        return self._cache[key]

    def run(self, argv):
        if self._runner is None:
            self._runner = CommandRunner(self.module, self.params['timeout'])
        return self._runner.run(argv)

    def package_manager(self):
        """('dpkg', dpkg path) on the Debian family, ('rpm', rpm path) on the openEuler family, else (None, None)."""
        def find():
            dpkg = self.module.get_bin_path('dpkg')
            if dpkg and self.module.get_bin_path('dpkg-query'):
                return 'dpkg', dpkg
            rpm = self.module.get_bin_path('rpm')
            return ('rpm', rpm) if rpm else (None, None)
        return self._once('package_manager', find)

    def npu_smi(self):
        """{'found', 'failure', 'info'} of one ``npu-smi info`` run."""
        return self._once('npu_smi', self._read_npu_smi)

    def _read_npu_smi(self):
        try:
            path = locate_executable(self.module, 'npu-smi', self.params['npu_smi_path'], 'npu_smi_path',
                                     NPU_SMI_FALLBACK_PATHS)
        except ValueError as error:
            return {'found': True, 'failure': str(error), 'info': None}
        if not path:
            return {'found': False, 'failure': None, 'info': None}
        try:
            info = read_npu_smi_info(lambda args: self.run([path] + args), self.warn)
        except NpuSmiFailure as failure:
            return {'found': True, 'failure': failure.msg, 'info': None}
        return {'found': True, 'failure': None, 'info': info}

    def installed_driver(self):
        """None without a driver, else {'version', 'source', 'compatible_firmware'}."""
        def read():
            record = read_install_record(self.fs, self.warn)
            driver = read_driver(self.fs, record, self.warn)
            if driver:
                return {'version': driver['version'], 'source': self.fs.host_path(driver['version_info']),
                        'compatible_firmware': driver['compatible_firmware']}
            npu_smi = self.npu_smi()
            if npu_smi['info'] and npu_smi['info']['driver_version']:
                return {'version': npu_smi['info']['driver_version'], 'source': 'npu-smi info',
                        'compatible_firmware': None}
            return None
        return self._once('installed_driver', read)


def run_architecture(host):
    return check_architecture(platform.machine(), host.params['expected_architecture'])


def run_kernel_headers(host):
    fs, release = host.fs, platform.release()
    checked = kernel_header_paths(release)
    found = [path for path in checked if fs.is_dir(path)]
    broken = []
    build = checked[0]
    modules_dir = fs.resolve(os.path.dirname(build))
    link = fs.host_path(modules_dir + '/build') if modules_dir else None
    if not found and link and os.path.islink(link):
        broken.append((build, os.readlink(link)))
    others = [name for name in fs.listdir('/lib/modules') if fs.is_dir('/lib/modules/%s/build' % name)]
    others += [name for name in fs.listdir('/usr/src/kernels') if fs.is_dir('/usr/src/kernels/' + name)]
    return check_kernel_headers(release, checked, found, others, broken, host.package_manager()[0])


def run_build_tools(host):
    found = dict((tool, host.module.get_bin_path(tool)) for tool, package in REQUIRED_TOOLS + USEFUL_TOOLS)
    return check_build_tools(found, host.package_manager()[0])


def run_package_database(host):
    manager, path = host.package_manager()
    if manager == 'dpkg':
        return check_package_database(manager, host.run([path, '--audit']))
    if manager == 'rpm':
        return check_package_database(manager, host.run([path, '-Va', '--nofiles', '--nodigest', '--noscripts']))
    return check_package_database(None, None)


def run_package_states(host):
    manager = host.package_manager()[0]
    if manager == 'dpkg':
        output = host.run([host.module.get_bin_path('dpkg-query'), '-W', '-f=' + DPKG_QUERY_FORMAT])
        return check_package_states(manager, output)
    return check_package_states(manager, None)


def run_disk_space(host):
    install_path = host.params['install_path']
    checked = install_path
    while checked != '/' and not host.fs.is_dir(checked):
        checked = os.path.dirname(checked)
    try:
        stat = os.statvfs(host.fs.host_path(host.fs.resolve(checked) or checked))
    except OSError as error:
        return check_disk_space(install_path, checked, None, host.params['min_free_gb'], error=error.strerror or str(error))
    return check_disk_space(install_path, checked, stat.f_bavail * stat.f_frsize, host.params['min_free_gb'])


def run_run_user(host):
    user_db = (system_user, system_group) if host.fs.root == '/' else None
    account = read_npu_account(host.fs, host.warn, user_db)
    return check_run_user(NPU_USER, NPU_GROUP, account['user'], account['group'])


def run_npu_devices(host):
    sysfs_path = host.params['sysfs_path']
    sysfs = RootFS(sysfs_path)
    scanned = os.path.join(sysfs_path, 'bus/pci/devices')
    if not sysfs.is_dir('/bus/pci/devices'):
        return check_npu_devices([], scanned, error='%s does not exist (a container without the host\'s sysfs?)' % scanned)
    return check_npu_devices(scan_npu_devices(sysfs, host.warn), scanned)


def run_npu_processes(host):
    return check_npu_processes(host.npu_smi())


def run_npu_health(host):
    return check_npu_health(host.npu_smi())


def run_driver_version(host):
    return check_driver_version(host.installed_driver(), host.params['driver_version'], host.params['firmware_version'])


def run_compatibility(host):
    requested = dict((option, host.params[option]) for key, option in VERSION_OPTIONS)
    if host.params['driver_version']:
        return check_compatibility(requested, host.params['driver_version'], 'requested', host.rows)
    installed = host.installed_driver()
    return check_compatibility(requested, installed['version'] if installed else None, 'installed', host.rows)


# Each check's reader, by check name (_preflight.CHECK_NAMES).
CHECKS = {
    'architecture': run_architecture,
    'kernel_headers': run_kernel_headers,
    'build_tools': run_build_tools,
    'package_database': run_package_database,
    'package_states': run_package_states,
    'disk_space': run_disk_space,
    'run_user': run_run_user,
    'npu_devices': run_npu_devices,
    'npu_processes': run_npu_processes,
    'npu_health': run_npu_health,
    'driver_version': run_driver_version,
    'compatibility': run_compatibility,
}


def run_checks(module, names, rows=ROWS):
    """Run the checks ``names`` on the host of ``module``, in that order, the compatibility check against ``rows``
    (see Host); returns (check results, the WarningCap of what was read)."""
    host = Host(module, rows)
    return [CHECKS[name](host) for name in names], host.warn
