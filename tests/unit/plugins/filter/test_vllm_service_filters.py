# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The vllm_service filters (plugins/filter/vllm_service.py): each a thin call into
module_utils/serving/_vllm_service.py, which refuses what is not its input by name; one run through Ansible."""

from __future__ import annotations

import base64
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter import vllm_service as plugin
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _serving
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _vllm_service as service
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ansible_debug
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import a2_facts, inputs

NAMES = ('vllm_service_unit', 'vllm_service_environment', 'vllm_service_probe_argv', 'vllm_service_probe_facts',
         'vllm_service_model_reads', 'vllm_service_model_digests', 'vllm_service_active', 'vllm_service_npu_holders',
         'vllm_service_api_key', 'vllm_service_native_install', 'vllm_service_view',
         'vllm_service_rollback_view', 'vllm_service_report')


def role_inputs(**changes):
    result = dict(inputs(), restart_interval=300, restart_burst=5, stop_timeout=30, npu_free_timeout=120,
                  npu_free_interval=2, wait_for_endpoints=[], wait_for_timeout=300)
    result.update(changes)
    return result


def test_the_plugin_exposes_the_filters():
    assert plugin.FilterModule().filters() == dict((name, getattr(plugin, name)) for name in NAMES)


def test_each_filter_has_its_documentation():
    here = os.path.join(os.path.dirname(plugin.__file__))
    assert [name for name in NAMES if not os.path.isfile(os.path.join(here, name + '.yml'))] == []


def test_the_filters_refuse_what_is_not_their_input():
    plan = _serving.serving_plan(inputs(), a2_facts())
    for call in (lambda: plugin.vllm_service_unit({'mode': 'native'}, role_inputs()),
                 lambda: plugin.vllm_service_unit(plan, 'inputs'),
                 lambda: plugin.vllm_service_probe_facts('text'),
                 lambda: plugin.vllm_service_model_reads('/m', 'src'),
                 lambda: plugin.vllm_service_view(plan, None),
                 lambda: plugin.vllm_service_report({'unit': 'x'}, inputs=role_inputs()),
                 lambda: plugin.vllm_service_report(None, rolled_back_to='current'),
                 lambda: plugin.vllm_service_report(plan, inputs=role_inputs(), surprise=1)):
        with pytest.raises(AnsibleFilterError):
            call()


def test_the_filters_are_the_module_utils_functions():
    plan = _serving.serving_plan(inputs(), a2_facts())
    assert plugin.vllm_service_unit(plan, role_inputs(), None) == service.unit_of(plan, role_inputs(), '')
    assert plugin.vllm_service_probe_argv(role_inputs(user='svc', api_key_file='/k'))[4:] == (
        ['svc', '/k'] + list(_serving.PROBE_PATHS))
    reads = plugin.vllm_service_model_reads('/m', {'path': '/nfs/m/'}, check_mode=True)
    assert reads['rsync_argv'][-3:] == ['--dry-run', '/nfs/m/', '/m/'] and reads['on_node']
    assert plugin.vllm_service_model_reads('/m')['rsync_argv'] is None
    hostvars = {'a': {'__vllm_service_model_identity': {'name': 'q', 'digest': 'd'}}, 'b': {}}
    assert plugin.vllm_service_model_digests(hostvars, ['a', 'b'], 'q') == {'by_host': {'a': 'd'}, 'agree': True}
    assert plugin.vllm_service_api_key(None, '/k', base64.b64encode(b'k' * 16).decode()) == 'k' * 16
    report = plugin.vllm_service_report({'unit': 'u', 'changed': False, 'known_good': {}}, rolled_back_to='previous')
    assert tuple(report) == service.REPORT_KEYS and report['restored'] is False
    assert tuple(plugin.vllm_service_report(plan, inputs=role_inputs())) == service.REPORT_KEYS


def test_the_report_through_ansible_has_its_one_shape():
    plan = _serving.serving_plan(inputs(), a2_facts())
    after_gate = ansible_debug("plan | kunpeng_ascend.vllm.vllm_service_report(inputs=role, main_pid='42\\n', "
                               "active=true, config_changed=false, health={}, known_good={}, key_set=false)",
                               {'plan': plan, 'role': role_inputs()})
    restored = {'changed': True, 'unit': 'vllm.service', 'known_good': {'endpoint': None}}
    after_rollback = ansible_debug("restored | kunpeng_ascend.vllm.vllm_service_report(rolled_back_to='current', "
                                   "main_pid='7')", {'restored': restored})
    assert sorted(after_gate['msg']) == sorted(after_rollback['msg']) == sorted(service.REPORT_KEYS)
    assert (after_gate['msg']['main_pid'], after_gate['msg']['restarted']) == (42, False)
    assert (after_rollback['msg']['rolled_back_to'], after_rollback['msg']['main_pid']) == ('current', 7)
