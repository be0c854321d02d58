# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one cap on a module run's warnings: how many, how long, and how held-back warnings join them."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import parse_npu_smi_info
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import shorten
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import MAX_WARNINGS, WarningCap


def emitted(cap):
    messages = []
    cap.emit(messages.append)
    return messages


def test_the_first_20_are_kept_and_the_others_counted():
    cap = WarningCap()
    for number in range(25):
        cap('warning %d' % number)
    assert emitted(cap) == ['warning %d' % number for number in range(20)] + ['... and 5 more warnings']
    assert MAX_WARNINGS == 20


def test_up_to_the_limit_there_is_no_count():
    cap = WarningCap(limit=2)
    cap('one')
    cap('two')
    assert emitted(cap) == ['one', 'two']


def test_emit_reports_once():
    cap = WarningCap(limit=1)
    cap('one')
    cap('two')
    assert emitted(cap) == ['one', '... and 1 more warnings']
    assert emitted(cap) == []


def test_a_long_warning_is_cut_to_500_characters_saying_how_long_it_was():
    cap = WarningCap()
    cap('x' * 501)
    cap('y' * 500)
    assert emitted(cap) == ['x' * 500 + '... (501 characters in all)', 'y' * 500]


def test_held_back_warnings_join_within_the_limit_and_are_not_cut_twice():
    held = WarningCap(limit=3)
    for message in ('a' * 600, 'b', 'c', 'd', 'e'):
        held(message)
    cap = WarningCap(limit=3)
    cap('first')
    cap.extend(held)
    assert emitted(cap) == ['first', shorten('a' * 600), 'b', '... and 3 more warnings']


def test_megabytes_of_garbage_inside_a_table_give_21_short_warnings():
    # The case: 759,837 warnings and a 162 MB result before the cap.
    garbage = ''.join('garbage line %d %s\n' % (number, 'z' * 60) for number in range(100000))
    text = '+---+\n| NPU Name | Health |\n| Chip | Bus-Id |\n+===+\n' + garbage + '+---+\n' + 'w' * 5000000 + '\n+---+\n'
    cap = WarningCap()
    parse_npu_smi_info(text, warn=cap)
    messages = emitted(cap)
    # 100,001 lines of text inside the table, no version line, no chip row: 100,003 warnings.
    assert len(messages) == 21
    assert messages[-1] == '... and 99983 more warnings'
    assert max(len(message) for message in messages) <= 530
