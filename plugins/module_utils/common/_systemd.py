# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

systemd for the whole collection: the one check of a unit name, the one ``systemctl show`` command line (the unit
names after ``--``, so that a name can never be read as an option) and the one parser of its output, the one
way to read a unit's journal a batch at a time (after the cursor of the last batch), and the one writer and the one
reader of an environment file (``EnvironmentFile=``), so that what a role writes for a service is read back as
systemd gives it to the service. Standard library only.
"""

from __future__ import annotations

import re

# The characters systemd allows in a unit name (systemd.unit(5): ASCII letters, digits, ":", "-", "_", ".", "\",
# and "@" for templates), and its length limit.
_UNIT_CHARACTERS = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@')
UNIT_NAME_MAX = 255
UNIT_SUFFIXES = ('.service', '.socket', '.target', '.timer', '.mount', '.path', '.slice', '.scope', '.device',
                 '.swap', '.automount')
# Properties whose value is a number (systemd prints [not set] or an empty value for some when unknown).
INTEGER_PROPERTIES = frozenset(('NRestarts', 'MainPID', 'ExecMainPID', 'ExecMainStatus', 'MemoryCurrent',
                                'TasksCurrent', 'StartLimitBurst'))


def unit_name_problem(name, what='unit name'):
    """Why ``name`` is not a systemd unit name (or a service name that ``.service`` completes), None when it is."""
    if not isinstance(name, str) or not name:
        return 'the %s is empty' % what
    if len(name) > UNIT_NAME_MAX:
        return 'the %s is longer than %d characters' % (what, UNIT_NAME_MAX)
    if name.startswith('-'):
        return 'the %s %r starts with "-", which systemd tools would read as an option' % (what, name)
    if name.startswith('.'):
        return 'the %s %r starts with "."' % (what, name)
    bad = sorted(set(character for character in name if character not in _UNIT_CHARACTERS))
    if bad:
        return 'the %s %r holds %s, which systemd does not allow in a unit name (letters, digits, ":", "-", "_", ".", ' \
               '"\\" and "@" only)' % (what, name, ', '.join(repr(character) for character in bad))
    return None


def service_unit(name):
    """The unit of service ``name``: ``vllm`` -> ``vllm.service``; a name with a unit suffix is kept.
    ValueError when it is not a unit name."""
    problem = unit_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name if name.endswith(UNIT_SUFFIXES) else name + '.service'


def show_argv(systemctl, units, properties):
    """``systemctl show`` of ``properties`` for ``units``, the units after ``--``. ValueError on a bad unit name."""
    for unit in units:
        problem = unit_name_problem(unit)
        if problem:
            raise ValueError(problem)
    return [systemctl, 'show', '--property=' + ','.join(properties), '--'] + list(units)


# The first systemd with LoadCredential= (how a native service gets its TLS key without the file opened to its account).
CREDENTIALS_SINCE = 247


def parse_version(text):
    """systemd's major version from ``systemctl --version`` (its first line: ``systemd 252 (252.22-1~deb12u1)``);
    None when the text does not say it."""
    match = re.match(r'\s*systemd\s+([0-9]+)\b', text or '')
    return int(match.group(1)) if match else None


def _value(key, value):
    if key in INTEGER_PROPERTIES:
        try:
            return int(value)
        except ValueError:
            return None
    return value


def parse_show(text):
    """``systemctl show`` output of one or more units (blocks separated by blank lines) as a list of dicts, the
    INTEGER_PROPERTIES as integers (None when systemd printed no number, as ``[not set]``)."""
    blocks = []
    block = {}
    for line in (text or '').splitlines():
        if not line.strip():
            if block:
                blocks.append(block)
                block = {}
            continue
        key, sep, value = line.partition('=')
        if sep:
            key = key.strip()
            block[key] = _value(key, value.strip())
    if block:
        blocks.append(block)
    return blocks


def parse_show_one(text):
    """The properties of the one unit ``systemctl show`` printed, as a dict ({} for no output)."""
    blocks = parse_show(text)
    merged = {}
    for block in blocks:
        merged.update(block)
    return merged


# ------------------------------------------------------------------------------------------------------- journal

# How journalctl --show-cursor prints the cursor of the last entry, after the entries.
JOURNAL_CURSOR_PREFIX = '-- cursor: '


def journal_argv(journalctl, unit, since_epoch=None, cursor=None, max_lines=None):
    """``journalctl`` reading ``unit``'s lines after ``cursor`` (or since ``since_epoch``, seconds), message text
    only, with the cursor of the last line printed last; at most ``max_lines`` when given. ValueError on a bad unit
    name (journalctl's --unit takes no ``--``: the name is checked instead)."""
    problem = unit_name_problem(unit)
    if problem:
        raise ValueError(problem)
    where = ['--after-cursor=' + cursor] if cursor else ['--since=@%d' % int(since_epoch or 0)]
    argv = [journalctl, '--unit=' + unit] + where + ['--output=cat', '--show-cursor', '--quiet', '--no-pager']
    return argv + (['--lines=%d' % max_lines] if max_lines is not None else [])


def split_journal_cursor(stdout):
    """(the message lines, the cursor journalctl printed after them or None) of journal_argv's output."""
    lines = (stdout or '').splitlines()
    if lines and lines[-1].startswith(JOURNAL_CURSOR_PREFIX):
        return lines[:-1], lines[-1][len(JOURNAL_CURSOR_PREFIX):].strip() or None
    return lines, None


def journal_is_empty(rc, stdout, stderr):
    """journalctl with --quiet exits 1 and prints nothing when the unit has no entry in the range: not an error."""
    return rc == 1 and not (stdout or '').strip() and not (stderr or '').strip()


# ---------------------------------------------------------------------------------------------- environment file
#
# systemd reads an EnvironmentFile= with one state machine (src/basic/env-file.c, parse_env_file_internal) whose
# double-quoted escapes changed over the versions the supported systems run: the oldest take any character after a
# backslash literally, later ones unescaped only \" (keeping "\\" as two backslashes), the current ones (Debian 12's
# 252) unescape \" \\ \` \$ and keep any other backslash; a comment ending in a backslash swallowed the next line
# before 254. What every version reads alike is an unquoted value with a backslash before each special character (the
# character itself, whatever it is) and a double-quoted value holding neither " nor \. The writer writes only those two
# forms (and no comment); the reader is the state machine of systemd 254 and later, which agrees with every older one
# on them, so that a value read back is the value systemd gives the service.

_ENV_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
# Characters an unquoted value may hold without a backslash: none that any systemd, or a shell sourcing the file,
# reads as anything but itself.
_ENV_PLAIN = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,:/+=@%')
_ENV_WHITESPACE = ' \t\n\r'
_ENV_NEWLINE = '\n\r'
# The characters systemd 250 and later unescape in a double-quoted value (SHELL_NEED_ESCAPE); any other keeps its
# backslash.
_ENV_DOUBLE_QUOTE_ESCAPES = '"\\`$'


def env_value_problem(name, value):
    """Why ``name=value`` cannot be written to an environment file, None when it can: ``name`` must be a variable
    name (letters, digits and _, not first a digit) and ``value`` a string without control characters (systemd drops
    an assignment with one, and a newline would end the line). The value is never shown: it may be a secret."""
    if not isinstance(name, str) or not _ENV_NAME.match(name):
        return '%r is not a variable name (letters, digits and _, not first a digit)' % (name,)
    if not isinstance(value, str):
        return 'the value of %s is a %s, not a string' % (name, type(value).__name__)
    for character in value:
        code = ord(character)
        if code < 32 or 127 <= code <= 159 or 0xd800 <= code <= 0xdfff:
            return 'the value of %s holds a control character or a byte that is not UTF-8' % name
    return None


def env_assignment(name, value):
    """The line (without its newline) that gives ``name`` the value ``value`` in an environment file: double-quoted
    when the value holds neither " nor \\ (every systemd reads it literally), else unquoted with a backslash before
    each character that is not plainly itself. ValueError (env_value_problem) when it cannot be written."""
    problem = env_value_problem(name, value)
    if problem:
        raise ValueError(problem)
    if '"' not in value and '\\' not in value:
        return '%s="%s"' % (name, value)
    return '%s=%s' % (name, ''.join(character if character in _ENV_PLAIN or ord(character) > 127
                                    else '\\' + character for character in value))


def env_file_text(values):
    """The assignments of ``values`` (name -> value), one a line in name order (as Jinja's dictsort orders them:
    case-insensitively), each line ended. ValueError naming the first variable that cannot be written."""
    if not isinstance(values, dict):
        raise ValueError('the environment must be a mapping of variable names to values, not a %s'
                         % type(values).__name__)
    return ''.join(env_assignment(name, value) + '\n'
                   for name, value in sorted(values.items(), key=lambda item: str(item[0]).lower()))


# Long: systemd's EnvironmentFile= reader as one state machine (name, value, quotes, escapes, continuations), kept
# whole like the parser it copies, so that each state can be read against systemd's.
def parse_env_file(text):
    """The variables an environment file's ``text`` gives a service (name -> value), read as systemd reads
    ``EnvironmentFile=``: comments (# or ; first on a line), whitespace around names and unquoted values, single
    quotes (no escapes), double quotes (\\" \\\\ \\` \\$ unescaped, any other backslash kept), a backslash before any
    character of an unquoted value, a backslash before a newline continuing the line, the last assignment of a name
    winning. An assignment whose name systemd would not take is left out, as systemd leaves it out."""
    values = {}
    state = 'pre_key'
    key, value = [], []
    # Where trailing whitespace of the name and of an unquoted value begins (systemd cuts both there), None: none.
    key_blank = value_blank = None

    def push(chomp):
        name = ''.join(key if key_blank is None else key[:key_blank])
        text_value = ''.join(value if not chomp or value_blank is None else value[:value_blank])
        if _ENV_NAME.match(name):
            values.pop(name, None)
            values[name] = text_value

    for character in text or '':
        if state == 'pre_key':
            if character in '#;':
                state = 'comment'
            elif character not in _ENV_WHITESPACE:
                state, key, key_blank = 'key', [character], None
        elif state == 'key':
            if character in _ENV_NEWLINE:
                state = 'pre_key'
            elif character == '=':
                state, value, value_blank = 'pre_value', [], None
            else:
                if character not in _ENV_WHITESPACE:
                    key_blank = None
                elif key_blank is None:
                    key_blank = len(key)
                key.append(character)
        elif state == 'pre_value':
            if character in _ENV_NEWLINE:
                push(False)
                state = 'pre_key'
            elif character == "'":
                state = 'single_quote'
            elif character == '"':
                state = 'double_quote'
            elif character == '\\':
                state = 'value_escape'
            elif character not in _ENV_WHITESPACE:
                state = 'value'
                value.append(character)
        elif state == 'value':
            if character in _ENV_NEWLINE:
                push(True)
                state = 'pre_key'
            elif character == '\\':
                state, value_blank = 'value_escape', None
            else:
                if character not in _ENV_WHITESPACE:
                    value_blank = None
                elif value_blank is None:
                    value_blank = len(value)
                value.append(character)
        elif state == 'value_escape':
            state = 'value'
            if character not in _ENV_NEWLINE:
                value.append(character)
        elif state == 'single_quote':
            if character == "'":
                state = 'pre_value'
            else:
                value.append(character)
        elif state == 'double_quote':
            if character == '"':
                state = 'pre_value'
            elif character == '\\':
                state = 'double_quote_escape'
            else:
                value.append(character)
        elif state == 'double_quote_escape':
            state = 'double_quote'
            if character in _ENV_DOUBLE_QUOTE_ESCAPES:
                value.append(character)
            elif character != '\n':
                value += ['\\', character]
        elif state == 'comment':
            if character == '\\':
                state = 'comment_escape'
            elif character in _ENV_NEWLINE:
                state = 'pre_key'
        else:  # comment_escape: since systemd 254 a newline still ends the comment
            state = 'pre_key' if character in _ENV_NEWLINE else 'comment'
    if state in ('pre_value', 'value', 'value_escape', 'single_quote', 'double_quote', 'double_quote_escape'):
        push(state == 'value')
    return values
