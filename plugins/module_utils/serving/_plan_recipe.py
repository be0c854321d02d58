# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

A step of the serving plan (_serving.py, after the argv): the recipe knobs of vllm-ascend's DeepSeek tutorials -
``--additional-config``, ``--speculative-config``, ``--compilation-config``, chunked prefill, prefix caching and the
KV cache dtype -
rendered from their typed variables (``recipe_args``, which _plan_argv puts in the argv) and checked in the final
argv against the release (``recipe_plan``): the same keys given through vllm_service_extra_args are parsed and
checked the same way, never passed blind. The tables of keys per release are _recipe_knobs'. Standard library only.
Its tests: tests/unit/plugins/module_utils/serving/test__plan_recipe.py.
"""

from __future__ import annotations

import difflib
import json

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import mask_text, shown_json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import texts_in
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import (
    _NO_CONTROL,
    _is_int,
    _option_name,
    release_numbers,
    resolve_option,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._recipe_knobs import (
    ADDITIONAL_CONFIG_TABLES,
    FIRST_DOCUMENTED,
    KV_CACHE_DTYPES,
    KV_CACHE_ONLY_AUTO_BEFORE,
    MTP_METHODS,
    NO_FP8_KV_CACHE,
)

ADDITIONAL = '--additional-config'
SPECULATIVE = '--speculative-config'
COMPILATION = '--compilation-config'
# The knobs vLLM takes as JSON, and the switches with their negation: (variable without its prefix, option...).
JSON_KNOBS = (('additional_config', ADDITIONAL), ('speculative_config', SPECULATIVE),
              ('compilation_config', COMPILATION))
SWITCH_KNOBS = (('enable_chunked_prefill', '--enable-chunked-prefill', '--no-enable-chunked-prefill'),
                ('enable_prefix_caching', '--enable-prefix-caching', '--no-enable-prefix-caching'))
_JSON_FLAGS = tuple(flag for dummy, flag in JSON_KNOBS)
KV_CACHE_DTYPE = '--kv-cache-dtype'
# vLLM's graph capture modes (CUDAGraphMode; vllm-ascend's ACL graph takes the same names).
CUDAGRAPH_MODES = ('NONE', 'PIECEWISE', 'FULL', 'FULL_DECODE_ONLY', 'FULL_AND_PIECEWISE')
# The types the tables give a key (_recipe_knobs): how a value is checked, and how a message names the type.
_TYPES = {
    'bool': (lambda value: isinstance(value, bool), 'a boolean'),
    'int': (_is_int, 'a whole number'),
    'float': (lambda value: isinstance(value, (int, float)) and not isinstance(value, bool), 'a number'),
    'str': (lambda value: isinstance(value, str), 'a string'),
    'list': (lambda value: isinstance(value, list), 'a list'),
    'dict': (lambda value: isinstance(value, dict), 'a mapping'),
}
_JSON_TYPE_NAMES = {bool: 'a boolean', int: 'a whole number', float: 'a number', str: 'a string', list: 'a list',
                    dict: 'a mapping', type(None): 'null'}


def compact_json(value):
    """A knob's value as one argv element: JSON without spaces, keys sorted (the same unit for the same value)."""
    return json.dumps(value, sort_keys=True, separators=(',', ':'))


def recipe_args(inputs):
    """The `vllm serve` options of the typed knobs: the additional, speculative and compilation configurations as
    JSON, chunked prefill and prefix caching as their switch or its negation (null: vLLM's default)."""
    args = []
    for name, flag in JSON_KNOBS:
        if inputs.get(name):
            args += [flag, compact_json(inputs[name])]
    for name, flag, negation in SWITCH_KNOBS:
        if inputs.get(name) is not None:
            args.append(flag if inputs[name] else negation)
    if inputs.get('kv_cache_dtype') is not None:
        args += [KV_CACHE_DTYPE, inputs['kv_cache_dtype']]
    return args


# How deep a knob's JSON may nest: the deepest any release documents is 3 (eplb_config's mappings in main); Python's
# own JSON reader and writer recurse, and fail on a few thousand levels.
MAX_DEPTH = 16


def too_deep(value, limit=MAX_DEPTH):
    """Whether ``value`` nests mappings and lists deeper than ``limit`` (walked without recursion, cycles included)."""
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth >= limit:
                return True
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def input_problems(inputs):
    """The knobs' types, before any fact: each configuration a mapping (or null), each switch a boolean or null."""
    problems = []
    for name, dummy in JSON_KNOBS:
        value = inputs.get(name)
        if value is None or value == {}:
            continue
        if not isinstance(value, dict):
            problems.append('vllm_service_%s must be a mapping (vLLM\'s JSON object); got %s'
                            % (name, _JSON_TYPE_NAMES.get(type(value), type(value).__name__)))
            continue
        if too_deep(value):
            problems.append('vllm_service_%s nests mappings or lists deeper than %d levels' % (name, MAX_DEPTH))
            continue
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as error:
            problems.append('vllm_service_%s cannot be written as JSON: %s' % (name, error))
            continue
        bad_keys = sorted(repr(key) for key in _all_keys(value) if not isinstance(key, str))
        if bad_keys:
            problems.append('vllm_service_%s has keys that are not strings: %s' % (name, ', '.join(bad_keys)))
        elif not all(_NO_CONTROL.match(text) for text in texts_in(value)):
            # JSON would escape it, but no key or value vllm-ascend documents holds one: a paste gone wrong.
            problems.append('vllm_service_%s holds a control character in a key or a value' % name)
    for name, dummy, dummy_negation in SWITCH_KNOBS:
        value = inputs.get(name)
        if value is not None and not isinstance(value, bool):
            problems.append('vllm_service_%s must be true, false or null (vLLM\'s default); got %s'
                            % (name, _JSON_TYPE_NAMES.get(type(value), type(value).__name__)))
    value = inputs.get('kv_cache_dtype')
    if value is not None and not (isinstance(value, str) and _NO_CONTROL.match(value)):
        problems.append('vllm_service_kv_cache_dtype must be null (vLLM\'s auto) or a string such as auto; got %s'
                        % _JSON_TYPE_NAMES.get(type(value), 'a string with a control character'))
    return problems


def _kv_cache_dtype_given(args, typed_args_count):
    """The --kv-cache-dtype the final ``args`` give (argparse keeps the last), where it came from, and problems:
    the option given both by vllm_service_kv_cache_dtype and in the extra arguments is refused."""
    value, source, typed, problems = None, None, False, []
    index = 0
    while index < len(args):
        option = _option_name(args[index])
        if option and resolve_option(option, (KV_CACHE_DTYPE,)) == KV_CACHE_DTYPE:
            position = index
            if '=' in args[index]:
                given = args[index].split('=', 1)[1]
            else:
                given = args[index + 1] if index + 1 < len(args) else None
                index += 1
            if position < typed_args_count:
                typed = True
            elif typed:
                problems.append('%s is given twice, by vllm_service_kv_cache_dtype and in vllm_service_extra_args: '
                                'give it once' % KV_CACHE_DTYPE)
            value = given
            source = ('vllm_service_kv_cache_dtype' if position < typed_args_count
                      else 'vllm_service_extra_args (%s)' % KV_CACHE_DTYPE)
            if given is None:
                problems.append('%s gives %s without a value' % (source, KV_CACHE_DTYPE))
        index += 1
    return value, source, problems


def kv_cache_dtype_checks(value, source, release, family, has_npus):
    """Whether the KV cache dtype ``value`` (given by ``source``) runs on this host: problems and warnings. A choice
    vLLM does not have, or not in the release's vLLM, is refused; on NPUs only auto before 0.11, and no fp8 on an A2,
    A3 or 300I (_recipe_knobs' KV_CACHE_DTYPES and NO_FP8_KV_CACHE, with their sources); bfloat16 and float16 warn,
    as vllm-ascend keeps the model's dtype in its cache whatever they say."""
    first = dict(KV_CACHE_DTYPES)
    if value not in first:
        return (['%s must be one of %s; got %s%s' % (
            source, ', '.join(first), shown_json(value),
            ': an int8 KV cache (C8) comes from a C8-quantized checkpoint (msModelSlim) served with vllm_service_'
            'quantization ascend, not from this option' if str(value).lower() in ('int8', 'c8') else '')], [])
    numbers = release_numbers(release)
    if numbers is not None and numbers < first[value]:
        return (['%s %s: vLLM %s, which vllm-ascend %s runs, does not take it (vLLM takes it from %s)' % (
            source, value, '.'.join(str(n) for n in numbers), release, '.'.join(str(n) for n in first[value]))], [])
    if not has_npus or value == 'auto':
        return [], []
    if numbers is not None and numbers < KV_CACHE_ONLY_AUTO_BEFORE:
        return (['%s %s: vLLM\'s V1 engine of vllm-ascend %s takes only auto on NPUs' % (source, value, release)], [])
    if value.startswith('fp8'):
        if family in NO_FP8_KV_CACHE:
            return (['%s %s: %s has no fp8 KV cache in any vllm-ascend release (its values reach no Ascend kernel); '
                     'leave it null or auto, and for an int8 KV cache (C8) serve a C8-quantized checkpoint with '
                     'vllm_service_quantization ascend' % (source, value, NO_FP8_KV_CACHE[family])], [])
        return [], ['%s %s: vllm-ascend has an fp8 KV cache on the Ascend 950 only, for some models; this host\'s '
                    'NPUs (%s) are not known to run it' % (source, value, family or 'family not known')]
    return [], ['%s %s: vllm-ascend keeps the model\'s dtype in its KV cache whatever this says' % (source, value)]


def _all_keys(mapping):
    for key, value in mapping.items():
        yield key
        if isinstance(value, dict):
            yield from _all_keys(value)


# ------------------------------------------------------------------------------------------- the knobs in the argv

# The path _json_flag gives an abbreviated option (a marker, never a real path).
ABBREVIATED = object()


def _json_flag(arg):
    """(flag, dotted path or None, inline value or None) when ``arg`` gives one of the JSON knobs in any spelling
    vLLM reads (``--flag``, ``--flag=value``, ``--flag.key.sub=value``, ``_`` for ``-`` in the flag: the plan's
    _option_name); (flag, ABBREVIATED, None) for a shorter prefix of one, which argparse may take for it (the plan's
    resolve_option); else None."""
    option = _option_name(arg)
    flag = resolve_option(option, _JSON_FLAGS) if option else ''
    if not flag:
        return None
    if flag != option:
        return flag, ABBREVIATED, None
    name, has_value, value = arg.partition('=')
    return flag, name.partition('.')[2] or None, value if has_value else None


def _parsed(text):
    """The JSON ``text`` holds and None, or None and why it is not JSON (the collection's one reader, _json: nesting
    deeper than MAX_DEPTH, NaN and infinities refused)."""
    try:
        return _json.loads(text, max_depth=MAX_DEPTH), None
    except _json.JsonError as error:
        return None, str(error)


def knobs_in_argv(args, typed_args_count):
    """The JSON knobs ``args`` give: {flag: {'value': the merged value, 'from_extra': bool, 'typed': bool}} and
    problems. The first ``typed_args_count`` elements come from the typed variables, the rest from the cluster and
    vllm_service_extra_args; a knob given in both is refused, since which one wins would be argparse's, not the
    plan's."""
    found, problems = {}, []
    index = 0
    while index < len(args):
        parsed = _json_flag(args[index])
        if parsed is None:
            index += 1
            continue
        flag, path, value = parsed
        if path is ABBREVIATED:
            problems.append('vllm_service_extra_args: %s may abbreviate %s, which the plan checks: spell it out'
                            % (args[index].split('=', 1)[0], flag))
            index += 1
            continue
        position = index
        if value is None:
            value = args[index + 1] if index + 1 < len(args) else None
            index += 1
        index += 1
        where = ('vllm_service_%s' % flag[2:].replace('-', '_') if position < typed_args_count
                 else 'vllm_service_extra_args (%s)' % flag)
        if value is None:
            problems.append('%s gives %s without a value' % (where, flag))
            continue
        entry = found.setdefault(flag, {'value': None, 'from_extra': position >= typed_args_count, 'typed': False})
        if position < typed_args_count:
            entry['typed'] = True
        elif entry['typed']:
            problems.append('%s is given twice, by vllm_service_%s and in vllm_service_extra_args: give it once'
                            % (flag, flag[2:].replace('-', '_')))
            continue
        if path is None:
            data, error = _parsed(value)
            if error:
                problems.append('%s gives %s a value that is not JSON (%s): %s'
                                % (where, flag, error, mask_text(value)[:120]))
                continue
            if not isinstance(data, dict):
                problems.append('%s gives %s %s, not a JSON object' % (where, flag, _JSON_TYPE_NAMES.get(type(data))))
                continue
            entry['value'] = data
        else:
            # A dotted spelling sets one key: its value is JSON where it reads as JSON, else the string.
            data, error = _parsed(value)
            if not isinstance(entry['value'], dict):
                entry['value'] = {}
            target = entry['value']
            keys = path.split('.')
            for key in keys[:-1]:
                if not isinstance(target.get(key), dict):
                    target[key] = {}
                target = target[key]
            target[keys[-1]] = value if error else data
    return found, problems


# --------------------------------------------------------------------------------------------- checked by release

def table_for(release):
    """The table of keys a release is checked against (the newest not above it), or None: for an unknown release,
    or one before vllm-ascend documented additional configuration."""
    numbers = release_numbers(release)
    if numbers is None or numbers < FIRST_DOCUMENTED:
        return None
    for table in ADDITIONAL_CONFIG_TABLES:
        if numbers >= table['release']:
            return table
    return None


def _spec_at(table, path):
    """What ``table`` gives the key at ``path`` (a tuple of keys): its type, a dict of its keys, or None."""
    spec = table['keys']
    for key in path:
        spec = spec.get(key) if isinstance(spec, dict) else None
    return spec


def _documented_in(path):
    """The names of the tables that document the key at ``path``, newest first."""
    return [table['name'] for table in ADDITIONAL_CONFIG_TABLES if _spec_at(table, path) is not None]


def _known_keys(path_prefix):
    """Every key any table gives the mapping at ``path_prefix``."""
    specs = [_spec_at(table, path_prefix) for table in ADDITIONAL_CONFIG_TABLES]
    return sorted(set(key for spec in specs if isinstance(spec, dict) for key in spec))


def _check_mapping(value, spec, path, release, table, source, problems, warnings):
    for key in sorted(value):
        here = path + (key,)
        shown = '.'.join(here)
        key_spec = spec.get(key) if table is not None else None
        if key_spec is None:
            documented = _documented_in(here)
            if not documented:
                near = difflib.get_close_matches(key, _known_keys(path), n=1)
                problems.append('%s: %s is a key no vllm-ascend release documents%s' % (
                    source, shown, '; the nearest known key is %s' % '.'.join(path + (near[0],)) if near else ''))
            elif table is None:
                continue
            elif table['complete']:
                problems.append('%s: %s is not a key of vllm-ascend %s (documented in %s; checked against %s)' % (
                    source, shown, release, ', '.join(documented), table['name']))
            else:
                warnings.append('%s: %s is not in what this collection read of vllm-ascend %s\'s keys (documented '
                                'in %s); it is passed on as given' % (source, shown, release, ', '.join(documented)))
            continue
        if isinstance(key_spec, dict):
            if not isinstance(value[key], dict):
                problems.append('%s: %s must be a mapping for vllm-ascend %s; got %s' % (
                    source, shown, release, _JSON_TYPE_NAMES.get(type(value[key]))))
            else:
                _check_mapping(value[key], key_spec, here, release, table, source, problems, warnings)
        elif not _TYPES[key_spec][0](value[key]):
            problems.append('%s: %s must be %s for vllm-ascend %s; got %s %s' % (
                source, shown, _TYPES[key_spec][1], release, _JSON_TYPE_NAMES.get(type(value[key])), shown_json(value[key])[:60]))


def _speculative_problems(config, source, model_config):
    problems = []
    tokens = config.get('num_speculative_tokens')
    if tokens is not None and (not _is_int(tokens) or tokens < 1):
        problems.append('%s: num_speculative_tokens must be a whole number of 1 or more; got %s'
                        % (source, shown_json(tokens)[:40]))
    method = config.get('method')
    if method is not None and not isinstance(method, str):
        problems.append('%s: method must be a string; got %s' % (source, shown_json(method)[:40]))
    elif method in MTP_METHODS and isinstance(model_config, dict):
        layers = model_config.get('num_nextn_predict_layers')
        if not _is_int(layers) or layers < 1:
            problems.append('%s: method %s drafts with the model\'s multi-token prediction layers, and the model\'s '
                            'config.json has none (num_nextn_predict_layers %s): use a model with its MTP layers '
                            '(DeepSeek-V3 and R1 have one), or another method' % (source, method, layers))
    return problems


def _compilation_problems(config, source, speculative):
    """vLLM's graph capture: a mode it knows, capture sizes that are whole numbers of 1 or more; and, with speculative
    decoding, sizes that are multiples of 1 + num_speculative_tokens (vLLM makes them so since its PR 28315, or
    refuses a layout where it cannot), as a warning."""
    problems, warnings = [], []
    mode = config.get('cudagraph_mode')
    if mode is not None and mode not in CUDAGRAPH_MODES:
        problems.append('%s: cudagraph_mode must be one of %s; got %s' % (source, ', '.join(CUDAGRAPH_MODES),
                                                                          shown_json(mode)[:60]))
    sizes = config.get('cudagraph_capture_sizes')
    if sizes is not None and (not isinstance(sizes, list) or not sizes
                              or not all(_is_int(size) and size >= 1 for size in sizes)):
        problems.append('%s: cudagraph_capture_sizes must be a list of whole numbers of 1 or more; got %s'
                        % (source, shown_json(sizes)[:60]))
    elif sizes and speculative and _is_int(speculative.get('num_speculative_tokens')):
        step = speculative['num_speculative_tokens'] + 1
        off = [size for size in sizes if size % step]
        if off:
            warnings.append('%s: cudagraph_capture_sizes %s are not multiples of %d (1 + num_speculative_tokens): vLLM '
                            'rounds them or refuses the layout at start' % (source, shown_json(off), step))
    return problems, warnings


# The batch size the deployment guide this collection follows asks for on NPUs (a multiple of it). No vllm-ascend
# release documents such a rule (docs/recipes.md): it stays a warning.
GUIDE_BATCH_MULTIPLE = 16


def batching_warnings(inputs, has_npus):
    """The guide's batching rule on NPU hosts: vllm_service_max_num_seqs a multiple of 16, else a warning that names
    the nearest multiple below (16 at least)."""
    seqs = inputs.get('max_num_seqs')
    if not has_npus or not isinstance(seqs, int) or isinstance(seqs, bool) or seqs % GUIDE_BATCH_MULTIPLE == 0:
        return []
    nearest = max(GUIDE_BATCH_MULTIPLE, seqs // GUIDE_BATCH_MULTIPLE * GUIDE_BATCH_MULTIPLE)
    return ['vllm_service_max_num_seqs is %d: the deployment guide this collection follows asks for a multiple of %d '
            'on Ascend NPUs (such as %d); no vllm-ascend release requires it' % (seqs, GUIDE_BATCH_MULTIPLE, nearest)]


# The recipe of a plan whose inputs were refused before any knob was read.
NO_RECIPE = {'additional_config': None, 'speculative_config': None, 'compilation_config': None, 'chunked_prefill': None,
             'prefix_caching': None, 'kv_cache_dtype': None, 'checked_against': None, 'warnings': []}


def recipe_plan(inputs, release, model_config, has_npus=False, family=None):
    """The knobs of the final argv - from the typed variables (recipe_args), the cluster's arguments and
    vllm_service_extra_args - checked against vllm-ascend ``release`` and the model's config.json (``model_config``,
    or None when not read), the KV cache dtype against the release and the NPUs' ``family`` (_model_format's
    product_family; None when not known), and the guide's batching rule on a host with NPUs. Returns the plan's
    ``recipe`` (``additional_config``, ``speculative_config``, ``compilation_config``, ``chunked_prefill``,
    ``prefix_caching``, ``kv_cache_dtype``, ``checked_against``: the table's release, source and completeness, or
    None, and ``warnings``) and the problems."""
    typed = recipe_args(inputs)
    argv = typed + list(inputs.get('cluster_args') or []) + list(inputs.get('extra_args') or [])
    found, problems = knobs_in_argv(argv, len(typed))
    warnings = batching_warnings(inputs, has_npus)
    kv_cache_dtype, kv_source, kv_problems = _kv_cache_dtype_given(argv, len(typed))
    problems.extend(kv_problems)
    if kv_cache_dtype is not None and not kv_problems:
        found_problems, found_warnings = kv_cache_dtype_checks(kv_cache_dtype, kv_source, release, family, has_npus)
        problems.extend(found_problems)
        warnings.extend(found_warnings)
    table = table_for(release)
    additional = (found.get(ADDITIONAL) or {}).get('value')
    if additional:
        source = ('vllm_service_extra_args (%s)' % ADDITIONAL if found[ADDITIONAL]['from_extra']
                  else 'vllm_service_additional_config')
        if table is None:
            warnings.append('%s is checked for misspelt keys only: %s' % (
                source, 'the vllm-ascend release is not known (vllm_service_vllm_ascend_version)' if not release
                else 'vllm-ascend %s documents no additional configuration (its page came with 0.9.1)' % release))
        _check_mapping(additional, table['keys'] if table else {}, (), release, table, source, problems, warnings)
    speculative = (found.get(SPECULATIVE) or {}).get('value')
    if speculative:
        source = ('vllm_service_extra_args (%s)' % SPECULATIVE if found[SPECULATIVE]['from_extra']
                  else 'vllm_service_speculative_config')
        problems.extend(_speculative_problems(speculative, source, model_config))
    compilation = (found.get(COMPILATION) or {}).get('value')
    if compilation:
        source = ('vllm_service_extra_args (%s)' % COMPILATION if found[COMPILATION]['from_extra']
                  else 'vllm_service_compilation_config')
        compilation_problems, compilation_warnings = _compilation_problems(compilation, source, speculative)
        problems.extend(compilation_problems)
        warnings.extend(compilation_warnings)
    recipe = {
        'additional_config': additional or None,
        'speculative_config': speculative or None,
        'compilation_config': compilation or None,
        'chunked_prefill': inputs.get('enable_chunked_prefill'),
        'prefix_caching': inputs.get('enable_prefix_caching'),
        'kv_cache_dtype': kv_cache_dtype,
        'checked_against': {'release': table['name'], 'source': table['source'], 'complete': table['complete']}
        if table and additional else None,
        'warnings': warnings,
    }
    return recipe, problems
