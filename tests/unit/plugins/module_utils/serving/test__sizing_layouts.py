# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sizing (serving/_sizing.py) against what vLLM-Ascend documents: every serve layout of ../shared/model-configs/
LAYOUTS.md section 2 whose model's configuration is in ../shared/model-configs (DeepSeek and Qwen) must give "fits"
or "close", never "refused", and section 1's hardware statements ("requires ...") must hold.

Each row below is a LAYOUTS.md row, named by its source as LAYOUTS.md names it (vllm-ascend tag or ``main`` =
182b75ea, ``T/`` = docs/source/tutorials/, ``:N`` = line). The quantization of each checkpoint is given as
_model_format.describe reads it; DeepSeek's W8A8 and W4A8 from the MindIE doc excerpts in model-configs. Rows left
out: models without a configuration here (QwQ-32B, Qwen3-Coder-30B-A3B, Pangu), a layout with pipeline parallel,
and one with no hardware stated (v0.9.1 quantization.md)."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _model_format
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _sizing as S
from ansible_collections.kunpeng_ascend.vllm.tests.shared_data import load_model_config, require_shared

# Qwen/Qwen3-14B's config.json (not in model-configs): citsjtu2020/LLM-Prof @ 8434c8d19c396b2f95d92a67845a7c0a0e0dd512
# sglang/Model_Config.md, "Qwen3-14B" block (the sizing fields).
QWEN3_14B = {
    'architectures': ['Qwen3ForCausalLM'], 'attention_bias': False, 'head_dim': 128, 'hidden_size': 5120,
    'intermediate_size': 17408, 'max_position_embeddings': 40960, 'model_type': 'qwen3', 'num_attention_heads': 40,
    'num_hidden_layers': 40, 'num_key_value_heads': 8, 'rope_scaling': None, 'tie_word_embeddings': False,
    'torch_dtype': 'bfloat16', 'vocab_size': 151936,
}
# The --hf-overrides the long-context commands give (main T/models/Qwen3-235B-A22B.md:225 and :862,
# Qwen3-30B-A3B.md:615, Qwen3-Dense.md:569; v0.13.0 T/Qwen3-235B-A22B.md:118), read in the vllm-ascend snapshot.
YARN_32K = {'rope_parameters': {'rope_type': 'yarn', 'rope_theta': 1000000, 'factor': 4,
                                'original_max_position_embeddings': 32768}}
YARN_128K = {'rope_parameters': {'rope_type': 'yarn', 'rope_theta': 1000000, 'factor': 4,
                                 'original_max_position_embeddings': 131072}}


def description(kind):
    """What _model_format.describe says of the checkpoint's quantization."""
    if kind == 'bf16':
        return _model_format.describe(json.dumps({'torch_dtype': 'bfloat16'}), None)
    excerpts = {
        # MindIE-LLM docs' W8A8_DYNAMIC description of DeepSeek-R1/V3 (FA3 excerpt: W8A8 and W8A8_DYNAMIC tensors).
        'W8A8': 'DeepSeek-R1-V3-W8A8-FA3__quant_model_description_DOC-EXCERPT.txt',
        # MindIE-LLM docs' W4A8 mixed description: routed experts W4A8_DYNAMIC, the rest W8A8 / W8A8_DYNAMIC.
        'W4A8': 'DeepSeek-R1-V3-W4A8-mixed__quant_model_description_DOC-EXCERPT.txt',
    }
    if kind in excerpts:
        with open(require_shared('model-configs', excerpts[kind]), encoding='utf-8') as handle:
            text = handle.read()
    else:                                          # Qwen's msModelSlim types: W8A8, W4A4_DYNAMIC, W8A8SC
        text = json.dumps({'model_quant_type': kind, 'model.embed_tokens.weight': 'FLOAT',
                           'model.layers.0.mlp.gate_proj.weight': kind})
    return _model_format.describe(None, text)


def config(name):
    if name == 'Qwen3-14B':
        return copy.deepcopy(QWEN3_14B)
    if name == 'DeepSeek-V3.2-bf16':
        # vllm-ascend's docs have BF16 DeepSeek served with the FP8 quantization_config removed (LAYOUTS.md:
        # v0.8.5rc1 T/multi_node.md:169).
        document = load_model_config('DeepSeek-V3.2__config.json')
        document.pop('quantization_config')
        return document
    return load_model_config(name)


R1 = 'DeepSeek-R1__config.json'
V3 = 'DeepSeek-V3__config.json'
# DeepSeek-V3.1 has no Hugging Face config here: NVIDIA's NVFP4 derivative's has the V3 family's shape (SOURCES.md)
# and no quantization_config; the checkpoints' quantization is given apart.
V31 = 'nvidia-DeepSeek-V3.1-NVFP4__config.json'
V32 = 'DeepSeek-V3.2__config.json'
V2_LITE = 'DeepSeek-V2-Lite-16B__deepseek-inference-config_16B.json'
Q235 = 'Qwen3-235B-A22B__config.json'
Q30 = 'Qwen3-30B-A3B__config.json'
Q32 = 'Qwen3-32B__config.json'
Q8 = 'Qwen3-8B__config.json'
Q25 = 'Qwen2.5-7B-Instruct__config.json'


def row(source, model, quant, product, tp, dp=1, ep=False, max_model_len=None, max_num_seqs=None, util=None,
        nodes=1, count=None, mtp=False, overrides=None, dtype=None):
    layout = {'tensor_parallel_size': tp, 'data_parallel_size': dp, 'enable_expert_parallel': ep,
              'max_model_len': max_model_len, 'max_num_seqs': max_num_seqs, 'gpu_memory_utilization': util,
              'speculative_mtp': mtp, 'hf_overrides': overrides, 'dtype': dtype}
    return pytest.param(model, quant, (product, nodes, count), layout, id=source)


# LAYOUTS.md section 2, in its order. gpu_mem_util "0.9 / 0.92 (node 0 / node 1)": the smaller; "not set": vLLM's
# default; "+MTP 3": the MTP layer loaded. The A3's "NPUs" are its 16 dies, as LAYOUTS.md counts them.
DOCUMENTED = [
    row('main DeepSeek-R1.md:124,146-159 A3', R1, 'W8A8', 'a3', 4, 4, True, 16384, 16, 0.92, mtp=True),
    row('main DeepSeek-R1.md:222-314 2xA2', R1, 'W8A8', 'a2', 4, 4, True, 16384, 16, 0.92, nodes=2, mtp=True),
    row('main DeepSeek-V3.1.md:208-247 A3', V31, 'W8A8', 'a3', 4, 4, True, 16384, 16, 0.92, mtp=True),
    # W4A4 MLP + W8A8C8 attention (C8, an int8 KV cache, not modelled: the KV is sized in bf16).
    row('main DeepSeek-V3.1.md:172-199 950DT', V31, 'W4A4_DYNAMIC', '950dt', 8, 1, True, 135168, 96, 0.9),
    row('main DeepSeek-V3.1.md:310-419 2xA2', V31, 'W8A8', 'a2', 4, 4, True, 16384, 16, 0.92, nodes=2, mtp=True),
    # 2P1D: each prefill instance one A3 node (TP 8 x DP 2); the decode instance two A3 nodes (TP 1 x DP 32).
    row('main DeepSeek-V3.1.md:531-547 prefill A3', V31, 'W8A8', 'a3', 8, 2, True, 65536, 8, 0.9),
    row('main DeepSeek-V3.1.md:678-693 decode 2xA3', V31, 'W8A8', 'a3', 1, 32, True, 65536, 28, 0.92, nodes=2),
    # The W4A8 table (":1157-1178"): 39K, 36K / 36K / 132K (K = 1024 tokens), EP not given, vLLM's defaults else.
    row('main DeepSeek-V3.1.md:1157-1178 dp4tp4 39K', V31, 'W4A8', 'a3', 4, 4, False, 39 * 1024),
    row('main DeepSeek-V3.1.md:1157-1178 dp4tp4 36K', V31, 'W4A8', 'a3', 4, 4, False, 36 * 1024),
    row('main DeepSeek-V3.1.md:1157-1178 dp2tp8 36K', V31, 'W4A8', 'a3', 8, 2, False, 36 * 1024),
    row('main DeepSeek-V3.1.md:1157-1178 dp2tp8 132K', V31, 'W4A8', 'a3', 8, 2, False, 132 * 1024),
    row('main DeepSeek-V3.1.md:1173-1178 P', V31, 'W4A8', 'a3', 8, 2, False, 36 * 1024),
    row('main DeepSeek-V3.1.md:1173-1178 P long', V31, 'W4A8', 'a3', 16, 1, False, 132 * 1024),
    row('main DeepSeek-V3.1.md:1173-1178 D', V31, 'W4A8', 'a3', 4, 8, False, 36 * 1024, nodes=2),
    row('main DeepSeek-V3.2.md:124-151 A3', V32, 'W8A8', 'a3', 8, 2, True, 8192, 16, 0.92),
    row('main DeepSeek-V3.2.md:163-254 2xA3', V32, 'W8A8', 'a3', 16, 2, True, 8192, 16, 0.92, nodes=2),
    row('main DeepSeek-V3.2.md:259-357 2xA2', V32, 'W8A8', 'a2', 8, 2, True, 8192, 16, 0.92, nodes=2),
    row('main DeepSeek-V3.2.md:423-443 prefill 2xA3', V32, 'W8A8', 'a3', 16, 2, True, 68000, 64, 0.82, nodes=2),
    row('main DeepSeek-V3.2.md:569-590 decode 2xA3', V32, 'W8A8', 'a3', 4, 8, True, 68000, 4, 0.95, nodes=2),
    row('v0.11.0 multi-node_dsv3.2.md:181-268 BF16 2xA3', 'DeepSeek-V3.2-bf16', 'bf16', 'a3', 16, 2, True, 17450,
        16, 0.9, nodes=2),
    row('v0.11.0 multi-node_dsv3.2.md:274-293 A3', V32, 'W8A8', 'a3', 16, 1, True, 17450, 16, 0.92),
    row('v0.11.0 multi-node_dsv3.2.md:298-385 2xA2', V32, 'W8A8', 'a2', 8, 2, True, 17450, 16, 0.9, nodes=2),
    row('v0.11.0 multi_node.md:60,121-184 V3.1 2xA2', V31, 'W8A8', 'a2', 4, 4, True, 32768, 16, 0.9, nodes=2),
    row('v0.9.1 multi_node.md:59,120-177 V3 2xA2', V3, 'W8A8', 'a2', 4, 4, True, 32768, 16, 0.9, nodes=2),
    row('v0.9.1 large_scale_ep.md:535-538 prefill', R1, 'W8A8', 'a3', 8, 2, True, 17000, 4, 0.9),
    row('v0.9.1 large_scale_ep.md:535-538 decode', R1, 'W8A8', 'a3', 1, 64, True, 17000, 28, 0.9, nodes=4),
    row('main Qwen3-235B-A22B.md:204-227 A2', Q235, 'W8A8', 'a2', 8, 1, True, 131072, 32, 0.95, overrides=YARN_32K),
    row('main Qwen3-235B-A22B.md:348-362 prefill A3', Q235, 'W8A8', 'a3', 8, 2, True, 40960, 24, 0.9),
    row('main Qwen3-235B-A22B.md:412-490 decode 2xA3', Q235, 'W8A8', 'a3', 4, 8, True, 40960, 128, 0.9, nodes=2),
    row('main Qwen3-235B-A22B.md:734-778 A3 tp4dp4', Q235, 'W8A8', 'a3', 4, 4, True, 32768, 128, 0.9),
    row('main Qwen3-235B-A22B.md:808-822 A3 tp16', Q235, 'W8A8', 'a3', 16, 1, True, 32768, 128, 0.9),
    row('main Qwen3-235B-A22B.md:853-863 A3 long', Q235, 'W8A8', 'a3', 8, 2, True, 135000, 32, 0.85,
        overrides=YARN_128K),
    row('v0.13.0 Qwen3-235B-A22B.md:150-200 BF16 2xA2', Q235, 'bf16', 'a2', 8, 2, True, 32768, 16, 0.9, nodes=2),
    row('main Qwen3-30B-A3B.md:226-249 4 NPUs', Q30, 'W8A8', 'a2', 4, 1, True, 40960, 100, 0.95, count=4),
    row('main Qwen3-30B-A3B.md:254-268 300I DUO', Q30, 'W8A8', '300i_duo', 2, 1, False, 16384, 32, dtype='float16'),
    row('main Qwen3-30B-A3B.md:502-514 TP1 A3', Q30, 'W8A8', 'a3', 1, 1, False, 37364, 100, 0.95, count=1),
    row('main Qwen3-30B-A3B.md:528-612 TP4 A3', Q30, 'W8A8', 'a3', 4, 1, True, 37364, 100, 0.95, count=4),
    row('main Qwen3-30B-A3B.md:528-612 TP4 long', Q30, 'W8A8', 'a3', 4, 1, True, 131072, 14, 0.95, count=4,
        overrides=YARN_32K),
    row('v0.11.0 multi_npu_qwen3_moe.md:47,88-92 BF16', Q30, 'bf16', 'a2', 4, 1, True, None, count=4),
    row('main Qwen3-Dense.md:230-248 W8A8', Q32, 'W8A8', 'a2', 4, 1, False, 5500, None, 0.9, count=4),
    row('main Qwen3-Dense.md:250-269 W4A4', Q32, 'W4A4_DYNAMIC', 'a2', 2, 1, False, 40960, 64, 0.9, count=2),
    row('main Qwen3-Dense.md:505-519 TP4', Q32, 'W8A8', 'a3', 4, 1, False, 5500, None, 0.9, count=4),
    row('main Qwen3-Dense.md:531-595 TP4 long', Q32, 'W8A8', 'a3', 4, 1, False, 135000, None, 0.9, count=4,
        overrides=YARN_128K),
    row('main Qwen3-Dense.md:531-595 TP8', Q32, 'W8A8', 'a3', 8, 1, False, 5500, None, 0.9, count=8),
    row('main Qwen3-Dense.md:274-337 300I 8B', Q8, 'W8A8SC', '300i_duo', 1, 1, False, 20480, 32, 0.9, count=1,
        dtype='float16'),
    row('main Qwen3-Dense.md:274-337 300I 14B', 'Qwen3-14B', 'W8A8SC', '300i_duo', 1, 1, False, 20480, 16, 0.9,
        count=1, dtype='float16'),
    row('main Qwen3-Dense.md:274-337 300I 32B', Q32, 'W8A8SC', '300i_duo', 4, 1, False, 20480, 32, 0.9, nodes=1,
        count=4, dtype='float16'),
    row('v0.18.0 310p.md:94-99 300I 8B', Q8, 'W8A8SC', '300i_duo', 1, 1, False, 16384, 32, 0.9, count=1,
        dtype='float16'),
    row('v0.18.0 310p.md:151-202 300I 14B', 'Qwen3-14B', 'W8A8SC', '300i_duo', 1, 1, False, 16384, 16, 0.9, count=1,
        dtype='float16'),
    row('v0.13.0 Qwen3-Dense.md:108-112 BF16', Q32, 'bf16', 'a3', 4, 1, False, 5500, None, 0.9, count=4),
    row('v0.13.0 Qwen3-Dense.md:183-190 W8A8', Q32, 'W8A8', 'a3', 4, 1, False, 5500, None, 0.9, count=4),
    row('v0.18.0 Qwen2.5-7B.md:94-109 910B4', Q25, 'bf16', 'a2_32g', 1, 1, False, 32768, count=1),
    row('v0.11.0 single_node_300i.md:96-97', Q25, 'bf16', '300i_duo', 2, 1, False, None, dtype='float16'),
    row('v0.7.3 single_npu.md:61,115', Q25, 'bf16', 'a2', 1, 1, False, 26240, count=1),
]


def devices(hardware):
    product, nodes, count = hardware
    return S.devices_for_product(product, nodes, count)


@pytest.mark.parametrize('model, quant, hardware, layout', DOCUMENTED)
def test_documented_layouts_fit(model, quant, hardware, layout):
    result = S.size_deployment(config(model), {'quantization': description(quant)}, layout, devices(hardware))
    assert result['verdict'] in ('fits', 'close'), (result['problems'], result['warnings'])
    assert result['per_npu']['need'] <= result['per_npu']['budget']


# LAYOUTS.md section 2's DeepSeek-V2-Lite rows: its only configuration here is DeepSeek's inference format, which
# states no positions, so the max_model_len check cannot be made: "unknown", with the memory well within.
@pytest.mark.parametrize('layout, hardware', [
    # v0.8.5rc1 T/multi_npu_quantization.md:1,78: one node, 4 NPUs, TP 4, max_model_len 4096, W8A8 dynamic.
    ({'tensor_parallel_size': 4, 'max_model_len': 4096}, ('a2', 1, 4)),
    # v0.7.3 T/multi_node.md:86-91: 2 nodes (Ray), TP 16, BF16 ({max_model_len}: 4096 taken).
    ({'tensor_parallel_size': 16, 'max_model_len': 4096}, ('a2', 2, None)),
])
def test_documented_deepseek_v2_lite_layouts_are_unknown_only_for_the_positions(layout, hardware):
    result = S.size_deployment(config(V2_LITE), {'quantization': description('W8A8')}, layout, devices(hardware))
    assert result['verdict'] == 'unknown' and result['problems'] == []
    assert [w for w in result['warnings'] if w.startswith('not checked: ')] == [
        'not checked: the model\'s positions (no positions in config.json): vllm_service_max_model_len 4096 not '
        'checked']
    assert result['use'] < 0.5


def test_the_documented_133000_tokens_are_above_what_the_yarn_override_gives():
    # v0.13.0 T/Qwen3-235B-A22B.md:90-120 (LAYOUTS.md section 2): --max-model-len 133000 with --hf-overrides
    # rope_parameters yarn factor 4 over original_max_position_embeddings 32768, that is 131072 positions; vLLM's
    # _get_and_verify_max_len refuses more unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. The memory fits.
    layout = {'tensor_parallel_size': 8, 'enable_expert_parallel': True, 'max_model_len': 133000, 'max_num_seqs': 4,
              'gpu_memory_utilization': 0.95, 'hf_overrides': YARN_32K}
    result = S.size_deployment(config(Q235), {'quantization': description('W8A8')}, layout, devices(('a2', 1, None)))
    assert result['verdict'] == 'refused' and len(result['problems']) == 1
    assert result['problems'][0].startswith('vllm_service_max_model_len (133000) is above the 131072 positions')
    assert result['per_npu']['need'] < result['per_npu']['budget'] * (1 - S.CLOSE_MARGIN)
    allowed = S.size_deployment(config(Q235), {'quantization': description('W8A8')},
                                dict(layout, allow_long_max_model_len=True), devices(('a2', 1, None)))
    assert allowed['verdict'] == 'fits'


# ------------------------------------------------------------------------ section 1: "requires ..." statements

def _deepseek_layout(tp, dp):
    # The documented two-node / A3 layout's settings (main T/models/DeepSeek-R1.md:146-159): EP, 16384 tokens, 16
    # sequences, 0.92, MTP.
    return {'tensor_parallel_size': tp, 'data_parallel_size': dp, 'enable_expert_parallel': True,
            'max_model_len': 16384, 'max_num_seqs': 16, 'gpu_memory_utilization': 0.92, 'speculative_mtp': True}


@pytest.mark.parametrize('model', [R1, V31, V32])
@pytest.mark.parametrize('tp, dp', [(8, 1), (4, 2)])
def test_deepseek_w8a8_is_refused_on_one_a2_with_two_a2_or_one_a3(model, tp, dp):
    # main T/models/DeepSeek-R1.md:22 "require 1 Atlas 800 A3 (64G x 16) nodes or 2 Atlas 800 A2 (64G x 8) nodes";
    # DeepSeek-V3.1.md:170,312 and DeepSeek-V3.2.md:19-20 the same. About 670 GB of weights on 8 x 64 GB.
    result = S.size_deployment(config(model), {'quantization': description('W8A8')}, _deepseek_layout(tp, dp),
                               devices(('a2', 1, None)))
    assert result['verdict'] == 'refused'
    assert result['problems'][-1].startswith('the model does not fit TP %d%s (vllm_service_tensor_parallel_size, '
                                             'vllm_service_data_parallel_size) on Atlas 800I A2 (8 x 64 GB): '
                                             % (tp, ' x DP %d with expert parallel' % dp if dp > 1
                                                else ' with expert parallel'))
    suggestion = result['suggestion']
    assert suggestion.startswith('the smallest layout that fits: one A3 (TP %d x DP %d with expert parallel), or two '
                                 'A2 nodes (TP %d x DP %d with expert parallel): put them in group vllm_clusters and '
                                 'run playbooks/multinode.yml (docs/multinode.md)' % (tp, 16 // tp, tp, 16 // tp))
    assert 'or a W4A8 model' in suggestion
    assert suggestion in result['problems'][-1]
    assert result['per_npu']['weights'] > result['per_npu']['budget']


@pytest.mark.parametrize('model', [R1, V31, V32])
@pytest.mark.parametrize('hardware', [('a2', 2, None), ('a3', 1, None)])
def test_deepseek_w8a8_fits_two_a2_and_one_a3(model, hardware):
    result = S.size_deployment(config(model), {'quantization': description('W8A8')}, _deepseek_layout(4, 4),
                               devices(hardware))
    assert result['verdict'] == 'fits'


@pytest.mark.parametrize('hardware, layout, verdict', [
    # v0.13.0 T/DeepSeek-V3.2.md:19,21 (BF16): "require 2 Atlas 800 A3 (64G x 16) nodes or 4 Atlas 800 A2 (64G x 8)".
    (('a3', 2, None), (16, 2), 'fits'),
    (('a2', 4, None), (8, 4), 'fits'),
    (('a3', 1, None), (16, 1), 'refused'),
    (('a2', 2, None), (8, 2), 'refused'),
])
def test_deepseek_v32_bf16_needs_two_a3_or_four_a2(hardware, layout, verdict):
    tp, dp = layout
    result = S.size_deployment(config('DeepSeek-V3.2-bf16'), {'quantization': description('bf16')},
                               {'tensor_parallel_size': tp, 'data_parallel_size': dp, 'enable_expert_parallel': True,
                                'max_model_len': 8192}, devices(hardware))
    assert result['verdict'] == verdict
    if verdict == 'refused':
        assert 'two A3 nodes' in result['suggestion'] and 'four A2 nodes' in result['suggestion']


@pytest.mark.parametrize('hardware, tp, dp', [(('a3', 1, None), 16, 1), (('a2', 1, None), 8, 1),
                                              (('a2_32g', 2, None), 8, 2)])
def test_qwen3_235b_w8a8_fits_one_a3_one_a2_or_two_32_gb_a2(hardware, tp, dp):
    # main T/models/Qwen3-235B-A22B.md:27,33: "1 Atlas 800I A3 (64GB x 16), 1 Atlas 800I A2 (64GB x 8), 2 Atlas
    # 800I A2 (32GB x 8)".
    layout = {'tensor_parallel_size': tp, 'data_parallel_size': dp, 'enable_expert_parallel': True,
              'max_model_len': 32768}
    result = S.size_deployment(config(Q235), {'quantization': description('W8A8')}, layout, devices(hardware))
    assert result['verdict'] == 'fits'


@pytest.mark.parametrize('hardware, tp, dp, verdict', [
    (('a3', 1, None), 16, 1, 'fits'),
    (('a2', 1, None), 8, 1, 'close'),
    (('a2_32g', 2, None), 8, 2, 'close'),
])
def test_qwen3_235b_bf16_on_one_a2_or_two_32_gb_a2_is_close_at_best(hardware, tp, dp, verdict):
    # The same rows say BF16 takes the same hardware. Its 470 GB of bf16 weights leave each NPU of an A2 (or of two
    # 32 GB A2) about 3 GiB (1.5 GiB) of the 0.95 budget: it may start with a short max_model_len, so "close", never
    # "fits"; at 0.9 and 32768 tokens it is refused.
    layout = {'tensor_parallel_size': tp, 'data_parallel_size': dp, 'enable_expert_parallel': True,
              'max_model_len': 4096, 'gpu_memory_utilization': 0.95}
    result = S.size_deployment(config(Q235), {'quantization': description('bf16')}, layout, devices(hardware))
    assert result['verdict'] == verdict
    if verdict == 'close':
        longer = dict(layout, max_model_len=32768, gpu_memory_utilization=0.9)
        assert S.size_deployment(config(Q235), {'quantization': description('bf16')}, longer,
                                 devices(hardware))['verdict'] == 'refused'


@pytest.mark.parametrize('hbm, tp, verdict', [
    # v0.11.0 T/multi_npu_qwen3_moe.md:44 (Qwen3-30B-A3B BF16): "For an Atlas A2 with 64 GB of NPU card memory,
    # tensor-parallel-size should be at least 2, and for 32 GB of memory, tensor-parallel-size should be at least 4."
    ('a2', 1, 'refused'), ('a2', 2, 'fits'), ('a2_32g', 2, 'refused'), ('a2_32g', 4, 'fits'),
])
def test_qwen3_30b_bf16_needs_tp2_on_64_gb_and_tp4_on_32_gb(hbm, tp, verdict):
    result = S.size_deployment(config(Q30), {'quantization': description('bf16')},
                               {'tensor_parallel_size': tp, 'enable_expert_parallel': True, 'max_model_len': 4096},
                               devices((hbm, 1, tp)))
    assert result['verdict'] == verdict


def test_qwen3_32b_bf16_needs_more_than_one_card():
    # main docs/source/faqs.md:296: "Qwen3-32B (BF16), which requires 4 x 64GB cards"; one is refused, four fit.
    for tp, verdict in ((1, 'refused'), (4, 'fits')):
        result = S.size_deployment(config(Q32), {'quantization': description('bf16')},
                                   {'tensor_parallel_size': tp, 'max_model_len': 8192}, devices(('a2', 1, tp)))
        assert result['verdict'] == verdict


def test_qwen25_7b_fits_one_910b4():
    # v0.18.0 T/models/Qwen2.5-7B.md:21: "require 1 Atlas 910B4 (32G x 1) card".
    result = S.size_deployment(config(Q25), {'quantization': description('bf16')},
                               {'tensor_parallel_size': 1, 'max_model_len': 32768}, devices(('a2_32g', 1, 1)))
    assert result['verdict'] == 'fits'


@pytest.mark.parametrize('model, quant, tp', [
    (Q30, 'W8A8', 2), (Q8, 'W8A8SC', 1), ('Qwen3-14B', 'W8A8SC', 1), (Q32, 'W8A8SC', 4)])
def test_300i_duo_statements(model, quant, tp):
    # main T/models/Qwen3-30B-A3B.md:33 "Atlas 300I DUO (TP2)"; Qwen3-Dense.md:45-47 8B "(TP1)", 14B "(TP1)", 32B
    # "(TP4)", with an explicit max_model_len (16384, as the 310P warning says).
    result = S.size_deployment(config(model), {'quantization': description(quant)},
                               {'tensor_parallel_size': tp, 'max_model_len': 16384, 'dtype': 'float16'},
                               devices(('300i_duo', 1, tp)))
    assert result['verdict'] == 'fits'
