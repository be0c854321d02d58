# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The decisions of a stack upgrade (playbooks/upgrade.yml, role cann's uninstall-first): which of the NPU firmware,
driver and CANN components change and in which order (Huawei's: firmware then driver on an upgrade, driver then
firmware on a first install; then the CANN toolkit, kernels, NNAL), which package files on the host are those of
the versions installed now - what a removal before the install needs, and what a rollback would reinstall - else
exactly which are missing, and how a node that failed its gate goes back to the stack of its last known good.
Pure: the callers read the host.
"""

from __future__ import annotations

import base64
import binascii
import math
import os

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._architecture import normalise_arch
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._json import JsonError, loads
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._ascend_packages import (
    parse_package_file_name,
    version_order,
)

HDK = ('driver', 'firmware')
CANN = ('toolkit', 'kernels', 'nnal')
STACK = HDK + CANN
# A rollback's order: CANN first, while the newer driver still runs it (a driver runs the CANN versions before it, not
# always those after it), then firmware then driver - Huawei's rollback is its upgrade procedure, firmware first -
# whose reboot comes last.
ROLLBACK_ORDER = CANN + ('firmware', 'driver')
# The known good's names of the stack (module vllm_known_good's summary) for the components.
KNOWN_GOOD_KEYS = {'cann_toolkit': 'toolkit', 'cann_kernels': 'kernels'}
# What a file of each component is called, for a message naming a missing one.
NAME_EXAMPLES = {
    'driver': 'Ascend-hdk-<chip>-npu-driver_{version}_linux-<arch>.run',
    'firmware': 'Ascend-hdk-<chip>-npu-firmware_{version}.run',
    'toolkit': 'Ascend-cann-toolkit_{version}_linux-<arch>.run',
    'kernels': 'Ascend-cann-kernels-<chip>_{version}_linux-<arch>.run (or Ascend-cann-<chip>-ops_, Atlas-A3-cann-kernels_)',
    'nnal': 'Ascend-cann-nnal_{version}_linux-<arch>.run',
}


# The variable that sets each component's version (roles npu_driver and cann), for a message asking for one.
VERSION_VARIABLES = {'driver': 'npu_driver_version', 'firmware': 'npu_driver_firmware_version',
                     'toolkit': 'cann_version', 'kernels': 'cann_version', 'nnal': 'cann_version'}
# What a version written out of nothing reads as: null through str(), templating or YAML. No version is named so.
_NO_VERSION = frozenset(['none', 'null', 'nil', '~', 'n/a', 'unknown'])


def _version(value, what='a version'):
    """A version as text, or None when it is not known: null, empty, or a text that is null written out ("None",
    "null", "unknown": no version is called so), so that "None" never lands in a file name or a message.
    :raises ValueError: naming ``what`` for something that is no version (a boolean, a list, a dict, a number that
    is not finite, a control character)."""
    if value is None:
        return None
    if isinstance(value, (bool, list, tuple, dict, set)) or (isinstance(value, float) and not math.isfinite(value)):
        raise ValueError('%s must be a version such as 8.1.RC1 (or null when unknown), not %r' % (what, value))
    text = str(value).strip()
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        raise ValueError('%s must be a version such as 8.1.RC1, without control characters; got %r' % (what, value))
    if not text or text.lower() in _NO_VERSION:
        return None
    return text


def said(version):
    """How a message says ``version``: itself, or "of unknown version"."""
    try:
        version = _version(version)
    except ValueError:
        version = None
    return version if version is not None else 'of unknown version'


def file_name(component, version):
    """The name Huawei gives the package file of ``component`` at ``version`` (``<version>`` when unknown)."""
    shown = said(version)
    return NAME_EXAMPLES[component].format(version='<version>' if shown == 'of unknown version' else shown)


def _same(left, right):
    return left is not None and right is not None and version_order(left, right) == 0


def installed_version(component):
    """The version of an ascend_facts component (a dict with ``version``); None when it is not installed."""
    return component.get('version') if isinstance(component, dict) else None


def upgrade_steps(installed, wanted):
    """What a stack upgrade does, from ``installed`` and ``wanted`` (dicts component -> version or null; a
    component missing from ``wanted`` or null there is left as it is).

    Returns ``steps`` (``{component, before, after}`` in the order to run them: firmware then driver when a driver is
    installed, else driver then firmware; then toolkit, kernels, NNAL), ``hdk`` and ``cann`` (whether the driver or
    firmware, and whether any CANN component, change) and ``drain`` (whether anything changes, so the service must
    stop first), and ``versions`` (component -> version once the steps ran).
    """
    installed = dict((key, _version(value, 'the installed %s version' % key)) for key, value in (installed or {}).items())
    wanted = dict((key, _version(value, 'the %s version to install' % key)) for key, value in (wanted or {}).items())
    unknown = sorted((set(installed) | set(wanted)) - set(STACK))
    if unknown:
        raise ValueError('unknown stack component(s) %s; the components are %s' % (', '.join(unknown), ', '.join(STACK)))
    hdk_order = ('firmware', 'driver') if installed.get('driver') else ('driver', 'firmware')
    steps = []
    for component in hdk_order + CANN:
        after = wanted.get(component)
        before = installed.get(component)
        if after is not None and not _same(before, after):
            steps.append({'component': component, 'before': before, 'after': after})
    changing = set(step['component'] for step in steps)
    versions = dict((component, installed.get(component)) for component in STACK)
    versions.update((step['component'], step['after']) for step in steps)
    return {'steps': steps, 'hdk': bool(changing & set(HDK)), 'cann': bool(changing & set(CANN)),
            'drain': bool(steps), 'versions': versions}


def _fits(parsed, component, version, arch, chip):
    if parsed is None or parsed['component'] != component or not _same(parsed['version'], version):
        return False
    if arch and parsed['arch'] and parsed['arch'] != normalise_arch(arch):
        return False
    if chip and parsed['chip'] and component in ('driver', 'firmware', 'kernels'):
        return parsed['chip'].lower() == str(chip).lower()
    return True


def previous_packages(installed, files, arch=None, chip=None):
    """Which of ``files`` (paths of package files on the host) are the packages of the ``installed`` versions (a dict
    component -> version or null; null components are not installed and need nothing), for ``arch`` (the host's, any
    spelling) and ``chip`` (the name in the driver's and kernels' file names, such as ``910b``; null for any).

    Returns ``found`` (component -> path, the first fitting file in the order given, so callers put the recorded
    paths first), ``missing`` (``{component, version, name}`` for each installed component without a file, ``name``
    the file name Huawei gives it) and ``complete`` (nothing missing).
    """
    found = {}
    missing = []
    for component in STACK:
        version = _version((installed or {}).get(component), 'the installed %s version' % component)
        if version is None:
            continue
        match = next((path for path in files or ()
                      if _fits(parse_package_file_name(os.path.basename(str(path))), component, version, arch, chip)),
                     None)
        if match is None:
            missing.append({'component': component, 'version': version, 'name': file_name(component, version)})
        else:
            found[component] = match
    return {'found': found, 'missing': missing, 'complete': not missing}


def missing_message(missing, where, unknown=()):
    """One sentence naming each missing package (the ``missing`` of previous_packages or rollback_plan) and the
    folders searched, then each version not known (rollback_plan's ``unknown``) with the variable that sets it;
    '' when nothing is missing or unknown."""
    parts = []
    if missing:
        parts.append('no package of the installed %s in %s' % (
            ', '.join('%s %s (%s)' % (item['component'], said(item['version']), item['name']) for item in missing),
            ', '.join(where) if where else 'no folder'))
    for item in unknown:
        parts.append(item['message'])
    return '; '.join(parts)


def package_record(old, version, packages):
    """The record of the packages a role installed, after installing ``version`` from ``packages`` (component ->
    path): ``{current: {version, packages}, previous: ...}``. The ``old`` record's current entry becomes the previous
    one when the version changes; on the same version the previous entry stays and the packages are merged (a later
    run may not have fetched them)."""
    old = old if isinstance(old, dict) else {}
    current = old.get('current') if isinstance(old.get('current'), dict) else {}
    version = _version(version, 'the version installed')
    try:
        recorded = _version(current.get('version'))
    except ValueError:      # a record written wrong: its entry is no version, and becomes the previous one
        recorded = None
    if _same(recorded, version):
        merged = dict(current.get('packages') or {})
        merged.update(packages or {})
        return {'current': {'version': version, 'packages': merged}, 'previous': old.get('previous')}
    return {'current': {'version': version, 'packages': dict(packages or {})}, 'previous': current or None}


# The largest package record read back: a record names a few files.
MAX_RECORD_BYTES = 1 << 20


def read_package_record(slurped, where='the package record'):
    """The package record (package_record's) a role reads back from the host: ``slurped`` is the result of
    ansible.builtin.slurp of the record's file; {} when there is none yet (the slurp found no file). ValueError,
    naming ``where``, when the file holds no JSON object."""
    content = (slurped or {}).get('content')
    if content is None:
        return {}
    try:
        record = loads(base64.b64decode(content), max_bytes=MAX_RECORD_BYTES)
    except (JsonError, binascii.Error, TypeError) as error:
        raise ValueError('%s is no package record: %s' % (where, error))
    if not isinstance(record, dict):
        raise ValueError('%s is no package record: no JSON object' % where)
    return record


def recorded_package_files(record):
    """The package files a record of package_record's (or a dict of such records by name) names, current entry
    first, each entry's files in the record's order."""
    entries = [record] if 'current' in record else list(record.values())
    files = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        for side in (entry.get('current'), entry.get('previous')):
            if isinstance(side, dict):
                files.extend(path for path in (side.get('packages') or {}).values() if path)
    return files


def _components(versions, what):
    versions = dict((KNOWN_GOOD_KEYS.get(key, key), _version(value, 'the %s version in %s' % (key, what)))
                    for key, value in (versions or {}).items())
    unknown = sorted(set(versions) - set(STACK))
    if unknown:
        raise ValueError('unknown stack component(s) %s in %s; the components are %s'
                         % (', '.join(unknown), what, ', '.join(STACK)))
    return versions


def _unknown(component, what, role, variables):
    return {'component': component, 'variable': variables[0],
            'message': 'no known %s version to go back to (neither the last known good\'s stack nor the installed '
                       'stack gives one), so the rollback cannot put %s back: set %s to the known good\'s and run role '
                       '%s' % (component, what, ' and '.join(variables), role)}


def _sources(packages):
    """The roles' package sources of ``packages`` (component -> file on the node): ``{path}``, null without a file."""
    return dict((component, {'path': path} if path else None) for component, path in packages.items())


def rollback_plan(target, installed, found=None):
    """How a node that failed its gate goes back to ``target`` (component -> version: the stack of its last known good,
    whose ``cann_toolkit`` and ``cann_kernels`` keys are accepted, else the versions installed before the upgrade; a
    null version leaves the component as it is) from ``installed`` (the versions now, null where unknown), with
    ``found`` (component -> package file of the version to go back to, previous_packages' ``found``; null before the
    files are looked for).

    CANN goes back as role cann installs it, whole (toolkit and kernels at the target's toolkit version, else the
    installed one; NNAL when the target has one); the driver and firmware as role npu_driver installs them, both
    packages given when either changes (the one not changing at its installed version). A version the rollback needs
    but neither gives is unknown: never formatted as "None", it is said so, with the variable that sets it, and that
    part of the rollback is not planned. The order is ROLLBACK_ORDER's.

    Returns ``steps`` (``{component, before, after}`` in that order), ``needs`` (component -> version: the package
    files the rollback installs from), ``cann`` (null, or ``{version, packages, sources}`` with the ``toolkit``,
    ``kernels`` and ``nnal`` files, nnal null when the target has none, and ``sources`` the same as the roles' package
    variables take them, ``{path}`` or null), ``hdk`` (null, or ``{driver, firmware, packages, sources}``),
    ``missing`` (``{component, version, name}`` for each need without a file in ``found``, as missing_message takes
    it), ``unknown`` (``{component, variable, message}`` for each version needed and not known; its part - CANN, or
    driver and firmware - is then null) and ``complete`` (nothing missing nor unknown).
    """
    target = _components(target, 'the stack to go back to')
    installed = _components(installed, 'the installed stack')
    found = dict(found or {})
    changes = [component for component in ROLLBACK_ORDER
               if target.get(component) is not None and not _same(installed.get(component), target[component])]
    needs = {}
    unknown = []
    cann = hdk = None
    if set(changes) & set(CANN):
        version = (target.get('toolkit') or target.get('kernels') or installed.get('toolkit')
                   or installed.get('kernels'))
        if version is None:
            unknown.append(_unknown('CANN', 'CANN', 'cann', [VERSION_VARIABLES['toolkit']]))
        else:
            needs.update(toolkit=version, kernels=version)
            if target.get('nnal') is not None:
                needs['nnal'] = target['nnal']
            packages = {'toolkit': found.get('toolkit'), 'kernels': found.get('kernels'),
                        'nnal': found.get('nnal') if 'nnal' in needs else None}
            cann = {'version': version, 'packages': packages, 'sources': _sources(packages)}
    if set(changes) & set(HDK):
        versions = dict((component, target.get(component) or installed.get(component)) for component in HDK)
        for component in HDK:
            if versions[component] is None:
                # role npu_driver takes both versions: this one first, then the other.
                unknown.append(_unknown(component, 'the driver and firmware', 'npu_driver',
                                        [VERSION_VARIABLES[name] for name in sorted(HDK, key=lambda n: n != component)]))
        if None not in versions.values():
            needs.update(versions)
            packages = {'driver': found.get('driver'), 'firmware': found.get('firmware')}
            hdk = {'driver': needs['driver'], 'firmware': needs['firmware'], 'packages': packages,
                   'sources': _sources(packages)}
    missing = [{'component': component, 'version': needs[component], 'name': file_name(component, needs[component])}
               for component in ROLLBACK_ORDER if component in needs and not found.get(component)]
    steps = [{'component': component, 'before': installed.get(component), 'after': target[component]}
             for component in changes]
    return {'steps': steps, 'needs': needs, 'cann': cann, 'hdk': hdk, 'missing': missing, 'unknown': unknown,
            'complete': not missing and not unknown}
