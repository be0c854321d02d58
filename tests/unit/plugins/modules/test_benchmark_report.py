# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""benchmark_report's main() on copies of the run directories of tests/fixtures/benchmark/: the report written
once and then left alone, check mode, the failures; and the report opened in a real headless Chromium, whose
screenshot must show the plots and whose DOM must have loaded every image."""

from __future__ import annotations

import base64
import io
import os
import re
import shutil
import subprocess

import pytest
from PIL import Image

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark_report
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import benchmark_report
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    FIXTURES,
    ExitJson,
    FailJson,
    capture_results,
    run_main,
)

SWEEP = os.path.join(FIXTURES, 'benchmark', 'sweep')
GRID = os.path.join(FIXTURES, 'benchmark', 'grid')
# Seconds one Chromium run may take; it takes about one on this project's machines.
CHROMIUM_TIMEOUT = 120


@pytest.fixture
def results(monkeypatch):
    capture_results(monkeypatch)


def run_dir(tmp_path, source=SWEEP):
    target = str(tmp_path / os.path.basename(source))
    shutil.copytree(source, target)
    return target


def run_module(args, outcome=ExitJson):
    return run_main(benchmark_report.main, args, outcome)


def read(path):
    with open(path, 'rb') as handle:
        return handle.read()


def test_report_is_written_once_then_left_alone(results, tmp_path):
    path = run_dir(tmp_path)
    result = run_module({'path': path})
    dest = os.path.join(path, 'report.html')
    assert result['changed'] is True and result['dest'] == dest and 'diff' not in result
    assert result['runs'] == 3 and result['hosts'] == {'node1': {'status': 'FAIL', 'max_concurrency_meeting_targets': None}}
    data = read(dest)
    assert result['size'] == len(data) and data.startswith(b'<!DOCTYPE html>') and data.count(b'<img ') == 5
    assert os.stat(dest).st_mode & 0o777 == 0o644
    assert sorted(os.listdir(path)) == ['report.html', 'runs', 'summary.json']
    inode = os.stat(dest).st_ino
    again = run_module({'path': path})
    assert again['changed'] is False and again['dest'] == dest
    assert os.stat(dest).st_ino == inode and read(dest) == data


def test_a_changed_run_changes_the_report(results, tmp_path):
    path = run_dir(tmp_path)
    run_module({'path': path})
    os.remove(os.path.join(path, 'runs', 'node1', 'c16.json'))
    result = run_module({'path': path})
    assert result['changed'] is True and result['runs'] == 2
    assert read(result['dest']).count(b'<img ') == 4


def test_check_mode_predicts_and_writes_nothing(results, tmp_path):
    path = run_dir(tmp_path, GRID)
    dest = str(tmp_path / 'out.html')
    result = run_module({'path': path, 'dest': dest, '_ansible_check_mode': True, '_ansible_diff': True})
    assert result['changed'] is True and result['dest'] == dest and 'diff' not in result
    assert not os.path.exists(dest)
    run_module({'path': path, 'dest': dest})
    assert run_module({'path': path, 'dest': dest, '_ansible_check_mode': True})['changed'] is False
    # A different title is a different report; check mode says so and leaves the file as it was.
    before = read(dest)
    assert run_module({'path': path, 'dest': dest, 'title': 'Grid', '_ansible_check_mode': True})['changed'] is True
    assert read(dest) == before


def test_title_and_dest(results, tmp_path):
    path = run_dir(tmp_path, GRID)
    dest = str(tmp_path / 'grid.html')
    result = run_module({'path': path, 'dest': dest, 'title': 'Nightly grid'})
    assert result['hosts'] == {'node1': {'status': 'FAIL', 'max_concurrency_meeting_targets': 4}}
    assert b'<h1>Nightly grid</h1>' in read(dest)
    assert not os.path.exists(os.path.join(path, 'report.html'))


def test_a_broken_run_file_fails_naming_it(results, tmp_path):
    path = run_dir(tmp_path)
    broken = os.path.join(path, 'runs', 'node1', 'c1.json')
    with open(broken, 'w', encoding='utf-8') as handle:
        handle.write('{"schema": ')
    result = run_module({'path': path}, FailJson)
    assert result['msg'].startswith('%s is not valid JSON (Expecting value: line 1 column 12' % broken)
    assert result['dest'] == os.path.join(path, 'report.html')
    assert not os.path.exists(result['dest'])


def test_an_empty_directory_fails(results, tmp_path):
    result = run_module({'path': str(tmp_path)}, FailJson)
    assert result['msg'] == ('%s has no run files (runs/<host>/<label>.json): it is no benchmark run directory, or '
                             'no benchmark run finished' % tmp_path)


@pytest.mark.parametrize('dest, message', [
    ('.', r'^dest .* is a directory: give the path of the HTML file$'),
    ('missing/report.html', r'^the directory of dest .*/missing/report.html does not exist$'),
])
def test_a_bad_dest_fails(results, tmp_path, dest, message):
    result = run_module({'path': run_dir(tmp_path), 'dest': str(tmp_path / dest)}, FailJson)
    assert re.match(message, result['msg'])


def test_without_matplotlib_the_module_says_what_to_install(results, tmp_path, monkeypatch):
    monkeypatch.setattr(benchmark_report, 'matplotlib_import_error', lambda: 'ImportError: No module named matplotlib')
    result = run_module({'path': run_dir(tmp_path)}, FailJson)
    assert result['msg'].startswith('Failed to import the required Python library (matplotlib) on ')
    assert result['exception'] == 'ImportError: No module named matplotlib'


# --------------------------------------------------------------------------------------------------------- Chromium

# Appended to a copy of the report: once the page has loaded, write into the DOM, for each image, whether it decoded
# and, drawn on a canvas, its size and how many of its pixels are not white.
IMAGE_CHECK = """<script>
window.addEventListener("load", function () {
  var found = [];
  for (var i = 0; i < document.images.length; i++) {
    var image = document.images[i];
    if (!image.complete || image.naturalWidth === 0) { found.push("broken"); continue; }
    var canvas = document.createElement("canvas");
    canvas.width = image.naturalWidth; canvas.height = image.naturalHeight;
    var context = canvas.getContext("2d");
    context.drawImage(image, 0, 0);
    var pixels = context.getImageData(0, 0, canvas.width, canvas.height).data, coloured = 0;
    for (var j = 0; j < pixels.length; j += 4) {
      if (pixels[j] !== 255 || pixels[j + 1] !== 255 || pixels[j + 2] !== 255) { coloured++; }
    }
    found.push(canvas.width + "x" + canvas.height + ":" + coloured);
  }
  var out = document.createElement("pre"); out.id = "image-check"; out.textContent = found.join(" ");
  document.body.appendChild(out);
});
</script>"""


def chromium(tmp_path, *args):
    """Run headless Chromium (as root it needs --no-sandbox), with its own profile; its stdout."""
    proc = subprocess.run(
        ['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--hide-scrollbars',
         '--user-data-dir=%s' % (tmp_path / 'chromium-profile')] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=CHROMIUM_TIMEOUT, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def images_shown(tmp_path, report):
    """What Chromium made of each image of ``report``: 'broken', or its size and number of pixels not white
    ('1000x700:123456')."""
    with open(report, encoding='utf-8') as handle:
        text = handle.read()
    checked = tmp_path / 'checked.html'
    checked.write_text(text.replace('</body>', IMAGE_CHECK + '\n</body>'), encoding='utf-8')
    dom = chromium(tmp_path, '--dump-dom', checked.as_uri())
    match = re.search(r'<pre id="image-check">([^<]*)</pre>', dom)
    assert match, dom[-2000:]
    return match.group(1).split()


def images_decoded(report):
    """The same for each image of ``report``, decoded by Pillow (which fails on a damaged PNG)."""
    with open(report, encoding='utf-8') as handle:
        text = handle.read()
    found = []
    for data in re.findall(r'<img [^>]*src="data:image/png;base64,([^"]*)"', text):
        with Image.open(io.BytesIO(base64.b64decode(data, validate=True))) as image:
            image = image.convert('RGB')
            white = dict((colour, count) for count, colour in image.getcolors(1 << 24)).get((255, 255, 255), 0)
            found.append('%dx%d:%d' % (image.size[0], image.size[1], image.size[0] * image.size[1] - white))
    return found


def plot_colour(colour):
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


# The colours the plots draw their lines, markers and bars in (not the greys, which text has too); the page's own
# style uses none of them.
PLOT_COLOURS = set(rgb for rgb in (plot_colour(c) for c in _benchmark_report.CYCLE + list(_benchmark_report.COLOURS.values()))
                   if len(set(rgb)) > 1)


def screenshot(tmp_path, report):
    """Of the screenshot of ``report`` (1280 x 4000): the share of pixels that are not white, and the number of
    pixels in the plots' colours."""
    shot = tmp_path / 'screenshot.png'
    chromium(tmp_path, '--screenshot=%s' % shot, '--window-size=1280,4000', 'file://%s' % report)
    with Image.open(shot) as image:
        image = image.convert('RGB')
        assert image.size == (1280, 4000)
        colours = image.getcolors(1 << 24)
    non_white = sum(count for count, colour in colours if colour != (255, 255, 255))
    return non_white / (1280.0 * 4000), sum(count for count, colour in colours if colour in PLOT_COLOURS)


def corrupt_one_image(report):
    """Break the first embedded PNG of the report: its signature is no PNG's any more."""
    with open(report, encoding='utf-8') as handle:
        text = handle.read()
    text = text.replace('src="data:image/png;base64,iVBORw0KGgo', 'src="data:image/png;base64,AAAAAAAAAAA', 1)
    with open(report, 'w', encoding='utf-8') as handle:
        handle.write(text)


needs_chromium = pytest.mark.needs_tools('chromium')


@needs_chromium
@pytest.mark.parametrize('source, images', [(SWEEP, 5), (GRID, 5)], ids=['sweep', 'grid'])
def test_chromium_shows_the_plots(results, tmp_path, source, images):
    report = run_module({'path': run_dir(tmp_path, source)})['dest']
    # Chromium shows every image, pixel for pixel as the PNG holds it.
    shown = images_shown(tmp_path, report)
    assert len(shown) == images and shown == images_decoded(report)
    # Not blank, and the plots are on the page: the sweep's show about 17000 pixels in their colours, the grid's
    # about 80000; without the images there are none.
    non_white, plotted = screenshot(tmp_path, report)
    assert non_white > 0.05 and plotted > 5000, (non_white, plotted)


@needs_chromium
def test_chromium_finds_a_broken_image(results, tmp_path):
    report = run_module({'path': run_dir(tmp_path)})['dest']
    corrupt_one_image(report)
    shown = images_shown(tmp_path, report)
    assert shown[0] == 'broken' and 'broken' not in shown[1:]


@needs_chromium
def test_a_page_without_plots_is_told_apart(results, tmp_path):
    report = run_module({'path': run_dir(tmp_path)})['dest']
    with open(report, encoding='utf-8') as handle:
        text = handle.read()
    with open(report, 'w', encoding='utf-8') as handle:
        handle.write(re.sub(r'<img [^>]*>', '', text))
    non_white, plotted = screenshot(tmp_path, report)
    assert non_white > 0.03 and plotted == 0, (non_white, plotted)
