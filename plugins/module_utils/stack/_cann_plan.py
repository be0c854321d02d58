# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Role cann's plan, decided once: whether cann_kernels_package is one source or one per SoC, the package sources to
check and to fetch (the kernels for the NPUs' SoC), the components to install and those whose installed version is
another, the installed components to uninstall first (stack/_stack_upgrade.py's steps) and where to look for their
package files, the chip in their file names, and the installed versions the verify compares; the environment the
set_env.sh scripts set, read from ``env`` before and after; the install path an installer takes.
"""

from __future__ import annotations

import posixpath
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._package_source import SOURCE_KEYS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._stack_upgrade import installed_version, upgrade_steps

# Huawei's install order, and the keys that make a package source (not a dict of sources per SoC).
COMPONENTS = ('toolkit', 'kernels', 'nnal')
# The role variables (without their cann_ prefix) and tables the plan is made of.
INPUT_KEYS = ('version', 'toolkit_package', 'kernels_package', 'nnal_package', 'uninstall_first', 'package_dir',
              'previous_package_dirs', 'soc_keys', 'file_chip')
# What `env` prints that no set_env.sh sets.
_SHELL_NOISE = re.compile(r'(_|SHLVL|PWD|OLDPWD)=')
ENV_MARK = '#### after set_env.sh ####\n'


def kernels_single(kernels):
    """Whether cann_kernels_package is one source (or not a dict of sources per SoC at all)."""
    return not isinstance(kernels, dict) or not kernels or any(key in kernels for key in SOURCE_KEYS)


def _facts_plan(inputs, ascend, single, components):
    kernels = inputs['kernels_package']
    families = []
    for device in ascend.get('npu_devices') or []:
        if device.get('chip_family') not in families:
            families.append(device.get('chip_family'))
    family = families[0] if families else 'none'
    if single:
        kernels_source = kernels
    else:
        socs = inputs['soc_keys'].get(family, [])
        kernels_source = next((value for key, value in kernels.items() if str(key) in socs), None)
    sources = [{'component': 'toolkit', 'variable': 'cann_toolkit_package', 'source': inputs['toolkit_package']},
               {'component': 'kernels', 'variable': 'cann_kernels_package', 'source': kernels_source}]
    if inputs['nnal_package'] is not None:
        sources.append({'component': 'nnal', 'variable': 'cann_nnal_package', 'source': inputs['nnal_package']})
    version = str(inputs['version'])
    current = dict((name, installed_version(ascend.get(name))) for name in COMPONENTS)
    install_needed = [name for name in components if str(current[name]).lower() != version.lower()]
    remove = []
    if inputs['uninstall_first']:
        steps = upgrade_steps(current, dict((name, version) for name in components))['steps']
        remove = [step for step in steps if step['before']]
    removed = set(step['component'] for step in remove)
    all_sources = [inputs['toolkit_package']] + ([kernels] if single else list(kernels.values()))
    all_sources += [inputs['nnal_package']] if inputs['nnal_package'] is not None else []
    previous_dirs = []
    for folder in ([inputs['package_dir']]
                   + [posixpath.dirname(source['path']) for source in all_sources
                      if isinstance(source, dict) and 'path' in source]
                   + list(inputs['previous_package_dirs'] or [])):
        if folder not in previous_dirs:
            previous_dirs.append(folder)
    return {'families': families, 'kernels_source': kernels_source, 'sources': sources,
            'install_needed': install_needed, 'current': current, 'remove': remove,
            'remove_versions': dict((step['component'], step['before']) for step in remove),
            'uninstall_order': [name for name in reversed(COMPONENTS) if name in removed],
            'previous_dirs': previous_dirs, 'chip': inputs['file_chip'].get(family),
            'installed': dict((name, (ascend[name].get('version', '') if ascend.get(name) else ''))
                              for name in COMPONENTS)}


def plan(inputs, ascend=None):
    """Role cann's plan from its variables ``inputs`` (INPUT_KEYS) and, once read, ascend_facts' ``ascend``.

    Always: ``kernels_single``, ``known_socs`` (every key a per-SoC cann_kernels_package may use),
    ``unknown_soc_keys`` (the keys of a per-SoC cann_kernels_package that are none of them), ``source_pairs``
    (``[variable, source]`` for package_source_problems, a per-SoC source as ``cann_kernels_package.<key>``) and
    ``components`` (toolkit, kernels, and NNAL when given). With ``ascend`` also: ``families`` (the NPUs' chip
    families), ``kernels_source`` (the one for the first family's SoC; None when there is none), ``sources`` (component,
    variable, source in Huawei's order), ``install_needed`` (the components whose installed version is not
    ``version``), ``current`` (the installed versions), ``remove`` (with ``uninstall_first``, the upgrade steps of the
    installed components that are another version) and ``remove_versions``, ``uninstall_order`` (NNAL, kernels,
    toolkit among them), ``previous_dirs`` (where their package files may be), ``chip`` (the chip in their file names)
    and ``installed`` (each component's version, '' when absent)."""
    kernels = inputs['kernels_package']
    single = kernels_single(kernels)
    known = [key for keys in inputs['soc_keys'].values() for key in keys]
    pairs = [['cann_toolkit_package', inputs['toolkit_package']]]
    if single:
        pairs.append(['cann_kernels_package', kernels])
    else:
        pairs += [['cann_kernels_package.%s' % key, value] for key, value in kernels.items()]
    if inputs['nnal_package'] is not None:
        pairs.append(['cann_nnal_package', inputs['nnal_package']])
    components = ['toolkit', 'kernels'] + (['nnal'] if inputs['nnal_package'] is not None else [])
    result = {'kernels_single': single, 'known_socs': known, 'source_pairs': pairs, 'components': components,
              'unknown_soc_keys': [] if single else [str(key) for key in kernels if str(key) not in known]}
    if ascend is not None:
        result.update(_facts_plan(inputs, ascend, single, components))
    return result


def env_set(output):
    """What the set_env.sh scripts set, from ``env`` printed before them, ENV_MARK, and ``env`` after: ``lines``
    (sorted ``KEY=VALUE`` new or changed, the shell's own left out) and ``env`` (a dict of them)."""
    before, after = output.split(ENV_MARK)[:2]
    seen = set(before.splitlines())
    lines = sorted(set(line for line in after.splitlines() if line not in seen and not _SHELL_NOISE.match(line)))
    return {'lines': lines, 'env': dict(line.split('=', 1) if '=' in line else (line, line) for line in lines)}


def install_path(package, path):
    """The install path an installer takes: ``path`` for a ``.run`` package, None (the module's default) else."""
    return path if re.search(r'\.run$', str(package)) else None


def fetched(stat_results):
    """Of the packages fetched, those check mode cannot inspect (``missing``: the stat, looped over the sources,
    found no file; a skipped stat says nothing) and the toolkit and kernels that are there to install (``present``)."""
    missing = [result['item']['component'] for result in stat_results
               if 'stat' in result and not result['stat'].get('exists')]
    return {'missing': missing, 'present': [name for name in COMPONENTS[:2] if name not in missing]}
