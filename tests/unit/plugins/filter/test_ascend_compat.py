# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ascend_compat and ascend_compat_rows filters, called directly and through a template."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter import ascend_compat as plugin
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import (
    ROWS,
    check_combination,
    compatibility_rows,
    describe_row,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ansible_debug, load_fixture

FILTER_DIR = os.path.dirname(plugin.__file__)


def test_the_plugin_exposes_its_four_filters():
    assert plugin.FilterModule().filters() == {'ascend_compat': plugin.ascend_compat,
                                               'ascend_compat_rows': plugin.ascend_compat_rows,
                                               'ascend_compat_waiver': plugin.ascend_compat_waiver,
                                               'ascend_compat_policy': plugin.ascend_compat_policy}


def test_ascend_compat_is_check_combination():
    versions = {'vllm_ascend': '0.23.0', 'cann': '9.1.0', 'driver': '25.5'}
    result = plugin.ascend_compat(versions)
    assert result == check_combination(**versions)
    assert (result['supported'], result['suggestion']['image']) == (False, 'quay.io/ascend/vllm-ascend:v0.18.0')


def test_null_values_are_not_checked():
    assert plugin.ascend_compat({'cann': None, 'driver': None}) == check_combination()


def test_unknown_keys_are_an_error_naming_them():
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.ascend_compat({'cann_version': '8.5.0', 'hdk': '25.5', 'cann': '8.5.0'})
    assert str(raised.value) == ('ascend_compat: unknown key(s) cann_version, hdk; the keys are vllm_ascend, vllm, cann, '
                                 'torch, torch_npu, triton_ascend, driver, python')


def test_input_that_is_not_a_dict_is_an_error():
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.ascend_compat(['8.5.0'])
    assert str(raised.value) == ('ascend_compat: the input must be a dict of versions with keys among vllm_ascend, vllm, '
                                 'cann, torch, torch_npu, triton_ascend, driver, python, not list')


@pytest.mark.parametrize('driver', [None, '', '  '])
def test_rows_without_a_driver_are_all_rows(driver):
    assert plugin.ascend_compat_rows(driver) == compatibility_rows()


def test_rows_for_a_driver():
    rows = plugin.ascend_compat_rows(' 24.1.rc1 ')
    assert [row['vllm_ascend'] for row in rows] == ['0.11.0', '0.9.1', '0.7.3.post1', '0.7.3']


def test_rows_for_a_driver_that_is_not_a_version():
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.ascend_compat_rows('latest')
    assert str(raised.value) == "ascend_compat_rows: NPU driver 'latest' is not a version such as 24.1.RC1"


def test_rows_for_a_driver_given_as_a_number():
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.ascend_compat_rows(25.5)
    assert str(raised.value) == ('ascend_compat_rows: the NPU driver version must be a string such as 24.1.RC1, '
                                 'not float 25.5')


def run_ansible_debug(expression, variables):
    return ansible_debug(expression, variables)['msg']


def test_through_a_template():
    assert run_ansible_debug("({'driver': driver} | kunpeng_ascend.vllm.ascend_compat).suggestion.image",
                             {'driver': '25.5.0'}) == 'quay.io/ascend/vllm-ascend:v0.18.0'
    assert run_ansible_debug("driver | kunpeng_ascend.vllm.ascend_compat_rows | map(attribute='cann') | list",
                             {'driver': '25.5.0'}) == ['8.5.1', '8.5.0', '8.3.RC2', '8.2.RC1', '8.1.RC1', '8.1.RC1']


@pytest.mark.parametrize('name', ['ascend_compat', 'ascend_compat_rows', 'ascend_compat_waiver', 'ascend_compat_policy'])
def test_each_filter_has_its_documentation_sidecar(name):
    with open(os.path.join(FILTER_DIR, name + '.yml'), encoding='utf-8') as sidecar:
        docs = yaml.safe_load(sidecar)
    assert set(docs) == {'DOCUMENTATION', 'EXAMPLES', 'RETURN'}
    assert docs['DOCUMENTATION']['name'] == name
    assert 'kunpeng_ascend.vllm.%s' % name in docs['EXAMPLES']


def test_the_documented_row_sample_is_a_real_row():
    with open(os.path.join(FILTER_DIR, 'ascend_compat.yml'), encoding='utf-8') as sidecar:
        docs = yaml.safe_load(sidecar)
    row = describe_row(next(row for row in ROWS if row['vllm_ascend'] == '0.23.0'))
    # The sample names its source in general; the row names the commit.
    assert docs['RETURN']['_value']['contains']['row']['sample'] == dict(
        row, source='vllm-ascend docs/source/community/versioning_policy.md, release compatibility matrix, at a named '
                    'commit')


def test_a_waiver_through_a_template_holds_until_its_day_and_is_reported():
    waiver = {'reason': 'CHG-4711: validated on two A2 nodes', 'expires': '2027-01-31'}
    expression = ("({'vllm_ascend': '0.31.0', 'driver': '26.0.RC1'} | kunpeng_ascend.vllm.ascend_compat("
                  "waiver=waiver, today=today)) | dict2items | selectattr('key', 'in', ['supported', 'waived']) "
                  "| items2dict")
    assert run_ansible_debug(expression, {'waiver': waiver, 'today': '2027-01-31'}) == {'supported': True,
                                                                                        'waived': True}
    assert run_ansible_debug(expression, {'waiver': waiver, 'today': '2027-02-01'}) == {'supported': False,
                                                                                        'waived': False}


def test_today_that_is_not_a_date_is_an_error():
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.ascend_compat({'vllm_ascend': '0.31.0'}, waiver={}, today='tomorrow')
    assert str(raised.value) == "ascend_compat: today must be a date as YYYY-MM-DD, not 'tomorrow'"


def test_a_waiver_alone_is_read_with_its_problems():
    waiver = {'reason': 'CHG-4711: validated on two A2 nodes', 'expires': '2027-01-31'}
    assert plugin.ascend_compat_waiver(waiver, today='2027-01-31') == {
        'waiver': {'reason': waiver['reason'], 'expires': '2027-01-31', 'covers': {}}, 'problems': []}
    assert plugin.ascend_compat_waiver(None) == {'waiver': None, 'problems': []}
    expired = plugin.ascend_compat_waiver(waiver, today='2027-02-01')
    assert expired['waiver'] is None and expired['problems'][0].startswith('the waiver expired on 2027-01-31')


# --- a site's rows -------------------------------------------------------------------------------------------

SITE_ROWS = [{'vllm_ascend': '0.30.0', 'vllm': '0.30.0', 'cann': '9.2.1', 'driver': '25.6.RC3.1'},
             {'vllm_ascend': '0.31.0', 'vllm': '0.31.0', 'cann': '9.2.1', 'driver': '26.2.RC1'}]


def test_the_site_rows_join_every_lookup_marked_as_the_sites():
    result = plugin.ascend_compat({'vllm_ascend': '0.30.0', 'driver': '25.6.RC3.1'}, site_rows=SITE_ROWS)
    assert (result['supported'], result['row']['source']) == (True, 'site')
    assert plugin.ascend_compat({'vllm_ascend': '0.30.0', 'driver': '25.6.RC3.1'})['supported'] is False
    rows = plugin.ascend_compat_rows('26.2.RC1', site_rows=SITE_ROWS)
    assert [(row['vllm_ascend'], row['source']) for row in rows[:3]] == [
        ('0.32.0rc1', rows[0]['source']), ('0.31.0', 'site'), ('0.30.0', 'site')]
    assert [row['source'] for row in plugin.ascend_compat_rows(None, site_rows=SITE_ROWS)].count('site') == 2


def test_a_malformed_site_row_fails_the_filter_naming_the_variable_and_row():
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.ascend_compat_rows(None, site_rows=[SITE_ROWS[0], dict(SITE_ROWS[1], cann=9.2)])
    assert str(raised.value) == ('ascend_compat_rows: ascend_compat_site_rows[1].cann: 9.2 is a float, not a version '
                                 'string: quote it (YAML reads 9.10 as the number 9.1)')
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.ascend_compat({'driver': '26.2.RC1'}, site_rows='0.31.0')
    assert str(raised.value).startswith('ascend_compat: ascend_compat_site_rows must be a list of rows')


def test_the_caller_names_its_release_variable_in_the_driver_refusal():
    result = plugin.ascend_compat({'vllm_ascend': '0.23.0', 'driver': '25.5'}, release_variable='cann_version')
    assert result['problems'][0].endswith('or choose vllm-ascend 0.18.0 (CANN 8.5.1), the newest release driver 25.5 '
                                          'runs (cann_version)')
    with pytest.raises(AnsibleFilterError, match='release_variable must be a string or null, not list'):
        plugin.ascend_compat({'driver': '25.5'}, release_variable=['cann_version'])


def test_site_rows_through_a_template():
    expression = ("({'vllm_ascend': '0.31.0', 'driver': '26.2.RC1'} | kunpeng_ascend.vllm.ascend_compat("
                  "site_rows=ascend_compat_site_rows)).row.source")
    assert run_ansible_debug(expression, {'ascend_compat_site_rows': SITE_ROWS}) == 'site'


POLICY = load_fixture('vllm-ascend-versioning_policy.md_hust-mirror-4edb35a_2026-09-21_to-v0.26.0rc1_table-excerpt.txt')


def test_the_policy_filter_prints_the_site_variable():
    result = plugin.ascend_compat_policy(POLICY, source='vLLM-HUST/vllm-ascend-hust at 4edb35a', include_rc=True)
    assert result['rows'][0]['vllm_ascend'] == '0.26.0rc1'
    assert yaml.safe_load(result['text']) == {'ascend_compat_site_rows': result['rows']}
    assert result['text'].startswith('# The rows of vLLM-HUST/vllm-ascend-hust at 4edb35a that the collection lacks')


@pytest.mark.parametrize('text, options, message', [
    (None, {}, 'ascend_compat_policy: the input must be the text of a versioning_policy.md, not NoneType'),
    ('# README', {}, 'ascend_compat_policy: no "Release compatibility matrix" heading: is this versioning_policy.md?'),
    (POLICY, {'include_rc': 'yes'}, "ascend_compat_policy: include_rc must be true or false, not 'yes'"),
])
def test_the_policy_filter_refuses_what_it_cannot_read(text, options, message):
    with pytest.raises(AnsibleFilterError) as raised:
        plugin.ascend_compat_policy(text, **options)
    assert str(raised.value) == message
