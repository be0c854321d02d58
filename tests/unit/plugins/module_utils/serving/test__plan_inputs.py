# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 1 of the serving plan on its own, its first half (serving/_plan_inputs.py): the inputs as serving_plan takes
them before anything else - the numbers and booleans of ``-e name=value`` read as such (normalize_inputs), the final
argv's options read as vLLM's parser reads them (resolve_option, last_value), loopback, and how a value shows in a
message. Step 1's checks are in test__plan_checks.py; the whole plan's cases are in test__serving.py."""

from __future__ import annotations

import math

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _plan_inputs
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import (
    _option_name,
    _show,
    _volume_parts,
    is_loopback,
    last_value,
    normalize_inputs,
    resolve_option,
)


# ----------------------------------------------------------------------------------------------- normalize_inputs

def test_strings_of_the_command_line_become_numbers_and_booleans():
    # ansible-playbook -e vllm_service_port=8080 -e vllm_service_enforce_eager=yes gives strings.
    given = {'port': '8080', 'tensor_parallel_size': ' 4 ', 'gpu_memory_utilization': '0.92', 'enforce_eager': 'yes',
             'headless': 'Off', 'api_key_set': 'TRUE', 'ipc_host': ' 0 ', 'start_timeout': '900\n',
             'model': '/data/models/DeepSeek-R1-W8A8'}
    assert normalize_inputs(given) == {
        'port': 8080, 'tensor_parallel_size': 4, 'gpu_memory_utilization': 0.92, 'enforce_eager': True,
        'headless': False, 'api_key_set': True, 'ipc_host': False, 'start_timeout': 900,
        'model': '/data/models/DeepSeek-R1-W8A8'}
    assert normalize_inputs({'gpu_memory_utilization': '.9'}) == {'gpu_memory_utilization': 0.9}


def test_the_inputs_given_are_not_changed_in_place():
    given = {'port': '8080'}
    assert normalize_inputs(given) == {'port': 8080} and given == {'port': '8080'}


@pytest.mark.parametrize('name, value', [
    # Not a number as the checks take it: left a string, for check_inputs to refuse by name.
    ('port', '80 --privileged'), ('port', '8080.5'), ('port', '-1'), ('port', '1e3'), ('port', '0x1f'),
    ('port', '1234567890'), ('port', '\u0663'), ('tensor_parallel_size', '4x'), ('max_model_len', '16k'),
    ('gpu_memory_utilization', 'nan'), ('gpu_memory_utilization', 'NaN'), ('gpu_memory_utilization', 'inf'),
    ('gpu_memory_utilization', '.'), ('gpu_memory_utilization', '1e-1'), ('gpu_memory_utilization', '0.9\x00'),
    ('enforce_eager', 'sure'), ('headless', 'y'), ('api_key_set', 'true\x00'),
])
def test_what_is_not_a_number_or_a_boolean_stays_a_string(name, value):
    assert normalize_inputs({name: value}) == {name: value}


def test_values_of_other_types_and_other_inputs_are_left_as_they_are():
    nan = float('nan')
    result = normalize_inputs({'port': 8080.0, 'gpu_memory_utilization': nan, 'enforce_eager': 1, 'name': '8080',
                               'shm_size': 'true', 'npus': ['0']})
    assert math.isnan(result.pop('gpu_memory_utilization'))
    assert result == {'port': 8080.0, 'enforce_eager': 1, 'name': '8080', 'shm_size': 'true', 'npus': ['0']}


# --------------------------------------------------------------------------------------------------- the final argv

@pytest.mark.parametrize('arg, name', [
    ('--host', '--host'), ('--host=0.0.0.0', '--host'), ('--api_key=sk-secret', '--api-key'),
    ('--hf-overrides.rope_scaling.factor', '--hf-overrides'), ('--max_num_seqs', '--max-num-seqs'),
    ('0.0.0.0', None), ('-q', None), ('--', None), (7, None), (None, None),
])
def test_the_option_an_argv_element_names(arg, name):
    assert _option_name(arg) == name


def test_a_unique_prefix_of_a_guarded_option_is_that_option_and_a_shared_one_is_ambiguous():
    assert _plan_inputs.GUARDED_FLAGS == ('--host', '--port', '--api-key', '--config', '--ssl-certfile',
                                          '--ssl-keyfile', '--uds')
    assert [resolve_option(name) for name in ('--host', '--h', '--po', '--api', '--con', '--u')] == [
        '--host', '--host', '--port', '--api-key', '--config', '--uds']
    # Two characters are no prefix argparse takes; --ssl is both TLS options; an unguarded option is none of them.
    assert [resolve_option(name) for name in ('--', '--ssl', '--ssl-c', '--max-num-seqs')] == ['', None, '--ssl-certfile', '']
    assert resolve_option('--po', known=('--port', '--portal')) is None
    assert resolve_option('--port', known=('--port', '--portal')) == '--port'


@pytest.mark.parametrize('argv, flag, value', [
    (['--host', '127.0.0.1', '--port', '8000'], '--host', '127.0.0.1'),
    # argparse keeps the last one, in any spelling.
    (['--host', '127.0.0.1', '--host=0.0.0.0'], '--host', '0.0.0.0'),
    (['--host', '127.0.0.1', '--ho', '::'], '--host', '::'),
    (['--host', '0.0.0.0', '--port', '8000', '--port=9000'], '--port', '9000'),
    (['--served-model-name', 'm'], '--host', None),
    # A flag at the very end has no value: the one before stands.
    (['--host', '10.0.0.1', '--host'], '--host', '10.0.0.1'),
    # The next element is the value, whatever it is.
    (['--host', '--port', '8000'], '--host', '--port'),
    # An option's value is never read as an option.
    (['--host', '--host', '10.0.0.1'], '--host', '--host'),
])
def test_the_last_value_of_an_option_in_the_final_argv(argv, flag, value):
    assert last_value(argv, flag) == value


def test_the_last_value_with_other_known_options_and_a_short_one():
    known = ('--quantization',)
    assert last_value(['--quantization', 'ascend', '-q', 'fp8'], '--quantization', known=known, short='-q') == 'fp8'
    assert last_value(['-q', 'fp8', '--quant=ascend'], '--quantization', known=known, short='-q') == 'ascend'
    assert last_value(['--dtype', 'bfloat16'], '--dtype', known=('--dtype',)) == 'bfloat16'


@pytest.mark.parametrize('host, loopback', [
    ('127.0.0.1', True), ('127.8.9.10', True), ('::1', True), ('localhost', True),
    ('0.0.0.0', False), ('::', False), ('192.168.1.1', False), ('127.evil.example', False),
    ('127.0.0.1.nip.io', False), ('LOCALHOST', False), ('localhost.', False), ('', False),
])
def test_only_localhost_and_loopback_addresses_are_loopback(host, loopback):
    assert is_loopback(host) is loopback


# ----------------------------------------------------------------------------------------------- values in messages

def test_a_value_shows_as_json_shortened():
    assert _show('a b') == '"a b"'
    assert _show(None) == 'null' and _show(True) == 'true' and _show(float('nan')) == 'NaN'
    assert _show({'b': 1, 'a': [2]}) == '{"a": [2], "b": 1}'
    # Control characters are escaped, never written into a message as they are.
    assert _show('/m\n\x00') == '"/m\\n\\u0000"'
    assert _show('x' * 300) == '"' + 'x' * 199 + '...'
    assert _show('x' * 20, limit=10) == '"xxxxxxxxx...'
    # What JSON cannot order shows as Python writes it.
    assert _show({1: 'a', 'b': 2}) == "{1: 'a', 'b': 2}"
    # A URL's user information is masked, before the value is shortened.
    assert _show({'src': 'rsync://mirror:sk-secret@nas.bank.internal/models/x'}) == \
        '{"src": "rsync://********@nas.bank.internal/models/x"}'
    assert _show('x' * 170 + ' https://mirror:sk-secret@nas/m', limit=200) == \
        '"' + 'x' * 170 + ' https://********@nas/m"'


@pytest.mark.parametrize('volume, parts', [
    ('/srv/prompts:/data/prompts', ('/srv/prompts', '/data/prompts', '')),
    ('/srv/lora:/data/lora:ro,z', ('/srv/lora', '/data/lora', ':ro,z')),
    ('/a:b', None), ('relative:/x', None), ('/a:/b:ro:x', None), ('/a\n:/b', None), ('/a:/b:r0', None),
    (['/a:/b'], None), (None, None),
])
def test_a_volume_is_host_path_container_path_and_options(volume, parts):
    assert _volume_parts(volume) == parts
