# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

A strict reader of TOML 1.0.0 (https://toml.io/en/v1.0.0), written from the specification, for the Pythons of the
managed hosts that have no ``tomllib`` (3.9, 3.10). ``loads(text)`` gives what ``tomllib.loads`` gives for a valid
document - the same types and values, date-times with a ``datetime.timezone`` - and raises TomlError, whose message
names the line, the column and what is wrong, for any text TOML 1.0 does not allow:

* strings: basic and literal, on one line or multi-line, with exactly the escapes of TOML 1.0 and the line-ending
  backslash; a control character other than tab (and newline in multi-line strings) is refused, in comments too;
* numbers: decimal, hexadecimal, octal and binary integers, floats with fraction and exponent, inf and nan, signed
  where TOML allows, with underscores only between digits and no leading zeros;
* date-times: offset and local date-times (T, t or a space between date and time), local dates and local times,
  checked against the calendar; seconds are required; as with tomllib, digits beyond microseconds are cut off and
  a leap second (60) is refused, since Python's datetime has no place for either;
* tables: a table is defined once - by its [header], by the dotted keys of one table section, or as an inline table
  - and an inline table or an array written as a value is never added to; no key is defined twice;
* newlines are LF or CRLF, whitespace is space and tab; a CRLF in a multi-line string reads as LF.

Hostile text cannot exhaust the stack: a value more than MAX_DEPTH levels below the root (each part of its key,
and each array it is in, one level) is a TomlError. The text is read once, front to back, in time linear in its length.
Standard library only, Python 3.9 and later.
"""

from __future__ import annotations

import datetime
import re

# How far below the root a value may sit; containerd's config.toml nests 7 levels at most.
MAX_DEPTH = 100

_BLANKS = re.compile(r'[ \t]*')
# Between statements, and where arrays allow newlines (and comments) between their values.
_BLANKS_AND_NEWLINES = re.compile(r'(?:[ \t\n]|\r\n)*')
_BARE_KEY = re.compile(r'[A-Za-z0-9_-]+')
# The longest runs of what a comment or string may hold as it is: no control character but tab (and LF when
# multi-line), no quote that ends it, no backslash that starts an escape.
_COMMENT = re.compile(r'#[^\x00-\x08\x0a-\x1f\x7f]*')
_BASIC_RUN = re.compile(r'[^"\\\x00-\x08\x0a-\x1f\x7f]*')
_MULTILINE_BASIC_RUN = re.compile(r'[^"\\\x00-\x08\x0b-\x1f\x7f]*')
_LITERAL_RUN = re.compile(r"[^'\x00-\x08\x0a-\x1f\x7f]*")
_MULTILINE_LITERAL_RUN = re.compile(r"[^'\x00-\x08\x0b-\x1f\x7f]*")
_QUOTE_RUNS = {'"': re.compile(r'"+'), "'": re.compile(r"'+")}
_ESCAPES = {'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', '"': '"', '\\': '\\'}
_HEX_DIGITS = {'u': re.compile(r'[0-9A-Fa-f]{4}'), 'U': re.compile(r'[0-9A-Fa-f]{8}')}
_LINE_ENDING_BACKSLASH = re.compile(r'[ \t]*(?:\n|\r\n)')
_DIGITS = frozenset('0123456789')

_DATE_TIME = re.compile(r'([0-9]{4})-([0-9]{2})-([0-9]{2})'
                        r'(?:[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?'
                        r'(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))?)?')
_TIME = re.compile(r'([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?')
# Each repetition takes one digit, after at most one underscore: no backtracking however long the number.
_NUMBER = re.compile(r'''
    0x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*
  | 0o[0-7](?:_?[0-7])*
  | 0b[01](?:_?[01])*
  | (?P<integer>[+-]?(?:0|[1-9](?:_?[0-9])*))
    (?P<fraction>\.[0-9](?:_?[0-9])*)?
    (?P<exponent>[eE][+-]?[0-9](?:_?[0-9])*)?
''', re.VERBOSE)
_SPECIAL_FLOAT = re.compile(r'[+-]?(?:inf|nan)')
_BASES = {'x': 16, 'o': 8, 'b': 2}

# What made a table, which decides what may still add to it. The tables and arrays written as values (inline) are
# in no such map: they are complete as written.
_IMPLICIT = 'implicit'  # created as a parent of a [header]'s table: its own [header] may still come
_DEFINED = 'defined'  # by its [header] or [[header]], or by the dotted keys of an earlier table section
_ARRAY_OF_TABLES = 'array of tables'
# A table dotted keys created (or first added to) is ('dotted', n): the dotted keys of table section n may add to it.
_DOTTED = 'dotted'


class TomlError(ValueError):
    """The text is not TOML 1.0: ``msg`` says what is wrong, at line ``lineno``, column ``colno`` (both from 1)."""

    def __init__(self, msg, text, pos):
        lineno = text.count('\n', 0, pos) + 1
        colno = pos - text.rfind('\n', 0, pos)
        super().__init__('line %d, column %d: %s' % (lineno, colno, msg))
        self.msg = msg
        self.pos = pos
        self.lineno = lineno
        self.colno = colno


def loads(text):
    """The TOML document ``text`` (a str) as a dict; TomlError when it is not TOML 1.0."""
    if not isinstance(text, str):
        raise TypeError('TOML is read from a str, not from %s' % type(text).__name__)
    return _Reader(text).read()


def _is_control(char):
    return char == '\x7f' or (char < ' ' and char != '\t')


def _key_text(keys):
    """A key path as TOML writes it, for messages."""
    return '.'.join(key if _BARE_KEY.fullmatch(key) else '"%s"' % key.replace('\\', '\\\\').replace('"', '\\"')
                    for key in keys)


class _Reader:
    """One pass over one document; ``pos`` is where reading goes on."""

    def __init__(self, text):
        self.text = text
        self.pos = 0
        self.root = {}
        # id() of each table and array of tables that is not inline -> what made it (the objects stay in the tree).
        self.kinds = {id(self.root): _DEFINED}
        # The current table section: its number (0 before the first header), its table and that table's key.
        self.section = 0
        self.table = self.root
        self.table_keys = []

    # ----------------------------------------------------------------------------------------------- helpers

    def fail(self, message, pos=None):
        raise TomlError(message, self.text, self.pos if pos is None else pos)

    def what(self, pos=None):
        """What is at ``pos`` (the reading position), for a message."""
        pos = self.pos if pos is None else pos
        if pos >= len(self.text):
            return 'the end of the text'
        char = self.text[pos]
        if char == '\n' or self.text.startswith('\r\n', pos):
            return 'the end of the line'
        if _is_control(char):
            return 'control character U+%04X' % ord(char)
        return repr(char)

    def skip_blanks(self):
        self.pos = _BLANKS.match(self.text, self.pos).end()

    def skip_comment(self):
        """The comment at the reading position, up to the end of its line (which is left to read)."""
        self.pos = _COMMENT.match(self.text, self.pos).end()
        if self.pos < len(self.text) and self.text[self.pos] != '\n' and not self.text.startswith('\r\n', self.pos):
            self.fail('%s in a comment: comments hold no control character but tab' % self.what())

    def holds(self, value):
        """What a key holds, for a message saying why nothing more goes into it."""
        kind = self.kinds.get(id(value))
        if isinstance(value, dict):
            return 'is a table' if kind else 'is an inline table'
        if isinstance(value, list):
            return 'is an array of tables' if kind else 'is an array'
        return 'already holds a value'

    def check_depth(self, depth, pos=None):
        """Refuse a value ``depth`` levels below the root (each key part and array one) beyond MAX_DEPTH."""
        if depth > MAX_DEPTH:
            self.fail('nested more than %d levels deep (each key part and array one level): no configuration needs '
                      'that' % MAX_DEPTH, pos)

    # ----------------------------------------------------------------------------------------------- document

    def read(self):
        text = self.text
        while True:
            self.pos = _BLANKS_AND_NEWLINES.match(text, self.pos).end()
            if self.pos >= len(text):
                return self.root
            char = text[self.pos]
            if char == '[':
                self.header()
            elif char != '#':
                self.key_value()
            self.end_of_line()

    def end_of_line(self):
        text = self.text
        self.skip_blanks()
        if text.startswith('#', self.pos):
            self.skip_comment()
        if self.pos >= len(text):
            return
        if text[self.pos] == '\n':
            self.pos += 1
        elif text.startswith('\r\n', self.pos):
            self.pos += 2
        else:
            self.fail('%s after the end of the statement: a line holds one key = value, one [table] header or a '
                      'comment' % self.what())

    def header(self):
        """A [table] or [[array of tables]] header: the table its key/value pairs go to from here on."""
        text = self.text
        start = self.pos
        is_array = text.startswith('[[', start)
        closing = ']]' if is_array else ']'
        self.pos += len(closing)
        keys = self.key()
        if not text.startswith(closing, self.pos):
            self.fail('%s where %s was expected, to close the table header' % (self.what(), closing))
        self.pos += len(closing)
        self.check_depth(len(keys), start)
        self.section += 1
        self.table = self.open_table(keys, is_array, start)
        self.table_keys = keys

    def open_table(self, keys, is_array, start):
        """The table a [header] (``is_array``: a [[header]]) with ``keys`` defines."""
        header = ('[[%s]]' if is_array else '[%s]') % _key_text(keys)
        node = self.root
        for number, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = {}
                self.kinds[id(child)] = _IMPLICIT
            elif isinstance(child, list) and self.kinds.get(id(child)) == _ARRAY_OF_TABLES:
                # A header within an array of tables is within its last table.
                child = child[-1]
            elif not (isinstance(child, dict) and id(child) in self.kinds):
                self.fail('%s: %s %s, so no table can be defined in it'
                          % (header, _key_text(keys[:number + 1]), self.holds(child)), start)
            node = child
        key = keys[-1]
        child = node.get(key)
        if is_array:
            if child is None:
                child = node[key] = []
                self.kinds[id(child)] = _ARRAY_OF_TABLES
            elif not (isinstance(child, list) and self.kinds.get(id(child)) == _ARRAY_OF_TABLES):
                self.fail('%s: the key %s, not an array of tables' % (header, self.holds(child)), start)
            table = {}
            child.append(table)
        elif child is None:
            table = node[key] = {}
        elif isinstance(child, dict) and self.kinds.get(id(child)) == _IMPLICIT:
            table = child
        else:
            kind = self.kinds.get(id(child)) if isinstance(child, dict) else None
            if kind == _DEFINED or (isinstance(kind, tuple) and kind[0] == _DOTTED):
                self.fail('%s: the table is already defined (by a header, or by dotted keys), and a table is defined '
                          'once' % header, start)
            self.fail('%s: the key %s, not a table a header may define' % (header, self.holds(child)), start)
        self.kinds[id(table)] = _DEFINED
        return table

    def key_value(self):
        start = self.pos
        keys = self.key()
        self.expect_equals()
        depth = len(self.table_keys) + len(keys)
        self.check_depth(depth, start)
        parent = self.open_dotted(keys, start)
        if keys[-1] in parent:
            self.fail('the key %s is already defined' % _key_text(self.table_keys + keys), start)
        parent[keys[-1]] = self.value(depth)

    def open_dotted(self, keys, start):
        """The table the dotted ``keys`` (all but the last) of a key/value pair lead to in the current table."""
        current = (_DOTTED, self.section)
        node = self.table
        for number, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = {}
                self.kinds[id(child)] = current
            else:
                kind = self.kinds.get(id(child)) if isinstance(child, dict) else None
                if kind == _IMPLICIT:
                    self.kinds[id(child)] = current
                elif kind != current:
                    path = _key_text(self.table_keys + keys[:number + 1])
                    if kind is None and isinstance(child, dict):
                        reason = '%s is an inline table, which is complete as written' % path
                    elif kind is not None:
                        reason = ('the table %s is defined elsewhere (by its header, or by the dotted keys of another '
                                  'table section), and dotted keys here cannot add to it' % path)
                    else:
                        reason = '%s %s' % (path, self.holds(child))
                    self.fail('%s: %s' % (_key_text(self.table_keys + keys), reason), start)
            node = child
        return node

    # ----------------------------------------------------------------------------------------------- keys

    def key(self):
        """The parts of the (dotted) key at the reading position, and the blanks around it."""
        parts = []
        while True:
            self.skip_blanks()
            parts.append(self.key_part())
            self.skip_blanks()
            if not self.text.startswith('.', self.pos):
                return parts
            self.pos += 1

    def key_part(self):
        text = self.text
        if text.startswith('"', self.pos):
            if text.startswith('"""', self.pos):
                self.fail('a key cannot be a multi-line string')
            return self.basic_string()
        if text.startswith("'", self.pos):
            if text.startswith("'''", self.pos):
                self.fail('a key cannot be a multi-line string')
            return self.literal_string()
        bare = _BARE_KEY.match(text, self.pos)
        if bare is None:
            self.fail('%s where a key was expected (a bare key is made of A-Z, a-z, 0-9, _ and -; quote others)'
                      % self.what())
        self.pos = bare.end()
        return bare.group()

    def expect_equals(self):
        self.skip_blanks()
        if not self.text.startswith('=', self.pos):
            self.fail('%s after the key, where = was expected' % self.what())
        self.pos += 1
        self.skip_blanks()

    # ----------------------------------------------------------------------------------------------- values

    def value(self, depth):
        """The value at the reading position, ``depth`` levels below the root."""
        text = self.text
        pos = self.pos
        char = text[pos:pos + 1]
        if char == '"':
            return self.multiline_string('"') if text.startswith('"""', pos) else self.basic_string()
        if char == "'":
            return self.multiline_string("'") if text.startswith("'''", pos) else self.literal_string()
        if char == '[':
            return self.array(depth)
        if char == '{':
            return self.inline_table(depth)
        if text.startswith('true', pos):
            self.pos += 4
            return True
        if text.startswith('false', pos):
            self.pos += 5
            return False
        if char in _DIGITS:
            # A date or time rather than a number (1979-05-27 starts with the number 1979): told by its fifth or
            # third character.
            match = _DATE_TIME.match(text, pos) if text.startswith('-', pos + 4) else None
            if match:
                return self.date_time(match)
            match = _TIME.match(text, pos) if text.startswith(':', pos + 2) else None
            if match:
                self.pos = match.end()
                return datetime.time(*self.clock(match.groups(), pos))
        match = _NUMBER.match(text, pos)
        if match:
            return self.number(match)
        match = _SPECIAL_FLOAT.match(text, pos)
        if match:
            self.pos = match.end()
            return float(match.group())
        self.fail('%s where a value was expected (a key = needs its value on the same line)' % self.what())

    def number(self, match):
        self.pos = match.end()
        # Nothing that may follow a value starts with a digit or an underscore: name what is wrong with the number.
        if self.text.startswith('_', self.pos):
            self.fail('an underscore in a number stands between two digits', self.pos)
        if self.text[self.pos:self.pos + 1] in _DIGITS and match.group().lstrip('+-') == '0':
            self.fail('a decimal number has no leading zero', match.start())
        digits = match.group().replace('_', '')
        if match.group('integer') is None:
            return int(digits[2:], _BASES[digits[1]])
        if match.group('fraction') is None and match.group('exponent') is None:
            try:
                return int(digits)
            except ValueError:  # Python 3.11 and later read no more than 4300 decimal digits.
                self.fail('an integer of %d digits is more than Python reads' % len(digits), match.start())
        return float(digits)

    def date_time(self, match):
        start = match.start()
        year, month, day, hour = match.group(1, 2, 3, 4)
        try:
            date = datetime.date(int(year), int(month), int(day))
        except ValueError:
            self.fail('%s-%s-%s is not a date' % (year, month, day), start)
        if hour is None:
            self.pos = match.end()
            return date
        clock = self.clock(match.group(4, 5, 6, 7), match.start(4))
        zulu, sign, offset_hours, offset_minutes = match.group(8, 9, 10, 11)
        zone = None
        if zulu:
            zone = datetime.timezone.utc
        elif sign:
            if int(offset_hours) > 23 or int(offset_minutes) > 59:
                self.fail('%s%s:%s is not a time offset (-23:59 to +23:59)' % (sign, offset_hours, offset_minutes),
                          match.start(9))
            offset = datetime.timedelta(hours=int(offset_hours), minutes=int(offset_minutes))
            zone = datetime.timezone(-offset if sign == '-' else offset)
        self.pos = match.end()
        return datetime.datetime(date.year, date.month, date.day, *clock, tzinfo=zone)

    def clock(self, fields, start):
        """(hour, minute, second, microsecond) of HH:MM:SS[.fraction]."""
        hour, minute, second, fraction = fields
        if int(hour) > 23 or int(minute) > 59 or int(second) > 59:
            self.fail('%s:%s:%s is not a time of day (hours 00-23, minutes and seconds 00-59)' % (hour, minute, second),
                      start)
        microsecond = int((fraction or '')[:6].ljust(6, '0'))
        return int(hour), int(minute), int(second), microsecond

    def array(self, depth):
        text = self.text
        self.pos += 1
        items = []
        while True:
            self.skip_array_blanks()
            if text.startswith(']', self.pos):
                self.pos += 1
                return items
            self.check_depth(depth + 1)
            items.append(self.value(depth + 1))
            self.skip_array_blanks()
            if text.startswith(',', self.pos):
                self.pos += 1
            elif text.startswith(']', self.pos):
                self.pos += 1
                return items
            else:
                self.fail('%s in an array, where , or ] was expected' % self.what())

    def skip_array_blanks(self):
        """Blanks, newlines and comments, which arrays allow between their values."""
        while True:
            self.pos = _BLANKS_AND_NEWLINES.match(self.text, self.pos).end()
            if not self.text.startswith('#', self.pos):
                return
            self.skip_comment()

    def inline_table(self, depth):
        text = self.text
        self.pos += 1
        table = {}
        # id() of the tables the dotted keys of this inline table created: only its later dotted keys may add to them.
        dotted = set()
        self.skip_blanks()
        if text.startswith('}', self.pos):
            self.pos += 1
            return table
        while True:
            start = self.pos
            keys = self.key()
            self.expect_equals()
            self.check_depth(depth + len(keys), start)
            node = table
            for number, key in enumerate(keys[:-1]):
                child = node.get(key)
                if child is None:
                    child = node[key] = {}
                    dotted.add(id(child))
                elif not (isinstance(child, dict) and id(child) in dotted):
                    self.fail('%s: %s %s, which dotted keys cannot add to'
                              % (_key_text(keys), _key_text(keys[:number + 1]), self.holds(child)), start)
                node = child
            if keys[-1] in node:
                self.fail('the key %s is already defined in this inline table' % _key_text(keys), start)
            node[keys[-1]] = self.value(depth + len(keys))
            self.skip_blanks()
            if text.startswith('}', self.pos):
                self.pos += 1
                return table
            if not text.startswith(',', self.pos):
                self.fail('%s in an inline table, where , or } was expected (an inline table is written on one line)'
                          % self.what())
            self.pos += 1
            self.skip_blanks()
            if text.startswith('}', self.pos):
                self.fail('a comma before the } of an inline table: TOML 1.0 allows none after its last key')

    # ----------------------------------------------------------------------------------------------- strings

    def basic_string(self):
        text = self.text
        pos = self.pos + 1
        parts = []
        while True:
            run = _BASIC_RUN.match(text, pos)
            parts.append(run.group())
            pos = run.end()
            if text.startswith('"', pos):
                self.pos = pos + 1
                return ''.join(parts)
            if text.startswith('\\', pos):
                value, pos = self.escape(pos, multiline=False)
                parts.append(value)
                continue
            self.pos = pos
            if pos >= len(text) or text[pos] == '\n' or text.startswith('\r\n', pos):
                self.fail('the string is not closed on its line: a "string" ends with " on the line it starts on '
                          '("""strings""" may go on)')
            self.fail('%s in a string: write it as an escape (\\uXXXX)' % self.what())

    def literal_string(self):
        text = self.text
        run = _LITERAL_RUN.match(text, self.pos + 1)
        self.pos = run.end()
        if text.startswith("'", self.pos):
            self.pos += 1
            return run.group()
        if self.pos >= len(text) or text[self.pos] == '\n' or text.startswith('\r\n', self.pos):
            self.fail("the string is not closed on its line: a 'literal string' ends with ' on the line it starts on")
        self.fail('%s in a literal string, which has no escapes to write it with' % self.what())

    def multiline_string(self, quote):
        """A multi-line basic (\"\"\") or literal (''') string."""
        text = self.text
        start = self.pos
        pos = start + 3
        # A newline right after the opening quotes is not part of the string.
        if text.startswith('\n', pos):
            pos += 1
        elif text.startswith('\r\n', pos):
            pos += 2
        run_pattern = _MULTILINE_BASIC_RUN if quote == '"' else _MULTILINE_LITERAL_RUN
        parts = []
        while True:
            run = run_pattern.match(text, pos)
            parts.append(run.group())
            pos = run.end()
            if text.startswith(quote, pos):
                quotes = _QUOTE_RUNS[quote].match(text, pos).end() - pos
                if quotes < 3:
                    parts.append(quote * quotes)
                    pos += quotes
                    continue
                # One or two quotes right before the closing three belong to the string.
                inside = min(quotes - 3, 2)
                parts.append(quote * inside)
                self.pos = pos + 3 + inside
                return ''.join(parts)
            if quote == '"' and text.startswith('\\', pos):
                value, pos = self.escape(pos, multiline=True)
                parts.append(value)
                continue
            if text.startswith('\r\n', pos):
                parts.append('\n')
                pos += 2
                continue
            if pos >= len(text):
                self.fail('the multi-line string is not closed: it ends with %s' % (quote * 3), start)
            self.fail('%s in a multi-line string: no control character but tab and newline may be written as it is%s'
                      % (self.what(pos), ' (write it as an escape, \\uXXXX)' if quote == '"' else ''), pos)

    def escape(self, pos, multiline):
        """The value of the escape at ``pos`` (its backslash) and where the text goes on after it."""
        text = self.text
        code = text[pos + 1:pos + 2]
        if code in _ESCAPES:
            return _ESCAPES[code], pos + 2
        if code in _HEX_DIGITS:
            digits = _HEX_DIGITS[code].match(text, pos + 2)
            if digits is None:
                self.fail('\\%s is followed by %d hexadecimal digits' % (code, 4 if code == 'u' else 8), pos)
            number = int(digits.group(), 16)
            if 0xD800 <= number <= 0xDFFF or number > 0x10FFFF:
                self.fail('\\%s%s is no Unicode scalar value (a surrogate, or beyond U+10FFFF)'
                          % (code, digits.group()), pos)
            return chr(number), digits.end()
        if multiline and code in (' ', '\t', '\n', '\r'):
            line_end = _LINE_ENDING_BACKSLASH.match(text, pos + 1)
            if line_end is None:
                self.fail('a backslash followed by a blank must end its line (the line-ending backslash)', pos)
            # The line-ending backslash takes the newline and all the blanks and newlines after it.
            return '', _BLANKS_AND_NEWLINES.match(text, line_end.end()).end()
        if not code:
            self.fail('the string ends after a backslash', pos)
        self.fail('\\%s is no escape of TOML 1.0 (\\b \\t \\n \\f \\r \\" \\\\ \\uXXXX \\UXXXXXXXX; a backslash itself '
                  'is \\\\)' % (code if code.isprintable() else '<%s>' % self.what(pos + 1)), pos)
