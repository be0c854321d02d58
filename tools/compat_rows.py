#!/usr/bin/env python
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read vllm-ascend's versioning policy (docs/source/community/versioning_policy.md) and print its release rows in the
form of TABLE_ROWS in plugins/module_utils/_compatibility_rows.py, so that a new release is one diff to review.

Usage: compat_rows.py VERSIONING_POLICY_MD [--commit SHA] [--all] [--check]

Take the file from a copy of upstream (a clone, or `git show <commit>:docs/source/community/versioning_policy.md`)
and name its commit with --commit. By default only the final and post releases are printed (the rows the collection
keeps); --all prints the release candidates too, marked. --check prints nothing but the differences between the
file's final and post rows and TABLE_ROWS, and exits 1 when there are any: an upstream edit of a released row (it
happens: v0.23.0's CANN went from 9.0.1 to 9.1.0 in a later pull request) shows up as a difference.

The table is found by its header ("Release compatibility matrix", then a table whose first column is "vLLM Ascend")
and read by column name, so added or reordered columns do not break it; a row that cannot be read is reported on
stderr, never guessed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The columns read, by the names the table has used for them, and the TABLE_ROWS field each fills.
COLUMNS = {
    'vllm ascend': 'vllm_ascend', 'vllm': 'vllm', 'python': 'python', 'stable cann': 'cann', 'cann': 'cann',
    'pytorch/torch_npu': 'torch', 'triton ascend': 'triton_ascend',
}
# Columns the collection does not keep (named so that an unknown column is reported, not silently dropped).
IGNORED_COLUMNS = ('mooncake', 'mindie turbo')
FIELDS = ('vllm_ascend', 'vllm', 'python', 'cann', 'torch', 'torch_npu', 'triton_ascend')

_VERSION = re.compile(r'^v?(\d+(\.\d+)*((rc|\.post|\.dev)\d+)*(\.post\d+)?(\.dev\d+)?(\+[0-9A-Za-z.]+)?)$')
_PYTHON = re.compile(r'^(>=|<=|==|!=|>|<)\s*(\d+(\.\d+)*)$')


class RowError(ValueError):
    """A row of the table that cannot be read."""


def status(vllm_ascend):
    """final, post or rc, from a vllm-ascend version as the table writes it."""
    if 'rc' in vllm_ascend:
        return 'rc'
    return 'post' if '.post' in vllm_ascend else 'final'


def _version(text, what):
    """One version cell, without its leading v; A/B (two vLLM releases of one row) gives the first."""
    first = text.split('/')[0].strip()
    match = _VERSION.match(first)
    if not match:
        raise RowError('%s %r is not a version' % (what, text))
    return match.group(1)


def _python(text):
    """'>= 3.10, < 3.13' as '>=3.10,<3.13'."""
    clauses = []
    for clause in text.split(','):
        match = _PYTHON.match(clause.strip())
        if not match:
            raise RowError('Python %r is not a range such as >= 3.10, < 3.13' % text)
        clauses.append(match.group(1) + match.group(2))
    return ','.join(clauses)


def _cells(line):
    return [cell.strip() for cell in line.strip().strip('|').split('|')]


def find_table(text):
    """The header cells and the data lines of the release compatibility matrix."""
    lines = text.splitlines()
    start = next((index for index, line in enumerate(lines) if re.match(r'#+\s*release compatibility matrix', line, re.I)),
                 None)
    if start is None:
        raise RowError('no "Release compatibility matrix" heading: is this versioning_policy.md?')
    for index in range(start + 1, len(lines)):
        if lines[index].lstrip().startswith('|') and _cells(lines[index])[0].lower() == 'vllm ascend':
            header = [cell.lower() for cell in _cells(lines[index])]
            rows = []
            for line in lines[index + 2:]:
                if not line.lstrip().startswith('|'):
                    break
                rows.append(line)
            return header, rows
        if lines[index].startswith('#'):
            break
    raise RowError('no table whose first column is "vLLM Ascend" under the "Release compatibility matrix" heading')


def parse_rows(text, warn):
    """The release rows of the file's matrix, in its order, each a dict of FIELDS plus ``status``."""
    header, lines = find_table(text)
    for name in header:
        if name not in COLUMNS and name not in IGNORED_COLUMNS:
            warn('column %r is not read (not known to this tool): check whether the collection should keep it' % name)
    missing = sorted(set(FIELDS) - set(COLUMNS[name] for name in header if name in COLUMNS) - {'torch_npu', 'triton_ascend'})
    if missing:
        raise RowError('the matrix has no column for %s' % ', '.join(missing))
    rows = []
    for line in lines:
        cells = _cells(line)
        if len(cells) != len(header):
            warn('row skipped, %d cells for %d columns: %s' % (len(cells), len(header), line.strip()))
            continue
        values = dict((COLUMNS[name], cell) for name, cell in zip(header, cells) if name in COLUMNS)
        try:
            rows.append(_read_row(values))
        except RowError as error:
            warn('row skipped, %s: %s' % (error, line.strip()))
    return rows


def _read_row(values):
    row = {'vllm_ascend': _version(values['vllm_ascend'], 'vLLM Ascend')}
    row['vllm'] = _version(values['vllm'], 'vLLM')
    row['python'] = _python(values['python'])
    if not re.match(r'^\d+\.\d+(\.\d+|\.RC\d+)?$', values['cann']):
        raise RowError('CANN %r is not a version such as 9.1.0 or 8.3.RC2' % values['cann'])
    row['cann'] = values['cann']
    torches = [part.strip() for part in values['torch'].split('/')]
    if len(torches) != 2:
        raise RowError('PyTorch/torch_npu %r is not two versions split by /' % values['torch'])
    row['torch'] = _version(torches[0], 'torch')
    row['torch_npu'] = _version(torches[1], 'torch_npu')
    triton = values.get('triton_ascend', 'N/A')
    row['triton_ascend'] = None if triton.upper() in ('N/A', '', '-') else _version(triton, 'Triton Ascend')
    row['status'] = status(row['vllm_ascend'])
    return row


def as_tuple(row):
    return tuple(row[field] for field in FIELDS)


def format_rows(rows):
    """TABLE_ROWS lines: one tuple per row, the release candidates marked with a comment."""
    out = []
    for row in rows:
        line = '    (%s),' % ', '.join('None' if value is None else repr(value) for value in as_tuple(row))
        out.append(line + ('  # release candidate' if row['status'] == 'rc' else ''))
    return '\n'.join(out)


def differences(rows, table_rows):
    """Sentences for each final or post row of the file that TABLE_ROWS lacks or holds otherwise, and each row of
    TABLE_ROWS the file lacks."""
    kept = dict((row['vllm_ascend'], as_tuple(row)) for row in rows if row['status'] != 'rc')
    ours = dict((row[0], tuple(row)) for row in table_rows)
    found = []
    for version, values in kept.items():
        if version not in ours:
            found.append('new row: %s' % (values,))
        elif ours[version] != values:
            changed = ['%s %r -> %r' % (field, old, new)
                       for field, old, new in zip(FIELDS, ours[version], values) if old != new]
            found.append('changed row %s: %s' % (version, ', '.join(changed)))
    for version in ours:
        if version not in kept:
            found.append('row %s is not in the file' % version)
    return found


def _table_rows():
    sys.path.insert(0, os.path.join(REPO, '.cache'))
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._compatibility_rows import TABLE_ROWS
    return TABLE_ROWS


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('path', help="a copy of vllm-ascend's docs/source/community/versioning_policy.md")
    parser.add_argument('--commit', help='the upstream commit the copy is of, for the source line')
    parser.add_argument('--all', action='store_true', help='print the release candidates too')
    parser.add_argument('--check', action='store_true', help='compare with TABLE_ROWS; exit 1 on a difference')
    args = parser.parse_args(argv)
    problems = []
    try:
        with open(args.path, encoding='utf-8') as handle:
            rows = parse_rows(handle.read(), problems.append)
    except (OSError, UnicodeDecodeError, RowError) as error:
        print('compat_rows: %s: %s' % (args.path, error), file=sys.stderr)
        return 2
    for problem in problems:
        print('compat_rows: %s' % problem, file=sys.stderr)
    if args.check:
        found = differences(rows, _table_rows())
        for line in found:
            print(line)
        return 1 if found else 0
    print('TABLE_SOURCE = %r' % ('vllm-project/vllm-ascend docs/source/community/versioning_policy.md'
                                 + (' at commit %s' % args.commit if args.commit else '')))
    print('TABLE_ROWS = (')
    print(format_rows([row for row in rows if args.all or row['status'] != 'rc']))
    print(')')
    return 0


if __name__ == '__main__':
    sys.exit(main())
