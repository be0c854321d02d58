#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_soak
short_description: Load a vLLM service at a fixed rate for a given time and judge whether its memory grows
version_added: 0.4.0
description:
  - Runs vLLM's own load generator, C(vllm bench serve), once against the service at O(rate) requests per second
    (Poisson arrivals) with O(rate) x O(duration) random-token requests, so that the load lasts about O(duration)
    seconds.
  - "Every O(interval) seconds while it runs, samples: the HBM used per NPU chip (C(npu-smi info), when the host
    has NPUs); the resident memory of the service's processes (native mode: the unit's C(MainPID) and every process
    below it; container mode: the container's init process, from the engine's C(inspect), and every process below
    it), read from C(/proc); the unit's C(NRestarts); and the lines of the unit's journal since the start, matched
    against the collection's failure catalogue."
  - Fits each memory series by least squares after the warm-up (the first O(warmup) of O(duration)), as MiB per hour,
    and gives RV(soak.verdict) - C(FAIL) when a growth is above its threshold, the unit restarted more than
    O(max_restarts) times or the journal shows more than O(max_known_failures) lines of known failures;
    C(NOT_ENOUGH_SAMPLES) when a growth had fewer than 5 readings to fit after the warm-up; else C(PASS). The
    verdict does not fail the module; a load that cannot run does.
  - Every number is checked before anything runs (finite, in its range, and rate x duration and the time limit
    bounded), by the same rule as the role C(kunpeng_ascend.vllm.vllm_benchmark)'s filter
    C(kunpeng_ascend.vllm.soak_input_problems), so that an input the role accepted never fails here.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
  - kunpeng_ascend.vllm.load_generator
attributes:
  check_mode:
    support: full
    details:
      - Check mode sends no request and samples nothing; it checks the options and returns the load generator's
        command line and the number of requests it would send (RV(soak.argv), RV(soak.num_prompts)).
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  max_concurrency:
    description: Requests in flight at most, 1 or more; high enough that the rate, not this limit, sets the load.
    type: int
    default: 256
  rate:
    description: Requests per second, more than 0.
    type: float
    required: true
  duration:
    description: Seconds the load lasts, at most 366 days (the number of requests is O(rate) x O(duration), rounded
      up, at most 10 million).
    type: float
    required: true
  interval:
    description: Seconds between samples, 1 or more; the run after its warm-up must hold 5 samples.
    type: float
    default: 30
  warmup:
    description: The fraction of O(duration), from the start, left out of the fit (start-up, first batches, caches
      filling), 0 to 0.9.
    type: float
    default: 0.2
  work_dir:
    description: An existing directory on this host for the load generator's result file (C(vllm-bench-result.json),
      which must be a file if it is there); required unless in check mode.
    type: path
  unit:
    description: The service's systemd unit, such as V(vllm.service).
    type: str
    required: true
  mode:
    description: How the service runs - V(native) (its processes are the unit's) or V(container) (they are the
      container's, O(container_name) run by O(engine)).
    type: str
    choices: [native, container]
    default: native
  engine:
    description: The container engine of container mode.
    type: str
    choices: [docker, podman]
  container_name:
    description: The service's container in container mode.
    type: str
  max_hbm_growth:
    description: The HBM growth of the fastest-growing NPU chip allowed, MiB per hour.
    type: float
    default: 128
  max_rss_growth:
    description: The growth of the service processes' resident memory allowed, MiB per hour.
    type: float
    default: 512
  max_restarts:
    description: Restarts of the unit allowed during the run.
    type: int
    default: 0
  max_known_failures:
    description: Journal lines of the failure catalogue's failures (not its warnings) allowed during the run.
    type: int
    default: 0
  timeout:
    description: Seconds the load generator may run before it is killed and the module fails, more than
      O(duration) and at most 366 days; default O(duration) x 1.5 + 300 (which must be at most 366 days).
    type: int
notes:
  - The resident memory of several processes is the sum of their C(VmRSS), so pages they share count once per
    process; its growth is what is judged.
  - The load generator runs under a parsable locale and coreutils C(timeout), which stops it and its children.
seealso:
  - module: kunpeng_ascend.vllm.vllm_benchmark
    description: The same load generator, for throughput and latency against targets.
"""

EXAMPLES = r"""
- name: Load the service at 2 requests/s for an hour and judge its memory
  kunpeng_ascend.vllm.vllm_soak:
    command: [/opt/vllm/venv/bin/vllm]
    base_url: http://127.0.0.1:8000
    model: deepseek-r1
    tokenizer: /data/models/DeepSeek-R1-W8A8
    api_key: "{{ vllm_api_key }}"
    rate: 2
    duration: 3600
    interval: 30
    unit: vllm.service
    work_dir: /var/tmp/soak
  register: soak
"""

RETURN = r"""
soak:
  description: The run.
  returned: success
  type: dict
  contains:
    argv:
      description: The load generator's command line (the key is not on it).
      type: list
      elements: str
    num_prompts:
      description: Requests sent (rate x duration).
      type: int
    verdict:
      description: C(PASS), C(FAIL) or C(NOT_ENOUGH_SAMPLES); absent in check mode.
      type: str
    checks:
      description: Each check - C(check) (C(host_rss_growth), C(hbm_growth), C(restarts), C(known_failures)),
        C(what), C(value), C(limit), C(unit), C(status) (C(PASS), C(FAIL), C(NOT_ENOUGH_SAMPLES), C(NOT_MEASURED)),
        C(detail).
      type: list
      elements: dict
    fits:
      description: C(host_rss) and C(hbm) (per C(<npu>-<chip>)) - C(mib_per_hour), C(intercept_mib), C(samples),
        C(from_s), C(to_s) of each least squares fit.
      type: dict
    samples:
      description: Every sample of the service, C({t, rss_mib, main_pid, restarts, known_failures}) (null where a
        reading failed).
      type: list
      elements: dict
    npu_samples:
      description: Every NPU reading, C({t, npu_id, chip_id, aicore_percent, hbm_used_mb, hbm_total_mb}).
      type: list
      elements: dict
    journal:
      description: The catalogue's matches in the unit's journal during the run - C(lines_read), C(found),
        C(counts), C(matches), C(explained) (cause and fix); null when it could not be read.
      type: dict
    metrics:
      description: The load generator's metrics, as M(kunpeng_ascend.vllm.vllm_benchmark) gives them.
      type: dict
    vllm_bench:
      description: The result file of C(vllm bench serve), without its per-request lists.
      type: dict
    warnings:
      description: The warnings of the run.
      type: list
      elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._load_generator import argument_spec
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._soak import DEFAULTS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._soak_run import run


def main(clock=time.monotonic, sleep=time.sleep, wall=time.time, processes=None):
    """The module; ``clock`` and ``sleep`` time the sampling, ``wall`` dates the journal's start and ``processes``
    (a _proc.ProcReader) reads the service's memory: the real ones unless a test scripts them."""
    module = AnsibleModule(
        argument_spec=dict(
            argument_spec(),
            max_concurrency=dict(type='int', default=DEFAULTS['max_concurrency']),
            rate=dict(type='float', required=True),
            duration=dict(type='float', required=True),
            interval=dict(type='float', default=DEFAULTS['interval']),
            warmup=dict(type='float', default=DEFAULTS['warmup']),
            work_dir=dict(type='path'),
            unit=dict(type='str', required=True),
            mode=dict(type='str', default='native', choices=['native', 'container']),
            engine=dict(type='str', choices=['docker', 'podman']),
            container_name=dict(type='str'),
            max_hbm_growth=dict(type='float', default=DEFAULTS['max_hbm_growth']),
            max_rss_growth=dict(type='float', default=DEFAULTS['max_rss_growth']),
            max_restarts=dict(type='int', default=DEFAULTS['max_restarts']),
            max_known_failures=dict(type='int', default=DEFAULTS['max_known_failures']),
            timeout=dict(type='int'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(changed=False, soak=run(module, clock, sleep, wall, processes))


if __name__ == '__main__':
    main()
