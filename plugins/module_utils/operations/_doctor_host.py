# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The doctor's host reader: what ``ascend_doctor`` observes on one node, read through a command runner (``run(argv)``
returning a _command.CommandResult; ``find(name)`` giving a tool's path or None) and a few root paths, and
``diagnose``, which hands the observations to _doctor's checks and returns the module's result.

What it reads is confined to the places it documents: the deployment record only in _deployment.RECORD_DIR (under
``root``); the persisted tuning files only in _doctor.SYSCTL_DIRS / TMPFILES_DIRS (under ``root``, their links
resolved inside it, and still there once resolved); sysctl values only under ``proc_path/sys``; /sys values only
under ``sysfs_path`` (each glob match's real path must be inside it); the service's control group under
``cgroup_path``. Unit names reach systemctl after ``--`` and journalctl as ``--unit=NAME``, both checked first
(_systemd.unit_name_problem). Standard library only.
"""

from __future__ import annotations

import glob
import hashlib
import os

import grp
import pwd
import stat

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _proc, _systemd
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _doctor
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _deployment, _known_good
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _compliance
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import (
    RootFS,
    read_cann_install_record,
    read_driver,
    read_firmware,
    read_install_record,
    read_toolkit,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import ROWS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._hccn_tool import parse_status, parse_tls, tls_expiry
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import (
    NPU_SMI_FALLBACK_PATHS,
    NpuSmiFailure,
    parse_npu_smi_key_values,
    read_npu_smi_info,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._proc import ProcReader
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import ignore

# The host's process table, for the parents of the processes holding NPUs (tests replace it).
PROC = '/proc'
UNIT_PROPERTIES = ('Id', 'LoadState', 'ActiveState', 'SubState', 'NRestarts', 'Result', 'MainPID', 'ControlGroup',
                   'StartLimitBurst')
ENGINE_UNITS = {'docker': 'docker.service', 'containerd': 'containerd.service'}
HCCN_TOOL_FALLBACK_PATHS = ('/usr/local/Ascend/driver/tools/hccn_tool',)
# A persisted file may resolve to these too (Debian's /etc/sysctl.d/99-sysctl.conf links to /etc/sysctl.conf).
RESOLVED_EXTRA = ('/etc/sysctl.conf',)
# What an answer of -tls -g starts with; without it (no TLS support, an error) there is nothing to judge.
_TLS_SWITCH = 'tls switch'
# Bytes of a /proc or /sys value read.
_VALUE_BYTES = 1 << 16


def describe(result):
    """One line about a failed command: 'timed out' or its exit code and first line of output."""
    if result.timed_out:
        return 'timed out'
    lines = [line.strip() for line in (result.stderr + '\n' + result.stdout).splitlines() if line.strip()]
    return 'rc=%s: %s' % (result.rc, lines[0] if lines else 'no output')


def inside(base, path):
    """Whether ``path``, every link resolved, is ``base`` or below it (``base`` resolved too)."""
    base = os.path.realpath(base)
    real = os.path.realpath(path)
    return real == base or real.startswith(base.rstrip('/') + '/')


def _read_value(path):
    """A small /proc or /sys value, None when it cannot be read (absent on this host: os_tuning skips it too)."""
    try:
        with open(path, 'rb') as handle:
            return handle.read(_VALUE_BYTES).decode('utf-8', 'replace')
    except (IOError, OSError):
        return None


class HostReader:
    """Reads one node: commands through ``run``, tools found by ``find``, files under ``root``, the tuning values
    under ``proc_path`` and ``sysfs_path``, control groups under ``cgroup_path``, processes under ``proc``."""

    def __init__(self, run, find, root='/', proc_path='/proc', sysfs_path='/sys', cgroup_path='/sys/fs/cgroup',
                 warn=ignore, proc=None):
        self.run = run
        self.find = find
        self.fs = RootFS(root)
        self.proc_path = proc_path
        self.sysfs_path = sysfs_path
        self.cgroup_path = cgroup_path
        self.warn = warn
        self.processes = ProcReader(proc or PROC)

    # ---------------------------------------------------------------------------------------------- the record

    def record(self, service_name=None):
        """``(record or None, error or None)``: the deployment record of ``service_name`` (with or without
        ``.service``), or of the one service recorded when it is None. Several records and no name is an error
        naming them; a record that is not one (wrong schema, bad values) is a warning and None."""
        names = []
        for entry in self.fs.listdir(_deployment.RECORD_DIR, self.warn):
            name = entry[:-len('.json')] if entry.endswith('.json') else None
            if name and not _systemd.unit_name_problem(name):
                names.append(name)
        if service_name is not None:
            wanted = service_name[:-len('.service')] if service_name.endswith('.service') else service_name
            names = [name for name in names if name == wanted]
        if not names:
            return None, None
        if len(names) > 1:
            return None, ('%d services are recorded on this host (%s, in %s): set service_name (doctor_service_name) '
                          'to the one to check' % (len(names), ', '.join(names), _deployment.RECORD_DIR))
        path = _deployment.record_path(names[0])
        resolved = self.fs.resolve(path)
        if resolved is None or os.path.dirname(resolved) != _deployment.RECORD_DIR:
            self.warn('%s is a link out of %s and is not read' % (path, _deployment.RECORD_DIR))
            return None, None
        record, problems = _deployment.parse_record(self.fs.read(path, self.warn), names[0])
        if problems:
            self.warn('%s is no deployment record of this collection and is ignored: %s' % (path, '; '.join(problems)))
        return record, None

    # ---------------------------------------------------------------------------------------------- observations

    def versions(self, release, waiver):
        record = read_install_record(self.fs, self.warn)
        driver = read_driver(self.fs, record, self.warn)
        firmware = read_firmware(self.fs, record, self.warn)
        toolkit = read_toolkit(self.fs, read_cann_install_record(self.fs, self.warn), self.warn)
        return dict(driver=(driver or {}).get('version'), firmware=(firmware or {}).get('version'),
                    cann=(toolkit or {}).get('version'),
                    vllm_ascend=release[1:] if release and release[0] in 'vV' else release, waiver=waiver)

    def npu_smi(self):
        """``(info, error, error codes by NPU)``."""
        npu_smi = self.find('npu-smi')
        if not npu_smi:
            return None, 'npu-smi was not found (neither in PATH nor as %s)' % ' or '.join(NPU_SMI_FALLBACK_PATHS), {}

        def run(args):
            return self.run([npu_smi] + args)

        try:
            info = read_npu_smi_info(run, self.warn)
        except NpuSmiFailure as failure:
            return None, failure.msg, {}
        codes = {}
        for npu_id in sorted(set(chip['npu_id'] for chip in info['chips'] if chip.get('health') != 'OK'
                                 and chip.get('npu_id') is not None)):
            result = run(['info', '-t', 'health', '-i', str(npu_id)])
            if result.rc == 0:
                codes[npu_id] = _doctor.health_error_codes(parse_npu_smi_key_values(result.stdout))
        return info, None, codes

    def units(self, units):
        """``({unit: properties}, error)``: one ``systemctl show`` of ``units`` (names checked, after ``--``)."""
        systemctl = self.find('systemctl')
        if not systemctl:
            return {}, 'systemctl was not found: is this a systemd host?'
        result = self.run(_systemd.show_argv(systemctl, units, UNIT_PROPERTIES))
        if result.rc != 0:
            return {}, 'systemctl show failed (%s)' % describe(result)
        return dict(zip(units, _systemd.parse_show(result.stdout))), None

    def cgroup_pids(self, control_group):
        """The PIDs of the control group and its children, cgroup v2 (unified) or v1 (the systemd hierarchy)."""
        pids = set()
        if not control_group or '..' in control_group.split('/'):
            return pids
        top = self.cgroup_path
        for base in (top, os.path.join(top, 'unified'), os.path.join(top, 'systemd'), os.path.join(top, 'pids')):
            directory = os.path.join(base, control_group.lstrip('/'))
            for dirpath, _dirs, files in os.walk(directory):
                if 'cgroup.procs' in files:
                    text = _read_value(os.path.join(dirpath, 'cgroup.procs')) or ''
                    pids.update(int(word) for word in text.split() if word.isdigit())
            if pids:
                break
        return pids

    def container_pid(self, engine, name):
        """The main PID of container ``name`` (docker or podman; nerdctl for containerd), None when unknown."""
        program = self.find('nerdctl' if engine == 'containerd' else engine)
        if not program or _doctor.container_name_problem(name):
            return None
        result = self.run(_proc.container_pid_argv(program, name))
        return _proc.parse_container_pid(result.stdout) if result.rc == 0 else None

    def ancestors(self, pid):
        return self.processes.ancestors(pid)

    def persisted(self, path, directories):
        """The text of a persisted tuning file, None when absent or when it resolves out of ``directories``."""
        if not self.fs.exists(path):
            return None
        resolved = self.fs.resolve(path)
        if resolved is None or (os.path.dirname(resolved) not in directories and resolved not in RESOLVED_EXTRA):
            self.warn('%s resolves to %s, outside %s, and is not read' % (path, resolved, ' and '.join(directories)))
            return None
        return self.fs.read(path, self.warn)

    def sysctl(self, key):
        """The live value of sysctl ``key`` (read under proc_path/sys only), None when the host has none."""
        if _doctor.sysctl_key_problem(key):
            self.warn('sysctl %r is no sysctl name and is not read' % (key,))
            return None
        base = os.path.join(self.proc_path, 'sys')
        path = os.path.join(base, key.replace('.', '/'))
        if not inside(base, path):
            self.warn('sysctl %s resolves outside %s and is not read' % (key, base))
            return None
        text = _read_value(path)
        return ' '.join(text.split()) if text is not None else None

    def sys_values(self, pattern):
        """``{path relative to /sys: value}`` of every match of ``pattern`` (relative to /sys) under sysfs_path
        whose real path is inside it; a match that leaves it is a warning and not read."""
        values = {}
        for found in sorted(glob.glob(os.path.join(self.sysfs_path, pattern))):
            if not inside(self.sysfs_path, found):
                self.warn('%s resolves to %s, outside %s, and is not read'
                          % (found, os.path.realpath(found), self.sysfs_path))
                continue
            text = _read_value(found)
            if text is not None:
                values[os.path.relpath(found, self.sysfs_path)] = _doctor.sysfs_value(text)
        return values

    def tuning(self, sysctl_file, tmpfiles_file, expected_sysctl, expected_sys):
        """The tuning finding: the persisted files and the expected values against the live ones."""
        sysctl_text = self.persisted(sysctl_file, _doctor.SYSCTL_DIRS)
        tmpfiles_text = self.persisted(tmpfiles_file, _doctor.TMPFILES_DIRS)
        persisted_sysctl = None
        if sysctl_text is not None:
            persisted_sysctl = {}
            for key, value in _doctor.parse_sysctl_conf(sysctl_text).items():
                if _doctor.sysctl_key_problem(key):
                    self.warn('%s sets %r, which is no sysctl name; it is not compared' % (sysctl_file, key))
                else:
                    persisted_sysctl[key] = value
        persisted_sys = None
        if tmpfiles_text is not None:
            # Only the /sys writes are tuning values; tmpfiles.d may write elsewhere, which is not the doctor's.
            persisted_sys = dict((path, value) for path, value in _doctor.parse_tmpfiles_writes(tmpfiles_text).items()
                                 if path.startswith('/sys/') and _doctor.sys_relative(path) is not None)
        expected_sysctl = dict((key, str(value)) for key, value in (expected_sysctl or {}).items())
        expected_sys = dict((key, str(value)) for key, value in (expected_sys or {}).items())
        live = {'sysctl': {}, 'sys': {}}
        for key in set(persisted_sysctl or {}) | set(expected_sysctl):
            live['sysctl'][key] = self.sysctl(key)
        for path in set(persisted_sys or {}) | set(expected_sys):
            live['sys'].update(self.sys_values(_doctor.sys_relative(path)))
        meminfo = _doctor.parse_meminfo(_read_value(os.path.join(self.proc_path, 'meminfo')))
        return _doctor.tuning_drift(live, persisted_sysctl, persisted_sys, expected_sysctl, expected_sys, meminfo,
                                    {'sysctl': sysctl_file, 'tmpfiles': tmpfiles_file})

    def journal_lines(self, unit, since, lines):
        """``(lines, error)``: the journal of ``unit`` since ``since``, at most ``lines`` lines, oldest first."""
        journalctl = self.find('journalctl')
        if not journalctl:
            return [], 'journalctl was not found'
        # journalctl's -u takes no "--": the name is checked, then given glued to its option.
        problem = _systemd.unit_name_problem(unit)
        if problem:
            return [], problem
        result = self.run([journalctl, '--unit=' + unit, '--since', since, '-o', 'cat', '--no-pager', '-q',
                           '-n', str(lines)])
        if result.rc != 0:
            return [], 'journalctl failed (%s)' % describe(result)
        return result.stdout.splitlines(), None

    def journal(self, unit, since, lines):
        """The journal finding of ``unit`` since ``since``, at most ``lines`` lines."""
        read, error = self.journal_lines(unit, since, lines)
        return _doctor.scan_journal(read, unit, since, error=error)

    def network(self, devices, now, tls_warn_days):
        """The NPU network finding: per device, ``-net_health -g``, ``-link -g`` and ``-tls -g`` (its certificates'
        and CRL's expiry at ``now``)."""
        hccn_tool = self.find('hccn_tool')
        if not hccn_tool:
            return _doctor.check_network(True, {}, error='hccn_tool was not found (neither in PATH nor as %s)'
                                         % ' or '.join(HCCN_TOOL_FALLBACK_PATHS))
        states = {}
        for device in devices:
            state = {}
            for option, key, label in (('-net_health', 'net_health', 'net health'), ('-link', 'link', 'link')):
                result = self.run([hccn_tool, '-i', str(device), option, '-g'])
                if result.rc != 0:
                    state['error'] = 'hccn_tool -i %s %s -g failed (%s)' % (device, option, describe(result))
                state[key] = parse_status(result.stdout, label, self.warn) if result.rc == 0 else None
            # hccn_tool prints an expired certificate's status as an error (stderr, maybe rc != 0): its blocks and
            # end times are on stdout, and the end time against now decides, whichever stream the status took.
            result = self.run([hccn_tool, '-i', str(device), '-tls', '-g'])
            tls = parse_tls(result.stdout, self.warn) if _TLS_SWITCH in result.stdout else None
            state['tls'] = ({'enabled': tls['enabled'], 'alarm_days': tls['alarm_days'],
                             'certificates': tls_expiry(tls, now, tls_warn_days)} if tls else None)
            states[str(device)] = state
        return _doctor.check_network(True, states, tls_warn_days=tls_warn_days)

    # ---------------------------------------------------------------------------------------- compliance evidence

    def secure_boot(self):
        """The secure-boot finding: ``sysfs_path``/firmware/efi (absent: a legacy boot), its SecureBoot variable in
        efivars, else ``mokutil --sb-state``."""
        efi = os.path.join(self.sysfs_path, 'firmware', 'efi')
        if not os.path.isdir(efi):
            return _compliance.check_secure_boot(False, None, efi_path=efi)
        variable = None
        try:
            with open(os.path.join(efi, 'efivars', _compliance.SECURE_BOOT_VARIABLE), 'rb') as handle:
                variable = handle.read(64)
        except (IOError, OSError):
            pass
        mokutil = None
        if variable is None or len(variable) < 5:
            tool = self.find('mokutil')
            if tool:
                result = self.run([tool, '--sb-state'])
                mokutil = 'timed out' if result.timed_out else (result.stdout + '\n' + result.stderr).strip()
        return _compliance.check_secure_boot(True, variable, mokutil, efi)

    def offline_routes(self, declared, addresses):
        """The no-internet finding: ``ip -j route get ADDRESS`` for each public address (the kernel's routing
        table only: nothing is sent)."""
        ip = self.find('ip')
        if not ip:
            return _compliance.check_offline_routes(declared, {}, error='ip was not found (iproute2)')
        lookups = {}
        for address in addresses:
            result = self.run([ip, '-j', 'route', 'get', address])
            lookups[address] = ({'route': None, 'no_route': None, 'error': 'ip route get %s timed out' % address}
                                if result.timed_out else
                                _compliance.parse_route_get(result.rc, result.stdout, result.stderr))
        return _compliance.check_offline_routes(declared, lookups)

    def known_good(self, name):
        """The current known good summary of service ``name`` from the local fact (None: none, or no fact of this
        collection, with a warning)."""
        text = self.fs.read(_known_good.FACT_PATH, self.warn)
        if text is None or not name:
            return None
        fact, problems = _known_good.parse_fact(text)
        if problems or fact is None:
            self.warn('%s is no known-good fact of this collection and is ignored: %s'
                      % (_known_good.FACT_PATH, '; '.join(problems)))
            return None
        return ((fact.get('services') or {}).get(name) or {}).get('current')

    def file_sha256(self, path):
        """The SHA-256 of the regular file ``path`` under ``root`` (at most the reader's size limit), None when it is
        not there or cannot be read."""
        data = self.fs.read_bytes(path, self.warn)
        return None if data is None else hashlib.sha256(data).hexdigest()

    def key_stat(self, path):
        """``{'exists', 'type', 'owner', 'group', 'mode'}`` of the file ``path`` under ``root`` (not followed if a
        link), None for no path."""
        if not path:
            return None
        try:
            info = os.lstat(self.fs.host_path(path))
        except (IOError, OSError):
            return {'exists': False}
        kind = 'file' if stat.S_ISREG(info.st_mode) else 'link' if stat.S_ISLNK(info.st_mode) else 'other'
        return {'exists': True, 'type': kind, 'owner': _name(pwd.getpwuid, info.st_uid),
                'group': _name(grp.getgrgid, info.st_gid), 'mode': stat.S_IMODE(info.st_mode)}


def _name(lookup, number):
    """The user or group name of ``number``, else the number as text."""
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def compliance(reader, options, record):
    """The compliance findings of the node (_compliance), in their order: secure boot, no route to the internet
    where the site is declared offline, the TLS key's owner and mode from the deployment ``record``."""
    findings = [reader.secure_boot(),
                reader.offline_routes(options.get('site_offline'), options.get('public_addresses') or
                                      _compliance.PUBLIC_ADDRESSES),
                _compliance.check_tls_key(record, reader.key_stat(((record or {}).get('tls') or {}).get('key'))),
                model_manifest(reader, record)]
    return _compliance.order(findings)


def model_manifest(reader, record):
    """The served model's manifest (``<model>/SHA256SUMS``, the role's default) against the known good's digest."""
    if record is None:
        return _compliance.check_model_manifest(None, None, None, None)
    manifest = '%s/SHA256SUMS' % record['model'].rstrip('/') if record.get('model') else None
    return _compliance.check_model_manifest(record, reader.known_good(record.get('name')), manifest,
                                            reader.file_sha256(manifest) if manifest else None)


# Long: the doctor's checks in the order its report lists them; each reads what the ones before learnt (the
# record, the mode, the engine, the units).
def diagnose(reader, options, now, rows=ROWS):
    """The module's result of one node: ``options`` are ascend_doctor's (checked by _doctor.check_inputs), ``now``
    the time (seconds since the epoch) certificates are judged at, ``rows`` the compatibility set the versions are
    checked against (_compatibility.ROWS, or with_site_rows's with the site's rows). ValueError
    when the inputs do not say which service to check (several recorded)."""
    record, error = reader.record(options.get('service_name'))
    if error:
        raise ValueError(error)
    record = record or {}
    unit = _systemd.service_unit(options.get('service_name') or record.get('name') or 'vllm')
    name = unit[:-len('.service')] if unit.endswith('.service') else unit
    versions = reader.versions(options.get('vllm_ascend_version') or record.get('vllm_ascend'),
                               options.get('compat_waiver'))
    info, npu_error, codes = reader.npu_smi()
    mode = options.get('service_mode') or record.get('mode') or 'auto'
    if mode == 'auto':
        mode = 'container' if info and info['chips'] else 'native'
    versions['mode'] = mode
    engine = options.get('container_engine') or record.get('container_engine') or 'docker'
    container = (options.get('container_name') or record.get('container_name')
                 or _deployment.deployment_names(name)['container_name'])
    cpu_host = info is None and npu_error.startswith('npu-smi was not found') and not versions['driver'] \
        and mode == 'native'
    findings = [] if cpu_host else [_doctor.check_versions(rows=rows, **versions)]
    engine_unit = ENGINE_UNITS.get(engine) if mode == 'container' else None
    units, unit_error = reader.units([unit] + ([engine_unit] if engine_unit else []))
    service = units.get(unit, {})
    if cpu_host:
        findings.extend(_doctor.cpu_host())
    elif info is None:
        findings.extend(_doctor.npu_smi_unavailable(npu_error))
    else:
        findings.append(_doctor.check_npu_health(info, codes))
        findings.append(_doctor.check_npu_memory(info, options['hbm_warn_percent']))
        findings.append(_doctor.check_npu_temperature(info, options['temperature_warn_c']))
        pids = _doctor.service_pids_from(service, reader.cgroup_pids(service.get('ControlGroup')))
        if mode == 'container' and info['processes']:
            main = reader.container_pid(engine, container)
            if main:
                pids.add(main)
        lineage = dict((process['pid'], reader.ancestors(process['pid'])) for process in info['processes']
                       if process.get('pid') is not None and process['pid'] not in pids)
        findings.append(_doctor.check_npu_processes(info['processes'], pids, lineage, unit))
    findings.append(reader.tuning(options['sysctl_file'], options['tmpfiles_file'], options['expected_sysctl'],
                                  options['expected_sys']))
    if mode != 'container':
        findings.append(_doctor.check_container_runtime(mode, engine))
    elif engine == 'podman':
        findings.append(_doctor.check_container_runtime(mode, engine, found=bool(reader.find('podman'))))
    else:
        engine_props = units.get(engine_unit, {})
        findings.append(_doctor.check_container_runtime(
            mode, engine, engine_props, found=engine_props.get('LoadState') != 'not-found' and not unit_error))
    findings.append(_doctor.check_service(unit, service, unit_error))
    journal, journal_error = reader.journal_lines(unit, options['journal_since'], options['journal_lines'])
    findings.append(_doctor.scan_journal(journal, unit, options['journal_since'], error=journal_error))
    findings.append(_doctor.check_restart_storm(unit, service, journal, unit_error))
    if not options['check_network']:
        findings.append(_doctor.check_network(False, {}))
    elif options.get('network_devices') is None and info is None:
        findings.append(_doctor.check_network(True, {}, error='npu-smi did not list the NPUs; set doctor_network_devices'))
    else:
        devices = options['network_devices'] if options.get('network_devices') is not None \
            else list(range(len(info['chips'])))
        findings.append(reader.network(devices, now, options['tls_warn_days']))
    findings = _doctor.order(findings)
    return dict(changed=False, status=_doctor.overall(findings), findings=findings, mode=mode,
                service={'name': name, 'unit': unit, 'engine': engine if mode == 'container' else None,
                         'vllm_ascend': versions['vllm_ascend'], 'record': record or None},
                compliance=compliance(reader, options, record or None))
