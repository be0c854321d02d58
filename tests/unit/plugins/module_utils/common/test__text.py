# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The text a module returns: valid UTF-8 whatever bytes it came from, and warnings cut to a length."""

from __future__ import annotations

import os

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import replace_undecodable, shorten, texts_in


def test_names_that_are_not_utf8_are_made_printable():
    name = os.fsdecode(b'8.0.\xff')
    assert name == '8.0.\udcff'
    assert replace_undecodable({name: [name, {'path': '/a/' + name}], 'n': 1, 'none': None}) == \
        {'8.0.\ufffd': ['8.0.\ufffd', {'path': '/a/8.0.\ufffd'}], 'n': 1, 'none': None}
    assert replace_undecodable('\ud800x') == '?x'  # a surrogate that stands for no byte
    assert replace_undecodable('caf\u00e9') == 'caf\u00e9'


def test_shorten_keeps_a_text_up_to_the_limit_and_says_how_long_a_longer_one_was():
    assert shorten('x' * 500) == 'x' * 500
    assert shorten('abcdef', limit=3) == 'abc... (6 characters in all)'


def test_texts_in_finds_every_string_of_nested_keys_values_and_items():
    value = {'a': ['b', ('c', {'d': 1, 2: 'e'})], 'f': None, 'g': 3.5}
    assert sorted(texts_in(value)) == ['2', 'a', 'b', 'c', 'd', 'e', 'f', 'g']
    assert list(texts_in('plain')) == ['plain'] and list(texts_in(7)) == []
