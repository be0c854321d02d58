# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Scenario doctor's verify, from pytest (pytest-ansible's ansible_module fixture on the scenario's node): the healthy
node, the compliance evidence, then each fault planted, diagnosed by module ascend_doctor and restored, one test
case each; the last fault (an HCCL timeout in the journal, which cannot be taken back) also diagnosed by
playbooks/doctor.yml run as users run it: rc 2, the failing check named, the fleet summary broken.

Run by verify.yml: python -m pytest -c molecule/pytest.ini molecule/doctor/test_doctor_node.py
--inventory "$MOLECULE_INVENTORY_FILE" --ansible-host-pattern x86-doctor.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

HOST = 'x86-doctor'
STATE = '/etc/ascend-sim/state.json'
TLS_KEY = '/etc/kunpeng-ascend-vllm/tls/vllm/key.pem'
DOCTOR = 'kunpeng_ascend.vllm.ascend_doctor'
# The module's options of a full run on this node: planted /proc and /sys trees, the NPU network of NPUs 0 and 1.
FULL_RUN = {'proc_path': '/root/doctor-proc', 'sysfs_path': '/root/doctor-sys', 'check_network': True,
            'network_devices': [0, 1]}
COMPLIANCE = ['secure_boot', 'offline_routes', 'tls_key', 'model_manifest']


def _edit_state(python):
    return ("python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); %s; "
            "json.dump(s, open(sys.argv[1], \"w\"))' %s" % (python, STATE))


# Each fault: how it is planted and restored (shell), the check that must be the only one not ok, its status, the
# node's verdict, and words of the summary and the fix. In this order: the journal's cannot be taken back.
FAULTS = [
    dict(name='unhealthy chip', check='npu_health', status='fail', overall='broken',
         plant="/usr/local/bin/ascend-sim set chips.3.health=Alarm 'chips.3.error_code=\"80E18005\"'",
         restore='/usr/local/bin/ascend-sim set chips.3.health=OK chips.3.error_code=null',
         summary='NPU 3 chip 0: Alarm (error code 80E18005)', fix='npu-smi info -t health -i 3'),
    dict(name='foreign process on an NPU', check='npu_processes', status='fail', overall='broken',
         plant=_edit_state('s["processes"].append({"npu_id": 1, "chip_id": 0, "pid": 999999, "name": "rogue", '
                           '"memory_mb": 1000})'),
         restore=_edit_state('s["processes"] = [p for p in s["processes"] if p["pid"] != 999999]'),
         summary='999999 (rogue, NPU 1)', fix='kill 999999'),
    dict(name='tuning drift', check='tuning', status='warn', overall='degraded',
         plant='echo 60 > /root/doctor-proc/sys/vm/swappiness', restore='echo 0 > /root/doctor-proc/sys/vm/swappiness',
         summary='vm.swappiness is 60, /etc/sysctl.d/90-kunpeng-ascend-vllm.conf says 0', fix='sysctl --system'),
    dict(name='driver too old for the vllm-ascend release', check='versions', status='fail', overall='broken',
         plant="cp -p /usr/local/Ascend/driver/version.info /root/version.info.orig && "
               "sed -i 's/^\\( *Version=\\).*/\\123.0.0/' /usr/local/Ascend/driver/version.info",
         restore='mv /root/version.info.orig /usr/local/Ascend/driver/version.info',
         summary='vllm-ascend 0.7.3 does not fit NPU driver 23.0.0', fix='upgrade the NPU driver'),
    dict(name='container engine down', mode='container', check='container_runtime', status='fail', overall='broken',
         plant='systemctl stop docker.service', restore='systemctl start docker.service',
         summary='docker.service is not running', fix='systemctl enable --now docker.service'),
    dict(name='service down', check='service', status='fail', overall='broken',
         plant='systemctl stop vllm.service', restore='systemctl start vllm.service',
         summary='vllm.service is not running: inactive (dead)', fix='systemctl restart vllm.service'),
    dict(name='HCCL timeout in the journal', check='journal', status='fail', overall='broken',
         plant="printf 'MESSAGE=[rank0]: RuntimeError: EI0002: HCCL wait execution of the Notify register times "
               "out\\nOBJECT_SYSTEMD_UNIT=vllm.service\\n' | logger --journald",
         restore=None, summary='hccl_timeout x1', fix='HCCL_CONNECT_TIMEOUT'),
]


@pytest.fixture
def on_node(ansible_module):
    """Run a module on the node: its result, a dict; a failed module fails the test with its message."""
    def run(module, **args):
        result = dict(getattr(ansible_module, module)(**args).contacted[HOST])
        assert not result.get('failed'), '%s failed: %s' % (module, result.get('msg'))
        return result
    return run


def not_ok(report):
    return [finding for finding in report['findings'] if finding['status'] in ('warn', 'fail')]


def test_the_healthy_node_passes_every_check(on_node):
    report = on_node(DOCTOR, **FULL_RUN)
    assert (report['status'], report['changed'], report['mode']) == ('healthy', False, 'native')
    assert report['service']['unit'] == 'vllm.service' and report['service']['vllm_ascend'] == '0.7.3'
    assert report['service']['record']['npus'] == [0]
    # No engine runs in native mode: its check is the one not ok.
    assert [finding['check'] for finding in report['findings'] if finding['status'] != 'ok'] == ['container_runtime']


def test_compliance_passes_then_fails_on_a_loose_key_and_a_real_route(on_node):
    compliant = on_node(DOCTOR, sysfs_path='/root/doctor-sys', site_offline=True, ip_path='/root/doctor-ip')
    on_node('ansible.builtin.file', path=TLS_KEY, mode='0644')
    try:
        # The container's real routing table (podman's default route): declared offline, that is a route out.
        uncompliant = on_node(DOCTOR, sysfs_path='/root/doctor-sys', site_offline=True)
    finally:
        on_node('ansible.builtin.file', path=TLS_KEY, mode='0600')
    assert [item['id'] for item in compliant['compliance']] == COMPLIANCE
    assert [item['status'] for item in compliant['compliance']] == ['pass', 'pass', 'pass', 'unknown']
    # The stand-in service never passed vllm_service's gate: no known good to hold its model against.
    assert 'no known good is recorded' in compliant['compliance'][3]['summary']
    assert [item['status'] for item in uncompliant['compliance']] == ['pass', 'fail', 'fail', 'unknown']
    assert 'gateway' in uncompliant['compliance'][1]['evidence']['routes']['1.1.1.1']
    assert 'mode 0644' in uncompliant['compliance'][2]['summary']
    assert 'chmod 0600 %s' % TLS_KEY in uncompliant['compliance'][2]['fix']
    # Evidence, not health: the verdict stays what the health findings say.
    assert uncompliant['status'] == compliant['status']


@pytest.mark.parametrize('fault', FAULTS, ids=[fault['name'] for fault in FAULTS])
def test_each_fault_is_named_with_its_status_and_fix(on_node, fault):
    on_node('ansible.builtin.shell', cmd=fault['plant'])
    try:
        report = on_node(DOCTOR, service_mode=fault.get('mode', 'native'), container_engine='docker', **FULL_RUN)
    finally:
        if fault['restore']:
            on_node('ansible.builtin.shell', cmd=fault['restore'])
    problems = not_ok(report)
    assert [problem['check'] for problem in problems] == [fault['check']], json.dumps(problems)
    assert (report['status'], problems[0]['status']) == (fault['overall'], fault['status'])
    assert fault['summary'] in problems[0]['summary'] and fault['fix'] in problems[0]['fix']


def test_the_playbook_fails_on_the_journal_fault_and_says_so(tmp_path):
    """playbooks/doctor.yml as users run it, after the journal's fault above: rc 2, the check named, the reports."""
    project = os.environ['MOLECULE_PROJECT_DIRECTORY']
    run = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', os.environ['MOLECULE_INVENTORY_FILE'],
         os.path.join(project, 'playbooks', 'doctor.yml'), '-e', 'doctor_report_dir=%s' % tmp_path],
        capture_output=True, text=True, check=False, timeout=900)
    shown = '\n'.join(run.stdout.splitlines()[-30:] + run.stderr.splitlines())
    assert run.returncode == 2, shown
    assert 'x86-doctor is broken: failing journal' in run.stderr, shown
    assert 'FAIL    journal' in run.stdout, shown
    (fleet_path,) = glob.glob(str(tmp_path / '*' / 'fleet.json'))
    (host_path,) = glob.glob(str(tmp_path / '*' / ('%s.json' % HOST)))
    with open(fleet_path) as handle:
        fleet = json.load(handle)
    with open(host_path) as handle:
        compliance = json.load(handle)['compliance']
    assert fleet['status'] == 'broken' and fleet['hosts'][HOST]['failing'] == ['journal']
    assert fleet['hosts'][HOST]['compliance_failing'] == []
    # The JSON report carries the compliance findings: the site offline, no route, secure boot, the key.
    assert [item['id'] for item in compliance] == COMPLIANCE
    assert [item['status'] for item in compliance] == ['pass', 'pass', 'pass', 'unknown']
    assert compliance[0]['evidence']['variable'] == 1 and compliance[1]['evidence']['declared_offline']
    assert compliance[2]['evidence']['key']['mode'] == 0o600
