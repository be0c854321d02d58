# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The decisions of a W8A8 quantization job (module model_quantize), pure: the source model read and refused when it is
already quantized, its model type for each backend, the scheme, the calibration text, the output path and its disk
space, each backend's argv, the record of what made an output and whether a finished output is kept, and the summary
of what was quantized. Every refusal is a ``QuantizeError`` whose message names the option or file to fix.
"""

from __future__ import annotations

import hashlib
import json
import os

BACKENDS = ('msmodelslim', 'llmcompressor')
# The schemes each backend makes: msModelSlim's static W8A8 (symmetric int8 weights per channel, asymmetric int8
# activations per tensor; DeepSeek's MLP W8A8_DYNAMIC) and llm-compressor's W8A8 preset (int8 weights per channel,
# dynamic symmetric int8 activations per token, compressed-tensors), which vLLM's CPU build and vllm-ascend serve.
SCHEMES = {'msmodelslim': ('w8a8',), 'llmcompressor': ('w8a8',)}
RECORD_NAME = 'quantize-record.json'
RECORD_VERSION = 1
# The output needs at most the source's size again (int8 weights are smaller than float ones; the float layers kept
# are copied), plus the copy being built beside the finished one on a rebuild: free space >= 2 x the source.
DEFAULT_SPACE_FACTOR = 2.0
# msModelSlim model types (its config/config.ini, [ModelAdapter]) for the Hugging Face model_type of a source.
# DeepSeek-V3's own adapter expects the real checkpoint's layout and an NPU for its MTP layer: `default` quantizes
# any DeepSeek-V3-shaped model with the role's DeepSeek config.
MSMODELSLIM_MODEL_TYPES = {
    'qwen2': 'DeepSeek-R1-Distill-Qwen-7B',
    'deepseek_v3': 'default',
    'deepseek_v2': 'default',
}
# What llm-compressor leaves float on DeepSeek: the experts (int8 MoE needs AMX on a CPU), kv_b_proj (MLA splits it
# at load) and the router gate; lm_head on every model.
LLMCOMPRESSOR_IGNORE = ['lm_head']
LLMCOMPRESSOR_DEEPSEEK_IGNORE = [r're:.*mlp\.experts\..*', r're:.*kv_b_proj$', r're:.*mlp\.gate$']
DEEPSEEK_TYPES = ('deepseek_v2', 'deepseek_v3')
FLOAT_DTYPES = ('float32', 'float16', 'bfloat16')
MAX_CALIBRATION_LINES = 4096


class QuantizeError(Exception):
    """A refusal of the job's inputs: the message names what to fix."""


def read_json_file(path, what):
    try:
        with open(path, encoding='utf-8') as stream:
            data = json.load(stream)
    except (OSError, ValueError) as error:
        raise QuantizeError('cannot read %s %s: %s' % (what, path, error)) from None
    if not isinstance(data, dict):
        raise QuantizeError('%s %s is not a JSON object' % (what, path))
    return data


def directory_size(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def read_source(path):
    """The source model: architectures, model_type and dtype of its config.json; refused when quantized already."""
    if not os.path.isdir(path):
        raise QuantizeError('model_quantize_source %s is not a directory' % path)
    if os.path.exists(os.path.join(path, 'quant_model_description.json')):
        raise QuantizeError('model_quantize_source %s is quantized already (quant_model_description.json): '
                            'give the float model' % path)
    config = read_json_file(os.path.join(path, 'config.json'), 'the config of model_quantize_source')
    if 'quantization_config' in config:
        raise QuantizeError('model_quantize_source %s is quantized already (config.json has quantization_config): '
                            'give the float model' % path)
    dtype = config.get('torch_dtype') or config.get('dtype') or 'float32'
    if dtype not in FLOAT_DTYPES:
        raise QuantizeError('model_quantize_source %s has dtype %r, not one of %s' % (path, dtype, ', '.join(FLOAT_DTYPES)))
    return dict(architectures=list(config.get('architectures') or []), model_type=str(config.get('model_type', '')),
                dtype=dtype)


def backend_model_type(backend, source, override=''):
    """The model type the backend is told: the user's, or the one known for the source's model_type."""
    if override:
        return override
    if backend == 'llmcompressor':
        return source['model_type']
    if source['model_type'] in MSMODELSLIM_MODEL_TYPES:
        return MSMODELSLIM_MODEL_TYPES[source['model_type']]
    raise QuantizeError('no msModelSlim model type is known for model_type %r (%s): set model_quantize_model_type to '
                        'one of msModelSlim\'s (its config/config.ini), or "default"'
                        % (source['model_type'], ', '.join(source['architectures']) or 'no architectures'))


def default_msmodelslim_config(model_type):
    """The name of the config the role ships for a source's Hugging Face model_type."""
    return 'msmodelslim-deepseek-w8a8.yaml' if model_type in DEEPSEEK_TYPES else 'msmodelslim-w8a8.yaml'


def check_scheme(backend, scheme):
    if backend not in BACKENDS:
        raise QuantizeError('model_quantize_backend %r is not one of %s' % (backend, ', '.join(BACKENDS)))
    if scheme not in SCHEMES[backend]:
        raise QuantizeError('model_quantize_scheme %r is not one %s makes: %s'
                            % (scheme, backend, ', '.join(SCHEMES[backend])))


def parse_calibration(text, source):
    """Calibration texts from JSON lines (objects with a "text" string) or plain text lines; blank lines skipped."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise QuantizeError('model_quantize_calibration_file %s holds no text' % source)
    if len(lines) > MAX_CALIBRATION_LINES:
        raise QuantizeError('model_quantize_calibration_file %s has %d lines, more than %d'
                            % (source, len(lines), MAX_CALIBRATION_LINES))
    if not lines[0].lstrip().startswith('{'):
        return [line.strip() for line in lines]
    texts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as error:
            raise QuantizeError('model_quantize_calibration_file %s line %d is not JSON: %s'
                                % (source, number, error)) from None
        if not isinstance(item, dict) or not isinstance(item.get('text'), str) or not item['text'].strip():
            raise QuantizeError('model_quantize_calibration_file %s line %d has no "text" string' % (source, number))
        texts.append(item['text'])
    return texts


def calibration_jsonl(texts):
    return ''.join(json.dumps({'text': text}, ensure_ascii=False) + '\n' for text in texts)


def _real(path):
    return os.path.realpath(path).rstrip('/') or '/'


def _within(path, root):
    return path == root or path.startswith(root.rstrip('/') + '/')


def check_output_path(source, output):
    real_source, real_output = _real(source), _real(output)
    if _within(real_output, real_source):
        raise QuantizeError('model_quantize_output %s is inside model_quantize_source %s: vllm_service would see a '
                            'model inside a model; choose a path beside it' % (output, source))
    if _within(real_source, real_output):
        raise QuantizeError('model_quantize_source %s is inside model_quantize_output %s' % (source, output))


def check_space(free_bytes, source_bytes, factor, output):
    need = int(source_bytes * factor)
    if free_bytes < need:
        raise QuantizeError('the file system of model_quantize_output %s has %d bytes free; the job needs %d '
                            '(model_quantize_space_factor %s x the source\'s %d)'
                            % (output, free_bytes, need, factor, source_bytes))
    return need


def msmodelslim_argv(msmodelslim, source, save_path, model_type, config, device):
    """msModelSlim's CLI with a config always: without one, --quant_type asks for a confirmation on stdin."""
    return [msmodelslim, 'quant', '--model_path', source, '--save_path', save_path, '--device', device,
            '--model_type', model_type, '--config_path', config, '--trust_remote_code', 'False']


def llmcompressor_ignore(model_type):
    return LLMCOMPRESSOR_IGNORE + (LLMCOMPRESSOR_DEEPSEEK_IGNORE if model_type in DEEPSEEK_TYPES else [])


def llmcompressor_argv(python, runner, source, save_path, scheme, calibration, ignore):
    argv = [python, runner, '--model', source, '--output', save_path, '--scheme', scheme.upper(),
            '--calibration', calibration]
    for name in ignore:
        argv += ['--ignore', name]
    return argv


def readable_mode(mode, is_dir):
    """The mode an output's file or directory gets: readable by all (and directories searchable), so that the serving
    account reads what root made; msModelSlim writes its weights 0400 and the build directory is made 0700."""
    return mode | (0o555 if is_dir else 0o444)


def sha256_text(text):
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def make_record(source_manifest, backend, backend_version, scheme, model_type, config_sha256, calibration_sha256,
                ignore):
    """What made an output: a finished output is kept only when its record equals the one wanted."""
    return dict(version=RECORD_VERSION, source_manifest_sha256=source_manifest, backend=backend,
                backend_version=backend_version, scheme=scheme, model_type=model_type, config_sha256=config_sha256,
                calibration_sha256=calibration_sha256, ignore=list(ignore))


def record_text(record):
    return json.dumps(record, indent=2, sort_keys=True) + '\n'


def output_state(found_record, wanted_record, manifest_verified):
    """'missing' (no output), 'current' (kept) or 'stale' (rebuilt: another record, or files that fail the manifest)."""
    if found_record is None:
        return 'missing'
    if found_record == wanted_record and manifest_verified:
        return 'current'
    return 'stale'


def summarize(output):
    """Layers quantized and kept float, from quant_model_description.json (msModelSlim) or config.json."""
    description = os.path.join(output, 'quant_model_description.json')
    if os.path.exists(description):
        data = read_json_file(description, 'the description of the output')
        kinds = {}
        for name, kind in data.items():
            if name.endswith('.weight') or (name.endswith('_proj') and '.experts.' in name):
                kinds.setdefault(str(kind), []).append(name[:-len('.weight')] if name.endswith('.weight') else name)
        return dict(format='ascend', model_quant_type=data.get('model_quant_type', ''),
                    layers={kind: len(names) for kind, names in sorted(kinds.items())},
                    float_layers=sorted(kinds.get('FLOAT', [])))
    config = read_json_file(os.path.join(output, 'config.json'), 'the config of the output')
    quant = config.get('quantization_config')
    if not isinstance(quant, dict):
        raise QuantizeError('the output %s has neither quant_model_description.json nor a quantization_config' % output)
    groups = quant.get('config_groups') or {}
    return dict(format=str(quant.get('format') or quant.get('quant_method', '')), model_quant_type='',
                layers={name: sorted(group.get('targets') or []) for name, group in sorted(groups.items())},
                float_layers=sorted(quant.get('ignore') or []))
