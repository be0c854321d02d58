# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The compatibility set of vllm-ascend, as data, and pure functions that check a combination against it. Used on
the controller by the ``ascend_compat`` filters and on the managed host by the ``ascend_preflight`` module, so
it needs nothing but the standard library and ``_version``.

vllm-ascend's own policy is "pick one whole row": a vllm-ascend release is built and tested against one vLLM,
one CANN, one torch / torch_npu pair and a Python range, and recommends an NPU driver (HDK). ``ROWS`` holds the
rows of its versioning policy table. To support a new release, add one dict to ``ROWS`` (in any position; the
functions order rows by vllm-ascend version themselves) with these keys:

``vllm_ascend``  vllm-ascend version, without the leading ``v`` (as pip prints it): ``'0.23.0'``.
``vllm``         the vLLM version of the row: ``'0.23.0'``.
``python``       the supported Python versions, comma-separated clauses (``>=``, ``>``, ``<=``, ``<``, ``==``,
                 ``!=``): ``'>=3.10,<3.13'``.
``cann``         the CANN toolkit version: ``'9.1.0'``, ``'8.3.RC2'``.
``torch``        the torch version: ``'2.10.0'``.
``torch_npu``    the torch_npu version: ``'2.10.0.post4'``.
``driver``       the recommended NPU driver (HDK) version, ``None`` where the source gives none. Read as a minimum:
                 a newer driver runs an older CANN, a CANN newer than the driver supports fails (the most
                 reported vllm-ascend failure: vllm-ascend issues 13393, 5468 and 3190).
``firmware``     the recommended NPU firmware version; the source publishes none, so ``None`` in every row
                 (kept so that a row can carry one; a ``None`` is never a constraint).
``image_tag``    the tag of the row's image in ``IMAGE_REPOSITORY`` (variants add a suffix of ``IMAGE_SUFFIXES``).
``source``       where the row comes from.

Versions compare with ``_version.compare_ascend_versions``: case-insensitive, ``v`` prefixes and ``+local``
parts ignored (``v0.9.1+empty`` is vLLM ``0.9.1``), ``8.3.rc2`` equals ``8.3.RC2``, ``25.5`` equals ``25.5.0``.

The driver rule. A row's *driver minimum* is its ``driver``; where that is unknown, it is the highest known
``driver`` among the rows whose CANN is not newer (a newer CANN never needs an older driver than an older CANN
did), marked as inferred; a row with no such row has no minimum. A driver *fits* a row when it is at least the
row's minimum (or the row has none). ``rows_for_driver`` lists the rows a driver fits, newest first;
``check_combination``'s suggestion is the first of them that also fits the given Python.
"""

from __future__ import annotations

import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._version import (
    compare_ascend_versions,
    is_ascend_version,
    parse_ascend_version,
)

SOURCE = ("vllm-ascend docs/source/community/versioning_policy.md (release compatibility matrix) and its "
          "installation pages")

IMAGE_REPOSITORY = 'quay.io/ascend/vllm-ascend'
# Image variants: tag + suffix (openEuler base, Atlas A3, both, Atlas 300I / 310P).
IMAGE_SUFFIXES = ('', '-openeuler', '-a3', '-a3-openeuler', '-310p')

ROWS = (
    {'vllm_ascend': '0.23.0', 'vllm': '0.23.0', 'python': '>=3.10,<3.13', 'cann': '9.1.0',
     'torch': '2.10.0', 'torch_npu': '2.10.0.post4', 'driver': '26.0.RC1', 'firmware': None,
     'image_tag': 'v0.23.0', 'source': SOURCE},
    {'vllm_ascend': '0.18.0', 'vllm': '0.18.0', 'python': '>=3.10,<3.12', 'cann': '8.5.1',
     'torch': '2.9.0', 'torch_npu': '2.9.0.post1', 'driver': None, 'firmware': None,
     'image_tag': 'v0.18.0', 'source': SOURCE},
    {'vllm_ascend': '0.13.0', 'vllm': '0.13.0', 'python': '>=3.10,<3.12', 'cann': '8.5.0',
     'torch': '2.8.0', 'torch_npu': '2.8.0.post2', 'driver': '25.5', 'firmware': None,
     'image_tag': 'v0.13.0', 'source': SOURCE},
    {'vllm_ascend': '0.11.0', 'vllm': '0.11.0', 'python': '>=3.9,<3.12', 'cann': '8.3.RC2',
     'torch': '2.7.1', 'torch_npu': '2.7.1.post1', 'driver': None, 'firmware': None,
     'image_tag': 'v0.11.0', 'source': SOURCE},
    {'vllm_ascend': '0.9.1', 'vllm': '0.9.1', 'python': '>=3.9,<3.12', 'cann': '8.2.RC1',
     'torch': '2.5.1', 'torch_npu': '2.5.1.post1', 'driver': None, 'firmware': None,
     'image_tag': 'v0.9.1', 'source': SOURCE},
    # The source writes this row's driver as ">= 24.1.RC1".
    {'vllm_ascend': '0.7.3', 'vllm': '0.7.3', 'python': '>=3.9,<3.12', 'cann': '8.1.RC1',
     'torch': '2.5.1', 'torch_npu': '2.5.1', 'driver': '24.1.RC1', 'firmware': None,
     'image_tag': 'v0.7.3', 'source': SOURCE},
)

# The components a row pins exactly, in message order, and how messages name every component.
SOFTWARE = ('vllm_ascend', 'vllm', 'cann', 'torch', 'torch_npu')
LABELS = {'vllm_ascend': 'vllm-ascend', 'vllm': 'vLLM', 'cann': 'CANN', 'torch': 'torch', 'torch_npu': 'torch_npu',
          'driver': 'NPU driver', 'python': 'Python'}
COMPONENTS = SOFTWARE + ('driver', 'python')

_PYTHON_CLAUSE = re.compile(r'^\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$')
_OPERATORS = {
    '>=': lambda order: order >= 0, '<=': lambda order: order <= 0, '==': lambda order: order == 0,
    '!=': lambda order: order != 0, '>': lambda order: order > 0, '<': lambda order: order < 0,
}
_FAILURE_NOTE = 'a CANN newer than the driver supports is the most reported vllm-ascend failure'


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
    """A copy of ``row`` plus ``image`` (the full image reference), ``driver_minimum`` and ``driver_minimum_from``.

    ``driver_minimum_from`` is the vllm-ascend version of the row whose ``driver`` gave the minimum (the row's own
    when it has one), None when there is no minimum.
    """
    minimum, origin = driver_minimum(row, rows)
    return dict(row, image='%s:%s' % (IMAGE_REPOSITORY, row['image_tag']), driver_minimum=minimum,
                driver_minimum_from=origin['vllm_ascend'] if origin else None)


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
    """One line naming every component of ``row``, for messages."""
    minimum, origin = driver_minimum(row, rows)
    if minimum is None:
        driver = 'no recommended driver'
    elif origin is row:
        driver = 'NPU driver >= %s' % minimum
    else:
        driver = 'NPU driver >= %s (inferred)' % minimum
    return ('vllm-ascend %s (vLLM %s, Python %s, CANN %s, torch %s, torch_npu %s, %s, image %s:%s)'
            % (row['vllm_ascend'], row['vllm'], row['python'], row['cann'], row['torch'], row['torch_npu'],
               driver, IMAGE_REPOSITORY, row['image_tag']))


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
    return compare_ascend_versions(left, right) == 0


def _matches(row, given):
    return all(_same(row[key], given[key]) for key in SOFTWARE if key in given)


def _environment_problems(row, given, rows):
    """Sentences for the given Python and driver that ``row`` rules out."""
    problems = []
    if 'python' in given and not python_in_range(given['python'], row['python']):
        problems.append('Python %s is outside %s, the Python range of vllm-ascend %s'
                        % (given['python'], row['python'], row['vllm_ascend']))
    if 'driver' in given and not _driver_fits(row, given['driver'], rows):
        minimum, origin = driver_minimum(row, rows)
        if origin is row:
            problems.append('NPU driver %s is older than %s, the driver recommended for vllm-ascend %s (CANN %s): %s'
                            % (given['driver'], minimum, row['vllm_ascend'], row['cann'], _FAILURE_NOTE))
        else:
            problems.append('NPU driver %s is older than %s, the driver vllm-ascend %s recommends for its older CANN %s '
                            '(the source recommends none for vllm-ascend %s, CANN %s): %s'
                            % (given['driver'], minimum, origin['vllm_ascend'], origin['cann'], row['vllm_ascend'],
                               row['cann'], _FAILURE_NOTE))
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


def _mismatch_problems(given, ordered, rows):
    reference = _reference_row(given, ordered)
    problems = []
    for key in SOFTWARE:
        if key not in given or (reference and _same(reference[key], given[key])):
            continue
        known = [row[key] for row in ordered if _same(row[key], given[key])]
        if reference and (known or key != 'vllm_ascend'):
            problems.append('%s %s does not belong with vllm-ascend %s, whose row has %s %s'
                            % (LABELS[key], given[key], reference['vllm_ascend'], LABELS[key], reference[key]))
        else:
            problems.append('%s %s is in no row of the compatibility set (known: %s)'
                            % (LABELS[key], given[key], ', '.join(dict.fromkeys(row[key] for row in ordered))))
    if reference:
        problems.extend(_environment_problems(reference, given, rows))
    return problems


def check_combination(vllm_ascend=None, vllm=None, cann=None, torch=None, torch_npu=None, driver=None, python=None,
                      rows=ROWS):
    """Check a combination of versions against the compatibility set. Every argument is optional.

    Returns a dict:

    ``supported``   whether one row holds every given vllm-ascend / vLLM / CANN / torch / torch_npu version and
                    admits the given Python and NPU driver (with nothing but a driver or Python given: whether a
                    row admits them).
    ``row``         (described, see describe_row) the newest row that does so; when none does, the newest row
                    holding the given software versions (which Python or the driver rules out); null when no
                    row holds them all.
    ``problems``    one sentence per mismatch, naming the component, the given and the supported value;
                    empty when supported.
    ``suggestion``  (described) the newest row the given driver fits that also admits the given Python (see the
                    driver rule in the module docstring); null without a driver or when it fits no row.

    A value that is not a version string (a YAML number such as 3.10) is a problem, never an exception.
    """
    given, problems = _read_inputs({'vllm_ascend': vllm_ascend, 'vllm': vllm, 'cann': cann, 'torch': torch,
                                    'torch_npu': torch_npu, 'driver': driver, 'python': python})
    ordered = _newest_first(rows)
    environment = dict((key, given[key]) for key in ('driver', 'python') if key in given)
    suggestion = None
    if 'driver' in given:
        suggestion = next((describe_row(row, rows) for row in ordered if not _environment_problems(row, environment, rows)),
                          None)
    result = {'supported': False, 'row': None, 'problems': problems, 'suggestion': suggestion}
    if problems:
        return result
    candidates = [row for row in ordered if _matches(row, given)]
    fitting = [row for row in candidates if not _environment_problems(row, given, rows)]
    if fitting:
        result.update(supported=True, row=describe_row(fitting[0], rows))
    elif not any(key in given for key in SOFTWARE):
        result['problems'] = _environment_only_problems(environment, ordered, rows)
    elif candidates:
        result.update(row=describe_row(candidates[0], rows), problems=_environment_problems(candidates[0], given, rows))
    else:
        result['problems'] = _mismatch_problems(given, ordered, rows)
    return result


def _environment_only_problems(environment, ordered, rows):
    """Sentences for a Python and / or driver that no row admits (no software version given)."""
    if 'python' in environment and not any(python_in_range(environment['python'], row['python']) for row in ordered):
        return ['Python %s is outside the Python range of every row of the compatibility set (%s)'
                % (environment['python'], ', '.join(dict.fromkeys(row['python'] for row in ordered)))]
    if 'driver' in environment and not any(_driver_fits(row, environment['driver'], rows) for row in ordered):
        lowest = ordered[0]
        for row in ordered:
            if compare_ascend_versions(driver_minimum(row, rows)[0], driver_minimum(lowest, rows)[0]) < 0:
                lowest = row
        return ['NPU driver %s is older than the driver minimum of every row of the compatibility set; the lowest is '
                '%s, of vllm-ascend %s (CANN %s)' % (environment['driver'], driver_minimum(lowest, rows)[0],
                                                     lowest['vllm_ascend'], lowest['cann'])]
    return ['no row of the compatibility set admits both Python %s and NPU driver %s'
            % (environment['python'], environment['driver'])]
