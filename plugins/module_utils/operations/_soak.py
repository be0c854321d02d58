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

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _numbers
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _failure_catalogue

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
# Requests one soak sends at most (rate x duration): vllm bench serve builds every request, its random token ids
# included, in memory before it sends the first; ten million is weeks at a rate a server keeps.
MAX_REQUESTS = 10 * 1000 * 1000
# The load generator's time limit unless one is given: the run's duration x TIMEOUT_FACTOR + TIMEOUT_MARGIN seconds.
TIMEOUT_FACTOR = 1.5
TIMEOUT_MARGIN = 300
# The option names of the thresholds and the other numbers, as the module takes them (the role prefixes them).
OPTIONS = ('duration', 'interval', 'rate', 'warmup', 'max_hbm_growth', 'max_rss_growth', 'max_restarts',
           'max_known_failures')
# The load's own numbers, which vllm_soak shares with vllm_benchmark (the role names two of them vllm_benchmark_*).
LOAD_OPTIONS = ('max_concurrency', 'input_len', 'output_len', 'timeout')
# The module's defaults: a value not given is checked as the module would take it. duration and rate have none.
DEFAULTS = {'interval': 30.0, 'warmup': 0.2, 'max_hbm_growth': 128.0, 'max_rss_growth': 512.0, 'max_restarts': 0,
            'max_known_failures': 0, 'max_concurrency': 256, 'input_len': 128, 'output_len': 128, 'timeout': None}
# Each number: the range _numbers checks, and what the message says it must be (the role's variables name no unit).
_RULES = (
    ('duration', dict(above=0, maximum=_numbers.MAX_SECONDS),
     'seconds, more than 0 and at most %d' % _numbers.MAX_SECONDS),
    ('rate', dict(above=0), 'requests/s, more than 0'),
    ('interval', dict(minimum=MIN_INTERVAL, maximum=_numbers.MAX_SECONDS),
     'seconds, %g or more (each sample runs systemctl, journalctl and npu-smi)' % MIN_INTERVAL),
    ('warmup', dict(minimum=0, maximum=MAX_WARMUP), 'the fraction of the run left out of the fit, 0 to %g' % MAX_WARMUP),
    ('max_hbm_growth', dict(minimum=0), 'MiB per hour, 0 or more'),
    ('max_rss_growth', dict(minimum=0), 'MiB per hour, 0 or more'),
    ('max_restarts', dict(minimum=0, integer=True), 'a whole number, 0 or more'),
    ('max_known_failures', dict(minimum=0, integer=True), 'a whole number, 0 or more'),
    ('max_concurrency', dict(minimum=1, integer=True), 'a whole number, 1 or more'),
    ('input_len', dict(minimum=1, integer=True), 'a whole number of tokens, 1 or more'),
    ('output_len', dict(minimum=1, integer=True), 'a whole number of tokens, 1 or more'),
    ('timeout', dict(minimum=1, maximum=_numbers.MAX_SECONDS, integer=True),
     'null or a whole number of seconds, 1 to %d' % _numbers.MAX_SECONDS),
)


def prompts(rate, duration):
    """Requests that keep ``rate`` requests/s going for ``duration`` seconds: rate x duration, rounded up (at most
    MAX_REQUESTS once input_problems found none)."""
    return max(1, int(math.ceil(float(rate) * float(duration) - 1e-9)))


def load_timeout(values):
    """Seconds the load generator may run: ``timeout``, else duration x TIMEOUT_FACTOR + TIMEOUT_MARGIN (at most
    _numbers.MAX_SECONDS once input_problems found none)."""
    if values.get('timeout') is not None:
        return int(values['timeout'])
    return int(math.ceil(float(values['duration']) * TIMEOUT_FACTOR + TIMEOUT_MARGIN))


def _float(value):
    """A number _numbers accepted as a float; an integer too large for one (a rate has no bound of its own, the
    requests it makes have) is infinity, which the bounds then refuse."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def input_problems(values, prefix='', names=None):
    """What is wrong with the soak's numbers ``values`` (keys OPTIONS and LOAD_OPTIONS; one not given is checked as
    its DEFAULTS value, the module's), each message naming ``prefix`` + the key, or ``names[key]``; [] when they can
    run. The one check of the role's validation (filter soak_input_problems) and of module vllm_soak: every number
    through _numbers (NaN, infinity, booleans, out of range), then what they make together - the samples the fit
    gets, the requests (rate x duration) and the load generator's time limit."""
    names = names or {}
    given = dict(DEFAULTS, **dict((key, value) for key, value in values.items() if key in OPTIONS + LOAD_OPTIONS))
    problems = []

    def name(key):
        return names.get(key) or prefix + key

    for key, bounds, accepts in _RULES:
        value = given.get(key)
        if key == 'timeout' and value is None:
            continue
        if _numbers.number_problem(name(key), value, **bounds):
            problems.append('%s must be %s; got %r' % (name(key), accepts, value))
    if problems:
        return problems
    numbers = dict((key, _float(given[key])) for key in ('duration', 'rate', 'interval', 'warmup'))
    fitted = numbers['duration'] * (1.0 - numbers['warmup'])
    if fitted / numbers['interval'] + 1 < MIN_SAMPLES:
        problems.append(
            '%s (%g s) less its warm-up (%s %g) leaves %g s, which at %s %g s gives fewer than the %d samples the '
            'fit needs: make the run longer or the interval shorter'
            % (name('duration'), numbers['duration'], name('warmup'), numbers['warmup'], fitted, name('interval'),
               numbers['interval'], MIN_SAMPLES))
    requests = numbers['rate'] * numbers['duration']
    if not requests <= MAX_REQUESTS:     # infinity too, when the product overflows
        problems.append('%s x %s (%g x %g s) asks for %g requests, more than the %d one soak sends at most (the load '
                        'generator builds them all in memory first): lower the rate or shorten the run'
                        % (name('rate'), name('duration'), numbers['rate'], numbers['duration'], requests, MAX_REQUESTS))
    if given.get('timeout') is None:
        limit = numbers['duration'] * TIMEOUT_FACTOR + TIMEOUT_MARGIN
        if limit > _numbers.MAX_SECONDS:
            problems.append("%s (%g s) x %g + %d s, the load generator's time limit, is more than %d s: shorten the "
                            "run or give a timeout" % (name('duration'), numbers['duration'], TIMEOUT_FACTOR,
                                                       TIMEOUT_MARGIN, _numbers.MAX_SECONDS))
    elif int(float(given['timeout'])) <= numbers['duration']:
        problems.append('%s (%s s) must be more than %s (%g s): the load generator would be stopped before the run '
                        'ends' % (name('timeout'), given['timeout'], name('duration'), numbers['duration']))
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
