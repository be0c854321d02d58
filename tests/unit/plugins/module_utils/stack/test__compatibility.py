# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The compatibility set (the rows of vllm-ascend's versioning policy, checked against pinned copies of the upstream
table with tools/compat_rows.py), the checks against it and the waiver."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _compatibility, _compatibility_rows
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import (
    ROWS,
    SOURCE,
    check_combination,
    check_row,
    compatibility_rows,
    describe_row,
    driver_minimum,
    format_row,
    image_variant,
    policy_site_rows,
    python_in_range,
    read_waiver,
    rows_for_driver,
    site_rows,
    with_site_rows,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility_rows import TABLE_ROWS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import is_ascend_version
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture, tool_module

ROW_KEYS = {'vllm_ascend', 'vllm', 'python', 'cann', 'torch', 'torch_npu', 'triton_ascend', 'driver', 'firmware',
            'image_tag', 'status', 'source'}
COMPAT_ROWS = tool_module('compat_rows.py')
UPSTREAM = load_fixture('vllm-ascend-versioning_policy.md_182b75e_2026-08-22_to-v0.23.0.txt')
MIRROR = load_fixture('vllm-ascend-versioning_policy.md_hust-mirror-4edb35a_2026-09-21_to-v0.26.0rc1_table-excerpt.txt')
NEWEST_FIRST = ['0.32.0rc1', '0.30.0', '0.23.0.post1', '0.23.0', '0.18.0', '0.13.0', '0.11.0', '0.9.1', '0.7.3.post1',
                '0.7.3']
TODAY = datetime.date(2026, 12, 1)
WAIVER = {'reason': 'CHG-4711: vllm-ascend 0.31.0 validated by the platform team on two A2 nodes',
          'expires': '2027-01-31'}

RELEASE_VARIABLES = 'vllm_service_vllm_ascend_version or vllm_service_image'


def versions(rows, key='vllm_ascend'):
    return [row[key] for row in rows]


def by_version(version):
    return next(row for row in ROWS if row['vllm_ascend'] == version)


# --- the data ------------------------------------------------------------------------------------------------

def test_the_table_rows_are_the_final_and_post_rows_of_the_newest_upstream_table_read():
    rows = COMPAT_ROWS.parse_rows(MIRROR, pytest.fail)
    assert COMPAT_ROWS.differences(rows, TABLE_ROWS) == []


def test_the_upstream_commit_holds_the_same_rows_but_the_later_post_release():
    rows = COMPAT_ROWS.parse_rows(UPSTREAM, pytest.fail)
    assert COMPAT_ROWS.differences(rows, TABLE_ROWS) == ['row 0.23.0.post1 is not in the file']
    # PR 14579 corrected v0.23.0 after its release (CANN 9.0.1 -> 9.1.0): the collection has the corrected row.
    assert by_version('0.23.0')['cann'] == '9.1.0'


def test_an_upstream_edit_of_a_released_row_is_a_difference():
    edited = MIRROR.replace('| v0.18.0     | v0.18.0           | >= 3.10, < 3.12 | 8.5.1 ',
                            '| v0.18.0     | v0.18.0           | >= 3.10, < 3.12 | 9.0.0 ')
    assert COMPAT_ROWS.differences(COMPAT_ROWS.parse_rows(edited, pytest.fail), TABLE_ROWS) == [
        "changed row 0.18.0: cann '8.5.1' -> '9.0.0'"]


def test_every_row_has_the_documented_keys_and_readable_values():
    for row in ROWS:
        assert set(row) == ROW_KEYS
        for key in ('vllm_ascend', 'vllm', 'cann'):
            assert is_ascend_version(row[key]), (row['vllm_ascend'], key)
        for key in ('torch', 'torch_npu', 'triton_ascend', 'driver'):
            assert row[key] is None or is_ascend_version(row[key]), (row['vllm_ascend'], key)
        assert row['firmware'] is None
        assert row['python'] is None or python_in_range('3.10', row['python']) in (True, False)
        assert row['image_tag'] == 'v' + row['vllm_ascend']
        assert row['status'] == ('rc' if 'rc' in row['vllm_ascend'] else 'post' if 'post' in row['vllm_ascend']
                                 else 'final')
    assert len(set(versions(ROWS))) == len(ROWS)


def test_the_rows_of_the_table_name_it_and_the_later_ones_their_own_source():
    for row in ROWS[:len(TABLE_ROWS)]:
        assert row['source'] == SOURCE and 'versioning_policy.md' in row['source'] and '182b75ea' in row['source']
        assert row['torch'] and row['torch_npu'] and row['python']
    for row in ROWS[len(TABLE_ROWS):]:
        assert row['source'] != SOURCE and 'https://' in row['source']


def test_the_releases_after_the_table_are_known_for_their_cann_and_image_and_unpublished_otherwise():
    rows = dict((row['vllm_ascend'], row) for row in compatibility_rows())
    assert (rows['0.30.0']['cann'], rows['0.30.0']['image'], rows['0.30.0']['status']) == (
        '9.2.1', 'quay.io/ascend/vllm-ascend:v0.30.0', 'final')
    assert rows['0.30.0']['unpublished'] == ['python', 'torch', 'torch_npu', 'triton_ascend']
    assert (rows['0.32.0rc1']['cann'], rows['0.32.0rc1']['status']) == ('9.2', 'rc')
    assert rows['0.23.0']['unpublished'] == [] and rows['0.11.0']['unpublished'] == []


def test_rows_are_plain_data_for_the_managed_host():
    assert isinstance(ROWS, tuple)
    assert all(row.__class__ is dict for row in ROWS)
    assert all(value is None or isinstance(value, str) for row in ROWS for value in row.values())


# --- python ranges -------------------------------------------------------------------------------------------

@pytest.mark.parametrize('version, spec, inside', [
    ('3.10', '>=3.10,<3.13', True),
    ('3.12.4', '>=3.10,<3.13', True),
    ('3.13', '>=3.10,<3.13', False),
    ('3.9.18', '>=3.10,<3.13', False),
    ('3.11', '>3.10, <=3.11', True),
    ('3.11', '==3.11', True),
    ('3.11', '!=3.11', False),
])
def test_python_in_range(version, spec, inside):
    assert python_in_range(version, spec) is inside


def test_python_range_that_cannot_be_read_raises():
    with pytest.raises(ValueError, match=r"'~3.10' is not a Python version range such as >=3.10,<3.13"):
        python_in_range('3.10', '~3.10')


# --- the driver rule -----------------------------------------------------------------------------------------

def test_driver_minimum_is_the_rows_own_recommendation_or_inferred_from_older_cann():
    minimums = [(row['vllm_ascend'], row['driver_minimum'], row['driver_minimum_from']) for row in compatibility_rows()]
    assert minimums == [
        ('0.32.0rc1', '26.0.RC1', '0.23.0'),   # CANN 9.2: at least what CANN 9.1.0 needed
        ('0.30.0', '26.2.RC1', '0.30.0'),    # its v0.30.0 installation guide
        ('0.23.0.post1', '26.0.RC1', '0.23.0'),
        ('0.23.0', '26.0.RC1', '0.23.0'),
        ('0.18.0', '25.5', '0.13.0'),      # CANN 8.5.1: at least what CANN 8.5.0 needed
        ('0.13.0', '25.5', '0.13.0'),
        ('0.11.0', '24.1.RC1', '0.7.3'),
        ('0.9.1', '24.1.RC1', '0.7.3'),
        ('0.7.3.post1', '24.1.RC1', '0.7.3'),
        ('0.7.3', '24.1.RC1', '0.7.3'),
    ]


def test_a_row_without_any_older_recommendation_has_no_minimum():
    row = dict(ROWS[-1], driver=None)
    assert driver_minimum(row, (row,)) == (None, None)
    assert describe_row(row, (row,))['driver_minimum'] is None


def test_compatibility_rows_are_described_newest_first():
    rows = compatibility_rows()
    assert versions(rows) == NEWEST_FIRST
    assert rows[3] == dict(by_version('0.23.0'), image='quay.io/ascend/vllm-ascend:v0.23.0', driver_minimum='26.0.RC1',
                           driver_minimum_from='0.23.0', unpublished=[],
                           pins=['torch==2.10.0', 'torch-npu==2.10.0.post4', 'triton-ascend==3.2.2', 'vllm==0.23.0',
                                 'vllm-ascend==0.23.0'])


def test_the_pins_of_a_row_are_the_whole_row_without_local_parts_and_none_when_unpublished():
    assert by_version('0.18.0') and describe_row(by_version('0.18.0'))['pins'] == [
        'torch==2.9.0', 'torch-npu==2.9.0.post1', 'triton-ascend==3.2.0.dev20260322', 'vllm==0.18.0',
        'vllm-ascend==0.18.0']
    assert describe_row(by_version('0.11.0'))['pins'] == [
        'torch==2.7.1', 'torch-npu==2.7.1.post1', 'vllm==0.11.0', 'vllm-ascend==0.11.0']
    assert describe_row(by_version('0.30.0'))['pins'] is None


@pytest.mark.parametrize('driver, expected', [
    ('26.2.RC1', NEWEST_FIRST),
    ('26.0.RC1', NEWEST_FIRST[:1] + NEWEST_FIRST[2:]),
    ('26.0.rc1', NEWEST_FIRST[:1] + NEWEST_FIRST[2:]),
    ('25.5.1', NEWEST_FIRST[4:]),
    ('25.5', NEWEST_FIRST[4:]),
    ('25.5.rc1', NEWEST_FIRST[6:]),
    ('24.1.rc1', NEWEST_FIRST[6:]),
    ('23.0.rc3', []),
])
def test_rows_for_driver(driver, expected):
    assert versions(rows_for_driver(driver)) == expected


def test_rows_for_driver_rejects_what_is_not_a_version():
    with pytest.raises(ValueError) as raised:
        rows_for_driver('latest')
    assert str(raised.value) == "NPU driver 'latest' is not a version such as 24.1.RC1"


def test_a_new_row_is_found_wherever_it_is_added():
    new = {'vllm_ascend': '0.35.0', 'vllm': '0.35.0', 'python': '>=3.10,<3.14', 'cann': '9.3.0', 'torch': '2.14.0',
           'torch_npu': '2.14.0', 'triton_ascend': '3.7.0', 'driver': None, 'firmware': None, 'image_tag': 'v0.35.0',
           'status': 'final', 'source': 'test'}
    rows = ROWS[:3] + (new,) + ROWS[3:]
    assert versions(compatibility_rows(rows))[:2] == ['0.35.0', '0.32.0rc1']
    assert driver_minimum(new, rows) == ('26.2.RC1', by_version('0.30.0'))
    result = check_combination(vllm_ascend='0.35.0', python='3.13', driver='26.2.RC1', rows=rows)
    assert (result['supported'], result['row']['vllm_ascend'], result['suggestion']['vllm_ascend']) == \
        (True, '0.35.0', '0.35.0')


def test_format_row_names_every_component():
    assert format_row(by_version('0.23.0')) == (
        'vllm-ascend 0.23.0 (vLLM 0.23.0, Python >=3.10,<3.13, CANN 9.1.0, torch 2.10.0, torch_npu 2.10.0.post4, '
        'triton-ascend 3.2.2, NPU driver >= 26.0.RC1, image quay.io/ascend/vllm-ascend:v0.23.0)')
    assert 'NPU driver >= 25.5 (inferred)' in format_row(by_version('0.18.0'))
    assert 'triton-ascend none,' in format_row(by_version('0.11.0'))
    assert format_row(by_version('0.32.0rc1')) == (
        'vllm-ascend 0.32.0rc1 (release candidate) (vLLM 0.32.0, Python unpublished, CANN 9.2, torch unpublished, '
        'torch_npu unpublished, triton-ascend unpublished, NPU driver >= 26.0.RC1 (inferred), image '
        'quay.io/ascend/vllm-ascend:v0.32.0rc1)')
    lonely = dict(ROWS[-1], driver=None)
    assert 'no recommended driver' in format_row(lonely, (lonely,))


# --- check_combination ---------------------------------------------------------------------------------------

NOT_WAIVED = {'waived': False, 'waiver': None, 'waived_problems': [], 'waiver_problems': []}


def test_a_whole_row_is_supported():
    result = check_combination(vllm_ascend='v0.13.0', vllm='0.13.0', cann='8.5.0', torch='2.8.0', torch_npu='2.8.0.post2',
                               triton_ascend='3.2.0', python='3.11.9', driver='25.5.0')
    assert result == dict(NOT_WAIVED, supported=True, row=describe_row(by_version('0.13.0')), problems=[],
                          suggestion=describe_row(by_version('0.18.0')))


def test_versions_as_the_host_prints_them_match():
    result = check_combination(vllm='0.9.1+empty', torch='2.5.1+cpu', torch_npu='2.5.1.POST1', cann='8.2.rc1')
    assert (result['supported'], result['row']['vllm_ascend']) == (True, '0.9.1')


def test_a_torch_npu_with_its_local_part_matches_the_tables_text():
    result = check_combination(vllm_ascend='0.18.0', torch_npu='2.9.0.post1', triton_ascend='3.2.0.dev20260322')
    assert (result['supported'], result['row']['vllm_ascend']) == (True, '0.18.0')


def test_nothing_given_is_the_newest_row_without_a_suggestion():
    assert check_combination() == dict(NOT_WAIVED, supported=True, row=describe_row(by_version('0.32.0rc1')),
                                       problems=[], suggestion=None)


def test_empty_strings_are_not_given():
    assert check_combination(cann='', driver=' ') == check_combination()


def test_torch_alone_picks_the_newest_row_holding_it():
    assert check_combination(torch='2.5.1')['row']['vllm_ascend'] == '0.9.1'


def test_a_release_candidate_is_supported_when_asked_for_and_never_suggested():
    result = check_combination(vllm_ascend='0.32.0rc1', driver='26.2.RC1')
    assert (result['supported'], result['row']['status'], result['suggestion']['vllm_ascend']) == (True, 'rc', '0.30.0')


def test_the_final_release_after_the_table_is_supported_on_the_driver_upstream_validated():
    result = check_combination(vllm_ascend='0.30.0', driver='26.2.RC1')
    assert (result['supported'], result['row']['cann'], result['row']['image'], result['row']['driver']) == (
        True, '9.2.1', 'quay.io/ascend/vllm-ascend:v0.30.0', '26.2.RC1')
    assert 'https://docs.vllm.ai/projects/ascend/en/v0.30.0/getting_started/installation.html' in result['row']['source']


def test_0_30_0_no_longer_falls_back_to_the_older_driver_and_the_refusal_offers_both_fixes():
    result = check_combination(vllm_ascend='0.30.0', driver='26.0.RC1', release_variable='vllm_service_vllm_ascend_version')
    assert (result['supported'], result['suggestion']['vllm_ascend']) == (False, '0.23.0.post1')
    assert result['problems'] == [
        'NPU driver 26.0.RC1 is too old for vllm-ascend 0.30.0 (CANN 9.2.1), which needs 26.2.RC1 or later: upgrade the '
        'driver to 26.2.RC1 with playbooks/upgrade.yml (npu_driver_version), or choose vllm-ascend 0.23.0.post1 (CANN '
        '9.1.0), the newest release driver 26.0.RC1 runs (vllm_service_vllm_ascend_version)']


def test_an_unpublished_component_of_a_row_cannot_be_confirmed():
    result = check_combination(vllm_ascend='0.30.0', torch='2.10.0', python='3.11')
    assert (result['supported'], result['row']) == (False, None)
    assert result['problems'] == ['vllm-ascend 0.30.0 publishes no torch version, so torch 2.10.0 cannot be confirmed',
                                  'vllm-ascend 0.30.0 publishes no Python range, so Python 3.11 cannot be confirmed']


def test_a_row_ruled_out_by_the_driver_is_returned_with_the_problem_and_the_fitting_row():
    result = check_combination(vllm_ascend='0.23.0', driver='25.5')
    assert result == dict(
        NOT_WAIVED,
        supported=False,
        row=describe_row(by_version('0.23.0')),
        problems=['NPU driver 25.5 is too old for vllm-ascend 0.23.0 (CANN 9.1.0), which needs 26.0.RC1 or later: '
                  'upgrade the driver to 26.0.RC1 with playbooks/upgrade.yml (npu_driver_version), or choose '
                  'vllm-ascend 0.18.0 (CANN 8.5.1), the newest release driver 25.5 runs (' + RELEASE_VARIABLES + ')'],
        suggestion=describe_row(by_version('0.18.0')),
    )


def test_an_inferred_minimum_says_where_it_comes_from():
    result = check_combination(vllm_ascend='0.18.0', driver='24.1.rc1')
    assert result['problems'] == [
        'NPU driver 24.1.rc1 is too old for vllm-ascend 0.18.0 (CANN 8.5.1), which needs 25.5 or later (inferred from '
        'vllm-ascend 0.13.0, CANN 8.5.0): upgrade the driver to 25.5 with playbooks/upgrade.yml (npu_driver_version), '
        'or choose vllm-ascend 0.11.0 (CANN 8.3.RC2), the newest release driver 24.1.rc1 runs (' + RELEASE_VARIABLES
        + ')']
    assert result['suggestion']['vllm_ascend'] == '0.11.0'


def test_the_newest_candidate_row_that_fits_is_the_row():
    # torch 2.5.1 is in four rows; Python 3.9 and the driver rule out none, so the newest one is the row.
    result = check_combination(torch='2.5.1', python='3.9', driver='24.1.RC1')
    assert (result['supported'], result['row']['vllm_ascend']) == (True, '0.9.1')


def test_python_outside_the_row():
    result = check_combination(vllm_ascend='0.18.0', python='3.12')
    assert result['problems'] == ['Python 3.12 is outside >=3.10,<3.12, the Python range of vllm-ascend 0.18.0']
    assert (result['supported'], result['row']['vllm_ascend'], result['suggestion']) == (False, '0.18.0', None)


def test_mismatching_components_are_named_against_the_vllm_ascend_row():
    result = check_combination(vllm_ascend='v0.18.0', cann='9.1.0', torch_npu='2.9.0.post1', python='3.12')
    assert result == dict(
        NOT_WAIVED,
        supported=False,
        row=None,
        problems=['CANN 9.1.0 does not belong with vllm-ascend 0.18.0, whose row has CANN 8.5.1',
                  'Python 3.12 is outside >=3.10,<3.12, the Python range of vllm-ascend 0.18.0'],
        suggestion=None,
    )


def test_without_vllm_ascend_the_row_matching_most_components_is_the_reference():
    result = check_combination(vllm='0.13.0', cann='8.5.0', torch='2.9.0')
    assert result['problems'] == ['torch 2.9.0 does not belong with vllm-ascend 0.13.0, whose row has torch 2.8.0']


def test_unknown_versions_list_the_known_ones():
    result = check_combination(cann='7.0.0')
    assert result['problems'] == ['CANN 7.0.0 is in no row of the compatibility set (known: 9.2, 9.2.1, 9.1.0, 8.5.1, '
                                  '8.5.0, 8.3.RC2, 8.2.RC1, 8.1.RC1)']
    result = check_combination(vllm_ascend='0.5.0', cann='8.5.0')
    assert result['problems'] == ['vllm-ascend 0.5.0 is in no row of the compatibility set (known: %s)'
                                  % ', '.join(NEWEST_FIRST)]


def test_a_driver_older_than_every_row():
    result = check_combination(driver='23.0.rc3')
    assert result == dict(NOT_WAIVED, supported=False, row=None, suggestion=None, problems=[
        'NPU driver 23.0.rc3 is too old for every release of the compatibility set, the oldest of which, vllm-ascend '
        '0.11.0 (CANN 8.3.RC2), needs 24.1.RC1 or later: upgrade the driver to 24.1.RC1 with playbooks/upgrade.yml '
        '(npu_driver_version)'])


def test_a_python_outside_every_row():
    assert check_combination(python='3.8')['problems'] == [
        'Python 3.8 is outside the Python range of every row of the compatibility set (>=3.10,<3.13, >=3.10,<3.12, '
        '>=3.9,<3.12)']


def test_a_python_and_driver_that_no_single_row_admits():
    # 3.12 needs vllm-ascend 0.23.0, which needs driver 26.0.RC1.
    result = check_combination(python='3.12', driver='25.5')
    assert result == dict(NOT_WAIVED, supported=False, row=None, suggestion=None, problems=[
        'no row of the compatibility set admits both Python 3.12 and NPU driver 25.5'])


def test_the_driver_alone_gives_the_newest_fitting_row():
    result = check_combination(driver='25.5.0')
    assert (result['supported'], result['row']['vllm_ascend'], result['suggestion']['vllm_ascend']) == \
        (True, '0.18.0', '0.18.0')


def test_values_that_are_not_version_strings_are_problems_not_exceptions():
    result = check_combination(python=3.1, cann='latest', driver='24.1.rc1')
    assert result == dict(NOT_WAIVED, supported=False, row=None, suggestion=describe_row(by_version('0.11.0')),
                          problems=["CANN: 'latest' is not a version",
                                    'Python: 3.1 is a float, not a version string: quote it (YAML reads 3.10 as the '
                                    'number 3.1)'])


def test_the_rule_and_the_update_are_documented_where_the_rows_are():
    assert 'driver minimum' in _compatibility.__doc__
    assert 'tools/compat_rows.py' in _compatibility_rows.__doc__


# --- the waiver ----------------------------------------------------------------------------------------------

def test_a_valid_waiver_runs_an_unlisted_release_and_says_what_it_waives():
    result = check_combination(vllm_ascend='0.31.0', driver='26.0.RC1', waiver=WAIVER, today=TODAY)
    assert (result['supported'], result['waived'], result['problems'], result['row']) == (True, True, [], None)
    assert result['waiver'] == {'reason': WAIVER['reason'], 'expires': '2027-01-31', 'covers': {}}
    assert result['waived_problems'] == ['vllm-ascend 0.31.0 is in no row of the compatibility set (known: %s)'
                                         % ', '.join(NEWEST_FIRST)]


def test_without_a_waiver_the_same_release_is_refused():
    result = check_combination(vllm_ascend='0.31.0', driver='26.0.RC1')
    assert (result['supported'], result['waived']) == (False, False)


def test_a_waiver_holds_through_its_last_day_and_not_after():
    last_day = check_combination(vllm_ascend='0.31.0', waiver=WAIVER, today=datetime.date(2027, 1, 31))
    assert last_day['waived']
    after = check_combination(vllm_ascend='0.31.0', waiver=WAIVER, today=datetime.date(2027, 2, 1))
    assert (after['supported'], after['waived']) == (False, False)
    assert after['waiver_problems'] == [
        'the waiver expired on 2027-01-31 (reason: %s): renew it with a new date, or use a combination of the '
        'compatibility set' % WAIVER['reason']]
    assert after['problems'] == last_day['waived_problems']


def test_a_waiver_that_covers_versions_waives_only_those():
    waiver = dict(WAIVER, covers={'vllm_ascend': '0.31.0', 'driver': '26.0.RC1'})
    assert check_combination(vllm_ascend='v0.31.0', driver='26.0.rc1', waiver=waiver, today=TODAY)['waived']
    other = check_combination(vllm_ascend='0.31.1', driver='26.0.RC1', waiver=waiver, today=TODAY)
    assert not other['supported']
    assert other['waiver_problems'] == ['the waiver covers vllm-ascend 0.31.0, not this combination (vllm-ascend '
                                        '0.31.1, NPU driver 26.0.RC1)']


def test_a_waiver_does_not_cover_what_is_not_a_version():
    result = check_combination(vllm_ascend='latest', waiver=WAIVER, today=TODAY)
    assert (result['supported'], result['problems']) == (False, ["vllm-ascend: 'latest' is not a version"])


def test_a_waiver_of_a_supported_combination_is_not_needed_and_an_expired_one_says_so():
    assert check_combination(vllm_ascend='0.23.0', waiver=WAIVER, today=TODAY)['waiver_problems'] == []
    stale = check_combination(vllm_ascend='0.23.0', waiver=WAIVER, today=datetime.date(2027, 3, 1))
    assert (stale['supported'], stale['waived']) == (True, False)
    assert stale['waiver_problems'][-1] == ('the combination is in the compatibility set, so the waiver is not needed: '
                                            'remove it')


NEEDS_EXPIRES = 'the waiver needs expires, the last day it holds, as YYYY-MM-DD (not '


@pytest.mark.parametrize('waiver, problem', [
    ('yes', 'the waiver must be a dict with reason and expires (YYYY-MM-DD), not str'),
    ({'expires': '2027-01-31'}, 'the waiver needs a reason: 10 to 500 characters on one line saying who accepted the '
                                'risk and why (a change ticket)'),
    ({'reason': '   ', 'expires': '2027-01-31'}, 'the waiver needs a reason'),
    ({'reason': 'ok', 'expires': '2027-01-31'}, 'the waiver needs a reason'),
    ({'reason': 'CHG-1 accepted\nby ops', 'expires': '2027-01-31'}, 'the waiver needs a reason'),
    ({'reason': WAIVER['reason']}, NEEDS_EXPIRES + 'None)'),
    ({'reason': WAIVER['reason'], 'expires': '31.01.2027'}, NEEDS_EXPIRES + "'31.01.2027')"),
    ({'reason': WAIVER['reason'], 'expires': '2027-02-30'}, NEEDS_EXPIRES + "'2027-02-30')"),
    ({'reason': WAIVER['reason'], 'expires': 20270131}, NEEDS_EXPIRES + '20270131)'),
    ({'reason': WAIVER['reason'], 'expires': '2027-01-31\n'}, NEEDS_EXPIRES + "'2027-01-31\\n')"),
    (dict(WAIVER, covers={'vllm_ascend': '0.31.0\n'}), "the waiver's covers must map components"),
    (dict(WAIVER, until='2027-01-31'), 'the waiver has no key until (its keys are reason, expires, covers)'),
    (dict(WAIVER, covers={'image': 'x'}), "the waiver's covers must map components"),
    (dict(WAIVER, covers={'vllm_ascend': 0.31}), "the waiver's covers must map components"),
])
def test_a_waiver_without_reason_or_date_or_of_another_form_waives_nothing(waiver, problem):
    result = check_combination(vllm_ascend='0.31.0', waiver=waiver, today=TODAY)
    assert (result['supported'], result['waived']) == (False, False)
    assert any(found.startswith(problem) for found in result['waiver_problems']), result['waiver_problems']


def test_a_yaml_date_is_read_as_its_day():
    assert read_waiver(dict(WAIVER, expires=datetime.date(2027, 1, 31)), TODAY)[0]['expires'] == '2027-01-31'
    assert read_waiver(None, TODAY) == (None, [])


# --- a site's rows -------------------------------------------------------------------------------------------

SITE_950 = {'vllm_ascend': '0.30.0', 'vllm': '0.30.0', 'cann': '9.2.1', 'driver': '25.6.RC3.1'}


def test_every_built_in_row_passes_the_check_site_rows_pass():
    for index, row in enumerate(ROWS):
        assert check_row(row, 'ROWS[%d]' % index) == row


def test_a_site_row_is_completed_and_marked_as_the_sites():
    (row,) = site_rows([SITE_950])
    assert row == {'vllm_ascend': '0.30.0', 'vllm': '0.30.0', 'python': None, 'cann': '9.2.1', 'torch': None,
                   'torch_npu': None, 'triton_ascend': None, 'driver': '25.6.RC3.1', 'firmware': None,
                   'image_tag': 'v0.30.0', 'status': 'final', 'source': 'site'}
    assert site_rows([dict(SITE_950, vllm_ascend='v0.31.0rc1', source='site')])[0]['status'] == 'rc'
    assert site_rows(None) == site_rows([]) == ()


def test_a_site_row_replaces_the_built_in_row_of_its_release_and_says_so_wherever_it_is_reported():
    # Atlas 850E / 650E run vllm-ascend 0.30.0 on driver 25.6.RC3.1 (its installation guide): one row of the site.
    rows = with_site_rows([SITE_950])
    assert len(rows) == len(ROWS)
    result = check_combination(vllm_ascend='0.30.0', driver='25.6.RC3.1', rows=rows)
    assert (result['supported'], result['row']['source'], result['row']['driver_minimum']) == (True, 'site', '25.6.RC3.1')
    assert format_row(result['row'], rows).startswith('vllm-ascend 0.30.0 (site row) (vLLM 0.30.0, ')
    assert [row['source'] for row in compatibility_rows(rows) if row['vllm_ascend'] == '0.30.0'] == ['site']
    refused = check_combination(vllm_ascend='0.30.0', driver='25.5', rows=rows)
    assert refused['problems'][0].startswith('NPU driver 25.5 is too old for vllm-ascend 0.30.0 (site row) (CANN 9.2.1)')
    assert with_site_rows(None) is ROWS and with_site_rows([]) is ROWS


def test_a_site_row_of_a_new_release_is_found_and_suggested():
    rows = with_site_rows([{'vllm_ascend': '0.31.0', 'vllm': '0.31.0', 'cann': '9.2.1', 'driver': '26.2.RC1',
                            'python': '>= 3.10, < 3.13'}])
    result = check_combination(driver='26.2.rc1', python='3.12', rows=rows)
    row = result['row']
    assert (row['vllm_ascend'], row['source'], row['python']) == ('0.31.0', 'site', '>=3.10,<3.13')
    assert result['suggestion']['vllm_ascend'] == '0.31.0'
    assert versions(rows_for_driver('26.2.RC1', rows))[:2] == ['0.32.0rc1', '0.31.0']


@pytest.mark.parametrize('value, message', [
    ({'vllm_ascend': '0.31.0'}, 'ascend_compat_site_rows must be a list of rows (each a dict with vllm_ascend, vllm, '
                                'cann), not dict'),
    (['0.31.0'], 'ascend_compat_site_rows[0] must be a row: a dict with vllm_ascend, vllm, cann (and optionally the '
                 'other keys: python, torch, torch_npu, triton_ascend, driver, firmware, image_tag, status, source), '
                 'not str'),
    ([SITE_950, dict(SITE_950, cann=None)], 'ascend_compat_site_rows[1].cann is missing: every row names its CANN '
                                            'version'),
    ([dict(SITE_950, cann=9.2)], 'ascend_compat_site_rows[0].cann: 9.2 is a float, not a version string: quote it '
                                 '(YAML reads 9.10 as the number 9.1)'),
    ([dict(SITE_950, driver='latest')], "ascend_compat_site_rows[0].driver: 'latest' is not a version"),
    ([dict(SITE_950, torch='2.10.0\n')], "ascend_compat_site_rows[0].torch: '2.10.0\\n' is not a version"),
    ([dict(SITE_950, python='3.12')], "ascend_compat_site_rows[0].python: '3.12' is not a Python range such as "
                                      ">=3.10,<3.13"),
    ([dict(SITE_950, image_tag='v0.30.0 -a3')], "ascend_compat_site_rows[0].image_tag: 'v0.30.0 -a3' is not an image "
                                                "tag (letters, digits, _ . -; at most 128)"),
    ([dict(SITE_950, status='stable')], "ascend_compat_site_rows[0].status: 'stable' is none of final, post, rc"),
    ([dict(SITE_950, hdk='26.2.RC1')], "ascend_compat_site_rows[0] has no key hdk (a row's keys are vllm_ascend, vllm, "
                                       "python, cann, torch, torch_npu, triton_ascend, driver, firmware, image_tag, "
                                       "status, source)"),
    ([dict(SITE_950, source='upstream docs')], "ascend_compat_site_rows[0].source: a site row's source is site (given "
                                               "or left out), not 'upstream docs'"),
    ([SITE_950, dict(SITE_950, vllm_ascend='v0.30.0')], 'ascend_compat_site_rows[1].vllm_ascend: vllm-ascend 0.30.0 '
                                                        'has a row already, ascend_compat_site_rows[0]: keep one'),
])
def test_a_malformed_site_row_is_refused_naming_the_variable_and_the_row(value, message):
    with pytest.raises(ValueError) as raised:
        with_site_rows(value)
    assert str(raised.value).startswith(message), str(raised.value)


# --- the image variants --------------------------------------------------------------------------------------

@pytest.mark.parametrize('image, expected', [
    ('quay.io/ascend/vllm-ascend:v0.30.0', {'release': '0.30.0', 'suffix': '', 'hardware': '910B'}),
    ('quay.io/ascend/vllm-ascend:v0.23.0-a3-openeuler',
     {'release': '0.23.0', 'suffix': '-a3-openeuler', 'hardware': '910_93'}),
    ('quay.io/ascend/vllm-ascend:v0.32.0rc1-310p', {'release': '0.32.0rc1', 'suffix': '-310p', 'hardware': '310P'}),
    # The 950DT image: -950dt in upstream's documentation, -a5 in the workflow that pushes it.
    ('quay.io/ascend/vllm-ascend:v0.30.0-950dt', {'release': '0.30.0', 'suffix': '-950dt', 'hardware': '950'}),
    ('quay.io/ascend/vllm-ascend:v0.30.0-950dt-openeuler',
     {'release': '0.30.0', 'suffix': '-950dt-openeuler', 'hardware': '950'}),
    ('quay.io/ascend/vllm-ascend:v0.30.0-a5', {'release': '0.30.0', 'suffix': '-a5', 'hardware': '950'}),
    ('quay.io/ascend/vllm-ascend:v0.30.0-a5-openeuler@sha256:' + 'a' * 64,
     {'release': '0.30.0', 'suffix': '-a5-openeuler', 'hardware': '950'}),
    ('quay.io/ascend/vllm-ascend:main-a3', None),
    ('quay.io/ascend/vllm-ascend:v0.30.0-a9', None),
    ('docker.io/library/vllm-ascend:v0.30.0', None),
    (None, None),
])
def test_an_image_names_its_release_and_the_npus_it_is_built_for(image, expected):
    assert image_variant(image) == expected


def test_both_spellings_of_the_950dt_images_are_variants_with_their_sources():
    assert {'-950dt', '-950dt-openeuler', '-a5', '-a5-openeuler'} <= set(_compatibility_rows.IMAGE_SUFFIXES)
    assert set(_compatibility_rows.IMAGE_HARDWARE) == set(_compatibility_rows.IMAGE_SUFFIXES)
    source = open(_compatibility_rows.__file__, encoding='utf-8').read()
    assert 'docs/source/installation.md lines 329-330' in source
    assert 'schedule_image_build_and_push.yaml lines 131 and 134' in source


# --- a site's rows from upstream's table ---------------------------------------------------------------------

def test_the_rows_of_a_newer_table_are_printed_as_the_site_variable_and_read_back():
    yaml = pytest.importorskip('yaml', reason='PyYAML is the controller\'s: the hosts\' Pythons need not have it')
    result = policy_site_rows(MIRROR, 'vLLM-HUST/vllm-ascend-hust at 4edb35a0d2078a3f84d7e9312f536a4b6d8a6b53')
    assert (result['rows'], result['problems']) == ([], [])
    assert result['unchanged'] == ['0.23.0.post1', '0.23.0', '0.18.0', '0.13.0', '0.11.0', '0.9.1', '0.7.3.post1',
                                   '0.7.3']
    assert result['text'].endswith('ascend_compat_site_rows: []\n')
    with_rc = policy_site_rows(MIRROR, include_rc=True)
    assert with_rc['rows'][0] == {'vllm_ascend': '0.26.0rc1', 'vllm': '0.26.0', 'python': '>=3.10,<3.13',
                                  'cann': '9.1.0', 'torch': '2.10.0', 'torch_npu': '2.10.0.post4',
                                  'triton_ascend': '3.2.2'}
    read_back = yaml.safe_load(with_rc['text'])['ascend_compat_site_rows']
    assert read_back == with_rc['rows']
    assert [row['source'] for row in site_rows(read_back)] == ['site'] * len(read_back)


def test_a_changed_row_keeps_the_collections_driver_and_says_what_changed():
    edited = MIRROR.replace('| v0.23.0     | v0.23.0           | >= 3.10, < 3.13 | 9.1.0 ',
                            '| v0.23.0     | v0.23.0           | >= 3.10, < 3.13 | 9.1.1 ')
    result = policy_site_rows(edited)
    assert result['rows'] == [{'vllm_ascend': '0.23.0', 'vllm': '0.23.0', 'python': '>=3.10,<3.13', 'cann': '9.1.1',
                               'torch': '2.10.0', 'torch_npu': '2.10.0.post4', 'triton_ascend': '3.2.2',
                               'driver': '26.0.RC1'}]
    assert "  # differs from the collection's row: cann 9.1.0 -> 9.1.1; its driver 26.0.RC1 kept\n" in result['text']


def test_a_file_without_the_table_is_refused():
    with pytest.raises(ValueError, match='no "Release compatibility matrix" heading'):
        policy_site_rows('# README\n')
