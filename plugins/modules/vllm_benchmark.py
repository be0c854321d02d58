#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_benchmark
short_description: Load a vLLM endpoint with vllm bench serve, sample the NPUs meanwhile, and check the targets
version_added: 0.3.0
description:
  - Runs vLLM's own load generator, C(vllm bench serve), once against an OpenAI-compatible endpoint with a fixed
    number of random-token requests (O(num_prompts), O(input_len), O(output_len)), a concurrency limit
    (O(max_concurrency)), a request rate and a seed, and reads the result file it saves.
  - While it runs, samples every O(sample_interval) seconds the NPUs through C(npu-smi info) (AI core utilisation
    and HBM use per chip) and the CPU time the load generator used, from C(/proc).
  - "The NPU and load-generator figures are summarised over the benchmark's own window, the last C(duration)
    seconds before the load generator ended: its start-up (several seconds of Python imports) and the single test
    request before the run are left out."
  - "The load generator is one asyncio process: its CPU near 100 % of a core
    means it, not the server, bounded the result; the module then warns (C(loadgen_cpu_percent) in
    RV(benchmark.metrics))."
  - Each target is compared with the measured metric; RV(benchmark.status) is C(FAIL) when a target failed or a
    request failed. A target that fails does not fail the module; a benchmark that cannot run, or whose every
    request failed, does.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
  - kunpeng_ascend.vllm.load_generator
attributes:
  check_mode:
    support: none
    details:
      - A benchmark sends real requests, so it does not run in check mode.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  num_prompts:
    description: How many requests the run sends.
    type: int
    default: 200
  max_concurrency:
    description: Requests in flight at most.
    type: int
    required: true
  request_rate:
    description: Requests per second (Poisson arrivals), or V(inf) to send them all at once.
    type: str
    default: inf
  work_dir:
    description: An existing directory on this host for the result file and the load generator's output; a result
      file's name there (C(vllm-bench-result.json), with O(priority_share) C(vllm-bench-result-priority.json) and
      C(vllm-bench-result-rest.json)) must be a file or nothing, which is checked before any load runs.
    type: path
    required: true
  sample_interval:
    description: Seconds between samples, 0.1 or more (at most 366 days). A sample of C(npu-smi info) that takes
      longer delays the next.
    type: float
    default: 1.0
  measure_loadgen_cpu:
    description:
      - Sample the CPU time of the load generator (this module's child and its children) from C(/proc).
      - V(false) leaves RV(benchmark.metrics) C(loadgen_cpu_percent) null, for a load generator in a container.
    type: bool
    default: true
  targets:
    description:
      - "Targets, each V({metric: <name>, max: <number>}) or V({metric: <name>, min: <number>})."
      - The metrics are those of RV(benchmark.metrics), such as C(e2el_ms_p99), C(output_throughput) and
        C(npu_aicore_percent_mean). A metric not measured (no NPU sampled) is C(NOT_MEASURED), which does not fail.
    type: list
    elements: dict
    default: []
  timeout:
    description: Seconds the load generator may run before it is killed and the module fails, 1 to 366 days.
    type: int
    default: 3600
  priority_share:
    description:
      - The share (above 0, up to 1) of the requests sent with the priority O(priority); not set, every request has
        vLLM's default priority 0 and one load generator runs.
      - "With a share, two load generators run at the same time: one sends that share of O(num_prompts) with
        O(priority) in the request body, at that share of O(max_concurrency) and of O(request_rate) (one request
        and one in flight at least); the other the rest, at the rest of them (one in flight at least, so the total
        in flight is one more than O(max_concurrency) when that is 1). RV(benchmark.classes) gives each class apart,
        RV(benchmark.metrics) every request together."
      - The server must run with C(--scheduling-policy priority); vLLM refuses a priority other than 0 otherwise.
    type: float
  priority:
    description: The priority of the share's requests; vLLM serves lower values first, the others have 0.
    type: int
    default: -1
notes:
  - The load generator runs under a parsable locale and coreutils C(timeout) (O(timeout)), which stops it and its
    children.
"""

EXAMPLES = r"""
- name: Benchmark the local vLLM service at concurrency 16 against the deployment guide's targets
  kunpeng_ascend.vllm.vllm_benchmark:
    command: [/opt/vllm/venv/bin/vllm]
    base_url: http://127.0.0.1:8000
    model: deepseek-r1
    tokenizer: /data/models/DeepSeek-R1-W8A8
    api_key: "{{ vllm_api_key }}"
    num_prompts: 500
    max_concurrency: 16
    work_dir: /var/tmp/bench
    targets:
      - {metric: e2el_ms_p99, max: 150}
      - {metric: output_throughput, min: 1200}
      - {metric: npu_aicore_percent_mean, min: 85}
  register: bench
"""

RETURN = r"""
benchmark:
  description: The run.
  returned: success
  type: dict
  contains:
    argv:
      description: The load generator's command line (the key is not on it).
      type: list
      elements: str
    metrics:
      description:
        - C(completed), C(failed), C(duration_s), C(request_throughput) (requests/s), C(output_throughput) and
          C(total_token_throughput) (tokens/s), and for each of C(ttft), C(tpot), C(itl), C(e2el) the keys
          C(<name>_ms_mean), C(_p50), C(_p90), C(_p99), milliseconds.
        - C(npu_aicore_percent_mean), C(npu_aicore_percent_peak), C(npu_hbm_used_mb_mean), C(npu_hbm_used_mb_peak)
          over the benchmark's window (null without NPU samples), and C(loadgen_cpu_percent).
      type: dict
    targets:
      description: Each target with its C(metric), C(op) (C(<=) or C(>=)), C(value), C(actual) and C(status).
      type: list
      elements: dict
    status:
      description: C(PASS) or C(FAIL).
      type: str
    window:
      description: Start and end of the benchmark, seconds since the load generator started.
      type: list
      elements: float
    npu_samples:
      description: Every NPU reading, C({t, npu_id, chip_id, aicore_percent, hbm_used_mb, hbm_total_mb}).
      type: list
      elements: dict
    loadgen_samples:
      description: The load generator's CPU between samples, C({t, cpu_percent}) (percent of one core).
      type: list
      elements: dict
    vllm_bench:
      description:
        - The result file of C(vllm bench serve), without its per-request lists.
        - With O(priority_share), one such result per class, keyed C(priority) and C(rest).
      type: dict
    classes:
      description:
        - With O(priority_share), each class of requests, C(priority) then C(rest) (none when the share is 1), as
          C({class, priority, num_prompts, max_concurrency, request_rate, completed, failed, argv, overlap,
          metrics}), C(overlap) the share of the priority class's time the rest ran beside it (the module warns
          below 0.5), C(metrics) those of RV(benchmark.metrics) but the NPU and load-generator ones, from its own load
          generator; an empty list without it.
      type: list
      elements: dict
    warnings:
      description: The warnings of the run.
      type: list
      elements: str
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule

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
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import KILL_AFTER_SECONDS, CommandRunner
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._load_generator import (
    RESULT_FILE,
    LoadGenerator,
    NpuSampler,
    ProcessReader,
    argument_spec,
    bench_argv,
    find_npu_smi,
    output_tail,
    read_bench_result,
    remove_old_result,
    result_path_problems,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import number_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap


def check_params(module, params):
    """Every problem of the options at once, before anything runs: each number through _numbers (NaN, infinity and
    values that would overflow the time limits refused; the time limits and the rate by the rule the role's validation
    applies too), the priority class, the result files' folder."""
    problems = []
    for name, low in (('num_prompts', 1), ('input_len', 1), ('output_len', 1), ('max_concurrency', 1)):
        if number_problem(name, params[name], minimum=low, integer=True):
            problems.append('%s must be %d or more, not %d' % (name, low, params[name]))
    problems.extend(load_number_problems(params, prefix=''))
    if not params['command']:
        problems.append('command must name vLLM\'s CLI, such as [/opt/vllm/venv/bin/vllm]')
    problems.extend(result_path_problems(params['work_dir'], []))
    problems.extend(priority_problems(params['priority_share'], params['priority'], prefix=''))
    if problems:
        module.fail_json(msg='; '.join(problems))


def load_generators(module, params, work_dir, clock):
    """The load generators of the run, each ``{class, priority, loads, argv, result_file, load}``: one (class None)
    without priority_share; with it, the priority class's and the rest's (none when the share is 1), each with its
    result file and the per-request lists the merge of the classes reads."""
    if params['priority_share'] is None:
        plan = [(None, None, params, RESULT_FILE, ())]
    else:
        loads = priority_loads(params['num_prompts'], params['max_concurrency'], params['request_rate'],
                               params['priority_share'])
        plan = [(name, priority, loads[name], 'vllm-bench-result-%s.json' % name,
                 (['--extra-body', json.dumps({'priority': priority})] if priority else []) + ['--save-detailed'])
                for name, priority in ((PRIORITY_CLASS, params['priority']), (REST_CLASS, DEFAULT_PRIORITY))
                if loads[name] is not None]
    # Every result file's place is checked before any is removed and any load runs.
    problems = result_path_problems(work_dir, [entry[3] for entry in plan])
    if problems:
        module.fail_json(msg='; '.join(problems))
    gens = []
    for name, priority, load, result_file, extra in plan:
        try:
            remove_old_result(work_dir, result_file)
        except ValueError as error:
            module.fail_json(msg=str(error))
        share = dict((key, load[key]) for key in ('num_prompts', 'max_concurrency', 'request_rate'))
        argv = bench_argv(dict(params, **share), work_dir, result_file, extra)
        gens.append({'class': name, 'priority': priority, 'loads': load, 'argv': argv, 'result_file': result_file,
                     'load': LoadGenerator(module, argv, params['api_key'], params['timeout'], clock,
                                           params['ca_path'])})
    return gens


def main(clock=time.monotonic, sleep=time.sleep, processes=None):
    """The module; ``clock``, ``sleep`` and ``processes`` (a ProcessReader) time and read the sampling, and are the
    real ones unless a test scripts them."""
    processes = processes or ProcessReader()
    module = AnsibleModule(
        argument_spec=dict(
            argument_spec(),
            num_prompts=dict(type='int', default=200),
            max_concurrency=dict(type='int', required=True),
            request_rate=dict(type='str', default='inf'),
            work_dir=dict(type='path', required=True),
            sample_interval=dict(type='float', default=1.0),
            measure_loadgen_cpu=dict(type='bool', default=True),
            targets=dict(type='list', elements='dict', default=[]),
            timeout=dict(type='int', default=3600),
            priority_share=dict(type='float'),
            priority=dict(type='int', default=-1),
        ),
        supports_check_mode=False,
    )
    params = module.params
    check_params(module, params)
    try:
        targets = parse_targets(params['targets'])
    except BenchmarkError as error:
        module.fail_json(msg=error.msg)
    warnings = WarningCap()

    npu_smi = find_npu_smi(module, params['sample_npus'], params['npu_smi_path'])
    # npu-smi must answer within the interval's order of magnitude, or the sampling would stall the run.
    runner = CommandRunner(module, max(10, int(params['sample_interval'] * 5)))

    work_dir = params['work_dir']
    gens = load_generators(module, params, work_dir, clock)
    npus = NpuSampler(runner, npu_smi, params['npu_ids'], warnings)
    cpu_samples = []
    for gen in gens:
        gen['load'].start()
    started = min(gen['load'].started for gen in gens)
    roots, last = {}, {}

    def sample_cpu(moment):
        # A thread may not have started its load generator yet at the first samples; one that ended counts with
        # the CPU time it was last seen with, as long as another still runs.
        running = False
        for index, gen in enumerate(gens):
            if not roots.get(index):
                roots[index] = processes.find_child(gen['argv'])
            seconds = processes.tree_cpu_seconds(roots[index]) if roots[index] else None
            if seconds is not None:
                last[index], running = seconds, True
        if running:
            cpu_samples.append({'t': moment, 'cpu_seconds': sum(last.values())})

    def poll():
        return 0 if all(gen['load'].poll() is not None for gen in gens) else None

    samplers = ([sample_cpu] if params['measure_loadgen_cpu'] else []) + ([npus] if npu_smi else [])
    # The runner's time limit stops the load generators; this one only bounds the sampling should that fail.
    sample_until_done(poll, samplers, params['sample_interval'],
                      started + params['timeout'] + KILL_AFTER_SECONDS + 30, clock, sleep)
    for gen in gens:
        result, gen['ended'] = gen['load'].wait()
        gen['ended'] += gen['load'].started - started
        raw, gen['metrics'] = read_bench_result(
            module, result, work_dir, params['base_url'], warnings,
            'the load generator ran longer than timeout (%d s) and was killed; raise timeout or lower num_prompts'
            % params['timeout'], gen['result_file'])
        gen['raw'] = raw
    if params['priority_share'] is None:
        metrics, argv = gens[0]['metrics'], gens[0]['argv']
        vllm_bench, classes = scalar_fields(gens[0]['raw']), []
    else:
        try:
            metrics = merged_metrics(dict((gen['class'], gen['raw']) for gen in gens))
        except BenchmarkError as error:
            module.fail_json(msg=error.msg, **output_tail(result))
        argv = gens[-1]['argv']
        vllm_bench = dict((gen['class'], scalar_fields(gen['raw'])) for gen in gens)
        overlap = priority_overlap(dict((gen['class'], gen['raw']) for gen in gens))
        classes = [dict(class_report(gen['class'], gen['priority'], gen['loads'], gen['metrics']), argv=gen['argv'],
                        overlap=overlap) for gen in gens]
        if overlap is not None and overlap < PRIORITY_OVERLAP_LOW:
            warnings('the priority class ran only %.0f %% of its time beside the rest (its load generator started '
                     'apart): their latencies compare little; raise num_prompts' % (100 * overlap))
    ended = max(gen['ended'] for gen in gens)
    began = min(gen['ended'] - (gen['metrics']['duration_s'] or 0.0) for gen in gens)
    npu_samples = npus.samples

    if not metrics['completed']:
        module.fail_json(msg='every one of the %d requests failed against %s: check that input_len + output_len (%d) fits '
                             'the server\'s max_model_len, that the model is served as %s, and the key'
                             % (params['num_prompts'], params['base_url'], params['input_len'] + params['output_len'],
                                params['model']), **output_tail(result))
    if metrics['failed']:
        warnings('%d of %d requests failed: the run is FAIL; see the server\'s log'
                 % (metrics['failed'], metrics['failed'] + metrics['completed']))

    window = (max(0.0, began), ended)
    metrics.update(summarize_npu_samples(in_window(npu_samples, window)))
    if npu_smi and not npus.errors and metrics['npu_aicore_percent_mean'] is None:
        warnings('no NPU reading fell inside the %.2f s benchmark: lower sample_interval or raise num_prompts'
                 % metrics['duration_s'])
    # The last CPU reading is up to one interval before the end: the window ends there for the load generator.
    loadgen_end = min(window[1], cpu_samples[-1]['t']) if cpu_samples else window[1]
    loadgen = cpu_percent_in_window(cpu_samples, (window[0], loadgen_end)) if loadgen_end > window[0] else None
    metrics['loadgen_cpu_percent'] = None if loadgen is None else round(loadgen, 1)
    if metrics['loadgen_cpu_percent'] is not None and metrics['loadgen_cpu_percent'] >= LOADGEN_BUSY_PERCENT:
        warnings('the load generator used %.0f %% of a CPU core during the run: it may be the bottleneck, not the '
                 'server; run it on a less busy host or lower the concurrency' % metrics['loadgen_cpu_percent'])
    evaluated, status = evaluate_targets(metrics, targets)
    run = dict(argv=argv, metrics=metrics, targets=evaluated, status=status, window=[round(t, 3) for t in window],
               npu_samples=npu_samples, loadgen_samples=cpu_percent_series(cpu_samples),
               vllm_bench=vllm_bench, classes=classes, warnings=list(warnings.messages))
    warnings.emit(module.warn)
    module.exit_json(changed=False, benchmark=run)


if __name__ == '__main__':
    main()
