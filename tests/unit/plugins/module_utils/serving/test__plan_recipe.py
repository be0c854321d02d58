# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recipe knobs (serving/_plan_recipe.py over serving/_recipe_knobs.py): --additional-config, --speculative-config
and chunked prefill rendered from their variables, and the same knobs checked against the release whether they come
from the variables or from vllm_service_extra_args."""

from __future__ import annotations

import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _plan_recipe, _recipe_knobs, _serving

# The defaults and the A2 host of the plan's own tests (pytest puts this folder on the path).
from test__serving import DEEPSEEK_W8A8, RECIPE_ARGS, a2_facts, inputs

# DeepSeek-V3's config.json as far as the check reads it (its MTP layer).
DEEPSEEK_CONFIG = {'model_type': 'deepseek_v3', 'num_nextn_predict_layers': 1}


def recipe(release='0.18.0', model_config=None, **changes):
    return _plan_recipe.recipe_plan(dict(inputs(), **changes), release, model_config)


# ------------------------------------------------------------------------------------------------- rendered

def test_nothing_is_added_by_default():
    assert _plan_recipe.recipe_args(inputs()) == []
    assert recipe() == (_plan_recipe.NO_RECIPE, [])


def test_the_typed_knobs_become_json_and_a_switch():
    args = _plan_recipe.recipe_args(inputs(
        additional_config={'enable_cpu_binding': True, 'eplb_config': {'dynamic_eplb': False}},
        speculative_config={'num_speculative_tokens': 1, 'method': 'mtp'}, enable_chunked_prefill=False))
    # Keys sorted, no spaces: the same unit for the same value.
    assert args == ['--additional-config', '{"enable_cpu_binding":true,"eplb_config":{"dynamic_eplb":false}}',
                    '--speculative-config', '{"method":"mtp","num_speculative_tokens":1}',
                    '--no-enable-chunked-prefill']
    assert _plan_recipe.recipe_args(inputs(enable_chunked_prefill=True)) == ['--enable-chunked-prefill']
    assert _plan_recipe.recipe_args(inputs(enable_prefix_caching=True, enable_chunked_prefill=True)) == [
        '--enable-chunked-prefill', '--enable-prefix-caching']


def test_the_knobs_sit_after_the_switches_and_before_the_extra_arguments():
    result = _serving.serving_plan(inputs(additional_config={'enable_cpu_binding': False}, extra_args=['--seed', '1'],
                                          enable_chunked_prefill=True), a2_facts())
    assert result['problems'] == []
    assert result['args'][-5:] == ['--additional-config', '{"enable_cpu_binding":false}', '--enable-chunked-prefill',
                                   '--seed', '1']
    assert result['recipe']['additional_config'] == {'enable_cpu_binding': False}
    assert result['recipe']['checked_against']['release'] == '0.13.0'
    assert result['recipe']['chunked_prefill'] is True


# -------------------------------------------------------------------------------------------- input types

@pytest.mark.parametrize('name, value, expected', [
    ('additional_config', ['enable_cpu_binding'], 'vllm_service_additional_config must be a mapping'),
    ('additional_config', '{"enable_cpu_binding": true}', 'vllm_service_additional_config must be a mapping'),
    ('additional_config', {'pa_shape_list': [float('nan')]},
     'vllm_service_additional_config cannot be written as JSON'),
    ('additional_config', {'eplb_config': {1: True}}, 'has keys that are not strings: 1'),
    ('speculative_config', 3, 'vllm_service_speculative_config must be a mapping'),
    ('speculative_config', {'num_speculative_tokens': float('inf')},
     'vllm_service_speculative_config cannot be written as JSON'),
    ('additional_config', {'eplb_config': {'expert_map_path': 'a\nb'}},
     'holds a control character in a key or a value'),
    ('enable_chunked_prefill', 'sometimes', 'vllm_service_enable_chunked_prefill must be true, false or null'),
    ('enable_prefix_caching', 2, 'vllm_service_enable_prefix_caching must be true, false or null'),
    ('compilation_config', 'FULL_DECODE_ONLY', 'vllm_service_compilation_config must be a mapping'),
])
def test_a_knob_of_the_wrong_type_is_refused_before_any_fact(name, value, expected):
    found = _serving.check_inputs(inputs(**{name: value}))
    assert any(expected in problem for problem in found), found


def test_a_knob_nested_too_deep_or_in_a_cycle_is_refused_without_a_traceback():
    deep = value = {}
    for dummy in range(5000):
        value['a'] = {}
        value = value['a']
    cycle = {}
    cycle['again'] = cycle
    for knob in (deep, cycle):
        assert _serving.check_inputs(inputs(additional_config=knob)) == [
            'vllm_service_additional_config nests mappings or lists deeper than 16 levels']


def test_chunked_prefill_from_the_command_line_is_read_as_a_boolean():
    assert _serving.check_inputs(inputs(enable_chunked_prefill='false')) == []


# --------------------------------------------------------------------------------------- against the release

def test_a_release_takes_the_newest_table_not_above_it():
    assert _plan_recipe.table_for('0.18.0')['name'] == '0.18.0'
    assert _plan_recipe.table_for('0.18.0rc1')['name'] == '0.18.0'
    assert _plan_recipe.table_for('0.20.2')['name'] == '0.18.0'
    assert _plan_recipe.table_for('0.32.0rc1')['name'] == 'main'
    assert _plan_recipe.table_for('0.9.1')['name'] == '0.9.1'
    assert _plan_recipe.table_for('0.7.3') is None
    assert _plan_recipe.table_for('') is None
    assert _plan_recipe.table_for('latest') is None


def test_the_tables_are_newest_first_and_each_names_its_source():
    releases = [table['release'] for table in _recipe_knobs.ADDITIONAL_CONFIG_TABLES]
    assert releases == sorted(releases, reverse=True)
    for table in _recipe_knobs.ADDITIONAL_CONFIG_TABLES:
        assert 'vllm-ascend' in table['source'] or 'docs.vllm.ai' in table['source']


def test_a_documented_key_of_the_right_type_passes():
    result, found = recipe('0.18.0', additional_config={'enable_cpu_binding': False, 'eplb_config': {
        'dynamic_eplb': True, 'expert_heat_collection_interval': 400}})
    assert found == [] and result['warnings'] == []
    assert result['checked_against'] == {'release': '0.18.0', 'complete': False,
                                         'source': _plan_recipe.table_for('0.18.0')['source']}


def test_a_misspelt_key_is_refused_naming_the_nearest_one():
    dummy, found = recipe('0.18.0', additional_config={'enable_cpu_bindng': False})
    assert found == ['vllm_service_additional_config: enable_cpu_bindng is a key no vllm-ascend release documents; '
                     'the nearest known key is enable_cpu_binding']


def test_a_misspelt_nested_key_is_refused_with_its_path():
    dummy, found = recipe('0.23.0', additional_config={'eplb_config': {'dynamic_epbl': True}})
    assert found == ['vllm_service_additional_config: eplb_config.dynamic_epbl is a key no vllm-ascend release '
                     'documents; the nearest known key is eplb_config.dynamic_eplb']


def test_a_key_of_other_releases_is_refused_where_the_whole_page_was_read():
    # torchair's graph mode is the 0.9 to 0.11 way; main refuses unknown keys itself, after the model loaded.
    dummy, found = recipe('0.30.0', additional_config={'torchair_graph_config': {'enabled': True}})
    assert found == ['vllm_service_additional_config: torchair_graph_config is not a key of vllm-ascend 0.30.0 '
                     '(documented in 0.11.0, 0.9.1; checked against main)']
    dummy, found = recipe('0.11.0', additional_config={'enable_cpu_binding': True})
    assert found == ['vllm_service_additional_config: enable_cpu_binding is not a key of vllm-ascend 0.11.0 '
                     '(documented in main, 0.23.0, 0.18.0, 0.13.0; checked against 0.11.0)']


def test_a_key_of_other_releases_is_a_warning_where_the_page_was_read_in_part():
    result, found = recipe('0.18.0', additional_config={'enable_balance_scheduling': True})
    assert found == []
    assert result['warnings'] == [
        'vllm_service_additional_config: enable_balance_scheduling is not in what this collection read of '
        'vllm-ascend 0.18.0\'s keys (documented in 0.23.0); it is passed on as given']


@pytest.mark.parametrize('config, expected', [
    ({'enable_cpu_binding': 'false'},
     'enable_cpu_binding must be a boolean for vllm-ascend 0.18.0; got a string "false"'),
    ({'SLO_limits_for_dynamic_batch': True}, 'SLO_limits_for_dynamic_batch must be a whole number for vllm-ascend '
                                             '0.18.0; got a boolean true'),
    ({'eplb_config': True}, 'eplb_config must be a mapping for vllm-ascend 0.18.0; got a boolean'),
    ({'eplb_config': {'expert_map_path': 5}}, 'eplb_config.expert_map_path must be a string for vllm-ascend 0.18.0; '
                                              'got a whole number 5'),
])
def test_a_value_of_the_wrong_type_is_refused(config, expected):
    # "false" as a string would read as true in a release that takes the value as it comes.
    dummy, found = recipe('0.18.0', additional_config=config)
    assert [problem.split(': ', 1)[1] for problem in found] == [expected]


def test_the_keys_of_a_mapping_the_page_leaves_open_are_passed_on():
    result, found = recipe('0.11.0', additional_config={'ascend_scheduler_config': {'enabled': True,
                                                                                    'enable_chunked_prefill': False}})
    assert found == [] and result['warnings'] == []


@pytest.mark.parametrize('release, reason', [
    ('', 'the vllm-ascend release is not known (vllm_service_vllm_ascend_version)'),
    ('0.7.3', 'vllm-ascend 0.7.3 documents no additional configuration (its page came with 0.9.1)'),
])
def test_without_a_table_only_misspellings_are_refused(release, reason):
    result, found = recipe(release, additional_config={'torchair_graph_config': {'enabled': True}})
    assert found == [] and result['checked_against'] is None
    assert result['warnings'] == ['vllm_service_additional_config is checked for misspelt keys only: ' + reason]
    dummy, found = recipe(release, additional_config={'torchair_grahp_config': {}})
    assert found == ['vllm_service_additional_config: torchair_grahp_config is a key no vllm-ascend release documents; '
                     'the nearest known key is torchair_graph_config']


# ------------------------------------------------------------------------------- the same keys in extra_args

@pytest.mark.parametrize('extra', [
    ['--additional-config', '{"enable_cpu_bindng": false}'],
    ['--additional-config={"enable_cpu_bindng": false}'],
    ['--additional_config', '{"enable_cpu_bindng": false}'],
    ['--additional-config.enable_cpu_bindng=false'],
    ['--additional-config.enable_cpu_bindng', 'false'],
])
def test_extra_arguments_are_parsed_and_checked_the_same_way(extra):
    result, found = recipe('0.18.0', extra_args=extra)
    assert found == ['vllm_service_extra_args (--additional-config): enable_cpu_bindng is a key no vllm-ascend '
                     'release documents; the nearest known key is enable_cpu_binding']
    assert result['additional_config'] == {'enable_cpu_bindng': False}


def test_dotted_extra_arguments_build_one_mapping():
    result, found = recipe('0.18.0', extra_args=['--additional-config.eplb_config.dynamic_eplb=true',
                                                 '--additional-config.eplb_config.expert_map_path', '/srv/map.json',
                                                 '--additional-config.enable_cpu_binding=false'])
    assert found == []
    assert result['additional_config'] == {'eplb_config': {'dynamic_eplb': True, 'expert_map_path': '/srv/map.json'},
                                           'enable_cpu_binding': False}


@pytest.mark.parametrize('extra, expected', [
    (['--additional-config', '{"enable_cpu_binding": tru}'], 'gives --additional-config a value that is not JSON'),
    (['--additional-config', '[1, 2]'], 'gives --additional-config a list, not a JSON object'),
    (['--speculative-config'], 'gives --speculative-config without a value'),
    (['--additional-config='], 'gives --additional-config a value that is not JSON'),
    (['--additional-config', '{"pa_shape_list": [NaN]}'], 'not JSON (NaN is not a JSON number)'),
    (['--speculative-config', '{"num_speculative_tokens": 1e400}'], 'not JSON (1e400 is too large for a number)'),
    # Refused before Python's reader recurses, on every Python.
    (['--additional-config', '{"a":' * 5000 + '1' + '}' * 5000], 'not JSON (nested deeper than 16 levels)'),
    (['--additional-config', '{"a":' * 20 + '1' + '}' * 20], 'not JSON (nested deeper than 16 levels)'),
])
def test_extra_arguments_that_are_not_a_json_object_are_refused(extra, expected):
    dummy, found = recipe('0.18.0', extra_args=extra)
    assert len(found) == 1 and found[0].startswith('vllm_service_extra_args (') and expected in found[0], found


@pytest.mark.parametrize('extra', [['--additional-conf', '{"x": 1}'], ['--speculative={"method": "mtp"}'],
                                   ['--compilation_c', '{}'], ['--a', '{}']])
def test_an_abbreviated_knob_is_refused_so_that_none_passes_unchecked(extra):
    dummy, found = recipe('0.18.0', extra_args=extra)
    written = extra[0].split('=')[0]
    assert len(found) == 1 and found[0].startswith('vllm_service_extra_args: %s may abbreviate --' % written)
    assert found[0].endswith(', which the plan checks: spell it out')


def test_other_options_are_left_to_vllm():
    assert recipe('0.18.0', extra_args=['--seed', '1024', '--trust-remote-code', '--block-size', '16'])[1] == []


def test_a_knob_given_by_its_variable_and_in_the_extra_arguments_is_refused():
    dummy, found = recipe('0.18.0', additional_config={'enable_cpu_binding': False},
                          extra_args=['--additional-config.enable_kv_nz=true'])
    assert found == ['--additional-config is given twice, by vllm_service_additional_config and in '
                     'vllm_service_extra_args: give it once']


# -------------------------------------------------------------------------------------- speculative decoding

def test_deepseek_mtp_passes_on_a_model_with_its_mtp_layer():
    config = {'method': 'mtp', 'num_speculative_tokens': 3}
    result, found = recipe(model_config=DEEPSEEK_CONFIG, speculative_config=config)
    assert found == [] and result['speculative_config'] == {'method': 'mtp', 'num_speculative_tokens': 3}


@pytest.mark.parametrize('config, model_config, expected', [
    ({'method': 'mtp', 'num_speculative_tokens': 1}, {'model_type': 'qwen3'},
     'method mtp drafts with the model\'s multi-token prediction layers, and the model\'s config.json has none '
     '(num_nextn_predict_layers None)'),
    ({'method': 'deepseek_mtp', 'num_speculative_tokens': 1}, dict(DEEPSEEK_CONFIG, num_nextn_predict_layers=0),
     'num_nextn_predict_layers 0'),
    ({'method': 'mtp', 'num_speculative_tokens': 0}, DEEPSEEK_CONFIG,
     'num_speculative_tokens must be a whole number of 1 or more; got 0'),
    ({'method': 'mtp', 'num_speculative_tokens': '3'}, DEEPSEEK_CONFIG,
     'num_speculative_tokens must be a whole number of 1 or more; got "3"'),
    ({'method': ['mtp']}, DEEPSEEK_CONFIG, 'method must be a string; got ["mtp"]'),
])
def test_a_speculative_config_the_model_or_vllm_cannot_take_is_refused(config, model_config, expected):
    dummy, found = recipe(model_config=model_config, speculative_config=config)
    assert len(found) == 1 and found[0].startswith('vllm_service_speculative_config: ') and expected in found[0], found


def test_a_speculative_config_in_the_extra_arguments_is_checked_the_same_way():
    dummy, found = recipe(model_config={'model_type': 'qwen3'},
                          extra_args=['--speculative-config',
                                      json.dumps({'method': 'mtp', 'num_speculative_tokens': 1})])
    assert len(found) == 1 and found[0].startswith('vllm_service_extra_args (--speculative-config): method mtp')


def test_without_the_models_config_the_method_is_not_checked_against_it():
    dummy, found = recipe(model_config=None, speculative_config={'method': 'mtp', 'num_speculative_tokens': 1})
    assert found == []


# ------------------------------------------------------------------------------------ through the whole plan

A3_FACTS = dict(a2_facts(chips=16, per_card=2, nodes=[0] * 8 + [1] * 8), model_config=DEEPSEEK_CONFIG)
A3_IMAGE = 'quay.io/ascend/vllm-ascend:v0.30.0-a3'
# The knobs of vllm-ascend's DeepSeek-R1 and V3.1 tutorials (docs/source/tutorials/models/DeepSeek-R1.md and
# DeepSeek-V3.1.md at commit 046d6515d38bba4276c74b9f3934366c75468734): MTP with 3 tokens, decode-only graphs.
TUTORIAL_KNOBS = {'speculative_config': {'num_speculative_tokens': 3, 'method': 'mtp'},
                  'compilation_config': {'cudagraph_mode': 'FULL_DECODE_ONLY'}}
TUTORIAL_ARGS = ['--speculative-config', '{"method":"mtp","num_speculative_tokens":3}',
                 '--compilation-config', '{"cudagraph_mode":"FULL_DECODE_ONLY"}']


def test_the_deepseek_r1_a3_tutorial_renders_its_flags_without_extra_args():
    result = _serving.serving_plan(inputs(image=A3_IMAGE, **dict(DEEPSEEK_W8A8, **TUTORIAL_KNOBS)), A3_FACTS)
    assert result['problems'] == [] and result['recipe']['warnings'] == []
    assert result['args'][6:] == RECIPE_ARGS + TUTORIAL_ARGS


def test_the_deepseek_v3_1_a3_tutorial_adds_no_prefix_caching():
    result = _serving.serving_plan(inputs(image=A3_IMAGE, enable_prefix_caching=False,
                                          **dict(DEEPSEEK_W8A8, **TUTORIAL_KNOBS)), A3_FACTS)
    assert result['problems'] == []
    assert result['args'][6:] == RECIPE_ARGS + TUTORIAL_ARGS + ['--no-enable-prefix-caching']
    assert result['recipe']['prefix_caching'] is False


# ------------------------------------------------------------------------------ the tutorials' whole commands

# vllm-ascend's DeepSeek-R1 tutorial (docs/source/tutorials/models/DeepSeek-R1.md at 046d6515d38bba4276c74b9f3934366c75468734),
# its commands as written there with the addresses filled in: one A3 node (section 5.1), and two A2 nodes of data
# parallel (section 5.2), node 0 serving and node 1 headless. The V3.1 tutorial (DeepSeek-V3.1.md, same commit) is
# the same with --no-enable-prefix-caching.
R1_COMMON = ('--tensor-parallel-size 4 --quantization ascend --seed 1024 --served-model-name deepseek_r1 '
             '--enable-expert-parallel --max-num-seqs 16 --max-model-len 16384 --max-num-batched-tokens 4096 '
             '--trust-remote-code --gpu-memory-utilization 0.92 '
             '--speculative-config {"num_speculative_tokens":3,"method":"mtp"} '
             '--compilation-config {"cudagraph_mode":"FULL_DECODE_ONLY"}')
R1_A3 = 'vllm serve /weights/DeepSeek-R1-W8A8 --host 0.0.0.0 --port 8000 --data-parallel-size 4 ' + R1_COMMON
R1_A2_NODE0 = ('vllm serve /weights/DeepSeek-R1-W8A8 --host 0.0.0.0 --port 8000 --data-parallel-size 4 '
               '--data-parallel-size-local 2 --data-parallel-address 10.0.0.11 --data-parallel-rpc-port 13389 '
               + R1_COMMON)
R1_A2_NODE1 = ('vllm serve /weights/DeepSeek-R1-W8A8 --host 0.0.0.0 --port 8000 --headless --data-parallel-size 4 '
               '--data-parallel-size-local 2 --data-parallel-start-rank 2 --data-parallel-address 10.0.0.11 '
               '--data-parallel-rpc-port 13389 ' + R1_COMMON)
# The same recipe as the collection's variables: no vllm_service_extra_args. Listening beyond the host takes a key
# here (given to vLLM in its environment, so the command is the same).
R1_VARIABLES = dict(DEEPSEEK_W8A8, model='/weights/DeepSeek-R1-W8A8', host='0.0.0.0', port=8000, api_key_set=True,
                    served_model_name='deepseek_r1', seed=1024, trust_remote_code=True, **TUTORIAL_KNOBS)


def options(argv):
    """A `vllm serve` argv as argparse reads it: the model, and each option with its value (JSON read as such) or
    True for a switch; a repeated option would be a defect of the rendering."""
    argv = list(argv)
    model = argv[argv.index('serve') + 1]
    found, index, rest = {}, 0, argv[argv.index('serve') + 2:]
    while index < len(rest):
        option = rest[index]
        assert option.startswith('--') and option not in found, (option, rest)
        if index + 1 < len(rest) and not rest[index + 1].startswith('--'):
            value = rest[index + 1]
            found[option] = json.loads(value) if value.startswith('{') else value
            index += 2
        else:
            found[option] = True
            index += 1
    return model, found


def tutorial(command):
    return options(command.split())


def test_the_r1_a3_tutorial_is_the_plan_s_whole_command():
    result = _serving.serving_plan(inputs(image=A3_IMAGE, **R1_VARIABLES), A3_FACTS)
    assert result['problems'] == [] and result['recipe']['warnings'] == []
    assert options(result['command']) == tutorial(R1_A3)


def test_the_v3_1_a3_tutorial_is_the_plan_s_whole_command():
    variables = dict(R1_VARIABLES, image=A3_IMAGE, enable_prefix_caching=False)
    variables['served_model_name'] = 'deepseek_v3'
    result = _serving.serving_plan(inputs(**variables), A3_FACTS)
    expected = tutorial(R1_A3.replace('deepseek_r1', 'deepseek_v3') + ' --no-enable-prefix-caching')
    assert result['problems'] == [] and options(result['command']) == expected


def test_the_r1_two_a2_tutorial_is_the_cluster_plan_then_each_node_s_plan():
    # Role vllm_cluster's launch (serving/_cluster_plan.py) gives each node its data-parallel part; role
    # vllm_service's plan on each node then writes its whole command.
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._cluster_plan import cluster_node, cluster_plan
    from test__cluster_plan import facts as network_facts, inputs as cluster_inputs, node_inputs
    a2 = dict(a2_facts(), model_config=DEEPSEEK_CONFIG)
    image = 'quay.io/ascend/vllm-ascend:v0.30.0'
    first = dict((host, _serving.serving_plan(inputs(image=image, **R1_VARIABLES), a2))
                 for host in ('node0', 'node1'))
    parts = dict((host, cluster_node(host, network_facts(address), node_inputs(), first[host]))
                 for host, address in (('node0', '10.0.0.11'), ('node1', '10.0.0.12')))
    launch = cluster_plan(['node0', 'node1'], parts, cluster_inputs(), first['node0'])
    assert launch['problems'] == []
    for host, command in (('node0', R1_A2_NODE0), ('node1', R1_A2_NODE1)):
        node = launch['nodes'][host]
        result = _serving.serving_plan(inputs(image=image, data_parallel_size_local=node['data_parallel_size_local'],
                                              headless=node['headless'], cluster_args=node['dp_args'],
                                              **R1_VARIABLES), a2)
        assert result['problems'] == [], (host, result['problems'])
        assert options(result['command']) == tutorial(command), host


# vllm-ascend's DeepSeek-R1-Distill tutorial (docs/source/tutorials/models/DeepSeek-R1-Distill.md at
# ac1d1534e37ef0057ad88bc9d46ed4e2092b7070, main), Qwen-1.5B on one card of an Atlas 300I Duo
# (ASCEND_RT_VISIBLE_DEVICES=0), its command with the model's path filled in.
DISTILL_300I = ('vllm serve /weights/DeepSeek-R1-Distill-Qwen-1.5B --served-model-name deepseek-r1-distill-qwen-1.5b '
                '--dtype float16 --max-model-len 4096 --max-num-seqs 4 --max-num-batched-tokens 4096 '
                '--gpu-memory-utilization 0.70 '
                '--additional-config {"ascend_compilation_config":{"fuse_norm_quant":false}} '
                '--compilation-config {"cudagraph_mode":"FULL_DECODE_ONLY","cudagraph_capture_sizes":[1,2,4]} '
                '--port 8000')


def test_the_r1_distill_300i_tutorial_is_the_plan_s_whole_command():
    facts = a2_facts(chips=8, per_card=2, nodes=[0] * 8)
    facts['npu_devices'] = [dict(device, chip_family='310P') for device in facts['npu_devices']]
    result = _serving.serving_plan(inputs(
        image='quay.io/ascend/vllm-ascend:v0.30.0-310p', model='/weights/DeepSeek-R1-Distill-Qwen-1.5B',
        served_model_name='deepseek-r1-distill-qwen-1.5b', npus=[0], dtype='float16', max_model_len=4096,
        max_num_seqs=4, max_num_batched_tokens=4096, gpu_memory_utilization=0.70,
        additional_config={'ascend_compilation_config': {'fuse_norm_quant': False}},
        compilation_config={'cudagraph_mode': 'FULL_DECODE_ONLY', 'cudagraph_capture_sizes': [1, 2, 4]}), facts)
    assert result['problems'] == []
    model, found = options(result['command'])
    expected_model, expected = tutorial(DISTILL_300I)
    # 0.70 as the plan writes the number (0.7): the same float to vLLM's argparse.
    assert float(found.pop('--gpu-memory-utilization')) == float(expected.pop('--gpu-memory-utilization')) == 0.7
    # The plan also writes what the tutorial leaves to vLLM's defaults: the address it listens on and the sizes.
    assert {key: value for key, value in found.items() if key not in ('--host', '--tensor-parallel-size',
                                                                      '--data-parallel-size')} == expected
    assert (model, found['--host'], found['--tensor-parallel-size'], found['--data-parallel-size']) == (
        expected_model, '127.0.0.1', '1', '1')
    # Its 4 sequences are off the guide's multiples of 16: a warning, not a refusal.
    assert any('multiple' in warning for warning in result['recipe']['warnings'])


def test_the_same_tutorial_through_extra_args_is_checked_the_same_way():
    extra = ['--speculative-config', '{"num_speculative_tokens":3,"method":"mtp"}',
             '--compilation-config', '{"cudagraph_mode": "FULL_DECODE_ONY"}']
    result = _serving.serving_plan(inputs(image=A3_IMAGE, extra_args=extra, **DEEPSEEK_W8A8), A3_FACTS)
    assert result['problems'] == [
        'vllm_service_extra_args (--compilation-config): cudagraph_mode must be one of NONE, PIECEWISE, FULL, '
        'FULL_DECODE_ONLY, FULL_AND_PIECEWISE; got "FULL_DECODE_ONY"']


@pytest.mark.parametrize('config, expected', [
    ({'cudagraph_capture_sizes': []}, 'cudagraph_capture_sizes must be a list of whole numbers of 1 or more; got []'),
    ({'cudagraph_capture_sizes': [1, 0]}, 'cudagraph_capture_sizes must be a list of whole numbers of 1 or more'),
    ({'cudagraph_capture_sizes': '1,2,4'}, 'cudagraph_capture_sizes must be a list of whole numbers of 1 or more'),
    ({'cudagraph_mode': 2}, 'cudagraph_mode must be one of NONE'),
])
def test_a_compilation_config_vllm_cannot_take_is_refused(config, expected):
    dummy, found = recipe(compilation_config=config)
    assert len(found) == 1 and found[0].startswith('vllm_service_compilation_config: ') and expected in found[0], found


def test_capture_sizes_off_the_speculative_step_are_a_warning():
    # The 310P tutorial captures [1, 2, 4]; with MTP of 1 token vLLM wants multiples of 2.
    result, found = recipe(model_config=DEEPSEEK_CONFIG,
                           speculative_config={'method': 'mtp', 'num_speculative_tokens': 1},
                           compilation_config={'cudagraph_mode': 'FULL_DECODE_ONLY',
                                               'cudagraph_capture_sizes': [1, 2, 4]})
    assert found == []
    assert result['warnings'] == ['vllm_service_compilation_config: cudagraph_capture_sizes [1] are not multiples of 2 '
                                  '(1 + num_speculative_tokens): vLLM rounds them or refuses the layout at start']


def test_a_bad_knob_fails_the_whole_plan_naming_its_variable_and_release():
    result = _serving.serving_plan(inputs(image='quay.io/ascend/vllm-ascend:v0.30.0-a3',
                                          additional_config={'torchair_graph_config': {'enabled': True}}), a2_facts())
    assert result['problems'] == ['vllm_service_additional_config: torchair_graph_config is not a key of vllm-ascend '
                                  '0.30.0 (documented in 0.11.0, 0.9.1; checked against main)']


def test_refused_inputs_still_give_a_recipe_to_read():
    result = _serving.serving_plan(inputs(additional_config='graph mode'), a2_facts())
    assert result['problems'] and result['recipe'] == _plan_recipe.NO_RECIPE


# ------------------------------------------------------------------------------------ the guide's batching rule

@pytest.mark.parametrize('seqs, has_npus, expected', [
    (20, True, ['vllm_service_max_num_seqs is 20: the deployment guide this collection follows asks for a multiple of '
                '16 on Ascend NPUs (such as 16); no vllm-ascend release requires it']),
    (40, True, ['vllm_service_max_num_seqs is 40: the deployment guide this collection follows asks for a multiple of '
                '16 on Ascend NPUs (such as 32); no vllm-ascend release requires it']),
    (8, True, ['vllm_service_max_num_seqs is 8: the deployment guide this collection follows asks for a multiple of '
               '16 on Ascend NPUs (such as 16); no vllm-ascend release requires it']),
    (32, True, []),
    (None, True, []),
    (20, False, []),
])
def test_a_batch_size_off_the_guides_multiple_of_16_is_a_warning_on_npus(seqs, has_npus, expected):
    assert _plan_recipe.batching_warnings(inputs(max_num_seqs=seqs), has_npus) == expected


def test_the_batching_warning_reaches_the_plan_and_fails_nothing():
    result = _serving.serving_plan(inputs(max_num_seqs=20), a2_facts())
    assert result['problems'] == []
    assert result['recipe']['warnings'] == _plan_recipe.batching_warnings(inputs(max_num_seqs=20), True)


def test_a_password_in_a_knob_is_never_shown():
    dummy, found = recipe('0.18.0', additional_config={'eplb_config': {'expert_map_path': ['https://u:s3cret@maps/x']}})
    assert len(found) == 1 and 's3cret' not in found[0] and 'expert_map_path must be a string' in found[0]
    dummy, found = recipe('0.18.0', extra_args=['--additional-config', '{"x": "https://u:s3cret@maps/x"'])
    assert len(found) == 1 and 's3cret' not in found[0] and 'not JSON' in found[0]


# ------------------------------------------------------------------------------------------------ KV cache dtype

def recipe_on(release='0.18.0', model_config=None, has_npus=True, family='910B', **changes):
    return _plan_recipe.recipe_plan(dict(inputs(), **changes), release, model_config, has_npus, family)


def test_the_kv_cache_dtype_is_rendered_and_null_renders_nothing():
    assert _plan_recipe.recipe_args(inputs(kv_cache_dtype='auto')) == ['--kv-cache-dtype', 'auto']
    assert _plan_recipe.recipe_args(inputs(kv_cache_dtype=None)) == []
    result, found = recipe_on(kv_cache_dtype='auto')
    assert (result['kv_cache_dtype'], found, result['warnings']) == ('auto', [], [])


@pytest.mark.parametrize('value, release, family, expected', [
    # No fp8 KV cache on an A2, A3 or 300I, in any release.
    ('fp8', '0.18.0', '910B', 'vllm_service_kv_cache_dtype fp8: an A2 (910B) has no fp8 KV cache'),
    ('fp8_e4m3', '0.30.0', '910_93', 'vllm_service_kv_cache_dtype fp8_e4m3: an A3 has no fp8 KV cache'),
    ('fp8_ds_mla', '0.13.0', '310P', 'vllm_service_kv_cache_dtype fp8_ds_mla: a 300I (310P) has no fp8 KV cache'),
    # Before 0.11 vLLM's V1 engine takes only auto off CUDA.
    ('fp8', '0.9.1', '910B', "vllm_service_kv_cache_dtype fp8: vLLM's V1 engine of vllm-ascend 0.9.1 takes only auto"),
    # A choice the release's vLLM does not have yet.
    ('bfloat16', '0.9.1', '910B', 'vllm_service_kv_cache_dtype bfloat16: vLLM 0.9.1, which vllm-ascend 0.9.1 runs, '
                                  'does not take it (vLLM takes it from 0.11.0)'),
    ('float16', '0.13.0', '910B', 'vllm_service_kv_cache_dtype float16: vLLM 0.13.0, which vllm-ascend 0.13.0 runs'),
    # Not a vLLM choice at all; int8 names where an int8 cache comes from.
    ('int8', '0.18.0', '910B', 'vllm_service_kv_cache_dtype must be one of auto, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, '
                               'bfloat16, fp8_ds_mla, float16; got "int8": an int8 KV cache (C8) comes from a '
                               'C8-quantized checkpoint'),
    ('FP8', '0.18.0', '910B', 'vllm_service_kv_cache_dtype must be one of auto, fp8'),
    ('fp8\nExecStartPre=/bin/sh', None, None, 'vllm_service_kv_cache_dtype must be one of'),
])
def test_a_kv_cache_dtype_the_release_or_the_npus_cannot_take_is_refused(value, release, family, expected):
    result, found = recipe_on(release=release, family=family, kv_cache_dtype=value)
    assert len(found) == 1 and found[0].startswith('vllm_service_kv_cache_dtype ') and expected in found[0], found
    assert '\n' not in found[0]


def test_bfloat16_and_float16_warn_and_fp8_off_the_known_families_warns():
    result, found = recipe_on(release='0.18.0', kv_cache_dtype='bfloat16')
    assert found == [] and result['warnings'] == [
        "vllm_service_kv_cache_dtype bfloat16: vllm-ascend keeps the model's dtype in its KV cache whatever this says"]
    result, found = recipe_on(release='0.30.0', family=None, kv_cache_dtype='fp8')
    assert found == [] and 'on the Ascend 950 only' in result['warnings'][0]
    # vLLM's CPU build (no NPUs) takes what its vLLM takes.
    result, found = recipe_on(release=None, has_npus=False, family=None, kv_cache_dtype='fp8_e5m2')
    assert (found, result['warnings']) == ([], [])


def test_the_kv_cache_dtype_in_extra_args_is_checked_the_same_way_and_not_twice():
    result, found = recipe_on(extra_args=['--kv-cache-dtype=fp8'])
    assert len(found) == 1 and found[0].startswith('vllm_service_extra_args (--kv-cache-dtype) fp8: an A2 (910B)')
    # An abbreviation argparse takes for it is read as it.
    result, found = recipe_on(extra_args=['--kv-cache-dt', 'fp8'])
    assert len(found) == 1 and 'has no fp8 KV cache' in found[0]
    result, found = recipe_on(kv_cache_dtype='auto', extra_args=['--kv-cache-dtype', 'auto'])
    assert found == ['--kv-cache-dtype is given twice, by vllm_service_kv_cache_dtype and in vllm_service_extra_args: '
                     'give it once']
    result, found = recipe_on(extra_args=['--kv-cache-dtype', 'auto'])
    assert found == [] and result['kv_cache_dtype'] == 'auto'
    result, found = recipe_on(extra_args=['--enforce-eager', '--kv-cache-dtype'])
    assert found == ['vllm_service_extra_args (--kv-cache-dtype) gives --kv-cache-dtype without a value']


def test_the_kv_cache_dtype_fails_the_whole_plan_on_an_a2():
    facts = a2_facts()
    facts['npu_devices'] = [dict(device, chip_family='910B') for device in facts['npu_devices']]
    result = _serving.serving_plan(inputs(image='quay.io/ascend/vllm-ascend:v0.18.0', kv_cache_dtype='fp8'), facts)
    assert len(result['problems']) == 1 and 'an A2 (910B) has no fp8 KV cache' in result['problems'][0]


@pytest.mark.parametrize('value', [1, True, ['fp8'], {'dtype': 'fp8'}, 'auto\x00'])
def test_a_kv_cache_dtype_that_is_no_string_is_refused_before_any_fact(value):
    found = _plan_recipe.input_problems(inputs(kv_cache_dtype=value))
    assert len(found) == 1 and found[0].startswith('vllm_service_kv_cache_dtype must be null'), found
