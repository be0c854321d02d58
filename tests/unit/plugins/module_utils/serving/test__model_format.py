# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a model directory says about how it is served (serving/_model_format.py): the real description and config files
read, the node reader's bounds, and every branch of the decision the serving plan makes with it."""

from __future__ import annotations

import json
import os
import shlex

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _model_format, _serving
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

FLOAT_CONFIG = json.dumps({'architectures': ['DeepseekV3ForCausalLM'], 'model_type': 'deepseek_v3',
                           'torch_dtype': 'bfloat16'})
W8A8_DYNAMIC = json.dumps({'model_quant_type': 'W8A8_DYNAMIC', 'model.embed_tokens.weight': 'FLOAT',
                           'model.layers.0.mlp.experts.0.down_proj.weight': 'W8A8_DYNAMIC'})


def describe(config=FLOAT_CONFIG, description=None):
    warnings = []
    result = _model_format.describe(config, description, warnings.append)
    assert result['warnings'] == warnings
    return result


# ------------------------------------------------------------------------------------------ the real files

def test_mindie_description_with_a_trailing_comma_is_read_with_a_warning_and_its_global_type_kept():
    # The doc's model_quant_type says W8A8_DYNAMIC while every tensor listed is W8A8: both are kept.
    result = describe(description=load_fixture('quant_mindie-llm-doc_quant_model_description_trailing-comma.txt'))
    assert (result['format'], result['model_quant_type'], result['quant_types']) == \
        ('ascend', 'W8A8_DYNAMIC', ['W8A8', 'W8A8_DYNAMIC'])
    assert result['warnings'][0].startswith('quant_model_description.json is not strict JSON')


def test_msmodelslim_description_with_hash_comments_and_an_ellipsis_line_is_read():
    result = describe(description=load_fixture('quant_msmodelslim-doc_quant_model_description_W8A8S_hash-comments.txt'))
    assert (result['format'], result['model_quant_type'], result['quant_types']) == ('ascend', 'W8A8S', ['W8A8S'])
    # The globals (C8, FAQuant, per_channel, the group size "256") are not tensors' types.
    assert len(result['warnings']) == 1


def test_mindie_style_config_embeds_the_description_in_quantization_config():
    # The excerpt stops inside quantization_config: it is closed here as the original file closes it.
    text = load_fixture('quant_vllm-ascend-633_config.json_MindIE-style-quantization_config.txt') + '}\n}\n'
    result = describe(config=text)
    assert (result['format'], result['model_quant_type'], result['quant_types'], result['description_file']) == \
        ('ascend', 'W8A8', ['W8A8'], False)
    assert (result['architectures'], result['model_type'], result['torch_dtype']) == \
        (['Qwen2ForCausalLM'], 'qwen2', 'bfloat16')
    assert any('MindIE' in warning for warning in result['warnings'])


def test_description_without_model_quant_type_is_derived_from_the_tensors():
    # A chunk of the same description (layer 40, down_proj rolled back to FLOAT), made an object of its own.
    chunk = load_fixture('quant_vllm-ascend-633_description-chunk_down_proj-FLOAT.txt')
    result = describe(description='{\n' + chunk + '}\n')
    assert (result['model_quant_type'], result['quant_types']) == ('W8A8', ['W8A8'])
    assert any('names no model_quant_type' in warning for warning in result['warnings'])


def test_the_bare_chunk_is_no_json_at_all_and_is_a_warning_not_a_traceback():
    result = describe(description=load_fixture('quant_vllm-ascend-633_description-chunk_down_proj-FLOAT.txt'))
    assert result['format'] == 'float' and result['description_file'] is True
    assert result['warnings'][0].startswith('quant_model_description.json is not JSON')


def test_compressed_tensors_under_the_older_compression_config_key_is_a_quant_method():
    text = load_fixture('quant_llm-compressor-870_compressed-tensors-config.json_compression_config-key.txt') + '}\n}\n'
    result = describe(config=text)
    # The excerpt's block names no quant_method (it ends before one would be): vLLM is left to decide.
    assert (result['format'], result['quant_method'], result['architectures']) == ('unknown', None, ['YuanForCausalLM'])
    assert problems(result) == [] and problems(result, has_npus=False) == []
    [refused] = problems(result, 'ascend')
    assert 'is not an msModelSlim model' in refused
    assert any('compression_config' in warning for warning in result['warnings'])


def test_compressed_tensors_quantization_config_names_its_method():
    config = json.dumps({'architectures': ['Qwen2ForCausalLM'],
                         'quantization_config': {'quant_method': 'compressed-tensors', 'format': 'int-quantized',
                                                 'ignore': ['lm_head'], 'config_groups': {}}})
    result = describe(config=config)
    assert (result['format'], result['quant_method'], result['quant_format'], result['warnings']) == \
        ('quant_method', 'compressed-tensors', 'int-quantized', [])


@pytest.mark.parametrize('config, description, warning', [
    ('[1, 2]', None, 'config.json holds a JSON list, not an object'),
    ('{"a": ', None, 'config.json is not JSON'),
    (FLOAT_CONFIG, '{"model_quant_type": "W9A9"}', 'quant type W9A9 is not one msModelSlim is known to write'),
    (FLOAT_CONFIG, '{"model_quant_type": 7, "x.weight": "W8A8"}', 'model_quant_type \'7\' is not a quant type'),
    (FLOAT_CONFIG, '{"x.weight": "W8 A8"}', 'the type of x.weight is not a quant type'),
])
def test_what_cannot_be_read_is_a_warning(config, description, warning):
    result = describe(config=config, description=description)
    assert any(warning in text for text in result['warnings']), result['warnings']


def test_a_float_model():
    result = describe()
    assert (result['format'], result['quant_types'], result['architectures'], result['warnings']) == \
        ('float', [], ['DeepseekV3ForCausalLM'], [])


# -------------------------------------------------------------------------------------------- the node reader

def test_reader_reads_the_two_files_only(tmp_path):
    (tmp_path / 'config.json').write_text(FLOAT_CONFIG)
    (tmp_path / 'quant_model_description.json').write_text(W8A8_DYNAMIC)
    result = _model_format.read_model_dir(str(tmp_path))
    assert (result['exists'], result['error'], result['format'], result['quant_types']) == \
        (True, '', 'ascend', ['W8A8_DYNAMIC'])


def test_read_model_gives_config_json_parsed_once_for_the_sizing(tmp_path):
    (tmp_path / 'config.json').write_text('{"model_type": "deepseek_v3",  # a comment\n "hidden_size": 7168,}\n')
    description, config = _model_format.read_model(str(tmp_path))
    assert config == {'model_type': 'deepseek_v3', 'hidden_size': 7168}
    assert description == _model_format.read_model_dir(str(tmp_path)) and description['format'] == 'float'
    assert _model_format.read_model(str(tmp_path / 'none'))[1] is None
    (tmp_path / 'config.json').write_text('"a string"')
    assert _model_format.read_model(str(tmp_path))[1] is None
    assert _model_format.describe_with_config(None)[1] is None


def test_reader_a_missing_directory_and_a_missing_config(tmp_path):
    assert _model_format.read_model_dir(str(tmp_path / 'none'))['exists'] is False
    result = _model_format.read_model_dir(str(tmp_path))
    assert (result['exists'], result['config_found'], result['error']) == (True, False, '')


def test_reader_refuses_a_fifo_and_a_file_beyond_the_bound(tmp_path, monkeypatch):
    os.mkfifo(str(tmp_path / 'config.json'))
    result = _model_format.read_model_dir(str(tmp_path))
    assert result['error'] == '%s/config.json is not a regular file' % tmp_path
    os.unlink(str(tmp_path / 'config.json'))
    (tmp_path / 'config.json').write_text(FLOAT_CONFIG)
    monkeypatch.setattr(_model_format, 'MAX_BYTES', 10)
    assert _model_format.read_model_dir(str(tmp_path))['error'] == '%s/config.json is larger than 10 bytes' % tmp_path


# ------------------------------------------------------------------------------------------------ the decision

A2 = ({'chip_family': '910B'},) * 8
DUO = ({'chip_family': '310P'},) * 8


def problems(description, quantization=None, has_npus=True, devices=A2, chips=None):
    description = dict(description, path='/m', exists=True, error='')
    return _model_format.format_problems(description, quantization, has_npus, chips, devices)


ASCEND = dict(describe(description=W8A8_DYNAMIC))
FLOAT = dict(describe())
COMPRESSED = dict(describe(config=json.dumps({'quantization_config': {'quant_method': 'compressed-tensors'}})))


def test_an_msmodelslim_model_on_an_npu_host_with_the_ascend_method_is_served():
    assert problems(ASCEND, 'ascend') == []


def test_an_msmodelslim_model_without_the_ascend_method_names_the_variable():
    assert problems(ASCEND) == ['/m is quantized by msModelSlim (W8A8_DYNAMIC), which vllm-ascend serves only with '
                                '--quantization ascend: set vllm_service_quantization to ascend (it is unset)']


def test_an_msmodelslim_model_on_vllms_cpu_build_is_refused_with_what_to_do():
    [problem] = problems(ASCEND, 'ascend', has_npus=False)
    assert "vLLM's CPU build on this host (no NPUs) cannot serve that format" in problem
    assert 'serve it on an Ascend host, or quantize the float model with llm-compressor' in problem


@pytest.mark.parametrize('description, what', [(FLOAT, 'a float model'),
                                               (COMPRESSED, 'a compressed-tensors model')])
def test_the_ascend_method_on_a_model_without_a_description_is_refused(description, what):
    for has_npus in (True, False):
        [problem] = problems(description, 'ascend', has_npus=has_npus)
        assert what in problem and 'it has no quant_model_description.json' in problem
        assert 'There is no available ascend quantizer' in problem


def test_a_quant_method_model_takes_no_method_or_its_own():
    assert problems(COMPRESSED) == problems(COMPRESSED, 'compressed-tensors') == []
    [problem] = problems(COMPRESSED, 'awq')
    assert problem.startswith('/m declares quant_method compressed-tensors in config.json, but '
                              'vllm_service_quantization')


def test_a_float_model_takes_another_method_vllm_decides_on():
    assert problems(FLOAT) == problems(FLOAT, 'fp8') == []


def test_product_limits_refuse_a_type_with_its_documented_source():
    w4a8 = dict(describe(description='{"model_quant_type": "W4A8_DYNAMIC"}'))
    [problem] = problems(w4a8, 'ascend', devices=DUO)
    assert 'W4A8_DYNAMIC weights, which vllm-ascend does not serve on Atlas 300I Duo / 300I Pro (310P)' in problem
    assert 'source: vllm-ascend docs/source/tutorials/hardwares/310p.md' in problem
    assert problems(ASCEND, 'ascend', devices=DUO) == []
    sc = dict(describe(description='{"model_quant_type": "W8A8SC"}'))
    [problem] = problems(sc, 'ascend', devices=A2)
    assert 'W8A8SC weights, which vllm-ascend does not serve on Atlas 800I A2' in problem
    assert problems(sc, 'ascend', devices=DUO) == []


@pytest.mark.parametrize('chips, family', [
    ([{'name': '310P3'}] * 2, '310P'), ([{'name': '910B4'}], '910B'),
    ([{'name': 'Ascend910', 'npu_name': '9392'}], '910_93'), ([{'name': '910B4'}, {'name': '310P3'}], None),
    ([{'name': 'Ascend910'}], None), ([], None),
])
def test_the_product_from_npu_smis_chip_names(chips, family):
    assert _model_format.product_family(chips, [{'chip_family': 'unknown'}]) == family


@pytest.mark.parametrize('description, problem', [
    ({'exists': False}, 'the model directory /m does not exist: set vllm_service_model'),
    ({'error': '/m/config.json: Permission denied'}, 'the model directory cannot be read: /m/config.json'),
    ({'config_found': False}, '/m has no config.json, which vLLM reads'),
])
def test_a_directory_that_is_no_model(description, problem):
    model = dict(FLOAT, path='/m', exists=True, error='')
    model.update(description)
    found = _model_format.format_problems(model, None, True)
    assert len(found) == 1 and found[0].startswith(problem), found


# ------------------------------------------------------------------------------------- through the serving plan

def a2_facts(model_format):
    facts = {'npu_count': 8, 'npu_smi_complete': True,
             'chips': [{'npu_id': index, 'chip_id': 0, 'name': '910B4'} for index in range(8)],
             'npu_devices': [{'numa_node': 0, 'numa_cpulist': '0-23', 'chip_family': '910B'}] * 8,
             'existing_paths': [], 'engine_paths': {'docker': '/usr/bin/docker'}, 'ascend_runtime': False}
    if model_format is not None:
        facts['model_format'] = dict(model_format, path='/data/models/DeepSeek-R1-W8A8', exists=True, error='')
    return facts


def plan_problems(model_format, **inputs):
    from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import DEFAULTS, IMAGE
    return _serving.serving_plan(dict(DEFAULTS, image=IMAGE, **inputs), a2_facts(model_format))['problems']


def test_the_plan_reads_the_method_from_the_final_argv_in_any_spelling():
    assert plan_problems(ASCEND, quantization='ascend') == []
    # The recipe of vllm-ascend PR 1522: the flags after the model, as extra arguments.
    recipe = load_fixture('vllm-serve_vllm-ascend-pr1522_quantization-ascend.txt')
    command = recipe.split('api_server \\\n', 1)[1].split('```', 1)[0].replace('\\\n', ' ')
    args = shlex.split(command)
    extra = args[args.index('--model') + 2:]
    assert '--quantization' in extra
    assert plan_problems(ASCEND, extra_args=extra) == []
    assert plan_problems(ASCEND, extra_args=['--quantization=ascend']) == []
    assert plan_problems(ASCEND, extra_args=['-q', 'ascend']) == []
    # The last one counts, as argparse keeps it.
    [problem] = plan_problems(ASCEND, quantization='ascend', extra_args=['--quantization', 'fp8'])
    assert 'set vllm_service_quantization to ascend (it is fp8)' in problem


def test_the_plan_refuses_the_method_on_a_float_model_and_decides_nothing_without_the_model():
    [problem] = plan_problems(FLOAT, quantization='ascend')
    assert problem.startswith('vllm_service_quantization (or --quantization in vllm_service_extra_args) is ascend')
    assert plan_problems(None, quantization='ascend') == []


# The real output of llm-compressor on the tiny DeepSeek-V3 (format int-quantized), as vLLM's CPU build serves it.
W8A8_INT8 = dict(describe(config=load_fixture(
    'quant_llmcompressor-0.14.0.1_tiny-deepseek-v3_w8a8-with-deepseek-exclusions_config.json.txt')), path='/m')


def test_an_int8_w8a8_on_the_cpu_is_refused_in_float32_only():
    assert W8A8_INT8['quant_method'] == 'compressed-tensors' and W8A8_INT8['quant_format'] == 'int-quantized'
    for dtype in ('float32', 'float'):
        [problem] = _model_format.dtype_problems(W8A8_INT8, dtype, False)
        assert problem.startswith('/m is a compressed-tensors W8A8 (format int-quantized')
        assert 'vllm_service_dtype (or --dtype in vllm_service_extra_args) %s' % dtype in problem
        assert problem.endswith('set vllm_service_dtype to bfloat16')
    for dtype in ('bfloat16', 'float16', 'half', 'auto', None):
        assert _model_format.dtype_problems(W8A8_INT8, dtype, False) == []
    # On Ascend hosts vllm-ascend serves it; a float model or another format is not the CPU int8 kernel's.
    assert _model_format.dtype_problems(W8A8_INT8, 'float32', True) == []
    assert _model_format.dtype_problems(dict(FLOAT, path='/m'), 'float32', False) == []
    assert _model_format.dtype_problems(dict(W8A8_INT8, quant_format='pack-quantized'), 'float32', False) == []
    assert _model_format.dtype_problems(dict(COMPRESSED, path='/m'), 'float32', False) == []


def test_the_plan_reads_the_dtype_from_the_final_argv():
    from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import DEFAULTS

    def cpu_plan(**inputs):
        facts = {'npu_count': 0, 'npu_smi_complete': True, 'chips': [], 'npu_devices': [], 'existing_paths': [],
                 'engine_paths': {}, 'ascend_runtime': False,
                 'model_format': dict(W8A8_INT8, path='/srv/models/w8a8', exists=True, error='')}
        return _serving.serving_plan(dict(DEFAULTS, mode='native', **inputs), facts)['problems']

    [problem] = cpu_plan(dtype='float32')
    assert problem.startswith('/srv/models/w8a8 is a compressed-tensors W8A8')
    assert cpu_plan(dtype='bfloat16') == []
    assert len(cpu_plan(dtype='bfloat16', extra_args=['--dtype=float32'])) == 1
    assert cpu_plan(dtype='float32', extra_args=['--dtype', 'bfloat16']) == []
