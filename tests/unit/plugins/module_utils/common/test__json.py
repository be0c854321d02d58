# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_json.loads: a message for every malformed, hostile or huge input."""

from __future__ import annotations

import random

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json


def test_a_document():
    assert _json.loads(b'{"a": [1, 2.5, "x", null, true]}') == {'a': [1, 2.5, 'x', None, True]}
    assert _json.loads('[[["deep but fine"]]]') == [[['deep but fine']]]
    # Brackets inside strings are no nesting.
    assert _json.loads('"' + '[' * 500 + '"') == '[' * 500


@pytest.mark.parametrize('data, message', [
    ('[' * 100000 + ']' * 100000, 'nested deeper than 64 levels'),
    ('{"a":' * 70 + '1' + '}' * 70, 'nested deeper than 64 levels'),
    ('[NaN]', 'NaN is not a JSON number'),
    ('{"x": Infinity}', 'Infinity is not a JSON number'),
    ('[-Infinity]', '-Infinity is not a JSON number'),
    ('{"x": 1e400}', '1e400 is too large for a number'),
    ('[-2.5E+999]', '-2.5E\\+999 is too large for a number'),
    (b'\xff\xfe', 'not UTF-8'),
    ('{"a": 1', 'Expecting'),
    ('', 'Expecting value'),
    ('x' * 101, 'larger than 100 bytes'),
])
def test_refused_with_a_message(data, message):
    with pytest.raises(_json.JsonError, match=message):
        _json.loads(data, max_bytes=100 if len(data) == 101 else None)


def test_nan_where_the_collection_wrote_it_from_python():
    import math
    assert math.isnan(_json.loads('[NaN]', allow_nan=True)[0])
    with pytest.raises(_json.JsonError, match='nested deeper'):
        _json.loads('[' * 100 + ']' * 100, allow_nan=True)


# --- the one scanner of JSON strings (_depth here, the comment stripper of _model_format) -------------------------

def _reference_outside(text, characters):
    """The character-by-character scan both readers had before outside_strings."""
    found, in_string, escaped = [], False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in characters:
            found.append((index, char))
    return found


@pytest.mark.parametrize('text', [
    '', '{}', '{"a": [1, {"b": "]}"}]}', '"\\"[" [', '"abc\\', '"ab\\\n#"#', '# "#" #', '"unterminated [ {',
    '\\"[', '"\\\\"[', '[["\\\\\\"]"]]', 'x"y"z#'])
def test_outside_strings_is_the_character_scan(text):
    assert list(_json.outside_strings(text, '[]{}#')) == _reference_outside(text, '[]{}#')


def test_outside_strings_on_random_text():
    chance = random.Random(7)
    for _round in range(300):
        text = ''.join(chance.choice('"\\[]{}#a\n') for _char in range(chance.randint(0, 40)))
        assert list(_json.outside_strings(text, '[]{}#')) == _reference_outside(text, '[]{}#'), repr(text)
