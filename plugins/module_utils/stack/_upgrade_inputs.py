# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What playbooks/upgrade.yml decides from its inputs before it drains a node: the versions installed and wanted, where
each component's package comes from (the roles' package variables: a file on the node, on the controller, a URL, or
a dict of several per SoC), which of them are not there, the folders a rollback's package files are looked for in, and
which package file a rollback to the last known good would reinstall. The playbook reads the node (stat, uri, slurp,
find) and passes the results in; nothing here touches the host.
"""

from __future__ import annotations

import posixpath

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._package_source import SOURCE_KEYS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._stack_upgrade import (
    HDK,
    STACK,
    installed_version,
    missing_message,
    previous_packages,
    read_package_record,
    recorded_package_files,
)

# The variable that gives each component's package (roles npu_driver and cann), named in messages.
PACKAGE_VARIABLES = {'driver': 'npu_driver_driver_package', 'firmware': 'npu_driver_firmware_package',
                     'toolkit': 'cann_toolkit_package', 'kernels': 'cann_kernels_package', 'nnal': 'cann_nnal_package'}
# The chip family as ascend_facts reports it -> the chip in the kernels packages' file names.
FILE_CHIP = {'910B': '910b', '910_93': 'A3', '310P': '310p', '910': '910'}


def installed_versions(ascend):
    """Component -> installed version (null where not installed) from ascend_facts' ``ascend`` fact."""
    ascend = ascend if isinstance(ascend, dict) else {}
    return dict((component, installed_version(ascend.get(component))) for component in STACK)


def wanted_versions(driver, firmware, cann, nnal_package=None):
    """Component -> version to install: CANN's version for its toolkit and kernels, and for NNAL when a package of it
    is given (else NNAL is left as it is)."""
    return {'driver': driver, 'firmware': firmware, 'toolkit': cann, 'kernels': cann,
            'nnal': cann if nnal_package is not None else None}


def _sources_of(given):
    """(key, source) for each source a package variable's value gives: one source, or one per SoC."""
    if isinstance(given, dict) and not any(key in given for key in SOURCE_KEYS):
        return list(given.items())
    return [('', given)]


def package_sources(steps, given):
    """The package sources of the components the ``steps`` change (stack_upgrade_steps' steps), from ``given``
    (component -> the value of its package variable), as ``{component, variable, source}``: ``all`` of them, and
    those to look for ``on_node`` (a path), ``on_controller`` (src) and ``at_url``."""
    sources = []
    for step in steps:
        component = step['component']
        for key, source in _sources_of(given.get(component)):
            sources.append({'component': component,
                            'variable': PACKAGE_VARIABLES[component] + ('.' + key if key else ''),
                            'source': source if isinstance(source, dict) else {}})
    return {'all': sources,
            'on_node': [item for item in sources if 'path' in item['source']],
            'on_controller': [item for item in sources if 'src' in item['source']],
            'at_url': [item for item in sources if 'url' in item['source']]}


def _unique(values):
    seen = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def package_dirs(role_dirs, given, extra_dirs=()):
    """The folders a rollback's package files are looked for in: the roles' package folders (``role_dirs``), the
    folder of every package given as a path on the node (``given``: component -> package variable's value), and
    ``extra_dirs`` (upgrade_rollback_package_dirs), each once, in that order."""
    dirs = list(role_dirs)
    for component in STACK:
        for _key, source in _sources_of(given.get(component)):
            if isinstance(source, dict) and isinstance(source.get('path'), str):
                dirs.append(posixpath.dirname(source['path']))
    return _unique(dirs + list(extra_dirs or ()))


def _is_file(result):
    stat = result.get('stat') if isinstance(result, dict) else None
    return isinstance(stat, dict) and bool(stat.get('isreg'))


def missing_packages(sources, on_node, on_controller, at_url):
    """For each component of ``sources`` (package_sources' ``all``) of which no source is there - a regular file on
    the node or the controller (the stat results ``on_node``, ``on_controller``), or a URL that answered 200
    (the uri results ``at_url``) - a message naming the component and its variables."""
    there = [result['item'] for result in list(on_node) + list(on_controller) if _is_file(result)]
    there += [result['item'] for result in at_url if isinstance(result, dict) and result.get('status') == 200]
    found = set(item['component'] for item in there)
    missing = []
    for component in _unique(item['component'] for item in sources):
        if component not in found:
            variables = ', '.join(item['variable'] for item in sources if item['component'] == component)
            missing.append('%s (%s: not on the node, the controller or its server)' % (component, variables))
    return missing


def rollback_packages(needs, records, found_files, dirs, npu_devices=()):
    """The package file of each version a rollback would reinstall (``needs``: component -> version, the rollback
    plan's), among the files the roles' package records name (``records``: slurp results of the records, absent ones
    failed) and the files found in the package folders (``found_files``: ansible.builtin.find's files). The kernels'
    file is matched to the NPUs' chip (``npu_devices``: ascend_facts' devices). Returns ``found`` (component -> file),
    ``complete`` and ``message`` (what is missing and the folders looked in)."""
    files = []
    for record in records:
        if isinstance(record, dict) and 'content' in record:
            files.extend(recorded_package_files(read_package_record(record, record.get('item', 'a package record'))))
    files += sorted(item['path'] for item in found_files)
    where = list(dirs) + [record['item'] for record in records if isinstance(record, dict) and 'item' in record]
    families = [device.get('chip_family') for device in npu_devices or () if isinstance(device, dict)]
    chip = FILE_CHIP.get(families[0]) if families else None
    hdk = previous_packages(dict((key, value) for key, value in needs.items() if key in HDK), files)
    cann = previous_packages(dict((key, value) for key, value in needs.items() if key not in HDK), files, chip=chip)
    found = dict(hdk['found'])
    found.update(cann['found'])
    messages = [missing_message(cann['missing'], where), missing_message(hdk['missing'], where)]
    return {'found': found, 'complete': hdk['complete'] and cann['complete'],
            'message': '; '.join(message for message in messages if message)}
