# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The decisions of a W8A8 quantization job (module model_quantize), pure: the source model read and refused when it is
already quantized, its model type for each backend, the scheme, the calibration text, the output path and its disk
space, each backend's argv, the record of what made an output and whether a finished output is kept, and the summary
of what was quantized. Every refusal is a ``QuantizeError`` whose message names the option or file to fix.

Nothing is destroyed that the collection did not make: an output path is replaced only when nothing is there, an
empty directory is, or a directory holding a record this module wrote (:func:`examine_output`); anything else is
refused before any change. Every file is read through ``_files`` (regular files only, never blocking, bounded) and
every JSON text through ``_json`` (depth, NaN).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import (
    FILE_TYPES,
    UnreadableFile,
    json_type,
    read_existing_file,
    read_json_file as _read_json_file,
    read_regular_file,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS, number_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import host_path_problem, normalise

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
# What is read at most of each file (a larger one is refused, never read on): a model's config.json is a few KiB;
# msModelSlim's description of DeepSeek-V3 lists each of its ~10^5 tensors, and llm-compressor's config.json each
# layer it kept float (tens of MiB at most); a record a few hundred bytes; a calibration set 4096 lines of text; the
# msModelSlim config and the llm-compressor runner are small text files.
MAX_CONFIG_BYTES = 4 * 1024 ** 2
MAX_DESCRIPTION_BYTES = 64 * 1024 ** 2
MAX_RECORD_BYTES = 1024 ** 2
MAX_CALIBRATION_BYTES = 64 * 1024 ** 2
MAX_TOOL_BYTES = 16 * 1024 ** 2
# The largest space factor taken: far above any need (the job needs 2), small enough that the product with any
# source's size stays a finite number. A larger factor would only make the check stricter, never turn it off.
MAX_SPACE_FACTOR = 1e9
RECORD_KEYS = frozenset(['version', 'source_manifest_sha256', 'backend', 'backend_version', 'scheme', 'model_type',
                         'config_sha256', 'calibration_sha256', 'ignore'])


class QuantizeError(Exception):
    """A refusal of the job's inputs: the message names what to fix."""


def read_json_file(path, what, max_bytes=MAX_CONFIG_BYTES):
    """The JSON object in the regular file ``path`` (at most ``max_bytes``). :raises QuantizeError: naming ``what``
    the file is, the file and why it is not read (missing, no regular file, too large, not JSON, nested too deep,
    NaN, not an object)."""
    try:
        return _read_json_file(path, max_bytes, 'a JSON object', kind=dict)
    except UnreadableFile as error:
        raise QuantizeError('cannot read %s %s' % (what, error)) from None


def file_sha256(path, what):
    """SHA-256 of the regular file ``path`` (the msModelSlim config or the llm-compressor runner), read bounded."""
    try:
        return hashlib.sha256(read_existing_file(path, MAX_TOOL_BYTES, what)).hexdigest()
    except UnreadableFile as error:
        raise QuantizeError('cannot read %s %s' % (what, error)) from None


def _config_value(config, key, kind, path):
    """The value of ``key`` of a model's config (None when absent or null), which must be a string (``kind`` str)
    or a list of strings (``kind`` list). :raises QuantizeError: naming the file and the key otherwise."""
    value = config.get(key)
    if value is not None and (not isinstance(value, kind)
                              or (kind is list and not all(isinstance(item, str) for item in value))):
        shown = 'array with an item that is no string' if isinstance(value, kind) else json_type(value)
        raise QuantizeError('the config of model_quantize_source %s has %s as a JSON %s; it must be %s'
                            % (path, key, shown, 'a string' if kind is str else 'a list of strings'))
    return value


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
    if os.path.lexists(os.path.join(path, 'quant_model_description.json')):
        raise QuantizeError('model_quantize_source %s is quantized already (quant_model_description.json): '
                            'give the float model' % path)
    config_path = os.path.join(path, 'config.json')
    config = read_json_file(config_path, 'the config of model_quantize_source')
    if 'quantization_config' in config:
        raise QuantizeError('model_quantize_source %s is quantized already (config.json has quantization_config): '
                            'give the float model' % path)
    architectures = _config_value(config, 'architectures', list, config_path) or []
    model_type = _config_value(config, 'model_type', str, config_path) or ''
    torch_dtype, plain_dtype = (_config_value(config, key, str, config_path) for key in ('torch_dtype', 'dtype'))
    dtype = torch_dtype or plain_dtype or 'float32'
    if dtype not in FLOAT_DTYPES:
        raise QuantizeError('model_quantize_source %s has dtype %r, not one of %s' % (path, dtype, ', '.join(FLOAT_DTYPES)))
    return dict(architectures=list(architectures), model_type=model_type, dtype=dtype)


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


def read_calibration(path):
    """The calibration texts of the file ``path`` (None when nothing is there), read bounded; see
    :func:`parse_calibration`."""
    try:
        data = read_regular_file(path, MAX_CALIBRATION_BYTES, 'a calibration set')
        if data is None:
            return None
        text = data.decode('utf-8-sig')
    except UnreadableFile as error:
        raise QuantizeError('cannot read model_quantize_calibration_file %s' % error) from None
    except UnicodeDecodeError as error:
        raise QuantizeError('cannot read model_quantize_calibration_file %s: not UTF-8 text (%s)'
                            % (path, error.reason)) from None
    return parse_calibration(text, path)


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
            item = _json.loads(line)
        except _json.JsonError as error:
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


def _absolute_problem(option, path):
    """None when ``path`` is an absolute path without control characters (a file the job reads); else the message."""
    if not isinstance(path, str) or not path.startswith('/'):
        return '%s must be an absolute path; got %r' % (option, path)
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return '%s must not hold control characters; got %r' % (option, path)
    return None


def input_problems(source, output, venv=None, work_dir=None, space_factor=DEFAULT_SPACE_FACTOR, timeout=7200,
                   read_paths=()):
    """The problems of the job's inputs that need no file read, each naming the role's variable, on the host: the
    paths the job or the role create or replace (the output, the venv, the work directory) are no system or home
    directory, also through their links, and the venv and the work directory are not inside the output; the paths
    it reads (the source, ``read_paths``: (variable, path) pairs, empty ones skipped) are absolute; the space factor
    and the time limit are finite numbers in their ranges (a factor below 1 would turn the space check off)."""
    problems = [_absolute_problem('model_quantize_source', source)]
    problems += [_absolute_problem(option, path) for option, path in read_paths if path]
    made = [(option, path) for option, path in (('model_quantize_output', output), ('model_quantize_venv', venv),
                                                ('model_quantize_work_dir', work_dir)) if path is not None]
    problems += [host_path_problem(option, path) for option, path in made]
    if not any(problems):
        problems += ['%s %s is inside model_quantize_output %s, which a build replaces: give it a directory of its own'
                     % (option, path, output) for option, path in made[1:]
                     if _within(normalise(path), normalise(output))]
    problems.append(number_problem('model_quantize_space_factor', space_factor, minimum=1.0, maximum=MAX_SPACE_FACTOR))
    problems.append(number_problem('model_quantize_timeout', timeout, minimum=1, maximum=MAX_SECONDS, integer=True))
    return [problem for problem in problems if problem]


def is_record(document):
    """Whether ``document`` is a record this module wrote (make_record's keys, an integer version)."""
    return (isinstance(document, dict) and RECORD_KEYS <= set(document) and isinstance(document['version'], int)
            and not isinstance(document['version'], bool) and document['backend'] in BACKENDS)


def examine_output(output):
    """What is at the output path and whether a build may replace it: {'kind': 'missing' (nothing), 'empty' (an
    empty directory) or 'made' (a directory holding a record this module wrote), 'record': that record or None}.
    :raises QuantizeError: naming model_quantize_output and what is there, for anything else - a link, a file, a
    directory without such a record: the collection never replaces what it did not make."""
    try:
        mode = os.lstat(output).st_mode
    except FileNotFoundError:
        return dict(kind='missing', record=None)
    except OSError as error:
        raise QuantizeError('cannot look at model_quantize_output %s: %s' % (output, error.strerror or error)) from None
    refusal = ('model_quantize_output %s is %s: model_quantize replaces only an empty directory or an output it made '
               '(with its ' + RECORD_NAME + '), so it leaves it as it is; move it away, or choose another path')
    if stat.S_ISLNK(mode):
        raise QuantizeError(refusal % (output, 'a symbolic link (to %s)' % os.readlink(output)))
    if not stat.S_ISDIR(mode):
        kind = next((name for test, name in FILE_TYPES if test(mode)), 'a regular file')
        raise QuantizeError(refusal % (output, kind))
    try:
        entries = sorted(os.listdir(output))
    except OSError as error:
        raise QuantizeError('cannot list model_quantize_output %s: %s' % (output, error.strerror or error)) from None
    if not entries:
        return dict(kind='empty', record=None)
    record_path = os.path.join(output, RECORD_NAME)
    if RECORD_NAME not in entries:
        shown = ', '.join(entries[:5]) + (', ...' if len(entries) > 5 else '')
        raise QuantizeError(refusal % (output, 'a directory of %d entries (%s) without %s'
                                       % (len(entries), shown, RECORD_NAME)))
    if os.path.islink(record_path):
        raise QuantizeError(refusal % (output, 'a directory whose %s is a symbolic link' % RECORD_NAME))
    try:
        record = _read_json_file(record_path, MAX_RECORD_BYTES, 'a record of model_quantize', kind=dict)
    except UnreadableFile as error:
        raise QuantizeError(refusal % (output, 'a directory whose record cannot be read (%s)' % error)) from None
    if not is_record(record):
        raise QuantizeError(refusal % (output, 'a directory whose %s is not one model_quantize wrote' % RECORD_NAME))
    return dict(kind='made', record=record)


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


def _typed(value, kind, path, key, default):
    """``value`` of ``key`` in the output's file ``path`` (``default`` when absent or null), of type ``kind``."""
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is list and not all(isinstance(item, str) for item in value)):
        shown = 'array with an item that is no string' if isinstance(value, kind) else json_type(value)
        raise QuantizeError('the output\'s %s has %s as a JSON %s; it must be %s'
                            % (path, key, shown, {dict: 'an object', list: 'a list of strings', str: 'a string'}[kind]))
    return value


def replaced(output, found, state):
    """What a build replaces at ``output``, given what examine_output ``found`` there and the output_state: the empty
    directory or the output this module made, unless it is kept ('current'); None when nothing is there."""
    return output if found['kind'] != 'missing' and state != 'current' else None


def put_in_place(partial, output, found):
    """Rename the finished build ``partial`` to ``output``, in place of what examine_output ``found`` there before the
    build, once it is seen to be still that: an empty directory goes in the rename itself (which the system refuses
    should it be empty no more), an output this module made is moved aside into ``<output>.old.*``, then removed.
    :raises QuantizeError: what is there changed (left as it is); OSError from the system."""
    if examine_output(output) != found:
        raise QuantizeError('it changed while the backend ran, so it was left as it is; run again')
    old = None
    if found['kind'] == 'made':
        old = tempfile.mkdtemp(prefix=os.path.basename(output) + '.old.', dir=os.path.dirname(output))
        os.rename(output, os.path.join(old, 'previous'))
    try:
        os.rename(partial, output)
    except OSError:
        if old:
            os.rename(os.path.join(old, 'previous'), output)   # the output it made stays as it was
            os.rmdir(old)
        raise
    if old:
        shutil.rmtree(old, ignore_errors=True)


def summarize(output):
    """Layers quantized and kept float, from quant_model_description.json (msModelSlim) or config.json."""
    description = os.path.join(output, 'quant_model_description.json')
    if os.path.lexists(description):
        data = read_json_file(description, 'the description of the output', MAX_DESCRIPTION_BYTES)
        kinds = {}
        for name, kind in data.items():
            if name.endswith('.weight') or (name.endswith('_proj') and '.experts.' in name):
                kinds.setdefault(str(kind), []).append(name[:-len('.weight')] if name.endswith('.weight') else name)
        return dict(format='ascend', model_quant_type=_typed(data.get('model_quant_type'), str, description,
                                                             'model_quant_type', ''),
                    layers={kind: len(names) for kind, names in sorted(kinds.items())},
                    float_layers=sorted(kinds.get('FLOAT', [])))
    path = os.path.join(output, 'config.json')
    config = read_json_file(path, 'the config of the output', MAX_DESCRIPTION_BYTES)
    quant = config.get('quantization_config')
    if not isinstance(quant, dict):
        raise QuantizeError('the output %s has neither quant_model_description.json nor a quantization_config' % output)
    groups = _typed(quant.get('config_groups'), dict, path, 'quantization_config.config_groups', {})
    layers = {}
    for name, group in sorted(groups.items()):
        group = _typed(group, dict, path, 'quantization_config.config_groups.%s' % name, {})
        layers[name] = sorted(_typed(group.get('targets'), list, path,
                                     'quantization_config.config_groups.%s.targets' % name, []))
    quant_format = (_typed(quant.get('format'), str, path, 'quantization_config.format', '')
                    or _typed(quant.get('quant_method'), str, path, 'quantization_config.quant_method', ''))
    return dict(format=quant_format, model_quant_type='', layers=layers,
                float_layers=sorted(_typed(quant.get('ignore'), list, path, 'quantization_config.ignore', [])))
