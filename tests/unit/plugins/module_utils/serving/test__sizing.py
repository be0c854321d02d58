# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving plan's sizing (serving/_sizing.py): parameter counts of real configurations against their publishers'
figures, the weight and KV arithmetic against what vLLM-Ascend users measured, each structural refusal naming its
variable, the verdicts' edges, the readers, and malformed configurations that must give warnings and an unknown
verdict, never a traceback. The documented layouts are in test__sizing_layouts.py.

The real configurations are read from ../shared/model-configs/ (tests/shared_data.py: skipped with a note outside
CI when the folder is missing, failed in CI). Every number taken from the shared docs names its source."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _npu_smi
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _model_format
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _sizing as S
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture
from ansible_collections.kunpeng_ascend.vllm.tests.shared_data import load_model_config, require_shared

GIB = 1024 ** 3

# Qwen/Qwen3-14B's config.json (the sizing fields), not in ../shared/model-configs: copied from
# citsjtu2020/LLM-Prof @ 8434c8d19c396b2f95d92a67845a7c0a0e0dd512 sglang/Model_Config.md ("Qwen3-14B" block).
QWEN3_14B = {
    'architectures': ['Qwen3ForCausalLM'], 'attention_bias': False, 'head_dim': 128, 'hidden_size': 5120,
    'intermediate_size': 17408, 'max_position_embeddings': 40960, 'model_type': 'qwen3', 'num_attention_heads': 40,
    'num_hidden_layers': 40, 'num_key_value_heads': 8, 'rope_scaling': None, 'tie_word_embeddings': False,
    'torch_dtype': 'bfloat16', 'vocab_size': 151936,
}
# msModelSlim descriptions as _model_format.describe returns them.
W8A8 = {'format': 'ascend', 'model_quant_type': 'W8A8_DYNAMIC', 'quant_types': ['W8A8', 'W8A8_DYNAMIC']}
FLOAT = {'format': 'float'}


def without_quantization(config):
    """A DeepSeek config.json as a BF16 checkpoint has it: vllm-ascend's docs have BF16 DeepSeek served with the
    FP8 quantization_config removed (LAYOUTS.md: v0.8.5rc1 T/multi_node.md:169)."""
    config = copy.deepcopy(config)
    config.pop('quantization_config', None)
    return config


def size(config, layout, devices, quantization=None, **weights):
    weights = dict(weights, quantization=quantization)
    return S.size_deployment(config, weights, layout, devices)


def shape_of(name):
    warnings = []
    shape = S.model_shape(load_model_config(name), warnings.append)
    return shape, warnings


# ------------------------------------------------------------------------------------------- parameter counts

def test_deepseek_v3_counts_671b_main_and_685b_with_mtp():
    # deepseek-ai/DeepSeek-V3 README.md:99 (WEIGHT-SIZES.md): "685B, which includes 671B of the Main Model weights
    # and 14B of the Multi-Token Prediction (MTP) Module weights". The check that no term is missing (sizing.md).
    shape, warnings = shape_of('DeepSeek-V3__config.json')
    counts = S.parameter_counts(shape)
    assert warnings == []
    assert counts['main_total'] == pytest.approx(671e9, rel=0.01)
    assert counts['main_total'] + counts['mtp_total'] == pytest.approx(685e9, rel=0.01)
    # README_WEIGHTS.md:20-21, 38-39: 0.9B embedding, 0.9B output head; the MTP module's 11.5B unique parameters
    # exclude its copies of both.
    assert counts['main']['embed'] == pytest.approx(0.9e9, rel=0.05)
    assert counts['main']['head'] == pytest.approx(0.9e9, rel=0.05)
    unique = counts['mtp_total'] - counts['mtp']['embed'] - counts['mtp']['head']
    assert unique == pytest.approx(11.5e9, rel=0.02)
    # 58 MoE layers of 256 experts after first_k_dense_replace 3 dense ones.
    assert (shape['moe_layers'], shape['dense_layers'], shape['routed_experts']) == (58, 3, 256)


@pytest.mark.parametrize('name, billions, tolerance', [
    # DeepSeek-R1: 671B total (deepseek-ai/DeepSeek-R1 README.md:73-74, WEIGHT-SIZES.md).
    ('DeepSeek-R1__config.json', 671, 0.01),
    ('DeepSeek-R1-0528__config.json', 671, 0.01),
    # V3.2: the V3 shape plus the indexer (about 0.9B).
    ('DeepSeek-V3.2__config.json', 671, 0.01),
    # The 236B and 16B shapes of DeepSeek's inference configs (SOURCES.md: DeepSeek-V2 and V2-Lite), 16B rounded up.
    ('DeepSeek-V2-236B__deepseek-inference-config_236B.json', 236, 0.01),
    ('DeepSeek-V2-Lite-16B__deepseek-inference-config_16B.json', 16, 0.025),
    ('DeepSeek-V3-R1-671B__deepseek-inference-config_671B.json', 671, 0.01),
    # The Qwen3 and Llama model names' sizes.
    ('Qwen3-235B-A22B__config.json', 235, 0.01),
    ('Qwen3-30B-A3B__config.json', 30.5, 0.01),
    ('Qwen3-32B__config.json', 32.8, 0.01),
    ('Qwen3-8B__config.json', 8.2, 0.01),
    ('Qwen2.5-7B-Instruct__config.json', 7.6, 0.01),
    ('Llama-3.3-70B-Instruct__config.json', 70.6, 0.01),
    ('Meta-Llama-3.1-8B__config.json', 8.03, 0.01),
])
def test_parameter_counts_of_the_real_configurations(name, billions, tolerance):
    shape, _warnings = shape_of(name)
    assert S.parameter_counts(shape)['main_total'] == pytest.approx(billions * 1e9, rel=tolerance)


def test_the_inference_format_is_translated_with_a_warning_that_it_states_no_positions():
    shape, warnings = shape_of('DeepSeek-V2-Lite-16B__deepseek-inference-config_16B.json')
    assert shape['complete'] and shape['kind'] == 'mla' and shape['q_lora_rank'] == 0
    assert 'inference format' in warnings[0] and 'max_position_embeddings' in warnings[0]


# ------------------------------------------------------------------------- weights against measured figures

def test_deepseek_r1_w8a8_estimate_matches_the_measured_load_of_sixteen_workers():
    # WEIGHT-SIZES.md: DeepSeek-R1-W8A8 on 2 x 8 910B2, TP8 x PP2: "Loading model weights took 40.7763 GB" per worker
    # (vllm-project/vllm-ascend#1127; vLLM's "GB" are GiB): 16 x 40.7763 GiB, a little more than the checkpoint since
    # each TP rank holds its own copy of the replicated MLA down-projections and router.
    config = load_model_config('DeepSeek-R1__config.json')
    result = size(config, {'tensor_parallel_size': 8}, S.devices_for_product('a2'), W8A8)
    assert result['weights']['source'] == 'the estimate'
    assert result['weights']['estimate'] == pytest.approx(16 * 40.7763 * GIB, rel=0.03)
    assert result['weights']['estimate'] < 16 * 40.7763 * GIB


@pytest.mark.parametrize('config, tp, measured', [
    # WEIGHT-SIZES.md: DeepSeek-R1-Distill-Llama-70B -tp=8: "Loading model weights took 16.4610 GB"
    # (vllm-project/vllm-ascend#2235); its base is Llama-3.3-70B-Instruct (SOURCES.md).
    ('Llama-3.3-70B-Instruct__config.json', 8, 16.4610),
    # WEIGHT-SIZES.md: Qwen3-14B on one 32 GB vNPU: "Loading model weights took 27.5376 GB" (vllm-ascend#9372).
    (QWEN3_14B, 1, 27.5376),
])
def test_per_npu_bf16_weights_match_vllm_ascend_logs(config, tp, measured):
    config = load_model_config(config) if isinstance(config, str) else config
    result = size(config, {'tensor_parallel_size': tp, 'max_model_len': 4096}, S.devices_for_product('a2'))
    assert result['per_npu']['weights'] == pytest.approx(measured * GIB, rel=0.02)


def test_qwen3_14b_on_a_32_gb_vnpu_is_refused_like_the_negative_kv_cache_it_got():
    # WEIGHT-SIZES.md: Qwen3-14B, one 32 GB vNPU, --max-model-len 4096, 27.5376 GB of weights, then "Available KV
    # cache memory: -0.87 GiB" (vllm-project/vllm-ascend#9372).
    devices = S.devices_from_hbm_mb(32768, 1)
    result = size(QWEN3_14B, {'tensor_parallel_size': 1, 'max_model_len': 4096}, devices)
    assert result['verdict'] == 'refused'
    assert result['per_npu']['weights'] + result['per_npu']['kv'] > result['per_npu']['budget']
    assert result['problems'][0].startswith('the model does not fit TP 1')
    assert 'a W8A8 model' in result['suggestion'] and 'one A2' in result['suggestion']


def test_the_files_total_wins_over_the_estimate_and_a_large_gap_is_a_warning():
    # WEIGHT-SIZES.md: a mindie-format W4A8 DeepSeek-R1 was 658 GiB (vllm-ascend#2296, int8 holding int4), where
    # packed W4A8 would be about half: the files' total is what the NPUs load.
    config = load_model_config('DeepSeek-R1__config.json')
    w4a8 = {'format': 'ascend', 'model_quant_type': 'W8A8_DYNAMIC', 'quant_types': ['W4A8_DYNAMIC', 'W8A8']}
    layout = {'tensor_parallel_size': 8, 'enable_expert_parallel': True, 'max_model_len': 16384}
    estimated = size(config, layout, S.devices_for_product('a2'), w4a8)
    on_disk = size(config, layout, S.devices_for_product('a2'), w4a8, index_total_size=658 * GIB)
    assert on_disk['weights'] == dict(estimated['weights'], total=658 * GIB, source='the safetensors index')
    assert [w for w in on_disk['warnings'] if 'differ by' in w]
    assert on_disk['per_npu']['weights'] > 1.6 * estimated['per_npu']['weights']
    assert (estimated['verdict'], on_disk['verdict']) == ('fits', 'refused')


@pytest.mark.parametrize('weights, source', [
    ({'index_total_size': 10 * GIB, 'file_bytes': 20 * GIB, 'manifest_bytes': 30 * GIB}, 'the safetensors index'),
    ({'index_total_size': 0, 'file_bytes': 20 * GIB}, 'the weight files'),          # tt-metal's stub index: 0
    ({'index_total_size': 'x', 'file_bytes': None, 'manifest_bytes': 30 * GIB}, 'the model manifest'),
    ({'index_total_size': True}, None),
    ({}, None),
])
def test_weights_on_disk_takes_the_index_then_the_files_then_the_manifest(weights, source):
    warnings = []
    total, found = S.weights_on_disk(weights, warnings.append)
    assert found == source
    assert (total is None) == (source is None)
    usable = [value for value in weights.values()
              if value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0)]
    assert bool(warnings) == (len(usable) < len(weights))


def test_unknown_quantization_with_a_files_total_splits_it_as_the_parameters_are():
    config = dict(load_model_config('Qwen3-8B__config.json'), quantization_config={'quant_method': 'hqq'})
    result = size(config, {'tensor_parallel_size': 2, 'max_model_len': 4096}, S.devices_for_product('a2'),
                  file_bytes=8 * GIB)
    assert result['verdict'] == 'fits'
    assert result['per_npu']['weights'] == pytest.approx(4 * GIB, rel=0.05)
    assert any('hqq' in warning for warning in result['warnings'])
    without = size(config, {'tensor_parallel_size': 2, 'max_model_len': 4096}, S.devices_for_product('a2'))
    assert without['verdict'] == 'unknown' and without['per_npu']['weights'] is None


@pytest.mark.parametrize('quant, per_param', [
    ({'quant_method': 'fp8'}, 1.0),
    ({'quant_method': 'compressed-tensors', 'config_groups': {'g': {'weights': {'num_bits': 8}}}}, 1.0),
    ({'quant_method': 'gptq', 'bits': 4}, 0.5 + S.GROUP_SCALE_BYTES),
    ({'quant_method': 'awq', 'w_bit': 4}, 0.5 + S.GROUP_SCALE_BYTES),
    ({'quant_method': 'bitsandbytes', 'load_in_4bit': True}, 0.5 + S.GROUP_SCALE_BYTES),
])
def test_hugging_face_quantization_configs(quant, per_param):
    scheme = S.quantization_scheme({'quantization_config': quant})
    assert scheme['bytes']['routed_experts'] == per_param and scheme['bytes']['embed'] == 2


def test_msmodelslim_keeps_embeddings_head_norms_router_and_kv_b_in_bf16():
    # sizing.md: msModelSlim's W8A8 DeepSeek keeps the embeddings, output head, norms, router gate and MLA's
    # kv_b_proj in bf16; W4A8 (MindIE: routed experts W4A8 dynamic, the rest W8A8) halves the routed experts.
    w8a8 = S.quantization_scheme({}, W8A8)['bytes']
    assert [part for part in S.PARTS if w8a8[part] == 2] == ['embed', 'head', 'mla_kv_b', 'router', 'norms', 'mtp_proj']
    text = open(require_shared('model-configs', 'DeepSeek-R1-V3-W4A8-mixed__quant_model_description_DOC-EXCERPT.txt'),
                encoding='utf-8').read()
    described = _model_format.describe(None, text)
    w4a8 = S.quantization_scheme({}, described)['bytes']
    assert w4a8['routed_experts'] == 0.5 + S.GROUP_SCALE_BYTES and w4a8['shared_experts'] == w8a8['shared_experts']
    # The raw description (not described) reads the same; MindIE's description inside config.json too.
    raw = {'model_quant_type': 'W8A8_DYNAMIC', 'model.layers.3.mlp.experts.0.gate_proj.weight': 'W4A8_DYNAMIC'}
    assert S.quantization_scheme({}, raw)['bytes'] == w4a8
    assert S.quantization_scheme({'quantization_config': raw})['bytes'] == w4a8


def test_quantization_ascend_without_a_description_is_sized_as_w8a8_with_a_warning():
    warnings = []
    scheme = S.quantization_scheme({'torch_dtype': 'bfloat16'}, None, 'auto', 'ascend', warnings.append)
    assert scheme['bytes'] == S.w8a8_scheme()['bytes'] and 'sized as W8A8' in warnings[0]


# ------------------------------------------------------------------------------------------------ KV cache

def test_mla_kv_is_the_whole_latent_on_every_tp_rank():
    # sizing.md: DeepSeek-V3/R1: 576 x 61 x 2 B = 70 272 B per token on every NPU, not divided by TP; a loaded MTP
    # layer adds one layer; V3.2 adds its indexer (index_head_dim per token and layer); only DCP divides it.
    shape, _warnings = shape_of('DeepSeek-R1__config.json')
    assert [S.kv_bytes_per_token(shape, tp) for tp in (1, 4, 16)] == [70272] * 3
    assert S.kv_bytes_per_token(shape, 4, mtp_layers=1) == 576 * 62 * 2
    assert S.kv_bytes_per_token(shape, 4, decode_context_parallel_size=2) == 70272 // 2
    assert S.kv_bytes_per_token(shape, 4, kv_bytes=1) == 70272 // 2
    v32, _warnings = shape_of('DeepSeek-V3.2__config.json')
    assert S.kv_bytes_per_token(v32, 8) == (512 + 64 + 128) * 61 * 2


def test_gqa_kv_heads_are_split_by_tp_and_replicated_below_one_per_rank():
    # sizing.md: 2 x max(1, num_key_value_heads // TP) x head_dim x layers x bytes. Qwen3-235B: 4 KV heads of 128,
    # 94 layers.
    shape, _warnings = shape_of('Qwen3-235B-A22B__config.json')
    per_head = 2 * 128 * 94 * 2
    assert [S.kv_bytes_per_token(shape, tp) for tp in (1, 2, 4, 8, 16)] == [4 * per_head, 2 * per_head] + [per_head] * 3


def test_kv_cache_dtype_and_served_dtype_set_the_kv_bytes():
    config = load_model_config('Qwen3-8B__config.json')
    base = {'tensor_parallel_size': 1, 'max_model_len': 4096}
    auto = size(config, base, S.devices_for_product('a2'))['per_npu']['kv_per_token']
    fp8 = size(config, dict(base, kv_cache_dtype='fp8'), S.devices_for_product('a2'))['per_npu']['kv_per_token']
    fp32 = size(config, dict(base, dtype='float32'), S.devices_for_product('a2'))['per_npu']['kv_per_token']
    assert (auto, fp8, fp32) == (2 * 8 * 128 * 36 * 2, 2 * 8 * 128 * 36, 2 * 8 * 128 * 36 * 4)


# ------------------------------------------------------------------------------------------ positions

@pytest.mark.parametrize('name, positions', [
    # rope_scaling yarn: original_max_position_embeddings 4096 x factor 40 (vLLM's _get_and_verify_max_len).
    ('DeepSeek-V3__config.json', 163840),
    # llama3 RoPE is not scaled: max_position_embeddings.
    ('Llama-3.3-70B-Instruct__config.json', 131072),
    ('Qwen3-235B-A22B__config.json', 40960),
    ('Qwen2.5-7B-Instruct__config.json', 32768),
])
def test_max_positions_as_vllm_derives_them(name, positions):
    assert S.max_positions(load_model_config(name))[0] == positions


@pytest.mark.parametrize('rope, positions', [
    ({'rope_parameters': {'rope_type': 'yarn', 'factor': 4, 'original_max_position_embeddings': 32768}}, 131072),
    ({'rope_scaling': {'type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 32768}}, 131072),
    ({'rope_scaling': {'rope_type': 'dynamic', 'factor': 2.0}}, 81920),
    ({'rope_scaling': {'rope_type': 'linear', 'factor': None}}, 40960),
    ({'rope_scaling': {'rope_type': 'longrope', 'factor': 8}}, 40960),
    ({'rope_parameters': {'full_attention': {'rope_type': 'yarn', 'factor': 2, 'original_max_position_embeddings':
                                             40960}}}, 81920),
    # rope_parameters (Transformers v5, what --hf-overrides sets in the tutorials) wins over rope_scaling.
    ({'rope_scaling': {'type': 'yarn', 'factor': 8, 'original_max_position_embeddings': 32768},
      'rope_parameters': {'rope_type': 'default'}}, 40960),
])
def test_rope_scaling_rules(rope, positions):
    config = dict(load_model_config('Qwen3-32B__config.json'), **rope)
    assert S.max_positions(config)[0] == positions


def test_model_max_length_lets_a_longer_max_model_len_through():
    config = dict(QWEN3_14B, model_max_length=65536)
    result = size(config, {'tensor_parallel_size': 2, 'max_model_len': 65536}, S.devices_for_product('a2'))
    assert result['verdict'] in ('fits', 'close') and not result['problems']


# --------------------------------------------------------------------------------------- structural refusals

def test_tensor_parallel_3_with_128_heads_is_refused_naming_the_variable():
    # The issue: "Tensor parallel 3 with 128 attention heads passes (vLLM refuses it only at start)".
    config = load_model_config('DeepSeek-R1__config.json')
    result = size(config, {'tensor_parallel_size': 3, 'max_model_len': 8192}, S.devices_for_product('a3'), W8A8)
    assert result['verdict'] == 'refused'
    assert result['problems'][0].startswith('vllm_service_tensor_parallel_size (3) does not divide the model\'s 128 '
                                            'attention heads')
    assert 'use one of 1, 2, 4, 8, 16' in result['problems'][0]


def test_tensor_parallel_1_on_an_8_npu_host_is_refused_with_the_tp_that_fits():
    # The issue: "so does tensor parallel 1 on an 8-NPU host" when the model does not fit one NPU. Qwen3-32B in BF16
    # is 61 GiB (LAYOUTS.md, faqs.md:296: "Qwen3-32B (BF16), which requires 4 x 64GB cards").
    config = load_model_config('Qwen3-32B__config.json')
    result = size(config, {'tensor_parallel_size': 1, 'max_model_len': 8192}, S.devices_for_product('a2'))
    assert result['verdict'] == 'refused'
    assert result['suggestion'] == 'set vllm_service_tensor_parallel_size to 2 (TP 2 fits on these NPUs)'
    assert result['problems'] == [
        'the model does not fit TP 1 (vllm_service_tensor_parallel_size, vllm_service_data_parallel_size) on Atlas '
        '800I A2 (8 x 64 GB): 61.0 GiB of weights + 2.0 GiB of KV cache for one sequence of 8192 tokens + 1.0 GiB of '
        'activations and buffers = 64.0 GiB of each NPU, against the 54.9 GiB vLLM may use of it (61.0 GiB x '
        'vllm_service_gpu_memory_utilization 0.9); set vllm_service_tensor_parallel_size to 2 (TP 2 fits on these '
        'NPUs)']
    four = size(config, {'tensor_parallel_size': 4, 'max_model_len': 8192}, S.devices_for_product('a2'))
    assert four['verdict'] == 'fits'


def test_routed_experts_not_divisible_by_the_expert_parallel_size_are_refused():
    config = load_model_config('Qwen3-30B-A3B__config.json')             # 128 experts, 32 heads, 4 KV heads
    layout = {'tensor_parallel_size': 4, 'data_parallel_size': 3, 'enable_expert_parallel': True, 'max_model_len': 8192}
    result = size(config, layout, S.devices_for_product('a3'), W8A8)
    assert result['verdict'] == 'refused' and len(result['problems']) == 1
    assert result['problems'][0].startswith('vllm_service_enable_expert_parallel spreads the model\'s 128 routed '
                                            'experts over vllm_service_tensor_parallel_size x '
                                            'vllm_service_data_parallel_size = 4 x 3 = 12 ranks')
    assert size(config, dict(layout, enable_expert_parallel=False), S.devices_for_product('a3'),
                W8A8)['verdict'] == 'fits'


def test_kv_heads_and_tp_must_divide_one_another():
    config = load_model_config('Qwen2.5-7B-Instruct__config.json')      # 28 heads, 4 KV heads
    result = size(config, {'tensor_parallel_size': 7, 'max_model_len': 4096}, S.devices_for_product('a2'))
    assert result['verdict'] == 'refused'
    assert result['problems'][0].startswith('vllm_service_tensor_parallel_size (7) and the model\'s 4 key/value heads')


def test_max_model_len_above_the_positions_is_refused_unless_allowed():
    config = load_model_config('DeepSeek-R1__config.json')
    layout = {'tensor_parallel_size': 4, 'data_parallel_size': 4, 'enable_expert_parallel': True,
              'max_model_len': 170000, 'gpu_memory_utilization': 0.92}
    result = size(config, layout, S.devices_for_product('a3'), W8A8)
    assert result['verdict'] == 'refused'
    assert result['problems'] == [
        'vllm_service_max_model_len (170000) is above the 163840 positions the model takes (rope_scaling '
        'original_max_position_embeddings 4096 x factor 40 = 163840), which vLLM refuses unless '
        'VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (outputs past them are garbage): lower it to 163840 or less, or extend the '
        'positions with a RoPE scaling override (--hf-overrides)']
    allowed = size(config, dict(layout, allow_long_max_model_len=True), S.devices_for_product('a3'), W8A8)
    assert allowed['verdict'] in ('fits', 'close') and any('allowed by' in w for w in allowed['warnings'])


def test_more_ranks_than_npus_is_refused_naming_both_sizes():
    config = load_model_config('Qwen3-8B__config.json')
    result = size(config, {'tensor_parallel_size': 8, 'data_parallel_size': 2, 'max_model_len': 4096},
                  S.devices_for_product('a2'))
    assert result['problems'] == ['vllm_service_tensor_parallel_size x vllm_service_data_parallel_size = 8 x 2 = 16 '
                                  'NPUs, but the deployment has 8: lower one of them, or add nodes']
    local = size(config, {'tensor_parallel_size': 8, 'data_parallel_size': 2, 'data_parallel_size_local': 2,
                          'max_model_len': 4096}, S.devices_for_product('a2', nodes=2))
    assert local['problems'][0].startswith('vllm_service_tensor_parallel_size x vllm_service_data_parallel_size_local '
                                           '= 8 x 2 = 16 NPUs on each node, but a node has 8')


@pytest.mark.parametrize('layout, variable', [
    ({'tensor_parallel_size': '4'}, 'vllm_service_tensor_parallel_size'),
    ({'tensor_parallel_size': 0}, 'vllm_service_tensor_parallel_size'),
    ({'data_parallel_size': True}, 'vllm_service_data_parallel_size'),
    ({'max_model_len': 4096.0}, 'vllm_service_max_model_len'),
    ({'gpu_memory_utilization': 1.5}, 'vllm_service_gpu_memory_utilization'),
    ({'gpu_memory_utilization': 'high'}, 'vllm_service_gpu_memory_utilization'),
    ({'enable_expert_parallel': 'yes'}, 'vllm_service_enable_expert_parallel'),
    ({'kv_cache_dtype': 'int3'}, 'kv_cache_dtype'),
    ({'hf_overrides': '{"rope_parameters": {}}'}, 'hf_overrides'),
])
def test_a_wrong_layout_value_is_refused_naming_it(layout, variable):
    result = size(load_model_config('Qwen3-8B__config.json'), dict({'max_model_len': 4096}, **layout),
                  S.devices_for_product('a2'))
    assert result['verdict'] == 'refused' and result['problems'][0].startswith(variable)


# --------------------------------------------------------------------------------------- the verdict's edges

def test_a_kv_bound_refusal_suggests_the_longest_max_model_len_that_fits():
    # Llama-3.1-8B at its 131072 positions on one 32 GB 910B4: 16 GiB of KV for one sequence besides 15 GiB of weights.
    config = load_model_config('Meta-Llama-3.1-8B__config.json')
    result = size(config, {'tensor_parallel_size': 1}, S.devices_for_product('a2_32g', count=1))
    assert result['max_model_len'] == 131072 and result['verdict'] == 'refused'
    assert result['problems'][0].startswith('the KV cache of one sequence of vllm_service_max_model_len (131072) '
                                            'tokens does not fit beside the weights')
    longest = int(result['suggestion'].split('to ')[1].split(' ')[0])
    shorter = size(config, {'tensor_parallel_size': 1, 'max_model_len': longest},
                   S.devices_for_product('a2_32g', count=1))
    assert shorter['verdict'] == 'fits' and longest % 1024 == 0 and longest > 32768


def test_close_says_how_close_in_percent():
    # Qwen3-235B in BF16 (470 GB) on one A2 at 0.95: LAYOUTS.md section 1 (main T/models/Qwen3-235B-A22B.md:27)
    # says one A2 takes it; the weights leave about 3 GiB of each NPU's budget, so it is close, never "fits".
    config = load_model_config('Qwen3-235B-A22B__config.json')
    layout = {'tensor_parallel_size': 8, 'enable_expert_parallel': True, 'max_model_len': 4096,
              'gpu_memory_utilization': 0.95}
    result = size(config, layout, S.devices_for_product('a2'), FLOAT)
    assert result['verdict'] == 'close' and not result['problems']
    close = [w for w in result['warnings'] if w.startswith('close: ')]
    assert close == [close[0]] and ('needs %d %% of the budget' % round(result['use'] * 100)) in close[0]
    assert 0.9 < result['use'] <= 1.0


def test_the_reserve_alone_tipping_it_over_is_close_not_refused():
    # Weights and one sequence's KV fit the budget; only the estimated reserve does not.
    config = load_model_config('Qwen3-235B-A22B__config.json')
    layout = {'tensor_parallel_size': 8, 'data_parallel_size': 2, 'enable_expert_parallel': True,
              'max_model_len': 4096, 'gpu_memory_utilization': 0.95}
    result = size(config, layout, S.devices_for_product('a2_32g', nodes=2), FLOAT)
    per_npu = result['per_npu']
    assert per_npu['weights'] + per_npu['kv'] <= per_npu['budget'] < per_npu['need']
    assert result['verdict'] == 'close' and result['use'] > 1


def test_fewer_full_length_sequences_than_max_num_seqs_is_a_warning():
    config = load_model_config('Qwen3-8B__config.json')
    result = size(config, {'tensor_parallel_size': 1, 'max_model_len': 40960, 'max_num_seqs': 256},
                  S.devices_for_product('a2'))
    assert result['verdict'] == 'fits' and result['concurrency'] < 256
    assert ('the KV cache left holds %d sequences of 40960 tokens per data-parallel rank, fewer than '
            'vllm_service_max_num_seqs (256)' % result['concurrency']) in result['warnings'][0]


def test_the_310p_attention_mask_counts_on_300i_duo():
    # sizing.md / LAYOUTS.md section 1 (main T/models/Qwen3-30B-A3B.md:278-280): the 310P path builds a float16
    # [max_model_len, max_model_len] mask, "O(max_model_len^2) may exceed NPU memory".
    config = load_model_config('Qwen3-30B-A3B__config.json')
    description = {'format': 'ascend', 'model_quant_type': 'W8A8', 'quant_types': ['W8A8']}
    layout = {'tensor_parallel_size': 2, 'max_model_len': 16384, 'dtype': 'float16'}
    result = size(config, layout, S.devices_for_product('300i_duo'), description)
    assert result['per_npu']['mask'] == 2 * 16384 * 16384 and result['verdict'] == 'fits'
    long = size(config, dict(layout, max_model_len=131072, hf_overrides={'rope_parameters': {
        'rope_type': 'yarn', 'factor': 4, 'original_max_position_embeddings': 32768}}),
        S.devices_for_product('300i_duo'), description)
    assert long['per_npu']['mask'] == 32 * GIB and long['verdict'] == 'refused'
    assert 'of 310P attention mask' in long['problems'][0]
    a2 = size(config, dict(layout, max_model_len=131072, hf_overrides=long['layout']['hf_overrides']),
              S.devices_for_product('a2', count=2), description)
    assert a2['per_npu']['mask'] == 0


def test_inputs_are_not_modified():
    config = load_model_config('Qwen3-235B-A22B__config.json')
    layout = {'tensor_parallel_size': 8, 'enable_expert_parallel': True, 'max_model_len': 131072,
              'hf_overrides': {'rope_parameters': {'rope_type': 'yarn', 'factor': 4,
                                                   'original_max_position_embeddings': 32768}}}
    weights = {'index_total_size': 240 * 10 ** 9, 'quantization': dict(W8A8)}
    before = copy.deepcopy((config, layout, weights))
    result = S.size_deployment(config, weights, layout, S.devices_for_product('a2'))
    assert (config, layout, weights) == before and result['verdict'] == 'fits'


def test_smallest_layout_takes_the_model_files_as_size_deployment_does():
    config = load_model_config('DeepSeek-R1__config.json')
    layout = {'tensor_parallel_size': 8, 'enable_expert_parallel': True, 'max_model_len': 16384,
              'gpu_memory_utilization': 0.92}
    text = S.smallest_layout((config, {'quantization': W8A8}), layout, S.devices_for_product('a2'))
    assert text.startswith('the smallest layout that fits: one A3 (TP 8 x DP 2 with expert parallel), or two A2 '
                           'nodes (TP 8 x DP 2 with expert parallel): put them in group vllm_clusters and run '
                           'playbooks/multinode.yml (docs/multinode.md); or a W4A8 model')
    assert S.smallest_layout((config, {'quantization': W8A8}), layout, S.devices_from_hbm_mb(None, 8)) is None
    assert S.smallest_layout((config, {'quantization': W8A8}), layout, None) is None
    # Nothing the ladder knows takes DeepSeek-R1 in fp32 with a 2 TB KV cache.
    huge = dict(layout, dtype='float32', max_model_len=163840, kv_cache_dtype='float32')
    assert S.smallest_layout((without_quantization(config), {}), huge, S.devices_for_product('a2')) is None


def test_experts_spread_over_tp_x_dp_and_the_rest_is_copied_per_dp_rank():
    # sizing.md: the routed experts spread over all TP x DP ranks, 1/(TP x DP) of each without expert parallel and
    # whole experts with it; attention, dense layers, shared experts and embeddings are copied per DP rank.
    config = load_model_config('DeepSeek-R1__config.json')

    def weights(tp, dp, ep, product='a3'):
        layout = {'tensor_parallel_size': tp, 'data_parallel_size': dp, 'enable_expert_parallel': ep,
                  'max_model_len': 8192}
        return size(config, layout, S.devices_for_product(product), W8A8)['per_npu']['weights']

    assert weights(4, 4, True) == weights(4, 4, False)
    assert weights(16, 1, True) < weights(8, 2, True) < weights(4, 4, True) < weights(2, 8, True)
    assert weights(4, 4, True) < weights(4, 2, True, 'a2')
    dense = load_model_config('Qwen3-32B__config.json')
    per_npu = [size(dense, {'tensor_parallel_size': 4, 'data_parallel_size': dp, 'max_model_len': 8192},
                    S.devices_for_product('a3'))['per_npu']['weights'] for dp in (1, 2, 4)]
    assert per_npu == [per_npu[0]] * 3


def test_a_text_config_is_read_as_vllm_reads_it():
    inner = load_model_config('Qwen3-8B__config.json')
    nested = {'architectures': ['Qwen3VLForConditionalGeneration'], 'model_type': 'qwen3_vl', 'text_config': inner}
    assert S.parameter_counts(S.model_shape(nested)) == S.parameter_counts(S.model_shape(inner))
    assert S.max_positions(nested)[0] == 40960


# ------------------------------------------------------------------------------------------------- devices

def test_a_64_gb_device_gives_the_60_96_gib_torch_sees():
    # sizing.md: a "64 GB" 910B reports about 60.96 GiB of total capacity to torch_npu.
    for product in ('a2', 'a3'):
        assert S.devices_for_product(product)['capacity'] == pytest.approx(60.96 * GIB, abs=0.005 * GIB)
    assert [S.devices_for_product(p)['count'] for p in ('a2', 'a2_32g', 'a3', '950dt', '300i_duo')] == [8, 8, 16, 8, 2]
    assert S.devices_for_product('a5')['problems'] == ['the product must be one of 300i_duo, 950dt, a2, a2_32g, a3; '
                                                       'got \'a5\'']


@pytest.mark.parametrize('fixture, count, hbm_mb, family', [
    ('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt', 8, 65536, '910B'),
    ('npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt', 1, 32768, '910B'),
    ('npu-smi-info_A3-Ascend910_24.1.rc3.7_16chip_noproc.txt', 16, 65536, None),
    # 300I Duo: no HBM column, the Memory-Usage total of each chip (44216 and 43757 MB): the smaller.
    ('npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt', 8, 43757, '310P'),
])
def test_devices_from_real_npu_smi_output(fixture, count, hbm_mb, family):
    chips = _npu_smi.parse_npu_smi_info(load_fixture(fixture))['chips']
    devices = S.devices_from_npu_smi(chips)
    assert (devices['count'], devices['hbm_mb'], devices['family'], devices['problems']) == (count, hbm_mb, family, [])
    assert devices['capacity'] == int(hbm_mb * 1024 * 1024 * S.REAL_FRACTION)


def test_npu_smi_without_memory_leaves_the_verdict_unknown():
    warnings = []
    devices = S.devices_from_npu_smi([{'name': '910B3', 'hbm_total_mb': None, 'memory_total_mb': 0}], warn=warnings.append)
    result = size(load_model_config('Qwen3-8B__config.json'), {'max_model_len': 4096}, devices)
    assert result['verdict'] == 'unknown' and devices['capacity'] is None and warnings and result['problems'] == []
    assert result['warnings'] == ['not checked: the NPUs: the NPUs\' memory must be a number of MB above 0; got None']


# ------------------------------------------------------------------------------------------------ the reader

def _index(total):
    return json.dumps({'metadata': {'total_size': total}, 'weight_map': {'a': 'model-00001-of-00002.safetensors'}})


def test_read_model_weights_reads_the_index_and_stats_the_files(tmp_path):
    (tmp_path / 'model.safetensors.index.json').write_text(_index(123456789))
    (tmp_path / 'model-00001-of-00002.safetensors').write_bytes(b'x' * 100)
    (tmp_path / 'model-00002-of-00002.safetensors').write_bytes(b'x' * 50)
    (tmp_path / 'tokenizer.json').write_bytes(b'x' * 1000)
    (tmp_path / 'sub').mkdir()
    warnings = []
    assert S.read_model_weights(str(tmp_path), warnings.append) == {'index_total_size': 123456789, 'file_bytes': 150}
    assert warnings == []


def test_read_model_weights_without_index_and_with_broken_or_several(tmp_path):
    (tmp_path / 'pytorch_model.bin').write_bytes(b'x' * 70)
    assert S.read_model_weights(str(tmp_path)) == {'index_total_size': None, 'file_bytes': 70}
    (tmp_path / 'model.safetensors.index.json').write_text('{"metadata": {"total_size": NaN}}')
    warnings = []
    assert S.read_model_weights(str(tmp_path), warnings.append)['index_total_size'] is None
    assert 'not a safetensors index' in warnings[0]
    (tmp_path / 'model.safetensors.index.json').write_text(_index(0))      # a stub (WEIGHT-SIZES.md, tt-metal's)
    warnings = []
    assert S.read_model_weights(str(tmp_path), warnings.append)['index_total_size'] is None
    assert 'no usable metadata.total_size (0)' in warnings[0]
    (tmp_path / 'quant_model_weight_w8a8_dynamic.safetensors.index.json').write_text(_index(5))
    warnings = []
    assert S.read_model_weights(str(tmp_path), warnings.append)['index_total_size'] is None
    assert 'several safetensors indexes' in warnings[0]
    warnings = []
    gone = S.read_model_weights(str(tmp_path / 'gone'), warnings.append)
    assert gone == {'index_total_size': None, 'file_bytes': None}
    assert 'cannot be listed' in warnings[0]


def test_read_model_weights_never_opens_a_fifo_index(tmp_path):
    os.mkfifo(str(tmp_path / 'model.safetensors.index.json'))
    warnings = []
    assert S.read_model_weights(str(tmp_path), warnings.append)['index_total_size'] is None
    assert warnings == []            # not a regular file: not listed as an index (is_file), nothing opened


def test_read_model_weights_lists_a_bounded_number_of_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(S, 'MAX_ENTRIES', 3)
    for index in range(3):
        (tmp_path / ('model-%05d.safetensors' % index)).write_bytes(b'x' * 10)
    assert S.read_model_weights(str(tmp_path)) == {'index_total_size': None, 'file_bytes': 30}
    (tmp_path / 'model.safetensors.index.json').write_text(_index(123))
    warnings = []
    assert S.read_model_weights(str(tmp_path), warnings.append) == {'index_total_size': None, 'file_bytes': None}
    assert warnings == ['the model directory %s has more than 3 entries: its weight files\' sizes are not used'
                        % tmp_path]


# ----------------------------------------------------------------------------- malformed configurations

GOOD_LAYOUT = {'tensor_parallel_size': 4, 'data_parallel_size': 4, 'enable_expert_parallel': True,
               'max_model_len': 16384, 'gpu_memory_utilization': 0.92}
DENSE_LAYOUT = {'tensor_parallel_size': 4, 'max_model_len': 8192}
# JSON values of every type (no NaN: the collection's JSON reader refuses it), each wrong for a size field.
WRONG_VALUES = ('7168', 7168.5, 7168.0, True, False, [], [7168], {}, {'a': [1, {'b': None}]}, -1, 0, 2 ** 40,
                10 ** 400, '')
# The fields the sizing reads, by configuration; a required one may also be missing.
DEEPSEEK_FIELDS = ('hidden_size', 'num_hidden_layers', 'vocab_size', 'num_attention_heads', 'intermediate_size',
                   'kv_lora_rank', 'qk_nope_head_dim', 'qk_rope_head_dim', 'v_head_dim', 'q_lora_rank',
                   'n_routed_experts', 'moe_intermediate_size', 'n_shared_experts', 'first_k_dense_replace',
                   'moe_layer_freq', 'num_nextn_predict_layers', 'max_position_embeddings', 'rope_scaling',
                   'tie_word_embeddings', 'quantization_config')
DEEPSEEK_REQUIRED = ('hidden_size', 'num_hidden_layers', 'vocab_size', 'num_attention_heads', 'intermediate_size',
                     'kv_lora_rank', 'qk_nope_head_dim', 'qk_rope_head_dim', 'v_head_dim', 'moe_intermediate_size',
                     'max_position_embeddings')
QWEN_MOE_FIELDS = ('hidden_size', 'num_hidden_layers', 'vocab_size', 'num_attention_heads', 'num_key_value_heads',
                   'head_dim', 'num_experts', 'moe_intermediate_size', 'decoder_sparse_step', 'mlp_only_layers',
                   'max_position_embeddings', 'rope_scaling', 'tie_word_embeddings')
DENSE_FIELDS = ('hidden_size', 'num_hidden_layers', 'vocab_size', 'num_attention_heads', 'num_key_value_heads',
                'head_dim', 'intermediate_size', 'max_position_embeddings', 'rope_scaling', 'tie_word_embeddings',
                'text_config')


def _wrong(config, field, value):
    if field in ('rope_scaling', 'quantization_config', 'text_config') and isinstance(value, dict):
        value = {'type': value, 'factor': value, 'rope_type': [value]} if value else {'type': 'yarn'}
    if field == 'mlp_only_layers' and value == []:
        value = ['0']
    return dict(config, **{field: value})


def _cases(name, fields, layout, quantization):
    for field in fields:
        for value in WRONG_VALUES:
            if isinstance(value, bool) and field == 'tie_word_embeddings':
                continue                                                    # a right value for it
            if isinstance(value, (dict, list)) and field == 'text_config' and value != [7168]:
                continue                      # vLLM reads a text_config only when it names the attention heads
            if value == [7168] and field == 'mlp_only_layers':
                continue                                                    # a list of layers, past the last
            if value == 0 and field == 'num_experts':
                continue                                                    # 0 experts: a dense model
            if value in (0, False) and field in ('q_lora_rank', 'n_shared_experts', 'first_k_dense_replace',
                                                 'num_nextn_predict_layers'):
                continue                                                    # 0 is right for these
            case = '%s-%s-%s' % (name.split('__')[0], field, S._show(value, 20))
            yield pytest.param(name, field, value, layout, quantization, id=case)


@pytest.mark.parametrize('name, field, value, layout, quantization', list(
    _cases('DeepSeek-R1__config.json', DEEPSEEK_FIELDS, GOOD_LAYOUT, W8A8))
    + list(_cases('Qwen3-30B-A3B__config.json', QWEN_MOE_FIELDS, DENSE_LAYOUT, W8A8))
    + list(_cases('Qwen3-32B__config.json', DENSE_FIELDS, DENSE_LAYOUT, FLOAT)))
def test_a_wrong_field_is_a_warning_and_an_unknown_verdict(name, field, value, layout, quantization):
    config = _wrong(load_model_config(name), field, value)
    # Through the collection's JSON reader, as the plan reads config.json (an integer too long to print excepted).
    if not (isinstance(value, int) and abs(value) > 10 ** 300):
        config = _json.loads(json.dumps(config))
    if field == 'quantization_config':
        quantization = None
    devices = S.devices_for_product('a3')
    result = S.size_deployment(config, {'quantization': quantization}, layout, devices)
    assert result['verdict'] == 'unknown', (result['verdict'], result['problems'])
    assert any(field in warning or 'quantization' in warning for warning in result['warnings']), result['warnings']
    assert result['problems'] == []


@pytest.mark.parametrize('name, field', [(n, f) for n, fields in (
    ('DeepSeek-R1__config.json', DEEPSEEK_REQUIRED),
    ('Qwen3-30B-A3B__config.json', ('hidden_size', 'num_hidden_layers', 'vocab_size', 'num_attention_heads',
                                    'moe_intermediate_size', 'max_position_embeddings')),
    ('Qwen3-32B__config.json', ('hidden_size', 'num_hidden_layers', 'vocab_size', 'num_attention_heads',
                                'intermediate_size', 'max_position_embeddings'))) for f in fields])
def test_a_missing_field_is_a_warning_and_an_unknown_verdict(name, field):
    config = load_model_config(name)
    del config[field]
    result = S.size_deployment(config, {'quantization': W8A8}, GOOD_LAYOUT if 'DeepSeek' in name else DENSE_LAYOUT,
                               S.devices_for_product('a3'))
    assert result['verdict'] == 'unknown' and result['problems'] == []
    assert any(field in warning for warning in result['warnings'])


@pytest.mark.parametrize('config', [
    None, [], 'config', 7, {}, {'text_config': 'x'}, {'text_config': {'num_attention_heads': 'x'}},
    {'architectures': 'x', 'model_type': 7, 'torch_dtype': [], 'hidden_size': {'a': {'b': [None]}}},
    {'dim': 'x', 'n_layers': [], 'n_heads': None},
    {'kv_lora_rank': 512, 'model_type': 'deepseek_v3'},
    {'num_experts': 8, 'mlp_only_layers': 'all'},
    {'num_local_experts': 8, 'hidden_size': 4096, 'num_hidden_layers': 32, 'vocab_size': 32000,
     'num_attention_heads': 32, 'intermediate_size': 14336},                     # Mixtral without positions
])
def test_garbage_configurations_give_an_unknown_verdict(config):
    result = S.size_deployment(config, {}, DENSE_LAYOUT, S.devices_for_product('a2'))
    assert result['verdict'] == 'unknown' and result['warnings'] and result['problems'] == []


@pytest.mark.parametrize('weights', [
    None, [], 'weights', {'index_total_size': -1}, {'file_bytes': 2 ** 70}, {'manifest_bytes': 1.5},
    {'quantization': 'W8A8'}, {'quantization': {'format': 'ascend', 'quant_types': 'W8A8'}},
    {'quantization': {'format': 'unknown'}}, {'quantization': {'format': 'ascend', 'model_quant_type': 7}},
])
def test_garbage_weights_never_raise(weights):
    result = S.size_deployment(load_model_config('Qwen3-8B__config.json'), weights, DENSE_LAYOUT,
                               S.devices_for_product('a2'))
    assert result['verdict'] in ('fits', 'unknown')


@pytest.mark.parametrize('devices', [None, {}, S.devices_from_hbm_mb('64G', 8), S.devices_from_hbm_mb(65536, 0),
                                     S.devices_from_npu_smi('chips'), S.devices_from_npu_smi([None, 7])])
def test_garbage_devices_never_raise(devices):
    result = S.size_deployment(load_model_config('Qwen3-8B__config.json'), {}, DENSE_LAYOUT, devices)
    assert result['verdict'] == 'unknown' and result['per_npu']['budget'] is None and result['problems'] == []
    assert [w for w in result['warnings'] if w.startswith('not checked: the NPUs')]


def test_missing_shared_data_is_a_skip_outside_ci_and_a_failure_in_ci(monkeypatch, tmp_path):
    monkeypatch.setenv('KAV_SHARED_DIR', str(tmp_path / 'nowhere'))
    monkeypatch.delenv('CI', raising=False)
    with pytest.raises(pytest.skip.Exception, match='nowhere/model-configs not found'):
        require_shared('model-configs')
    monkeypatch.setenv('CI', 'true')
    with pytest.raises(pytest.fail.Exception, match='CI must run this test'):
        require_shared('model-configs')
    monkeypatch.setenv('KAV_SHARED_DIR', str(tmp_path))
    assert require_shared() == str(tmp_path)
