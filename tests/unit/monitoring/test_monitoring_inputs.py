# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role monitoring's inputs against hostile values, by the rule and not the example: every variable that lands in a
file refuses every control character wherever it stands (a trailing line break too), every number that is not finite
or out of its range, and no message - of the filters or of the whole ansible-playbook run - shows the password of a
URL or an address; the exporter, as the role lays it out on the node, still writes its metrics over an unusable
journal state."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _monitoring
from ansible_collections.kunpeng_ascend.vllm.tests.unit.monitoring.test_monitoring import lay_out_node, run
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.ascend.test__npu_metrics import parse_exposition
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__vllm_endpoint import CREDENTIALS
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness

# A usable value of every input input_problems checks (the role's defaults, a target and a CA).
VALID = dict(_monitoring.DEFAULTS, vllm_targets=['http://127.0.0.1:8000/v1'], vllm_tls_ca='/etc/ca.pem',
             vllm_unit='vllm.service', node_label='node-1', exporter_interval='15s', exporter_timeout=30,
             exporter_max_journal_lines=5000, exporter_python='/usr/bin/python3',
             textfile_dir='/var/lib/prometheus/node-exporter', scrape_interval='15s', evaluation_interval='15s',
             retention='15d', prometheus_listen_address='127.0.0.1:9090', node_exporter_listen_address='127.0.0.1:9100')
CONTROLS = ['\n', '\r', '\t', '\x00', '\x1b', '\x7f', '\x85', '\u2028', '\r\n']


def test_every_input_is_checked_and_the_valid_ones_pass():
    assert set(VALID) == set(_monitoring.INPUTS) | set(_monitoring.DEFAULTS)
    assert _monitoring.input_problems(VALID) == []
    assert _monitoring.input_problems(dict(VALID, typo=1)) == ['unknown input(s) monitoring_typo']


def hostile(value, control, where):
    """``value`` (a string, a number as text, or the first URL of a list) with ``control`` at ``where``."""
    if isinstance(value, list):
        return [hostile(value[0], control, where)]
    text = str(value)
    return text + control if where == 'end' else text[:1] + control + text[1:]


@pytest.mark.parametrize('where', ['end', 'inside'])
@pytest.mark.parametrize('control', CONTROLS, ids=repr)
@pytest.mark.parametrize('key', sorted(VALID))
def test_a_control_character_in_any_input_is_refused_naming_it(key, control, where):
    problems = _monitoring.input_problems(dict(VALID, **{key: hostile(VALID[key], control, where)}))
    name = 'monitoring_%s%s' % (key, '[0]' if key == 'vllm_targets' else '')
    assert len(problems) == 1 and problems[0].startswith(name + ' must not hold a control character'), problems
    assert control not in problems[0], 'the message quotes the value escaped (repr)'


@pytest.mark.parametrize('control', CONTROLS, ids=repr)
def test_the_writers_refuse_a_control_character_too(control):
    """The rules and prometheus.yml themselves, whoever calls the filters."""
    with pytest.raises(_monitoring.MonitoringError, match='monitoring_rate_window must not hold a control'):
        _monitoring.alert_rules({'rate_window': '5m' + control})
    arguments = ['node-1', ['http://127.0.0.1:8000'], '127.0.0.1:9100', '127.0.0.1:9090', '/r.yml', '15s', '15s']
    for index, name in ((0, 'monitoring_node_label'), (2, 'monitoring_node_exporter_listen_address'),
                        (3, 'monitoring_prometheus_listen_address'), (5, 'monitoring_scrape_interval'),
                        (6, 'monitoring_evaluation_interval')):
        changed = list(arguments)
        changed[index] = changed[index] + control
        with pytest.raises(_monitoring.MonitoringError, match='^%s must not hold a control' % name):
            _monitoring.prometheus_config(*changed)
    with pytest.raises(_monitoring.MonitoringError, match=r'^monitoring_vllm_targets\[0\] must not hold a control'):
        _monitoring.prometheus_config('node-1', ['http://127.0.0.1:8000' + control], '127.0.0.1:9100',
                                      '127.0.0.1:9090', '/r.yml', '15s', '15s')


NUMBERS = [key for key, _what, kind, _bounds in _monitoring.THRESHOLDS if kind != 'duration'] + [
    'exporter_timeout', 'exporter_max_journal_lines']
HOSTILE_NUMBERS = [float('nan'), float('inf'), float('-inf'), 1e400, 10 ** 400, -1, 0, True, 'nan', 'inf', None, [1]]


@pytest.mark.parametrize('value', HOSTILE_NUMBERS, ids=lambda value: repr(value)[:12])
@pytest.mark.parametrize('key', NUMBERS)
def test_a_number_that_is_not_finite_or_in_range_is_refused(key, value):
    problems = _monitoring.input_problems(dict(VALID, **{key: value}))
    assert len(problems) == 1 and problems[0].startswith('monitoring_%s must be ' % key), problems


@pytest.mark.parametrize('key', [key for key, _what, kind, _bounds in _monitoring.THRESHOLDS if kind == 'duration']
                         + ['scrape_interval', 'evaluation_interval', 'retention', 'exporter_interval'])
@pytest.mark.parametrize('value', ['99999999999999w', '1000y', '0s', '5', '5 m', '5m5s', '', None, 5])
def test_a_duration_that_is_no_duration_or_overflows_is_refused(key, value):
    if key == 'exporter_interval' and value == '1000y':
        value = '9000h'  # beyond a year of a systemd time span
    problems = _monitoring.input_problems(dict(VALID, **{key: value}))
    assert len(problems) == 1 and problems[0].startswith('monitoring_%s must be ' % key), problems


@pytest.mark.parametrize('url, secrets', CREDENTIALS)
@pytest.mark.parametrize('key', ['vllm_targets', 'prometheus_listen_address', 'node_exporter_listen_address'])
def test_credentials_are_refused_without_showing_them(key, url, secrets):
    value = [url] if key == 'vllm_targets' else url
    problems = _monitoring.input_problems(dict(VALID, **{key: value}))
    assert problems and all(secret not in problem for problem in problems for secret in secrets), problems


# ---------------------------------------------------------------------------------------------- through the role

# (variables of a host, the variable the role's refusal must name). Every password is Hunter2pw: it must appear
# nowhere in the run's output, whatever the spelling.
ROLE_CASES = [
    ({'monitoring_vllm_targets': ['http://user:Hunter2pw@127.0.0.1:8000']}, 'monitoring_vllm_targets[0]'),
    ({'monitoring_vllm_targets': ['http://user:Hunter2pw@127.0.0.1:8000', 'http://127.0.0.1:8001']},
     'monitoring_vllm_targets[0]'),
    ({'monitoring_vllm_targets': ['https://us%40er:Hu%3Anter2pw@[::1]:8443/v1']}, 'monitoring_vllm_targets[0]'),
    ({'monitoring_vllm_targets': 'http://user:Hunter2pw@127.0.0.1:8000'}, 'monitoring_vllm_targets'),
    ({'monitoring_vllm_targets': ['http://user:Hunter2pw@127.0.0.1:8000\n']}, 'monitoring_vllm_targets[0]'),
    ({'vllm_service_report': {'endpoint': 'http://user:Hunter2pw@127.0.0.1:8000/v1', 'unit': 'vllm.service'}},
     'monitoring_vllm_targets[0]'),
    ({'monitoring_prometheus_listen_address': 'admin:Hunter2pw@127.0.0.1:9090'}, 'monitoring_prometheus_listen_address'),
    ({'monitoring_node_exporter_listen_address': 'http://admin:Hunter2pw@127.0.0.1:9100'},
     'monitoring_node_exporter_listen_address'),
    ({'monitoring_node_label': 'node-1\n'}, 'monitoring_node_label'),
    ({'monitoring_scrape_interval': '15s\n'}, 'monitoring_scrape_interval'),
    ({'monitoring_rate_window': '5m\n'}, 'monitoring_rate_window'),
    ({'monitoring_prometheus_listen_address': '127.0.0.1:9090\n'}, 'monitoring_prometheus_listen_address'),
    ({'monitoring_exporter_timeout': '30\n'}, 'monitoring_exporter_timeout'),
    ({'monitoring_retention': '15d\t'}, 'monitoring_retention'),
    ({'monitoring_min_output_tokens_per_second': 1e400}, 'monitoring_min_output_tokens_per_second'),
    ({'monitoring_vllm_targets': ['http://127.0.0.1:8000']}, None),
]


@pytest.fixture(scope='module')
def role_run(tmp_path_factory):
    """One ansible-playbook run of the role's validation over ROLE_CASES: the results and the whole output."""
    runs = []
    real = subprocess.run

    def recording(*args, **kwargs):
        # role_harness's own call, check=False among its arguments: this only keeps its result.
        runs.append(real(*args, **kwargs))  # pylint: disable=subprocess-run-check
        return runs[-1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(role_harness.subprocess, 'run', recording)
        results = role_harness.run_play(tmp_path_factory.mktemp('monitoring-hostile'), 'monitoring',
                                        [case for case, _name in ROLE_CASES], report='__monitoring_targets')
    return results, runs[-1].stdout + runs[-1].stderr


def test_no_password_is_anywhere_in_the_plays_output(role_run):
    _results, output = role_run
    assert 'Hunter2pw' not in output and 'Hu%3Anter2pw' not in output and 'Hu:nter2pw' not in output
    assert '********' in output, 'the refusals quote the URLs masked'


@pytest.mark.parametrize('index', range(len(ROLE_CASES)))
def test_the_role_refuses_each_hostile_input_naming_it(role_run, index):
    result = role_run[0][index]
    name = ROLE_CASES[index][1]
    if name is None:
        assert result['accepted'] == ['http://127.0.0.1:8000']
    else:
        assert result['accepted'] is False and any(message.startswith(name + ' must ') or
                                                   ('; %s must ' % name) in message for message in result['messages']), result


# ------------------------------------------------------------------------------------ the exporter on the node

@pytest.mark.parametrize('state', [b'{"version": 1, "unit": "vllm.service", "cursor": 5, "since": 1, "counts": {}, '
                                   b'"lines": 0}', b'[]', b'\xff garbage', b'{"cursor": null}'], ids=repr)
def test_the_exporter_from_the_copied_files_writes_its_metrics_over_an_unusable_state(tmp_path, state):
    lib, env = lay_out_node(tmp_path)
    (tmp_path / 'textfile').mkdir()
    (tmp_path / 'state.json').write_bytes(state)
    ran = run([sys.executable, '-I', '-S', str(lib / 'kunpeng-ascend-vllm-exporter.py'),
               '--output', str(tmp_path / 'textfile' / 'kunpeng_ascend_vllm.prom'), '--state', str(tmp_path / 'state.json'),
               '--unit', 'vllm.service', '--proc', str(tmp_path / 'no-proc')], env=env)
    assert ran.returncode == 0 and 'journal state' in ran.stderr and 'Traceback' not in ran.stderr, ran.stderr
    families = parse_exposition((tmp_path / 'textfile' / 'kunpeng_ascend_vllm.prom').read_text(encoding='utf-8'))
    assert families['kunpeng_ascend_vllm_npu_smi_up']['samples'][0][1] == 1
    assert (tmp_path / 'journalctl.args').read_text(encoding='utf-8').split(' ')[1].startswith('--since=@')
    assert os.path.getsize(str(tmp_path / 'state.json')) > 0
