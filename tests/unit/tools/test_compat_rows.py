# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""tools/compat_rows.py on pinned copies of vllm-ascend's versioning policy: the rows it reads, what it reports, and
its output as TABLE_ROWS."""

from __future__ import annotations

import ast

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility_rows import TABLE_ROWS
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture, tool_module

TOOL = tool_module('compat_rows.py')
UPSTREAM = load_fixture('vllm-ascend-versioning_policy.md_182b75e_2026-08-22_to-v0.23.0.txt')
MIRROR = load_fixture('vllm-ascend-versioning_policy.md_hust-mirror-4edb35a_2026-09-21_to-v0.26.0rc1_table-excerpt.txt')


def test_every_release_row_of_the_upstream_table_is_read_with_its_status():
    rows = TOOL.parse_rows(UPSTREAM, pytest.fail)
    assert len(rows) == 36
    assert [row['vllm_ascend'] for row in rows if row['status'] != 'rc'] == [
        '0.23.0', '0.18.0', '0.13.0', '0.11.0', '0.9.1', '0.7.3.post1', '0.7.3']
    assert rows[0] == {'vllm_ascend': '0.23.0', 'vllm': '0.23.0', 'python': '>=3.10,<3.13', 'cann': '9.1.0',
                       'torch': '2.10.0', 'torch_npu': '2.10.0.post4', 'triton_ascend': '3.2.2', 'status': 'final'}


@pytest.mark.parametrize('version, field, value', [
    ('0.10.1rc1', 'vllm', '0.10.1'),                       # "v0.10.1/v0.10.1.1": the first
    ('0.11.0rc0', 'vllm', '0.11.0rc3'),
    ('0.11.0', 'python', '>=3.9,<3.12'),                   # ">= 3.9 , < 3.12" spaced unlike the others
    ('0.18.0', 'torch_npu', '2.9.0.post1+git4c901a4'),
    ('0.18.0', 'triton_ascend', '3.2.0.dev20260322'),
    ('0.9.2rc1', 'torch_npu', '2.5.1.post1.dev20250619'),
    ('0.11.0', 'triton_ascend', None),                     # N/A
    ('0.13.0rc1', 'cann', '8.3.RC2'),
    ('0.8.5rc1', 'vllm', '0.8.5.post1'),
])
def test_the_cells_as_written_are_read(version, field, value):
    row = next(row for row in TOOL.parse_rows(UPSTREAM, pytest.fail) if row['vllm_ascend'] == version)
    assert row[field] == value


def test_the_newer_table_adds_the_post_release_and_the_release_candidate():
    rows = TOOL.parse_rows(MIRROR, pytest.fail)
    assert [(row['vllm_ascend'], row['status']) for row in rows[:3]] == [
        ('0.26.0rc1', 'rc'), ('0.23.0.post1', 'post'), ('0.23.0', 'final')]


def test_the_printed_rows_are_table_rows(capsys, tmp_path):
    source = tmp_path / 'versioning_policy.md'
    source.write_text(MIRROR)
    assert TOOL.main([str(source), '--commit', '4edb35a0d2078a3f84d7e9312f536a4b6d8a6b53']) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("TABLE_SOURCE = 'vllm-project/vllm-ascend docs/source/community/versioning_policy.md at "
                              "commit 4edb35a0d2078a3f84d7e9312f536a4b6d8a6b53'\nTABLE_ROWS = (\n")
    assert ast.literal_eval(printed.split('TABLE_ROWS = ', 1)[1]) == TABLE_ROWS


def test_all_marks_the_release_candidates(capsys, tmp_path):
    source = tmp_path / 'versioning_policy.md'
    source.write_text(MIRROR)
    TOOL.main([str(source), '--all'])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == ("    ('0.26.0rc1', '0.26.0', '>=3.10,<3.13', '9.1.0', '2.10.0', '2.10.0.post4', '3.2.2'),  "
                        "# release candidate")


def test_check_exits_1_with_the_differences_and_0_without(capsys, tmp_path):
    source = tmp_path / 'versioning_policy.md'
    source.write_text(MIRROR)
    assert TOOL.main([str(source), '--check']) == 0
    assert capsys.readouterr().out == ''
    source.write_text(UPSTREAM)
    assert TOOL.main([str(source), '--check']) == 1
    assert capsys.readouterr().out == 'row 0.23.0.post1 is not in the file\n'


def test_a_new_release_is_a_new_row():
    row = ('| v0.30.0     | v0.30.0           | >= 3.10, < 3.14 | 9.2.1       | 2.11.0 / 2.11.0                 | '
           '3.3.0             | v0.3.14 |\n')
    newer = MIRROR.replace('| v0.26.0rc1  |', row + '| v0.26.0rc1  |', 1)
    assert TOOL.differences(TOOL.parse_rows(newer, pytest.fail), TABLE_ROWS) == [
        "new row: ('0.30.0', '0.30.0', '>=3.10,<3.14', '9.2.1', '2.11.0', '2.11.0', '3.3.0')"]


def test_an_unknown_column_and_an_unreadable_row_are_reported_not_guessed():
    warnings = []
    text = MIRROR.replace('|    Mooncake  |', '|    Mooncake  | Notes |', 1).replace(
        '| v0.23.0     | v0.23.0           | >= 3.10, < 3.13 | 9.1.0       | 2.10.0 / 2.10.0.post4           | 3.2.2 '
        '            | v0.3.11.post1 |',
        '| v0.23.0     | v0.23.0           | >= 3.10, < 3.13 | 9.1.0       | 2.10.0 / 2.10.0.post4           | 3.2.2 '
        '            | v0.3.11.post1 | fine |', 1)
    rows = TOOL.parse_rows(text, warnings.append)
    assert warnings[0] == "column 'notes' is not read (not known to this tool): check whether the collection should keep it"
    # Every other row now has a cell too few: each is reported and skipped.
    assert [row['vllm_ascend'] for row in rows] == ['0.23.0']
    assert len(warnings) == 1 + 37


@pytest.mark.parametrize('broken, message', [
    ('| v0.18.0     | v0.18.0           | >= 3.10, < 3.12 | 8.5.1       | 2.9.0',
     "row skipped, CANN 'latest' is not a version such as 9.1.0 or 8.3.RC2"),
])
def test_a_cell_that_is_no_version_skips_its_row(broken, message):
    warnings = []
    text = MIRROR.replace(broken, broken.replace('8.5.1      ', 'latest     '), 1)
    rows = TOOL.parse_rows(text, warnings.append)
    assert '0.18.0' not in [row['vllm_ascend'] for row in rows]
    assert warnings[0].startswith(message)


def test_a_file_without_the_matrix_is_an_error(capsys, tmp_path):
    source = tmp_path / 'README.md'
    source.write_text('# vLLM Ascend\n\nNo table here.\n')
    assert TOOL.main([str(source)]) == 2
    assert capsys.readouterr().err == ('compat_rows: %s: no "Release compatibility matrix" heading: is this '
                                       'versioning_policy.md?\n' % source)
