# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The soak run's decisions: its inputs checked (``input_problems``), the growth of a memory series fitted per hour by
least squares after the warm-up (``fit_line``, ``growth``), the verdict against the thresholds (``verdict``), and the
journal's batches (_systemd.journal_argv) tallied against the failure catalogue (``JournalTally``). Pure: no
AnsibleModule, no I/O. Standard library only.

A verdict is PASS, FAIL or NOT_ENOUGH_SAMPLES: a growth fitted on fewer than MIN_SAMPLES readings after the warm-up
is no number to judge, and says so instead of giving one.
"""

from __future__ import annotations

import math

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils import _failure_catalogue

SOAK_SCHEMA = 'kunpeng_ascend.vllm/soak/1'
PASS = 'PASS'
FAIL = 'FAIL'
NOT_ENOUGH_SAMPLES = 'NOT_ENOUGH_SAMPLES'
NOT_MEASURED = 'NOT_MEASURED'

# A slope fitted on fewer readings than this (after the warm-up) is noise, not a trend.
MIN_SAMPLES = 5
# Seconds between samples at least: each sample runs systemctl, journalctl and, with NPUs, npu-smi.
MIN_INTERVAL = 1.0
# The warm-up is a fraction of the run, below this (a run must keep a part to fit on).
MAX_WARMUP = 0.9
HOUR = 3600.0
MIB = 1024.0 * 1024.0
# The option names of the thresholds and the other numbers, as the module takes them (the role prefixes them).
OPTIONS = ('duration', 'interval', 'rate', 'warmup', 'max_hbm_growth', 'max_rss_growth', 'max_restarts',
           'max_known_failures')


def _number(value):
    """``value`` as a finite float (numbers and numeric strings, as ``-e`` gives them), None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def prompts(rate, duration):
    """Requests that keep ``rate`` requests/s going for ``duration`` seconds: rate x duration, rounded up."""
    return max(1, int(math.ceil(rate * duration - 1e-9)))


def input_problems(values, prefix=''):
    """What is wrong with the soak's numbers ``values`` (keys OPTIONS), each message naming ``prefix`` + the key;
    [] when they can run."""
    problems = []
    numbers = dict((key, _number(values.get(key))) for key in OPTIONS)

    def name(key):
        return prefix + key

    for key, low, accepts in (('duration', 0.0, 'seconds, more than 0'), ('rate', 0.0, 'requests/s, more than 0')):
        if numbers[key] is None or numbers[key] <= low:
            problems.append('%s must be %s; got %r' % (name(key), accepts, values.get(key)))
    if numbers['interval'] is None or numbers['interval'] < MIN_INTERVAL:
        problems.append('%s must be seconds, %g or more (each sample runs systemctl, journalctl and npu-smi); got %r'
                        % (name('interval'), MIN_INTERVAL, values.get('interval')))
    if numbers['warmup'] is None or not 0.0 <= numbers['warmup'] <= MAX_WARMUP:
        problems.append('%s must be the fraction of the run left out of the fit, 0 to %g; got %r'
                        % (name('warmup'), MAX_WARMUP, values.get('warmup')))
    for key in ('max_hbm_growth', 'max_rss_growth'):
        if numbers[key] is None or numbers[key] < 0:
            problems.append('%s must be MiB per hour, 0 or more; got %r' % (name(key), values.get(key)))
    for key in ('max_restarts', 'max_known_failures'):
        if numbers[key] is None or numbers[key] < 0 or numbers[key] != int(numbers[key]):
            problems.append('%s must be a whole number, 0 or more; got %r' % (name(key), values.get(key)))
    if not problems:
        fitted = numbers['duration'] * (1.0 - numbers['warmup'])
        if fitted / numbers['interval'] + 1 < MIN_SAMPLES:
            problems.append(
                '%s (%g s) less its warm-up (%s %g) leaves %g s, which at %s %g s gives fewer than the %d samples the '
                'fit needs: make the run longer or the interval shorter'
                % (name('duration'), numbers['duration'], name('warmup'), numbers['warmup'], fitted, name('interval'),
                   numbers['interval'], MIN_SAMPLES))
    return problems


def fit_line(points):
    """Least squares line through ``points`` ((x, y) pairs): ``{'slope', 'intercept', 'samples'}``; None for fewer
    than two points or when every x is the same."""
    points = [(float(x), float(y)) for x, y in points]
    count = len(points)
    if count < 2:
        return None
    mean_x = math.fsum(x for x, _y in points) / count
    mean_y = math.fsum(y for _x, y in points) / count
    sxx = math.fsum((x - mean_x) ** 2 for x, _y in points)
    if sxx == 0:
        return None
    slope = math.fsum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    return {'slope': slope, 'intercept': mean_y - slope * mean_x, 'samples': count}


def growth(points, start):
    """The growth per hour of a series of (seconds, MiB) readings from ``start`` seconds on: ``{'status': PASS-able
    (None) or NOT_ENOUGH_SAMPLES, 'mib_per_hour', 'intercept_mib', 'samples', 'from_s', 'to_s'}``."""
    kept = sorted((t, y) for t, y in points if t is not None and y is not None and t >= start)
    fit = fit_line(kept) if len(kept) >= MIN_SAMPLES else None
    if fit is None:
        return {'status': NOT_ENOUGH_SAMPLES, 'mib_per_hour': None, 'intercept_mib': None, 'samples': len(kept),
                'from_s': kept[0][0] if kept else None, 'to_s': kept[-1][0] if kept else None}
    return {'status': None, 'mib_per_hour': fit['slope'] * HOUR, 'intercept_mib': fit['intercept'],
            'samples': len(kept), 'from_s': kept[0][0], 'to_s': kept[-1][0]}


def _limit_check(name, what, value, limit, unit, status=None, detail=''):
    if status is None:
        status = PASS if value <= limit else FAIL
    return {'check': name, 'what': what, 'value': value, 'limit': limit, 'unit': unit, 'status': status,
            'detail': detail}


def _growth_check(name, what, fit, limit, detail):
    if fit['status'] == NOT_ENOUGH_SAMPLES:
        return _limit_check(name, what, None, limit, 'MiB/h', NOT_ENOUGH_SAMPLES,
                            'not enough samples after the warm-up: %d, the fit needs %d' % (fit['samples'], MIN_SAMPLES))
    return _limit_check(name, what, fit['mib_per_hour'], limit, 'MiB/h', detail=detail)


def chip_key(sample):
    return '%s-%s' % (sample.get('npu_id'), sample.get('chip_id'))


def verdict(samples, npu_samples, journal, duration, warmup, limits):
    """The soak's verdict.

    ``samples``: ``[{'t', 'rss_mib', 'restarts', ...}]`` of the service's processes (None where a reading failed);
    ``npu_samples``: ``[{'t', 'npu_id', 'chip_id', 'hbm_used_mb'}]`` ([] on a host without NPUs); ``journal``:
    JournalTally.result() or None when the journal could not be read; ``duration`` and ``warmup`` (fraction) of the
    run; ``limits``: max_hbm_growth and max_rss_growth (MiB/h), max_restarts, max_known_failures.

    :returns: ``{'verdict', 'warmup_end_s', 'fits': {'host_rss': growth, 'hbm': {chip: growth}}, 'checks': [...]}``;
      FAIL when a check failed, else NOT_ENOUGH_SAMPLES when a growth could not be fitted, else PASS.
    """
    start = duration * warmup
    fits = {'host_rss': growth([(s.get('t'), s.get('rss_mib')) for s in samples], start), 'hbm': {}}
    checks = [_growth_check('host_rss_growth', "resident memory of the service's processes", fits['host_rss'],
                            limits['max_rss_growth'], '')]
    for key in sorted(set(chip_key(s) for s in npu_samples)):
        fits['hbm'][key] = growth([(s.get('t'), s.get('hbm_used_mb')) for s in npu_samples if chip_key(s) == key],
                                  start)
    if not fits['hbm']:
        checks.append(_limit_check('hbm_growth', 'HBM used, the fastest-growing NPU chip', None,
                                   limits['max_hbm_growth'], 'MiB/h', NOT_MEASURED, 'no NPU sampled on this host'))
    else:
        short = [key for key, fit in fits['hbm'].items() if fit['status'] == NOT_ENOUGH_SAMPLES]
        if short:
            checks.append(_growth_check('hbm_growth', 'HBM used, the fastest-growing NPU chip', fits['hbm'][short[0]],
                                        limits['max_hbm_growth'], ''))
        else:
            worst = max(sorted(fits['hbm']), key=lambda key: fits['hbm'][key]['mib_per_hour'])
            checks.append(_growth_check('hbm_growth', 'HBM used, the fastest-growing NPU chip', fits['hbm'][worst],
                                        limits['max_hbm_growth'], 'NPU-chip %s' % worst))
    readings = [s.get('restarts') for s in samples if s.get('restarts') is not None]
    if readings:
        checks.append(_limit_check('restarts', 'restarts of the unit during the run', max(readings) - readings[0],
                                   limits['max_restarts'], 'restarts'))
    else:
        checks.append(_limit_check('restarts', 'restarts of the unit during the run', None, limits['max_restarts'],
                                   'restarts', NOT_MEASURED, 'systemd gave no NRestarts'))
    if journal is None:
        checks.append(_limit_check('known_failures', "the failure catalogue's failures in the unit's journal", None,
                                   limits['max_known_failures'], 'lines', NOT_MEASURED, 'the journal could not be read'))
    else:
        failing = dict((key, count) for key, count in journal['counts'].items()
                       if _failure_catalogue.ENTRIES[key]['status'] == 'fail')
        checks.append(_limit_check('known_failures', "the failure catalogue's failures in the unit's journal",
                                   sum(failing.values()), limits['max_known_failures'], 'lines',
                                   detail=', '.join('%s x%d' % (key, failing[key]) for key in journal['found']
                                                    if key in failing)))
    statuses = [check['status'] for check in checks]
    overall = FAIL if FAIL in statuses else NOT_ENOUGH_SAMPLES if NOT_ENOUGH_SAMPLES in statuses else PASS
    return {'verdict': overall, 'warmup_end_s': start, 'fits': fits, 'checks': checks}


# ---------------------------------------------------------------------------------------------------- the journal

class JournalTally:
    """The failure catalogue's matches over the journal batches of a run, added up."""

    def __init__(self, per_kind=_failure_catalogue.LINES_PER_KIND):
        self.per_kind = per_kind
        self.lines_read = 0
        self.counts = {}
        self.matches = {}

    def add(self, lines):
        result = _failure_catalogue.scan(lines, per_kind=self.per_kind)
        self.lines_read += result['lines_read']
        for key, count in result['counts'].items():
            self.counts[key] = self.counts.get(key, 0) + count
            self.matches[key] = (self.matches.get(key, []) + result['matches'][key])[-self.per_kind:]

    def failures(self):
        """Lines so far of the entries whose status is fail."""
        return sum(count for key, count in self.counts.items() if _failure_catalogue.ENTRIES[key]['status'] == 'fail')

    def result(self):
        found = [entry['id'] for entry in _failure_catalogue.CATALOGUE if entry['id'] in self.counts]
        return {'lines_read': self.lines_read, 'found': found, 'counts': dict(self.counts),
                'matches': dict((key, self.matches[key]) for key in found),
                'explained': [{'id': key, 'status': _failure_catalogue.ENTRIES[key]['status'],
                               'cause': _failure_catalogue.ENTRIES[key]['cause'],
                               'fix': _failure_catalogue.ENTRIES[key]['fix']} for key in found]}
