#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: ascend_doctor
short_description: Check an Ascend vLLM node and explain what is wrong
version_added: 0.2.0
description:
  - Looks at one node in one call and returns a list of findings, one per check, each with a status (V(ok),
    V(warn), V(fail) or V(skipped)), a one-line summary, the details seen and a fix naming the command, variable or
    file to act on; and an overall verdict, V(healthy) (no warning or failure), V(degraded) (warnings only) or
    V(broken) (a failure).
  - "C(versions): the NPU driver, firmware and CANN from their version files (as M(kunpeng_ascend.vllm.ascend_facts)
    reads them) and the vllm-ascend release the service runs (O(vllm_ascend_version)), checked against the
    compatibility set as the vllm_service role's preflight does; a failure names the row that fits the driver."
  - "C(npu_health), C(npu_memory), C(npu_temperature), C(npu_processes): one C(npu-smi info) (plus
    C(npu-smi info -t health -i N) for an NPU with an unhealthy chip, for its error code): a chip not OK fails,
    memory over O(hbm_warn_percent) or a temperature over O(temperature_warn_c) warns, a process holding an NPU that
    is not the service's (its unit's control group, cgroup v2 or v1, its main PID, their descendants and, in
    container mode, the container's) fails. npu-smi missing or failing fails C(npu_health) with its error."
  - "C(tuning): the live kernel values (C(/proc/sys), transparent hugepages and other C(/sys) values, C(HugePages_Total)
    of C(/proc/meminfo)) against what the os_tuning role persisted (O(sysctl_file), O(tmpfiles_file)) and against
    O(expected_sysctl) and O(expected_sys); each drifted value is listed, and the finding warns."
  - "C(container_runtime): in container mode, the engine's systemd unit (docker, containerd) is active, or podman
    is installed; skipped in native mode."
  - "C(service): the unit's C(ActiveState), C(SubState), C(NRestarts) and C(Result): not active fails, restarts
    warn. C(journal): C(journalctl -u UNIT --since SINCE -o cat), at most O(journal_lines) lines, each matched
    against the catalogue of known vLLM-Ascend serving failures (HCCL set-up failures and timeouts, EJ0001, NPUs held
    or not visible, missing driver libraries, CANN and torch_npu mismatches, out of memory on the NPU or the host,
    the port in use, quantization mismatches, corrupt weights, engine start failures, nan/inf and more; look-alike
    lines such as torch_npu's HCCL execution-timeout setting warning are not reported). A C(fail) entry fails the
    check, C(warn) entries alone (nan/inf, a c10d rendezvous still waiting) warn; the summary names the entries found,
    the fix joins theirs, at most 3 matching lines of each are kept."
  - "C(network) (only with O(check_network)): C(hccn_tool -i N -net_health -g) and C(-link -g) per NPU NIC; a NIC
    whose health is not C(Success) or link not C(UP) fails."
  - Every command runs under coreutils C(timeout) (O(timeout)); a tool that is missing or fails is a finding, not a
    module failure.
  - A host with neither an NPU driver nor npu-smi whose service runs natively is a CPU host (vLLM's CPU build);
    the version and NPU checks are V(skipped) there.
  - Only reads; it never changes the host.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - The module only reads, so check mode runs every check and returns the same findings.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  service_name:
    description: Name of the vLLM service (the vllm_service role's C(vllm_service_name)); its unit is C(NAME.service).
    type: str
    default: vllm
  service_mode:
    description:
      - How the service runs (C(vllm_service_mode)). V(auto) is V(container) when npu-smi lists NPUs, else V(native),
        as the vllm_service role decides.
    type: str
    choices: [auto, native, container]
    default: auto
  container_engine:
    description: The engine of container mode (C(vllm_service_container_engine)); its service is checked.
    type: str
    choices: [docker, podman, containerd]
    default: docker
  container_name:
    description: Name of the service's container; default C(vllm-NAME), as the vllm_service role names it.
    type: str
  vllm_ascend_version:
    description:
      - The vllm-ascend release the service runs, such as V(0.13.0) (a leading V(v) is ignored); the playbook passes
        C(vllm_service_vllm_ascend_version) or the release the vllm_service role derives from the image tag or the
        pip packages.
      - Not set, the C(versions) check warns that the fit is unknown.
    type: str
  compat_waiver:
    description:
      - The waiver the service runs under outside the compatibility set (C(ascend_compat_waiver)) - C(reason),
        C(expires) (YYYY-MM-DD) and optionally C(covers), as the
        P(kunpeng_ascend.vllm.ascend_compat#filter) filter reads it, checked on the host's date.
      - A combination it covers is a warning naming the reason and the expiry, not a failure; a void or expired
        waiver waives nothing.
    type: dict
  root:
    description: Root of the file system the version files and the persisted tuning files are read under (tests).
    type: path
    default: /
  proc_path:
    description: Where C(/proc) is read for C(sys/...) and C(meminfo); tests point it at a planted tree.
    type: path
    default: /proc
  sysfs_path:
    description: Where C(/sys) is read for the tuning values (C(kernel/mm/transparent_hugepage/enabled), ...).
    type: path
    default: /sys
  cgroup_path:
    description: Where the cgroup file systems are mounted (C(cgroup.procs) of the service's control group).
    type: path
    default: /sys/fs/cgroup
  sysctl_file:
    description: The sysctl.d file of the os_tuning role (C(os_tuning_sysctl_file)); absent is no error.
    type: path
    default: /etc/sysctl.d/90-kunpeng-ascend-vllm.conf
  tmpfiles_file:
    description: The tmpfiles.d file of the os_tuning role (C(os_tuning_tmpfiles_file)); absent is no error.
    type: path
    default: /etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf
  expected_sysctl:
    description: "Expected sysctl values, C({key: value}) with dotted keys; they win over the persisted file."
    type: dict
    default: {}
  expected_sys:
    description: "Expected C(/sys) values, C({path: value}) with paths under C(/sys) (globs such as C(cpu*) allowed)."
    type: dict
    default: {}
  temperature_warn_c:
    description: A chip hotter than this (degrees Celsius) warns.
    type: int
    default: 85
  hbm_warn_percent:
    description: A chip whose HBM (memory on the 310 family) is fuller than this percentage warns.
    type: float
    default: 97.0
  journal_since:
    description: How far back the journal is read, in C(journalctl --since) terms.
    type: str
    default: 1 hour ago
  journal_lines:
    description: At most this many (of the latest) journal lines are read.
    type: int
    default: 5000
  check_network:
    description: Check the NPU NICs with hccn_tool (multi-node services).
    type: bool
    default: false
  network_devices:
    description: The device ids to give C(hccn_tool -i); default every chip of npu-smi (its logical ids, in table order).
    type: list
    elements: int
  npu_smi_path:
    description: Path of C(npu-smi); default found in E(PATH), then C(/usr/local/bin), C(/usr/local/sbin).
    type: path
  hccn_tool_path:
    description: Path of C(hccn_tool); default found in E(PATH), then C(/usr/local/Ascend/driver/tools/hccn_tool).
    type: path
  timeout:
    description: Seconds each command may take (coreutils C(timeout)); V(0) for none.
    type: int
    default: 30
notes:
  - The findings and their order are the same whatever fails; a check that cannot run is V(skipped) or reports the
    failure that stopped it.
seealso:
  - module: kunpeng_ascend.vllm.npu_smi_info
  - module: kunpeng_ascend.vllm.ascend_facts
"""

EXAMPLES = r"""
- name: Check the node
  kunpeng_ascend.vllm.ascend_doctor:
    service_name: vllm
    vllm_ascend_version: 0.13.0
  register: doctor

- name: Show what is wrong
  ansible.builtin.debug:
    msg: "{{ doctor.findings | rejectattr('status', 'in', ['ok', 'skipped']) | map(attribute='summary') | list }}"

- name: A multi-node group, with the NPU network
  kunpeng_ascend.vllm.ascend_doctor:
    check_network: true
    expected_sysctl:
      vm.nr_hugepages: 1024
"""

RETURN = r"""
status:
  description: V(healthy), V(degraded) (warnings only) or V(broken) (a failure).
  returned: always
  type: str
  sample: broken
findings:
  description: One finding per check, in the order C(versions), C(npu_health), C(npu_memory), C(npu_temperature),
    C(npu_processes), C(tuning), C(container_runtime), C(service), C(journal), C(network).
  returned: always
  type: list
  elements: dict
  contains:
    check:
      description: The check's name.
      type: str
      sample: npu_health
    status:
      description: V(ok), V(warn), V(fail) or V(skipped).
      type: str
      sample: fail
    summary:
      description: One sentence saying what was found.
      type: str
      sample: "1 of 8 NPU chips are not healthy: NPU 3 chip 0: Alarm (error code 80E18005)"
    details:
      description: What the check saw, as data.
      type: dict
    fix:
      description: What to do, naming the command, variable or file; null when nothing is to be done.
      type: str
mode:
  description: The service mode the checks assumed (V(native) or V(container)).
  returned: always
  type: str
  sample: container
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils import _doctor
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._ascend_files import (
    RootFS,
    read_cann_install_record,
    read_driver,
    read_firmware,
    read_install_record,
    read_toolkit,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._command import CommandRunner, locate_executable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._hccn_tool import parse_status
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._npu_smi import (
    NPU_SMI_FALLBACK_PATHS,
    NpuSmiFailure,
    parse_npu_smi_key_values,
    read_npu_smi_info,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._warnings import WarningCap

HCCN_TOOL_FALLBACK_PATHS = ('/usr/local/Ascend/driver/tools/hccn_tool',)
# The host's process table, for the parents of the processes holding NPUs (tests replace it).
PROC = '/proc'
UNIT_PROPERTIES = 'Id,LoadState,ActiveState,SubState,NRestarts,Result,MainPID,ControlGroup'
ENGINE_UNITS = {'docker': 'docker.service', 'containerd': 'containerd.service'}


def _read(path):
    """A small text file's content, None when it cannot be read."""
    try:
        with open(path, 'rb') as handle:
            return handle.read(1 << 20).decode('utf-8', 'replace')
    except (IOError, OSError):
        return None


def _describe(result):
    lines = [line.strip() for line in (result.stderr + '\n' + result.stdout).splitlines() if line.strip()]
    if result.timed_out:
        return 'timed out'
    return 'rc=%s: %s' % (result.rc, lines[0] if lines else 'no output')


class Doctor:
    """Collects the observations of one node and turns them into findings through _doctor."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.runner = CommandRunner(module, self.params['timeout'])
        self.warnings = WarningCap()
        self.unit = '%s.service' % self.params['service_name']

    def tool(self, name, option, fallbacks=()):
        try:
            return locate_executable(self.module, name, self.params[option], option, fallbacks)
        except ValueError as error:
            self.warnings(str(error))
            return None

    # ---------------------------------------------------------------------------------------------- observations

    def versions(self):
        fs = RootFS(self.params['root'])
        record = read_install_record(fs, self.warnings)
        driver = read_driver(fs, record, self.warnings)
        firmware = read_firmware(fs, record, self.warnings)
        toolkit = read_toolkit(fs, read_cann_install_record(fs, self.warnings), self.warnings)
        release = self.params['vllm_ascend_version']
        return dict(driver=(driver or {}).get('version'), firmware=(firmware or {}).get('version'),
                    cann=(toolkit or {}).get('version'), vllm_ascend=release[1:] if release and release[0] in 'vV' else release,
                    waiver=self.params['compat_waiver'])

    def npu_smi(self):
        """(info, error, error codes by NPU)."""
        npu_smi = self.tool('npu-smi', 'npu_smi_path', NPU_SMI_FALLBACK_PATHS)
        if not npu_smi:
            return None, 'npu-smi was not found (neither in PATH nor as %s)' % ' or '.join(NPU_SMI_FALLBACK_PATHS), {}

        def run(args):
            return self.runner.run([npu_smi] + args)

        try:
            info = read_npu_smi_info(run, self.warnings)
        except NpuSmiFailure as failure:
            return None, failure.msg, {}
        codes = {}
        for npu_id in sorted(set(chip['npu_id'] for chip in info['chips'] if chip.get('health') != 'OK'
                                 and chip.get('npu_id') is not None)):
            result = run(['info', '-t', 'health', '-i', str(npu_id)])
            if result.rc == 0:
                codes[npu_id] = _doctor.health_error_codes(parse_npu_smi_key_values(result.stdout))
        return info, None, codes

    def units(self, engine_unit):
        """({unit: properties}, error) of the service's unit and the engine's."""
        systemctl = self.module.get_bin_path('systemctl')
        if not systemctl:
            return {}, 'systemctl was not found: is this a systemd host?'
        units = [self.unit] + ([engine_unit] if engine_unit else [])
        result = self.runner.run([systemctl, 'show', '--property=' + UNIT_PROPERTIES] + units)
        if result.rc != 0:
            return {}, 'systemctl show failed (%s)' % _describe(result)
        blocks = _doctor.parse_systemctl_show(result.stdout)
        return dict(zip(units, blocks)), None

    def cgroup_pids(self, control_group):
        """The PIDs of the control group and its children, cgroup v2 (unified) or v1 (the systemd hierarchy)."""
        pids = set()
        if not control_group:
            return pids
        top = self.params['cgroup_path']
        for base in (top, os.path.join(top, 'unified'), os.path.join(top, 'systemd'), os.path.join(top, 'pids')):
            directory = os.path.join(base, control_group.lstrip('/'))
            for dirpath, _dirs, files in os.walk(directory):
                if 'cgroup.procs' in files:
                    text = _read(os.path.join(dirpath, 'cgroup.procs')) or ''
                    pids.update(int(word) for word in text.split() if word.isdigit())
            if pids:
                break
        return pids

    def container_pid(self, engine):
        name = self.params['container_name'] or 'vllm-%s' % self.params['service_name']
        program = self.module.get_bin_path(engine if engine != 'containerd' else 'nerdctl')
        if not program:
            return None
        result = self.runner.run([program, 'inspect', '--format', '{{.State.Pid}}', name])
        text = result.stdout.strip()
        return int(text) if result.rc == 0 and text.isdigit() and int(text) > 0 else None

    @staticmethod
    def ancestors(pid, limit=64):
        """The parent, grandparent, ... of ``pid`` from PROC/<pid>/stat (up to init)."""
        chain = []
        while len(chain) < limit:
            stat = _read(os.path.join(PROC, str(pid), 'stat'))
            if not stat or ')' not in stat:
                break
            fields = stat.rsplit(')', 1)[1].split()
            try:
                pid = int(fields[1])
            except (IndexError, ValueError):
                break
            if pid <= 1:
                break
            chain.append(pid)
        return chain

    def tuning(self):
        root = RootFS(self.params['root'])
        sysctl_text = root.read(self.params['sysctl_file'], self.warnings) if root.exists(self.params['sysctl_file']) else None
        tmpfiles_text = (root.read(self.params['tmpfiles_file'], self.warnings)
                         if root.exists(self.params['tmpfiles_file']) else None)
        persisted_sysctl = _doctor.parse_sysctl_conf(sysctl_text) if sysctl_text is not None else None
        persisted_sys = _doctor.parse_tmpfiles_writes(tmpfiles_text) if tmpfiles_text is not None else None
        expected_sysctl = dict((key, str(value)) for key, value in self.params['expected_sysctl'].items())
        expected_sys = dict((key, str(value)) for key, value in self.params['expected_sys'].items())
        live = {'sysctl': {}, 'sys': {}}
        proc = self.params['proc_path']
        for key in set(persisted_sysctl or {}) | set(expected_sysctl):
            text = _read(os.path.join(proc, 'sys', key.replace('.', '/')))
            live['sysctl'][key] = ' '.join(text.split()) if text is not None else None
        sysfs = self.params['sysfs_path']
        for path in set(persisted_sys or {}) | set(expected_sys):
            relative = path[len('/sys/'):] if path.startswith('/sys/') else path.lstrip('/')
            for found in sorted(glob.glob(os.path.join(sysfs, relative))):
                text = _read(found)
                if text is not None:
                    live['sys'][os.path.relpath(found, sysfs)] = _doctor.sysfs_value(text)
        meminfo = _doctor.parse_meminfo(_read(os.path.join(proc, 'meminfo')))
        return _doctor.tuning_drift(live, persisted_sysctl, persisted_sys, expected_sysctl, expected_sys, meminfo,
                                    {'sysctl': self.params['sysctl_file'], 'tmpfiles': self.params['tmpfiles_file']})

    def journal(self):
        since = self.params['journal_since']
        journalctl = self.module.get_bin_path('journalctl')
        if not journalctl:
            return _doctor.scan_journal([], self.unit, since, error='journalctl was not found')
        result = self.runner.run([journalctl, '-u', self.unit, '--since', since, '-o', 'cat', '--no-pager', '-q',
                                  '-n', str(self.params['journal_lines'])])
        if result.rc != 0:
            return _doctor.scan_journal([], self.unit, since, error='journalctl failed (%s)' % _describe(result))
        return _doctor.scan_journal(result.stdout.splitlines(), self.unit, since)

    def network(self, info):
        if not self.params['check_network']:
            return _doctor.check_network(False, {})
        hccn_tool = self.tool('hccn_tool', 'hccn_tool_path', HCCN_TOOL_FALLBACK_PATHS)
        if not hccn_tool:
            return _doctor.check_network(True, {}, error='hccn_tool was not found (neither in PATH nor as %s)'
                                         % ' or '.join(HCCN_TOOL_FALLBACK_PATHS))
        devices = self.params['network_devices']
        if devices is None:
            if info is None:
                return _doctor.check_network(True, {}, error='npu-smi did not list the NPUs; set doctor_network_devices')
            devices = list(range(len(info['chips'])))
        states = {}
        for device in devices:
            state = {}
            for option, key, label in (('-net_health', 'net_health', 'net health'), ('-link', 'link', 'link')):
                result = self.runner.run([hccn_tool, '-i', str(device), option, '-g'])
                if result.rc != 0:
                    state['error'] = 'hccn_tool -i %s %s -g failed (%s)' % (device, option, _describe(result))
                state[key] = parse_status(result.stdout, label) if result.rc == 0 else None
            states[str(device)] = state
        return _doctor.check_network(True, states)

    # ---------------------------------------------------------------------------------------------- the run

    def run(self):
        findings = []
        versions = self.versions()
        info, npu_error, codes = self.npu_smi()
        mode = self.params['service_mode']
        if mode == 'auto':
            mode = 'container' if info and info['chips'] else 'native'
        versions['mode'] = mode
        cpu_host = info is None and npu_error.startswith('npu-smi was not found') and not versions['driver'] \
            and mode == 'native'
        if not cpu_host:
            findings.append(_doctor.check_versions(**versions))
        engine = self.params['container_engine']
        engine_unit = ENGINE_UNITS.get(engine) if mode == 'container' else None
        units, unit_error = self.units(engine_unit)
        service = units.get(self.unit, {})
        if cpu_host:
            findings.extend(_doctor.cpu_host())
        elif info is None:
            findings.extend(_doctor.npu_smi_unavailable(npu_error))
        else:
            findings.append(_doctor.check_npu_health(info, codes))
            findings.append(_doctor.check_npu_memory(info, self.params['hbm_warn_percent']))
            findings.append(_doctor.check_npu_temperature(info, self.params['temperature_warn_c']))
            pids = _doctor.service_pids_from(service, self.cgroup_pids(service.get('ControlGroup')))
            if mode == 'container' and info['processes'] and engine != 'containerd':
                container = self.container_pid(engine)
                if container:
                    pids.add(container)
            lineage = dict((process['pid'], self.ancestors(process['pid'])) for process in info['processes']
                           if process.get('pid') is not None and process['pid'] not in pids)
            findings.append(_doctor.check_npu_processes(info['processes'], pids, lineage, self.unit))
        findings.append(self.tuning())
        if mode == 'container':
            if engine == 'podman':
                findings.append(_doctor.check_container_runtime(mode, engine, found=bool(self.module.get_bin_path('podman'))))
            else:
                engine_props = units.get(engine_unit, {})
                findings.append(_doctor.check_container_runtime(
                    mode, engine, engine_props, found=engine_props.get('LoadState') != 'not-found' and not unit_error))
        else:
            findings.append(_doctor.check_container_runtime(mode, engine))
        findings.append(_doctor.check_service(self.unit, service, unit_error))
        findings.append(self.journal())
        findings.append(self.network(info))
        findings = _doctor.order(findings)
        return dict(changed=False, status=_doctor.overall(findings), findings=findings, mode=mode)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            service_name=dict(type='str', default='vllm'),
            service_mode=dict(type='str', default='auto', choices=['auto', 'native', 'container']),
            container_engine=dict(type='str', default='docker', choices=['docker', 'podman', 'containerd']),
            container_name=dict(type='str'),
            vllm_ascend_version=dict(type='str'),
            compat_waiver=dict(type='dict'),
            root=dict(type='path', default='/'),
            proc_path=dict(type='path', default='/proc'),
            sysfs_path=dict(type='path', default='/sys'),
            cgroup_path=dict(type='path', default='/sys/fs/cgroup'),
            sysctl_file=dict(type='path', default='/etc/sysctl.d/90-kunpeng-ascend-vllm.conf'),
            tmpfiles_file=dict(type='path', default='/etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf'),
            expected_sysctl=dict(type='dict', default={}),
            expected_sys=dict(type='dict', default={}),
            temperature_warn_c=dict(type='int', default=85),
            hbm_warn_percent=dict(type='float', default=97.0),
            journal_since=dict(type='str', default='1 hour ago'),
            journal_lines=dict(type='int', default=5000),
            check_network=dict(type='bool', default=False),
            network_devices=dict(type='list', elements='int'),
            npu_smi_path=dict(type='path'),
            hccn_tool_path=dict(type='path'),
            timeout=dict(type='int', default=30),
        ),
        # Only reads, so check mode runs every check.
        supports_check_mode=True,
    )
    if module.params['journal_lines'] < 1:
        module.fail_json(msg='journal_lines must be 1 or more, not %d' % module.params['journal_lines'])
    doctor = Doctor(module)
    result = doctor.run()
    doctor.warnings.emit(module.warn)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
