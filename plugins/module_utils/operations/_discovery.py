# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The discovery of a real node (``playbooks/discover.yml``): what the collection reads of a node, read once, with the
lines its parsers did not understand, so that a site checks the collection against its hardware before the first
change and a bug report carries real samples. Two halves:

* on the node (module ``ascend_discover``), ``discover``: the read commands - ``npu-smi info``, ``npu-smi info -m``,
  ``hccn_tool -i N -ip -g`` per NPU NIC, ``<engine> images`` - run through the caller's ``run(argv)`` (a
  ``_command.CommandRunner``), the version files, NUMA nodes and the container engine's configuration read through
  ``_ascend_files.RootFS`` (the one safe read), each handed to the collection's own parser (``_npu_smi``,
  ``_ascend_files``, ``_hccn_tool``, ``_json`` and the TOML reader of ``_engine_config``; the chip map and the image
  list, which no other part reads, are parsed here). Every warning a parser gives becomes a "not understood" entry
  naming its source and line. Nothing is written; a tool that is missing or fails is recorded, never a failure: a
  discovery reports what it could read. The raw outputs are returned with the secrets masked (``_secrets``) and the
  addresses too - IPv4 and IPv6 addresses, MAC addresses, the node's host names and private registries -, each by
  a placeholder that stays the same within the run (``<ipv4-1>``), unless ``include_addresses``.
* on the controller (module ``ascend_discover_write``), this module owns the two records it writes and reads: the
  host_vars file (``host_vars_text``: only the variables the roles read - ``npu_driver_expected_chips``,
  ``npu_network_addresses``, ``npu_network_devices`` - and the other facts under ``discovered_*``) and the archive
  (``archive_members`` and ``archive_bytes`` build it, ``read_archive`` reads it back: the raw outputs, ``report.txt``
  and ``discovery.json``). ``plan_outputs`` decides what to write: an existing host_vars file that differs is kept
  unless ``overwrite``, and the new one goes beside it as ``<host>.discovered.yml``; an archive whose contents are the
  same is left alone. ``suggest_layout`` sizes a named model on the discovered NPUs with ``_sizing``.

Standard library only; Python 3.9 and later. Only the module files write.
"""

from __future__ import annotations

import gzip
import io
import ipaddress
import json
import os
import re
import tarfile
import zlib

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _files, _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _sizing
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import gather_ascend_facts
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import image_variant
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._engine_config import CRI_PLUGINS, toml_loads
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._hccn_tool import hccn_error, parse_ip
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._ipv4 import netmask_prefix
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_format import product_family
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import npu_smi_failure_hint, parse_npu_smi_info
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import MASK, mask_text

SCHEMA = 1
# What one source's raw output may weigh in the result and the archive; the rest is cut, and the cut is said.
MAX_RAW_BYTES = 1024 * 1024
# What read_archive reads of an archive: members and bytes (the archive is this module's own record).
MAX_ARCHIVE_MEMBERS = 500
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
# The container engine configuration files read, by engine, under the root.
ENGINE_CONFIGS = (('docker', '/etc/docker/daemon.json'), ('containerd', '/etc/containerd/config.toml'))
# The template each engine prints its images with: repository, tag and ID, tab-separated (docker and podman alike).
IMAGES_FORMAT = '{{.Repository}}\t{{.Tag}}\t{{.ID}}'
# Registries whose names say nothing of a site: kept in image references when addresses are masked.
PUBLIC_REGISTRIES = ('quay.io', 'docker.io', 'registry-1.docker.io', 'ghcr.io', 'registry.k8s.io', 'gcr.io',
                     'nvcr.io', 'swr.cn-south-1.myhuaweicloud.com', 'swr.cn-north-4.myhuaweicloud.com')
# The keys of a PCI device kept in the facts, and of a chip in the host_vars.
DEVICE_KEYS = ('bus_id', 'device', 'chip_family', 'numa_node', 'numa_cpulist')
CHIP_KEYS = ('npu_id', 'chip_id', 'logic_id', 'name', 'bus_id', 'hbm_total_mb', 'numa_node')
# A quantization named at the end of a model's name (deepseek-r1-w8a8): how the sizing reads its weights.
_NAMED_QUANTIZATION = re.compile(r'^(?P<base>.+?)[-_](?P<type>w8a8|w4a8)(?:[-_]dynamic)?$', re.IGNORECASE)
_HOST = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}\Z')
_LINE = re.compile(r'\bline (\d+)\b')
_FILE_WARNING = re.compile(r'^(?P<path>/[^\s:]*?)(?: line (?P<line>\d+))?: ')
_CONTROL = re.compile(r'[\x00-\x08\x0b-\x1f\x7f]')
# Secrets a configuration file may hold as a key and a quoted value (a registry's auth in config.toml or daemon.json).
_SECRET_VALUE = re.compile(r'(?i)("?(?:password|auth|identitytoken|identity_token|registrytoken|token|secret)'
                           r'[A-Za-z_]*"?\s*[=:]\s*)("[^"\n]*"|\'[^\'\n]*\')')
_IPV4 = re.compile(r'(?<![0-9.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![0-9.])')
_MAC = re.compile(r'(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:])')
_IPV6 = re.compile(r'(?<![0-9A-Fa-f:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])')
_REGISTRY = re.compile(r'(?<![A-Za-z0-9_.-])((?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+(?::[0-9]+)?|localhost:[0-9]+)/')
# A host name in a URL (after the scheme and any user information), and one given with its port.
_URL_HOST = re.compile(r'(://(?:[^\s/@"\']*@)?)([A-Za-z0-9][A-Za-z0-9.-]*)')
_HOST_PORT = re.compile(r'(?<![A-Za-z0-9_.:/-])((?:[A-Za-z0-9-]+\.)+[A-Za-z][A-Za-z0-9-]*)(?=:[0-9]{2,5}(?![0-9]))')


# ------------------------------------------------------------------------------------------------- masking

class Mask:
    """What a discovery shows of a text: secrets masked always; addresses - IPv4 and IPv6 addresses (not netmasks),
    MAC addresses, the node's ``host_names`` and registries not in PUBLIC_REGISTRIES - replaced by ``<kind-N>``,
    the same address by the same placeholder within one Mask, unless ``include_addresses``."""

    def __init__(self, include_addresses=False, host_names=()):
        self.include_addresses = include_addresses
        self._host_names = sorted(set(name for name in host_names if name and len(name) > 2 and name != 'localhost'),
                                  key=len, reverse=True)
        self._seen = {}

    def _placeholder(self, kind, value):
        key = (kind, value.lower())
        if key not in self._seen:
            self._seen[key] = '<%s-%d>' % (kind, 1 + sum(1 for seen in self._seen if seen[0] == kind))
        return self._seen[key]

    def text(self, text):
        if not isinstance(text, str):
            return text
        text = _SECRET_VALUE.sub(lambda match: match.group(1) + '"%s"' % MASK, mask_text(text))
        if self.include_addresses:
            return text
        text = _MAC.sub(lambda match: self._placeholder('mac', match.group(0)), text)
        text = _IPV6.sub(self._ipv6, text)
        text = _IPV4.sub(self._ipv4, text)
        text = _REGISTRY.sub(self._registry, text)
        text = _URL_HOST.sub(lambda match: match.group(1) + self._host(match.group(2)), text)
        text = _HOST_PORT.sub(lambda match: self._host(match.group(1)), text)
        for name in self._host_names:
            text = re.sub(r'(?<![A-Za-z0-9_.-])%s(?![A-Za-z0-9_-])' % re.escape(name),
                          lambda match: self._placeholder('host', match.group(0)), text)
        return text

    def _ipv4(self, match):
        value = match.group(0)
        try:
            address = ipaddress.IPv4Address(value)
        except ValueError:
            return value
        if address.is_unspecified or _is_netmask(value):
            return value
        return self._placeholder('ipv4', value)

    def _ipv6(self, match):
        value = match.group(0)
        if value.count(':') < 2 or not re.search(r'[0-9A-Fa-f]', value):
            return value
        try:
            address = ipaddress.IPv6Address(value)
        except ValueError:
            return value
        return value if address.is_unspecified else self._placeholder('ipv6', value)

    def _host(self, host):
        """A host name of a URL or of host:port as shown: kept when public, an address (masked apart) or masked."""
        if host.lower() in PUBLIC_REGISTRIES or _IPV4.match(host) or not re.search(r'[A-Za-z]', host):
            return host
        return self._placeholder('host', host)

    def _registry(self, match):
        host = match.group(1)
        if host.split(':')[0].lower() in PUBLIC_REGISTRIES or _IPV4.match(host) or host.startswith('<'):
            return match.group(0)
        return self._placeholder('registry', host) + '/'

    def value(self, value):
        """``value`` (str, or dicts and lists of them) with every string shown as ``text`` shows it."""
        if isinstance(value, dict):
            return dict((key, self.value(item)) for key, item in value.items())
        if isinstance(value, (list, tuple)):
            return [self.value(item) for item in value]
        return self.text(value)


def _is_netmask(value):
    try:
        netmask_prefix(value)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------------------- parsers

_CHIP_MAP_COLUMNS = {'npuid': 'npu_id', 'chipid': 'chip_id', 'chiplogicid': 'logic_id', 'chipphyid': 'phy_id',
                     'chipname': 'name'}


def parse_chip_map(text, warn):
    """``npu-smi info -m``: one entry per chip row, ``{'npu_id', 'chip_id', 'logic_id', 'name'}`` (``phy_id`` too where
    a column names it), ids as int, ``-`` as null (an MCU has no logic id). The header names the columns, cells are
    split by two or more blanks (a name holds one: ``Ascend 910B4``); a row that does not fit is given to ``warn``
    with its line number, and so is an unknown column."""
    rows = []
    header = None
    for number, line in enumerate((text or '').splitlines(), 1):
        cells = [cell for cell in re.split(r'\s{2,}', line.strip()) if cell]
        if not cells:
            continue
        names = [re.sub(r'[\s_-]+', '', cell).lower() for cell in cells]
        if header is None:
            if 'npuid' in names and 'chiplogicid' in names:
                header = [_CHIP_MAP_COLUMNS.get(name) for name in names]
                for cell, column in zip(cells, header):
                    if column is None:
                        warn('npu-smi info -m line %d: unknown column %r, its values are ignored' % (number, cell))
            else:
                warn('npu-smi info -m line %d: text before the header ignored: %r' % (number, line.strip()))
            continue
        if len(cells) != len(header):
            warn('npu-smi info -m line %d: %d cells for %d columns, the row is ignored: %r'
                 % (number, len(cells), len(header), line.strip()))
            continue
        row = {}
        for cell, column in zip(cells, header):
            if column in ('npu_id', 'chip_id', 'logic_id', 'phy_id'):
                if cell in ('-', 'NA', 'N/A'):
                    row[column] = None
                elif cell.isdigit():
                    row[column] = int(cell)
                else:
                    warn('npu-smi info -m line %d: %s %r is not a number, the row is ignored: %r'
                         % (number, column, cell, line.strip()))
                    row = None
                    break
            elif column:
                row[column] = cell
        if row is not None:
            rows.append(row)
    if header is None:
        warn('npu-smi info -m: no "NPU ID ... Chip Logic ID" header found')
    return rows


def parse_image_list(text, warn):
    """``<engine> images --format IMAGES_FORMAT``: ``[{'repository', 'tag', 'id'}]``; a line that is not three
    tab-separated fields is given to ``warn`` with its line number."""
    images = []
    for number, line in enumerate((text or '').splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split('\t')
        if len(fields) != 3 or not all(field.strip() for field in fields):
            warn('images line %d: not "repository<TAB>tag<TAB>id", ignored: %r' % (number, line.strip()))
            continue
        images.append({'repository': fields[0].strip(), 'tag': fields[1].strip(), 'id': fields[2].strip()})
    return images


def read_engine_config(engine, text, warn):
    """The Ascend-relevant part of a container engine's configuration ``text``: ``{'runtimes': {name: path},
    'default_runtime'}`` for docker's daemon.json (JSON) or containerd's config.toml (TOML, config version 2 or 3);
    None, with the reader's error given to ``warn``, when the text is not of its format."""
    try:
        document = _json.loads(text) if engine == 'docker' else toml_loads(text)
    except ValueError as error:
        warn('%s configuration: not %s: %s' % (engine, 'JSON' if engine == 'docker' else 'TOML', error))
        return None
    if not isinstance(document, dict):
        warn('%s configuration: not an object of settings' % engine)
        return None
    if engine == 'docker':
        runtimes = document.get('runtimes') if isinstance(document.get('runtimes'), dict) else {}
        return {'runtimes': dict((name, entry.get('path') if isinstance(entry, dict) else None)
                                 for name, entry in sorted(runtimes.items())),
                'default_runtime': document.get('default-runtime')}
    version = document.get('version', 1)
    plugin = (document.get('plugins') or {}).get(CRI_PLUGINS.get(version, ''), {})
    containerd = plugin.get('containerd') if isinstance(plugin, dict) else None
    containerd = containerd if isinstance(containerd, dict) else {}
    runtimes = containerd.get('runtimes') if isinstance(containerd.get('runtimes'), dict) else {}
    found = {}
    for name, entry in sorted(runtimes.items()):
        options = entry.get('options') if isinstance(entry, dict) else None
        found[name] = options.get('BinaryName') if isinstance(options, dict) else None
    return {'runtimes': found, 'default_runtime': containerd.get('default_runtime_name'), 'config_version': version}


# ------------------------------------------------------------------------------------------------- the node

class _Book:
    """The sources read and what their parsers did not understand, shown through one Mask."""

    def __init__(self, mask):
        self.mask = mask
        self.sources = []
        self.not_understood = []

    def add(self, name, kind, where, text=None, rc=None, stderr=None, error=None):
        data = text or ''
        cut = len(data.encode('utf-8', 'replace')) > MAX_RAW_BYTES
        if cut:
            data = data.encode('utf-8', 'replace')[:MAX_RAW_BYTES].decode('utf-8', 'ignore')
        source = {'name': name, 'kind': kind, 'where': self.mask.text(where), 'rc': rc,
                  'text': self.mask.text(data) if text is not None else None, 'truncated': cut,
                  'stderr': self.mask.text((stderr or '').strip()) or None, 'error': self.mask.text(error)}
        self.sources.append(source)
        return source

    def warner(self, source):
        """A ``warn`` callback that files each message under ``source`` with the line it names (and that line)."""
        lines = (source['text'] or '').splitlines()

        def warn(message):
            match = _LINE.search(message)
            number = int(match.group(1)) if match else None
            shown = lines[number - 1].rstrip() if number and 0 < number <= len(lines) else None
            self.not_understood.append({'source': source['name'], 'line': number, 'text': shown,
                                        'message': self.mask.text(message)})
        return warn

    def file_warner(self, fs):
        """A ``warn`` callback for the file readers, whose messages start with the file (as this machine names it)
        and its line."""
        def warn(message):
            match = _FILE_WARNING.match(message)
            path = match.group('path') if match else None
            if path and fs.root != '/' and path.startswith(fs.root + '/'):
                path = path[len(fs.root):]
            number = int(match.group('line')) if match and match.group('line') else None
            self.not_understood.append({'source': self.mask.text(path or 'files'), 'line': number, 'text': None,
                                        'message': self.mask.text(message)})
        return warn


def _command(run, book, name, argv):
    """Run ``argv`` (read only) and file it; (its stdout, the source) or (None, the source) when it failed."""
    result = run(argv)
    error = None
    if result.timed_out:
        error = 'stopped at its time limit (timeout)'
    elif result.rc != 0:
        lines = (result.stderr or result.stdout or '').strip().splitlines()
        error = 'exit code %s: %s' % (result.rc, lines[-1].strip() if lines else 'no output')
    source = book.add(name, 'command', ' '.join(argv), result.stdout, result.rc, result.stderr, error)
    return (None if error else result.stdout), source


def _missing(book, name, what):
    book.add(name, 'command', name, error='not run: %s' % what)


def _npu_smi(run, tools, book):
    path = tools.get('npu-smi')
    if not path:
        _missing(book, 'npu-smi info', 'npu-smi was not found (npu_smi_path)')
        _missing(book, 'npu-smi info -m', 'npu-smi was not found (npu_smi_path)')
        return None, []
    stdout, source = _command(run, book, 'npu-smi info', [path, 'info'])
    info = None
    if stdout is not None:
        info = parse_npu_smi_info(stdout, book.warner(source))
        if not info['chips']:
            hint = npu_smi_failure_hint(source['rc'], stdout, source['stderr'])
            if hint:
                source['error'] = 'npu-smi printed no table: %s' % hint
    elif source['error']:
        hint = npu_smi_failure_hint(source['rc'], source['text'], source['stderr'], 'timeout' in source['error'])
        source['error'] += ('; hint: %s' % hint) if hint else ''
    stdout, source = _command(run, book, 'npu-smi info -m', [path, 'info', '-m'])
    chip_map = parse_chip_map(stdout, book.warner(source)) if stdout is not None else []
    return info, chip_map


def _nic_ids(chip_map, info, devices):
    """The NPU NICs' device ids (hccn_tool -i): the chips' logic ids, else npu-smi's device or NPU ids, else one per
    PCI device."""
    ids = [row['logic_id'] for row in chip_map if row.get('logic_id') is not None]
    if not ids and info:
        ids = [chip['device_id'] if chip['device_id'] is not None else chip['npu_id'] for chip in info['chips']
               if chip['npu_id'] is not None]
    if not ids:
        ids = list(range(len(devices)))
    return sorted(set(ids))


def _nics(run, tools, book, ids):
    path = tools.get('hccn_tool')
    nics = []
    for device in ids:
        name = 'hccn_tool -i %d -ip -g' % device
        if not path:
            _missing(book, name, 'hccn_tool was not found (hccn_tool_path)')
            continue
        stdout, source = _command(run, book, name, [path, '-i', str(device), '-ip', '-g'])
        if stdout is None or hccn_error(stdout):
            found = hccn_error(source['text'] or '') or hccn_error(source['stderr'] or '')
            if found and not source['error']:
                source['error'] = 'hccn_tool says %r' % found[1]
            nics.append({'id': device, 'address': None, 'netmask': None, 'error': source['error']})
            continue
        values = parse_ip(stdout, book.warner(source))
        nics.append({'id': device, 'address': values['address'], 'netmask': values['netmask'], 'error': None})
    return nics


def _raw_files(fs, facts):
    """The files the facts were read from (every path of the facts that is a regular file under the root)."""
    paths = []

    def walk(value, key=None):
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, name)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, str) and value.startswith('/') and key in ('path', 'version_info', 'version_file',
                                                                          'install_info', 'version_cfg'):
            if value not in paths and fs.is_file(value):
                paths.append(value)
    walk(facts)
    return paths


def _read_files(fs, sysfs, book):
    facts = gather_ascend_facts(fs, sysfs, warn=book.file_warner(fs))
    for path in _raw_files(fs, facts):
        text = fs.read(path)
        book.add(path, 'file', path, text if text is not None else '')
    lines = ['%s numa_node=%s cpulist=%s device=%s' % (device['bus_id'], device['numa_node'], device['numa_cpulist'],
                                                       device['device']) for device in facts['npu_devices']]
    book.add('sysfs NPU devices', 'file', sysfs.host_path('/bus/pci/devices'), '\n'.join(lines) + ('\n' if lines else ''))
    return facts


def _engines(fs, book):
    found = {}
    for engine, path in ENGINE_CONFIGS:
        text = fs.read(path, book.file_warner(fs))
        if text is None:
            found[engine] = None
            continue
        source = book.add(path, 'file', path, text)
        config = read_engine_config(engine, text, book.warner(source))
        if config is None:
            config = {'runtimes': None, 'default_runtime': None}
        found[engine] = dict(config, path=path)
    return found


def _images(run, tools, book, family):
    images = []
    for engine in ('docker', 'podman'):
        path = tools.get(engine)
        if not path:
            continue
        stdout, source = _command(run, book, '%s images' % engine, [path, 'images', '--format', IMAGES_FORMAT])
        if stdout is None:
            continue
        for image in parse_image_list(stdout, book.warner(source)):
            reference = '%s:%s' % (image['repository'], image['tag'])
            variant = image_variant(reference)
            images.append(dict(image, engine=engine, reference=reference, variant=variant,
                               fits=None if variant is None or family is None else variant['hardware'] == family))
    return images


def _chips(info, chip_map, devices):
    """npu-smi's chips with their logic id (``info -m``) and the NUMA node of their PCI device (sysfs)."""
    numa = dict((device['bus_id'].lower(), device['numa_node']) for device in devices)
    logic = dict(((row['npu_id'], row['chip_id']), row['logic_id']) for row in chip_map if 'npu_id' in row)
    chips = []
    for chip in (info or {}).get('chips') or []:
        key = (chip['npu_id'], chip['chip_id'] if chip['chip_id'] is not None else 0)
        chips.append({'npu_id': chip['npu_id'], 'chip_id': chip['chip_id'], 'logic_id': logic.get(key),
                      'name': chip['name'], 'health': chip['health'], 'bus_id': chip['bus_id'],
                      'hbm_total_mb': chip['hbm_total_mb'], 'memory_total_mb': chip['memory_total_mb'],
                      'numa_node': numa.get((chip['bus_id'] or '').lower())})
    return chips


def product_of(chips, family):
    """``{'key', 'name'}`` of the product the chips make (a _sizing.PRODUCTS entry of their family, count and memory),
    else a name of what they are."""
    sizes = [chip['hbm_total_mb'] or chip['memory_total_mb'] for chip in chips
             if chip['hbm_total_mb'] or chip['memory_total_mb']]
    for key, spec in sorted(_sizing.PRODUCTS.items()):
        if family and spec['family'] == family and spec['count'] == len(chips) and sizes and min(sizes) == spec['hbm_mb']:
            return {'key': key, 'name': spec['name']}
    if not chips:
        return {'key': None, 'name': None}
    names = ', '.join(sorted(set(str(chip['name']) for chip in chips)))
    return {'key': None, 'name': '%d x %s%s' % (len(chips), names, (' (%s MB)' % min(sizes)) if sizes else '')}


def discover(run, fs, sysfs, tools, include_addresses=False, host_names=()):
    """Everything a discovery reads of a node. ``run(argv)`` runs a read-only command and returns its CommandResult;
    ``fs`` and ``sysfs`` are RootFS on the system's root and on sysfs; ``tools`` maps npu-smi, hccn_tool, docker and
    podman to their paths (None or absent: not there). Returns ``sources`` (each command and file read: ``name``,
    ``kind``, ``where``, ``rc``, ``text`` - the raw output as shown -, ``truncated``, ``stderr``, ``error``),
    ``not_understood`` (``source``, ``line``, ``text`` - that line as shown -, ``message``), ``facts`` (as read, the
    NIC addresses included: the host_vars need them) and ``shown_facts`` (the same as the archive may show them)."""
    mask = Mask(include_addresses, host_names)
    book = _Book(mask)
    info, chip_map = _npu_smi(run, tools, book)
    ascend = _read_files(fs, sysfs, book)
    devices = ascend['npu_devices']
    nics = _nics(run, tools, book, _nic_ids(chip_map, info, devices))
    chips = _chips(info, chip_map, devices)
    family = product_family([dict(chip, npu_name=None) for chip in chips], devices)
    engines = _engines(fs, book)
    images = _images(run, tools, book, family)
    summary = None
    if info is not None:
        keys = ('version', 'driver_version', 'npu_count', 'chip_count', 'all_healthy', 'complete', 'incomplete_reason')
        summary = dict((key, info[key]) for key in keys)
    versions = {}
    for key in ('driver', 'firmware', 'toolkit', 'kernels', 'nnal', 'docker_runtime'):
        versions[key] = (ascend.get(key) or {}).get('version')
    facts = {'npu_smi': summary, 'chips': chips, 'chip_map': chip_map, 'chip_family': family,
             'product': product_of(chips, family), 'versions': versions,
             'npu_devices': [dict((key, device[key]) for key in DEVICE_KEYS) for device in devices],
             'nics': nics, 'engines': engines, 'images': images}
    texts = dict((source['name'], (source['text'] or '').splitlines()) for source in book.sources)
    for note in book.not_understood:
        lines = texts.get(note['source']) or []
        if note['text'] is None and note['line'] and note['line'] <= len(lines):
            note['text'] = lines[note['line'] - 1].rstrip()
    return {'schema': SCHEMA, 'include_addresses': bool(include_addresses), 'sources': book.sources,
            'not_understood': book.not_understood, 'facts': facts, 'shown_facts': mask.value(facts)}


# ------------------------------------------------------------------------------------------------- the model

def resolve_model(name=None, config=None, configs_dir=None):
    """What a suggested layout sizes: ``name`` (a model's name, or the path of its config.json or directory),
    ``config`` (the path of a config.json or of a model directory, on the controller) and ``configs_dir`` (a folder of
    ``<Name>__config.json`` files or ``<Name>/config.json`` directories, searched for ``name`` without case, its
    quantization suffix left out). A name ending in ``-w8a8`` or ``-w4a8`` is sized as msModelSlim's W8A8 or W4A8.
    Returns ``{'name', 'path', 'config', 'weights', 'quantization'}``; ValueError naming the variable to set."""
    if not name and not config:
        return None
    if name and not config and ('/' in name or name.endswith('.json')):
        name, config = os.path.basename(name.rstrip('/')), name
    label = name or os.path.basename(os.path.dirname(config) if config.endswith('.json') else config.rstrip('/'))
    quant = _NAMED_QUANTIZATION.match(label or '')
    if not config:
        config = _find_config(label, quant, configs_dir)
    weights = {}
    description = None
    path = config
    if os.path.isdir(config):
        weights = _sizing.read_model_weights(config)
        for candidate in ('quant_model_description.json',):
            full = os.path.join(config, candidate)
            if os.path.isfile(full):
                description = _read_json(full, 'discover_model_config')
        path = os.path.join(config, 'config.json')
    document = _read_json(path, 'discover_model_config')
    if description is None and quant:
        description = {'model_quant_type': '%s_DYNAMIC' % quant.group('type').upper()}
    if description is not None:
        weights['quantization'] = description
    return {'name': label, 'path': path, 'config': document, 'weights': weights,
            'quantization': 'ascend' if description is not None else None}


def _find_config(label, quant, configs_dir):
    base = (quant.group('base') if quant else label).lower()
    if not configs_dir:
        raise ValueError('no config.json for model %s: set discover_model_config to its config.json (or model '
                         'directory) on the controller, or discover_model_configs to a folder of <Name>__config.json '
                         'files' % label)
    try:
        entries = sorted(os.listdir(configs_dir))
    except OSError as error:
        raise ValueError('discover_model_configs: %s cannot be listed: %s' % (configs_dir, error.strerror or error))
    for entry in entries:
        full = os.path.join(configs_dir, entry)
        if entry.lower() == base + '__config.json' and os.path.isfile(full):
            return full
        if entry.lower() == base and os.path.isfile(os.path.join(full, 'config.json')):
            return full
    raise ValueError('model %s: discover_model_configs (%s) holds no %s__config.json nor %s/config.json; set '
                     'discover_model_config to its config.json' % (label, configs_dir, base, base))


def _read_json(path, variable):
    try:
        return _files.read_json_file(path, 16 * 1024 * 1024, 'a model\'s JSON file', dict)
    except _files.UnreadableFile as error:
        raise ValueError('%s: %s' % (variable, error))


def suggest_layout(model, chips, max_model_len=None):
    """The smallest layout of ``model`` (resolve_model's) on the discovered ``chips`` that the sizing (_sizing) says
    fits: TP from the smallest up within the node, DP filling the NPUs for a mixture of experts (with expert parallel
    when the experts divide), 1 for a dense model. Returns ``verdict`` (fits, close, refused or unknown), the
    layout's ``tensor_parallel_size``, ``data_parallel_size``, ``enable_expert_parallel`` (None when none fits
    here), ``problems``, ``warnings`` and ``suggestion`` (the sizing's own words for what would fit: more NPUs,
    nodes, a quantized model)."""
    devices = _sizing.devices_from_npu_smi(chips)
    shape = _sizing.model_shape(model['config'])
    experts = shape.get('routed_experts') if isinstance(shape, dict) else None
    total = devices['count']
    tried = []
    for tp in _sizing.TP_SIZES:
        if tp > total or total % tp:
            continue
        dp = total // tp if experts else 1
        layout = {'tensor_parallel_size': tp, 'data_parallel_size': dp, 'max_model_len': max_model_len,
                  'enable_expert_parallel': bool(experts) and experts % (tp * dp) == 0,
                  'quantization': model['quantization']}
        tried.append((layout, _sizing.size_deployment(model['config'], model['weights'], layout, devices)))
    chosen = (next((pair for pair in tried if pair[1]['verdict'] == 'fits'), None)
              or next((pair for pair in tried if pair[1]['verdict'] == 'close'), None)
              or next((pair for pair in tried if pair[1]['verdict'] == 'unknown'), None))
    if chosen is None:
        layout, result = tried[-1] if tried else ({}, {'verdict': 'refused', 'problems': ['no NPU was discovered'],
                                                       'warnings': [], 'suggestion': None})
        return {'model': model['name'], 'config': model['path'], 'verdict': 'refused', 'tensor_parallel_size': None,
                'data_parallel_size': None, 'enable_expert_parallel': None, 'npus': devices['count'],
                'problems': result['problems'], 'warnings': result.get('warnings', []),
                'suggestion': result.get('suggestion')}
    layout, result = chosen
    return {'model': model['name'], 'config': model['path'], 'verdict': result['verdict'],
            'tensor_parallel_size': layout['tensor_parallel_size'], 'data_parallel_size': layout['data_parallel_size'],
            'enable_expert_parallel': layout['enable_expert_parallel'], 'npus': devices['count'],
            'problems': result['problems'], 'warnings': result['warnings'], 'suggestion': result.get('suggestion')}


# ------------------------------------------------------------------------------------------------- the records

def _scalar(value):
    """A YAML scalar that reads back as ``value`` (JSON's spelling of it: YAML takes it)."""
    return json.dumps(value, ensure_ascii=False)


def _flow(entry):
    return '{%s}' % ', '.join('%s: %s' % (key, _scalar(value)) for key, value in entry.items())


def host_vars_text(host, discovery, layout=None):
    """The host_vars file of ``host``: the variables the roles read - ``npu_driver_expected_chips`` (the chips npu-smi
    shows), ``npu_network_addresses`` (each NIC's address and prefix, when any is set) and ``npu_network_devices``
    (when the NICs' ids are not 0 to N-1) - then the facts no role variable takes, under ``discovered_*``, and the
    layout suggested for a model, commented where it would set role variables."""
    facts = discovery['facts']
    lines = ['---',
             '# %s as kunpeng_ascend.vllm.discover read it (module ascend_discover). Review before the first change;' % host,
             '# a later discovery writes %s.discovered.yml beside this file unless discover_overwrite is true.' % host]
    if facts['npu_smi'] is not None and facts['npu_smi']['chip_count']:
        lines += ['', '# Role npu_driver: the chips npu-smi must show, all healthy.',
                  'npu_driver_expected_chips: %d' % facts['npu_smi']['chip_count']]
    addressed = [nic for nic in facts['nics'] if nic['address']]
    if addressed:
        lines += ['', '# Role npu_network: the NICs\' addresses as hccn_tool shows them, kept by the plan.',
                  'npu_network_addresses:']
        for nic in addressed:
            address = nic['address'] + ('/%d' % netmask_prefix(nic['netmask']) if nic['netmask'] and
                                        _is_netmask(nic['netmask']) else '')
            lines.append('  %d: %s' % (nic['id'], _scalar(address)))
    ids = [nic['id'] for nic in facts['nics']]
    if ids and ids != list(range(len(ids))):
        lines += ['', '# Role npu_network: the NICs\' device ids (hccn_tool -i), not 0 to %d.' % (len(ids) - 1),
                  'npu_network_devices: %s' % _scalar(ids)]
    lines += ['', '# What no role variable takes (the roles read these from the node themselves).',
              'discovered_product: %s' % _scalar(facts['product']['name']),
              'discovered_chip_family: %s' % _scalar(facts['chip_family']),
              'discovered_versions: %s' % _flow(facts['versions'])]
    if facts['chips']:
        lines.append('discovered_chips:')
        lines += ['  - %s' % _flow(dict((key, chip[key]) for key in CHIP_KEYS)) for chip in facts['chips']]
        numa = dict((chip['npu_id'], chip['numa_node']) for chip in facts['chips'])
        pairs = ['%s: %s' % (npu, _scalar(node)) for npu, node in sorted(numa.items())]
        lines.append('discovered_npu_numa: {%s}' % ', '.join(pairs))
    if layout is not None:
        lines += ['', '# The layout the sizing suggests for %s on these NPUs (%s).' % (layout['model'], layout['verdict'])]
        if layout['tensor_parallel_size']:
            lines += ['# To serve it here, set:',
                      '# vllm_service_tensor_parallel_size: %d' % layout['tensor_parallel_size'],
                      '# vllm_service_data_parallel_size: %d' % layout['data_parallel_size'],
                      '# vllm_service_enable_expert_parallel: %s' % _scalar(layout['enable_expert_parallel'])]
        lines.append('discovered_layout: %s' % _flow(dict((key, layout[key]) for key in (
            'model', 'verdict', 'tensor_parallel_size', 'data_parallel_size', 'enable_expert_parallel', 'npus',
            'suggestion'))))
    return '\n'.join(lines) + '\n'


def _raw_name(source):
    slug = re.sub(r'[^A-Za-z0-9_.-]+', '_', source['name']).strip('_') or 'source'
    if source['kind'] != 'file':
        return 'raw/commands/%s.txt' % slug
    if source['name'].startswith('/'):
        return 'raw/files' + re.sub(r'[^A-Za-z0-9_./-]+', '_', source['name'])
    return 'raw/%s.txt' % slug


# Long: report.txt written top to bottom, one section after another, as a reader reads it.
def report_text(host, discovery, layout=None, model_problem=None):
    """report.txt of the archive: what it holds, the node as the parsers read it, the layout, every source read and,
    line by line, what the parsers did not understand."""
    facts = discovery['shown_facts']
    out = ['Discovery of %s by kunpeng_ascend.vllm (playbooks/discover.yml)' % host, '',
           'This archive holds what the collection reads of the node: raw/ the outputs and files as read, discovery.json',
           'what the parsers made of them, and this report. Secrets are masked; addresses (IP, MAC, host names, private',
           'registries) are %s.' % ('shown: discover_include_addresses was true' if discovery['include_addresses']
                                    else 'masked as <kind-N>, the same address the same N (discover_include_addresses: '
                                         'true shows them)'),
           '', 'The node', '--------']
    npu = facts['npu_smi']
    out.append('product: %s (chip family %s)' % (facts['product']['name'], facts['chip_family']))
    if npu:
        out.append('npu-smi %s, driver %s: %s NPUs, %s chips, %s, table %s' % (
            npu['version'], npu['driver_version'], npu['npu_count'], npu['chip_count'],
            'all healthy' if npu['all_healthy'] else 'NOT all healthy',
            'complete' if npu['complete'] else 'incomplete (%s)' % npu['incomplete_reason']))
    else:
        out.append('npu-smi: not read (see the sources below)')
    out.append('versions: %s' % ', '.join('%s %s' % (key, value or '-') for key, value in facts['versions'].items()))
    for chip in facts['chips']:
        out.append('NPU %s chip %s: %s, logic id %s, bus %s, %s MB, NUMA node %s, health %s' % (
            chip['npu_id'], chip['chip_id'], chip['name'], chip['logic_id'], chip['bus_id'],
            chip['hbm_total_mb'] or chip['memory_total_mb'], chip['numa_node'], chip['health']))
    for nic in facts['nics']:
        state = '%s netmask %s' % (nic['address'] or 'no address', nic['netmask'] or '-')
        out.append('NIC %s: %s' % (nic['id'], nic['error'] or state))
    for engine, config in sorted(facts['engines'].items()):
        if config is None:
            out.append('%s: no configuration file' % engine)
        else:
            out.append('%s: %s, runtimes %s, default runtime %s' % (
                engine, config['path'], ', '.join('%s (%s)' % item for item in sorted((config['runtimes'] or {}).items()))
                or 'none', config['default_runtime'] or '-'))
    for image in facts['images']:
        fit = ''
        if image['variant']:
            fit = ', built for %s%s' % (image['variant']['hardware'], '' if image['fits'] is None else
                                        (': this node' if image['fits'] else ': NOT these NPUs'))
        out.append('image (%s): %s %s%s' % (image['engine'], image['reference'], image['id'], fit))
    if layout is not None or model_problem:
        out += ['', 'Suggested layout', '----------------']
        if model_problem:
            out.append(model_problem)
        else:
            out.append('%s (%s): %s' % (layout['model'], layout['config'], layout['verdict']))
            if layout['tensor_parallel_size']:
                out.append('vllm_service_tensor_parallel_size %d, vllm_service_data_parallel_size %d, '
                           'vllm_service_enable_expert_parallel %s on %d NPUs' % (
                               layout['tensor_parallel_size'], layout['data_parallel_size'],
                               _scalar(layout['enable_expert_parallel']), layout['npus']))
            out += ['problem: %s' % problem for problem in layout['problems']]
            out += ['warning: %s' % warning for warning in layout['warnings']]
            if layout['suggestion']:
                out.append('suggestion: %s' % layout['suggestion'])
    out += ['', 'Sources read', '------------']
    for source in discovery['sources']:
        out.append('%s (%s %s): %s%s%s' % (
            source['name'], source['kind'], source['where'],
            source['error'] or ('exit code %s' % source['rc'] if source['rc'] is not None else 'read'),
            ', in %s' % _raw_name(source) if source['text'] is not None else '',
            ', cut at %d bytes' % MAX_RAW_BYTES if source['truncated'] else ''))
        if source['stderr']:
            out += ['    stderr: %s' % line for line in source['stderr'].splitlines()[:20]]
    notes = discovery['not_understood']
    out += ['', 'Not understood (%d), by source and line' % len(notes), '-------------------------------------']
    if not notes:
        out.append('none: the parsers understood every line of every source')
    for note in notes:
        out.append('%s%s: %s' % (note['source'], ' line %d' % note['line'] if note['line'] else '',
                                 note['text'] if note['text'] is not None else '(no line)'))
        out.append('    %s' % note['message'])
    return '\n'.join(_CONTROL.sub('?', line) for line in out) + '\n'


def archive_members(host, discovery, layout=None, model_problem=None):
    """The archive's files, name -> bytes: ``<host>-discovery/report.txt``, ``discovery.json`` (the sources without
    their text, what was not understood, the facts as shown, the layout) and ``raw/`` (each source's output as
    shown)."""
    top = '%s-discovery/' % host
    members = {top + 'report.txt': report_text(host, discovery, layout, model_problem).encode('utf-8')}
    document = {'schema': SCHEMA, 'host': host, 'include_addresses': discovery['include_addresses'],
                'sources': [dict((key, value) for key, value in source.items() if key != 'text')
                            for source in discovery['sources']],
                'not_understood': discovery['not_understood'], 'facts': discovery['shown_facts'], 'layout': layout}
    members[top + 'discovery.json'] = (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)
                                       + '\n').encode('utf-8')
    for source in discovery['sources']:
        if source['text'] is not None:
            members[top + _raw_name(source)] = source['text'].encode('utf-8', 'replace')
    return members


def archive_bytes(members):
    """A gzip-compressed tar of ``members`` (name -> bytes), the same bytes for the same members: sorted, owner root,
    mode 0644, no times."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode='wb', mtime=0, filename='') as compressed:
        with tarfile.open(fileobj=compressed, mode='w', format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(members):
                info = tarfile.TarInfo(name)
                info.size = len(members[name])
                info.mode = 0o644
                info.mtime = 0
                tar.addfile(info, io.BytesIO(members[name]))
    return buffer.getvalue()


def read_archive(data):
    """The members (name -> bytes) of an archive archive_bytes made; ValueError when ``data`` is no such archive or
    holds more than MAX_ARCHIVE_MEMBERS files or MAX_ARCHIVE_BYTES."""
    members = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as tar:
            for info in tar:
                if not info.isfile():
                    continue
                total += info.size
                if len(members) >= MAX_ARCHIVE_MEMBERS or total > MAX_ARCHIVE_BYTES:
                    raise ValueError('more than %d files or %d bytes' % (MAX_ARCHIVE_MEMBERS, MAX_ARCHIVE_BYTES))
                members[info.name] = tar.extractfile(info).read()
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise ValueError('not a discovery archive: %s' % error)
    return members


def _existing(path, variable):
    try:
        return _files.read_regular_file(path, MAX_ARCHIVE_BYTES, 'a file discovery writes')
    except _files.UnreadableFile as error:
        raise ValueError('%s: %s; move it away or set %s to another folder' % (variable, error, variable))


def output_dir(dest, base_dir=None):
    """The folder a discovery writes to: ``dest``, taken from ``base_dir`` (where ansible-playbook runs) when relative;
    ValueError naming discover_output_dir when it is relative and there is no base."""
    if not dest or not isinstance(dest, str):
        raise ValueError('discover_output_dir: give the folder the host_vars and the archive go to')
    if os.path.isabs(dest):
        return os.path.normpath(dest)
    if not base_dir or not os.path.isabs(base_dir):
        raise ValueError('discover_output_dir: %s is relative and the folder ansible-playbook runs in is unknown (PWD '
                         'is not set): give an absolute folder' % dest)
    return os.path.normpath(os.path.join(base_dir, dest))


def plan_outputs(host, dest, discovery, overwrite=False, layout=None, model_problem=None):
    """What a discovery of ``host`` writes under ``dest`` (the controller's folder): ``files``, each ``{'path',
    'action'`` (create, replace or unchanged)``, 'data'}``, and ``messages`` saying what was kept or written where.
    ``host_vars/<host>.yml`` is written when missing, replaced only with ``overwrite``, and otherwise, when it
    differs, left as it is with the new text beside it as ``host_vars/<host>.discovered.yml``; the archive
    ``<host>-discovery.tar.gz`` is replaced when its contents differ. ``kept`` is the message that says an existing
    host_vars file was kept, None otherwise; each file's ``before`` is the host_vars text it replaces. ValueError naming
    the variable to set."""
    if not isinstance(host, str) or not _HOST.match(host) or host in ('.', '..'):
        raise ValueError('host: %r cannot name a file (letters, digits, _ . -)' % (host,))
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise ValueError('discover_output_dir: %s is not a folder' % dest)
    files, messages, kept = [], [], None
    text = host_vars_text(host, discovery, layout).encode('utf-8')
    main = os.path.join(dest, 'host_vars', host + '.yml')
    beside = os.path.join(dest, 'host_vars', host + '.discovered.yml')
    current = _existing(main, 'discover_output_dir')
    target = main
    if current is not None and current != text and not overwrite:
        target = beside
        kept = ('%s differs from what was discovered and is kept (discover_overwrite: true replaces it); the '
                'discovered variables are in %s' % (main, beside))
        messages.append(kept)
        current = _existing(beside, 'discover_output_dir')
    files.append({'path': target, 'action': _action(current, text), 'data': text, 'before': current})
    members = archive_members(host, discovery, layout, model_problem)
    archive = os.path.join(dest, '%s-discovery.tar.gz' % host)
    old = _existing(archive, 'discover_output_dir')
    same = False
    if old is not None:
        try:
            same = read_archive(old) == members
        except ValueError:
            same = False
    files.append({'path': archive, 'action': 'unchanged' if same else ('create' if old is None else 'replace'),
                  'data': archive_bytes(members), 'before': None})
    for item in files:
        if item['action'] != 'unchanged':
            messages.append('%s %s' % ('wrote' if item['action'] == 'create' else 'replaced', item['path']))
    return {'files': files, 'messages': messages, 'kept': kept, 'host_vars': target, 'archive': archive}


def _action(current, data):
    if current is None:
        return 'create'
    return 'unchanged' if current == data else 'replace'
