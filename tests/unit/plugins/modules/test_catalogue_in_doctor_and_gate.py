# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The failures of issue 32 (HCCL's own lines for a listen port in use and a socket never set up, torch's c10d store
timeout on every rank, an NPU occupied by another container) named by both users of the catalogue, each run as a
module against the fake host with a real sample as the unit's journal: ascend_doctor's journal check fails with them,
and vllm_endpoint_check's failure message says what the journal shows and what to do (where it said nothing before
these entries)."""

from __future__ import annotations

import functools

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _doctor_host
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _failure_catalogue as catalogue
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import vllm_endpoint_check
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FailJson, load_fixture, run_main
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__vllm_endpoint import (
    KEY,
    MODEL,
    FakeClock,
    closed_port,
)
# The doctor's healthy node, as its module tests build it.
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.modules.test_ascend_doctor import (
    ACTIVE,
    HCCN_TOOL,
    IDLE_910B4,
    JOURNAL as DOCTOR_JOURNAL,
    JOURNALCTL,
    NPU_SMI,
    SHOW as DOCTOR_SHOW,
    SYSCTL,
    SYSTEMCTL,
    TMPFILES,
    run_module as run_doctor,
    statuses,
)

GATE_SHOW = (SYSTEMCTL, 'show', '--property=ActiveState,SubState,NRestarts,MainPID', '--', 'vllm')
GATE_JOURNAL_LINES = 100
GATE_JOURNAL = (JOURNALCTL, '-u', 'vllm', '--no-pager', '-n', str(GATE_JOURNAL_LINES))
FAILED = 'ActiveState=failed\nSubState=failed\nNRestarts=5\nMainPID=0\n'

# Each sample of issue 32 and the entries it shows, in the catalogue's order.
SAMPLES = {
    'serve-log_vllm-ascend-1955_HCCL-listen-16666-fail_wait-socket-establish-timeout.txt': [
        'hccl_port_in_use', 'hccl_socket_timeout'],
    'serve-log_vllm-ascend-2248_c10d-waitForInput-timed-out-every-rank.txt': ['c10d_store_timeout'],
    'serve-log_vllm-ascend-2542_310P-second-service_halGetDeviceInfo-ret87_soc-version-507008.txt': ['npu_occupied'],
}


def journal_of(sample):
    """The sample as the unit's journal (``-o cat``: the service's own lines)."""
    return load_fixture(sample)


@pytest.fixture
def doctor_host(fake_host, tmp_path, monkeypatch):
    """The doctor's healthy native node (test_ascend_doctor's ``host``: driver and firmware files, an idle 8-NPU
    table, the service active, the tuning as persisted), its journal set by each test."""
    for name, path in (('npu-smi', NPU_SMI), ('systemctl', SYSTEMCTL), ('journalctl', JOURNALCTL)):
        fake_host.on_path[name] = path
    fake_host.executables.update([NPU_SMI, HCCN_TOOL])
    fake_host.write('/usr/local/Ascend/driver/version.info', load_fixture('driver-version.info_24.1.rc1_mindcluster-doc.txt'))
    fake_host.write('/usr/local/Ascend/firmware/version.info',
                    load_fixture('firmware-version.info_7.1.0.11.220_mindcluster-doc.txt'))
    fake_host.write('/etc/sysctl.d/90-kunpeng-ascend-vllm.conf', SYSCTL)
    fake_host.write('/etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf', TMPFILES)
    fake_host.proc = str(tmp_path / 'proc')
    fake_host.cgroup = str(tmp_path / 'cgroup')
    fake_host.write('/sys/vm/nr_hugepages', '1024\n', under=fake_host.proc)
    fake_host.write('/sys/vm/swappiness', '0\n', under=fake_host.proc)
    fake_host.write('/meminfo', 'MemTotal:  1000 kB\nHugePages_Total:    1024\n', under=fake_host.proc)
    fake_host.write('/kernel/mm/transparent_hugepage/enabled', '[always] madvise never\n', under=fake_host.sysfs)
    fake_host.write('/system.slice/vllm.service/cgroup.procs', '4242\n4300\n', under=fake_host.cgroup)
    fake_host.answers[(NPU_SMI, 'info')] = (0, load_fixture(IDLE_910B4), '')
    fake_host.answers[(SYSTEMCTL,) + DOCTOR_SHOW[1:] + ('vllm.service',)] = (0, ACTIVE, '')
    monkeypatch.setattr(_doctor_host, 'PROC', str(tmp_path / 'host-proc'))
    return fake_host


@pytest.mark.parametrize('sample', sorted(SAMPLES))
def test_the_doctor_names_the_failure_and_its_fix(doctor_host, sample):
    doctor_host.answers[(JOURNALCTL,) + DOCTOR_JOURNAL[1:]] = (0, journal_of(sample), '')
    result = run_doctor(doctor_host)
    (journal,) = [item for item in result['findings'] if item['check'] == 'journal']
    # Only the journal is wrong on this node.
    assert [(check, status) for check, status in statuses(result).items() if status not in ('ok', 'skipped')] == [
        ('journal', 'fail')]
    assert result['status'] == 'broken'
    assert list(journal['details']['counts']) == SAMPLES[sample]
    assert journal['details']['causes'] == dict((key, catalogue.ENTRIES[key]['cause']) for key in SAMPLES[sample])
    assert journal['fix'] == ' | '.join(catalogue.ENTRIES[key]['fix'] for key in SAMPLES[sample])
    for key in SAMPLES[sample]:
        assert '%s x' % key in journal['summary']


@pytest.fixture
def gate_host(fake_host):
    """A unit that failed and will not come up by itself, with the sample as its journal (set by each test)."""
    fake_host.on_path.update(systemctl=SYSTEMCTL, journalctl=JOURNALCTL)
    fake_host.answers[GATE_SHOW] = (0, FAILED, '')
    return fake_host


@pytest.mark.parametrize('sample', sorted(SAMPLES))
def test_the_health_gate_names_the_failure_and_its_fix(gate_host, sample):
    # journalctl's default output: each line of the service after its prefix.
    journal = ''.join('Aug 26 03:01:18 node1 vllm[278]: %s\n' % line for line in journal_of(sample).splitlines())
    gate_host.answers[GATE_JOURNAL] = (0, journal, '')
    url = 'http://127.0.0.1:%d' % closed_port()
    clock = FakeClock()
    result = run_main(functools.partial(vllm_endpoint_check.main, clock=clock, sleep=clock.sleep),
                      {'url': url, 'api_key': KEY, 'served_model_name': MODEL, 'timeout': 30, 'interval': 0.1,
                       'unit': 'vllm', 'journal_lines': GATE_JOURNAL_LINES}, FailJson)
    known = catalogue.explain(journal.splitlines())
    assert [item['id'] for item in result['known_failures']] == [item['id'] for item in known] == SAMPLES[sample]
    assert result['known_failures'] == known
    assert result['msg'].endswith('so it will not come up by itself (see unit_journal); %s' % catalogue.describe(known))
    for key in SAMPLES[sample]:
        assert '%s: %s' % (key, catalogue.ENTRIES[key]['cause']) in result['msg']
