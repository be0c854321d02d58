# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The role vllm_benchmark's choices and records (each filter documented in its own .yml): benchmark_prepare,
benchmark_run_plan, benchmark_soak_plan, benchmark_final_config and benchmark_play_runs
(module_utils/operations/_benchmark_role.py), benchmark_run_record, benchmark_soak_record and
benchmark_summary_record (module_utils/operations/_benchmark_report.py, which reads the files back)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.benchmark import benchmark_point_config
from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_benchmark = lazy_module('operations._benchmark')
_benchmark_report = lazy_module('operations._benchmark_report')
_benchmark_role = lazy_module('operations._benchmark_role')


def _dict(value, what, name):
    if not isinstance(value, dict):
        raise AnsibleFilterError('%s: %s must be a dict, not %s' % (name, what, type(value).__name__))
    return value


def _call(name, function, *args):
    try:
        return function(*args)
    except _benchmark.BenchmarkError as error:
        raise AnsibleFilterError('%s: %s' % (name, error.msg))
    except (KeyError, IndexError, TypeError) as error:
        raise AnsibleFilterError('%s: the input lacks or mistypes %s' % (name, error))


def benchmark_prepare(cli, work_dir, compare=None, service_model=None):
    """``{'command', 'candidate'}``: the load generator's command (the service's vLLM CLI ``cli`` with ``work_dir``)
    and the path of the second target's candidate model (None without a second target)."""
    _dict(cli, 'the input (vllm_service_report.cli)', 'benchmark_prepare')
    return {'command': _call('benchmark_prepare', _benchmark_role.loadgen_command, cli, work_dir),
            'candidate': _call('benchmark_prepare', _benchmark_role.candidate_path, compare, service_model)
            if compare is not None else None}


def benchmark_run_plan(point, concurrency, seed, runs, report, compare, priority_share, sample_npus, npu_ids):
    """One run's label, seed, targets and NPUs to sample (module_utils/operations/_benchmark_role.py run_plan)."""
    _dict(report, 'report (vllm_service_report)', 'benchmark_run_plan')
    if not isinstance(runs, list):
        raise AnsibleFilterError('benchmark_run_plan: runs must be the list of the node\'s runs')
    return _call('benchmark_run_plan', _benchmark_role.run_plan, point, concurrency, seed, runs, report, compare,
                 priority_share, sample_npus, npu_ids)


def benchmark_soak_plan(report, service_plan, sample_npus, npu_ids):
    """The soak's target options (module_utils/operations/_benchmark_role.py soak_plan)."""
    _dict(report, 'the input (vllm_service_report)', 'benchmark_soak_plan')
    return _call('benchmark_soak_plan', _benchmark_role.soak_plan, report, service_plan, sample_npus, npu_ids)


def benchmark_final_config(best, original, keep_best):
    """The serving configuration that stays deployed after the grid: the ``best`` point's when ``keep_best``."""
    return _benchmark_role.final_config(best, original, keep_best, benchmark_point_config)


def benchmark_play_runs(hosts, hostvars, var='__vllm_benchmark_runs'):
    """Every run of ``hosts``, host after host: each host's ``var`` in ``hostvars``."""
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError('benchmark_play_runs: the input must be the list of the play\'s hosts')
    runs = []
    for host in hosts:
        mine = hostvars[host][var]
        if not isinstance(mine, list):
            raise AnsibleFilterError('benchmark_play_runs: %s of %s must be a list of runs' % (var, host))
        runs.extend(mine)
    return runs


def benchmark_run_record(results, compare, quality, run, report, load):
    """The run file (benchmark-run/1) of one run (module_utils/operations/_benchmark_report.py run_record)."""
    _dict(results, 'the input (the registered vllm_benchmark loop)', 'benchmark_run_record')
    return _call('benchmark_run_record', _benchmark_report.run_record, results, compare, quality or None,
                 _dict(run, 'run', 'benchmark_run_record'), _dict(report, 'report', 'benchmark_run_record'),
                 _dict(load, 'load', 'benchmark_run_record'))


def benchmark_soak_record(soak, run, report, load):
    """The soak's run file (benchmark-run/1), or None when the soak did not run (check mode)."""
    _dict(soak, 'the input (vllm_soak\'s soak)', 'benchmark_soak_record')
    return _call('benchmark_soak_record', _benchmark_report.soak_record, soak,
                 _dict(run, 'run', 'benchmark_soak_record'), _dict(report, 'report', 'benchmark_soak_record'),
                 _dict(load, 'load', 'benchmark_soak_record'))


def benchmark_summary_record(summary, keep_best):
    """summary.json (benchmark-summary/1) of benchmark_summary's ``summary``."""
    return _benchmark_report.summary_record(_dict(summary, 'the input (benchmark_summary)', 'benchmark_summary_record'),
                                            keep_best)


class FilterModule:
    def filters(self):
        return {'benchmark_prepare': benchmark_prepare, 'benchmark_run_plan': benchmark_run_plan,
                'benchmark_soak_plan': benchmark_soak_plan, 'benchmark_final_config': benchmark_final_config,
                'benchmark_play_runs': benchmark_play_runs, 'benchmark_run_record': benchmark_run_record,
                'benchmark_soak_record': benchmark_soak_record, 'benchmark_summary_record': benchmark_summary_record}
