# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Step 2 of the serving plan (_serving.py): the vllm-ascend release (from the image's tag, the pins or the
version given), the environment it needs on NPUs, the NPU driver it is checked against and, on a host without a
driver yet, the NPUs as its PCI bus shows them.
Its tests: tests/unit/plugins/module_utils/serving/test__plan_release.py.
"""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _sizing
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import (
    CONTROL_DEVICES,
    DRIVER_FILES,
    ENV_BASE,
    ENV_NPU_BY_RELEASE,
    _RELEASE_IN_PIN,
    _RELEASE_IN_TAG,
    release_numbers,
)


# ------------------------------------------------------------------------------------------------------ the release

def release_of(image=None, pip_packages=None, version=None, mode='container'):
    """The vllm-ascend release a service runs: ``version`` when given, else the image's tag (container mode, such
    as ``quay.io/ascend/vllm-ascend:v0.13.0-a3`` -> 0.13.0) or the ``vllm-ascend==`` pin (native mode); '' when
    none says. The leading v is dropped."""
    if version:
        return str(version).strip().lstrip('v')
    if mode == 'container':
        match = _RELEASE_IN_TAG.search(image or '')
        return match.group(1) if match else ''
    for pin in pip_packages or ():
        match = _RELEASE_IN_PIN.match(str(pin))
        if match:
            return match.group(1)
    return ''


def environment_defaults(release, has_npus, cpu_kvcache_space=4):
    """The environment defaults of a service: offline, plus the release's NPU tutorial environment on NPU hosts (the
    newest entry not above the release; the oldest when the release says no number), or the CPU backend's KV cache
    size elsewhere."""
    env = dict(ENV_BASE)
    if not has_npus:
        env['VLLM_CPU_KVCACHE_SPACE'] = str(cpu_kvcache_space)
        return env
    numbers = release_numbers(release) or (0, 0, 0)
    for first, release_env in ENV_NPU_BY_RELEASE:
        if numbers >= first:
            env.update(release_env)
            break
    return env


# ------------------------------------------------------------------------------------------- a host without a driver

# A host whose NPUs the PCI bus shows (ascend_facts) but npu-smi cannot yet (no NPU driver): by the chip family of its
# PCI devices, the product _sizing plans it as, the NPUs vLLM counts per PCI device and per card (npu-smi's NPU id).
# An A3 shows one PCI device per die, two dies a card; a 300I Duo card one PCI device for its two 310P chips
# (tests/simulator/fake_sysfs.py lays them out so).
FRESH_PRODUCTS = {
    '910B': ('a2', 1, 1),
    '910_93': ('a3', 1, 2),
    '310P': ('300i_duo', 2, 2),
}


# What an NPU driver's install puts on a host (the Atlas 800I A2's: npu-smi in /usr/local/bin) and the control devices
# it loads, taken as there when a fresh host is planned.
FRESH_DRIVER_PATHS = tuple(path for path in DRIVER_FILES if path != '/usr/local/sbin/npu-smi') + CONTROL_DEVICES[:3]


def fresh_host(npu_devices):
    """What a plan assumes of a host whose NPUs only the PCI bus shows (npu-smi not installed yet): ``chips`` as
    npu-smi would list them (npu_id, chip_id, and the product's memory), the ``product`` (a _sizing.PRODUCTS key, None
    when the chip family is not one the sizing knows) and the ``assumed`` sentence saying so."""
    devices = [device for device in npu_devices or () if isinstance(device, dict)]
    families = sorted(set(str(device.get('chip_family') or 'unknown') for device in devices))
    family = families[0] if len(families) == 1 else None
    product, per_device, per_card = FRESH_PRODUCTS.get(family, (None, 1, 1))
    count = len(devices) * per_device
    spec = _sizing.PRODUCTS.get(product)
    chips = [{'npu_id': index // per_card, 'chip_id': index % per_card, 'name': None,
              'hbm_total_mb': spec['hbm_mb'] if spec else None} for index in range(count)]
    seen = '%d NPU PCI device%s (chip family %s)' % (len(devices), '' if len(devices) == 1 else 's',
                                                     ', '.join(families) or 'none')
    if spec is None:
        sentence = ('npu-smi is not on this host yet (no NPU driver): planned from the %s on its PCI bus, %d NPUs, '
                    'whose product and memory are not known, so the model is not sized against them' % (seen, count))
    else:
        sentence = ('npu-smi is not on this host yet (no NPU driver): planned from the %s on its PCI bus as %s, %d NPUs '
                    'of %d MB as npu-smi would show them%s' % (
                        seen, spec['name'], count, spec['hbm_mb'],
                        ' (a 32 GB 910B holds half: the real memory is read once the driver is there)'
                        if family == '910B' else ''))
    return {'chips': chips, 'product': product, 'family': family, 'assumed': sentence}


def driver_plan(facts, fresh, release):
    """The NPU driver the release is checked against (role vllm_service's checks.yml): ``version`` (the installed
    one, or on a fresh host vllm_service_target_driver_version, the inventory's npu_driver_version that the playbooks
    pass and role npu_driver installs first), its
    ``source`` and ``check`` (false only on a fresh host without a target: nothing to check against); and the
    sentence the plan assumes, on a fresh host."""
    installed = facts.get('driver_version')
    target = facts.get('target_driver_version')
    if installed or not fresh:
        return {'version': installed or None, 'source': 'installed' if installed else None, 'check': True}, None
    if target:
        return ({'version': str(target), 'source': 'vllm_service_target_driver_version', 'check': True},
                'the NPU driver is the one the inventory targets, %s (vllm_service_target_driver_version; the playbooks '
                'pass npu_driver_version), which role npu_driver installs before this service (playbooks/site.yml): '
                'vllm-ascend %s is checked against it'
                % (target, release or '(release unknown)'))
    return ({'version': None, 'source': None, 'check': False},
            'the NPU driver\'s version is not known (no driver installed, vllm_service_target_driver_version not set: '
            'set npu_driver_version in the inventory): vllm-ascend %s '
            'is not checked against it' % (release or '(release unknown)'))
