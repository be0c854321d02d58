# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Whether a model fits the NPUs a serving layout gives it, before anything starts: what vLLM / vllm-ascend put on each
NPU (the rules are those of the project's ``reference/sizing.md``), computed from the model directory's
``config.json``, its weights' size and the quantization it declares, against each NPU's memory.

The parts, each usable on its own:

* ``model_shape(config, warn)``: the fields of a Hugging Face ``config.json`` (or DeepSeek's own inference config)
  the sizing needs - DeepSeek V2/V3/R1/V3.2 (MLA, routed and shared experts, dense first layers, MTP layers, the V3.2
  indexer), Qwen2/Qwen3 MoE, Mixtral, Llama/Qwen dense with GQA, nested under ``text_config`` or not - each one
  type-checked: a missing or wrong-typed field is a warning and an unknown, never a traceback.
* ``parameter_counts(shape)``: parameters by part (embeddings, head, attention, dense MLP, routed and shared experts,
  router, norms), for the main model and for its MTP layers apart.
* ``quantization_scheme(config, description, dtype, quantization, warn)``: bytes per parameter of each part, from the
  msModelSlim description (``_model_format.describe``'s, or the raw ``quant_model_description*.json``) or
  ``config.json``'s ``quantization_config`` / ``torch_dtype``.
* ``weights_on_disk(weights, warn)``: the weights' total from what the model directory says - the safetensors index's
  ``metadata.total_size``, else the weight files' sizes, else the manifest's; ``read_model_weights(path, warn)`` reads
  those from a directory on this host (the one node reader here).
* ``kv_bytes_per_token(shape, tensor_parallel_size, kv_bytes, mtp_layers, decode_context_parallel_size)`` and
  ``max_positions(config, warn)``.
* ``devices_for_product(product, nodes, count)``, ``devices_from_hbm_mb(hbm_mb, count, nodes, family)``,
  ``devices_from_npu_smi(chips, nodes, warn)``: the NPUs, from the product when planning a fresh host, or from
  npu-smi's HBM (MB) on a real one.
* ``size_deployment(config, weights, layout, devices)``: the verdict, and ``smallest_layout(...)`` the suggestion.

The verdict (``size_deployment``'s ``verdict``):

* ``refused``: vLLM cannot serve this layout: a structural check fails (the attention heads, the key/value heads or
  the routed experts do not divide over the parallel sizes, max_model_len is above the model's positions, the layout
  asks for more NPUs than there are), or the weights plus the KV cache of ONE sequence of max_model_len tokens do not
  fit what vLLM may use of one NPU (vLLM refuses to start when its KV cache cannot hold one full-length sequence, and
  fails to load weights that do not fit; on 310P vllm-ascend's [max_model_len, max_model_len] attention mask counts
  too). ``problems`` says why, each naming the variable to change, and ``suggestion`` (for a memory refusal) the
  smallest layout that fits. A wrong layout value (a TP of "4") is refused too, naming it.
* ``close``: the weights, that KV cache and the reserve for activations and buffers (``reserve_bytes``) need more
  than ``1 - CLOSE_MARGIN`` of the budget - or only the reserve, which is an estimate, tips it over: it may start or
  may not; a warning says how close, in % of the budget.
* ``fits``: all of it is within ``1 - CLOSE_MARGIN`` of the budget. It "may fit", never "will fit": the estimate
  does not see every buffer.
* ``unknown``: nothing is refused, but a check could not be made (a config.json field missing or of the wrong type,
  no weight size nor quantization to estimate it from, the NPUs' memory unknown); the warnings ("not checked: ...")
  say which. Never a silent pass.

The budget of one NPU is vllm-ascend's ``total_memory x gpu_memory_utilization`` (``vllm_ascend/worker/worker.py``),
with a "64 GB" device giving 60.96 GiB of total memory (sizing.md: real out-of-memory logs) - npu-smi's HBM in MB
scaled by ``REAL_FRACTION``. The concurrency is reported, not required: when the KV cache left holds fewer sequences
of max_model_len tokens than max_num_seqs per data-parallel rank, a warning says so (vLLM queues or preempts the
rest; requests shorter than max_model_len fit more).

Standard library only, Python 3.9 and later.
"""

from __future__ import annotations

import math
import os
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _files
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_format import product_family
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._ranks import npus_for_ranks

GIB = 1024 ** 3
MIB = 1024 ** 2

# A "64 GB" 910B reports 60.96 GiB of total capacity to torch_npu (sizing.md; e.g. vllm-project/vllm-ascend#1670:
# "NPU 0; 60.96 GiB total capacity") while npu-smi shows it with 65536 MB of HBM: what vLLM can budget is that
# fraction of npu-smi's figure. Applied to every product (the 32 GB parts, A3 dies, 950DT and 310P not measured):
# for 310P, whose npu-smi total (43757 MB of a 48 GB chip) already leaves the driver's share out, that is cautious.
REAL_FRACTION = 60.96 / 64
# vLLM's defaults when the service does not set them: --gpu-memory-utilization 0.9, --max-num-seqs 256 (EngineArgs'
# default for the OpenAI server on most platforms).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
DEFAULT_MAX_NUM_SEQS = 256
# What one NPU needs beyond weights and KV cache, per instance: torch's peak activation memory during vLLM's profile
# run and non-torch memory, for one NPU 1 GiB (vllm-project/vllm-ascend#9372: Qwen3-14B, 27.54 GiB of weights on a
# 32 GB vNPU at 0.9, left "Available KV cache memory: -0.87 GiB", i.e. about 0.8 GiB of activations and non-torch
# memory beyond the weights, in eager mode with max_model_len 4096), plus 1 GiB of HCCL buffers when the instance
# spans NPUs (vllm-ascend's recipes set HCCL_BUFFSIZE 200 to 1024 MB per communicator; TP, DP, EP and the world
# group each have one; graph capture adds more). A floor, not a measurement: sizing.md's "a plan that counts only
# weights and KV says may fit, never will fit".
RESERVE_BYTES = 1 * GIB
COLLECTIVE_RESERVE_BYTES = 1 * GIB
# Above this fraction of the budget the verdict is "close", not "fits".
CLOSE_MARGIN = 0.10
# msModelSlim's int8 weights carry per-output-channel scales and offsets (two float32 per row): at most 8 bytes per
# row of DeepSeek's shortest rows (q_b_proj, 1536 inputs), 0.52 %; 4-bit weights a float32 scale per group of 256
# (W4A8's "group_size": 256, vllm-ascend#2296), 1/64 byte per parameter.
SCALE_ALLOWANCE = 0.005
GROUP_SCALE_BYTES = 1 / 64
# Weights from the files that differ from the configuration's estimate by more than this are worth a warning.
DISAGREEMENT = 0.20

# Field bounds: a value outside them is a warning and an unknown (and keeps every product of fields a float).
MAX_FIELD = 2 ** 32
MAX_FACTOR = 10 ** 6
MAX_BYTES = 2 ** 60
MAX_INDEX_BYTES = 64 * MIB
# A model directory holds tens to a few hundred files; read_model_weights looks at no more entries than this (a
# directory of millions, on NFS, would take minutes to list): past it the files' sizes are not used.
MAX_ENTRIES = 100000

# The NPUs of each product, one "device" as vLLM ranks count it (an A3 die, a 310P chip) with its HBM as npu-smi
# shows it (MB), and the chip family of _model_format.product_family.
PRODUCTS = {
    # Atlas 800I A2: 8 x 64 GB (sizing.md; npu-smi 910B3 HBM 65536 MB, ascend-samples
    # npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt).
    'a2': {'name': 'Atlas 800I A2 (8 x 64 GB)', 'count': 8, 'hbm_mb': 65536, 'family': '910B'},
    # A2 with 32 GB 910B parts (sizing.md "some 910B parts have 32 GB"; npu-smi 910B4 HBM 32768 MB, ascend-samples
    # npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt).
    'a2_32g': {'name': 'Atlas 800I A2 (8 x 32 GB)', 'count': 8, 'hbm_mb': 32768, 'family': '910B'},
    # Atlas 800I A3: 8 NPUs of two dies, 16 devices of 64 GB (sizing.md; npu-smi "Ascend910" chips of 65536 MB,
    # ascend-samples npu-smi-info_A3-Ascend910_24.1.rc3.7_16chip_noproc.txt).
    'a3': {'name': 'Atlas 800I A3 (16 x 64 GB)', 'count': 16, 'hbm_mb': 65536, 'family': '910_93'},
    # Ascend 950DT: 8 x 96 GB (vllm-ascend main docs/source/tutorials/models/DeepSeek-V3.1.md:1182, "96G x 8 NPUs";
    # no npu-smi sample of a 950DT: 96 x 1024 MB assumed).
    '950dt': {'name': 'Ascend 950DT (8 x 96 GB)', 'count': 8, 'hbm_mb': 98304, 'family': '950'},
    # Atlas 300I Duo: one card, two 310P3 chips (sizing.md), which npu-smi shows with 44216 and 43757 MB of memory
    # each (no HBM column; ascend-samples npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt): the smaller one.
    # 310P parts with less memory exist (ascend-samples' HAMi vNPU note: a 310P3 of "physical 21525" MB): a card
    # that is not this one is read from npu-smi (devices_from_npu_smi).
    '300i_duo': {'name': 'Atlas 300I Duo (2 x 310P3 chips)', 'count': 2, 'hbm_mb': 43757, 'family': '310P'},
}
# The hardware smallest_layout tries, smallest first (by total memory, then by nodes).
MULTINODE = ': put them in group vllm_clusters and run playbooks/multinode.yml (docs/multinode.md)'
HARDWARE_LADDER = (
    ('a2', 1, 'one A2', ''),
    ('950dt', 1, 'one 950DT', ''),
    ('a3', 1, 'one A3', ''),
    ('a2', 2, 'two A2 nodes', MULTINODE),
    ('a3', 2, 'two A3 nodes', MULTINODE),
    ('a2', 4, 'four A2 nodes', MULTINODE),
)
# The tensor-parallel sizes a suggestion tries.
TP_SIZES = (1, 2, 4, 8, 16, 32)

# The parts a model's parameters are counted in, by how vLLM places them on the TP x DP ranks (sizing.md):
# split by TP: embed, head (by vocabulary), attn (q, o; MLA's q_b_proj and o_proj), mla_kv_b (MLA's kv_b_proj, kept
# apart since msModelSlim keeps it in bf16), dense_mlp, shared_experts; attn_kv: GQA's k and v, whose heads are
# replicated, never split, when there are fewer than TP ranks; replicated on every rank: attn_replicated (MLA's
# q_a_proj and kv_a_proj_with_mqa, vLLM ReplicatedLinear; V3.2's indexer), router, norms, mtp_proj (the MTP layer's
# eh_proj); routed_experts: spread over all TP x DP ranks (with or without expert parallel).
PARTS = ('embed', 'head', 'attn', 'attn_kv', 'attn_replicated', 'mla_kv_b', 'dense_mlp', 'shared_experts',
         'routed_experts', 'router', 'norms', 'mtp_proj')
BY_TP = ('embed', 'head', 'attn', 'mla_kv_b', 'dense_mlp', 'shared_experts')
REPLICATED = ('attn_replicated', 'router', 'norms', 'mtp_proj')
# What msModelSlim quantizes (sizing.md: it keeps the embeddings, the output head, the norms, the MoE router gate
# and MLA's kv_b_proj in bf16); what other methods (fp8, compressed-tensors, GPTQ/AWQ) quantize: the linear layers
# but the router.
ASCEND_QUANTIZED = ('attn', 'attn_kv', 'attn_replicated', 'dense_mlp', 'shared_experts', 'routed_experts')
LINEAR_QUANTIZED = ASCEND_QUANTIZED + ('mla_kv_b',)
MLP_PARTS = ('dense_mlp', 'shared_experts', 'routed_experts')

# DeepSeek's own inference config (deepseek-ai/DeepSeek-V3 inference/configs/*.json) in Hugging Face's names.
INFERENCE_KEYS = (('dim', 'hidden_size'), ('inter_dim', 'intermediate_size'), ('moe_inter_dim', 'moe_intermediate_size'),
                  ('n_layers', 'num_hidden_layers'), ('n_dense_layers', 'first_k_dense_replace'),
                  ('n_heads', 'num_attention_heads'), ('n_routed_experts', 'n_routed_experts'),
                  ('n_shared_experts', 'n_shared_experts'), ('n_activated_experts', 'num_experts_per_tok'),
                  ('q_lora_rank', 'q_lora_rank'), ('kv_lora_rank', 'kv_lora_rank'),
                  ('qk_nope_head_dim', 'qk_nope_head_dim'), ('qk_rope_head_dim', 'qk_rope_head_dim'),
                  ('v_head_dim', 'v_head_dim'), ('vocab_size', 'vocab_size'))
# The keys vLLM takes the model's positions from, the smallest found (vllm/config/model.py, derived_max_model_len).
POSITION_KEYS = ('max_position_embeddings', 'n_positions', 'max_seq_len', 'seq_length', 'max_sequence_length',
                 'max_seq_length', 'seq_len')
# RoPE types whose factor vLLM does not apply to the positions (same function).
UNSCALED_ROPE = ('su', 'longrope', 'llama3')
# The layer-type keys of a nested rope_parameters (Transformers v5).
ROPE_LAYER_TYPES = ('full_attention', 'sliding_attention', 'chunked_attention', 'linear_attention',
                    'compressed_sparse_attention', 'heavily_compressed_attention')

FLOAT32_DTYPES = ('float32', 'float')
KV_DTYPE_BYTES = {'auto': None, 'bfloat16': 2, 'float16': 2, 'half': 2, 'float32': 4, 'float': 4, 'fp8': 1,
                  'fp8_e4m3': 1, 'fp8_e5m2': 1, 'fp8_inc': 1, 'fp8_ds_mla': 1, 'int8': 1}
HF_FP8_METHODS = ('fp8', 'fbgemm_fp8', 'ptpc_fp8', 'modelopt', 'fp_quant')
HF_BITS_METHODS = ('gptq', 'awq', 'gptq_marlin', 'awq_marlin', 'auto-round', 'auto_round', 'gptq_bitblas',
                   'awq_triton', 'moe_wna16', 'inc')
_QUANT_TYPE = re.compile(r'[A-Z0-9_]{1,64}\Z')
_WEIGHT_BITS = re.compile(r'W(\d{1,2})')


# ----------------------------------------------------------------------------------------------------- helpers

def _note(warn, message):
    if warn is not None:
        warn(message)


def _show(value, limit=60):
    if _is_int(value) and value.bit_length() > 100:
        return 'a %d-bit number' % value.bit_length()
    try:
        text = repr(value)
    except ValueError:                                      # an integer too long for Python to print
        return 'a JSON %s' % _files.json_type(value)
    return text if len(text) <= limit else text[:limit] + '...'


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and abs(value) <= MAX_BYTES)


def gib(value):
    """``value`` bytes as GiB with one decimal, for messages."""
    return '%.1f GiB' % (value / GIB)


def _field(config, key, warn, missing, default=None, minimum=1, required=True, where='config.json'):
    """The whole number ``config[key]`` (``minimum`` to MAX_FIELD). Absent or null: ``default`` when one is given or
    the field is not ``required``, else None with ``key`` added to ``missing`` and a warning; of another type or out
    of range: None, a warning and ``missing``."""
    value = config.get(key)
    if value is None:
        if default is None and required:
            missing.append(key)
            _note(warn, '%s has no %s: the sizing cannot use it' % (where, key))
        return default
    if not _is_int(value) or not minimum <= value <= MAX_FIELD:
        missing.append(key)
        _note(warn, '%s: %s must be a whole number from %d to %d; got %s' % (where, key, minimum, MAX_FIELD,
                                                                             _show(value)))
        return None
    return value


# ------------------------------------------------------------------------------------------------ the model's shape

def from_deepseek_inference_config(config):
    """DeepSeek's own inference config (``dim``, ``n_layers``, ``n_heads`` ...) in Hugging Face's names; its
    ``"dtype": "fp8"`` as an fp8 ``quantization_config``. It states no positions and no MTP layers."""
    translated = {'model_type': 'deepseek_v3', 'architectures': ['DeepseekV3ForCausalLM'], 'torch_dtype': 'bfloat16',
                  'first_k_dense_replace': 0}
    for theirs, ours in INFERENCE_KEYS:
        if theirs in config:
            translated[ours] = config[theirs]
    if config.get('dtype') == 'fp8':
        translated['quantization_config'] = {'quant_method': 'fp8'}
    return translated


def is_deepseek_inference_config(config):
    return isinstance(config, dict) and 'dim' in config and 'n_layers' in config and 'hidden_size' not in config


def text_config(config, warn=None):
    """The part of ``config`` that describes the language model: its ``text_config`` when it has one that names the
    attention heads (vLLM's get_hf_text_config), else itself; a DeepSeek inference config translated."""
    if not isinstance(config, dict):
        return None
    if is_deepseek_inference_config(config):
        _note(warn, 'config.json is in DeepSeek\'s inference format (dim, n_layers, ...), not Hugging Face\'s: it '
                    'states no positions (max_position_embeddings) nor MTP layers')
        return from_deepseek_inference_config(config)
    nested = config.get('text_config')
    if nested is not None and not isinstance(nested, dict):
        _note(warn, 'config.json: text_config must be an object; got %s' % _show(nested))
    elif isinstance(nested, dict) and 'num_attention_heads' in nested:
        merged = dict((key, value) for key, value in config.items() if key != 'text_config')
        merged.update(nested)
        return merged
    return config


def _kind(config):
    """'mla' (DeepSeek V2/V3/R1/V3.2, or any config with an MLA latent), else 'gqa'."""
    model_type = config.get('model_type')
    if 'kv_lora_rank' in config or (isinstance(model_type, str) and model_type.startswith('deepseek_v')):
        return 'mla'
    return 'gqa'


def _experts(config, shape, warn, missing):
    """The MoE fields into ``shape``: routed experts, their size, shared experts, and which layers are MoE."""
    layers = shape['num_hidden_layers']
    if 'n_routed_experts' in config and config.get('n_routed_experts') is not None:     # DeepSeek
        shape['routed_experts'] = _field(config, 'n_routed_experts', warn, missing)
        shape['moe_intermediate_size'] = _field(config, 'moe_intermediate_size', warn, missing)
        shape['shared_experts'] = _field(config, 'n_shared_experts', warn, missing, default=0, minimum=0)
        first = _field(config, 'first_k_dense_replace', warn, missing, default=0, minimum=0)
        freq = _field(config, 'moe_layer_freq', warn, missing, default=1)
        if layers is not None and first is not None and freq is not None:
            # Layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0 (DeepseekV2DecoderLayer).
            start = min(first, layers)
            shape['moe_layers'] = (layers - 1) // freq - (start - 1) // freq if layers > start else 0
        shape['shared_expert_intermediate_size'] = ((shape['shared_experts'] or 0) * shape['moe_intermediate_size']
                                                    if shape['moe_intermediate_size'] is not None
                                                    and shape['shared_experts'] is not None else None)
        shape['router_bias'] = config.get('topk_method') == 'noaux_tc'
        return
    key = next((key for key in ('num_experts', 'num_local_experts') if config.get(key) is not None), None)
    if key is None:
        return
    shape['routed_experts'] = _field(config, key, warn, missing, minimum=0)
    if not shape['routed_experts']:                                         # 0: a dense model
        shape['routed_experts'] = 0
        return
    if key == 'num_local_experts':                                                      # Mixtral: every layer MoE
        shape['moe_intermediate_size'] = _field(config, 'intermediate_size', warn, missing)
        shape['moe_layers'] = layers
        return
    shape['moe_intermediate_size'] = _field(config, 'moe_intermediate_size', warn, missing)
    step = _field(config, 'decoder_sparse_step', warn, missing, default=1)
    only = config.get('mlp_only_layers', [])
    if only is None:
        only = []
    if not isinstance(only, list) or not all(_is_int(layer) for layer in only):
        missing.append('mlp_only_layers')
        _note(warn, 'config.json: mlp_only_layers must be a list of layer numbers; got %s' % _show(only))
    elif layers is not None and step is not None:
        # Layer i is MoE when it is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0 (Qwen2/3 MoE).
        dense_listed = set(layer for layer in only if 0 <= layer < layers and (layer + 1) % step == 0)
        shape['moe_layers'] = layers // step - len(dense_listed)
    shared = _field(config, 'shared_expert_intermediate_size', warn, missing, default=0, minimum=0)
    shape['shared_expert_intermediate_size'] = shared
    shape['shared_expert_gate'] = bool(shared)


def model_shape(config, warn=None):
    """The fields of ``config`` (a parsed config.json) the sizing needs, every one type-checked. ``missing`` lists
    the fields that are needed and absent or wrong (each also a warning); ``complete`` is whether parameters and KV
    cache can be computed. None fields are unknown."""
    missing = []
    shape = {'kind': None, 'model_type': None, 'architecture': None, 'hidden_size': None, 'num_hidden_layers': None,
             'vocab_size': None, 'intermediate_size': None, 'num_attention_heads': None, 'num_key_value_heads': None,
             'head_dim': None, 'q_lora_rank': 0, 'kv_lora_rank': None, 'qk_nope_head_dim': None,
             'qk_rope_head_dim': None, 'v_head_dim': None, 'index_n_heads': 0, 'index_head_dim': 0,
             'routed_experts': 0, 'moe_intermediate_size': 0, 'shared_experts': 0, 'shared_expert_intermediate_size': 0,
             'shared_expert_gate': False, 'router_bias': False, 'moe_layers': 0, 'mtp_layers': 0,
             'tie_word_embeddings': False, 'qkv_bias': False, 'qk_norm': False, 'torch_dtype': None,
             'missing': missing, 'complete': False}
    nested = config.get('text_config') if isinstance(config, dict) else None
    if nested is not None and not isinstance(nested, dict):
        missing.append('text_config')
    config = text_config(config, warn)
    if config is None:
        missing.append('config.json')
        _note(warn, 'config.json is not a JSON object: the model\'s shape is unknown')
        return shape
    model_type = config.get('model_type')
    shape['model_type'] = model_type if isinstance(model_type, str) else None
    architectures = config.get('architectures')
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        shape['architecture'] = architectures[0]
    dtype = config.get('torch_dtype', config.get('dtype'))
    shape['torch_dtype'] = dtype if isinstance(dtype, str) else None
    shape['kind'] = _kind(config)
    for key in ('hidden_size', 'num_hidden_layers', 'vocab_size', 'num_attention_heads'):
        shape[key] = _field(config, key, warn, missing)
    tie = config.get('tie_word_embeddings', False)
    if not isinstance(tie, bool):
        missing.append('tie_word_embeddings')
        _note(warn, 'config.json: tie_word_embeddings must be true or false; got %s' % _show(tie))
    shape['tie_word_embeddings'] = tie is True
    heads = shape['num_attention_heads']
    if shape['kind'] == 'mla':
        shape['q_lora_rank'] = _field(config, 'q_lora_rank', warn, missing, default=0, minimum=0)
        for key in ('kv_lora_rank', 'qk_nope_head_dim', 'qk_rope_head_dim', 'v_head_dim'):
            shape[key] = _field(config, key, warn, missing)
        if 'index_head_dim' in config or 'index_n_heads' in config:                     # DeepSeek V3.2's indexer
            shape['index_head_dim'] = _field(config, 'index_head_dim', warn, missing)
            shape['index_n_heads'] = _field(config, 'index_n_heads', warn, missing)
        shape['mtp_layers'] = _field(config, 'num_nextn_predict_layers', warn, missing, default=0, minimum=0)
    else:
        # vLLM: num_key_value_heads defaults to num_attention_heads, head_dim to hidden_size // num_attention_heads.
        shape['num_key_value_heads'] = _field(config, 'num_key_value_heads', warn, missing, default=heads,
                                              required=heads is not None)
        head_dim = _field(config, 'head_dim', warn, missing, required=False)
        if head_dim is None and 'head_dim' not in missing and shape['hidden_size'] and heads:
            head_dim = shape['hidden_size'] // heads
        shape['head_dim'] = head_dim
        shape['qkv_bias'] = shape['model_type'] in ('qwen2', 'qwen2_moe') or config.get('attention_bias') is True
        shape['qk_norm'] = isinstance(shape['model_type'], str) and shape['model_type'].startswith('qwen3')
    _experts(config, shape, warn, missing)
    dense_layers = (shape['num_hidden_layers'] or 0) - (shape['moe_layers'] or 0)
    if dense_layers > 0 or not shape['routed_experts']:
        shape['intermediate_size'] = _field(config, 'intermediate_size', warn, missing)
    shape['dense_layers'] = dense_layers
    shape['complete'] = not missing and all(shape[key] is not None for key in (
        'hidden_size', 'num_hidden_layers', 'vocab_size', 'num_attention_heads'))
    return shape


# ------------------------------------------------------------------------------------------------------ parameters

def _attention(shape):
    """(parameters by part) of one decoder layer's attention and its two norms."""
    h, heads = shape['hidden_size'], shape['num_attention_heads']
    parts = dict.fromkeys(PARTS, 0)
    parts['norms'] = 2 * h                                                  # input and post-attention norms
    if shape['kind'] == 'mla':
        qr, kvr = shape['q_lora_rank'], shape['kv_lora_rank']
        nope, rope, v = shape['qk_nope_head_dim'], shape['qk_rope_head_dim'], shape['v_head_dim']
        if qr:
            parts['attn_replicated'] += h * qr                              # q_a_proj
            parts['norms'] += qr                                            # q_a_layernorm
            parts['attn'] += qr * heads * (nope + rope)                     # q_b_proj
        else:
            parts['attn'] += h * heads * (nope + rope)                      # q_proj (DeepSeek-V2-Lite)
        parts['attn_replicated'] += h * (kvr + rope)                        # kv_a_proj_with_mqa
        parts['norms'] += kvr                                               # kv_a_layernorm
        parts['mla_kv_b'] += kvr * heads * (nope + v)                       # kv_b_proj
        parts['attn'] += heads * v * h                                      # o_proj
        if shape['index_n_heads']:                                          # V3.2 indexer: wq_b, wk, k_norm, weights_proj
            ihd, inh = shape['index_head_dim'], shape['index_n_heads']
            parts['attn_replicated'] += (qr or h) * inh * ihd + h * ihd + h * inh
            parts['norms'] += 2 * ihd
        return parts
    kv, hd = shape['num_key_value_heads'], shape['head_dim']
    parts['attn'] += 2 * h * heads * hd                                     # q_proj, o_proj
    parts['attn_kv'] += 2 * h * kv * hd                                     # k_proj, v_proj
    if shape['qkv_bias']:
        parts['attn'] += heads * hd
        parts['attn_kv'] += 2 * kv * hd
    if shape['qk_norm']:
        parts['norms'] += 2 * hd
    return parts


def _moe(shape):
    """(parameters by part) of one MoE layer's MLP."""
    h, mi = shape['hidden_size'], shape['moe_intermediate_size']
    parts = dict.fromkeys(PARTS, 0)
    parts['routed_experts'] = shape['routed_experts'] * 3 * h * mi          # gate, up, down per expert
    parts['shared_experts'] = 3 * h * (shape['shared_expert_intermediate_size'] or 0)
    parts['router'] = shape['routed_experts'] * h + (shape['routed_experts'] if shape['router_bias'] else 0)
    if shape['shared_expert_gate']:
        parts['router'] += h
    return parts


def _add(total, parts, times=1):
    for part, count in parts.items():
        total[part] += count * times


def parameter_counts(shape):
    """Parameters by part: ``main`` (the model vLLM always loads) and ``mtp`` (DeepSeek's MTP layers as the
    checkpoint holds them: each a MoE decoder layer, its enorm, hnorm, eh_proj and shared head norm, and its own copy
    of the embeddings and output head), with their totals ``main_total`` and ``mtp_total``; None when the shape is
    incomplete."""
    if shape is None or not shape.get('complete'):
        return None
    h, layers, vocab = shape['hidden_size'], shape['num_hidden_layers'], shape['vocab_size']
    main = dict.fromkeys(PARTS, 0)
    main['embed'] = vocab * h
    main['head'] = 0 if shape['tie_word_embeddings'] else vocab * h
    main['norms'] = h                                                       # the final norm
    attention = _attention(shape)
    _add(main, attention, layers)
    if shape['dense_layers'] > 0:
        main['dense_mlp'] += shape['dense_layers'] * 3 * h * shape['intermediate_size']
    moe = _moe(shape) if shape['routed_experts'] else None
    if moe is not None:
        _add(main, moe, shape['moe_layers'])
    mtp = dict.fromkeys(PARTS, 0)
    for _layer in range(min(shape['mtp_layers'], 64)):
        _add(mtp, attention)
        if moe is not None:
            _add(mtp, moe)
        else:
            mtp['dense_mlp'] += 3 * h * (shape['intermediate_size'] or 0)
        mtp['norms'] += 3 * h
        mtp['mtp_proj'] += 2 * h * h
        mtp['embed'] += vocab * h
        mtp['head'] += vocab * h
    return {'main': main, 'mtp': mtp, 'main_total': sum(main.values()), 'mtp_total': sum(mtp.values())}


# ---------------------------------------------------------------------------------------------------- quantization

def _float_bytes(dtype):
    """Bytes of an unquantized parameter as vLLM serves it: 4 with --dtype float32, else 2 (vLLM's ``auto`` serves a
    float32 checkpoint in 16 bits)."""
    return 4 if dtype in FLOAT32_DTYPES else 2


def _scheme(name, float_bytes, quantized=(), bytes_per_param=None):
    table = dict.fromkeys(PARTS, float(float_bytes))
    for part in quantized:
        table[part] = bytes_per_param
    return {'name': name, 'bytes': table, 'known': True}


def _unknown_scheme(name):
    return {'name': name, 'bytes': None, 'known': False}


def _ascend_types(description):
    """(model_quant_type, set of quant types) of a ``_model_format.describe`` result or a raw msModelSlim
    description."""
    if 'format' in description:
        model_type = description.get('model_quant_type')
        types = description.get('quant_types')
        types = set(t for t in types if isinstance(t, str)) if isinstance(types, list) else set()
    else:
        model_type = description.get('model_quant_type')
        types = set(value for key, value in description.items()
                    if isinstance(value, str) and key != 'model_quant_type' and _QUANT_TYPE.match(value))
    model_type = model_type if isinstance(model_type, str) and _QUANT_TYPE.match(model_type) else None
    if model_type:
        types.add(model_type)
    types.discard('FLOAT')
    return model_type, types


def ascend_scheme(model_type, types, float_bytes=2, warn=None):
    """Bytes per parameter of an msModelSlim checkpoint: the quantized parts (ASCEND_QUANTIZED) in int8 with their
    per-channel scales; W4A8 (MindIE's DeepSeek W4A8: "routed experts W4A8 dynamic, MLA and shared experts W8A8, the
    first three MLPs W8A8 dynamic") puts the routed experts in packed int4 with group scales; W4A4 the MLPs; W4A16
    every quantized part. The rest stays in ``float_bytes``."""
    q8 = 1.0 * (1 + SCALE_ALLOWANCE)
    q4 = 0.5 + GROUP_SCALE_BYTES
    name = model_type or ', '.join(sorted(types)) or 'W8A8'
    if not types:
        return _scheme('float', float_bytes)
    if types <= {'W16A16S'}:
        return _scheme(name, float_bytes)
    scheme = _scheme(name, float_bytes, ASCEND_QUANTIZED, q8)
    table = scheme['bytes']
    bits = set(int(match.group(1)) for match in (_WEIGHT_BITS.match(t) for t in types) if match)
    if not bits and not any(t.startswith('WFP8') for t in types):
        _note(warn, 'the quantization types %s name no weight width: sized as int8' % ', '.join(sorted(types)))
    if model_type and model_type.startswith('W4A16'):
        for part in ASCEND_QUANTIZED:
            table[part] = q4
    if any(t.startswith('W4A4') for t in types):
        for part in MLP_PARTS:
            table[part] = q4
    if any(t.startswith('W4A8') for t in types):
        table['routed_experts'] = q4
    return scheme


def _hf_bits(quant, warn):
    """The weight bits a Hugging Face quantization_config declares (compressed-tensors' config_groups, GPTQ/AWQ's
    bits or w_bit), None when it declares none."""
    method = quant.get('quant_method')
    if method == 'compressed-tensors':
        groups = quant.get('config_groups')
        found = []
        if isinstance(groups, dict):
            for group in groups.values():
                weights = group.get('weights') if isinstance(group, dict) else None
                bits = weights.get('num_bits') if isinstance(weights, dict) else None
                if _is_int(bits) and 1 <= bits <= 32:
                    found.append(bits)
        return max(found) if found else None
    for key in ('bits', 'w_bit', 'weight_bits'):
        bits = quant.get(key)
        if _is_int(bits) and 1 <= bits <= 32:
            return bits
    return None


def hf_scheme(quant, float_bytes=2, warn=None):
    """Bytes per parameter from a config.json quantization_config (fp8 methods, compressed-tensors, GPTQ/AWQ-like
    methods with a bit width, bitsandbytes); an unknown method is a warning and an unknown scheme."""
    method = quant.get('quant_method')
    if not isinstance(method, str):
        _note(warn, 'config.json: quantization_config names no quant_method: the weights\' size per parameter is '
                    'unknown')
        return _unknown_scheme('unknown')
    if method in HF_FP8_METHODS:
        return _scheme(method, float_bytes, LINEAR_QUANTIZED, 1.0)
    if method == 'bitsandbytes':
        return _scheme(method, float_bytes, LINEAR_QUANTIZED, 0.5 + GROUP_SCALE_BYTES
                       if quant.get('load_in_4bit') is True else 1.0)
    if method == 'compressed-tensors' or method in HF_BITS_METHODS:
        bits = _hf_bits(quant, warn)
        if bits is None:
            _note(warn, 'config.json: quantization_config (%s) states no weight bit width: the weights\' size per '
                        'parameter is unknown' % method)
            return _unknown_scheme(method)
        per_param = bits / 8 + (GROUP_SCALE_BYTES if bits < 8 else 0)
        return _scheme('%s %d-bit' % (method, bits), float_bytes, LINEAR_QUANTIZED, min(per_param, float(float_bytes)))
    _note(warn, 'config.json: quant_method %s is not one the sizing knows: the weights\' size per parameter is '
                'unknown' % _show(method, 40))
    return _unknown_scheme(method)


def quantization_scheme(config, description=None, dtype=None, quantization=None, warn=None):
    """Bytes per parameter of each part (``bytes``: part -> bytes, None when ``known`` is false) and the scheme's
    ``name``, from what the model directory declares: ``description`` (``_model_format.describe``'s result, or a raw
    msModelSlim ``quant_model_description*.json`` document) first, else config.json's ``quantization_config`` (or
    MindIE's description inside it), else its ``torch_dtype`` (16 bits; 32 only with ``dtype`` float32).
    ``quantization`` is the service's --quantization: ascend without a description the sizing can read is sized
    as W8A8, with a warning."""
    config = text_config(config) if isinstance(config, dict) else {}
    float_bytes = _float_bytes(dtype)
    if isinstance(description, dict):
        fmt = description.get('format')
        if fmt is None or fmt == 'ascend':
            model_type, types = _ascend_types(description)
            if types or fmt == 'ascend':
                if not types:
                    _note(warn, 'the msModelSlim description names no quant type: sized as W8A8')
                    types = {'W8A8'}
                return ascend_scheme(model_type, types, float_bytes, warn)
        elif fmt == 'float':
            return _scheme('float', float_bytes)
        elif fmt == 'unknown':
            _note(warn, 'the model directory\'s format is unknown (_model_format): the weights\' size per parameter '
                        'is unknown')
            return _unknown_scheme('unknown')
    elif description is not None:
        _note(warn, 'the quantization description must be an object; got %s' % _show(description))
    quant = config.get('quantization_config', config.get('compression_config'))
    if quant is not None and not isinstance(quant, dict):
        _note(warn, 'config.json: quantization_config must be an object; got %s' % _show(quant))
        return _unknown_scheme('unknown')
    if isinstance(quant, dict) and quant:
        if 'quant_method' not in quant and ('model_quant_type' in quant or any(
                isinstance(value, str) and _QUANT_TYPE.match(value) for value in quant.values())):
            model_type, types = _ascend_types(quant)                        # MindIE's description in config.json
            return ascend_scheme(model_type, types or {'W8A8'}, float_bytes, warn)
        return hf_scheme(quant, float_bytes, warn)
    if quantization == 'ascend':
        _note(warn, 'vllm_service_quantization is ascend but the model directory\'s msModelSlim description was not '
                    'read: sized as W8A8')
        return ascend_scheme('W8A8', {'W8A8'}, float_bytes, warn)
    return _scheme('float', float_bytes)


def part_bytes(counts, scheme):
    """Bytes of each part of ``counts`` (parameters by part) under ``scheme``."""
    return dict((part, counts[part] * scheme['bytes'][part]) for part in PARTS)


def w4a8_scheme(float_bytes=2):
    """The W4A8 variant of a model (msModelSlim, MindIE's DeepSeek W4A8 split): what smallest_layout proposes."""
    return ascend_scheme('W4A8_DYNAMIC', {'W8A8', 'W8A8_DYNAMIC', 'W4A8_DYNAMIC'}, float_bytes)


def w8a8_scheme(float_bytes=2):
    return ascend_scheme('W8A8_DYNAMIC', {'W8A8_DYNAMIC'}, float_bytes)


# --------------------------------------------------------------------------------------------- the weights on disk

def index_total_size(document, warn=None, name='model.safetensors.index.json'):
    """The ``metadata.total_size`` of a parsed safetensors index (bytes of all tensors), None - with a warning - when
    absent, not a whole number, or 0 (a stub index)."""
    metadata = document.get('metadata') if isinstance(document, dict) else None
    total = metadata.get('total_size') if isinstance(metadata, dict) else None
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    if not _is_int(total) or not 0 < total <= MAX_BYTES:
        _note(warn, '%s has no usable metadata.total_size (%s): not used' % (name, _show(total)))
        return None
    return total


def weight_file_bytes(sizes):
    """The bytes of a model's weight files in ``sizes`` (file name -> bytes): the ``*.safetensors`` files, or the
    ``*.bin`` / ``*.pt`` files when there is no safetensors file; None when there are none."""
    safetensors = [size for name, size in sizes.items() if name.endswith('.safetensors') and _is_int(size)]
    chosen = safetensors or [size for name, size in sizes.items()
                             if name.endswith(('.bin', '.pt')) and _is_int(size)]
    return sum(chosen) if chosen else None


def weights_on_disk(weights, warn=None):
    """(bytes, source) of the weights from ``weights``: ``index_total_size`` (the safetensors index's total_size:
    index_total_size / read_model_weights), else ``file_bytes`` (the weight files' sizes: weight_file_bytes /
    read_model_weights), else ``manifest_bytes`` (the bytes of the files the model's SHA256SUMS lists, as
    _model_manifest's verify and create results give them in ``bytes``: the tokenizer and configuration too, a few
    MB more); (None, None) when none is a usable number (a wrong one is a warning)."""
    if not isinstance(weights, dict):
        if weights is not None:
            _note(warn, 'the weights\' description must be an object; got %s' % _show(weights))
        return None, None
    for key, source in (('index_total_size', 'the safetensors index'), ('file_bytes', 'the weight files'),
                        ('manifest_bytes', 'the model manifest')):
        value = weights.get(key)
        if value is None:
            continue
        if not _is_int(value) or not 0 < value <= MAX_BYTES:
            _note(warn, 'the weights\' %s must be a whole number of bytes above 0; got %s: not used'
                        % (key, _show(value)))
            continue
        return value, source
    return None, None


def read_model_weights(path, warn=None):
    """What the model directory ``path`` on this host says of its weights' size: ``index_total_size`` from its one
    ``*.safetensors.index.json`` (read the collection's one safe way, at most MAX_INDEX_BYTES; several indexes are a
    warning and none is used) and ``file_bytes``, the sizes of its weight files (stat only, no file opened). The
    directory itself is listed once, not its subdirectories, and at most MAX_ENTRIES of its entries."""
    weights = {'index_total_size': None, 'file_bytes': None}
    entries = []
    try:
        with os.scandir(path) as listing:
            for entry in listing:
                if len(entries) >= MAX_ENTRIES:
                    _note(warn, 'the model directory %s has more than %d entries: its weight files\' sizes are not '
                                'used' % (path, MAX_ENTRIES))
                    return weights
                entries.append(entry)
    except OSError as error:
        _note(warn, 'the model directory %s cannot be listed: %s' % (path, error.strerror or error))
        return weights
    entries.sort(key=lambda entry: entry.name)
    sizes = {}
    indexes = []
    for entry in entries:
        try:
            if not entry.is_file():
                continue
            if entry.name.endswith('.safetensors.index.json'):
                indexes.append(entry.path)
            elif entry.name.endswith(('.safetensors', '.bin', '.pt')):
                sizes[entry.name] = entry.stat().st_size
        except OSError as error:
            _note(warn, '%s cannot be read: %s' % (entry.path, error.strerror or error))
    weights['file_bytes'] = weight_file_bytes(sizes)
    if len(indexes) > 1:
        _note(warn, '%s has several safetensors indexes (%s): their totals are not used'
                    % (path, ', '.join(os.path.basename(index) for index in indexes)))
    elif indexes:
        try:
            document = _files.read_json_file(indexes[0], MAX_INDEX_BYTES, 'a safetensors index', dict)
        except _files.UnreadableFile as error:
            _note(warn, str(error))
        else:
            weights['index_total_size'] = index_total_size(document, warn, os.path.basename(indexes[0]))
    return weights


# ----------------------------------------------------------------------------------------------- positions and KV

def _rope_sets(config, warn):
    """(the RoPE parameter sets vLLM reads - rope_parameters, else rope_scaling; one per layer type when nested -,
    the key they came from); ([], None) without scaling; None when malformed (with a warning)."""
    for key in ('rope_parameters', 'rope_scaling'):
        rope = config.get(key)
        if rope is None or rope == {}:
            continue
        if not isinstance(rope, dict):
            _note(warn, 'config.json: %s must be an object or null; got %s' % (key, _show(rope)))
            return None
        if set(rope) <= set(ROPE_LAYER_TYPES):
            sets = list(rope.values())
        else:
            sets = [rope]
        if not all(isinstance(item, dict) for item in sets):
            _note(warn, 'config.json: %s must hold objects; got %s' % (key, _show(rope)))
            return None
        return sets, key
    return [], None


def max_positions(config, warn=None):
    """(the longest max_model_len vLLM accepts for ``config`` - its smallest position key, scaled by a RoPE factor
    the way vLLM's _get_and_verify_max_len does -, ``model_max_length`` when config.json sets it (vLLM accepts a
    max_model_len up to it), how it was derived); (None, None, why) when config.json does not say. The rules: the
    smallest of POSITION_KEYS; with rope_parameters (else rope_scaling) of a type other than su, longrope and llama3,
    times its factor (1 when absent or null), from original_max_position_embeddings for yarn; Gemma 3's positions are
    already scaled. Not read: tokenizer_config.json's model_max_length, which vLLM also takes (the smaller)."""
    config = text_config(config) if isinstance(config, dict) else None
    if config is None:
        return None, None, 'config.json is not an object'
    found = []
    for key in POSITION_KEYS:
        value = config.get(key)
        if value is None:
            continue
        if not _is_int(value) or not 1 <= value <= MAX_FIELD:
            _note(warn, 'config.json: %s must be a whole number from 1 to %d; got %s' % (key, MAX_FIELD, _show(value)))
            return None, None, '%s is not a whole number' % key
        found.append((value, key))
    if not found:
        _note(warn, 'config.json states none of %s: the longest max_model_len the model takes is unknown'
                    % ', '.join(POSITION_KEYS))
        return None, None, 'no positions in config.json'
    derived, key = min(found)
    how = '%s %d' % (key, derived)
    rope = _rope_sets(config, warn)
    if rope is None:
        return None, None, 'malformed RoPE scaling'
    sets, rope_key = rope
    model_type = config.get('model_type')
    if sets and not (isinstance(model_type, str) and 'gemma3' in model_type):
        factor = 1.0
        base = derived
        for rp in sets:
            rope_type = rp.get('rope_type', rp.get('type'))
            if not isinstance(rope_type, str):
                _note(warn, 'config.json: %s names no rope_type: the model\'s positions are unknown' % rope_key)
                return None, None, '%s without rope_type' % rope_key
            if rope_type in UNSCALED_ROPE:
                continue
            value = rp.get('factor', factor)
            if value is None:
                value = 1.0
            if not _is_number(value) or not 0 < value <= MAX_FACTOR:
                _note(warn, 'config.json: %s factor must be a number above 0; got %s' % (rope_key, _show(value)))
                return None, None, '%s factor is not a number' % rope_key
            factor = value
            if rope_type == 'yarn':
                original = rp.get('original_max_position_embeddings')
                if not _is_int(original) or not 1 <= original <= MAX_FIELD:
                    _note(warn, 'config.json: %s of type yarn needs original_max_position_embeddings (a whole '
                                'number); got %s' % (rope_key, _show(original)))
                    return None, None, 'yarn without original_max_position_embeddings'
                base = original
                how = '%s original_max_position_embeddings %d' % (rope_key, original)
        if factor != 1.0 or base != derived:
            derived = int(base * factor)
            how = '%s x factor %s = %d' % (how, _show(factor), derived)
    model_max_length = config.get('model_max_length')
    if not _is_int(model_max_length) or model_max_length < 1:
        model_max_length = None
    return derived, model_max_length, how


def kv_bytes_per_token(shape, tensor_parallel_size=1, kv_bytes=2, mtp_layers=0, decode_context_parallel_size=1):
    """Bytes of KV cache one token takes on each NPU (None when the shape does not say): MLA stores the whole
    compressed latent on every TP rank (vLLM counts MLA as one KV head), ``(kv_lora_rank + qk_rope_head_dim)`` per
    layer, plus V3.2's indexer key (``index_head_dim``); GQA/MHA ``2 x max(1, kv_heads // TP) x head_dim`` per layer
    (KV heads are replicated, never split, when fewer than TP). Loaded MTP layers add their layers; decode context
    parallelism divides it."""
    if shape is None or not shape.get('complete'):
        return None
    layers = shape['num_hidden_layers'] + (mtp_layers or 0)
    if shape['kind'] == 'mla':
        per_layer = shape['kv_lora_rank'] + shape['qk_rope_head_dim'] + (shape['index_head_dim'] or 0)
    else:
        if not shape['num_key_value_heads'] or not shape['head_dim']:
            return None
        per_layer = 2 * max(1, shape['num_key_value_heads'] // tensor_parallel_size) * shape['head_dim']
    total = per_layer * layers * kv_bytes
    return -(-total // max(1, decode_context_parallel_size))


# -------------------------------------------------------------------------------------------------------- devices

def devices_from_hbm_mb(hbm_mb, count, nodes=1, family=None, name=None, product=None):
    """The NPUs of a deployment: ``count`` devices a node (as vLLM ranks count them), ``nodes`` nodes, ``hbm_mb`` MB
    of memory each as npu-smi shows it (HBM, or the Memory column of a 310P); ``capacity`` is what torch sees of it
    (REAL_FRACTION), in bytes. ``problems`` says what is wrong with the inputs."""
    devices = {'count': count, 'nodes': nodes, 'hbm_mb': hbm_mb, 'family': family, 'product': product,
               'name': name or ('%s x %s NPUs of %s MB' % (nodes, count, hbm_mb)), 'capacity': None, 'problems': []}
    for key, value in (('count', count), ('nodes', nodes)):
        if not _is_int(value) or not 1 <= value <= 4096:
            devices['problems'].append('the NPUs\' %s must be a whole number from 1 to 4096; got %s' % (key, _show(value)))
    if not _is_number(hbm_mb) or not 0 < hbm_mb <= 16 * 1024 * 1024:
        devices['problems'].append('the NPUs\' memory must be a number of MB above 0; got %s' % _show(hbm_mb))
    if not devices['problems']:
        devices['capacity'] = int(hbm_mb * MIB * REAL_FRACTION)
    return devices


def devices_for_product(product, nodes=1, count=None):
    """The NPUs of ``nodes`` nodes of ``product`` (a PRODUCTS key), ``count`` devices a node (the product's when
    None: 8 for A2 and 950DT, 16 for A3, 2 for a 300I Duo card)."""
    spec = PRODUCTS.get(product) if isinstance(product, str) else None
    if spec is None:
        devices = devices_from_hbm_mb(None, count or 1, nodes)
        devices['problems'] = ['the product must be one of %s; got %s' % (', '.join(sorted(PRODUCTS)), _show(product))]
        return devices
    name = spec['name'] if count in (None, spec['count']) else '%s NPUs of an %s' % (count, spec['name'])
    return devices_from_hbm_mb(spec['hbm_mb'], spec['count'] if count is None else count, nodes, spec['family'],
                               name if nodes == 1 else '%s x %s' % (nodes, name), product)


def devices_from_npu_smi(chips, nodes=1, warn=None):
    """The NPUs of a host as npu-smi lists them (``chips``: _npu_smi's chips - those the service gets -, each with
    ``hbm_total_mb``, or ``memory_total_mb`` on a 310P, and ``name``): one device per chip, each with the smallest
    memory of them; the chip family as _model_format.product_family names it."""
    sizes = []
    for chip in chips if isinstance(chips, list) else ():
        if not isinstance(chip, dict):
            continue
        size = chip.get('hbm_total_mb')
        if not _is_number(size) or size <= 0:
            size = chip.get('memory_total_mb')
        if _is_number(size) and size > 0:
            sizes.append(size)
    family = product_family([chip for chip in chips if isinstance(chip, dict)]) if isinstance(chips, list) else None
    if not sizes:
        _note(warn, 'npu-smi shows no NPU memory (HBM-Usage or Memory-Usage): the NPUs\' memory is unknown')
        devices = devices_from_hbm_mb(None, max(1, len(chips) if isinstance(chips, list) else 1), nodes, family)
        return devices
    return devices_from_hbm_mb(min(sizes), len(sizes), nodes, family,
                               '%d x %d NPUs of %s MB (npu-smi)' % (nodes, len(sizes), min(sizes)))


# ----------------------------------------------------------------------------------------------------- the layout

def normalize_layout(layout, problems):
    """The serving layout with vLLM's defaults: ``layout`` holds vllm_service variables without their prefix -
    tensor_parallel_size, data_parallel_size, data_parallel_size_local, enable_expert_parallel, max_model_len,
    max_num_seqs, gpu_memory_utilization, dtype, quantization - and kv_cache_dtype, speculative_mtp (MTP layers
    loaded for speculative decoding), decode_context_parallel_size, hf_overrides (merged into config.json as vLLM
    does) and allow_long_max_model_len (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1). A wrong value is a problem naming it."""
    layout = layout if isinstance(layout, dict) else {}
    out = {}

    def whole(key, default, maximum=MAX_FIELD, nullable=False):
        value = layout.get(key)
        if value is None:
            out[key] = default
            return
        if not _is_int(value) or not 1 <= value <= maximum:
            problems.append('vllm_service_%s must be %sa whole number of 1 or more; got %s'
                            % (key, 'null or ' if nullable else '', _show(value)))
            out[key] = None
            return
        out[key] = value

    whole('tensor_parallel_size', 1, 4096)
    whole('data_parallel_size', 1, 4096)
    whole('data_parallel_size_local', None, 4096, True)
    whole('max_model_len', None, nullable=True)
    whole('max_num_seqs', DEFAULT_MAX_NUM_SEQS, nullable=True)
    whole('decode_context_parallel_size', 1, 4096)
    utilization = layout.get('gpu_memory_utilization')
    if utilization is None:
        out['gpu_memory_utilization'] = DEFAULT_GPU_MEMORY_UTILIZATION
    elif not _is_number(utilization) or not 0 < utilization <= 1:
        problems.append('vllm_service_gpu_memory_utilization must be null or a fraction above 0 and at most 1; got %s'
                        % _show(utilization))
        out['gpu_memory_utilization'] = None
    else:
        out['gpu_memory_utilization'] = float(utilization)
    for key in ('enable_expert_parallel', 'speculative_mtp', 'allow_long_max_model_len'):
        value = layout.get(key, False)
        if value is None:
            value = False
        if not isinstance(value, bool):
            problems.append('vllm_service_%s must be true or false; got %s' % (key, _show(value)))
            value = False
        out[key] = value
    for key, default in (('dtype', 'auto'), ('kv_cache_dtype', 'auto'), ('quantization', None)):
        value = layout.get(key, default)
        if value is None:
            value = default
        if value is not None and not isinstance(value, str):
            problems.append('vllm_service_%s must be a string; got %s' % (key, _show(value)))
            value = default
        out[key] = value
    if out['kv_cache_dtype'] not in KV_DTYPE_BYTES:
        problems.append('kv_cache_dtype must be one of %s; got %s' % (', '.join(KV_DTYPE_BYTES), _show(out['kv_cache_dtype'])))
        out['kv_cache_dtype'] = 'auto'
    overrides = layout.get('hf_overrides')
    if overrides is not None and not isinstance(overrides, dict):
        problems.append('hf_overrides (--hf-overrides) must be an object; got %s' % _show(overrides))
        overrides = None
    out['hf_overrides'] = overrides or {}
    return out


def _checked_devices(devices):
    """``devices`` when it is what devices_for_product and the others make, else NPUs of unknown memory."""
    if isinstance(devices, dict) and all(key in devices for key in ('count', 'nodes', 'capacity', 'problems')):
        return devices
    devices = devices_from_hbm_mb(None, 1)
    devices['problems'] = ['the NPUs are not described (devices_for_product, devices_from_hbm_mb or '
                           'devices_from_npu_smi make them)']
    return devices


def _with_overrides(config, overrides):
    """``config`` with vLLM's --hf-overrides merged in (into text_config when the model has one)."""
    if not overrides or not isinstance(config, dict):
        return config
    merged = dict(config)
    nested = merged.get('text_config')
    if isinstance(nested, dict) and 'num_attention_heads' in nested:
        nested = dict(nested)
        nested.update(overrides)
        merged['text_config'] = nested
    else:
        merged.update(overrides)
    return merged


# ------------------------------------------------------------------------------------------------- the arithmetic

def _routed_share(shape, tp, dp, ep):
    """The fraction of the routed experts one rank holds: whole experts, ceil(E / (TP x DP)) of E, with expert
    parallel; 1/(TP x DP) of every expert without (vLLM's FusedMoEParallelConfig flattens TP across DP)."""
    ranks = tp * dp
    experts = shape['routed_experts'] or 0
    if ep and experts:
        return -(-experts // ranks) / experts
    return 1 / ranks


def per_npu_weight_bytes(parts_main, parts_mtp, shape, tp, dp, ep, load_mtp=False, scale=1.0):
    """Bytes of weights on the fullest NPU of an instance of TP x DP ranks: ``parts_*`` are bytes by part
    (part_bytes), the MTP layers' only when ``load_mtp``; ``scale`` turns the estimate into the files' total."""
    kv_heads = shape.get('num_key_value_heads') or 1
    share = {'attn_kv': max(1, kv_heads // tp) / kv_heads, 'routed_experts': _routed_share(shape, tp, dp, ep)}
    for part in BY_TP:
        share[part] = 1 / tp
    for part in REPLICATED:
        share[part] = 1.0
    total = 0.0
    for parts in (parts_main, parts_mtp if load_mtp else None):
        if parts:
            total += sum(parts[part] * share[part] for part in PARTS)
    return int(total * scale)


def reserve_bytes(ranks):
    """What one NPU needs beyond weights and KV cache, estimated: RESERVE_BYTES, and COLLECTIVE_RESERVE_BYTES when
    the instance has more than one rank."""
    return RESERVE_BYTES + (COLLECTIVE_RESERVE_BYTES if ranks > 1 else 0)


def mask_bytes(family, max_model_len):
    """The float16 [max_model_len, max_model_len] attention mask vllm-ascend builds on 310P (sizing.md,
    vllm_ascend/_310p/attention/attention_mask.py): certain, not estimated; 0 elsewhere."""
    return 2 * max_model_len * max_model_len if family == '310P' and max_model_len else 0


def _divisors(number, limit):
    return [size for size in range(1, min(number, limit) + 1) if number % size == 0]


def structure_problems(shape, layout, total_devices=None, devices_per_node=None):
    """What vLLM refuses at start whatever the memory: the attention heads not divisible by TP; neither the key/value
    heads nor TP dividing the other (GQA); the routed experts not divisible by the expert-parallel size (TP x DP);
    more ranks than NPUs. Each message names the variable to change."""
    problems = []
    tp, dp = layout['tensor_parallel_size'], layout['data_parallel_size']
    heads = shape.get('num_attention_heads')
    limit = total_devices or 64
    if heads and tp and heads % tp:
        problems.append('vllm_service_tensor_parallel_size (%d) does not divide the model\'s %d attention heads '
                        '(num_attention_heads in config.json), which vLLM refuses when it starts: use one of %s'
                        % (tp, heads, ', '.join(str(size) for size in _divisors(heads, min(limit, 1024)))))
    kv = shape.get('num_key_value_heads')
    if shape.get('kind') == 'gqa' and kv and tp and kv % tp and tp % kv:
        problems.append('vllm_service_tensor_parallel_size (%d) and the model\'s %d key/value heads '
                        '(num_key_value_heads in config.json): vLLM needs one to divide the other; use a divisor or '
                        'a multiple of %d' % (tp, kv, kv))
    experts = shape.get('routed_experts')
    if layout['enable_expert_parallel'] and experts and tp and dp and experts % (tp * dp):
        sizes = ', '.join(str(size) for size in _divisors(experts, 1024) if size > 1)
        problems.append('vllm_service_enable_expert_parallel spreads the model\'s %d routed experts over '
                        'vllm_service_tensor_parallel_size x vllm_service_data_parallel_size = %d x %d = %d ranks, '
                        'which do not divide them: make TP x DP one of %s, or turn expert parallel off'
                        % (experts, tp, dp, tp * dp, sizes))
    if tp and dp and total_devices and tp * dp > total_devices:
        problems.append('vllm_service_tensor_parallel_size x vllm_service_data_parallel_size = %d x %d = %d NPUs, '
                        'but the deployment has %d: lower one of them, or add nodes' % (tp, dp, tp * dp, total_devices))
    local = layout.get('data_parallel_size_local')
    if tp and local and devices_per_node and npus_for_ranks(tp, local) > devices_per_node:
        problems.append('vllm_service_tensor_parallel_size x vllm_service_data_parallel_size_local = %d x %d = %d '
                        'NPUs on each node, but a node has %d' % (tp, local, npus_for_ranks(tp, local), devices_per_node))
    return problems


def positions_problems(config, layout, warn, unknown):
    """(problems, the max_model_len vLLM would serve): max_model_len above the model's positions is refused (a
    warning with allow_long_max_model_len); unset, it is the model's positions."""
    wanted = layout['max_model_len']
    derived, model_max_length, how = max_positions(config, warn)
    if derived is None:
        if wanted is not None:
            unknown.append('the model\'s positions (%s): vllm_service_max_model_len %d not checked' % (how, wanted))
        else:
            unknown.append('the model\'s positions (%s), which vLLM serves when vllm_service_max_model_len is unset: '
                           'set it' % how)
        return [], wanted
    if wanted is None:
        return [], derived
    if wanted > derived and not (model_max_length and wanted <= model_max_length):
        message = ('vllm_service_max_model_len (%d) is above the %d positions the model takes (%s), which vLLM '
                   'refuses unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (outputs past them are garbage): lower it to %d '
                   'or less, or extend the positions with a RoPE scaling override (--hf-overrides)'
                   % (wanted, derived, how, derived))
        if layout['allow_long_max_model_len']:
            _note(warn, message.replace('which vLLM refuses unless', 'allowed by'))
            return [], wanted
        return [message], wanted
    return [], wanted


def _kv_bytes(layout):
    size = KV_DTYPE_BYTES.get(layout['kv_cache_dtype'])
    if size is None:
        size = 4 if layout['dtype'] in FLOAT32_DTYPES else 2
    return size


class _Model(object):
    """What the sizing knows of one model before a layout: shape, parameters, the scheme and the bytes by part,
    the files' total and how it compares with the estimate."""

    def __init__(self, config, weights, layout, warn):
        self.config = _with_overrides(config, layout['hf_overrides'])
        self.shape = model_shape(self.config, warn)
        self.counts = parameter_counts(self.shape)
        description = weights.get('quantization') if isinstance(weights, dict) else None
        self.scheme = quantization_scheme(self.config, description, layout['dtype'], layout['quantization'], warn)
        self.disk, self.source = weights_on_disk(weights, warn)
        self.main = self.mtp = None
        self.estimate = None
        if self.counts is not None and self.scheme['known']:
            self.main = part_bytes(self.counts['main'], self.scheme)
            self.mtp = part_bytes(self.counts['mtp'], self.scheme)
            self.estimate = int(sum(self.main.values()) + sum(self.mtp.values()))
        self.scale = 1.0
        if self.disk and self.estimate:
            self.scale = self.disk / self.estimate
            if abs(self.scale - 1) > DISAGREEMENT:
                _note(warn, 'the weights on disk (%s, from %s) differ by %d %% from what config.json and the '
                            'quantization (%s) imply (%s): the sizing uses the files\' total'
                            % (gib(self.disk), self.source, round(abs(self.scale - 1) * 100), self.scheme['name'],
                               gib(self.estimate)))
        elif self.disk and self.counts is not None:
            # The quantization is not understood: the files' total split as the parameters are.
            self.main = dict((part, float(count)) for part, count in self.counts['main'].items())
            self.mtp = dict((part, float(count)) for part, count in self.counts['mtp'].items())
            self.scale = self.disk / max(1, self.counts['main_total'] + self.counts['mtp_total'])
            _note(warn, 'the weights\' size per parameter is unknown: the files\' %s is split over the NPUs as the '
                        'parameters are' % gib(self.disk))

    def variant(self, scheme):
        """This model with another quantization scheme, sized from its estimate alone."""
        other = object.__new__(_Model)
        other.__dict__.update(self.__dict__)
        other.scheme, other.disk, other.source, other.scale = scheme, None, None, 1.0
        if self.counts is not None:
            other.main = part_bytes(self.counts['main'], scheme)
            other.mtp = part_bytes(self.counts['mtp'], scheme)
            other.estimate = int(sum(other.main.values()) + sum(other.mtp.values()))
        return other


def _evaluate(model, layout, devices, warn):
    """The verdict of ``model`` on ``layout`` and ``devices``, without a suggestion."""
    problems = []
    unknown = list(model.shape['missing'] and ['config.json: %s' % ', '.join(model.shape['missing'])] or [])
    unknown += ['the NPUs: %s' % problem for problem in devices.get('problems') or ()]
    shape = model.shape
    tp, dp, ep = layout['tensor_parallel_size'], layout['data_parallel_size'], layout['enable_expert_parallel']
    total_devices = devices['count'] * devices['nodes'] if not devices.get('problems') else None
    if tp and dp:
        problems += structure_problems(shape, layout, total_devices, devices.get('count'))
    position_problems, max_model_len = positions_problems(model.config, layout, warn, unknown)
    problems += position_problems
    if ep and not shape['routed_experts'] and shape['complete']:
        _note(warn, 'vllm_service_enable_expert_parallel is true, but the model has no routed experts')
    result = {'verdict': None, 'problems': problems, 'unknown': unknown, 'max_model_len': max_model_len,
              'per_npu': dict.fromkeys(('weights', 'kv', 'kv_per_token', 'mask', 'reserve', 'budget', 'capacity',
                                        'need')),
              'use': None, 'concurrency': None, 'memory': None}
    per_npu = result['per_npu']
    load_mtp = bool(layout['speculative_mtp']) and shape['mtp_layers'] > 0
    if layout['speculative_mtp'] and not shape['mtp_layers'] and shape['complete']:
        _note(warn, 'speculative_mtp is set, but config.json declares no MTP layer (num_nextn_predict_layers)')
    if model.main is not None and tp and dp:
        per_npu['weights'] = per_npu_weight_bytes(model.main, model.mtp, shape, tp, dp, ep, load_mtp, model.scale)
    elif model.counts is None:
        unknown.append('the model\'s parameters (config.json incomplete)')
    else:
        unknown.append('the weights\' size (no weight total, and the quantization %s is unknown)' % model.scheme['name'])
    if tp and layout['decode_context_parallel_size']:
        per_npu['kv_per_token'] = kv_bytes_per_token(shape, tp, _kv_bytes(layout),
                                                     shape['mtp_layers'] if load_mtp else 0,
                                                     layout['decode_context_parallel_size'])
    if per_npu['kv_per_token'] is not None and max_model_len:
        per_npu['kv'] = per_npu['kv_per_token'] * max_model_len
    if devices.get('capacity') and layout['gpu_memory_utilization']:
        per_npu['capacity'] = devices['capacity']
        per_npu['budget'] = max(1, int(devices['capacity'] * layout['gpu_memory_utilization']))
    elif not devices.get('problems'):
        unknown.append('the NPUs\' memory')
    if tp and dp:
        per_npu['reserve'] = reserve_bytes(tp * dp)
    per_npu['mask'] = mask_bytes(devices.get('family'), max_model_len)
    _judge(result, layout, devices)
    return result


def _judge(result, layout, devices):
    """The verdict from the numbers: refused when the weights, one full-length sequence of KV cache and (310P) the
    attention mask exceed the budget; close when the estimated reserve tips it over or the total is within
    CLOSE_MARGIN of the budget; else fits."""
    per_npu = result['per_npu']
    weights, kv, reserve, budget = per_npu['weights'], per_npu['kv'], per_npu['reserve'], per_npu['budget']
    if None in (weights, kv, reserve, budget):
        result['verdict'] = 'refused' if result['problems'] else 'unknown'
        return
    fixed = weights + (per_npu['mask'] or 0)
    certain = fixed + kv
    need = certain + reserve
    per_npu['need'] = need
    result['use'] = need / budget
    left = budget - fixed - reserve
    result['concurrency'] = max(0, left // kv) if kv else None
    if certain > budget:
        result['memory'] = 'weights' if fixed + reserve > budget else 'kv'
    elif need > budget * (1 - CLOSE_MARGIN):
        result['memory'] = 'close'
    else:
        result['memory'] = 'fits'
    if result['problems'] or result['memory'] in ('weights', 'kv'):
        result['verdict'] = 'refused'
    elif result['unknown']:
        result['verdict'] = 'unknown'
    else:
        result['verdict'] = 'close' if result['memory'] == 'close' else 'fits'


def _memory_message(result, layout, devices):
    per_npu = result['per_npu']
    mask = (' + %s of 310P attention mask' % gib(per_npu['mask'])) if per_npu['mask'] else ''
    return ('%s of weights + %s of KV cache for one sequence of %d tokens%s + %s of activations and buffers = %s of '
            'each NPU, against the %s vLLM may use of it (%s x vllm_service_gpu_memory_utilization %s)'
            % (gib(per_npu['weights']), gib(per_npu['kv']), result['max_model_len'], mask, gib(per_npu['reserve']),
               gib(per_npu['need']), gib(per_npu['budget']), gib(per_npu['capacity']),
               _show(layout['gpu_memory_utilization'])))


def size_deployment(config, weights, layout, devices):
    """Whether the model of ``config`` (config.json, parsed) and ``weights`` (``index_total_size``, ``file_bytes``,
    ``manifest_bytes``: bytes, any may be absent; ``quantization``: ``_model_format.describe``'s result or a raw
    msModelSlim description) fits ``layout`` (normalize_layout's keys) on ``devices`` (devices_for_product,
    devices_from_hbm_mb or devices_from_npu_smi).

    Returns ``verdict`` (fits, close, refused or unknown: the module's docstring says when), ``problems`` (why it is
    refused, each naming the variable to change), ``warnings``, ``per_npu`` (bytes on the fullest NPU: weights, kv -
    one sequence of max_model_len tokens -, kv_per_token, mask - 310P's attention mask -, reserve, budget, capacity,
    need), ``use`` (need / budget),
    ``concurrency`` (how many sequences of max_model_len tokens the KV cache left holds per data-parallel rank),
    ``max_model_len`` (what vLLM would serve), ``suggestion`` (the smallest layout that fits, for a memory refusal),
    ``weights`` (total, source, estimate, scheme) and ``parameters`` (parameter_counts)."""
    warnings = []
    problems = []
    layout = normalize_layout(layout, problems)
    devices = _checked_devices(devices)
    model = _Model(config, weights, layout, warnings.append)
    result = _evaluate(model, layout, devices, warnings.append)
    result['problems'] = problems + result['problems']
    if problems:
        result['verdict'] = 'refused'
    for reason in result.pop('unknown'):
        warnings.append('not checked: %s' % reason)
    suggestion = None
    memory = result.pop('memory')
    if memory in ('weights', 'kv'):
        suggestion = smallest_layout(model, layout, devices, result)
        if memory == 'weights':
            what = ('the model does not fit %s (vllm_service_tensor_parallel_size, vllm_service_data_parallel_size) '
                    'on %s' % (_layout_text(layout), devices.get('name')))
        else:
            what = ('the KV cache of one sequence of vllm_service_max_model_len (%d) tokens does not fit beside the '
                    'weights on %s' % (result['max_model_len'], devices.get('name')))
        result['problems'].append('%s: %s; %s' % (
            what, _memory_message(result, layout, devices), suggestion or 'no layout the sizing knows fits it'))
    elif memory == 'close' and result['verdict'] in ('close', 'unknown'):
        warnings.append('close: needs %d %% of the budget on %s, may not start: %s; lower '
                        'vllm_service_max_model_len, raise vllm_service_gpu_memory_utilization or give it more NPUs'
                        % (round(result['use'] * 100), devices.get('name'), _memory_message(result, layout, devices)))
    if (result['concurrency'] is not None and memory in ('fits', 'close') and layout['max_num_seqs']
            and result['concurrency'] < layout['max_num_seqs']):
        warnings.append('the KV cache left holds %s sequences of %s tokens per data-parallel rank, fewer than '
                        'vllm_service_max_num_seqs (%s): vLLM queues or preempts the rest when requests are that long'
                        % (result['concurrency'], result['max_model_len'], layout['max_num_seqs']))
    result.update(warnings=warnings, suggestion=suggestion, layout=layout,
                  weights={'total': model.disk, 'source': model.source or ('the estimate' if model.estimate else None),
                           'estimate': model.estimate, 'scheme': model.scheme['name']},
                  parameters=model.counts)
    return result


# -------------------------------------------------------------------------------------------- the smallest layout

def _candidate_layouts(model, layout, total, per_node):
    """Layouts of ``total`` devices to try, the service's TP first, then the others smallest first, TP within a
    node: for an MoE model DP fills the devices (the experts spread over all ranks) with expert parallel when the
    experts divide; for a dense model DP 1 (more replicas hold no less each)."""
    shape = model.shape
    sizes = [layout['tensor_parallel_size']] + [size for size in TP_SIZES if size != layout['tensor_parallel_size']]
    experts = shape['routed_experts']
    for tp in sizes:
        if not tp or tp > total or total % tp or tp > per_node:
            continue
        dp = total // tp if experts else 1
        candidate = dict(layout, tensor_parallel_size=tp, data_parallel_size=dp, data_parallel_size_local=None,
                         enable_expert_parallel=bool(experts) and experts % (tp * dp) == 0)
        if structure_problems(shape, candidate, total, per_node):
            continue
        yield candidate


def _fits(model, layout, devices):
    result = _evaluate(model, layout, devices, None)
    return result['memory'] == 'fits' and not result['problems']


def _layout_text(layout):
    text = 'TP %d' % layout['tensor_parallel_size']
    if layout['data_parallel_size'] > 1:
        text += ' x DP %d' % layout['data_parallel_size']
    if layout['enable_expert_parallel']:
        text += ' with expert parallel'
    return text


def _on_this_hardware(model, layout, devices):
    """A layout of more of the devices at hand that fits: the service's TP x DP raised, TP first."""
    total, per_node = devices['count'] * devices['nodes'], devices['count']
    used = layout['tensor_parallel_size'] * layout['data_parallel_size']
    for candidate in _candidate_layouts(model, layout, total, per_node):
        most = candidate['data_parallel_size']
        for dp in sorted(set([2 ** power for power in range(13) if 2 ** power < most] + [most])):
            trial = dict(candidate, data_parallel_size=dp)
            experts = model.shape['routed_experts']
            trial['enable_expert_parallel'] = bool(experts) and experts % (trial['tensor_parallel_size'] * dp) == 0
            if trial['tensor_parallel_size'] * dp <= used or structure_problems(model.shape, trial, total, per_node):
                continue
            if _fits(model, trial, devices):
                return trial
    return None


def _hardware_that_fits(model, layout, current):
    """The first tier of HARDWARE_LADDER (same total memory) with a layout that fits: its phrases, each with the
    layout found."""
    found = []
    tier = None
    for product, nodes, phrase, tail in HARDWARE_LADDER:
        spec = PRODUCTS[product]
        size = spec['count'] * spec['hbm_mb'] * nodes
        if tier is not None and size != tier:
            break
        if (current.get('product'), current.get('nodes'), current.get('count')) == (product, nodes, spec['count']):
            continue
        devices = devices_for_product(product, nodes)
        for candidate in _candidate_layouts(model, layout, spec['count'] * nodes, spec['count']):
            if _fits(model, candidate, devices):
                found.append('%s (%s)%s' % (phrase, _layout_text(candidate), tail))
                tier = size
                break
    return found


def smallest_layout(model, layout, devices, result=None):
    """The smallest layout that fits, phrased for the message: on the NPUs at hand a larger TP x DP
    (vllm_service_tensor_parallel_size, vllm_service_data_parallel_size) or a shorter max_model_len when only the KV
    cache is too large; else the smallest hardware of HARDWARE_LADDER ("one A3", "two A2 nodes: put them in group
    vllm_clusters and run multinode.yml"); and a W4A8 model (an MoE model) or a W8A8 one (a float dense model) on the
    hardware at hand. ``model`` is a _Model or (config, weights) as size_deployment takes them, ``layout`` and
    ``devices`` as size_deployment takes them, ``result`` the verdict already computed. None when nothing fits."""
    layout = normalize_layout(layout, [])
    devices = _checked_devices(devices)
    if not isinstance(model, _Model):
        config, weights = model
        model = _Model(config, weights, layout, None)
    if not devices.get('capacity') or not layout['tensor_parallel_size'] or not layout['data_parallel_size']:
        return None
    if result is None:
        result = _evaluate(model, layout, devices, None)
    per_npu = result.get('per_npu') or {}
    options = []
    fixed = (per_npu.get('weights') or 0) + (per_npu.get('mask') or 0) + (per_npu.get('reserve') or 0)
    if per_npu.get('kv') and per_npu.get('budget') and fixed < per_npu['budget'] * (1 - CLOSE_MARGIN):
        room = int(per_npu['budget'] * (1 - CLOSE_MARGIN)) - fixed
        longest = room // per_npu['kv_per_token'] // 1024 * 1024
        if longest >= 1024:
            options.append('lower vllm_service_max_model_len to %d or less (or raise '
                           'vllm_service_gpu_memory_utilization)' % longest)
    here = _on_this_hardware(model, layout, devices)
    if here is not None:
        changes = []
        if here['tensor_parallel_size'] != layout['tensor_parallel_size']:
            changes.append('vllm_service_tensor_parallel_size to %d' % here['tensor_parallel_size'])
        if here['data_parallel_size'] != layout['data_parallel_size']:
            changes.append('vllm_service_data_parallel_size to %d' % here['data_parallel_size'])
        if here['enable_expert_parallel'] and not layout['enable_expert_parallel']:
            changes.append('vllm_service_enable_expert_parallel to true')
        options.append('set %s (%s fits on these NPUs)' % (' and '.join(changes), _layout_text(here)))
    if here is None and not options:
        hardware = _hardware_that_fits(model, layout, devices)
        if hardware:
            options.append('the smallest layout that fits: %s' % ', or '.join(hardware))
        float_bytes = _float_bytes(layout['dtype'])
        if model.shape['routed_experts']:
            variant, name = w4a8_scheme(float_bytes), 'W4A8'
        else:
            variant, name = w8a8_scheme(float_bytes), 'W8A8'
        if model.counts is not None and (model.main is None or sum(model.main.values()) * model.scale
                                         > sum(part_bytes(model.counts['main'], variant).values())):
            other = model.variant(variant)
            trials = [layout] + list(_candidate_layouts(other, layout, devices['count'] * devices['nodes'],
                                                        devices['count']))
            for trial in trials:
                if _fits(other, trial, devices):
                    options.append('a %s model (quantized with msModelSlim; vllm_service_model, '
                                   'vllm_service_quantization ascend) on these NPUs (%s)' % (name, _layout_text(trial)))
                    break
    return '; or '.join(options) if options else None
