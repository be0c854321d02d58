# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Numbers checked once: NaN, infinity, booleans, overflow and values out of range refused, naming the option."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS, check_number, number_problem

HOSTILE = [float('nan'), float('inf'), float('-inf'), 'nan', 'NaN', 'inf', '-Infinity', True, False, None, '', 'x',
           [1], {'a': 1}, 10 ** 400, -(10 ** 400), 1e308 * 10]


@pytest.mark.parametrize('value', HOSTILE)
def test_every_hostile_value_is_refused_naming_the_option(value):
    problem = number_problem('interval', value, above=0, maximum=MAX_SECONDS)
    assert problem and problem.startswith('interval must be a finite number above 0 and at most %d' % MAX_SECONDS)
    with pytest.raises(ValueError, match='^interval must be'):
        check_number('interval', value, above=0, maximum=MAX_SECONDS)


@pytest.mark.parametrize('value, problem', [
    (0, 'space_factor must be a finite number at least 1.0; got 0'),
    (-1, 'space_factor must be a finite number at least 1.0; got -1'),
    (0.999, 'space_factor must be a finite number at least 1.0; got 0.999'),
    (1e6, 'space_factor must be a finite number at least 1.0 and at most 100; got 1000000.0'),
])
def test_a_value_that_would_turn_a_check_off_is_refused(value, problem):
    assert number_problem('space_factor', value, minimum=1.0, maximum=100) == problem.replace(
        'at least 1.0; got', 'at least 1.0 and at most 100; got')


def test_good_values_pass_and_strings_are_read_as_their_number():
    assert number_problem('timeout', 600, minimum=1, integer=True) is None
    assert check_number('timeout', '600', minimum=1, integer=True) == 600
    assert check_number('timeout', 600.0, minimum=1, integer=True) == 600
    assert check_number('interval', '0.5', above=0) == 0.5
    assert number_problem('timeout', 1.5, minimum=1, integer=True) == 'timeout must be a whole number at least 1; got 1.5'
    assert number_problem('threshold', 1.0, minimum=0, maximum=1) is None
