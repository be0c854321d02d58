#!/usr/bin/env python
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read vllm-ascend's versioning policy (docs/source/community/versioning_policy.md) and print its release rows in the
form of TABLE_ROWS in plugins/module_utils/stack/_compatibility_rows.py, so that a new release is one diff to review.

Usage: compat_rows.py VERSIONING_POLICY_MD [--commit SHA] [--all] [--check]

Take the file from a copy of upstream (a clone, or `git show <commit>:docs/source/community/versioning_policy.md`)
and name its commit with --commit. By default only the final and post releases are printed (the rows the collection
keeps); --all prints the release candidates too, marked. --check prints nothing but the differences between the
file's final and post rows and TABLE_ROWS, and exits 1 when there are any: an upstream edit of a released row (it
happens: v0.23.0's CANN went from 9.0.1 to 9.1.0 in a later pull request) shows up as a difference.

The table is found by its header ("Release compatibility matrix", then a table whose first column is "vLLM Ascend")
and read by column name, so added or reordered columns do not break it; a row that cannot be read is reported on
stderr, never guessed. The reader is the collection's own (plugins/module_utils/stack/_compatibility_rows.py); from an
installed collection, playbooks/compat_rows.yml prints the same rows in the form of the inventory variable
ascend_compat_site_rows.
"""

from __future__ import annotations

import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, '.cache'))

# The reader lives in the collection (plugins/module_utils/stack/_compatibility_rows.py), so that an installed collection
# reads the table the same way: playbooks/compat_rows.yml prints a site's rows with it.
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _compatibility_rows as _rows  # noqa: E402

COLUMNS = _rows.POLICY_COLUMNS
IGNORED_COLUMNS = _rows.POLICY_IGNORED_COLUMNS
FIELDS = _rows.TABLE_FIELDS
RowError = _rows.PolicyError
status = _rows.release_status
find_table = _rows.find_policy_table
parse_rows = _rows.parse_policy_rows
as_tuple = _rows.as_table_row
format_rows = _rows.format_table_rows


def differences(rows, table_rows):
    """Sentences for each final or post row of the file that TABLE_ROWS lacks or holds otherwise, and each row of
    TABLE_ROWS the file lacks."""
    return _rows.policy_differences(rows, table_rows)


def _table_rows():
    return _rows.TABLE_ROWS


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
