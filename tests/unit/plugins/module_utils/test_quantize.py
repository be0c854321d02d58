# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The quantization job's decisions: the source read and refused, model types, scheme, calibration, output path,
space, each backend's argv, the keep-or-rebuild decision, and the summary of real outputs of both backends."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils import _quantize as q
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

MSMODELSLIM_V3 = 'quant_msmodelslim-26.1.0_tiny-deepseek-v3_default-model-type_quant_model_description.json.txt'
LLMCOMPRESSOR_V3 = 'quant_llmcompressor-0.14.0.1_tiny-deepseek-v3_w8a8-with-deepseek-exclusions_config.json.txt'
MSIT_EXCERPT = ('quant_vllm-ascend-633_msit-w8a8-qwen2.5-coder-32b_description-entries-layer40_weight-scale-offset-'
                'input-quant_bias-deq_scale_down_proj-FLOAT-mixed-precision.txt')


def model(tmp_path, name='model', **config):
    path = tmp_path / name
    path.mkdir()
    (path / 'config.json').write_text(json.dumps(config))
    (path / 'model.safetensors').write_bytes(b'\0' * 1000)
    return str(path)


def test_read_source_gives_the_model_type_architectures_and_dtype(tmp_path):
    path = model(tmp_path, architectures=['DeepseekV3ForCausalLM'], model_type='deepseek_v3', dtype='float32')
    assert q.read_source(path) == dict(architectures=['DeepseekV3ForCausalLM'], model_type='deepseek_v3',
                                       dtype='float32')


def test_read_source_takes_torch_dtype_of_older_configs(tmp_path):
    assert q.read_source(model(tmp_path, model_type='qwen2', torch_dtype='bfloat16'))['dtype'] == 'bfloat16'


def test_a_model_quantized_by_msmodelslim_is_refused(tmp_path):
    path = model(tmp_path, model_type='qwen2')
    open(os.path.join(path, 'quant_model_description.json'), 'w').close()
    with pytest.raises(q.QuantizeError, match=r'is quantized already \(quant_model_description.json\)'):
        q.read_source(path)


def test_a_model_with_a_quantization_config_is_refused(tmp_path):
    path = model(tmp_path, model_type='deepseek_v3', quantization_config={'quant_method': 'compressed-tensors'})
    with pytest.raises(q.QuantizeError, match='config.json has quantization_config'):
        q.read_source(path)


def test_a_source_without_config_names_the_variable(tmp_path):
    with pytest.raises(q.QuantizeError, match='cannot read the config of model_quantize_source'):
        q.read_source(str(tmp_path))
    with pytest.raises(q.QuantizeError, match='model_quantize_source .* is not a directory'):
        q.read_source(str(tmp_path / 'missing'))


def test_an_int8_dtype_is_refused(tmp_path):
    with pytest.raises(q.QuantizeError, match="dtype 'int8'"):
        q.read_source(model(tmp_path, model_type='qwen2', dtype='int8'))


@pytest.mark.parametrize('model_type, expected', [
    ('qwen2', 'DeepSeek-R1-Distill-Qwen-7B'), ('deepseek_v3', 'default'), ('deepseek_v2', 'default')])
def test_msmodelslim_model_types(model_type, expected):
    assert q.backend_model_type('msmodelslim', dict(model_type=model_type, architectures=[])) == expected


def test_an_unknown_model_type_names_model_quantize_model_type():
    with pytest.raises(q.QuantizeError, match="model_type 'gpt2' .*GPT2LMHeadModel.*set model_quantize_model_type"):
        q.backend_model_type('msmodelslim', dict(model_type='gpt2', architectures=['GPT2LMHeadModel']))
    assert q.backend_model_type('msmodelslim', dict(model_type='gpt2', architectures=[]), 'default') == 'default'
    assert q.backend_model_type('llmcompressor', dict(model_type='gpt2', architectures=[])) == 'gpt2'


def test_the_default_msmodelslim_config_follows_the_architecture():
    assert q.default_msmodelslim_config('deepseek_v3') == 'msmodelslim-deepseek-w8a8.yaml'
    assert q.default_msmodelslim_config('qwen2') == 'msmodelslim-w8a8.yaml'


def test_schemes_and_backends_are_checked():
    q.check_scheme('msmodelslim', 'w8a8')
    q.check_scheme('llmcompressor', 'w8a8')
    with pytest.raises(q.QuantizeError, match="model_quantize_scheme 'w4a8' is not one msmodelslim makes: w8a8"):
        q.check_scheme('msmodelslim', 'w4a8')
    with pytest.raises(q.QuantizeError, match="model_quantize_backend 'gptq'"):
        q.check_scheme('gptq', 'w8a8')


def test_calibration_reads_json_lines_and_plain_lines():
    assert q.parse_calibration('{"text": "a b"}\n\n{"text": "c"}\n', 'f') == ['a b', 'c']
    assert q.parse_calibration('first line\n  second line  \n\n', 'f') == ['first line', 'second line']


@pytest.mark.parametrize('text, message', [
    ('', 'f holds no text'),
    ('\n  \n', 'f holds no text'),
    ('{"text": "a"}\n{"text": \n', 'f line 2 is not JSON'),
    ('{"prompt": "a"}\n', 'f line 1 has no "text" string'),
    ('{"text": "  "}\n', 'f line 1 has no "text" string'),
    pytest.param('x\n' * (q.MAX_CALIBRATION_LINES + 1), 'f has 4097 lines, more than 4096', id='too-many-lines'),
])
def test_bad_calibration_names_the_file_and_line(text, message):
    with pytest.raises(q.QuantizeError, match='model_quantize_calibration_file ' + message):
        q.parse_calibration(text, 'f')


def test_calibration_written_for_the_runner_reads_back():
    texts = ['a "quoted"\nline', '量化']
    assert q.parse_calibration(q.calibration_jsonl(texts), 'f') == texts


def test_the_output_may_not_be_inside_the_source_or_hold_it(tmp_path):
    source = model(tmp_path)
    q.check_output_path(source, str(tmp_path / 'model-W8A8'))
    with pytest.raises(q.QuantizeError, match='model_quantize_output .* is inside model_quantize_source'):
        q.check_output_path(source, os.path.join(source, 'w8a8'))
    with pytest.raises(q.QuantizeError, match='is inside model_quantize_source'):
        q.check_output_path(source, source + '/')
    with pytest.raises(q.QuantizeError, match='model_quantize_source .* is inside model_quantize_output'):
        q.check_output_path(source, str(tmp_path))


def test_the_output_inside_the_source_through_a_link_is_refused(tmp_path):
    source = model(tmp_path)
    os.symlink(source, str(tmp_path / 'link'))
    with pytest.raises(q.QuantizeError, match='is inside model_quantize_source'):
        q.check_output_path(source, str(tmp_path / 'link' / 'out'))


def test_space_is_the_factor_times_the_source():
    assert q.check_space(2000, 1000, 2.0, '/o') == 2000
    with pytest.raises(q.QuantizeError, match=r'/o has 1999 bytes free; the job needs 2000 \(model_quantize_space_factor'):
        q.check_space(1999, 1000, 2.0, '/o')


def test_directory_size_counts_every_file(tmp_path):
    path = model(tmp_path, model_type='qwen2')
    assert q.directory_size(path) == 1000 + os.path.getsize(os.path.join(path, 'config.json'))


def test_msmodelslim_argv_always_names_a_config():
    assert q.msmodelslim_argv('/v/bin/msmodelslim', '/m', '/o.partial.x', 'default', '/c.yaml', 'cpu') == [
        '/v/bin/msmodelslim', 'quant', '--model_path', '/m', '--save_path', '/o.partial.x', '--device', 'cpu',
        '--model_type', 'default', '--config_path', '/c.yaml', '--trust_remote_code', 'False']


def test_llmcompressor_keeps_deepseeks_experts_kv_b_proj_and_router_float():
    assert q.llmcompressor_ignore('qwen2') == ['lm_head']
    ignore = q.llmcompressor_ignore('deepseek_v3')
    assert ignore == ['lm_head', r're:.*mlp\.experts\..*', r're:.*kv_b_proj$', r're:.*mlp\.gate$']
    assert q.llmcompressor_argv('/v/bin/python', '/r.py', '/m', '/o.p', 'w8a8', '/c.jsonl', ignore[:2]) == [
        '/v/bin/python', '/r.py', '--model', '/m', '--output', '/o.p', '--scheme', 'W8A8', '--calibration', '/c.jsonl',
        '--ignore', 'lm_head', '--ignore', r're:.*mlp\.experts\..*']


def test_the_llmcompressor_exclusions_are_those_of_its_real_output():
    # The real output's ignore list, expanded by llm-compressor from the patterns: every DeepSeek exclusion is there.
    ignore = json.loads(load_fixture(LLMCOMPRESSOR_V3))['quantization_config']['ignore']
    assert 'lm_head' in ignore
    assert 'model.layers.0.self_attn.kv_b_proj' in ignore and 'model.layers.1.mlp.gate' in ignore
    assert 'model.layers.1.mlp.experts.0.down_proj' in ignore
    assert not [name for name in ignore if 'q_a_proj' in name or 'shared_experts' in name]


def record(**changes):
    values = dict(source_manifest='s', backend='msmodelslim', backend_version='26.1.0', scheme='w8a8',
                  model_type='default', config_sha256='c', calibration_sha256='k', ignore=[])
    values.update(changes)
    return q.make_record(**values)


def test_an_output_is_kept_only_when_its_record_matches_and_its_files_verify():
    wanted = record()
    assert q.output_state(None, wanted, False) == 'missing'
    assert q.output_state(record(), wanted, True) == 'current'
    assert q.output_state(record(), wanted, False) == 'stale'
    assert q.output_state({}, wanted, True) == 'stale'


@pytest.mark.parametrize('change', [
    dict(source_manifest='s2'), dict(backend_version='26.2.0'), dict(model_type='DeepSeek-R1-Distill-Qwen-7B'),
    dict(config_sha256='c2'), dict(calibration_sha256='k2'), dict(ignore=['lm_head'])])
def test_any_change_in_what_made_the_output_rebuilds_it(change):
    assert q.output_state(record(**change), record(), True) == 'stale'


def test_the_record_text_reads_back():
    assert json.loads(q.record_text(record())) == record()


def write(tmp_path, name, text):
    out = tmp_path / 'out'
    out.mkdir(exist_ok=True)
    (out / name).write_text(text)
    return str(out)


def test_summary_of_msmodelslims_real_deepseek_output(tmp_path):
    summary = q.summarize(write(tmp_path, 'quant_model_description.json', load_fixture(MSMODELSLIM_V3)))
    assert summary['format'] == 'ascend' and summary['model_quant_type'] == 'W8A8'
    assert summary['layers'] == {'FLOAT': 14, 'W8A8': 6, 'W8A8_DYNAMIC': 6}
    assert 'model.layers.0.self_attn.kv_b_proj' in summary['float_layers']
    assert 'model.layers.1.mlp.gate' in summary['float_layers']
    assert 'model.layers.1.mlp.experts.gate_up_proj' in summary['float_layers']


def test_summary_of_an_msit_description_with_a_float_down_proj(tmp_path):
    # The excerpt ends with a comma-less last entry inside an object: wrapped into one to be read.
    text = '{' + load_fixture(MSIT_EXCERPT).rstrip().rstrip(',') + '}'
    summary = q.summarize(write(tmp_path, 'quant_model_description.json', text))
    assert summary['float_layers'] == ['model.layers.40.mlp.down_proj']
    assert summary['layers']['FLOAT'] == 1


def test_summary_of_llmcompressors_real_output(tmp_path):
    summary = q.summarize(write(tmp_path, 'config.json', load_fixture(LLMCOMPRESSOR_V3)))
    assert summary['format'] == 'int-quantized'
    assert summary['layers'] == {'group_0': ['Linear']}
    assert 'lm_head' in summary['float_layers']


def test_an_output_without_a_description_or_quantization_config_is_an_error(tmp_path):
    with pytest.raises(q.QuantizeError, match='neither quant_model_description.json nor a quantization_config'):
        q.summarize(write(tmp_path, 'config.json', '{"model_type": "qwen2"}'))


@pytest.mark.parametrize('mode, is_dir, expected', [
    (0o700, True, 0o755), (0o400, False, 0o444), (0o600, False, 0o644), (0o644, False, 0o644), (0o755, True, 0o755),
])
def test_an_output_is_made_readable_by_the_serving_account(mode, is_dir, expected):
    assert q.readable_mode(mode, is_dir) == expected
