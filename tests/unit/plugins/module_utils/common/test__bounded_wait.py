# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The count of a bounded wait, shared by the NPU wait and the group's port wait."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _bounded_wait


@pytest.mark.parametrize('timeout, interval, tries', [(0, 2, 1), (1, 2, 2), (2, 2, 2), (3, 2, 3), (120, 2, 61),
                                                      (120, 7, 19)])
def test_tries_for(timeout, interval, tries):
    assert _bounded_wait.tries_for(timeout, interval) == tries


def test_tries_for_refuses_a_zero_interval_and_a_negative_timeout():
    with pytest.raises(ValueError, match='interval must be more than 0'):
        _bounded_wait.tries_for(10, 0)
    with pytest.raises(ValueError, match='timeout must be 0 seconds or more'):
        _bounded_wait.tries_for(-1, 2)
