# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving plan knows the model (_serving.plan_sizing over _sizing.size_deployment): the model directory's
config.json and weights against the final argv's layout and the NPUs' memory - npu-smi's, or on a host without a
driver yet its PCI devices' product. A refusal is a plan problem naming the variable and the smallest layout that fits;
close and unknown are warnings; a host without NPUs (vLLM's CPU backend) is never sized. The layouts the Molecule
scenarios serve must not be refused. Plus the plan of a host without npu-smi (``assumed``, ``driver``) and the
multi-node hint of a layout larger than the node."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _model_format, _serving
from ansible_collections.kunpeng_ascend.vllm.tests.shared_data import load_model_config
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import a2_facts, inputs

# The tiny random-weight DeepSeek-V3 the real-vLLM scenarios serve (tools/make-tiny-model.py --arch deepseek_v3, its
# config.json as written by transformers 5.19.0; the sizing fields).
TINY_DEEPSEEK_V3 = {
    'architectures': ['DeepseekV3ForCausalLM'], 'dtype': 'float32', 'first_k_dense_replace': 1, 'head_dim': 64,
    'hidden_size': 128, 'intermediate_size': 256, 'kv_lora_rank': 512, 'max_position_embeddings': 256,
    'model_type': 'deepseek_v3', 'moe_intermediate_size': 64, 'moe_layer_freq': 1, 'n_group': 1,
    'n_routed_experts': 8, 'n_shared_experts': 1, 'num_attention_heads': 4, 'num_experts_per_tok': 2,
    'num_hidden_layers': 2, 'num_key_value_heads': 4, 'num_nextn_predict_layers': 1, 'q_lora_rank': None,
    'qk_nope_head_dim': 32, 'qk_rope_head_dim': 64, 'rope_parameters': {'rope_theta': 10000.0, 'rope_type': 'default'},
    'tie_word_embeddings': False, 'topk_method': 'noaux_tc', 'v_head_dim': 32, 'vocab_size': 1024,
}
# The simulator's stand-in model (molecule/shared/node.yml): a config.json that names the architecture only.
STAND_IN = {'architectures': ['DeepseekV3ForCausalLM'], 'model_type': 'deepseek_v3'}
# The DeepSeek-R1 W8A8 recipe (main T/models/DeepSeek-R1.md: TP 4 x DP 4, EP, 16384 tokens, 16 sequences, 0.92).
R1_RECIPE = dict(tensor_parallel_size=4, data_parallel_size=4, quantization='ascend', enable_expert_parallel=True,
                 max_num_seqs=16, max_model_len=16384, gpu_memory_utilization=0.92)
# One A2 node of the recipe's two, as role vllm_cluster launches it: 2 of the 4 data-parallel ranks here.
R1_A2_NODE = dict(R1_RECIPE, data_parallel_size_local=2)
W8A8 = {'format': 'ascend', 'model_quant_type': 'W8A8_DYNAMIC', 'quant_types': ['W8A8', 'W8A8_DYNAMIC'],
        'description_file': True}
FLOAT = {'format': 'float'}
MULTINODE = 'put them in group vllm_clusters and run playbooks/multinode.yml (docs/multinode.md)'


def layout_of(base, **changes):
    """``base`` (a layout of the recipe) with ``changes``."""
    layout = dict(base)
    layout.update(changes)
    return layout


def model(config, description=None, path='/data/models/DeepSeek-R1-W8A8', **weights):
    """The facts model_format_info gives the plan of a model directory (``description``: a float one by default)."""
    model_format = dict({'path': path, 'exists': True, 'error': '', 'config_found': True, 'quant_types': [],
                         'model_quant_type': None, 'description_file': False}, **(description or FLOAT))
    return {'model_format': model_format, 'model_config': copy.deepcopy(config),
            'model_weights': dict({'index_total_size': None, 'file_bytes': None}, **weights)}


def npu_host(chips=8, hbm=65536, name='910B3', family='910B', **kwargs):
    """An A2 as npu-smi and ascend_facts show it: chips of ``hbm`` MB."""
    facts = a2_facts(chips=chips, **kwargs)
    for chip in facts['chips']:
        chip.update(name=name, hbm_total_mb=hbm)
    for device in facts['npu_devices']:
        device['chip_family'] = family
    facts['driver_version'] = '25.5.0'
    return facts


def plan(facts, **changes):
    return _serving.serving_plan(inputs(**changes), facts)


def r1():
    return load_model_config('DeepSeek-R1__config.json')


# ----------------------------------------------------------------------------------------------- refusals and fits

def test_deepseek_r1_w8a8_on_one_a2_is_refused_naming_the_layout_and_what_fits():
    result = plan(dict(npu_host(), **model(r1(), W8A8)), **layout_of(R1_RECIPE, tensor_parallel_size=8, data_parallel_size=1))
    sizing = result['sizing']
    assert sizing['verdict'] == 'refused' and sizing['devices']['product'] == 'a2'
    assert result['problems'] == sizing['problems']
    message = result['problems'][-1]
    assert message.startswith('the model does not fit TP 8 with expert parallel (vllm_service_tensor_parallel_size, '
                              'vllm_service_data_parallel_size) on Atlas 800I A2 (8 x 64 GB): ')
    assert ('the smallest layout that fits: one A3 (TP 8 x DP 2 with expert parallel), or two A2 nodes (TP 8 x DP 2 '
            'with expert parallel): ' + MULTINODE) in message
    assert 'or a W4A8 model' in message and sizing['suggestion'] in message
    assert sizing['per_npu']['weights'] > sizing['per_npu']['budget'] and sizing['use'] > 1


def test_the_recipe_on_two_a2_nodes_fits_each_node():
    # Role vllm_cluster's launch on each node: DP 4 over the group, 2 ranks here.
    result = plan(dict(npu_host(), **model(r1(), W8A8)), **R1_A2_NODE)
    sizing = result['sizing']
    assert result['problems'] == [] and sizing['verdict'] in ('fits', 'close'), sizing
    assert (sizing['devices']['nodes'], sizing['devices']['count']) == (2, 8)


def test_the_recipe_on_one_a3_fits():
    facts = npu_host(chips=16, per_card=2, name='Ascend910', family='910_93', nodes=[0] * 8 + [1] * 8)
    result = plan(dict(facts, **model(r1(), W8A8)), image='quay.io/ascend/vllm-ascend:v0.13.0-a3', **R1_RECIPE)
    assert result['problems'] == [] and result['sizing']['verdict'] in ('fits', 'close')
    assert result['sizing']['devices']['product'] == 'a3'


def test_a_refusal_may_be_a_warning_or_skipped():
    facts = dict(npu_host(), **model(r1(), W8A8))
    layout = layout_of(R1_RECIPE, tensor_parallel_size=8, data_parallel_size=1)
    warned = plan(facts, sizing='warn', **layout)
    assert warned['problems'] == [] and warned['sizing']['verdict'] == 'refused'
    assert warned['sizing']['warnings'][0].startswith('refused, and vllm_service_sizing is warn: the model does not fit')
    skipped = plan(facts, sizing='skip', **layout)
    assert skipped['problems'] == [] and skipped['sizing']['verdict'] == 'unknown'
    assert skipped['sizing']['skipped'] == 'vllm_service_sizing is skip' and skipped['sizing']['warnings'] == []
    assert _serving.check_inputs(inputs(sizing='off')) == [
        "vllm_service_sizing must be one of refuse, warn, skip; got \"off\""]


def test_tp_3_with_128_heads_is_refused_naming_the_variable():
    layout = layout_of(R1_RECIPE, tensor_parallel_size=3, data_parallel_size=1, enable_expert_parallel=False)
    result = plan(dict(npu_host(), **model(r1(), W8A8)), **layout)
    assert result['problems'][0] == (
        "vllm_service_tensor_parallel_size (3) does not divide the model's 128 attention heads (num_attention_heads in "
        "config.json), which vLLM refuses when it starts: use one of 1, 2, 4, 8")


def test_tp_1_on_an_8_npu_host_with_a_model_larger_than_one_npu_is_refused_with_the_tp_that_fits():
    result = plan(dict(npu_host(), **model(load_model_config('Qwen3-32B__config.json'), path='/data/models/Qwen3-32B')),
                  max_model_len=8192)
    assert result['sizing']['verdict'] == 'refused'
    assert result['problems'][0].startswith('the model does not fit TP 1 (vllm_service_tensor_parallel_size, '
                                            'vllm_service_data_parallel_size) on Atlas 800I A2 (8 x 64 GB): ')
    assert 'set vllm_service_tensor_parallel_size to 2 (TP 2 fits on these NPUs)' in result['problems'][0]
    assert plan(dict(npu_host(), **model(load_model_config('Qwen3-32B__config.json'), path='/data/models/Qwen3-32B')),
                max_model_len=8192, tensor_parallel_size=2)['problems'] == []


def test_a_layout_larger_than_the_node_points_to_multinode_once():
    result = plan(dict(npu_host(), **model(r1(), W8A8)), **layout_of(R1_RECIPE, tensor_parallel_size=16, data_parallel_size=1))
    assert result['problems'] == [
        'vllm_service_tensor_parallel_size (16) x vllm_service_data_parallel_size (1) = 16 NPUs, but the service has '
        '8 (vllm_service_npus [0, 1, 2, 3, 4, 5, 6, 7]): this node has 8 NPUs: lower a parallel size, or, to spread '
        'one model over several nodes, ' + MULTINODE]
    # Sized as the layout spread over the nodes it needs: it fits there, and says nothing of the count again.
    assert result['sizing']['verdict'] in ('fits', 'close') and result['sizing']['devices']['nodes'] == 2
    local = plan(dict(npu_host(), **model(r1(), W8A8)), **layout_of(R1_RECIPE, data_parallel_size_local=4))
    assert local['problems'] == [
        'vllm_service_tensor_parallel_size (4) x vllm_service_data_parallel_size_local (4) = 16 NPUs, but the service '
        'has 8 (vllm_service_npus [0, 1, 2, 3, 4, 5, 6, 7]): this node has 8 NPUs: lower a parallel size, or, to '
        'spread one model over several nodes, ' + MULTINODE]
    # NPUs of the node left out by vllm_service_npus: give the service more of them.
    assert plan(a2_facts(), tensor_parallel_size=4, npus=[0, 1])['problems'] == [
        'vllm_service_tensor_parallel_size (4) x vllm_service_data_parallel_size (1) = 4 NPUs, but the service has 2 '
        '(vllm_service_npus [0, 1]): lower a parallel size or give it more NPUs']


def test_ray_spreads_tensor_parallel_over_the_nodes_it_needs():
    result = plan(dict(npu_host(), **model(r1(), W8A8)), distributed_executor_backend='ray', mode='native',
                  pip_packages=['vllm-ascend==0.13.0'], **layout_of(R1_RECIPE, tensor_parallel_size=16, data_parallel_size=1))
    assert result['problems'] == [] and result['sizing']['devices']['nodes'] == 2


def test_the_final_argv_decides_the_layout():
    # The extra arguments come last and win, in any spelling vLLM reads.
    facts = dict(npu_host(), **model(r1(), W8A8))
    result = plan(facts, extra_args=['-tp', '8', '--data-parallel-size=1', '--data-parallel-size-local', '1',
                                     '--max-model-len', '16K'], **R1_A2_NODE)
    layout = result['sizing']['layout']
    assert (layout['tensor_parallel_size'], layout['data_parallel_size'], layout['max_model_len']) == (8, 1, 16384)
    assert result['sizing']['verdict'] == 'refused'
    off = plan(facts, extra_args=['--no-enable-expert-parallel', '--max-model-len', 'auto'], **R1_A2_NODE)
    assert off['sizing']['layout']['enable_expert_parallel'] is False and off['sizing']['max_model_len'] == 163840
    mtp = plan(facts, extra_args=['--speculative-config', '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'],
               **R1_A2_NODE)
    assert mtp['sizing']['layout']['speculative_mtp'] is True
    long = plan(facts, env={'VLLM_ALLOW_LONG_MAX_MODEL_LEN': '1'}, **layout_of(R1_A2_NODE, max_model_len=200000))
    assert long['sizing']['layout']['allow_long_max_model_len'] is True
    # Allowed past the positions, but its KV cache does not fit beside the weights.
    assert [problem[:67] for problem in long['problems']] == [
        'the KV cache of one sequence of vllm_service_max_model_len (200000)']
    assert long['problems'][0].endswith('lower vllm_service_max_model_len to 71680 or less (or raise '
                                        'vllm_service_gpu_memory_utilization)')
    refused = plan(facts, **layout_of(R1_A2_NODE, max_model_len=200000))
    assert refused['problems'][0].startswith('vllm_service_max_model_len (200000) is above the 163840 positions')
    bad = plan(facts, extra_args=['--hf-overrides', '{not json'], **R1_A2_NODE)
    assert bad['problems'] == ["hf_overrides (--hf-overrides) must be an object; got '{not json'"]
    # vLLM's dotted spelling of a dict option sets one key of it.
    dotted = plan(facts, extra_args=['--hf-overrides', '{"max_position_embeddings": 8192}', '--speculative-config.method',
                                     'deepseek_mtp', '--hf_overrides.rope_scaling.factor=4'], **R1_A2_NODE)
    assert dotted['sizing']['layout']['hf_overrides'] == {'max_position_embeddings': 8192, 'rope_scaling': {'factor': 4}}
    assert dotted['sizing']['layout']['speculative_mtp'] is True


def test_pipeline_parallelism_is_not_sized_and_says_so():
    result = plan(dict(npu_host(), **model(r1(), W8A8)), extra_args=['--pipeline-parallel-size', '2'], **R1_A2_NODE)
    assert result['sizing']['verdict'] == 'unknown' and result['problems'] == []
    assert result['sizing']['warnings'] == [
        'not checked: the memory per NPU with pipeline parallelism (--pipeline-parallel-size 2), which the sizing does '
        'not model']


# -------------------------------------------------------------------------------- what the scenarios must keep

def test_a_host_without_npus_is_never_sized():
    # The real-vLLM scenarios: the tiny DeepSeek-V3 on vLLM's CPU build, whatever the layout says.
    for layout in ({}, {'tensor_parallel_size': 3}):
        result = plan(dict({'npu_count': 0}, **model(TINY_DEEPSEEK_V3, path='/srv/models/tiny-deepseek-v3')),
                      mode='native', max_model_len=256, dtype='float32', **layout)
        assert result['problems'] == [] and result['sizing']['verdict'] == 'unknown'
        assert result['sizing']['warnings'] == []
        assert result['sizing']['skipped'] == 'the host has no NPUs (vLLM\'s CPU backend): nothing to size the model against'


@pytest.mark.parametrize('changes', [
    {},                                                                     # molecule/vllm's simulated NPU host
    {'tensor_parallel_size': 4, 'data_parallel_size': 2, 'max_num_seqs': 16},   # the demo's layout
    {'tensor_parallel_size': 4, 'enable_expert_parallel': True},
])
def test_the_tiny_deepseek_v3_fits_the_simulated_npus(changes):
    tiny = model(TINY_DEEPSEEK_V3, path='/srv/models/tiny-deepseek-v3', file_bytes=4505448)
    result = plan(dict(npu_host(hbm=65536, name='910B4'), **tiny), mode='native', max_model_len=256, **changes)
    assert result['problems'] == [] and result['sizing']['verdict'] == 'fits', result['sizing']
    assert result['sizing']['weights']['source'] == 'the weight files'


def test_the_simulators_stand_in_model_is_unknown_with_warnings_never_refused():
    # molecule/simulator, site, rolling_update, upgrade, multinode: config.json names the architecture only.
    result = plan(dict(npu_host(), **model(STAND_IN, W8A8, file_bytes=17)), **R1_A2_NODE)
    sizing = result['sizing']
    assert result['problems'] == [] and sizing['verdict'] == 'unknown'
    assert 'config.json has no hidden_size: the sizing cannot use it' in sizing['warnings']
    assert any(warning.startswith('not checked: ') for warning in sizing['warnings'])


@pytest.mark.parametrize('config, reason', [
    (None, '/m has no config.json object to read the model\'s shape from'),
    ([1, 2], '/m has no config.json object to read the model\'s shape from'),
])
def test_a_config_that_is_no_object_is_a_warning(config, reason):
    facts = dict(npu_host(), **model({}, path='/m'))
    facts['model_config'] = config
    result = plan(facts)
    assert result['problems'] == [] and result['sizing']['warnings'] == ['not checked: ' + reason]


def test_malformed_fields_give_warnings_not_a_traceback():
    config = dict(TINY_DEEPSEEK_V3, hidden_size='128', num_hidden_layers=-1, rope_parameters='yarn')
    result = plan(dict(npu_host(), **model(config, file_bytes='many')), mode='native')
    assert result['problems'] == [] and result['sizing']['verdict'] == 'unknown'
    assert result['sizing']['warnings']


def test_a_caller_that_does_not_read_the_model_gets_no_sizing():
    result = plan(npu_host())
    assert result['sizing']['verdict'] == 'unknown' and result['sizing']['warnings'] == []
    assert result['sizing']['skipped'] == 'the model directory was not read (a caller that plans without it)'
    assert set(result['sizing']['per_npu']) == set(_serving.SIZING_PER_NPU)


def test_the_per_npu_keys_are_the_sizings():
    result = plan(dict(npu_host(), **model(r1(), W8A8)), **R1_RECIPE)
    assert list(result['sizing']['per_npu']) == list(_serving.SIZING_PER_NPU)


def test_the_model_format_module_result_is_what_the_plan_reads(tmp_path):
    # model_format_info's reader on a directory, as preflight passes it.
    (tmp_path / 'config.json').write_text(json.dumps(TINY_DEEPSEEK_V3))
    (tmp_path / 'model.safetensors').write_bytes(b'x' * 4096)
    model_format, config = _model_format.read_model(str(tmp_path))
    assert config == TINY_DEEPSEEK_V3 and model_format['format'] == 'float'
    facts = dict(npu_host(), model_format=model_format, model_config=config, model_weights={'file_bytes': 4096})
    result = plan(facts, model=str(tmp_path), mode='native', max_model_len=256)
    assert result['problems'] == [] and result['sizing']['verdict'] == 'fits'


# --------------------------------------------------------------------------------- a host without an NPU driver

def fresh(family='910B', count=8, **extra):
    facts = {'npu_count': count, 'npu_smi_found': False, 'chips': [],
             'npu_devices': [{'chip_family': family, 'numa_node': 0 if index < count // 2 else 1,
                              'numa_cpulist': '0-23' if index < count // 2 else '24-47'} for index in range(count)],
             'existing_paths': [], 'engine_paths': {'docker': '/usr/bin/docker'}, 'ascend_runtime': False,
             'driver_version': None, 'target_driver_version': '25.5.0'}
    facts.update(extra)
    return facts


def test_a_host_without_a_driver_is_planned_from_its_pci_devices_and_the_inventory():
    result = plan(fresh(), tensor_parallel_size=8)
    assert result['problems'] == [] and result['fresh'] is True
    assert result['npu_ids'] == list(range(8)) and result['cards'] == list(range(8))
    assert result['driver'] == {'version': '25.5.0', 'source': 'vllm_service_target_driver_version', 'check': True}
    assert result['assumed'] == [
        'npu-smi is not on this host yet (no NPU driver): planned from the 8 NPU PCI devices (chip family 910B) on its '
        'PCI bus as Atlas 800I A2 (8 x 64 GB), 8 NPUs of 65536 MB as npu-smi would show them (a 32 GB 910B holds '
        'half: the real memory is read once the driver is there)',
        'the NPU driver is the one the inventory targets, 25.5.0 (vllm_service_target_driver_version; the playbooks '
        'pass npu_driver_version), which role npu_driver installs before this service (playbooks/site.yml): '
        'vllm-ascend 0.13.0 is checked against it',
        "the NPU driver's files and control devices (/usr/local/dcmi, /usr/local/Ascend/driver/tools/hccn_tool, "
        '/usr/local/bin/npu-smi, /usr/local/Ascend/driver/version.info, /etc/ascend_install.info, /dev/davinci_manager, '
        "/dev/devmm_svm, /dev/hisi_hdc) are taken as there once it is installed, for the container's mounts and devices"]
    assert result['sizing']['skipped'] == 'the model directory was not read (a caller that plans without it)'
    # The unit check mode predicts is the one the real run writes once the driver is there: a real A2's.
    real = plan(npu_host(), tensor_parallel_size=8)
    assert (result['devices'], result['mounts'], result['command']) == (real['devices'], real['mounts'], real['command'])
    # Natively there is nothing to mount.
    native = plan(fresh(), tensor_parallel_size=8, mode='native', pip_packages=['vllm-ascend==0.13.0'])
    assert len(native['assumed']) == 2 and native['mounts'] == []


def test_a_host_without_a_driver_sizes_the_model_against_the_product():
    result = plan(dict(fresh(), **model(r1(), W8A8)), **layout_of(R1_RECIPE, tensor_parallel_size=8, data_parallel_size=1))
    assert result['sizing']['verdict'] == 'refused' and result['sizing']['devices']['product'] == 'a2'
    assert 'on Atlas 800I A2 (8 x 64 GB)' in result['problems'][0]
    a3 = plan(dict(fresh('910_93', 16), **model(r1(), W8A8)), image='quay.io/ascend/vllm-ascend:v0.13.0-a3',
              **R1_RECIPE)
    assert a3['problems'] == [] and a3['cards'] == list(range(8)) and a3['sizing']['devices']['product'] == 'a3'


def test_a_300i_duo_without_a_driver_has_two_chips_a_card():
    result = plan(fresh('310P', 4), tensor_parallel_size=2)
    assert result['npu_ids'] == list(range(8)) and result['cards'] == [0, 1, 2, 3]
    assert 'planned from the 4 NPU PCI devices (chip family 310P) on its PCI bus as Atlas 300I Duo (2 x 310P3 chips), ' \
           '8 NPUs of 43757 MB' in result['assumed'][0]


def test_a_host_without_a_driver_nor_a_target_checks_no_driver_and_an_unknown_chip_is_not_sized():
    result = plan(dict(fresh('unknown', 8, target_driver_version=None), **model(r1(), W8A8)), **R1_A2_NODE)
    assert result['problems'] == []
    assert result['driver'] == {'version': None, 'source': None, 'check': False}
    assert result['assumed'][0].startswith('npu-smi is not on this host yet (no NPU driver): planned from the 8 NPU PCI '
                                           'devices (chip family unknown) on its PCI bus, 8 NPUs, whose product and '
                                           'memory are not known')
    assert result['assumed'][1] == ("the NPU driver's version is not known (no driver installed, "
                                    "vllm_service_target_driver_version not set: set npu_driver_version in the "
                                    "inventory): vllm-ascend 0.13.0 is not checked against it")
    assert result['sizing']['verdict'] == 'unknown'
    assert ('not checked: the NPUs: their product and memory are not known before the NPU driver is installed (chip '
            'family unknown)') in result['sizing']['warnings']


def test_a_host_whose_npu_smi_answered_assumes_nothing():
    result = plan(npu_host())
    assert result['fresh'] is False and result['assumed'] == []
    assert result['driver'] == {'version': '25.5.0', 'source': 'installed', 'check': True}
    # A real host without the driver's version file: checked (and refused by the role) as before.
    assert plan(a2_facts())['driver'] == {'version': None, 'source': None, 'check': True}


def test_a_plan_before_any_change_takes_a_missing_engine_as_the_one_container_runtime_installs():
    facts = a2_facts()
    facts['engine_paths'] = {}
    refused = _serving.serving_plan(inputs(), facts)
    assert refused['problems'] == ['docker (vllm_service_container_engine) is not installed: run role '
                                   'kunpeng_ascend.vllm.container_runtime first, or set vllm_service_mode native']
    planned = _serving.serving_plan(inputs(), dict(facts, engine_missing_ok=True))
    assert planned['problems'] == [] and planned['command'][0] == '/usr/bin/docker'
    assert planned['assumed'][-1] == ('the container engine docker is not installed yet: taken as /usr/bin/docker, which '
                                      'role kunpeng_ascend.vllm.container_runtime installs before this service '
                                      '(playbooks/site.yml)')
