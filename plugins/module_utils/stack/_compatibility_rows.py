# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The data of the compatibility set (``_compatibility`` reads it): the final and post releases of vllm-ascend's
versioning policy table, the releases after that table, the NPU driver (HDK) each release recommends where one is
published, and the image variants; and the one reader of upstream's table (``parse_policy_rows``), which
``tools/compat_rows.py`` and the ``ascend_compat_policy`` filter (``playbooks/compat_rows.yml``) share. Standard
library only: it runs on the managed host too.

To take a new upstream table: run ``tools/compat_rows.py <versioning_policy.md> --commit <sha>`` on a copy of the
file, replace TABLE_SOURCE and TABLE_ROWS with what it prints, and move a release it now lists out of LATER_ROWS.
``--check`` prints the differences only (an upstream edit of a released row shows there). A site that cannot wait
for a release of the collection runs ``playbooks/compat_rows.yml`` on the same file and puts the rows it prints into
its inventory (``ascend_compat_site_rows``).
"""

from __future__ import annotations

import re

# The final and post releases of the table, newest first, as tools/compat_rows.py prints them (do not edit by hand):
# vllm-ascend, vLLM, Python, CANN, torch, torch_npu, triton-ascend (None: the table says N/A).
TABLE_SOURCE = ('vllm-ascend docs/source/community/versioning_policy.md, release compatibility matrix: upstream '
                'vllm-project/vllm-ascend at commit 182b75ea84ff13ece27b57391331ef8935410aea (2026-08-22; the v0.23.0 '
                'row as corrected by PR 14579), and for v0.23.0.post1 the same table in vLLM-HUST/vllm-ascend-hust, a '
                'fork that merges upstream main, at commit 4edb35a0d2078a3f84d7e9312f536a4b6d8a6b53 (2026-09-21)')
TABLE_ROWS = (
    ('0.23.0.post1', '0.23.0', '>=3.10,<3.13', '9.1.0', '2.10.0', '2.10.0.post4', '3.2.2'),
    ('0.23.0', '0.23.0', '>=3.10,<3.13', '9.1.0', '2.10.0', '2.10.0.post4', '3.2.2'),
    ('0.18.0', '0.18.0', '>=3.10,<3.12', '8.5.1', '2.9.0', '2.9.0.post1+git4c901a4', '3.2.0.dev20260322'),
    ('0.13.0', '0.13.0', '>=3.10,<3.12', '8.5.0', '2.8.0', '2.8.0.post2', '3.2.0'),
    ('0.11.0', '0.11.0', '>=3.9,<3.12', '8.3.RC2', '2.7.1', '2.7.1.post1', None),
    ('0.9.1', '0.9.1', '>=3.9,<3.12', '8.2.RC1', '2.5.1', '2.5.1.post1', None),
    ('0.7.3.post1', '0.7.3', '>=3.9,<3.12', '8.1.RC1', '2.5.1', '2.5.1', None),
    ('0.7.3', '0.7.3', '>=3.9,<3.12', '8.1.RC1', '2.5.1', '2.5.1', None),
)

# Releases after the newest table this collection could read, each with its own source. What their sources do not
# publish is None: such a row is known for its CANN (what the NPU driver must run) and its image, so container mode
# serves it; native mode needs the package pins and refuses it unless they are given (vllm_service_pip_packages).
_GPUSTACK = 'https://github.com/gpustack/runner/releases/tag/'
# vllm-ascend's documentation as built for its v0.30.0 tag; no stored copy of the repository reaches that tag (the
# newest, main at 182b75ea84ff13ece27b57391331ef8935410aea, is of 2026-08-22), so the page is the source.
_V0_30_0_INSTALLATION = 'https://docs.vllm.ai/projects/ascend/en/v0.30.0/getting_started/installation.html'
LATER_ROWS = (
    {'vllm_ascend': '0.32.0rc1', 'vllm': '0.32.0', 'python': None, 'cann': '9.2', 'torch': None, 'torch_npu': None,
     'triton_ascend': None, 'status': 'rc',
     'source': 'gpustack/runner release notes (third party): vllm-ascend 0.32.0rc1 images on CANN 9.2 for 950, A3, 910B '
               'and 310P (%sv0.1.32.post6, 2026-11-15); upstream publishes no matrix row in any stored copy'
               % _GPUSTACK},
    {'vllm_ascend': '0.30.0', 'vllm': '0.30.0', 'python': None, 'cann': '9.2.1', 'torch': None, 'torch_npu': None,
     'triton_ascend': None, 'status': 'final',
     'source': 'vllm-ascend README ("[2026/10] We released the new official version v0.30.0"); CANN 9.2.1 and NPU '
               'driver 26.2.RC1 from its v0.30.0 installation guide, "Validated hardware and software stack" '
               '(%s), CANN 9.2.1 also in gpustack/runner release notes (third party, %sv0.1.32.post2, 2026-10-30); '
               'upstream publishes no matrix row in any stored copy' % (_V0_30_0_INSTALLATION, _GPUSTACK)},
)

# The NPU driver (Ascend HDK) a release's installation page recommends, where it names one.
DRIVERS = {
    # The v0.30.0 installation guide (_V0_30_0_INSTALLATION), "Validated hardware and software stack", Host
    # enablement: "Ascend HDK 26.2.RC1 - Driver and firmware for A2, A3, Atlas 300I DUO, and Atlas 200I Pro". The same
    # row names 25.6.RC3.1 for Atlas 850E and Atlas 650E (the 950PR products), which one driver per release cannot
    # say: such a host is refused here until a site row (ascend_compat_site_rows) records that driver.
    '0.30.0': '26.2.RC1',
    '0.23.0': '26.0.RC1',  # docs.vllm.ai/projects/ascend/en/latest/getting_started/installation.html (CANN 9.1.0)
    '0.13.0': '25.5',
    '0.7.3': '24.1.RC1',   # written ">= 24.1.RC1"
}

IMAGE_REPOSITORY = 'quay.io/ascend/vllm-ascend'
# Image variants: tag + suffix (openEuler base, Atlas A3, both, Atlas 300I / 310P, 310P on openEuler; Ascend 950 (A5)
# from v0.26.0rc1, per the image workflow of vllm-ascend's release branches). The Ascend 950DT images have two
# spellings upstream, both kept: its documentation names them -950dt and -950dt-openeuler (main at
# 182b75ea84ff13ece27b57391331ef8935410aea, docs/source/installation.md lines 329-330, "Atlas 950DT"), while the
# workflow that builds and pushes the release images tags them -a5 and -a5-openeuler (the same commit,
# .github/workflows/schedule_image_build_and_push.yaml lines 131 and 134, "A5 Ubuntu" / "A5 openEuler").
IMAGE_SUFFIXES = ('', '-openeuler', '-a3', '-a3-openeuler', '-310p', '-310p-openeuler', '-a5', '-a5-openeuler',
                  '-950dt', '-950dt-openeuler')
# The NPUs each variant is built for, by the chip family _model_format.product_family names (both 950 spellings).
IMAGE_HARDWARE = {
    '': '910B', '-openeuler': '910B', '-a3': '910_93', '-a3-openeuler': '910_93', '-310p': '310P',
    '-310p-openeuler': '310P', '-a5': '950', '-a5-openeuler': '950', '-950dt': '950', '-950dt-openeuler': '950',
}


# ------------------------------------------------------------------------------------- reading upstream's table
# The one reader of vllm-ascend's docs/source/community/versioning_policy.md: tools/compat_rows.py (the collection's
# own update) and the ascend_compat_policy filter (playbooks/compat_rows.yml, a site's rows) print what it reads.
# The table is found by its header ("Release compatibility matrix", then a table whose first column is "vLLM Ascend")
# and read by column name, so added or reordered columns do not break it; a row that cannot be read is reported
# through ``warn``, never guessed.

# The columns read, by the names the table has used for them, and the field each fills.
POLICY_COLUMNS = {
    'vllm ascend': 'vllm_ascend', 'vllm': 'vllm', 'python': 'python', 'stable cann': 'cann', 'cann': 'cann',
    'pytorch/torch_npu': 'torch', 'triton ascend': 'triton_ascend',
}
# Columns the collection does not keep (named so that an unknown column is reported, not silently dropped).
POLICY_IGNORED_COLUMNS = ('mooncake', 'mindie turbo')
# The fields of a TABLE_ROWS tuple, in order.
TABLE_FIELDS = ('vllm_ascend', 'vllm', 'python', 'cann', 'torch', 'torch_npu', 'triton_ascend')

_POLICY_VERSION = re.compile(r'^v?(\d+(\.\d+)*((rc|\.post|\.dev)\d+)*(\.post\d+)?(\.dev\d+)?(\+[0-9A-Za-z.]+)?)$')
_POLICY_PYTHON = re.compile(r'^(>=|<=|==|!=|>|<)\s*(\d+(\.\d+)*)$')
_POLICY_CANN = re.compile(r'^\d+\.\d+(\.\d+|\.RC\d+)?$')


class PolicyError(ValueError):
    """The table, or one of its rows, cannot be read."""


def release_status(vllm_ascend):
    """final, post or rc, from a vllm-ascend version as the table writes it."""
    if 'rc' in vllm_ascend:
        return 'rc'
    return 'post' if '.post' in vllm_ascend else 'final'


def _policy_version(text, what):
    """One version cell, without its leading v; A/B (two vLLM releases of one row) gives the first."""
    first = text.split('/')[0].strip()
    match = _POLICY_VERSION.match(first)
    if not match:
        raise PolicyError('%s %r is not a version' % (what, text))
    return match.group(1)


def _policy_python(text):
    """'>= 3.10, < 3.13' as '>=3.10,<3.13'."""
    clauses = []
    for clause in text.split(','):
        match = _POLICY_PYTHON.match(clause.strip())
        if not match:
            raise PolicyError('Python %r is not a range such as >= 3.10, < 3.13' % text)
        clauses.append(match.group(1) + match.group(2))
    return ','.join(clauses)


def _cells(line):
    return [cell.strip() for cell in line.strip().strip('|').split('|')]


def find_policy_table(text):
    """The header cells (lower case) and the data lines of the release compatibility matrix; PolicyError without."""
    lines = (text or '').splitlines()
    start = next((index for index, line in enumerate(lines)
                  if re.match(r'#+\s*release compatibility matrix', line, re.I)), None)
    if start is None:
        raise PolicyError('no "Release compatibility matrix" heading: is this versioning_policy.md?')
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
    raise PolicyError('no table whose first column is "vLLM Ascend" under the "Release compatibility matrix" heading')


def parse_policy_rows(text, warn):
    """The release rows of a versioning_policy.md's matrix, in its order, each a dict of TABLE_FIELDS plus ``status``
    (release_status). PolicyError when the file has no matrix or the matrix lacks a column the rows need; a column not
    known or a row that cannot be read is reported through ``warn`` (the row is skipped)."""
    header, lines = find_policy_table(text)
    for name in header:
        if name not in POLICY_COLUMNS and name not in POLICY_IGNORED_COLUMNS:
            warn('column %r is not read (not known to this tool): check whether the collection should keep it' % name)
    present = set(POLICY_COLUMNS[name] for name in header if name in POLICY_COLUMNS)
    missing = sorted(set(TABLE_FIELDS) - present - {'torch_npu', 'triton_ascend'})
    if missing:
        raise PolicyError('the matrix has no column for %s' % ', '.join(missing))
    rows = []
    for line in lines:
        cells = _cells(line)
        if len(cells) != len(header):
            warn('row skipped, %d cells for %d columns: %s' % (len(cells), len(header), line.strip()))
            continue
        values = dict((POLICY_COLUMNS[name], cell) for name, cell in zip(header, cells) if name in POLICY_COLUMNS)
        try:
            rows.append(_policy_row(values))
        except PolicyError as error:
            warn('row skipped, %s: %s' % (error, line.strip()))
    return rows


def _policy_row(values):
    row = {'vllm_ascend': _policy_version(values['vllm_ascend'], 'vLLM Ascend')}
    row['vllm'] = _policy_version(values['vllm'], 'vLLM')
    row['python'] = _policy_python(values['python'])
    if not _POLICY_CANN.match(values['cann']):
        raise PolicyError('CANN %r is not a version such as 9.1.0 or 8.3.RC2' % values['cann'])
    row['cann'] = values['cann']
    torches = [part.strip() for part in values['torch'].split('/')]
    if len(torches) != 2:
        raise PolicyError('PyTorch/torch_npu %r is not two versions split by /' % values['torch'])
    row['torch'] = _policy_version(torches[0], 'torch')
    row['torch_npu'] = _policy_version(torches[1], 'torch_npu')
    triton = values.get('triton_ascend', 'N/A')
    row['triton_ascend'] = None if triton.upper() in ('N/A', '', '-') else _policy_version(triton, 'Triton Ascend')
    row['status'] = release_status(row['vllm_ascend'])
    return row


def as_table_row(row):
    """A read row as a TABLE_ROWS tuple."""
    return tuple(row[field] for field in TABLE_FIELDS)


def format_table_rows(rows):
    """TABLE_ROWS lines: one tuple per row, the release candidates marked with a comment."""
    out = []
    for row in rows:
        line = '    (%s),' % ', '.join('None' if value is None else repr(value) for value in as_table_row(row))
        out.append(line + ('  # release candidate' if row['status'] == 'rc' else ''))
    return '\n'.join(out)


def policy_differences(rows, table_rows=TABLE_ROWS):
    """Sentences for each final or post row of ``rows`` (parse_policy_rows's) that ``table_rows`` lacks or holds
    otherwise, and each row of ``table_rows`` that ``rows`` lack."""
    kept = dict((row['vllm_ascend'], as_table_row(row)) for row in rows if row['status'] != 'rc')
    ours = dict((row[0], tuple(row)) for row in table_rows)
    found = []
    for version, values in kept.items():
        if version not in ours:
            found.append('new row: %s' % (values,))
        elif ours[version] != values:
            changed = ['%s %r -> %r' % (field, old, new)
                       for field, old, new in zip(TABLE_FIELDS, ours[version], values) if old != new]
            found.append('changed row %s: %s' % (version, ', '.join(changed)))
    for version in ours:
        if version not in kept:
            found.append('row %s is not in the file' % version)
    return found
