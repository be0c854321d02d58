#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: contributors to the kunpeng_ascend.vllm collection
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a fake sysfs tree of a simulated Ascend host, for tests that read NPU PCI devices and NUMA nodes.

Usage:
  fake_sysfs.py --out DIR [--profile 910b-8|a3-16|310p-duo] [--no-numa] [--cpus-of-this-host]

Writes, under DIR (created), what the kernel shows of the profile's NPUs in /sys:
  bus/pci/devices/<bus id>/vendor      0x19e5
  bus/pci/devices/<bus id>/device      0xd802 (910b-8), 0xd803 (a3-16) or 0xd500 (310p-duo)
  bus/pci/devices/<bus id>/class       0x120000 (processing accelerator)
  bus/pci/devices/<bus id>/numa_node   0 or 1 (-1 with --no-numa)
  devices/system/node/node<N>/cpulist  the CPUs of each NUMA node (node0 only with --no-numa)
  devices/system/cpu/possible          every CPU of the profile (readers bound NUMA CPU lists by it)
With --cpus-of-this-host, node 0's CPU list and the possible CPUs are those of the machine it runs on (its
/sys/devices/system/node/node0/cpulist and cpu/possible), and node 1 has none (a CPU-less node, as sysfs shows it):
numactl and the CPU sets then bind a real process to what the tree says of node 0.
Real sysfs makes bus/pci/devices/<bus id> a symlink into devices/pci*/; plain directories are enough for
readers that open the files. Test containers cannot fake /sys, so tests point the code under test at DIR.

The bus ids are the simulator's defaults (tests/simulator/ascend-sim, default_chips): what its npu-smi prints
as Bus-Id, in lower case as sysfs names them, one directory per distinct bus id (the two chips of a 310P Duo
card share one). Two NUMA nodes: the first half of the devices in npu-smi order (NPUs 0-3 of 910b-8) on node 0,
the rest on node 1. The CPU numbers are plausible, not those of a particular server.

Python 3 standard library only; importable (write_sysfs, profile_devices) and runnable.
"""

import argparse
import os
import sys

VENDOR_ID = 0x19e5
NPU_CLASS = 0x120000

# profile -> (PCI device id, bus ids in npu-smi order, CPU list of NUMA node 0, of node 1, all CPUs)
PROFILES = {
    # Atlas 800I A2: 8x 910B4.
    "910b-8": (0xd802, ["0000:c1:00.0", "0000:c2:00.0", "0000:81:00.0", "0000:82:00.0",
                        "0000:01:00.0", "0000:02:00.0", "0000:41:00.0", "0000:42:00.0"],
               "0-95", "96-191", "0-191"),
    # Atlas A3: 8 NPUs x 2 chips, one PCI device per chip.
    "a3-16": (0xd803, ["0000:9d:00.0", "0000:9f:00.0", "0000:99:00.0", "0000:9b:00.0",
                       "0000:95:00.0", "0000:97:00.0", "0000:91:00.0", "0000:93:00.0",
                       "0000:8d:00.0", "0000:8f:00.0", "0000:89:00.0", "0000:8b:00.0",
                       "0000:85:00.0", "0000:87:00.0", "0000:81:00.0", "0000:83:00.0"],
              "0-79", "80-159", "0-159"),
    # Atlas 300I Duo: 4 cards of 2 chips, one bus id per card (x86 host with SMT, hence split lists).
    "310p-duo": (0xd500, ["0000:01:00.0", "0000:03:00.0", "0000:81:00.0", "0000:84:00.0"],
                 "0-23,48-71", "24-47,72-95", "0-95"),
}


def profile_devices(profile, numa=True):
    """The profile's NPU PCI devices as dicts: bus_id, device (int), numa_node (int, -1 without NUMA)."""
    if profile not in PROFILES:
        raise ValueError("unknown profile %r (choose from %s)" % (profile, ", ".join(sorted(PROFILES))))
    device, buses = PROFILES[profile][:2]
    half = len(buses) // 2
    return [{"bus_id": bus, "device": device, "numa_node": (0 if index < half else 1) if numa else -1}
            for index, bus in enumerate(buses)]


def node_cpulists(profile, numa=True):
    """NUMA node -> CPU list of the profile (one node holding every CPU without NUMA)."""
    node0, node1 = PROFILES[profile][2:4]
    return {0: node0, 1: node1} if numa else {0: node0 + "," + node1}


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


def host_cpulists(sys_root="/sys"):
    """This machine's node 0 CPU list and possible CPUs, as its sysfs says."""
    with open(os.path.join(sys_root, "devices", "system", "node", "node0", "cpulist")) as handle:
        node0 = handle.read().strip()
    with open(os.path.join(sys_root, "devices", "system", "cpu", "possible")) as handle:
        possible = handle.read().strip()
    return node0, possible


def write_sysfs(out, profile="910b-8", numa=True, host_cpus=None):
    """Write the profile's fake sysfs tree under ``out``; return the bus ids written, in npu-smi order.
    ``host_cpus`` (node 0's CPU list, the possible CPUs) replaces the profile's CPUs: node 1 then has none."""
    devices = profile_devices(profile, numa)
    for dev in devices:
        base = os.path.join(out, "bus", "pci", "devices", dev["bus_id"])
        _write(os.path.join(base, "vendor"), "0x%04x" % VENDOR_ID)
        _write(os.path.join(base, "device"), "0x%04x" % dev["device"])
        _write(os.path.join(base, "class"), "0x%06x" % NPU_CLASS)
        _write(os.path.join(base, "numa_node"), str(dev["numa_node"]))
    cpulists = node_cpulists(profile, numa)
    if host_cpus:
        cpulists = {node: host_cpus[0] if node == 0 else "" for node in cpulists}
    for node, cpulist in cpulists.items():
        _write(os.path.join(out, "devices", "system", "node", "node%d" % node, "cpulist"), cpulist)
    _write(os.path.join(out, "devices", "system", "cpu", "possible"), host_cpus[1] if host_cpus else PROFILES[profile][4])
    return [dev["bus_id"] for dev in devices]


def main(argv=None):
    parser = argparse.ArgumentParser(description="Write a fake sysfs tree (NPU PCI devices, NUMA nodes) for tests.")
    parser.add_argument("--out", required=True, help="directory to write the tree to (created)")
    parser.add_argument("--profile", default="910b-8", choices=sorted(PROFILES))
    parser.add_argument("--no-numa", action="store_true", help="numa_node -1 on every device, one node with all CPUs")
    parser.add_argument("--cpus-of-this-host", action="store_true",
                        help="node 0 has this machine's node 0 CPUs (and the possible CPUs are its), node 1 none")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    host_cpus = host_cpulists() if args.cpus_of_this_host else None
    for bus_id in write_sysfs(args.out, args.profile, numa=not args.no_numa, host_cpus=host_cpus):
        print(bus_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
