# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Step 3 of the serving plan (_serving.py): the NPUs and the cards they sit on; after the recipe (step 5), the CPU
and memory binding by the NUMA nodes of the NPUs, the release and the host.
Its tests: tests/unit/plugins/module_utils/serving/test__plan_npus.py.
"""

from __future__ import annotations

import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import release_numbers
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._ranks import npus_for_ranks


def npu_selection(inputs, facts, chips, has_npus, problems):
    """The service's NPUs: ``npu_ids`` (logical ids, /dev/davinci<N>: the chips in npu-smi's order; all of them unless
    vllm_service_npus names some), ``dp_local`` (the data-parallel ranks on this node) and ``count_refused`` (the
    NPUs are too few for tensor parallel x local data parallel); each problem is appended to ``problems``."""
    npu_ids = list(inputs.get('npus') or range(len(chips))) if has_npus else []
    dp_local = inputs.get('data_parallel_size_local') or inputs['data_parallel_size']
    count_refused = False
    if has_npus:
        needed = npus_for_ranks(inputs['tensor_parallel_size'], dp_local)
        if not facts.get('npu_smi_complete', True):
            problems.append('npu-smi info is incomplete: %s' % facts.get('npu_smi_incomplete_reason', 'no reason given'))
        elif npu_ids and max(npu_ids) >= len(chips):
            problems.append('vllm_service_npus %s names NPUs the host does not have: it has %d (ids 0 to %d)'
                            % (npu_ids, len(chips), len(chips) - 1))
        elif inputs.get('distributed_executor_backend') != 'ray' and needed > len(npu_ids):
            count_refused = True
            problems.append('vllm_service_tensor_parallel_size (%d) x %s (%d) = %d NPUs, but the service has %d '
                            '(vllm_service_npus %s): %s'
                            % (inputs['tensor_parallel_size'],
                               'vllm_service_data_parallel_size_local' if inputs.get('data_parallel_size_local')
                               else 'vllm_service_data_parallel_size', dp_local, needed, len(npu_ids), npu_ids,
                               'lower a parallel size or give it more NPUs' if needed <= len(chips) else
                               'this node has %d NPUs: lower a parallel size, or, to spread one model over several '
                               'nodes, put them in group vllm_clusters and run playbooks/multinode.yml '
                               '(docs/multinode.md)' % len(chips)))
    return npu_ids, dp_local, count_refused


def cards_of(npu_ids, chips):
    """The cards (npu-smi's NPU ids, which it lists processes by) the NPUs ``npu_ids`` sit on, each once."""
    cards = []
    for npu in npu_ids:
        card = chips[npu].get('npu_id')
        if card not in cards:
            cards.append(card)
    return cards


# vllm-ascend binds each NPU worker, its threads and (where /proc/irq is writable) its NPU's interrupts to CPUs of that
# NPU itself, on ARM hosts only, when --additional-config's enable_cpu_binding is true: its default from v0.18.0rc1
# (the CPU binding guide of docs/recipes.md). It narrows inside the CPUs the process may use (Cpus_allowed_list) and
# sets no memory policy; an A3 slices those CPUs by the host's NPU count (its "global slice"), an A2 or 300I takes
# its NPU's CPUs from npu-smi's topology.
VLLM_ASCEND_BINDS_BY_DEFAULT_FROM = (0, 18, 0)
ARM_ARCHITECTURES = ('aarch64', 'arm64')
A3_FAMILY = '910_93'
# A CPU list as sysfs writes it (0-23,48-71): the only text the unit's CPUAffinity= and --cpuset-cpus take from it.
_CPULIST = re.compile(r'^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$')
# The binding of a plan that binds nothing (also that of refused inputs).
NO_BINDING = {'node': None, 'cpus': None, 'nodes': [], 'bind': 'none', 'allowed_cpus': None, 'warnings': []}


def vllm_ascend_binding(release, additional_config, architecture):
    """Whether vllm-ascend binds the service's workers to CPUs itself: ``(True, False or None, why)`` - None when the
    release is not known, so neither can be said - from the release, enable_cpu_binding in the final
    --additional-config (``additional_config``, None when none) and the host's ``architecture`` (ansible_facts'
    architecture; empty when not known, taken as the ARM host the collection is for)."""
    enabled = additional_config.get('enable_cpu_binding') if isinstance(additional_config, dict) else None
    if architecture and architecture not in ARM_ARCHITECTURES:
        return False, 'vllm-ascend binds CPUs on ARM hosts only, and this host is %s' % architecture
    if enabled is False:
        return False, 'the --additional-config sets enable_cpu_binding false'
    if enabled is True:
        return True, 'the --additional-config sets enable_cpu_binding true'
    numbers = release_numbers(release)
    if numbers is None:
        return None, 'the vllm-ascend release is not known (vllm_service_vllm_ascend_version)'
    if numbers < VLLM_ASCEND_BINDS_BY_DEFAULT_FROM:
        return False, ('vllm-ascend %s binds no CPUs unless enable_cpu_binding is true (it does by default from '
                       '0.18.0rc1)' % release)
    return True, 'vllm-ascend %s binds each NPU worker to CPUs of its NPU by default' % release


def _numa_nodes(devices, npu_ids):
    """The NUMA nodes of the NPUs ``npu_ids`` (their PCI devices in bus order, like the logical ids), each once in the
    NPUs' order, and each node's CPU list; None when a NPU's node is not known."""
    nodes, cpus = [], {}
    for npu in npu_ids:
        device = devices[npu] if npu < len(devices) and isinstance(devices[npu], dict) else {}
        node = device.get('numa_node')
        if node is None:
            return None, {}
        if node not in nodes:
            nodes.append(node)
    for device in devices:
        if (isinstance(device, dict) and device.get('numa_node') in nodes and isinstance(device.get('numa_cpulist'), str)
                and _CPULIST.match(device['numa_cpulist'])):
            cpus.setdefault(device['numa_node'], device['numa_cpulist'])
    return nodes, cpus


def numa_plan(inputs, facts, npu_ids, has_npus, release, additional_config, family, problems):
    """The CPU and memory binding of the service (vllm_service_numa_bind): ``node`` and ``cpus`` (the NUMA node of
    all its NPUs and its CPU list, None when they are not on one known node), ``nodes`` (the NPUs' nodes; empty when
    one is not known), ``bind`` and ``allowed_cpus``, and the ``warnings``; ``family`` is the NPUs' chip family
    (_model_format's product_family, which the plan computes once).

    - ``vllm_ascend`` (auto when vllm_ascend_binding says it binds; asked, refused when it says it will not, with
      why): no numactl; the process may use the CPUs of its NPUs' NUMA nodes (``allowed_cpus``: the unit's
      CPUAffinity=, the container's --cpuset-cpus), so that two services on one host keep apart - none on an A3,
      whose global slice divides the CPUs by all the host's NPUs - and its memory is left to vllm-ascend.
    - ``numactl`` (auto when vllm-ascend does not bind, asked): numactl --cpunodebind --membind (native), --cpuset-cpus
      --cpuset-mems (container) on the one node of the NPUs; NPUs on several nodes bind nothing, which auto says and
      numactl refuses.
    - ``none``: nothing.
    """
    devices = facts.get('npu_devices') or []
    nodes, node_cpus = _numa_nodes(devices, npu_ids) if has_npus else ([], {})
    nodes = nodes or []
    node = nodes[0] if len(nodes) == 1 else None
    numa = dict(NO_BINDING, node=node, cpus=node_cpus.get(node) if node is not None else None, nodes=nodes,
                warnings=[])
    choice = inputs.get('numa_bind')
    if not has_npus or choice == 'none':
        return numa
    binds, why = vllm_ascend_binding(release, additional_config, facts.get('architecture'))
    if choice == 'vllm_ascend' or (choice == 'auto' and binds):
        if choice == 'vllm_ascend' and not binds:
            if binds is None:
                numa['warnings'].append('vllm_service_numa_bind is vllm_ascend, but %s: vllm-ascend binds from '
                                        '0.18.0rc1 on' % why)
            else:
                problems.append('vllm_service_numa_bind is vllm_ascend, but vllm-ascend will not bind: %s. Set '
                                'vllm_service_numa_bind to auto (numactl where vllm-ascend does not bind) or none'
                                % why)
        numa['bind'] = 'vllm_ascend'
        if family != A3_FAMILY and nodes and all(n in node_cpus for n in nodes):
            numa['allowed_cpus'] = ','.join(node_cpus[n] for n in nodes)
        return numa
    if node is None:
        if choice == 'numactl':
            problems.append('vllm_service_numa_bind is numactl, but the NUMA node of the service\'s NPUs is not known '
                            'or not one node: set vllm_service_numa_bind to auto or none, or vllm_service_npus to NPUs '
                            'of one node')
        elif len(nodes) > 1:
            numa['warnings'].append(
                'the service\'s NPUs sit on NUMA nodes %s, so nothing binds its CPUs: one numactl for all would keep '
                'each NPU\'s worker off the others\' nodes, and %s (vllm_service_npus of one node binds with '
                'numactl)'
                % (', '.join(str(n) for n in nodes), why))
        return numa
    numa['bind'] = 'numactl'
    if binds:
        numa['warnings'].append('vllm_service_numa_bind is numactl, and vllm-ascend binds its workers too (%s), '
                                'inside the CPUs numactl gives' % why)
    return numa
