# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role vllm_benchmark's validation (what playbooks/soak.yml runs before vllm_service deploys) against the soak's and
the load's hostile numbers - NaN, infinity, overflowing products and time limits - in one ansible-playbook run
(role_harness):
each refused naming the variable, never a traceback, and what it accepts module vllm_soak accepts (its own tests
check the same function on the module's side)."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness

CASES = {
    'the CI soak': ({'vllm_benchmark_soak_duration': 75, 'vllm_benchmark_soak_interval': 5,
                     'vllm_benchmark_soak_rate': '0.5'}, None),
    'a day at 100 requests/s': ({'vllm_benchmark_soak_duration': 86400, 'vllm_benchmark_soak_rate': 100}, None),
    'a rate of nan': ({'vllm_benchmark_soak_rate': 'nan'},
                      ["vllm_benchmark_soak_rate must be requests/s, more than 0; got 'nan'"]),
    'an infinite interval': ({'vllm_benchmark_soak_interval': float('inf')},
                             ['vllm_benchmark_soak_interval must be seconds, 1 or more (each sample runs systemctl, '
                              'journalctl and npu-smi); got inf']),
    'a duration that overflows': ({'vllm_benchmark_soak_duration': '1e400'},
                                  ["vllm_benchmark_soak_duration must be seconds, more than 0 and at most 31622400; "
                                   "got '1e400'"]),
    'rate x duration overflowing': ({'vllm_benchmark_soak_rate': 1e300, 'vllm_benchmark_soak_duration': 3600},
                                    ['vllm_benchmark_soak_rate x vllm_benchmark_soak_duration (1e+300 x 3600 s) asks for '
                                     '3.6e+303 requests, more than the 10000000 one soak sends at most (the load generator '
                                     'builds them all in memory first): lower the rate or shorten the run']),
    'a growth limit of nan': ({'vllm_benchmark_soak_max_rss_growth': 'NaN'},
                              ["vllm_benchmark_soak_max_rss_growth must be MiB per hour, 0 or more; got 'NaN'"]),
    'no request in flight': ({'vllm_benchmark_soak_max_concurrency': 0},
                             ['vllm_benchmark_soak_max_concurrency must be a whole number, 1 or more; got 0']),
    # The benchmark's own time limits, which its module refuses past 366 days (overflowing the sampling's limits).
    'an infinite sample interval': ({'vllm_benchmark_sample_interval': float('inf')},
                                    ['vllm_benchmark_sample_interval must be 0.1 or more seconds, at most 31622400; '
                                     'got inf']),
    'a time limit of 30000 years': ({'vllm_benchmark_timeout': 10 ** 12},
                                    ['vllm_benchmark_timeout must be 1 to 31622400 seconds; got 1000000000000']),
}


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    ran = role_harness.run_play(tmp_path_factory.mktemp('soak'), 'vllm_benchmark',
                                [variables for variables, _expected in CASES.values()])
    return dict(zip(CASES, ran))


@pytest.mark.parametrize('name', sorted(CASES))
def test_the_soak_inputs_are_refused_before_anything_naming_the_variable(results, name):
    expected = CASES[name][1]
    if expected is None:
        assert results[name] == {'accepted': True}
    else:
        assert results[name]['messages'] == expected
