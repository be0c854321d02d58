# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 6 of the serving plan on its own (serving/_plan_sizing.py; serving_plan's _model_plan, after the argv of step 5
and before the container engine of step 7): the layout read back from the final argv as vLLM's parser reads it
(serving_layout), the NPUs it is weighed against (real npu-smi output from tests/fixtures), and whether the model is
sized at all (plan_sizing). What a model needs per NPU is _sizing's (test__sizing.py, test__sizing_layouts.py); the
whole plan's sizing cases are in test__serving_sizing.py."""

from __future__ import annotations

import math

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import parse_npu_smi_info
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_sizing import (
    SIZING_PER_NPU,
    _argv_number,
    _json_option,
    _last_switch,
    _not_sized,
    _sizing_devices,
    plan_sizing,
    serving_layout,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture
from ansible_collections.kunpeng_ascend.vllm.tests.shared_data import load_model_config

# An Atlas 800I A2 (8 x 910B3 of 65536 MB) and a 300I Duo (4 cards of two 310P3), as npu-smi info shows them.
A2_CHIPS = parse_npu_smi_info(load_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'))['chips']
DUO_CHIPS = parse_npu_smi_info(load_fixture('npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt'))['chips']
NOT_FRESH = {'chips': None, 'product': None, 'family': None, 'assumed': None}
W8A8 = {'path': '/data/models/DeepSeek-R1-W8A8', 'exists': True, 'error': '', 'config_found': True, 'format': 'ascend',
        'model_quant_type': 'W8A8_DYNAMIC', 'quant_types': ['W8A8', 'W8A8_DYNAMIC'], 'description_file': True}


# ----------------------------------------------------------------------------------------- the argv read back

@pytest.mark.parametrize('value, number', [
    ('32768', 32768), (' 8 ', 8), ('16k', 16000), ('1.5k', 1500), ('16K', 16384), ('1m', 1000000), ('1M', 1048576),
    # The model's own length.
    ('-1', None), ('auto', None), ('AUTO', None), (None, None),
    # What vLLM's parser would refuse stays as it is, for the sizing to refuse by name.
    ('1.5K', '1.5K'), ('x', 'x'), ('nan', 'nan'), ('1e3', '1e3'), ('16k\n', 16000),
])
def test_max_model_len_as_vllm_reads_it(value, number):
    assert _argv_number(value, human=True) == number


def test_a_number_without_suffixes_and_a_fraction():
    assert [_argv_number(value) for value in ('16', '16k', '-1', 'auto')] == [16, '16k', -1, 'auto']
    assert _argv_number('0.92', kind=float) == 0.92 and _argv_number('x', kind=float) == 'x'
    # float() reads nan as Python does; the sizing is what weighs it.
    assert math.isnan(_argv_number('nan', kind=float))


@pytest.mark.parametrize('args, value', [
    ([], None), (['--enable-expert-parallel'], True), (['-ep'], True), (['--enable-exp'], True),
    (['--enable_expert_parallel'], True), (['-ep', '--no-enable-expert-parallel'], False),
    (['--no-enable-expert-parallel', '-ep'], True), (['--no-enable'], False),
])
def test_the_last_spelling_of_a_switch_decides(args, value):
    assert _last_switch(args, '--enable-expert-parallel', '-ep') is value


@pytest.mark.parametrize('args, value', [
    ([], None),
    (['--hf-overrides', '{"rope_scaling": {"factor": 4}}', '--hf-overrides.rope_scaling.type', 'yarn'],
     {'rope_scaling': {'factor': 4, 'type': 'yarn'}}),
    (['--hf_overrides.max_position_embeddings=131072'], {'max_position_embeddings': 131072}),
    # A key after a value that is not an object starts a new object; the later whole value wins.
    (['--hf-overrides', '[1]', '--hf-overrides.a', '1'], {'a': 1}),
    (['--hf-overrides.a', '1', '--hf-overrides={"b": 2}'], {'b': 2}),
    # Not JSON: the string, for the sizing to refuse by name.
    (['--hf-overrides', '{bad'], '{bad'), (['--hf-overrides.'], None),
])
def test_a_dict_option_as_vllm_s_parser_builds_it(args, value):
    assert _json_option(args, '--hf-overrides') == value


def test_the_layout_of_the_final_argv():
    args = ['--host', '127.0.0.1', '-tp', '8', '--data-parallel-size', '2', '--max-model-len', '32k', '-q', 'ascend',
            '--speculative-config', '{"method": "mtp"}', '-ep', '--gpu-memory-utilization', '0.9', '--kv-cache-dtype',
            'int8', '--tensor-parallel-size=4']
    assert serving_layout(args, {'VLLM_ALLOW_LONG_MAX_MODEL_LEN': '1'}) == {
        'tensor_parallel_size': 4, 'data_parallel_size': 2, 'data_parallel_size_local': None,
        'pipeline_parallel_size': None, 'decode_context_parallel_size': None, 'enable_expert_parallel': True,
        'max_model_len': 32000, 'max_num_seqs': None, 'gpu_memory_utilization': 0.9, 'dtype': None,
        'quantization': 'ascend', 'kv_cache_dtype': 'int8', 'hf_overrides': None, 'speculative_mtp': True,
        'allow_long_max_model_len': True}


def test_the_layout_reads_data_parallel_size_as_itself_and_mtp_by_its_method():
    layout = serving_layout(['--data-parallel-size', '4', '--data-parallel-size-local', '2', '-sc',
                             '{"method": "eagle"}', '--dtype', 'bfloat16'], {'VLLM_ALLOW_LONG_MAX_MODEL_LEN': 'no'})
    assert (layout['data_parallel_size'], layout['data_parallel_size_local']) == (4, 2)
    assert (layout['speculative_mtp'], layout['dtype'], layout['allow_long_max_model_len']) == (False, 'bfloat16', False)
    assert serving_layout(['-sc', '{"method": "deepseek_mtp"}'], {})['speculative_mtp'] is True
    assert serving_layout(['-sc', '{"method": "xmtp"}'], {})['speculative_mtp'] is False


# ------------------------------------------------------------------------------------------ the NPUs weighed

def layout(tp=1, dp=1, local=None):
    return {'tensor_parallel_size': tp, 'data_parallel_size': dp, 'data_parallel_size_local': local}


def test_the_npus_of_an_a2_are_named_as_the_product():
    warnings = []
    assert _sizing_devices(layout(8), 8, A2_CHIPS, NOT_FRESH, False, None, warnings.append) == {
        'count': 8, 'nodes': 1, 'hbm_mb': 65536, 'family': '910B', 'product': 'a2',
        'name': 'Atlas 800I A2 (8 x 64 GB)', 'capacity': 65455301591, 'problems': []}
    assert warnings == []


@pytest.mark.parametrize('parallel, ray, nodes', [
    (layout(4, 4, 2), False, 2),    # DP 4, 2 ranks a node: two nodes
    (layout(4, 4, 2), True, 2),     # under Ray, TP x DP = 16 NPUs: two nodes of 8
    (layout(16), True, 2),
    (layout(2, 2), False, 1),
    (layout('x', None, 'y'), False, 1),  # a size that is no number counts as 1 (the sizing refuses it by name)
])
def test_the_layout_spans_the_nodes_of_its_data_parallel_ranks_and_at_least_tp_times_dp(parallel, ray, nodes):
    devices = _sizing_devices(parallel, 8, A2_CHIPS, NOT_FRESH, ray, None, [].append)
    assert (devices['nodes'], devices['count']) == (nodes, 8)
    assert devices['name'] == ('%d x Atlas 800I A2 (8 x 64 GB)' % nodes if nodes > 1 else 'Atlas 800I A2 (8 x 64 GB)')


def test_npus_of_no_product_are_named_by_their_memory():
    devices = _sizing_devices(layout(2), 8, DUO_CHIPS, NOT_FRESH, False, None, [].append)
    assert devices == {'count': 8, 'nodes': 1, 'hbm_mb': 43757, 'family': '310P', 'product': None,
                       'name': '1 x 8 NPUs of 43757 MB (npu-smi)', 'capacity': 43703119380, 'problems': []}


def test_a_fresh_host_is_weighed_as_its_product_or_says_what_it_does_not_know():
    fresh = {'chips': A2_CHIPS, 'product': 'a2', 'family': '910B', 'assumed': 'an A2'}
    assert _sizing_devices(layout(8), 8, [], fresh, False, None, [].append)['name'] == 'Atlas 800I A2 (8 x 64 GB)'
    unknown = _sizing_devices(layout(8), 8, [], dict(fresh, product=None, family=None), False, None, [].append)
    assert (unknown['hbm_mb'], unknown['capacity']) == (None, None)
    assert unknown['problems'] == ['their product and memory are not known before the NPU driver is installed (chip '
                                   'family unknown or mixed)']


# -------------------------------------------------------------------------------------------------- plan_sizing

def test_a_plan_not_sized_says_why_and_has_every_key_null():
    assert _not_sized('vllm_service_sizing is skip') == {
        'verdict': 'unknown', 'problems': [], 'warnings': [], 'suggestion': None,
        'per_npu': dict.fromkeys(SIZING_PER_NPU), 'use': None, 'concurrency': None, 'max_model_len': None,
        'layout': None, 'weights': None, 'parameters': None, 'devices': None, 'skipped': 'vllm_service_sizing is skip'}
    assert _not_sized('the model', warn=True)['warnings'] == ['not checked: the model']


def r1_facts(**changes):
    facts = {'model_format': W8A8, 'model_config': load_model_config('DeepSeek-R1__config.json'),
             'model_weights': {'index_total_size': None, 'file_bytes': None}}
    facts.update(changes)
    return facts


def sized(inputs=None, facts=None, args=(), npu_ids=tuple(range(8)), count_refused=False):
    return plan_sizing(inputs or {'sizing': 'refuse'}, r1_facts() if facts is None else facts, list(args), {},
                       list(npu_ids), A2_CHIPS, NOT_FRESH, count_refused)


@pytest.mark.parametrize('inputs, facts, args, npu_ids, skipped, warned', [
    ({'sizing': 'skip'}, None, (), range(8), 'vllm_service_sizing is skip', False),
    (None, None, (), (), 'the host has no NPUs (vLLM\'s CPU backend): nothing to size the model against', False),
    (None, {}, (), range(8), 'the model directory was not read (a caller that plans without it)', False),
    (None, r1_facts(model_config=['not', 'an', 'object']), (), range(8),
     '/data/models/DeepSeek-R1-W8A8 has no config.json object to read the model\'s shape from', True),
    (None, r1_facts(model_format={'format': 'float'}, model_config=None), (), range(8),
     'the model directory has no config.json object to read the model\'s shape from', True),
    (None, None, ('-pp', '2'), range(8), 'the memory per NPU with pipeline parallelism (--pipeline-parallel-size 2), '
                                         'which the sizing does not model', True),
])
def test_what_is_not_sized_and_why(inputs, facts, args, npu_ids, skipped, warned):
    assert sized(inputs, facts, args, npu_ids) == _not_sized(skipped, warn=warned)


def test_deepseek_r1_w8a8_on_one_a2_is_refused_and_with_warn_its_problems_are_warnings():
    args = ['--tensor-parallel-size', '8', '--quantization', 'ascend', '--enable-expert-parallel']
    refused = sized(args=args)
    assert refused['verdict'] == 'refused' and refused['skipped'] is None and refused['problems']
    assert refused['devices'] == {'name': 'Atlas 800I A2 (8 x 64 GB)', 'count': 8, 'nodes': 1, 'hbm_mb': 65536,
                                  'family': '910B', 'product': 'a2'}
    warned = sized({'sizing': 'warn'}, args=args)
    assert warned['problems'] == refused['problems']
    assert warned['warnings'] == ['refused, and vllm_service_sizing is warn: %s' % problem
                                  for problem in refused['problems']] + refused['warnings']


def test_a_layout_the_plan_refused_for_the_node_is_not_refused_again_per_node():
    # DP 4 with 2 ranks here, on a node the plan refused already (count_refused): the node's ranks are left to it.
    args = ['-tp', '4', '-dp', '4', '-dpl', '2', '-q', 'ascend', '-ep']
    assert sized(args=args)['layout']['data_parallel_size_local'] == 2
    assert sized(args=args, count_refused=True)['layout']['data_parallel_size_local'] is None
