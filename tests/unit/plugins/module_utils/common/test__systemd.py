# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one systemctl show parser and the one unit-name rule of the collection."""

from __future__ import annotations

import re

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _systemd

# systemctl show of a service and the docker engine (systemd 252, Debian 12), trimmed to the properties asked.
TWO_UNITS = '''Id=vllm.service
LoadState=loaded
ActiveState=activating
SubState=auto-restart
NRestarts=3
Result=exit-code
MainPID=0

Id=docker.service
LoadState=not-found
ActiveState=inactive
SubState=dead
NRestarts=[not set]
MainPID=
'''


def test_blocks_are_parsed_with_numbers_and_unknown_numbers_as_none():
    service, engine = _systemd.parse_show(TWO_UNITS)
    assert service == {'Id': 'vllm.service', 'LoadState': 'loaded', 'ActiveState': 'activating',
                       'SubState': 'auto-restart', 'NRestarts': 3, 'Result': 'exit-code', 'MainPID': 0}
    assert engine['NRestarts'] is None and engine['MainPID'] is None and engine['LoadState'] == 'not-found'


def test_one_unit_and_noise():
    assert _systemd.parse_show_one('ActiveState=active\nnoise without equals\nMainPID=42\n') == {
        'ActiveState': 'active', 'MainPID': 42}
    assert _systemd.parse_show_one('') == {}
    assert _systemd.parse_show(None) == []
    # A value holding "=" keeps it.
    assert _systemd.parse_show_one('Environment=A=1 B=2\n') == {'Environment': 'A=1 B=2'}


@pytest.mark.parametrize('name', ['vllm', 'vllm.service', 'vllm-prod_2', 'vllm@0.service', 'a:b', 'x' * 255])
def test_unit_names_systemd_allows(name):
    assert _systemd.unit_name_problem(name) is None


@pytest.mark.parametrize('name, words', [
    ('-H root@host', 'starts with "-"'),
    ('--all', 'starts with "-"'),
    ('', 'empty'),
    (None, 'empty'),
    ('.hidden', 'starts with "."'),
    ('vllm service', "' '"),
    ('vllm;reboot', "';'"),
    ('a/../etc', "'/'"),
    ('x' * 256, 'longer than 255'),
])
def test_names_that_are_not_units_are_refused_with_the_reason(name, words):
    assert words in _systemd.unit_name_problem(name)


def test_the_units_go_after_the_double_dash():
    assert _systemd.show_argv('/bin/systemctl', ['vllm.service', 'docker.service'], ['Id', 'MainPID']) == [
        '/bin/systemctl', 'show', '--property=Id,MainPID', '--', 'vllm.service', 'docker.service']
    with pytest.raises(ValueError, match='starts with "-"'):
        _systemd.show_argv('systemctl', ['-H host'], ['Id'])


def test_service_unit_completes_a_service_name():
    assert _systemd.service_unit('vllm') == 'vllm.service'
    assert _systemd.service_unit('vllm.service') == 'vllm.service'
    assert _systemd.service_unit('ray-head.timer') == 'ray-head.timer'
    with pytest.raises(ValueError):
        _systemd.service_unit('--help')


@pytest.mark.parametrize('text, version', [
    ('systemd 252 (252.22-1~deb12u1)\n+PAM +AUDIT +SELINUX\n', 252),
    ('systemd 239 (239-78.el8)\n', 239),
    ('  systemd 249\n', 249),
    ('', None), ('command not found', None), ('systemd x', None),
])
def test_the_version_is_the_first_lines_number(text, version):
    assert _systemd.parse_version(text) == version


# ------------------------------------------------------------------------------------------ environment files
# The one writer and the one reader of EnvironmentFile=: every value the writer takes reads back as itself, by the
# reader and (where this machine has systemd-analyze) by systemd itself; what it cannot write faithfully it refuses.

PRINTABLE = ''.join(chr(code) for code in range(32, 127))
# Deterministic hostile values: every printable ASCII character alone, twice, at each end and between letters; the
# characters each quoting scheme treats specially, in runs; blanks at both ends; non-ASCII text.
HOSTILE_VALUES = (
    list(PRINTABLE)
    + [character * 2 for character in PRINTABLE]
    + ['a%sb' % character for character in PRINTABLE]
    + ['%sa%s' % (character, character) for character in PRINTABLE]
    + [PRINTABLE, PRINTABLE[::-1], '', ' ', '  lead', 'trail  ', ' both ', 'a b  c', '\\', '\\\\', '"', '""', "'",
       "''", '\\"', '"\\', 'a\\', '\\a', '\\n', '\\\n'.strip(), '$HOME', '${HOME}', '$(id)', '`id`', '# not a comment',
       '; nor this', '=', '==', 'a=b=c', 'x"y\'z\\w$v`u#t;s', 'ünïcödé €', '日本語 キー', 'sk-' + '\\"$`' * 8]
)


def _random_values(count=300, seed=32):
    import random
    rng = random.Random(seed)
    alphabet = PRINTABLE + '\\"\'$`#; ' * 4 + 'é€'
    return [''.join(rng.choice(alphabet) for dummy in range(rng.randint(1, 40))) for dummy in range(count)]


# The two forms every systemd version reads alike (the double-quoted escapes changed between versions; an unquoted
# backslash never did).
VERSION_PROOF_LINE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*=("[^"\\\x00-\x1f\x7f]*"|(\\[\x20-\x7e]|[A-Za-z0-9_.,:/+=@%-]|[^\x00-\x7f])*)\Z')


@pytest.mark.parametrize('value', HOSTILE_VALUES + _random_values())
def test_every_value_written_reads_back_as_itself_in_a_form_every_systemd_reads_alike(value):
    text = _systemd.env_file_text({'VLLM_API_KEY': value, 'A': '1', 'Z': value[::-1]})
    assert text.endswith('\n') and text.count('\n') == 3
    assert all(VERSION_PROOF_LINE.match(line) for line in text.splitlines()), text
    assert _systemd.parse_env_file(text) == {'A': '1', 'VLLM_API_KEY': value, 'Z': value[::-1]}


@pytest.mark.parametrize('value, line', [
    ('expandable_segments:True', 'K="expandable_segments:True"'),
    ('it is $HOME `x` #;', 'K="it is $HOME `x` #;"'),
    ('', 'K=""'),
    ('a"b', 'K=a\\"b'),
    ('a\\b', 'K=a\\\\b'),
    (' x"\\ ', 'K=\\ x\\"\\\\\\ '),
    ('p@ss:w/o+r=d,%.-_"', 'K=p@ss:w/o+r=d,%.-_\\"'),
])
def test_a_value_is_double_quoted_unless_it_holds_a_quote_or_backslash_then_escaped_unquoted(value, line):
    # Double quotes around a value without " or \ read the same in every systemd (and match what the role wrote
    # before, so an upgrade changes no environment file); any other value is unquoted, each special character after
    # a backslash, which every systemd version (and a POSIX shell) reads as that character.
    assert _systemd.env_assignment('K', value) == line


def test_the_lines_are_in_dictsort_order():
    assert _systemd.env_file_text({'b': '1', 'A': '2', 'C': '3'}) == 'A="2"\nb="1"\nC="3"\n'
    assert _systemd.env_file_text({}) == ''


@pytest.mark.parametrize('code', list(range(0, 32)) + [127] + list(range(128, 160)) + [0xd800, 0xdcff])
def test_a_value_with_a_control_character_is_refused_without_showing_it(code):
    value = 'secret-key-%sx' % chr(code)
    with pytest.raises(ValueError) as raised:
        _systemd.env_file_text({'VLLM_API_KEY': value})
    assert str(raised.value) == 'the value of VLLM_API_KEY holds a control character or a byte that is not UTF-8'
    assert 'secret' not in str(raised.value)


@pytest.mark.parametrize('name, value, message', [
    ('1X', 'v', "'1X' is not a variable name"), ('A-B', 'v', "'A-B' is not a variable name"),
    ('', 'v', "'' is not a variable name"), ('A B', 'v', "'A B' is not a variable name"),
    ('A=B', 'v', "'A=B' is not a variable name"), (None, 'v', 'None is not a variable name'),
    ('A\n', 'v', "'A\\n' is not a variable name"), ('K', 5, 'the value of K is a int, not a string'),
    ('K', None, 'the value of K is a NoneType, not a string'),
])
def test_a_name_or_value_that_cannot_be_written_is_refused(name, value, message):
    assert _systemd.env_value_problem(name, value).startswith(message)
    with pytest.raises(ValueError):
        _systemd.env_file_text({name: value})


def test_the_environment_must_be_a_mapping():
    with pytest.raises(ValueError, match='mapping'):
        _systemd.env_file_text(['A=1'])


# What systemd makes of files it did not get from the writer (src/basic/env-file.c; systemd 254 and later).
READ_CASES = [
    ('A=1\nB=2\n', {'A': '1', 'B': '2'}),
    ('A=1', {'A': '1'}),
    ('# c\n; c\n  # indented\nA=1\n', {'A': '1'}),
    ('A=1 # not a comment\n', {'A': '1 # not a comment'}),
    ('  A  =   spaced out   \n', {'A': 'spaced out'}),
    ('A=\\ kept\\ \n', {'A': ' kept '}),
    ('A="  kept  "\n', {'A': '  kept  '}),
    ("A='no \\escape $here'\n", {'A': 'no \\escape $here'}),
    ('A="\\"\\\\\\`\\$"\n', {'A': '"\\`$'}),
    ('A="\\a\\n\\x"\n', {'A': '\\a\\n\\x'}),
    ('A=\\a\\n\\x\n', {'A': 'anx'}),
    ('A="multi\nline"\n', {'A': 'multi\nline'}),
    ('A="contin\\\nued"\n', {'A': 'continued'}),
    ('A=contin\\\nued\n', {'A': 'continued'}),
    ('A="a"b"c"\n', {'A': 'ab"c"'}),
    ('A="a" b\n', {'A': 'ab'}),
    ('A=a "b"\n', {'A': 'a "b"'}),
    ('A=1\nA=2\n', {'A': '2'}),
    ('A=\n', {'A': ''}),
    ('A=""\n', {'A': ''}),
    ('A\nB=2\n', {'B': '2'}),
    ('export A=1\n', {}),
    ('1A=1\nA-B=2\n', {}),
    ('A=1\r\nB=2\r\n', {'A': '1', 'B': '2'}),
    ('# comment \\\nA=1\n', {'A': '1'}),
    ('A="unterminated\n', {'A': 'unterminated\n'}),
    ('', {}),
]


@pytest.mark.parametrize('text, values', READ_CASES)
def test_the_reader_reads_as_systemd_does(text, values):
    assert _systemd.parse_env_file(text) == values


# ---------------------------------------------------------------------------- against systemd on this machine
# systemd-analyze evaluates ConditionOSRelease= against the file $SYSTEMD_OS_RELEASE names, which systemd parses with
# the same state machine as an EnvironmentFile=; the fnmatch operator $= with each character escaped compares a
# value exactly. Several conditions in one call must all hold.

def _condition(name, value):
    pattern = ''.join('[ ]' if char == ' ' else '\\' + char if ord(char) < 128 else char for char in value)
    return 'ConditionOSRelease=%s$="%s"' % (name, pattern.replace('\\', '\\\\').replace('"', '\\"').replace('%', '%%'))


def _systemd_reads(tmp_path, text, values):
    """Whether systemd reads every name of ``values`` in ``text`` as its value (None: this machine cannot tell)."""
    import os
    import shutil
    import subprocess
    analyze = shutil.which('systemd-analyze')
    if analyze is None:
        return None
    path = tmp_path / 'os-release'
    path.write_text(text, encoding='utf-8')
    completed = subprocess.run([analyze, 'condition'] + [_condition(name, value) for name, value in values.items()],
                               env=dict(os.environ, SYSTEMD_OS_RELEASE=str(path)), capture_output=True, text=True,
                               check=False)
    return completed.returncode == 0


@pytest.fixture
def systemd_reads(tmp_path):
    """systemd's own reading, where this machine's systemd-analyze reads a test os-release (systemd 250 and later):
    the names of ``values`` systemd does not read as their values in ``text``."""
    probe = 'ID=kunpeng-probe\n'
    if _systemd_reads(tmp_path, probe, {'ID': 'kunpeng-probe'}) is not True or \
            _systemd_reads(tmp_path, probe, {'ID': 'kunpeng-probf'}) is not False:
        pytest.skip('systemd-analyze does not read $SYSTEMD_OS_RELEASE here')

    def misread(text, values):
        if _systemd_reads(tmp_path, text, values):
            return []
        return [name for name, value in values.items() if not _systemd_reads(tmp_path, text, {name: value})]
    return misread


def test_systemd_reads_every_value_written_as_itself(systemd_reads):
    # Empty values are left out: the condition cannot compare with nothing.
    values = dict(('K%d' % number, value) for number, value in enumerate(HOSTILE_VALUES + _random_values()) if value)
    text = _systemd.env_file_text(values)
    assert [(name, values[name]) for name in systemd_reads(text, values)] == []
    # The comparison is exact: one character more, or one less, is another value.
    for name in sorted(values)[::25]:
        assert systemd_reads(text, {name: values[name] + 'x'}) == [name]
        assert len(values[name]) < 2 or systemd_reads(text, {name: values[name][1:]}) == [name]


@pytest.mark.parametrize('text, values', [case for case in READ_CASES if all(case[1].values())
                                          and '# comment \\' not in case[0]])
def test_systemd_reads_the_odd_files_as_the_reader_does(systemd_reads, text, values):
    # The comment ending in a backslash is left out: before systemd 254 it swallows the next line.
    assert systemd_reads(text, values) == []
