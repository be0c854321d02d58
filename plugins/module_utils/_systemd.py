# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

systemd for the whole collection: the one check of a unit name, the one ``systemctl show`` command line (the unit
names after ``--``, so that a name can never be read as an option) and the one parser of its output, and the one
way to read a unit's journal a batch at a time (after the cursor of the last batch). Standard library only.
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
