# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The choices of the role vllm_benchmark, on the controller, from what the role vllm_service exported
(vllm_service_report): the load generator's command, the targets of a run and their options, the name and seed of a
run, the NPUs to sample, the candidate whose quality record is read, and the configuration that stays deployed
after a tuning grid. Pure functions: no I/O.
"""

from __future__ import annotations

import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import BenchmarkError

# The OpenAI path vllm_service_report.endpoint ends in; the load generator takes the server's root.
_API_PATH = re.compile(r'/v1$')


def service_base_url(endpoint):
    """The server's root of the service's ``endpoint`` (``.../v1``)."""
    return _API_PATH.sub('', endpoint)


def loadgen_command(cli, work_dir):
    """The load generator's command: the service's own vLLM CLI (``cli``: vllm_service_report.cli - ``run``, and in
    container mode ``image`` and ``entrypoint``), in a container with the key's variable and ``work_dir`` (where the
    result file is written) mounted. Without ``work_dir`` (check mode, where no scratch directory is made) a
    container's command cannot be made: BenchmarkError."""
    if cli.get('image') is None:
        return list(cli['run'])
    if not work_dir:
        raise BenchmarkError('the load generator runs in the service\'s container, which needs the scratch directory '
                             'mounted, and there is none (check mode does not make it)')
    return list(cli['run']) + ['--env=OPENAI_API_KEY', '--volume=%s:%s' % (work_dir, work_dir),
                               '--entrypoint=%s' % cli['entrypoint'], cli['image']]


def candidate_path(compare, service_model):
    """Where the second target's candidate model is, whose quality record is read: the second target's tokenizer
    when it is the candidate (``role``, candidate by default), else the service's model (``service_model``)."""
    return compare.get('tokenizer') if (compare.get('role') or 'candidate') == 'candidate' else service_model


def npu_sampling(sample_npus, npu_ids, service_npus):
    """``{'sample_npus', 'npu_ids'}`` of a run: ``npu_ids`` (vllm_benchmark_npu_ids), else the service's NPUs
    (``service_npus``); auto samples them, and is never for a service without NPUs (vLLM's CPU build)."""
    service_npus = service_npus if service_npus is not None else []
    if sample_npus == 'auto' and not npu_ids and not service_npus:
        sample_npus = 'never'
    return {'sample_npus': sample_npus, 'npu_ids': list(npu_ids or service_npus)}


def run_plan(point, concurrency, seed, runs, report, compare, priority_share, sample_npus, npu_ids):
    """One benchmark run at ``concurrency`` (at grid ``point``, None outside a grid): its ``label`` (p<index>-c<n>),
    its ``seed`` (``seed`` plus the node's earlier ``runs``: the same prompts again would hit vLLM's prefix cache and
    make the later runs look faster), the NPUs to sample (npu_sampling) and its ``targets``: the service
    (``report``: vllm_service_report; verified against its CA when it has TLS; ``priority_share`` goes to it only),
    then the second target ``compare`` (None: none). A target names its key by ``credential`` (service or compare),
    never holds it: Ansible prints the loop's items when a run fails."""
    targets = [{'service': True, 'credential': 'service', 'base_url': service_base_url(report['endpoint']),
                'model': report['served_model_name'], 'tokenizer': report['model'], 'priority_share': priority_share}]
    if report.get('tls') is not None:
        targets[0]['ca_path'] = report['tls']['ca']
    if compare is not None:
        targets.append({'service': False, 'credential': 'compare', 'base_url': compare['base_url'],
                        'model': compare['model'], 'tokenizer': compare['tokenizer']})
    plan = {'label': ('p%d-' % point['index'] if point else '') + 'c%d' % concurrency,
            'seed': seed + len(runs), 'targets': targets}
    plan.update(npu_sampling(sample_npus, npu_ids, report.get('npus')))
    return plan


def soak_plan(report, service_plan, sample_npus, npu_ids):
    """The soak's target: the service's root (``base_url``), its CA (``ca_path``, only with TLS), its container
    (``container_name`` from the serving plan ``service_plan``, only in container mode) and the NPUs to sample."""
    plan = {'base_url': service_base_url(report['endpoint'])}
    if report.get('tls') is not None:
        plan['ca_path'] = report['tls']['ca']
    if report['mode'] == 'container':
        plan['container_name'] = service_plan['container_name']
    plan.update(npu_sampling(sample_npus, npu_ids, report.get('npus')))
    return plan


def final_config(best, original, keep_best, point_config):
    """The serving configuration that stays deployed after a tuning grid: the best point's (``point_config`` of
    ``best`` and ``original``) when ``keep_best`` and a point met the targets, else the inventory's (``original``)."""
    return point_config(best, original) if keep_best and best else original
