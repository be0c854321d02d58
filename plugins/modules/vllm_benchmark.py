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

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark_run import run
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._load_generator import argument_spec


def main(clock=time.monotonic, sleep=time.sleep, processes=None):
    """The module; ``clock``, ``sleep`` and ``processes`` (a _load_generator.ProcessReader) time and read the
    sampling, and are the real ones unless a test scripts them."""
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
    module.exit_json(changed=False, benchmark=run(module, clock, sleep, processes))


if __name__ == '__main__':
    main()
