# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What the files of an Ascend host say is installed: the NPU driver and firmware ``version.info`` files, the CANN
toolkit, kernels and NNAL version files, the Ascend Docker Runtime install record, ``/etc/ascend_install.info``,
the NPU PCI devices and their NUMA nodes in sysfs, and the HwHiAiUser account. No command is run.

Two layers, kept apart so that the parsers are tested on text:

* pure parsers (``parse_*``, ``expand_cpulist``, ``chip_family``): text in, dict out. A line or value that
  cannot be read is reported through the ``warn`` callback as ``FILE line N: ...`` and the value is null;
  they never raise on odd input.
* readers (``RootFS``, ``read_*``, ``scan_npu_devices``, ``gather_ascend_facts``): find the files under a root
  directory and hand their text to the parsers. A missing file is an absent component (null). A file that is
  there but cannot be read as a regular file (a directory, a FIFO, a device, a symbolic link loop, no
  permission, too large) is a warning naming it and null, or, for ``read_installed`` (a package decision),
  an ``UnreadableFile`` error: what is installed is then unknown, not absent. Only regular files are opened
  (sysfs attributes are regular files), never blocking, and at most ``MAX_FILE_BYTES`` are read.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import re
import stat

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, check_regular, read_regular_file
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import replace_undecodable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import version_sort_key
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import ignore

# PCI ids (sysfs bus/pci/devices/*/{vendor,device,class}).
HUAWEI_VENDOR_ID = 0x19e5
# Base class 0x12 "processing accelerators", subclass 0x00; sysfs 'class' adds the programming interface byte.
NPU_PCI_CLASS = 0x1200
# Device id -> chip family. 0xd803 is the Atlas A3 chip (SoC Ascend910_93xx): observed in the PCI Device ID of
# `npu-smi info -t board` on an A3 board (two chips per NPU); the others are from Huawei's documentation.
CHIP_FAMILIES = {
    0xd100: '310',
    0xd500: '310P',
    0xd801: '910',
    0xd802: '910B',
    0xd803: '910_93',
}
UNKNOWN_CHIP_FAMILY = 'unknown'

DEFAULT_ASCEND_PATH = '/usr/local/Ascend'
ASCEND_INSTALL_INFO = '/etc/ascend_install.info'
CANN_INSTALL_INFO = '/etc/Ascend/ascend_cann_install.info'
NPU_USER = 'HwHiAiUser'
NPU_GROUP = 'HwHiAiUser'

# Files larger than this are not version files: such a file is reported and not read (the facts must stay cheap).
MAX_FILE_BYTES = 1024 * 1024
# Symlinks followed while resolving one path, as the kernel's limit.
MAX_SYMLINKS = 40
# Linux's largest NR_CPUS (x86_64 with MAXSMP, powerpc; arm64 allows 4096): no CPU list names more CPUs.
MAX_CPUS = 8192
# The kernel's CPUs that can ever be online, under the sysfs top directory.
POSSIBLE_CPUS = '/devices/system/cpu/possible'

_BRACKET_LIST = re.compile(r'^\[[^\[\]]*\](?:\s*,?\s*\[[^\[\]]*\])*$')
_BRACKET_GROUP = re.compile(r'\[([^\[\]]*)\]')
_VERSION_CFG_KEY = re.compile(r'^(?P<component>.+)_(?P<kind>running|upgrade|installed)_version$')
_VERSION_CFG_HEADER = re.compile(r'^#\s*version\s*:\s*(?P<version>\S+)\s*$')
_REQUIRED_PACKAGE_KEY = re.compile(r'^required_package_(?P<package>.+)_version$')
_CPU_RANGE = re.compile(r'^(?P<first>\d+)(?:-(?P<last>\d+))?$')
_HEX = re.compile(r'^0[xX][0-9a-fA-F]+$')


# --------------------------------------------------------------------------------------------------------------
# Pure parsers
# --------------------------------------------------------------------------------------------------------------
class KeyValues:
    """The ``key<sep>value`` lines of one file: values by key (the last one wins) and the line each came from.

    Keys are looked up without regard to case and blanks (``Innerversion`` = ``innerversion``,
    ``commit id`` = ``Commit ID``); ``values`` keeps them as written.
    """

    def __init__(self, source):
        self.source = source
        self.values = {}
        self._by_name = {}

    def add(self, lineno, key, value):
        self.values[key] = value
        self._by_name[_normalise_key(key)] = (key, value, lineno)

    def get(self, *names):
        """The value of the first of ``names`` present, else None."""
        for name in names:
            found = self._by_name.get(_normalise_key(name))
            if found:
                return found[1]
        return None

    def where(self, name):
        """``FILE line N`` of a key (for warnings)."""
        found = self._by_name.get(_normalise_key(name))
        return '%s line %d' % (self.source, found[2]) if found else self.source


def _normalise_key(key):
    return re.sub(r'\s+', ' ', key.strip()).lower()


def parse_key_values(text, source, warn=None, separator='='):
    """Read ``key<separator>value`` lines: blanks around keys and values, a BOM, CRLF ends, blank lines and
    ``#`` comment lines are allowed; any other line is reported and skipped.

    :param source: the file's name, used in warnings (``SOURCE line N: ...``).
    :returns: a :class:`KeyValues`.
    """
    warn = warn or ignore
    result = KeyValues(source)
    for lineno, line in enumerate((text or '').lstrip('\ufeff').splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith('#'):
            continue
        key, found, value = stripped.partition(separator)
        if not found or not key.strip():
            warn('%s line %d: not a "key%svalue" line, ignored: %r' % (source, lineno, separator, stripped))
            continue
        result.add(lineno, key.strip(), value.strip())
    return result


def parse_bracket_list(value):
    """``[a],[b]`` -> ``[['a'], ['b']]``; ``[7.0.0,7.2.99]`` -> ``[['7.0.0', '7.2.99']]``; '' -> ``[]``.

    :raises ValueError: when the value is not a list of bracketed groups.
    """
    value = value.strip()
    if not value:
        return []
    if not _BRACKET_LIST.match(value):
        raise ValueError('not a list of [..] groups')
    return [[item.strip() for item in group.split(',')] for group in _BRACKET_GROUP.findall(value)]


def _version_list(values, key, warn):
    """A ``[v1],[v2]`` value as a list of strings; null (with a warning) when malformed, null when absent."""
    raw = values.get(key)
    if raw is None:
        return None
    try:
        groups = parse_bracket_list(raw)
        if any(len(group) != 1 or not group[0] for group in groups):
            raise ValueError('each [..] must hold one version')
    except ValueError as error:
        warn('%s: %s=%s is not a list of [version]: %s; it is returned as null' % (values.where(key), key, raw, error))
        return None
    return [group[0] for group in groups]


def _range_list(values, key, warn):
    """A ``[min,max],[min,max]`` value as a list of ``{min, max}``; null (with a warning) when malformed."""
    raw = values.get(key)
    if raw is None:
        return None
    try:
        groups = parse_bracket_list(raw)
        if any(len(group) != 2 or not all(group) for group in groups):
            raise ValueError('each [..] must hold "min,max"')
    except ValueError as error:
        warn('%s: %s=%s is not a list of [min,max] ranges: %s; it is returned as null'
             % (values.where(key), key, raw, error))
        return None
    return [{'min': group[0], 'max': group[1]} for group in groups]


def _require(values, key, warn, separator='='):
    value = values.get(key)
    if not value:
        warn('%s: no %s%s line, the version is returned as null' % (values.source, key, separator))
    return value or None


def parse_driver_version_info(text, source, warn=None):
    """``/usr/local/Ascend/driver/version.info`` (``Version=24.1.rc1``, ``compatible_version_fw=[7.0.0,7.2.99]``)."""
    warn = warn or ignore
    values = parse_key_values(text, source, warn)
    return {
        'version': _require(values, 'Version', warn),
        'package_version': values.get('package_version'),
        'inner_version': values.get('Innerversion'),
        'ascendhal_version': values.get('ascendhal_version'),
        'compatible_versions': _version_list(values, 'compatible_version', warn),
        'compatible_firmware': _range_list(values, 'compatible_version_fw', warn),
        'values': values.values,
    }


def parse_firmware_version_info(text, source, warn=None):
    """``/usr/local/Ascend/firmware/version.info`` (``Version=7.1.0.11.220``, ``compatible_version_drv=[..]``)."""
    warn = warn or ignore
    values = parse_key_values(text, source, warn)
    return {
        'version': _require(values, 'Version', warn),
        'package_version': values.get('package_version'),
        'firmware_version': values.get('firmware_version'),
        'compatible_drivers': _range_list(values, 'compatible_version_drv', warn),
        'values': values.values,
    }


def parse_toolkit_install_info(text, source, warn=None):
    """``<toolkit>/<arch>-linux/ascend_toolkit_install.info`` (``version=8.0.0``, ``innerversion=...``)."""
    warn = warn or ignore
    values = parse_key_values(text, source, warn)
    return {
        'package_name': values.get('package_name'),
        'version': _require(values, 'version', warn),
        'inner_version': values.get('innerversion'),
        'compatible_versions': _version_list(values, 'compatible_version', warn),
        'arch': values.get('arch'),
        'path': values.get('path'),
        'values': values.values,
    }


def parse_version_cfg(text, source, warn=None):
    """``<toolkit>/version.cfg``: ``# version: 1.0``, then ``<component>_<running|upgrade|installed>_version=
    [<inner>:<version>]`` lines.

    :returns: ``{file_version, components}``, components as ``{name: {running|upgrade|installed: [{inner_version,
        version}]}}`` (a list per kind, in file order; usually one entry). Other keys are ignored.
    """
    warn = warn or ignore
    file_version = None
    for line in (text or '').lstrip('\ufeff').splitlines():
        header = _VERSION_CFG_HEADER.match(line.strip())
        if header:
            file_version = header.group('version')
            break
    values = parse_key_values(text, source, warn)
    components = {}
    for key, raw in values.values.items():
        match = _VERSION_CFG_KEY.match(key)
        if not match:
            continue
        entries = []
        try:
            for group in parse_bracket_list(raw):
                inner, colon, version = ','.join(group).partition(':')
                if not colon or not version.strip():
                    raise ValueError('each [..] must hold "inner:version"')
                entries.append({'inner_version': inner.strip() or None, 'version': version.strip()})
        except ValueError as error:
            warn('%s: %s=%s cannot be read: %s; it is returned as null' % (values.where(key), key, raw, error))
            entries = None
        components.setdefault(match.group('component'), {})[match.group('kind')] = entries
    return {'file_version': file_version, 'components': components}


def version_cfg_version(version_cfg, component):
    """``(version, inner_version)`` of a version.cfg component: its running, else installed, else upgrade entry."""
    kinds = (version_cfg or {}).get('components', {}).get(component) or {}
    for kind in ('running', 'installed', 'upgrade'):
        entries = kinds.get(kind)
        if entries:
            return entries[-1]['version'], entries[-1]['inner_version']
    return None, None


def parse_opp_kernel_version_info(text, source, warn=None):
    """``<toolkit>/opp_kernel/version.info``, the record of the CANN kernels package: ``Version=`` is its ops build
    (``8.2.0.0.201``), ``version_dir=`` the CANN release it belongs to and is named by (``8.2.RC1``), and
    ``required_package_<name>_version="<range>"`` lines say which versions of the other CANN packages it needs.

    :returns: ``{version (of version_dir=), inner_version (of Version=), timestamp, required_packages ({name:
        range}, quotes removed), values}``.
    """
    warn = warn or ignore
    values = parse_key_values(text, source, warn)
    required = {}
    for key, value in values.values.items():
        match = _REQUIRED_PACKAGE_KEY.match(key)
        if match:
            required[match.group('package')] = value.strip('"')
    return {
        'version': _require(values, 'version_dir', warn),
        'inner_version': values.get('Version'),
        'timestamp': values.get('timestamp'),
        'required_packages': required,
        'values': values.values,
    }


def parse_kernels_version_info(text, source, warn=None):
    """``<toolkit>/opp/built-in/op_impl/ai_core/tbe/kernel/<soc>/version.info`` (``Version=``, ``soc=``), a
    kernels record per SoC (the simulator's fake kernels package writes it)."""
    warn = warn or ignore
    values = parse_key_values(text, source, warn)
    return {
        'version': _require(values, 'Version', warn),
        'inner_version': values.get('innerversion'),
        'soc': values.get('soc'),
    }


def parse_nnal_version_info(text, source, warn=None):
    """``<ascend>/nnal/atb/<version>/version.info``: ``Ascend-cann-atb : 8.0.T63`` lines (often indented)."""
    warn = warn or ignore
    values = parse_key_values(text, source, warn, separator=':')
    return {
        'version': _require(values, 'Ascend-cann-atb', warn, ':'),
        'build_version': values.get('Ascend-cann-atb Version'),
        'platform': values.get('Platform'),
        'branch': values.get('branch'),
        'commit_id': values.get('commit id'),
        'values': values.values,
    }


def _yes_no(values, key, warn):
    raw = values.get(key)
    if raw is None:
        return None
    if raw.lower() in ('yes', 'y', 'true'):
        return True
    if raw.lower() in ('no', 'n', 'false'):
        return False
    warn('%s: %s=%s is neither yes nor no; it is returned as null' % (values.where(key), key, raw))
    return None


def parse_ascend_install_info(text, source, warn=None):
    """``/etc/ascend_install.info``, the driver and firmware installers' record (``UserName=``,
    ``Driver_Install_Path_Param=``, ...)."""
    warn = warn or ignore
    values = parse_key_values(text, source, warn)
    return {
        'user_name': values.get('UserName'),
        'user_group': values.get('UserGroup'),
        'driver_install_path': values.get('Driver_Install_Path_Param'),
        'driver_install_type': values.get('Driver_Install_Type'),
        'driver_install_for_all': _yes_no(values, 'Driver_Install_For_All', warn),
        'firmware_install_path': values.get('Firmware_Install_Path_Param'),
        'firmware_install_type': values.get('Firmware_Install_Type'),
        'values': values.values,
    }


def parse_cann_install_info(text, source, warn=None):
    """``/etc/Ascend/ascend_cann_install.info``: ``Install_Path=`` (and ``Toolkit_InstallPath=`` from CANN 8.5)."""
    values = parse_key_values(text, source, warn)
    return {
        'install_path': values.get('Install_Path'),
        'toolkit_install_path': values.get('Toolkit_InstallPath'),
        'values': values.values,
    }


def parse_docker_runtime_install_info(text, source, warn=None):
    """``Ascend-Docker-Runtime/ascend_docker_runtime_install.info`` (``version=v6.0.0``, ``path=``, ...)."""
    values = parse_key_values(text, source, warn)
    version = values.get('version')
    if version and version[0] in 'vV' and version[1:2].isdigit():
        version = version[1:]
    return {
        'version': version or None,
        'install_path': values.get('path', 'install_path'),
        'install_scene': values.get('install_scene', 'install-scene'),
        'injection_mode': values.get('injection-mode', 'injection_mode'),
        'values': values.values,
    }


def parse_cpu_ranges(text):
    """The ranges of a sysfs CPU list, unexpanded: ``'0-23,48-71'`` -> ``[(0, 23), (48, 71)]``; ``''`` -> ``[]``.

    :raises ValueError: when the text is not a list of ``N`` or ``N-M`` items.
    """
    ranges = []
    text = text.strip()
    if not text:
        return ranges
    for item in text.split(','):
        match = _CPU_RANGE.match(item.strip())
        if not match:
            raise ValueError('%r is not a CPU number or range' % item.strip())
        first = int(match.group('first'))
        last = int(match.group('last') or first)
        if last < first:
            raise ValueError('%r is a descending range' % item.strip())
        ranges.append((first, last))
    return ranges


def expand_cpulist(text, cpu_count):
    """Expand a sysfs CPU list: ``'0-23,48-71'`` -> ``[0, ..., 23, 48, ..., 71]``; ``''`` -> ``[]``.

    :param cpu_count: how many CPUs the machine can have (see :func:`possible_cpu_count`). A list that names a
        CPU beyond them, or more CPUs than that, is refused before anything is expanded, so a corrupt list
        (``0-4000000000``) costs nothing.
    :raises ValueError: when the text is not a list of ``N`` or ``N-M`` items, or names CPUs the machine cannot have.
    """
    ranges = parse_cpu_ranges(text)
    total = 0
    for first, last in ranges:
        if last >= cpu_count:
            raise ValueError('CPU %d is beyond the %d CPUs this machine can have (0-%d)' % (last, cpu_count, cpu_count - 1))
        total += last - first + 1
    if total > cpu_count:
        raise ValueError('%d CPUs are listed, more than the %d this machine can have' % (total, cpu_count))
    cpus = []
    for first, last in ranges:
        cpus.extend(range(first, last + 1))
    return cpus


def parse_sysfs_hex(text):
    """``'0x19e5\\n'`` -> ``0x19e5``. :raises ValueError: when not one hexadecimal number."""
    text = text.strip()
    if not _HEX.match(text):
        raise ValueError('%r is not a hexadecimal number' % text)
    return int(text, 16)


def parse_numa_node(text):
    """``'1\\n'`` -> ``1``; ``'-1'`` (no NUMA information) -> None. :raises ValueError: when not an integer."""
    node = int(text.strip())
    return None if node < 0 else node


def chip_family(device_id):
    """Chip family of an Ascend PCI device id (``0xd802`` -> ``910B``), ``unknown`` for an id not in the table."""
    return CHIP_FAMILIES.get(device_id, UNKNOWN_CHIP_FAMILY)


def parse_passwd_entry(text, name, source, warn=None):
    """The ``name`` line of an ``/etc/passwd`` text as ``{name, uid, gid, home, shell}``, None when absent."""
    warn = warn or ignore
    for lineno, line in enumerate((text or '').splitlines(), 1):
        fields = line.split(':')
        if fields[0] != name:
            continue
        try:
            if len(fields) != 7:
                raise ValueError('%d fields instead of 7' % len(fields))
            return {'name': name, 'uid': int(fields[2]), 'gid': int(fields[3]), 'home': fields[5], 'shell': fields[6]}
        except ValueError as error:
            warn('%s line %d: the %s entry cannot be read (%s), it is returned as null' % (source, lineno, name, error))
            return None
    return None


def parse_group_entry(text, name, source, warn=None):
    """The ``name`` line of an ``/etc/group`` text as ``{name, gid, members}``, None when absent."""
    warn = warn or ignore
    for lineno, line in enumerate((text or '').splitlines(), 1):
        fields = line.split(':')
        if fields[0] != name:
            continue
        try:
            if len(fields) != 4:
                raise ValueError('%d fields instead of 4' % len(fields))
            return {'name': name, 'gid': int(fields[2]), 'members': [member for member in fields[3].split(',') if member]}
        except ValueError as error:
            warn('%s line %d: the %s entry cannot be read (%s), it is returned as null' % (source, lineno, name, error))
            return None
    return None


# --------------------------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------------------------
class RootFS:
    """The files of a system whose ``/`` is the directory ``root`` of this machine (``/`` itself by default).

    Paths are given and returned as that system sees them (``/usr/local/Ascend/...``). Symbolic links are
    resolved inside the root: an absolute target is taken from the root, not from this machine's ``/`` (for a
    chroot or a container image), except a target that already starts with the root directory (links made by
    installers that were told to install into that directory).

    A path that is there but cannot be read, listed or looked at (see :meth:`read`) is reported through the
    ``warn`` callback of the call, naming the file and why; with ``strict`` it raises :class:`UnreadableFile`
    instead, for decisions that must not be taken on a guess.
    """

    def __init__(self, root='/', strict=False):
        self.root = os.path.abspath(root)
        self.strict = strict

    def host_path(self, path):
        """Where ``path`` of the system is on this machine."""
        return os.path.join(self.root, path.lstrip('/')) if self.root != '/' else path

    def resolve(self, path):
        """``path`` with every symbolic link resolved inside the root; None on a link loop."""
        pending = [part for part in path.split('/') if part]
        resolved = []
        links = 0
        while pending:
            part = pending.pop(0)
            if part == '.':
                continue
            if part == '..':
                if resolved:
                    resolved.pop()
                continue
            host = self.host_path('/' + '/'.join(resolved + [part]))
            if not os.path.islink(host):
                resolved.append(part)
                continue
            links += 1
            if links > MAX_SYMLINKS:
                return None
            try:
                target = os.readlink(host)
            except OSError:  # removed or replaced since: the lookup that follows tells what is there now
                resolved.append(part)
                continue
            if target.startswith('/'):
                if self.root != '/' and (target == self.root or target.startswith(self.root + '/')):
                    target = target[len(self.root):]
                resolved = []
            pending = [piece for piece in target.split('/') if piece] + pending
        return '/' + '/'.join(resolved)

    def _lookup(self, path):
        """``(host path, os.stat_result)`` of ``path``, the result None when nothing is there.

        :raises UnreadableFile: when whether something is there cannot be told (a link loop, no permission).
        """
        resolved = self.resolve(path)
        if resolved is None:
            raise UnreadableFile(self.host_path(path), 'a symbolic link loop')
        host = self.host_path(resolved)
        try:
            return host, os.stat(host)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                return host, None
            raise UnreadableFile(host, 'cannot be looked at: %s' % (error.strerror or error))

    def _report(self, error, warn, consequence):
        if self.strict:
            raise error
        (warn or ignore)('%s; %s' % (error, consequence))

    def _found(self, path, warn):
        """The stat result of ``path``, None when nothing is there or it cannot be told (then reported)."""
        try:
            return self._lookup(path)[1]
        except UnreadableFile as error:
            self._report(error, warn, 'it is ignored')
            return None

    def is_file(self, path):
        """Whether ``path`` is a regular file (silently False when that cannot be told)."""
        try:
            found = self._lookup(path)[1]
        except UnreadableFile:
            return False
        return found is not None and stat.S_ISREG(found.st_mode)

    def is_dir(self, path, warn=None):
        """Whether ``path`` is a directory; False, reported through ``warn``, when that cannot be told."""
        found = self._found(path, warn)
        return found is not None and stat.S_ISDIR(found.st_mode)

    def exists(self, path):
        """Whether something is at ``path``, or cannot be told to be absent (a symbolic link loop, a directory
        that cannot be searched): such a path is to be read, and :meth:`read` says why it cannot be."""
        try:
            return self._lookup(path)[1] is not None
        except UnreadableFile:
            return True

    def listdir(self, path, warn=None):
        """Sorted entry names of a directory; ``[]`` when it is missing or is no directory, and when it cannot
        be listed (reported through ``warn``). Names that are not UTF-8 keep their bytes as lone surrogates, so
        that they can still be opened; :func:`replace_undecodable` makes them printable."""
        try:
            host, found = self._lookup(path)
            if found is None or not stat.S_ISDIR(found.st_mode):
                return []
            try:
                return sorted(os.listdir(host))
            except OSError as error:
                raise UnreadableFile(host, 'cannot be listed: %s' % (error.strerror or error))
        except UnreadableFile as error:
            self._report(error, warn, 'it is not listed')
            return []

    def read_bytes(self, path, warn=None):
        """The bytes of a regular file, None when nothing is there; the same rules and reports as ``read``."""
        try:
            return self._read_bytes(path)[1]
        except UnreadableFile as error:
            self._report(error, warn, 'it is not read')
            return None

    def read(self, path, warn=None):
        """The text of a regular file (UTF-8, BOM removed), None when nothing is there.

        Only a regular file is opened (a FIFO, a device or a directory never is), without blocking, and at most
        ``MAX_FILE_BYTES`` of it are read. Something that is there but is no regular file, cannot be opened or
        read, or is larger, is reported naming it (see the class) and gives None. Bytes that are not UTF-8 are
        replaced, with a warning.
        """
        warn = warn or ignore
        try:
            host, data = self._read_bytes(path)
        except UnreadableFile as error:
            self._report(error, warn, 'it is not read')
            return None
        if data is None:
            return None
        try:
            return data.decode('utf-8-sig')
        except UnicodeDecodeError as error:
            warn('%s: not UTF-8 text (%s); unreadable characters are replaced' % (host, error.reason))
            return data.decode('utf-8-sig', errors='replace')

    def _read_bytes(self, path):
        """``(host path, the file's bytes)``, the bytes None when nothing is there; :raises UnreadableFile:."""
        host, found = self._lookup(path)
        if found is None:
            return host, None
        check_regular(host, found.st_mode)
        data = read_regular_file(host, MAX_FILE_BYTES, 'a version file')
        return host, data


def _join(*parts):
    return '/'.join(part.rstrip('/') for part in parts[:-1]) + '/' + parts[-1].lstrip('/')


def _unique(paths):
    return [path for index, path in enumerate(paths) if path and path not in paths[:index]]


def _read_parsed(fs, path, parser, warn):
    text = fs.read(path, warn)
    if text is None:
        return None
    return parser(text, fs.host_path(path), warn)


def read_install_record(fs, warn=None):
    """``/etc/ascend_install.info`` as parsed, with its ``path``; None when absent."""
    record = _read_parsed(fs, ASCEND_INSTALL_INFO, parse_ascend_install_info, warn or ignore)
    return dict(record, path=ASCEND_INSTALL_INFO) if record is not None else None


def read_cann_install_record(fs, warn=None):
    """``/etc/Ascend/ascend_cann_install.info`` as parsed, with its ``path``; None when absent."""
    record = _read_parsed(fs, CANN_INSTALL_INFO, parse_cann_install_info, warn or ignore)
    return dict(record, path=CANN_INSTALL_INFO) if record is not None else None


def _read_hdk_component(fs, name, bases, parser, warn):
    """Driver or firmware: ``<base>/<name>/version.info`` for the first base where it exists; None when it cannot
    be read (reported), rather than a guess from another base."""
    for base in _unique(bases):
        version_info = _join(base, name, 'version.info')
        if not fs.exists(version_info):
            continue
        facts = _read_parsed(fs, version_info, parser, warn)
        if facts is None:
            return None
        return dict(facts, path=_join(base, name), version_info=version_info)
    return None


def read_driver(fs, install_record=None, warn=None, install_path=None):
    """The NPU driver: ``<Driver_Install_Path_Param or /usr/local/Ascend>/driver/version.info`` (only
    ``<install_path>/driver/version.info`` when ``install_path`` is given)."""
    record = install_record or {}
    bases = [install_path] if install_path else [record.get('driver_install_path'), DEFAULT_ASCEND_PATH]
    return _read_hdk_component(fs, 'driver', bases, parse_driver_version_info, warn or ignore)


def read_firmware(fs, install_record=None, warn=None, install_path=None):
    """The NPU firmware: ``<Firmware_Install_Path_Param or the driver's or /usr/local/Ascend>/firmware/version.info``
    (only ``<install_path>/firmware/version.info`` when ``install_path`` is given)."""
    record = install_record or {}
    bases = [install_path] if install_path else [record.get('firmware_install_path'),
                                                 record.get('driver_install_path'), DEFAULT_ASCEND_PATH]
    return _read_hdk_component(fs, 'firmware', bases, parse_firmware_version_info, warn or ignore)


def cann_bases(cann_record=None, install_path=None):
    """Directories CANN may be installed in: ``install_path`` alone when given, else the recorded
    ``Install_Path``, then ``/usr/local/Ascend``."""
    if install_path:
        return [install_path]
    return _unique([(cann_record or {}).get('install_path'), DEFAULT_ASCEND_PATH])


def _version_dirs(fs, directory, prefix='', warn=None):
    """Names (without ``prefix``) of the version directories in ``directory``, newest first."""
    names = []
    for entry in fs.listdir(directory, warn):
        version = entry[len(prefix):]
        if entry.startswith(prefix) and version[:1].isdigit() and fs.is_dir(_join(directory, entry), warn):
            names.append(version)
    return sorted(names, key=version_sort_key, reverse=True)


def toolkit_candidates(fs, cann_record=None, install_path=None, warn=None):
    """Where a CANN toolkit may be, in order: the recorded ``Toolkit_InstallPath`` (CANN 8.5+), then in each
    base (see :func:`cann_bases`) ``ascend-toolkit/latest``, ``cann`` (CANN 8.5+ link), and the version
    directories ``cann-<version>`` and ``ascend-toolkit/<version>``, newest first. With ``install_path``, only
    the directories under it."""
    record = cann_record or {}
    candidates = [None if install_path else record.get('toolkit_install_path')]
    for base in cann_bases(record, install_path):
        candidates += [_join(base, 'ascend-toolkit/latest'), _join(base, 'cann')]
        candidates += [_join(base, 'cann-' + version) for version in _version_dirs(fs, base, 'cann-', warn)]
        toolkit_dir = _join(base, 'ascend-toolkit')
        candidates += [_join(toolkit_dir, version) for version in _version_dirs(fs, toolkit_dir, warn=warn)]
    return _unique(candidates)


def _toolkit_install_info(fs, path, warn, arch=None):
    """``<path>/<arch>-linux/ascend_toolkit_install.info`` (the first arch directory that has one, or only
    ``arch``'s when given), or None."""
    for entry in fs.listdir(path, warn):
        wanted = entry == arch + '-linux' if arch else entry.endswith('-linux')
        if wanted:
            info = _join(path, entry, 'ascend_toolkit_install.info')
            if fs.exists(info):
                return info
    return None


def read_toolkit(fs, cann_record=None, warn=None, arch=None, install_path=None):
    """The CANN toolkit, found rather than assumed: the first candidate of :func:`toolkit_candidates` that
    holds an ``<arch>-linux/ascend_toolkit_install.info`` (of ``arch`` when given) or a ``version.cfg``; None
    when none does."""
    warn = warn or ignore
    for candidate in toolkit_candidates(fs, cann_record, install_path, warn):
        if not fs.is_dir(candidate, warn):
            continue
        path = fs.resolve(candidate)
        install_info = _toolkit_install_info(fs, path, warn, arch)
        version_cfg_path = _join(path, 'version.cfg')
        if not install_info and not fs.exists(version_cfg_path):
            continue
        return _toolkit_facts(fs, candidate, path, install_info, version_cfg_path, warn)
    return None


def _toolkit_facts(fs, candidate, path, install_info, version_cfg_path, warn):
    info = _read_parsed(fs, install_info, parse_toolkit_install_info, warn) if install_info else None
    version_cfg = _read_parsed(fs, version_cfg_path, parse_version_cfg, warn) if fs.exists(version_cfg_path) else None
    if version_cfg is not None:
        version_cfg['path'] = version_cfg_path
    version, inner_version, source = None, None, None
    if info and info['version']:
        version, inner_version, source = info['version'], info['inner_version'], 'install_info'
    else:
        version, inner_version = version_cfg_version(version_cfg, 'toolkit')
        source = 'version_cfg' if version else None
    base = path.rsplit('/', 1)[0]
    layout = 'ascend-toolkit' if base.endswith('/ascend-toolkit') else 'cann'
    ascend_base = base[:-len('/ascend-toolkit')] if layout == 'ascend-toolkit' else base
    set_env = [script for script in (_join(ascend_base, 'ascend-toolkit/set_env.sh'), _join(path, 'set_env.sh'),
                                     _join(ascend_base, 'cann/set_env.sh')) if fs.is_file(script)]
    installed = _version_dirs(fs, _join(ascend_base, 'ascend-toolkit'), warn=warn) + _version_dirs(fs, ascend_base, 'cann-', warn)
    return {
        'version': version,
        'version_source': source,
        'inner_version': inner_version,
        'arch': info['arch'] if info else None,
        'compatible_versions': info['compatible_versions'] if info else None,
        'path': path,
        'found_via': candidate,
        'layout': layout,
        'install_info': install_info,
        'set_env': set_env[0] if set_env else None,
        'installed_versions': sorted(set(installed), key=version_sort_key, reverse=True),
        'version_cfg': version_cfg,
        'values': info['values'] if info else {},
    }


# The kernels package's record in the toolkit directory (CANN 8.x ascend-toolkit layout), and where its kernels
# are, a directory per SoC (ascend910b, ...).
OPP_KERNEL_VERSION_INFO = 'opp_kernel/version.info'
KERNELS_DIR = 'opp/built-in/op_impl/ai_core/tbe/kernel'
# The line that says the kernels' version, by the file it is read from (read_kernels' source).
KERNELS_VERSION_LINES = {'opp_kernel': 'version_dir=', 'version_info': 'Version=', 'version_cfg': 'opp_kernel_installed_version='}


def read_kernels(fs, toolkit, warn=None, chip=None):
    """The CANN kernels (ops) package of a toolkit, from the first of:

    * ``<toolkit>/opp_kernel/version.info``, the kernels package's record (its ``version_dir=``); the SoCs are the
      ``ascend*`` directories of ``<toolkit>/opp/built-in/op_impl/ai_core/tbe/kernel``;
    * ``<toolkit>/opp/built-in/op_impl/ai_core/tbe/kernel/<soc>/version.info`` files, a record per SoC
      (``ascend<chip>`` first when ``chip`` is given, else the first by name);
    * the ``opp_kernel`` lines of the toolkit's version.cfg (version null when none can be read).

    None when none is there, or when the record is there but cannot be read (reported).
    """
    warn = warn or ignore
    if not toolkit:
        return None
    kernel_dir = _join(toolkit['path'], KERNELS_DIR)
    entries = fs.listdir(kernel_dir, warn)
    record = _join(toolkit['path'], OPP_KERNEL_VERSION_INFO)
    if fs.exists(record):
        facts = _read_parsed(fs, record, parse_opp_kernel_version_info, warn)
        if facts is None:
            return None
        return {
            'version': facts['version'],
            'inner_version': facts['inner_version'],
            'source': 'opp_kernel',
            'path': record,
            'socs': [entry for entry in entries if entry.startswith('ascend') and fs.is_dir(_join(kernel_dir, entry), warn)],
            'required_packages': facts['required_packages'],
        }
    found = []
    for entry in entries:
        version_info = _join(kernel_dir, entry, 'version.info')
        if fs.exists(version_info):
            facts = _read_parsed(fs, version_info, parse_kernels_version_info, warn)
            if facts is not None:
                found.append((version_info, entry, facts))
    if found:
        preferred = [item for item in found if chip and item[1].lower() == 'ascend' + chip.lower()]
        version_info, entry, facts = (preferred or found)[0]
        return {
            'version': facts['version'],
            'inner_version': facts['inner_version'],
            'source': 'version_info',
            'path': version_info,
            'socs': [kernel['soc'] or name for unused_path, name, kernel in found],
            'required_packages': None,
        }
    version_cfg = toolkit.get('version_cfg')
    if version_cfg and 'opp_kernel' in version_cfg['components']:
        # A line that cannot be read was reported by parse_version_cfg; the version is then null.
        version, inner_version = version_cfg_version(version_cfg, 'opp_kernel')
        return {'version': version, 'inner_version': inner_version, 'source': 'version_cfg',
                'path': version_cfg['path'], 'socs': None, 'required_packages': None}
    return None


def read_nnal(fs, cann_record=None, warn=None, install_path=None):
    """NNAL (ATB): ``<base>/nnal/atb/latest/version.info``, else the newest ``<base>/nnal/atb/<version>``, in the
    bases of :func:`cann_bases`."""
    warn = warn or ignore
    for base in cann_bases(cann_record, install_path):
        atb = _join(base, 'nnal/atb')
        versions = _version_dirs(fs, atb, warn=warn)
        for candidate in [_join(atb, 'latest')] + [_join(atb, version) for version in versions]:
            if not fs.is_dir(candidate, warn):
                continue
            path = fs.resolve(candidate)
            version_info = _join(path, 'version.info')
            if not fs.exists(version_info):
                continue
            facts = _read_parsed(fs, version_info, parse_nnal_version_info, warn)
            if facts is None:
                return None
            set_env = _join(atb, 'set_env.sh')
            return dict(facts, path=path, found_via=candidate, version_info=version_info,
                        set_env=set_env if fs.is_file(set_env) else None, installed_versions=versions)
    return None


def _docker_runtime(fs, warn, install_path=None, version_info_first=False):
    """``(facts, version file)`` of the Ascend Docker Runtime (see :func:`read_docker_runtime`); ``(None, None)``
    when it is not installed. ``version_info_first``: the version of ``version.info`` wins over the install
    record's when both are there (as ascend_package has it; the facts keep the record's)."""
    path = _join(install_path or DEFAULT_ASCEND_PATH, 'Ascend-Docker-Runtime')
    install_info = _join(path, 'ascend_docker_runtime_install.info')
    version_info = _join(path, 'version.info')
    facts = None
    if fs.exists(install_info):
        facts = _read_parsed(fs, install_info, parse_docker_runtime_install_info, warn)
        if facts is None:
            return None, None  # there but unreadable (reported): not a guess from version.info
    version_file = install_info
    if (facts is None or version_info_first) and fs.exists(version_info):
        text = fs.read(version_info, warn)
        if text is None:
            return None, None
        values = parse_key_values(text, fs.host_path(version_info), warn)
        if facts is None:
            facts = {'install_path': None, 'install_scene': None, 'injection_mode': None, 'values': values.values}
            install_info = None
        facts = dict(facts, version=_require(values, 'Version', warn))
        version_file = version_info
    if facts is None:
        return None, None
    runtime = _join(path, 'ascend-docker-runtime')
    facts = dict(facts, path=path, install_info=install_info, runtime=runtime if fs.is_file(runtime) else None)
    return facts, version_file


def read_docker_runtime(fs, warn=None, install_path=None):
    """The Ascend Docker Runtime in ``<install_path or /usr/local/Ascend>/Ascend-Docker-Runtime``: its install
    record ``ascend_docker_runtime_install.info`` (``version=v6.0.0``), else its ``version.info`` (``Version=``);
    None when the directory has neither."""
    return _docker_runtime(fs, warn or ignore, install_path)[0]


def read_installed(fs, component, install_path=None, arch=None, chip=None, warn=None):
    """One installed Ascend component as the ascend_package module sees it: ``component`` is driver, firmware,
    toolkit, kernels, nnal or docker-runtime, read by the ``read_*`` reader of the facts, only under
    ``install_path`` when it is given; ``arch`` limits the toolkit to ``<arch>-linux``, ``chip`` prefers the
    kernels of ``ascend<chip>``.

    :returns: None when the component is not installed, else the reader's facts plus ``version_file`` (the file
        its version is read from, as the system sees it) and ``version_line`` (how the line that says it starts,
        ``Version=``); ``version`` is None when that file has no usable such line.
    :raises UnreadableFile: when a file that says whether or which version is installed is there but cannot be
        read (a directory, a FIFO, a link loop, no permission, ...): what is installed is then unknown, and a
        package decision must not be taken on the guess that it is absent.
    """
    warn = warn or ignore
    fs = RootFS(fs.root, strict=True)
    if component in ('driver', 'firmware'):
        reader = read_driver if component == 'driver' else read_firmware
        facts = reader(fs, read_install_record(fs, warn), warn, install_path)
        return dict(facts, version_file=facts['version_info'], version_line='Version=') if facts else None
    if component == 'docker-runtime':
        facts, version_file = _docker_runtime(fs, warn, install_path, version_info_first=True)
        if not facts:
            return None
        line = 'Version=' if version_file.endswith('/version.info') else 'version='
        return dict(facts, version_file=version_file, version_line=line)
    cann_record = read_cann_install_record(fs, warn)
    if component == 'nnal':
        facts = read_nnal(fs, cann_record, warn, install_path)
        return dict(facts, version_file=facts['version_info'], version_line='Ascend-cann-atb:') if facts else None
    if component == 'toolkit':
        facts = read_toolkit(fs, cann_record, warn, arch, install_path)
        if not facts or not (facts['install_info'] or facts['version']):
            return None  # a version.cfg of other components only
        if facts['install_info']:
            return dict(facts, version_file=facts['install_info'], version_line='version=')
        return dict(facts, version_file=facts['version_cfg']['path'], version_line='toolkit_installed_version=')
    if component == 'kernels':
        facts = read_kernels(fs, read_toolkit(fs, cann_record, warn, install_path=install_path), warn, chip)
        if not facts:
            return None
        return dict(facts, version_file=facts['path'], version_line=KERNELS_VERSION_LINES[facts['source']])
    raise ValueError('%r is not an Ascend component (driver, firmware, toolkit, kernels, nnal, docker-runtime)'
                     % (component,))


def _read_sysfs_value(sysfs, path, parser, warn):
    text = sysfs.read(path, warn)
    if text is None:
        return None
    try:
        return parser(text)
    except ValueError as error:
        warn('%s line 1: %s; it is returned as null' % (sysfs.host_path(path), error))
        return None


def possible_cpu_count(sysfs, warn=None):
    """How many CPUs the machine of a sysfs tree can have: one more than the highest CPU of its
    ``devices/system/cpu/possible`` (``0-191`` -> 192), at most ``MAX_CPUS``; ``MAX_CPUS`` when the tree has no
    such file (a copy of sysfs) or it cannot be read (reported)."""
    warn = warn or ignore
    text = sysfs.read(POSSIBLE_CPUS, warn)
    if text is None:
        return MAX_CPUS
    try:
        ranges = parse_cpu_ranges(text)
        if not ranges:
            raise ValueError('no CPU is listed')
        count = max(last for unused_first, last in ranges) + 1
        if count > MAX_CPUS:
            raise ValueError('CPU %d is beyond the %d CPUs Linux supports' % (count - 1, MAX_CPUS))
    except ValueError as error:
        warn('%s line 1: %s; NUMA CPU lists are checked against %d CPUs instead'
             % (sysfs.host_path(POSSIBLE_CPUS), error, MAX_CPUS))
        return MAX_CPUS
    return count


def scan_npu_devices(sysfs, warn=None, cpu_count=None):
    """Ascend NPUs among the PCI devices of a sysfs tree (``sysfs`` is a :class:`RootFS` on its top directory):
    vendor 0x19e5 and class 0x1200, in bus id order, each with its NUMA node and that node's CPUs (checked
    against ``cpu_count``, by default :func:`possible_cpu_count` of the tree)."""
    warn = warn or ignore
    devices = []
    node_cpus = {}
    for bus_id in sysfs.listdir('/bus/pci/devices', warn):
        base = '/bus/pci/devices/' + bus_id
        vendor = _read_sysfs_value(sysfs, base + '/vendor', parse_sysfs_hex, warn)
        if vendor != HUAWEI_VENDOR_ID:
            continue
        pci_class = _read_sysfs_value(sysfs, base + '/class', parse_sysfs_hex, warn)
        if pci_class is None or pci_class >> 8 != NPU_PCI_CLASS:
            continue
        device = _read_sysfs_value(sysfs, base + '/device', parse_sysfs_hex, warn)
        node = _read_sysfs_value(sysfs, base + '/numa_node', parse_numa_node, warn)
        if node is not None and node not in node_cpus:
            if cpu_count is None:
                cpu_count = possible_cpu_count(sysfs, warn)
            node_cpus[node] = _read_node_cpus(sysfs, node, cpu_count, warn)
        cpulist, cpus = node_cpus.get(node, (None, None))
        devices.append({
            'bus_id': bus_id,
            'vendor': '0x%04x' % vendor,
            'device': '0x%04x' % device if device is not None else None,
            'class': '0x%06x' % pci_class,
            'chip_family': chip_family(device),
            'numa_node': node,
            'numa_cpulist': cpulist,
            'numa_cpus': cpus,
        })
    return devices


def _read_node_cpus(sysfs, node, cpu_count, warn):
    path = '/devices/system/node/node%d/cpulist' % node
    if not sysfs.exists(path):
        warn('%s: missing, the CPUs of NUMA node %d are returned as null' % (sysfs.host_path(path), node))
        return None, None
    text = sysfs.read(path, warn)
    if text is None:
        return None, None
    try:
        return text.strip(), expand_cpulist(text, cpu_count)
    except ValueError as error:
        warn('%s line 1: %s; the CPUs of NUMA node %d are returned as null' % (sysfs.host_path(path), error, node))
        return text.strip(), None


def read_npu_account(fs, warn=None, user_db=None):
    """The HwHiAiUser user and group: from ``user_db`` (``(getpwnam, getgrnam)``-like lookups that return
    dicts or None, for this machine's account database) when given, else from the root's ``/etc/passwd`` and
    ``/etc/group`` files."""
    warn = warn or ignore
    if user_db is not None:
        user, group = user_db[0](NPU_USER), user_db[1](NPU_GROUP)
    else:
        passwd = fs.read('/etc/passwd', warn)
        groups = fs.read('/etc/group', warn)
        user = parse_passwd_entry(passwd, NPU_USER, fs.host_path('/etc/passwd'), warn) if passwd else None
        group = parse_group_entry(groups, NPU_GROUP, fs.host_path('/etc/group'), warn) if groups else None
    in_group = bool(user and group and (user['gid'] == group['gid'] or user['name'] in group['members']))
    return {'user': user, 'group': group, 'user_in_group': in_group}


def _once_in_valid_utf8(warn):
    """``warn`` with each message made valid UTF-8 (see :func:`replace_undecodable`) and given once (a directory
    that cannot be listed is met by several readers)."""
    given = set()

    def warn_once(message):
        message = replace_undecodable(message)
        if message not in given:
            given.add(message)
            warn(message)
    return warn_once


def gather_ascend_facts(fs, sysfs, warn=None, user_db=None):
    """Everything this module knows of an Ascend host, as documented in the ``ascend_facts`` module's RETURN, and
    its warnings (each once), in valid UTF-8 (see :func:`replace_undecodable`).

    :param fs: a :class:`RootFS` on the system's root.
    :param sysfs: a :class:`RootFS` on the sysfs top directory (``/sys``).
    :param user_db: see :func:`read_npu_account`.
    """
    warn = _once_in_valid_utf8(warn or ignore)
    install_record = read_install_record(fs, warn)
    cann_record = read_cann_install_record(fs, warn)
    toolkit = read_toolkit(fs, cann_record, warn)
    devices = scan_npu_devices(sysfs, warn)
    return replace_undecodable({
        'driver': read_driver(fs, install_record, warn),
        'firmware': read_firmware(fs, install_record, warn),
        'install_record': install_record,
        'cann_install_record': cann_record,
        'toolkit': toolkit,
        'kernels': read_kernels(fs, toolkit, warn),
        'nnal': read_nnal(fs, cann_record, warn),
        'docker_runtime': read_docker_runtime(fs, warn),
        'npu_devices': devices,
        'npu_count': len(devices),
        'hwhiaiuser': read_npu_account(fs, warn, user_db),
    })


def system_user(name):
    """The account ``name`` from the system's user database (None when absent), as the facts report it."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return {'name': entry.pw_name, 'uid': entry.pw_uid, 'gid': entry.pw_gid, 'home': entry.pw_dir, 'shell': entry.pw_shell}


def system_group(name):
    """The group ``name`` from the system's group database (None when absent), as the facts report it."""
    try:
        entry = grp.getgrnam(name)
    except KeyError:
        return None
    return {'name': entry.gr_name, 'gid': entry.gr_gid, 'members': list(entry.gr_mem)}
