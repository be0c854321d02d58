# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The small decisions of the host roles (package_fetch, container_runtime, npu_driver), each once, here, instead of in
their Jinja: where a fetched package goes and its mode, what a container engine reports of its runtimes, which config
version a containerd takes, and the NPU driver's installed versions, install order, predicted versions, preflight
checks to skip and reboot. Pure functions over data the roles pass in (plugins/filter/host.py exposes them).
"""

from __future__ import annotations

import json
import posixpath
import re

from urllib.parse import urlsplit

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._stack_upgrade import installed_version

# An Ascend .run package is executable; anything else (a .deb, .rpm, .zip, .tar.gz) is not.
_RUN_PACKAGE = re.compile(r'\.run$')

# containerd --version: "containerd containerd.io 1.7.25 ...", "containerd github.com/containerd/containerd/v2 v2.0.2 ..."
_CONTAINERD_MAJOR = re.compile(r'(?:^|\s)v?([0-9]+)\.[0-9]+')
# containerd config dump: the default runtime, and the runtimes' tables.
_CONTAINERD_DEFAULT = re.compile(r'default_runtime_name\s*=\s*["\']([^"\']*)["\']')
_CONTAINERD_RUNTIMES = re.compile(r'runtimes\.["\']?([A-Za-z0-9_.-]+)["\']?\]')

# The NPU driver's two components; the driver is the first the role fetches (each run starts its records anew).
NPU_DRIVER_COMPONENTS = ('driver', 'firmware')
# The preflight checks that matter only before a change (and are skipped when it is forced), and the one a run user
# created in the same check-mode run fails.
NPU_DRIVER_CHANGE_CHECKS = ('npu_health', 'npu_processes')
NPU_DRIVER_ACCOUNT_CHECK = 'run_user'


def package_target(source, dest_dir):
    """``{'path', 'mode'}``: where package ``source`` (role package_fetch's ``path``, ``src`` or ``url`` source) is on
    the host - its ``path`` as it is, else ``dest_dir`` and the file name of ``src`` or of ``url``'s path - and the
    mode a copied or downloaded one gets (0755 for a ``.run`` installer, else 0644)."""
    if 'path' in source:
        path = source['path']
    else:
        name = posixpath.basename(source['src'] if 'src' in source else urlsplit(source['url']).path)
        path = '%s/%s' % (dest_dir, name)
    return {'path': path, 'mode': '0755' if _RUN_PACKAGE.search(str(path)) else '0644'}


def containerd_config_version(version_output):
    """The configuration version a containerd takes (3 from containerd 2, else 2) from ``containerd --version``'s
    output; None when it names no version."""
    majors = _CONTAINERD_MAJOR.findall(version_output or '')
    if not majors:
        return None
    return 3 if int(majors[0]) >= 2 else 2


def _get(data, *keys):
    """data[k1][k2]... or None when a level is missing or not a dict."""
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def runtime_report(engine, info, runtime_name, ascend_runtime, default_runtime, predict=False):
    """Role container_runtime's report of ``engine``'s runtimes - ``engine``, ``runtimes``, ``default_runtime``,
    ``ascend_runtime`` and ``verified`` - read from ``info`` (docker's and podman's ``info`` JSON, containerd's
    ``config dump``); with ``predict`` (check mode, which asks nothing) what the run predicts from the role's
    variables ``ascend_runtime`` and ``default_runtime`` instead, unverified."""
    if predict:
        return {'engine': engine, 'runtimes': [runtime_name] if ascend_runtime else [],
                'default_runtime': runtime_name if default_runtime and ascend_runtime else None,
                'ascend_runtime': bool(ascend_runtime), 'verified': False}
    if engine == 'containerd':
        runtimes = sorted(set(_CONTAINERD_RUNTIMES.findall(info)))
        defaults = _CONTAINERD_DEFAULT.findall(info)
        return {'engine': engine, 'runtimes': runtimes, 'default_runtime': defaults[0] if defaults else None,
                'ascend_runtime': runtime_name in runtimes, 'verified': True}
    data = json.loads(info)
    if engine == 'podman':
        oci = _get(data, 'host', 'ociRuntime', 'name')
        oci = 'unknown' if oci is None else oci
        return {'engine': engine, 'runtimes': [oci], 'default_runtime': oci, 'ascend_runtime': oci == runtime_name,
                'verified': True}
    runtimes = data.get('Runtimes', {})
    return {'engine': engine, 'runtimes': sorted(runtimes), 'default_runtime': data.get('DefaultRuntime'),
            'ascend_runtime': runtime_name in runtimes, 'verified': True}


def npu_driver_state(ascend, driver_version, firmware_version):
    """What role npu_driver finds (``ascend``: ascend_facts' ``ascend``) and must change: ``installed`` (``driver``
    and ``firmware`` versions, None when absent), ``change_needed`` (either differs from ``driver_version`` /
    ``firmware_version``, compared as lower-case text) and ``order`` (Huawei's: a first install is driver then
    firmware, an upgrade firmware then driver)."""
    installed = dict((name, installed_version(ascend.get(name))) for name in ('driver', 'firmware'))
    change = (str(installed['driver']).lower() != str(driver_version).lower()
              or str(installed['firmware']).lower() != str(firmware_version).lower())
    order = list(NPU_DRIVER_COMPONENTS) if installed['driver'] is None else list(reversed(NPU_DRIVER_COMPONENTS))
    return {'installed': installed, 'change_needed': change, 'order': order}


def npu_driver_after(results, ascend, check_mode, change_needed):
    """The driver and firmware versions after the run: what ``ascend`` (ascend_facts read after it) says, or in check
    mode with a change to make what the install ``results`` predict (their ``after``); ``checkable`` is false when
    check mode cannot predict both (a package not on the host yet)."""
    predicted = dict((result['component'], result['after']) for result in results
                     if isinstance(result, dict) and 'after' in result)
    predict = bool(check_mode and change_needed)
    if predict:
        after = dict((name, predicted.get(name)) for name in NPU_DRIVER_COMPONENTS)
    else:
        after = dict((name, installed_version(ascend.get(name))) for name in NPU_DRIVER_COMPONENTS)
    after['checkable'] = not predict or len(predicted) == 2
    return after


def npu_driver_skip_checks(change_needed, force, check_mode, account_new):
    """The preflight checks role npu_driver skips: the chips' health and processes unless a change is to be made
    unforced, and the run user in check mode when the run would create it (or its group)."""
    skip = [] if change_needed and not force else list(NPU_DRIVER_CHANGE_CHECKS)
    if check_mode and account_new:
        skip.append(NPU_DRIVER_ACCOUNT_CHECK)
    return skip


def per_component(previous, component, value):
    """``previous`` (component to value) with ``component``'s ``value``; the driver, fetched first, starts anew."""
    kept = {} if component == NPU_DRIVER_COMPONENTS[0] else dict(previous or {})
    kept[component] = value
    return kept


def reboot_needed(results):
    """Whether one of the package tasks' ``results`` (ascend_package) says the host must reboot."""
    return any(isinstance(result, dict) and result.get('reboot_required') for result in results)
