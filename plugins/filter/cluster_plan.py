# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The multi-node plan's filters (each documented in its own .yml): cluster_plan (every node's launch),
cluster_node (one node's part of it), cluster_service_inputs (the first serving plan's parallel inputs),
ray_pip_install (what Ray's venv lacks) and ray_cluster_status (the nodes `ray status` shows). The decisions are
module_utils/serving/_cluster_plan.py's."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_cluster_plan = lazy_module('serving._cluster_plan')


def _mapping(name, value):
    if not isinstance(value, Mapping):
        raise AnsibleFilterError('%s must be a dict, not %s' % (name, type(value).__name__))
    return value


def cluster_plan(nodes, parts, inputs, serving_plan, part_key=None):
    """Every node's launch across ``nodes`` (rank order, the head first) from their ``parts`` (host -> cluster_node's
    result; with ``part_key``, ``parts`` maps each host to its variables, such as hostvars, and the part is the
    variable ``part_key``), the vllm_cluster ``inputs`` and the computing node's ``serving_plan``."""
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, (list, tuple)) or not nodes:
        raise AnsibleFilterError('cluster_plan: the input must be the non-empty list of the nodes, head first')
    _mapping('cluster_plan: parts', parts)
    missing = [host for host in nodes if host not in parts
               or (part_key is not None and part_key not in parts[host])]
    if missing:
        raise AnsibleFilterError('cluster_plan: no part of the nodes %s (each node computes its own first)'
                                 % ', '.join(missing))
    parts = dict((host, dict(parts[host][part_key] if part_key is not None else parts[host])) for host in nodes)
    inputs = dict(_mapping('cluster_plan: inputs', inputs))
    absent = [key for key in _cluster_plan.INPUT_KEYS if key not in inputs]
    if absent:
        raise AnsibleFilterError('cluster_plan: inputs lack %s' % ', '.join(absent))
    if inputs['backend'] not in _cluster_plan.BACKENDS:
        raise AnsibleFilterError('cluster_plan: the backend must be dp or ray, not %r' % (inputs['backend'],))
    return _cluster_plan.cluster_plan(list(nodes), parts, inputs, dict(_mapping('cluster_plan: serving_plan',
                                                                                serving_plan)))


def cluster_node(facts, host, inputs, serving_plan):
    """One node's part of the group from its Ansible ``facts``, its inventory name ``host``, its vllm_cluster
    ``inputs`` (backend, node_address, data_parallel_size_local) and its ``serving_plan``."""
    serving_plan = _mapping('cluster_node: serving_plan', serving_plan)
    if not isinstance(serving_plan.get('serving'), Mapping) or 'npu_ids' not in serving_plan:
        raise AnsibleFilterError('cluster_node: serving_plan must be the node\'s serving plan (vllm_service_plan)')
    return _cluster_plan.cluster_node(host, _mapping('cluster_node: facts', facts),
                                      _mapping('cluster_node: inputs', inputs), serving_plan)


def cluster_service_inputs(backend):
    """The parallel inputs of a node's first serving plan under ``backend`` (dp or ray)."""
    if backend not in _cluster_plan.BACKENDS:
        raise AnsibleFilterError('cluster_service_inputs: the backend must be dp or ray, not %r' % (backend,))
    return _cluster_plan.service_inputs(backend)


def ray_pip_install(pip_list, pins, venv, wheelhouse=None):
    """What pip installs into Ray's venv ``venv``, from ``pip list --format=json``'s output and the pins."""
    if pip_list is not None and not isinstance(pip_list, str):
        raise AnsibleFilterError('ray_pip_install: the input must be the output of pip list --format=json')
    try:
        return _cluster_plan.ray_pip_install(pip_list, list(pins), venv, wheelhouse)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise AnsibleFilterError('ray_pip_install: pip list --format=json printed no list of packages (%s)' % error)


def ray_cluster_status(status, expected):
    """The active nodes ``ray status`` shows, and whether they are the ``expected`` count."""
    if status is not None and not isinstance(status, str):
        raise AnsibleFilterError('ray_cluster_status: the input must be the output of ray status')
    return _cluster_plan.ray_cluster_status(status, int(expected))


class FilterModule(object):
    def filters(self):
        return {'cluster_plan': cluster_plan, 'cluster_node': cluster_node,
                'cluster_service_inputs': cluster_service_inputs, 'ray_pip_install': ray_pip_install,
                'ray_cluster_status': ray_cluster_status}
