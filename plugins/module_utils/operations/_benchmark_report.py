# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The benchmark report: one self-contained HTML file made from a benchmark run directory (the run files
``runs/<host>/<label>.json`` and the optional ``summary.json`` that the vllm_benchmark role writes):

* ``run_record``, ``soak_record`` and ``summary_record``: the run files and the summary the role writes, built here
  where they are read back, under the schemas named here (RUN_SCHEMA, SUMMARY_SCHEMA);
* ``load_run_dir(path)``: the run files and the summary, read and checked; a file that is no JSON object of the
  expected schema, or a directory without run files, raises ReportError, whose message names the file;
* ``build_report(runs, summary, title)``: the HTML text - PASS/FAIL per host, the targets, every run, the grid with
  its best point, the plots (PNG images in data: URIs), each run's configuration; no external URL, no date of
  its own, so the same input gives the same bytes;
* the plots, each taking data and returning PNG bytes (matplotlib's Agg renderer, fixed size and dpi, no
  metadata): ``latency_png``, ``throughput_png``, ``grid_png``, ``timeline_png``, ``soak_png``;
* a soak run (a run file with a ``soak`` object, as the role's entry point soak writes it): its verdict, each check
  with the measured growth or count against its threshold, the memory over time with the fitted lines, and the
  known failures its journal showed;
* a run with a priority class (``classes``): each class's priority, load, count and latency percentiles; a run with a
  second target (``comparison``): its status and the ratios candidate / baseline, and the candidate's quality record.

A metric that is missing, null or not a number is shown as "n/a" and left out of the plots.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import traceback

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, read_regular_file
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import comparison_record


def matplotlib_import_error():
    """None when matplotlib imports, else the traceback of its import.

    Imported here, on first use, never when this file is imported: filter plugins use this file for its schema names,
    and Ansible loads the collection's filter files (in name order, until one has the filter asked for) in each worker
    process, one per task and host; matplotlib's import there was about half the controller's CPU time of a site.yml
    run."""
    try:
        _matplotlib()
    except ImportError:
        return traceback.format_exc()
    return None


def _matplotlib():
    """matplotlib, its Agg canvas and its Figure, imported on first use (see matplotlib_import_error)."""
    import matplotlib  # pylint: disable=import-outside-toplevel
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # pylint: disable=import-outside-toplevel
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
    return matplotlib, FigureCanvasAgg, Figure


RUN_SCHEMA = 'kunpeng_ascend.vllm/benchmark-run/1'
SUMMARY_SCHEMA = 'kunpeng_ascend.vllm/benchmark-summary/1'
# A run file or summary larger than this is refused rather than read into memory.
MAX_BYTES = 64 * 1024 * 1024

# The latency families of the latency plot and the runs table: (metric prefix, name).
LATENCIES = [('ttft_ms', 'TTFT'), ('tpot_ms', 'TPOT'), ('itl_ms', 'ITL'), ('e2el_ms', 'E2E latency')]
PERCENTILES = ['p50', 'p90', 'p99']
# The throughput panels: (metrics, y label).
THROUGHPUTS = [(['output_throughput', 'total_token_throughput'], 'tokens/s'), (['request_throughput'], 'requests/s')]
METRIC_NAMES = {
    'output_throughput': 'output tok/s', 'total_token_throughput': 'total tok/s', 'request_throughput': 'req/s',
    'npu_aicore_percent_mean': 'NPU AI core % (mean)', 'npu_aicore_percent_peak': 'NPU AI core % (peak)',
    'npu_hbm_used_mb_mean': 'HBM used MB (mean)', 'npu_hbm_used_mb_peak': 'HBM used MB (peak)',
    'loadgen_cpu_percent': 'load generator CPU %',
}
# The columns of the runs table after host, label, grid point, concurrency and status: (metric, heading).
RUN_COLUMNS = [
    ('completed', 'done'), ('failed', 'failed'), ('request_throughput', 'req/s'), ('output_throughput', 'out tok/s'),
    ('ttft_ms_p99', 'TTFT p99 ms'), ('tpot_ms_p99', 'TPOT p99 ms'), ('itl_ms_p99', 'ITL p99 ms'),
    ('e2el_ms_p50', 'E2E p50 ms'), ('e2el_ms_p99', 'E2E p99 ms'), ('npu_aicore_percent_mean', 'AI core % mean'),
    ('npu_aicore_percent_peak', 'AI core % peak'), ('npu_hbm_used_mb_peak', 'HBM peak MB'),
    ('loadgen_cpu_percent', 'loadgen CPU %'),
]
COUNTS = ('completed', 'failed')
# What the grid plot and table show of each point.
GRID_LATENCY = 'e2el_ms_p99'
GRID_THROUGHPUT = 'output_throughput'

# Plots: one size and resolution, fixed colours, matplotlib's own defaults whatever matplotlibrc says.
DPI = 100
WIDTH_IN = 10.0
COLOURS = {'p50': '#1f77b4', 'p90': '#ff7f0e', 'p99': '#d62728', 'target': '#444444', 'bar': '#8fb3d9',
           'best': '#2ca02c', 'cpu': '#9467bd'}
CYCLE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22',
         '#17becf']

CSS = """
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 24px auto; max-width: 1100px;
       color: #222; line-height: 1.4; padding: 0 12px; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }
.meta { color: #555; }
.banner { display: inline-block; padding: 10px 18px; margin: 4px 8px 4px 0; border-radius: 4px; font-weight: bold;
          color: #fff; font-size: 1.1em; }
.banner .detail { font-weight: normal; font-size: 0.85em; display: block; }
.PASS { background: #2e7d32; } .FAIL { background: #c62828; } .na { background: #757575; }
table { border-collapse: collapse; margin: 8px 0 16px 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.status-PASS { color: #2e7d32; font-weight: bold; } td.status-FAIL { color: #c62828; font-weight: bold; }
tr.best td { background: #e6f4e6; font-weight: bold; }
figure { margin: 12px 0 24px 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9em; }
.note { color: #555; font-style: italic; }
details { margin: 6px 0; border: 1px solid #ddd; padding: 4px 10px; border-radius: 4px; }
summary { cursor: pointer; font-weight: bold; }
pre { background: #f7f7f7; padding: 8px; overflow-x: auto; font-size: 0.85em; }
ul.warnings li { color: #8a5300; }
"""


class ReportError(Exception):
    """The run directory cannot be reported on; the message names the file and what is wrong."""


# --------------------------------------------------------------------------------------------------------- input

# --------------------------------------------------------------------------------------------------------- records

# The keys of the soak's result (vllm_soak's ``soak``) that a soak's run file holds at its top level, not under soak.
SOAK_TOP_KEYS = ('metrics', 'vllm_bench', 'argv', 'warnings')
# The files the summary's CSV tables go to, which summary.json does not repeat.
SUMMARY_TABLES = ('results_csv', 'optimization_csv')


def _service_config(service, report):
    """The serving configuration a run ran with (``service``), with the service's mode, unit and model."""
    return dict(service, mode=report['mode'], unit=report['unit'], model=report['model'])


def run_record(results, compare, quality, run, report, load):
    """The run file (RUN_SCHEMA) of one benchmark run: the service's result (``results``: the vllm_benchmark loop's
    registered results, the service first, then the second target when ``compare`` is one) with its comparison
    (``quality``: model_quality_info's result or None), ``run`` (run_id, host, label, grid_point, started, finished,
    service: the serving configuration), ``report`` (vllm_service_report) and ``load`` (the load's numbers: num_prompts,
    input_len, output_len, max_concurrency, request_rate, seed, sample_interval, priority_share, priority)."""
    benchmark = results['results'][0]['benchmark']
    record = dict(benchmark)
    record.update({
        'comparison': comparison_record(benchmark, results['results'][1]['benchmark'], compare, quality)
        if compare is not None else None,
        'schema': RUN_SCHEMA,
        'run_id': run['run_id'],
        'host': run['host'],
        'label': run['label'],
        'grid_point': run['grid_point'],
        'started': run['started'],
        'finished': run['finished'],
        'config': {
            'service': _service_config(run['service'], report),
            'load': {'num_prompts': load['num_prompts'], 'input_len': load['input_len'],
                     'output_len': load['output_len'], 'max_concurrency': load['max_concurrency'],
                     'request_rate': str(load['request_rate']), 'seed': int(load['seed']),
                     'endpoint': report['endpoint'] + '/completions', 'model': report['served_model_name'],
                     'sample_interval': load['sample_interval'], 'priority_share': load['priority_share'],
                     'priority': load['priority']}}})
    return record


def soak_record(soak, run, report, load):
    """The run file (RUN_SCHEMA) of a soak: a benchmark run file (its load, metrics and configuration) with the soak's
    samples, fits and verdict under ``soak``; ``soak`` is vllm_soak's ``soak`` result, ``run`` (run_id, host, started,
    finished, service), ``report`` (vllm_service_report), ``load`` (input_len, output_len, max_concurrency,
    request_rate, seed). None when the soak did not run (vllm_soak in check mode gives no verdict): there is no run
    to keep."""
    if 'verdict' not in soak:
        return None
    return {
        'schema': RUN_SCHEMA, 'run_id': run['run_id'], 'host': run['host'], 'label': 'soak', 'grid_point': None,
        'started': run['started'], 'finished': run['finished'], 'argv': soak['argv'], 'status': soak['verdict'],
        'metrics': soak['metrics'], 'targets': [], 'npu_samples': [], 'loadgen_samples': [],
        'vllm_bench': soak['vllm_bench'], 'warnings': soak['warnings'],
        'soak': dict((key, value) for key, value in soak.items() if key not in SOAK_TOP_KEYS),
        'config': {
            'service': _service_config(run['service'], report),
            'load': {'num_prompts': soak['num_prompts'], 'input_len': load['input_len'],
                     'output_len': load['output_len'], 'max_concurrency': load['max_concurrency'],
                     'request_rate': str(load['request_rate']), 'seed': load['seed'],
                     'endpoint': report['endpoint'] + '/completions', 'model': report['served_model_name']}}}


def summary_record(summary, keep_best):
    """summary.json (SUMMARY_SCHEMA): the summary of every node's runs without its CSV tables (their own files), its
    grid, if any, saying whether the inventory's configuration was put back (``restored``: not ``keep_best``)."""
    record = dict((key, value) for key, value in summary.items() if key not in SUMMARY_TABLES)
    if summary.get('grid'):
        record['grid'] = dict(summary['grid'], restored=not keep_best)
    return record


def _read_json(path, schema, what):
    """The JSON object of ``path``, checked to be of ``schema``; ReportError naming the file otherwise."""
    try:
        data = read_regular_file(path, MAX_BYTES, 'a ' + what)
    except UnreadableFile as error:
        raise ReportError('%s: check it' % error)
    if data is None:
        raise ReportError('%s cannot be read: it is not there' % path)
    try:
        document = _json.loads(data, allow_nan=True)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ReportError('%s is not valid JSON (%s): it is no %s; remove it or run the benchmark again'
                          % (path, error, what))
    if not isinstance(document, dict):
        raise ReportError('%s holds a JSON %s, not an object: it is no %s' % (path, type(document).__name__, what))
    if document.get('schema') != schema:
        raise ReportError('%s has schema %s, not %r: it is no %s of this collection (or of another version of it)'
                          % (path, json.dumps(document.get('schema')), schema, what))
    return document


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list_of_dicts(value):
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _text(value, default=''):
    return value if isinstance(value, str) else default


def _normalise_run(document, path, host_dir):
    """The run file's content with every field the report reads of the type it reads; ``file`` names it."""
    grid_point = document.get('grid_point')
    if isinstance(grid_point, dict):
        grid_point = {'index': grid_point.get('index') if isinstance(grid_point.get('index'), int) else None,
                      'params': _dict(grid_point.get('params'))}
    else:
        grid_point = None
    config = _dict(document.get('config'))
    load = _dict(config.get('load'))
    concurrency = load.get('max_concurrency')
    status = document.get('status')
    return {
        'file': path,
        'host': _text(document.get('host')) or host_dir,
        'label': _text(document.get('label')) or os.path.splitext(os.path.basename(path))[0],
        'run_id': _text(document.get('run_id')),
        'grid_point': grid_point,
        'started': _text(document.get('started')),
        'finished': _text(document.get('finished')),
        'service': _dict(config.get('service')),
        'load': load,
        'concurrency': concurrency if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency > 0
        else None,
        'metrics': _dict(document.get('metrics')),
        'targets': _list_of_dicts(document.get('targets')),
        'status': status if status in ('PASS', 'FAIL') else None,
        'npu_samples': _list_of_dicts(document.get('npu_samples')),
        'loadgen_samples': _list_of_dicts(document.get('loadgen_samples')),
        'warnings': [str(item) for item in document.get('warnings') or [] if item is not None]
        if isinstance(document.get('warnings'), list) else [],
        'vllm_bench': _dict(document.get('vllm_bench')),
        # A soak run's samples, fits and verdict (vllm_soak's result); None for the runs of a sweep or a grid.
        'soak': _dict(document.get('soak')) or None,
        # The priority class and the rest, each with its count and latencies (a run with a priority share).
        'classes': _list_of_dicts(document.get('classes')),
        # The same load against a second target, and the ratios candidate / baseline.
        'comparison': _dict(document.get('comparison')) or None,
    }


def _run_order(run):
    point = run['grid_point']
    return (run['host'], -1 if point is None else (point['index'] if point['index'] is not None else 1 << 30),
            run['concurrency'] if run['concurrency'] is not None else 1 << 62, run['label'])


def load_run_dir(path):
    """The runs (sorted by host, grid point, concurrency, label) and the summary (None without summary.json) of
    the run directory ``path``."""
    if not os.path.isdir(path):
        raise ReportError('%s is not a directory: give the run directory of a benchmark (<results dir>/<run id>)'
                          % path)
    runs_dir = os.path.join(path, 'runs')
    files = []
    if os.path.isdir(runs_dir):
        for host_dir in sorted(os.listdir(runs_dir)):
            if os.path.isdir(os.path.join(runs_dir, host_dir)):
                files.extend((host_dir, os.path.join(runs_dir, host_dir, name))
                             for name in sorted(os.listdir(os.path.join(runs_dir, host_dir))) if name.endswith('.json'))
    if not files:
        raise ReportError('%s has no run files (runs/<host>/<label>.json): it is no benchmark run directory, or '
                          'no benchmark run finished' % path)
    runs = [_normalise_run(_read_json(file_path, RUN_SCHEMA, 'benchmark run file'), file_path, host_dir)
            for host_dir, file_path in files]
    summary_path = os.path.join(path, 'summary.json')
    summary = _read_json(summary_path, SUMMARY_SCHEMA, 'benchmark summary') if os.path.lexists(summary_path) else None
    return sorted(runs, key=_run_order), summary


# --------------------------------------------------------------------------------------------------------- values

def number(value):
    """``value`` as a float when it is a finite number (not a bool); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def fmt(value, key=None):
    """A metric as the report shows it: 'n/a' unless it is a number."""
    given, value = value, number(value)
    if value is None:
        return 'n/a'
    if isinstance(given, int) or key in COUNTS and value == int(value):
        return '%d' % value
    if abs(value) >= 100:
        return '%.0f' % value
    if abs(value) >= 10:
        return '%.1f' % value
    return '%.2f' % value


def metric_name(metric):
    if metric in METRIC_NAMES:
        return METRIC_NAMES[metric]
    for prefix, name in LATENCIES:
        if metric.startswith(prefix + '_'):
            return '%s %s ms' % (name, metric[len(prefix) + 1:])
    return metric


def _plural(count, noun):
    return '%d %s%s' % (count, noun, '' if count == 1 else 's')


def _e(value):
    return html.escape(value if isinstance(value, str) else json.dumps(value, sort_keys=True), quote=True)


def _target_key(target):
    return (_text(target.get('metric')), _text(target.get('op')), json.dumps(target.get('value')))


def _targets(runs, summary):
    """The targets: the summary's, else every target of the run files (first seen first)."""
    source = _list_of_dicts(_dict(summary).get('targets')) or [t for run in runs for t in run['targets']]
    found = {}
    for target in source:
        if isinstance(target.get('metric'), str):
            found.setdefault(_target_key(target), {'metric': target['metric'], 'op': _text(target.get('op'), '?'),
                                                   'value': target.get('value')})
    return list(found.values())


def _plottable_targets(targets, metrics):
    return [target for target in targets if target['metric'] in metrics and number(target['value']) is not None]


def _hosts(runs):
    return sorted(set(run['host'] for run in runs))


def _host_status(host, runs, summary):
    """(status, highest concurrency meeting the targets or None) of a host: the summary's, else from its runs."""
    entry = _dict(_dict(_dict(summary).get('hosts')).get(host))
    status = entry.get('status')
    if status not in ('PASS', 'FAIL'):
        statuses = [run['status'] for run in runs if run['host'] == host]
        status = 'FAIL' if 'FAIL' in statuses else 'PASS' if statuses and all(s == 'PASS' for s in statuses) else None
    best = entry.get('max_concurrency_meeting_targets')
    return status, best if isinstance(best, int) and not isinstance(best, bool) else None


def host_statuses(runs, summary):
    """Per host: the status of its banner and the highest concurrency meeting the targets (None when unknown)."""
    statuses = {}
    for host in _hosts(runs):
        status, best = _host_status(host, runs, summary)
        statuses[host] = {'status': status, 'max_concurrency_meeting_targets': best}
    return statuses


def _grid_best(summary):
    """(index, host) of the grid's best point in the summary, or None."""
    best = _dict(_dict(_dict(summary).get('grid')).get('best'))
    if not isinstance(best.get('index'), int):
        return None
    return best['index'], best.get('host') if isinstance(best.get('host'), str) else None


def _is_best(run, best):
    point = run['grid_point']
    return (best is not None and point is not None and point['index'] == best[0]
            and (best[1] is None or best[1] == run['host']))


def _point_name(point):
    if point is None:
        return ''
    params = ', '.join('%s=%s' % (key, _params_value(value)) for key, value in sorted(point['params'].items()))
    return '#%s %s' % ('?' if point['index'] is None else point['index'], params)


def _params_value(value):
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _series(runs):
    """The runs of each (host, grid point index) in concurrency order, in report order."""
    series = {}
    for run in runs:
        point = run['grid_point']
        series.setdefault((run['host'], None if point is None else point['index']), []).append(run)
    return series


# --------------------------------------------------------------------------------------------------------- plots

def _figure(height_in, ncols=1, nrows=1):
    canvas, figure_class = _matplotlib()[1:]
    figure = figure_class(figsize=(WIDTH_IN, height_in), dpi=DPI, layout='constrained')
    canvas(figure)
    axes = figure.subplots(nrows, ncols, squeeze=False)
    return figure, [ax for row in axes for ax in row]


def _png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', dpi=DPI, metadata={'Software': None})
    return buffer.getvalue()


def _with_defaults(draw):
    """Run ``draw`` under matplotlib's default settings, whatever a matplotlibrc of this machine sets."""
    matplotlib = _matplotlib()[0]
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        return draw()


def _columns(pairs):
    """The x values and the y values of (x, y) pairs."""
    return [pair[0] for pair in pairs], [pair[1] for pair in pairs]


def _concurrency_axis(ax, values):
    ax.set_xscale('log', base=2)
    ax.set_xticks(values)
    ax.set_xticklabels(['%d' % value for value in values])
    ax.minorticks_off()
    ax.set_xlabel('concurrency (max_concurrency)')
    ax.grid(True, alpha=0.3)


def _target_lines(ax, targets):
    for target in targets:
        ax.axhline(number(target['value']), color=COLOURS['target'], linestyle='--', linewidth=1.2,
                   label='target %s %s %s' % (metric_name(target['metric']), target['op'], fmt(target['value'])))


def latency_png(points, targets, title):
    """The latency percentiles versus concurrency: one panel each for TTFT, TPOT, ITL and E2E latency, lines for
    p50/p90/p99; ``points`` are (concurrency, metrics), ``targets`` the targets (drawn when their metric is on
    a panel)."""
    def draw():
        figure, axes = _figure(7.0, 2, 2)
        values = sorted(set(point[0] for point in points))
        for ax, (prefix, name) in zip(axes, LATENCIES):
            for percentile in PERCENTILES:
                key = '%s_%s' % (prefix, percentile)
                xy = [(c, number(m.get(key))) for c, m in points if number(m.get(key)) is not None]
                if xy:
                    ax.plot(*_columns(xy), marker='o', color=COLOURS[percentile],
                            label=percentile)
            _finish_concurrency_panel(ax, _plottable_targets(targets, ['%s_%s' % (prefix, p) for p in PERCENTILES]),
                                      values, 'ms')
            ax.set_title(name)
        figure.suptitle(title)
        return _png(figure)
    return _with_defaults(draw)


def _finish_concurrency_panel(ax, targets, values, unit):
    """A versus-concurrency panel's targets as lines, its axes from 0, and its legend."""
    _target_lines(ax, targets)
    _concurrency_axis(ax, values)
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc='upper left')


def throughput_png(points, targets, title):
    """Throughput versus concurrency: output and total tokens/s, and requests/s, with the targets as lines."""
    def draw():
        figure, axes = _figure(3.8, 2, 1)
        values = sorted(set(point[0] for point in points))
        for ax, (metrics, unit) in zip(axes, THROUGHPUTS):
            for index, key in enumerate(metrics):
                xy = [(c, number(m.get(key))) for c, m in points if number(m.get(key)) is not None]
                if xy:
                    ax.plot(*_columns(xy), marker='o', color=CYCLE[index],
                            label=metric_name(key))
            _finish_concurrency_panel(ax, _plottable_targets(targets, metrics), values, unit)
        figure.suptitle(title)
        return _png(figure)
    return _with_defaults(draw)


def grid_png(bars, targets, title):
    """Per grid point: the p99 end-to-end latency and the output throughput, one bar per run; ``bars`` are
    (label, is best, metrics); the best point's bars are green and marked."""
    def draw():
        figure, axes = _figure(max(2.6, 1.2 + 0.32 * len(bars)), 2, 1)
        labels = [entry[0] for entry in bars]
        positions = list(range(len(bars)))
        for ax, key in zip(axes, (GRID_LATENCY, GRID_THROUGHPUT)):
            widths = [number(entry[2].get(key)) or 0.0 for entry in bars]
            colours = [COLOURS['best'] if entry[1] else COLOURS['bar'] for entry in bars]
            ax.barh(positions, widths, color=colours, edgecolor='#333333', linewidth=0.5)
            for position, (_label, best, metrics) in zip(positions, bars):
                text = fmt(metrics.get(key)) + ('  best' if best else '')
                ax.text(0, position, ' ' + text, va='center', ha='left', fontsize=8,
                        fontweight='bold' if best else 'normal')
            for target in _plottable_targets(targets, [key]):
                ax.axvline(number(target['value']), color=COLOURS['target'], linestyle='--', linewidth=1.2,
                           label='target %s %s' % (target['op'], fmt(target['value'])))
            ax.set_yticks(positions)
            ax.set_yticklabels(labels, fontsize=8)
            ax.invert_yaxis()
            ax.set_xlabel(metric_name(key))
            ax.set_xlim(left=0)
            ax.grid(True, axis='x', alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8, loc='lower right')
        figure.suptitle(title)
        return _png(figure)
    return _with_defaults(draw)


def _time_series(samples, key):
    """``(t, value)`` of the samples where both are numbers, in their order."""
    xy = [(number(s.get('t')), number(s.get(key))) for s in samples]
    return [(x, y) for x, y in xy if x is not None and y is not None]


def timeline_png(npu_samples, loadgen_samples, targets, title):
    """Over the run's time: AI core utilisation and HBM used per chip (when there are NPU samples), and the load
    generator's CPU; targets on AI core utilisation drawn as lines. None when there is nothing to draw."""
    chips = sorted(set((s.get('npu_id'), s.get('chip_id')) for s in npu_samples), key=json.dumps)
    panels = []
    if chips:
        panels += [('aicore_percent', 'AI core %'), ('hbm_used_mb', 'HBM used (MB)')]
    if any(number(s.get('t')) is not None and number(s.get('cpu_percent')) is not None for s in loadgen_samples):
        panels.append(('cpu_percent', 'load generator CPU %'))
    if not panels:
        return None

    def draw():
        figure, axes = _figure(3.0, len(panels), 1)
        for ax, (key, unit) in zip(axes, panels):
            if key == 'cpu_percent':
                xy = _time_series(loadgen_samples, key)
                ax.plot(*_columns(xy), color=COLOURS['cpu'], marker='.', label='CPU')
            else:
                for index, chip in enumerate(chips):
                    xy = _time_series([s for s in npu_samples if (s.get('npu_id'), s.get('chip_id')) == chip], key)
                    if xy:
                        ax.plot(*_columns(xy), color=CYCLE[index % len(CYCLE)], marker='.',
                                label='NPU %s chip %s' % chip)
                if key == 'aicore_percent':
                    _target_lines(ax, _plottable_targets(targets, ['npu_aicore_percent_mean', 'npu_aicore_percent_peak']))
            ax.set_ylabel(unit)
            ax.set_xlabel('seconds since the benchmark started')
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7, loc='lower right')
        figure.suptitle(title)
        return _png(figure)
    return _with_defaults(draw)


def _fit_line(ax, fit, colour, label):
    """The least squares line of a growth fit (vllm_soak's ``fits``) over the span it was fitted on."""
    slope, intercept = number(fit.get('mib_per_hour')), number(fit.get('intercept_mib'))
    start, end = number(fit.get('from_s')), number(fit.get('to_s'))
    if None in (slope, intercept, start, end):
        return
    ax.plot([start, end], [intercept + slope * start / 3600.0, intercept + slope * end / 3600.0], color=colour,
            linestyle='--', linewidth=1.5, label='%s fit %s MiB/h' % (label, fmt(slope)))


def soak_png(samples, npu_samples, fits, warmup_end, title):
    """A soak run's memory over time: the resident memory of the service's processes and, when sampled, the HBM
    used per chip, each with its fitted line (dashed, over the span fitted) and the warm-up shaded."""
    chips = sorted(set('%s-%s' % (s.get('npu_id'), s.get('chip_id')) for s in npu_samples))
    panels = [('rss', 'service RSS (MiB)')] + ([('hbm', 'HBM used (MB)')] if chips else [])

    def draw():
        figure, axes = _figure(3.2 * len(panels), 1, len(panels))
        for ax, (key, unit) in zip(axes, panels):
            if number(warmup_end):
                ax.axvspan(0, number(warmup_end), color='#eeeeee', label='warm-up')
            if key == 'rss':
                xy = _time_series(samples, 'rss_mib')
                if xy:
                    ax.plot(*_columns(xy), color=COLOURS['p50'], marker='.', linestyle='', label='RSS')
                _fit_line(ax, _dict(fits.get('host_rss')), COLOURS['p99'], 'RSS')
            else:
                for index, chip in enumerate(chips):
                    colour = CYCLE[index % len(CYCLE)]
                    xy = _time_series([s for s in npu_samples if '%s-%s' % (s.get('npu_id'), s.get('chip_id')) == chip],
                                      'hbm_used_mb')
                    if xy:
                        ax.plot(*_columns(xy), color=colour, marker='.', linestyle='', label='NPU-chip %s' % chip)
                    _fit_line(ax, _dict(_dict(fits.get('hbm')).get(chip)), colour, chip)
            ax.set_ylabel(unit)
            ax.set_xlabel('seconds since the soak started')
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7, loc='best')
        figure.suptitle(title)
        return _png(figure)
    return _with_defaults(draw)


# --------------------------------------------------------------------------------------------------------- HTML

def _img(png, alt):
    return '<img alt="%s" src="data:image/png;base64,%s">' % (_e(alt), base64.b64encode(png).decode('ascii'))


def _figure_html(png, caption):
    return '<figure>%s<figcaption>%s</figcaption></figure>' % (_img(png, caption), _e(caption))


def _table(headings, rows, row_classes=None):
    """A table; each cell is (text, css class or None), the text already escaped."""
    out = ['<table><thead><tr>%s</tr></thead><tbody>' % ''.join('<th>%s</th>' % _e(h) for h in headings)]
    for index, row in enumerate(rows):
        css = row_classes[index] if row_classes else None
        out.append('<tr%s>%s</tr>' % (' class="%s"' % css if css else '',
                                      ''.join('<td%s>%s</td>' % (' class="%s"' % c if c else '', t) for t, c in row)))
    out.append('</tbody></table>')
    return ''.join(out)


def _status_cell(status):
    return (_e(status or 'n/a'), 'status-%s' % status if status else None)


def _banners(runs, summary):
    out = ['<div class="banners">']
    for host in _hosts(runs):
        status, best = _host_status(host, runs, summary)
        known = 'max_concurrency_meeting_targets' in _dict(_dict(_dict(summary).get('hosts')).get(host))
        detail = ('highest concurrency meeting the targets: %s' % (best if best is not None else 'none' if known else 'n/a')
                  if summary is not None else _plural(sum(1 for run in runs if run['host'] == host), 'run'))
        out.append('<div class="banner %s">%s: %s<span class="detail">%s</span></div>'
                   % (status or 'na', _e(host), _e(status or 'n/a'), _e(detail)))
    out.append('</div>')
    return ''.join(out)


def _targets_html(runs, targets):
    if not targets:
        return '<p class="note">No targets were set.</p>'
    hosts = _hosts(runs)
    rows = []
    for target in targets:
        row = [(_e(target['metric']), None), (_e(metric_name(target['metric'])), None), (_e(target['op']), None),
               (_e(fmt(target['value'])), 'num')]
        for host in hosts:
            statuses = [t.get('status') for run in runs if run['host'] == host for t in run['targets']
                        if t.get('metric') == target['metric'] and t.get('op') == target['op']]
            counts = ['%d %s' % (statuses.count(s), s) for s in ('PASS', 'FAIL', 'NOT_MEASURED') if statuses.count(s)]
            row.append((_e(', '.join(counts) or 'n/a'), 'status-FAIL' if 'FAIL' in statuses else None))
        rows.append(row)
    return _table(['metric', 'what', 'op', 'target'] + ['runs on %s' % host for host in hosts], rows)


def _runs_html(runs, best):
    rows, classes = [], []
    for run in runs:
        row = [(_e(run['host']), None), (_e(run['label']), None), (_e(_point_name(run['grid_point'])), None),
               (_e(fmt(run['concurrency'], 'completed')), 'num'), _status_cell(run['status'])]
        row += [(_e(fmt(run['metrics'].get(key), key)), 'num') for key, _heading in RUN_COLUMNS]
        rows.append(row)
        classes.append('best' if _is_best(run, best) else None)
    return _table(['host', 'label', 'grid point', 'concurrency', 'status'] + [heading for _key, heading in RUN_COLUMNS], rows, classes)


def _grid_html(runs, summary, targets, best):
    grid_runs = [run for run in runs if run['grid_point'] is not None]
    grid = _dict(_dict(summary).get('grid'))
    if not grid_runs and not grid:
        return ''
    out = ['<h2>Tuning grid</h2>']
    axes = _dict(grid.get('axes'))
    if axes:
        out.append('<p>Axes: %s.</p>' % '; '.join('<code>%s</code> = %s' % (_e(k), _e(', '.join(_params_value(v) for v in
                   values) if isinstance(values, list) else values)) for k, values in sorted(axes.items())))
    objective = _dict(grid.get('objective'))
    direction = next((key for key in ('maximize', 'minimize') if isinstance(objective.get(key), str)), None)
    if direction:
        condition = objective.get('subject_to_targets', objective.get('subject_to', True))
        out.append('<p>Objective: %s <code>%s</code>%s.</p>' % (
            'maximise' if direction == 'maximize' else 'minimise', _e(objective[direction]),
            _e(' among the runs that met every target' if condition in (True, 'targets') else
               ' over all runs' if condition is False else ' subject to %s' % _params_value(condition))))
    if grid:
        best_entry = _dict(grid.get('best'))
        out.append('<p>Best point: %s%s.</p>' % (
            _e(_point_name({'index': best_entry.get('index'), 'params': _dict(best_entry.get('params'))})
               + (' on %s' % best_entry['host'] if isinstance(best_entry.get('host'), str) else ''))
            if best_entry else 'none met the targets',
            _e('; the service was left on it' if grid.get('restored') is False and best_entry else
               '; the original configuration was restored' if grid.get('restored') is True else '')))
    rows, classes = [], []
    for run in grid_runs:
        rows.append([(_e(run['host']), None), (_e(_point_name(run['grid_point'])), None), (_e(run['label']), None),
                     (_e(fmt(run['concurrency'], 'completed')), 'num'),
                     (_e(fmt(run['metrics'].get(GRID_LATENCY))), 'num'),
                     (_e(fmt(run['metrics'].get(GRID_THROUGHPUT))), 'num'),
                     (_e(fmt(run['metrics'].get('npu_aicore_percent_mean'))), 'num'), _status_cell(run['status']),
                     (_e('best' if _is_best(run, best) else ''), None)])
        classes.append('best' if _is_best(run, best) else None)
    if rows:
        out.append(_table(['host', 'point', 'label', 'concurrency', 'E2E p99 ms', 'out tok/s', 'AI core % mean',
                           'status', ''], rows, classes))
    for host in _hosts(grid_runs):
        bars = [(run['label'], _is_best(run, best), run['metrics']) for run in grid_runs if run['host'] == host]
        out.append(_figure_html(grid_png(bars, targets, 'Grid points on %s' % host),
                                'Grid points on %s: E2E latency p99 and output throughput per run (best point '
                                'green), targets dashed' % host))
    return ''.join(out)


def _sweeps_html(runs, targets):
    out = []
    # A soak run is one load at a fixed rate, no point of a sweep.
    runs = [run for run in runs if run['soak'] is None]
    any_grid = any(run['grid_point'] is not None for run in runs)
    for (host, index), series in _series(runs).items():
        points = [(run['concurrency'], run['metrics']) for run in series if run['concurrency'] is not None]
        if not points or (any_grid and len(set(point[0] for point in points)) < 2):
            continue
        name = host if index is None else '%s, grid point %s' % (host, index)
        out.append('<h3>%s</h3>' % _e(name))
        out.append(_figure_html(latency_png(points, targets, 'Latency versus concurrency on %s' % name),
                                'Latency percentiles versus concurrency on %s; targets dashed' % name))
        out.append(_figure_html(throughput_png(points, targets, 'Throughput versus concurrency on %s' % name),
                                'Throughput versus concurrency on %s; targets dashed' % name))
        unbounded = [run['label'] for run in series if run['concurrency'] is None]
        if unbounded:
            out.append('<p class="note">Not plotted (no max_concurrency): %s.</p>' % _e(', '.join(unbounded)))
    if not out:
        return ''
    return '<h2>Latency and throughput versus concurrency</h2>' + ''.join(out)


def _timelines_html(runs, targets):
    out = ['<h2>NPU utilisation, HBM and load generator CPU over time</h2>']
    # A soak run's memory over time is in its own section.
    runs = [run for run in runs if run['soak'] is None]
    if not runs:
        return ''
    for run in runs:
        name = '%s / %s' % (run['host'], run['label'])
        out.append('<h3>%s</h3>' % _e(name))
        if not run['npu_samples']:
            out.append('<p class="note">No NPU samples on this host.</p>')
        png = timeline_png(run['npu_samples'], run['loadgen_samples'], targets, name)
        if png is None:
            out.append('<p class="note">No load generator CPU samples.</p>')
        else:
            out.append(_figure_html(png, 'NPU AI core utilisation and HBM per chip, and load generator CPU, during '
                                         '%s' % name if run['npu_samples'] else 'Load generator CPU during %s' % name))
    return ''.join(out)


def _soak_value(check):
    value = number(check.get('value'))
    if value is None:
        return 'n/a'
    return '%.1f %s' % (value, _text(check.get('unit'))) if check.get('unit') == 'MiB/h' else '%d' % value


def _soaks_html(runs):
    out = []
    for run in runs:
        soak = run['soak']
        if soak is None:
            continue
        name = '%s / %s' % (run['host'], run['label'])
        verdict = _text(soak.get('verdict'), 'n/a')
        settings = _dict(soak.get('settings'))
        out.append('<h3>%s</h3>' % _e(name))
        out.append('<div class="banner %s">soak: %s<span class="detail">%s</span></div>' % (
            verdict if verdict in ('PASS', 'FAIL') else 'na', _e(verdict),
            _e('%s requests/s for %s s, sampled every %s s, warm-up %s of the run' % (
                fmt(settings.get('rate')), fmt(settings.get('duration')), fmt(settings.get('interval')),
                fmt(settings.get('warmup'))))))
        checks = _list_of_dicts(soak.get('checks'))
        out.append(_table(['check', 'what', 'measured', 'limit', 'status', 'detail'], [
            [('<code>%s</code>' % _e(_text(c.get('check'), '?')), None), (_e(_text(c.get('what'))), None),
             (_e(_soak_value(c)), 'num'), (_e(_soak_value(dict(c, value=c.get('limit')))), 'num'),
             _status_cell(_text(c.get('status')) or None), (_e(_text(c.get('detail'))), None)] for c in checks]))
        samples = _list_of_dicts(soak.get('samples'))
        out.append(_figure_html(
            soak_png(samples, _list_of_dicts(soak.get('npu_samples')), _dict(soak.get('fits')),
                     soak.get('warmup_end_s'), 'Memory during the soak on %s' % name),
            'Memory of the service during the soak on %s (%d samples): the fitted growth dashed, the warm-up shaded'
            % (name, len(samples))))
        explained = _list_of_dicts(_dict(soak.get('journal')).get('explained'))
        if explained:
            out.append('<p>Known failures in the journal:</p><ul class="warnings">%s</ul>' % ''.join(
                '<li><code>%s</code> (%s): %s Fix: %s</li>'
                % tuple(_e(_text(item.get(key))) for key in ('id', 'status', 'cause', 'fix')) for item in explained))
    if not out:
        return ''
    return '<h2>Soak</h2>' + ''.join(out)


# The latencies each class shows: (metric, heading).
CLASS_COLUMNS = [('ttft_ms_p50', 'TTFT p50 ms'), ('ttft_ms_p90', 'TTFT p90 ms'), ('ttft_ms_p99', 'TTFT p99 ms'),
                 ('e2el_ms_p50', 'E2E p50 ms'), ('e2el_ms_p90', 'E2E p90 ms'), ('e2el_ms_p99', 'E2E p99 ms'),
                 ('tpot_ms_p50', 'TPOT p50 ms')]
# The ratios the comparison shows: (metric, heading).
RATIO_COLUMNS = [('output_throughput', 'out tok/s'), ('request_throughput', 'req/s'), ('ttft_ms_p50', 'TTFT p50'),
                 ('ttft_ms_p99', 'TTFT p99'), ('tpot_ms_p50', 'TPOT p50'), ('e2el_ms_p50', 'E2E p50'),
                 ('e2el_ms_p99', 'E2E p99')]


def _classes_html(runs):
    """Each run with a priority class: per class its priority, load, count and latency percentiles."""
    rows = []
    for run in runs:
        for entry in run['classes']:
            metrics = _dict(entry.get('metrics'))
            rows.append([(_e(run['host']), None), (_e(run['label']), None), (_e(_text(entry.get('class'), '?')), None),
                         (_e(fmt(entry.get('priority'))), 'num'),
                         (_e('%s / %s' % (fmt(entry.get('num_prompts')), fmt(entry.get('max_concurrency')))), 'num'),
                         (_e(fmt(entry.get('completed'), 'completed')), 'num'),
                         (_e(fmt(entry.get('failed'), 'failed')), 'num')]
                        + [(_e(fmt(metrics.get(key))), 'num') for key, _heading in CLASS_COLUMNS]
                        + [(_e(fmt(entry.get('overlap'))), 'num')])
    if not rows:
        return ''
    return ('<h2>Priority class and the rest</h2><p>A share of each run\'s requests was sent with a priority below '
            '0, which vLLM serves first, by a load generator of its own beside the rest\'s; each class\'s count and '
            'latencies apart. Overlap: the share of the priority class\'s time the rest ran beside it.</p>'
            + _table(['host', 'label', 'class', 'priority', 'requests / in flight', 'done', 'failed']
                     + [heading for _key, heading in CLASS_COLUMNS] + ['overlap'], rows))


def _comparison_html(runs):
    """Each run with a second target: its status and throughput, and the ratios candidate / baseline."""
    compared = [run for run in runs if run['comparison']]
    if not compared:
        return ''
    rows = []
    for run in compared:
        comparison = run['comparison']
        ratios, metrics = _dict(comparison.get('ratios')), _dict(comparison.get('metrics'))
        rows.append([(_e(run['host']), None), (_e(run['label']), None), _status_cell(_text(comparison.get('status')) or None),
                     (_e(fmt(metrics.get('output_throughput'))), 'num')]
                    + [(_e(fmt(ratios.get(key))), 'num') for key, _heading in RATIO_COLUMNS])
    first = compared[0]['comparison']
    target = _dict(first.get('target'))
    role = _text(first.get('role'), 'candidate')
    out = ['<h2>Comparison with a second target</h2>',
           '<p>The same load (the same prompts) against <code>%s</code> (model <code>%s</code>, from <code>%s</code>), '
           'the %s; the service is the %s. Ratios are candidate / baseline: above 1 is faster for a throughput, '
           'slower for a latency.</p>' % (_e(_text(target.get('base_url'), 'n/a')), _e(_text(target.get('model'), 'n/a')),
                                          _e(_text(target.get('tokenizer'), 'n/a')), _e(role),
                                          'baseline' if role == 'candidate' else 'candidate')]
    out.append(_table(['host', 'label', 'its status', 'its out tok/s']
                      + ['ratio %s' % heading for _key, heading in RATIO_COLUMNS], rows))
    quality = _dict(first.get('quality'))
    if quality:
        problems = [str(problem) for problem in quality.get('problems') or []]
        out.append('<p>The candidate\'s quality record (<code>%s</code>): %s%s.</p>' % (
            _e(_text(quality.get('record_path'), 'n/a')), _e(_text(quality.get('status'), 'none')),
            _e('; ' + '; '.join(problems) if problems else '')))
    else:
        out.append('<p class="note">No quality record of the candidate was asked for (candidate_digest).</p>')
    return ''.join(out)


def _key_values(mapping):
    if not mapping:
        return '<p class="note">none recorded</p>'
    return _table(['key', 'value'], [[('<code>%s</code>' % _e(key), None), (_e(_params_value(mapping[key])), None)]
                                     for key in sorted(mapping)])


def _configs_html(runs):
    out = ['<h2>Configuration of each run</h2>']
    for run in runs:
        parts = ['<details><summary>%s / %s%s: %s</summary>' % (
            _e(run['host']), _e(run['label']), _e(' (%s)' % _point_name(run['grid_point']) if run['grid_point'] else ''),
            _e(run['status'] or 'n/a'))]
        parts.append('<p>Started %s, finished %s; file <code>%s</code>.</p>'
                     % (_e(run['started'] or 'n/a'), _e(run['finished'] or 'n/a'),
                        _e(os.path.join(os.path.basename(os.path.dirname(run['file'])), os.path.basename(run['file'])))))
        if run['warnings']:
            parts.append('<ul class="warnings">%s</ul>' % ''.join('<li>%s</li>' % _e(w) for w in run['warnings']))
        parts.append('<h4>Service (vllm_service)</h4>' + _key_values(run['service']))
        parts.append('<h4>Load</h4>' + _key_values(run['load']))
        if run['targets']:
            parts.append('<h4>Targets</h4>' + _table(['metric', 'op', 'target', 'actual', 'status'], [
                [(_e(_text(t.get('metric'), 'n/a')), None), (_e(_text(t.get('op'), '?')), None),
                 (_e(fmt(t.get('value'))), 'num'), (_e(fmt(t.get('actual'))), 'num'),
                 (_e(_text(t.get('status'), 'n/a')), 'status-%s' % t.get('status') if t.get('status') in ('PASS', 'FAIL')
                  else None)] for t in run['targets']]))
        parts.append('<h4>All metrics</h4>' + _table(['metric', 'value'], [
            [('<code>%s</code>' % _e(key), None), (_e(fmt(run['metrics'][key], key)), 'num')]
            for key in sorted(run['metrics'])]))
        if run['vllm_bench']:
            parts.append('<details><summary>vllm bench serve result</summary><pre>%s</pre></details>'
                         % _e(json.dumps(run['vllm_bench'], sort_keys=True, indent=1)))
        parts.append('</details>')
        out.append(''.join(parts))
    return ''.join(out)


def build_report(runs, summary, title=None):
    """The report's HTML text for ``runs`` and ``summary`` (as load_run_dir gives them)."""
    run_id = _text(_dict(summary).get('run_id')) or next((run['run_id'] for run in runs if run['run_id']), '')
    title = title or ('vLLM benchmark report %s' % run_id).strip()
    targets = _targets(runs, summary)
    best = _grid_best(summary)
    started = sorted(run['started'] for run in runs if run['started'])
    finished = sorted(run['finished'] for run in runs if run['finished'])
    meta = 'Run <code>%s</code>: %s on %s, %s to %s.' % (
        _e(run_id or 'n/a'), _plural(len(runs), 'benchmark run'), _plural(len(_hosts(runs)), 'host'),
        _e(started[0] if started else 'n/a'),
        _e(finished[-1] if finished else 'n/a'))
    body = [
        '<h1>%s</h1>' % _e(title),
        '<p class="meta">%s%s</p>' % (meta, '' if summary is not None else ' No summary.json: statuses come from '
                                      'the run files.'),
        _banners(runs, summary),
        '<h2>Targets</h2>', _targets_html(runs, targets),
        '<h2>Runs</h2>', _runs_html(runs, best),
        _classes_html(runs),
        _comparison_html(runs),
        _soaks_html(runs),
        _grid_html(runs, summary, targets, best),
        _sweeps_html(runs, targets),
        _timelines_html(runs, targets),
        _configs_html(runs),
        '<p class="meta">Made by kunpeng_ascend.vllm.benchmark_report.</p>',
    ]
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>%s</title>\n'
            '<style>%s</style>\n</head>\n<body>\n%s\n</body>\n</html>\n' % (_e(title), CSS, '\n'.join(p for p in body if p)))
