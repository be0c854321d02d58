# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The multi-node plan (serving/_cluster_plan.py): each node's part from its facts, every node's launch from the
parts (data-parallel layouts of 2 and 3 nodes, Ray, CPU-only nodes), the environment from the NIC, the cluster-wide
problems; and the rule of a node's NPUs and ranks (serving/_ranks.py), which the serving plan and the sizing share."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _cluster_plan, _ranks
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._cluster_plan import (
    cluster_node,
    cluster_plan,
    ray_cluster_status,
    ray_pip_install,
    service_inputs,
)

NODES3 = ['head', 'rank1', 'rank2']
ADDRESSES = {'head': '10.0.0.11', 'rank1': '10.0.0.12', 'rank2': '10.0.0.13'}


def facts(address, device='enp189s0f0', default=None):
    """Ansible's network facts of a node with lo, a docker bridge and ``device`` holding ``address``."""
    return {'interfaces': ['lo', 'docker0', device],
            'lo': {'device': 'lo', 'ipv4': {'address': '127.0.0.1'}},
            'docker0': {'device': 'docker0', 'ipv4': {'address': '172.17.0.1'}},
            device.replace('-', '_').replace(':', '_'): {'device': device, 'ipv4': {'address': address}},
            'default_ipv4': {'address': default or address}}


def serving(npus=8, tp=4, dp=4, mode='container'):
    """A node's serving plan (vllm_service_plan): its NPUs, mode, names and parallel sizes."""
    return {'npu_ids': list(range(npus)), 'has_npus': npus > 0, 'mode': mode, 'name': 'deepseek',
            'unit': 'deepseek.service', 'user': 'vllm', 'cann_env_file': '/etc/ascend/cann.env',
            'serving': {'tensor_parallel_size': tp, 'data_parallel_size': dp}}


def node_inputs(backend='dp', address=None, local=None):
    return {'backend': backend, 'node_address': address, 'data_parallel_size_local': local}


def inputs(**changes):
    values = {'backend': 'dp', 'rpc_port': 13389, 'ray_port': 6379, 'hccl_buffsize': None,
              'hccl_connect_timeout': 1200, 'env': {}, 'recover': True, 'watch_polls': 3,
              'ray_object_store_memory': None, 'ray_temp_dir': '/var/lib/vllm-ray',
              'ray_env_file': '/etc/vllm/deepseek-ray.env', 'ray_start_timeout': 120}
    values.update(changes)
    return values


def parts(hosts, backend='dp', plan=None, **kwargs):
    """Every node's part, each at its own address."""
    return dict((host, cluster_node(host, facts(ADDRESSES[host]), node_inputs(backend, **kwargs), plan or serving()))
                for host in hosts)


def test_the_rule_of_a_node_npus_and_ranks_is_tp_times_local_dp():
    assert _ranks.npus_for_ranks(4, 2) == 8
    assert [_ranks.ranks_in_npus(npus, 4) for npus in (0, 3, 4, 7, 8, 16)] == [0, 0, 1, 1, 2, 4]
    assert _ranks.ranks_in_npus(8, 1) == 8


def test_the_first_plan_has_one_local_rank_under_dp_and_ray_executor_under_ray():
    assert service_inputs('dp') == {'data_parallel_size_local': 1, 'distributed_executor_backend': None}
    assert service_inputs('ray') == {'data_parallel_size_local': None, 'distributed_executor_backend': 'ray'}


def test_a_node_part_finds_the_nic_of_its_address_and_counts_its_ranks():
    part = cluster_node('head', facts('10.0.0.11', device='enp189s0f0'), node_inputs(), serving(npus=8, tp=4))
    assert part == {'host': 'head', 'address': '10.0.0.11', 'nic': 'enp189s0f0',
                    'ipv4': ['127.0.0.1', '172.17.0.1', '10.0.0.11'], 'npu_ids': list(range(8)), 'npus': 8,
                    'has_npus': True, 'data_parallel_size_local': 2, 'problems': []}


def test_an_interface_name_with_dash_or_colon_is_read_from_its_fact_name():
    part = cluster_node('head', facts('10.0.0.11', device='bond0:1'), node_inputs(), serving())
    assert part['nic'] == 'bond0:1'
    part = cluster_node('head', facts('10.0.0.11', device='enp-1'), node_inputs(), serving())
    assert part['nic'] == 'enp-1'


def test_the_node_address_wins_over_the_default_route():
    host = facts('10.0.0.11', default='192.168.1.5')
    assert cluster_node('head', host, node_inputs(), serving())['address'] == '192.168.1.5'
    part = cluster_node('head', host, node_inputs(address='10.0.0.11'), serving())
    assert (part['address'], part['nic'], part['problems']) == ('10.0.0.11', 'enp189s0f0', [])


def test_the_local_ranks_are_the_inventory_s_then_npus_over_tp_then_one_without_npus():
    assert cluster_node('h', facts('10.0.0.1'), node_inputs(local=3), serving())['data_parallel_size_local'] == 3
    assert cluster_node('h', facts('10.0.0.1'), node_inputs(), serving(npus=16, tp=2))['data_parallel_size_local'] == 8
    assert cluster_node('h', facts('10.0.0.1'), node_inputs(), serving(npus=0))['data_parallel_size_local'] == 1
    assert cluster_node('h', facts('10.0.0.1'), node_inputs('ray'), serving(npus=16, tp=2, mode='native')
                        )['data_parallel_size_local'] == 1


def test_a_node_without_address_names_vllm_cluster_node_address():
    host = dict(facts('10.0.0.11'), default_ipv4={})
    assert cluster_node('rank1', host, node_inputs(), serving())['problems'] == [
        'No address for rank1: it has no default route; set vllm_cluster_node_address to the address the other nodes '
        'reach it at']


def test_an_address_on_no_interface_lists_the_node_s_addresses():
    part = cluster_node('rank1', facts('10.0.0.12'), node_inputs(address='10.250.250.250'), serving())
    assert part['nic'] is None
    assert part['problems'] == [
        'vllm_cluster_node_address 10.250.250.250 is on no interface of rank1 (its IPv4 addresses: 127.0.0.1, '
        '172.17.0.1, 10.0.0.12): set it to one of them, the one on the network the other nodes share']


def test_tp_above_the_node_s_npus_leaves_it_no_rank():
    part = cluster_node('rank1', facts('10.0.0.12'), node_inputs(), serving(npus=2, tp=4))
    assert part['data_parallel_size_local'] == 0
    assert part['problems'] == [
        'vllm_service_tensor_parallel_size (4) is more than the 2 NPUs of rank1, so it has no data-parallel rank: lower '
        'it, set vllm_cluster_data_parallel_size_local, or use vllm_cluster_backend ray (tensor parallel across nodes)']


def test_ray_outside_native_mode_is_a_problem_after_the_node_s_own():
    ray_message = ('vllm_cluster_backend ray runs Ray and vLLM from a venv on each node: set vllm_service_mode native, '
                   'or use vllm_cluster_backend dp (vLLM\'s own data-parallel launcher), which also runs in containers.')
    assert cluster_node('h', facts('10.0.0.1'), node_inputs('ray'), serving(mode='container'))['problems'] == [ray_message]
    assert cluster_node('h', facts('10.0.0.1'), node_inputs('ray'), serving(mode='native'))['problems'] == []
    host = dict(facts('10.0.0.1'), default_ipv4={})
    assert cluster_node('h', host, node_inputs('ray'), serving())['problems'][1:] == [ray_message]


def test_two_nodes_of_the_two_a2_recipe():
    plan = cluster_plan(['head', 'rank1'], parts(['head', 'rank1']), inputs(), serving())
    assert plan['problems'] == []
    assert (plan['head'], plan['head_address'], plan['data_parallel_size'], plan['total_npus']) == \
        ('head', '10.0.0.11', 4, 16)
    head, rank1 = plan['nodes']['head'], plan['nodes']['rank1']
    assert (head['role'], head['is_head'], head['headless'], head['title']) == ('head', True, False, 'head')
    assert (rank1['role'], rank1['is_head'], rank1['headless'], rank1['title']) == ('worker', False, True, 'node 1')
    assert head['dp_args'] == ['--data-parallel-address', '10.0.0.11', '--data-parallel-rpc-port', '13389']
    assert rank1['dp_args'] == ['--data-parallel-address', '10.0.0.11', '--data-parallel-rpc-port', '13389',
                                '--data-parallel-start-rank', '2']
    assert (rank1['data_parallel_size_local'], rank1['data_parallel_start_rank']) == (2, 2)
    assert head['summary'] == 'head: head of 2 (dp), address 10.0.0.11 on enp189s0f0, data-parallel ranks 0 to 1 of 4'
    assert rank1['summary'] == \
        'rank1: node 1 of 2 (dp), address 10.0.0.12 on enp189s0f0, data-parallel ranks 2 to 3 of 4'
    # The group's recovery: the head watches every other node, the others the head, and wait for its RPC port.
    assert plan['recovers'] is True
    assert (head['watch_peers'], head['head_wait']) == (['10.0.0.12'], [])
    assert (rank1['watch_peers'], rank1['head_wait']) == (['10.0.0.11'], ['10.0.0.11:13389'])
    assert rank1['watch_args'] == ['--unit', 'deepseek.service', '--peers', '10.0.0.11', '--rpc-port', '13389',
                                   '--polls', '3']
    assert (head['watch_where'], rank1['watch_where']) == ('its head', 'a node of rank 2')


def test_three_nodes_with_their_own_ranks_count_the_start_ranks_in_order():
    hosts = parts(NODES3)
    hosts['rank1'] = cluster_node('rank1', facts('10.0.0.12'), node_inputs(local=1), serving())
    plan = cluster_plan(NODES3, hosts, inputs(), serving())
    assert plan['data_parallel_size'] == 5
    assert [(plan['nodes'][host]['data_parallel_size_local'], plan['nodes'][host]['data_parallel_start_rank'])
            for host in NODES3] == [(2, 0), (1, 2), (2, 3)]
    assert plan['nodes']['rank2']['dp_args'][-2:] == ['--data-parallel-start-rank', '3']
    assert plan['nodes']['rank2']['summary'].endswith('data-parallel ranks 3 to 4 of 5')
    assert plan['nodes']['head']['watch_peers'] == ['10.0.0.12', '10.0.0.13']
    native = cluster_plan(NODES3, hosts, inputs(), serving(mode='native'))
    assert native['nodes']['rank2']['watch_args'] == ['--unit', 'deepseek.service', '--peers', '10.0.0.11',
                                                      '--rpc-port', '13389', '--polls', '3', '--user', 'vllm']


def test_without_recovery_or_with_one_node_no_node_waits_for_the_head():
    plan = cluster_plan(['head', 'rank1'], parts(['head', 'rank1']), inputs(recover=False), serving())
    assert plan['recovers'] is False and plan['nodes']['rank1']['head_wait'] == []
    alone = cluster_plan(['head'], parts(['head']), inputs(), serving())
    assert alone['recovers'] is False and alone['nodes']['head']['watch_peers'] == []


def test_the_environment_names_each_node_s_own_nic_and_address():
    hosts = parts(['head'])
    hosts['rank1'] = cluster_node('rank1', facts('10.0.0.12', device='eth1'), node_inputs(), serving())
    plan = cluster_plan(['head', 'rank1'], hosts, inputs(), serving())
    assert plan['nodes']['rank1']['env'] == {
        'GLOO_SOCKET_IFNAME': 'eth1', 'TP_SOCKET_IFNAME': 'eth1', 'HCCL_IF_IP': '10.0.0.12',
        'HCCL_SOCKET_IFNAME': 'eth1', 'HCCL_CONNECT_TIMEOUT': '1200'}
    assert list(plan['nodes']['rank1']['env']) == ['GLOO_SOCKET_IFNAME', 'TP_SOCKET_IFNAME', 'HCCL_IF_IP',
                                                   'HCCL_SOCKET_IFNAME', 'HCCL_CONNECT_TIMEOUT']


def test_hccl_buffsize_is_set_only_when_given_and_only_on_npu_nodes():
    unset = cluster_plan(['head'], parts(['head']), inputs(), serving())
    assert 'HCCL_BUFFSIZE' not in unset['nodes']['head']['env']
    given = cluster_plan(['head'], parts(['head']), inputs(hccl_buffsize=200), serving())
    assert given['nodes']['head']['env']['HCCL_BUFFSIZE'] == '200'
    cpu = cluster_plan(['head'], parts(['head'], plan=serving(npus=0)), inputs(hccl_buffsize=200), serving(npus=0))
    assert 'HCCL_BUFFSIZE' not in cpu['nodes']['head']['env']


def test_vllm_cluster_env_wins_over_the_computed_environment_in_place():
    plan = cluster_plan(['head'], parts(['head']), inputs(env={'HCCL_CONNECT_TIMEOUT': '3600', 'HF_HUB_OFFLINE': 1}),
                        serving())
    env = plan['nodes']['head']['env']
    assert env['HCCL_CONNECT_TIMEOUT'] == '3600' and env['HF_HUB_OFFLINE'] == 1
    assert list(env) == ['GLOO_SOCKET_IFNAME', 'TP_SOCKET_IFNAME', 'HCCL_IF_IP', 'HCCL_SOCKET_IFNAME',
                         'HCCL_CONNECT_TIMEOUT', 'HF_HUB_OFFLINE']


def test_cpu_only_nodes_get_the_socket_variables_one_rank_each_and_no_npu_group():
    cpu = serving(npus=0, tp=1, dp=2, mode='native')
    plan = cluster_plan(['head', 'rank1'], parts(['head', 'rank1'], plan=cpu), inputs(), cpu)
    assert plan['problems'] == [] and (plan['data_parallel_size'], plan['total_npus']) == (2, 0)
    rank1 = plan['nodes']['rank1']
    assert rank1['env'] == {'GLOO_SOCKET_IFNAME': 'enp189s0f0', 'TP_SOCKET_IFNAME': 'enp189s0f0'}
    assert (rank1['data_parallel_size_local'], rank1['data_parallel_start_rank']) == (1, 1)
    assert (rank1['account_groups'], rank1['account_append'], rank1['ray_visible_devices']) == ([], None, '')
    assert rank1['ray_environment_files'] == ['/etc/vllm/deepseek-ray.env']


def test_the_ray_layout():
    plan_ = serving(npus=8, tp=8, dp=2, mode='native')
    plan = cluster_plan(['head', 'rank1'], parts(['head', 'rank1'], 'ray', plan=plan_),
                        inputs(backend='ray', ray_object_store_memory=104857600, ray_start_timeout=100), plan_)
    assert plan['problems'] == [] and plan['recovers'] is False
    assert plan['ray_address'] == '10.0.0.11:6379'
    assert plan['ray_wait'] == {'retries': 34, 'delay': 3}
    head, rank1 = plan['nodes']['head'], plan['nodes']['rank1']
    assert head['ray_args'] == ['start', '--block', '--disable-usage-stats', '--head', '--port=6379',
                                '--include-dashboard=false', '--node-ip-address=10.0.0.11',
                                '--temp-dir=/var/lib/vllm-ray', '--object-store-memory=104857600']
    assert rank1['ray_args'] == ['start', '--block', '--disable-usage-stats', '--address=10.0.0.11:6379',
                                 '--node-ip-address=10.0.0.12', '--temp-dir=/var/lib/vllm-ray',
                                 '--object-store-memory=104857600']
    assert rank1['ray_environment_files'] == ['-/etc/ascend/cann.env', '/etc/vllm/deepseek-ray.env']
    assert rank1['ray_visible_devices'] == '0,1,2,3,4,5,6,7'
    assert (rank1['account_groups'], rank1['account_append']) == (['HwHiAiUser'], True)
    assert head['ray_serve_env'] == dict(head['env'], RAY_ADDRESS='10.0.0.11:6379')
    assert head['summary'] == 'head: head of 2 (ray), address 10.0.0.11 on enp189s0f0'


def test_two_nodes_at_one_address_are_refused_naming_each():
    hosts = parts(['head', 'rank1'])
    hosts['rank1'] = cluster_node('rank1', facts('10.0.0.11'), node_inputs(), serving())
    assert cluster_plan(['head', 'rank1'], hosts, inputs(), serving())['problems'] == [
        'Two nodes of the cluster have the same address: head=10.0.0.11, rank1=10.0.0.11; set '
        'vllm_cluster_node_address on each node to its own address']


def test_too_few_npus_for_tp_times_dp_on_ray_are_refused():
    plan_ = serving(npus=8, tp=8, dp=4, mode='native')
    assert cluster_plan(['head', 'rank1'], parts(['head', 'rank1'], 'ray', plan=plan_), inputs(backend='ray'),
                        plan_)['problems'] == [
        'vllm_service_tensor_parallel_size x vllm_service_data_parallel_size (32) is more than the 16 NPUs of the Ray '
        'cluster ["head", "rank1"]']
    # Without NPUs, each node counts as one (vLLM's CPU build on Ray); dp has no such check (each node's own).
    cpu = serving(npus=0, tp=1, dp=2, mode='native')
    assert cluster_plan(['head', 'rank1'], parts(['head', 'rank1'], 'ray', plan=cpu), inputs(backend='ray'),
                        cpu)['problems'] == []
    assert cluster_plan(['head', 'rank1'], parts(['head', 'rank1']), inputs(), plan_)['problems'] == []


def test_the_duplicate_address_is_the_first_problem():
    plan_ = serving(npus=8, tp=8, dp=4, mode='native')
    hosts = parts(['head', 'rank1'], 'ray', plan=plan_)
    hosts['rank1'] = dict(hosts['rank1'], address='10.0.0.11')
    problems = cluster_plan(['head', 'rank1'], hosts, inputs(backend='ray'), plan_)['problems']
    assert len(problems) == 1 and problems[0].startswith('Two nodes of the cluster have the same address')


def test_the_plan_reads_only_its_documented_keys():
    assert set(_cluster_plan.NODE_KEYS) == set(parts(['head'])['head'])
    plan = cluster_plan(['head'], parts(['head']), dict((key, inputs()[key]) for key in _cluster_plan.INPUT_KEYS),
                        dict((key, serving()[key]) for key in _cluster_plan.SERVING_PLAN_KEYS))
    assert plan['problems'] == []


@pytest.mark.parametrize('pip_list, pins, missing', [
    (None, ['ray==2.56.1'], ['ray==2.56.1']),
    ('[]', ['Ray==2.56.1'], ['ray==2.56.1']),
    ('[{"name": "ray", "version": "2.56.1"}]', ['ray==2.56.1'], []),
    ('[{"name": "ray", "version": "2.55.0"}]', ['ray==2.56.1'], ['ray==2.56.1']),
    ('[{"name": "Typing_Extensions", "version": "4.12.2"}]', ['typing.extensions==4.12.2'], []),
    # pip list names no extras: a pin with extras is installed when its package is, at its version (a second run
    # installs nothing), and installed with its extras when it is not.
    ('[{"name": "ray", "version": "2.56.1"}]', ['ray[default]==2.56.1'], []),
    ('[{"name": "ray", "version": "2.55.0"}]', ['Ray[Default]==2.56.1'], ['ray[default]==2.56.1']),
    ('[]', ['ray[default,client]==2.56.1', 'ray-cpp==2.56.1'], ['ray[default,client]==2.56.1', 'ray-cpp==2.56.1']),
])
def test_ray_s_venv_installs_the_pins_not_installed_at_their_version(pip_list, pins, missing):
    result = ray_pip_install(pip_list, pins, '/opt/vllm/venv')
    assert result['missing'] == missing
    assert result['argv'] == ['/opt/vllm/venv/bin/python', '-m', 'pip', 'install', '--disable-pip-version-check',
                              '--quiet'] + missing


def test_ray_s_venv_installs_offline_from_a_wheelhouse():
    assert ray_pip_install('', ['ray==2.56.1'], '/v', '/srv/wheels')['argv'] == [
        '/v/bin/python', '-m', 'pip', 'install', '--disable-pip-version-check', '--quiet', '--no-index',
        '--find-links', '/srv/wheels', 'ray==2.56.1']


def test_pip_output_that_is_not_json_is_an_error():
    with pytest.raises(ValueError):
        ray_pip_install('Traceback', ['ray==2.56.1'], '/v')


RAY_STATUS = """======== Autoscaler status: 2026-01-01 ========
Node status
---------------------------------------------------------------
Active:
 1 node_5f1c0a
 2 node_77ab01
Pending:
 (no pending nodes)
"""


def test_ray_status_counts_the_active_nodes():
    assert ray_cluster_status(RAY_STATUS, 3) == {'nodes': 3, 'joined': True}
    assert ray_cluster_status(RAY_STATUS, 4) == {'nodes': 3, 'joined': False}
    assert ray_cluster_status('', 1) == {'nodes': 0, 'joined': False}
    assert ray_cluster_status(None, 2) == {'nodes': 0, 'joined': False}
