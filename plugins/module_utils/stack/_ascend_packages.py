# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Huawei Ascend packages (``.run``, ``.deb``, ``.rpm``) for the ascend_package module: what a package file is
(component, version, architecture, from Huawei's file names or the package's control data), which version of a
component is installed (from the files the Ascend installers write, read by ``_ascend_files`` as for the facts, or
from dpkg/rpm), what to do about it (versions compare by ``_version``), the command lines that install, upgrade
and remove a package (one backend class per format, each fulfilling the abstract PackageBackend), whether a package
file is whole before anything runs it, what an installer's output and log say when it fails, the host-wide lock that
keeps two runs from installing at once, and what one task does with all of that (``apply_package``). Nothing here
touches AnsibleModule: commands run through the CommandRunner the backends are given, and problems are raised as
PackageError.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import fcntl
import os
import re
import stat
import struct
import time

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._architecture import (
    host_architecture,
    normalise_arch,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import (
    RootFS,
    UnreadableFile,
    parse_key_values,
    read_installed,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import (
    compare_ascend_versions,
    parse_ascend_version,
)

COMPONENTS = ('driver', 'firmware', 'toolkit', 'kernels', 'nnal', 'docker-runtime')
# The Ascend installers log here; the CANN toolkit also (or only, on some releases) in its own file.
INSTALL_LOGS = ('/var/log/ascend_seclog/ascend_install.log', '/var/log/ascend_seclog/ascend_toolkit_install.log')

# The first-install flag of each component's .run: --full for the HDK (driver, firmware), --install for the rest.
INSTALL_FLAG = {'driver': '--full', 'firmware': '--full', 'toolkit': '--install', 'kernels': '--install',
                'nnal': '--install', 'docker-runtime': '--install'}
# Components installed for a run user: on a first install their .run takes --install-for-all, and
# --install-username/--install-usergroup.
RUN_USER_COMPONENTS = ('driver', 'toolkit', 'kernels', 'nnal')
# Components that record their install path and want it again on --upgrade/--uninstall: the CANN packages and the
# Docker runtime (the driver and firmware read theirs from /etc/ascend_install.info).
PATH_ON_EVERY_ACTION = ('toolkit', 'kernels', 'nnal', 'docker-runtime')
# CANN .run files accept their EULA with --quiet; the Docker runtime asks on its standard input.
EULA_COMPONENTS = ('toolkit', 'kernels', 'nnal', 'docker-runtime')
STDIN_EULA_COMPONENTS = ('docker-runtime',)

# Huawei's file names: <stem>_<version>[_linux-<arch>].<ext>; the stems, in the order they are tried.
_ARCH_RE = r'(?P<arch>aarch64|arm64|x86[-_]64|amd64)'
_VERSION_RE = r'(?P<version>[0-9][0-9A-Za-z.]*)'
COMPONENT_STEMS = (
    ('driver', r'Ascend-hdk-(?P<chip>[0-9a-z]+)-npu-driver'),
    ('firmware', r'Ascend-hdk-(?P<chip>[0-9a-z]+)-npu-firmware'),
    ('toolkit', r'Ascend-cann-toolkit'),
    ('kernels', r'Ascend-cann-kernels-(?P<chip>[0-9a-z]+)'),
    ('kernels', r'Atlas-(?P<chip>A3)-cann-kernels'),
    ('kernels', r'Ascend-cann-(?P<chip>[0-9a-z]+)-ops'),
    ('nnal', r'Ascend-cann-nnal'),
    ('docker-runtime', r'Ascend-docker-runtime'),
)
_FILE_NAME_RES = tuple(
    (component, re.compile(r'^%s_%s(?:_linux-%s)?\.(?:run|deb|rpm)$' % (stem, _VERSION_RE, _ARCH_RE), re.I))
    for component, stem in COMPONENT_STEMS)
_PACKAGE_NAME_RES = tuple((component, re.compile(r'^%s$' % stem, re.I)) for component, stem in COMPONENT_STEMS)
_ANY_RUN_NAME_RE = re.compile(r'_%s(?:_linux-%s)?\.run$' % (_VERSION_RE, _ARCH_RE), re.I)

REBOOT_RE = re.compile(r'\breboot (?:needed|now|required)\b', re.I)
ERROR_LINE_RE = re.compile(r'\[ERROR\]|ERR_NO:|^dpkg: error|^error: ', re.I)
LOG_PREFIX_RE = re.compile(r'^\[[^\]]*\] \[[0-9][^\]]*\] ?')
# Known causes of installer failures, as (text in the error, hint).
FAILURE_HINTS = (
    ('not exists! Please add', 'create the run user and group first (HwHiAiUser by default, see the Ascend install '
                               'guide), or set install_username and install_usergroup to existing ones'),
    ('not right! Please check the relationship', 'the install user must belong to the install group '
                                                 '(install_username, install_usergroup)'),
    ('missing tools', 'install the tools the driver builds its kernel module with: dkms, gcc, make and the '
                      'kernel headers of the running kernel'),
    ('kernel headers', 'install the headers of the running kernel (linux-headers-$(uname -r) on Debian and Ubuntu, '
                       'kernel-devel and kernel-headers on openEuler)'),
    ('There is no python3', 'install a Python 3 that this CANN release supports, as python3 on the PATH'),
    ('The driver is not installed', 'install the NPU driver package before the firmware'),
    ('Can not find Ascend-cann-toolkit', 'install the CANN toolkit of the same version first'),
    ('Ascend-cann-toolkit is not installed', 'install the CANN toolkit first'),
    ('EULA is not accepted', 'set accept_eula to true'),
)


class PackageError(Exception):
    """A problem to report as the module's failure: a message, and the command result it is about, if any."""

    def __init__(self, msg, result=None, **extra):
        super(PackageError, self).__init__(msg)
        self.msg = msg
        self.result = result
        self.extra = extra


# ---------------------------------------------------------------------------------------------------- versions

def version_order(left, right):
    """-1, 0 or 1 as ``left`` is older than, the same as or newer than ``right`` (``_version``'s order); None when
    that cannot be told: a text that is not a version (``8.0.SPC1``) is only equal to itself, ignoring case."""
    try:
        return compare_ascend_versions(left, right)
    except ValueError:
        return 0 if left.strip().lower() == right.strip().lower() else None


def plan_action(state, package_version, installed_version, allow_downgrade=False):
    """The action (none, install, upgrade, uninstall) that brings the host to ``state``; PackageError to refuse."""
    if state == 'absent':
        return 'uninstall' if installed_version is not None else 'none'
    if installed_version is None:
        return 'install'
    if state == 'present':
        return 'none'
    order = version_order(package_version, installed_version)
    if order == 0:
        return 'none'
    if order == 1 or allow_downgrade:
        return 'upgrade'
    if order is None:
        raise PackageError('cannot tell whether the package version %s is newer than the installed %s; set '
                           'allow_downgrade to true to install it anyway' % (package_version, installed_version))
    raise PackageError('the package version %s is older than the installed %s: set allow_downgrade to true to '
                       'downgrade' % (package_version, installed_version))


# ---------------------------------------------------------------------------------------------------- names

def parse_package_file_name(file_name):
    """Component, chip, version and architecture from a Huawei package file name; None when it is not one."""
    for component, regexp in _FILE_NAME_RES:
        match = regexp.match(file_name)
        if match:
            fields = match.groupdict()
            return {'component': component, 'chip': fields.get('chip'), 'version': fields['version'],
                    'arch': normalise_arch(fields['arch'])}
    return None


def parse_any_run_name(file_name):
    """Version and architecture of a .run named ``..._<version>[_linux-<arch>].run``; None otherwise."""
    match = _ANY_RUN_NAME_RE.search(file_name)
    if not match:
        return None
    return {'version': match.group('version'), 'arch': normalise_arch(match.group('arch'))}


def component_of_package_name(name):
    """(component, chip) of a .deb/.rpm package name such as ascend-hdk-910b-npu-driver; None when unknown."""
    for component, regexp in _PACKAGE_NAME_RES:
        match = regexp.match(name)
        if match:
            return component, match.groupdict().get('chip')
    return None


# ---------------------------------------------------------------------------------------------------- files

class InstalledRun:
    """What the Ascend .run installers left on the host for one component, read under ``root`` by
    ``_ascend_files.read_installed`` (the reader of the ascend_facts module).

    ``install_path`` is the module's option (None: where the installers recorded it, else /usr/local/Ascend);
    ``arch`` (default: this host's) limits the toolkit to ``<arch>-linux``; ``chip`` prefers its kernels.
    """

    def __init__(self, component, root='/', install_path=None, arch=None, chip=None):
        self.component = component
        self.fs = RootFS(root or '/')
        self.install_path = install_path
        self.arch = arch or host_architecture()
        self.chip = chip
        self.warnings = []

    def read(self):
        return read_installed(self.fs, self.component, self.install_path, self.arch, self.chip, self.warnings.append)

    def version(self):
        """The installed version, or None when the component is not installed; PackageError when unreadable."""
        found = self.read()
        if not found:
            return None
        if not found['version']:
            raise PackageError('cannot read the installed %s version: %s has no usable "%s" line (check the file, '
                               'or the root and install_path options)' % (
                                   self.component, self.fs.host_path(found['version_file']), found['version_line']))
        return found['version']

    def uninstall_script(self):
        """The uninstall.sh the installed component left (driver, firmware, toolkit, Docker runtime), or None."""
        found = self.read() if self.component in ('driver', 'firmware', 'toolkit', 'docker-runtime') else None
        if not found:
            return None
        if self.component == 'toolkit':
            if not found['install_info']:
                return None
            path = os.path.dirname(found['install_info']) + '/script/uninstall.sh'
        else:
            path = found['path'] + '/script/uninstall.sh'
        host = self.fs.host_path(path)
        return host if self.fs.is_file(path) and os.access(host, os.X_OK) else None


# ---------------------------------------------------------------------------------------------------- output

def printable_lines(text):
    """Lines as a terminal shows them: makeself's progress counters rewind with backspaces and carriage returns."""
    if not text:
        return []
    lines = []
    for raw in text.replace('\r\n', '\n').rstrip('\n').split('\n'):
        shown = []
        for char in raw.rsplit('\r', 1)[-1]:
            if char == '\b':
                if shown:
                    shown.pop()
            else:
                shown.append(char)
        lines.append(''.join(shown))
    return lines


def error_lines(*texts):
    """The error lines of installer output and logs ([ERROR], ERR_NO, dpkg/rpm errors), without the
    ``[Component] [time]`` prefix, each once, in order."""
    found = []
    for text in texts:
        for line in printable_lines(text):
            if ERROR_LINE_RE.search(line):
                line = LOG_PREFIX_RE.sub('', line.strip())
                if line not in found:
                    found.append(line)
    return found


def failure_message(what, rc, stdout, stderr, log_lines=()):
    """``what`` failed (rc=N): the error lines of stdout/stderr/the install log (else the last output lines), and a
    hint when the cause is known."""
    errors = error_lines(stdout, stderr, '\n'.join(log_lines))
    if not errors:
        errors = [line.strip() for line in printable_lines(stdout) + printable_lines(stderr) if line.strip()][-5:]
    message = '%s failed (rc=%d): %s' % (what, rc, '; '.join(errors) if errors else 'no output')
    hints = [hint for needle, hint in FAILURE_HINTS if any(needle in error for error in errors)]
    if hints:
        message += '. Hint: %s' % '; '.join(hints)
    return message


def says_reboot_needed(text):
    """Whether installer output asks for a host reboot (the Docker runtime's "reboot daemon" does not count)."""
    return bool(REBOOT_RE.search(text or ''))


def predict_reboot(component, action):
    """reboot_required as check mode predicts it: firmware always; the driver on upgrade and uninstall (its
    installer says so then; a first install may say so too on some hosts, which only a real run shows)."""
    if action == 'none':
        return False
    return component == 'firmware' or (component == 'driver' and action in ('upgrade', 'uninstall'))


def reboot_after(component, action, stdout):
    """reboot_required after a real run: firmware always; the driver when its output asks for a reboot."""
    if action == 'none':
        return False
    return component == 'firmware' or (component == 'driver' and says_reboot_needed(stdout))


class InstallLog:
    """The Ascend install logs under ``root``: the lines written to them since ``mark()``."""

    def __init__(self, root='/'):
        self.paths = [RootFS(root or '/').host_path(path) for path in INSTALL_LOGS]
        self.sizes = {}

    def mark(self):
        self.sizes = dict((path, os.path.getsize(path) if os.path.isfile(path) else 0) for path in self.paths)

    def new_lines(self):
        lines = []
        for path in self.paths:
            if not os.path.isfile(path):
                continue
            start = self.sizes.get(path, 0)
            if os.path.getsize(path) < start:
                start = 0  # rotated or truncated meanwhile
            with open(path, 'rb') as handle:
                handle.seek(start)
                for line in handle.read().decode('utf-8', 'replace').splitlines():
                    if line.strip() and line not in lines:
                        lines.append(line)
        return lines


# ---------------------------------------------------------------------------------------------------- package files
# Read before anything runs a package file, and bounded: a package may be gigabytes.

# A makeself archive is a shell script header followed by its payload; executing anything else as root is what the
# header check prevents. Every makeself release (2.1 to 2.5) and Huawei's edited headers define these near the top.
MAKESELF_READ_BYTES = 64 * 1024
MAKESELF_MARKERS = (
    ('the "# This script was generated using Makeself" line',
     re.compile(br'^# This script was generated using Makeself', re.M)),
    ('label=', re.compile(br'^label=', re.M)),
    ('filesizes=', re.compile(br'^filesizes="[0-9 ]*[0-9][0-9 ]*"', re.M)),
    ('a checksum (CRCsum=, MD5= or SHA=)', re.compile(br'^(?:CRCsum|MD5|SHA)=', re.M)),
    ('MS_Printf', re.compile(br'^MS_Printf\s*\(\)', re.M)),
)
_MAKESELF_FILESIZES_RE = re.compile(br'^filesizes="([0-9 ]+)"', re.M)
# makeself 2.4 and later: the header is the first skip="N" lines, the payload totalsize="N" bytes after it.
_MAKESELF_SKIP_RE = re.compile(br'^skip="([0-9]+)"', re.M)
_MAKESELF_TOTALSIZE_RE = re.compile(br'^totalsize="([0-9]+)"', re.M)

# A .deb is an ar archive: a magic line, then members each behind a 60-byte header that ends in "`\n" and holds
# the member's size in bytes 48-58; a member of odd size is followed by one padding byte.
AR_MAGIC = b'!<arch>\n'
_AR_HEADER = struct.Struct('16s32s10s2s')


def _nth_line_end(data, count):
    """The offset just after the ``count``-th newline of ``data``; None when it holds fewer lines."""
    offset = 0
    for _index in range(count):
        found = data.find(b'\n', offset)
        if found < 0:
            return None
        offset = found + 1
    return offset


def check_makeself_header(path):
    """Refuse ``path`` (PackageError) unless it is a whole makeself archive: its first bytes are a makeself header
    (MAKESELF_MARKERS) and its size is what the header announces (makeself 2.4+: a header of ``skip`` lines and a
    ``totalsize`` payload), else at least more than the payload (``filesizes``). Reads MAKESELF_READ_BYTES at most."""
    with open(path, 'rb') as handle:
        head = handle.read(MAKESELF_READ_BYTES)
        size = os.fstat(handle.fileno()).st_size
    if not head:
        raise PackageError('%s is empty, not a makeself archive, so nothing was run: download the package again' % path)
    missing = [] if head.startswith(b'#!') else ['a first line starting with #!']
    missing += [name for name, marker in MAKESELF_MARKERS if not marker.search(head)]
    if missing:
        raise PackageError('%s is not a makeself archive (the Ascend .run installers are), so nothing was run: its '
                           'first %d KiB lack %s. Download the package again; an error page or a script saved under '
                           'the package name looks like this' % (path, MAKESELF_READ_BYTES // 1024, ', '.join(missing)))
    payload = sum(int(number) for number in _MAKESELF_FILESIZES_RE.search(head).group(1).split())
    skip, total = _MAKESELF_SKIP_RE.search(head), _MAKESELF_TOTALSIZE_RE.search(head)
    header = _nth_line_end(head, int(skip.group(1))) if skip and total else None
    if skip and total and header is None and len(head) == size:
        raise PackageError('%s has %d bytes, which end inside its %s-line makeself header: it is cut short, so nothing '
                           'was run. Download the package again' % (path, size, skip.group(1).decode('ascii')))
    if header is not None:
        expected = header + int(total.group(1))
        if size != expected:
            raise PackageError('%s has %d bytes, but its makeself header announces %d (a %d-byte header and a %d-byte '
                               'payload): it is cut short or damaged, so nothing was run. Download the package again'
                               % (path, size, expected, header, int(total.group(1))))
    elif size <= payload:
        raise PackageError('%s has %d bytes, but its makeself header announces a %d-byte payload after the header: it '
                           'is cut short, so nothing was run. Download the package again' % (path, size, payload))


def check_deb_layout(path):
    """Refuse ``path`` (PackageError) unless it is a whole .deb: an ar archive whose members (debian-binary first,
    then control.tar* and data.tar*) all end within the file. Reads only the member headers, so a .deb cut short
    is refused before dpkg sees it (``dpkg-deb --info`` and ``-f`` read only the control member and accept it)."""
    size = os.path.getsize(path)
    members = []
    with open(path, 'rb') as handle:
        if handle.read(len(AR_MAGIC)) != AR_MAGIC:
            raise PackageError('%s is not a Debian package (it does not start like an ar archive), so nothing was '
                               'run: download the package again' % path)
        offset = len(AR_MAGIC)
        while offset < size:
            handle.seek(offset)
            header = handle.read(_AR_HEADER.size)
            name, _fields, length, end_mark = _AR_HEADER.unpack(header) if len(header) == _AR_HEADER.size else (
                b'', b'', b'', b'')
            if end_mark != b'`\n' or not length.strip().isdigit():
                raise PackageError('%s is cut short or damaged: no valid ar member header at byte %d, so nothing was '
                                   'run. Download the package again' % (path, offset))
            name = name.decode('ascii', 'replace').strip().rstrip('/')
            end = offset + _AR_HEADER.size + int(length)
            if end > size:
                raise PackageError('%s is cut short: its member %s ends at byte %d, but the file has %d bytes, so '
                                   'nothing was run. Download the package again' % (path, name, end, size))
            members.append(name)
            offset = end + end % 2
    if not (members[:1] == ['debian-binary'] and any(name.startswith('control.tar') for name in members)
            and any(name.startswith('data.tar') for name in members)):
        raise PackageError('%s is not a Debian package: its ar members are %s, not debian-binary, control.tar* and '
                           'data.tar*, so nothing was run' % (path, ', '.join(members) or 'none'))


# ---------------------------------------------------------------------------------------------------- backends

class Command:
    """A command line to run: argv, standard input and extra environment."""

    def __init__(self, argv, data=None, environ=None):
        self.argv = list(argv)
        self.data = data
        self.environ = environ or {}


class PackageBackend(abc.ABC):
    """One package file of one format; a subclass per format implements the abstract methods below.

    ``path`` is absolute (the module makes it so: a bare file name would be run through PATH). ``options``:
    component, install_path, install_username, install_usergroup, extra_args, root. ``which(name)`` returns the path
    of a tool (the module fails when it is missing). ``host_arch`` is the architecture packages must be built for.
    ``warnings`` collects what the user should know.
    """

    extension = None

    def __init__(self, path, runner, which, options, host_arch=None):
        self.path = path
        self.file_name = os.path.basename(path)
        self.runner = runner
        self.which = which
        self.options = options
        self.host_arch = host_arch
        self.warnings = []
        self.component = None
        self.chip = None
        self.version = None
        self.arch = None
        self.name = None

    def _from_file_name(self):
        """Fill component/chip/version/arch from the file name, and refuse another architecture's package."""
        parsed = parse_package_file_name(self.file_name)
        if parsed:
            self.component, self.chip = parsed['component'], parsed['chip']
            self.version, self.arch = parsed['version'], parsed['arch']
            self._check_architecture()
        return parsed

    def _apply_component_option(self, detected):
        """The component option wins over what the name says (with a warning when they differ)."""
        wanted = self.options.get('component')
        if wanted:
            if detected and detected != wanted:
                self.warnings.append('component is %s, but %s is named like a %s package: it is handled as %s' % (
                    wanted, self.file_name, detected, wanted))
            self.component = wanted
        if not self.component:
            raise PackageError(
                'cannot tell which Ascend component %s is from its name (Huawei names them like '
                'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run): set the component option' % self.file_name)

    def _check_architecture(self):
        if self.arch and self.host_arch and self.arch != self.host_arch:
            raise PackageError('%s is built for %s, but this host is %s: use the package built for %s' % (
                self.file_name, self.arch, self.host_arch, self.host_arch))

    def _check_version(self, source):
        """Refuse a package version the one version comparer cannot read: it could not be compared with the
        installed version after an install, which would then fail with the host changed."""
        try:
            parse_ascend_version(self.version)
        except ValueError as error:
            raise PackageError('%s: the package version %s from %s does not parse (%s), so nothing was run: use the '
                               'package as Huawei names and builds it' % (self.file_name, self.version, source, error))

    @abc.abstractmethod
    def inspect(self):
        """Read what the package is (component, chip, version, architecture, package name) and refuse, with
        PackageError and before anything is planned, a file that is not a whole package of its format, a version
        that does not parse, or another architecture (before running anything when the file name tells, else right
        after reading its metadata)."""

    @abc.abstractmethod
    def installed_version(self):
        """The version of the component installed on the host, or None when none is."""

    @abc.abstractmethod
    def verify(self, action):
        """Run the format's own integrity check of the whole file before ``action`` uses it (read-only; runs in
        check mode too); PackageError when it fails."""

    @abc.abstractmethod
    def command(self, action, installed_version=None):
        """The Command that carries out ``action`` (install, upgrade or uninstall) over ``installed_version``."""

    @abc.abstractmethod
    def succeeded(self, result):
        """Whether the CommandResult ``result`` of command() is a success."""

    def _check_archive(self, argv, check, what):
        """Run the format's integrity check ``argv`` (``check`` names it in the message); PackageError if it fails."""
        result = self.runner.run(argv)
        if result.rc != 0:
            lines = [line.strip() for line in printable_lines(result.stdout) + printable_lines(result.stderr)
                     if line.strip()]
            raise PackageError('%s failed its %s (%s, rc=%d), so nothing was installed: %s. Download the package '
                               'again' % (self.file_name, what, check, result.rc, '; '.join(lines[-5:]) or 'no output'),
                               result=result)

    def _from_package_name(self, parsed):
        """After reading a .deb/.rpm's metadata: the component from its package name when the file name did not
        tell, the component option, and the architecture its metadata declare."""
        detected = parsed and parsed['component']
        if not parsed:
            by_name = component_of_package_name(self.name)
            if by_name:
                self.component, self.chip = by_name
                detected = self.component
        self._apply_component_option(detected)
        self._check_architecture()

    def run(self, argv, what):
        """Run a read-only query; PackageError unless it exits 0."""
        result = self.runner.run(argv)
        if result.rc != 0:
            raise PackageError(failure_message(what, result.rc, result.stdout, result.stderr), result=result)
        return result


class RunPackage(PackageBackend):
    """A makeself .run installer (driver, firmware, CANN toolkit/kernels/NNAL, Docker runtime)."""

    extension = '.run'

    def inspect(self):
        """Component, version and architecture from Huawei's file name, and the makeself header (nothing is run)."""
        parsed = self._from_file_name()
        self._apply_component_option(parsed and parsed['component'])
        if not parsed:
            generic = parse_any_run_name(self.file_name)
            if not generic:
                raise PackageError('cannot read the package version from the file name %s: keep Huawei\'s name, '
                                   'which ends in _<version>_linux-<arch>.run (or _<version>.run)' % self.file_name)
            self.version, self.arch = generic['version'], generic['arch']
            self._check_architecture()
        self._check_version('its file name')
        self.name = self.file_name
        check_makeself_header(self.path)

    def installed(self):
        return InstalledRun(self.component, self.options.get('root'), self.options.get('install_path'),
                            arch=self.arch, chip=self.chip)

    def installed_version(self):
        installed = self.installed()
        try:
            return installed.version()
        finally:
            self.warnings.extend(installed.warnings)

    def verify(self, action):
        """``<run> --check``: makeself's integrity check of the archive (whatever the action: the .run may be what
        uninstalls)."""
        if not os.access(self.path, os.X_OK):
            raise PackageError('%s is not executable: copy it with mode 0755 (or chmod +x it)' % self.path)
        self._check_archive([self.path, '--check'], '--check', 'archive check')

    def _path_flag(self, action):
        path = self.options.get('install_path')
        if path and (action == 'install' or self.component in PATH_ON_EVERY_ACTION):
            return ['--install-path=%s' % path]
        return []

    def command(self, action, installed_version=None):
        """The Command for install, upgrade or uninstall."""
        if action == 'uninstall':
            script = None
            if installed_version is not None and version_order(installed_version, self.version) != 0:
                # Another version is installed: its own uninstaller knows it best.
                script = self.installed().uninstall_script()
            if script:
                return Command([script])
            return Command([self.path, '--uninstall', '--quiet', '--nox11'] + self._path_flag(action))
        flag = INSTALL_FLAG[self.component] if action == 'install' else '--upgrade'
        argv = [self.path, flag, '--quiet', '--nox11']
        if action == 'install' and self.component in RUN_USER_COMPONENTS:
            argv.append('--install-for-all')
        argv += self._path_flag(action)
        if action == 'install' and self.component in RUN_USER_COMPONENTS and self.options.get('install_username'):
            argv += ['--install-username=%s' % self.options['install_username'],
                     '--install-usergroup=%s' % self.options['install_usergroup']]
        argv += list(self.options.get('extra_args') or [])
        data = 'y' if self.component in STDIN_EULA_COMPONENTS else None
        return Command(argv, data=data)

    def succeeded(self, result):
        # Huawei's own deployment tool counts the firmware installer's exit code 2 as success.
        return result.rc == 0 or (self.component == 'firmware' and result.rc == 2)


class DebPackage(PackageBackend):
    """A .deb package: control data from dpkg-deb, installed version from dpkg-query, dpkg -i / dpkg -r."""

    extension = '.deb'
    environ = {'DEBIAN_FRONTEND': 'noninteractive'}

    def inspect(self):
        parsed = self._from_file_name()
        check_deb_layout(self.path)
        result = self.run([self.which('dpkg-deb'), '-f', self.path, 'Package', 'Version', 'Architecture'],
                          'dpkg-deb -f %s' % self.file_name)
        control = parse_key_values(result.stdout, 'dpkg-deb -f %s' % self.file_name, separator=':')
        if not control.get('Package') or not control.get('Version'):
            raise PackageError('dpkg-deb -f %s printed no Package or Version field' % self.file_name, result=result)
        self.name, self.version = control.get('Package'), control.get('Version')
        self.arch = normalise_arch(control.get('Architecture'))
        self._from_package_name(parsed)
        self._check_version('its Version field')

    def verify(self, action):
        """``dpkg-deb --contents``: dpkg unpacks every member, so a damaged payload fails here, not halfway through
        dpkg -i. Removal (dpkg -r) does not use the file."""
        if action != 'uninstall':
            self._check_archive([self.which('dpkg-deb'), '--contents', self.path], 'dpkg-deb --contents',
                                'archive check')

    def installed_version(self):
        result = self.runner.run([self.which('dpkg-query'), '-W', '-f=${Status}\t${Version}', self.name])
        if result.rc != 0 or not result.stdout.strip():
            return None  # dpkg-query: no packages found matching NAME
        status, _tab, version = result.stdout.strip().partition('\t')
        state = status.split()[-1] if status.split() else ''
        if state != 'installed':
            if state not in ('not-installed', 'config-files'):
                self.warnings.append('dpkg lists %s as %s: it counts as not installed' % (self.name, state))
            return None
        return version.strip() or None

    def command(self, action, installed_version=None):
        if action == 'uninstall':
            return Command([self.which('dpkg'), '-r', self.name], environ=self.environ)
        argv = [self.which('dpkg'), '-i'] + list(self.options.get('extra_args') or []) + [self.path]
        return Command(argv, environ=self.environ)

    def succeeded(self, result):
        return result.rc == 0


class RpmPackage(PackageBackend):
    """A .rpm package: header data from rpm -qp, installed version from rpm -q, rpm -Uvh / rpm -e."""

    extension = '.rpm'

    def inspect(self):
        parsed = self._from_file_name()
        result = self.run([self.which('rpm'), '-qp', '--qf', '%{NAME}\\n%{VERSION}\\n%{ARCH}\\n', self.path],
                          'rpm -qp %s' % self.file_name)
        fields = [line.strip() for line in result.stdout.splitlines() if line.strip()]
        if len(fields) != 3:
            raise PackageError('rpm -qp %s printed %r, not its name, version and architecture' % (
                self.file_name, result.stdout), result=result)
        self.name, self.version, self.arch = fields[0], fields[1], normalise_arch(fields[2])
        self._from_package_name(parsed)
        self._check_version('its VERSION tag')

    def verify(self, action):
        """``rpm -K --nosignature``: the header and payload digests, which a cut or damaged file fails. Signatures
        are left out: Huawei's signing key is rarely imported, and rpm -K then fails every package (NOKEY); where a
        package came from is package_fetch's checksum's concern. Removal (rpm -e) does not use the file."""
        if action != 'uninstall':
            self._check_archive([self.which('rpm'), '-K', '--nosignature', self.path], 'rpm -K --nosignature',
                                'digest check')

    def installed_version(self):
        result = self.runner.run([self.which('rpm'), '-q', '--qf', '%{VERSION}\\n', self.name])
        if result.rc != 0:
            return None  # package NAME is not installed
        versions = [line.strip() for line in result.stdout.splitlines() if line.strip()]
        if len(versions) > 1:
            self.warnings.append('rpm lists %s in several versions (%s): the newest counts' % (
                self.name, ', '.join(versions)))
            newest = versions[0]
            for version in versions[1:]:
                if version_order(version, newest) == 1:
                    newest = version
            return newest
        return versions[0] if versions else None

    def command(self, action, installed_version=None):
        if action == 'uninstall':
            return Command([self.which('rpm'), '-e', self.name])
        argv = [self.which('rpm'), '-Uvh']
        if installed_version is not None and version_order(self.version, installed_version) != 1:
            argv.append('--oldpackage')  # a downgrade, allowed by allow_downgrade
        argv += list(self.options.get('extra_args') or []) + [self.path]
        return Command(argv)

    def succeeded(self, result):
        return result.rc == 0


BACKENDS = (RunPackage, DebPackage, RpmPackage)


def backend_for(path, runner, which, options, host_arch=None):
    """The backend of ``path``, chosen by its extension; PackageError for any other extension."""
    for backend in BACKENDS:
        if path.lower().endswith(backend.extension):
            return backend(path, runner, which, options, host_arch)
    raise PackageError('path: %s is not a .run, .deb or .rpm file (the package format is chosen by the file name '
                       'extension)' % path)


# ---------------------------------------------------------------------------------------------------- host-wide lock

# One lock file per host for every ascend_package run (whatever root, package or user): the first of these
# directories that exists, so every run on a host agrees on it.
LOCK_DIRS = ('/run/lock', '/var/lock', '/run')
LOCK_NAME = 'kunpeng_ascend_package.lock'
LOCK_POLL_SECONDS = 0.2
# What a holder writes into the lock file, and how much of it a waiter reads back.
HOLDER_FORMAT = 'pid %d: %s, since %s\n'
HOLDER_READ_BYTES = 1024


def host_lock_path():
    for directory in LOCK_DIRS:
        if os.path.isdir(directory):
            return os.path.join(directory, LOCK_NAME)
    return os.path.join(LOCK_DIRS[-1], LOCK_NAME)


class HostLock:
    """An exclusive flock on ``path``, so that two runs never read, decide and install at the same time (both
    would install, and each would read the other's half-written state). The holder writes its pid and
    ``description`` into the file, so that a run that gives up waiting says who holds it. The kernel releases
    the lock when the holder's process ends, even when it is killed; the installers it runs do not inherit it
    (Python opens files close-on-exec)."""

    def __init__(self, path, description):
        self.path = path
        self.description = description
        self.fd = None

    @contextlib.contextmanager
    def held(self, timeout):
        """Hold the lock for a ``with`` block, waiting at most ``timeout`` seconds (0: not at all) to get it."""
        self.acquire(timeout)
        try:
            yield self
        finally:
            self.release()

    def acquire(self, timeout, clock=time.monotonic, sleep=time.sleep):
        """Take the lock, or raise PackageError naming the holder when ``timeout`` seconds pass first."""
        fd = self._open()
        deadline = clock() + timeout
        try:
            while not self._try_lock(fd):
                if clock() >= deadline:
                    raise PackageError(
                        'another ascend_package run holds the host-wide lock %s (%s) and did not release it within %d '
                        'seconds (lock_timeout): wait for it to end and run again, or stop it if it hangs'
                        % (self.path, self._holder(fd), timeout))
                sleep(min(LOCK_POLL_SECONDS, max(deadline - clock(), 0)))
            os.ftruncate(fd, 0)
            os.pwrite(fd, (HOLDER_FORMAT % (os.getpid(), self.description,
                                            time.strftime('%Y-%m-%d %H:%M:%S %z'))).encode('utf-8'), 0)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def release(self):
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        try:
            os.ftruncate(fd, 0)  # a waiter must not read a holder that has gone
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _open(self):
        # O_NOFOLLOW: in a world-writable lock directory, a symlink planted there must not make root write elsewhere.
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, 'O_CLOEXEC', 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as error:
            raise PackageError('cannot open the host-wide lock %s: %s (ascend_package runs as root: become: true)' % (
                self.path, error.strerror))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise PackageError('the host-wide lock %s is not a regular file: remove it' % self.path)
        return fd

    def _try_lock(self, fd):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise PackageError('cannot lock %s: %s' % (self.path, error.strerror))
        return True

    def _holder(self, fd):
        text = os.pread(fd, HOLDER_READ_BYTES, 0).decode('utf-8', 'replace').strip()
        return 'held by ' + text if text else 'its holder has not written its name yet'


# ---------------------------------------------------------------------------------------------------- the task
# What one ascend_package task does, from its options to its result: the module only declares the options, builds
# the command runner and reports the result or the PackageError.

# What provides each tool a package format needs, for the failure when it is missing.
TOOL_HINTS = {
    'dpkg-deb': 'install dpkg (needed for .deb packages)',
    'dpkg-query': 'install dpkg (needed for .deb packages)',
    'dpkg': 'install dpkg (needed for .deb packages)',
    'rpm': 'install rpm (needed for .rpm packages)',
}
ACTION_WORDS = {'install': 'Installing', 'upgrade': 'Upgrading to', 'uninstall': 'Removing'}
# The options the backends read.
BACKEND_OPTIONS = ('component', 'install_path', 'install_username', 'install_usergroup', 'extra_args', 'root')


def package_path(params):
    """The ``path`` option made absolute (a bare file name would be checked here but run through PATH), after the
    options that need nothing but themselves are checked; PackageError when they do not fit."""
    path = os.path.abspath(params['path'])
    if not os.path.isfile(path):
        raise PackageError('path: %s is not a file on the managed host' % path)
    if params['lock_timeout'] < 0:
        raise PackageError('lock_timeout must be 0 (do not wait) or a number of seconds, not %d' % params['lock_timeout'])
    return path


def apply_package(params, path, runner, which, warn, check_mode):
    """Bring the host to ``params['state']`` with the package file at ``path``: what the file is first (it does not
    change while another run installs, so a bad file fails at once), then, under the host-wide lock, ensure().

    ``params`` are the module's options, ``runner`` a CommandRunner, ``which(name)`` the path of a tool, ``warn`` the
    module's warn. Returns the module's result; raises PackageError.
    """
    lock = HostLock(host_lock_path(), 'ascend_package state=%s path=%s%s' % (
        params['state'], path, ' (check mode)' if check_mode else ''))
    backend = backend_for(path, runner, which, dict((key, params[key]) for key in BACKEND_OPTIONS), host_architecture())
    check_options(params, backend)
    backend.inspect()
    # Check mode waits too: a prediction read while another run installs would read a half-installed host.
    with lock.held(params['lock_timeout']):
        result = ensure(params, backend, runner, warn, check_mode)
    result['changed'] = result['before'] != result['after']
    result['diff'] = {'before': {'version': result['before']}, 'after': {'version': result['after']}}
    return result


def check_options(params, backend):
    """Refuse options that do not fit the package, before anything runs."""
    if not isinstance(backend, RunPackage):
        for option in ('install_path', 'install_username'):
            if params[option]:
                raise PackageError('%s is only supported for .run packages, not for %s' % (option, backend.file_name))


def check_eula(params, component, action):
    """Refuse to install or upgrade a component with a EULA that the options do not accept."""
    if action in ('install', 'upgrade') and component in EULA_COMPONENTS and not params['accept_eula']:
        raise PackageError('installing the %s means accepting its End User License Agreement: set accept_eula to '
                           'true (nothing was run)' % component)


def ensure(params, backend, runner, warn, check_mode):
    """Read the installed version, decide, act and read it again; under the host-wide lock, after inspect()."""
    component = backend.component
    if params['install_username'] and component not in RUN_USER_COMPONENTS:
        warn('install_username and install_usergroup are ignored for the %s package' % component)
    try:
        before = backend.installed_version()
    except UnreadableFile as error:
        # What is installed is unknown, not absent: no install is planned over it.
        raise PackageError('cannot tell which %s version is installed, so nothing was done: %s (make it a readable '
                           'regular file or remove it, or check the root and install_path options)' % (component, error))
    for warning in backend.warnings:
        warn(warning)
    action = plan_action(params['state'], backend.version, before, params['allow_downgrade'])
    check_eula(params, component, action)
    after = {'none': before, 'uninstall': None}.get(action, backend.version)
    result = dict(component=component, package_version=backend.version, before=before, after=after, action=action,
                  reboot_required=predict_reboot(component, action))
    if action == 'none':
        return result
    backend.verify(action)
    if check_mode:
        return result

    command = backend.command(action, before)
    log = InstallLog(params['root'])
    log.mark()
    run = runner.run(command.argv, data=command.data, environ_update=command.environ)
    what = '%s %s %s from %s' % (ACTION_WORDS[action], component, backend.version, backend.file_name)
    if action == 'uninstall':
        what = 'Removing %s %s with %s' % (component, before, os.path.basename(command.argv[0]))
    if not backend.succeeded(run):
        lines = log.new_lines()
        raise PackageError(failure_message(what, run.rc, run.stdout, run.stderr, lines), result=run,
                           install_log=lines)
    try:
        after = backend.installed_version()
    except UnreadableFile as error:
        raise PackageError('%s reported success, but the installed %s version cannot be read: %s'
                           % (what, component, error), result=run)
    if action == 'uninstall' and after is not None:
        raise PackageError('%s reported success, but %s %s is still installed' % (what, component, after), result=run)
    if action != 'uninstall' and (after is None or version_order(after, backend.version) != 0):
        raise PackageError('%s reported success, but the installed version is %s, not %s (check install_path and '
                           'root)' % (what, after or 'unknown (no version file)', backend.version), result=run)
    result.update(after=after, cmd=run.argv, stdout=run.stdout, stderr=run.stderr,
                  reboot_required=reboot_after(component, action, run.stdout))
    return result
