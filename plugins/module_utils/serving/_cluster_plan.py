# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The multi-node plan of one vLLM service (role vllm_cluster, docs/multinode.md), computed once:

* ``cluster_node`` - one node's part, from what the node says: its address (vllm_cluster_node_address, else its
  default route's) and the NIC holding it, its NPUs and its local data-parallel ranks (serving/_ranks.py), with the
  problems that stop the node before any launch;
* ``cluster_plan`` - every node's launch from the nodes in rank order (the head first) and their parts: the head's
  address, the data-parallel size and each node's first rank, the environment from each node's NIC (GLOO, TP and
  HCCL_*), vLLM's data-parallel arguments, the group's watch and wait, Ray's command line and environment, and the
  cluster-wide problems (two nodes at one address, too few NPUs for TP x DP on Ray). Role vllm_cluster renders its
  tasks and units from it; a Kubernetes rendering (LeaderWorkerSet leader and worker pods) calls the same function;
* ``service_inputs`` - the parallel inputs of the node's first serving plan, before the group's layout is known;
* ``ray_pip_install`` and ``ray_cluster_status`` - what Ray's venv lacks (from ``pip list``) and how many nodes
  ``ray status`` shows.

Every message names the variable to change. Pure, standard library only.
"""

from __future__ import annotations

import json
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._ranks import ranks_in_npus

BACKENDS = ('dp', 'ray')
# The keys of cluster_plan's ``inputs`` (the vllm_cluster variables without their prefix, and the role's paths).
INPUT_KEYS = ('backend', 'rpc_port', 'ray_port', 'hccl_buffsize', 'hccl_connect_timeout', 'env', 'recover',
              'watch_polls', 'ray_object_store_memory', 'ray_temp_dir', 'ray_env_file', 'ray_start_timeout')
# What cluster_plan reads of the serving plan (vllm_service_plan) of the node that computes it.
SERVING_PLAN_KEYS = ('name', 'unit', 'user', 'mode', 'cann_env_file', 'serving')
# The keys of one node's part (cluster_node's result), which cluster_plan reads of every node.
NODE_KEYS = ('host', 'address', 'nic', 'ipv4', 'npu_ids', 'npus', 'has_npus', 'data_parallel_size_local', 'problems')
# The seconds between two reads of `ray status` while the cluster gathers.
RAY_WAIT_DELAY = 3
# `ray status` lists the active nodes as "<count> node_<id>" lines.
_RAY_NODES = re.compile(r'(?m)^\s*(\d+)\s+node_')
# A pin's extras, such as [default] in ray[default]==2.56.1.
_RAY_PIN_EXTRAS = re.compile(r'\[[^\]]*\](?===)')


def service_inputs(backend):
    """The parallel inputs of the node's first serving plan (role vllm_service's entry point plan), before the group's
    layout: one local data-parallel rank under vLLM's launcher (the ranks are counted from the NPUs afterwards), Ray's
    executor under Ray."""
    return {'data_parallel_size_local': 1 if backend == 'dp' else None,
            'distributed_executor_backend': 'ray' if backend == 'ray' else None}


def _interfaces(facts):
    """The interfaces of Ansible's network facts that have an IPv4 address entry (fact names have _ for - and :)."""
    found = []
    for name in facts.get('interfaces') or []:
        entry = facts.get(re.sub('[-:]', '_', name))
        if isinstance(entry, dict) and entry.get('ipv4') is not None:
            found.append(entry)
    return found


def cluster_node(host, facts, inputs, serving_plan):
    """One node's part of the group: ``facts`` are the node's Ansible facts (``interfaces``, one entry per interface,
    ``default_ipv4``), ``inputs`` its vllm_cluster variables (``backend``, ``node_address``,
    ``data_parallel_size_local``), ``serving_plan`` its serving plan (``npu_ids``, ``has_npus``, ``mode``,
    ``serving.tensor_parallel_size``).

    Returns NODE_KEYS: ``address`` (vllm_cluster_node_address, else the default route's; None without either), ``nic``
    (the interface whose primary IPv4 address it is; None when none is), ``ipv4`` (the node's primary IPv4
    addresses), ``npu_ids``, ``npus``, ``has_npus``, ``data_parallel_size_local`` (1 on Ray; else
    vllm_cluster_data_parallel_size_local, else NPUs // TP, 1 without NPUs) and ``problems`` (the first of: no
    address, an address on no interface, no rank; then Ray outside native mode)."""
    backend = inputs.get('backend')
    address = inputs.get('node_address')
    if address is None:
        address = (facts.get('default_ipv4') or {}).get('address')
    interfaces = _interfaces(facts)
    ipv4 = [entry['ipv4']['address'] for entry in interfaces if isinstance(entry['ipv4'], dict)
            and 'address' in entry['ipv4']]
    nics = [entry.get('device') for entry in interfaces if isinstance(entry['ipv4'], dict)
            and 'address' in entry['ipv4'] and entry['ipv4']['address'] == address]
    npu_ids = list(serving_plan.get('npu_ids') or [])
    has_npus = bool(serving_plan.get('has_npus'))
    tensor_parallel_size = int(serving_plan['serving']['tensor_parallel_size'])
    if backend == 'ray':
        local = 1
    elif inputs.get('data_parallel_size_local') is not None:
        local = int(inputs['data_parallel_size_local'])
    else:
        local = ranks_in_npus(len(npu_ids), tensor_parallel_size) if has_npus else 1
    node = {'host': host, 'address': address, 'nic': nics[0] if nics else None, 'ipv4': ipv4, 'npu_ids': npu_ids,
            'npus': len(npu_ids), 'has_npus': has_npus, 'data_parallel_size_local': local, 'problems': []}
    if address is None:
        node['problems'].append('No address for %s: it has no default route; set vllm_cluster_node_address to the '
                                'address the other nodes reach it at' % host)
    elif node['nic'] is None:
        node['problems'].append('vllm_cluster_node_address %s is on no interface of %s (its IPv4 addresses: %s): set '
                                'it to one of them, the one on the network the other nodes share'
                                % (address, host, ', '.join(ipv4)))
    elif local < 1:
        node['problems'].append('vllm_service_tensor_parallel_size (%s) is more than the %d NPUs of %s, so it has no '
                                'data-parallel rank: lower it, set vllm_cluster_data_parallel_size_local, or use '
                                'vllm_cluster_backend ray (tensor parallel across nodes)'
                                % (serving_plan['serving']['tensor_parallel_size'], len(npu_ids), host))
    if backend == 'ray' and serving_plan.get('mode') != 'native':
        node['problems'].append('vllm_cluster_backend ray runs Ray and vLLM from a venv on each node: set '
                                'vllm_service_mode native, or use vllm_cluster_backend dp (vLLM\'s own data-parallel '
                                'launcher), which also runs in containers.')
    return node


def _environment(node, inputs):
    """A node's environment: the sockets on its NIC, HCCL's on NPU nodes, then vllm_cluster_env over them."""
    env = {'GLOO_SOCKET_IFNAME': node['nic'], 'TP_SOCKET_IFNAME': node['nic']}
    if node['has_npus']:
        env.update({'HCCL_IF_IP': node['address'], 'HCCL_SOCKET_IFNAME': node['nic'],
                    'HCCL_CONNECT_TIMEOUT': str(inputs['hccl_connect_timeout'])})
        if inputs.get('hccl_buffsize') is not None:
            env['HCCL_BUFFSIZE'] = str(inputs['hccl_buffsize'])
    env.update(inputs.get('env') or {})
    return env


def _problems(nodes, parts, inputs, serving_plan, total_npus):
    """The cluster-wide problems: two nodes at one address; on Ray, TP x DP more than the cluster's NPUs."""
    addresses = [parts[host]['address'] for host in nodes]
    if len(set(addresses)) != len(addresses):
        return ['Two nodes of the cluster have the same address: %s; set vllm_cluster_node_address on each node to its '
                'own address' % ', '.join('%s=%s' % (host, address) for host, address in zip(nodes, addresses))]
    serving = serving_plan['serving']
    needed = int(serving['tensor_parallel_size']) * int(serving['data_parallel_size'])
    if inputs['backend'] == 'ray' and needed > max(total_npus, len(nodes)):
        return ['vllm_service_tensor_parallel_size x vllm_service_data_parallel_size (%d) is more than the %d NPUs of '
                'the Ray cluster %s' % (needed, total_npus, json.dumps(list(nodes)))]
    return []


def _launch(host, rank, nodes, parts, inputs, serving_plan, group):
    """One node's launch in the group (cluster_plan documents the keys)."""
    node = parts[host]
    is_head = rank == 0
    head_address = group['head_address']
    local = node['data_parallel_size_local']
    start = sum(parts[before]['data_parallel_size_local'] for before in nodes[:rank])
    env = _environment(node, inputs)
    dp_args = ['--data-parallel-address', head_address, '--data-parallel-rpc-port', str(inputs['rpc_port'])]
    if not is_head:
        dp_args += ['--data-parallel-start-rank', str(start)]
    peers = [parts[other]['address'] for other in nodes if other != host] if is_head else [head_address]
    watch_args = ['--unit', serving_plan['unit'], '--peers', ','.join(str(peer) for peer in peers),
                  '--rpc-port', str(inputs['rpc_port']), '--polls', str(inputs['watch_polls'])]
    if serving_plan.get('mode') == 'native':
        watch_args += ['--user', serving_plan['user']]
    ray_args = ['start', '--block', '--disable-usage-stats']
    ray_args += (['--head', '--port=%s' % inputs['ray_port'], '--include-dashboard=false'] if is_head
                 else ['--address=%s' % group['ray_address']])
    ray_args += ['--node-ip-address=%s' % node['address'], '--temp-dir=%s' % inputs['ray_temp_dir']]
    if inputs.get('ray_object_store_memory') is not None:
        ray_args.append('--object-store-memory=%s' % inputs['ray_object_store_memory'])
    title = 'head' if is_head else 'node %d' % rank
    summary = '%s: %s of %d (%s), address %s on %s' % (host, title, len(nodes), inputs['backend'], node['address'],
                                                       node['nic'])
    if inputs['backend'] == 'dp':
        summary += ', data-parallel ranks %d to %d of %d' % (start, start + local - 1, group['data_parallel_size'])
    return {
        'host': host, 'rank': rank, 'is_head': is_head, 'role': 'head' if is_head else 'worker', 'title': title,
        'address': node['address'], 'nic': node['nic'], 'npu_ids': node['npu_ids'], 'npus': node['npus'],
        'has_npus': node['has_npus'], 'data_parallel_size_local': local, 'data_parallel_start_rank': start,
        'headless': not is_head, 'env': env, 'dp_args': dp_args,
        'watch_peers': peers, 'watch_args': watch_args,
        'watch_where': 'its head' if is_head else 'a node of rank %d' % start,
        'head_wait': (['%s:%s' % (head_address, inputs['rpc_port'])] if group['recovers'] and not is_head else []),
        'ray_args': ray_args,
        'ray_environment_files': (['-' + serving_plan['cann_env_file']] if node['has_npus'] else [])
        + [inputs['ray_env_file']],
        'ray_visible_devices': ','.join(str(npu) for npu in node['npu_ids']),
        'ray_serve_env': dict(env, RAY_ADDRESS=group['ray_address']),
        'account_groups': ['HwHiAiUser'] if node['has_npus'] else [],
        'account_append': True if node['has_npus'] else None,
        'summary': summary,
    }


def cluster_plan(nodes, parts, inputs, serving_plan):
    """Every node's launch of one service across ``nodes`` (inventory hosts in rank order, the head first), from
    ``parts`` (host -> cluster_node's result, NODE_KEYS), ``inputs`` (INPUT_KEYS: the vllm_cluster variables without
    their prefix, and the role's Ray paths) and ``serving_plan`` (SERVING_PLAN_KEYS of the computing node's serving
    plan: the service's name, unit, account, mode and CANN environment file, its tensor and data parallel sizes).

    Returns ``problems`` (cluster-wide, each naming the variable to change; empty when the launch can go on),
    ``head``, ``head_address``, ``backend``, ``data_parallel_size`` (the ranks of all nodes), ``total_npus``,
    ``ray_address``, ``ray_wait`` (``retries`` and ``delay`` of the waits for Ray, over vllm_cluster_ray_start_timeout),
    ``recovers`` (whether the group gets its watch and wait: vllm_cluster_recover, backend dp, two nodes or more) and
    ``nodes``: host -> that node's launch (plugins/filter/cluster_plan.yml documents each key)."""
    nodes = list(nodes)
    head = nodes[0]
    total_npus = sum(parts[host]['npus'] for host in nodes)
    group = {
        'head': head, 'head_address': parts[head]['address'], 'backend': inputs['backend'],
        'data_parallel_size': sum(parts[host]['data_parallel_size_local'] for host in nodes),
        'total_npus': total_npus,
        'ray_address': '%s:%s' % (parts[head]['address'], inputs['ray_port']),
        'ray_wait': {'retries': -(-int(inputs['ray_start_timeout']) // RAY_WAIT_DELAY), 'delay': RAY_WAIT_DELAY},
        'recovers': bool(inputs['recover']) and inputs['backend'] == 'dp' and len(nodes) > 1,
        'problems': _problems(nodes, parts, inputs, serving_plan, total_npus),
    }
    group['nodes'] = dict((host, _launch(host, rank, nodes, parts, inputs, serving_plan, group))
                          for rank, host in enumerate(nodes))
    return group


def ray_pip_install(pip_list, pins, venv, wheelhouse=None):
    """What pip installs into Ray's venv: ``pip_list`` is ``pip list --format=json``'s output ('' or None when the
    venv has no pip yet: nothing installed), ``pins`` vllm_cluster_ray_pip_packages. A pin counts as installed when its
    name (lower case, runs of - _ . as one -) and version are exactly an installed package's; a pin's extras
    (``ray[default]==2.56.1``) are not compared, as pip list names no extras: the run that installed that version
    installed them. Returns ``missing`` (the pins not installed, as compared, extras kept) and ``argv`` (pip's command
    installing them, offline from ``wheelhouse`` when set). ValueError when pip printed something that is not JSON."""
    installed = json.loads(pip_list or '[]')
    have = set('%s==%s' % (re.sub('[-_.]+', '-', item['name'].lower()), item['version']) for item in installed)
    missing = [pin for pin in (re.sub('[-_.]+(?=[^=]*==)', '-', pin.lower()) for pin in pins)
               if _RAY_PIN_EXTRAS.sub('', pin) not in have]
    argv = ['%s/bin/python' % venv, '-m', 'pip', 'install', '--disable-pip-version-check', '--quiet']
    if wheelhouse is not None:
        argv += ['--no-index', '--find-links', wheelhouse]
    return {'missing': missing, 'argv': argv + missing}


def ray_cluster_status(status, expected):
    """How many active nodes ``ray status``'s output ``status`` shows ('' or None: none), and whether that is at least
    the ``expected`` nodes of the cluster: ``{'nodes', 'joined'}``."""
    count = sum(int(number) for number in _RAY_NODES.findall(status or ''))
    return {'nodes': count, 'joined': count >= expected}
