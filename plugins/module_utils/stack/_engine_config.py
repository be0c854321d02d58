# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The Ascend runtime merged into a container engine's configuration, never overwriting it:

* ``merge_daemon_json``: docker's ``daemon.json``, parsed, merged and compared by value (key order and spacing differ
  between hosts: the runtime installer re-serialises the file); every key it does not own is kept;
* ``merge_containerd_toml``: containerd's ``config.toml`` (config version 2 or 3), edited as text table by table
  (table names quoted with ' or "), so that every other line, comment and blank stays as it was. The file is read
  as TOML before the edit and the edited text again after it, on every Python: with tomllib, or with the collection's
  own reader (``_toml``) where Python has none (before 3.11); an edit that does not read back as the runtime asked
  for is a ConfigError.

Both return a Merge: the new text (the old text itself when nothing changes), whether it changed, the warnings and,
for docker, the parsed result. A file that cannot be read as its format raises ConfigError, whose message names the
file; nothing is written then.
"""

from __future__ import annotations

import collections
import copy
import json
import math
import re

try:
    import tomllib
except ImportError:  # Python < 3.11 (openEuler 22.03, Kylin V10, Ubuntu 22.04).
    tomllib = None

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _toml

# What proves a config.toml valid, before the edit and after it: the standard library's reader where there is one,
# else the collection's own reader of TOML 1.0. Both raise a ValueError for a text that is not TOML.
toml_loads = tomllib.loads if tomllib is not None else _toml.loads

Merge = collections.namedtuple('Merge', 'text changed warnings config')

# The CRI runtime plugin of each containerd config version.
CRI_PLUGINS = {2: 'io.containerd.grpc.v1.cri', 3: 'io.containerd.cri.v1.runtime'}
RUNTIME_TYPE = 'io.containerd.runc.v2'
# containerd's own default runtime, which default_runtime_name goes back to when the Ascend runtime stops being it.
CONTAINERD_DEFAULT_RUNTIME = 'runc'


class ConfigError(Exception):
    """The configuration file cannot be merged; the message names the file and what to fix."""


# --------------------------------------------------------------------------------------------------------- docker

def _json_indent(text):
    """The indentation of the first indented line of ``text`` (a tab, or a number of spaces); 4 when none."""
    match = re.search(r'^([ \t]+)\S', text, re.MULTILINE)
    if not match:
        return 4
    indent = match.group(1)
    return '\t' if '\t' in indent else len(indent)


def merge_daemon_json(text, path, runtime_name, runtime_path, default_runtime=None):
    """Merge runtime ``runtime_name`` (``runtime_path``) into the daemon.json ``text`` read from ``path``.

    ``default_runtime``: true makes it docker's default-runtime; false removes a default-runtime naming it (docker's
    default, runc, applies again) and keeps any other; None leaves default-runtime alone. Every other key, and every
    other key of the runtime's entry (runtimeArgs), is kept. An empty file counts as ``{}``.
    """
    warnings = []
    if text.strip():
        try:
            before = _json.loads(text)
        except ValueError as error:
            raise ConfigError('%s is not valid JSON (%s): fix or remove it; it was left unchanged' % (path, error))
    else:
        before = {}
    if not isinstance(before, dict):
        raise ConfigError('%s holds a JSON %s, not an object: fix it; it was left unchanged' % (path, type(before).__name__))
    after = copy.deepcopy(before)
    runtimes = after.setdefault('runtimes', {})
    if not isinstance(runtimes, dict):
        raise ConfigError('%s: "runtimes" is a %s, not an object of runtimes: fix it; it was left unchanged'
                          % (path, type(runtimes).__name__))
    entry = runtimes.setdefault(runtime_name, {})
    if not isinstance(entry, dict):
        raise ConfigError('%s: runtime "%s" is a %s, not an object with "path": fix it; it was left unchanged'
                          % (path, runtime_name, type(entry).__name__))
    old_path = entry.get('path')
    if isinstance(old_path, str) and old_path != runtime_path and old_path.lower() == runtime_path.lower():
        # Paths are case-sensitive: the hand-edited one names another file, which docker would fail to run.
        warnings.append('%s: runtime "%s" had path %s, which differs from %s only in case; paths are case-sensitive, '
                        'so it was set to %s' % (path, runtime_name, old_path, runtime_path, runtime_path))
    entry['path'] = runtime_path
    entry.setdefault('runtimeArgs', [])
    if default_runtime is True:
        after['default-runtime'] = runtime_name
    elif default_runtime is False and after.get('default-runtime') == runtime_name:
        del after['default-runtime']
    for name, value in sorted(runtimes.items()):
        if name != runtime_name and name.lower() == runtime_name.lower():
            warnings.append('%s: runtime "%s" differs from "%s" only in case; docker takes them for two runtimes, '
                            'and the one named "%s" is the one configured' % (path, name, runtime_name, runtime_name))
    changed = after != before
    if not changed:
        return Merge(text, False, warnings, after)
    return Merge(json.dumps(after, indent=_json_indent(text), ensure_ascii=False) + '\n', True, warnings, after)


# --------------------------------------------------------------------------------------------------------- containerd

_BARE_KEY = re.compile(r'[A-Za-z0-9_-]+')
_BASIC_ESCAPES = {'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', '"': '"', '\\': '\\'}


def _read_key_part(text, pos):
    """One part of a dotted TOML key at ``pos``: (its value, the position after it); ValueError if there is none."""
    if text.startswith('"', pos):
        value = []
        pos += 1
        while pos < len(text) and text[pos] != '"':
            if text[pos] == '\\':
                escape = text[pos + 1:pos + 2]
                if escape in _BASIC_ESCAPES:
                    value.append(_BASIC_ESCAPES[escape])
                    pos += 2
                    continue
                if escape in ('u', 'U'):
                    width = 4 if escape == 'u' else 8
                    value.append(chr(int(text[pos + 2:pos + 2 + width], 16)))
                    pos += 2 + width
                    continue
                raise ValueError('bad escape')
            value.append(text[pos])
            pos += 1
        if pos >= len(text):
            raise ValueError('unterminated string')
        return ''.join(value), pos + 1
    if text.startswith("'", pos):
        end = text.find("'", pos + 1)
        if end < 0:
            raise ValueError('unterminated string')
        return text[pos + 1:end], end + 1
    match = _BARE_KEY.match(text, pos)
    if not match:
        raise ValueError('no key')
    return match.group(0), match.end()


def parse_key(text, pos=0):
    """A dotted TOML key at ``pos`` of ``text``: (tuple of its parts, the position after it and its blanks)."""
    parts = []
    while True:
        while pos < len(text) and text[pos] in ' \t':
            pos += 1
        part, pos = _read_key_part(text, pos)
        parts.append(part)
        while pos < len(text) and text[pos] in ' \t':
            pos += 1
        if not text.startswith('.', pos):
            return tuple(parts), pos
        pos += 1


def _quote_part(part, quote):
    return part if _BARE_KEY.fullmatch(part) else quote + part + quote


def format_key(parts, quote='"'):
    return '.'.join(_quote_part(part, quote) for part in parts)


_SHORT_ESCAPES = {'"': '\\"', '\\': '\\\\', '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r'}
# What a TOML basic string cannot hold as it is: its quote, the backslash and every control character (DEL too);
# and the line separators str.splitlines() knows, which TOML allows but line-by-line readers may break the line at.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f\x85\u2028\u2029]')


def _toml_string(value):
    """``value`` as a TOML basic string, whatever characters it holds."""
    return '"%s"' % _NEEDS_ESCAPE.sub(
        lambda match: _SHORT_ESCAPES.get(match.group(), '\\u%04X' % ord(match.group())), value)


_HEADER = re.compile(r'^([ \t]*)\[(?!\[)(.*)\][ \t]*(#.*)?$')
_ARRAY_HEADER = re.compile(r'^[ \t]*\[\[')
_COMMENT_OR_BLANK = re.compile(r'^[ \t]*(#.*)?$')
# What decides whether the next line starts a statement: strings, comments, brackets and newlines.
_LEXEME = re.compile(r'''"""|'{3}|["'#\[\]{}\n]''')
_STRING_RESTS = {
    '"': re.compile(r'(?:[^"\\\n]|\\.)*"'),
    "'": re.compile(r"[^'\n]*'"),
    '"""': re.compile(r'(?:[^"\\]|\\[\s\S]|"(?!""))*"{3}"{0,2}'),
    "'''": re.compile(r"(?:[^']|'(?!''))*'{3}'{0,2}"),
}


def _continued_lines(text):
    """The indexes of the lines of ``text`` (valid TOML) that go on with a value - a multi-line string, array or
    inline table - rather than start a statement, so that what they hold is never taken for a header or a key."""
    continued = set()
    line = depth = pos = 0
    while True:
        match = _LEXEME.search(text, pos)
        if match is None:
            return continued
        lexeme, pos = match.group(), match.end()
        if lexeme == '\n':
            line += 1
            if depth:
                continued.add(line)
        elif lexeme == '#':
            end = text.find('\n', pos)
            pos = len(text) if end < 0 else end
        elif lexeme in ('[', '{'):
            depth += 1
        elif lexeme in (']', '}'):
            depth -= 1
        else:
            rest = _STRING_RESTS[lexeme].match(text, pos)
            end = rest.end() if rest else len(text)
            newlines = text.count('\n', pos, end)
            continued.update(range(line + 1, line + 1 + newlines))
            line += newlines
            pos = end


class _Toml:
    """The lines of a TOML text and where its tables start: enough to read and set one key in one table."""

    def __init__(self, text, path):
        self.path = path
        # TOML's newlines only (LF, CRLF): str.splitlines() also breaks at separators a comment or string may hold.
        self.lines = [line + '\n' for line in text.split('\n')]
        self.lines[-1] = self.lines[-1][:-1]
        if not self.lines[-1]:
            del self.lines[-1]
        self.newline = '\r\n' if self.lines and self.lines[0].endswith('\r\n') else '\n'
        if self.lines and not self.lines[-1].endswith(('\n', '\r')):
            self.lines[-1] += self.newline

    def statements(self, start=0, end=None):
        """The indexes of lines start..end that start a statement (or are blank or a comment)."""
        continued = _continued_lines(self.text())
        return [index for index in range(start, len(self.lines) if end is None else end) if index not in continued]

    def headers(self):
        """(line index, indentation, key parts) of each [table] header; [[array]] headers give None parts."""
        found = []
        for index in self.statements():
            body = self.lines[index].rstrip('\r\n')
            if _ARRAY_HEADER.match(body):
                found.append((index, '', None))
                continue
            match = _HEADER.match(body)
            if match:
                try:
                    parts, end = parse_key(match.group(2))
                except ValueError:
                    raise ConfigError('%s, line %d: cannot read the table name %s: fix it; the file was left unchanged'
                                      % (self.path, index + 1, body.strip()))
                if end != len(match.group(2).rstrip()):
                    raise ConfigError('%s, line %d: cannot read the table name %s: fix it; the file was left unchanged'
                                      % (self.path, index + 1, body.strip()))
                found.append((index, match.group(1), parts))
        return found

    def section(self, table):
        """(header index, end index) of ``table``'s lines, or None when it has no header."""
        headers = self.headers()
        for number, (index, dummy, parts) in enumerate(headers):
            if parts == table:
                end = headers[number + 1][0] if number + 1 < len(headers) else len(self.lines)
                return index, end
        return None

    def top_level_end(self):
        headers = self.headers()
        return headers[0][0] if headers else len(self.lines)

    def find_key(self, start, end, key):
        """(line index, the value text) of ``key = value`` in lines start..end, or None."""
        for index in self.statements(start, end):
            line = self.lines[index]
            if _COMMENT_OR_BLANK.match(line.rstrip('\r\n')):
                continue
            try:
                parts, pos = parse_key(line)
            except ValueError:
                continue
            if parts == (key,) and line.startswith('=', pos):
                return index, line[pos + 1:].strip()
        return None

    def key_indent(self, start, end, header_indent):
        for index in self.statements(start + 1, end):
            line = self.lines[index]
            if not _COMMENT_OR_BLANK.match(line.rstrip('\r\n')):
                return re.match(r'[ \t]*', line).group(0)
        return header_indent + '  '

    def set_key(self, table, key, value_text, header_indent=''):
        """Make ``key = value_text`` hold in ``table``; return the old value text, or None when it was absent."""
        where = self.section(table)
        if where is None:
            raise AssertionError('table %s is added before its keys' % (table,))
        start, end = where
        found = self.find_key(start + 1, end, key)
        indent = self.key_indent(start, end, re.match(r'[ \t]*', self.lines[start]).group(0))
        line = '%s%s = %s%s' % (indent, _quote_part(key, '"'), value_text, self.newline)
        if found:
            index, old = found
            if _same_value(old, value_text):
                return old
            self.lines[index] = line
            return old
        # After the header and the table's keys, before the blank lines and comments that lead to the next table.
        self.lines.insert(_section_end(self, start, end), line)
        return None

    def add_table(self, table, indent, after=None, blank_before=False):
        """Add the header of ``table`` after line ``after`` (the end of the file when None)."""
        quote = "'" if self.quote_style() == "'" else '"'
        header = '%s[%s]%s' % (indent, format_key(table, quote), self.newline)
        if after is None:
            if self.lines and not self.lines[-1].endswith(('\n', '\r')):
                self.lines[-1] += self.newline
            if self.lines and self.lines[-1].strip():
                self.lines.append(self.newline)
            self.lines.append(header)
        else:
            self.lines.insert(after, header)
            if blank_before:
                self.lines.insert(after, self.newline)

    def quote_style(self):
        """The quote most table names of the file use, ' or "."""
        text = ''.join(self.lines[index] for index in self.statements()
                       if _HEADER.match(self.lines[index].rstrip('\r\n')))
        return "'" if text.count("'") > text.count('"') else '"'

    def text(self):
        return ''.join(self.lines)


def _same_value(old, new):
    """Whether two TOML scalar value texts (strings quoted ' or ", a trailing comment allowed) are the same value."""
    return _scalar(old) == _scalar(new)


def _scalar(text):
    text = text.strip()
    if text[:1] in ('"', "'"):
        try:
            value, pos = _read_key_part(text, 0)
        except ValueError:
            return text
        rest = text[pos:].strip()
        if not rest or rest.startswith('#'):
            return ('string', value)
        return text
    return ('other', re.sub(r'[ \t]*#.*$', '', text))


def _config_version(toml, path):
    """The ``version = N`` of the file's top level, or None when it has none."""
    found = toml.find_key(0, toml.top_level_end(), 'version')
    if found is None:
        return None
    value = re.sub(r'[ \t]*#.*$', '', found[1])
    if not re.fullmatch(r'[0-9]+', value):
        raise ConfigError('%s: version = %s is not a containerd config version: fix it; the file was left unchanged'
                          % (path, found[1]))
    return int(value)


# Long: one edit of one TOML text in containerd's order (its version, the CRI plugin's table, the runtime's table,
# its options, the default runtime); each step edits where the one before left the text.
def merge_containerd_toml(text, path, runtime_name, runtime_path, default_runtime=None, config_version=None):
    """Merge runtime ``runtime_name`` (runc v2 shim, BinaryName ``runtime_path``) into the containerd config ``text``.

    The file's own ``version`` (2: containerd 1.x, 3: containerd 2.x) picks the CRI plugin's table; a file without
    version and without tables (empty, or only top-level keys such as Docker's ``disabled_plugins = ["cri"]``) takes
    ``config_version`` and gets that version line. Any other version - 1, or a file with tables but no version, which
    containerd reads as version 1 - is a ConfigError. ``default_runtime`` works as for merge_daemon_json, with
    ``default_runtime_name`` (false sets it back to runc when it named this runtime).
    """
    warnings = []
    try:
        before = toml_loads(text)
    except (ValueError, RecursionError) as error:
        raise ConfigError('%s is not valid TOML (%s): fix it; it was left unchanged'
                          % (path, 'nested too deep' if isinstance(error, RecursionError) else error))
    toml = _Toml(text, path)
    version = _config_version(toml, path)
    if version is None:
        if toml.headers():
            raise ConfigError('%s has no version line, so containerd reads it as config version 1, which is not supported: '
                              'convert it with containerd config migrate (containerd 2.x) or write it anew from containerd '
                              'config default, with version = 2 (containerd 1.x) or 3 (containerd 2.x); it was left unchanged'
                              % path)
        if config_version not in CRI_PLUGINS:
            raise ConfigError('%s has no version line: give the config version the installed containerd reads (2 for '
                              'containerd 1.x, 3 for containerd 2.x); it was left unchanged' % path)
        version = config_version
        # Above the first key, below the comments that open the file.
        insert = next((index for index, line in enumerate(toml.lines)
                       if not _COMMENT_OR_BLANK.match(line.rstrip('\r\n'))), len(toml.lines))
        toml.lines.insert(insert, 'version = %d%s%s' % (version, toml.newline, toml.newline if insert < len(toml.lines) else ''))
    elif version not in CRI_PLUGINS:
        raise ConfigError('%s has config version %d; only versions 2 (containerd 1.x) and 3 (containerd 2.x) are supported: '
                          'migrate it (containerd config migrate); it was left unchanged' % (path, version))
    plugin = CRI_PLUGINS[version]
    _warn_disabled(toml, path, plugin, warnings)
    containerd = ('plugins', plugin, 'containerd')
    runtimes = containerd + ('runtimes',)
    table = runtimes + (runtime_name,)
    options = table + ('options',)
    if toml.section(table) is None:
        after, indent = _place_runtime(toml, runtimes)
        toml.add_table(table, indent, after, blank_before=True)
        after = None if after is None else after + 2
        toml.add_table(options, indent + ('  ' if indent or after is not None else ''), after)
    elif toml.section(options) is None:
        start, end = toml.section(table)
        indent = re.match(r'[ \t]*', toml.lines[start]).group(0)
        toml.add_table(options, indent + ('  ' if indent else ''), _section_end(toml, start, end))
    old_type = toml.set_key(table, 'runtime_type', _toml_string(RUNTIME_TYPE))
    if old_type is not None and _scalar(old_type) != ('string', RUNTIME_TYPE):
        warnings.append('%s: runtime %s had runtime_type = %s; it was set to "%s" (the shim whose BinaryName option '
                        'names the runtime)' % (path, runtime_name, old_type, RUNTIME_TYPE))
    # The runtime runs containers as runc does: it takes runc's cgroup driver (containerd config default writes
    # SystemdCgroup = true on systemd hosts, and a kubelet on the systemd driver needs it) unless it sets its own.
    inherited = _inherited_options(before, containerd, options)
    for key, value in inherited.items():
        toml.set_key(options, key, 'true' if value else 'false')
    old_binary = toml.set_key(options, 'BinaryName', _toml_string(runtime_path))
    if old_binary is not None:
        old_value = _scalar(old_binary)
        if old_value[0] == 'string' and old_value[1] != runtime_path and old_value[1].lower() == runtime_path.lower():
            warnings.append('%s: runtime %s had BinaryName %s, which differs from %s only in case; paths are '
                            'case-sensitive, so it was set to %s'
                            % (path, runtime_name, old_value[1], runtime_path, runtime_path))
    current_default = _current_default(toml, containerd)
    if default_runtime is True and current_default != runtime_name:
        _ensure_table(toml, containerd, table)
        toml.set_key(containerd, 'default_runtime_name', _toml_string(runtime_name))
    elif default_runtime is False and current_default == runtime_name:
        toml.set_key(containerd, 'default_runtime_name', _toml_string(CONTAINERD_DEFAULT_RUNTIME))
    new_text = toml.text()
    # A file without a final newline gets one only with a real change.
    changed = new_text.rstrip('\r\n') != text.rstrip('\r\n')
    if not changed:
        return Merge(text, False, warnings, None)
    _verify(new_text, path, table, options, runtime_path,
            _intended(before, version, containerd, table, options, runtime_path, default_runtime, inherited))
    return Merge(new_text, True, warnings, None)


def _warn_disabled(toml, path, plugin, warnings):
    found = toml.find_key(0, toml.top_level_end(), 'disabled_plugins')
    if found and re.search(r'''["'](cri|%s)["']''' % re.escape(plugin), found[1]):
        warnings.append('%s disables the CRI plugin (disabled_plugins = %s), so the runtime it configures serves only '
                        'clients of the CRI (crictl, Kubernetes) once that plugin is enabled' % (path, found[1]))


def _current_default(toml, containerd):
    where = toml.section(containerd)
    if where is None:
        return None
    found = toml.find_key(where[0] + 1, where[1], 'default_runtime_name')
    if found is None:
        return None
    value = _scalar(found[1])
    return value[1] if value[0] == 'string' else None


def _section_end(toml, start, end):
    """Where lines belonging after a table's keys go: after its last key line, and the lines its value goes on
    over (a multi-line string's line that looks like a comment or blank is no comment or blank)."""
    continued = _continued_lines(toml.text())
    insert = start + 1
    for index in range(start + 1, end):
        if index in continued or not _COMMENT_OR_BLANK.match(toml.lines[index].rstrip('\r\n')):
            insert = index + 1
    return insert


def _place_runtime(toml, runtimes):
    """Where the runtime's new tables go, and their indentation: after the last table of another runtime (the runc
    runtime of config default), indented like it; else at the end of the file, unindented."""
    last = None
    indent = ''
    headers = toml.headers()
    for number, (index, header_indent, parts) in enumerate(headers):
        if parts is not None and len(parts) > len(runtimes) and parts[:len(runtimes)] == runtimes:
            end = headers[number + 1][0] if number + 1 < len(headers) else len(toml.lines)
            last = _section_end(toml, index, end)
            if len(parts) == len(runtimes) + 1:
                indent = header_indent
    if last is None:
        return None, ''
    return last, indent


def _ensure_table(toml, containerd, runtime_table):
    if toml.section(containerd) is None:
        # Before the runtime's table, which is below it.
        start = toml.section(runtime_table)[0]
        indent = re.match(r'[ \t]*', toml.lines[start]).group(0)
        toml.add_table(containerd, indent[:-2] if len(indent) >= 2 else '', start)


# Options of runc's runtime the Ascend runtime takes when it sets none of its own.
INHERITED_RUNC_OPTIONS = ('SystemdCgroup',)


def _inherited_options(before, containerd, options):
    """The options of runc's runtime (``runtimes.runc.options`` as the file was read) that the runtime's own options
    lack: {key: value}, booleans only."""
    def table_at(keys):
        node = before
        for part in keys:
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else {}
    runc = table_at(containerd + ('runtimes', CONTAINERD_DEFAULT_RUNTIME, 'options'))
    own = table_at(options)
    return dict((key, runc[key]) for key in INHERITED_RUNC_OPTIONS
                if isinstance(runc.get(key), bool) and key not in own)


def _intended(before, version, containerd, table, options, runtime_path, default_runtime, inherited=None):
    """What the edited file is to read as: the file as it was read (``before``) with the version, the runtime and the
    default runtime the edit sets; None when a table on the way is no table (an array of tables, a value)."""
    after = copy.deepcopy(before)
    after['version'] = version
    nodes = {}
    for keys in (containerd, table, options):
        node = after
        for part in keys:
            node = node.setdefault(part, {}) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return None
        nodes[keys] = node
    nodes[table]['runtime_type'] = RUNTIME_TYPE
    nodes[options]['BinaryName'] = runtime_path
    nodes[options].update(inherited or {})
    if default_runtime is True:
        nodes[containerd]['default_runtime_name'] = table[-1]
    elif default_runtime is False and nodes[containerd].get('default_runtime_name') == table[-1]:
        nodes[containerd]['default_runtime_name'] = CONTAINERD_DEFAULT_RUNTIME
    return after


def _same(one, other):
    """Whether two values read from TOML are the same (of the same type; nan is the same as nan)."""
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(_same(one[key], other[key]) for key in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(_same(item, other_item) for item, other_item in zip(one, other))
    if isinstance(one, float) and isinstance(other, float) and math.isnan(one):
        return math.isnan(other)
    return type(one) is type(other) and one == other


def _verify(text, path, table, options, runtime_path, intended):
    """Re-read the edited text: it must parse, give the runtime its settings and change nothing else - read as
    ``intended`` (else nothing is written)."""
    try:
        data = toml_loads(text)
    except (ValueError, RecursionError) as error:
        raise ConfigError('%s: the Ascend runtime cannot be added by table without breaking the file (%s); it defines the '
                          'runtime in another way (dotted keys or an inline table?): define it as tables %s and %s, or '
                          'remove it; the file was left unchanged' % (path, error, format_key(table), format_key(options)))
    node = data
    for part in options:
        node = node.get(part, {}) if isinstance(node, dict) else {}
    if not isinstance(node, dict) or node.get('BinaryName') != runtime_path:
        raise ConfigError('%s: after the edit the runtime table %s does not hold BinaryName = %s; the file defines it '
                          'in a way this module cannot edit: fix it by hand; it was left unchanged'
                          % (path, format_key(options), runtime_path))
    node = data
    for part in table:
        node = node.get(part, {}) if isinstance(node, dict) else {}
    if not isinstance(node, dict) or node.get('runtime_type') != RUNTIME_TYPE:
        raise ConfigError('%s: after the edit the runtime table %s does not hold runtime_type = "%s"; the file defines '
                          'it in a way this module cannot edit: fix it by hand; it was left unchanged'
                          % (path, format_key(table), RUNTIME_TYPE))
    if intended is None or not _same(data, intended):
        raise ConfigError('%s: the edit would change more than the Ascend runtime and the default runtime; the file '
                          'defines them in a way this module cannot edit: fix it by hand; it was left unchanged' % path)
