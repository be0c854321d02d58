# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The checks of the ``ascend_preflight`` module, as pure functions: each takes data ``_preflight_host`` gathered
from the host (command results, file contents, paths found) and returns one check dict
``{'name', 'status', 'message', 'fix'}`` with ``status`` ``pass``, ``warn`` or ``fail`` and ``fix`` null on a pass.
Nothing here reads the host or touches AnsibleModule, so every rule is tested with plain data.
"""

from __future__ import annotations

import collections
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._architecture import normalise_arch
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import (
    check_combination,
    driver_minimum,
    format_row,
    ROWS,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import (
    compare_ascend_versions,
    is_ascend_version,
    version_in_range,
)

PASS, WARN, FAIL = 'pass', 'warn', 'fail'
_SEVERITY = {PASS: 0, WARN: 1, FAIL: 2}

# Every check, in the order the module runs and reports them.
CHECK_NAMES = (
    'architecture', 'kernel_headers', 'build_tools', 'package_database', 'package_states', 'disk_space',
    'run_user', 'npu_devices', 'npu_processes', 'npu_health', 'driver_version', 'compatibility',
)

# Tools the NPU driver installer needs (it builds its kernel module with DKMS), and tools it uses, with packages.
REQUIRED_TOOLS = (('dkms', 'dkms'), ('gcc', 'gcc'), ('make', 'make'))
USEFUL_TOOLS = (('lspci', 'pciutils'), ('ifconfig', 'net-tools'))

# dpkg status letters (second letter of ${db:Status-Abbrev}) of a package that is fine: installed, only
# configuration files left, not installed.
_DPKG_SETTLED = 'icn'
_DPKG_STATUS_NAMES = {'h': 'half-installed', 'u': 'unpacked', 'f': 'half-configured', 'w': 'triggers-awaited',
                      't': 'triggers-pending'}

# The module options that request a version of the compatibility set, by the component they name there.
VERSION_OPTIONS = (
    ('vllm_ascend', 'vllm_ascend_version'), ('vllm', 'vllm_version'), ('cann', 'cann_version'),
    ('torch', 'torch_version'), ('torch_npu', 'torch_npu_version'), ('python', 'python_version'),
)


def selected_checks(checks=None, skip_checks=()):
    """The names of the checks to run, in CHECK_NAMES order: ``checks`` (None: all) without ``skip_checks``."""
    wanted = CHECK_NAMES if checks is None else checks
    return [name for name in CHECK_NAMES if name in wanted and name not in skip_checks]


def check(name, status, message, fix=None):
    """One check result; ``fix`` is dropped (null) on a pass."""
    return {'name': name, 'status': status, 'message': message, 'fix': None if status == PASS else fix}


def _worst(statuses):
    return max(statuses, key=_SEVERITY.get) if statuses else PASS


def _install_command(manager, packages):
    """The command that installs ``packages`` with the package manager (dpkg: apt-get, rpm: dnf)."""
    packages = ' '.join(packages)
    if manager == 'dpkg':
        return 'apt-get install -y %s' % packages
    if manager == 'rpm':
        return 'dnf install -y %s' % packages
    return 'install %s with the package manager' % packages


def _last_line(*texts):
    lines = [line.strip() for text in texts for line in (text or '').splitlines() if line.strip()]
    return lines[-1] if lines else 'no output'


def _command_failure(name, output, fix):
    """A failed check for the CommandResult ``output`` of a command that did not work."""
    detail = _last_line(output.stderr, output.stdout)
    status = 'rc=%s, stopped at the time limit' % output.rc if output.timed_out else 'rc=%s' % output.rc
    return check(name, FAIL, '%s failed (%s): %s' % (' '.join(output.argv), status, detail), fix)


# --- architecture --------------------------------------------------------------------------------------------

def check_architecture(machine, expected=None):
    """``machine`` is ``uname -m``; ``expected`` the expected_architecture option (null: aarch64, x86_64 warns)."""
    arch = normalise_arch(machine)
    if expected:
        expected = normalise_arch(expected)
        if arch == expected:
            return check('architecture', PASS, '%s, as expected_architecture asks' % arch)
        return check('architecture', FAIL, 'the host is %s, but expected_architecture is %s'
                     % (arch or 'of an unknown architecture', expected),
                     'run on a %s host or correct expected_architecture' % expected)
    if arch == 'aarch64':
        return check('architecture', PASS, 'aarch64, as on Kunpeng servers')
    if arch == 'x86_64':
        return check('architecture', WARN, 'the host is x86_64, not a Kunpeng (aarch64) server; Ascend also ships '
                     'x86-64 packages, which this host needs', 'set expected_architecture to x86_64 to accept this host')
    return check('architecture', FAIL, 'the host is %s: Ascend NPU packages exist for aarch64 and x86_64 only'
                 % (arch or 'of an unknown architecture'), 'run on a Kunpeng (aarch64) host')


# --- kernel headers ------------------------------------------------------------------------------------------

def kernel_header_paths(release):
    """Where the headers of kernel ``release`` may be: the DKMS build link, then the Debian and the openEuler
    family's directories."""
    return ['/lib/modules/%s/build' % release, '/usr/src/linux-headers-%s' % release, '/usr/src/kernels/%s' % release]


def check_kernel_headers(release, checked, found, other_releases=(), broken_links=(), manager=None):
    """Headers of the running kernel ``release`` (``uname -r``), which the driver's DKMS build needs.

    ``checked`` the paths looked at (kernel_header_paths), ``found`` those that exist as directories,
    ``other_releases`` the kernel releases that have headers (the running one and repeats are left out),
    ``broken_links`` (path, target) of symbolic links to nothing, ``manager`` the package manager ('dpkg', 'rpm' or
    None) for the fix.
    """
    other_releases = [name for name in dict.fromkeys(other_releases) if name != release]
    if found:
        return check('kernel_headers', PASS, 'headers of the running kernel %s are in %s' % (release, found[0]))
    message = 'no headers for the running kernel %s (none of %s exists)' % (release, ', '.join(checked))
    for path, target in broken_links:
        message += '; %s points to %s, which does not exist' % (path, target)
    if other_releases:
        message += '; headers exist for %s only (boot that kernel, or install the running one\'s headers)' % (
            ', '.join(other_releases))
    if manager == 'dpkg':
        fix = _install_command(manager, ['linux-headers-%s' % release])
    elif manager == 'rpm':
        fix = _install_command(manager, ['kernel-devel-%s' % release, 'kernel-headers-%s' % release])
    else:
        fix = ('install linux-headers-%s (Debian family) or kernel-devel-%s and kernel-headers-%s (openEuler family)'
               % (release, release, release))
    return check('kernel_headers', FAIL, message, fix)


# --- build tools ---------------------------------------------------------------------------------------------

def check_build_tools(found, manager=None):
    """``found`` maps each tool of REQUIRED_TOOLS and USEFUL_TOOLS to its path, or None when not on PATH."""
    missing = [(tool, package) for tool, package in REQUIRED_TOOLS if not found.get(tool)]
    useful = [(tool, package) for tool, package in USEFUL_TOOLS if not found.get(tool)]
    packages = [package for tool, package in missing + useful]
    if missing:
        message = '%s not on PATH: the NPU driver builds its kernel module with DKMS' % ', '.join(
            tool for tool, package in missing)
        if useful:
            message += ' (also missing: %s)' % ', '.join('%s of %s' % pair for pair in useful)
        return check('build_tools', FAIL, message, _install_command(manager, packages))
    if useful:
        return check('build_tools', WARN, '%s not on PATH: the NPU driver installer uses pciutils and net-tools'
                     % ', '.join('%s (%s)' % pair for pair in useful), _install_command(manager, packages))
    return check('build_tools', PASS, '%s are on PATH' % ', '.join(tool for tool, package in REQUIRED_TOOLS + USEFUL_TOOLS))


# --- package database and states --------------------------------------------------------------------------------

_NO_MANAGER = 'neither dpkg nor rpm is on PATH, so the package database cannot be checked'


def check_package_database(manager, output):
    """``manager`` 'dpkg', 'rpm' or None; ``output`` the CommandResult of ``dpkg --audit`` or
    ``rpm -Va --nofiles --nodigest --noscripts``."""
    name = 'package_database'
    if manager is None:
        return check(name, WARN, _NO_MANAGER, 'check the package manager by hand, or skip this check')
    if manager == 'dpkg':
        fix = 'run dpkg --configure -a, then apt-get install -f'
        if output.rc == 0 and not output.stdout.strip():
            return check(name, PASS, 'dpkg --audit reports no problem')
        if output.rc in (0, 1) and output.stdout.strip():
            packages = [line.split()[0] for line in output.stdout.splitlines() if line[:1].isspace() and line.strip()]
            detail = ', '.join(packages) if packages else _last_line(output.stdout)
            return check(name, FAIL, 'dpkg --audit reports broken packages: %s' % detail, fix)
        return _command_failure(name, output, 'repair dpkg (is another apt or dpkg running?), then run the preflight again')
    if output.rc == 0:
        return check(name, PASS, 'rpm -Va --nofiles reports no dependency problem')
    unsatisfied = re.findall(r'^Unsatisfied dependencies for (\S+?):?\s*$', output.stdout, re.MULTILINE)
    if unsatisfied:
        return check(name, WARN, 'rpm -Va --nofiles reports unsatisfied dependencies of %s' % ', '.join(unsatisfied),
                     'install the missing dependencies (dnf check lists them) or remove those packages')
    return _command_failure(name, output, 'repair the rpm database (rpm --rebuilddb as root), then run the preflight again')


def check_package_states(manager, output):
    """``output`` of ``dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n'`` (dpkg); rpm keeps no such states."""
    name = 'package_states'
    if manager is None:
        return check(name, WARN, _NO_MANAGER, 'check the package manager by hand, or skip this check')
    if manager == 'rpm':
        return check(name, PASS, 'rpm keeps no half-installed or held states (package_database checks its dependencies)')
    if output.rc != 0:
        return _command_failure(name, output, 'repair dpkg (is another apt or dpkg running?), then run the preflight again')
    broken, held, unreadable = [], [], []
    for lineno, line in enumerate(output.stdout.splitlines(), 1):
        if not line.strip():
            continue
        abbrev, package = line[:3], line[3:].strip()
        if len(abbrev) < 3 or not package:
            unreadable.append('line %d: %r' % (lineno, line))
            continue
        status, error = abbrev[1].lower(), abbrev[2]
        if status not in _DPKG_SETTLED or error.upper() == 'R':
            state = _DPKG_STATUS_NAMES.get(status, 'status %r' % abbrev[1])
            if error.upper() == 'R':
                state += ', reinstall required'
            broken.append('%s (%s)' % (package, state))
        if abbrev[0].lower() == 'h':
            held.append(package)
    if broken:
        message = 'half-installed or broken packages: %s' % ', '.join(broken)
        if held:
            message += '; held packages: %s' % ', '.join(held)
        return check(name, FAIL, message, 'run dpkg --configure -a, then apt-get install -f (or apt-get install --reinstall '
                     'the package)')
    if unreadable:
        return check(name, WARN, 'dpkg-query printed lines that are not a status and a package: %s' % '; '.join(unreadable),
                     'run dpkg-query -W -f=\'${db:Status-Abbrev} ${Package}\\n\' by hand and check its output')
    if held:
        return check(name, WARN, 'held packages (apt will not change them): %s' % ', '.join(held),
                     'apt-mark unhold the packages the install must change (for example kernel headers)')
    return check(name, PASS, 'no half-installed, broken or held package (dpkg-query)')


# --- disk space ----------------------------------------------------------------------------------------------

def check_disk_space(install_path, checked_path, free_bytes, min_free_gb, error=None):
    """Free space (``free_bytes`` available to users) on ``checked_path``, the nearest existing directory of install_path."""
    name = 'disk_space'
    where = checked_path if checked_path == install_path else '%s (the nearest existing directory of %s)' % (
        checked_path, install_path)
    if error:
        return check(name, FAIL, 'cannot read the free space of %s: %s' % (where, error),
                     'check install_path (%s)' % install_path)
    free_gb = free_bytes / float(1024 ** 3)
    if free_gb >= min_free_gb:
        return check(name, PASS, '%.1f GB free on %s; min_free_gb is %g' % (free_gb, where, min_free_gb))
    return check(name, FAIL, 'only %.1f GB free on %s, less than min_free_gb %g (the CANN toolkit needs 7 to 10 GB)'
                 % (free_gb, where, min_free_gb), 'free space there or choose another install_path')


# --- run user ------------------------------------------------------------------------------------------------

def check_run_user(user, group, user_entry, group_entry):
    """The user and group the driver runs as. ``user_entry`` is {'name', 'gid'} or None, ``group_entry``
    {'name', 'gid', 'members'} or None."""
    name = 'run_user'
    add_user = 'useradd -g %s -d /home/%s -m %s -s /bin/bash' % (group, user, user)
    if not user_entry and not group_entry:
        return check(name, FAIL, 'neither user %s nor group %s exists; the NPU driver installer needs both' % (user, group),
                     'groupadd %s && %s' % (group, add_user))
    if not group_entry:
        return check(name, FAIL, 'group %s does not exist (user %s does)' % (group, user),
                     'groupadd %s && usermod -a -G %s %s' % (group, group, user))
    if not user_entry:
        return check(name, FAIL, 'user %s does not exist (group %s does)' % (user, group), add_user)
    if user_entry['gid'] != group_entry['gid'] and user not in group_entry['members']:
        return check(name, FAIL, 'user %s is not in group %s' % (user, group), 'usermod -a -G %s %s' % (group, user))
    return check(name, PASS, 'user %s exists and is in group %s' % (user, group))


# --- NPU PCI devices -----------------------------------------------------------------------------------------

def check_npu_devices(devices, scanned_path, error=None):
    """``devices``: the Ascend NPUs on the PCI bus (vendor 0x19e5, class 0x1200), each {'bus_id', 'device',
    'chip_family'} as ``_ascend_files.scan_npu_devices`` returns them; ``error`` a sentence when none could be listed."""
    name = 'npu_devices'
    if error:
        return check(name, WARN, 'cannot list PCI devices: %s' % error,
                     'set sysfs_path to where the host\'s sysfs is mounted, or skip this check')
    if not devices:
        return check(name, FAIL, 'no Ascend NPU among the PCI devices in %s (vendor 0x19e5, class 0x1200)' % scanned_path,
                     'check that the NPU cards are seated, powered and enabled in the BIOS (lspci -d 19e5: lists them)')
    counts = collections.Counter((device['chip_family'] or 'unknown', device['device']) for device in devices)
    models = ', '.join('%d x %s (%s)' % (count, family, device) for (family, device), count in sorted(counts.items()))
    return check(name, PASS, '%d Ascend NPU%s on the PCI bus: %s' % (len(devices), '' if len(devices) == 1 else 's', models))


# --- npu-smi: processes and health ---------------------------------------------------------------------------

NPU_SMI_MISSING = ('npu-smi is not installed: the NPU driver is not installed yet, which is normal before a first '
                   'install, so %s cannot be checked')
NPU_SMI_MISSING_FIX = 'none before the first driver install; if the driver is installed, set npu_smi_path'
NPU_SMI_INCOMPLETE = '%s cannot be checked: npu-smi info printed an incomplete table: %s'
NPU_SMI_INCOMPLETE_FIX = ('run npu-smi info on the host: output that stops short means npu-smi or the driver broke off '
                          '(see dmesg, then run the preflight again); a whole table is a parser bug to report with that '
                          'output')


def _npu_smi_unusable(name, npu_smi, what):
    """The result of check ``name`` when ``npu_smi`` cannot tell ``what``: npu-smi missing, failed or its table
    incomplete; None when its table can be used."""
    if not npu_smi['found']:
        return check(name, WARN, NPU_SMI_MISSING % what, NPU_SMI_MISSING_FIX)
    if npu_smi['failure']:
        return check(name, FAIL, npu_smi['failure'], 'repair the driver or the access to it as the message says')
    if not npu_smi['info']['complete']:
        return check(name, FAIL, NPU_SMI_INCOMPLETE % (what, npu_smi['info']['incomplete_reason']), NPU_SMI_INCOMPLETE_FIX)
    return None


def check_npu_processes(npu_smi):
    """``npu_smi``: {'found': bool, 'failure': message or None, 'info': parse_npu_smi_info result or None}."""
    name = 'npu_processes'
    unusable = _npu_smi_unusable(name, npu_smi, 'the processes holding NPUs')
    if unusable:
        return unusable
    processes = npu_smi['info']['processes']
    if processes:
        listed = ', '.join('pid %s (%s) on NPU %s' % (proc['pid'], proc['name'] or 'no name', proc['npu_id'])
                           for proc in processes)
        return check(name, FAIL, '%d process%s still hold%s NPUs: %s' % (
            len(processes), '' if len(processes) == 1 else 'es', 's' if len(processes) == 1 else '', listed),
            'stop them (the vLLM service, its containers) first: a driver or firmware change and a new vLLM start '
            'need free NPUs')
    return check(name, PASS, 'no process holds an NPU (npu-smi info)')


def check_npu_health(npu_smi):
    """Every chip of ``npu-smi info`` healthy: OK passes, Warning warns, anything else fails.

    A complete table lists at least one chip (else it is reported incomplete)."""
    name = 'npu_health'
    unusable = _npu_smi_unusable(name, npu_smi, 'the NPU health')
    if unusable:
        return unusable
    chips = npu_smi['info']['chips']
    unhealthy = [chip for chip in chips if (chip['health'] or '').upper() != 'OK']
    if not unhealthy:
        return check(name, PASS, 'all %d NPU chips are healthy (npu-smi info)' % len(chips))
    listed = ', '.join('NPU %s chip %s: %s' % (chip['npu_id'], chip['chip_id'] if chip['chip_id'] is not None else 0,
                                               chip['health'] or 'unknown') for chip in unhealthy)
    status = WARN if all((chip['health'] or '').lower() == 'warning' for chip in unhealthy) else FAIL
    return check(name, status, 'NPU chips not healthy: %s' % listed,
                 'find the cause with npu-smi info -t health -i NPU (Huawei asks for all chips healthy before a driver '
                 'or firmware change)')


# --- driver version ------------------------------------------------------------------------------------------

def check_driver_version(installed, driver_version=None, firmware_version=None):
    """The installed NPU driver against the requested driver_version and firmware_version.

    ``installed``: None when no driver is installed, else {'version': str or None, 'source': where it was read,
    'compatible_firmware': the ``compatible_version_fw`` ranges as [{'min', 'max'}] or None}.
    """
    name = 'driver_version'
    results = []  # (status, sentence, fix)
    for option, value in (('driver_version', driver_version), ('firmware_version', firmware_version)):
        if value and not is_ascend_version(value):
            results.append((FAIL, '%s %r is not a version' % (option, value), 'correct %s' % option))
    if results:
        return check(name, FAIL, '; '.join(sentence for status, sentence, fix in results),
                     '; '.join(fix for status, sentence, fix in results))
    version = installed and installed.get('version')
    if installed and not version:
        results.append((WARN, '%s names no driver version (no Version= line)' % installed['source'],
                        'check %s; reinstall the driver if it is damaged' % installed['source']))
    if not version:
        if not installed:
            sentence = 'no NPU driver is installed'
            if driver_version:
                sentence += '; driver %s will be a first install' % driver_version
            results.append((PASS, sentence, None))
        if firmware_version:
            results.append((PASS, 'firmware %s cannot be checked against a driver before one is installed'
                            % firmware_version, None))
        return _combine(name, results)
    order = compare_ascend_versions(version, driver_version) if driver_version else 0
    if not driver_version:
        results.append((PASS, 'NPU driver %s is installed (%s)' % (version, installed['source']), None))
    elif order == 0:
        results.append((PASS, 'NPU driver %s is installed, as driver_version asks' % version, None))
    elif order < 0:
        results.append((PASS, 'NPU driver %s is installed; driver_version %s is an upgrade' % (version, driver_version), None))
    else:
        results.append((WARN, 'NPU driver %s is installed, newer than driver_version %s: installing it is a downgrade'
                        % (version, driver_version),
                        'set driver_version to %s or newer, or uninstall the driver before installing an older one' % version))
    if firmware_version:
        results.append(_firmware_result(installed, version, order, driver_version, firmware_version))
    return _combine(name, results)


def _firmware_result(installed, version, order, driver_version, firmware_version):
    if order != 0:
        return (PASS, 'firmware %s cannot be checked against driver %s before it is installed'
                % (firmware_version, driver_version), None)
    ranges = installed.get('compatible_firmware')
    if not ranges:
        return (PASS, 'driver %s names no compatible firmware range (compatible_version_fw), so firmware %s is not '
                'checked against it' % (version, firmware_version), None)
    listed = ','.join('[%s,%s]' % (item['min'], item['max']) for item in ranges)
    try:
        fits = any(version_in_range(firmware_version, item['min'], item['max']) for item in ranges)
    except ValueError as error:
        return (WARN, 'compatible_version_fw %s in %s cannot be compared: %s' % (listed, installed['source'], error),
                'check %s' % installed['source'])
    if fits:
        return (PASS, 'firmware %s is within compatible_version_fw %s of driver %s' % (firmware_version, listed, version),
                None)
    return (FAIL, 'firmware %s is outside compatible_version_fw %s of the installed driver %s (%s)'
            % (firmware_version, listed, version, installed['source']),
            'choose a firmware_version within %s, or first install the driver that goes with firmware %s'
            % (listed, firmware_version))


def _combine(name, results):
    status = _worst([result[0] for result in results])
    fixes = [fix for result_status, sentence, fix in results if fix and result_status != PASS]
    return check(name, status, '; '.join(sentence for result_status, sentence, fix in results), '; '.join(fixes) or None)


# --- compatibility -------------------------------------------------------------------------------------------

def check_compatibility(requested, driver=None, driver_origin='installed', rows=ROWS):
    """The requested versions against the compatibility set, with the NPU driver they will run on.

    ``requested`` maps option names (vllm_ascend_version, vllm_version, cann_version, torch_version,
    torch_npu_version, python_version) to versions or None; ``driver`` the NPU driver version (the requested
    driver_version, else the installed one) and ``driver_origin`` says which ('requested' or 'installed').
    """
    name = 'compatibility'
    invalid = ['%s %r is not a version' % (option, requested[option]) for key, option in VERSION_OPTIONS
               if requested.get(option) and not is_ascend_version(requested[option])]
    if driver and not is_ascend_version(driver):
        invalid.append('the %s NPU driver version %r is not a version' % (driver_origin, driver))
    if invalid:
        return check(name, FAIL, '; '.join(invalid), 'correct the version options')
    given = dict((key, requested[option]) for key, option in VERSION_OPTIONS if requested.get(option))
    result = check_combination(driver=driver, rows=rows, **given)
    on_driver = ' on the %s NPU driver %s' % (driver_origin, driver) if driver else ' (no NPU driver installed or requested to check)'
    if not given:
        if not driver:
            return check(name, PASS, 'no version requested and no NPU driver installed: nothing to check')
        if result['suggestion']:
            return check(name, PASS, 'no vllm-ascend, vLLM, CANN, torch or Python version requested; the newest row '
                         'the %s NPU driver %s runs is %s' % (driver_origin, driver, format_row(result['suggestion'], rows)))
        return check(name, WARN, '; '.join(result['problems']), 'upgrade the NPU driver (driver_version)')
    if result['supported']:
        return check(name, PASS, 'the requested versions are the row %s%s' % (format_row(result['row'], rows), on_driver))
    fixes = []
    if result['suggestion']:
        fixes.append('use the newest row the NPU driver %s runs: %s' % (driver, format_row(result['suggestion'], rows)))
    if result['row'] and driver:
        minimum = driver_minimum(result['row'], rows)[0]
        if minimum and compare_ascend_versions(driver, minimum) < 0:
            fixes.append('or install NPU driver %s or newer (driver_version) for vllm-ascend %s'
                         % (minimum, result['row']['vllm_ascend']))
    if not fixes:
        fixes.append('request one whole row of the compatibility set (the kunpeng_ascend.vllm.ascend_compat_rows '
                     'filter lists them)')
    return check(name, FAIL, '; '.join(result['problems']), '; '.join(fixes))


# --- summary -------------------------------------------------------------------------------------------------

def summarize(checks, fail_on):
    """Counts and names of the checks by status, a one-line summary, and the failure message (None: no failure).

    ``fail_on`` 'fail' fails on a failed check, 'warn' on a failed or warning check, 'never' never.
    """
    counts = dict((status, sum(1 for item in checks if item['status'] == status)) for status in (PASS, WARN, FAIL))
    failed = [item['name'] for item in checks if item['status'] == FAIL]
    warned = [item['name'] for item in checks if item['status'] == WARN]
    summary = '%d checks: %d pass, %d warn, %d fail' % (len(checks), counts[PASS], counts[WARN], counts[FAIL])
    blocking_statuses = {'fail': (FAIL,), 'warn': (FAIL, WARN)}.get(fail_on, ())
    blocking = [item for item in checks if item['status'] in blocking_statuses]
    message = None
    if blocking:
        message = '%d of %d preflight checks did not pass (fail_on=%s): %s' % (
            len(blocking), len(checks), fail_on,
            '; '.join('%s: %s (fix: %s)' % (item['name'], item['message'], item['fix']) for item in blocking))
    return {'counts': counts, 'failed_checks': failed, 'warned_checks': warned, 'summary': summary, 'message': message}
