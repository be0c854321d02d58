# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_model_agreement's main() against two HTTP servers on 127.0.0.1 that replay vLLM 0.32's real answers: PASS
and FAIL, the key sent and never shown, the record written once (check mode predicts it, a second run changes
nothing), the failures."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import model_quality_info, vllm_model_agreement
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ExitJson, FailJson, load_fixture, run_main
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__vllm_endpoint import CREDENTIALS
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.modules.test_vllm_endpoint_check import module_output

KEY = 'sk-agreement-test-key'
DIGEST = '5f' * 32


class Replay:
    """An endpoint answering /v1/completions with the tiny DeepSeek-V3 of ``seed``'s captured answers."""

    def __init__(self, seed, status=200):
        self.requests = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                owner.requests.append((self.path, self.headers.get('Authorization'), body))
                kind = 'prompt_logprobs' if 'prompt_logprobs' in body else 'return_token_ids'
                data = load_fixture('vllm-completion_0.32.0_tiny-deepseek-v3-seed%d_%s.json.txt'
                                    % (seed, kind)).encode() if status == 200 else b'{"error": "no"}'
                self.send_response(status)
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def servers():
    started = {}

    def start(seed, status=200):
        started[len(started)] = Replay(seed, status)
        return started[len(started) - 1]
    yield start
    for server in started.values():
        server.stop()


def args_for(reference, candidate, **more):
    return dict({'reference': {'url': reference.url, 'served_model_name': 'float', 'api_key': KEY},
                 'candidate': {'url': candidate.url, 'served_model_name': 'w8a8', 'api_key': KEY},
                 'prompts': ['The capital of France is'], 'max_tokens': 4}, **more)


def run(args, outcome=ExitJson):
    result = run_main(vllm_model_agreement.main, args, outcome)
    assert KEY not in json.dumps(result)
    return result


def test_the_same_model_passes_and_the_record_is_written_once(fake_host, servers, tmp_path):
    reference, candidate = servers(0), servers(0)
    args = args_for(reference, candidate, candidate_digest=DIGEST, record_dir=str(tmp_path),
                    _ansible_check_mode=True, _ansible_diff=True)
    predicted = run(args)
    path = os.path.join(str(tmp_path), DIGEST + '.json')
    assert predicted['changed'] is True and not os.path.exists(path)
    assert predicted['diff']['before'] == ''
    args.pop('_ansible_check_mode')
    done = run(args)
    assert done['changed'] is True
    assert done['agreement']['status'] == 'PASS'
    assert done['agreement']['measures']['top1_agreement'] == 1.0
    assert done['agreement']['record'] == path
    with open(path) as handle:
        record = json.load(handle)
    assert (record['status'], record['candidate_digest'], record['candidate']['served_model_name']) == ('PASS', DIGEST, 'w8a8')
    assert predicted['diff']['after'] == done['diff']['after']
    assert run(args)['changed'] is False
    # Every request carried the key, and the model name of its side.
    assert {(sent[1], sent[2]['model']) for sent in candidate.requests} == {('Bearer ' + KEY, 'w8a8')}
    assert {sent[0] for sent in reference.requests} == {'/v1/completions'}


def test_another_model_fails_without_failing_the_module(fake_host, servers):
    result = run(args_for(servers(0), servers(1)))
    assert result['changed'] is False
    assert result['agreement']['status'] == 'FAIL'
    assert result['agreement']['record'] is None
    assert len(result['agreement']['failures']) == 2


def test_an_endpoint_refusing_the_request_fails_the_module_naming_it(fake_host, servers):
    result = run(args_for(servers(0), servers(0, status=401)), FailJson)
    assert result['msg'].startswith('the agreement check could not run: candidate (w8a8): POST ')
    assert 'answered 401' in result['msg']


def test_bad_inputs_are_named_before_any_request(fake_host, servers):
    reference = servers(0)
    result = run(args_for(reference, reference, candidate_digest='../etc', min_top1_agreement=2.0), FailJson)
    assert result['msg'] == ('min_top1_agreement must be a finite number at least 0 and at most 1; got 2.0; candidate_digest must be a SHA-256 '
                             "(64 lowercase hex digits), the manifest_sha256 that model_manifest returns, not '../etc'")
    assert reference.requests == []


@pytest.mark.parametrize('side', ['reference', 'candidate'])
@pytest.mark.parametrize('url, secrets', CREDENTIALS)
def test_a_url_with_credentials_is_refused_and_its_password_is_nowhere_in_the_output(capsys, side, url, secrets):
    args = {'reference': {'url': 'http://127.0.0.1:1', 'served_model_name': 'float'},
            'candidate': {'url': 'http://127.0.0.1:2', 'served_model_name': 'w8a8'}}
    args[side]['url'] = url
    text, result = module_output(vllm_model_agreement.main, args, capsys)
    assert result['failed'] is True and result['msg'].startswith('%s.url: ' % side)
    assert result['invocation']['module_args'][side]['served_model_name']
    for secret in secrets:
        assert secret not in text, text


@pytest.mark.parametrize('option, value', [
    ('min_top1_agreement', 'nan'), ('min_top1_agreement', 'inf'), ('min_top1_agreement', '1e400'),
    ('max_mean_abs_logprob_diff', 'nan'), ('max_mean_abs_logprob_diff', '-inf'), ('max_mean_abs_logprob_diff', 1e400),
    ('request_timeout', 'nan'), ('request_timeout', 'inf'), ('request_timeout', 1e400), ('request_timeout', 0),
    ('max_tokens', 10 ** 30), ('min_first_divergence', -1),
])
def test_a_number_that_is_no_usable_number_fails_before_any_request(fake_host, servers, tmp_path, option, value):
    """NaN compared with a measure is never a failure: a NaN threshold would PASS and write a record that
    model_quality_info refuses. Nothing is asked nor written."""
    reference, candidate = servers(0), servers(0)
    (tmp_path / 'records').mkdir()
    result = run(args_for(reference, candidate, candidate_digest=DIGEST, record_dir=str(tmp_path / 'records'),
                          **{option: value}), FailJson)
    assert result['msg'].startswith(option + ' must be a '), result['msg']
    assert reference.requests == candidate.requests == [] and os.listdir(str(tmp_path / 'records')) == []


@pytest.mark.parametrize('thresholds', [{}, {'min_top1_agreement': 1, 'max_mean_abs_logprob_diff': 0,
                                             'min_first_divergence': 4}], ids=repr)
def test_the_record_written_is_the_one_model_quality_info_reads(fake_host, servers, tmp_path, thresholds):
    """The round trip through the collection's own reader: what the module writes is read back equal, and serves."""
    (tmp_path / 'model').mkdir()
    (tmp_path / 'model' / 'config.json').write_text('{"quantization_config": {"quant_method": "w8a8"}}')
    written = run(args_for(servers(0), servers(0), candidate_digest=DIGEST, record_dir=str(tmp_path / 'records'),
                           **thresholds))
    with open(written['agreement']['record']) as handle:
        on_disk = json.load(handle)
    read = run_main(model_quality_info.main, {'path': str(tmp_path / 'model'), 'digest': DIGEST,
                                              'record_dir': str(tmp_path / 'records')})
    assert read['record'] == on_disk and read['serving_problems'] == []
    assert read['record']['thresholds'] == dict({'min_top1_agreement': 0.9, 'max_mean_abs_logprob_diff': 0.15,
                                                 'min_first_divergence': None, 'max_tokens': 4, 'prompts': 1},
                                                **thresholds)
