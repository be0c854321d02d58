# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_agreement_check's decisions on vllm_model_agreement's options, without AnsibleModule: the option problems and
the record's path, the endpoints, the prompts, the requests sent (key sent, never shown), the result and the record
(run() itself is covered by test_vllm_model_agreement.py)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _agreement, _agreement_check
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._agreement import AgreementError
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._vllm_endpoint import NotYet, Response
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__agreement import sender

DIGEST = 'cd' * 32
KEY = 'sk-check-key'


def params_of(**more):
    return dict(dict(reference={'url': 'http://127.0.0.1:8000/', 'served_model_name': 'float', 'api_key': KEY},
                     candidate={'url': 'https://10.0.0.2:8001', 'served_model_name': 'w8a8', 'api_key': ''},
                     prompts=None, prompts_file=None, max_tokens=4, min_top1_agreement=0.9,
                     max_mean_abs_logprob_diff=0.15, min_first_divergence=None, candidate_digest=None,
                     reference_digest=None, record_dir='/records/', request_timeout=120.0), **more)


def test_the_thresholds_are_the_three_options():
    assert _agreement_check.thresholds_of(params_of(min_first_divergence=2)) == {
        'min_top1_agreement': 0.9, 'max_mean_abs_logprob_diff': 0.15, 'min_first_divergence': 2}


def test_good_options_give_the_records_path_under_record_dir():
    assert _agreement_check.option_problems(params_of()) == ([], None)
    assert _agreement_check.option_problems(params_of(candidate_digest=DIGEST, reference_digest='ef' * 32)) == (
        [], '/records/%s.json' % DIGEST)


def test_each_bad_option_is_named_and_no_record_path_is_given():
    problems, path = _agreement_check.option_problems(params_of(
        candidate_digest=DIGEST, reference_digest='AB' * 32, max_tokens=0))
    assert path is None
    assert problems[0].startswith('max_tokens must be ')
    assert problems[1] == ("reference_digest must be a SHA-256 (64 lowercase hex digits), the manifest_sha256 that "
                           "model_manifest returns, not '%s'" % ('AB' * 32))


def test_the_endpoints_are_checked_and_an_empty_key_is_none():
    assert _agreement_check.endpoints(params_of()) == {'reference': ('http://127.0.0.1:8000', 'float', KEY),
                                                       'candidate': ('https://10.0.0.2:8001', 'w8a8', None)}


def test_a_bad_url_names_its_side():
    params = params_of()
    params['candidate'] = dict(params['candidate'], url='ftp://host')
    with pytest.raises(AgreementError, match=r"^candidate\.url: 'ftp://host' is not usable \(the scheme"):
        _agreement_check.endpoints(params)


def test_the_prompts_come_from_the_file_the_option_or_the_defaults():
    def read(path, limit, what):
        assert (path, limit, what) == ('/p.txt', _agreement_check.PROMPTS_MAX_BYTES, 'a prompts file')
        return b'one\n\n two\\nlines\n'
    assert _agreement_check.prompts_of(params_of(prompts_file='/p.txt'), read) == ['one', ' two\nlines']
    assert _agreement_check.prompts_of(params_of(prompts=['a'])) == ['a']
    assert _agreement_check.prompts_of(params_of()) == list(_agreement.DEFAULT_PROMPTS)


def test_a_missing_or_empty_prompts_file_is_named():
    with pytest.raises(AgreementError, match=r'^prompts_file /p\.txt does not exist$'):
        _agreement_check.prompts_of(params_of(prompts_file='/p.txt'), lambda *args: None)
    with pytest.raises(AgreementError, match=r'^prompts_file /p\.txt holds no prompt$'):
        _agreement_check.prompts_of(params_of(prompts_file='/p.txt'), lambda *args: b'\n \n')


def test_a_request_carries_the_sides_model_and_key_and_returns_the_json():
    sent = []

    def post(url, method, headers, payload, timeout):
        sent.append((url, method, headers, payload, timeout))
        return Response(method, url, 200, 'OK', '{"choices": []}')
    send = _agreement_check.sender(_agreement_check.endpoints(params_of()), 7.5, post)
    assert send('reference', {'prompt': 'x'}) == {'choices': []}
    assert send('candidate', {'prompt': 'y'}) == {'choices': []}
    assert sent == [('http://127.0.0.1:8000/v1/completions', 'POST', {'Authorization': 'Bearer ' + KEY},
                     {'prompt': 'x', 'model': 'float'}, 7.5),
                    ('https://10.0.0.2:8001/v1/completions', 'POST', {}, {'prompt': 'y', 'model': 'w8a8'}, 7.5)]


@pytest.mark.parametrize('answer, message', [
    (NotYet('no answer from ' + KEY), r'^reference: no answer from \*+$'),
    (Response('POST', 'http://h/v1/completions', 401, 'Unauthorized', 'bad key ' + KEY),
     r"^reference \(float\): POST http://h/v1/completions answered 401 Unauthorized: 'bad key \*+'$"),
    (Response('POST', 'http://h/v1/completions', 200, 'OK', 'not json'),
     r'^reference: http://h/v1/completions answered 200 but not with JSON \('),
])
def test_a_failed_request_names_its_side_and_never_shows_the_key(answer, message):
    def post(*args):
        if isinstance(answer, Exception):
            raise answer
        return answer
    send = _agreement_check.sender(_agreement_check.endpoints(params_of()), 1, post)
    with pytest.raises(AgreementError, match=message) as raised:
        send('reference', {})
    assert KEY not in raised.value.msg


def compared_of(candidate_seed):
    compared = _agreement.compare(['The capital of France is'], 4, sender(0, candidate_seed))
    return compared, _agreement.summarize(compared)


def test_the_result_holds_the_verdict_and_each_prompts_kept_entries():
    compared, measures = compared_of(1)
    thresholds = _agreement_check.thresholds_of(params_of())
    result = _agreement_check.result_of(compared, measures, thresholds, None, 1.5)
    assert result['status'] == 'FAIL' and len(result['failures']) == 2
    assert (result['measures'], result['thresholds'], result['record'], result['seconds']) == (
        measures, thresholds, None, 1.5)
    assert [sorted(item) for item in result['per_prompt']] == [sorted(_agreement_check.PER_PROMPT_KEYS)]
    assert result['per_prompt'][0]['prompt'] == 'The capital of France is'


def test_the_record_names_both_sides_without_their_keys():
    compared, measures = compared_of(0)
    params = params_of(candidate_digest=DIGEST, reference_digest='ef' * 32)
    found = _agreement_check.endpoints(params)
    result = _agreement_check.result_of(compared, measures, _agreement_check.thresholds_of(params), '/r', 0.1)
    text = _agreement_check.record_text_of(params, found, ['The capital of France is'], result)
    record = json.loads(text)
    assert KEY not in text
    assert record['status'] == 'PASS' and record['candidate_digest'] == DIGEST
    assert record['reference'] == {'url': 'http://127.0.0.1:8000', 'served_model_name': 'float', 'digest': 'ef' * 32}
    assert record['candidate'] == {'url': 'https://10.0.0.2:8001', 'served_model_name': 'w8a8', 'digest': DIGEST}
    assert record['thresholds'] == dict(result['thresholds'], max_tokens=4, prompts=1)
    assert _agreement.parse_record(text, DIGEST) == (record, [])
