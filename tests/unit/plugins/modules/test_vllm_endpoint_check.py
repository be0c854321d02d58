# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_endpoint_check's main() against the fake vLLM server of test_vllm_endpoint (real HTTP on 127.0.0.1) and the
fake host (systemctl and journalctl mocked), on a fake clock (time passes only when the check sleeps, so every wait
and every duration is exact): the result, check mode, the unit's state and journal in a failure, the early end when
the unit is down, the option checks, and the API key absent from every result."""

from __future__ import annotations

import functools
import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._failure_catalogue import ENTRIES
from ansible.module_utils.testing import patch_module_args

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _vllm_endpoint
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import vllm_endpoint_check
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import PARSABLE_LOCALE, TIMEOUT, ExitJson, FailJson, run_main
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__vllm_endpoint import (
    CREDENTIALS,
    KEY,
    MODEL,
    Answer,
    FakeClock,
    FakeVllm,
    closed_port,
)

SYSTEMCTL = '/usr/bin/systemctl'
JOURNALCTL = '/usr/bin/journalctl'
SHOW = (SYSTEMCTL, 'show', '--property=ActiveState,SubState,NRestarts,MainPID', '--', 'vllm')
JOURNAL = (JOURNALCTL, '-u', 'vllm', '--no-pager', '-n', '30')
RESTARTING = 'ActiveState=activating\nSubState=auto-restart\nNRestarts=2\nMainPID=0\n'
# A journal that quotes the key, as a service that logs its arguments would.
JOURNAL_TEXT = ('Nov 30 20:01:01 node1 vllm[4242]: args: api_key=%s\n'
                'Nov 30 20:01:02 node1 vllm[4242]: RuntimeError: NPU out of memory.\n' % KEY)

# The catalogue's entry the fake journal's last line ('RuntimeError: NPU out of memory.') is.
OOM = ENTRIES['out_of_memory']


@pytest.fixture
def vllm():
    server = FakeVllm()
    yield server
    server.stop()


@pytest.fixture
def host(fake_host):
    fake_host.on_path.update(systemctl=SYSTEMCTL, journalctl=JOURNALCTL)
    fake_host.answers[SHOW] = (0, RESTARTING, '')
    fake_host.answers[JOURNAL] = (0, JOURNAL_TEXT, '')
    return fake_host


def run_module(args, outcome=ExitJson, clock=None):
    clock = clock or FakeClock()
    result = run_main(functools.partial(vllm_endpoint_check.main, clock=clock, sleep=clock.sleep), args, outcome)
    # The key never comes back, whatever quoted it.
    assert KEY not in json.dumps(result)
    return result


def args_for(vllm, **more):
    # A wait of a minute on the fake clock, tried at 0, 20 and 40 s: each request has 20 s or more of real time to get
    # its answer, far more than a loaded machine needs.
    return dict({'url': vllm.url, 'api_key': KEY, 'served_model_name': MODEL, 'timeout': 60, 'interval': 20}, **more)


def test_a_serving_endpoint_passes_and_nothing_changes(vllm, host):
    result = run_module(args_for(vllm, chat=True, expect_unauthorized=True, unit='vllm', timeout=60))
    assert result['changed'] is False
    assert (result['url'], result['models'], result['completion'], result['chat_completion'],
            result['unauthorized_status']) == (vllm.url, [MODEL], ' world, and welcome', 'Hi there', 401)
    assert list(result['stages']) == ['health', 'models', 'completion', 'chat', 'unauthorized']
    assert result['seconds'] == 0.0
    # The unit is read only when something fails.
    assert host.commands() == []


def test_check_mode_asks_the_endpoint_too(vllm, host):
    result = run_module(args_for(vllm, _ansible_check_mode=True, timeout=60))
    assert (result['changed'], result['completion']) == (False, ' world, and welcome')
    assert vllm.paths() == ['/health', '/v1/models', '/v1/completions']


def test_defaults_ask_localhost_8000_with_greedy_hello(host, monkeypatch):
    seen = {}

    class Stop(Exception):
        pass

    def fake_run(check):
        seen.update(vars(check))
        raise Stop()

    monkeypatch.setattr(_vllm_endpoint.EndpointCheck, 'run', fake_run)
    with pytest.raises(Stop):
        run_main(vllm_endpoint_check.main, {'served_model_name': MODEL})
    assert {name: seen[name] for name in ('base', 'api_key', 'timeout', 'interval', 'request_timeout', 'prompt',
                                          'max_tokens', 'chat', 'expect_unauthorized')} == {
        'base': 'http://127.0.0.1:8000', 'api_key': None, 'timeout': 600, 'interval': 2.0, 'request_timeout': 60.0,
        'prompt': 'Hello', 'max_tokens': 8, 'chat': False, 'expect_unauthorized': False}


def test_a_failure_reports_the_unit_state_and_journal_with_the_key_masked(vllm, host):
    vllm.served = 'other'
    result = run_module(args_for(vllm, unit='vllm'), FailJson)
    assert result['msg'] == (
        "waited 60 s for the model list to include 'tiny-llama' at %s/v1/models: GET %s/v1/models lists the models "
        "['other'], not 'tiny-llama' (served_model_name) (unit vllm: activating (auto-restart), 2 restarts, main "
        "PID 0); the journal shows out_of_memory: %s Fix: %s" % (vllm.url, vllm.url, OOM['cause'], OOM['fix']))
    assert result['known_failures'] == [{'id': 'out_of_memory', 'status': 'fail', 'cause': OOM['cause'], 'fix': OOM['fix'],
                                         'lines': ['Nov 30 20:01:02 node1 vllm[4242]: RuntimeError: NPU out of memory.']}]
    assert (result['stage'], result['status'], list(result['stages'])) == ('models', 200, ['health'])
    assert result['unit_state'] == {'ActiveState': 'activating', 'SubState': 'auto-restart', 'NRestarts': 2,
                                    'MainPID': 0}
    assert result['unit_journal'] == ['Nov 30 20:01:01 node1 vllm[4242]: args: api_key=********',
                                      'Nov 30 20:01:02 node1 vllm[4242]: RuntimeError: NPU out of memory.']
    # Both read through the command runner, under its time limit and locale.
    limit = [TIMEOUT, '--kill-after=5', '30']
    assert host.commands()[-2:] == [limit + list(SHOW), limit + list(JOURNAL)]
    assert all(call.kwargs['environ_update'] == PARSABLE_LOCALE for call in host.calls())


def test_a_refused_key_quoted_back_by_the_server_is_masked(vllm, host):
    # The fake server quotes the Authorization header in its 401, so the key is in the answer.
    vllm.key = KEY + '-other'
    clock = FakeClock()
    result = run_module(args_for(vllm, timeout=30), FailJson, clock)
    assert result['msg'].startswith('the API key was refused: GET %s/v1/models answered 401 Unauthorized: '
                                    '\'{"error": "Unauthorized", "got": "Bearer ********"}\'' % vllm.url)
    # Refused at once: no wait.
    assert (result['seconds'], clock.sleeps) == (0.0, [])
    assert (result['unit_state'], result['unit_journal'], result['known_failures']) == (None, None, None)


def test_the_wait_ends_early_when_the_unit_is_failed(host):
    host.answers[SHOW] = (0, 'ActiveState=failed\nSubState=failed\nNRestarts=5\nMainPID=0\n', '')
    url = 'http://127.0.0.1:%d' % closed_port()
    clock = FakeClock()
    result = run_module({'url': url, 'api_key': KEY, 'served_model_name': MODEL, 'timeout': 30, 'interval': 0.1,
                         'unit': 'vllm'}, FailJson, clock)
    # The unit read after the first try ended the wait: not one pause of the 30 s.
    assert (result['seconds'], clock.sleeps) == (0.0, [])
    assert result['msg'].startswith('waited 0 s for the health check to answer 200 at %s/health: GET %s/health: '
                                    'connection refused' % (url, url))
    assert result['msg'].endswith('; unit vllm: failed (failed), 5 restarts, main PID 0, so it will not come up by '
                                  'itself (see unit_journal); the journal shows out_of_memory: %s Fix: %s'
                                  % (OOM['cause'], OOM['fix']))
    assert result['unit_journal'][-1] == 'Nov 30 20:01:02 node1 vllm[4242]: RuntimeError: NPU out of memory.'


def test_the_unit_is_read_at_most_every_10_seconds_while_waiting(host):
    url = 'http://127.0.0.1:%d' % closed_port()
    clock = FakeClock()
    result = run_module({'url': url, 'api_key': KEY, 'served_model_name': MODEL, 'timeout': 25, 'interval': 1,
                         'unit': 'vllm'}, FailJson, clock)
    assert clock.sleeps == [1] * 25
    shows = [argv for argv in host.commands() if SYSTEMCTL in argv]
    # Of the 25 tries (at 0 to 24 s), those at 0, 10 and 20 s read the unit; then the failure does.
    assert len(shows) == 4
    assert result['msg'].endswith('(unit vllm: activating (auto-restart), 2 restarts, main PID 0); the journal shows '
                                  'out_of_memory: %s Fix: %s' % (OOM['cause'], OOM['fix']))


def test_a_journal_without_a_known_failure_adds_nothing_to_the_message(vllm, host):
    vllm.served = 'other'
    host.answers[JOURNAL] = (0, 'Nov 30 20:01:01 node1 vllm[4242]: INFO Loading weights took 2.1 s\n', '')
    result = run_module(args_for(vllm, unit='vllm'), FailJson)
    assert result['msg'].endswith('(unit vllm: activating (auto-restart), 2 restarts, main PID 0)')
    assert result['known_failures'] == []


def test_unit_tools_missing_or_failing_never_fail_the_module_themselves(vllm, host):
    del host.on_path['systemctl']
    host.answers[JOURNAL] = (1, '', 'Failed to add filter for units: No data available\n')
    vllm.script('/health', Answer(503, 'loading'))
    result = run_module(args_for(vllm, unit='vllm'), FailJson)
    assert result['msg'] == ("waited 60 s for the health check to answer 200 at %s/health: GET %s/health answered "
                             "503 Service Unavailable: 'loading'" % (vllm.url, vllm.url))
    assert result['unit_state'] == 'systemctl was not found in PATH'
    assert result['unit_journal'] == ['%s -u vllm --no-pager -n 30 failed (rc 1): Failed to add filter for units: '
                                      'No data available' % JOURNALCTL]


@pytest.mark.parametrize('args, msg', [
    ({'url': 'ftp://h'}, "url: 'ftp://h' is not usable (the scheme must be http or https): give "
                         "http[s]://HOST[:PORT][/PREFIX]"),
    ({'timeout': 0}, 'timeout must be a whole number at least 1 and at most 31622400; got 0'),
    ({'max_tokens': 0}, 'max_tokens must be a whole number at least 1 and at most 1048576; got 0'),
    ({'journal_lines': 0}, 'journal_lines must be a whole number at least 1 and at most 100000; got 0'),
    ({'interval': 0}, 'interval must be a finite number above 0 and at most 31622400; got 0.0'),
    ({'request_timeout': -1}, 'request_timeout must be a finite number above 0 and at most 31622400; got -1.0'),
    ({'interval': 'nan'}, 'interval must be a finite number above 0 and at most 31622400; got nan'),
    ({'request_timeout': 'inf'}, 'request_timeout must be a finite number above 0 and at most 31622400; got inf'),
    ({'interval': '1e400'}, 'interval must be a finite number above 0 and at most 31622400; got inf'),
    ({'timeout': 10 ** 30}, 'timeout must be a whole number at least 1 and at most 31622400; got %d' % 10 ** 30),
    ({'served_model_name': ' '}, 'served_model_name must not be empty'),
    ({'unit': ''}, 'unit must not be empty: leave it out, or name the service unit'),
    ({'expect_unauthorized': True}, 'expect_unauthorized is True but all of the following are missing: api_key'),
    ({'ca_path': '/nonexistent/ca.pem'}, 'ca_path: /nonexistent/ca.pem cannot be read as PEM CA certificates: '
                                         '[Errno 2] No such file or directory'),
])
def test_bad_options_fail_naming_the_option(host, args, msg):
    result = run_module(dict({'served_model_name': MODEL}, **args), FailJson)
    assert result['msg'] == msg
    assert host.commands() == []


# ------------------------------------------------------------------------------------------------ URL credentials

def module_output(main, args, capsys):
    """What ``main`` prints as Ansible's real exit_json / fail_json print it (no fake host: the invocation's
    arguments and Ansible's own masking of no-log values included), as text and as the parsed result."""
    capsys.readouterr()
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            main()
    printed = capsys.readouterr()
    return printed.out + printed.err, json.loads(printed.out)


@pytest.mark.parametrize('url, secrets', CREDENTIALS)
def test_a_url_with_credentials_is_refused_and_its_password_is_nowhere_in_the_output(capsys, url, secrets):
    """The whole output, the invocation's module_args among it: Ansible shows url there unless its password is a
    no-log value."""
    text, result = module_output(vllm_endpoint_check.main, {'url': url, 'served_model_name': MODEL}, capsys)
    assert result['failed'] is True and result['msg'].startswith('url: ')
    assert 'url' in result['invocation']['module_args']
    for secret in secrets:
        assert secret not in text, text
