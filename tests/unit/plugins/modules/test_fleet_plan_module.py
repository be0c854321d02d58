# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""fleet_plan's main(): the fleet plan written to its two files (and not in check mode), read back by the one reader,
the verdict and what each node needs returned, the query answered, and the failures named."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _fleet_plan
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import fleet_plan
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ExitJson, FailJson, capture_results, run_main

PLAN = {'mode': 'native', 'release': '', 'has_npus': False, 'npu_ids': [], 'cards': [], 'name': 'vllm',
        'unit': 'vllm.service', 'url': 'http://127.0.0.1:8000', 'served_model_name': 'tiny', 'engine': None,
        'serving': {'tensor_parallel_size': 1, 'data_parallel_size': 1}, 'tls': None, 'cli': {'image': None}}
GOOD = {'host': 'good', 'plan': PLAN, 'model': '/srv/models/tiny', 'ascend': {'npu_count': 0}, 'roles': [],
        'record': {'failed': False, 'msg': 'file not found: /etc/kunpeng-ascend-vllm/services/vllm.json'}}
BAD = {'host': 'bad', 'failure': {'task': 'Check the serving inputs',
                                  'message': 'vllm_service_port must be a whole number from 1 to 65535; got 70000'}}


@pytest.fixture(autouse=True)
def results(monkeypatch):
    capture_results(monkeypatch)


def run(tmp_path, outcome=ExitJson, **args):
    args = dict({'observations': [GOOD, BAD], 'hosts': ['good', 'bad'], 'dest': str(tmp_path / 'plan')}, **args)
    return run_main(fleet_plan.main, args, outcome)


def read(tmp_path, name):
    with open(str(tmp_path / 'plan' / name), encoding='utf-8') as handle:
        return handle.read()


def test_the_plan_is_written_and_reads_back(tmp_path):
    result = run(tmp_path, max_failed=1, playbook='site.yml')
    assert result['changed'] is True
    record, problems = _fleet_plan.read(read(tmp_path, 'fleet-plan.json'))
    assert problems == []
    assert [entry['status'] for entry in record['nodes']] == ['planned', 'failed']
    assert record['playbook'] == 'site.yml' and record['verdict'] == result['verdict']
    assert read(tmp_path, 'fleet-plan.md') == _fleet_plan.markdown(record)
    assert result['paths'] == {'json': str(tmp_path / 'plan' / 'fleet-plan.json'),
                               'markdown': str(tmp_path / 'plan' / 'fleet-plan.md')}
    assert result['verdict']['proceed'] is True and list(result['stops']) == ['bad']
    assert result['needs'] == {'good': {'cann': True, 'container_runtime': False},
                               'bad': {'cann': True, 'container_runtime': True}}
    assert result['lines'][0].startswith('good: no vllm-ascend release, native; no NPUs; TP 1 x DP 1 x 1 node')
    assert result['query_result'] is None
    assert oct(os.stat(str(tmp_path / 'plan' / 'fleet-plan.json')).st_mode & 0o777) == '0o644'


def test_the_default_budget_stops_every_node(tmp_path):
    result = run(tmp_path)
    assert result['verdict']['proceed'] is False and sorted(result['stops']) == ['bad', 'good']


def test_check_mode_writes_nothing(tmp_path):
    result = run(tmp_path, _ansible_check_mode=True)
    assert result['changed'] is True and not os.path.exists(str(tmp_path / 'plan'))


def test_the_query_is_answered(tmp_path):
    result = run(tmp_path, query="nodes[?status=='failed'].host")
    assert result['query_result'] == ['bad']


def test_a_query_that_is_no_expression_fails_after_the_plan_is_written(tmp_path):
    result = run(tmp_path, FailJson, query='nodes[?')
    assert result['msg'].startswith('plan_query "nodes[?" is not a JMESPath expression: ')
    assert result['msg'].endswith('(the fleet plan is written: %s)' % (tmp_path / 'plan' / 'fleet-plan.json'))
    assert json.loads(read(tmp_path, 'fleet-plan.json'))['schema'] == _fleet_plan.SCHEMA


def test_a_budget_that_is_none_names_plan_max_failed(tmp_path):
    result = run(tmp_path, FailJson, max_failed='a few')
    assert result['msg'].startswith('plan_max_failed must be how many nodes may fail their plan')
    assert not os.path.exists(str(tmp_path / 'plan'))


def test_a_folder_that_cannot_be_written_names_plan_output_dir(tmp_path):
    (tmp_path / 'plan').write_text('a file, not a folder')
    result = run(tmp_path, FailJson)
    assert result['msg'].startswith('cannot write the fleet plan %s (plan_output_dir): ' % (tmp_path / 'plan' / 'fleet-plan.json'))


SITE_ROW = {'vllm_ascend': '0.31.0', 'vllm': '0.31.0', 'cann': '9.2.1', 'driver': '26.2.RC1'}


def test_a_site_row_is_the_release_s_row_and_shown_as_one(tmp_path):
    site = dict(GOOD, host='site', plan=dict(PLAN, mode='container', release='0.31.0', has_npus=True,
                                             npu_ids=list(range(8)), cards=list(range(8))))
    result = run(tmp_path, observations=[site], hosts=['site'], compat_site_rows=[SITE_ROW])
    record, problems = _fleet_plan.read(read(tmp_path, 'fleet-plan.json'))
    assert problems == [] and record['nodes'][0]['row']['source'] == 'site'
    assert record['nodes'][0]['row']['cann'] == '9.2.1'
    assert result['lines'][0].startswith('site: vllm-ascend 0.31.0 (site row: CANN 9.2.1, driver >= 26.2.RC1)')
    # Without it, 0.31.0 has no row.
    result = run(tmp_path, observations=[site], hosts=['site'])
    assert result['lines'][0].startswith('site: vllm-ascend 0.31.0 (no row of the compatibility set)')


def test_a_malformed_site_row_names_the_inventory_variable(tmp_path):
    result = run(tmp_path, FailJson, compat_site_rows=[{'vllm_ascend': '0.31.0'}])
    assert result['msg'].startswith('ascend_compat_site_rows[0].')
