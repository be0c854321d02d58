# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The fleet plan (operations/_fleet_plan.py): what plan.yml observed on each node in - real serving plans of serving/_serving.py from the
role's defaults, ascend_facts' shapes, the registered results of the slurp and the engine's image inspect as Ansible
registers them under failed_when: false - and the record, its verdict under the failure budget, its renderings and
its query out."""

from __future__ import annotations

import base64
import json
import os

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _fleet_plan
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _deployment, _serving

REPO = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..')
MODEL = '/data/models/DeepSeek-R1-W8A8'
IMAGE = 'quay.io/ascend/vllm-ascend:v0.13.0'
ROLES = list(_fleet_plan.ROLES)
TARGETS = {'driver': '25.5.0', 'firmware': '7.8.0.5.216', 'cann': '8.5.0', 'nnal': False}
# ascend_facts on a fresh A2 host: the NPUs on the PCI bus, nothing installed.
FRESH = {'driver': None, 'firmware': None, 'toolkit': None, 'kernels': None, 'nnal': None, 'npu_count': 8,
         'npu_devices': [{'bus_id': '0000:c1:00.0', 'numa_node': 0}] * 8}
# ... and on one with the stack the inventory asks for.
CURRENT = dict(FRESH, driver={'version': '25.5.0'}, firmware={'version': '7.8.0.5.216'}, toolkit={'version': '8.5.0'},
               kernels={'version': '8.5.0'})
# The slurp of a record that is not there, and the engine's answer for an image it does not have, as registered.
NO_RECORD = {'changed': False, 'failed': False, 'msg': 'file not found: /etc/kunpeng-ascend-vllm/services/vllm.json'}
NO_IMAGE = {'changed': False, 'failed': False, 'rc': 1, 'stdout': '',
            'stderr': 'Error response from daemon: No such image: %s' % IMAGE}
HAS_IMAGE = {'changed': False, 'failed': False, 'rc': 0, 'stdout': 'sha256:' + 'ab' * 32, 'stderr': ''}


def role_defaults():
    with open(os.path.join(REPO, 'roles', 'vllm_service', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    return dict((name[len('vllm_service_'):], value) for name, value in defaults.items()
                if not (isinstance(value, str) and '{{' in value))


def serving_plan(npus=8, **changes):
    """A real serving plan: the role's defaults with ``changes``, on an A2 host with ``npus`` NPUs and docker."""
    inputs = dict(role_defaults(), model=MODEL, image=IMAGE, api_key_set=False, compat_waiver=None)
    inputs.update(changes)
    facts = {'npu_count': npus, 'npu_devices': [{'numa_node': 0, 'numa_cpulist': '0-95'}] * npus,
             'chips': [{'npu_id': index, 'chip_id': 0} for index in range(npus)], 'existing_paths': [],
             'engine_paths': {'docker': '/usr/bin/docker'}}
    plan = _serving.serving_plan(inputs, facts)
    assert plan['problems'] == [], plan['problems']
    return plan


def record_read(plan, **changes):
    """The slurp of the deployment record the role wrote for ``plan`` (with ``changes``)."""
    record = dict(_deployment.record_of(plan, MODEL), **changes)
    return {'changed': False, 'failed': False, 'content': base64.b64encode(json.dumps(record).encode()).decode()}


def observed(host, plan=None, **changes):
    result = {'host': host, 'failure': None, 'plan': plan, 'model': MODEL, 'ascend': FRESH, 'targets': TARGETS,
              'roles': ROLES, 'install_cann': None, 'monitoring': False, 'npu_network': True, 'reboot_ok': False,
              'image_archive': None, 'record': NO_RECORD, 'image': NO_IMAGE,
              'cluster': {'member': False, 'nodes': [], 'backend': 'dp', 'dp_local': None}}
    result.update(changes)
    return result


def failed(host, message='vllm_service_port must be a whole number from 1 to 65535; got 70000', task='Check the serving inputs'):
    return observed(host, None, failure={'task': task, 'message': message, 'messages': []}, ascend=None, record=None,
                    image=None)


# ------------------------------------------------------------------------------------------------------- inputs

@pytest.mark.parametrize('value, budget', [
    (None, {'count': 0}), (0, {'count': 0}), (3, {'count': 3}), ('2', {'count': 2}), (' 4 ', {'count': 4}),
    (2.0, {'count': 2}), ('10%', {'percent': 10.0}), ('12.5 %', {'percent': 12.5}), ('100%', {'percent': 100.0}),
])
def test_the_budget_is_a_count_or_a_percentage(value, budget):
    assert _fleet_plan.parse_budget(value) == budget


@pytest.mark.parametrize('value', [-1, True, 1.5, 'two', '101%', '-5%', '', [1], {'count': 1}])
def test_a_budget_that_is_none_names_plan_max_failed(value):
    with pytest.raises(ValueError) as raised:
        _fleet_plan.parse_budget(value)
    assert str(raised.value).startswith('plan_max_failed must be how many nodes may fail their plan')


@pytest.mark.parametrize('budget, planned, allowed', [
    ({'count': 2}, 10, 2), ({'percent': 10.0}, 10, 1), ({'percent': 10.0}, 9, 0), ({'percent': 25.0}, 100, 25),
    ({'percent': 100.0}, 3, 3), ({'percent': 30.0}, 10, 3),
])
def test_a_percentage_rounds_down(budget, planned, allowed):
    assert _fleet_plan.allowed_failures(budget, planned) == allowed


def test_the_plans_inputs_are_checked_each_naming_its_variable():
    assert _fleet_plan.input_problems({'max_failed': 0, 'query': None, 'output_dir': '/tmp/plan'}) == []
    problems = _fleet_plan.input_problems({'max_failed': 'some', 'query': 'nodes[?', 'output_dir': 'plan\n',
                                           'install_cann': 'maybe'})
    names = ['plan_max_failed', 'plan_query', 'plan_output_dir', 'ascend_install_cann']
    assert [problem.split(' ')[0] for problem in problems] == names
    assert 'is not a JMESPath expression' in problems[1]
    assert _fleet_plan.input_problems({'query': '  ', 'output_dir': '.'})[0].startswith('plan_query must be')


@pytest.mark.parametrize('value, expected', [(None, None), (True, True), ('yes', True), ('False', False), ('0', False)])
def test_booleans_as_ansible_spells_them(value, expected):
    assert _fleet_plan.boolean(value, 'ascend_install_cann') is expected


# ------------------------------------------------------------------------------------------ what a node needs

def test_container_mode_needs_no_host_cann_and_native_mode_does():
    container = _fleet_plan.host_needs(serving_plan())
    assert (container['cann'], container['container_runtime']) == (False, True)
    assert container['cann_reason'] == 'container mode: the image holds CANN'
    native = _fleet_plan.host_needs(serving_plan(mode='native', pip_packages=['vllm-ascend==0.13.0']))
    assert (native['cann'], native['container_runtime']) == (True, False)


def test_ascend_install_cann_decides_either_way():
    assert _fleet_plan.host_needs(serving_plan(), True)['cann'] is True
    assert _fleet_plan.host_needs(serving_plan(), 'true')['cann_reason'] == 'ascend_install_cann is true'
    assert _fleet_plan.host_needs(serving_plan(mode='native', pip_packages=['vllm-ascend==0.13.0']), False)['cann'] is False
    with pytest.raises(ValueError, match='^ascend_install_cann must be true or false'):
        _fleet_plan.host_needs(serving_plan(), 'sometimes')


def test_without_a_plan_the_node_gets_what_site_yml_gave_before():
    assert _fleet_plan.host_needs(None) == {'cann': True, 'container_runtime': True, 'mode': None,
                                            'cann_reason': 'no serving plan'}


def test_the_input_checks_before_and_after_the_plan():
    assert _fleet_plan.input_checks(ROLES, 'before') == ['os_tuning', 'npu_driver']
    assert _fleet_plan.input_checks(ROLES, 'before', cluster=True) == ['os_tuning', 'npu_driver', 'npu_network']
    assert _fleet_plan.input_checks(ROLES, 'before', cluster=True, npu_network='false') == ['os_tuning', 'npu_driver']
    assert _fleet_plan.input_checks(ROLES, 'after', serving_plan()) == ['container_runtime']
    assert _fleet_plan.input_checks(ROLES, 'after', serving_plan(), install_cann=True, monitoring=True) == [
        'cann', 'container_runtime', 'monitoring']
    # Monitoring runs in site.yml's serving play, which leaves multi-node groups to multinode.yml.
    assert _fleet_plan.input_checks(ROLES, 'after', serving_plan(), monitoring=True, cluster=True) == ['container_runtime']
    # Only the roles the importing playbook applies: rolling_update.yml applies none of them.
    assert _fleet_plan.input_checks([], 'all', serving_plan()) == []
    assert _fleet_plan.input_checks(['npu_driver', 'cann'], 'all', None) == ['npu_driver', 'cann']


def test_unknown_roles_name_plan_roles():
    with pytest.raises(ValueError, match='^plan_roles must be a list of the roles'):
        _fleet_plan.input_checks(['os_tuning', 'vllm_service'], 'before')
    with pytest.raises(ValueError, match='^plan_roles'):
        _fleet_plan.input_checks('os_tuning', 'before')


# ------------------------------------------------------------------------------------------- what would change

def test_a_fresh_host_installs_the_driver_before_the_firmware_then_reboots():
    steps, unknown = _fleet_plan.package_changes(FRESH, TARGETS, ROLES, install_cann=True)
    assert unknown == []
    assert [(step['component'], step['before'], step['after']) for step in steps] == [
        ('driver', None, '25.5.0'), ('firmware', None, '7.8.0.5.216'), ('toolkit', None, '8.5.0'),
        ('kernels', None, '8.5.0')]
    entry = _fleet_plan.node_entry(observed('a', serving_plan(), ascend=FRESH))
    assert entry['changes']['reboot'] is True
    # Container mode: no host CANN, so the plan lists none.
    assert [step['component'] for step in entry['changes']['packages']] == ['driver', 'firmware']


def test_a_host_at_the_versions_asked_for_changes_no_package_and_needs_no_reboot():
    entry = _fleet_plan.node_entry(observed('a', serving_plan(), ascend=CURRENT))
    assert entry['changes']['packages'] == [] and entry['changes']['reboot'] is False


def test_an_upgrade_is_firmware_first_and_nnal_only_with_its_package():
    old = dict(CURRENT, driver={'version': '24.1.rc1'}, firmware={'version': '7.1.0.11.220'}, toolkit={'version': '8.0.0'},
               kernels={'version': '8.0.0'})
    steps, _unknown = _fleet_plan.package_changes(old, dict(TARGETS, nnal=True), ROLES, install_cann=True)
    assert [step['component'] for step in steps] == ['firmware', 'driver', 'toolkit', 'kernels', 'nnal']
    assert steps[0]['before'] == '7.1.0.11.220'


def test_versions_that_cannot_be_read_are_unknown_not_guessed():
    entry = _fleet_plan.node_entry(observed('a', serving_plan(), ascend=None))
    assert entry['changes']['packages'] is None and entry['changes']['reboot'] is None
    assert entry['unknown'] == ['the installed versions (ascend_facts did not run: the plan failed before it)']
    assert 'packages ?' in _fleet_plan.changes_text(entry) and 'reboot ?' in _fleet_plan.changes_text(entry)


def test_only_the_roles_the_playbook_applies_change_packages():
    # rolling_update.yml applies only the service.
    entry = _fleet_plan.node_entry(observed('a', serving_plan(), roles=[]))
    assert entry['changes']['packages'] == [] and entry['changes']['reboot'] is False


def test_the_image_as_the_engine_lists_it():
    plan = serving_plan()
    present = {'ref': IMAGE, 'state': 'present', 'action': None, 'reason': None}
    assert _fleet_plan.image_change(plan, HAS_IMAGE, None) == present
    assert _fleet_plan.image_change(plan, NO_IMAGE, '/srv/images/v0.13.0.tar')['action'] == 'load /srv/images/v0.13.0.tar'
    assert _fleet_plan.image_change(plan, dict(NO_IMAGE, stderr='Error: quay.io/x: image not known'), None)['state'] == 'absent'
    daemon_down = dict(NO_IMAGE, stderr='Cannot connect to the Docker daemon at unix:///var/run/docker.sock.')
    assert _fleet_plan.image_change(plan, daemon_down, None) == {
        'ref': IMAGE, 'state': 'unknown', 'action': 'pull',
        'reason': 'the engine said: Cannot connect to the Docker daemon at unix:///var/run/docker.sock.'}
    skipped = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}
    assert _fleet_plan.image_change(plan, skipped, None)['reason'] == 'the engine was not asked (Conditional result was False)'
    # A fresh host: the plan found no engine (its command starts with the engine's bare name), so nothing was asked.
    fresh = dict(plan, command=['docker'] + plan['command'][1:])
    assert _fleet_plan.image_change(fresh, skipped, '/srv/v0.13.0.tar') == {
        'ref': IMAGE, 'state': 'unknown', 'action': 'load /srv/v0.13.0.tar', 'reason': 'the container engine is not installed yet'}
    assert _fleet_plan.image_change(serving_plan(mode='native', pip_packages=['vllm-ascend==0.13.0']), None, None) is None


def test_a_service_without_a_record_is_new():
    new = {'state': 'new', 'differences': [], 'reason': None}
    assert _fleet_plan.service_change(serving_plan(), MODEL, NO_RECORD) == new


def test_a_service_whose_record_matches_is_unchanged_and_one_that_differs_names_what():
    plan = serving_plan()
    assert _fleet_plan.service_change(plan, MODEL, record_read(plan))['state'] == 'unchanged'
    older = record_read(plan, image='quay.io/ascend/vllm-ascend:v0.12.0', npus=[0, 1, 2, 3])
    changed = _fleet_plan.service_change(plan, MODEL, older)
    assert changed['state'] == 'changed'
    assert changed['differences'] == ['image quay.io/ascend/vllm-ascend:v0.12.0 -> %s' % IMAGE,
                                      'npus [0, 1, 2, 3] -> [0, 1, 2, 3, 4, 5, 6, 7]']


@pytest.mark.parametrize('read, reason', [
    ({'failed': False, 'msg': 'Permission denied'}, 'the record cannot be read: Permission denied'),
    ({'failed': False, 'content': base64.b64encode(b'{"schema": "other/1"}').decode()},
     'the record is not one this collection writes: its schema is "other/1", not kunpeng_ascend.vllm/deployment/1'),
    ({'failed': False, 'content': '%%%'}, 'the record is not UTF-8 text in base64'),
    ({'failed': False, 'content': base64.b64encode(b'\xff').decode()}, 'the record is not UTF-8 text in base64'),
    ({'skipped': True}, 'the record was not read'),
])
def test_a_record_that_cannot_be_read_leaves_the_service_unknown(read, reason):
    unknown = {'state': 'unknown', 'differences': [], 'reason': reason}
    assert _fleet_plan.service_change(serving_plan(), MODEL, read) == unknown


# -------------------------------------------------------------------------------------------------- one node

def test_a_planned_nodes_entry():
    plan = dict(serving_plan(tensor_parallel_size=4, data_parallel_size=2),
                sizing={'verdict': 'fits', 'problems': [], 'warnings': [], 'suggestion': None,
                        'per_npu': {'need': 1, 'budget': 2}})
    entry = _fleet_plan.node_entry(observed('a2-01', plan))
    assert entry['status'] == 'planned' and entry['failure'] is None
    assert (entry['mode'], entry['release']) == ('container', '0.13.0')
    assert entry['row']['cann'] == '8.5.0' and entry['row']['driver_minimum'] == '25.5'
    assert entry['npus'] == {'count': 8, 'host': 8, 'cards': 8}
    assert entry['layout'] == {'tp': 4, 'dp': 2, 'nodes': 1}
    assert entry['sizing']['verdict'] == 'fits'
    assert entry['needs'] == {'cann': False, 'container_runtime': True, 'cann_reason': 'container mode: the image holds CANN'}
    assert entry['roles'] == ['os_tuning', 'npu_driver', 'container_runtime']
    assert _fleet_plan.line(entry) == (
        'a2-01: vllm-ascend 0.13.0 (CANN 8.5.0, driver >= 25.5), container; 8 NPUs (8 cards); TP 4 x DP 2 x 1 node; '
        'sizing fits; would change: driver -> 25.5.0, firmware -> 7.8.0.5.216, reboot (by hand: npu_driver_reboot_ok '
        'is false), image pull, service new')


def test_a_plan_without_sizing_is_unknown_and_says_so():
    plan = dict(serving_plan())
    plan.pop('sizing', None)
    sizing = _fleet_plan.node_entry(observed('a', plan))['sizing']
    assert sizing['verdict'] == 'unknown'
    assert sizing['warnings'] == ['not checked: the serving plan holds no sizing']
    odd = _fleet_plan.node_entry(observed('a', dict(serving_plan(), sizing={'verdict': 'maybe'})))['sizing']
    assert odd['verdict'] == 'unknown'


def test_a_plan_not_sized_says_why():
    skipped = dict(serving_plan(), sizing={'verdict': 'unknown', 'problems': [], 'warnings': [], 'suggestion': None,
                                           'per_npu': {}, 'skipped': 'the host has no NPUs (vLLM\'s CPU backend)'})
    entry = _fleet_plan.node_entry(observed('a', skipped))
    assert entry['sizing']['skipped'] == 'the host has no NPUs (vLLM\'s CPU backend)'
    assert '; sizing unknown (not sized); ' in _fleet_plan.line(entry)


def test_what_a_fresh_hosts_plan_assumed_is_kept():
    plan = dict(serving_plan(), assumed=['the NPUs from the PCI bus (npu-smi is not installed yet)',
                                         'driver 25.5.0 (npu_driver_version)'])
    entry = _fleet_plan.node_entry(observed('fresh', plan))
    assert entry['assumed'] == plan['assumed']
    assert _fleet_plan.line(entry).endswith('[assumed: the NPUs from the PCI bus (npu-smi is not installed yet); '
                                            'driver 25.5.0 (npu_driver_version)]')
    keyed = _fleet_plan.node_entry(observed('fresh', dict(serving_plan(), assumed={'npus': 'pci', 'driver': '25.5.0'})))
    assert keyed['assumed'] == ['driver: 25.5.0', 'npus: pci']


def test_a_failed_node_names_the_task_and_the_message():
    entry = _fleet_plan.node_entry(failed('bad'))
    assert entry['status'] == 'failed'
    assert entry['failure'] == {'task': 'Check the serving inputs',
                                'message': 'vllm_service_port must be a whole number from 1 to 65535; got 70000'}
    assert _fleet_plan.line(entry) == ('bad: FAILED - Check the serving inputs: vllm_service_port must be a whole '
                                       'number from 1 to 65535; got 70000')


def test_a_node_without_a_plan_does_not_go_on_unplanned():
    entry = _fleet_plan.node_entry(observed('odd', {'problems': ['vllm_service_port must be ...']}))
    assert entry['status'] == 'failed'
    assert entry['failure']['message'].startswith('its serving plan was not made')


def test_a_failed_loop_says_what_its_items_said():
    failure = {'task': 'Check the numbers', 'message': 'One or more items failed',
               'messages': ['npu_driver_ready_retries must be 1 or more; got 0', '']}
    entry = _fleet_plan.node_entry(observed('bad', None, failure=failure))
    assert entry['failure']['message'] == 'npu_driver_ready_retries must be 1 or more; got 0'


# ------------------------------------------------------------------------------------------------- the fleet

def fleet(observations, budget=0, hosts=None):
    return _fleet_plan.build(observations, hosts or [item['host'] for item in observations], budget,
                             '2026-11-30T10:00:00Z', 'site.yml')


def test_every_node_planned_stops_nothing():
    record, stops = fleet([observed('a', serving_plan()), observed('b', serving_plan())])
    assert stops == {}
    assert record['schema'] == 'kunpeng_ascend.vllm/fleet-plan/1'
    assert record['verdict']['proceed'] is True
    assert record['verdict']['summary'] == 'every node of 2 planned: nothing stops the run'
    assert _fleet_plan.needs_by_host(record) == {'a': {'cann': False, 'container_runtime': True},
                                                 'b': {'cann': False, 'container_runtime': True}}


def test_one_failure_stops_every_node_under_the_default_budget():
    record, stops = fleet([observed('a', serving_plan()), failed('b')])
    assert record['verdict']['proceed'] is False
    assert sorted(stops) == ['a', 'b']
    assert stops['a'] == ('Nothing changes on a: 1 of 2 nodes cannot be planned (failed: b), more than plan_max_failed 0 '
                          'allows (0): the run stops before any change, on every node. Fix the failed nodes (see the '
                          'fleet plan), leave them out with --limit, or raise plan_max_failed.')
    assert stops['b'].endswith('Its own plan: Check the serving inputs: vllm_service_port must be a whole number from '
                               '1 to 65535; got 70000.')


@pytest.mark.parametrize('budget', [1, '1', '50%'])
def test_a_budget_lets_the_others_go_on_without_the_failed_nodes(budget):
    record, stops = fleet([observed('a', serving_plan()), failed('b')], budget)
    assert record['verdict']['proceed'] is True
    assert record['verdict']['removed'] == ['b'] and record['verdict']['planned'] == 1
    assert list(stops) == ['b']
    assert stops['b'].startswith('b leaves the run before any change: Check the serving inputs: vllm_service_port')


def test_a_percentage_below_one_node_allows_none():
    record, _stops = fleet([observed('a', serving_plan()), failed('b'), observed('c', serving_plan())], '10%')
    assert record['verdict']['proceed'] is False and record['verdict']['allowed'] == 0


def test_a_host_lost_before_its_plan_counts_as_failed():
    record, stops = fleet([observed('a', serving_plan())], 1, hosts=['a', 'gone'])
    assert [entry['status'] for entry in record['nodes']] == ['planned', 'lost']
    assert record['verdict']['failed'] == ['gone'] and list(stops) == ['gone']


def group_node(host, nodes, dp_local=2, **changes):
    plan = serving_plan(tensor_parallel_size=4, data_parallel_size_local=1)
    return observed(host, plan, cluster={'member': True, 'nodes': nodes, 'backend': 'dp', 'dp_local': dp_local},
                    **changes)


def test_a_multi_node_group_plans_as_one():
    nodes = ['a2-01', 'a2-02']
    record, stops = fleet([group_node('a2-01', nodes), group_node('a2-02', nodes), observed('single', serving_plan())])
    assert stops == {}
    head = record['nodes'][0]
    assert (head['group'], head['rank'], record['nodes'][1]['rank']) == ('a2-01', 0, 1)
    assert head['layout'] == {'tp': 4, 'dp': 4, 'nodes': 2}
    assert record['groups'] == [{'head': 'a2-01', 'nodes': nodes, 'layout': {'tp': 4, 'dp': 4, 'nodes': 2},
                                 'status': 'planned'}]
    assert 'TP 4 x DP 4 x 2 nodes' in _fleet_plan.line(head) and _fleet_plan.line(head).endswith('[group a2-01, rank 0]')
    assert record['nodes'][2]['group'] is None


def test_a_failed_node_holds_its_whole_group_and_the_budget_counts_them_all():
    nodes = ['a2-01', 'a2-02']
    head_failed = dict(group_node('a2-01', nodes), failure={'task': 'Check the node\'s address, NIC and ranks',
                                                            'message': 'No address for a2-01', 'messages': []})
    observations = [head_failed, group_node('a2-02', nodes), observed('single', serving_plan())]
    record, stops = fleet(observations, 2)
    assert [entry['status'] for entry in record['nodes']] == ['failed', 'held', 'planned']
    assert record['nodes'][1]['failure']['message'] == 'held with its multi-node group (head a2-01): a2-01 did not plan'
    assert record['verdict']['removed'] == ['a2-01', 'a2-02'] and record['verdict']['held'] == ['a2-02']
    assert sorted(stops) == ['a2-01', 'a2-02']
    assert record['groups'][0]['status'] == 'failed'
    # One node allowed: the group's two are too many.
    record, stops = fleet(observations, 1)
    assert record['verdict']['proceed'] is False and sorted(stops) == ['a2-01', 'a2-02', 'single']


def test_ray_takes_the_data_parallel_size_of_the_plan():
    nodes = ['r1', 'r2']
    ray = [dict(group_node(host, nodes), cluster={'member': True, 'nodes': nodes, 'backend': 'ray', 'dp_local': 1})
           for host in nodes]
    record, _stops = fleet(ray)
    assert record['nodes'][0]['layout'] == {'tp': 4, 'dp': 1, 'nodes': 2}


# -------------------------------------------------------------------------------------- the file and its views

def test_the_record_reads_back_as_written():
    record, _stops = fleet([observed('a', serving_plan()), failed('b')], 1)
    text = _fleet_plan.dumps(record)
    assert _fleet_plan.read(text) == (record, [])
    assert json.loads(text) == record


@pytest.mark.parametrize('text, problem', [
    ('nope', 'it is not JSON'),
    ('[]', 'it is not a JSON object'),
    ('{"schema": "kunpeng_ascend.vllm/doctor-fleet/1"}',
     'its schema is "kunpeng_ascend.vllm/doctor-fleet/1", not kunpeng_ascend.vllm/fleet-plan/1'),
    ('{"schema": "kunpeng_ascend.vllm/fleet-plan/1", "nodes": [{"host": "a", "status": "fine"}], "verdict": {"proceed": true}}',
     'nodes[0] is not a node of a fleet plan (host, status planned/failed/held/lost)'),
    ('{"schema": "kunpeng_ascend.vllm/fleet-plan/1", "nodes": [], "verdict": {}}',
     'verdict is not a verdict (proceed true or false)'),
])
def test_what_is_no_fleet_plan_is_refused_naming_why(text, problem):
    record, problems = _fleet_plan.read(text)
    assert record is None and problems[0].startswith(problem)


def test_a_file_too_large_is_refused_unread():
    too_large = (None, ['it is larger than %d bytes' % _fleet_plan.MAX_BYTES])
    assert _fleet_plan.read(' ' * (_fleet_plan.MAX_BYTES + 1)) == too_large


def test_the_markdown_table_has_a_row_per_node_and_escapes_pipes():
    record, _stops = fleet([observed('a', serving_plan()), failed('b', message='a | b')], 1)
    text = _fleet_plan.markdown(record)
    rows = [line for line in text.splitlines() if line.startswith('| ')]
    assert rows[0].startswith('| node | status | release (row) | mode | NPUs | TP x DP x nodes | sizing |')
    assert rows[1].startswith('| a | planned | vllm-ascend 0.13.0 (CANN 8.5.0, driver >= 25.5) | container | 8 NPUs (8 cards) | 1 x 1 x 1 | unknown |')
    assert rows[2] == '| b | failed |  |  |  |  |  | Check the serving inputs: a \\| b |'
    assert 'Generated 2026-11-30T10:00:00Z by site.yml. 1 of 2 nodes leave the run' in text


def test_one_line_per_node_then_the_verdict():
    record, _stops = fleet([observed('a', serving_plan()), failed('b')], 1)
    lines = _fleet_plan.lines(record)
    assert len(lines) == 3 and lines[1].startswith('b: FAILED - ')
    assert lines[2] == ('fleet plan: 1 of 2 nodes leave the run (failed: b); plan_max_failed 1 allows 1: the run goes '
                        'on without them')


# ----------------------------------------------------------------------------------------------------- query

def test_a_query_selects_the_nodes_whose_sizing_is_refused():
    refused = dict(serving_plan(), sizing={'verdict': 'refused', 'problems': ['the model does not fit'], 'warnings': [],
                                           'suggestion': 'set vllm_service_tensor_parallel_size to 8'})
    record, _stops = fleet([observed('a', serving_plan()), observed('b', refused), failed('c')], 1)
    record = json.loads(_fleet_plan.dumps(record))
    assert _fleet_plan.run_query(record, "nodes[?sizing.verdict=='refused'].host") == ['b']
    assert _fleet_plan.run_query(record, "nodes[?status=='failed'].{host: host, why: failure.message}") == [
        {'host': 'c', 'why': 'vllm_service_port must be a whole number from 1 to 65535; got 70000'}]
    assert _fleet_plan.run_query(record, 'verdict.proceed') is True
    assert _fleet_plan.run_query(record, "nodes[?changes.reboot].host") == ['a', 'b']


def test_a_query_that_is_no_expression_names_plan_query():
    with pytest.raises(_fleet_plan.QueryError) as raised:
        _fleet_plan.run_query({}, 'nodes[?')
    assert str(raised.value).startswith('plan_query "nodes[?" is not a JMESPath expression: ')


def test_a_query_without_jmespath_says_what_to_install(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_jmespath(name, *args, **kwargs):
        if name == 'jmespath':
            raise ImportError('No module named jmespath')
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, '__import__', no_jmespath)
    with pytest.raises(_fleet_plan.QueryError, match='^plan_query needs the Python package jmespath on the controller'):
        _fleet_plan.run_query({}, 'nodes')


def test_a_group_taken_down_needs_neither_its_npu_network_nor_the_engine():
    roles = ['npu_network', 'container_runtime']
    plan = {'mode': 'container'}
    assert _fleet_plan.input_checks(roles, 'all', plan, cluster=True) == ['npu_network', 'container_runtime']
    assert _fleet_plan.input_checks(roles, 'all', plan, cluster=True, state='stopped') == []
    with pytest.raises(ValueError, match='^vllm_cluster_state must be started or stopped; got "gone"'):
        _fleet_plan.input_checks(roles, 'all', plan, cluster=True, state='gone')


def test_the_failed_items_of_a_loop_say_why_a_node_failed():
    observed = {'failure': {'task': 'Check the numbers', 'message': 'One or more items failed',
                            'results': [{'failed': False, 'msg': 'ok'}, {'failed': True, 'msg': 'vllm_cluster_rpc_port must be a port'},
                                        'not a result']}}
    assert _fleet_plan._failure(observed) == {'task': 'Check the numbers', 'message': 'vllm_cluster_rpc_port must be a port'}
