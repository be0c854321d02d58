# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What a model directory says about how it is served, and whether the serving flags contradict it.

* ``describe(config_text, description_text, warn)``: the two files a model directory declares its format in -
  ``config.json`` (architectures, model_type, torch_dtype, ``quantization_config`` or the older key
  ``compression_config``: quant_method, format, ignore, config_groups) and msModelSlim's
  ``quant_model_description.json`` (model_quant_type and the per-tensor types) - into a description whose
  ``format`` is ``float``, ``ascend`` (msModelSlim, with its quant types), ``quant_method`` (compressed-tensors or
  another method vLLM detects from config.json) or ``unknown``. Tolerant of the real variants: ``#`` comments,
  ``...`` lines, trailing commas, a fenced block, a missing model_quant_type (derived from the per-tensor types);
  what it cannot read is a warning, never a traceback.
* ``read_model_dir(path, warn)``: the reader that runs on the node: those two files only, regular files only,
  opened without blocking and read up to ``MAX_BYTES`` (a model directory may be hundreds of GB on NFS);
  ``read_model(path, warn)`` the same with config.json parsed, for the sizing (``_sizing``).
* ``format_problems(description, quantization, has_npus, chips, npu_devices)``: the decision - each problem names
  the variable or the file to fix. The serving plan (``_serving.serving_plan``) calls it with the final argv's
  ``--quantization``, and ``dtype_problems(description, dtype, has_npus)`` with its ``--dtype``.
"""

from __future__ import annotations

import errno
import os
import re
import stat

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json

CONFIG_NAME = 'config.json'
DESCRIPTION_NAME = 'quant_model_description.json'
# A DeepSeek-size description lists ~100 000 tensors (~8 MB); anything beyond this is not a description.
MAX_BYTES = 32 * 1024 * 1024
ASCEND_METHOD = 'ascend'

# The limits vllm-ascend documents per product, by the chip family of the NPUs (ascend_facts' chip_family, or the
# chip name npu-smi prints): the msModelSlim quant types a product serves (None: no documented limit) and the types
# that exist for another product only. Each row names its source.
PRODUCT_LIMITS = {
    '310P': {
        'product': 'Atlas 300I Duo / 300I Pro (310P)',
        'supported': ('W8A8', 'W8A8_DYNAMIC', 'W8A8S', 'W8A8SC'),
        'source': 'vllm-ascend docs/source/tutorials/hardwares/310p.md (W8A8S and W8A8SC weights on 310P) and '
                  'vllm_ascend/_310p/quantization/methods/ (w8a8_static, w8a8_dynamic, w8a8s, w8a8sc: the only '
                  'msModelSlim schemes of the 310P registry), vllm-ascend commit 09d824e5',
    },
    '910B': {
        'product': 'Atlas 800I A2 / A2 series (910B)',
        'unsupported': ('W8A8SC',),
        'source': 'vllm-ascend docs/source/tutorials/hardwares/310p.md: W8A8SC weights are compressed for 310P by '
                  'examples/save_sharded_state_310.py, vllm-ascend commit 00b03f83',
    },
    '910_93': {
        'product': 'Atlas A3 series (910_93)',
        'unsupported': ('W8A8SC',),
        'source': 'vllm-ascend docs/source/tutorials/hardwares/310p.md: W8A8SC weights are compressed for 310P by '
                  'examples/save_sharded_state_310.py, vllm-ascend commit 00b03f83',
    },
}

# The quant types msModelSlim writes (its ascendV1 format's enumeration, plus the sparse and compressed 310P types
# and the older names); a value outside it is a warning, not a refusal.
KNOWN_TYPES = frozenset((
    'FLOAT', 'W16A16S', 'W8A16', 'W8A8', 'W8A8_DYNAMIC', 'W8A8_MIX', 'WFP8AFP8_DYNAMIC', 'W8A8_MXFP8', 'W4A8_MXFP',
    'W4A4_DYNAMIC', 'W4A4_MXFP4', 'W4A4_MXFP4_DUALSCALE', 'W4A8_DYNAMIC', 'W4A16', 'W8A8S', 'W8A8SC', 'W4A8',
    'W4A8_MXFP4', 'C8', 'FAQuant', 'FAKQuant',
))
# Keys of a description that describe the model, not a tensor.
GLOBAL_KEYS = ('model_quant_type', 'version', 'group_size', 'kv_quant_type', 'kv_cache_type', 'fa_quant_type',
               'reduce_quant_type', 'metadata', 'optional')

_TRAILING_COMMA = re.compile(r',(\s*[}\]])')
_TYPE = re.compile(r'[A-Za-z0-9_]{1,64}\Z')


def _strip_comments(text):
    """The text without ``#`` comments outside strings, ``...`` lines and Markdown fence lines."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith('```') or stripped in ('...', '…'):
            continue
        comment = next((index for index, _char in _json.outside_strings(line, '#')), len(line))
        lines.append(line[:comment])
    return '\n'.join(lines)


def lenient_json(text, name, warn):
    """The JSON object in ``text`` (the file ``name``); the real files' variants - comments, ``...`` lines, trailing
    commas, a fenced block - are read with a warning naming the file. None, with a warning, when it is no object."""
    try:
        document = _json.loads(text, max_bytes=MAX_BYTES)
    except _json.JsonError as error:
        first = str(error)
        try:
            document = _json.loads(_TRAILING_COMMA.sub(r'\1', _strip_comments(text)), max_bytes=MAX_BYTES)
        except _json.JsonError:
            warn('%s is not JSON (%s) and could not be read as JSON with comments or trailing commas either' % (name, first))
            return None
        warn('%s is not strict JSON (%s): read without its comments and trailing commas' % (name, first))
    if not isinstance(document, dict):
        warn('%s holds a JSON %s, not an object' % (name, type(document).__name__))
        return None
    return document


def _description_types(description, name, warn):
    """(model_quant_type, sorted quant types of the tensors other than FLOAT) of an msModelSlim description."""
    types = set()
    for key, value in description.items():
        if key in GLOBAL_KEYS or not isinstance(value, str):
            continue
        if not _TYPE.match(value):
            warn('%s: the type of %s is not a quant type (%r)' % (name, key[:120], value[:40]))
            continue
        if value != 'FLOAT':
            types.add(value)
    model_type = description.get('model_quant_type')
    if not isinstance(model_type, str) or not _TYPE.match(model_type):
        if model_type is not None:
            warn('%s: model_quant_type %r is not a quant type' % (name, str(model_type)[:40]))
        model_type = None
    if model_type is None and types:
        model_type = sorted(types)[0] if len(types) == 1 else None
        warn('%s names no model_quant_type: the tensors\' types are %s' % (name, ', '.join(sorted(types))))
    if model_type is not None and model_type != 'FLOAT':
        types.add(model_type)
    for unknown in sorted(quant for quant in types if quant not in KNOWN_TYPES):
        warn('%s: quant type %s is not one msModelSlim is known to write' % (name, unknown))
    return model_type, sorted(types)


def describe(config_text, description_text=None, warn=None):
    """The description of a model directory from the text of its config.json (None: missing) and of its
    quant_model_description.json (None: missing)."""
    return describe_with_config(config_text, description_text, warn)[0]


def describe_with_config(config_text, description_text=None, warn=None):
    """(``describe``'s description, config.json parsed - the object, None when it is missing or not one), each file
    read once: what the serving plan's sizing (_sizing.size_deployment) reads the model's shape from."""
    warnings = []

    def note(message):
        warnings.append(message)
        if warn is not None:
            warn(message)

    result = {'format': 'unknown', 'quant_method': None, 'quant_format': None, 'model_quant_type': None,
              'quant_types': [], 'description_file': description_text is not None, 'config_found': config_text is not None,
              'architectures': [], 'model_type': None, 'torch_dtype': None, 'warnings': warnings}
    config = lenient_json(config_text, CONFIG_NAME, note) if config_text is not None else None
    if config is not None:
        architectures = config.get('architectures')
        result['architectures'] = [str(arch) for arch in architectures] if isinstance(architectures, list) else []
        for key in ('model_type', 'torch_dtype'):
            result[key] = str(config[key]) if isinstance(config.get(key), (str, int, float)) else None
        if result['torch_dtype'] is None and isinstance(config.get('dtype'), str):
            result['torch_dtype'] = config['dtype']
    description = lenient_json(description_text, DESCRIPTION_NAME, note) if description_text is not None else None

    quant = None
    if config is not None:
        for key in ('quantization_config', 'compression_config'):
            if isinstance(config.get(key), dict):
                quant = config[key]
                if key == 'compression_config':
                    note('%s keeps its quantization under the older key compression_config' % CONFIG_NAME)
                break
    if description is not None:
        result['format'] = ASCEND_METHOD
        result['model_quant_type'], result['quant_types'] = _description_types(description, DESCRIPTION_NAME, note)
    elif quant is not None and isinstance(quant.get('quant_method'), str):
        result['format'] = 'quant_method'
        result['quant_method'] = quant['quant_method']
        result['quant_format'] = quant.get('format') if isinstance(quant.get('format'), str) else None
    elif quant is not None and ('model_quant_type' in quant or any(isinstance(value, str) and value.isupper()
                                                                   for value in quant.values())):
        # MindIE's layout: the description inside config.json (vllm-ascend issue 633).
        result['format'] = ASCEND_METHOD
        result['model_quant_type'], result['quant_types'] = _description_types(quant, CONFIG_NAME, note)
        note('%s embeds an msModelSlim description in quantization_config (MindIE\'s layout); vllm-ascend reads '
             '%s' % (CONFIG_NAME, DESCRIPTION_NAME))
    elif quant is not None:
        note('%s has a quantization_config without quant_method: left to vLLM' % CONFIG_NAME)
    elif config is not None:
        result['format'] = 'float'
    if quant is not None and result['format'] == ASCEND_METHOD and description is not None:
        note('%s has a quantization_config beside %s' % (CONFIG_NAME, DESCRIPTION_NAME))
    return result, config


# ------------------------------------------------------------------------------------------------ the node reader

def _read_bounded(path):
    """(text, error) of the regular file ``path``: None and '' when it does not exist; never blocks on a FIFO."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOCTTY', 0))
    except OSError as error:
        if error.errno == errno.ENOENT:
            return None, ''
        return None, '%s: %s' % (path, error.strerror)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None, '%s is not a regular file' % path
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(descriptor, 1024 * 1024)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_BYTES:
            return None, '%s is larger than %d bytes' % (path, MAX_BYTES)
    except OSError as error:
        return None, '%s: %s' % (path, error.strerror)
    finally:
        os.close(descriptor)
    return b''.join(chunks).decode('utf-8', 'replace'), ''


def read_model_dir(path, warn=None):
    """The description of the model directory ``path`` on this host, with ``path``, ``exists`` and ``error`` (why
    the directory or one of its two files could not be read; '' when they could)."""
    return read_model(path, warn)[0]


def read_model(path, warn=None):
    """(``read_model_dir``'s description, its config.json parsed: None when the directory, the file or its object
    is not there), the two files read once each."""
    base = {'path': path, 'exists': os.path.isdir(path), 'error': ''}
    if not base['exists']:
        base.update(describe(None), error='%s is not a directory' % path if os.path.lexists(path) else '')
        return base, None
    texts = {}
    for name in (CONFIG_NAME, DESCRIPTION_NAME):
        texts[name], error = _read_bounded(os.path.join(path, name))
        if error:
            base['error'] = error
            break
    description, config = describe_with_config(texts.get(CONFIG_NAME), texts.get(DESCRIPTION_NAME), warn)
    base.update(description)
    return base, config


# ------------------------------------------------------------------------------------------------- the decision

def product_family(chips=None, npu_devices=None):
    """The chip family of the host's NPUs: ascend_facts' chip_family (from the PCI device id), else the chip name
    npu-smi prints (310P3 -> 310P, 910B4 -> 910B, Ascend910 of an A3 -> 910_93); None when unknown or mixed."""
    families = set(device.get('chip_family') for device in npu_devices or () if isinstance(device, dict)
                   and device.get('chip_family') not in (None, '', 'unknown'))
    if not families:
        for chip in chips or ():
            name = str(chip.get('name') or '') if isinstance(chip, dict) else ''
            if name.startswith('310P'):
                families.add('310P')
            elif name.startswith('910B'):
                families.add('910B')
            elif name == 'Ascend910' and str(chip.get('npu_name') or '').startswith('93'):
                families.add('910_93')
    return families.pop() if len(families) == 1 else None


def format_problems(description, quantization, has_npus, chips=None, npu_devices=None, where=None):
    """Why the model ``description`` (``read_model_dir``'s) cannot be served with ``quantization`` (the final
    argv's --quantization, None when absent) on this host; [] when it can. ``where`` names the directory read
    (the model, or its source before the copy)."""
    where = where or description.get('path') or 'the model directory'
    if description.get('error'):
        return ['the model directory cannot be read: %s (vllm_service_model, vllm_service_model_source)'
                % description['error']]
    if not description.get('exists', True):
        return ['the model directory %s does not exist: set vllm_service_model to a model directory on the node, or '
                'vllm_service_model_source to where the role copies it from' % where]
    if not description.get('config_found'):
        return ['%s has no %s, which vLLM reads to load a model: point vllm_service_model (or '
                'vllm_service_model_source) at a Hugging Face model directory' % (where, CONFIG_NAME)]
    fmt = description.get('format')
    types = description.get('quant_types') or []
    named = ', '.join(types) or description.get('model_quant_type') or 'unknown types'
    if fmt == ASCEND_METHOD:
        if not has_npus:
            return ['%s is quantized by msModelSlim (%s: %s); vLLM\'s CPU build on this host (no NPUs) cannot serve '
                    'that format, whose ascend method lives in vllm-ascend: serve it on an Ascend host, or quantize '
                    'the float model with llm-compressor to compressed-tensors (vllm_service_model)'
                    % (where, DESCRIPTION_NAME if description.get('description_file') else CONFIG_NAME, named)]
        problems = []
        if quantization != ASCEND_METHOD:
            problems.append('%s is quantized by msModelSlim (%s), which vllm-ascend serves only with --quantization '
                            'ascend: set vllm_service_quantization to ascend (it is %s)'
                            % (where, named, 'unset' if quantization is None else quantization))
        family = product_family(chips, npu_devices)
        limits = PRODUCT_LIMITS.get(family)
        if limits:
            refused = [quant for quant in types if (limits.get('supported') is not None and quant not in limits['supported'])
                       or quant in limits.get('unsupported', ())]
            if refused:
                problems.append('%s holds %s weights, which vllm-ascend does not serve on %s (it serves %s there; '
                                'source: %s): quantize the model for this product (vllm_service_model)'
                                % (where, ', '.join(refused), limits['product'],
                                   ', '.join(limits['supported']) if limits.get('supported')
                                   else 'every type but ' + ', '.join(limits['unsupported']), limits['source']))
        return problems
    if quantization == ASCEND_METHOD:
        what = ('a %s model (quantization_config in %s)' % (description.get('quant_method'), CONFIG_NAME)
                if fmt == 'quant_method' else 'a float model' if fmt == 'float' else 'not an msModelSlim model')
        return ['vllm_service_quantization (or --quantization in vllm_service_extra_args) is ascend, but %s is %s: '
                'it has no %s, so vllm-ascend would fail with "There is no available ascend quantizer"; leave '
                'vllm_service_quantization null%s' % (where, what, DESCRIPTION_NAME,
                                                      ' (vLLM detects the quantization from config.json)'
                                                      if fmt == 'quant_method' else '')]
    if fmt == 'quant_method' and quantization is not None and quantization != description.get('quant_method'):
        return ['%s declares quant_method %s in %s, but vllm_service_quantization (or --quantization in '
                'vllm_service_extra_args) is %s: leave it null for vLLM to detect the method, or set it to %s'
                % (where, description.get('quant_method'), CONFIG_NAME, quantization, description.get('quant_method'))]
    return []


# What vLLM's CPU build serves a compressed-tensors int8 W8A8 with (format int-quantized: int8 weights and
# activations): its CPUInt8ScaledMMLinearKernel, which takes bfloat16 or float16 activations only. vLLM 0.32.0 starts
# with --dtype float32, answers /health, and dies at the first request ("int8_scaled_mm_with_quant: expect A to be
# bfloat16 or half", measured on the W8A8 of the tiny DeepSeek-V3).
INT8_ACTIVATION_FORMATS = ('int-quantized',)
FLOAT32_DTYPES = ('float32', 'float')


def dtype_problems(description, dtype, has_npus, where=None):
    """Why the model ``description`` cannot be served with ``dtype`` (the final argv's --dtype, None when absent) by
    vLLM's CPU build (no NPUs); [] when it can."""
    if has_npus or dtype not in FLOAT32_DTYPES or description.get('format') != 'quant_method' \
            or description.get('quant_method') != 'compressed-tensors' \
            or description.get('quant_format') not in INT8_ACTIVATION_FORMATS:
        return []
    where = where or description.get('path') or 'the model directory'
    return ['%s is a compressed-tensors W8A8 (format %s: int8 weights and activations), which vLLM\'s CPU build runs '
            'with its int8 kernel, and that kernel takes bfloat16 or float16 activations only: with vllm_service_dtype '
            '(or --dtype in vllm_service_extra_args) %s the service starts and its first request kills the engine '
            '("int8_scaled_mm_with_quant: expect A to be bfloat16 or half"); set vllm_service_dtype to bfloat16'
            % (where, description.get('quant_format'), dtype)]
