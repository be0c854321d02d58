# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Module vllm_benchmark's run, the one call its main() makes (``run``): the options checked before anything runs
(``option_problems``), the load generators planned (``load_plan``: one, or the priority class's and the rest's),
started and sampled beside the NPUs and their own CPU (``LoadgenCpuSampler``), their results read, and the run
summarised over the benchmark's window against the targets (``summarize``). The decisions on numbers are those of
operations/_benchmark.py; what runs the load generator and samples is operations/_load_generator.py.
"""

from __future__ import annotations

import json

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import KILL_AFTER_SECONDS, CommandRunner
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import number_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import (
    DEFAULT_PRIORITY,
    LOADGEN_BUSY_PERCENT,
    PRIORITY_CLASS,
    PRIORITY_OVERLAP_LOW,
    REST_CLASS,
    BenchmarkError,
    class_report,
    cpu_percent_in_window,
    cpu_percent_series,
    evaluate_targets,
    in_window,
    load_number_problems,
    merged_metrics,
    parse_targets,
    priority_loads,
    priority_overlap,
    priority_problems,
    sample_until_done,
    scalar_fields,
    summarize_npu_samples,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._load_generator import (
    RESULT_FILE,
    LoadGenerator,
    NpuSampler,
    ProcessReader,
    bench_argv,
    find_npu_smi,
    output_tail,
    read_bench_result,
    remove_old_result,
    result_path_problems,
)

# The result file of each class of a priority share (vllm-bench-result-priority.json, vllm-bench-result-rest.json).
CLASS_RESULT_FILE = 'vllm-bench-result-%s.json'
# The loads a class of a priority share takes from priority_loads, in place of the options of the same name.
SHARED_LOADS = ('num_prompts', 'max_concurrency', 'request_rate')


def option_problems(params):
    """Every problem of vllm_benchmark's options ``params`` at once, each naming its option, before anything runs:
    each number through _numbers (NaN, infinity and values that would overflow the time limits refused; the time
    limits and the rate by the rule the role's validation applies too), command, the priority class and work_dir (a
    directory). [] when none."""
    problems = []
    for name, low in (('num_prompts', 1), ('input_len', 1), ('output_len', 1), ('max_concurrency', 1)):
        if number_problem(name, params[name], minimum=low, integer=True):
            problems.append('%s must be %d or more, not %d' % (name, low, params[name]))
    problems.extend(load_number_problems(params, prefix=''))
    if not params['command']:
        problems.append('command must name vLLM\'s CLI, such as [/opt/vllm/venv/bin/vllm]')
    problems.extend(result_path_problems(params['work_dir'], []))
    problems.extend(priority_problems(params['priority_share'], params['priority'], prefix=''))
    return problems


def load_plan(params):
    """The load generators of the run, each ``{class, priority, loads, result_file, extra}`` (``loads``: its
    num_prompts, max_concurrency and request_rate; ``extra``: its arguments before extra_args): one of class None
    without priority_share; with it, the priority class's (its priority in the request body unless it is 0) and the
    rest's (none when the share is 1), each with a result file of its own and the per-request lists the merge of the
    classes reads (--save-detailed)."""
    if params['priority_share'] is None:
        return [{'class': None, 'priority': None, 'loads': dict((key, params[key]) for key in SHARED_LOADS),
                 'result_file': RESULT_FILE, 'extra': []}]
    loads = priority_loads(params['num_prompts'], params['max_concurrency'], params['request_rate'],
                           params['priority_share'])
    return [{'class': name, 'priority': priority, 'loads': loads[name], 'result_file': CLASS_RESULT_FILE % name,
             'extra': (['--extra-body', json.dumps({'priority': priority})] if priority else []) + ['--save-detailed']}
            for name, priority in ((PRIORITY_CLASS, params['priority']), (REST_CLASS, DEFAULT_PRIORITY))
            if loads[name] is not None]


def load_argv(params, entry):
    """vllm bench serve's argv for ``entry`` of load_plan: the options ``params`` with the entry's loads."""
    share = dict((key, entry['loads'][key]) for key in SHARED_LOADS)
    return bench_argv(dict(params, **share), params['work_dir'], entry['result_file'], entry['extra'])


class LoadgenCpuSampler:
    """Each call (at ``moment``) reads the CPU seconds the load generators running ``argvs`` used so far, through
    ``processes`` (a _load_generator.ProcessReader, or one that scripts it), and appends ``{t, cpu_seconds}`` to
    ``samples``: their sum while one of them runs. One not started yet at the first calls is looked for again at the
    next; one that ended counts with the CPU time it was last seen with, as long as another still runs."""

    def __init__(self, processes, argvs):
        self.processes = processes
        self.argvs = list(argvs)
        self.roots = {}
        self.last = {}
        self.samples = []

    def __call__(self, moment):
        running = False
        for index, argv in enumerate(self.argvs):
            if not self.roots.get(index):
                self.roots[index] = self.processes.find_child(argv)
            seconds = self.processes.tree_cpu_seconds(self.roots[index]) if self.roots[index] else None
            if seconds is not None:
                self.last[index], running = seconds, True
        if running:
            self.samples.append({'t': moment, 'cpu_seconds': sum(self.last.values())})


def all_failed_message(params):
    """The failure of a run whose every request failed: what to check, naming the options."""
    return ('every one of the %d requests failed against %s: check that input_len + output_len (%d) fits the '
            'server\'s max_model_len, that the model is served as %s, and the key'
            % (params['num_prompts'], params['base_url'], params['input_len'] + params['output_len'], params['model']))


def _classes(params, gens, warn):
    """(metrics, argv, vllm_bench, classes) of the load generators ``gens``: the one's, or with priority_share every
    class's merged, the last one's argv, each class's result and report (warning when they overlapped little)."""
    if params['priority_share'] is None:
        return gens[0]['metrics'], gens[0]['argv'], scalar_fields(gens[0]['raw']), []
    metrics = merged_metrics(dict((gen['class'], gen['raw']) for gen in gens))
    vllm_bench = dict((gen['class'], scalar_fields(gen['raw'])) for gen in gens)
    overlap = priority_overlap(dict((gen['class'], gen['raw']) for gen in gens))
    classes = [dict(class_report(gen['class'], gen['priority'], gen['loads'], gen['metrics']), argv=gen['argv'],
                    overlap=overlap) for gen in gens]
    if overlap is not None and overlap < PRIORITY_OVERLAP_LOW:
        warn('the priority class ran only %.0f %% of its time beside the rest (its load generator started apart): '
             'their latencies compare little; raise num_prompts' % (100 * overlap))
    return metrics, gens[-1]['argv'], vllm_bench, classes


def summarize(params, gens, targets, npu_samples, npu_watched, cpu_samples, warn):
    """vllm_benchmark's result (RETURN's ``benchmark`` but its ``warnings``) of the load generators ``gens``, each
    ``{class, priority, loads, argv, raw, metrics, ended}`` (``raw`` and ``metrics`` as read_bench_result gives them,
    ``ended``: seconds from the first start to its end), against ``targets`` (parse_targets'), over the benchmark's
    window: from the earliest start of a benchmark (its end less its duration) to the latest end.

    ``npu_samples``: the NPU sampler's readings; ``npu_watched``: the NPUs were sampled and no sampling failed (only
    then does a window without a reading warn); ``cpu_samples``: LoadgenCpuSampler's (the load generator's CPU ends
    at its last reading). Warnings go to ``warn``, in the order: the classes' overlap, failed requests, no NPU
    reading in the window, a busy load generator.

    :raises BenchmarkError: when the classes' results cannot be merged, or every request failed.
    """
    metrics, argv, vllm_bench, classes = _classes(params, gens, warn)
    ended = max(gen['ended'] for gen in gens)
    began = min(gen['ended'] - (gen['metrics']['duration_s'] or 0.0) for gen in gens)
    if not metrics['completed']:
        raise BenchmarkError(all_failed_message(params))
    if metrics['failed']:
        warn('%d of %d requests failed: the run is FAIL; see the server\'s log'
             % (metrics['failed'], metrics['failed'] + metrics['completed']))
    window = (max(0.0, began), ended)
    metrics.update(summarize_npu_samples(in_window(npu_samples, window)))
    if npu_watched and metrics['npu_aicore_percent_mean'] is None:
        warn('no NPU reading fell inside the %.2f s benchmark: lower sample_interval or raise num_prompts'
             % metrics['duration_s'])
    # The last CPU reading is up to one interval before the end: the window ends there for the load generator.
    loadgen_end = min(window[1], cpu_samples[-1]['t']) if cpu_samples else window[1]
    loadgen = cpu_percent_in_window(cpu_samples, (window[0], loadgen_end)) if loadgen_end > window[0] else None
    metrics['loadgen_cpu_percent'] = None if loadgen is None else round(loadgen, 1)
    if metrics['loadgen_cpu_percent'] is not None and metrics['loadgen_cpu_percent'] >= LOADGEN_BUSY_PERCENT:
        warn('the load generator used %.0f %% of a CPU core during the run: it may be the bottleneck, not the '
             'server; run it on a less busy host or lower the concurrency' % metrics['loadgen_cpu_percent'])
    evaluated, status = evaluate_targets(metrics, targets)
    return dict(argv=argv, metrics=metrics, targets=evaluated, status=status, window=[round(t, 3) for t in window],
                npu_samples=npu_samples, loadgen_samples=cpu_percent_series(cpu_samples), vllm_bench=vllm_bench,
                classes=classes)


def _load_generators(module, params, clock):
    """load_plan's entries, each with its ``argv`` and its LoadGenerator (``load``), not started; fails the module,
    naming work_dir, when a result file's place cannot take one (every place checked before any old result file is
    removed)."""
    plan = load_plan(params)
    problems = result_path_problems(params['work_dir'], [entry['result_file'] for entry in plan])
    if problems:
        module.fail_json(msg='; '.join(problems))
    for entry in plan:
        try:
            remove_old_result(params['work_dir'], entry['result_file'])
        except ValueError as error:
            module.fail_json(msg=str(error))
        entry['argv'] = load_argv(params, entry)
        entry['load'] = LoadGenerator(module, entry['argv'], params['api_key'], params['timeout'], clock,
                                      params['ca_path'])
    return plan


def run(module, clock, sleep, processes=None):
    """vllm_benchmark's run with ``module``'s options: fails the module when an option is wrong (before anything
    runs), the load cannot run or its result cannot be read, or every request failed; else returns RETURN's
    ``benchmark``, its warnings passed to module.warn. ``clock`` and ``sleep`` time the sampling, ``processes`` (a
    ProcessReader; None for this host's /proc) reads the load generator's CPU."""
    params = module.params
    processes = processes or ProcessReader()
    problems = option_problems(params)
    if problems:
        module.fail_json(msg='; '.join(problems))
    try:
        targets = parse_targets(params['targets'])
    except BenchmarkError as error:
        module.fail_json(msg=error.msg)
    warnings = WarningCap()
    npu_smi = find_npu_smi(module, params['sample_npus'], params['npu_smi_path'])
    # npu-smi must answer within the interval's order of magnitude, or the sampling would stall the run.
    runner = CommandRunner(module, max(10, int(params['sample_interval'] * 5)))
    gens = _load_generators(module, params, clock)
    npus = NpuSampler(runner, npu_smi, params['npu_ids'], warnings)
    cpu = LoadgenCpuSampler(processes, [gen['argv'] for gen in gens])
    for gen in gens:
        gen['load'].start()
    started = min(gen['load'].started for gen in gens)

    def poll():
        return 0 if all(gen['load'].poll() is not None for gen in gens) else None

    samplers = ([cpu] if params['measure_loadgen_cpu'] else []) + ([npus] if npu_smi else [])
    # The runner's time limit stops the load generators; this one only bounds the sampling should that fail.
    sample_until_done(poll, samplers, params['sample_interval'],
                      started + params['timeout'] + KILL_AFTER_SECONDS + 30, clock, sleep)
    for gen in gens:
        gen['result'], gen['ended'] = gen['load'].wait()
        gen['ended'] += gen['load'].started - started
        gen['raw'], gen['metrics'] = read_bench_result(
            module, gen['result'], params['work_dir'], params['base_url'], warnings,
            'the load generator ran longer than timeout (%d s) and was killed; raise timeout or lower num_prompts'
            % params['timeout'], gen['result_file'])
    try:
        benchmark = summarize(params, gens, targets, npus.samples, bool(npu_smi) and not npus.errors, cpu.samples,
                              warnings)
    except BenchmarkError as error:
        # With the output of the last load generator, as it ended.
        module.fail_json(msg=error.msg, **output_tail(gens[-1]['result']))
    benchmark['warnings'] = list(warnings.messages)
    warnings.emit(module.warn)
    return benchmark
