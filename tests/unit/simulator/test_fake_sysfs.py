# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Tests of tests/simulator/fake_sysfs.py: the NPUs' PCI functions and NUMA nodes of a simulated node, as the
collection's sysfs reader sees them and as the simulated npu-smi names them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _ascend_files
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import SIMULATOR, simulator_module

fake_sysfs = simulator_module('fake_sysfs', 'fake_sysfs.py')


@pytest.mark.parametrize('profile', ['910b-8', 'a3-16', '310p-duo'])
def test_fake_sysfs_matches_the_simulated_npu_smi(tmp_path, profile):
    """The bus ids of the fake sysfs are those the simulated npu-smi prints, so the two can be joined."""
    ascend_sim = simulator_module('ascend_sim', 'ascend-sim')
    sim_buses = list(dict.fromkeys(chip['bus_id'].lower() for chip in ascend_sim.default_chips(profile)))
    written = fake_sysfs.write_sysfs(str(tmp_path), profile)
    assert written == sim_buses
    devices = _ascend_files.scan_npu_devices(_ascend_files.RootFS(str(tmp_path)))
    assert sorted(device['bus_id'] for device in devices) == sorted(sim_buses)
    assert {device['device'] for device in devices} == {ascend_sim.PROFILE_SPECS[profile]['pci_device_id'].lower()}
    by_bus = {device['bus_id']: device['numa_node'] for device in devices}
    half = len(sim_buses) // 2
    assert [by_bus[bus] for bus in sim_buses] == [0] * half + [1] * half


@pytest.mark.parametrize('profile', ['910b-8', 'a3-16', '310p-duo'])
def test_fake_sysfs_lists_every_numa_cpu_among_the_possible_ones(tmp_path, profile):
    """The NUMA CPU lists are read against the tree's own CPU count, not the 8192 fallback, and all fit in it."""
    fake_sysfs.write_sysfs(str(tmp_path), profile)
    warnings = []
    sysfs = _ascend_files.RootFS(str(tmp_path))
    count = _ascend_files.possible_cpu_count(sysfs, warnings.append)
    assert count == {'910b-8': 192, 'a3-16': 160, '310p-duo': 96}[profile]
    for cpulist in fake_sysfs.node_cpulists(profile).values():
        assert max(_ascend_files.expand_cpulist(cpulist, count)) < count
    assert warnings == []


def test_fake_sysfs_cli(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(SIMULATOR, 'fake_sysfs.py'), '--out', str(tmp_path), '--profile', '910b-8'],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30, check=False)
    assert (proc.returncode, proc.stderr) == (0, '')
    assert proc.stdout.split() == ['0000:c1:00.0', '0000:c2:00.0', '0000:81:00.0', '0000:82:00.0',
                                   '0000:01:00.0', '0000:02:00.0', '0000:41:00.0', '0000:42:00.0']
    with open(str(tmp_path / 'bus/pci/devices/0000:41:00.0/numa_node')) as numa_node:
        assert numa_node.read() == '1\n'
    with open(str(tmp_path / 'devices/system/node/node0/cpulist')) as cpulist:
        assert cpulist.read() == '0-95\n'
