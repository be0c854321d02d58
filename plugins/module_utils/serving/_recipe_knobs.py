# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The data of the recipe knobs: the keys of vLLM's ``--additional-config`` that each vllm-ascend release documents
(its "Additional Configuration" page), with their types and, for the options whose value is a mapping, the keys of
that mapping; and the speculative decoding methods that draw on the model's own multi-token prediction layers.
``_plan_recipe`` checks a service's knobs against them. Standard library only: it runs on the managed host too.

Why a table per release: up to v0.23.0 vllm-ascend reads each key it knows with ``.get`` and ignores the rest, so a
misspelt key (or one of a later release) is dropped without a word; since PR 13838 (2026-08-08) it refuses unknown
keys at start, after the weights have loaded for minutes. Either way the plan is the place to find out.

A table is ``complete`` when every row of its page was read (then a key the release does not document is refused);
otherwise a key another release documents is a warning, since the release may know it too. A key no table has is
refused either way (a misspelling, most likely; the message names the nearest known key). To take a new release: add
its table, newest first, with its source.
"""

from __future__ import annotations

_DOCS = 'https://docs.vllm.ai/projects/ascend/%s/user_guide/configuration/additional_config.html'
_REPO = 'vllm-project/vllm-ascend'

# The keys of the nested mappings, as each page's detail tables give them (shared where pages agree).
_TORCHAIR_0_9 = {'enabled': 'bool', 'enable_multistream_mla': 'bool', 'enable_multistream_moe': 'bool',
                 'enable_view_optimize': 'bool', 'use_cached_graph': 'bool', 'graph_batch_sizes': 'list',
                 'graph_batch_sizes_init': 'bool', 'enable_kv_nz': 'bool', 'enable_super_kernel': 'bool'}
_TORCHAIR_0_11 = {'enabled': 'bool', 'mode': 'str', 'enable_multistream_mla': 'bool', 'enable_view_optimize': 'bool',
                  'enable_frozen_parameter': 'bool', 'use_cached_graph': 'bool', 'graph_batch_sizes': 'list',
                  'graph_batch_sizes_init': 'bool', 'enable_kv_nz': 'bool', 'enable_super_kernel': 'bool'}
_WEIGHT_PREFETCH = {'enabled': 'bool', 'prefetch_ratio': 'dict'}
_XLITE = {'enabled': 'bool', 'full_mode': 'bool'}
_FINEGRAINED_TP = {'lmhead_tensor_parallel_size': 'int', 'oproj_tensor_parallel_size': 'int',
                   'embedding_tensor_parallel_size': 'int', 'mlp_tensor_parallel_size': 'int'}
_COMPILATION_0_18 = {'enable_npugraph_ex': 'bool', 'enable_static_kernel': 'bool', 'fuse_norm_quant': 'bool',
                     'fuse_qknorm_rope': 'bool', 'fuse_allreduce_rms': 'bool', 'fuse_muls_add': 'bool'}
_EPLB_0_18 = {'dynamic_eplb': 'bool', 'expert_map_path': 'str', 'expert_heat_collection_interval': 'int',
              'algorithm_execution_interval': 'int', 'expert_map_record_path': 'str', 'num_redundant_experts': 'int'}
_EPLB_0_23 = dict(_EPLB_0_18, eplb_policy_type='int', eplb_heat_collection_stage='str')
_PROFILING_CHUNK = {'enabled': 'bool', 'smooth_factor': 'float', 'min_chunk': 'int', 'need_timing': 'bool',
                    'max_fit_chunk': 'int'}
_REJECTION_SAMPLER = {'enable_block_verify': 'bool', 'enable_entropy_verify': 'bool', 'posterior_threshold': 'float',
                      'posterior_alpha': 'float'}

# 'dict' is a mapping whose keys the page does not list (vllm-ascend passes them on); a dict of keys is a mapping
# whose keys are checked as the top level is.
_V0_9_1 = {
    'torchair_graph_config': _TORCHAIR_0_9, 'ascend_scheduler_config': 'dict', 'refresh': 'bool',
    'expert_map_path': 'str', 'kv_cache_dtype': 'str', 'enable_prefill_optimizations': 'bool',
}
_V0_11_0 = {
    'torchair_graph_config': _TORCHAIR_0_11, 'ascend_scheduler_config': 'dict',
    'weight_prefetch_config': _WEIGHT_PREFETCH, 'refresh': 'bool', 'expert_map_path': 'str', 'kv_cache_dtype': 'str',
    'enable_shared_expert_dp': 'bool', 'lmhead_tensor_parallel_size': 'int', 'oproj_tensor_parallel_size': 'int',
    'multistream_overlap_shared_expert': 'bool', 'dynamic_eplb': 'bool', 'num_iterations_eplb_update': 'int',
    'gate_eplb': 'bool', 'num_wait_worker_iterations': 'int', 'expert_map_record_path': 'str',
    'init_redundancy_expert': 'int',
}
_V0_13_0 = {
    'xlite_graph_config': _XLITE, 'weight_prefetch_config': _WEIGHT_PREFETCH, 'finegrained_tp_config': _FINEGRAINED_TP,
    'ascend_compilation_config': 'dict', 'eplb_config': 'dict', 'refresh': 'bool', 'dump_config_path': 'str',
    'enable_async_exponential': 'bool', 'enable_shared_expert_dp': 'bool', 'multistream_overlap_shared_expert': 'bool',
    'multistream_overlap_gate': 'bool', 'recompute_scheduler_enable': 'bool', 'enable_cpu_binding': 'bool',
    'SLO_limits_for_dynamic_batch': 'int', 'pa_shape_list': 'list', 'enable_kv_nz': 'bool',
}
_V0_18_0 = {
    'xlite_graph_config': _XLITE, 'weight_prefetch_config': _WEIGHT_PREFETCH, 'finegrained_tp_config': _FINEGRAINED_TP,
    'ascend_compilation_config': _COMPILATION_0_18, 'eplb_config': _EPLB_0_18, 'refresh': 'bool',
    'dump_config_path': 'str', 'enable_async_exponential': 'bool', 'enable_shared_expert_dp': 'bool',
    'multistream_overlap_shared_expert': 'bool', 'multistream_overlap_gate': 'bool',
    'recompute_scheduler_enable': 'bool', 'enable_cpu_binding': 'bool', 'SLO_limits_for_dynamic_batch': 'int',
    'enable_npugraph_ex': 'bool', 'pa_shape_list': 'list', 'enable_kv_nz': 'bool', 'layer_sharding': 'dict',
    'enable_sparse_c8': 'bool', 'enable_mc2_hierarchy_comm': 'bool',
}
_V0_23_0 = dict(
    _V0_18_0, eplb_config=_EPLB_0_23, dump_config='dict', enable_sleep_mode_extra_cleanup='bool',
    c8_enable_reshape_optim='bool', profiling_chunk_config=_PROFILING_CHUNK, enable_balance_scheduling='bool',
    enable_flashcomm1='bool', enable_matmul_allreduce='bool', flashcomm2_parallel_size='int',
    msmonitor_use_daemon='bool', enable_mlapo='bool', weight_nz_mode='int', enable_context_parallel='bool',
    enable_fused_mc2='int', enable_transpose_kv_cache_by_block='bool', enable_dsa_cp='bool',
    rejection_sampler_config=_REJECTION_SAMPLER, multistream_dsv4_dsa_overlap='bool', quest_decode_config='dict',
)
# Main at the commit below validates every key (pydantic, extra="forbid"): its table is the code's fields, the page's
# rows and the fields the page leaves out alike.
_MAIN = {
    'xlite_graph_config': _XLITE, 'finegrained_tp_config': _FINEGRAINED_TP,
    'ascend_compilation_config': {'enable_npugraph_ex': 'bool', 'enable_static_kernel': 'bool',
                                  'fuse_norm_quant': 'bool', 'fuse_qknorm_rope': 'bool', 'fuse_muls_add': 'bool'},
    'eplb_config': dict(_EPLB_0_23, load_collection_phase='str'), 'scheduler_config': 'dict', 'refresh': 'bool',
    'dump_config': 'dict', 'dump_config_path': 'str', 'enable_shared_expert_dp': 'bool',
    'multistream_overlap_shared_expert': 'bool', 'enable_cpu_binding': 'bool', 'pa_shape_list': 'list',
    'enable_kv_nz': 'bool', 'enable_sparse_sfa_c8': 'bool', 'enable_sparse_li_c8': 'bool',
    'c8_enable_reshape_optim': 'bool', 'mc2_comm_alg': 'str', 'enable_mc2_hierarchy_comm': 'bool',
    'enable_prefill_mc2': 'bool', 'mega_moe_max_tokens': 'int', 'msmonitor_use_daemon': 'bool', 'enable_mlapo': 'bool',
    'mlapo_keep_prefill_weights': 'bool', 'weight_nz_mode': 'int', 'enable_fused_mc2': 'int',
    'enable_transpose_kv_cache_by_block': 'bool', 'enable_dsa_cp': 'bool',
    'rejection_sampler_config': _REJECTION_SAMPLER,
    'dynamic_spec_config': 'dict', 'multistream_dsv4_dsa_overlap': 'bool', 'rl_config': 'dict',
    'enable_reduce_sample': 'bool', 'ascend_fusion_config': 'dict', 'sparse_kv_offload_config': 'dict',
    'enable_force_eplb': 'bool', 'enable_pcp_o_proj_weight_sharding': 'bool', 'draft_window_size': 'int',
    'mix_placement': 'bool', 'combine_quant_mode': 'int', 'ascend_log_path': 'str',
    'ft_communication_abort_timeout': 'int', 'enable_flashcomm1': 'bool',
}

# Newest first: a service takes the first table whose release is not above its own.
ADDITIONAL_CONFIG_TABLES = (
    {'release': (0, 30, 0), 'name': 'main', 'complete': True, 'keys': _MAIN,
     'source': '%s vllm_ascend/ascend_config.py and docs/source/user_guide/configuration/additional_config.md at main, '
               'commit 001cd9e1f7a1eb1b9a5d93dab54d3459b60a2f54 (unknown keys refused since PR 13838, 2026-08-08); '
               'no stored copy reaches the v0.30.0 tag, so 0.30.0 and later are checked against it' % _REPO},
    {'release': (0, 23, 0), 'name': '0.23.0', 'complete': False, 'keys': _V0_23_0,
     'source': '%s docs/source/user_guide/configuration/additional_config.md at commit '
               '039d343ead2da40451ce005a92020360b9651899, whose opening is that of the v0.23.0rc1 page (%s); the '
               'v0.23.0 page itself was not found' % (_REPO, _DOCS % 'en/v0.23.0rc1')},
    {'release': (0, 18, 0), 'name': '0.18.0', 'complete': False, 'keys': _V0_18_0,
     'source': '%s (rows to enable_kv_nz read there; the rest and the detail tables from copies of the same file on '
               'the v0.18 line)' % (_DOCS % 'zh-cn/v0.18.0')},
    {'release': (0, 13, 0), 'name': '0.13.0', 'complete': False, 'keys': _V0_13_0,
     'source': '%s (rows to enable_kv_nz; the page was read no further)' % (_DOCS % 'zh-cn/v0.13.0')},
    {'release': (0, 11, 0), 'name': '0.11.0', 'complete': True, 'keys': _V0_11_0,
     'source': '%s and %s (every row)' % (_DOCS % 'en/v0.11.0', _DOCS % 'zh-cn/v0.11.0-dev')},
    {'release': (0, 9, 1), 'name': '0.9.1', 'complete': True, 'keys': _V0_9_1,
     'source': '%s (every row; the detail tables from the v0.9.1-dev page)' % (_DOCS % 'en/v0.9.1')},
)
# Before 0.9.1 vllm-ascend documented no additional configuration (the page came with PR 1029, 2025-05-30): DeepSeek's
# graph mode was switched on by environment variables then.
FIRST_DOCUMENTED = (0, 9, 1)

# Speculative decoding methods that draw the draft tokens from the model's own multi-token prediction layers (DeepSeek's
# MTP): vLLM's older name and the name of the vllm-ascend DeepSeek-R1 tutorial (`{"num_speculative_tokens": 3,
# "method": "mtp"}`). The model's config.json must have such layers (num_nextn_predict_layers).
MTP_METHODS = ('deepseek_mtp', 'mtp')

# vLLM's --kv-cache-dtype choices (its CacheDType literal), each with the first release that takes it; vllm-ascend X
# runs vLLM X (its Dockerfile's VLLM_TAG at tags v0.9.1, v0.11.0, v0.13.0, v0.18.0 and v0.23.0). Source: vLLM's
# vllm/config/cache.py (vllm/config.py before 0.10) in the wheels of 0.9.1, 0.10.0, 0.11.0, 0.11.1 and 0.18.0. Newer
# vLLM adds formats (nvfp4 and others) for GPUs only.
KV_CACHE_DTYPES = (
    ('auto', (0, 9, 0)), ('fp8', (0, 9, 0)), ('fp8_e4m3', (0, 9, 0)), ('fp8_e5m2', (0, 9, 0)),
    ('fp8_inc', (0, 10, 0)), ('bfloat16', (0, 11, 0)), ('fp8_ds_mla', (0, 11, 1)), ('float16', (0, 18, 0)),
)
# No vllm-ascend release checks --kv-cache-dtype itself (its platform's attention selector and attention code only
# keep the value: vllm_ascend/platform.py at v0.9.1 to v0.23.0). Before 0.11, vLLM's V1 engine takes only auto off
# CUDA and ROCm (vllm/engine/arg_utils.py of vLLM 0.9.1: "No Fp8 KV cache so far"). The NPU families with no fp8 KV
# cache: A2 (910B), A3 (910_93) and the 300I (310P) - an fp8 value gives a uint8 cache no Ascend kernel reads (issue
# 8102 of vllm-project/vllm-ascend, a maintainer: "FP8 is not support in A3"). An int8 KV cache ("C8") comes from a
# C8-quantized checkpoint (msModelSlim) served with --quantization ascend, never from this option.
KV_CACHE_ONLY_AUTO_BEFORE = (0, 11, 0)
NO_FP8_KV_CACHE = {'910B': 'an A2 (910B)', '910_93': 'an A3', '310P': 'a 300I (310P)'}
