# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What ``vllm_endpoint_check`` knows of a vLLM OpenAI-compatible endpoint, without AnsibleModule: the URLs, a small
HTTP client (one connection per request, a time limit on each socket operation, no proxy), what each answer must
hold, and the wait for each stage against one deadline. Standard library only, Python 3.8 syntax (it runs on the
managed host).

A stage's attempt raises NotYet when trying again may help (no answer yet, 503, a model still missing) and
Refused when it cannot (the API key refused, a request the server rejects, an open endpoint that should not be).

At its end, the module's run (``check_endpoint``): its options checked, the service's systemd unit read through the
command runner (``Unit``) and, when the check fails, the unit's state, journal and known failures reported.
"""

from __future__ import annotations

import collections
import http.client
import json
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json, _systemd
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS, number_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import mask, shown_url, url_secrets

# Bytes of an answer that are read; an answer longer than this is cut (and then fails to parse as JSON).
MAX_BODY_BYTES = 1024 * 1024
# Characters of an answer's body quoted in an error.
QUOTED_BODY_CHARS = 300
USER_AGENT = 'kunpeng_ascend.vllm-endpoint-check'

# The stages in the order they run; chat and unauthorized only when asked.
STAGES = ('health', 'models', 'completion', 'chat', 'unauthorized')

# The most tokens a completion of the check may ask for, and the most journal lines a failure may quote: beyond, the
# answer or the result would be larger than a check needs (and a huge number reaches vLLM or journalctl as it is).
MAX_TOKENS = 1 << 20
MAX_JOURNAL_LINES = 100000
# Every numeric option of vllm_endpoint_check with the range number_problem checks it against: time limits finite
# and at most MAX_SECONDS (time.sleep, threading.Timer and the socket overflow beyond, or wait for ever).
NUMBER_OPTIONS = (
    ('timeout', dict(minimum=1, maximum=MAX_SECONDS, integer=True)),
    ('interval', dict(above=0, maximum=MAX_SECONDS)),
    ('request_timeout', dict(above=0, maximum=MAX_SECONDS)),
    ('max_tokens', dict(minimum=1, maximum=MAX_TOKENS, integer=True)),
    ('journal_lines', dict(minimum=1, maximum=MAX_JOURNAL_LINES, integer=True)),
)

Response = collections.namedtuple('Response', 'method url status reason body')


class NotYet(Exception):
    """This try failed, a later one may succeed. ``status``: the HTTP status of the answer, None without one."""

    def __init__(self, msg, status=None):
        super().__init__(msg)
        self.status = status


class Refused(Exception):
    """The endpoint answered in a way that waiting cannot change."""

    def __init__(self, msg, status=None):
        super().__init__(msg)
        self.status = status


class StageFailed(Exception):
    """A stage did not succeed: ``msg`` says which, where and why; ``stage`` is its name and ``error`` its last
    error, ``status`` the last HTTP status (None without an answer)."""

    def __init__(self, msg, stage, error, status):
        super().__init__(msg)
        self.msg = msg
        self.stage = stage
        self.error = error
        self.status = status


# ------------------------------------------------------------------------------------------------------- text

def quote_body(body):
    """An answer's body for an error message: one line, cut to QUOTED_BODY_CHARS characters."""
    text = ' '.join(body.split())
    if not text:
        return '(empty body)'
    if len(text) > QUOTED_BODY_CHARS:
        return '%r... (%d characters in all)' % (text[:QUOTED_BODY_CHARS], len(text))
    return repr(text)


# ------------------------------------------------------------------------------------------------------- URLs

def base_url(url):
    """``url`` checked as an endpoint's base (C(http[s]://HOST[:PORT][/PREFIX])), without a trailing slash.

    A ValueError names the option ``url`` and what it accepts: an other scheme, no host, a bad port, credentials
    (an @ anywhere: this check takes none, and the message shows no password), a query or a fragment.
    """
    if not isinstance(url, str):
        raise ValueError('url: %r is not a URL: give http[s]://HOST[:PORT][/PREFIX]' % (url,))
    shown = shown_url(url)
    problem = None
    if any(ord(char) < 33 or ord(char) == 127 for char in url):
        # urlsplit drops tabs and line breaks, so that the URL it reads is not the one given.
        problem = 'it holds a space or a control character'
    elif '@' in url:
        # An @ is credentials (user:password@host) in any spelling, also those urlsplit reads otherwise (a password
        # with a /, whose part before it then stands in urlsplit's port error); an endpoint's base needs none.
        problem = 'it holds credentials (user:password@): give the API key as api_key'
    if problem is None:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as error:
            raise ValueError('url: %s is not a URL (%s): give http[s]://HOST[:PORT][/PREFIX]' % (shown, error))
        if parts.scheme not in ('http', 'https'):
            problem = 'the scheme must be http or https'
        elif not parts.hostname:
            problem = 'it names no host'
        elif parts.query or parts.fragment or url.rstrip().endswith(('?', '#')):
            problem = 'it has a query or a fragment'
    if problem:
        raise ValueError('url: %s is not usable (%s): give http[s]://HOST[:PORT][/PREFIX]' % (shown, problem))
    if port == 0:
        raise ValueError('url: %s has port 0: give http[s]://HOST[:PORT][/PREFIX]' % shown)
    return url.rstrip('/')


def option_problems(values):
    """What is wrong with the numeric options of vllm_endpoint_check in ``values`` (a dict by option name; those
    absent or None are not checked), each naming its option and the range it takes."""
    problems = []
    for option, bounds in NUMBER_OPTIONS:
        if values.get(option) is not None:
            problem = number_problem(option, values[option], **bounds)
            if problem:
                problems.append(problem)
    return problems


def endpoint(base, path):
    """The URL of ``path`` (such as C(/v1/models)) below the base URL ``base``."""
    return base + path


# ------------------------------------------------------------------------------------------------------- HTTP

def ssl_context(validate_certs=True, ca_path=None):
    """The TLS settings of https requests: the system's CAs (or ``ca_path``), or no verification at all."""
    context = ssl.create_default_context(cafile=ca_path)
    if not validate_certs:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def request(url, method='GET', headers=None, payload=None, timeout=30.0, context=None, ca_path=None):
    """Send one request to ``url`` (JSON ``payload`` when given) and return its Response (any status).

    ``timeout`` (seconds) limits the whole request - the connection, the headers and the body together: an
    endpoint that sends one byte at a time is cut off when it is up (the socket is shut down under the blocked read).
    No answer at all raises NotYet saying why: refused, timed out, closed, a TLS failure; a certificate that does not
    verify raises Refused (waiting cannot change it), naming ``ca_path``, the CA file it was verified against.
    Proxies from the environment are not used: the endpoint is the service itself.
    """
    parts = urlsplit(url)
    path = parts.path or '/'
    body = None
    sent = {'Accept': 'application/json', 'User-Agent': USER_AGENT, 'Connection': 'close'}
    sent.update(headers or {})
    if payload is not None:
        body = json.dumps(payload).encode('utf-8')
        sent['Content-Type'] = 'application/json'
    if parts.scheme == 'https':
        connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                                 context=context or ssl_context())
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    what = '%s %s' % (method, url)
    expired = threading.Event()
    # The socket's own timeout bounds each read; this bounds the request, whatever the pace of the answer.
    watchdog = threading.Timer(timeout, _cut_off, (connection, expired))
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request(method, path, body=body, headers=sent)
        answer = connection.getresponse()
        raw = answer.read(MAX_BODY_BYTES)
        if expired.is_set():
            raise socket.timeout()
        return Response(method, url, answer.status, answer.reason, raw.decode('utf-8', 'replace'))
    except (socket.timeout, OSError, http.client.HTTPException) as error:
        if expired.is_set() or isinstance(error, socket.timeout):
            raise NotYet('%s: no answer within %s s (request_timeout)' % (what, _seconds(timeout)))
        raise _no_answer(what, parts, error, ca_path)
    finally:
        watchdog.cancel()
        connection.close()


def _cut_off(connection, expired):
    """The watchdog's end of a request that ran out of time: the blocked read returns."""
    expired.set()
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _no_answer(what, parts, error, ca_path=None):
    """NotYet saying why a request got no answer; Refused when the server's certificate does not verify."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return Refused('%s: certificate verification failed against %s: %s; the server\'s certificate must be '
                       'signed by a CA of that file and hold %s in its subjectAltName (ca_path, the URL\'s host)'
                       % (what, 'the CA file %s' % ca_path if ca_path else 'the system\'s CA certificates',
                          error.verify_message or error.reason, parts.hostname))
    if isinstance(error, ConnectionRefusedError):
        return NotYet('%s: connection refused (nothing listens on %s port %s yet)'
                      % (what, parts.hostname, parts.port or (443 if parts.scheme == 'https' else 80)))
    if isinstance(error, ssl.SSLError):
        return NotYet('%s: TLS failed: %s (see validate_certs and ca_path)' % (what, error))
    if isinstance(error, http.client.HTTPException):
        return NotYet('%s: the connection ended without a valid answer (%s: %s)' % (what, type(error).__name__, error))
    return NotYet('%s: %s' % (what, error.strerror or error))


def _seconds(value):
    """Seconds as a short number: 2, 0.5."""
    return ('%.3f' % value).rstrip('0').rstrip('.')


# ------------------------------------------------------------------------------------------------------- answers

def answered(response):
    """'GET URL answered 503 Service Unavailable: <body>', for errors."""
    return '%s %s answered %d %s: %s' % (response.method, response.url, response.status, response.reason,
                                         quote_body(response.body))


def refused_key(response, keyed):
    """The Refused of a 401/403 answer: the key given was refused, or the endpoint wants one."""
    if keyed:
        return Refused('the API key was refused: %s; set api_key to the key the service was started with '
                       '(VLLM_API_KEY)' % answered(response), response.status)
    return Refused('the endpoint wants an API key: %s; set api_key' % answered(response), response.status)


def expect_ok(response, keyed, refuse_bad_request=False):
    """Raise unless ``response`` is a 200: Refused for 401/403 (and 400/422 when ``refuse_bad_request``: the same
    request will be refused again), NotYet for the others (503 while loading, 404 of another server...)."""
    if response.status == 200:
        return
    if response.status in (401, 403):
        raise refused_key(response, keyed)
    if refuse_bad_request and response.status in (400, 422):
        raise Refused('the request was refused: %s; check served_model_name, prompt and max_tokens'
                      % answered(response), response.status)
    raise NotYet(answered(response), response.status)


def json_body(response):
    """The JSON object of a 200 answer; NotYet if it is none (another server, a cut answer)."""
    try:
        document = _json.loads(response.body)
    except ValueError as error:
        raise NotYet('%s %s answered 200 but not with JSON (%s): %s'
                     % (response.method, response.url, error, quote_body(response.body)), response.status)
    if not isinstance(document, dict):
        raise NotYet('%s %s answered 200 but not with a JSON object: %s'
                     % (response.method, response.url, quote_body(response.body)), response.status)
    return document


def model_ids(response, served_model_name):
    """The model ids a /v1/models answer lists (``data[].id``); NotYet unless ``served_model_name`` is one."""
    document = json_body(response)
    data = document.get('data')
    if not isinstance(data, list) or not all(isinstance(item, dict) and isinstance(item.get('id'), str)
                                             for item in data):
        raise NotYet('%s %s answered 200 without a list of models (data[].id): %s'
                     % (response.method, response.url, quote_body(response.body)), response.status)
    ids = [item['id'] for item in data]
    if served_model_name not in ids:
        raise NotYet('%s %s lists the models %s, not %r (served_model_name)'
                     % (response.method, response.url, ids, served_model_name), response.status)
    return ids


def _first_choice(response):
    document = json_body(response)
    choices = document.get('choices')
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise NotYet('%s %s answered 200 without choices: %s'
                     % (response.method, response.url, quote_body(response.body)), response.status)
    return choices[0]


def completion_text(response):
    """The text of a /v1/completions answer (``choices[0].text``); NotYet without one."""
    text = _first_choice(response).get('text')
    if not isinstance(text, str):
        raise NotYet('%s %s answered 200 without choices[0].text: %s'
                     % (response.method, response.url, quote_body(response.body)), response.status)
    return text


def chat_text(response):
    """The reply of a /v1/chat/completions answer: ``choices[0].message.content``, or its ``reasoning_content``
    when a reasoning parser left the content empty; NotYet without either."""
    message = _first_choice(response).get('message')
    if isinstance(message, dict):
        for key in ('content', 'reasoning_content'):
            if isinstance(message.get(key), str):
                return message[key]
    raise NotYet('%s %s answered 200 without choices[0].message.content: %s'
                 % (response.method, response.url, quote_body(response.body)), response.status)


# ------------------------------------------------------------------------------------------------------- systemd

def describe_unit(unit, state):
    """'unit vllm: failed (failed), 5 restarts, main PID 0', from _systemd.parse_show_one's dict."""
    return 'unit %s: %s (%s), %s restarts, main PID %s' % (
        unit, state.get('ActiveState', '?'), state.get('SubState', '?'), state.get('NRestarts', '?'),
        state.get('MainPID', '?'))


def unit_is_down(state):
    """Whether a unit in ``state`` will not come up by itself: failed, or stopped (inactive), as opposed to
    running, starting or waiting to restart (activating / auto-restart)."""
    return state.get('ActiveState') in ('failed', 'inactive')


# ------------------------------------------------------------------------------------------------------- the check

class EndpointCheck:
    """The stages against one vLLM endpoint, under one deadline.

    ``on_retry(stage, error)`` is called after each failed try before the pause; it may raise Refused to stop
    waiting (the module does when the service's unit is down). ``clock`` and ``sleep`` are time's.
    """

    def __init__(self, url, served_model_name, api_key=None, timeout=600, interval=2.0, request_timeout=60.0,
                 prompt='Hello', max_tokens=8, chat=False, expect_unauthorized=False, context=None,
                 on_retry=None, clock=time.monotonic, sleep=time.sleep, ca_path=None):
        self.base = base_url(url)
        self.served_model_name = served_model_name
        if api_key and not all('\x21' <= char <= '\x7e' for char in api_key):
            # An HTTP header cannot carry it (http.client would raise, with the key in its message): never shown.
            raise ValueError('api_key holds a blank, a line break or another character an HTTP header cannot carry; '
                             'the key is not shown: check the key file or variable it came from')
        self.api_key = api_key or None
        # NaN, infinity or a huge number would reach time.sleep, threading.Timer and the socket (a traceback, or a
        # wait without end): refused here, the lowest level, whoever builds the check.
        problems = option_problems(dict(timeout=timeout, interval=interval, request_timeout=request_timeout,
                                        max_tokens=max_tokens))
        if problems:
            raise ValueError('; '.join(problems))
        self.timeout = timeout
        self.interval = interval
        self.request_timeout = request_timeout
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.chat = chat
        self.expect_unauthorized = expect_unauthorized
        self.context = context
        # The CA file the context verifies against, for the message of a certificate that does not verify.
        self.ca_path = ca_path
        self.on_retry = on_retry or (lambda stage, error: None)
        self.clock = clock
        self.sleep = sleep
        self.started = None
        self.deadline = None
        # Seconds each finished stage took, by name, in order.
        self.stages = {}

    def elapsed(self):
        return self.clock() - self.started if self.started is not None else 0.0

    def describe(self, stage):
        """What ``stage`` waits for, and the URL it asks."""
        name = self.served_model_name
        return {
            'health': ('the health check to answer 200', '/health'),
            'models': ('the model list to include %r' % name, '/v1/models'),
            'completion': ('a completion from %r' % name, '/v1/completions'),
            'chat': ('a chat completion from %r' % name, '/v1/chat/completions'),
            'unauthorized': ('a request without the API key to be refused (401)', '/v1/models'),
        }[stage]

    def _headers(self, keyed=True):
        return {'Authorization': 'Bearer ' + self.api_key} if keyed and self.api_key else {}

    def _send(self, path, timeout, payload=None, keyed=True):
        return request(endpoint(self.base, path), 'POST' if payload is not None else 'GET', self._headers(keyed),
                       payload, timeout, self.context, self.ca_path)

    # One try of each stage; ``timeout`` is the time limit of its request.

    def try_health(self, timeout):
        expect_ok(self._send('/health', timeout), bool(self.api_key))

    def try_models(self, timeout):
        response = self._send('/v1/models', timeout)
        expect_ok(response, bool(self.api_key))
        return model_ids(response, self.served_model_name)

    def try_completion(self, timeout):
        response = self._send('/v1/completions', timeout, {
            'model': self.served_model_name, 'prompt': self.prompt, 'max_tokens': self.max_tokens,
            'temperature': 0})
        expect_ok(response, bool(self.api_key), refuse_bad_request=True)
        return completion_text(response)

    def try_chat(self, timeout):
        response = self._send('/v1/chat/completions', timeout, {
            'model': self.served_model_name, 'messages': [{'role': 'user', 'content': self.prompt}],
            'max_tokens': self.max_tokens, 'temperature': 0})
        expect_ok(response, bool(self.api_key), refuse_bad_request=True)
        return chat_text(response)

    def try_unauthorized(self, timeout):
        response = self._send('/v1/models', timeout, keyed=False)
        if response.status == 401:
            return response.status
        if 200 <= response.status < 300:
            raise Refused('%s without the API key, not 401: the endpoint serves anyone; start the service with an '
                          'API key (VLLM_API_KEY)' % answered(response), response.status)
        raise NotYet('%s, not 401' % answered(response), response.status)

    def wait(self, stage):
        """Try ``stage`` until it succeeds or the deadline passes; return what it returns.

        StageFailed when the deadline passed ('waited N s for WHAT at URL: LAST ERROR') or the stage was refused.
        """
        attempt = getattr(self, 'try_' + stage)
        what, path = self.describe(stage)
        url = endpoint(self.base, path)
        began = self.clock()
        while True:
            try:
                result = attempt(max(min(self.request_timeout, self.deadline - self.clock()), 0.001))
            except Refused as refused:
                raise StageFailed(str(refused), stage, str(refused), refused.status)
            except NotYet as error:
                last = error
            else:
                self.stages[stage] = round(self.clock() - began, 3)
                return result
            try:
                self.on_retry(stage, str(last))
            except Refused as refused:
                msg = 'waited %d s for %s at %s: %s; %s' % (round(self.elapsed()), what, url, last, refused)
                raise StageFailed(msg, stage, str(last), last.status)
            remaining = self.deadline - self.clock()
            if remaining > 0:
                self.sleep(min(self.interval, remaining))
            if self.deadline - self.clock() <= 0:
                msg = 'waited %d s for %s at %s: %s' % (round(self.elapsed()), what, url, last)
                raise StageFailed(msg, stage, str(last), last.status)

    def run(self):
        """Every stage asked for, in order; the result dict of a success (StageFailed otherwise)."""
        self.started = self.clock()
        self.deadline = self.started + self.timeout
        result = {'url': self.base}
        self.wait('health')
        result['models'] = self.wait('models')
        result['completion'] = self.wait('completion')
        result['chat_completion'] = self.wait('chat') if self.chat else None
        result['unauthorized_status'] = self.wait('unauthorized') if self.expect_unauthorized else None
        result['stages'] = dict(self.stages)
        result['seconds'] = round(self.elapsed(), 3)
        return result


# ------------------------------------------------------------------------------------------------------- the module

# Seconds systemctl and journalctl may take.
COMMAND_TIMEOUT = 30
# Seconds between two readings of the unit's state while waiting.
UNIT_POLL_SECONDS = 10
UNIT_PROPERTIES = ('ActiveState', 'SubState', 'NRestarts', 'MainPID')


class Unit:
    """The systemd unit of the service, read through the command runner; reading it never fails the module."""

    def __init__(self, module, name, journal_lines, clock=time.monotonic):
        self.name = name
        self.journal_lines = journal_lines
        self.clock = clock
        self.runner = CommandRunner(module, COMMAND_TIMEOUT)
        self.last_poll = None
        # Whether the wait ended because the unit was down (its state is then in the message already).
        self.down = False

    def state(self):
        """_systemd.parse_show_one's dict, or the error text."""
        try:
            args = _systemd.show_argv('systemctl', [self.name], UNIT_PROPERTIES)[1:]
        except ValueError as error:
            return str(error)
        stdout, error = self.runner.output('systemctl', args)
        return error if error else _systemd.parse_show_one(stdout)

    def journal(self):
        """The last lines of the unit's journal, or a one-line list with the error."""
        stdout, error = self.runner.output('journalctl', ['-u', self.name, '--no-pager', '-n', str(self.journal_lines)])
        return [error] if error else stdout.splitlines()

    def on_retry(self, stage, error):
        """Stop waiting (Refused) when the unit is down; read its state at most every UNIT_POLL_SECONDS."""
        now = self.clock()
        if self.last_poll is not None and now - self.last_poll < UNIT_POLL_SECONDS:
            return
        self.last_poll = now
        state = self.state()
        if isinstance(state, dict) and unit_is_down(state):
            self.down = True
            raise Refused('%s, so it will not come up by itself (see unit_journal)' % describe_unit(self.name, state))


def unit_report(msg, name, state, journal, down, catalogue):
    """What a failure adds of the unit ``name``: ``{'msg', 'unit_state', 'unit_journal', 'known_failures'}``, the
    message ``msg`` extended with the unit's state (unless ``down``: the wait ended on it, so ``msg`` says it
    already) and the known failures ``catalogue`` (``explain(lines)``, ``describe(found)``; the operations layer's
    _failure_catalogue, handed in by the module) finds in ``journal``."""
    if isinstance(state, dict) and not down:
        msg += ' (%s)' % describe_unit(name, state)
    # What the log says went wrong, from the catalogue of known failures, instead of only "timed out".
    known = catalogue.explain(journal)
    if known:
        msg += '; %s' % catalogue.describe(known)
    return dict(msg=msg, unit_state=state, unit_journal=journal, known_failures=known)


def _option_failure(params):
    """The message of the first options that are wrong, None when they are right."""
    problems = option_problems(params)
    if problems:
        return '; '.join(problems)
    if not params['served_model_name'].strip():
        return 'served_model_name must not be empty'
    if params['unit'] is not None and not params['unit'].strip():
        return 'unit must not be empty: leave it out, or name the service unit'
    return None


def check_endpoint(module, catalogue, clock=time.monotonic, sleep=time.sleep):
    """vllm_endpoint_check's run on ``module``'s options: the result of the check that passed (the API key masked);
    the module fails (its key masked) on wrong options or a stage that fails. ``catalogue``: see unit_report."""
    params = module.params
    # A password in the URL (refused below) is masked by Ansible everywhere, the invocation's arguments included.
    module.no_log_values.update(url_secrets(params['url']))
    key = params['api_key']
    problem = _option_failure(params)
    if problem:
        module.fail_json(msg=problem)
    unit = Unit(module, params['unit'], params['journal_lines'], clock) if params['unit'] else None
    try:
        context = ssl_context(params['validate_certs'], params['ca_path'])
    except OSError as error:
        module.fail_json(msg='ca_path: %s cannot be read as PEM CA certificates: %s' % (params['ca_path'], error))
    try:
        check = EndpointCheck(
            params['url'], params['served_model_name'], api_key=key, timeout=params['timeout'],
            interval=params['interval'], request_timeout=params['request_timeout'], prompt=params['prompt'],
            max_tokens=params['max_tokens'], chat=params['chat'], expect_unauthorized=params['expect_unauthorized'],
            context=context, on_retry=unit.on_retry if unit else None, clock=clock, sleep=sleep,
            ca_path=params['ca_path'])
    except ValueError as error:
        module.fail_json(msg=mask(str(error), key))
    try:
        return mask(check.run(), key)
    except StageFailed as failure:
        failed = dict(msg=failure.msg, stage=failure.stage, error=failure.error, status=failure.status,
                      stages=dict(check.stages), seconds=round(check.elapsed(), 3), url=check.base,
                      unit_state=None, unit_journal=None, known_failures=None)
        if unit:
            failed.update(unit_report(failure.msg, unit.name, unit.state(), unit.journal(), unit.down, catalogue))
        module.fail_json(**mask(failed, key))
