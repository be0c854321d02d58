# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The compatibility set of vllm-ascend, and pure functions that check a combination against it. Used on the controller
by the ``ascend_compat`` filters and on the managed host by the ``ascend_preflight`` and ``ascend_doctor`` modules, so
it needs nothing but the standard library, ``_version`` and the data in ``_compatibility_rows``.

vllm-ascend's own policy is "pick one whole row": a vllm-ascend release is built and tested against one vLLM,
one CANN, one torch / torch_npu pair, one triton-ascend and a Python range, and recommends an NPU driver (HDK).
``ROWS`` holds one dict per release (``_compatibility_rows`` says where each comes from and how to take a new
upstream table), with these keys:

``vllm_ascend``    vllm-ascend version, without the leading ``v`` (as pip prints it): ``'0.23.0'``, ``'0.32.0rc1'``.
``vllm``           the vLLM version of the row: ``'0.23.0'``.
``python``         the supported Python versions, comma-separated clauses (``>=``, ``>``, ``<=``, ``<``, ``==``,
                   ``!=``): ``'>=3.10,<3.13'``.
``cann``           the CANN toolkit version: ``'9.1.0'``, ``'8.3.RC2'``.
``torch``          the torch version: ``'2.10.0'``.
``torch_npu``      the torch_npu version: ``'2.10.0.post4'`` (a ``+local`` part, as in ``2.9.0.post1+git4c901a4``, is
                   the table's text; pip pins drop it).
``triton_ascend``  the triton-ascend version, None where the release has none.
``driver``         the recommended NPU driver (HDK) version, ``None`` where the source gives none. Read as a minimum:
                   a newer driver runs an older CANN, a CANN newer than the driver supports fails (the most
                   reported vllm-ascend failure: vllm-ascend issues 13393, 5468 and 3190).
``firmware``       the recommended NPU firmware version; the source publishes none, so ``None`` in every row
                   (kept so that a row can carry one; a ``None`` is never a constraint).
``image_tag``      the tag of the row's image in ``IMAGE_REPOSITORY`` (variants add a suffix of
                   ``_compatibility_rows.IMAGE_SUFFIXES``).
``status``         ``final``, ``post`` (a post release of a final) or ``rc`` (a release candidate: accepted when asked
                   for, never suggested).
``source``         where the row comes from; ``site`` for a site's row.

A site adds rows, or replaces the row of a release, with the inventory variable ``ascend_compat_site_rows``: a list of
rows in this format (``vllm_ascend``, ``vllm`` and ``cann`` required; ``playbooks/compat_rows.yml`` prints them from a
``versioning_policy.md``). ``with_site_rows`` checks them with ``check_row``, the check every built-in row passes
too, marks them ``source: site`` and merges them; the functions below take the merged rows as ``rows``, and every row
they return, and every sentence naming one ("vllm-ascend 0.30.0 (site row)"), says it is the site's.

Where a row's source does not publish a value (the releases after the newest table: ``LATER_ROWS``), it is None:
a given version of that component cannot be confirmed against the row, which is a problem like a mismatch.

Versions compare with ``_version.compare_ascend_versions``: case-insensitive, ``v`` prefixes and ``+local``
parts ignored (``v0.9.1+empty`` is vLLM ``0.9.1``), ``8.3.rc2`` equals ``8.3.RC2``, ``25.5`` equals ``25.5.0``.

The driver refusal says the fact first, then both fixes: upgrade the driver to the row's minimum with
``playbooks/upgrade.yml`` (``npu_driver_version``), or choose the newest release the driver runs (the caller's
``release_variable``).

The driver rule. A row's *driver minimum* is its ``driver``; where that is unknown, it is the highest known
``driver`` among the rows whose CANN is not newer (a newer CANN never needs an older driver than an older CANN
did), marked as inferred; a row with no such row has no minimum. A driver *fits* a row when it is at least the
row's minimum (or the row has none). ``rows_for_driver`` lists the rows a driver fits, newest first;
``check_combination``'s suggestion is the first final or post release of them that also fits the given Python.

The waiver. A combination outside the set runs only under a recorded waiver (``read_waiver``): a reason, an expiry
date, and optionally the versions it covers. ``check_combination`` with a valid waiver that covers the combination
reports it supported and ``waived``, with the problems it waives; a waiver without a reason, past its expiry, or
covering other versions waives nothing, and says why.
"""

from __future__ import annotations

import datetime
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility_rows import (
    DRIVERS,
    IMAGE_HARDWARE,
    IMAGE_REPOSITORY,
    IMAGE_SUFFIXES,
    LATER_ROWS,
    TABLE_FIELDS,
    TABLE_ROWS,
    TABLE_SOURCE,
    parse_policy_rows,
    release_status,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import (
    compare_ascend_versions,
    is_ascend_version,
    parse_ascend_version,
)

SOURCE = TABLE_SOURCE
_TABLE_FIELDS = ('vllm_ascend', 'vllm', 'python', 'cann', 'torch', 'torch_npu', 'triton_ascend')


def _row(values, status, source):
    row = dict(values, driver=DRIVERS.get(values['vllm_ascend']), firmware=None,
               image_tag='v' + values['vllm_ascend'], status=status, source=source)
    return row


ROWS = tuple(
    [_row(dict(zip(_TABLE_FIELDS, values)), 'post' if '.post' in values[0] else 'final', TABLE_SOURCE)
     for values in TABLE_ROWS]
    + [_row(dict((key, later[key]) for key in _TABLE_FIELDS), later['status'], later['source']) for later in LATER_ROWS])

# --------------------------------------------------------------------------------------------- a row, checked
# Every row - built in or a site's - passes check_row; the keys a row has, in order.
ROW_FIELDS = ('vllm_ascend', 'vllm', 'python', 'cann', 'torch', 'torch_npu', 'triton_ascend', 'driver', 'firmware',
              'image_tag', 'status', 'source')
# A site's row: what it must give, and the source every site row carries in every report.
SITE_REQUIRED = ('vllm_ascend', 'vllm', 'cann')
SITE_SOURCE = 'site'
SITE_ROWS_VARIABLE = 'ascend_compat_site_rows'
STATUSES = ('final', 'post', 'rc')
_VERSION_FIELDS = ('vllm_ascend', 'vllm', 'cann', 'torch', 'torch_npu', 'triton_ascend', 'driver', 'firmware')
# An image tag as docker and podman take it.
_IMAGE_TAG = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z')
_SOURCE_LENGTH = 500


def check_row(row, where):
    """``row`` (a dict of ROW_FIELDS; a site's may leave out python, torch, torch_npu, triton_ascend, driver,
    firmware - null -, image_tag - v<vllm_ascend> -, status - from the version, as the table writes it - and source)
    checked and completed; a ValueError naming ``where`` and the key for the first thing wrong."""
    if not isinstance(row, dict):
        raise ValueError('%s must be a row: a dict with %s (and optionally the other keys: %s), not %s'
                         % (where, ', '.join(SITE_REQUIRED), ', '.join(key for key in ROW_FIELDS if key not in SITE_REQUIRED),
                            type(row).__name__))
    unknown = sorted(str(key) for key in row if key not in ROW_FIELDS)
    if unknown:
        raise ValueError('%s has no key %s (a row\'s keys are %s)' % (where, ', '.join(unknown), ', '.join(ROW_FIELDS)))
    checked = {}
    for key in _VERSION_FIELDS:
        value = row.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            if key in SITE_REQUIRED:
                raise ValueError('%s.%s is missing: every row names its %s version' % (where, key, LABELS[key]))
            checked[key] = None
        elif not isinstance(value, str):
            raise ValueError('%s.%s: %r is a %s, not a version string: quote it (YAML reads 9.10 as the number 9.1)'
                             % (where, key, value, type(value).__name__))
        elif _CONTROL.search(value) or not is_ascend_version(value.strip()):
            raise ValueError('%s.%s: %r is not a version' % (where, key, value))
        else:
            checked[key] = value.strip().lstrip('vV') if key in ('vllm_ascend', 'vllm') else value.strip()
    python = row.get('python')
    if python is None or (isinstance(python, str) and not python.strip()):
        checked['python'] = None
    else:
        try:
            if not isinstance(python, str) or _CONTROL.search(python):
                raise ValueError()
            python_in_range('3.10', python)
        except ValueError:
            raise ValueError('%s.python: %r is not a Python range such as >=3.10,<3.13' % (where, python))
        checked['python'] = python.replace(' ', '')
    tag = row.get('image_tag')
    if tag is None:
        tag = 'v' + checked['vllm_ascend']
    if not isinstance(tag, str) or not _IMAGE_TAG.match(tag):
        raise ValueError('%s.image_tag: %r is not an image tag (letters, digits, _ . -; at most 128)' % (where, tag))
    checked['image_tag'] = tag
    status = row.get('status')
    if status is None:
        status = release_status(checked['vllm_ascend'])
    if status not in STATUSES:
        raise ValueError('%s.status: %r is none of %s' % (where, status, ', '.join(STATUSES)))
    checked['status'] = status
    source = row.get('source')
    if not isinstance(source, str) or not source.strip() or _CONTROL.search(source) or len(source) > _SOURCE_LENGTH:
        raise ValueError('%s.source must say where the row comes from, on one line of at most %d characters; got %r'
                         % (where, _SOURCE_LENGTH, source))
    checked['source'] = source.strip()
    return dict((key, checked[key]) for key in ROW_FIELDS)


def site_rows(value, variable=SITE_ROWS_VARIABLE):
    """A site's rows (the inventory variable ``variable``: a list of rows, null or empty for none) checked with
    check_row and marked ``source: site``, whatever source they give; a ValueError naming ``variable[index].key`` for
    the first row that is wrong, or the two rows of one release."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise ValueError('%s must be a list of rows (each a dict with %s), not %s'
                         % (variable, ', '.join(SITE_REQUIRED), type(value).__name__))
    rows = []
    seen = {}
    for index, row in enumerate(value):
        where = '%s[%d]' % (variable, index)
        if isinstance(row, dict) and row.get('source') not in (None, SITE_SOURCE):
            raise ValueError('%s.source: a site row\'s source is %s (given or left out), not %r: say where it comes from '
                             'in a comment beside it' % (where, SITE_SOURCE, row['source']))
        checked = check_row(dict(row, source=SITE_SOURCE) if isinstance(row, dict) else row, where)
        version = parse_ascend_version(checked['vllm_ascend'])
        if version in seen:
            raise ValueError('%s.vllm_ascend: vllm-ascend %s has a row already, %s[%d]: keep one'
                             % (where, checked['vllm_ascend'], variable, seen[version]))
        seen[version] = index
        rows.append(checked)
    return tuple(rows)


def with_site_rows(value, rows=ROWS, variable=SITE_ROWS_VARIABLE):
    """``rows`` with a site's rows (site_rows of ``value``): a site row replaces the built-in row of its release
    (the site knows better, such as a driver upstream validated after this collection's release) and adds the others.
    ``rows`` itself when ``value`` holds none. A ValueError as site_rows raises it."""
    site = site_rows(value, variable)
    if not site:
        return rows
    replaced = set(parse_ascend_version(row['vllm_ascend']) for row in site)
    return tuple([row for row in rows if parse_ascend_version(row['vllm_ascend']) not in replaced] + list(site))


def image_variant(image):
    """What an image reference of IMAGE_REPOSITORY says: ``{'release', 'suffix', 'hardware'}`` (the chip family the
    variant is built for, as _model_format.product_family names it: both spellings of the Ascend 950DT variant give
    950); None for another repository or a tag of no known variant."""
    if not isinstance(image, str) or not image.startswith(IMAGE_REPOSITORY + ':'):
        return None
    tag = image[len(IMAGE_REPOSITORY) + 1:].split('@', 1)[0]
    for suffix in sorted(IMAGE_SUFFIXES, key=len, reverse=True):
        release = tag[:len(tag) - len(suffix)] if suffix else tag
        if (not suffix or tag.endswith(suffix)) and re.match(r'v?[0-9]+(?:[.][0-9]+)+[0-9A-Za-z.+]*\Z', release):
            return {'release': release.lstrip('v'), 'suffix': suffix, 'hardware': IMAGE_HARDWARE[suffix]}
    return None


def policy_site_rows(text, source=None, include_rc=False):
    """The rows of a versioning_policy.md (``text``) that a site would add to the compatibility set, in the format of
    the inventory variable SITE_ROWS_VARIABLE: the final and post releases (and the release candidates with
    ``include_rc``) that the collection's rows lack or hold otherwise, each checked by check_row; a row replacing one of
    the collection's keeps that row's driver (the table names none). Returns ``rows`` (those rows), ``unchanged`` (the
    releases the collection has as the file does), ``problems`` (what parse_policy_rows could not read) and ``text``
    (the variable as YAML, each row with a comment saying why, headed by ``source``). A file without the matrix is a
    ValueError (_compatibility_rows.PolicyError)."""
    problems = []
    read = parse_policy_rows(text, problems.append)
    builtin = dict((parse_ascend_version(row['vllm_ascend']), row) for row in ROWS)
    rows, notes, unchanged = [], [], []
    for index, found in enumerate(read):
        if found['status'] == 'rc' and not include_rc:
            continue
        row = dict((key, found[key]) for key in TABLE_FIELDS)
        ours = builtin.get(parse_ascend_version(row['vllm_ascend']))
        changed = ['%s %s -> %s' % (key, ours[key], row[key]) for key in TABLE_FIELDS
                   if ours is not None and ours[key] != row[key]]
        if ours is not None and not changed:
            unchanged.append(row['vllm_ascend'])
            continue
        note = 'new: the collection has no row of vllm-ascend %s' % row['vllm_ascend']
        if ours is not None:
            note = 'differs from the collection\'s row: %s' % ', '.join(changed)
            if ours['driver']:
                row['driver'] = ours['driver']
                note += '; its driver %s kept' % ours['driver']
        check_row(dict(row, source=SITE_SOURCE), 'row %d of the file (vllm-ascend %s)' % (index, row['vllm_ascend']))
        rows.append(dict((key, value) for key, value in row.items() if value is not None))
        notes.append(note)
    lines = ['# The rows of %s that the collection lacks or holds otherwise,' % (_one_line(source) or 'a versioning_policy.md'),
             '# for the inventory variable %s (group_vars/all.yml); check each before a node runs it.'
             % SITE_ROWS_VARIABLE]
    if unchanged:
        lines.append('# The collection has these as the file does: %s.' % ', '.join(unchanged))
    for problem in problems:
        lines.append('# Not read: %s' % _one_line(problem))
    lines.append('%s:%s' % (SITE_ROWS_VARIABLE, '' if rows else ' []'))
    for row, note in zip(rows, notes):
        lines.append('  # %s' % note)
        lines.append('  - {%s}' % ', '.join("%s: '%s'" % (key, value.replace("'", "''")) for key, value in row.items()))
    return {'rows': rows, 'unchanged': unchanged, 'problems': problems, 'text': '\n'.join(lines) + '\n'}


def _one_line(text):
    return _CONTROL.sub(' ', text) if text else text


# The components a row pins exactly, in message order, and how messages name every component.
SOFTWARE = ('vllm_ascend', 'vllm', 'cann', 'torch', 'torch_npu', 'triton_ascend')
LABELS = {'vllm_ascend': 'vllm-ascend', 'vllm': 'vLLM', 'cann': 'CANN', 'torch': 'torch', 'torch_npu': 'torch_npu',
          'triton_ascend': 'triton-ascend', 'driver': 'NPU driver', 'python': 'Python'}
COMPONENTS = SOFTWARE + ('driver', 'python')
# The keys of a waiver, and of what it covers.
WAIVER_KEYS = ('reason', 'expires', 'covers')

_PYTHON_CLAUSE = re.compile(r'^\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$')
_OPERATORS = {
    '>=': lambda order: order >= 0, '<=': lambda order: order <= 0, '==': lambda order: order == 0,
    '!=': lambda order: order != 0, '>': lambda order: order > 0, '<': lambda order: order < 0,
}
# What the driver refusal names for its two fixes: the driver's variable (role npu_driver, which playbooks/upgrade.yml
# runs) and, unless the caller names its own, the variables that choose a release.
DRIVER_VARIABLE = 'npu_driver_version'
RELEASE_VARIABLE = 'vllm_service_vllm_ascend_version or vllm_service_image'
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')
_DATE = re.compile(r'\d{4}-\d{2}-\d{2}\Z')
# A reason long enough to say something, short enough for a play's output and a report.
REASON_LENGTH = (10, 500)


def python_in_range(version, spec):
    """Whether Python ``version`` satisfies ``spec`` (``'>=3.10,<3.13'``); ValueError on a bad clause."""
    for clause in spec.split(','):
        match = _PYTHON_CLAUSE.match(clause)
        if not match:
            raise ValueError('%r is not a Python version range such as >=3.10,<3.13' % (spec,))
        if not _OPERATORS[match.group(1)](compare_ascend_versions(version, match.group(2))):
            return False
    return True


def _newest_first(rows):
    return sorted(rows, key=lambda row: parse_ascend_version(row['vllm_ascend']), reverse=True)


def driver_minimum(row, rows=ROWS):
    """Return (minimum driver, the row it comes from) for ``row``, or (None, None) without one (see the rule)."""
    if row['driver']:
        return row['driver'], row
    best = (None, None)
    for other in rows:
        if other['driver'] and compare_ascend_versions(other['cann'], row['cann']) <= 0:
            if best[0] is None or compare_ascend_versions(other['driver'], best[0]) > 0:
                best = (other['driver'], other)
    return best


def describe_row(row, rows=ROWS):
    """A copy of ``row`` plus ``image`` (the full image reference), ``driver_minimum``, ``driver_minimum_from``,
    ``unpublished`` (the components its source gives no version for) and ``pins`` (see row_pins).

    ``driver_minimum_from`` is the vllm-ascend version of the row whose ``driver`` gave the minimum (the row's own
    when it has one), None when there is no minimum. triton-ascend counts as unpublished only in a row that publishes
    no torch either (older releases have none at all).
    """
    minimum, origin = driver_minimum(row, rows)
    return dict(row, image='%s:%s' % (IMAGE_REPOSITORY, row['image_tag']), driver_minimum=minimum,
                driver_minimum_from=origin['vllm_ascend'] if origin else None, unpublished=unpublished(row),
                pins=row_pins(row))


def row_pins(row):
    """The pip pins of the whole row - torch, torch-npu, triton-ascend (where the release has one), vllm and
    vllm-ascend - installed together so that pip cannot replace one behind the others' back; None when the row's
    source does not publish them. A ``+local`` part of the table's text (2.9.0.post1+git4c901a4) is dropped: the pin
    without it admits the local build, and PyPI has none."""
    if unpublished(row):
        return None
    pins = ['torch==%s' % row['torch'], 'torch-npu==%s' % row['torch_npu'].split('+', 1)[0]]
    if row['triton_ascend']:
        pins.append('triton-ascend==%s' % row['triton_ascend'].split('+', 1)[0])
    return pins + ['vllm==%s' % row['vllm'], 'vllm-ascend==%s' % row['vllm_ascend']]


def unpublished(row):
    """The components (keys) ``row``'s source gives no version for."""
    missing = [key for key in ('python', 'torch', 'torch_npu') if row[key] is None]
    if row['triton_ascend'] is None and row['torch'] is None:
        missing.append('triton_ascend')
    return missing


def compatibility_rows(rows=ROWS):
    """Every row, described (see describe_row), newest vllm-ascend first."""
    return [describe_row(row, rows) for row in _newest_first(rows)]


def _driver_fits(row, driver, rows):
    minimum = driver_minimum(row, rows)[0]
    return minimum is None or compare_ascend_versions(driver, minimum) >= 0


def rows_for_driver(driver, rows=ROWS):
    """The rows (described) that NPU driver ``driver`` fits, newest first; ValueError if it is not a version."""
    if not is_ascend_version(driver):
        raise ValueError('NPU driver %r is not a version such as 24.1.RC1' % (driver,))
    return [describe_row(row, rows) for row in _newest_first(rows) if _driver_fits(row, driver, rows)]


def format_row(row, rows=ROWS):
    """One line naming every component of ``row``, for messages; a site's row is named "(site row)"."""
    minimum, origin = driver_minimum(row, rows)
    if minimum is None:
        driver = 'no recommended driver'
    elif origin is row:
        driver = 'NPU driver >= %s' % minimum
    else:
        driver = 'NPU driver >= %s (inferred)' % minimum

    def shown(key):
        return row[key] if row[key] is not None else ('none' if key == 'triton_ascend' and row['torch'] else 'unpublished')
    return ('%s%s (vLLM %s, Python %s, CANN %s, torch %s, torch_npu %s, triton-ascend %s, %s, image %s:%s)'
            % (_release_name(row), ' (release candidate)' if row['status'] == 'rc' else '', row['vllm'], shown('python'),
               row['cann'], shown('torch'), shown('torch_npu'), shown('triton_ascend'), driver, IMAGE_REPOSITORY,
               row['image_tag']))


def _read_inputs(values):
    """The given components as stripped strings, and a problem sentence for each value that is not a version."""
    given, problems = {}, []
    for key in COMPONENTS:
        value = values.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if not isinstance(value, str):
            problems.append('%s: %r is a %s, not a version string: quote it (YAML reads 3.10 as the number 3.1)'
                            % (LABELS[key], value, type(value).__name__))
        elif not is_ascend_version(value):
            problems.append('%s: %r is not a version' % (LABELS[key], value))
        else:
            given[key] = value.strip()
    return given, problems


def _same(left, right):
    return left is not None and right is not None and compare_ascend_versions(left, right) == 0


def _matches(row, given):
    return all(_same(row[key], given[key]) for key in SOFTWARE if key in given)


def _environment_fits(row, environment, rows):
    """Whether ``row`` admits the given Python and driver (``environment``)."""
    if 'python' in environment and (row['python'] is None or not python_in_range(environment['python'], row['python'])):
        return False
    return 'driver' not in environment or _driver_fits(row, environment['driver'], rows)


def _newest_release_for(environment, rows):
    """The newest final or post release that admits the given Python and driver, None when none does."""
    return next((row for row in _newest_first(rows) if row['status'] != 'rc' and _environment_fits(row, environment, rows)),
                None)


def _release_name(row):
    return 'vllm-ascend %s%s' % (row['vllm_ascend'], ' (site row)' if row.get('source') == SITE_SOURCE else '')


def _driver_too_old(row, given, rows, release_variable):
    """The driver refusal: the fact first, then both fixes - the driver upgraded to the row's minimum, or the newest
    release that this driver (and the given Python) runs - each naming what to set."""
    minimum, origin = driver_minimum(row, rows)
    fact = 'NPU driver %s is too old for %s (CANN %s), which needs %s or later' % (
        given['driver'], _release_name(row), row['cann'], minimum)
    if origin is not row:
        fact += ' (inferred from %s, CANN %s)' % (_release_name(origin), origin['cann'])
    fixes = ['upgrade the driver to %s with playbooks/upgrade.yml (%s)' % (minimum, DRIVER_VARIABLE)]
    older = _newest_release_for(dict((key, given[key]) for key in ('driver', 'python') if key in given), rows)
    if older is not None:
        fixes.append('choose %s (CANN %s), the newest release driver %s runs (%s)'
                     % (_release_name(older), older['cann'], given['driver'], release_variable or RELEASE_VARIABLE))
    return '%s: %s' % (fact, ', or '.join(fixes))


def _environment_problems(row, given, rows, release_variable=None):
    """Sentences for the given Python and driver that ``row`` rules out."""
    problems = []
    if 'python' in given and row['python'] is None:
        problems.append('vllm-ascend %s publishes no Python range, so Python %s cannot be confirmed'
                        % (row['vllm_ascend'], given['python']))
    elif 'python' in given and not python_in_range(given['python'], row['python']):
        problems.append('Python %s is outside %s, the Python range of vllm-ascend %s'
                        % (given['python'], row['python'], row['vllm_ascend']))
    if 'driver' in given and not _driver_fits(row, given['driver'], rows):
        problems.append(_driver_too_old(row, given, rows, release_variable))
    return problems


def _reference_row(given, ordered):
    """The row the given software versions are compared with when no row matches them all."""
    if 'vllm_ascend' in given:
        for row in ordered:
            if _same(row['vllm_ascend'], given['vllm_ascend']):
                return row
    best, best_count = None, 0
    for row in ordered:
        count = sum(1 for key in SOFTWARE if key in given and _same(row[key], given[key]))
        if count > best_count:
            best, best_count = row, count
    return best


def _mismatch_problems(given, ordered, rows, release_variable=None):
    reference = _reference_row(given, ordered)
    problems = []
    for key in SOFTWARE:
        if key not in given or (reference and _same(reference[key], given[key])):
            continue
        known = [row[key] for row in ordered if _same(row[key], given[key])]
        if reference and reference[key] is None:
            problems.append('vllm-ascend %s publishes no %s version, so %s %s cannot be confirmed'
                            % (reference['vllm_ascend'], LABELS[key], LABELS[key], given[key]))
        elif reference and (known or key != 'vllm_ascend'):
            problems.append('%s %s does not belong with vllm-ascend %s, whose row has %s %s'
                            % (LABELS[key], given[key], reference['vllm_ascend'], LABELS[key], reference[key]))
        else:
            problems.append('%s %s is in no row of the compatibility set (known: %s)'
                            % (LABELS[key], given[key],
                               ', '.join(dict.fromkeys(row[key] for row in ordered if row[key] is not None))))
    if reference:
        problems.extend(_environment_problems(reference, given, rows, release_variable))
    return problems


def read_waiver(waiver, today):
    """Read a waiver (a dict: ``reason``, ``expires`` as YYYY-MM-DD, optional ``covers``: component -> version) on
    ``today`` (a datetime.date). Returns (the waiver as plain strings, or None; the problems that make it void: not
    a dict, no reason, no or a bad date, past its expiry, bad covers). None gives (None, [])."""
    if waiver is None:
        return None, []
    if not isinstance(waiver, dict):
        return None, ['the waiver must be a dict with reason and expires (YYYY-MM-DD), not %s' % type(waiver).__name__]
    problems = ['the waiver has no key %s (its keys are %s)' % (key, ', '.join(WAIVER_KEYS))
                for key in sorted(set(waiver) - set(WAIVER_KEYS), key=str)]
    reason = waiver.get('reason')
    if not isinstance(reason, str) or not REASON_LENGTH[0] <= len(reason.strip()) <= REASON_LENGTH[1] \
            or _CONTROL.search(reason):
        problems.append('the waiver needs a reason: %d to %d characters on one line saying who accepted the risk and '
                        'why (a change ticket)' % REASON_LENGTH)
    expires = waiver.get('expires')
    if isinstance(expires, datetime.date):
        expires = expires.isoformat()[:10]
    expiry = None
    if isinstance(expires, str) and _DATE.match(expires):
        try:
            expiry = datetime.date(*(int(part) for part in expires.split('-')))
        except ValueError:
            pass
    if expiry is None:
        problems.append('the waiver needs expires, the last day it holds, as YYYY-MM-DD (not %r)' % (expires,))
    elif expiry < today:
        problems.append('the waiver expired on %s (reason: %s): renew it with a new date, or use a combination of the '
                        'compatibility set' % (expiry.isoformat(), str(reason).strip()))
    covers = waiver.get('covers') or {}
    if not isinstance(covers, dict) or any(key not in COMPONENTS for key in covers) \
            or not all(isinstance(value, str) and is_ascend_version(value) and not _CONTROL.search(value)
                       for value in covers.values()):
        problems.append('the waiver\'s covers must map components (%s) to version strings' % ', '.join(COMPONENTS))
        covers = {}
    if problems:
        return None, problems
    return {'reason': reason.strip(), 'expires': expiry.isoformat(),
            'covers': dict((key, value.strip()) for key, value in sorted(covers.items()))}, []


def check_combination(vllm_ascend=None, vllm=None, cann=None, torch=None, torch_npu=None, triton_ascend=None,
                      driver=None, python=None, rows=ROWS, waiver=None, today=None, release_variable=None):
    """Check a combination of versions against the compatibility set. Every argument is optional.

    Returns a dict:

    ``supported``   whether one row holds every given vllm-ascend / vLLM / CANN / torch / torch_npu / triton-ascend
                    version and admits the given Python and NPU driver (with nothing but a driver or Python given:
                    whether a row admits them), or a valid waiver covers the combination.
    ``row``         (described, see describe_row) the newest row that does so; when none does, the newest row
                    holding the given software versions (which Python or the driver rules out); null when no
                    row holds them all.
    ``problems``    one sentence per mismatch, naming the component, the given and the supported value;
                    empty when supported (also when waived).
    ``suggestion``  (described) the newest final or post release the given driver fits that also admits the given
                    Python (see the driver rule in the module docstring); null without a driver or when it fits no row.
    ``waived``      whether only the waiver makes it supported; ``waiver`` is then the waiver (reason, expires,
                    covers) and ``waived_problems`` what it waives. ``waiver_problems``: why a given waiver waives
                    nothing (void, expired, covering other versions), empty when it holds or is not needed.

    ``waiver`` is a dict (see read_waiver), checked on ``today`` (a datetime.date; the local date when None). A
    value that is not a version string (a YAML number such as 3.10) is a problem, never an exception, and no
    waiver covers it.

    ``rows`` are the rows to check against: ROWS, or with_site_rows's (a site's rows among them, marked ``source:
    site`` in every row returned and named "(site row)" in every sentence). ``release_variable`` is what the caller's
    user sets to choose another release (such as ``vllm_service_vllm_ascend_version``), named in the driver refusal's
    second fix; RELEASE_VARIABLE when None.
    """
    given, problems = _read_inputs({'vllm_ascend': vllm_ascend, 'vllm': vllm, 'cann': cann, 'torch': torch,
                                    'torch_npu': torch_npu, 'triton_ascend': triton_ascend, 'driver': driver,
                                    'python': python})
    ordered = _newest_first(rows)
    environment = dict((key, given[key]) for key in ('driver', 'python') if key in given)
    suggestion = None
    if 'driver' in given:
        newest = _newest_release_for(environment, rows)
        suggestion = describe_row(newest, rows) if newest is not None else None
    result = {'supported': False, 'row': None, 'problems': problems, 'suggestion': suggestion, 'waived': False,
              'waiver': None, 'waived_problems': [], 'waiver_problems': []}
    if problems:
        return result
    candidates = [row for row in ordered if _matches(row, given)]
    fitting = [row for row in candidates if _environment_fits(row, given, rows)]
    if fitting:
        result.update(supported=True, row=describe_row(fitting[0], rows))
    elif not any(key in given for key in SOFTWARE):
        result['problems'] = _environment_only_problems(environment, ordered, rows)
    elif candidates:
        result.update(row=describe_row(candidates[0], rows),
                      problems=_environment_problems(candidates[0], given, rows, release_variable))
    else:
        result['problems'] = _mismatch_problems(given, ordered, rows, release_variable)
    if waiver is not None:
        _apply_waiver(result, given, waiver, today or datetime.date.today())
    return result


def _apply_waiver(result, given, waiver, today):
    read, problems = read_waiver(waiver, today)
    if result['supported']:
        if problems:
            result['waiver_problems'] = problems + ['the combination is in the compatibility set, so the waiver is not '
                                                    'needed: remove it']
        return
    if read is not None:
        uncovered = ['%s %s' % (LABELS[key], value) for key, value in read['covers'].items()
                     if key not in given or not _same(given[key], value)]
        if uncovered:
            combination = ', '.join('%s %s' % (LABELS[key], given[key]) for key in COMPONENTS if key in given)
            problems = ['the waiver covers %s, not this combination (%s)' % (', '.join(uncovered), combination)]
    if problems:
        result['waiver_problems'] = problems
        return
    result.update(supported=True, waived=True, waiver=read, waived_problems=result['problems'], problems=[])


def _environment_only_problems(environment, ordered, rows):
    """Sentences for a Python and / or driver that no row admits (no software version given)."""
    ranges = [row['python'] for row in ordered if row['python'] is not None]
    if 'python' in environment and not any(python_in_range(environment['python'], spec) for spec in ranges):
        return ['Python %s is outside the Python range of every row of the compatibility set (%s)'
                % (environment['python'], ', '.join(dict.fromkeys(ranges)))]
    if 'driver' in environment and not any(_driver_fits(row, environment['driver'], rows) for row in ordered):
        lowest = ordered[0]
        for row in ordered:
            if compare_ascend_versions(driver_minimum(row, rows)[0], driver_minimum(lowest, rows)[0]) < 0:
                lowest = row
        return ['NPU driver %s is too old for every release of the compatibility set, the oldest of which, %s (CANN '
                '%s), needs %s or later: upgrade the driver to %s with playbooks/upgrade.yml (%s)'
                % (environment['driver'], _release_name(lowest), lowest['cann'], driver_minimum(lowest, rows)[0],
                   driver_minimum(lowest, rows)[0], DRIVER_VARIABLE)]
    return ['no row of the compatibility set admits both Python %s and NPU driver %s'
            % (environment['python'], environment['driver'])]
