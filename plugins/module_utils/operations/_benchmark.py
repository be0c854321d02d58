# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The numbers of a serving benchmark: ``vllm bench serve``'s result file read into one flat set of metrics, NPU and
load-generator samples summarised over the benchmark's own window, targets evaluated, and, over many runs, the
concurrency sweep, the tuning grid and their CSV tables. Pure functions: no AnsibleModule, no I/O.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS, number_problem


LATENCIES = ('ttft', 'tpot', 'itl', 'e2el')
STATISTICS = ('mean', 'p50', 'p90', 'p99')
# The percentiles vllm bench serve is asked for (--metric-percentiles); STATISTICS without the mean.
PERCENTILES = ('50', '90', '99')
LATENCY_METRICS = tuple('%s_ms_%s' % (latency, statistic) for latency in LATENCIES for statistic in STATISTICS)
COUNT_METRICS = ('completed', 'failed')
RATE_METRICS = ('duration_s', 'request_throughput', 'output_throughput', 'total_token_throughput')
NPU_METRICS = ('npu_aicore_percent_mean', 'npu_aicore_percent_peak', 'npu_hbm_used_mb_mean', 'npu_hbm_used_mb_peak')
LOADGEN_METRICS = ('loadgen_cpu_percent',)
METRICS = COUNT_METRICS + RATE_METRICS + LATENCY_METRICS + NPU_METRICS + LOADGEN_METRICS

# vllm bench serve's key for each of our rate metrics.
_BENCH_RATE_KEYS = {'duration_s': 'duration', 'request_throughput': 'request_throughput',
                    'output_throughput': 'output_throughput', 'total_token_throughput': 'total_token_throughput'}

# Above this share of one CPU core, the load generator (one asyncio process) is close to being the bottleneck.
LOADGEN_BUSY_PERCENT = 90.0

TARGET_OPERATORS = {'max': '<=', 'min': '>='}
MAX_GRID_POINTS = 256

PASS = 'PASS'
FAIL = 'FAIL'
NOT_MEASURED = 'NOT_MEASURED'


class BenchmarkError(Exception):
    """Input that cannot be used: ``msg`` says which and why."""

    def __init__(self, msg):
        super().__init__(msg)
        self.msg = msg


def _number(value):
    """``value`` as a finite float, or None (vllm bench serve writes null, "inf" or nothing for what it lacks)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def metrics_from_vllm_bench(result, warn):
    """The metrics (see METRICS; the NPU and load-generator ones None) of vllm bench serve's result object.

    A result without ``completed`` or ``duration`` is not a serving benchmark result (BenchmarkError); a latency
    percentile it lacks is None with a warning (vllm bench serve writes only the --percentile-metrics asked for).
    """
    if not isinstance(result, dict):
        raise BenchmarkError('the result of vllm bench serve is a JSON %s, not an object' % type(result).__name__)
    missing = [key for key in ('completed', 'duration') if _number(result.get(key)) is None]
    if missing:
        raise BenchmarkError('the result of vllm bench serve has no number for %s: is it the output of '
                             '`vllm bench serve --save-result`?' % ', '.join(missing))
    metrics = dict.fromkeys(METRICS)
    for key in COUNT_METRICS:
        value = _number(result.get(key))
        metrics[key] = None if value is None else int(value)
    for key, bench_key in _BENCH_RATE_KEYS.items():
        metrics[key] = _number(result.get(bench_key))
    absent = []
    for latency in LATENCIES:
        for statistic in STATISTICS:
            bench_key = '%s_%s_ms' % (statistic, latency)
            metrics['%s_ms_%s' % (latency, statistic)] = _number(result.get(bench_key))
            if bench_key not in result:
                absent.append(bench_key)
    if absent:
        warn('vllm bench serve reported no %s' % ', '.join(absent))
    return metrics


def scalar_fields(result):
    """vllm bench serve's result without its per-request lists (latencies, generated texts, ...)."""
    return dict((key, value) for key, value in result.items() if not isinstance(value, (list, dict)))


def in_window(samples, window):
    """The samples whose ``t`` lies in ``window`` (start, end seconds), inclusive."""
    start, end = window
    return [sample for sample in samples if start <= sample['t'] <= end]


def summarize_npu_samples(samples):
    """Mean and peak AI core utilisation and HBM use of NPU samples (one dict per chip per sampling instant).

    Means are over every chip reading; peaks are the highest single reading. None when there is no reading.
    """
    summary = dict.fromkeys(NPU_METRICS)
    for field, prefix in (('aicore_percent', 'npu_aicore_percent'), ('hbm_used_mb', 'npu_hbm_used_mb')):
        values = [sample[field] for sample in samples if _number(sample.get(field)) is not None]
        if values:
            summary[prefix + '_mean'] = sum(values) / len(values)
            summary[prefix + '_peak'] = float(max(values))
    return summary


def cpu_percent_in_window(cpu_samples, window):
    """Share of one core (percent) the load generator used in ``window``, from cumulative CPU-seconds samples.

    ``cpu_samples``: ``[{'t': seconds, 'cpu_seconds': cumulative}]`` in time order. The CPU time at the window's
    edges is interpolated between the samples around them; None when the samples do not cover the window.
    """
    start, end = window
    if end <= start or len(cpu_samples) < 2 or cpu_samples[0]['t'] > start or cpu_samples[-1]['t'] < end:
        return None

    def at(moment):
        for before, after in zip(cpu_samples, cpu_samples[1:]):
            if before['t'] <= moment <= after['t']:
                span = after['t'] - before['t']
                share = (moment - before['t']) / span if span > 0 else 1.0
                return before['cpu_seconds'] + share * (after['cpu_seconds'] - before['cpu_seconds'])
        return None

    return 100.0 * (at(end) - at(start)) / (end - start)


def cpu_percent_series(cpu_samples):
    """Load-generator CPU (percent of one core) between consecutive cumulative samples, stamped at the later one."""
    series = []
    for before, after in zip(cpu_samples, cpu_samples[1:]):
        span = after['t'] - before['t']
        if span > 0:
            series.append({'t': round(after['t'], 3),
                           'cpu_percent': round(100.0 * (after['cpu_seconds'] - before['cpu_seconds']) / span, 1)})
    return series


def parse_targets(targets, option='targets'):
    """Targets as ``[{'metric', 'op', 'value'}]`` from ``[{'metric': name, 'max': number} | {..., 'min': number}]``.

    BenchmarkError naming ``option`` and the entry for anything else: an unknown metric, neither or both of max and
    min, a value that is not a number.
    """
    if not isinstance(targets, list):
        raise BenchmarkError('%s must be a list of {metric, max or min}, not %s' % (option, type(targets).__name__))
    parsed = []
    for index, target in enumerate(targets):
        where = '%s[%d]' % (option, index)
        if not isinstance(target, dict):
            raise BenchmarkError('%s must be a dict {metric, max or min}, not %r' % (where, target))
        unknown = sorted(str(key) for key in target if key not in ('metric', 'max', 'min'))
        if unknown:
            raise BenchmarkError('%s has unknown key(s) %s: the keys are metric, and max or min'
                                 % (where, ', '.join(unknown)))
        metric = target.get('metric')
        if metric not in METRICS:
            raise BenchmarkError('%s: metric %r is not one of %s' % (where, metric, ', '.join(METRICS)))
        bounds = [key for key in ('max', 'min') if key in target]
        if len(bounds) != 1:
            raise BenchmarkError('%s (%s) needs exactly one of max and min' % (where, metric))
        value = _number(target[bounds[0]])
        if value is None:
            raise BenchmarkError('%s (%s): %s must be a number, not %r' % (where, metric, bounds[0], target[bounds[0]]))
        parsed.append({'metric': metric, 'op': TARGET_OPERATORS[bounds[0]], 'value': value})
    return parsed


def evaluate_targets(metrics, targets):
    """Each parsed target with the measured value and PASS, FAIL or NOT_MEASURED; and the run's status (FAIL when a
    target failed or a request failed, else PASS)."""
    evaluated = []
    for target in targets:
        actual = _number(metrics.get(target['metric']))
        if actual is None:
            status = NOT_MEASURED
        elif target['op'] == '<=':
            status = PASS if actual <= target['value'] else FAIL
        else:
            status = PASS if actual >= target['value'] else FAIL
        evaluated.append(dict(target, actual=actual, status=status))
    failed_requests = (metrics.get('failed') or 0) > 0
    status = FAIL if failed_requests or any(target['status'] == FAIL for target in evaluated) else PASS
    return evaluated, status


def grid_points(axes, option='grid'):
    """Every combination of the grid's axes (``{name: [values]}``, in the axes' order) as
    ``[{'index': 1.., 'params': {name: value}}]``; BenchmarkError naming ``option`` for an empty or oversized grid."""
    if not isinstance(axes, dict) or not axes:
        raise BenchmarkError('%s must be a non-empty dict {parameter: [values]}' % option)
    for name, values in axes.items():
        if not isinstance(name, str) or not name:
            raise BenchmarkError('%s: axis name %r is not a non-empty string' % (option, name))
        if not isinstance(values, list) or not values:
            raise BenchmarkError('%s.%s must be a non-empty list of values, not %r' % (option, name, values))
        duplicates = sorted(set(repr(value) for value in values if values.count(value) > 1))
        if duplicates:
            raise BenchmarkError('%s.%s lists %s more than once' % (option, name, ', '.join(duplicates)))
    count = 1
    for values in axes.values():
        count *= len(values)
    if count > MAX_GRID_POINTS:
        raise BenchmarkError('%s has %d points, more than %d: split it into several runs'
                             % (option, count, MAX_GRID_POINTS))
    names = list(axes)
    return [{'index': index, 'params': dict(zip(names, combination))}
            for index, combination in enumerate(itertools.product(*axes.values()), start=1)]


def max_concurrency_meeting_targets(runs):
    """The highest concurrency of a sweep up to which every run passed (the sweep's runs of one host and one grid
    point); None when the lowest already failed."""
    best = None
    for run in sorted(runs, key=lambda run: run['config']['load']['max_concurrency']):
        if run['status'] != PASS:
            break
        best = run['config']['load']['max_concurrency']
    return best


def point_score(runs, objective):
    """A grid point's value for ``objective`` (``{'maximize'|'minimize': metric, 'subject_to_targets': bool}``):
    the best value among its runs that qualify (all, or those that passed their targets); None when none does."""
    direction, metric = objective_direction(objective)
    values = [_number(run['metrics'].get(metric)) for run in runs
              if not objective.get('subject_to_targets', True) or run['status'] == PASS]
    values = [value for value in values if value is not None]
    if not values:
        return None
    return max(values) if direction == 'maximize' else min(values)


def objective_direction(objective, option='objective'):
    """``('maximize'|'minimize', metric)`` of an objective; BenchmarkError naming ``option`` when it is not one."""
    if not isinstance(objective, dict):
        raise BenchmarkError('%s must be a dict {maximize: metric} or {minimize: metric}' % option)
    directions = [key for key in ('maximize', 'minimize') if key in objective]
    unknown = sorted(str(key) for key in objective if key not in ('maximize', 'minimize', 'subject_to_targets'))
    if len(directions) != 1 or unknown:
        raise BenchmarkError('%s must have exactly one of maximize and minimize (and optionally subject_to_targets)'
                             % option)
    metric = objective[directions[0]]
    if metric not in METRICS:
        raise BenchmarkError('%s: %s %r is not one of %s' % (option, directions[0], metric, ', '.join(METRICS)))
    return directions[0], metric


def best_point(points, runs, objective):
    """The grid point (of ``points``) whose runs score best for ``objective``, with its host and score; None when no
    point has a qualifying run. Ties go to the earlier point."""
    direction, _metric = objective_direction(objective)
    best = None
    for point in points:
        for host in sorted(set(run['host'] for run in runs)):
            score = point_score([run for run in runs if run['host'] == host and run.get('grid_point')
                                 and run['grid_point']['index'] == point['index']], objective)
            if score is None:
                continue
            if best is None or (score > best['score'] if direction == 'maximize' else score < best['score']):
                best = dict(point, host=host, score=score)
    return best


def _cell(value):
    if value is None:
        return ''
    if isinstance(value, float):
        return '%.6g' % value
    return str(value)


def csv_text(rows, columns):
    """``rows`` (dicts) as CSV text with a header of ``columns``; missing values are empty cells."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator='\n')
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return buffer.getvalue()


def results_rows(runs):
    """One flat row per run: host, label, grid point, concurrency, status, the metrics."""
    rows = []
    for run in runs:
        row = {'host': run['host'], 'label': run['label'],
               'grid_point': run['grid_point']['index'] if run.get('grid_point') else None,
               'max_concurrency': run['config']['load']['max_concurrency'], 'status': run['status']}
        row.update(run['metrics'])
        rows.append(row)
    return rows


RESULTS_COLUMNS = ('host', 'label', 'grid_point', 'max_concurrency', 'status') + METRICS


def optimization_rows(points, runs, objective):
    """One row per grid point per host: the point's parameters, then the metrics of its best qualifying run (or,
    when none qualifies, of its run at the highest concurrency), its status and score."""
    direction, metric = objective_direction(objective)
    rows = []
    for point in points:
        for host in sorted(set(run['host'] for run in runs)):
            mine = [run for run in runs if run['host'] == host and run.get('grid_point')
                    and run['grid_point']['index'] == point['index']]
            if not mine:
                continue
            score = point_score(mine, objective)
            if score is not None:
                chosen = next(run for run in mine if _number(run['metrics'].get(metric)) == score
                              and (not objective.get('subject_to_targets', True) or run['status'] == PASS))
            else:
                chosen = max(mine, key=lambda run: run['config']['load']['max_concurrency'])
            row = {'point': point['index'], 'host': host, 'status': chosen['status'],
                   'max_concurrency': chosen['config']['load']['max_concurrency'], 'score': score}
            row.update(point['params'])
            row.update(chosen['metrics'])
            rows.append(row)
    return rows


def optimization_columns(points):
    names = list(points[0]['params']) if points else []
    return ['point', 'host'] + names + ['status', 'max_concurrency', 'score'] + list(METRICS)


def npu_sample_rows(info, moment, npu_ids=None):
    """The readings of one parsed ``npu-smi info`` table (read_npu_smi_info's result) at ``moment`` seconds: one
    dict per chip, restricted to ``npu_ids`` when given."""
    rows = []
    for chip in info['chips']:
        if npu_ids and chip.get('npu_id') not in npu_ids:
            continue
        rows.append({'t': round(moment, 3), 'npu_id': chip.get('npu_id'), 'chip_id': chip.get('chip_id'),
                     'aicore_percent': _number(chip.get('aicore_percent')),
                     'hbm_used_mb': _number(chip.get('hbm_used_mb')), 'hbm_total_mb': _number(chip.get('hbm_total_mb'))})
    return rows


def sample_until_done(poll, samplers, interval, deadline, clock, sleep):
    """Call every sampler every ``interval`` seconds until ``poll()`` is not None (the process ended) or ``clock()``
    passes ``deadline``; each sampler gets the seconds since the start.

    The samplers run once more after the process ended, so that a run shorter than the interval still has a
    reading at each end. :returns: the exit code, or None when the deadline passed first.
    """
    start = clock()
    tick = start
    while True:
        now = clock()
        for sampler in samplers:
            sampler(now - start)
        rc = poll()
        if rc is not None:
            for sampler in samplers:
                sampler(clock() - start)
            return rc
        if now >= deadline:
            return None
        tick += interval
        # A slow sampler (npu-smi can take a second) skips the ticks it overran instead of bunching up.
        while tick <= clock():
            tick += interval
        sleep(max(0.0, min(tick, deadline) - clock()))


# ----------------------------------------------------------------------------- priority classes
# vLLM with --scheduling-policy priority takes a request's ``priority`` (an integer, default 0; lower is served
# earlier). The benchmark sends a share of its requests with a priority below 0 in a load generator of their own,
# beside the rest's, and reports each class apart.
PRIORITY_CLASS = 'priority'
REST_CLASS = 'rest'
CLASSES = (PRIORITY_CLASS, REST_CLASS)
DEFAULT_PRIORITY = 0
# Below this share of the priority class's time run beside the rest, the classes' latencies compare little.
PRIORITY_OVERLAP_LOW = 0.5
# The per-request lists of vllm bench serve's result (--save-detailed) that the classes' merge reads.
DETAIL_KEYS = ('ttfts', 'itls', 'latencies', 'start_times', 'output_lens', 'input_lens', 'errors')


def priority_problems(share, priority, prefix='vllm_benchmark_'):
    """What is wrong with the priority share (null: no priority class) and the priority, each problem naming the
    variable; [] when they can run."""
    problems = []
    if share is not None:
        if number_problem('priority_share', share, above=0, maximum=1):
            problems.append('%spriority_share must be null (no priority class) or a number above 0 and up to 1, the '
                            'share of the requests sent with %spriority; got %r' % (prefix, prefix, share))
    if isinstance(priority, bool) or not isinstance(priority, int) or priority >= DEFAULT_PRIORITY:
        problems.append('%spriority must be an integer below %d (vLLM serves lower values first, and the other '
                        'requests have %d); got %r' % (prefix, DEFAULT_PRIORITY, DEFAULT_PRIORITY, priority))
    return problems


# The load's numbers the benchmark's module and its role's validation both check (load_number_problems), with the
# lowest each takes; what the module derives from them (its sampling runner's time limit, the sampling deadline) stays
# bounded below MAX_SECONDS' overflow.
MIN_SAMPLE_INTERVAL = 0.1
LOAD_NUMBERS = ('sample_interval', 'timeout', 'request_rate')


def load_number_problems(values, prefix='vllm_benchmark_'):
    """What is wrong with the load's numbers among ``values`` (keys LOAD_NUMBERS; one not given is not checked), each
    message naming ``prefix`` + the key: through _numbers, so that NaN, infinity and values that overflow a time
    limit are refused; [] when none. The module vllm_benchmark and the role's validation (filter
    benchmark_input_problems) apply it alike."""
    problems = []
    if 'sample_interval' in values and number_problem('sample_interval', values['sample_interval'],
                                                      minimum=MIN_SAMPLE_INTERVAL, maximum=MAX_SECONDS):
        problems.append('%ssample_interval must be %g or more seconds, at most %d; got %r'
                        % (prefix, MIN_SAMPLE_INTERVAL, MAX_SECONDS, values['sample_interval']))
    if 'timeout' in values and number_problem('timeout', values['timeout'], minimum=1, maximum=MAX_SECONDS,
                                              integer=True):
        problems.append('%stimeout must be 1 to %d seconds; got %r' % (prefix, MAX_SECONDS, values['timeout']))
    # inf (as vllm bench serve takes it): every request at once; else requests/s, a finite number above 0.
    rate = values.get('request_rate', 'inf')
    if rate != 'inf' and number_problem('request_rate', rate, above=0):
        problems.append('%srequest_rate must be inf or a positive number; got %r' % (prefix, rate))
    return problems


def priority_loads(num_prompts, max_concurrency, request_rate, share):
    """The load of each class (``{class: {num_prompts, max_concurrency, request_rate}}``; the rest None when the
    share is 1): the share of the requests, of the concurrency and of the rate (a string, ``inf`` or requests/s),
    each class at least one request and one in flight (when the share is below 1 and there are two requests or more),
    so that together they send ``num_prompts`` requests."""
    # A share below 1 leaves the rest one request at least.
    prompts = min(num_prompts if share >= 1 else max(1, num_prompts - 1), max(1, int(round(num_prompts * share))))
    concurrency = min(max_concurrency, max(1, int(round(max_concurrency * share))))
    rates = (request_rate, request_rate)
    if request_rate != 'inf':
        rate = float(request_rate)
        rates = ('%g' % (rate * share), '%g' % (rate * (1 - share)))
    loads = {PRIORITY_CLASS: {'num_prompts': prompts, 'max_concurrency': concurrency, 'request_rate': rates[0]},
             REST_CLASS: None}
    if prompts < num_prompts:
        loads[REST_CLASS] = {'num_prompts': num_prompts - prompts,
                             'max_concurrency': max(1, max_concurrency - concurrency), 'request_rate': rates[1]}
    return loads


def _percentile(ordered, percent):
    """The percentile of sorted values, interpolated linearly between the nearest ranks (numpy's default, as vllm
    bench serve computes its own)."""
    position = (len(ordered) - 1) * percent / 100.0
    low = int(math.floor(position))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _statistics(values):
    ordered = sorted(values)
    if not ordered:
        return dict.fromkeys(STATISTICS)
    stats = {'mean': sum(ordered) / len(ordered)}
    stats.update(('p' + percent, _percentile(ordered, float(percent))) for percent in PERCENTILES)
    return stats


def _requests(result, where):
    """One dict per request of a detailed vllm bench result (``where`` names it in the error)."""
    lists = [result.get(key) for key in DETAIL_KEYS]
    if not all(isinstance(values, list) for values in lists) or len(set(len(values) for values in lists)) != 1:
        raise BenchmarkError('%s has no per-request lists (%s) of one length: was it run with --save-detailed?'
                             % (where, ', '.join(DETAIL_KEYS)))
    return [dict(zip(DETAIL_KEYS, row)) for row in zip(*lists)]


def merged_metrics(results):
    """The metrics (as metrics_from_vllm_bench's) of every request of several detailed vllm bench results run at
    the same time on one host (``{name: result}``), computed as vllm bench serve computes them: percentiles over the
    successful requests, TPOT of requests of two tokens or more, ITL over every gap, and the throughputs over the
    time from the first request's start to the last one's end (the start times are one monotonic clock)."""
    metrics = dict.fromkeys(METRICS)
    done = []
    failed = 0
    for name, result in sorted(results.items()):
        for request in _requests(result, 'the result of %s' % name):
            if request['errors'] or _number(request['latencies']) is None or not request['latencies'] > 0:
                failed += 1
            else:
                done.append(request)
    metrics['completed'], metrics['failed'] = len(done), failed
    if not done:
        return metrics
    start = min(request['start_times'] for request in done)
    duration = max(request['start_times'] + request['latencies'] for request in done) - start
    output = sum(request['output_lens'] for request in done)
    metrics['duration_s'] = duration
    if duration > 0:
        metrics['request_throughput'] = len(done) / duration
        metrics['output_throughput'] = output / duration
        metrics['total_token_throughput'] = (output + sum(request['input_lens'] for request in done)) / duration
    values = {'ttft': [request['ttfts'] for request in done],
              'tpot': [(request['latencies'] - request['ttfts']) / (request['output_lens'] - 1) for request in done
                       if request['output_lens'] > 1],
              'itl': [gap for request in done for gap in request['itls']],
              'e2el': [request['latencies'] for request in done]}
    for latency in LATENCIES:
        for statistic, value in _statistics(values[latency]).items():
            metrics['%s_ms_%s' % (latency, statistic)] = None if value is None else value * 1000.0
    return metrics


def _span(result):
    """(first start, last end) of a detailed result's successful requests, or None."""
    done = [request for request in _requests(result, 'a result') if not request['errors']
            and _number(request['latencies']) is not None and request['latencies'] > 0]
    if not done:
        return None
    return (min(request['start_times'] for request in done),
            max(request['start_times'] + request['latencies'] for request in done))


def priority_overlap(results):
    """The share (0 to 1) of the priority class's time, from its first request's start to its last one's end, that
    the rest's requests were running too (the two load generators start apart); None without both classes."""
    if PRIORITY_CLASS not in results or REST_CLASS not in results:
        return None
    mine, theirs = _span(results[PRIORITY_CLASS]), _span(results[REST_CLASS])
    if mine is None or theirs is None:
        return None
    shared = min(mine[1], theirs[1]) - max(mine[0], theirs[0])
    return max(0.0, shared) / (mine[1] - mine[0]) if mine[1] > mine[0] else 0.0


def class_report(name, priority, load, metrics):
    """A class's entry in the run: its priority, load and count, and its latencies (as ``metrics``)."""
    return {'class': name, 'priority': priority, 'num_prompts': load['num_prompts'],
            'max_concurrency': load['max_concurrency'], 'request_rate': load['request_rate'],
            'completed': metrics['completed'], 'failed': metrics['failed'],
            'metrics': dict((key, metrics[key]) for key in COUNT_METRICS + RATE_METRICS + LATENCY_METRICS)}


# ----------------------------------------------------------------------------- a second target compared
COMPARE_ROLES = ('candidate', 'baseline')
COMPARE_KEYS = ('base_url', 'model', 'tokenizer', 'api_key', 'role', 'candidate_digest')
# The metrics whose ratio candidate / baseline the comparison gives: above 1 is faster for a throughput, slower for
# a latency.
RATIO_METRICS = ('request_throughput', 'output_throughput', 'total_token_throughput', 'ttft_ms_p50', 'ttft_ms_p99',
                 'tpot_ms_p50', 'tpot_ms_p99', 'e2el_ms_p50', 'e2el_ms_p99')
_URL = re.compile(r'https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/-]*)?\Z')
_DIGEST = re.compile(r'[0-9a-f]{64}\Z')


def compare_target_problems(target, option='vllm_benchmark_compare'):
    """What is wrong with the second target (null: none), each problem naming ``option`` and the key; []."""
    if target is None:
        return []
    if not isinstance(target, dict):
        return ['%s must be null or a dict {base_url, model, tokenizer, and optionally api_key, role, '
                'candidate_digest}; got %r' % (option, target)]
    problems = ['%s has unknown key %s: the keys are %s' % (option, key, ', '.join(COMPARE_KEYS))
                for key in sorted(str(key) for key in target if key not in COMPARE_KEYS)]
    for key, accepts in (('base_url', 'the URL of its OpenAI-compatible server, http(s)://host:port, without /v1'),
                         ('model', 'the model name it serves'),
                         ('tokenizer', "its model directory on the node, for the load generator's tokenizer")):
        value = target.get(key)
        if not isinstance(value, str) or not value.strip() or any(ord(char) < 32 for char in value):
            problems.append('%s.%s must be %s; got %r' % (option, key, accepts, value))
    if isinstance(target.get('base_url'), str) and target['base_url'].strip() and not _URL.match(target['base_url']):
        problems.append('%s.base_url must be http(s)://host:port (no query, no /v1 needed); got %r'
                        % (option, target['base_url']))
    if target.get('api_key') is not None and not isinstance(target['api_key'], str):
        problems.append('%s.api_key must be a string or null' % option)
    if target.get('role', 'candidate') not in COMPARE_ROLES:
        problems.append('%s.role must be candidate (the service is the baseline) or baseline (the service is the '
                        'candidate); got %r' % (option, target.get('role')))
    digest = target.get('candidate_digest')
    if digest is not None and not (isinstance(digest, str) and _DIGEST.match(digest)):
        problems.append("%s.candidate_digest must be null or the SHA-256 (64 lowercase hex digits) of the candidate "
                        "model's manifest; got %r" % (option, digest))
    return problems


def comparison(service_metrics, other_metrics, role='candidate'):
    """The ratios candidate / baseline of RATIO_METRICS (None where either lacks the metric or the baseline's is 0):
    the other target is the candidate unless ``role`` is baseline."""
    candidate, baseline = (other_metrics, service_metrics) if role == 'candidate' else (service_metrics, other_metrics)
    ratios = {}
    for key in RATIO_METRICS:
        over, under = _number(candidate.get(key)), _number(baseline.get(key))
        ratios[key] = over / under if over is not None and under else None
    return ratios


def comparison_record(run, other, target, quality=None):
    """The comparison a run file holds: a run of the service (``run``, the vllm_benchmark module's result) with the
    same load's run against the second target (``other``) - the target without its key, its role, status and
    metrics, the ratios candidate / baseline, and the candidate's quality record (``quality``: model_quality_info's
    result, or None). BenchmarkError when ``target`` is not a second target."""
    problems = compare_target_problems(target, 'target')
    if problems:
        raise BenchmarkError('; '.join(problems))
    role = target.get('role') or 'candidate'
    record = None
    if quality:
        record = {'record_path': quality.get('record_path'), 'quantized': quality.get('quantized'),
                  'status': (quality.get('record') or {}).get('status'),
                  'problems': list(quality.get('serving_problems') or [])}
    return {'target': dict((key, target.get(key)) for key in ('base_url', 'model', 'tokenizer', 'candidate_digest')),
            'role': role, 'status': other['status'], 'metrics': other['metrics'],
            'ratios': comparison(run['metrics'], other['metrics'], role), 'quality': record}
