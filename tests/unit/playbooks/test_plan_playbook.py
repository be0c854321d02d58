# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""playbooks/plan.yml against a simulated fleet on this machine (fleet_sim.py: three hosts through the local
connection): a fresh A2 node in container mode (NPUs on its PCI bus, no driver, no npu-smi), a node serving vLLM's
CPU build natively, and a node with a bad input. The bad node is reported failed with the message naming the variable,
the others planned; the failure budget decides who fails the play; the JSON and Markdown are written; the query
answers; nothing on the nodes changes; and site.yml, which imports the plan first, stops before its first change."""

from __future__ import annotations

import json
import os
import re
import socket

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _fleet_plan
from ansible_collections.kunpeng_ascend.vllm.tests.unit.playbooks import fleet_sim


def group_address():
    """This machine's address on its default route (a second interface address beside lo's), or None."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(('192.0.2.1', 9))
        return probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()


GROUP_ADDRESS = group_address()
HOSTS = {'fresh': fleet_sim.FRESH_NODE, 'cpu': {}, 'bad': {'vllm_service_port': 70000}}
# A multi-node group of two CPU nodes (vLLM's data-parallel launcher, no NPU network), this machine's lo and its other
# interface as their addresses: role vllm_cluster needs a distinct address on an interface of each.
GROUP = {'head': {'vllm_cluster_node_address': '127.0.0.1', 'multinode_npu_network': False},
         'rank1': {'vllm_cluster_node_address': GROUP_ADDRESS, 'multinode_npu_network': False}}
if GROUP_ADDRESS and GROUP_ADDRESS != '127.0.0.1':
    HOSTS.update(GROUP)
needs_group = pytest.mark.skipif('head' not in HOSTS, reason='this machine has no address but loopback for a second node')
# What the roles would write on a node (this machine, through the local connection): none may appear or change.
NODE_PATHS = ('/etc/kunpeng-ascend-vllm', '/etc/vllm', '/etc/systemd/system/vllm.service', '/var/lib/vllm', '/opt/vllm',
              '/etc/sysctl.d/90-kunpeng-ascend-vllm.conf', '/etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf',
              '/var/cache/ascend-packages', '/etc/ascend', '/usr/local/Ascend', '/etc/docker/daemon.json')
# The scratch folder's files that are the run's own, not a node's.
RUN_FILES = re.compile(r'(fleet-plan|out-[a-z]+|ansible-(home|local|remote)|ascend-sim)(/|$)')
PORT_MESSAGE = 'vllm_service_port must be a whole number from 1 to 65535; got 70000'


def snapshot(root):
    """Every file of the simulated nodes (the scratch folder but the run's own files) and the paths the roles would
    write on this machine: path -> (size, mtime) or None when absent."""
    seen = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            if not RUN_FILES.match(os.path.relpath(path, root)):
                stat = os.lstat(path)
                seen[path] = (stat.st_size, stat.st_mtime_ns)
    for path in NODE_PATHS:
        seen[path] = (os.lstat(path).st_size, os.lstat(path).st_mtime_ns) if os.path.lexists(path) else None
    return seen


def recap(stdout):
    """host -> its PLAY RECAP counters."""
    return dict((host, dict((key, int(value)) for key, value in re.findall(r'(\w+)=(\d+)', counters)))
                for host, counters in re.findall(r'^(\w+) +: (ok=.*)$', stdout, re.M))


@pytest.fixture(scope='module')
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp('fleet')
    clusters = {'pair': ['head', 'rank1']} if 'head' in HOSTS else None
    inventory, env = fleet_sim.make_fleet(root, HOSTS, clusters=clusters, npu_smi=False, docker=True)
    return str(root), inventory, env


QUERY = "nodes[?status=='failed'].failure.message"


@pytest.fixture(scope='module')
def budget(fleet):
    """One run with a budget of one node and a query."""
    return plan(fleet, 'out-budget', '-e', 'plan_max_failed=1', '-e', 'plan_query=%s' % QUERY)


def plan(fleet, name, *extra, playbook=fleet_sim.PLAYBOOK):
    root, inventory, env = fleet
    before = snapshot(root)
    run, _wall, _cpu = fleet_sim.run_plan(root, inventory, env, '-e', 'plan_output_dir=%s' % os.path.join(root, name),
                                          *extra, playbook=playbook)
    assert snapshot(root) == before, 'a node changed'
    counters = recap(run.stdout)
    assert sorted(counters) == sorted(HOSTS), run.stdout[-3000:] + run.stderr[-3000:]
    assert all(host['changed'] == 0 for host in counters.values()), counters
    with open(os.path.join(root, name, 'fleet-plan.json'), encoding='utf-8') as handle:
        record, problems = _fleet_plan.read(handle.read())
    assert problems == []
    with open(os.path.join(root, name, 'fleet-plan.md'), encoding='utf-8') as handle:
        markdown = handle.read()
    return run, counters, record, markdown


def test_a_failed_plan_stops_every_node_under_the_default_budget(fleet):
    run, counters, record, markdown = plan(fleet, 'out-default')
    assert run.returncode == 2
    assert all(host['failed'] == 1 for host in counters.values())
    nodes = dict((entry['host'], entry) for entry in record['nodes'])
    assert [nodes[host]['status'] for host in ('fresh', 'cpu', 'bad')] == ['planned', 'planned', 'failed']
    assert nodes['bad']['failure'] == {'task': 'Check the serving inputs', 'message': PORT_MESSAGE}
    assert record['verdict']['proceed'] is False and record['verdict']['failed'] == ['bad']
    assert 'bad: FAILED - Check the serving inputs: %s' % PORT_MESSAGE in run.stdout
    assert 'Nothing changes on cpu: 1 of %d nodes cannot be planned (failed: bad)' % len(HOSTS) in run.stdout
    assert '| bad | failed |  |  |  |  |  | Check the serving inputs: %s |' % PORT_MESSAGE in markdown
    # The plan of each kind of node.
    cpu = nodes['cpu']
    assert (cpu['mode'], cpu['layout'], cpu['npus']['count']) == ('native', {'tp': 1, 'dp': 1, 'nodes': 1}, 0)
    assert cpu['needs']['cann'] is True and cpu['roles'] == ['os_tuning', 'npu_driver', 'cann']
    assert cpu['changes']['service'] == {'state': 'new', 'differences': [], 'reason': None}


def test_a_fresh_host_is_planned_from_its_pci_bus_and_the_inventorys_versions(budget):
    _run, _counters, record, markdown = budget
    fresh = dict((entry['host'], entry) for entry in record['nodes'])['fresh']
    assert fresh['status'] == 'planned' and fresh['mode'] == 'container' and fresh['release'] == '0.13.0'
    assert fresh['npus'] == {'count': 8, 'host': 8, 'cards': 8}
    assert fresh['layout'] == {'tp': 4, 'dp': 2, 'nodes': 1}
    assert fresh['sizing']['verdict'] in _fleet_plan.SIZING_VERDICTS
    assert any('npu-smi is not on this host yet' in sentence for sentence in fresh['assumed'])
    # The driver it is planned against: the inventory's npu_driver_version, which plan.yml passes to the role.
    assert any('the inventory targets' in sentence and '25.5.0' in sentence for sentence in fresh['assumed'])
    # Container mode: the driver and firmware, no host CANN; the image loaded from its archive; a reboot.
    assert [step['component'] for step in fresh['changes']['packages']] == ['driver', 'firmware']
    assert fresh['changes']['reboot'] is True
    assert fresh['changes']['image'] == {'ref': fleet_sim.IMAGE, 'state': 'absent',
                                         'action': 'load /root/images/vllm-ascend-v0.13.0.tar', 'reason': None}
    assert fresh['needs'] == {'cann': False, 'container_runtime': True, 'cann_reason': 'container mode: the image holds CANN'}
    assert fresh['roles'] == ['os_tuning', 'npu_driver', 'container_runtime']
    assert 'Assumed rather than read:' in markdown


def test_the_budget_lets_the_others_go_on_and_the_query_answers(budget):
    run, counters, record, _markdown = budget
    assert run.returncode == 2
    assert dict((host, counts['failed']) for host, counts in counters.items()) == dict(
        (host, int(host == 'bad')) for host in HOSTS)
    assert record['verdict']['proceed'] is True and record['verdict']['removed'] == ['bad']
    assert 'bad leaves the run before any change: Check the serving inputs: %s' % PORT_MESSAGE in run.stdout
    shown = re.search(r'TASK \[Show what plan_query selects\] \*+\nok: \[\w+\] => (\{.*\})', run.stdout)
    assert json.loads(shown.group(1)) == {'msg': [PORT_MESSAGE]}


def test_site_yml_plans_first_and_changes_no_node_while_a_plan_fails(fleet):
    run, counters, record, _markdown = plan(fleet, 'out-site', '--check', playbook=os.path.join(
        fleet_sim.REPO, 'playbooks', 'site.yml'))
    assert run.returncode == 2 and record['playbook'] == 'site.yml'
    assert all(host['failed'] == 1 for host in counters.values())
    assert 'PLAY [Tune the OS, install the NPU driver and firmware, then CANN]' not in run.stdout
    assert 'PLAY [Serve the model with vLLM]' not in run.stdout


@needs_group
def test_a_multi_node_group_is_planned_as_one(budget):
    _run, _counters, record, _markdown = budget
    nodes = dict((entry['host'], entry) for entry in record['nodes'])
    assert [(nodes[host]['status'], nodes[host]['group'], nodes[host]['rank']) for host in ('head', 'rank1')] == [
        ('planned', 'head', 0), ('planned', 'head', 1)]
    assert nodes['head']['layout'] == {'tp': 1, 'dp': 2, 'nodes': 2}
    assert record['groups'] == [{'head': 'head', 'nodes': ['head', 'rank1'], 'layout': {'tp': 1, 'dp': 2, 'nodes': 2},
                                 'status': 'planned'}]
    # Role vllm_cluster's checks ran (no NPU network: multinode_npu_network is false).
    assert nodes['rank1']['roles'] == ['os_tuning', 'npu_driver', 'cann']
