# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The soak run's pure parts: the fit, the verdict, the inputs, the journal batches (a real journalctl capture) and
the container's PID."""

from __future__ import annotations

import math
import random

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _numbers, _systemd
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _soak
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

LIMITS = {'max_hbm_growth': 128.0, 'max_rss_growth': 512.0, 'max_restarts': 0, 'max_known_failures': 0}
GOOD = dict(LIMITS, duration=3600, interval=30, rate=2, warmup=0.2)
JOURNAL = load_fixture('journalctl-o-cat-show-cursor_systemd-252_debian12_oom-line.txt')
HCCL_TIMEOUT = load_fixture('serve-log_llamafactory-5071_EI0006-getting-socket-times-out.txt').splitlines()


def series(slope_mib_per_hour, count=20, interval=30.0, base=4000.0, noise=0.0, seed=1):
    """Readings every ``interval`` s of a memory growing ``slope`` MiB/h, with uniform noise of +- ``noise`` MiB."""
    rng = random.Random(seed)
    return [{'t': i * interval, 'rss_mib': base + slope_mib_per_hour * i * interval / 3600.0
             + (rng.uniform(-noise, noise) if noise else 0.0), 'restarts': 0} for i in range(count)]


def check(result, name):
    return next(item for item in result['checks'] if item['check'] == name)


def tally(lines):
    journal = _soak.JournalTally()
    journal.add(lines)
    return journal.result()


def test_a_linear_series_gives_its_slope_exactly():
    fit = _soak.fit_line([(t, 1000 + 2 * t) for t in range(0, 100, 5)])
    assert fit == {'slope': 2.0, 'intercept': 1000.0, 'samples': 20}


@pytest.mark.parametrize('points', [[], [(0, 1)], [(5, 1), (5, 2), (5, 3)]])
def test_no_line_through_fewer_than_two_points_or_one_instant(points):
    assert _soak.fit_line(points) is None


def test_growth_is_fitted_per_hour_after_the_warm_up_only():
    # Flat during the warm-up (the first 600 s), then 360 MiB/h: the warm-up's readings must not bend the slope.
    points = [(t, 100.0 if t < 600 else 100.0 + (t - 600) * 0.1) for t in range(0, 3600, 30)]
    fit = _soak.growth(points, 600)
    assert fit['mib_per_hour'] == pytest.approx(360.0, rel=1e-9)
    assert fit['from_s'] == 600 and fit['samples'] == 100


def test_a_flat_noisy_series_passes():
    result = _soak.verdict(series(0, count=120, noise=50.0), [], tally([]), 3600, 0.2, LIMITS)
    rss = check(result, 'host_rss_growth')
    assert rss['status'] == 'PASS' and abs(rss['value']) < LIMITS['max_rss_growth']
    assert result['verdict'] == 'PASS'


def test_a_leak_fails():
    result = _soak.verdict(series(2048, count=120, noise=50.0), [], tally([]), 3600, 0.2, LIMITS)
    rss = check(result, 'host_rss_growth')
    assert rss['status'] == 'FAIL' and rss['value'] == pytest.approx(2048, rel=0.05)
    assert result['verdict'] == 'FAIL'


def test_too_few_samples_is_a_verdict_of_its_own_not_a_number():
    result = _soak.verdict(series(0, count=6), [], tally([]), 180, 0.5, LIMITS)
    rss = check(result, 'host_rss_growth')
    assert rss['status'] == 'NOT_ENOUGH_SAMPLES' and rss['value'] is None
    assert 'not enough samples after the warm-up: 3, the fit needs 5' in rss['detail']
    assert result['verdict'] == 'NOT_ENOUGH_SAMPLES'


def test_a_failure_beats_too_few_samples():
    samples = series(0, count=6)
    samples[-1]['restarts'] = 1
    assert _soak.verdict(samples, [], tally([]), 180, 0.5, LIMITS)['verdict'] == 'FAIL'


def test_a_restart_during_the_run_fails_and_earlier_ones_do_not_count():
    samples = series(0, count=20)
    for sample in samples:
        sample['restarts'] = 3
    assert check(_soak.verdict(samples, [], tally([]), 600, 0.2, LIMITS), 'restarts')['status'] == 'PASS'
    samples[12]['restarts'] = samples[13]['restarts'] = 4
    restarts = check(_soak.verdict(samples, [], tally([]), 600, 0.2, LIMITS), 'restarts')
    assert restarts['value'] == 1 and restarts['status'] == 'FAIL'
    assert check(_soak.verdict(samples, [], tally([]), 600, 0.2, dict(LIMITS, max_restarts=1)), 'restarts')['status'] == 'PASS'


def test_the_catalogues_failures_in_the_journal_fail():
    result = _soak.verdict(series(0), [], tally(HCCL_TIMEOUT), 600, 0.2, LIMITS)
    failures = check(result, 'known_failures')
    assert failures['status'] == 'FAIL' and failures['value'] >= 1
    assert failures['detail'].startswith('hccl_timeout x')
    assert result['verdict'] == 'FAIL'


def test_a_catalogue_warning_is_no_failure():
    # nan/inf in the output is a warning of the catalogue (its status warn), not a failure.
    journal = tally(['WARNING: the output of step 3 contains NaN or Inf values'])
    result = _soak.verdict(series(0), [], journal, 600, 0.2, LIMITS)
    assert check(result, 'known_failures')['value'] == 0 and result['verdict'] == 'PASS'


def test_an_unread_journal_and_a_host_without_npus_are_not_measured_and_do_not_fail():
    result = _soak.verdict(series(0), [], None, 600, 0.2, LIMITS)
    assert check(result, 'known_failures')['status'] == 'NOT_MEASURED'
    assert check(result, 'hbm_growth')['status'] == 'NOT_MEASURED'
    assert result['verdict'] == 'PASS'


def npu_rows(slopes, count=20, interval=30.0):
    return [{'t': i * interval, 'npu_id': npu, 'chip_id': 0, 'hbm_used_mb': 20000 + slope * i * interval / 3600.0}
            for i in range(count) for npu, slope in enumerate(slopes)]


def test_the_fastest_growing_chip_is_judged_and_named():
    result = _soak.verdict(series(0), npu_rows([0, 600, 10]), tally([]), 600, 0.2, LIMITS)
    hbm = check(result, 'hbm_growth')
    assert hbm['status'] == 'FAIL' and hbm['value'] == pytest.approx(600) and hbm['detail'] == 'NPU-chip 1-0'
    assert sorted(result['fits']['hbm']) == ['0-0', '1-0', '2-0']


def test_flat_hbm_passes():
    assert check(_soak.verdict(series(0), npu_rows([0, 0]), tally([]), 600, 0.2, LIMITS), 'hbm_growth')['status'] == 'PASS'


def test_the_journal_batch_of_a_real_capture_gives_its_lines_and_cursor():
    lines, cursor = _systemd.split_journal_cursor(JOURNAL)
    assert len(lines) == 5 and lines[2].startswith('RuntimeError: NPU out of memory')
    assert cursor.startswith('s=2ec95b23023b4124bbb81481401473d5;i=32;')
    journal = _soak.JournalTally()
    journal.add(lines)
    journal.add(lines)
    # Two lines of each batch: the message, and systemd's "Started" line that quotes the command printing it.
    assert journal.result()['counts'] == {'out_of_memory': 4} and journal.failures() == 4
    assert journal.result()['lines_read'] == 10 and len(journal.result()['matches']['out_of_memory']) == 3
    assert journal.result()['explained'][0]['id'] == 'out_of_memory'


def test_a_batch_without_a_cursor_keeps_its_lines():
    assert _systemd.split_journal_cursor('one\ntwo\n') == (['one', 'two'], None)
    assert _systemd.split_journal_cursor('') == ([], None)


def test_no_entries_is_not_an_error_but_a_message_is():
    assert _systemd.journal_is_empty(1, '', '')
    assert not _systemd.journal_is_empty(1, '', 'Failed to open journal')
    assert not _systemd.journal_is_empty(0, '', '')


def test_the_journal_is_read_after_the_cursor_or_since_the_start_and_the_unit_checked():
    assert _systemd.journal_argv('/bin/journalctl', 'vllm.service', since_epoch=1700000000.7) == [
        '/bin/journalctl', '--unit=vllm.service', '--since=@1700000000', '--output=cat', '--show-cursor', '--quiet',
        '--no-pager']
    assert _systemd.journal_argv('journalctl', 'vllm.service', cursor='s=1;i=2')[2] == '--after-cursor=s=1;i=2'
    with pytest.raises(ValueError, match='starts with "-"'):
        _systemd.journal_argv('journalctl', '--system')


def test_good_inputs_have_no_problem_and_numbers_may_come_as_strings():
    assert _soak.input_problems(GOOD, 'x_') == []
    assert _soak.input_problems(dict(GOOD, duration='90', interval='5', rate='0.5'), 'x_') == []


@pytest.mark.parametrize('changes, message', [
    ({'duration': 0}, 'vllm_benchmark_soak_duration must be seconds, more than 0 and at most 31622400; got 0'),
    ({'rate': -1}, 'vllm_benchmark_soak_rate must be requests/s, more than 0; got -1'),
    ({'rate': 'fast'}, "vllm_benchmark_soak_rate must be requests/s, more than 0; got 'fast'"),
    ({'interval': 0.5}, 'vllm_benchmark_soak_interval must be seconds, 1 or more'),
    ({'warmup': 1}, 'vllm_benchmark_soak_warmup must be the fraction of the run left out of the fit, 0 to 0.9; got 1'),
    ({'max_rss_growth': -5}, 'vllm_benchmark_soak_max_rss_growth must be MiB per hour, 0 or more; got -5'),
    ({'max_restarts': 0.5}, 'vllm_benchmark_soak_max_restarts must be a whole number, 0 or more; got 0.5'),
    ({'max_known_failures': True}, 'vllm_benchmark_soak_max_known_failures must be a whole number'),
    ({'duration': 60, 'interval': 30}, 'vllm_benchmark_soak_duration (60 s) less its warm-up (vllm_benchmark_soak_warmup'
                                       ' 0.2) leaves 48 s, which at vllm_benchmark_soak_interval 30 s gives fewer than'
                                       ' the 5 samples the fit needs'),
])
def test_bad_inputs_are_named(changes, message):
    problems = _soak.input_problems(dict(GOOD, **changes), 'vllm_benchmark_soak_')
    assert len(problems) == 1 and problems[0].startswith(message), problems


@pytest.mark.parametrize('rate, duration, count', [(2, 3600, 7200), (0.3, 10, 3), (0.01, 10, 1), (1.5, 60, 90)])
def test_prompts_keep_the_rate_for_the_duration(rate, duration, count):
    assert _soak.prompts(rate, duration) == count


NAN, INF = float('nan'), float('inf')
# Every number of the soak, each hostile value: NaN, infinity either way, a boolean, overflowing sizes, out of range,
# not a number at all, and strings of those (as -e gives them).
HOSTILE = [NAN, INF, -INF, True, False, None, 'nan', 'inf', '-inf', 'Infinity', '1e400', 10 ** 400, -(10 ** 400),
           1e308, -1, -0.5, 0.5, 'fast', '', [], {}, '3.5', ' 2 ']


@pytest.mark.parametrize('key', _soak.OPTIONS + _soak.LOAD_OPTIONS)
@pytest.mark.parametrize('value', HOSTILE, ids=repr)
def test_every_number_is_checked_by_numbers_and_never_raises(key, value):
    problems = _soak.input_problems(dict(GOOD, **{key: value}), 'x_')
    assert isinstance(problems, list)
    bounds = dict((rule[0], rule[1]) for rule in _soak._RULES)[key]
    if value is None and key == 'timeout':
        assert problems == []
    elif _numbers.number_problem(key, value, **bounds):
        assert problems and problems[0].startswith('x_%s must be ' % key) and problems[0].endswith('; got %r' % (value,))
    never_a_number = (INF, -INF, True, False, 'nan', 'inf', 'Infinity', '1e400')
    if (isinstance(value, float) and math.isnan(value)) or value in never_a_number:
        assert problems, (key, value)


@pytest.mark.parametrize('rate, duration', [(1e300, 1e300 / 1e300 * 3600), (1e154, 1e154 / 1e154 * 3600),
                                            (3000, 3600 * 24), (10000, 1001), (1e308, 600),
                                            (10 ** 400, 600)])
def test_rate_times_duration_is_bounded_and_never_overflows(rate, duration):
    problems = _soak.input_problems(dict(GOOD, rate=rate, duration=duration), 'x_')
    shown = 'inf' if rate == 10 ** 400 else '%g' % rate      # an integer too large for a float is infinity
    assert len(problems) == 1 and problems[0].startswith('x_rate x x_duration (%s x %g s) asks for' % (shown, duration))
    assert 'more than the 10000000 one soak sends at most' in problems[0]


def test_the_largest_run_accepted_makes_bounded_numbers():
    values = dict(GOOD, rate=_soak.MAX_REQUESTS / 3600.0, duration=3600)
    assert _soak.input_problems(values) == []
    assert _soak.prompts(values['rate'], values['duration']) == _soak.MAX_REQUESTS
    assert _soak.load_timeout(values) == 5700


def test_the_time_limit_is_bounded_and_longer_than_the_run():
    longest = dict(GOOD, duration=_numbers.MAX_SECONDS, rate=0.01)
    assert _soak.input_problems(longest, 'x_') == [
        "x_duration (3.16224e+07 s) x 1.5 + 300 s, the load generator's time limit, is more than 31622400 s: shorten the "
        "run or give a timeout"]
    assert _soak.input_problems(dict(longest, timeout=_numbers.MAX_SECONDS), 'x_') == [
        'x_timeout (31622400 s) must be more than x_duration (3.16224e+07 s): the load generator would be stopped '
        'before the run ends']
    assert _soak.input_problems(dict(longest, duration=_numbers.MAX_SECONDS - 1, timeout=_numbers.MAX_SECONDS)) == []
    assert _soak.input_problems(dict(GOOD, timeout=3600), 'x_')[0].startswith('x_timeout (3600 s) must be more than')
    assert _soak.input_problems(dict(GOOD, timeout='7200')) == []
    assert _soak.load_timeout(dict(GOOD, timeout='7200')) == 7200


def test_a_key_not_given_is_checked_as_the_modules_default():
    assert _soak.input_problems({'duration': 3600, 'rate': 1}) == []
    assert _soak.input_problems({}, 'x_') == ['x_duration must be seconds, more than 0 and at most 31622400; got None',
                                              'x_rate must be requests/s, more than 0; got None']
    assert _soak.input_problems({'duration': 3600, 'rate': 1, 'input_len': 0}, 'x_',
                                {'input_len': 'y_input_len'}) == [
        'y_input_len must be a whole number of tokens, 1 or more; got 0']
