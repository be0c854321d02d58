# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_toml, the collection's TOML 1.0 reader for Pythons without tomllib: values written here (on every Python); the
standard library's tomllib (3.11+) as the reference for a corpus of valid and invalid documents, the real containerd
configs, and seeded random documents and mutations of them; hostile nesting and size."""

from __future__ import annotations

import datetime
import math
import os
import random

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _toml
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._toml import TomlError, loads
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES, load_fixture

CONTAINERD_FIXTURES = sorted(name for name in os.listdir(FIXTURES) if name.startswith('containerd-config.toml_'))
UTC = datetime.timezone.utc


def zone(hours, minutes=0):
    return datetime.timezone(datetime.timedelta(hours=hours, minutes=minutes))


def canonical(value):
    """``value`` with its types spelled out and its key order kept: 1, True and 1.0 differ, nan equals nan (with
    its sign), and 07:32Z differs from 08:32+01:00, which Python's own == takes for the same instant."""
    if isinstance(value, dict):
        return ('table', [(key, canonical(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ('array', [canonical(item) for item in value])
    if isinstance(value, float):
        return ('float', 'nan' if math.isnan(value) else repr(value), math.copysign(1.0, value))
    if isinstance(value, (datetime.datetime, datetime.time)):
        return (type(value).__name__, value.isoformat(), repr(value.tzinfo))
    return (type(value).__name__, value)


def unordered(value):
    """canonical(), but tables compared whatever the order of their keys."""
    if isinstance(value, dict):
        return ('table', sorted((key, unordered(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ('array', [unordered(item) for item in value])
    return canonical(value)


@pytest.fixture
def reference():
    """The standard library's reader (Python 3.11+), which every document must read as _toml reads it."""
    tomllib = pytest.importorskip('tomllib')
    try:
        tomllib.loads('a = "\\e"')
    except tomllib.TOMLDecodeError:
        return tomllib
    pytest.skip('this tomllib reads TOML 1.1, which allows what TOML 1.0 refuses')


def reads_alike(reference, text):
    """Both readers accept ``text`` with the same values, or both refuse it; the values, None when refused."""
    try:
        expected = canonical(reference.loads(text))
    except reference.TOMLDecodeError:
        expected = None
    try:
        got = canonical(loads(text))
    except TomlError:
        got = None
    assert got == expected, 'tomllib %s, _toml %s: %r' % (
        'refuses' if expected is None else 'accepts', 'refuses' if got is None else 'accepts', text)
    return got


# --------------------------------------------------------------------------------------------------------- values

EXPECTED = [
    pytest.param('', {}, id='empty'),
    pytest.param('# a comment\n\n  \t# another, indented\n', {}, id='comments-only'),
    pytest.param('key = "value"\nbare_key = 1\nbare-key = 2\n1234 = 3\n-_- = 4\n',
                 {'key': 'value', 'bare_key': 1, 'bare-key': 2, '1234': 3, '-_-': 4}, id='bare-keys'),
    pytest.param('"127.0.0.1" = 1\n"ʎǝʞ" = 2\n\'key2\' = 3\n\'quoted "value"\' = 4\n"" = 5\n"a\\tb" = 6\n',
                 {'127.0.0.1': 1, 'ʎǝʞ': 2, 'key2': 3, 'quoted "value"': 4, '': 5, 'a\tb': 6}, id='quoted-keys'),
    pytest.param('name = "Orange"\nphysical.color = "orange"\nphysical . shape="round"\nsite."google.com" = true\n',
                 {'name': 'Orange', 'physical': {'color': 'orange', 'shape': 'round'}, 'site': {'google.com': True}},
                 id='dotted-keys'),
    pytest.param('3.14159 = "pi"\ntrue = 1\ninf = 2\n', {'3': {'14159': 'pi'}, 'true': 1, 'inf': 2},
                 id='keys-that-look-like-values'),
    pytest.param(r'''str = "I'm \"quoted\".\tJos\u00E9\nSF \b\f\r\\ \U0001F600 \u0000"''' + '\n',
                 {'str': 'I\'m "quoted".\tJosé\nSF \b\f\r\\ \U0001F600 \x00'}, id='basic-string-escapes'),
    pytest.param('a = """\nRoses are red\nViolets are blue"""\n'
                 'b = """\\\n       The quick brown \\\n\n  \t fox.\\\n   """\n'
                 'c = """two "" quotes, three ""\\"."""\n'
                 'd = """"quoted""""\n'
                 'e = """ends with two quotes"""""\n'
                 'f = """tab\there \\  \t\n  and on"""\n',
                 {'a': 'Roses are red\nViolets are blue', 'b': 'The quick brown fox.', 'c': 'two "" quotes, three """.',
                  'd': '"quoted"', 'e': 'ends with two quotes""', 'f': 'tab\there and on'}, id='multi-line-basic'),
    pytest.param("winpath = 'C:\\Users\\nodejs\\templates'\nquoted = 'Tom \"Dubs\" Preston-Werner'\n"
                 "regex = '''I [dw]on't need \\d{2} apples'''\nlines = '''\nfirst\n  second\n'''\n"
                 "apos = ''''That,' she said''''\n",
                 {'winpath': 'C:\\Users\\nodejs\\templates', 'quoted': 'Tom "Dubs" Preston-Werner',
                  'regex': "I [dw]on't need \\d{2} apples", 'lines': 'first\n  second\n', 'apos': "'That,' she said'"},
                 id='literal-strings'),
    pytest.param('a = +99\nb = 42\nc = 0\nd = -17\ne = 5_349_221\nf = 1_2_3\ng = -0\nh = +0\n'
                 'i = 9223372036854775807\nj = -9223372036854775808\nk = 123456789012345678901234567890\n',
                 {'a': 99, 'b': 42, 'c': 0, 'd': -17, 'e': 5349221, 'f': 123, 'g': 0, 'h': 0, 'i': 2 ** 63 - 1,
                  'j': -2 ** 63, 'k': 123456789012345678901234567890}, id='decimal-integers'),
    pytest.param('hex = 0xDEAD_beef\noct = 0o755\nbin = 0b1101_0110\nzero = 0x0\nlead = 0x00ff\n',
                 {'hex': 0xDEADBEEF, 'oct': 0o755, 'bin': 0b11010110, 'zero': 0, 'lead': 255}, id='prefixed-integers'),
    pytest.param('a = +1.0\nb = 3.1415\nc = -0.01\nd = 5e+22\ne = 1e06\nf = -2E-2\ng = 6.626e-34\n'
                 'h = 224_617.445_991\ni = 1e1_0\nj = -0.0\nk = 0e0\nl = 1e400\n',
                 {'a': 1.0, 'b': 3.1415, 'c': -0.01, 'd': 5e22, 'e': 1e6, 'f': -0.02, 'g': 6.626e-34,
                  'h': 224617.445991, 'i': 1e10, 'j': -0.0, 'k': 0.0, 'l': float('inf')}, id='floats'),
    pytest.param('a = inf\nb = +inf\nc = -inf\nd = nan\ne = +nan\nf = -nan\n',
                 {'a': float('inf'), 'b': float('inf'), 'c': float('-inf'), 'd': float('nan'), 'e': float('nan'),
                  'f': float('-nan')}, id='special-floats'),
    pytest.param('t = true\nf = false\n', {'t': True, 'f': False}, id='booleans'),
    pytest.param('a = 1979-05-27T07:32:00Z\nb = 1979-05-27T00:32:00-07:00\nc = 1979-05-27t00:32:00.999999+05:30\n'
                 'd = 1979-05-27 07:32:00z\ne = 1979-05-27T07:32:00.123456789-00:00\nf = 2000-01-01T00:00:00.5+23:59\n',
                 {'a': datetime.datetime(1979, 5, 27, 7, 32, tzinfo=UTC),
                  'b': datetime.datetime(1979, 5, 27, 0, 32, tzinfo=zone(-7)),
                  'c': datetime.datetime(1979, 5, 27, 0, 32, 0, 999999, tzinfo=zone(5, 30)),
                  'd': datetime.datetime(1979, 5, 27, 7, 32, tzinfo=UTC),
                  'e': datetime.datetime(1979, 5, 27, 7, 32, 0, 123456, tzinfo=UTC),
                  'f': datetime.datetime(2000, 1, 1, 0, 0, 0, 500000, tzinfo=zone(23, 59))}, id='offset-date-times'),
    pytest.param('a = 1979-05-27T07:32:00\nb = 1979-05-27 00:32:00.999\nc = 1979-05-27\nd = 2000-02-29\n'
                 'e = 07:32:00\nf = 00:32:00.25\ng = 23:59:59.9999999\n',
                 {'a': datetime.datetime(1979, 5, 27, 7, 32), 'b': datetime.datetime(1979, 5, 27, 0, 32, 0, 999000),
                  'c': datetime.date(1979, 5, 27), 'd': datetime.date(2000, 2, 29), 'e': datetime.time(7, 32),
                  'f': datetime.time(0, 32, 0, 250000), 'g': datetime.time(23, 59, 59, 999999)},
                 id='local-date-times'),
    pytest.param('a = [ 1, 2, 3 ]\nb = [ [ 1, 2 ], ["a", \'b\'] ]\nc = [ 0.1, 1, "x", 1979-05-27, { n = 1 } ]\n'
                 'd = []\ne = [\n  1,  # one\n  # a comment line\n\n  2,\n]\nf = [[]]\n',
                 {'a': [1, 2, 3], 'b': [[1, 2], ['a', 'b']], 'c': [0.1, 1, 'x', datetime.date(1979, 5, 27), {'n': 1}],
                  'd': [], 'e': [1, 2], 'f': [[]]}, id='arrays'),
    pytest.param('[table-1]\nkey = "a"\n[ table-2 ]\nkey = 2\n[dog."tater.man"]\ntype.name = "pug"\n'
                 '[ j . "ʞ" . \'l\' ]\n[x.y.z.w]\n[x]\nv = 1\n',
                 {'table-1': {'key': 'a'}, 'table-2': {'key': 2}, 'dog': {'tater.man': {'type': {'name': 'pug'}}},
                  'j': {'ʞ': {'l': {}}}, 'x': {'y': {'z': {'w': {}}}, 'v': 1}}, id='tables'),
    pytest.param('[fruit]\napple.color = "red"\napple.taste.sweet = true\n[fruit.apple.texture]\nsmooth = true\n',
                 {'fruit': {'apple': {'color': 'red', 'taste': {'sweet': True}, 'texture': {'smooth': True}}}},
                 id='sub-table-of-dotted-keys'),
    pytest.param('name = { first = "Tom", last = "Preston-Werner" }\nanimal = { type.name = "pug", type.age = 3 }\n'
                 'empty = {}\nblank = { }\nnested = { a = { b = [ { c = 1 } ] } }\n',
                 {'name': {'first': 'Tom', 'last': 'Preston-Werner'}, 'animal': {'type': {'name': 'pug', 'age': 3}},
                  'empty': {}, 'blank': {}, 'nested': {'a': {'b': [{'c': 1}]}}}, id='inline-tables'),
    pytest.param('[[fruits]]\nname = "apple"\n[fruits.physical]\ncolor = "red"\n[[fruits.varieties]]\nname = "red"\n'
                 '[[fruits.varieties]]\nname = "granny"\n[[fruits]]\n[[fruits]]\nname = "banana"\n',
                 {'fruits': [{'name': 'apple', 'physical': {'color': 'red'},
                              'varieties': [{'name': 'red'}, {'name': 'granny'}]}, {}, {'name': 'banana'}]},
                 id='arrays-of-tables'),
    pytest.param('a = 1\r\nb = """x\r\ny"""\r\n[t]  # c\r\nc = \'\'\'\r\nz\r\n\'\'\'\r\nd = "\\u00e9"\r\n',
                 {'a': 1, 'b': 'x\ny', 't': {'c': 'z\n', 'd': 'é'}}, id='crlf'),
    pytest.param('a=1#no space\nb = "# not a comment" # a comment with \t tab and ünïcode\n[c]#c\n',
                 {'a': 1, 'b': '# not a comment', 'c': {}}, id='comments-after-statements'),
]


@pytest.mark.parametrize('text, expected', EXPECTED)
def test_documents_read_to_the_values_toml_gives_them(text, expected):
    assert canonical(loads(text)) == canonical(expected)


def test_the_values_are_plain_python_types():
    data = loads('t = {a = [1]}\n[[x]]\n')
    assert (type(data), type(data['t']), type(data['t']['a']), type(data['x'])) == (dict, dict, list, list)
    assert loads('z = 1979-05-27T07:32:00Z')['z'].tzinfo is UTC


@pytest.mark.parametrize('name', CONTAINERD_FIXTURES)
def test_containerd_configs_read(name):
    data = loads(load_fixture(name))
    if '_v2_' in name:
        runc = data['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes']['runc']
        assert runc['runtime_type'] == 'io.containerd.runc.v2'
        assert data['version'] == 2
    elif '_v3_' in name:
        assert data['version'] == 3
        assert data['plugins']['io.containerd.cri.v1.runtime']['containerd']['default_runtime_name'] == 'runc'
    else:
        assert data == {'disabled_plugins': ['cri']}


@pytest.mark.parametrize('text, line, column, message', [
    ('a = 1\nb = \n', 2, 5, 'the end of the line where a value was expected'),
    ('a = 1\na = 2\n', 2, 1, 'the key a is already defined'),
    ('[t]\nx = "é\x7f"\n', 2, 7, 'control character U+007F in a string'),
    ('[t]\n[t]\n', 2, 1, '[t]: the table is already defined'),
    ('[fruit]\napple.color = "red"\n[fruit.apple]\n', 3, 1, '[fruit.apple]: the table is already defined'),
    ('v = [1,\n  2 3]\n', 2, 5, "'3' in an array, where , or ] was expected"),
    ('a = 2001-02-29\n', 1, 5, '2001-02-29 is not a date'),
    ('a = 012\n', 1, 5, 'a decimal number has no leading zero'),
    ('a = "\\x41"\n', 1, 6, '\\x is no escape of TOML 1.0'),
    ('a = {b = 1}\na.c = 2\n', 2, 1, 'a.c: a is an inline table, which is complete as written'),
    ('a = []\n[[a]]\n', 2, 1, '[[a]]: the key is an array, not an array of tables'),
])
def test_errors_name_the_line_the_column_and_what_is_wrong(text, line, column, message):
    with pytest.raises(TomlError) as raised:
        loads(text)
    assert (raised.value.lineno, raised.value.colno) == (line, column)
    assert str(raised.value).startswith('line %d, column %d: %s' % (line, column, message))
    assert isinstance(raised.value, ValueError)


def test_only_text_is_read():
    with pytest.raises(TypeError):
        loads(b'a = 1')


# --------------------------------------------------------------------------------------------------------- corpus

VALID = [
    pytest.param(param.values[0], id=param.id) for param in EXPECTED
] + [
    pytest.param('apple.type = "fruit"\norange.type = "fruit"\napple.skin = "thin"\norange.skin = "thick"\n',
                 id='dotted-keys-out-of-order'),
    pytest.param('[a.b.c]\nz = 9\n[a]\nb.d = 1\n[a.b.e]\n', id='dotted-keys-into-a-table-a-header-implied'),
    pytest.param('[[a]]\n[a.b]\nx = 1\n[[a]]\n[a.b]\nx = 2\n', id='same-sub-table-in-each-array-element'),
    pytest.param('[[a.b]]\nx = 1\n[a]\nc = 2\n[[a.b]]\n', id='array-of-tables-before-its-parent-table'),
    pytest.param('[t]\na.b.c = 1\n[t.a.b.d]\ne = 2\n[[t.a.f]]\n', id='headers-below-dotted-key-tables'),
    pytest.param('[[a]]\nb.c = 1\n[[a]]\nb.c = 2\n', id='dotted-keys-in-each-array-element'),
    pytest.param('a = { b.c = 1, b.d = [1, { e = 2 }], f = {} }\n', id='dotted-keys-in-inline-tables'),
    pytest.param('a = [\n  "x", # comment\n  [ 1,\n    2 ] ,\n  { b = 1 },\n\n]\n', id='multi-line-arrays'),
    pytest.param('a = [1,#c\n2]\nb = [ # c\n]\n', id='array-comments-without-blanks'),
    pytest.param('\t[t]\n\t\tk\t=\t"v"\t\n  [[u]]  \n  k=1\n', id='tabs-and-indentation'),
    pytest.param('"a\\"b" = 1\n\'a"c\' = 2\n"\\u0061" = 3\n', id='key-quoting'),
    pytest.param('"ключ" = "значение 🚀"\nemoji = "\\U0001F680 \\u2028"\n', id='unicode'),
    pytest.param('a = """a\\\\\nb"""\nb = """x\\\r\n   y"""\nc = """\\\n"""\n', id='backslashes-ending-lines'),
    pytest.param("a = '\ttab'\nb = '''\ttab\n'''\nc = \"\\t\ttab\"\n", id='tabs-in-strings'),
    pytest.param('a = """"""\nb = \'\'\'\'\'\'\nc = """\n"""\nd = ""\ne = \'\'\n', id='empty-strings'),
    pytest.param('a = """ "x" ""x"" """\nb = \'\'\' \'x\' \'\'x\'\' \'\'\'\n', id='quotes-in-multi-line-strings'),
    pytest.param('[a.b.c.d.e.f.g.h]\nx.y.z = [[[1]], {a = {b = {c = 1}}}]\n', id='deep-as-configs-go'),
    pytest.param('a = ' + '[' * 99 + ']' * 99 + '\n', id='nested-to-the-limit'),
    pytest.param('[x]\n[x.y]\n[x.z]\n[w]\n[x.y.v]\n', id='tables-in-any-order'),
    pytest.param('a = 1979-05-27 # a date, then a comment\nb = [1979-05-27 07:32:00 , 07:32:00]\n',
                 id='dates-next-to-spaces'),
    pytest.param('a = 0.0\nb = 1_0.0_1e-0_1\nc = -1E+1_0\n', id='float-underscores'),
    pytest.param('a = 1\n\n\n\n# end', id='no-final-newline'),
    pytest.param('bin = 0b0\noct = 0o0_7\nhex = 0xa_B_c\n', id='prefixed-underscores'),
    pytest.param('site = { "google.com" = true, \'a b\' = 1, 2 = 3 }\n', id='quoted-keys-in-inline-tables'),
]

INVALID = [
    pytest.param('key = \n', id='key-without-value'),
    pytest.param('key\n', id='key-without-equals'),
    pytest.param('key =\n1\n', id='value-on-the-next-line'),
    pytest.param('first = "Tom" last = "Preston-Werner"\n', id='two-pairs-on-a-line'),
    pytest.param('= 1\n', id='empty-bare-key'),
    pytest.param('é = 1\n', id='unicode-bare-key'),
    pytest.param('"""k""" = 1\n', id='multi-line-string-key'),
    pytest.param("'''k''' = 1\n", id='multi-line-literal-key'),
    pytest.param('a == 1\n', id='equals-twice'),
    pytest.param('a..b = 1\n', id='empty-dotted-key-part'),
    pytest.param('a. = 1\n', id='trailing-dot-in-key'),
    pytest.param('"a\nb" = 1\n', id='newline-in-quoted-key'),
    pytest.param('name = "Tom"\nname = "Pradyun"\n', id='duplicate-key'),
    pytest.param('spelling = "favorite"\n"spelling" = "favourite"\n', id='duplicate-key-quoted-otherwise'),
    pytest.param('fruit.apple = 1\nfruit.apple.smooth = true\n', id='dotted-key-through-a-value'),
    pytest.param('[fruit]\napple = "red"\n[fruit]\norange = "orange"\n', id='table-defined-twice'),
    pytest.param('[a.b]\n[a]\n[a]\n', id='implied-table-defined-twice'),
    pytest.param('[fruit]\napple.color = "red"\n[fruit.apple]\n', id='header-for-a-dotted-key-table'),
    pytest.param('[fruit]\napple.taste.sweet = true\n[fruit.apple.taste]\n', id='header-for-a-nested-dotted-key-table'),
    pytest.param('a.b = 1\n[a]\n', id='header-for-a-root-dotted-key-table'),
    pytest.param('[a.b.c]\nz = 9\n[a]\nb.c.t = "x"\n', id='dotted-keys-into-a-defined-table'),
    pytest.param('[a.b]\n[a]\nb.x = 1\n', id='dotted-keys-into-a-header-table'),
    pytest.param('[a.b.c]\n[a]\nb.d = 1\n[a.b]\n', id='header-after-dotted-keys-added-to-an-implied-table'),
    pytest.param('[[t.a]]\n[t]\na.x = 1\n', id='dotted-keys-into-an-array-of-tables'),
    pytest.param('[product]\ntype = { name = "Nail" }\ntype.edible = false\n', id='dotted-key-into-an-inline-table'),
    pytest.param('a = { b = 1 }\n[a.c]\n', id='header-into-an-inline-table'),
    pytest.param('a = {}\n[a]\n', id='header-for-an-inline-table'),
    pytest.param('a = {b = {}}\n[a.b.c]\n', id='header-into-a-nested-inline-table'),
    pytest.param('fruits = []\n[[fruits]]\n', id='static-array-appended'),
    pytest.param('a = [{ b = 1 }]\n[[a]]\n', id='array-of-inline-tables-appended'),
    pytest.param('a = [{}]\n[a.b]\n', id='header-into-a-static-array'),
    pytest.param('[[fruits]]\n[[fruits.varieties]]\n[fruits.varieties]\n', id='header-for-an-array-of-tables'),
    pytest.param('[fruit.physical]\ncolor = "red"\n[[fruit]]\n', id='array-of-tables-for-a-table'),
    pytest.param('[a]\n[[a]]\n', id='array-of-tables-for-a-defined-table'),
    pytest.param('a = 1\n[a.b]\n', id='header-through-a-value'),
    pytest.param('a = 1\n[a]\n', id='header-for-a-value'),
    pytest.param('a = { b = 1, b = 2 }\n', id='duplicate-key-in-an-inline-table'),
    pytest.param('a = { b = { c = 1 }, b.d = 2 }\n', id='dotted-key-into-an-inline-table-within-one'),
    pytest.param('a = { b = 1,\n c = 2 }\n', id='newline-in-an-inline-table'),
    pytest.param('a = { b = 1, }\n', id='trailing-comma-in-an-inline-table'),
    pytest.param('a = { b = 1\n', id='unclosed-inline-table'),
    pytest.param('a = { b = 1 c = 2 }\n', id='inline-table-without-comma'),
    pytest.param('a = {b = [1}\n', id='array-closed-by-a-brace'),
    pytest.param('a = [1, 2\n', id='unclosed-array'),
    pytest.param('a = [1 2]\n', id='array-without-comma'),
    pytest.param('a = [,1]\n', id='array-leading-comma'),
    pytest.param('a = [1,,2]\n', id='array-double-comma'),
    pytest.param('a = [,]\n', id='array-of-a-comma'),
    pytest.param('a = [1, 2, =]\n', id='array-without-value'),
    pytest.param('[a\n', id='unclosed-header'),
    pytest.param('[]\n', id='empty-header'),
    pytest.param('[a] b = 1\n', id='pair-after-a-header'),
    pytest.param('[[a] ]\n', id='array-header-with-space-between-brackets'),
    pytest.param('[ [a]]\n', id='array-header-with-space-after-brackets'),
    pytest.param('[a\n.b]\n', id='header-over-two-lines'),
    pytest.param('[a.]\n', id='trailing-dot-in-header'),
    pytest.param('["a\nb"]\n', id='newline-in-a-header-key'),
    pytest.param('a = "\x01"\n', id='control-character-in-a-string'),
    pytest.param('a = "\x7f"\n', id='del-in-a-string'),
    pytest.param("a = '\x7f'\n", id='del-in-a-literal-string'),
    pytest.param('a = """\x1f"""\n', id='control-character-in-a-multi-line-string'),
    pytest.param("a = '''\x00'''\n", id='nul-in-a-multi-line-literal-string'),
    pytest.param('a = """x\ry"""\n', id='lone-cr-in-a-multi-line-string'),
    pytest.param('# \x00\n', id='nul-in-a-comment'),
    pytest.param('a = 1 # \x7f\n', id='del-in-a-comment'),
    pytest.param('a = 1\rb = 2\n', id='lone-cr-as-a-newline'),
    pytest.param('a = 1\x0b\n', id='vertical-tab-as-a-blank'),
    pytest.param('a =\u00a01\n', id='no-break-space-as-a-blank'),
    pytest.param('\ufeffa = 1\n', id='byte-order-mark'),
    pytest.param('a = "\\x41"\n', id='hex-escape-of-toml-1.1'),
    pytest.param('a = "\\e"\n', id='escape-e-of-toml-1.1'),
    pytest.param('a = "\\a"\n', id='unknown-escape'),
    pytest.param('a = "\\u12"\n', id='short-unicode-escape'),
    pytest.param('a = "\\uD800"\n', id='surrogate-escape'),
    pytest.param('a = "\\U00110000"\n', id='escape-beyond-unicode'),
    pytest.param('a = "x\\ "\n', id='blank-after-backslash-in-a-one-line-string'),
    pytest.param('a = """x\\  y\n"""\n', id='text-after-a-line-ending-backslash'),
    pytest.param('a = "x\n', id='unterminated-string'),
    pytest.param("a = 'x\n", id='unterminated-literal-string'),
    pytest.param('a = """x\n', id='unterminated-multi-line-string'),
    pytest.param("a = '''x\n", id='unterminated-multi-line-literal-string'),
    pytest.param('a = "x', id='string-cut-by-the-end'),
    pytest.param('a = """x""""""\n', id='six-quotes-closing'),
    pytest.param("a = 'it's'\n", id='apostrophe-in-a-literal-string'),
    pytest.param('a = 0123\n', id='leading-zero'),
    pytest.param('a = -012\n', id='leading-zero-signed'),
    pytest.param('a = 00.5\n', id='leading-zero-float'),
    pytest.param('a = 01e5\n', id='leading-zero-exponent-float'),
    pytest.param('a = 1__000\n', id='double-underscore'),
    pytest.param('a = _1\n', id='leading-underscore'),
    pytest.param('a = 1_\n', id='trailing-underscore'),
    pytest.param('a = 1_.5\n', id='underscore-before-the-point'),
    pytest.param('a = 1._5\n', id='underscore-after-the-point'),
    pytest.param('a = 1e_5\n', id='underscore-after-the-exponent'),
    pytest.param('a = 0x_1\n', id='underscore-after-the-prefix'),
    pytest.param('a = +0x1\n', id='signed-hex'),
    pytest.param('a = 0X1\n', id='upper-case-prefix'),
    pytest.param('a = 0o8\n', id='octal-digit-8'),
    pytest.param('a = 0b2\n', id='binary-digit-2'),
    pytest.param('a = 0x\n', id='prefix-without-digits'),
    pytest.param('a = .5\n', id='float-without-integer-part'),
    pytest.param('a = 1.\n', id='float-without-fraction-digits'),
    pytest.param('a = 1e\n', id='exponent-without-digits'),
    pytest.param('a = 1e2.5\n', id='point-after-the-exponent'),
    pytest.param('a = 1.5.3\n', id='two-points'),
    pytest.param('a = Inf\n', id='upper-case-inf'),
    pytest.param('a = nanx\n', id='text-after-nan'),
    pytest.param('a = True\n', id='upper-case-boolean'),
    pytest.param('a = yes\n', id='bare-word-value'),
    pytest.param('a = 2000-13-01\n', id='month-13'),
    pytest.param('a = 2000-02-30\n', id='february-30'),
    pytest.param('a = 2001-02-29\n', id='february-29-of-a-common-year'),
    pytest.param('a = 2000-01-00\n', id='day-0'),
    pytest.param('a = 0000-01-01\n', id='year-0'),
    pytest.param('a = 24:00:00\n', id='hour-24'),
    pytest.param('a = 2000-01-01T00:60:00\n', id='minute-60'),
    pytest.param('a = 1990-12-31T23:59:60Z\n', id='leap-second'),
    pytest.param('a = 07:32\n', id='time-without-seconds'),
    pytest.param('a = 1979-05-27T07:32Z\n', id='date-time-without-seconds'),
    pytest.param('a = 1979-05-27T07:32:00+24:00\n', id='offset-of-24-hours'),
    pytest.param('a = 1979-05-27T07:32:00+0700\n', id='offset-without-colon'),
    pytest.param('a = 1979-05-27T\n', id='date-and-t-without-time'),
    pytest.param('a = 1979-5-27\n', id='one-digit-month'),
    pytest.param('a = 07:32:00.\n', id='fraction-without-digits'),
    pytest.param('a = "x" y\n', id='text-after-a-string'),
    pytest.param('a = [] x\n', id='text-after-an-array'),
    pytest.param('a = 1979-05-27 x\n', id='text-after-a-date'),
]


@pytest.mark.parametrize('text', VALID)
def test_valid_documents_read_as_tomllib_reads_them(reference, text):
    assert canonical(loads(text)) == canonical(reference.loads(text))


@pytest.mark.parametrize('name', CONTAINERD_FIXTURES)
def test_containerd_configs_read_as_tomllib_reads_them(reference, name):
    text = load_fixture(name)
    assert canonical(loads(text)) == canonical(reference.loads(text))
    crlf = text.replace('\n', '\r\n')
    assert canonical(loads(crlf)) == canonical(reference.loads(crlf))


@pytest.mark.parametrize('text', INVALID)
def test_invalid_documents_are_refused(text):
    with pytest.raises(TomlError):
        loads(text)


@pytest.mark.parametrize('text', INVALID)
def test_tomllib_refuses_the_invalid_documents_too(reference, text):
    with pytest.raises(reference.TOMLDecodeError):
        reference.loads(text)


def test_the_corpus_covers_a_rule_per_invalid_document():
    assert len(INVALID) >= 60
    assert len({param.id for param in INVALID}) == len({param.values[0] for param in INVALID}) == len(INVALID)


# --------------------------------------------------------------------------------------------------------- random

BARE_KEYS = ['a', 'b', 'key', 'x-y', 'x_y', '1', '007', 'true', 'inf', 'nan', '-', '_', 'A1']
QUOTED_KEYS = ['a b', 'a.b', '', 'é', 'ключ', 'quo"te', "apos'trophe", 'back\\slash', 'tab\tkey', '#', '=', '[x]',
               'new\nline', '\x7f', '🚀']
STRING_CHARACTERS = (list('abcxyz XYZ019') * 3
                     + ['\t', '"', "'", '\\', '#', '\n', '\r', '\x00', '\x1f', '\x7f', 'é', '🚀', '\u2028', '=', '[', ']', '{',
                        '}', ',', '.'])
MUTATION_CHARACTERS = '[]{}=,."\'#\n\\ \t0123456789aeEfxob_-+:TtZz\r\x7f\x00é'


class RandomDocument:
    """Random nested data, and a TOML text of it in varied styles: tables by headers (before or after their own
    keys), dotted keys or inline; arrays of tables by [[headers]] or inline; keys bare or quoted either way; values
    in every notation TOML has for them; blanks, comments, multi-line arrays and CRLF newlines."""

    def __init__(self, rng):
        self.rng = rng

    # ----- data

    def data(self, depth=0):
        rng = self.rng
        table = {}
        for dummy in range(rng.randint(0, 4 if depth < 3 else 2)):
            key = rng.choice(BARE_KEYS + QUOTED_KEYS)
            roll = rng.random()
            if roll < 0.55 or depth >= 3:
                table[key] = self.scalar_or_array(depth)
            elif roll < 0.85:
                table[key] = self.data(depth + 1)
            else:
                table[key] = [self.data(depth + 1) for dummy in range(rng.randint(1, 3))]
        return table

    def scalar_or_array(self, depth):
        rng = self.rng
        if rng.random() < 0.15 and depth < 5:
            return [self.scalar_or_array(depth + 1) for dummy in range(rng.randint(0, 3))]
        return rng.choice([self.integer, self.real, self.boolean, self.string, self.string, self.date_time])()

    def integer(self):
        rng = self.rng
        return rng.choice([0, 1, -1, rng.randint(-10 ** 6, 10 ** 6), rng.randint(0, 255), 2 ** 63 - 1, -2 ** 63,
                           rng.randint(0, 10 ** 30)])

    def real(self):
        rng = self.rng
        return rng.choice([0.0, -0.0, 1.5, -2.25, 1e10, 3.14159, 6.02e23, 1.5e-7, 1e300, float('inf'), float('-inf'),
                           float('nan'), rng.uniform(-1e6, 1e6), rng.random()])

    def boolean(self):
        return self.rng.random() < 0.5

    def string(self):
        return ''.join(self.rng.choice(STRING_CHARACTERS) for dummy in range(self.rng.randint(0, 12)))

    def date_time(self):
        rng = self.rng
        kind = rng.choice(['offset', 'local', 'date', 'time'])
        microsecond = rng.choice([0, 0, 500000, 123456, rng.randint(0, 999999)])
        if kind == 'time':
            return datetime.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), microsecond)
        date = datetime.date(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28))
        if kind == 'date':
            return date
        value = datetime.datetime(date.year, date.month, date.day, rng.randint(0, 23), rng.randint(0, 59),
                                  rng.randint(0, 59), microsecond)
        if kind == 'offset':
            minutes = rng.choice([0, 60, -420, 330, 23 * 60 + 59, -(23 * 60 + 59), rng.randint(-1439, 1439)])
            value = value.replace(tzinfo=datetime.timezone(datetime.timedelta(minutes=minutes)))
        return value

    # ----- text

    def text(self, data):
        self.lines = []
        self.body([], data, root=True)
        text = '\n'.join(self.lines) + self.rng.choice(['\n', '', '\n\n'])
        return text.replace('\n', '\r\n') if self.rng.random() < 0.1 else text

    def blank(self):
        return self.rng.choice(['', ' ', ' ', '  ', '\t'])

    def comment(self):
        if self.rng.random() < 0.15:
            return self.blank() + '#' + self.rng.choice(['', ' a comment', ' é # "quoted" \t', '#'])
        return ''

    def emit(self, line):
        if self.rng.random() < 0.1:
            self.lines.append(self.blank() + self.comment())
        self.lines.append(self.blank() + line + self.blank() + self.comment())

    def key(self, key):
        rng = self.rng
        if key and all(char.isascii() and (char.isalnum() or char in '_-') for char in key) and rng.random() < 0.8:
            return key
        if "'" not in key and not any(_toml._is_control(char) for char in key) and rng.random() < 0.4:
            return "'%s'" % key
        return self.basic(key)

    def dotted(self, keys):
        dot = '.' if self.rng.random() < 0.8 else self.blank() + '.' + self.blank()
        return dot.join(self.key(key) for key in keys)

    def basic(self, value):
        rng = self.rng
        out = []
        for char in value:
            if char in '"\\':
                out.append('\\' + char)
            elif char in '\b\t\n\f\r' and rng.random() < 0.7:
                out.append({'\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r'}[char])
            elif _toml._is_control(char) or rng.random() < 0.05:
                short = ord(char) < 0x10000 and rng.random() < 0.7
                out.append('\\u%04x' % ord(char) if short else '\\U%08X' % ord(char))
            else:
                out.append(char)
        return '"%s"' % ''.join(out)

    def string_text(self, value):
        rng = self.rng
        controls = any(_toml._is_control(char) for char in value.replace('\n', ''))
        style = rng.random()
        if style < 0.2 and "'" not in value and not controls and '\n' not in value:
            return "'%s'" % value
        if style < 0.35 and "'''" not in value and not value.endswith("'") and not controls and '\r' not in value:
            return "'''%s%s'''" % ('\n' if value.startswith('\n') or rng.random() < 0.5 else '', value)
        if style < 0.55 and '\r' not in value:
            body = []
            for index, char in enumerate(value):
                if char == '"':
                    body.append('\\"' if rng.random() < 0.5 else '\\u0022')
                elif char == '\\':
                    body.append('\\\\')
                elif char != '\n' and _toml._is_control(char):
                    body.append('\\u%04X' % ord(char))
                else:
                    body.append(char)
                    if char == ' ' and value[index + 1:index + 2] not in (' ', '\t', '\n') and rng.random() < 0.2:
                        # A line-ending backslash: it and the blanks and newlines after it read as nothing.
                        body.append('\\' + self.blank() + '\n' + self.blank() + '\n' * rng.randint(0, 1) + self.blank())
            leading_newline = value.startswith('\n') or rng.random() < 0.5
            return '"""%s%s"""' % ('\n' if leading_newline else '', ''.join(body))
        return self.basic(value)

    def value(self, value):
        rng = self.rng
        if isinstance(value, bool):
            return 'true' if value else 'false'
        if isinstance(value, int):
            return self.integer_text(value)
        if isinstance(value, float):
            return self.float_text(value)
        if isinstance(value, str):
            return self.string_text(value)
        if isinstance(value, datetime.datetime):
            text = value.isoformat(rng.choice('Tt '))
            if text.endswith('+00:00') and rng.random() < 0.5:
                text = text[:-6] + rng.choice('Zz')
            return text
        if isinstance(value, (datetime.date, datetime.time)):
            return value.isoformat()
        if isinstance(value, dict):
            return '{%s%s%s}' % (self.blank(), (',' + self.blank()).join(
                '%s%s=%s%s' % (self.dotted([key]), self.blank(), self.blank(), self.value(item))
                for key, item in value.items()), self.blank())
        items = [self.value(item) for item in value]
        if rng.random() < 0.3 and items:
            trailing_comma = rng.random() < 0.5
            lines = ['[']
            for number, item in enumerate(items):
                comma = ',' if trailing_comma or number < len(items) - 1 else ''
                lines.append('  %s%s%s' % (item, comma, self.comment()))
            return '\n'.join(lines) + '\n]'
        return '[%s%s%s]' % (self.blank(), (',' + self.blank()).join(items), rng.choice(['', ',']) if items else '')

    def integer_text(self, value):
        rng = self.rng
        style = rng.random()
        if value >= 0 and style < 0.3:
            prefix, digits = rng.choice([('0x', '%x'), ('0x', '%X'), ('0o', '%o'), ('0b', '{:b}')])
            text = digits.format(value) if '{' in digits else digits % value
            return prefix + self.underscored(text)
        sign = '+' if value >= 0 and rng.random() < 0.2 else ''
        text = str(value)
        if text.startswith('-'):
            return '-' + self.underscored(text[1:])
        return sign + self.underscored(text)

    def underscored(self, digits):
        if len(digits) < 2 or self.rng.random() < 0.6:
            return digits
        return ''.join(char + ('_' if index < len(digits) - 1 and self.rng.random() < 0.3 else '')
                       for index, char in enumerate(digits))

    def float_text(self, value):
        rng = self.rng
        if math.isnan(value) or math.isinf(value):
            text = repr(value)
            return '+' + text if rng.random() < 0.3 and not text.startswith('-') else text
        text = repr(value)
        if 'e' not in text and rng.random() < 0.3:
            text = text + 'e0'
        if rng.random() < 0.3:
            text = text.replace('e', 'E')
        return text

    def body(self, path, table, root=False, headed=False):
        """The lines of ``table`` at ``path``: its header (none for the root), its keys, then the tables below."""
        rng = self.rng
        later = []
        own = []
        for key, value in table.items():
            if isinstance(value, dict) and value and rng.random() < 0.6:
                later.append(('table', key, value))
            elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value) \
                    and rng.random() < 0.7:
                later.append(('array', key, value))
            elif isinstance(value, dict) and value and rng.random() < 0.5 and self.dottable(value):
                for keys, item in self.flatten([key], value):
                    own.append((keys, item))
            else:
                own.append(([key], value))
        # A table may come after the tables below it, but the root and array elements, whose header is written, first.
        before = not root and not headed and later and rng.random() < 0.3
        if before:
            self.below(path, later)
        # A table with no keys of its own but tables below it needs no header: they imply it.
        if not root and not headed and (own or not later or before or rng.random() < 0.7):
            self.emit('[%s]' % self.dotted(path))
        for keys, value in own:
            self.emit('%s%s=%s%s' % (self.dotted(keys), self.blank(), self.blank(), self.value(value)))
        if not before:
            self.below(path, later)

    def below(self, path, later):
        for kind, key, value in later:
            if kind == 'table':
                self.body(path + [key], value)
            else:
                for item in value:
                    self.emit('[[%s]]' % self.dotted(path + [key]))
                    self.body(path + [key], item, headed=True)

    def dottable(self, table):
        return all(not isinstance(value, dict) or (value and self.dottable(value)) for value in table.values())

    def flatten(self, keys, table):
        for key, value in table.items():
            if isinstance(value, dict):
                yield from self.flatten(keys + [key], value)
            else:
                yield keys + [key], value


def mutated(rng, text):
    """``text`` with one character deleted, inserted, doubled or replaced, or one line deleted, doubled or moved."""
    if not text:
        return rng.choice(MUTATION_CHARACTERS)
    pos = rng.randrange(len(text))
    how = rng.randrange(7)
    if how == 0:
        return text[:pos] + text[pos + 1:]
    if how == 1:
        return text[:pos] + rng.choice(MUTATION_CHARACTERS) + text[pos:]
    if how == 2:
        return text[:pos] + text[pos] + text[pos:]
    if how == 3:
        return text[:pos] + rng.choice(MUTATION_CHARACTERS) + text[pos + 1:]
    lines = text.splitlines(True)
    line = rng.randrange(len(lines))
    if how == 4:
        del lines[line]
    elif how == 5:
        lines.insert(line, lines[line])
    else:
        lines.insert(rng.randrange(len(lines) + 1), lines.pop(line))
    return ''.join(lines)


SEEDS = range(10)
DOCUMENTS_PER_SEED = 300


@pytest.mark.parametrize('seed', SEEDS)
def test_random_documents_and_mutations_read_as_tomllib_reads_them(reference, seed):
    rng = random.Random(seed)
    writer = RandomDocument(rng)
    refused = 0
    for dummy in range(DOCUMENTS_PER_SEED):
        data = writer.data()
        text = writer.text(data)
        # The generator writes valid TOML of the data: both readers give it back.
        assert reads_alike(reference, text) is not None, text
        assert unordered(loads(text)) == unordered(data), text
        for dummy in range(2):
            text = mutated(rng, text)
            if reads_alike(reference, text) is None:
                refused += 1
    # The mutations test refusals as well as acceptance.
    assert DOCUMENTS_PER_SEED // 4 < refused < DOCUMENTS_PER_SEED * 2


@pytest.mark.parametrize('seed', range(4))
def test_mutations_of_the_corpus_and_the_containerd_configs_read_as_tomllib_reads_them(reference, seed):
    rng = random.Random(1000 + seed)
    documents = [param.values[0] for param in VALID] + [load_fixture(name) for name in CONTAINERD_FIXTURES]
    for text in documents:
        for dummy in range(8 if len(text) < 2000 else 25):
            reads_alike(reference, mutated(rng, text))
            reads_alike(reference, mutated(rng, mutated(rng, text)))


def random_statement(rng):
    """A header, an array-of-tables header or a key/value pair over the keys a, b and c: few enough that tables,
    dotted keys, inline tables and arrays run into each other in every way."""
    path = '.'.join(rng.choice('abc') for dummy in range(rng.randint(1, 3)))
    roll = rng.random()
    if roll < 0.25:
        return '[%s]' % path
    if roll < 0.4:
        return '[[%s]]' % path
    return '%s = %s' % (path, rng.choice(['1', '{}', '{a = 1}', '{b.c = 1}', '[]', '[{}]', '{a.b = 1, a.c = 2}',
                                          '{a = {b = 1}, a.c = 1}']))


def test_random_uses_of_the_same_keys_are_refused_as_tomllib_refuses_them(reference):
    rng = random.Random(7)
    outcomes = set()
    for dummy in range(3000):
        text = '\n'.join(random_statement(rng) for dummy in range(rng.randint(1, 7)))
        outcomes.add(reads_alike(reference, text) is None)
    assert outcomes == {True, False}


# --------------------------------------------------------------------------------------------------------- hostile

DEEP = 100000


@pytest.mark.parametrize('text', [
    pytest.param('a = ' + '[' * DEEP + ']' * DEEP, id='arrays'),
    pytest.param('a = ' + '[' * DEEP, id='unclosed-arrays'),
    pytest.param('a = ' + '{a = ' * DEEP + '1' + '}' * DEEP, id='inline-tables'),
    pytest.param('a = ' + '[{a = ' * DEEP, id='arrays-and-inline-tables'),
    pytest.param('.'.join(['a'] * DEEP) + ' = 1', id='dotted-key'),
    pytest.param('[%s]' % '.'.join(['a'] * DEEP), id='header'),
    pytest.param('[[%s]]' % '.'.join(['a'] * DEEP), id='array-header'),
])
def test_deep_nesting_is_a_toml_error_not_a_recursion_error(text):
    with pytest.raises(TomlError) as raised:
        loads(text)
    assert 'nested more than %d levels deep' % _toml.MAX_DEPTH in str(raised.value)


@pytest.mark.parametrize('text', ['[' * DEEP, '[[' * DEEP, '{' * DEEP, 'a = ' + '{' * DEEP, '"' * DEEP, "'''" * DEEP])
def test_deep_brackets_that_nest_nothing_are_a_toml_error(text):
    with pytest.raises(TomlError):
        loads(text)


def test_the_nesting_limit_counts_key_parts_arrays_and_inline_tables():
    for text in ('a = ' + '[' * 100 + ']' * 100, '[%s]\nz = {y = [1]}' % '.'.join(['k'] * 97),
                 '.'.join(['k'] * 100) + ' = 1'):
        loads(text)
    for text in ('a = ' + '[' * 101 + ']' * 101, 'a = ' + '[' * 100 + '1' + ']' * 100,
                 '[%s]\nz = {y = [1]}' % '.'.join(['k'] * 98), '.'.join(['k'] * 101) + ' = 1'):
        with pytest.raises(TomlError):
            loads(text)


FIVE_MB = 5 * 1024 * 1024


def large_config():
    sections = []
    size = 0
    number = 0
    while size < FIVE_MB:
        section = ('[servers."s-%d"]\nip = "10.0.%d.%d" # a comment\nports = [ 8000, 8_001, 0x1F41 ]\nenabled = true\n'
                   'weight = 0.5e-1\nstarted = 1979-05-27T07:32:00.5+08:00\npath = \'C:\\bin\'\n'
                   'note = """\nline one \\\n  still one\nline two"""\nlabels = { zone = "a", rack.row = 3 }\n'
                   '[[servers."s-%d".disks]]\nsize = 1_000_000\n\n'
                   % (number, number // 256 % 256, number % 256, number))
        sections.append(section)
        size += len(section)
        number += 1
    return ''.join(sections), number


def test_a_5_mb_config_is_read():
    text, count = large_config()
    data = loads(text)
    assert len(data['servers']) == count
    assert data['servers']['s-%d' % (count - 1)]['disks'] == [{'size': 1000000}]
    assert data['servers']['s-0']['note'] == 'line one still one\nline two'


ONE_MB = 1024 * 1024


@pytest.mark.parametrize('text, check', [
    pytest.param('a = "%s"' % ('x' * FIVE_MB), lambda data: len(data['a']) == FIVE_MB, id='string'),
    pytest.param('#%s\na = 1' % ('#' * FIVE_MB), lambda data: data == {'a': 1}, id='comment'),
    pytest.param('%sa = 1' % (' \t' * (FIVE_MB // 2)), lambda data: data == {'a': 1}, id='blanks'),
    pytest.param('\n' * FIVE_MB, lambda data: data == {}, id='empty-lines'),
    pytest.param('a = 0x%s' % '_'.join(['f'] * (FIVE_MB // 2)), lambda data: data['a'] == 16 ** (FIVE_MB // 2) - 1,
                 id='number'),
    # Many short items: a megabyte of them shows that each costs no more than a constant.
    pytest.param('a = """%s"""' % ('ab"\n' * (ONE_MB // 4)), lambda data: len(data['a']) == ONE_MB, id='quotes'),
    pytest.param("a = '''%s'''" % ("''x" * (ONE_MB // 3)), lambda data: len(data['a']) == ONE_MB // 3 * 3,
                 id='apostrophes'),
    pytest.param('a = [%s]' % ('1,' * (ONE_MB // 2)), lambda data: len(data['a']) == ONE_MB // 2, id='array'),
    pytest.param('a = [%s]' % ('\n' * FIVE_MB), lambda data: data == {'a': []}, id='newlines-in-an-array'),
])
def test_megabytes_of_one_thing_are_read(text, check):
    assert check(loads(text))
