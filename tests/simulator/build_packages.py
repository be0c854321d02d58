#!/usr/bin/env python
"""Build fake Huawei Ascend installer packages in the real formats, for tests (no NPU, no real packages).

Usage:
  build_packages.py --out DIR [--arch aarch64|x86_64] [--chip 910b] [--driver 24.1.rc1]
                    [--firmware 7.5.0.3.220] [--cann 8.0.0] [--docker-runtime 6.0.0]
                    [--only driver,firmware,toolkit,kernels,nnal,docker-runtime] [--formats run,deb]
                    [--corrupt NAME-SUBSTRING] [--sim PATH]

Prints the names of the files it built, one per line. Python 3 standard library only; needs `makeself`
(Debian's 2.4.x) for the .run files and `dpkg-deb` for the .deb files. Same arguments, same bytes.

What it builds (names as Huawei names them; <arch> is aarch64 or x86-64):
  Ascend-hdk-<chip>-npu-driver_<ver>_linux-<arch>.run     (+ .deb, package ascend-hdk-<chip>-npu-driver)
  Ascend-hdk-<chip>-npu-firmware_<ver>.run
  Ascend-cann-toolkit_<ver>_linux-<arch>.run              (+ .deb, package ascend-cann-toolkit)
  Ascend-cann-kernels-<chip>_<ver>_linux-<arch>.run
  Ascend-cann-nnal_<ver>_linux-<arch>.run
  Ascend-docker-runtime_<ver>_linux-<arch>.run

The .run files are real makeself archives (SHA256 checksum, so `--check` prints the same
"Verifying archive integrity...  100%   SHA256 checksums are OK. All good." as Huawei's). Stock makeself rejects
flags it does not know, while Huawei's headers hand the installer flags (--full, --install-for-all, ...) to the
embedded install script. So the header is derived at build time from makeself's own makeself-header.sh by
a few small, checked text edits (see HEADER_EDITS): unknown `--flags` and `--quiet` are collected and passed to
the embedded script; a verified SHA256 silences the "does not contain an MD5/CRC checksum" notes; and for the
firmware only, `--check` verifies the archive and then runs the installer's own check, like Huawei's firmware.
All the makeself options keep working: --check --quiet --nox11 --noexec --target --list --info --keep.

The installer, fake-installer.sh beside this file (POSIX sh, shipped as install.sh in every package with a
package.conf naming its component and versions), is what the .run header and the .deb maintainer scripts run.
Every host path it touches is prefixed by $ASCEND_SIM_ROOT (default empty), so tests can install into a
temporary directory. With ASCEND_SIM_ROOT set, the driver's user/group check (HwHiAiUser, or
--install-username/--install-usergroup) reads $ASCEND_SIM_ROOT/etc/passwd and $ASCEND_SIM_ROOT/etc/group instead
of the system database (getent), and root is not required. ASCEND_SIM_KERNEL overrides `uname -r` for the kernel
headers check, ASCEND_SIM_ARCH overrides `uname -m` for the architecture check. See the comment at the top of
fake-installer.sh for the rest.
"""

import argparse
import collections
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
INSTALLER = os.path.join(HERE, "fake-installer.sh")

COMPONENTS = ("driver", "firmware", "toolkit", "kernels", "nnal", "docker-runtime")
DEB_COMPONENTS = ("driver", "toolkit")
FORMATS = ("run", "deb")

# Fixed timestamps make the output byte-for-byte reproducible.
SOURCE_DATE_EPOCH = 1735689600  # 2025-01-01 00:00:00 UTC
PACKAGING_DATE = "Wed Jan 1 00:00:00 UTC 2025"

# Where the .deb packages keep the installer; their maintainer scripts run it from there.
DEB_PKG_DIR = "/usr/lib/ascend-sim/packages"

VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+~-]*$")
CHIP_RE = re.compile(r"^[a-z0-9]+$")

# --------------------------------------------------------------------------------------------------------------
# The makeself header edits. Each (old, new) must match exactly `count` times in makeself-header.sh, else the
# build stops (a different makeself would need a look). The header is a shell heredoc, hence the backslashes.
# --------------------------------------------------------------------------------------------------------------
HEADER_EDITS = [
    # 1. Say what was changed, in the archive itself.
    (
        '# This script was generated using Makeself $MS_VERSION\n',
        '# This script was generated using Makeself $MS_VERSION\n'
        '# Header edited by the kunpeng_ascend.vllm test simulator (tests/simulator/build_packages.py):\n'
        '# unknown --flags and --quiet are passed on to the install script, as Huawei\'s Ascend packages do.\n',
        1,
    ),
    # 2. A list of the arguments to pass on to the embedded script.
    ('initargs="\\$@"\n', 'initargs="\\$@"\nms_passthru=""\n', 1),
    # 3. --quiet silences makeself and is also the installers' "accept the EULA, ask nothing".
    (
        '    -q | --quiet)\n\tquiet=y\n\tnoprogress=y\n\tshift\n',
        '    -q | --quiet)\n\tquiet=y\n\tnoprogress=y\n\tms_passthru="\\$ms_passthru --quiet"\n\tshift\n',
        1,
    ),
    # 4. Unknown --flags go to the install script instead of "Unrecognized flag" (single-quoted; an argument
    #    holding a single quote is refused).
    (
        '    -*)\n\techo Unrecognized flag : "\\$1" >&2\n\tMS_Help\n\texit 1\n\t;;\n',
        '    -*)\n'
        '\tcase "\\$1" in *\\\'*) echo "Unsupported character in argument: \\$1" >&2; exit 1;; esac\n'
        '\tms_passthru="\\$ms_passthru \'\\$1\'"\n'
        '\tshift\n'
        '\t;;\n',
        1,
    ),
    # 5. Run the script with them (both the --confirm and the normal call).
    (
        'eval "\\"\\$script\\" \\$scriptargs \\"\\\\\\$@\\""',
        'eval "\\"\\$script\\" \\$scriptargs \\$ms_passthru \\"\\\\\\$@\\""',
        2,
    ),
    # 6. With a good SHA256 the MD5/CRC "does not contain ..." notes are moot (Huawei's --check prints none).
    ('\t\t\t\tcrc="0000000000";\n', '\t\t\t\tcrc="0000000000"; verb=n\n', 1),
]
# Firmware only: `--check` verifies, then extracts and runs the installer with --check (Huawei's firmware prints
# "Verifying archive integrity..." twice, then the installer's Start time / End time lines).
HEADER_EDIT_CHECK_RUNS_INSTALLER = (
    '    --check)\n\tMS_Check "\\$0" y\n\texit 0\n\t;;\n',
    '    --check)\n\tMS_Check "\\$0" y\n\tms_passthru="\\$ms_passthru --check"\n\tshift\n\t;;\n',
    1,
)

PLACEHOLDER_SIM = r'''#!/usr/bin/env python3
"""Placeholder for tests/simulator/ascend-sim (not found when these packages were built)."""
import os
import sys

name = os.path.basename(sys.argv[0])
sys.stderr.write("%s: simulator placeholder (ascend-sim was not available at package build time)\n" % name)
sys.exit(1)
'''

# --------------------------------------------------------------------------------------------------------------
# .deb maintainer scripts: the same installer, run from where dpkg unpacked it.
# --------------------------------------------------------------------------------------------------------------
DEB_POSTINST = r'''#!/bin/sh
# postinst of the simulated {pkg}: runs the same installer as the .run file.
set -e
PKG_DIR="${{ASCEND_SIM_ROOT%/}}{pkgdir}"
case "$1" in
    configure)
        {configure}
        ;;
esac
exit 0
'''

DEB_CONFIGURE = {
    "driver": (
        'INFO="${ASCEND_SIM_ROOT%/}/etc/ascend_install.info"\n'
        '        if [ -f "$INFO" ] && grep -q "^Driver_Install_Type=" "$INFO"; then mode=--upgrade; else mode=--full; fi\n'
        '        sh "$PKG_DIR/install.sh" $mode --install-for-all --quiet || exit 1'
    ),
    "toolkit": 'sh "$PKG_DIR/install.sh" --install --install-for-all --quiet || exit 1',
}

DEB_PRERM = r'''#!/bin/sh
# prerm of the simulated {pkg}: uninstalls what the installer put in place (not on upgrade).
PKG_DIR="${{ASCEND_SIM_ROOT%/}}{pkgdir}"
case "$1" in
    remove|deconfigure)
        sh "$PKG_DIR/install.sh" --uninstall --quiet || true
        ;;
esac
exit 0
'''

DEB_TOOLKIT_PREINST = r'''#!/bin/sh
# preinst of the simulated ascend-cann-toolkit: like the real one, refuse without python3.
case "$1" in
    install|upgrade)
        if ! command -v python3 >/dev/null 2>&1; then
            line="[Toolkit] [$(date +%Y%m%d-%H:%M:%S)] [ERROR] There is no python3.7,python3.8,python3.9,python3.10,python3.11 in the current environment !"
            echo "$line"
            log_dir="${ASCEND_SIM_ROOT%/}/var/log/ascend_seclog"
            mkdir -p "$log_dir" 2>/dev/null && echo "$line" >>"$log_dir/ascend_install.log"
            exit 1
        fi
        ;;
esac
exit 0
'''


# --------------------------------------------------------------------------------------------------------------
# Version data (what the version files say). Known versions use values seen on real hosts; others get
# deterministic values of the same shape.
# --------------------------------------------------------------------------------------------------------------
def _num(text, modulo):
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % modulo


def _major(version, default):
    m = re.match(r"(\d+)", version)
    return int(m.group(1)) if m else default


def driver_data(version):
    known = {
        "24.1.rc1": ("7.35.19", "V100R001C15SPC006B220", "[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]",
                     "[7.0.0,7.7.99]"),
        "25.3.rc1": ("7.35.23", "V100R001C23SPC002B212",
                     "[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C22],[V100R001C23]", "[7.0.0,8.9.9]"),
    }
    if version.lower() in known:
        hal, inner, compat, compat_fw = known[version.lower()]
    else:
        major = _major(version, 24)
        c = max(10, major - 9)
        hal = "7.35.%d" % max(1, major - 5)
        inner = "V100R001C%dSPC%03dB%03d" % (c, 1 + _num(version, 9), 100 + _num("b" + version, 900))
        compat = ",".join("[V100R001C%d]" % x for x in range(c - 3, c + 1))
        compat_fw = "[7.0.0,8.9.9]" if major >= 25 else "[7.0.0,7.7.99]"
    return {
        "DRV_ASCENDHAL_VERSION": hal,
        "DRV_INNERVERSION": inner,
        "DRV_COMPATIBLE_VERSION": compat,
        "DRV_COMPATIBLE_VERSION_FW": compat_fw,
    }


def firmware_data(driver_version):
    parts = driver_version.split(".")
    ranges = ["[%s,%s.]" % (driver_version, driver_version)]
    if len(parts) >= 2:
        base = "%s.%s.0" % (parts[0], parts[1])
        if base != driver_version:
            ranges.append("[%s,%s.]" % (base, base))
    return {"FW_PACKAGE_VERSION": driver_version, "FW_COMPATIBLE_VERSION_DRV": ",".join(ranges)}


def _cann_release(version):
    """(major, minor) of a CANN version: 8.2.RC1 -> (8, 2)."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else (8, 0)


def cann_data(version):
    known = {
        "8.0.0": ("V100R001C20SPC001B251", "[V100R001C15],[V100R001C17],[V100R001C18],[V100R001C19],[V100R001C20]"),
        "8.5.0": ("V100R001C25B048",
                  "[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]"),
    }
    major, minor = _cann_release(version)
    if version in known:
        inner, compat = known[version]
    else:
        c = 20 + (major - 8) * 10 + minor
        inner = "V100R001C%dB%03d" % (c, _num(version, 1000))
        compat = ",".join("[V100R001C%d]" % x for x in range(c - 4, c + 1))
    dotted = "%d.%d.0.1.%d" % (major - 1, 6 + minor, 200 + _num("d" + version, 100))
    return {"CANN_INNERVERSION": inner, "CANN_COMPATIBLE_VERSION": compat, "CANN_INNER_DOTTED": dotted}


def kernels_data(version):
    """The toolkit's data, and from CANN 8.2 on what the kernels package writes to <toolkit>/opp_kernel/version.info
    as real ones do (sample: the fixture opp_kernel-version.info_8.2.RC1_mindie-2.1.RC1-image.txt)."""
    data = cann_data(version)
    major, minor = _cann_release(version)
    if (major, minor) >= (8, 2):
        data["OPS_BUILD"] = "%d.%d.0.0.%d" % (major, minor, 200 + _num("o" + version, 100))
        data["OPS_TIMESTAMP"] = time.strftime("%Y%m%d_%H%M%S000", time.gmtime(SOURCE_DATE_EPOCH))
        data["OPS_REQUIRED_RANGE"] = ">=7.6, <=%d.%d" % (major, minor)
    return data


def nnal_data(version):
    return {
        "ATB_BUILD_VERSION": "%s.B020" % version,
        "ATB_BRANCH": "br_release_cann_%s_20250101" % version,
        "ATB_COMMIT": hashlib.sha1(("atb-" + version).encode()).hexdigest(),
    }


# --------------------------------------------------------------------------------------------------------------
# The build
# --------------------------------------------------------------------------------------------------------------
class BuildError(Exception):
    pass


def find_makeself_header():
    candidates = ["/usr/share/makeself/makeself-header.sh"]
    exe = shutil.which("makeself") or shutil.which("makeself.sh")
    if exe:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(exe)), "makeself-header.sh"))
    for c in candidates:
        if os.path.isfile(c):
            return c
    raise BuildError("makeself-header.sh not found (looked in %s)" % ", ".join(candidates))


def make_header(source_text, check_runs_installer):
    text = source_text
    edits = list(HEADER_EDITS)
    if check_runs_installer:
        edits.append(HEADER_EDIT_CHECK_RUNS_INSTALLER)
    for old, new, count in edits:
        found = text.count(old)
        if found != count:
            raise BuildError("makeself header: expected %d match(es) of %r, found %d; this makeself version "
                             "is not supported" % (count, old[:60], found))
        text = text.replace(old, new)
    return text


class Spec:
    """One package: its component, file names, label and configuration."""

    def __init__(self, component, args):
        self.component = component
        arch_name = "aarch64" if args.arch == "aarch64" else "x86-64"
        self.arch = args.arch
        self.arch_name = arch_name
        self.deb_arch = "arm64" if args.arch == "aarch64" else "amd64"
        chip = args.chip
        if component == "driver":
            self.version = args.driver
            self.base = "Ascend-hdk-%s-npu-driver_%s_linux-%s" % (chip, args.driver, arch_name)
            self.label = "ASCEND DRIVER RUN PACKAGE"
            self.pkg_name = "Ascend-hdk-%s-npu-driver" % chip
            self.deb_name = "ascend-hdk-%s-npu-driver" % chip
            self.extra = driver_data(args.driver)
        elif component == "firmware":
            self.version = args.firmware
            self.base = "Ascend-hdk-%s-npu-firmware_%s" % (chip, args.firmware)
            self.label = "ASCEND-HDK-%s-NPU FIRMWARE RUN PACKAGE" % chip.upper()
            self.pkg_name = "Ascend-hdk-%s-npu-firmware" % chip
            self.deb_name = None
            self.extra = firmware_data(args.driver)
        elif component == "toolkit":
            self.version = args.cann
            self.base = "Ascend-cann-toolkit_%s_linux-%s" % (args.cann, arch_name)
            self.label = "ASCEND_RUN_PACKAGE"
            self.pkg_name = "Ascend-cann-toolkit"
            self.deb_name = "ascend-cann-toolkit"
            self.extra = cann_data(args.cann)
        elif component == "kernels":
            self.version = args.cann
            self.base = "Ascend-cann-kernels-%s_%s_linux-%s" % (chip, args.cann, arch_name)
            self.label = "ASCEND_RUN_PACKAGE"
            self.pkg_name = "Ascend-cann-kernels-%s" % chip
            self.deb_name = None
            self.extra = kernels_data(args.cann)
        elif component == "nnal":
            self.version = args.cann
            self.base = "Ascend-cann-nnal_%s_linux-%s" % (args.cann, arch_name)
            self.label = "ASCEND_RUN_PACKAGE"
            self.pkg_name = "Ascend-cann-nnal"
            self.deb_name = None
            self.extra = nnal_data(args.cann)
        elif component == "docker-runtime":
            self.version = args.docker_runtime
            self.base = "Ascend-docker-runtime_%s_linux-%s" % (args.docker_runtime, arch_name)
            self.label = "ascend-docker-runtime"
            self.pkg_name = "Ascend-docker-runtime"
            self.deb_name = None
            self.extra = {}
        else:
            raise BuildError("unknown component %s" % component)
        self.chip = chip

    def conf(self, file_name):
        values = {
            "COMPONENT": self.component,
            "PKG_NAME": self.pkg_name,
            "PKG_FILE": file_name,
            "VERSION": self.version,
            "PKG_ARCH": self.arch,
            "PKG_ARCH_NAME": self.arch_name,
            "CHIP": self.chip,
        }
        values.update(self.extra)
        lines = ["# Simulated %s package configuration (generated by build_packages.py)" % self.pkg_name]
        lines += ["%s=%s" % (k, shlex.quote(v)) for k, v in values.items()]
        return "\n".join(lines) + "\n"


def write_file(path, text, mode):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="\n") as f:
        f.write(text)
    os.chmod(path, mode)


# The programs the packages carry: the installer (every package) and the npu-smi/hccn_tool simulator (the driver).
Programs = collections.namedtuple("Programs", ["installer", "sim"])


def fill_payload(spec, directory, file_name, programs):
    os.makedirs(directory, exist_ok=True)
    os.chmod(directory, 0o755)
    write_file(os.path.join(directory, "install.sh"), programs.installer, 0o755)
    write_file(os.path.join(directory, "package.conf"), spec.conf(file_name), 0o644)
    if spec.component == "driver":
        write_file(os.path.join(directory, "files", "ascend-sim"), programs.sim, 0o755)
        os.chmod(os.path.join(directory, "files"), 0o755)


def normalise_tree(top):
    """Fixed modes (no umask influence) and timestamps, for reproducible archives."""
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames + dirnames:
            os.utime(os.path.join(dirpath, name), (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH), follow_symlinks=False)
    os.utime(top, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))


def run(cmd, cwd, env=None):
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    if proc.returncode != 0:
        raise BuildError("%s failed (rc %d):\n%s" % (cmd[0], proc.returncode, proc.stdout))
    return proc.stdout


def build_env(work):
    """Environment for makeself/dpkg-deb. makeself compresses with `gzip -c9 <file`, which records the temporary
    tar's mtime in the gzip header: a `gzip` wrapper first on PATH adds -n (no name, no time stamp)."""
    bin_dir = os.path.join(work, "bin")
    wrapper = os.path.join(bin_dir, "gzip")
    real_gzip = shutil.which("gzip")
    if real_gzip and not os.path.exists(wrapper):
        write_file(wrapper, '#!/bin/sh\nexec %s -n "$@"\n' % shlex.quote(real_gzip), 0o755)
    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["SOURCE_DATE_EPOCH"] = str(SOURCE_DATE_EPOCH)
    env["LC_ALL"] = "C"
    env.pop("GZIP", None)
    return env


def build_run(spec, work, out_dir, header_source, programs):
    file_name = spec.base + ".run"
    stage = os.path.join(work, "run-" + spec.component)
    payload_name = spec.base
    os.makedirs(stage)
    fill_payload(spec, os.path.join(stage, payload_name), file_name, programs)
    normalise_tree(os.path.join(stage, payload_name))
    header = make_header(header_source, check_runs_installer=(spec.component == "firmware"))
    write_file(os.path.join(stage, "ascend-makeself-header.sh"), header, 0o644)
    # Relative paths only, so that the build command makeself records (--info) is the same on every build.
    run(["makeself", "--quiet", "--sha256", "--nomd5", "--nocrc", "--nox11",
         "--header", "./ascend-makeself-header.sh",
         "--packaging-date", PACKAGING_DATE,
         "--tar-extra", "--owner=0 --group=0 --numeric-owner --mtime=@%d" % SOURCE_DATE_EPOCH,
         payload_name, file_name, spec.label, "./install.sh"], cwd=stage, env=build_env(work))
    dest = os.path.join(out_dir, file_name)
    shutil.move(os.path.join(stage, file_name), dest)
    os.chmod(dest, 0o755)
    return file_name


def build_deb(spec, work, out_dir, programs):
    file_name = spec.base + ".deb"
    root = os.path.join(work, "deb-" + spec.component, "root")
    pkgdir = "%s/%s" % (DEB_PKG_DIR, spec.component)
    fill_payload(spec, root + pkgdir, file_name, programs)
    control_dir = os.path.join(root, "DEBIAN")
    write_file(os.path.join(control_dir, "postinst"),
               DEB_POSTINST.format(pkg=spec.deb_name, pkgdir=pkgdir, configure=DEB_CONFIGURE[spec.component]),
               0o755)
    write_file(os.path.join(control_dir, "prerm"), DEB_PRERM.format(pkg=spec.deb_name, pkgdir=pkgdir), 0o755)
    if spec.component == "toolkit":
        write_file(os.path.join(control_dir, "preinst"), DEB_TOOLKIT_PREINST, 0o755)
    size = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        if os.path.basename(dirpath) == "DEBIAN":
            continue
        size += sum(os.path.getsize(os.path.join(dirpath, f)) for f in filenames)
    what = {"driver": "NPU driver", "toolkit": "CANN toolkit"}[spec.component]
    control = (
        "Package: %s\n"
        "Version: %s\n"
        "Architecture: %s\n"
        "Maintainer: kunpeng_ascend.vllm test simulator <noreply@example.invalid>\n"
        "Installed-Size: %d\n"
        "Section: misc\n"
        "Priority: optional\n"
        "Description: Simulated Huawei Ascend %s %s (test fake)\n"
        " Fake %s for testing automation without an NPU: its maintainer scripts run\n"
        " the same simulated installer as %s.run. Contains no real driver or library.\n"
    ) % (spec.deb_name, spec.version, spec.deb_arch, (size + 1023) // 1024 + 4, what, spec.version, what, spec.base)
    write_file(os.path.join(control_dir, "control"), control, 0o644)
    normalise_tree(root)
    dest = os.path.join(out_dir, file_name)
    run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", root, dest], cwd=work, env=build_env(work))
    os.chmod(dest, 0o644)
    return file_name


def corrupt_run(path):
    """Flip bytes in the middle of the compressed payload (size unchanged) so the SHA256 check fails."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    m = re.search(rb'\nskip="(\d+)"', data)
    if not m:
        raise BuildError("%s: no skip= line in the makeself header" % path)
    lines = int(m.group(1))
    offset = 0
    for _line in range(lines):
        offset = data.index(b"\n", offset) + 1
    middle = offset + (len(data) - offset) // 2
    for i in range(middle, min(middle + 8, len(data))):
        data[i] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(data))


def parse_args(argv):
    p = argparse.ArgumentParser(description="Build fake Huawei Ascend packages (.run makeself archives, .deb) "
                                            "for tests.")
    p.add_argument("--out", required=True, help="directory to write the packages to (created)")
    p.add_argument("--arch", default="aarch64", choices=("aarch64", "x86_64"))
    p.add_argument("--chip", default="910b")
    p.add_argument("--driver", default="24.1.rc1")
    p.add_argument("--firmware", default="7.5.0.3.220")
    p.add_argument("--cann", default="8.0.0")
    p.add_argument("--docker-runtime", default="6.0.0")
    p.add_argument("--only", default=",".join(COMPONENTS),
                   help="comma-separated components: %s" % ",".join(COMPONENTS))
    p.add_argument("--formats", default="run,deb", help="comma-separated: run,deb")
    p.add_argument("--corrupt", metavar="NAME-SUBSTRING",
                   help="damage the payload of the .run files whose name contains this")
    p.add_argument("--sim", default=os.path.join(HERE, "ascend-sim"),
                   help="the npu-smi/hccn_tool simulator program to ship in the driver (default: the sibling "
                        "ascend-sim; a placeholder when it does not exist)")
    args = p.parse_args(argv)
    only = [c.strip() for c in args.only.split(",") if c.strip()]
    bad = [c for c in only if c not in COMPONENTS]
    if bad or not only:
        p.error("--only: unknown component(s) %s (known: %s)" % (",".join(bad) or "none", ",".join(COMPONENTS)))
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        p.error("--formats: unknown format(s) %s (known: run,deb)" % (",".join(bad) or "none"))
    for name in ("driver", "firmware", "cann", "docker_runtime"):
        if not VERSION_RE.match(getattr(args, name)):
            p.error("--%s: invalid version %r" % (name.replace("_", "-"), getattr(args, name)))
    if not CHIP_RE.match(args.chip):
        p.error("--chip: invalid chip %r (lower-case letters and digits, e.g. 910b)" % args.chip)
    args.only = [c for c in COMPONENTS if c in only]
    args.formats = [f for f in FORMATS if f in formats]
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if os.path.isfile(args.sim):
        with open(args.sim) as f:
            sim_text = f.read()
    else:
        sys.stderr.write("build_packages.py: %s not found, shipping a placeholder npu-smi/hccn_tool\n" % args.sim)
        sim_text = PLACEHOLDER_SIM
    with open(INSTALLER) as f:
        programs = Programs(installer=f.read(), sim=sim_text)
    try:
        if "run" in args.formats and not shutil.which("makeself"):
            raise BuildError("makeself is not installed (needed for the .run packages)")
        if "deb" in args.formats and any(c in DEB_COMPONENTS for c in args.only) and not shutil.which("dpkg-deb"):
            raise BuildError("dpkg-deb is not installed (needed for the .deb packages)")
        header_source = None
        if "run" in args.formats:
            with open(find_makeself_header()) as f:
                header_source = f.read()
        out_dir = os.path.abspath(args.out)
        os.makedirs(out_dir, exist_ok=True)
        built = []
        with tempfile.TemporaryDirectory(prefix="ascend-pkgs-") as work:
            for component in args.only:
                spec = Spec(component, args)
                if "run" in args.formats:
                    built.append(build_run(spec, work, out_dir, header_source, programs))
                if "deb" in args.formats and component in DEB_COMPONENTS:
                    built.append(build_deb(spec, work, out_dir, programs))
        if args.corrupt:
            for name in built:
                if name.endswith(".run") and args.corrupt in name:
                    corrupt_run(os.path.join(out_dir, name))
    except BuildError as e:
        sys.stderr.write("build_packages.py: %s\n" % e)
        return 1
    for name in built:
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
