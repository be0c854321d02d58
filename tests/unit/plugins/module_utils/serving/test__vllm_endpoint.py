# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_vllm_endpoint against a real HTTP server on 127.0.0.1 (a thread of this process) that answers like vLLM, or as a
test scripts it: the stages, their retries under one deadline (a fake clock, so that waiting costs no time), every
way a stage fails and its message; the URL checks, the masking of the key and the systemctl parsing."""

from __future__ import annotations

import collections
import json
import os
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _vllm_endpoint
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import MASK, mask, shown_url, url_secrets
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._vllm_endpoint import (
    EndpointCheck,
    Refused,
    StageFailed,
    base_url,
    describe_unit,
    option_problems,
    quote_body,
    unit_is_down,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES

KEY = 'sk-test-4f1b9c'
MODEL = 'tiny-llama'

# One scripted answer: status, body (str, or an object sent as JSON), seconds to wait before answering (HOLD: no answer
# until the server stops, then the connection is closed); status None closes the connection without an answer.
Answer = collections.namedtuple('Answer', 'status body delay', defaults=('', 0))
CLOSE = Answer(None)
HOLD = 'hold'


class FakeVllm:
    """A vLLM-like OpenAI server on 127.0.0.1 with a free port: /health, /v1/models, /v1/completions and
    /v1/chat/completions answer as vLLM does (401 on /v1/* without ``key`` when it is set, quoting the
    Authorization header it got); ``script(path, *answers)`` makes ``path`` give those answers instead, one per
    request, the last one for good. ``requests``: (method, path, headers, JSON body or None) of each request."""

    def __init__(self, key=KEY, served=MODEL):
        self.key = key
        self.served = served
        self.scripts = {}
        self.requests = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(('127.0.0.1', 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = 'http://127.0.0.1:%d' % self.port
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def script(self, path, *answers):
        with self.lock:
            self.scripts[path] = list(answers)

    def paths(self):
        return [request[1] for request in self.requests]

    def default(self, path, headers):
        if path.startswith('/v1/') and self.key and headers.get('Authorization') != 'Bearer ' + self.key:
            # vLLM answers {"error": "Unauthorized"}; this one also quotes what it got, as a careless proxy might.
            return Answer(401, {'error': 'Unauthorized', 'got': headers.get('Authorization')})
        if path == '/health':
            return Answer(200, '')
        if path == '/v1/models':
            return Answer(200, {'object': 'list', 'data': [{'id': self.served, 'object': 'model', 'owned_by': 'vllm'}]})
        if path == '/v1/completions':
            return Answer(200, {'object': 'text_completion', 'choices': [{'index': 0, 'text': ' world, and welcome'}]})
        if path == '/v1/chat/completions':
            return Answer(200, {'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': 'Hi there'}}]})
        return Answer(404, {'detail': 'Not Found'})

    def answer(self, path, headers):
        with self.lock:
            script = self.scripts.get(path)
            if script:
                return script.pop(0) if len(script) > 1 else script[0]
        return self.default(path, headers)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

            def _serve(self):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length) if length else b''
                headers = dict(self.headers.items())
                with fake.lock:
                    fake.requests.append((self.command, self.path, headers, json.loads(raw) if raw else None))
                answer = fake.answer(self.path, headers)
                if answer.delay == HOLD:
                    fake.stopping.wait()
                elif answer.delay:
                    time.sleep(answer.delay)
                if answer.status is None or answer.delay == HOLD:
                    self.close_connection = True
                    return
                body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
                data = body.encode('utf-8')
                self.send_response(answer.status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.send_header('Connection', 'close')
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            do_GET = _serve
            do_POST = _serve

        return Handler


@pytest.fixture
def vllm():
    server = FakeVllm()
    yield server
    server.stop()


def closed_port():
    """A port of 127.0.0.1 that nothing listens on."""
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class FakeClock:
    """Time that passes only when the check sleeps: a wait of minutes runs in an instant, to the second."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


def make_check(vllm_or_url, clock, **options):
    url = vllm_or_url if isinstance(vllm_or_url, str) else vllm_or_url.url
    options.setdefault('api_key', KEY)
    options.setdefault('timeout', 10)
    options.setdefault('request_timeout', 5)
    return EndpointCheck(url, options.pop('served_model_name', MODEL), clock=clock, sleep=clock.sleep, **options)


def failure_of(check):
    with pytest.raises(StageFailed) as raised:
        check.run()
    return raised.value


# ------------------------------------------------------------------------------------------------------- success

def test_all_stages_pass_in_order_with_the_key_on_every_request(vllm, clock):
    result = make_check(vllm, clock, chat=True, expect_unauthorized=True, prompt='Say hi', max_tokens=4).run()
    assert result == {
        'url': vllm.url, 'models': [MODEL], 'completion': ' world, and welcome', 'chat_completion': 'Hi there',
        'unauthorized_status': 401, 'seconds': 0.0,
        'stages': {'health': 0.0, 'models': 0.0, 'completion': 0.0, 'chat': 0.0, 'unauthorized': 0.0}}
    assert list(result['stages']) == ['health', 'models', 'completion', 'chat', 'unauthorized']
    assert vllm.paths() == ['/health', '/v1/models', '/v1/completions', '/v1/chat/completions', '/v1/models']
    auth = [request[2].get('Authorization') for request in vllm.requests]
    assert auth == ['Bearer ' + KEY] * 4 + [None]
    assert vllm.requests[2][3] == {'model': MODEL, 'prompt': 'Say hi', 'max_tokens': 4, 'temperature': 0}
    assert vllm.requests[3][3] == {'model': MODEL, 'messages': [{'role': 'user', 'content': 'Say hi'}],
                                   'max_tokens': 4, 'temperature': 0}
    assert [request[0] for request in vllm.requests] == ['GET', 'GET', 'POST', 'POST', 'GET']
    assert clock.sleeps == []


def test_without_chat_and_unauthorized_only_the_three_stages_run(vllm, clock):
    result = make_check(vllm, clock).run()
    assert (result['chat_completion'], result['unauthorized_status'], list(result['stages'])) == \
        (None, None, ['health', 'models', 'completion'])
    assert vllm.paths() == ['/health', '/v1/models', '/v1/completions']


def test_without_a_key_no_authorization_header_is_sent(vllm, clock):
    vllm.key = None
    make_check(vllm, clock, api_key=None).run()
    assert all('Authorization' not in request[2] for request in vllm.requests)


def test_a_base_url_with_a_prefix_and_a_trailing_slash_asks_below_the_prefix(vllm, clock):
    for path, answer in (('/gw/health', Answer(200)), ('/gw/v1/models', Answer(200, {'data': [{'id': MODEL}]})),
                         ('/gw/v1/completions', Answer(200, {'choices': [{'text': 'x'}]}))):
        vllm.script(path, answer)
    assert make_check(vllm.url + '/gw/', clock).run()['url'] == vllm.url + '/gw'
    assert vllm.paths() == ['/gw/health', '/gw/v1/models', '/gw/v1/completions']


def test_503_then_200_is_retried_every_interval(vllm, clock):
    vllm.script('/health', Answer(503, 'loading'), Answer(503, 'loading'), Answer(200))
    result = make_check(vllm, clock, interval=3).run()
    assert vllm.paths()[:3] == ['/health'] * 3
    assert clock.sleeps == [3, 3]
    assert result['stages']['health'] == 6.0 and result['seconds'] == 6.0


def test_a_slow_health_answer_within_request_timeout_passes(vllm, clock, monkeypatch):
    seen = []
    real = _vllm_endpoint.request
    monkeypatch.setattr(_vllm_endpoint, 'request', lambda *args: seen.append(args[4]) or real(*args))
    # The answer takes 0.3 s of real time; its request may take a minute, far more than a loaded machine needs.
    vllm.script('/health', Answer(200, '', 0.3))
    result = make_check(vllm, clock, timeout=600, request_timeout=60).run()
    # Waited for, not tried again.
    assert vllm.paths().count('/health') == 1 and seen[0] == 60
    assert (result['stages']['health'], clock.sleeps) == (0.0, [])


def test_the_deadline_is_shared_by_the_stages(vllm, clock):
    # Health takes 8 of the 10 seconds, so the model list has 2 left.
    vllm.script('/health', *[Answer(503)] * 4 + [Answer(200)])
    vllm.script('/v1/models', Answer(200, {'data': [{'id': 'other'}]}))
    failure = failure_of(make_check(vllm, clock, interval=2))
    assert failure.stage == 'models'
    assert failure.msg.startswith('waited 10 s for the model list')
    # Tried at 8 s, then not again at the deadline itself (no time left for an answer).
    assert vllm.paths().count('/v1/models') == 1


# ------------------------------------------------------------------------------------------------------- failures

def test_connection_refused_until_the_deadline(clock):
    port = closed_port()
    url = 'http://127.0.0.1:%d' % port
    failure = failure_of(make_check(url, clock, timeout=7, interval=2))
    assert failure.msg == ('waited 7 s for the health check to answer 200 at %s/health: GET %s/health: '
                           'connection refused (nothing listens on 127.0.0.1 port %d yet)' % (url, url, port))
    assert (failure.stage, failure.status) == ('health', None)
    assert clock.sleeps == [2, 2, 2, 1]


def test_a_health_answer_slower_than_request_timeout_is_a_timeout(vllm, clock):
    # No answer comes while the check runs, however long its 0.2 s take on a loaded machine.
    vllm.script('/health', Answer(200, '', HOLD))
    failure = failure_of(make_check(vllm, clock, timeout=1, interval=1, request_timeout=0.2))
    assert failure.msg == ('waited 1 s for the health check to answer 200 at %s/health: GET %s/health: '
                           'no answer within 0.2 s (request_timeout)' % (vllm.url, vllm.url))


def test_request_timeout_never_reaches_past_the_deadline(vllm, clock, monkeypatch):
    seen = []
    real = _vllm_endpoint.request
    monkeypatch.setattr(_vllm_endpoint, 'request', lambda *args: seen.append(args[4]) or real(*args))
    vllm.script('/health', Answer(503))
    failure_of(make_check(vllm, clock, timeout=5, interval=2, request_timeout=3))
    assert seen == [3, 3, 1]


def test_health_answering_500_until_the_deadline_names_the_last_answer(vllm, clock):
    vllm.script('/health', Answer(500, {'detail': 'EngineDeadError'}))
    failure = failure_of(make_check(vllm, clock, timeout=4))
    assert failure.msg == ('waited 4 s for the health check to answer 200 at %s/health: GET %s/health answered '
                           '500 Internal Server Error: \'{"detail": "EngineDeadError"}\'' % (vllm.url, vllm.url))
    assert (failure.stage, failure.status, failure.error) == ('health', 500, failure.msg.split(': ', 1)[1])


def test_a_missing_model_is_retried_then_named(vllm, clock):
    vllm.served = 'other-model'
    failure = failure_of(make_check(vllm, clock, timeout=4))
    assert failure.msg == ("waited 4 s for the model list to include 'tiny-llama' at %s/v1/models: GET %s/v1/models "
                           "lists the models ['other-model'], not 'tiny-llama' (served_model_name)" % (vllm.url, vllm.url))
    assert vllm.paths().count('/v1/models') == 2


def test_the_model_appearing_later_passes(vllm, clock):
    vllm.script('/v1/models', Answer(200, {'data': []}), Answer(200, {'data': [{'id': 'a'}, {'id': MODEL}]}))
    assert make_check(vllm, clock).run()['models'] == ['a', MODEL]


def test_a_refused_key_fails_at_once_on_models(vllm, clock):
    failure = failure_of(make_check(vllm, clock, api_key='sk-wrong'))
    assert failure.msg == (
        'the API key was refused: GET %s/v1/models answered 401 Unauthorized: '
        '\'{"error": "Unauthorized", "got": "Bearer sk-wrong"}\'; set api_key to the key the service was started '
        'with (VLLM_API_KEY)' % vllm.url)
    assert (failure.stage, failure.status, clock.sleeps) == ('models', 401, [])
    assert vllm.paths() == ['/health', '/v1/models']


def test_no_key_where_one_is_wanted_says_so(vllm, clock):
    failure = failure_of(make_check(vllm, clock, api_key=None))
    assert failure.msg.startswith('the endpoint wants an API key: GET %s/v1/models answered 401' % vllm.url)
    assert failure.msg.endswith('; set api_key')
    assert clock.sleeps == []


@pytest.mark.parametrize('status', [401, 403])
def test_a_refused_key_fails_at_once_on_completion(vllm, clock, status):
    vllm.script('/v1/completions', Answer(status, {'error': 'no'}))
    failure = failure_of(make_check(vllm, clock))
    assert failure.msg.startswith('the API key was refused: POST %s/v1/completions answered %d' % (vllm.url, status))
    assert (failure.stage, clock.sleeps) == ('completion', [])


def test_a_bad_request_on_completion_fails_at_once(vllm, clock):
    vllm.script('/v1/completions', Answer(400, {'object': 'error', 'message': 'max_tokens is too large'}))
    failure = failure_of(make_check(vllm, clock))
    assert failure.msg == (
        'the request was refused: POST %s/v1/completions answered 400 Bad Request: \'{"object": "error", '
        '"message": "max_tokens is too large"}\'; check served_model_name, prompt and max_tokens' % vllm.url)
    assert clock.sleeps == []


@pytest.mark.parametrize('body, says', [
    ('{"data": [', "answered 200 but not with JSON (Expecting value: line 1 column 11 (char 10)): '{\"data\": ['"),
    ('[1, 2]', "answered 200 but not with a JSON object: '[1, 2]'"),
    ('{"data": [{"name": "x"}]}', 'answered 200 without a list of models (data[].id): \'{"data": [{"name": "x"}]}\''),
    ('', 'answered 200 but not with JSON (Expecting value: line 1 column 1 (char 0)): (empty body)'),
])
def test_a_malformed_model_list_is_retried_and_named(vllm, clock, body, says):
    vllm.script('/v1/models', Answer(200, body))
    failure = failure_of(make_check(vllm, clock, timeout=2))
    assert failure.msg == 'waited 2 s for the model list to include %r at %s/v1/models: GET %s/v1/models %s' % (
        MODEL, vllm.url, vllm.url, says)


@pytest.mark.parametrize('body, says', [
    ({'choices': []}, 'answered 200 without choices'),
    ({'choices': [{'index': 0}]}, 'answered 200 without choices[0].text'),
    ({'choices': [{'text': None}]}, 'answered 200 without choices[0].text'),
])
def test_a_completion_without_text_is_retried_and_named(vllm, clock, body, says):
    vllm.script('/v1/completions', Answer(200, body))
    failure = failure_of(make_check(vllm, clock, timeout=2))
    assert failure.msg.startswith("waited 2 s for a completion from 'tiny-llama' at %s/v1/completions: POST "
                                  "%s/v1/completions %s: " % (vllm.url, vllm.url, says))
    assert failure.stage == 'completion'


def test_a_chat_reply_is_its_content_or_else_its_reasoning(vllm, clock):
    vllm.script('/v1/chat/completions', Answer(200, {'choices': [{'message': {'content': None,
                                                                              'reasoning_content': 'Hmm.'}}]}))
    assert make_check(vllm, clock, chat=True).run()['chat_completion'] == 'Hmm.'


def test_a_chat_answer_without_a_message_fails_naming_the_stage(vllm, clock):
    vllm.script('/v1/chat/completions', Answer(200, {'choices': [{'text': 'x'}]}))
    failure = failure_of(make_check(vllm, clock, chat=True, timeout=2))
    assert failure.msg.startswith("waited 2 s for a chat completion from 'tiny-llama' at %s/v1/chat/completions: "
                                  "POST %s/v1/chat/completions answered 200 without choices[0].message.content"
                                  % (vllm.url, vllm.url))
    assert failure.stage == 'chat'


def test_an_endpoint_open_without_the_key_fails_the_unauthorized_stage_at_once(vllm, clock):
    vllm.script('/v1/models', Answer(200, {'data': [{'id': MODEL}]}))
    failure = failure_of(make_check(vllm, clock, expect_unauthorized=True))
    assert failure.msg == ('GET %s/v1/models answered 200 OK: \'{"data": [{"id": "tiny-llama"}]}\' without the API '
                           'key, not 401: the endpoint serves anyone; start the service with an API key (VLLM_API_KEY)'
                           % vllm.url)
    assert (failure.stage, failure.status, clock.sleeps) == ('unauthorized', 200, [])


def test_the_connection_closing_without_an_answer_is_named(vllm, clock):
    vllm.script('/health', CLOSE)
    failure = failure_of(make_check(vllm, clock, timeout=2))
    assert failure.msg == ('waited 2 s for the health check to answer 200 at %s/health: GET %s/health: the '
                           'connection ended without a valid answer (RemoteDisconnected: Remote end closed '
                           'connection without response)' % (vllm.url, vllm.url))


def test_https_to_a_plain_http_server_is_a_tls_failure(vllm, clock):
    url = vllm.url.replace('http:', 'https:')
    failure = failure_of(make_check(url, clock, timeout=2))
    assert failure.msg.startswith('waited 2 s for the health check to answer 200 at %s/health: GET %s/health: '
                                  'TLS failed: ' % (url, url))
    assert failure.msg.endswith('(see validate_certs and ca_path)')


TLS = os.path.join(FIXTURES, 'tls')


@pytest.fixture
def tls_vllm():
    """The fake vLLM over TLS with the test set's certificate (names localhost, vllm.example.internal, 127.0.0.1)."""
    server = FakeVllm()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(TLS, 'server.crt'), os.path.join(TLS, 'server.key'))
    server.server.socket = context.wrap_socket(server.server.socket, server_side=True)
    server.url = 'https://localhost:%d' % server.port
    yield server
    server.stop()


def test_https_verified_against_the_ca_given_passes(tls_vllm, clock):
    ca = os.path.join(TLS, 'ca.crt')
    result = make_check(tls_vllm, clock, context=_vllm_endpoint.ssl_context(ca_path=ca), ca_path=ca).run()
    assert result['models'] == [MODEL] and clock.sleeps == []


@pytest.mark.parametrize('ca, host, reason', [
    ('other-ca.crt', 'localhost', 'unable to get local issuer certificate'),
])
def test_a_certificate_that_does_not_verify_fails_at_once_naming_the_ca_file(tls_vllm, clock, ca, host, reason):
    ca = os.path.join(TLS, ca)
    url = 'https://%s:%d' % (host, tls_vllm.port)
    failure = failure_of(make_check(url, clock, context=_vllm_endpoint.ssl_context(ca_path=ca), ca_path=ca))
    assert failure.msg == (
        "GET %s/health: certificate verification failed against the CA file %s: %s; the server's certificate must be "
        "signed by a CA of that file and hold %s in its subjectAltName (ca_path, the URL's host)" % (url, ca, reason, host))
    # Waiting cannot fix a certificate: no second try.
    assert (failure.stage, clock.sleeps) == ('health', [])


def test_on_retry_can_end_the_wait_with_its_reason(clock):
    url = 'http://127.0.0.1:%d' % closed_port()
    calls = []

    def unit_down(stage, error):
        calls.append((stage, error))
        if len(calls) == 2:
            raise Refused('unit vllm: failed (failed), 5 restarts, main PID 0')

    failure = failure_of(make_check(url, clock, on_retry=unit_down, interval=1))
    assert failure.msg == ('waited 1 s for the health check to answer 200 at %s/health: %s; unit vllm: failed '
                           '(failed), 5 restarts, main PID 0' % (url, calls[1][1]))
    assert [stage for stage, _error in calls] == ['health', 'health']
    assert failure.error == calls[1][1]


# ------------------------------------------------------------------------------------------------------- pieces

@pytest.mark.parametrize('url, base', [
    ('http://127.0.0.1:8000', 'http://127.0.0.1:8000'),
    ('http://127.0.0.1:8000/', 'http://127.0.0.1:8000'),
    ('https://gw.example.com/vllm/', 'https://gw.example.com/vllm'),
    ('http://[::1]:8000', 'http://[::1]:8000'),
])
def test_base_url_accepts_http_and_https_with_a_prefix(url, base):
    assert base_url(url) == base


@pytest.mark.parametrize('url, problem', [
    ('ftp://host', 'the scheme must be http or https'),
    ('127.0.0.1:8000', 'the scheme must be http or https'),
    ('http://', 'it names no host'),
    ('http://host:8000/?a=1', 'it has a query or a fragment'),
    ('http://host:8000/#x', 'it has a query or a fragment'),
    ('http://host:8000/a b', 'it holds a space or a control character'),
    ('http://host:8000\n', 'it holds a space or a control character'),
])
def test_base_url_refuses_what_it_cannot_use_naming_the_option(url, problem):
    with pytest.raises(ValueError) as raised:
        base_url(url)
    assert str(raised.value) == 'url: %r is not usable (%s): give http[s]://HOST[:PORT][/PREFIX]' % (url, problem)


# A password in every spelling a user may write a URL with credentials: plain, with @ and : in it, percent-encoded,
# with a blank, a slash or angle brackets (where no URL parser or URL pattern reads it whole), upper-case scheme,
# https, IPv6, a user name alone, no scheme at all; each password is a word that appears nowhere else.
CREDENTIALS = [
    ('http://user:Hunter2pw@host:8000', ['Hunter2pw']),
    ('http://user:Hu@nt:er2@host:8000', ['Hu@nt:er2']),
    ('http://user:Hu%40nt%3Aer2@host:8000', ['Hu%40nt%3Aer2', 'Hu@nt:er2']),
    ('HTTPS://user:Hunter2pw@[::1]:8443/v1', ['Hunter2pw']),
    ('http://user:Hun ter2@host:8000', ['Hun ter2', 'Hun', 'ter2']),
    ('http://user:Hun/ter2@host:8000', ['Hun/ter2', 'Hun']),
    ('http://user:Hun<ter2>@host:8000', ['Hun<ter2>']),
    ('http://:Hunter2pw@host:8000', ['Hunter2pw']),
    ('http://Hunter2user@host:8000', []),
    ('http://user:Hunter2pw@host:99999', ['Hunter2pw']),
    ('http://user:Hunter2pw@host:8000/x?y#z', ['Hunter2pw']),
    ('ftp://user:Hunter2pw@host', ['Hunter2pw']),
    ('user:Hunter2pw@host:8000', ['Hunter2pw']),
    ('http://user:Hunter2pw@host:8000\n', ['Hunter2pw']),
]


@pytest.mark.parametrize('url, secrets', CREDENTIALS)
def test_base_url_refuses_credentials_without_showing_them(url, secrets):
    with pytest.raises(ValueError) as raised:
        base_url(url)
    message = str(raised.value)
    assert message.startswith('url: ') and 'give http[s]://HOST[:PORT][/PREFIX]' in message
    for secret in secrets:
        assert secret not in message, message


@pytest.mark.parametrize('url, secrets', CREDENTIALS)
def test_url_secrets_are_what_a_module_masks(url, secrets):
    """Masking the url_passwords of a URL leaves none of its password parts, whatever the spelling."""
    masked = mask(url, *url_secrets(url))
    assert not [secret for secret in secrets if secret in masked], masked
    shown = shown_url(url)
    assert not [secret for secret in secrets if secret in shown], shown


def test_shown_url_quotes_a_url_without_credentials_as_given():
    assert shown_url('http://host:8000/v1') == "'http://host:8000/v1'"
    assert shown_url('http://user:pw@host:8000') == "'http://%s@host:8000'" % MASK
    assert shown_url('admin:pw@host:9090') == "'admin:%s@host:9090'" % MASK
    # An @ that no rule reads as the end of credentials: nothing of the text is quoted.
    assert shown_url('http://host/Hunter2@x') == '(not shown: it holds an @, as user:password@host does)'
    assert url_secrets(8000) == [] and url_secrets('http://host:8000') == []


@pytest.mark.parametrize('url', ['http://host:99999', 'http://host:port'])
def test_base_url_refuses_a_bad_port(url):
    with pytest.raises(ValueError, match=r"^url: .* is not a URL \(Port .*\): give http"):
        base_url(url)


def test_base_url_refuses_port_0():
    with pytest.raises(ValueError, match=r"^url: 'http://h:0' has port 0"):
        base_url('http://h:0')


def test_quote_body_is_one_line_and_cut():
    assert quote_body('a\n  b') == "'a b'"
    assert quote_body(' \n') == '(empty body)'
    assert quote_body('x' * 301) == "'%s'... (301 characters in all)" % ('x' * 300)


def test_a_unit_is_described_from_its_properties():
    state = {'ActiveState': 'activating', 'SubState': 'auto-restart', 'NRestarts': 3, 'MainPID': 0}
    assert describe_unit('vllm', state) == 'unit vllm: activating (auto-restart), 3 restarts, main PID 0'
    assert describe_unit('vllm', {}) == 'unit vllm: ? (?), ? restarts, main PID ?'


@pytest.mark.parametrize('active, down', [('failed', True), ('inactive', True), ('activating', False),
                                          ('active', False), ('deactivating', False)])
def test_a_unit_is_down_when_failed_or_inactive(active, down):
    assert unit_is_down({'ActiveState': active}) is down


def test_an_answer_that_trickles_is_cut_off_at_request_timeout():
    # The server sends a byte every 20 ms, forever: each read gets data within the socket's timeout, so only a
    # limit on the whole request ends it. Bounded by HANG_SECONDS should the limit fail.
    from ansible_collections.kunpeng_ascend.vllm.tests.helpers import HANG_SECONDS
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    stop = threading.Event()

    def trickle():
        connection, _address = listener.accept()
        connection.recv(65536)
        try:
            for byte in iter(lambda: b'HTTP/1.1 200 OK\r\nX-Slow: ' + b'a' * 10 ** 6, None):
                for index in range(len(byte)):
                    if stop.is_set():
                        return
                    connection.sendall(byte[index:index + 1])
                    time.sleep(0.02)
        except OSError:
            pass
        finally:
            connection.close()

    server = threading.Thread(target=trickle, daemon=True)
    server.start()
    outcome = []
    client = threading.Thread(target=lambda: outcome.append(_catch(
        lambda: _vllm_endpoint.request('http://127.0.0.1:%d/health' % listener.getsockname()[1], timeout=0.3))),
        daemon=True)
    client.start()
    client.join(HANG_SECONDS)
    stop.set()
    listener.close()
    assert not client.is_alive(), 'the request kept reading past its time limit'
    assert isinstance(outcome[0], _vllm_endpoint.NotYet) and 'no answer within 0.3 s (request_timeout)' in str(outcome[0])


def _catch(call):
    try:
        return call()
    except Exception as error:  # the test looks at what was raised
        return error


@pytest.mark.parametrize('key', ['sk-secret\r\nX-Injected: 1', 'sk secret with blanks', 'sk-\x00'])
def test_a_key_no_header_can_carry_is_refused_without_showing_it(key):
    with pytest.raises(ValueError) as raised:
        EndpointCheck('http://127.0.0.1:1', 'tiny', api_key=key)
    assert 'secret' not in str(raised.value) and 'api_key' in str(raised.value)


# ------------------------------------------------------------------------------------------------------- numbers

# Numbers no option takes: not finite, overflowing (1e400 is infinity once read), out of any range, booleans, text.
HOSTILE_NUMBERS = [float('nan'), float('inf'), float('-inf'), 1e400, -1e400, 10 ** 400, -1, True, False, 'nan', 'inf',
                   '1e400', 'ten', None]


@pytest.mark.parametrize('value', HOSTILE_NUMBERS, ids=lambda value: repr(value)[:12])
@pytest.mark.parametrize('option', [option for option, _bounds in _vllm_endpoint.NUMBER_OPTIONS])
def test_every_numeric_option_refuses_what_is_no_usable_number(option, value):
    problems = option_problems({option: value})
    if value is None:
        assert problems == []  # an option left out is the caller's default
    else:
        assert len(problems) == 1 and problems[0].startswith(option + ' must be a '), problems


@pytest.mark.parametrize('option, too_large', [('timeout', _vllm_endpoint.MAX_SECONDS + 1),
                                               ('interval', _vllm_endpoint.MAX_SECONDS + 0.5),
                                               ('request_timeout', 1e300),
                                               ('max_tokens', _vllm_endpoint.MAX_TOKENS + 1),
                                               ('journal_lines', _vllm_endpoint.MAX_JOURNAL_LINES + 1)])
def test_every_numeric_option_has_an_upper_bound(option, too_large):
    assert 'at most' in option_problems({option: too_large})[0]


def test_the_numbers_of_a_usable_check_pass():
    assert option_problems({'timeout': 600, 'interval': 0.5, 'request_timeout': 60.0, 'max_tokens': 8,
                            'journal_lines': 30}) == []


@pytest.mark.parametrize('option', ['timeout', 'interval', 'request_timeout', 'max_tokens'])
@pytest.mark.parametrize('value', [float('nan'), float('inf'), 1e400, -1.0], ids=repr)
def test_the_check_itself_refuses_a_number_it_cannot_wait_with(clock, option, value):
    """Whoever builds the check: NaN, infinity or a huge time never reach time.sleep, the watchdog or the socket."""
    with pytest.raises(ValueError, match='^%s must be a ' % option):
        make_check('http://127.0.0.1:1', clock, **{option: value})


# ------------------------------------------------------------------------------------------------ the module's run

class Catalogue:
    """A catalogue of known failures that finds 'out of memory' lines (the module hands in _failure_catalogue)."""

    @staticmethod
    def explain(lines):
        found = [line for line in lines if 'out of memory' in line]
        return [{'id': 'out_of_memory', 'lines': found}] if found else []

    @staticmethod
    def describe(known):
        return 'the journal shows %s' % ', '.join(item['id'] for item in known)


RESTARTING = {'ActiveState': 'activating', 'SubState': 'auto-restart', 'NRestarts': 2, 'MainPID': 0}


def test_unit_report_adds_the_state_and_the_known_failures_to_the_message():
    journal = ['vllm[1]: loading', 'vllm[1]: RuntimeError: NPU out of memory.']
    assert _vllm_endpoint.unit_report('waited 60 s', 'vllm', RESTARTING, journal, False, Catalogue) == {
        'msg': 'waited 60 s (unit vllm: activating (auto-restart), 2 restarts, main PID 0); the journal shows '
               'out_of_memory',
        'unit_state': RESTARTING, 'unit_journal': journal,
        'known_failures': [{'id': 'out_of_memory', 'lines': ['vllm[1]: RuntimeError: NPU out of memory.']}]}


def test_unit_report_of_a_unit_the_wait_ended_on_does_not_repeat_its_state():
    report = _vllm_endpoint.unit_report('waited 4 s; unit vllm: failed', 'vllm', dict(RESTARTING, ActiveState='failed'),
                                        ['vllm[1]: bye'], True, Catalogue)
    assert (report['msg'], report['known_failures']) == ('waited 4 s; unit vllm: failed', [])


def test_unit_report_of_a_state_that_could_not_be_read_keeps_the_message():
    report = _vllm_endpoint.unit_report('waited 60 s', 'vllm', 'systemctl was not found in PATH',
                                        ['journalctl was not found in PATH'], False, Catalogue)
    assert report == {'msg': 'waited 60 s', 'unit_state': 'systemctl was not found in PATH',
                      'unit_journal': ['journalctl was not found in PATH'], 'known_failures': []}


def endpoint_options(**more):
    return dict(dict(timeout=600, interval=2.0, request_timeout=60.0, max_tokens=8, served_model_name=MODEL,
                     unit=None), **more)


@pytest.mark.parametrize('more, message', [
    ({}, None),
    ({'unit': 'vllm'}, None),
    ({'served_model_name': ' '}, 'served_model_name must not be empty'),
    ({'unit': ' '}, 'unit must not be empty: leave it out, or name the service unit'),
    ({'timeout': 0, 'served_model_name': ''}, 'timeout must be a whole number at least 1 and at most 31622400; got 0'),
])
def test_the_first_wrong_option_fails_the_run(more, message):
    assert _vllm_endpoint._option_failure(endpoint_options(**more)) == message
