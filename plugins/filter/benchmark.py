# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The benchmark filters (documented in benchmark_targets.yml, benchmark_grid.yml, benchmark_point_config.yml and
benchmark_summary.yml): the role vllm_benchmark's checks and its sums over runs, on the controller."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_benchmark = lazy_module('operations._benchmark')
_benchmark_report = lazy_module('operations._benchmark_report')
_serving = lazy_module('serving._serving')
_soak = lazy_module('operations._soak')

# The load's options the role names without the soak's prefix (vllm_benchmark_input_len): the benchmark's too.
SHARED_LOAD_OPTIONS = ('input_len', 'output_len')

SERVICE_PREFIX = 'vllm_service_'
_OPTION_NAME = re.compile(r'^[a-z][a-z0-9]*([_-][a-z0-9]+)*$')


def _checked(function, *args):
    try:
        return function(*args)
    except _benchmark.BenchmarkError as error:
        raise AnsibleFilterError(error.msg)


def benchmark_targets(targets, option='vllm_benchmark_targets'):
    """Targets checked and read: ``[{metric, op, value}]``."""
    return _checked(_benchmark.parse_targets, targets, option)


def benchmark_grid(axes, service_params=None, option='vllm_benchmark_grid'):
    """The grid's points, ``[{index, params}]``; an axis that is neither one of ``service_params`` (with or without
    the vllm_service_ prefix; null: the serving plan's SERVING_PARAMS) nor a plausible ``vllm serve`` option name is
    an error."""
    service_params = _serving.SERVING_PARAMS if service_params is None else service_params
    points = _checked(_benchmark.grid_points, axes, option)
    for name, values in axes.items():
        if _short_name(name) in service_params:
            continue
        if not _OPTION_NAME.match(name):
            raise AnsibleFilterError('%s: %r is neither a serving variable of vllm_service (%s) nor a `vllm serve` '
                                     'option name' % (option, name, ', '.join(service_params)))
        for value in values:
            if not isinstance(value, (str, int, float, bool)):
                raise AnsibleFilterError('%s.%s: %r is not a string, number or boolean, as a `vllm serve` option '
                                         'takes' % (option, name, value))
    return points


def _short_name(name):
    return name[len(SERVICE_PREFIX):] if name.startswith(SERVICE_PREFIX) else name


def _option(name, value):
    flag = '--' + name.replace('_', '-')
    if value is True:
        return flag
    if value is False:
        return '--no-' + name.replace('_', '-')
    return '%s=%s' % (flag, value)


def benchmark_point_config(point, original, service_params=None):
    """The serving configuration of a grid point: ``original`` (``{param: value}`` without the vllm_service_ prefix)
    with the point's serving variables (``service_params``; null: the serving plan's SERVING_PARAMS) set and its
    other parameters appended to extra_args as options."""
    service_params = _serving.SERVING_PARAMS if service_params is None else service_params
    config = dict(original)
    options = []
    for name, value in point['params'].items():
        short = _short_name(name)
        if short in service_params:
            config[short] = value
        else:
            options.append(_option(name, value))
    config['extra_args'] = list(config.get('extra_args') or []) + options
    return config


def benchmark_summary(runs, targets, points=None, objective=None, run_id=None):
    """The sums over every run: per host the overall status and the highest concurrency meeting the targets, the
    grid's best point, and the CSV tables (``results_csv``; ``optimization_csv`` with a grid)."""
    if not isinstance(runs, list) or not all(isinstance(run, dict) for run in runs):
        raise AnsibleFilterError('benchmark_summary: the input must be the list of runs')
    best = None
    if points:
        _checked(_benchmark.objective_direction, objective, 'vllm_benchmark_objective')
        best = _checked(_benchmark.best_point, points, runs, objective)
    hosts = {}
    for host in sorted(set(run['host'] for run in runs)):
        mine = [run for run in runs if run['host'] == host]
        # The sweep: the runs outside a grid, or with a grid those of its best point.
        sweep = [run for run in mine if not run.get('grid_point')] or [
            run for run in mine if best and run['grid_point']['index'] == best['index']]
        hosts[host] = {'status': 'PASS' if all(run['status'] == 'PASS' for run in mine) else 'FAIL',
                       'runs': len(mine),
                       'max_concurrency_meeting_targets':
                           _benchmark.max_concurrency_meeting_targets(sweep) if sweep else None}
    summary = {'schema': _benchmark_report.SUMMARY_SCHEMA, 'run_id': run_id, 'targets': benchmark_targets(targets),
               'hosts': hosts, 'grid': None, 'optimization_csv': None,
               'results_csv': _benchmark.csv_text(_benchmark.results_rows(runs), _benchmark.RESULTS_COLUMNS),
               'comparison': [dict(run['comparison'], host=run['host'], label=run['label'],
                                   max_concurrency=run['config']['load']['max_concurrency'])
                              for run in runs if run.get('comparison')]}
    if points:
        axes = {}
        for point in points:
            for name, value in point['params'].items():
                if value not in axes.setdefault(name, []):
                    axes[name].append(value)
        summary['grid'] = {'axes': axes, 'objective': objective, 'points': points, 'best': best}
        summary['optimization_csv'] = _benchmark.csv_text(_benchmark.optimization_rows(points, runs, objective),
                                                          _benchmark.optimization_columns(points))
    return summary


def soak_input_problems(values, prefix='vllm_benchmark_soak_', shared_prefix='vllm_benchmark_'):
    """What is wrong with the soak's inputs (``{option: value}``, the options of module vllm_soak that the role sets:
    the soak's own without ``prefix``, the load's input_len and output_len without ``shared_prefix``), each problem
    naming the variable; [] when they can run. The module checks its options with the same function, so that an
    input accepted here is accepted there."""
    options = _soak.OPTIONS + _soak.LOAD_OPTIONS
    if not isinstance(values, dict):
        raise AnsibleFilterError('soak_input_problems takes a dict of %s' % ', '.join(options))
    unknown = sorted(str(key) for key in values if key not in options)
    if unknown:
        raise AnsibleFilterError('soak_input_problems: unknown option(s) %s; the options are %s'
                                 % (', '.join(unknown), ', '.join(options)))
    names = dict((key, shared_prefix + key) for key in SHARED_LOAD_OPTIONS)
    return _soak.input_problems(values, prefix, names)


def benchmark_input_problems(values, prefix='vllm_benchmark_'):
    """What is wrong with the priority class and the second target (``{priority_share, priority, compare}``), and the
    load's time limits and rate when given (``sample_interval``, ``timeout``, ``request_rate``: the rule module
    vllm_benchmark applies), each problem naming the variable; [] when they can run."""
    required = set(('priority_share', 'priority', 'compare'))
    load_numbers = _benchmark.LOAD_NUMBERS
    if not isinstance(values, dict) or not required <= set(values) or set(values) - required - set(load_numbers):
        raise AnsibleFilterError('benchmark_input_problems takes a dict of priority_share, priority and compare, and '
                                 'optionally %s' % ', '.join(load_numbers))
    share, priority = _from_text(values['priority_share'], float), _from_text(values['priority'], int)
    return (_benchmark.priority_problems(share, priority, prefix)
            + _benchmark.compare_target_problems(values['compare'], prefix + 'compare')
            + _benchmark.load_number_problems(values, prefix))


def _from_text(value, kind):
    """A number given as a string (as -e key=value gives it) read as ``kind``; anything else as it is."""
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            return value
    return value


def benchmark_comparison(run, other, target, quality=None):
    """The comparison of a run of the service (``run``, the vllm_benchmark module's result) with the same load's run
    against the second target (``other``): the target without its key, its status and metrics, the ratios candidate
    / baseline, and the candidate's quality record (``quality``: model_quality_info's result, or null)."""
    try:
        return _benchmark.comparison_record(run, other, target, quality)
    except _benchmark.BenchmarkError as error:
        raise AnsibleFilterError('benchmark_comparison: %s' % error.msg)


class FilterModule:
    def filters(self):
        return {'benchmark_targets': benchmark_targets, 'benchmark_grid': benchmark_grid,
                'benchmark_point_config': benchmark_point_config, 'benchmark_summary': benchmark_summary,
                'soak_input_problems': soak_input_problems, 'benchmark_input_problems': benchmark_input_problems,
                'benchmark_comparison': benchmark_comparison}
