"""Tests of tests/simulator/build_packages.py: fake Huawei Ascend packages in the real formats.

The packages are built into a temporary directory, then the .run files (real makeself archives) are run as
the real ones are, but always with ASCEND_SIM_ROOT=<a temporary root>, so that nothing is installed on this
machine. With ASCEND_SIM_ROOT set, the driver's HwHiAiUser check reads <root>/etc/passwd and <root>/etc/group
(not the system database), so the tests create the user there. ASCEND_SIM_KERNEL names the kernel whose headers
must exist under <root>, ASCEND_SIM_ARCH the machine the package is checked against, and a stand-in `dkms` is
put first on PATH. The .deb files are only inspected with dpkg-deb and their maintainer scripts run against the
temporary root (no dpkg -i here: the test containers do that).
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import SimRoot, build_packages

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SIM_DIR = os.path.join(REPO, "tests", "simulator")
BUILDER = os.path.join(SIM_DIR, "build_packages.py")
INSTALLER = os.path.join(SIM_DIR, "fake-installer.sh")
SIM_PROGRAM = os.path.join(SIM_DIR, "ascend-sim")

KERNEL = "6.1.0-sim-arm64"
ARCH = "aarch64"

DRIVER = "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run"
DRIVER_DEB = "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.deb"
FIRMWARE = "Ascend-hdk-910b-npu-firmware_7.5.0.3.220.run"
TOOLKIT = "Ascend-cann-toolkit_8.0.0_linux-aarch64.run"
TOOLKIT_DEB = "Ascend-cann-toolkit_8.0.0_linux-aarch64.deb"
KERNELS = "Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run"
NNAL = "Ascend-cann-nnal_8.0.0_linux-aarch64.run"
DOCKER_RUNTIME = "Ascend-docker-runtime_6.0.0_linux-aarch64.run"
DEFAULT_SET = [DRIVER, DRIVER_DEB, FIRMWARE, TOOLKIT, TOOLKIT_DEB, KERNELS, NNAL, DOCKER_RUNTIME]

CHECK_OK = "Verifying archive integrity...  100%   SHA256 checksums are OK. All good."

# The fake installers are shell scripts in makeself archives, the .deb packages are made with dpkg-deb.
pytestmark = pytest.mark.needs_tools("bash", "makeself", "dpkg-deb")


def read_kv(path):
    result = {}
    with open(path) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                result[k] = v
    return result


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("packages")
    names = build_packages(out)
    return out, names


@pytest.fixture(scope="module")
def newer(tmp_path_factory):
    out = tmp_path_factory.mktemp("newer")
    build_packages(out, "--only", "driver,firmware,toolkit", "--formats", "run", "--driver", "24.1.0",
                   "--firmware", "7.5.0.5.220", "--cann", "8.0.1")
    return out


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("corrupted")
    names = build_packages(out, "--only", "driver,firmware", "--formats", "run", "--corrupt", "npu-driver")
    return out, names


@pytest.fixture
def host(tmp_path):
    """The scratch root the installers write into (tests/helpers.py SimRoot), for aarch64 packages."""
    return SimRoot(tmp_path, arch=ARCH, kernel=KERNEL)


def restricted_path(tmp_path, exclude):
    """A PATH with every standard command except those in `exclude` (e.g. python3 or dkms)."""
    d = tmp_path / "restricted-bin"
    d.mkdir()
    for directory in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            src = os.path.join(directory, name)
            if name in exclude or os.path.lexists(d / name):
                continue
            if os.path.isfile(src) and os.access(src, os.X_OK):
                os.symlink(src, d / name)
    return str(d)


# ------------------------------------------------------------------------------------------------ building
def test_default_set_names_and_modes(built):
    out, names = built
    assert names == DEFAULT_SET
    for name in names:
        mode = os.stat(out / name).st_mode
        if name.endswith(".run"):
            assert mode & 0o111, name
        with open(out / name, "rb") as f:
            head = f.read(16)
        assert head.startswith(b"#!/bin/sh" if name.endswith(".run") else b"!<arch>\n"), name


def test_build_is_deterministic(built, tmp_path):
    out, _names = built
    names = build_packages(tmp_path, "--only", "driver,toolkit")
    assert names == [DRIVER, DRIVER_DEB, TOOLKIT, TOOLKIT_DEB]
    for name in names:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


def test_build_names_follow_arch_chip_and_versions(tmp_path):
    names = build_packages(tmp_path, "--arch", "x86_64", "--chip", "910", "--driver", "23.0.rc1", "--firmware",
                           "6.3.0.1.241", "--cann", "8.5.0", "--docker-runtime", "7.0.RC1")
    assert names == [
        "Ascend-hdk-910-npu-driver_23.0.rc1_linux-x86-64.run",
        "Ascend-hdk-910-npu-driver_23.0.rc1_linux-x86-64.deb",
        "Ascend-hdk-910-npu-firmware_6.3.0.1.241.run",
        "Ascend-cann-toolkit_8.5.0_linux-x86-64.run",
        "Ascend-cann-toolkit_8.5.0_linux-x86-64.deb",
        "Ascend-cann-kernels-910_8.5.0_linux-x86-64.run",
        "Ascend-cann-nnal_8.5.0_linux-x86-64.run",
        "Ascend-docker-runtime_7.0.RC1_linux-x86-64.run",
    ]


def test_build_only_and_formats(tmp_path):
    assert build_packages(tmp_path, "--only", "firmware,nnal", "--formats", "deb") == []
    assert build_packages(tmp_path, "--only", "nnal,driver", "--formats", "deb") == [DRIVER_DEB]
    assert build_packages(tmp_path, "--only", "docker-runtime", "--formats", "run") == [DOCKER_RUNTIME]


@pytest.mark.parametrize("args", [["--only", "bogus"], ["--formats", "rpm"], ["--arch", "ppc64le"],
                                  ["--driver", "24.1 rc1"]])
def test_build_rejects_bad_arguments(tmp_path, args):
    proc = subprocess.run([sys.executable, BUILDER, "--out", str(tmp_path)] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, check=False)
    assert proc.returncode == 2
    assert "error" in proc.stderr


# ------------------------------------------------------------------------------------------------ makeself
@pytest.mark.parametrize("name", [DRIVER, TOOLKIT, KERNELS, NNAL, DOCKER_RUNTIME])
def test_check_ok(host, built, name):
    out, _names = built
    proc = host.run(out / name, "--check")
    assert proc.returncode == 0, proc.output
    assert proc.output.strip() == CHECK_OK
    assert host.installed_files() == []


def test_firmware_check_runs_the_installer_check_like_the_real_one(host, built):
    out, _names = built
    proc = host.run(out / FIRMWARE, "--check")
    assert proc.returncode == 0, proc.output
    lines = proc.output.splitlines()
    assert lines[0] == CHECK_OK
    assert lines[1] == CHECK_OK
    assert lines[2] == "Uncompressing ASCEND-HDK-910B-NPU FIRMWARE RUN PACKAGE  100%  "
    ts = r"\[Firmware\] \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[INFO\]"
    assert re.fullmatch(ts + r"Start time: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", lines[3])
    assert re.fullmatch(ts + "LogFile: /var/log/ascend_seclog/ascend_install.log", lines[4])
    assert re.fullmatch(ts + "OperationLogFile: /var/log/ascend_seclog/operation.log", lines[5])
    assert re.fullmatch(ts + r"End time: .*", lines[6])
    assert len(lines) == 7
    assert host.installed_files() == []


def test_check_fails_on_corrupted_payload(host, corrupted):
    out, names = corrupted
    assert names == [DRIVER, FIRMWARE]
    proc = host.run(out / DRIVER, "--check")
    assert proc.returncode == 2
    assert "Error in SHA256 checksums" in proc.output
    # only the names matching --corrupt are damaged
    proc = host.run(out / FIRMWARE, "--check", "--quiet")
    assert proc.returncode == 0, proc.output
    # and a damaged package installs nothing
    proc = host.run(out / DRIVER, "--full", "--install-for-all", "--quiet")
    assert proc.returncode != 0
    assert host.installed_files() == []


def test_info_list_noexec_target(host, built):
    out, _names = built
    proc = host.run(out / DRIVER, "--info")
    assert proc.returncode == 0
    assert "Identification: ASCEND DRIVER RUN PACKAGE" in proc.output
    proc = host.run(out / DRIVER, "--list")
    assert proc.returncode == 0
    for f in ("./install.sh", "./package.conf", "./files/ascend-sim"):
        assert f in proc.output
    target = host.tmp / "extracted"
    proc = host.run(out / DRIVER, "--noexec", "--target", str(target), "--quiet")
    assert proc.returncode == 0, proc.output
    with open(INSTALLER, "rb") as f:
        assert (target / "install.sh").read_bytes() == f.read()
    assert "VERSION=24.1.rc1" in (target / "package.conf").read_text()
    assert host.installed_files() == []


def test_unknown_flag_reaches_the_installer(host, built):
    out, _names = built
    proc = host.run(out / DRIVER, "--full", "--bogus", "--quiet")
    assert proc.returncode == 1
    assert re.search(r"\[Driver\] \[[^]]+\] \[ERROR\]ERR_NO:0x0004;ERR_DES:Unrecognized parameters: --bogus",
                     proc.output)


# ------------------------------------------------------------------------------------------------ driver
DRIVER_SEQUENCE = [
    "Start time: ", "LogFile: /var/log/ascend_seclog/ascend_install.log",
    "OperationLogFile: /var/log/ascend_seclog/operation.log",
    "Do not power off or restart the system during the installation/upgrade",
    "set username and usergroup, HwHiAiUser:HwHiAiUser", "driver install type: DKMS", "upgradePercentage:10%",
    "upgradePercentage:30%", "upgradePercentage:40%", "upgradePercentage:90%", "Waiting for device startup...",
    "Device startup success", "upgradePercentage:100%",
    "Driver package installed successfully! The new version takes effect immediately. ", "End time: ",
]


def install_driver(host, out, *extra):
    proc = host.run(out / DRIVER, "--full", "--install-for-all", "--quiet", *extra)
    assert proc.returncode == 0, proc.output
    return proc


def test_driver_full_install(host, built):
    out, _names = built
    proc = host.run(out / DRIVER, "--full", "--install-for-all", "--nox11")
    assert proc.returncode == 0, proc.output
    lines = proc.output.splitlines()
    assert lines[0] == CHECK_OK
    assert lines[1] == "Uncompressing ASCEND DRIVER RUN PACKAGE  100%  "
    assert len(lines) == 2 + len(DRIVER_SEQUENCE)
    for line, expected in zip(lines[2:], DRIVER_SEQUENCE):
        m = re.fullmatch(r"\[Driver\] \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[(INFO|WARNING)\](.*)", line)
        assert m, line
        assert m.group(2).startswith(expected), line

    info = read_kv(host.p("/usr/local/Ascend/driver/version.info"))
    assert info["Version"] == "24.1.rc1"
    assert info["package_version"] == "24.1.rc1"
    assert info["Innerversion"] == "V100R001C15SPC006B220"
    for key in ("ascendhal_version", "aicpu_version", "tdt_version", "log_version", "prof_version",
                "dvppkernels_version", "tsfw_version", "compatible_version", "compatible_version_fw"):
        assert info[key], key
    assert re.fullmatch(r"\[\d+\.\d+\.\d+,\d+\.\d+\.\d+\]", info["compatible_version_fw"])
    assert host.p("/etc/ascend_install.info").read_text() == (
        "UserName=HwHiAiUser\nUserGroup=HwHiAiUser\nDriver_Install_Type=full\n"
        "Driver_Install_Path_Param=/usr/local/Ascend\nDriver_Install_For_All=yes\nDriver_Install_Mode=normal\n"
        "Driver_Install_Status=complete\n")

    sim = host.p("/usr/local/Ascend/driver/tools/ascend-sim")
    assert os.access(sim, os.X_OK)
    npu_smi = host.p("/usr/local/bin/npu-smi")
    hccn_tool = host.p("/usr/local/Ascend/driver/tools/hccn_tool")
    assert npu_smi.is_symlink() and hccn_tool.is_symlink()
    assert os.path.realpath(npu_smi) == os.path.realpath(sim)
    assert os.path.realpath(hccn_tool) == os.path.realpath(sim)
    if os.path.isfile(SIM_PROGRAM):
        with open(SIM_PROGRAM, "rb") as f:
            assert sim.read_bytes() == f.read()
    assert host.p("/usr/local/Ascend/driver/lib64/libascend_hal.so").exists()
    assert host.p("/usr/local/dcmi").is_dir()
    assert os.access(host.p("/usr/local/Ascend/driver/script/uninstall.sh"), os.X_OK)
    log = host.p("/var/log/ascend_seclog/ascend_install.log").read_text()
    assert "Driver package installed successfully!" in log
    assert "success" in host.p("/var/log/ascend_seclog/operation.log").read_text().lower()


def test_driver_npu_smi_runs_the_simulator(host, built):
    out, _names = built
    install_driver(host, out)
    proc = host.run(host.p("/usr/local/bin/npu-smi"), "info")
    assert proc.returncode == 0, proc.output
    assert "24.1.rc1" in proc.output


def test_driver_second_full_is_refused(host, built):
    out, _names = built
    install_driver(host, out)
    before = host.installed_files()
    proc = host.run(out / DRIVER, "--full", "--install-for-all", "--quiet")
    assert proc.returncode == 1
    assert re.search(r"\[Driver\] \[[^]]+\] \[ERROR\]ERR_NO:0x0080;ERR_DES:The driver package \(version 24.1.rc1\) "
                     r"has already been installed .*--upgrade", proc.output)
    assert host.installed_files() == before


def test_driver_upgrade_to_newer(host, built, newer):
    out, _names = built
    install_driver(host, out)
    newer_driver = newer / "Ascend-hdk-910b-npu-driver_24.1.0_linux-aarch64.run"
    proc = host.run(newer_driver, "--upgrade", "--quiet")
    assert proc.returncode == 0, proc.output
    assert "Driver package upgraded successfully! Reboot needed for installation/upgrade to take effect!" \
        in proc.output
    assert "Waiting for device startup" not in proc.output
    info = read_kv(host.p("/usr/local/Ascend/driver/version.info"))
    assert info["Version"] == info["package_version"] == "24.1.0"
    inst = read_kv(host.p("/etc/ascend_install.info"))
    assert inst["Driver_Install_For_All"] == "yes"
    assert inst["UserName"] == "HwHiAiUser"
    assert os.path.realpath(host.p("/usr/local/bin/npu-smi")) == \
        os.path.realpath(host.p("/usr/local/Ascend/driver/tools/ascend-sim"))


def test_driver_upgrade_needs_an_installed_driver(host, built):
    out, _names = built
    proc = host.run(out / DRIVER, "--upgrade", "--quiet")
    assert proc.returncode == 1
    assert "[ERROR]ERR_NO:0x0080;ERR_DES:The driver package is not installed" in proc.output
    assert host.installed_files() == []


@pytest.mark.parametrize("how", ["run", "script"])
def test_driver_uninstall_removes_everything(host, built, how):
    out, _names = built
    install_driver(host, out)
    if how == "run":
        proc = host.run(out / DRIVER, "--uninstall", "--quiet")
    else:
        proc = host.run(host.p("/usr/local/Ascend/driver/script/uninstall.sh"))
    assert proc.returncode == 0, proc.output
    assert "Driver package uninstalled successfully! Reboot needed for uninstallation to take effect!" in proc.output
    left = list(host.installed_files())
    assert left == []
    assert not host.p("/usr/local/Ascend/driver").exists()
    proc = host.run(out / DRIVER, "--uninstall", "--quiet")
    assert proc.returncode == 1
    assert "[ERROR]" in proc.output


@pytest.mark.parametrize("missing", ["user", "group-membership", "dkms", "headers"])
def test_driver_prerequisites(host, built, tmp_path, missing):
    out, _names = built
    extra = {}
    if missing == "user":
        host.set_users(hwhiaiuser=False)
        message = "[ERROR]ERR_NO:0x0091;ERR_DES:HwHiAiUser not exists! Please add HwHiAiUser"
    elif missing == "group-membership":
        (host.root / "etc" / "passwd").write_text("HwHiAiUser:x:1000:100::/home/HwHiAiUser:/bin/bash\n")
        (host.root / "etc" / "group").write_text("users:x:100:\nHwHiAiUser:x:1000:\n")
        message = "[ERROR]ERR_NO:0x0096;ERR_DES:HwHiAiUser not right!"
    elif missing == "dkms":
        if shutil.which("dkms", path=os.environ.get("PATH")):
            extra["PATH"] = restricted_path(tmp_path, {"dkms"})
        else:
            extra["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
        message = "[ERROR]The list of missing tools: dkms,"
    else:
        shutil.rmtree(host.root / "usr" / "src")
        message = ("[ERROR]ERR_NO:0x0086;ERR_DES:The kernel headers of the running kernel %s are not installed"
                   % KERNEL)
    proc = host.run(out / DRIVER, "--full", "--install-for-all", "--quiet", **extra)
    assert proc.returncode == 1, proc.output
    assert message in proc.output
    if missing == "headers":
        assert "linux-headers-" + KERNEL in proc.output
    assert host.installed_files() == []
    assert message in host.p("/var/log/ascend_seclog/ascend_install.log").read_text()


def test_driver_headers_in_lib_modules_build(host, built):
    out, _names = built
    shutil.rmtree(host.root / "usr" / "src")
    (host.root / "lib" / "modules" / KERNEL / "build").mkdir(parents=True)
    install_driver(host, out)


def test_driver_install_username_root(host, built):
    out, _names = built
    proc = host.run(out / DRIVER, "--full", "--install-username=root", "--install-usergroup=root", "--quiet")
    assert proc.returncode == 1
    assert "username not permission for root" in proc.output
    proc = install_driver(host, out, "--install-username=root", "--install-usergroup=root")
    assert "set username and usergroup, root:root" in proc.output
    inst = read_kv(host.p("/etc/ascend_install.info"))
    assert inst["UserName"] == inst["UserGroup"] == "root"


def test_driver_arch_mismatch(host, built):
    out, _names = built
    proc = host.run(out / DRIVER, "--full", "--install-for-all", "--quiet", ASCEND_SIM_ARCH="x86_64")
    assert proc.returncode == 1
    assert "[ERROR]Arch mismatch, src package is aarch64, cur os is x86_64" in proc.output
    assert host.installed_files() == []


# ------------------------------------------------------------------------------------------------ firmware
def test_firmware_needs_the_driver(host, built):
    out, _names = built
    proc = host.run(out / FIRMWARE, "--full", "--quiet")
    assert proc.returncode == 1
    assert re.search(r"\[Firmware\] \[[^]]+\] \[ERROR\]ERR_NO:0x0080;ERR_DES:The driver is not installed",
                     proc.output)
    assert host.installed_files() == []


def test_firmware_full_upgrade_uninstall(host, built, newer):
    out, _names = built
    install_driver(host, out)
    proc = host.run(out / FIRMWARE, "--full", "--quiet", "--nox11")
    assert proc.returncode == 0, proc.output
    assert "[INFO]The firmware of [8] chips are successfully upgraded." in proc.output
    assert ("[INFO]Firmware package installed successfully! Reboot now or after driver installation for the "
            "installation/upgrade to take effect.") in proc.output
    assert "[INFO]upgradePercentage: 100%" in proc.output
    info = read_kv(host.p("/usr/local/Ascend/firmware/version.info"))
    assert info["Version"] == "7.5.0.3.220"
    assert info["package_version"] == "24.1.rc1"
    assert set(info) == {"Version", "firmware_version", "package_version", "compatible_version_drv"}
    inst = host.p("/etc/ascend_install.info").read_text().splitlines()
    assert inst[:2] == ["UserName=HwHiAiUser", "UserGroup=HwHiAiUser"]
    assert "Driver_Install_Type=full" in inst and "Driver_Install_For_All=yes" in inst
    assert "Firmware_Install_Type=full" in inst and "Firmware_Install_Path_Param=/usr/local/Ascend" in inst

    proc = host.run(newer / "Ascend-hdk-910b-npu-firmware_7.5.0.5.220.run", "--upgrade", "--quiet")
    assert proc.returncode == 0, proc.output
    assert "Firmware package upgraded successfully!" in proc.output
    assert read_kv(host.p("/usr/local/Ascend/firmware/version.info"))["Version"] == "7.5.0.5.220"

    proc = host.run(out / FIRMWARE, "--uninstall", "--quiet")
    assert proc.returncode == 0, proc.output
    assert not host.p("/usr/local/Ascend/firmware").exists()
    inst = read_kv(host.p("/etc/ascend_install.info"))
    assert "Firmware_Install_Type" not in inst and inst["Driver_Install_Type"] == "full"


def test_driver_uninstall_keeps_firmware_lines(host, built):
    out, _names = built
    install_driver(host, out)
    assert host.run(out / FIRMWARE, "--full", "--quiet").returncode == 0
    assert host.run(out / DRIVER, "--uninstall", "--quiet").returncode == 0
    inst = read_kv(host.p("/etc/ascend_install.info"))
    assert inst["Firmware_Install_Type"] == "full"
    assert not any(k.startswith("Driver_") for k in inst)
    assert host.p("/usr/local/Ascend/firmware/version.info").exists()


# ------------------------------------------------------------------------------------------------ CANN
def install_toolkit(host, out):
    proc = host.run(out / TOOLKIT, "--install", "--install-for-all", "--quiet")
    assert proc.returncode == 0, proc.output
    return proc


def test_toolkit_install(host, built):
    out, _names = built
    proc = install_toolkit(host, out)
    assert re.search(r"^\[Toolkit\] \[\d{8}-\d\d:\d\d:\d\d\] \[INFO\] LogFile:/var/log/ascend_seclog/"
                     r"ascend_toolkit_install.log$", proc.output, re.M)
    assert "Toolkit:  Ascend-cann-toolkit_8.0.0_linux-aarch64 install success, installed in /usr/local/Ascend." \
        in proc.output
    assert "= Summary =" in proc.output
    base = host.p("/usr/local/Ascend/ascend-toolkit")
    assert os.readlink(base / "latest") == "8.0.0"
    info = host.p("/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info").read_text()
    assert info == (
        "package_name=Ascend-cann-toolkit\nversion=8.0.0\ninnerversion=V100R001C20SPC001B251\n"
        "compatible_version=[V100R001C15],[V100R001C17],[V100R001C18],[V100R001C19],[V100R001C20]\n"
        "arch=aarch64\nos=linux\npath=/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux\n")
    set_env = (base / "set_env.sh").read_text()
    for var in ("ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest", "LD_LIBRARY_PATH=", "PATH=",
                "PYTHONPATH=", "ASCEND_OPP_PATH=", "ASCEND_AICPU_PATH=", "ASCEND_HOME_PATH=", "TOOLCHAIN_HOME="):
        assert "export " + var in set_env
    proc = subprocess.run(["bash", "-c", ". '%s' && echo $ASCEND_OPP_PATH" % (base / "set_env.sh")],
                          stdout=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"},
                          check=False)
    assert proc.stdout.strip() == "/usr/local/Ascend/ascend-toolkit/latest/opp"
    assert read_kv(host.p("/etc/Ascend/ascend_cann_install.info")) == {"Install_Path": "/usr/local/Ascend"}
    assert "toolkit_installed_version=[" in (base / "8.0.0" / "version.cfg").read_text()


@pytest.mark.parametrize("answer", ["", "n\n", "maybe\nN\n"])
def test_toolkit_eula_refused(host, built, answer):
    out, _names = built
    proc = host.run(out / TOOLKIT, "--install", "--install-for-all", stdin=answer)
    assert proc.returncode != 0
    assert "Do you accept the EULA to install CANN-Toolkit?[y/n]" in proc.output
    assert re.search(r"\[Toolkit\] \[[^]]+\] \[ERROR\] The EULA is not accepted", proc.output)
    assert host.installed_files() == []


def test_toolkit_eula_accepted(host, built):
    out, _names = built
    proc = host.run(out / TOOLKIT, "--full", stdin="y\n")
    assert proc.returncode == 0, proc.output
    assert "Do you accept the EULA to install CANN-Toolkit?[y/n]" in proc.output
    assert host.p("/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux/ascend_toolkit_install.info").exists()


def test_toolkit_needs_python3(host, built, tmp_path):
    out, _names = built
    proc = host.run(out / TOOLKIT, "--install", "--quiet", PATH=restricted_path(tmp_path, {"python3"}))
    assert proc.returncode == 1
    assert re.search(r"\[Toolkit\] \[\d{8}-\d\d:\d\d:\d\d\] \[ERROR\] There is no python3.7,python3.8,python3.9,"
                     r"python3.10,python3.11 in the current environment !", proc.output)
    assert host.installed_files() == []


def test_toolkit_upgrade_and_uninstall(host, built, newer):
    out, _names = built
    install_toolkit(host, out)
    newer_toolkit = newer / "Ascend-cann-toolkit_8.0.1_linux-aarch64.run"
    proc = host.run(newer_toolkit, "--upgrade", "--quiet")
    assert proc.returncode == 0, proc.output
    base = host.p("/usr/local/Ascend/ascend-toolkit")
    assert os.readlink(base / "latest") == "8.0.1"
    assert not (base / "8.0.0").exists()
    assert read_kv(base / "latest" / "aarch64-linux" / "ascend_toolkit_install.info")["version"] == "8.0.1"
    proc = host.run(newer_toolkit, "--uninstall", "--quiet")
    assert proc.returncode == 0, proc.output
    assert host.installed_files() == []


def test_toolkit_upgrade_needs_a_toolkit(host, built):
    out, _names = built
    proc = host.run(out / TOOLKIT, "--upgrade", "--quiet")
    assert proc.returncode == 1
    assert "[ERROR] Ascend-cann-toolkit is not installed" in proc.output


def test_kernels(host, built):
    out, _names = built
    proc = host.run(out / KERNELS, "--install", "--quiet")
    assert proc.returncode == 1
    assert re.search(r"\[Kernels\] \[[^]]+\] \[ERROR\] Can not find Ascend-cann-toolkit 8.0.0", proc.output)
    assert host.installed_files() == []
    install_toolkit(host, out)
    proc = host.run(out / KERNELS, "--install", "--quiet")
    assert proc.returncode == 0, proc.output
    kdir = host.p("/usr/local/Ascend/ascend-toolkit/8.0.0/opp/built-in/op_impl/ai_core/tbe/kernel/ascend910b")
    assert read_kv(kdir / "version.info")["Version"] == "8.0.0"
    cfg = host.p("/usr/local/Ascend/ascend-toolkit/8.0.0/version.cfg").read_text()
    assert "opp_kernel_installed_version=[" in cfg
    assert not host.p("/usr/local/Ascend/ascend-toolkit/8.0.0/opp_kernel").exists()  # CANN 8.2 and later only
    proc = host.run(out / KERNELS, "--uninstall", "--quiet")
    assert proc.returncode == 0, proc.output
    assert not kdir.exists()
    assert "opp_kernel" not in host.p("/usr/local/Ascend/ascend-toolkit/8.0.0/version.cfg").read_text()


@pytest.fixture(scope="module")
def cann_8_2(tmp_path_factory):
    """CANN 8.2.RC1's toolkit, and its kernels for two SoCs."""
    out = tmp_path_factory.mktemp("cann-8.2")
    build_packages(out, "--only", "toolkit,kernels", "--formats", "run", "--cann", "8.2.RC1")
    build_packages(out, "--only", "kernels", "--formats", "run", "--cann", "8.2.RC1", "--chip", "310p")
    return out


def test_kernels_of_cann_8_2_leave_the_opp_kernel_record_until_the_last_soc_goes(host, cann_8_2):
    """As real CANN 8.2 kernels packages do (the fixture opp_kernel-version.info_8.2.RC1_mindie-2.1.RC1-image.txt)."""
    assert host.run(cann_8_2 / "Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run", "--install", "--quiet").returncode == 0
    for chip in ("910b", "310p"):
        proc = host.run(cann_8_2 / ("Ascend-cann-kernels-%s_8.2.RC1_linux-aarch64.run" % chip), "--install", "--quiet")
        assert proc.returncode == 0, proc.output
    record = host.p("/usr/local/Ascend/ascend-toolkit/8.2.RC1/opp_kernel/version.info")
    values = read_kv(record)
    assert re.fullmatch(r"8\.2\.0\.0\.\d{3}", values["Version"])
    assert values["version_dir"] == "8.2.RC1"
    assert values["timestamp"] == "20250101_000000000"
    assert values["ops_version"] == values["adk_version"] == values["Version"]
    required = {k: v for k, v in values.items() if k.startswith("required_package_")}
    assert required == {"required_package_%s_version" % name: '">=7.6, <=8.2"' for name in (
        "amct_acl", "aoe", "compiler", "fwkplugin", "hccl", "nca", "ncs", "opp", "runtime", "toolkit")}
    proc = host.run(cann_8_2 / "Ascend-cann-kernels-910b_8.2.RC1_linux-aarch64.run", "--uninstall", "--quiet")
    assert proc.returncode == 0, proc.output
    assert read_kv(record) == values  # the 310P kernels are still there
    proc = host.run(cann_8_2 / "Ascend-cann-kernels-310p_8.2.RC1_linux-aarch64.run", "--uninstall", "--quiet")
    assert proc.returncode == 0, proc.output
    assert not record.parent.exists()


def test_nnal(host, built):
    out, _names = built
    proc = host.run(out / NNAL, "--install", "--quiet")
    assert proc.returncode == 1
    assert "[ERROR] Ascend-cann-toolkit is not installed" in proc.output
    assert host.installed_files() == []
    install_toolkit(host, out)
    proc = host.run(out / NNAL, "--install", "--quiet")
    assert proc.returncode == 0, proc.output
    atb = host.p("/usr/local/Ascend/nnal/atb")
    assert os.readlink(atb / "latest") == "8.0.0"
    for f in ("latest/version.info", "8.0.0/atb/cxx_abi_0/version.info", "8.0.0/atb/cxx_abi_1/version.info"):
        lines = (atb / f).read_text().splitlines()
        assert lines[0] == "    Ascend-cann-atb : 8.0.0"
        assert lines[1] == "    Ascend-cann-atb Version : 8.0.0.B020"
        assert lines[2] == "    Platform : aarch64"
        assert lines[3].startswith("    branch : ") and lines[4].startswith("    commit id : ")
    assert "cxx_abi" in (atb / "set_env.sh").read_text()
    proc = host.run(out / NNAL, "--uninstall", "--quiet")
    assert proc.returncode == 0, proc.output
    assert not atb.exists()


# ------------------------------------------------------------------------------------------------ docker runtime
def test_docker_runtime_docker_scene(host, built):
    out, _names = built
    daemon = host.p("/etc/docker/daemon.json")
    daemon.parent.mkdir(parents=True)
    daemon.write_text('{"log-driver": "json-file"}\n')
    proc = host.run(out / DOCKER_RUNTIME, "--install", "--install-scene=docker", "--quiet")
    assert proc.returncode == 0, proc.output
    assert "[INFO] please reboot daemon and container engine to take effect" in proc.output
    assert "[INFO] The version of Ascend Docker Runtime is: 6.0.0" in proc.output
    rt = host.p("/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime")
    assert os.access(rt, os.X_OK)
    assert read_kv(host.p("/usr/local/Ascend/Ascend-Docker-Runtime/version.info"))["Version"] == "6.0.0"
    import json
    data = json.loads(daemon.read_text())
    assert data["log-driver"] == "json-file"
    assert data["default-runtime"] == "ascend"
    assert data["runtimes"]["ascend"]["path"] == "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"
    proc = host.run(out / DOCKER_RUNTIME, "--uninstall", "--quiet")
    assert proc.returncode == 0, proc.output
    assert not rt.exists()
    assert json.loads(daemon.read_text()) == {"log-driver": "json-file"}


def test_docker_runtime_containerd_scene(host, built):
    out, _names = built
    proc = host.run(out / DOCKER_RUNTIME, "--install", "--install-scene=containerd", "--injection-mode=cdi")
    assert proc.returncode == 0, proc.output
    assert "[INFO] install scene is 'containerd'." in proc.output
    toml = host.p("/etc/containerd/config.toml").read_text()
    assert 'BinaryName = "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"' in toml
    proc = host.run(out / DOCKER_RUNTIME, "--install", "--install-scene=podman")
    assert proc.returncode == 1
    assert "[ERROR] install scene 'podman' is not supported" in proc.output
    proc = host.run(out / DOCKER_RUNTIME, "--uninstall")
    assert proc.returncode == 0, proc.output
    assert "ascend" not in host.p("/etc/containerd/config.toml").read_text()


# ------------------------------------------------------------------------------------------------ .deb
def dpkg_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", str(deb), field], stdout=subprocess.PIPE, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("name,package,scripts", [
    (DRIVER_DEB, "ascend-hdk-910b-npu-driver", {"postinst", "prerm"}),
    (TOOLKIT_DEB, "ascend-cann-toolkit", {"preinst", "postinst", "prerm"}),
])
def test_deb_control_and_contents(built, name, package, scripts):
    out, _names = built
    deb = out / name
    assert dpkg_field(deb, "Package") == package
    assert dpkg_field(deb, "Architecture") == "arm64"
    assert dpkg_field(deb, "Version") == ("24.1.rc1" if "driver" in name else "8.0.0")
    info = subprocess.run(["dpkg-deb", "--info", str(deb)], stdout=subprocess.PIPE, text=True, check=True).stdout
    for script in scripts:
        assert re.search(r"\b%s\b" % script, info), script
    contents = subprocess.run(["dpkg-deb", "--contents", str(deb)], stdout=subprocess.PIPE, text=True,
                              check=True).stdout
    component = "driver" if "driver" in name else "toolkit"
    assert "./usr/lib/ascend-sim/packages/%s/install.sh" % component in contents
    assert "./usr/lib/ascend-sim/packages/%s/package.conf" % component in contents
    if component == "driver":
        assert "./usr/lib/ascend-sim/packages/driver/files/ascend-sim" in contents
    assert "root/root" in contents


def test_deb_x86_architecture(tmp_path):
    names = build_packages(tmp_path, "--arch", "x86_64", "--only", "driver,toolkit", "--formats", "deb")
    assert names == ["Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.deb",
                     "Ascend-cann-toolkit_8.0.0_linux-x86-64.deb"]
    for name in names:
        assert dpkg_field(tmp_path / name, "Architecture") == "amd64"


def test_deb_toolkit_preinst_without_python3(host, built, tmp_path):
    out, _names = built
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", str(out / TOOLKIT_DEB), str(control)], check=True)
    proc = host.run(control / "preinst", "install", PATH=restricted_path(tmp_path, {"python3"}))
    assert proc.returncode == 1
    assert re.fullmatch(r"\[Toolkit\] \[\d{8}-\d\d:\d\d:\d\d\] \[ERROR\] There is no python3.7,python3.8,"
                        r"python3.9,python3.10,python3.11 in the current environment !\n", proc.output)
    assert host.run(control / "preinst", "install").returncode == 0


def test_deb_driver_maintainer_scripts_install_and_remove(host, built, tmp_path):
    """What dpkg -i / dpkg -r would do, against the temporary root: unpack, postinst, prerm."""
    out, _names = built
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", str(out / DRIVER_DEB), str(control)], check=True)
    subprocess.run(["dpkg-deb", "-x", str(out / DRIVER_DEB), str(host.root)], check=True)
    proc = host.run(control / "postinst", "configure")
    assert proc.returncode == 0, proc.output
    assert "Driver package installed successfully!" in proc.output
    assert read_kv(host.p("/usr/local/Ascend/driver/version.info"))["Version"] == "24.1.rc1"
    assert read_kv(host.p("/etc/ascend_install.info"))["Driver_Install_For_All"] == "yes"
    proc = host.run(control / "postinst", "configure", "24.0.0")
    assert proc.returncode == 0, proc.output
    assert "Driver package upgraded successfully!" in proc.output
    proc = host.run(control / "prerm", "upgrade", "24.1.rc2")
    assert proc.returncode == 0
    assert host.p("/usr/local/Ascend/driver/version.info").exists()
    proc = host.run(control / "prerm", "remove")
    assert proc.returncode == 0, proc.output
    assert not host.p("/usr/local/Ascend/driver").exists()
    assert not host.p("/etc/ascend_install.info").exists()


def test_deb_driver_postinst_fails_without_hwhiaiuser(host, built, tmp_path):
    out, _names = built
    host.set_users(hwhiaiuser=False)
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", str(out / DRIVER_DEB), str(control)], check=True)
    subprocess.run(["dpkg-deb", "-x", str(out / DRIVER_DEB), str(host.root)], check=True)
    proc = host.run(control / "postinst", "configure")
    assert proc.returncode == 1
    assert "HwHiAiUser not exists! Please add HwHiAiUser" in proc.output
    assert not host.p("/usr/local/Ascend/driver").exists()
