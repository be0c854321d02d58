# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 3 of the serving plan on its own: which NPUs, the cards they sit on, their NUMA node. The whole plan's cases
are in test__serving.py."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_format import product_family
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


# An A2 of two NUMA nodes: NPUs 0-3 on node 0 (CPUs 0-23), 4-7 on node 1 (24-47), as ascend_facts reads sysfs.
A2_DEVICES = [{'numa_node': 0 if npu < 4 else 1, 'numa_cpulist': '0-23' if npu < 4 else '24-47', 'chip_family': '910B'}
              for npu in range(8)]
A3_DEVICES = [dict(device, chip_family='910_93') for device in A2_DEVICES]


def bind(choice='auto', npus=(0, 1), release='0.13.0', additional=None, architecture='aarch64', devices=None,
         has_npus=True):
    problems = []
    devices = A2_DEVICES if devices is None else devices
    numa = numa_plan({'numa_bind': choice}, {'npu_devices': devices, 'architecture': architecture},
                     list(npus), has_npus, release, additional, product_family(None, devices), problems)
    return numa, problems


def test_before_0_18_numactl_binds_npus_of_one_node():
    numa, problems = bind()
    assert numa == {'node': 0, 'cpus': '0-23', 'nodes': [0], 'bind': 'numactl', 'allowed_cpus': None, 'warnings': []}
    assert problems == []
    assert bind(npus=(4, 5))[0]['node'] == 1 and bind(npus=(4, 5))[0]['cpus'] == '24-47'


def test_before_0_18_npus_on_two_nodes_bind_nothing_and_say_why():
    numa, problems = bind(npus=(3, 4))
    assert numa['bind'] == 'none' and numa['nodes'] == [0, 1] and problems == []
    assert len(numa['warnings']) == 1 and 'NUMA nodes 0, 1' in numa['warnings'][0]
    assert 'vllm-ascend 0.13.0 binds no CPUs unless enable_cpu_binding is true' in numa['warnings'][0]
    numa, problems = bind('numactl', npus=(3, 4))
    assert numa['bind'] == 'none' and len(problems) == 1 and problems[0].startswith('vllm_service_numa_bind is numactl')


def test_from_0_18_0rc1_on_arm_vllm_ascend_binds_inside_the_npus_nodes():
    for release in ('0.18.0rc1', '0.18.0', '0.23.0', '0.30.0'):
        numa, problems = bind(release=release)
        assert (numa['bind'], numa['allowed_cpus'], numa['warnings'], problems) == ('vllm_ascend', '0-23', [], [])
    # NPUs on both nodes: every worker still gets its own NPU's CPUs from vllm-ascend, inside both nodes' CPUs.
    numa, problems = bind(release='0.18.0', npus=range(8))
    assert (numa['bind'], numa['allowed_cpus'], numa['node'], problems) == ('vllm_ascend', '0-23,24-47', None, [])


def test_an_a3_gives_vllm_ascend_every_cpu():
    # Its global slice divides the allowed CPUs by all the host's NPUs: a node's share would leave too few.
    numa, problems = bind(release='0.18.0', devices=A3_DEVICES)
    assert (numa['bind'], numa['allowed_cpus'], problems) == ('vllm_ascend', None, [])


def test_enable_cpu_binding_decides_over_the_release():
    assert bind(release='0.13.0', additional={'enable_cpu_binding': True})[0]['bind'] == 'vllm_ascend'
    assert bind(release=None, additional={'enable_cpu_binding': True})[0]['bind'] == 'vllm_ascend'
    numa, problems = bind(release='0.18.0', additional={'enable_cpu_binding': False})
    assert (numa['bind'], numa['cpus'], problems) == ('numactl', '0-23', [])
    # A value of another type is refused by the recipe step; here it decides nothing.
    assert bind(release='0.13.0', additional={'enable_cpu_binding': 'true'})[0]['bind'] == 'numactl'


def test_vllm_ascend_does_not_bind_on_x86_or_an_unknown_release():
    assert bind(release='0.30.0', architecture='x86_64')[0]['bind'] == 'numactl'
    assert bind(release=None)[0]['bind'] == 'numactl'
    # An unknown architecture is taken as the ARM host the collection is for.
    assert bind(release='0.18.0', architecture='')[0]['bind'] == 'vllm_ascend'


def test_vllm_ascend_asked_where_it_will_not_bind_is_refused_naming_why():
    for kwargs, why in (({'architecture': 'x86_64', 'release': '0.30.0'}, 'on ARM hosts only, and this host is x86_64'),
                        ({'additional': {'enable_cpu_binding': False}, 'release': '0.30.0'}, 'enable_cpu_binding false'),
                        ({'release': '0.13.0'}, 'vllm-ascend 0.13.0 binds no CPUs unless enable_cpu_binding is true')):
        numa, problems = bind('vllm_ascend', **kwargs)
        assert len(problems) == 1 and why in problems[0], (kwargs, problems)
        assert problems[0].startswith('vllm_service_numa_bind is vllm_ascend, but vllm-ascend will not bind')
    numa, problems = bind('vllm_ascend', release=None)
    assert problems == [] and numa['bind'] == 'vllm_ascend' and 'release is not known' in numa['warnings'][0]


def test_numactl_asked_where_vllm_ascend_binds_too_warns():
    numa, problems = bind('numactl', release='0.18.0')
    assert numa['bind'] == 'numactl' and problems == [] and 'binds its workers too' in numa['warnings'][0]


def test_none_and_a_host_without_npus_bind_nothing():
    assert bind('none')[0] == {'node': 0, 'cpus': '0-23', 'nodes': [0], 'bind': 'none', 'allowed_cpus': None,
                               'warnings': []}
    assert bind(has_npus=False)[0]['bind'] == 'none' and bind(has_npus=False)[0]['nodes'] == []


def test_an_unknown_node_or_a_cpu_list_not_as_sysfs_writes_it_binds_nothing_with_it():
    unknown = [dict(device, numa_node=None) for device in A2_DEVICES]
    assert bind(devices=unknown)[0]['bind'] == 'none' and bind(devices=unknown)[0]['nodes'] == []
    assert bind(npus=(9,))[0]['bind'] == 'none'
    for cpulist in ('0-23\nExecStartPre=/bin/sh', '0-23 ', '', None, 7, 'all'):
        devices = [dict(device, numa_cpulist=cpulist) for device in A2_DEVICES]
        numa = bind(devices=devices)[0]
        assert numa['cpus'] is None and numa['bind'] == 'numactl'
        assert bind(devices=devices, release='0.18.0')[0]['allowed_cpus'] is None
