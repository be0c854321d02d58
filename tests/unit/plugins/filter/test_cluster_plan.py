# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The multi-node plan's filters (plugins/filter/cluster_plan.py), called directly and through a template, and their
documentation sidecars: every key the plan returns is documented, and no other."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter import cluster_plan as plugin
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _cluster_plan
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ansible_debug
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__cluster_plan import (
    facts,
    inputs,
    node_inputs,
    parts,
    serving,
)

FILTER_DIR = os.path.dirname(plugin.__file__)
FILTERS = ('cluster_plan', 'cluster_node', 'cluster_service_inputs', 'ray_pip_install', 'ray_cluster_status')


def sidecar(name):
    with open(os.path.join(FILTER_DIR, name + '.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def test_the_plugin_exposes_the_filters():
    assert set(plugin.FilterModule().filters()) == set(FILTERS)


def test_the_filters_are_the_module_utils_functions():
    hosts = parts(['head', 'rank1'])
    assert plugin.cluster_plan(['head', 'rank1'], hosts, inputs(), serving()) == \
        _cluster_plan.cluster_plan(['head', 'rank1'], hosts, inputs(), serving())
    assert plugin.cluster_node(facts('10.0.0.11'), 'head', node_inputs(), serving()) == hosts['head']
    assert plugin.cluster_service_inputs('ray') == _cluster_plan.service_inputs('ray')
    assert plugin.ray_pip_install('[]', ['ray==2.56.1'], '/v') == _cluster_plan.ray_pip_install('[]', ['ray==2.56.1'], '/v')
    assert plugin.ray_cluster_status(' 2 node_a\n', '2') == {'nodes': 2, 'joined': True}


def test_the_parts_are_read_from_each_host_s_variable_with_part_key():
    hosts = parts(['head', 'rank1'])
    hostvars = dict((host, {'__vllm_cluster_node': part, 'other': 1}) for host, part in hosts.items())
    assert plugin.cluster_plan(['head', 'rank1'], hostvars, inputs(), serving(), part_key='__vllm_cluster_node') == \
        plugin.cluster_plan(['head', 'rank1'], hosts, inputs(), serving())


@pytest.mark.parametrize('call, message', [
    (lambda: plugin.cluster_plan([], {}, inputs(), serving()), 'the input must be the non-empty list of the nodes'),
    (lambda: plugin.cluster_plan('head', {}, inputs(), serving()), 'the input must be the non-empty list of the nodes'),
    (lambda: plugin.cluster_plan(['head', 'rank1'], parts(['head']), inputs(), serving()), 'no part of the nodes rank1'),
    (lambda: plugin.cluster_plan(['head'], {'head': {}}, inputs(), serving(), part_key='p'), 'no part of the nodes head'),
    (lambda: plugin.cluster_plan(['head'], parts(['head']), {'backend': 'dp'}, serving()), 'inputs lack rpc_port'),
    (lambda: plugin.cluster_plan(['head'], parts(['head']), inputs(backend='mpi'), serving()), 'the backend must be dp'),
    (lambda: plugin.cluster_node(facts('10.0.0.1'), 'head', node_inputs(), {}), 'serving_plan must be the node'),
    (lambda: plugin.cluster_node([], 'head', node_inputs(), serving()), 'facts must be a dict'),
    (lambda: plugin.cluster_service_inputs('mpi'), 'the backend must be dp or ray'),
    (lambda: plugin.ray_pip_install('not json', ['ray==2.56.1'], '/v'), 'printed no list of packages'),
    (lambda: plugin.ray_pip_install('[1]', ['ray==2.56.1'], '/v'), 'printed no list of packages'),
    (lambda: plugin.ray_cluster_status(['x'], 1), 'the input must be the output of ray status'),
])
def test_a_wrong_input_is_a_filter_error(call, message):
    with pytest.raises(AnsibleFilterError) as raised:
        call()
    assert message in str(raised.value)


def test_through_a_template():
    hosts = parts(['head', 'rank1'])
    result = ansible_debug("nodes | kunpeng_ascend.vllm.cluster_plan(parts, inputs, plan)",
                           {'nodes': ['head', 'rank1'], 'parts': hosts, 'inputs': inputs(), 'plan': serving()})
    assert result['msg'] == _cluster_plan.cluster_plan(['head', 'rank1'], hosts, inputs(), serving())


def test_cluster_plan_documents_every_key_it_returns_and_no_other():
    docs = sidecar('cluster_plan')
    assert set(docs) == {'DOCUMENTATION', 'EXAMPLES', 'RETURN'}
    assert docs['DOCUMENTATION']['name'] == 'cluster_plan'
    assert set(docs['DOCUMENTATION']['options']) == {'_input', 'parts', 'inputs', 'serving_plan', 'part_key'}
    plan = _cluster_plan.cluster_plan(['head', 'rank1'], parts(['head', 'rank1']), inputs(), serving())
    returned = docs['RETURN']['_value']['contains']
    assert set(returned) == set(plan)
    assert set(returned['nodes']['contains']) == set(plan['nodes']['head'])
    keys_line = [line for line in docs['DOCUMENTATION']['options']['inputs']['description'] if line.startswith('Keys:')]
    assert keys_line and tuple(key.strip('C()') for key in keys_line[0][len('Keys: '):].rstrip('.').split(', ')) == \
        _cluster_plan.INPUT_KEYS
    assert 'kunpeng_ascend.vllm.cluster_plan' in docs['EXAMPLES']


@pytest.mark.parametrize('name, result, options', [
    ('cluster_node', lambda: parts(['head'])['head'], {'_input', 'host', 'inputs', 'serving_plan'}),
    ('cluster_service_inputs', lambda: _cluster_plan.service_inputs('dp'), {'_input'}),
    ('ray_pip_install', lambda: _cluster_plan.ray_pip_install('', [], '/v'), {'_input', 'pins', 'venv', 'wheelhouse'}),
    ('ray_cluster_status', lambda: _cluster_plan.ray_cluster_status('', 1), {'_input', 'expected'}),
])
def test_the_other_filters_document_their_options_and_every_key(name, result, options):
    docs = sidecar(name)
    assert docs['DOCUMENTATION']['name'] == name
    assert set(docs['DOCUMENTATION']['options']) == options
    assert set(docs['RETURN']['_value']['contains']) == set(result())
    assert 'kunpeng_ascend.vllm.' + name in docs['EXAMPLES']
