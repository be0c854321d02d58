# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_doctor_host: the host reader on planted trees (the deployment record, the persisted files, /proc/sys and /sys
with links that leave them), the argv it gives systemctl, journalctl and hccn_tool, and diagnose's choice of the
service from the record."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _doctor, _doctor_host
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _deployment
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture, make_tree

SYSCTL = '/etc/sysctl.d/90-kunpeng-ascend-vllm.conf'
TMPFILES = '/etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf'
RECORD_DIR = _deployment.RECORD_DIR
# 2026-02-20T00:00:00Z: ten days before the documented CRL's end.
FEB_20_2026 = 1771545600


def record(**values):
    base = {'schema': _deployment.SCHEMA, 'name': 'vllm', 'unit': 'vllm.service', 'mode': 'native',
            'container_engine': None, 'container_name': None, 'image': None, 'vllm_ascend': '0.13.0',
            'endpoint': 'http://127.0.0.1:8000', 'served_model_name': 'tiny', 'model': '/data/models/tiny', 'npus': [0, 1]}
    base.update(values)
    return json.dumps(base)


class Host:
    """Commands answered from ``answers`` (argv tuple -> (rc, stdout, stderr)), every run kept in ``argvs``."""

    def __init__(self, tmp_path, answers=None, tools=None):
        self.root = str(tmp_path / 'root')
        self.proc = str(tmp_path / 'proc')
        self.sysfs = str(tmp_path / 'sys')
        for path in (self.root, self.proc, self.sysfs):
            os.makedirs(path, exist_ok=True)
        self.answers = answers or {}
        self.tools = tools if tools is not None else {'systemctl': '/bin/systemctl', 'journalctl': '/bin/journalctl',
                                                      'hccn_tool': '/bin/hccn_tool'}
        self.argvs = []
        self.warnings = []

    def run(self, argv):
        self.argvs.append(list(argv))
        rc, stdout, stderr = self.answers.get(tuple(argv), (1, '', 'unexpected command'))
        return CommandResult(list(argv), rc, stdout, stderr)

    def reader(self):
        return _doctor_host.HostReader(self.run, self.tools.get, self.root, self.proc, self.sysfs, warn=self.warnings.append,
                                       proc=self.proc)


# --- the deployment record -------------------------------------------------------------------------------------------

def test_the_one_record_is_the_service(tmp_path):
    host = Host(tmp_path)
    make_tree(host.root, {RECORD_DIR + '/vllm.json': record(), RECORD_DIR + '/README': 'not a record'})
    found, error = host.reader().record()
    assert (found['name'], found['vllm_ascend'], found['npus'], error) == ('vllm', '0.13.0', [0, 1], None)
    assert host.reader().record('vllm.service')[0]['name'] == 'vllm'
    assert host.reader().record('other') == (None, None)


def test_several_records_without_a_name_say_which_to_choose(tmp_path):
    host = Host(tmp_path)
    make_tree(host.root, {RECORD_DIR + '/a.json': record(name='a', unit='a.service'),
                          RECORD_DIR + '/b.json': record(name='b', unit='b.service')})
    assert host.reader().record() == (None, '2 services are recorded on this host (a, b, in %s): set service_name '
                                            '(doctor_service_name) to the one to check' % RECORD_DIR)
    assert host.reader().record('b')[0]['unit'] == 'b.service'


@pytest.mark.parametrize('text, why', [
    (record(schema='someone-else/1'), 'its schema is "someone-else/1"'),
    (record(name='other'), 'name is "other", but the file is named after vllm'),
    (record(mode='vm'), 'mode is "vm"'),
    (record(npus=['0']), 'npus is ["0"]'),
    (record(container_name='--privileged'), 'container_name is "--privileged"'),
    ('{"schema": ', 'it is not JSON'),
])
def test_a_record_that_is_not_one_is_a_warning_and_ignored(tmp_path, text, why):
    host = Host(tmp_path)
    make_tree(host.root, {RECORD_DIR + '/vllm.json': text})
    assert host.reader().record() == (None, None)
    assert len(host.warnings) == 1 and why in host.warnings[0]


def test_a_record_linked_out_of_its_directory_is_not_read(tmp_path):
    host = Host(tmp_path)
    make_tree(host.root, {'/etc/shadow': record()}, {RECORD_DIR + '/vllm.json': '/etc/shadow'})
    assert host.reader().record() == (None, None)
    assert host.warnings == ['%s/vllm.json is a link out of %s and is not read' % (RECORD_DIR, RECORD_DIR)]


def test_the_record_written_from_a_plan_reads_back():
    plan = {'name': 'ds', 'unit': 'ds.service', 'mode': 'container', 'engine': 'podman', 'container_name': 'vllm-ds',
            'release': 'v0.13.0', 'url': 'http://127.0.0.1:8000', 'served_model_name': 'deepseek', 'npu_ids': [4, 5],
            'cli': {'image': 'quay.io/ascend/vllm-ascend:v0.13.0'}}
    written = _deployment.record_of(plan, '/data/models/ds')
    assert _deployment.parse_record(json.dumps(written), 'ds') == (written, [])
    assert (written['container_engine'], written['image'], written['npus']) == (
        'podman', 'quay.io/ascend/vllm-ascend:v0.13.0', [4, 5])
    native = _deployment.record_of(dict(plan, mode='native', engine=None, release=''), '/m')
    assert (native['container_engine'], native['container_name'], native['image'], native['vllm_ascend']) == (
        None, None, None, None)
    assert 'secret' not in json.dumps(written).lower() and 'key' not in written
    with pytest.raises(ValueError):
        _deployment.record_path('../etc/x')


# --- tuning: confinement -----------------------------------------------------------------------------------------------

def test_sysctl_is_read_under_proc_sys_only(tmp_path):
    host = Host(tmp_path)
    make_tree(host.proc, {'/sys/vm/swappiness': '10\n', '/secret': 'no\n'}, {'/sys/vm/escape': '../../secret'})
    reader = host.reader()
    assert reader.sysctl('vm.swappiness') == '10'
    assert reader.sysctl('vm.escape') is None
    assert reader.sysctl('../../secret') is None
    assert host.warnings == ['sysctl vm.escape resolves outside %s/sys and is not read' % host.proc,
                             "sysctl '../../secret' is no sysctl name and is not read"]


def test_sys_globs_read_only_what_resolves_inside_sysfs(tmp_path):
    host = Host(tmp_path)
    outside = str(tmp_path / 'outside')
    make_tree(str(tmp_path), {'/outside/scaling_governor': 'secret\n'})
    make_tree(host.sysfs, {'/devices/system/cpu/cpu0/cpufreq/scaling_governor': 'performance\n',
                           '/devices/system/cpu/cpu1/cpufreq/scaling_governor': 'powersave\n',
                           '/devices/real/enabled': 'always [madvise] never\n'},
              {'/devices/system/cpu/cpu2/cpufreq': outside, '/class/thp': '../devices/real'})
    values = host.reader().sys_values('devices/system/cpu/cpu*/cpufreq/scaling_governor')
    assert values == {'devices/system/cpu/cpu0/cpufreq/scaling_governor': 'performance',
                      'devices/system/cpu/cpu1/cpufreq/scaling_governor': 'powersave'}
    assert host.warnings == ['%s/devices/system/cpu/cpu2/cpufreq/scaling_governor resolves to %s/scaling_governor, '
                             'outside %s, and is not read' % (host.sysfs, outside, host.sysfs)]
    # A link that stays inside sysfs (as /sys/class links do) is read.
    assert host.reader().sys_values('class/thp/enabled') == {'class/thp/enabled': 'madvise'}


def test_persisted_files_resolving_out_of_their_directory_are_not_read(tmp_path):
    host = Host(tmp_path)
    make_tree(host.root, {'/etc/shadow': 'vm.swappiness = 1\n', '/etc/sysctl.conf': 'vm.swappiness = 7\n'},
              {SYSCTL: '/etc/shadow', '/etc/sysctl.d/99-sysctl.conf': '../sysctl.conf'})
    reader = host.reader()
    assert reader.persisted(SYSCTL, _doctor.SYSCTL_DIRS) is None
    assert host.warnings == ['%s resolves to /etc/shadow, outside %s, and is not read'
                             % (SYSCTL, ' and '.join(_doctor.SYSCTL_DIRS))]
    # Debian's own link to /etc/sysctl.conf is fine.
    assert reader.persisted('/etc/sysctl.d/99-sysctl.conf', _doctor.SYSCTL_DIRS) == 'vm.swappiness = 7\n'


def test_tuning_compares_only_sys_writes_and_sysctl_names_of_the_files(tmp_path):
    host = Host(tmp_path)
    make_tree(host.root, {SYSCTL: 'vm.swappiness = 0\n../../etc/passwd = x\n',
                          TMPFILES: 'w /sys/kernel/mm/transparent_hugepage/enabled - - - - never\n'
                                    'w /etc/motd - - - - hello\nw /sys/../etc/shadow - - - - x\n'})
    make_tree(host.proc, {'/sys/vm/swappiness': '60\n', '/meminfo': 'MemTotal: 1 kB\n'})
    make_tree(host.sysfs, {'/kernel/mm/transparent_hugepage/enabled': 'always madvise [never]\n', '/etc/motd': 'x\n'})
    result = host.reader().tuning(SYSCTL, TMPFILES, {}, {})
    assert [(item['key'], item['live'], item['expected']) for item in result['details']['compared']] == [
        ('/sys/kernel/mm/transparent_hugepage/enabled', 'never', 'never'), ('vm.swappiness', '60', '0')]
    assert result['status'] == 'warn'
    # sysctl.d takes / for . in names, so the key reads as "......etc.passwd": no name, not compared.
    assert host.warnings == ["%s sets '......etc.passwd', which is no sysctl name; it is not compared" % SYSCTL]


# --- commands ----------------------------------------------------------------------------------------------------------

def test_systemctl_gets_the_units_after_the_options_end_and_journalctl_a_glued_unit(tmp_path):
    show = ('/bin/systemctl', 'show', '--property=' + ','.join(_doctor_host.UNIT_PROPERTIES), '--', 'vllm.service')
    journal = ('/bin/journalctl', '--unit=vllm.service', '--since', '1 hour ago', '-o', 'cat', '--no-pager', '-q', '-n', '10')
    host = Host(tmp_path, {show: (0, 'Id=vllm.service\nNRestarts=2\nMainPID=7\n', ''), journal: (0, 'INFO ok\n', '')})
    units, error = host.reader().units(['vllm.service'])
    assert (units['vllm.service']['NRestarts'], units['vllm.service']['MainPID'], error) == (2, 7, None)
    assert host.reader().journal('vllm.service', '1 hour ago', 10)['status'] == 'ok'
    assert host.argvs == [list(show), list(journal)]
    # A name that is an option never reaches a command.
    with pytest.raises(ValueError):
        host.reader().units(['--all'])
    refused = host.reader().journal('-H x', '1 hour ago', 10)
    assert refused['status'] == 'warn' and 'starts with "-"' in refused['summary']
    assert len(host.argvs) == 2


def test_network_reads_tls_and_warns_before_the_crl_ends(tmp_path):
    answers = {}
    for device in (0, 1):
        answers[('/bin/hccn_tool', '-i', str(device), '-net_health', '-g')] = (0, 'net health status: Success\n', '')
        answers[('/bin/hccn_tool', '-i', str(device), '-link', '-g')] = (0, 'link status: UP\n', '')
    answers[('/bin/hccn_tool', '-i', '0', '-tls', '-g')] = (
        0, load_fixture('hccn_tool-tls-g_dev0_pub-ca1-ca2-crl_crl-near-expiration_hccn-doc.txt'), '')
    host = Host(tmp_path, answers)
    result = host.reader().network([0, 1], FEB_20_2026, 30)
    assert result['status'] == 'warn' and 'device 0: crl expires in 10 day(s)' in result['summary']
    assert result['details']['devices']['1']['tls'] is None  # device 1's -tls -g failed: nothing to judge
    assert host.warnings == []


def test_network_fails_on_an_expired_certificate_whose_status_went_to_stderr(tmp_path):
    # hccn_tool prints the "has expired" status as an error line: here on stderr, with rc 1; the end times decide.
    text = load_fixture('hccn_tool-tls-g_dev3_tls-on_pub-and-crl-expired_BUILT-from-documented-format.txt')
    expired = [line for line in text.splitlines(True) if 'status[2]' in line]
    answers = {('/bin/hccn_tool', '-i', '3', '-net_health', '-g'): (0, 'net health status: Success\n', ''),
               ('/bin/hccn_tool', '-i', '3', '-link', '-g'): (0, 'link status: UP\n', ''),
               ('/bin/hccn_tool', '-i', '3', '-tls', '-g'): (
                   1, ''.join(line for line in text.splitlines(True) if line not in expired), ''.join(expired))}
    host = Host(tmp_path, answers)
    result = host.reader().network([3], FEB_20_2026, 30)
    assert len(expired) == 2 and result['status'] == 'fail'
    assert result['summary'].endswith('device 3: pub cert expired on Thu Jan  2 08:00:00 2025 GMT, crl expired on '
                                      'Wed Feb  5 08:00:00 2025 GMT')


# --- diagnose: which service -------------------------------------------------------------------------------------------

OPTIONS = {'service_name': None, 'service_mode': None, 'container_engine': None, 'container_name': None,
           'vllm_ascend_version': None, 'compat_waiver': None, 'sysctl_file': SYSCTL, 'tmpfiles_file': TMPFILES,
           'expected_sysctl': {}, 'expected_sys': {}, 'temperature_warn_c': 85, 'hbm_warn_percent': 97.0,
           'journal_since': '1 hour ago', 'journal_lines': 10, 'check_network': False, 'network_devices': None,
           'tls_warn_days': 30}


def test_diagnose_takes_the_service_from_the_record(tmp_path):
    show = ('/bin/systemctl', 'show', '--property=' + ','.join(_doctor_host.UNIT_PROPERTIES), '--', 'ds.service',
            'docker.service')
    host = Host(tmp_path, {show: (0, 'Id=ds.service\nActiveState=active\n\nId=docker.service\nActiveState=active\n', '')})
    make_tree(host.root, {RECORD_DIR + '/ds.json': record(name='ds', unit='ds.service', mode='container',
                                                          container_engine='docker', container_name='vllm-ds')})
    result = _doctor_host.diagnose(host.reader(), OPTIONS, FEB_20_2026)
    assert (result['mode'], result['service']['unit'], result['service']['engine'], result['service']['vllm_ascend']) == (
        'container', 'ds.service', 'docker', '0.13.0')
    assert host.argvs[0] == list(show)
    # The inputs win over the record.
    native = _doctor_host.diagnose(host.reader(), dict(OPTIONS, service_mode='native', vllm_ascend_version='v0.9.1'),
                                   FEB_20_2026)
    assert (native['mode'], native['service']['vllm_ascend']) == ('native', '0.9.1')


def test_diagnose_without_a_record_checks_vllm_and_with_several_refuses(tmp_path):
    host = Host(tmp_path, tools={})
    result = _doctor_host.diagnose(host.reader(), OPTIONS, FEB_20_2026)
    assert (result['service']['unit'], result['service']['record']) == ('vllm.service', None)
    make_tree(host.root, {RECORD_DIR + '/a.json': record(name='a', unit='a.service'),
                          RECORD_DIR + '/b.json': record(name='b', unit='b.service')})
    with pytest.raises(ValueError, match='set service_name'):
        _doctor_host.diagnose(host.reader(), OPTIONS, FEB_20_2026)
