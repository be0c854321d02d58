# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 3 of the serving plan on its own: which NPUs, the cards they sit on, their NUMA node. The whole plan's cases
are in test__serving.py."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_npus import (
    cards_of,
    npu_selection,
    numa_plan,
)

# Eight chips on four cards (two per card), as npu-smi lists a 300I Duo host.
CHIPS = [{'npu_id': card, 'chip_id': chip} for card in range(4) for chip in range(2)]
INPUTS = {'tensor_parallel_size': 2, 'data_parallel_size': 1}


def select(facts=None, **changes):
    problems = []
    result = npu_selection(dict(INPUTS, **changes), facts or {}, CHIPS, True, problems)
    return result, problems


def test_every_npu_by_default_and_the_ranks_of_this_node():
    assert select() == ((list(range(8)), 1, False), [])
    assert select(npus=[2, 3], data_parallel_size=2, data_parallel_size_local=1) == (([2, 3], 1, False), [])


def test_a_host_without_npus_has_none_and_no_problem():
    problems = []
    assert npu_selection(INPUTS, {}, [], False, problems) == ([], 1, False) and problems == []


def test_too_few_npus_for_tp_times_local_dp_is_refused_naming_both_variables():
    (npu_ids, _dp_local, refused), problems = select(npus=[0], data_parallel_size=2)
    assert refused and npu_ids == [0]
    assert problems[0].startswith('vllm_service_tensor_parallel_size (2) x vllm_service_data_parallel_size (2) = 4 NPUs')
    assert problems[0].endswith('lower a parallel size or give it more NPUs')
    # Under Ray the NPUs of the other nodes count: no refusal here.
    assert select(npus=[0], data_parallel_size=2, distributed_executor_backend='ray')[1] == []


def test_more_than_the_node_has_points_to_a_multi_node_group():
    problems = select(tensor_parallel_size=16)[1]
    assert 'this node has 8 NPUs' in problems[0] and 'playbooks/multinode.yml' in problems[0]


def test_ids_the_host_does_not_have_and_an_incomplete_npu_smi_are_refused():
    assert select(npus=[7, 8])[1] == ['vllm_service_npus [7, 8] names NPUs the host does not have: it has 8 (ids 0 to 7)']
    assert select({'npu_smi_complete': False, 'npu_smi_incomplete_reason': 'cut off'})[1] == [
        'npu-smi info is incomplete: cut off']


def test_cards_are_listed_once_in_the_npus_order():
    assert cards_of([3, 2, 0, 1, 7], CHIPS) == [1, 0, 3]


def test_numa_binds_npus_of_one_node_and_refuses_numactl_across_nodes():
    devices = [{'numa_node': 0 if npu < 4 else 1, 'numa_cpulist': '0-23' if npu < 4 else '24-47'} for npu in range(8)]
    problems = []
    assert numa_plan({'numa_bind': 'auto'}, {'npu_devices': devices}, [0, 1], True, problems) == {
        'node': 0, 'cpus': '0-23', 'bind': 'numactl'}
    assert numa_plan({'numa_bind': 'auto'}, {'npu_devices': devices}, [3, 4], True, problems)['bind'] == 'none'
    assert problems == []
    numa_plan({'numa_bind': 'numactl'}, {'npu_devices': devices}, [3, 4], True, problems)
    assert len(problems) == 1 and problems[0].startswith('vllm_service_numa_bind is numactl')
