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
    compatibility set (with the site's rows, O(compat_site_rows)) as the vllm_service role's preflight does; a
    failure names the row that fits the driver."
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
    warn. C(restart_storm): C(Result) C(start-limit-hit) (systemd gave up restarting the unit) fails, a unit waiting to
    be restarted after a failure warns; both with C(NRestarts), C(StartLimitBurst) and the journal's last 5 failure
    lines. C(journal): C(journalctl -u UNIT --since SINCE -o cat), at most O(journal_lines) lines, each matched
    against the catalogue of known vLLM-Ascend serving failures (HCCL set-up failures and timeouts, EJ0001, NPUs held
    or not visible, missing driver libraries, CANN and torch_npu mismatches, out of memory on the NPU or the host,
    the port in use, quantization mismatches, corrupt weights, engine start failures, nan/inf and more; look-alike
    lines such as torch_npu's HCCL execution-timeout setting warning are not reported). A C(fail) entry fails the
    check, C(warn) entries alone (nan/inf, a c10d rendezvous still waiting) warn; the summary names the entries found,
    the fix joins theirs, at most 3 matching lines of each are kept."
  - "C(network) (only with O(check_network)): C(hccn_tool -i N -net_health -g), C(-link -g) and C(-tls -g) per NPU
    NIC; a NIC whose health is not C(Success) or link not C(UP) fails, so does a TLS certificate or CRL past its end
    time while TLS is on; one that expires within O(tls_warn_days) days (or that hccn_tool calls near expiration)
    warns."
  - Every command runs under coreutils C(timeout) (O(timeout)); a tool that is missing or fails is a finding, not a
    module failure.
  - A host with neither an NPU driver nor npu-smi whose service runs natively is a CPU host (vLLM's CPU build);
    the version and NPU checks are V(skipped) there.
  - "What the service is comes from the host: the deployment record the vllm_service role writes
    (C(/etc/kunpeng-ascend-vllm/services/NAME.json)) gives the service's name, mode, container engine and name, and
    vllm-ascend release whenever the matching option is not set. Without O(service_name) the one service recorded is
    checked (several recorded: the module fails, naming them); without any record the service is C(vllm)."
  - "What it reads is confined to the places it documents: the record only in its directory; O(sysctl_file) only
    in C(/etc/sysctl.d), C(/run/sysctl.d), C(/usr/local/lib/sysctl.d), C(/usr/lib/sysctl.d) or C(/lib/sysctl.d)
    and O(tmpfiles_file) only in the tmpfiles.d directories of the same places (under O(root), links resolved
    inside it); O(expected_sysctl) keys are sysctl names read under O(proc_path)C(/sys); O(expected_sys) keys are
    paths under C(/sys) (globs allowed, no C(..)) and each match must resolve inside O(sysfs_path). Inputs outside
    these rules fail the module, naming the option; a match or file that resolves outside is a warning and is not
    read."
  - "Unit names are checked (systemd's characters, no leading C(-)) and given to C(systemctl show) after C(--) and
    to journalctl as C(--unit=NAME)."
  - "Compliance evidence, in RV(compliance) beside the findings (they do not change RV(status)): C(secure_boot) (the
    EFI variable C(SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c) under O(sysfs_path)C(/firmware/efi/efivars), else
    C(mokutil --sb-state); no C(/sys/firmware/efi) is a legacy BIOS boot and fails), C(offline_routes) (with
    O(site_offline), a route to any of O(public_addresses) fails), C(tls_key) (the TLS key the deployment record
    names - a regular file of root that no one else may read or write; a service without TLS fails),
    C(model_manifest) (the served model and the SHA-256 of its C(SHA256SUMS) against the current known good of the
    local fact C(/etc/ansible/facts.d/kunpeng_ascend_vllm_known_good.fact); another model or digest fails)."
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
    description:
      - Name of the vLLM service (the vllm_service role's C(vllm_service_name)); its unit is C(NAME.service).
      - Default the one service recorded on the host; none recorded, V(vllm).
    type: str
  service_mode:
    description:
      - How the service runs. V(auto) is V(container) when npu-smi lists NPUs, else V(native), as the vllm_service
        role decides.
      - Default the mode recorded on the host, else V(auto).
    type: str
    choices: [auto, native, container]
  container_engine:
    description:
      - The engine of container mode; its service is checked.
      - Default the engine recorded on the host, else V(docker).
    type: str
    choices: [docker, podman, containerd]
  container_name:
    description: Name of the service's container; default the one recorded, else C(vllm-NAME), as the vllm_service role
      names it.
    type: str
  vllm_ascend_version:
    description:
      - The vllm-ascend release the service runs, such as V(0.13.0) (a leading V(v) is ignored).
      - Default the release recorded on the host; when neither says, the C(versions) check warns that the fit is
        unknown.
    type: str
  compat_waiver:
    description:
      - The waiver the service runs under outside the compatibility set (C(ascend_compat_waiver)) - C(reason),
        C(expires) (YYYY-MM-DD) and optionally C(covers), as the
        P(kunpeng_ascend.vllm.ascend_compat#filter) filter reads it, checked on the host's date.
      - A combination it covers is a warning naming the reason and the expiry, not a failure; a void or expired
        waiver waives nothing.
    type: dict
  compat_site_rows:
    description:
      - The rows the site adds to the compatibility set, or puts in place of the row of their release (the inventory
        variable C(ascend_compat_site_rows), which the doctor role passes) - each a dict in the format of the
        built-in rows, C(vllm_ascend), C(vllm) and C(cann) required (see
        P(kunpeng_ascend.vllm.ascend_compat#filter) and C(playbooks/compat_rows.yml), which prints them).
      - Checked as the built-in rows are - a malformed row fails the module, naming it as
        C(ascend_compat_site_rows[N]) and its key. A finding that rests on a site's row says so, naming it
        "vllm-ascend VERSION (site row)".
    type: list
    elements: dict
    default: []
  root:
    description: Root of the file system the version files, the deployment record and the persisted tuning files are
      read under (tests).
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
    description: The sysctl.d file of the os_tuning role (C(os_tuning_sysctl_file)); absent is no error. Only a C(.conf)
      file directly in a sysctl.d directory (see the description).
    type: path
    default: /etc/sysctl.d/90-kunpeng-ascend-vllm.conf
  tmpfiles_file:
    description: The tmpfiles.d file of the os_tuning role (C(os_tuning_tmpfiles_file)); absent is no error. Only a
      C(.conf) file directly in a tmpfiles.d directory (see the description).
    type: path
    default: /etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf
  expected_sysctl:
    description: "Expected sysctl values, C({key: value}) with sysctl names as keys (words joined by dots); they win
      over the persisted file."
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
  tls_warn_days:
    description: A NIC's TLS certificate or CRL that expires within this many days warns (C(network) check).
    type: int
    default: 30
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
  site_offline:
    description:
      - The site is declared offline (its data kept local) - the C(offline_routes) compliance finding fails when the
        node's routing table has a route to any of O(public_addresses); without it that finding is V(unknown), with
        the routes as evidence.
    type: bool
    default: false
  public_addresses:
    description:
      - The public IP addresses whose route C(ip -j route get) looks up (the kernel's table only; nothing is sent to
        them); default well-known public resolvers (1.1.1.1, 8.8.8.8, 114.114.114.114, 2400:3200::1,
        2001:4860:4860::8888). Private, loopback and reserved addresses are refused.
    type: list
    elements: str
  ip_path:
    description: Path of C(ip) (iproute2); default found in E(PATH), then C(/usr/sbin/ip), C(/sbin/ip).
    type: path
  mokutil_path:
    description: Path of C(mokutil), asked for the Secure Boot state only when the EFI variable cannot be read;
      default found in E(PATH), then C(/usr/bin/mokutil), C(/usr/sbin/mokutil).
    type: path
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
    compat_site_rows: "{{ ascend_compat_site_rows | default([]) }}"
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
    C(npu_processes), C(tuning), C(container_runtime), C(service), C(restart_storm), C(journal), C(network).
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
compliance:
  description: The compliance findings, in the order C(secure_boot), C(offline_routes), C(tls_key), C(model_manifest).
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The finding's name.
      type: str
      sample: tls_key
    status:
      description: V(pass), V(fail) or V(unknown) (the host did not show enough to tell).
      type: str
      sample: pass
    summary:
      description: One sentence saying what was found.
      type: str
      sample: "the TLS key /etc/kunpeng-ascend-vllm/tls/vllm/key.pem is file, owner root:root, mode 0600"
    evidence:
      description: What was seen, as data.
      type: dict
    fix:
      description: What to do; null on a pass.
      type: str
mode:
  description: The service mode the checks assumed (V(native) or V(container)).
  returned: always
  type: str
  sample: container
service:
  description: The service checked - C(name), C(unit), C(engine) (container mode), C(vllm_ascend) and the deployment
    C(record) read from the host (null when there is none).
  returned: always
  type: dict
  sample: {name: vllm, unit: vllm.service, engine: null, vllm_ascend: 0.13.0, record: null}
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _doctor, _doctor_host
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner, locate_executable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import with_site_rows
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import NPU_SMI_FALLBACK_PATHS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap

# The tools whose path an option may give, and where else they are looked for.
TOOLS = {'npu-smi': ('npu_smi_path', NPU_SMI_FALLBACK_PATHS),
         'hccn_tool': ('hccn_tool_path', _doctor_host.HCCN_TOOL_FALLBACK_PATHS),
         'ip': ('ip_path', ('/usr/sbin/ip', '/sbin/ip')),
         'mokutil': ('mokutil_path', ('/usr/bin/mokutil', '/usr/sbin/mokutil'))}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            service_name=dict(type='str'),
            service_mode=dict(type='str', choices=['auto', 'native', 'container']),
            container_engine=dict(type='str', choices=['docker', 'podman', 'containerd']),
            container_name=dict(type='str'),
            vllm_ascend_version=dict(type='str'),
            compat_waiver=dict(type='dict'),
            compat_site_rows=dict(type='list', elements='dict', default=[]),
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
            tls_warn_days=dict(type='int', default=30),
            npu_smi_path=dict(type='path'),
            hccn_tool_path=dict(type='path'),
            timeout=dict(type='int', default=30),
            site_offline=dict(type='bool', default=False),
            public_addresses=dict(type='list', elements='str'),
            ip_path=dict(type='path'),
            mokutil_path=dict(type='path'),
        ),
        # Only reads, so check mode runs every check.
        supports_check_mode=True,
    )
    params = module.params
    problems = _doctor.check_inputs(params)
    if problems:
        module.fail_json(msg='; '.join(problems))
    # The compatibility set with the site's rows, which check_inputs found well formed.
    rows = with_site_rows(params['compat_site_rows'])
    warnings = WarningCap()
    runner = CommandRunner(module, params['timeout'])

    def find(name):
        option, fallbacks = TOOLS.get(name, (None, ()))
        try:
            return locate_executable(module, name, params[option] if option else None, option, fallbacks)
        except ValueError as error:
            warnings(str(error))
            return None

    reader = _doctor_host.HostReader(runner.run, find, params['root'], params['proc_path'], params['sysfs_path'],
                                     params['cgroup_path'], warnings)
    try:
        result = _doctor_host.diagnose(reader, params, time.time(), rows)
    except ValueError as error:
        module.fail_json(msg=str(error))
    warnings.emit(module.warn)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
