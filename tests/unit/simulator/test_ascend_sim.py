# -*- coding: utf-8 -*-
# Copyright: contributors to the kunpeng_ascend.vllm collection
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of tests/simulator/ascend-sim (the simulated npu-smi / hccn_tool).

The program runs as a subprocess through symlinks named npu-smi / hccn_tool, with
ASCEND_SIM_ROOT / ASCEND_SIM_STATE / ASCEND_SIM_LOG inside tmp_path. Its output is
compared with real captures kept under tests/fixtures/ (SOURCE line on top, verbatim text
after the '---' line).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import HANG_SECONDS, load_fixture

HERE = Path(__file__).resolve().parent
SIM = HERE.parents[1] / "simulator" / "ascend-sim"


def load_module():
    loader = importlib.machinery.SourceFileLoader("ascend_sim", str(SIM))
    spec = importlib.util.spec_from_loader("ascend_sim", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class Sim:
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.root = tmp_path / "root"
        self.root.mkdir()
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for name in ("npu-smi", "hccn_tool", "ascend-sim"):
            (self.bin / name).symlink_to(SIM)
        self.state_file = tmp_path / "state" / "state.json"
        self.log_file = tmp_path / "log" / "calls.log"
        self.env = dict(os.environ, ASCEND_SIM_ROOT=str(self.root),
                        ASCEND_SIM_STATE=str(self.state_file), ASCEND_SIM_LOG=str(self.log_file))

    def driver(self, version="24.1.rc1"):
        path = self.root / "usr/local/Ascend/driver/version.info"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("Version=%s\nascendhal_version=7.35.19\n" % version)

    def run(self, tool, *args, timeout=20, env=None):
        return subprocess.run([sys.executable, str(self.bin / tool)] + list(args),
                              env=env or self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def ctl(self, *args):
        return self.run("ascend-sim", *args)

    def init(self, profile="910b-8"):
        """Write the default state of PROFILE (in-process: keeps the suite fast)."""
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        self.write_state(MOD.default_state(profile))
        return self.state()

    def popen(self, tool, *args):
        return subprocess.Popen([sys.executable, str(self.bin / tool)] + list(args), env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def state(self):
        return json.loads(self.state_file.read_text())

    def write_state(self, state):
        self.state_file.write_text(json.dumps(state))

    def set(self, *assignments):
        result = self.ctl("set", *assignments)
        assert result.returncode == 0, result.stderr
        return result

    def calls(self):
        if not self.log_file.exists():
            return []
        return [json.loads(line) for line in self.log_file.read_text().splitlines()]


MOD = load_module()


@pytest.fixture
def sim(tmp_path):
    return Sim(tmp_path)


def one_line_error(result):
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("ascend-sim: error: ")
    return result.stderr


def chip(npu, chip_id, device, name, power, temp, bus, hbm=None, memory=(0, 0), aicore=0):
    c = {"npu_id": npu, "chip_id": chip_id, "device_id": device, "name": name, "health": "OK",
         "power_w": power, "temp_c": temp, "hugepages_used": 0, "hugepages_total": 0,
         "aicore_percent": aicore, "memory_used": memory[0], "memory_total": memory[1],
         "bus_id": bus}
    if hbm:
        c["hbm_used"], c["hbm_total"] = hbm
    return c


# --------------------------------------------------------------------------- npu-smi info
def test_910b4_single_chip_matches_real_capture(sim):
    sim.driver("24.1.rc1")
    state = sim.init("910b-8")
    state["chips"] = [chip(0, 0, 0, "910B4", 81.1, 37, "0000:82:00.0", hbm=(2773, 32768))]
    sim.write_state(state)
    result = sim.run("npu-smi", "info")
    assert result.returncode == 0
    assert result.stdout == load_fixture("npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt")


def test_a3_default_state_matches_real_capture(sim):
    sim.driver("24.1.rc3.7")
    sim.init("a3-16")
    result = sim.run("npu-smi", "info")
    assert result.returncode == 0
    assert result.stdout == load_fixture("npu-smi-info_A3-Ascend910_24.1.rc3.7_16chip_noproc.txt")


def test_310p_duo_with_processes_matches_real_capture(sim):
    sim.driver("25.2.0")
    sim.init("310p-duo")
    sim.set("chips.4.hugepages_used=16", "chips.4.hugepages_total=16",
            "chips.5.hugepages_used=8", "chips.5.hugepages_total=8",
            'processes=[{"npu_id": 5, "chip_id": 0, "pid": 904545, "name": "python3", "memory_mb": 101},'
            ' {"npu_id": 5, "chip_id": 1, "pid": 904546, "name": "python3", "memory_mb": 100},'
            ' {"npu_id": 5, "chip_id": 0, "pid": 917047, "name": "mindie_llm_backend", "memory_mb": 101}]')
    result = sim.run("npu-smi", "info")
    assert result.returncode == 0
    assert result.stdout == load_fixture("npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt")


def test_910b3_busy_with_nameless_processes_matches_real_capture(sim):
    sim.driver("25.0.rc1.b010")
    state = sim.init("910b-8")
    buses = ["C1", "C2", "81", "82", "01", "02", "41", "42"]
    power = [124.9, 122.0, 124.0, 127.3, 128.3, 122.5, 127.4, 128.6]
    temp = [41, 40, 41, 39, 45, 44, 46, 45]
    aicore = [27, 29, 29, 29, 30, 29, 29, 29]
    hbm = [59718, 59715, 59714, 59716, 59714, 59715, 59714, 59715]
    pids = [1067983, 1070524, 1073093, 1075396, 1077642, 1079652, 1082071, 1084428]
    state["chips"] = [chip(i, 0, i, "910B3", power[i], temp[i], "0000:%s:00.0" % buses[i],
                           hbm=(hbm[i], 65536), aicore=aicore[i]) for i in range(8)]
    state["processes"] = [{"npu_id": i, "chip_id": 0, "pid": pids[i], "name": "",
                           "memory_mb": 56374 if i == 5 else 56373} for i in range(8)]
    sim.write_state(state)
    result = sim.run("npu-smi", "info")
    assert result.stdout == load_fixture("npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt")


@pytest.mark.parametrize("profile,fixture,width", [
    ("910b-8", "npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt", 98),
    ("a3-16", "npu-smi-info_A3-Ascend910_24.1.rc3.7_16chip_noproc.txt", 98),
    ("310p-duo", "npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt", 106),
])
def test_default_profiles_have_the_real_structure(sim, profile, fixture, width):
    sim.driver("24.1.rc1")
    state = sim.init(profile)
    out = sim.run("npu-smi", "info").stdout
    real = load_fixture(fixture)
    lines, real_lines = out.splitlines(), real.splitlines()
    assert out.endswith("\n")
    assert {len(line) for line in lines} == {width}
    assert all(line[0] in "+|" and line[-1] in "+|" for line in lines)
    # separators and header rows are literally the real ones
    assert {l for l in lines if l.startswith("+")} == {l for l in real_lines if l.startswith("+")}
    assert lines[2:6] == real_lines[2:6]
    proc_header = [l for l in real_lines if "Process id" in l]
    assert [l for l in lines if "Process id" in l] == proc_header
    npus = sorted({c["npu_id"] for c in state["chips"]})
    for npu in npus:
        assert ("| No running processes found in NPU %d " % npu) in out
    assert lines[1].startswith("| npu-smi 24.1.rc1 ") and "Version: 24.1.rc1 " in lines[1]
    assert len([l for l in lines if l.startswith("| ") and " OK " in l]) == len(state["chips"])


def test_health_power_and_version_overrides(sim):
    sim.driver("24.1.rc1")
    sim.init("910b-8")
    sim.set("chips.3.health=Alarm", "chips.2.power_w=null", "npu_smi_version=24.1.rc1.b030",
            "driver_version=25.0.rc1")
    lines = sim.run("npu-smi", "info").stdout.splitlines()
    assert lines[1] == "| " + "npu-smi 24.1.rc1.b030".ljust(33) + "Version: 25.0.rc1".ljust(62) + "|"
    assert "| 3     910B4               | Alarm         | " in "\n".join(lines)
    assert "| 2     910B4               | OK            | -           41" in "\n".join(lines)


def test_card_list_and_chip_mapping_match_real_captures(sim):
    sim.driver()
    sim.init("910b-8")
    assert sim.run("npu-smi", "info", "-l").stdout == load_fixture("npu-smi-info-l_910B4_8npu_atlas800IA2.txt")
    assert sim.run("npu-smi", "info", "-m").stdout == load_fixture("npu-smi-info-m_910B4_8npu_with-mcu_atlas800IA2.txt")


def test_card_list_multi_chip_profiles(sim):
    sim.driver()
    sim.init("310p-duo")
    out = sim.run("npu-smi", "info", "-l").stdout
    assert out.splitlines()[0] == "        Total Count                    : 4"
    assert "        NPU ID                         : 5\n        Chip Count                     : 2\n" in out
    mapping = sim.run("npu-smi", "info", "-m").stdout.splitlines()
    assert len(mapping) == 9 and mapping[-1].endswith("Ascend 310P3")


def test_info_help_matches_real_capture(sim):
    sim.driver()
    sim.init()
    real = load_fixture("npu-smi-info-h_help_23.0.rc2.txt").split("\n", 1)[1]
    result = sim.run("npu-smi", "info", "-h")
    assert result.returncode == 0 and result.stdout == real


def test_t_usages_matches_real_capture(sim):
    sim.driver()
    sim.init("910b-8")
    sim.set("chips.0.hbm_used=2700")
    real = load_fixture("npu-smi-info-t-usages_910B1_npu0.txt").split("\n", 1)[1]
    result = sim.run("npu-smi", "info", "-t", "usages", "-i", "0")
    assert result.returncode == 0 and result.stdout == real


def test_t_memory_matches_real_capture(sim):
    sim.driver()
    sim.init("910b-8")
    sim.set("chips.1.hbm_total=32768", "chips.1.hbm_temp_c=35")
    real = load_fixture("npu-smi-info-t-memory_910B_npu1.txt").split("\n", 1)[1]
    assert sim.run("npu-smi", "info", "-t", "memory", "-i", "1").stdout == real


def test_t_board_chip_blocks_start_like_real_captures(sim):
    a2_real, a3_real = [block.splitlines()[1:] for block in
                        load_fixture("npu-smi-info-t-board-c0_A2-910B4_vs_A3-9392_doc-abridged.txt").split("\n\n")]
    sim.driver()
    sim.init("910b-8")
    out = sim.run("npu-smi", "info", "-t", "board", "-i", "0", "-c", "0").stdout.splitlines()
    assert out[:4] == a2_real
    sim.init("a3-16")
    out = sim.run("npu-smi", "info", "-t", "board", "-i", "0", "-c", "0").stdout.splitlines()
    assert out[:4] == a3_real


def test_t_board_reports_driver_and_firmware_versions(sim):
    sim.driver("24.1.rc1")
    fw = sim.root / "usr/local/Ascend/firmware/version.info"
    fw.parent.mkdir(parents=True)
    fw.write_text("Version=7.5.0.1.129\nfirmware_version=1.0\n")
    sim.init("910b-8")
    out = sim.run("npu-smi", "info", "-t", "board", "-i", "7").stdout
    assert "        Software Version               : 24.1.rc1\n" in out
    assert "        Firmware Version               : 7.5.0.1.129\n" in out
    assert "        PCIe Bus Info                  : 0000:42:00.0\n" in out


def test_t_common_has_the_real_keys(sim):
    sim.driver()
    sim.init("910b-8")
    real = load_fixture("npu-smi-info-t-common_910B1_npu1_with-mcu.txt").splitlines()[1:]
    out = sim.run("npu-smi", "info", "-t", "common", "-i", "1").stdout.splitlines()

    def keys(lines):
        return [line.split(":")[0] for line in lines]

    assert keys(out) == keys(real)
    assert out[0] == real[0]


def test_t_health(sim):
    sim.driver()
    sim.init("a3-16")
    sim.set("chips.1.health=Critical")
    out = sim.run("npu-smi", "info", "-t", "health", "-i", "0").stdout
    assert "        Health Status                  : OK\n" in out
    assert "        Health Status                  : Critical\n" in out
    out = sim.run("npu-smi", "info", "-t", "health", "-i", "0", "-c", "1").stdout
    assert out.splitlines()[0] == "        Health Status                  : Critical"


@pytest.mark.parametrize("args,text", [
    (["info", "-t", "board", "-i", "8"], "Invalid card id. (card_id=8)\n"),
    (["info", "-t", "usages", "-i", "-1"], "Invalid card id. (card_id=-1)\n"),
    (["info", "-t", "memory", "-i", "0", "-c", "3"], "Invalid chip id. (card_id=0; chip_id=3)\n"),
])
def test_out_of_range_ids(sim, args, text):
    sim.driver()
    sim.init("910b-8")
    result = sim.run("npu-smi", *args)
    assert result.returncode != 0 and result.stdout == text


@pytest.mark.parametrize("args", [["bogus"], ["info", "--bogus"], ["info", "-t", "nosuch", "-i", "0"],
                                  ["info", "-t", "board"], ["info", "-t", "board", "-i", "x"], []])
def test_usage_errors(sim, args):
    sim.driver()
    sim.init()
    result = sim.run("npu-smi", *args)
    assert result.returncode == 1
    assert "Usage: npu-smi" in result.stdout
    assert "Traceback" not in result.stderr


def test_real_but_unsimulated_type_says_so(sim):
    sim.driver()
    sim.init()
    result = sim.run("npu-smi", "info", "-t", "sensors", "-i", "0")
    assert result.returncode == 1 and "not simulated" in result.stderr


def test_runs_directly_through_its_shebang(sim):
    sim.driver()
    sim.init()
    result = subprocess.run([str(sim.bin / "npu-smi"), "info", "-l"], env=sim.env,
                            capture_output=True, text=True, timeout=20, check=False)
    assert result.returncode == 0 and result.stdout.startswith("        Total Count")


def test_missing_state_uses_the_910b_default(sim):
    sim.driver()
    result = sim.run("npu-smi", "info", "-l")
    assert result.returncode == 0 and "Total Count                    : 8" in result.stdout


def test_bad_state_file_is_one_line(sim):
    sim.driver()
    sim.state_file.parent.mkdir()
    sim.state_file.write_text("{not json")
    result = sim.run("npu-smi", "info")
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert result.stderr.count("\n") == 1


# --------------------------------------------------------------------------- faults
def test_missing_driver_fails_like_dcmi_init(sim):
    sim.init()
    result = sim.run("npu-smi", "info")
    assert result.returncode == 1
    assert result.stdout == load_fixture("npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt")
    sim.set("driver_version=24.1.rc1")  # an override needs no version.info
    assert sim.run("npu-smi", "info").returncode == 0


def test_fault_dcmi_8005(sim):
    sim.driver()
    sim.init()
    sim.set("fault=dcmi-8005")
    result = sim.run("npu-smi", "info")
    assert result.returncode == 1
    assert result.stdout == load_fixture("npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt")
    sim.set("fault_rc=187")
    assert sim.run("npu-smi", "info", "-l").returncode == 187


def test_fault_dcmi_8020_and_back(sim):
    sim.driver()
    sim.init()
    sim.set("fault=dcmi-8020")
    result = sim.run("npu-smi", "info")
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == (
        "dcmi model initialized failed, because the device is used. ret is -8020")
    sim.set("fault=null")
    assert sim.run("npu-smi", "info").returncode == 0


def test_fault_hang_times_out_and_is_logged(sim):
    sim.driver()
    sim.init()
    # An hour's hang: both are still hanging when the test kills them, however slowly they started.
    sim.set("fault=hang", "hang_seconds=3600")
    procs = [sim.popen("npu-smi", "info"), sim.popen("hccn_tool", "-i", "0", "-link", "-g")]
    try:
        deadline = time.monotonic() + HANG_SECONDS
        while len(sim.calls()) < 2:
            assert time.monotonic() < deadline, sim.calls()
            time.sleep(0.02)  # the call is logged before the sleep starts
        for proc in procs:
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)  # a caller's timeout fires
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()
    calls = sorted((c["tool"], c["rc"]) for c in sim.calls())
    assert calls == [("hccn_tool", None), ("npu-smi", None)]


def test_short_hang_then_answers(sim):
    sim.driver()
    sim.init()
    sim.set("fault=hang", "hang_seconds=0.2")
    result = sim.run("npu-smi", "info", "-l")
    assert result.returncode == 0 and "Total Count" in result.stdout


def test_group_decision_function(sim):
    mod = load_module()

    class Group:
        gr_gid = 1001

    def lookup(name):
        assert name == "HwHiAiUser"
        return Group

    def missing(name):
        raise KeyError(name)

    assert mod.group_allows(0, [], getgrnam=missing) is True
    assert mod.group_allows(1000, [1000], getgrnam=lookup) is False
    assert mod.group_allows(1000, [1000, 1001], getgrnam=lookup) is True
    assert mod.group_allows(1000, [1000, 1001], getgrnam=missing) is False
    state = mod.default_state("910b-8")
    assert mod.permission_denied(state, euid=1000, gids=[1000], getgrnam=lookup) is False
    state["require_group"] = True
    assert mod.permission_denied(state, euid=1000, gids=[1000], getgrnam=lookup) is True
    assert mod.permission_denied(state, euid=1000, gids={1001}, getgrnam=lookup) is False
    assert mod.permission_denied(state, euid=0, gids=[], getgrnam=missing) is False


def test_group_denial_prints_the_real_8005_text(sim, monkeypatch):
    mod = load_module()
    state = mod.default_state("910b-8")
    state["require_group"] = True
    state["driver_version"] = "24.1.rc1"
    monkeypatch.setattr(mod, "permission_denied", lambda st: bool(st.get("require_group")))
    rc, out, err = mod.run_npu_smi(["info"], state)
    assert rc == 1 and err == ""
    assert out == load_fixture("npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt")


def test_require_group_does_not_affect_root(sim):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    sim.driver()
    sim.init()
    sim.set("require_group=true")
    assert sim.run("npu-smi", "info").returncode == 0


# --------------------------------------------------------------------------- hccn_tool
def write_hccn_conf(sim):
    conf = sim.root / "etc/hccn.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(load_fixture("hccn.conf_8npu_address-netmask-only.txt").split("\n", 1)[1])
    return conf


def test_hccn_ip_get_from_hccn_conf(sim):
    sim.init()
    write_hccn_conf(sim)
    result = sim.run("hccn_tool", "-i", "3", "-ip", "-g")
    assert result.returncode == 0
    assert result.stdout == "ipaddr:10.20.11.14\nnetmask:255.255.255.0\n"


def test_hccn_ip_set_persists_and_get_matches_real_capture(sim):
    sim.init()
    conf = write_hccn_conf(sim)
    before = conf.read_text().splitlines()
    result = sim.run("hccn_tool", "-i", "3", "-ip", "-s", "address", "10.20.11.24",
                     "netmask", "255.255.255.0")
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    after = conf.read_text().splitlines()
    assert "address_3=10.20.11.24" in after and "address_3=10.20.11.14" not in after
    assert len(after) == len(before)
    real = [l for l in load_fixture("hccn_tool-i3-ip-g_route-g_gt-prompt.txt").splitlines()
            if l.startswith(("ipaddr:", "netmask:"))]
    assert sim.run("hccn_tool", "-i", "3", "-ip", "-g").stdout.splitlines() == real


def test_hccn_ip_set_creates_conf(sim):
    sim.init()
    assert sim.run("hccn_tool", "-i", "0", "-ip", "-s", "address", "192.168.100.101",
                   "netmask", "255.255.0.0").returncode == 0
    assert (sim.root / "etc/hccn.conf").read_text() == (
        "address_0=192.168.100.101\nnetmask_0=255.255.0.0\n")
    assert sim.run("hccn_tool", "-i", "0", "-gateway", "-s", "address", "192.168.0.1").returncode == 0
    assert (sim.root / "etc/hccn.conf").read_text().endswith("gateway_0=192.168.0.1\n")


@pytest.mark.parametrize("address,netmask", [("10.0.0.300", "255.255.255.0"),
                                             ("10.0.0.1", "255.0.255.0"),
                                             ("10.0.0.1", "0.0.0.0")])
def test_hccn_ip_set_validates(sim, address, netmask):
    sim.init()
    result = sim.run("hccn_tool", "-i", "0", "-ip", "-s", "address", address, "netmask", netmask)
    assert result.returncode == 1 and "failed" in result.stdout
    assert not (sim.root / "etc/hccn.conf").exists()


def test_hccn_state_network_overrides_conf_and_set_updates_it(sim):
    sim.init()
    write_hccn_conf(sim)
    sim.set('network.devices.3={"address": "29.1.112.213", "netmask": "255.255.0.0"}')
    assert sim.run("hccn_tool", "-i", "3", "-ip", "-g").stdout == "ipaddr:29.1.112.213\nnetmask:255.255.0.0\n"
    sim.run("hccn_tool", "-i", "3", "-ip", "-s", "address", "29.1.112.214", "netmask", "255.255.0.0")
    assert sim.state()["network"]["devices"]["3"]["address"] == "29.1.112.214"


def test_hccn_link_and_net_health(sim):
    sim.init()
    write_hccn_conf(sim)
    assert sim.run("hccn_tool", "-i", "0", "-link", "-g").stdout == "link status: UP\n"
    assert sim.run("hccn_tool", "-i", "0", "-net_health", "-g").stdout == "net health status: Success\n"
    sim.set("network.devices.1.link=DOWN", "network.devices.1.net_health=Fault")
    assert sim.run("hccn_tool", "-i", "1", "-link", "-g").stdout == "link status: DOWN\n"
    assert sim.run("hccn_tool", "-i", "1", "-net_health", "-g").stdout == "net health status: Fault\n"


def test_hccn_gateway_and_netdetect_set_persist_and_get_as_documented(sim):
    sim.init()
    conf = write_hccn_conf(sim)
    # Nothing set yet: the simulator prints nothing (its choice; no capture shows the real answer).
    assert sim.run("hccn_tool", "-i", "2", "-gateway", "-g").stdout == ""
    assert sim.run("hccn_tool", "-i", "2", "-netdetect", "-g").stdout == ""
    assert sim.run("hccn_tool", "-i", "2", "-gateway", "-s", "gateway", "10.20.11.1").returncode == 0
    assert sim.run("hccn_tool", "-i", "2", "-netdetect", "-s", "address", "10.20.11.1").returncode == 0
    # The formats of the public deployment guides: "default gateway:G, Iface:ethN", "netdetect address: D".
    assert sim.run("hccn_tool", "-i", "2", "-gateway", "-g").stdout == "default gateway:10.20.11.1, Iface:eth2\n"
    assert sim.run("hccn_tool", "-i", "2", "-netdetect", "-g").stdout == "netdetect address: 10.20.11.1\n"
    lines = conf.read_text().splitlines()
    assert "gateway_2=10.20.11.1" in lines and "netdetect_2=10.20.11.1" in lines
    result = sim.run("hccn_tool", "-i", "2", "-gateway", "-s", "gateway", "10.20.11.300")
    assert result.returncode == 1 and "failed" in result.stdout
    assert sim.run("hccn_tool", "-i", "2", "-gateway", "-s", "bogus", "1.2.3.4").returncode == 1


def test_hccn_state_gateway_overrides_conf_and_set_updates_it(sim):
    sim.init()
    sim.set('network.devices.1={"gateway": "10.9.0.1"}')
    assert sim.run("hccn_tool", "-i", "1", "-gateway", "-g").stdout == "default gateway:10.9.0.1, Iface:eth1\n"
    sim.run("hccn_tool", "-i", "1", "-gateway", "-s", "gateway", "10.9.0.254")
    assert sim.state()["network"]["devices"]["1"]["gateway"] == "10.9.0.254"


def test_hccn_tls_get_and_set(sim):
    sim.init()
    result = sim.run("hccn_tool", "-i", "4", "-tls", "-g")
    assert result.returncode == 0
    assert result.stdout.startswith(
        "dev_id:4, tls switch[1](0:disable, 1:enable), tls alarm time threshold[60]days\ndev_id:4, [pub cert] info:\n")
    assert sim.run("hccn_tool", "-i", "4", "-tls", "-s", "enable", "0").returncode == 0
    assert sim.state()["network"]["devices"]["4"]["tls"] == 0
    assert "tls switch[0]" in sim.run("hccn_tool", "-i", "4", "-tls", "-g").stdout
    assert "tls switch[1]" in sim.run("hccn_tool", "-i", "3", "-tls", "-g").stdout
    assert sim.run("hccn_tool", "-i", "4", "-tls", "-s", "enable", "2").returncode == 1
    assert sim.run("hccn_tool", "-i", "8", "-tls", "-s", "enable", "0").returncode == 1
    assert sim.ctl("show").returncode == 0


def test_hccn_ping_matches_real_capture(sim):
    sim.init()
    write_hccn_conf(sim)
    real = load_fixture("hccn_tool-i3-ping-g_10.20.11.16.txt").split("\n", 1)[1]
    result = sim.run("hccn_tool", "-i", "3", "-ping", "-g", "address", "10.20.11.16")
    assert result.returncode == 0 and result.stdout == real


def test_hccn_ping_unreachable_then_reachable(sim):
    sim.init()
    write_hccn_conf(sim)
    result = sim.run("hccn_tool", "-i", "3", "-ping", "-g", "address", "10.20.12.11")
    assert result.returncode == 1
    assert result.stdout == ("device 3 PING 10.20.12.11\n"
                             "3 packets transmitted, 0 received, 100.00% packet loss\n")
    sim.set('network.reachable=["10.20.12.11"]')
    result = sim.run("hccn_tool", "-i", "3", "-ping", "-g", "address", "10.20.12.11", "pkt", "5")
    assert result.returncode == 0 and result.stdout.count("recv seq=") == 5
    assert result.stdout.endswith("5 packets transmitted, 5 received, 0.00% packet loss\n")


def test_hccn_device_out_of_range_matches_real_capture(sim):
    sim.init("910b-8")
    real = load_fixture("hccn_tool_ip-set_errors_310_device-id-out-of-range.txt").splitlines()[1:4]
    expected = "".join(line[4:] + "\n" for line in real)
    for args in (["-i", "8", "-ip", "-s", "address", "10.45.0.9", "netmask", "255.255.255.0"],
                 ["-i", "2048", "-ip", "-g"]):
        result = sim.run("hccn_tool", *args)
        assert result.returncode == 1 and result.stdout == expected
    assert sim.run("hccn_tool", "-i", "15", "-link", "-g").returncode == 1
    sim.init("a3-16")
    assert sim.run("hccn_tool", "-i", "15", "-link", "-g").returncode == 0


@pytest.mark.parametrize("args", [[], ["-i"], ["-i", "0"], ["-i", "x", "-ip", "-g"],
                                  ["-i", "0", "-bogus", "-g"], ["-i", "0", "-ip", "-s", "address"],
                                  ["-i", "0", "-ping", "-g"]])
def test_hccn_usage_errors(sim, args):
    sim.init()
    result = sim.run("hccn_tool", *args)
    assert result.returncode == 1 and "Usage: hccn_tool" in result.stdout


# --------------------------------------------------------------------------- control CLI
def test_init_refuses_to_overwrite(sim):
    result = sim.ctl("init", "--profile", "910b-8")
    assert result.returncode == 0 and "910b-8" in result.stdout
    assert sim.state() == MOD.default_state("910b-8")
    err = one_line_error(sim.ctl("init", "--profile", "a3-16"))
    assert "already exists" in err and "--force" in err
    assert sim.state()["profile"] == "910b-8"
    assert sim.ctl("init", "--profile", "a3-16", "--force").returncode == 0
    assert sim.state()["profile"] == "a3-16" and len(sim.state()["chips"]) == 16


def test_show_prints_the_state(sim):
    sim.init("310p-duo")
    result = sim.ctl("show")
    assert result.returncode == 0 and json.loads(result.stdout) == sim.state()
    assert len(json.loads(result.stdout)["chips"]) == 8


def test_show_without_state(sim):
    assert "ascend-sim init" in one_line_error(sim.ctl("show"))


def test_set_values(sim):
    sim.init()
    sim.set("chips.3.health=Alarm", "fault=dcmi-8020", "hang_seconds=5", "require_group=true",
            'processes=[{"npu_id": 0, "chip_id": 0, "pid": 42, "name": "vllm", "memory_mb": 1000}]',
            "processes.1={\"npu_id\": 1, \"chip_id\": 0, \"pid\": 43, \"name\": \"vllm\", \"memory_mb\": 10}",
            "chips.0.bus_id=0000:C1:00.0")
    state = sim.state()
    assert state["chips"][3]["health"] == "Alarm"
    assert state["fault"] == "dcmi-8020" and state["hang_seconds"] == 5
    assert state["require_group"] is True
    assert [p["pid"] for p in state["processes"]] == [42, 43]
    sim.set("fault=null")
    assert sim.state()["fault"] is None


@pytest.mark.parametrize("assignment,message", [
    ("chips.99.health=OK", "out of range"),
    ("chips.x.health=OK", "not an index"),
    ("chips.3.helth=Alarm", "unknown key 'helth'"),
    ("chips.3.health=Bad", "health must be one of"),
    ("fault=dcmi-9999", "fault must be"),
    ("fault.x=1", "not an object or a list"),
    ("profile=910c", "profile must be"),
    ("nosuchkey=1", "unknown key"),
    ("novalue", "PATH=VALUE"),
    ("chips..health=OK", "bad path"),
    ("processes=[{\"npu_id\": 0}]", "processes.0."),
])
def test_set_errors(sim, assignment, message):
    sim.init()
    before = sim.state_file.read_text()
    err = one_line_error(sim.ctl("set", "chips.0.health=Warning", assignment))
    assert message in err
    assert sim.state_file.read_text() == before  # nothing written


def test_presets(sim):
    sim.driver()
    sim.init("910b-8")
    sim.set("hang_seconds=7", 'network.reachable=["1.2.3.4"]')
    assert sim.ctl("preset", "busy").returncode == 0
    state = sim.state()
    assert len(state["processes"]) == 8 and {p["name"] for p in state["processes"]} == {"vllm"}
    assert state["hang_seconds"] == 7 and state["network"]["reachable"] == ["1.2.3.4"]
    out = sim.run("npu-smi", "info").stdout
    assert "No running processes" not in out and out.count("| vllm ") == 8
    sim.ctl("preset", "one-unhealthy")
    state = sim.state()
    assert [c["health"] for c in state["chips"]].count("Alarm") == 1 and state["processes"] == []
    sim.ctl("preset", "leftover")
    assert len(sim.state()["processes"]) == 1
    for name, key, value in (("hang", "fault", "hang"), ("dcmi-8005", "fault", "dcmi-8005"),
                             ("dcmi-8020", "fault", "dcmi-8020"), ("require-group", "require_group", True)):
        assert sim.ctl("preset", name).returncode == 0
        assert sim.state()[key] == value
    sim.ctl("preset", "healthy")
    state = sim.state()
    assert state["fault"] is None and state["require_group"] is False and state["processes"] == []
    assert "invalid choice" in one_line_error(sim.ctl("preset", "nosuch"))


def test_call_log_counts(sim):
    sim.driver()
    sim.init()
    sim.run("npu-smi", "info")
    sim.run("npu-smi", "info", "-t", "board", "-i", "99")
    sim.run("hccn_tool", "-i", "0", "-link", "-g")
    calls = sim.calls()
    assert [(c["tool"], c["argv"], c["rc"]) for c in calls] == [
        ("npu-smi", ["info"], 0),
        ("npu-smi", ["info", "-t", "board", "-i", "99"], 1),
        ("hccn_tool", ["-i", "0", "-link", "-g"], 0)]
    assert all(c["uid"] == os.getuid() and isinstance(c["ts"], float) for c in calls)
    assert sim.ctl("calls", "--count").stdout == "3\n"
    assert sim.ctl("calls", "--tool", "npu-smi", "--count").stdout == "2\n"
    listed = sim.ctl("calls", "--tool", "hccn_tool").stdout.splitlines()
    assert [json.loads(line)["argv"] for line in listed] == [["-i", "0", "-link", "-g"]]
    assert sim.ctl("reset-log").returncode == 0
    assert sim.ctl("calls", "--count").stdout == "0\n"
    assert sim.ctl("reset-log").returncode == 0  # idempotent


def test_unwritable_log_does_not_break_the_tool(sim):
    sim.driver()
    sim.init()
    blocker = sim.tmp / "blocker"
    blocker.write_text("")
    env = dict(sim.env, ASCEND_SIM_LOG=str(blocker / "calls.log"))
    result = sim.run("npu-smi", "info", "-l", env=env)
    assert result.returncode == 0 and result.stderr == ""


def test_control_cli_errors_are_one_line(sim):
    one_line_error(sim.ctl())
    one_line_error(sim.ctl("frobnicate"))
    one_line_error(sim.ctl("init", "--profile", "910c"))


def test_control_cli_can_run_the_tools(sim):
    sim.driver()
    sim.init()
    result = sim.ctl("npu-smi", "info", "-l")
    assert result.returncode == 0 and "Total Count" in result.stdout
    assert sim.calls()[-1]["tool"] == "npu-smi"


def test_a_usage_script_drives_the_chips_as_a_step_function_of_time(sim):
    state = sim.init("910b-8")
    state["usage_script"] = {"start": 1000.0, "npu_ids": [1], "steps": [
        {"at": 0, "aicore_percent": 20, "hbm_used": 4000}, {"at": 2.5, "aicore_percent": 90}]}
    assert MOD.validate_state(state) == []
    before = json.loads(json.dumps(state))
    MOD.apply_usage_script(before, 999.0)
    assert before["chips"] == state["chips"]
    for now, expected in ((1000.0, (20, 4000)), (1002.4, (20, 4000)), (1002.5, (90, 4000)), (5000.0, (90, 4000))):
        applied = json.loads(json.dumps(state))
        MOD.apply_usage_script(applied, now)
        chip = next(chip for chip in applied["chips"] if chip["npu_id"] == 1)
        assert (chip["aicore_percent"], chip["hbm_used"]) == expected, now
        assert all(chip == original for chip, original in zip(applied["chips"], state["chips"]) if chip["npu_id"] != 1)


def test_npu_smi_shows_the_scripted_utilisation(sim):
    state = sim.init("910b-8")
    state["usage_script"] = {"start": 0, "npu_ids": [3], "steps": [{"at": 0, "aicore_percent": 77, "hbm_used": 12345}]}
    sim.write_state(state)
    sim.driver()
    result = sim.run("npu-smi", "info")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(" 77 ") == 1 and len(re.findall(r"\b12345\s*/", result.stdout)) == 1, result.stdout


@pytest.mark.parametrize("script, message", [
    ("x", "usage_script must be an object with start, steps and optionally npu_ids"),
    ({"start": "now", "steps": [{"at": 0}]}, "usage_script.start must be a unix time"),
    ({"start": 0, "steps": []}, "usage_script.steps must be a non-empty list"),
    ({"start": 0, "steps": [{"at": 2}, {"at": 1}]}, "usage_script.steps.1.at must be a number, not before the previous"),
    ({"start": 0, "steps": [{"at": 0, "aicore_percent": "high"}]}, "usage_script.steps.0.aicore_percent must be a number"),
    ({"start": 0, "steps": [{"at": 0, "temp_c": 3}]}, "usage_script.steps.0 must be an object of at, aicore_percent"),
    ({"start": 0, "npu_ids": ["0"], "steps": [{"at": 0}]}, "usage_script.npu_ids must be a list of integers"),
])
def test_a_bad_usage_script_is_reported(sim, script, message):
    state = sim.init("910b-8")
    state["usage_script"] = script
    assert any(message in error for error in MOD.validate_state(state))


# --------------------------------------------------------------------------- fabric (nodes pinging each other)
class Node(Sim):
    """A simulated node of its own (state, root, log) that shares FABRIC with others, named by ASCEND_SIM_HOSTNAME."""

    def __init__(self, tmp_path, name, fabric):
        tmp = tmp_path / name
        tmp.mkdir()
        super().__init__(tmp)
        self.name = name
        self.env["ASCEND_SIM_HOSTNAME"] = name
        self.init()
        self.set("network.fabric_dir=%s" % fabric)

    def ip_set(self, device, address):
        result = self.run("hccn_tool", "-i", str(device), "-ip", "-s", "address", address, "netmask", "255.255.0.0")
        assert result.returncode == 0, (result.stdout, result.stderr)

    def ping(self, device, address):
        return self.run("hccn_tool", "-i", str(device), "-ping", "-g", "address", address, "pkt", "2")


@pytest.fixture
def fabric(tmp_path):
    shared = tmp_path / "fabric"
    shared.mkdir()
    node_a, node_b = Node(tmp_path, "node-a", shared), Node(tmp_path, "node-b", shared)
    node_a.ip_set(3, "10.20.0.4")
    node_b.ip_set(3, "10.20.0.12")
    return shared, node_a, node_b


def test_fabric_files_hold_each_node_s_nics(fabric):
    shared, node_a, _node_b = fabric
    assert sorted(path.name for path in shared.iterdir()) == ["node-a.json", "node-b.json"]
    entry = json.loads((shared / "node-a.json").read_text())
    assert entry["host"] == "node-a"
    assert entry["devices"] == {"3": {"address": "10.20.0.4", "netmask": "255.255.0.0", "link": "UP"}}
    # A second set of the same node rewrites its file, it adds no other.
    node_a.ip_set(5, "10.20.0.6")
    assert sorted(json.loads((shared / "node-a.json").read_text())["devices"]) == ["3", "5"]
    assert len(list(shared.iterdir())) == 2


def test_nodes_ping_each_other_through_the_fabric(fabric):
    _shared, node_a, node_b = fabric
    there = node_a.ping(3, "10.20.0.12")
    back = node_b.ping(3, "10.20.0.4")
    assert there.returncode == 0 and there.stdout.endswith("2 packets transmitted, 2 received, 0.00% packet loss\n")
    assert back.returncode == 0
    # An address no node holds still gets no answer.
    assert node_a.ping(3, "10.20.0.99").returncode == 1


def test_a_planted_unreachable_target_breaks_one_direction_only(fabric):
    _shared, node_a, node_b = fabric
    node_a.set('network.unreachable=["10.20.0.12"]')
    there = node_a.ping(3, "10.20.0.12")
    assert there.returncode == 1 and "2 packets transmitted, 0 received, 100.00% packet loss" in there.stdout
    assert node_b.ping(3, "10.20.0.4").returncode == 0


def test_a_peer_nic_that_is_down_does_not_answer_once_synced(fabric):
    shared, node_a, node_b = fabric
    # `set` writes the node's fabric file itself.
    node_b.set("network.devices.3.link=DOWN")
    assert json.loads((shared / "node-b.json").read_text())["devices"]["3"]["link"] == "DOWN"
    assert node_a.ping(3, "10.20.0.12").returncode == 1
    node_b.set("network.devices.3.link=UP")
    assert node_a.ping(3, "10.20.0.12").returncode == 0


def test_fabric_sync_writes_the_file_and_says_so(fabric):
    shared, node_a, _node_b = fabric
    (shared / "node-a.json").unlink()
    result = node_a.ctl("fabric-sync")
    assert result.returncode == 0 and str(shared / "node-a.json") in result.stdout
    assert json.loads((shared / "node-a.json").read_text())["devices"]["3"]["address"] == "10.20.0.4"


def test_fabric_sync_without_a_fabric_dir_and_an_unwritable_one_fail_in_one_line(sim, tmp_path):
    sim.init()
    assert "network.fabric_dir is not set" in one_line_error(sim.ctl("fabric-sync"))
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    state = sim.state()
    state["network"]["fabric_dir"] = str(blocker / "fabric")
    sim.write_state(state)
    assert "cannot write the fabric file in %s" % (blocker / "fabric") in one_line_error(sim.ctl("fabric-sync"))
    result = sim.run("hccn_tool", "-i", "0", "-ip", "-s", "address", "10.20.0.1", "netmask", "255.255.0.0")
    assert result.returncode == 1 and "Cmd execute failed!" in result.stdout and "fabric file" in result.stderr


def test_a_broken_fabric_file_is_skipped(fabric):
    shared, node_a, _node_b = fabric
    (shared / "junk.json").write_text("{not json")
    assert node_a.ping(3, "10.20.0.12").returncode == 0


@pytest.mark.parametrize("assignment, message", [
    ("network.fabric_dir=relative/dir", "network.fabric_dir must be null or an absolute path"),
    ('network.unreachable="10.0.0.1"', "network.unreachable must be a list of strings"),
])
def test_fabric_settings_are_validated(sim, assignment, message):
    sim.init()
    assert message in one_line_error(sim.ctl("set", assignment))
