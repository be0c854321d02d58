# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_benchmark_report: the HTML report of the benchmark run directories of tests/fixtures/benchmark/ (a
concurrency sweep with NPU samples, a 2x2 grid on a host without NPUs): what it shows, that it stands alone and is
the same bytes every time, metrics that are no numbers, and the run directories it refuses, naming the file."""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import re
import shutil

import matplotlib
import pytest
from PIL import Image

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark_report
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark_report import (
    ReportError,
    build_report,
    fmt,
    latency_png,
    load_run_dir,
    number,
    timeline_png,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES

SWEEP = os.path.join(FIXTURES, 'benchmark', 'sweep')
GRID = os.path.join(FIXTURES, 'benchmark', 'grid')
IMG = re.compile(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">')


def copy_run_dir(source, tmp_path):
    target = str(tmp_path / os.path.basename(source))
    shutil.copytree(source, target)
    return target


def read_run(run_dir, label, host='node1'):
    with open(os.path.join(run_dir, 'runs', host, label + '.json'), encoding='utf-8') as handle:
        return json.load(handle)


def write_run(run_dir, label, document, host='node1'):
    os.makedirs(os.path.join(run_dir, 'runs', host), exist_ok=True)
    with open(os.path.join(run_dir, 'runs', host, label + '.json'), 'w', encoding='utf-8') as handle:
        json.dump(document, handle)


def report(path, title=None):
    runs, summary = load_run_dir(path)
    return build_report(runs, summary, title)


@functools.lru_cache(maxsize=None)
def fixture_report(path):
    """The report of a fixture run directory, made once for the tests that only read it."""
    return report(path)


def images(text):
    """(alt, PIL image) of every <img> of the report, each decoded as a PNG."""
    found = []
    for alt, data in IMG.findall(text):
        png = base64.b64decode(data, validate=True)
        assert png.startswith(b'\x89PNG\r\n\x1a\n')
        image = Image.open(io.BytesIO(png))
        image.load()
        found.append((alt, image))
    assert len(found) == text.count('<img ')
    return found


def table_rows(text, heading):
    """The body rows (as lists of cell texts) of the first table after the <h2> ``heading``."""
    section = text.split('<h2>%s</h2>' % heading, 1)[1]
    body = section.split('<tbody>', 1)[1].split('</tbody>', 1)[0]
    return [re.findall(r'<td[^>]*>(.*?)</td>', row) for row in re.findall(r'<tr[^>]*>(.*?)</tr>', body)]


def test_sweep_report_shows_status_targets_runs_plots_and_configuration():
    text = fixture_report(SWEEP)
    assert text.startswith('<!DOCTYPE html>')
    assert '<title>vLLM benchmark report 20261130T234500Z</title>' in text
    assert '<div class="banner FAIL">node1: FAIL<span class="detail">highest concurrency meeting the targets: none' in text
    assert ('Run <code>20261130T234500Z</code>: 3 benchmark runs on 1 host, 2026-11-30T23:45:00Z to '
            '2026-11-30T23:45:11Z.') in text
    # The targets with their results per host: c16 misses the p99 latency, c1 and c4 the throughput.
    assert table_rows(text, 'Targets') == [
        ['e2el_ms_p99', 'E2E latency p99 ms', '&lt;=', '150', '2 PASS, 1 FAIL'],
        ['output_throughput', 'output tok/s', '&gt;=', '1200', '1 PASS, 2 FAIL'],
        ['npu_aicore_percent_mean', 'NPU AI core % (mean)', '&gt;=', '85.0', '3 FAIL'],
    ]
    runs = table_rows(text, 'Runs')
    assert [row[:5] for row in runs] == [['node1', 'c1', '', '1', 'FAIL'], ['node1', 'c4', '', '4', 'FAIL'],
                                         ['node1', 'c16', '', '16', 'FAIL']]
    # c4 is the captured run: its numbers are vllm bench serve's (40 done, 61.75 req/s, 988 tok/s, p99 80.9 ms).
    assert runs[1][5:9] == ['40', '0', '61.8', '988'] and runs[1][13] == '80.9'
    # Latency and throughput versus concurrency (one sweep), and one timeline per run; no grid.
    alts = [alt for alt, _image in images(text)]
    assert alts == ['Latency percentiles versus concurrency on node1; targets dashed',
                    'Throughput versus concurrency on node1; targets dashed'] + [
        'NPU AI core utilisation and HBM per chip, and load generator CPU, during node1 / %s' % label
        for label in ('c1', 'c4', 'c16')]
    assert 'Tuning grid' not in text and 'No NPU samples' not in text
    # Each run's configuration, collapsed, with its warning.
    assert text.count('<details><summary>node1 / ') == 3
    assert '<code>vllm_service_port</code></td><td>18000</td>' in text
    assert '<code>max_concurrency</code></td><td>16</td>' in text
    assert '<li>the load generator used 82 % of a CPU on average' in text


def test_plots_have_the_fixed_size():
    sizes = [image.size for _alt, image in images(fixture_report(SWEEP))]
    assert sizes == [(1000, 700), (1000, 380), (1000, 300), (1000, 300), (1000, 300)]


def test_grid_report_highlights_the_best_point_and_notes_the_missing_npu():
    text = fixture_report(GRID)
    rows = table_rows(text, 'Tuning grid')
    assert [row[1] for row in rows] == [
        '#1 vllm_service_dtype=float16, vllm_service_max_num_seqs=16',
        '#2 vllm_service_dtype=bfloat16, vllm_service_max_num_seqs=16',
        '#3 vllm_service_dtype=float16, vllm_service_max_num_seqs=32',
        '#4 vllm_service_dtype=bfloat16, vllm_service_max_num_seqs=32']
    assert [row[-1] for row in rows] == ['', 'best', '', '']
    # The best point's rows are highlighted, in the grid table and in the runs table.
    assert text.count('<tr class="best">') == 2
    assert 'Best point: #2 vllm_service_dtype=bfloat16, vllm_service_max_num_seqs=16 on node1; the original ' \
           'configuration was restored.' in text
    assert '<code>vllm_service_max_num_seqs</code> = 16, 32' in text
    assert 'Objective: maximise <code>output_throughput</code> among the runs that met every target.' in text
    # One concurrency per point: no versus-concurrency plots; the grid bars, and CPU-only timelines.
    alts = [alt for alt, _image in images(text)]
    assert alts == ['Grid points on node1: E2E latency p99 and output throughput per run (best point green), '
                    'targets dashed'] + ['Load generator CPU during node1 / p%d-c4' % i for i in range(1, 5)]
    assert text.count('<p class="note">No NPU samples on this host.</p>') == 4
    # The NPU metrics are null on this host.
    assert [row[14:17] for row in table_rows(text, 'Runs')] == [['n/a', 'n/a', 'n/a']] * 4


def test_a_grid_without_a_best_point(tmp_path):
    run_dir = copy_run_dir(GRID, tmp_path)
    with open(os.path.join(run_dir, 'summary.json'), encoding='utf-8') as handle:
        summary = json.load(handle)
    summary['grid'].update(best=None, restored=False)
    with open(os.path.join(run_dir, 'summary.json'), 'w', encoding='utf-8') as handle:
        json.dump(summary, handle)
    text = report(run_dir)
    assert '<p>Best point: none met the targets.</p>' in text
    assert 'class="best"' not in text
    assert [row[-1] for row in table_rows(text, 'Tuning grid')] == [''] * 4


def test_best_bars_are_drawn_green():
    green = (0x2c, 0xa0, 0x2c)
    grid = dict(images(fixture_report(GRID)))
    image = next(image for alt, image in grid.items() if alt.startswith('Grid points')).convert('RGB')
    assert image.getcolors(1 << 20) and any(colour == green for _count, colour in image.getcolors(1 << 20))


def test_the_report_stands_alone():
    for path in (SWEEP, GRID):
        text = fixture_report(path)
        # Every source is an embedded PNG, there are no links, and no style or script loads anything.
        sources = re.findall(r'\bsrc\s*=\s*"([^"]*)"', text)
        assert sources and all(src.startswith('data:image/png;base64,') for src in sources)
        assert not re.search(r'\b(href|action|srcset|poster|data)\s*=', text)
        assert not re.search(r'url\(|@import|<script|<link|<iframe|<object|<embed', text, re.IGNORECASE)
        # "http" appears in the text only: the endpoint of the load, in the configuration tables.
        outside_text = re.sub(r'>[^<]*<', '><', text)
        assert 'http' not in outside_text.lower()
        assert 'http://127.0.0.1:18000/v1/completions' in text


def test_same_input_same_bytes(tmp_path):
    first = report(SWEEP)
    assert report(SWEEP) == first
    # Where the run directory lies does not show.
    assert report(copy_run_dir(SWEEP, tmp_path)) == first
    points = [(1, {'e2el_ms_p99': 10.0}), (4, {'e2el_ms_p99': 20.0})]
    assert latency_png(points, [], 't') == latency_png(points, [], 't')
    # No date, time or software version in the plots.
    assert b'tEXt' not in latency_png(points, [], 't') and b'tIME' not in latency_png(points, [], 't')


def test_matplotlibrc_settings_do_not_change_the_plots():
    points = [(1, {'e2el_ms_p99': 10.0}), (4, {'e2el_ms_p99': 20.0})]
    before = latency_png(points, [], 't')
    with matplotlib.rc_context({'lines.linewidth': 7, 'axes.facecolor': 'black', 'figure.dpi': 300}):
        assert latency_png(points, [], 't') == before


def test_targets_are_drawn_only_on_the_plots_of_their_metric():
    points = [(1, {'e2el_ms_p99': 10.0, 'ttft_ms_mean': 3.0}), (4, {'e2el_ms_p99': 20.0, 'ttft_ms_mean': 5.0})]
    plain = latency_png(points, [], 't')
    on_plot = {'metric': 'e2el_ms_p99', 'op': '<=', 'value': 15.0}
    off_plot = {'metric': 'ttft_ms_mean', 'op': '<=', 'value': 4.0}
    assert latency_png(points, [on_plot], 't') != plain
    assert latency_png(points, [off_plot], 't') == plain
    assert latency_png(points, [dict(on_plot, value=None)], 't') == plain


def test_metrics_that_are_no_numbers_show_as_na(tmp_path):
    run_dir = copy_run_dir(SWEEP, tmp_path)
    os.remove(os.path.join(run_dir, 'summary.json'))
    document = read_run(run_dir, 'c4')
    document['metrics'].update(output_throughput=None, request_throughput='fast', completed=True,
                               e2el_ms_p99=float('nan'), ttft_ms_p99=[1], tpot_ms_p99={'ms': 2})
    del document['metrics']['itl_ms_p99']
    document['targets'][0].update(actual='n/a', value='150')
    document['npu_samples'] = [{'t': 'x', 'npu_id': 0, 'chip_id': 0, 'aicore_percent': None}, 'garbage']
    document['loadgen_samples'] = 'none'
    document['config'] = None
    document['status'] = 'MAYBE'
    write_run(run_dir, 'c4', document)
    document = read_run(run_dir, 'c1')
    document['config']['load']['max_concurrency'] = 0
    write_run(run_dir, 'c1', document)
    text = report(run_dir)
    # Without a concurrency (none, or 0) c1 and c4 come last, and are not plotted.
    assert '<p class="note">Not plotted (no max_concurrency): c1, c4.</p>' in text
    row = table_rows(text, 'Runs')[2]
    assert row[:5] == ['node1', 'c4', '', 'n/a', 'n/a']
    assert row[5:14] == ['n/a', '0', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a', '61.1', 'n/a']
    # Without summary.json the banner's status comes from the run files.
    assert '<div class="banner FAIL">node1: FAIL<span class="detail">3 runs</span>' in text
    assert 'No summary.json' in text


def test_a_run_without_samples_gets_notes(tmp_path):
    run_dir = copy_run_dir(SWEEP, tmp_path)
    document = read_run(run_dir, 'c1')
    document.update(npu_samples=[], loadgen_samples=[])
    write_run(run_dir, 'c1', document)
    text = report(run_dir)
    c1 = text.split('<h3>node1 / c1</h3>', 1)[1].split('<h3>', 1)[0]
    assert c1 == '<p class="note">No NPU samples on this host.</p><p class="note">No load generator CPU samples.</p>'
    assert timeline_png([], [], [], 't') is None


def test_text_from_the_files_is_escaped(tmp_path):
    run_dir = copy_run_dir(SWEEP, tmp_path)
    document = read_run(run_dir, 'c4')
    document['label'] = '<img src=x onerror=alert(1)>'
    document['config']['service']['vllm_service_extra_args'] = ['--x="<b>"']
    write_run(run_dir, 'c4', document)
    text = report(run_dir, title='A & B')
    assert '<img src=x' not in text and '&lt;img src=x onerror=alert(1)&gt;' in text
    assert '<title>A &amp; B</title>' in text and '<h1>A &amp; B</h1>' in text
    assert '&lt;b&gt;' in text


def test_two_hosts_get_a_banner_and_a_sweep_each(tmp_path):
    run_dir = copy_run_dir(SWEEP, tmp_path)
    for label in ('c1', 'c4'):
        document = read_run(run_dir, label)
        document.update(host='node2', status='PASS')
        write_run(run_dir, label, document, host='node2')
    text = report(run_dir)
    assert '<div class="banner FAIL">node1: FAIL' in text
    # summary.json does not know node2: its status comes from its runs.
    assert ('<div class="banner PASS">node2: PASS<span class="detail">highest concurrency meeting the targets: '
            'n/a</span>') in text
    assert [row[:2] for row in table_rows(text, 'Runs')] == [
        ['node1', 'c1'], ['node1', 'c4'], ['node1', 'c16'], ['node2', 'c1'], ['node2', 'c4']]
    assert 'Latency percentiles versus concurrency on node2; targets dashed' in text


@pytest.mark.parametrize('number_in, shown', [
    (40, '40'), (61.746, '61.7'), (987.94, '988'), (3.8723, '3.87'), (0, '0'), (0.0, '0.00'), (None, 'n/a'), ('1', 'n/a'),
    (True, 'n/a'), (float('inf'), 'n/a'), (float('nan'), 'n/a'), ([], 'n/a'),
])
def test_fmt(number_in, shown):
    assert fmt(number_in) == shown


def test_number():
    assert number(3) == 3.0 and number(False) is None and number(float('-inf')) is None
    assert fmt(40.0, 'completed') == '40' and fmt(40.5, 'completed') == '40.5'


@pytest.mark.parametrize('content, message', [
    ('{"schema": "kunpeng_ascend.vllm/benchmark-run/1", ', r'is not valid JSON \(Expecting property name'),
    (b'\xff\xfe{}', r'is not valid JSON \(not UTF-8'),
    ('[1, 2]', r'holds a JSON list, not an object: it is no benchmark run file'),
    ('{"schema": "kunpeng_ascend.vllm/benchmark-run/2"}',
     r'has schema "kunpeng_ascend.vllm/benchmark-run/2", not \'kunpeng_ascend.vllm/benchmark-run/1\': it is no '
     r'benchmark run file of this collection'),
    ('{"host": "node1"}', r'has schema null, not'),
])
def test_a_broken_run_file_fails_naming_it(tmp_path, content, message):
    run_dir = copy_run_dir(SWEEP, tmp_path)
    path = os.path.join(run_dir, 'runs', 'node1', 'c4.json')
    with open(path, 'wb') as handle:
        handle.write(content if isinstance(content, bytes) else content.encode('utf-8'))
    with pytest.raises(ReportError, match='^%s %s' % (re.escape(path), message)):
        load_run_dir(run_dir)


def test_a_broken_summary_fails_naming_it(tmp_path):
    run_dir = copy_run_dir(SWEEP, tmp_path)
    path = os.path.join(run_dir, 'summary.json')
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump({'schema': 'kunpeng_ascend.vllm/benchmark-run/1'}, handle)
    with pytest.raises(ReportError, match='^%s has schema .* it is no benchmark summary' % re.escape(path)):
        load_run_dir(run_dir)


@pytest.mark.parametrize('layout', ['empty', 'runs without files', 'other files only'])
def test_a_directory_without_run_files_fails(tmp_path, layout):
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    if layout != 'empty':
        (run_dir / 'runs' / 'node1').mkdir(parents=True)
    if layout == 'other files only':
        (run_dir / 'runs' / 'node1' / 'c4.csv').write_text('x\n')
        (run_dir / 'runs' / 'stray.json').write_text('{}')
        (run_dir / 'summary.json').write_text('{}')
    with pytest.raises(ReportError, match=r'^%s has no run files \(runs/<host>/<label>.json\)' % re.escape(str(run_dir))):
        load_run_dir(str(run_dir))


def test_a_missing_directory_fails(tmp_path):
    with pytest.raises(ReportError, match=r'^%s is not a directory' % re.escape(str(tmp_path / 'nope'))):
        load_run_dir(str(tmp_path / 'nope'))


def test_an_oversized_file_is_refused(tmp_path, monkeypatch):
    run_dir = copy_run_dir(SWEEP, tmp_path)
    monkeypatch.setattr(_benchmark_report, 'MAX_BYTES', 1000)
    with pytest.raises(ReportError, match=r'c1.json: larger than 1000 bytes, not a benchmark run file'):
        load_run_dir(run_dir)


def test_a_fifo_in_place_of_a_run_file_is_refused_without_waiting(tmp_path):
    run_dir = copy_run_dir(SWEEP, tmp_path)
    fifo = os.path.join(run_dir, 'runs', 'node1', 'c1.json')
    os.remove(fifo)
    os.mkfifo(fifo)
    with pytest.raises(ReportError, match=r'c1.json: a FIFO|c1.json: .*not a regular file'):
        load_run_dir(run_dir)


def soak_document(base, slope_mib_per_hour, journal_lines=()):
    """A soak run file: the captured run c4's load and metrics, with vllm_soak's result for a service whose memory
    grows ``slope`` MiB/h (readings every 5 s for 90 s, warm-up 0.2) and two NPU chips whose HBM stays flat."""
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _soak
    samples = [{'t': t * 5.0, 'rss_mib': 2000.0 + slope_mib_per_hour * t * 5.0 / 3600.0, 'main_pid': 42, 'restarts': 0,
                'known_failures': 0} for t in range(19)]
    npu_samples = [{'t': t * 5.0, 'npu_id': npu, 'chip_id': 0, 'hbm_used_mb': 30000.0 + npu} for t in range(19)
                   for npu in (0, 1)]
    journal = _soak.JournalTally()
    journal.add(list(journal_lines))
    settings = {'duration': 90.0, 'interval': 5.0, 'rate': 0.5, 'warmup': 0.2, 'max_hbm_growth': 128.0,
                'max_rss_growth': 512.0, 'max_restarts': 0, 'max_known_failures': 0}
    judged = _soak.verdict(samples, npu_samples, journal.result(), 90.0, 0.2, settings)
    return dict(base, label='soak', status=judged['verdict'], targets=[], npu_samples=[], loadgen_samples=[],
                soak=dict(judged, samples=samples, npu_samples=npu_samples, journal=journal.result(), settings=settings))


def test_a_soak_run_shows_its_verdict_checks_slope_and_memory_plot(tmp_path):
    run_dir = str(tmp_path / 'soak')
    base = read_run(SWEEP, 'c4')
    write_run(run_dir, 'soak', soak_document(base, 3600.0, ['RuntimeError: NPU out of memory. Tried to allocate 2 GiB']))
    text = report(run_dir)
    assert '<div class="banner FAIL">soak: FAIL<span class="detail">0.50 requests/s for 90.0 s, sampled every 5.00 s,' \
           ' warm-up 0.20 of the run</span></div>' in text
    rows = table_rows(text, 'Soak')
    assert [row[0] for row in rows] == ['<code>%s</code>' % name for name in
                                        ('host_rss_growth', 'hbm_growth', 'restarts', 'known_failures')]
    assert rows[0][2:5] == ['3600.0 MiB/h', '512.0 MiB/h', 'FAIL'] and rows[1][2:5] == ['0.0 MiB/h', '128.0 MiB/h', 'PASS']
    assert rows[3][2:5] == ['1', '0', 'FAIL'] and rows[3][5] == 'out_of_memory x1'
    assert '<code>out_of_memory</code> (fail): ' in text
    # The memory plot, two panels (RSS, HBM), and no empty timeline for the soak run.
    alts = [(alt, image.size) for alt, image in images(text)]
    assert alts == [('Memory of the service during the soak on node1 / soak (19 samples): the fitted growth dashed, the '
                     'warm-up shaded', (1000, 640))]
    assert 'NPU utilisation, HBM and load generator CPU over time' not in text
    assert report(run_dir) == text


def test_a_soak_with_too_few_samples_says_so(tmp_path):
    run_dir = str(tmp_path / 'soak')
    document = soak_document(read_run(SWEEP, 'c4'), 0.0)
    document['soak']['samples'] = document['soak']['samples'][:6]
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _soak
    document['soak'].update(_soak.verdict(document['soak']['samples'], [], None, 90.0, 0.2, document['soak']['settings']))
    document['status'] = document['soak']['verdict']
    write_run(run_dir, 'soak', document)
    text = report(run_dir)
    assert '<div class="banner na">soak: NOT_ENOUGH_SAMPLES' in text
    assert table_rows(text, 'Soak')[0][2:6] == ['n/a', '512.0 MiB/h', 'NOT_ENOUGH_SAMPLES',
                                                'not enough samples after the warm-up: 2, the fit needs 5']


def test_a_run_with_a_priority_class_and_a_second_target_shows_both_sections(tmp_path):
    run_dir = str(tmp_path / 'classes')
    base = read_run(SWEEP, 'c4')
    priority = {'class': 'priority', 'priority': -5, 'num_prompts': 10, 'max_concurrency': 1, 'request_rate': 'inf',
                'completed': 10, 'failed': 0, 'overlap': 0.9,
                'metrics': dict(base['metrics'], ttft_ms_p50=12.5, e2el_ms_p99=40.0)}
    rest = dict(priority, **{'class': 'rest', 'priority': 0, 'num_prompts': 30, 'max_concurrency': 3, 'completed': 29,
                             'failed': 1, 'metrics': dict(base['metrics'], ttft_ms_p50=55.0, e2el_ms_p99=140.0)})
    comparison = {'target': {'base_url': 'http://127.0.0.1:8001', 'model': 'w8a8', 'tokenizer': '/srv/models/w8a8',
                             'candidate_digest': 'ab' * 32},
                  'role': 'candidate', 'status': 'PASS', 'metrics': dict(base['metrics'], output_throughput=1500.0),
                  'ratios': {'output_throughput': 1.25, 'e2el_ms_p99': 0.5, 'ttft_ms_p50': None},
                  'quality': {'record_path': '/var/lib/kunpeng_ascend/model_quality/x.json', 'quantized': True,
                              'status': None, 'problems': ['there is none']}}
    write_run(run_dir, 'c4', dict(base, classes=[priority, rest], comparison=comparison))
    text = report(run_dir)
    rows = table_rows(text, 'Priority class and the rest')
    assert [row[2:7] for row in rows] == [['priority', '-5', '10 / 1', '10', '0'], ['rest', '0', '30 / 3', '29', '1']]
    assert [row[7] for row in rows] == ['12.5', '55.0'] and [row[12] for row in rows] == ['40.0', '140']
    assert [row[-1] for row in rows] == ['0.90', '0.90']
    compared = table_rows(text, 'Comparison with a second target')
    assert compared == [['node1', 'c4', 'PASS', '1500', '1.25', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a', '0.50']]
    assert 'against <code>http://127.0.0.1:8001</code> (model <code>w8a8</code>' in text
    assert 'the candidate; the service is the baseline' in text
    assert ("The candidate's quality record (<code>/var/lib/kunpeng_ascend/model_quality/x.json</code>): none; "
            'there is none.') in text


def test_a_run_without_classes_or_comparison_has_neither_section():
    text = fixture_report(SWEEP)
    assert 'Priority class and the rest' not in text and 'Comparison with a second target' not in text
