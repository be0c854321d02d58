# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Step 3 of the serving plan (_serving.py): the NPUs, the cards they sit on and the NUMA node they share.
Its tests: tests/unit/plugins/module_utils/serving/test__plan_npus.py.
"""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._ranks import npus_for_ranks


def _numa_plan(inputs, facts, npu_ids, has_npus):
    """The NUMA node and CPUs of the service's NPUs (their devices in PCI bus order, like the logical ids), and the
    binding: numactl when asked or auto and the NPUs sit on one known node."""
    devices = facts.get('npu_devices') or []
    nodes = []
    if has_npus:
        for npu in npu_ids:
            if npu < len(devices) and devices[npu].get('numa_node') is not None and devices[npu]['numa_node'] not in nodes:
                nodes.append(devices[npu]['numa_node'])
    node = nodes[0] if len(nodes) == 1 else None
    cpus = None
    if node is not None:
        cpus = next((device.get('numa_cpulist') for device in devices if device.get('numa_node') == node), None)
    bind = 'numactl' if inputs.get('numa_bind') in ('auto', 'numactl') and node is not None else 'none'
    return {'node': node, 'cpus': cpus, 'bind': bind}


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


def numa_plan(inputs, facts, npu_ids, has_npus, problems):
    """The NUMA binding of the NPUs (_numa_plan); vllm_service_numa_bind numactl on NPUs of no one known node is a
    problem."""
    numa = _numa_plan(inputs, facts, npu_ids, has_npus)
    if inputs.get('numa_bind') == 'numactl' and numa['bind'] != 'numactl':
        problems.append('vllm_service_numa_bind is numactl, but the NUMA node of the service\'s NPUs is not known or '
                        'not one node: set vllm_service_numa_bind to auto or none, or vllm_service_npus to NPUs of one '
                        'node')
    return numa
