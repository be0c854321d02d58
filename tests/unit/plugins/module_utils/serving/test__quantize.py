# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The quantization job's decisions: the source read and refused, model types, scheme, calibration, output path,
space, each backend's argv, the keep-or-rebuild decision, and the summary of real outputs of both backends."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _quantize as q
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import fails_after, load_fixture

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


# ------------------------------------------------------------------ hostile files, types and paths (issue 32)

def refused_config(tmp_path, text):
    path = tmp_path / 'model'
    path.mkdir()
    (path / 'config.json').write_text(text)
    return str(path)


@pytest.mark.parametrize('config, message', [
    ({'model_type': 'qwen2', 'architectures': 5}, 'has architectures as a JSON number; it must be a list of strings'),
    ({'model_type': 'qwen2', 'architectures': 'Qwen2ForCausalLM'}, 'has architectures as a JSON string'),
    ({'model_type': 'qwen2', 'architectures': [1]}, 'architectures as a JSON array with an item that is no string'),
    ({'model_type': 'qwen2', 'architectures': {}}, 'has architectures as a JSON object'),
    ({'model_type': []}, 'has model_type as a JSON array; it must be a string'),
    ({'model_type': 5}, 'has model_type as a JSON number'),
    ({'model_type': {'a': 1}}, 'has model_type as a JSON object'),
    ({'model_type': True}, 'has model_type as a JSON boolean'),
    ({'model_type': 'qwen2', 'torch_dtype': {}}, 'has torch_dtype as a JSON object; it must be a string'),
    ({'model_type': 'qwen2', 'torch_dtype': []}, 'has torch_dtype as a JSON array'),
    ({'model_type': 'qwen2', 'torch_dtype': 16}, 'has torch_dtype as a JSON number'),
    ({'model_type': 'qwen2', 'dtype': {}}, 'has dtype as a JSON object'),
    ({'model_type': 'qwen2', 'torch_dtype': 'bfloat16', 'dtype': []}, 'has dtype as a JSON array'),
])
def test_a_config_value_of_the_wrong_type_names_the_file_and_the_key(tmp_path, config, message):
    path = refused_config(tmp_path, json.dumps(config))
    with pytest.raises(q.QuantizeError) as raised:
        q.read_source(path)
    assert str(raised.value).startswith('the config of model_quantize_source %s/config.json has ' % path)
    assert message in str(raised.value)


@pytest.mark.parametrize('text, reason', [
    ('[]', 'a JSON array, not an object'),
    ('"qwen2"', 'a JSON string, not an object'),
    ('5', 'a JSON number, not an object'),
    ('null', 'a JSON null, not an object'),
    ('[' * 100000 + ']' * 100000, 'nested deeper than 64 levels'),
    ('{"a": ' * 65 + '1' + '}' * 65, 'nested deeper than 64 levels'),
    ('{"model_type": "qwen2", "rope_theta": NaN}', 'NaN is not a JSON number'),
    ('{"model_type": "qwen2", "rope_theta": Infinity}', 'Infinity is not a JSON number'),
    ('{"model_type": ', 'Expecting value'),
    (b'\xff\xfe{}', 'not UTF-8'),
])
def test_a_config_that_is_no_json_object_names_the_file_and_why(tmp_path, text, reason):
    path = tmp_path / 'model'
    path.mkdir()
    (path / 'config.json').write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(q.QuantizeError, match='^cannot read the config of model_quantize_source %s/config.json: '
                                              % path) as raised:
        q.read_source(str(path))
    assert reason in str(raised.value)


def special(kind, path):
    """Put at ``path`` a file no read may block on or run away with; return the reason the reader gives."""
    if kind == 'fifo':
        os.mkfifo(path)
        return r'a FIFO \(named pipe\), not a regular file'
    if kind == 'zero':
        os.symlink('/dev/zero', path)
        return 'a character device, not a regular file'
    if kind == 'socket':
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.close()
        return 'a socket, not a regular file'
    if kind == 'directory':
        os.mkdir(path)
        return 'a directory, not a regular file'
    with open(path, 'wb') as handle:
        handle.truncate(kind)
    return 'larger than %d bytes' % (kind - 1)


KINDS = ['fifo', 'zero', 'socket', 'directory']


@pytest.mark.parametrize('kind', KINDS + [q.MAX_CONFIG_BYTES + 1])
def test_a_config_that_is_no_regular_file_is_refused_without_blocking(tmp_path, kind):
    path = tmp_path / 'model'
    path.mkdir()
    reason = special(kind, str(path / 'config.json'))
    with fails_after(10):
        with pytest.raises(q.QuantizeError, match='cannot read the config of model_quantize_source .*: ' + reason):
            q.read_source(str(path))


@pytest.mark.parametrize('kind', KINDS + [q.MAX_CALIBRATION_BYTES + 1])
def test_a_calibration_file_that_is_no_regular_file_is_refused_without_blocking(tmp_path, kind):
    path = str(tmp_path / 'calibration.jsonl')
    reason = special(kind, path)
    with fails_after(10):
        with pytest.raises(q.QuantizeError, match='^cannot read model_quantize_calibration_file %s: %s' % (path, reason)):
            q.read_calibration(path)


def test_a_calibration_file_is_read_bounded_or_is_none_when_missing(tmp_path):
    assert q.read_calibration(str(tmp_path / 'missing')) is None
    (tmp_path / 'c.jsonl').write_bytes(b'\xef\xbb\xbf{"text": "a"}\n')
    assert q.read_calibration(str(tmp_path / 'c.jsonl')) == ['a']
    (tmp_path / 'bad').write_bytes(b'\xff\n')
    with pytest.raises(q.QuantizeError, match='model_quantize_calibration_file .*bad: not UTF-8 text'):
        q.read_calibration(str(tmp_path / 'bad'))


@pytest.mark.parametrize('line, reason', [
    ('{"text": NaN}', 'NaN is not a JSON number'),
    ('{"text": "a", "score": -Infinity}', '-Infinity is not a JSON number'),
    ('{"text": ' + '[' * 70 + ']' * 70 + '}', 'nested deeper than 64 levels'),
    ('{"text": "a"', 'Expecting'),
])
def test_calibration_lines_are_read_with_the_collections_json_reader(line, reason):
    with pytest.raises(q.QuantizeError, match=r'model_quantize_calibration_file f line 2 is not JSON: .*' + reason):
        q.parse_calibration('{"text": "first"}\n' + line + '\n', 'f')


@pytest.mark.parametrize('kind', KINDS + [q.MAX_TOOL_BYTES + 1])
def test_the_tool_config_is_hashed_bounded(tmp_path, kind):
    path = str(tmp_path / 'config.yaml')
    reason = special(kind, path)
    with fails_after(10):
        with pytest.raises(q.QuantizeError, match='^cannot read model_quantize_msmodelslim_config %s: %s' % (path, reason)):
            q.file_sha256(path, 'model_quantize_msmodelslim_config')


def test_the_tool_config_hash_is_that_of_its_bytes(tmp_path):
    (tmp_path / 'c.yaml').write_bytes(b'a: 1\n')
    assert q.file_sha256(str(tmp_path / 'c.yaml'), 'x') == hashlib.sha256(b'a: 1\n').hexdigest()


SYSTEM_PATHS = ['/', '//', '/.', '/usr', '/usr/', '//usr', '/usr/bin/..', '/./etc', '/etc/', '/etc/vllm', '/var/lib',
                '/usr/local', '/usr/local/Ascend/', '/root', '/home/alice', '/opt', '/srv', '/data/../usr/lib64',
                '/proc/self', '/boot/efi']
BAD_PATHS = ['relative/out', '', '/srv/a\nb', '/srv/a\rb', '/srv/a\x00b', '/srv/\x1b[31mx']


def good_inputs(tmp_path, **changes):
    values = dict(source=str(tmp_path / 'model'), output=str(tmp_path / 'out'), venv=str(tmp_path / 'venv'),
                  work_dir=str(tmp_path / 'work'), space_factor=2.0, timeout=7200)
    values.update(changes)
    return values


def test_good_inputs_have_no_problem(tmp_path):
    assert q.input_problems(**good_inputs(tmp_path)) == []
    assert q.input_problems(**good_inputs(tmp_path, space_factor='1.5', timeout='60', venv=None, work_dir=None)) == []
    assert q.input_problems(**good_inputs(tmp_path, space_factor=q.MAX_SPACE_FACTOR, timeout=q.MAX_SECONDS)) == []


@pytest.mark.parametrize('option', ['output', 'venv', 'work_dir'])
@pytest.mark.parametrize('path', SYSTEM_PATHS + BAD_PATHS)
def test_a_path_the_role_makes_or_replaces_is_no_system_directory_in_any_spelling(tmp_path, option, path):
    problems = q.input_problems(**good_inputs(tmp_path, **{option: path}))
    assert len(problems) == 1 and problems[0].startswith('model_quantize_%s ' % option)
    assert re.search("system directory|home directory|system's own files|must be an absolute path|"
                     "must not hold control characters", problems[0])


@pytest.mark.parametrize('option', ['output', 'venv', 'work_dir'])
def test_a_link_into_the_system_is_refused(tmp_path, option):
    os.symlink('/usr', str(tmp_path / 'link'))
    problems = q.input_problems(**good_inputs(tmp_path, **{option: str(tmp_path / 'link')}))
    assert problems == ['model_quantize_%s %s resolves to /usr, which is a top-level system directory: the collection '
                        'replaces what it finds there, so it never takes a system directory; choose a directory of its '
                        'own' % (option, tmp_path / 'link')]


@pytest.mark.parametrize('option', ['venv', 'work_dir'])
@pytest.mark.parametrize('where', ['{out}', '{out}/', '{out}/inner', '{out}/./x/..'])
def test_the_venv_and_the_work_directory_are_not_inside_the_output(tmp_path, option, where):
    out = str(tmp_path / 'out')
    problems = q.input_problems(**good_inputs(tmp_path, **{option: where.format(out=out)}))
    assert problems == ['model_quantize_%s %s is inside model_quantize_output %s, which a build replaces: give it a '
                        'directory of its own' % (option, where.format(out=out), out)]


@pytest.mark.parametrize('path', BAD_PATHS)
def test_the_paths_read_are_absolute_without_control_characters(tmp_path, path):
    assert q.input_problems(**good_inputs(tmp_path, source=path))[0].startswith('model_quantize_source must')
    problems = q.input_problems(**good_inputs(tmp_path), read_paths=[('model_quantize_calibration_file', path)])
    assert problems == ([] if path == '' else ['model_quantize_calibration_file must %s; got %r' % (
        'be an absolute path' if not path.startswith('/') else 'not hold control characters', path)])


@pytest.mark.parametrize('factor', [float('nan'), float('inf'), float('-inf'), 'nan', 'inf', '1e400', 1e400, 0, 0.0, -1,
                                    0.5, 0.999, q.MAX_SPACE_FACTOR * 10, 10 ** 400, True, False, None, 'two', [], {}])
def test_a_space_factor_that_is_no_finite_number_of_1_or_more_is_refused(tmp_path, factor):
    problems = q.input_problems(**good_inputs(tmp_path, space_factor=factor))
    assert len(problems) == 1
    assert problems[0].startswith('model_quantize_space_factor must be a finite number at least 1.0 and at most 1000000000.0; got ')


@pytest.mark.parametrize('timeout', [0, -1, q.MAX_SECONDS + 1, 10 ** 30, float('nan'), float('inf'), 1.5, '1e400',
                                     'nan', True, None, 'soon'])
def test_a_time_limit_out_of_range_is_refused(tmp_path, timeout):
    problems = q.input_problems(**good_inputs(tmp_path, timeout=timeout))
    assert len(problems) == 1
    assert problems[0].startswith('model_quantize_timeout must be a whole number at least 1 and at most %d'
                                  % q.MAX_SECONDS)


def test_every_problem_is_told_at_once(tmp_path):
    problems = q.input_problems(**good_inputs(tmp_path, output='/usr', venv='/etc', space_factor=0, timeout=0))
    assert [problem.split()[0] for problem in problems] == [
        'model_quantize_output', 'model_quantize_venv', 'model_quantize_space_factor', 'model_quantize_timeout']


def made_output(tmp_path, record_text=None, name='out'):
    out = tmp_path / name
    out.mkdir()
    (out / 'model.safetensors').write_bytes(b'\0')
    (out / q.RECORD_NAME).write_text(q.record_text(record()) if record_text is None else record_text)
    return str(out)


def test_nothing_an_empty_directory_and_an_output_this_module_made_may_be_replaced(tmp_path):
    assert q.examine_output(str(tmp_path / 'missing')) == dict(kind='missing', record=None)
    (tmp_path / 'empty').mkdir()
    assert q.examine_output(str(tmp_path / 'empty')) == dict(kind='empty', record=None)
    assert q.examine_output(made_output(tmp_path)) == dict(kind='made', record=record())
    # A record of a later version, with a key more, is still one this module wrote.
    later = dict(record(), version=2, recipe='x')
    assert q.examine_output(made_output(tmp_path, json.dumps(later), 'later'))['record'] == later


def entries(top):
    return sorted((root, tuple(sorted(dirs)), tuple(sorted(files))) for root, dirs, files in os.walk(top))


REFUSAL = ('model_quantize_output {out} is {what}: model_quantize replaces only an empty directory or an output it made '
           '(with its quantize-record.json), so it leaves it as it is; move it away, or choose another path')


@pytest.mark.parametrize('make, what', [
    (lambda out: (out.mkdir(), (out / 'bin').mkdir()), 'a directory of 1 entries (bin) without quantize-record.json'),
    (lambda out: (out.mkdir(), [(out / name).write_text('') for name in 'abcdefg']),
     'a directory of 7 entries (a, b, c, d, e, ...) without quantize-record.json'),
    (lambda out: out.write_text('x'), 'a regular file'),
    (lambda out: os.mkfifo(str(out)), r'a FIFO (named pipe)'),
    (lambda out: os.symlink('/usr', str(out)), 'a symbolic link (to /usr)'),
    (lambda out: os.symlink('elsewhere', str(out)), 'a symbolic link (to elsewhere)'),
    (lambda out: made_output(out.parent, '{"version": 1}'),
     'a directory whose quantize-record.json is not one model_quantize wrote'),
    (lambda out: made_output(out.parent, '[1, 2]'), 'a directory whose record cannot be read ({out}/quantize-record'
                                                    '.json: not a record of model_quantize: a JSON array, not an '
                                                    'object)'),
    (lambda out: made_output(out.parent, '{"version": NaN}'), 'a directory whose record cannot be read ({out}/quantize'
                                                              '-record.json: not a record of model_quantize: NaN is '
                                                              'not a JSON number)'),
    (lambda out: made_output(out.parent, json.dumps(dict(record(), version=True))),
     'a directory whose quantize-record.json is not one model_quantize wrote'),
    (lambda out: made_output(out.parent, json.dumps(dict(record(), backend='gptq'))),
     'a directory whose quantize-record.json is not one model_quantize wrote'),
])
def test_anything_else_at_the_output_is_refused_and_left_as_it_was(tmp_path, make, what):
    out = tmp_path / 'out'
    make(out)
    before = entries(str(tmp_path))
    with pytest.raises(q.QuantizeError) as raised:
        q.examine_output(str(out))
    assert str(raised.value) == REFUSAL.format(out=out, what=what.format(out=out))
    assert entries(str(tmp_path)) == before


@pytest.mark.parametrize('kind', ['fifo', 'zero', 'directory', q.MAX_RECORD_BYTES + 1])
def test_a_record_that_is_no_regular_file_is_refused_without_blocking(tmp_path, kind):
    out = tmp_path / 'out'
    out.mkdir()
    if kind == 'zero':
        os.symlink('/dev/zero', str(out / q.RECORD_NAME))
        expected = 'a directory whose quantize-record.json is a symbolic link'
    else:
        expected = 'a directory whose record cannot be read (%s/%s: %s' % (out, q.RECORD_NAME, special(
            kind, str(out / q.RECORD_NAME)).replace('\\', ''))
    with fails_after(10):
        with pytest.raises(q.QuantizeError) as raised:
            q.examine_output(str(out))
    assert str(raised.value).startswith('model_quantize_output %s is %s' % (out, expected))


@pytest.mark.parametrize('name, document, message', [
    ('config.json', {'quantization_config': {'config_groups': []}},
     'quantization_config.config_groups as a JSON array; it must be an object'),
    ('config.json', {'quantization_config': {'config_groups': {'g': 5}}},
     'quantization_config.config_groups.g as a JSON number'),
    ('config.json', {'quantization_config': {'config_groups': {'g': {'targets': 'Linear'}}}},
     'quantization_config.config_groups.g.targets as a JSON string; it must be a list of strings'),
    ('config.json', {'quantization_config': {'config_groups': {'g': {'targets': ['Linear', 1]}}}},
     'quantization_config.config_groups.g.targets as a JSON array with an item that is no string'),
    ('config.json', {'quantization_config': {'ignore': [1, 'lm_head']}},
     'quantization_config.ignore as a JSON array with an item that is no string'),
    ('config.json', {'quantization_config': {'format': 5}}, 'quantization_config.format as a JSON number'),
    ('config.json', {'quantization_config': {'quant_method': []}}, 'quantization_config.quant_method as a JSON array'),
    ('quant_model_description.json', {'model_quant_type': ['W8A8']}, 'model_quant_type as a JSON array'),
])
def test_an_output_file_of_the_wrong_types_names_the_file_and_the_key(tmp_path, name, document, message):
    out = write(tmp_path, name, json.dumps(document))
    with pytest.raises(q.QuantizeError, match=re.escape("the output's %s/%s has %s" % (out, name, message))):
        q.summarize(out)


@pytest.mark.parametrize('name', ['config.json', 'quant_model_description.json'])
@pytest.mark.parametrize('kind', ['fifo', 'zero', q.MAX_DESCRIPTION_BYTES + 1])
def test_the_output_files_are_read_bounded(tmp_path, name, kind):
    out = tmp_path / 'out'
    out.mkdir()
    reason = special(kind, str(out / name))
    with fails_after(10):
        with pytest.raises(q.QuantizeError, match='cannot read the (config|description) of the output .*: ' + reason):
            q.summarize(str(out))


@pytest.mark.parametrize('kind, state, expected', [
    ('missing', 'missing', None), ('empty', 'missing', '/o'), ('made', 'stale', '/o'), ('made', 'current', None)])
def test_what_a_build_replaces(kind, state, expected):
    assert q.replaced('/o', dict(kind=kind, record=None), state) == expected


def build(tmp_path):
    partial = tmp_path / 'out.partial.x'
    partial.mkdir()
    (partial / 'new.safetensors').write_text('new')
    return str(partial)


def test_an_output_this_module_made_is_replaced_and_nothing_else_is_left(tmp_path):
    out = made_output(tmp_path)
    q.put_in_place(build(tmp_path), out, q.examine_output(out))
    assert os.listdir(out) == ['new.safetensors'] and sorted(os.listdir(str(tmp_path))) == ['out']


def test_an_empty_directory_is_replaced_and_one_that_filled_since_is_not(tmp_path):
    out = tmp_path / 'out'
    out.mkdir()
    found = q.examine_output(str(out))
    q.put_in_place(build(tmp_path), str(out), found)
    assert os.listdir(str(out)) == ['new.safetensors']
    (tmp_path / 'other').mkdir()
    found = q.examine_output(str(tmp_path / 'other'))
    (tmp_path / 'other' / 'arrived').write_text('mine')
    with pytest.raises(q.QuantizeError, match='other is a directory of 1 entries'):
        q.put_in_place(build(tmp_path), str(tmp_path / 'other'), found)
    assert os.listdir(str(tmp_path / 'other')) == ['arrived']


@pytest.mark.parametrize('change', [
    lambda out: (out / 'quantize-record.json').write_text(json.dumps(record(backend_version='9'))),
    lambda out: (out / 'quantize-record.json').unlink(),
])
def test_an_output_whose_record_changed_since_it_was_examined_is_left_as_it_is(tmp_path, change):
    out = made_output(tmp_path)
    found = q.examine_output(out)
    change(tmp_path / 'out')
    before = entries(out)
    with pytest.raises(q.QuantizeError):
        q.put_in_place(build(tmp_path), out, found)
    assert entries(out) == before


def test_a_failed_rename_puts_the_old_output_back(tmp_path, monkeypatch):
    out = made_output(tmp_path)
    found = q.examine_output(out)
    rename = os.rename

    def failing(source, target):
        if source.endswith('.partial.x'):
            raise OSError(28, 'No space left on device')
        rename(source, target)
    monkeypatch.setattr(os, 'rename', failing)
    with pytest.raises(OSError):
        q.put_in_place(build(tmp_path), out, found)
    assert q.examine_output(out) == found and not [name for name in os.listdir(str(tmp_path)) if '.old.' in name]
