# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_agreement on vLLM 0.32's real answers (tests/fixtures/vllm-completion_0.32.0_*): the tiny DeepSeek-V3 of seed 0
against itself (the same model: full agreement) and against the one of seed 1 (other weights: none), each measure,
the verdict, the malformed answers and the quality record."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _agreement
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json as json_depth
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._agreement import AgreementError
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

PROMPT = 'The capital of France is'
DIGEST = 'ab' * 32


def answer(seed, kind):
    return json.loads(load_fixture('vllm-completion_0.32.0_tiny-deepseek-v3-seed%d_%s.json.txt' % (seed, kind)))


def sender(reference_seed, candidate_seed, log=None):
    seeds = {'reference': reference_seed, 'candidate': candidate_seed}

    def send(side, body):
        if log is not None:
            log.append((side, body))
        return answer(seeds[side], 'prompt_logprobs' if 'prompt_logprobs' in body else 'return_token_ids')
    return send


def measures_of(reference_seed, candidate_seed):
    return _agreement.summarize(_agreement.compare([PROMPT], 4, sender(reference_seed, candidate_seed)))


def test_the_same_model_agrees_everywhere():
    measures = measures_of(0, 0)
    assert measures == {'prompts': 1, 'positions': 15, 'top1_agreement': 1.0, 'mean_abs_logprob_diff': 0.0,
                        'reference_mean_logprob': measures['reference_mean_logprob'],
                        'candidate_mean_logprob': measures['reference_mean_logprob'],
                        'first_divergence_min': None, 'prompts_diverged': 0}
    assert _agreement.verdict(measures, 0.9, 0.15) == ('PASS', [])


def test_a_model_with_other_weights_fails_both_thresholds():
    measures = measures_of(0, 1)
    assert measures['top1_agreement'] < 0.2
    assert measures['mean_abs_logprob_diff'] > 0.15
    assert measures['first_divergence_min'] == 0
    status, failures = _agreement.verdict(measures, 0.9, 0.15)
    assert status == 'FAIL'
    assert failures[0].startswith('top-1 agreement 0.')
    assert 'above max_mean_abs_logprob_diff 0.15' in failures[1]


def test_the_requests_are_greedy_and_the_scoring_sends_the_references_tokens():
    log = []
    _agreement.compare([PROMPT], 4, sender(0, 1, log))
    generated = answer(0, 'return_token_ids')['choices'][0]
    sequence = generated['prompt_token_ids'] + generated['token_ids']
    assert log == [
        ('reference', {'prompt': PROMPT, 'max_tokens': 4, 'temperature': 0, 'ignore_eos': True, 'return_token_ids': True}),
        ('candidate', {'prompt': PROMPT, 'max_tokens': 4, 'temperature': 0, 'ignore_eos': True, 'return_token_ids': True}),
        ('reference', {'prompt': sequence, 'max_tokens': 1, 'temperature': 0, 'prompt_logprobs': 1}),
        ('candidate', {'prompt': sequence, 'max_tokens': 1, 'temperature': 0, 'prompt_logprobs': 1}),
    ]


def test_scoring_reads_each_positions_own_logprob_and_top1():
    document = answer(0, 'prompt_logprobs')
    generated = answer(0, 'return_token_ids')['choices'][0]
    sequence = generated['prompt_token_ids'] + generated['token_ids']
    positions = _agreement.parse_scoring(document, sequence, 'here')
    assert len(positions) == len(sequence) - 1
    second = document['choices'][0]['prompt_logprobs'][1]
    top = [int(key) for key, value in second.items() if value['rank'] == 1][0]
    assert positions[0] == (second[str(sequence[1])]['logprob'], top)
    # The reference's own greedy tokens are its top-1 where it generated them, bar ties.
    assert sum(1 for position, token in zip(positions[-4:], sequence[-4:]) if position[1] == token) >= 3


@pytest.mark.parametrize('reference, candidate, expected', [
    ([1, 2, 3], [1, 2, 3], None),
    ([1, 2, 3], [9, 2, 3], 0),
    ([1, 2, 3], [1, 2, 4], 2),
    ([1, 2, 3], [1, 2], 2),
])
def test_first_divergence(reference, candidate, expected):
    assert _agreement.first_divergence(reference, candidate) == expected


def test_the_thresholds_are_each_optional_and_the_first_divergence_is_checked_when_asked():
    measures = measures_of(0, 1)
    assert _agreement.verdict(measures, None, None) == ('PASS', [])
    assert _agreement.verdict(measures, None, None, 1) == (
        'FAIL', ['the free greedy generation diverged at token 0, before min_first_divergence 1'])
    assert _agreement.verdict(measures_of(0, 0), 1.0, 0.0, 4) == ('PASS', [])


@pytest.mark.parametrize('change, message', [
    (lambda d: d.update(choices=[]), 'here: the answer has no choices'),
    (lambda d: d['choices'][0].update(prompt_logprobs=None), 'no choices[0].prompt_logprobs for the 16 tokens sent'),
    (lambda d: d['choices'][0]['prompt_logprobs'].pop(), 'no choices[0].prompt_logprobs for the 16 tokens sent (got a list of 15)'),
    (lambda d: d['choices'][0]['prompt_logprobs'].__setitem__(3, 'x'), 'prompt_logprobs[3] is not an object'),
    (lambda d: d['choices'][0]['prompt_logprobs'].__setitem__(3, {}), 'prompt_logprobs[3] has no log-probability for token 272'),
    (lambda d: d['choices'][0]['prompt_logprobs'].__setitem__(3, {'272': {'logprob': float('nan'), 'rank': 1}}),
     'prompt_logprobs[3] has no log-probability for token 272'),
    (lambda d: d['choices'][0]['prompt_logprobs'].__setitem__(3, {'272': {'logprob': -1.0, 'rank': 2}}),
     'prompt_logprobs[3] has no single top-1 token (rank 1)'),
])
def test_a_malformed_scoring_answer_is_named(change, message):
    document = copy.deepcopy(answer(0, 'prompt_logprobs'))
    generated = answer(0, 'return_token_ids')['choices'][0]
    change(document)
    with pytest.raises(AgreementError) as raised:
        _agreement.parse_scoring(document, generated['prompt_token_ids'] + generated['token_ids'], 'here')
    assert message in raised.value.msg


@pytest.mark.parametrize('document', [
    [],
    {'choices': [{'text': 'x'}]},
    {'choices': [{'prompt_token_ids': [], 'token_ids': [1]}]},
    {'choices': [{'prompt_token_ids': [1, True], 'token_ids': [1]}]},
])
def test_a_generation_without_token_ids_is_named(document):
    with pytest.raises(AgreementError) as raised:
        _agreement.parse_generation(document, 'reference, generating')
    assert raised.value.msg.startswith('reference, generating: the answer ')


def test_a_candidate_with_another_tokenizer_is_refused():
    other = copy.deepcopy(answer(1, 'return_token_ids'))
    other['choices'][0]['prompt_token_ids'][0] += 1

    def send(side, body):
        if side == 'candidate' and 'prompt_logprobs' not in body:
            return other
        return answer(0, 'prompt_logprobs' if 'prompt_logprobs' in body else 'return_token_ids')
    with pytest.raises(AgreementError) as raised:
        _agreement.compare([PROMPT], 4, send)
    assert "turn prompt 'The capital of France is' into different tokens" in raised.value.msg


def test_prompts_from_a_file_and_their_limits():
    assert _agreement.read_prompts('one\n\n  \ntwo\\nlines\n', 'f') == ['one', 'two\nlines']
    for text, message in (('\n \n', 'f holds no prompt'), ('x\n' * 65, 'f holds 65 prompts, more than 64'),
                          ('y' * 2001, 'f: prompt 1 has 2001 characters')):
        with pytest.raises(AgreementError) as raised:
            _agreement.read_prompts(text, 'f')
        assert message in raised.value.msg
    assert _agreement.check_prompts(list(_agreement.DEFAULT_PROMPTS), 'prompts') == list(_agreement.DEFAULT_PROMPTS)


def test_threshold_problems_name_the_option():
    assert _agreement.threshold_problems(0.9, 0.15, None, 32) == []
    assert _agreement.threshold_problems(1.5, -1, 40, 0) == [
        'min_top1_agreement must be a finite number at least 0 and at most 1; got 1.5',
        'max_mean_abs_logprob_diff must be a finite number at least 0 and at most 100; got -1',
        'max_tokens must be a whole number at least 1 and at most 4096; got 0']
    assert _agreement.threshold_problems(None, None, 40, 32, request_timeout=0) == [
        'request_timeout must be a finite number above 0 and at most 31622400; got 0',
        'min_first_divergence must be a whole number at least 0 and at most 32; got 40']


def test_the_record_round_trips_and_gates_serving():
    measures = measures_of(0, 0)
    record = _agreement.record_of(DIGEST, 'PASS', [], measures, {'min_top1_agreement': 0.9}, {}, {})
    text = _agreement.record_text(record)
    assert text == _agreement.record_text(record)
    parsed, problems = _agreement.parse_record(text, DIGEST)
    assert (parsed, problems) == (record, [])
    assert _agreement.serving_problems(parsed, problems) == []
    assert _agreement.record_path(DIGEST, '/r/') == '/r/%s.json' % DIGEST


def test_a_failed_missing_or_foreign_record_refuses_serving():
    failed = _agreement.record_text(_agreement.record_of(DIGEST, 'FAIL', ['top-1 agreement 0.0 is low'], {}, {}, {}, {}))
    assert _agreement.serving_problems(*_agreement.parse_record(failed, DIGEST)) == [
        'its agreement check failed: top-1 agreement 0.0 is low']
    assert _agreement.serving_problems(*_agreement.parse_record(None, DIGEST)) == ['there is none']
    assert _agreement.parse_record(failed, 'cd' * 32)[1] == ['it is the record of manifest "%s"' % DIGEST]
    assert _agreement.parse_record('{', DIGEST)[1][0].startswith('it is not JSON')
    assert _agreement.parse_record('{"schema": 1}', DIGEST)[1] == ['it is not a record of schema %s' % _agreement.SCHEMA]


# Values no threshold or number of a comparison takes: not finite, overflowing (1e400 is infinity once read),
# booleans, text that is no number, far out of range.
HOSTILE = [float('nan'), float('inf'), float('-inf'), 1e400, -1e400, 10 ** 400, -10 ** 400, True, 'nan', 'Infinity',
           'x', [], {}]
# The keyword of each number threshold_problems checks, with a value it takes.
USABLE = {'min_top1_agreement': 0.9, 'max_mean_abs_logprob_diff': 0.15, 'min_first_divergence': 4, 'max_tokens': 32,
          'request_timeout': 120.0}


@pytest.mark.parametrize('value', HOSTILE, ids=lambda value: repr(value)[:12])
@pytest.mark.parametrize('option', sorted(USABLE))
def test_every_number_of_a_comparison_refuses_what_is_no_usable_number(option, value):
    problems = _agreement.threshold_problems(**dict(USABLE, **{option: value}))
    assert len(problems) == 1 and problems[0].startswith(option + ' must be a '), problems


@pytest.mark.parametrize('option, value', [('min_top1_agreement', 1.0001), ('max_mean_abs_logprob_diff', -0.01),
                                           ('max_mean_abs_logprob_diff', 100.5),
                                           ('max_tokens', 4097), ('min_first_divergence', 33),
                                           ('request_timeout', 0), ('request_timeout', 366 * 86400 + 1)])
def test_every_number_of_a_comparison_has_its_range(option, value):
    assert [problem.split(' must ')[0] for problem in
            _agreement.threshold_problems(**dict(USABLE, **{option: value}))] == [option]


def test_a_nan_threshold_never_passes_a_check():
    """A NaN threshold compares false with every measure, so verdict() would say PASS: threshold_problems refuses it
    before, and the record of such a verdict is not written (its reader would refuse it)."""
    assert _agreement.threshold_problems(float('nan'), None, None, 32)
    status, _failures = _agreement.verdict(measures_of(0, 1), float('nan'), None)
    record = _agreement.record_of(DIGEST, status, [], measures_of(0, 1), {'min_top1_agreement': float('nan')}, {}, {})
    with pytest.raises(AgreementError, match='cannot be written as JSON'):
        _agreement.record_text(record)


def nested(depth):
    value = 1
    for _level in range(depth):
        value = [value]
    return value


def _json_depth():
    return json_depth.MAX_DEPTH


def _record(**changes):
    record = _agreement.record_of(DIGEST, 'PASS', [], {'top1_agreement': 0.95, 'first_divergence_min': None},
                                  {'min_top1_agreement': 0.9, 'max_tokens': 32}, {'url': 'http://a:1'}, {'url': 'http://b:2'})
    record.update(changes)
    return record


@pytest.mark.parametrize('changes', [
    {'measures': {'top1_agreement': float('nan')}},
    {'measures': {'mean_abs_logprob_diff': float('inf')}},
    {'thresholds': {'max_mean_abs_logprob_diff': float('-inf')}},
    {'status': 'MAYBE'},
    {'status': None},
    {'measures': None},
    {'schema': 'another/1'},
    {'candidate_digest': '../etc'},
    {'failures': ('a tuple', 'reads back as a list')},
    {'measures': {'deep': nested(_json_depth() + 1)}},
    {'failures': ['x' * _agreement.MAX_RECORD_BYTES]},
    {'measures': {1: 'a key that reads back as a string'}},
], ids=repr)
def test_the_writer_refuses_what_the_reader_refuses(changes):
    record = _record(**changes)
    with pytest.raises(AgreementError) as raised:
        _agreement.record_text(record)
    assert 'not written' in raised.value.msg or 'cannot be written as JSON' in raised.value.msg


@pytest.mark.parametrize('changes', [{}, {'status': 'FAIL', 'failures': ['top-1 agreement 0.1000 is below 0.9']},
                                     {'measures': {'top1_agreement': 1, 'mean_abs_logprob_diff': 0.0, 'x': -1e300}},
                                     {'reference': {'url': 'http://a:1', 'digest': None, 'name': 'ü\u2028'}}], ids=repr)
def test_whatever_is_written_is_read_back_equal(changes):
    record = _record(**changes)
    parsed, problems = _agreement.parse_record(_agreement.record_text(record), DIGEST)
    assert (parsed, problems) == (record, [])


@pytest.mark.parametrize('digest', ['../x', 'AB' * 32, 'ab' * 31, None])
def test_a_record_path_stays_in_its_directory(digest):
    with pytest.raises(ValueError):
        _agreement.record_path(digest)


def test_a_model_is_quantized_by_its_config_or_msmodelslims_description():
    assert _agreement.is_quantized({'quantization_config': {'quant_method': 'compressed-tensors'}}, [])
    assert _agreement.is_quantized(None, ['config.json', 'quant_model_description_w8a8_dynamic.json'])
    assert not _agreement.is_quantized({'architectures': ['DeepseekV3ForCausalLM']}, ['config.json'])
