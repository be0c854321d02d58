# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The compatibility set (the rows of vllm-ascend's versioning policy) and the checks against it."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils import _compatibility
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._compatibility import (
    ROWS,
    SOURCE,
    check_combination,
    compatibility_rows,
    describe_row,
    driver_minimum,
    format_row,
    python_in_range,
    rows_for_driver,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._version import is_ascend_version

ROW_KEYS = {'vllm_ascend', 'vllm', 'python', 'cann', 'torch', 'torch_npu', 'driver', 'firmware', 'image_tag', 'source'}

# The table of the reference (vllm-ascend versioning_policy.md), as printed there: vllm-ascend, vLLM, Python, CANN,
# torch / torch_npu, HDK driver recommended ('—' = unknown).
REFERENCE_TABLE = """
| v0.23.0 | v0.23.0 | >=3.10,<3.13 | 9.1.0 | 2.10.0 / 2.10.0.post4 | 26.0.RC1 |
| v0.18.0 | v0.18.0 | >=3.10,<3.12 | 8.5.1 | 2.9.0 / 2.9.0.post1 | — |
| v0.13.0 | v0.13.0 | >=3.10,<3.12 | 8.5.0 | 2.8.0 / 2.8.0.post2 | 25.5 |
| v0.11.0 | v0.11.0 | >=3.9,<3.12 | 8.3.RC2 | 2.7.1 / 2.7.1.post1 | — |
| v0.9.1 | v0.9.1 | >=3.9,<3.12 | 8.2.RC1 | 2.5.1 / 2.5.1.post1 | — |
| v0.7.3 | v0.7.3 | >=3.9,<3.12 | 8.1.RC1 | 2.5.1 / 2.5.1 | >= 24.1.RC1 |
"""

DRIVER_NOTE = 'a CANN newer than the driver supports is the most reported vllm-ascend failure'


def reference_rows():
    rows = []
    for line in REFERENCE_TABLE.strip().splitlines():
        vllm_ascend, vllm, python, cann, torches, driver = [cell.strip() for cell in line.strip('|').split('|')]
        torch, torch_npu = [part.strip() for part in torches.split('/')]
        rows.append({'vllm_ascend': vllm_ascend[1:], 'vllm': vllm[1:], 'python': python, 'cann': cann, 'torch': torch,
                     'torch_npu': torch_npu, 'driver': None if driver == '—' else driver.lstrip('>= '),
                     'firmware': None, 'image_tag': vllm_ascend, 'source': SOURCE})
    return rows


def versions(rows, key='vllm_ascend'):
    return [row[key] for row in rows]


# --- the data ------------------------------------------------------------------------------------------------

def test_rows_are_the_reference_table_and_only_it():
    assert list(ROWS) == reference_rows()


def test_every_row_has_the_documented_keys_and_readable_values():
    for row in ROWS:
        assert set(row) == ROW_KEYS
        for key in ('vllm_ascend', 'vllm', 'cann', 'torch', 'torch_npu'):
            assert is_ascend_version(row[key]), (row['vllm_ascend'], key)
        assert row['driver'] is None or is_ascend_version(row['driver'])
        assert row['firmware'] is None
        assert python_in_range('3.10', row['python']) in (True, False)
        assert row['image_tag'] == 'v' + row['vllm_ascend']
        assert 'versioning_policy.md' in row['source']
    assert len(set(versions(ROWS))) == len(ROWS)


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
        ('0.23.0', '26.0.RC1', '0.23.0'),
        ('0.18.0', '25.5', '0.13.0'),      # CANN 8.5.1: at least what CANN 8.5.0 needed
        ('0.13.0', '25.5', '0.13.0'),
        ('0.11.0', '24.1.RC1', '0.7.3'),
        ('0.9.1', '24.1.RC1', '0.7.3'),
        ('0.7.3', '24.1.RC1', '0.7.3'),
    ]


def test_a_row_without_any_older_recommendation_has_no_minimum():
    row = dict(ROWS[-1], driver=None)
    assert driver_minimum(row, (row,)) == (None, None)
    assert describe_row(row, (row,))['driver_minimum'] is None


def test_compatibility_rows_are_described_newest_first():
    rows = compatibility_rows()
    assert versions(rows) == ['0.23.0', '0.18.0', '0.13.0', '0.11.0', '0.9.1', '0.7.3']
    assert rows[0] == dict(ROWS[0], image='quay.io/ascend/vllm-ascend:v0.23.0', driver_minimum='26.0.RC1',
                           driver_minimum_from='0.23.0')


@pytest.mark.parametrize('driver, expected', [
    ('26.0.RC1', ['0.23.0', '0.18.0', '0.13.0', '0.11.0', '0.9.1', '0.7.3']),
    ('26.0.rc1', ['0.23.0', '0.18.0', '0.13.0', '0.11.0', '0.9.1', '0.7.3']),
    ('25.5.1', ['0.18.0', '0.13.0', '0.11.0', '0.9.1', '0.7.3']),
    ('25.5', ['0.18.0', '0.13.0', '0.11.0', '0.9.1', '0.7.3']),
    ('25.5.rc1', ['0.11.0', '0.9.1', '0.7.3']),
    ('24.1.rc1', ['0.11.0', '0.9.1', '0.7.3']),
    ('23.0.rc3', []),
])
def test_rows_for_driver(driver, expected):
    assert versions(rows_for_driver(driver)) == expected


def test_rows_for_driver_rejects_what_is_not_a_version():
    with pytest.raises(ValueError) as raised:
        rows_for_driver('latest')
    assert str(raised.value) == "NPU driver 'latest' is not a version such as 24.1.RC1"


def test_a_new_row_is_found_wherever_it_is_added():
    new = {'vllm_ascend': '0.25.0', 'vllm': '0.25.0', 'python': '>=3.10,<3.14', 'cann': '9.2.0', 'torch': '2.11.0',
           'torch_npu': '2.11.0', 'driver': None, 'firmware': None, 'image_tag': 'v0.25.0', 'source': 'test'}
    rows = ROWS[:3] + (new,) + ROWS[3:]
    assert versions(compatibility_rows(rows))[:2] == ['0.25.0', '0.23.0']
    assert driver_minimum(new, rows) == ('26.0.RC1', ROWS[0])
    result = check_combination(vllm_ascend='0.25.0', python='3.13', driver='26.0.RC1', rows=rows)
    assert (result['supported'], result['row']['vllm_ascend'], result['suggestion']['vllm_ascend']) == \
        (True, '0.25.0', '0.25.0')


def test_format_row_names_every_component():
    rows = compatibility_rows()
    assert format_row(ROWS[0]) == ('vllm-ascend 0.23.0 (vLLM 0.23.0, Python >=3.10,<3.13, CANN 9.1.0, torch 2.10.0, '
                                   'torch_npu 2.10.0.post4, NPU driver >= 26.0.RC1, image quay.io/ascend/vllm-ascend:v0.23.0)')
    assert 'NPU driver >= 25.5 (inferred)' in format_row(ROWS[1])
    assert format_row(rows[1]) == format_row(ROWS[1])
    lonely = dict(ROWS[-1], driver=None)
    assert 'no recommended driver' in format_row(lonely, (lonely,))


# --- check_combination ---------------------------------------------------------------------------------------

def test_a_whole_row_is_supported():
    result = check_combination(vllm_ascend='v0.13.0', vllm='0.13.0', cann='8.5.0', torch='2.8.0', torch_npu='2.8.0.post2',
                               python='3.11.9', driver='25.5.0')
    assert result == {'supported': True, 'row': describe_row(ROWS[2]), 'problems': [],
                      'suggestion': describe_row(ROWS[1])}


def test_versions_as_the_host_prints_them_match():
    result = check_combination(vllm='0.9.1+empty', torch='2.5.1+cpu', torch_npu='2.5.1.POST1', cann='8.2.rc1')
    assert (result['supported'], result['row']['vllm_ascend']) == (True, '0.9.1')


def test_nothing_given_is_the_newest_row_without_a_suggestion():
    assert check_combination() == {'supported': True, 'row': describe_row(ROWS[0]), 'problems': [], 'suggestion': None}


def test_empty_strings_are_not_given():
    assert check_combination(cann='', driver=' ') == check_combination()


def test_torch_alone_picks_the_newest_row_holding_it():
    assert check_combination(torch='2.5.1')['row']['vllm_ascend'] == '0.9.1'


def test_a_row_ruled_out_by_the_driver_is_returned_with_the_problem_and_the_fitting_row():
    result = check_combination(cann='9.1.0', driver='25.5')
    assert result == {
        'supported': False,
        'row': describe_row(ROWS[0]),
        'problems': ['NPU driver 25.5 is older than 26.0.RC1, the driver recommended for vllm-ascend 0.23.0 (CANN 9.1.0): '
                     + DRIVER_NOTE],
        'suggestion': describe_row(ROWS[1]),
    }


def test_an_inferred_minimum_says_where_it_comes_from():
    result = check_combination(vllm_ascend='0.18.0', driver='24.1.rc1')
    assert result['problems'] == [
        'NPU driver 24.1.rc1 is older than 25.5, the driver vllm-ascend 0.13.0 recommends for its older CANN 8.5.0 '
        '(the source recommends none for vllm-ascend 0.18.0, CANN 8.5.1): ' + DRIVER_NOTE]
    assert result['suggestion']['vllm_ascend'] == '0.11.0'


def test_the_newest_candidate_row_that_fits_is_the_row():
    # torch 2.5.1 is in two rows; Python 3.9 and the driver rule out neither, so the newer one is the row.
    result = check_combination(torch='2.5.1', python='3.9', driver='24.1.RC1')
    assert (result['supported'], result['row']['vllm_ascend']) == (True, '0.9.1')


def test_python_outside_the_row():
    result = check_combination(vllm_ascend='0.18.0', python='3.12')
    assert result['problems'] == ['Python 3.12 is outside >=3.10,<3.12, the Python range of vllm-ascend 0.18.0']
    assert (result['supported'], result['row']['vllm_ascend'], result['suggestion']) == (False, '0.18.0', None)


def test_mismatching_components_are_named_against_the_vllm_ascend_row():
    result = check_combination(vllm_ascend='v0.18.0', cann='9.1.0', torch_npu='2.9.0.post1', python='3.12')
    assert result == {
        'supported': False,
        'row': None,
        'problems': ['CANN 9.1.0 does not belong with vllm-ascend 0.18.0, whose row has CANN 8.5.1',
                     'Python 3.12 is outside >=3.10,<3.12, the Python range of vllm-ascend 0.18.0'],
        'suggestion': None,
    }


def test_without_vllm_ascend_the_row_matching_most_components_is_the_reference():
    result = check_combination(vllm='0.13.0', cann='8.5.0', torch='2.9.0')
    assert result['problems'] == ['torch 2.9.0 does not belong with vllm-ascend 0.13.0, whose row has torch 2.8.0']


def test_unknown_versions_list_the_known_ones():
    result = check_combination(cann='7.0.0')
    assert result['problems'] == ['CANN 7.0.0 is in no row of the compatibility set (known: 9.1.0, 8.5.1, 8.5.0, '
                                  '8.3.RC2, 8.2.RC1, 8.1.RC1)']
    result = check_combination(vllm_ascend='0.5.0', cann='8.5.0')
    assert result['problems'] == ['vllm-ascend 0.5.0 is in no row of the compatibility set (known: 0.23.0, 0.18.0, '
                                  '0.13.0, 0.11.0, 0.9.1, 0.7.3)']


def test_a_driver_older_than_every_row():
    result = check_combination(driver='23.0.rc3')
    assert result == {'supported': False, 'row': None, 'suggestion': None, 'problems': [
        'NPU driver 23.0.rc3 is older than the driver minimum of every row of the compatibility set; the lowest is '
        '24.1.RC1, of vllm-ascend 0.11.0 (CANN 8.3.RC2)']}


def test_a_python_outside_every_row():
    assert check_combination(python='3.8')['problems'] == [
        'Python 3.8 is outside the Python range of every row of the compatibility set (>=3.10,<3.13, >=3.10,<3.12, '
        '>=3.9,<3.12)']


def test_a_python_and_driver_that_no_single_row_admits():
    # 3.12 needs vllm-ascend 0.23.0, which needs driver 26.0.RC1.
    result = check_combination(python='3.12', driver='25.5')
    assert result == {'supported': False, 'row': None, 'suggestion': None, 'problems': [
        'no row of the compatibility set admits both Python 3.12 and NPU driver 25.5']}


def test_the_driver_alone_gives_the_newest_fitting_row():
    result = check_combination(driver='25.5.0')
    assert (result['supported'], result['row']['vllm_ascend'], result['suggestion']['vllm_ascend']) == \
        (True, '0.18.0', '0.18.0')


def test_values_that_are_not_version_strings_are_problems_not_exceptions():
    result = check_combination(python=3.1, cann='latest', driver='24.1.rc1')
    assert result == {'supported': False, 'row': None, 'suggestion': describe_row(ROWS[3]), 'problems': [
        "CANN: 'latest' is not a version",
        'Python: 3.1 is a float, not a version string: quote it (YAML reads 3.10 as the number 3.1)']}


def test_the_rule_is_documented_where_the_rows_are():
    assert 'driver minimum' in _compatibility.__doc__
    assert 'add one dict to ``ROWS``' in _compatibility.__doc__
