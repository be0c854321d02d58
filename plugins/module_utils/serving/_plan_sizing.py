# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Step 6 of the serving plan (_serving.py): the layout the final argv asks for (parallel sizes, context, batch)
read back from it, and whether the model fits the NPUs (_sizing).
Its tests: tests/unit/plugins/module_utils/serving/test__plan_sizing.py.
"""

from __future__ import annotations

import json
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _sizing
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_format import product_family
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import (
    _is_int,
    _option_name,
    last_value,
    resolve_option,
)


# ------------------------------------------------------------------------------------------------------ the sizing

# What the sizing reports of the fullest NPU (_sizing.size_deployment's per_npu), null when it is not sized.
SIZING_PER_NPU = ('weights', 'kv', 'kv_per_token', 'mask', 'reserve', 'budget', 'capacity', 'need')
# Methods of --speculative-config that load MTP layers (vLLM's speculative config: deepseek_mtp and the mtp alias).
_MTP = re.compile(r'([a-z0-9_]*_)?mtp\Z')
_HUMAN_INT = re.compile(r'([0-9]+(?:[.][0-9]+)?)([kKmMgGtT])\Z')
_HUMAN_MULTIPLIERS = {'k': 10 ** 3, 'm': 10 ** 6, 'g': 10 ** 9, 't': 10 ** 12,
                      'K': 2 ** 10, 'M': 2 ** 20, 'G': 2 ** 30, 'T': 2 ** 40}


def _argv_number(value, kind=int, human=False):
    """``value`` (an argv string, None when absent) as vLLM's parser reads it: an int (with ``human``, 16k and 16K as
    --max-model-len takes them, -1 and auto for the model's own length: None) or a float; a value it would refuse is
    returned as it is, for the sizing to refuse by name."""
    if value is None:
        return None
    text = value.strip()
    if human and (text == '-1' or text.lower() == 'auto'):
        return None
    match = _HUMAN_INT.match(text) if human else None
    try:
        if match:
            number, suffix = match.groups()
            return int(float(number) * _HUMAN_MULTIPLIERS[suffix]) if suffix.islower() else int(number) * _HUMAN_MULTIPLIERS[suffix]
        return kind(text)
    except ValueError:
        return value


def _last_switch(args, flag, short=None):
    """Whether the final argv turns the switch ``flag`` on (``flag`` or ``short``), off (``--no-`` + its name), or
    None when it does not say: the last one counts."""
    negative = '--no-' + flag[2:]
    value = None
    for arg in args:
        name = _option_name(arg)
        if arg == short or (name is not None and resolve_option(name, (flag,)) == flag):
            value = True
        elif name is not None and resolve_option(name, (negative,)) == negative:
            value = False
    return value


def _json_value(value):
    try:
        return json.loads(value)
    except ValueError:
        return value


def _json_option(args, flag, short=None):
    """The JSON object a dict option of vLLM's gets from the final argv, in order: ``--flag JSON`` (or ``short``)
    sets it, ``--flag.key.subkey value`` sets one key of it, as vLLM's parser reads them (a value read as JSON where
    it is, else as a string); a value it would refuse is returned as it is, None when the option is absent."""
    result = None
    index = 0
    while index < len(args):
        arg = args[index]
        name, has_value, value = arg.partition('=') if isinstance(arg, str) else ('', '', '')
        if not has_value and index + 1 < len(args):
            value = args[index + 1]
        spelled = '--' + name[2:].replace('_', '-') if name.startswith('--') else name
        if name == short or spelled == flag:
            result = _json_value(value)
        elif spelled.startswith(flag + '.') and len(spelled) > len(flag) + 1:
            keys = name[len(flag) + 1:].split('.')
            result = result if isinstance(result, dict) else {}
            target = result
            for key in keys[:-1]:
                if not isinstance(target.get(key), dict):
                    target[key] = {}
                target = target[key]
            target[keys[-1]] = _json_value(value)
        else:
            index += 1
            continue
        index += 1 if has_value else 2
    return result


# The options serving_layout reads, for the abbreviations argparse would take: --data-parallel-size is itself, not an
# abbreviation of --data-parallel-size-local.
LAYOUT_FLAGS = ('--tensor-parallel-size', '--data-parallel-size', '--data-parallel-size-local',
                '--pipeline-parallel-size', '--decode-context-parallel-size', '--max-model-len', '--max-num-seqs',
                '--gpu-memory-utilization', '--dtype', '--quantization', '--kv-cache-dtype', '--hf-overrides',
                '--speculative-config', '--distributed-executor-backend')


def serving_layout(args, environment):
    """The layout vLLM reads from the final argv ``args`` and the service's ``environment``, in _sizing's names
    (normalize_layout): the parallel sizes, expert parallel, max_model_len, max_num_seqs, gpu_memory_utilization,
    dtype, quantization, kv_cache_dtype, --hf-overrides, MTP layers loaded by --speculative-config, the decode context
    parallel size and VLLM_ALLOW_LONG_MAX_MODEL_LEN; and pipeline_parallel_size, which the sizing does not model."""
    def value(flag, short=None):
        return last_value(args, flag, known=LAYOUT_FLAGS, short=short)

    def number(flag, short=None, kind=int, human=False):
        return _argv_number(value(flag, short), kind, human)

    speculative = _json_option(args, '--speculative-config', '-sc')
    method = speculative.get('method') if isinstance(speculative, dict) else None
    return {
        'tensor_parallel_size': number('--tensor-parallel-size', '-tp'),
        'data_parallel_size': number('--data-parallel-size', '-dp'),
        'data_parallel_size_local': number('--data-parallel-size-local', '-dpl'),
        'pipeline_parallel_size': number('--pipeline-parallel-size', '-pp'),
        'decode_context_parallel_size': number('--decode-context-parallel-size', '-dcp'),
        'enable_expert_parallel': bool(_last_switch(args, '--enable-expert-parallel', '-ep')),
        'max_model_len': number('--max-model-len', human=True),
        'max_num_seqs': number('--max-num-seqs'),
        'gpu_memory_utilization': number('--gpu-memory-utilization', kind=float),
        'dtype': value('--dtype'),
        'quantization': value('--quantization', '-q'),
        'kv_cache_dtype': value('--kv-cache-dtype'),
        'hf_overrides': _json_option(args, '--hf-overrides'),
        'speculative_mtp': isinstance(method, str) and bool(_MTP.match(method)),
        'allow_long_max_model_len': str(environment.get('VLLM_ALLOW_LONG_MAX_MODEL_LEN', '')).lower() in ('1', 'true'),
    }


def _not_sized(reason, warn=False):
    """The sizing of a plan that does not size the model: unknown, ``reason`` in ``skipped`` (and a warning when the
    model could have been sized but the plan cannot say)."""
    return {'verdict': 'unknown', 'problems': [], 'warnings': ['not checked: %s' % reason] if warn else [],
            'suggestion': None, 'per_npu': dict.fromkeys(SIZING_PER_NPU), 'use': None, 'concurrency': None,
            'max_model_len': None, 'layout': None, 'weights': None, 'parameters': None, 'devices': None,
            'skipped': reason}


def _sizing_devices(layout, count, chips, fresh, ray, npu_devices, warn):
    """The NPUs the sizing weighs the layout against: ``count`` a node (the service's), as npu-smi shows their memory
    (or a fresh host's product), over the nodes the layout spans - those of its data-parallel ranks
    (data_parallel_size / data_parallel_size_local), and at least as many as TP x DP needs (Ray places the ranks on
    the cluster's nodes; a layout larger than this node is refused by the plan, pointing to multi-node serving)."""
    tp, dp, local = (layout[key] if _is_int(layout[key]) and layout[key] > 0 else None
                     for key in ('tensor_parallel_size', 'data_parallel_size', 'data_parallel_size_local'))
    tp, dp = tp or 1, dp or 1
    nodes = -(-dp // local) if local and not ray else 1
    nodes = max(nodes, -(-(tp * dp) // max(1, count)))
    if fresh['product'] is not None:
        return _sizing.devices_for_product(fresh['product'], nodes, count)
    if fresh['chips'] is not None:
        devices = _sizing.devices_from_hbm_mb(None, max(1, count), nodes, fresh['family'])
        devices['problems'] = ['their product and memory are not known before the NPU driver is installed (chip family '
                               '%s)' % (fresh['family'] or 'unknown or mixed')]
        return devices
    devices = _sizing.devices_from_npu_smi(chips, nodes, warn)
    # The chip family from the PCI devices when npu-smi's chip names do not say it (an A3 prints Ascend910).
    devices['family'] = devices['family'] or product_family(chips, npu_devices)
    # NPUs that are a whole product as npu-smi shows it (8 910B of 65536 MB: an A2) are named so, and the suggestion
    # does not propose the same hardware again.
    for product, spec in sorted(_sizing.PRODUCTS.items()):
        if (spec['family'], spec['hbm_mb'], spec['count']) == (devices['family'], devices['hbm_mb'], devices['count']):
            return _sizing.devices_for_product(product, nodes)
    return devices


def plan_sizing(inputs, facts, args, environment, npu_ids, chips, fresh, count_refused):
    """Whether the model fits the service's NPUs (_sizing.size_deployment): the model directory's config.json
    (``model_config``), its weights (``model_weights``) and format (``model_format``), the final argv's layout, and
    the NPUs' memory - npu-smi's, or on a fresh host the product of its PCI devices. Not sized (verdict unknown and
    the reason in ``skipped``): vllm_service_sizing skip, a host without NPUs (vLLM's CPU backend), a caller that did
    not read the model, a config.json that is not an object, pipeline parallelism (a warning: not checked).
    ``count_refused``: the plan already refused the parallel sizes against this node's NPUs, whose per-node check the
    sizing then leaves to it. Returns the sizing (size_deployment's result with ``devices`` and ``skipped``)."""
    if inputs.get('sizing') == 'skip':
        return _not_sized('vllm_service_sizing is skip')
    if not npu_ids:
        return _not_sized('the host has no NPUs (vLLM\'s CPU backend): nothing to size the model against')
    if facts.get('model_format') is None:
        return _not_sized('the model directory was not read (a caller that plans without it)')
    config = facts.get('model_config')
    if not isinstance(config, dict):
        return _not_sized('%s has no config.json object to read the model\'s shape from'
                          % (facts['model_format'].get('path') or 'the model directory'), warn=True)
    layout = serving_layout(args, environment)
    pipeline = layout.pop('pipeline_parallel_size')
    if _is_int(pipeline) and pipeline > 1:
        return _not_sized('the memory per NPU with pipeline parallelism (--pipeline-parallel-size %d), which the '
                          'sizing does not model' % pipeline, warn=True)
    if count_refused:
        layout['data_parallel_size_local'] = None
    warnings = []
    ray = last_value(args, '--distributed-executor-backend', known=LAYOUT_FLAGS) == 'ray'
    devices = _sizing_devices(layout, len(npu_ids), [chips[npu] for npu in npu_ids if npu < len(chips)], fresh, ray,
                              facts.get('npu_devices'), warnings.append)
    weights = dict(facts.get('model_weights') or {}, quantization=facts['model_format'])
    result = _sizing.size_deployment(config, weights, layout, devices)
    result['warnings'] = warnings + result['warnings']
    result['devices'] = dict((key, devices.get(key)) for key in ('name', 'count', 'nodes', 'hbm_mb', 'family', 'product'))
    result['skipped'] = None
    if result['verdict'] == 'refused' and inputs.get('sizing') == 'warn':
        result['warnings'] = ['refused, and vllm_service_sizing is warn: %s' % problem
                              for problem in result['problems']] + result['warnings']
    return result
