# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role monitoring's data and programs, checked by the tools that will read them: the alert rules by `promtool test
rules` (every alert, firing and quiet) and `check rules`, the configuration by `promtool check config`, the
exporter's output by `promtool check metrics`; the exporter itself run as the node runs it (an isolated Python without
site-packages, from the files the role copies) against the simulator's npu-smi; the role's input checks.

promtool is Debian 12's, from tools/fetch-promtool.sh (make promtool): without it these tests skip, except in CI,
where they fail."""

from __future__ import annotations

import ast
import os
import shutil
import stat
import subprocess
import sys

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _monitoring
from ansible_collections.kunpeng_ascend.vllm.tests import conftest
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import HANG_SECONDS, SIMULATOR, ansible_debug
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.ascend.test__npu_metrics import parse_exposition
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import (
    MODULE_UTILS, REPO, SHIPPED_MODULE_UTILS, module_utils_closure, module_utils_copy_loops, ship_module_utils,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ALERTS_TEST = os.path.join(REPO, 'tests', 'unit', 'plugins', 'module_utils', 'promtool', 'alerts_test.yml')
ROLE = os.path.join(REPO, 'roles', 'monitoring')
PACKAGE = 'ansible_collections.kunpeng_ascend.vllm.plugins.module_utils'
# The exporter's entry script (files/), which imports the module_utils that do the work.
EXPORTER = 'kunpeng-ascend-vllm-exporter.py'


@pytest.fixture(scope='module')
def promtool():
    """promtool: KAV_PROMTOOL, else on PATH, else where tools/fetch-promtool.sh puts it."""
    cache = os.environ.get('KAV_CACHE') or os.path.join(os.path.expanduser('~'), '.cache', 'kunpeng-ascend-vllm')
    for candidate in (os.environ.get('KAV_PROMTOOL'), shutil.which('promtool'), os.path.join(cache, 'promtool', 'promtool')):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    reason = 'promtool not found (run make promtool: tools/fetch-promtool.sh puts Debian 12\'s in the asset cache)'
    if conftest.in_ci():
        pytest.fail(reason + ': CI must run this test', pytrace=False)
    pytest.skip(reason)


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, timeout=HANG_SECONDS, check=False, **kwargs)


def role_vars():
    with open(os.path.join(ROLE, 'vars', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


# ------------------------------------------------------------------------------------------------ the rules

def test_every_alert_has_a_firing_and_a_quiet_case():
    with open(ALERTS_TEST, encoding='utf-8') as handle:
        tests = yaml.safe_load(handle)['tests']
    firing, quiet = set(), set()
    for group in tests:
        for case in group['alert_rule_test']:
            (firing if case['exp_alerts'] else quiet).add(case['alertname'])
            assert group['name'] == '%s %s' % (case['alertname'], 'fires' if case['exp_alerts'] else 'stays quiet')
    assert firing == quiet == set(_monitoring.alert_names())


def test_the_role_writes_the_rules_as_the_function_returns_them():
    """Through Ansible's filter and to_nice_yaml, as the role writes them: Prometheus's {{ $labels }} templates are
    kept as text, never evaluated by Jinja."""
    written = ansible_debug("{} | kunpeng_ascend.vllm.monitoring_rules | to_nice_yaml(indent=2, width=1000)", {})['msg']
    assert yaml.safe_load(written) == _monitoring.alert_rules({})
    assert '{{ $labels.node }}' in written


def test_promtool_tests_every_alert(promtool, tmp_path):
    with open(str(tmp_path / 'rules.yml'), 'w', encoding='utf-8') as rules:
        yaml.safe_dump(_monitoring.alert_rules({}), rules, width=1000)
    shutil.copy(ALERTS_TEST, str(tmp_path / 'alerts_test.yml'))
    checked = run([promtool, 'check', 'rules', 'rules.yml'], cwd=str(tmp_path))
    assert checked.returncode == 0 and '%d rules found' % len(_monitoring.alert_names()) in checked.stdout, checked
    tested = run([promtool, 'test', 'rules', 'alerts_test.yml'], cwd=str(tmp_path))
    assert tested.returncode == 0 and 'SUCCESS' in tested.stdout, tested.stdout + tested.stderr


def test_promtool_catches_a_changed_threshold(promtool, tmp_path):
    """The tests would fail on other thresholds (so they test these)."""
    with open(str(tmp_path / 'rules.yml'), 'w', encoding='utf-8') as rules:
        yaml.safe_dump(_monitoring.alert_rules({'p99_e2e_latency_ms': 300, 'restart_loop_restarts': 5}), rules)
    shutil.copy(ALERTS_TEST, str(tmp_path / 'alerts_test.yml'))
    tested = run([promtool, 'test', 'rules', 'alerts_test.yml'], cwd=str(tmp_path))
    assert tested.returncode != 0
    assert 'VllmP99LatencyHigh fires' in tested.stdout + tested.stderr and 'VllmRestartLoop fires' in tested.stdout + tested.stderr


@pytest.mark.parametrize('thresholds, message', [
    ({'p99_e2e_latency_ms': 0}, 'monitoring_p99_e2e_latency_ms must be a number of milliseconds above 0 and at most '
                                '31622400000, not 0'),
    ({'min_npu_utilization_percent': 120}, 'monitoring_min_npu_utilization_percent must be a number above 0 and up to 100'),
    ({'leak_window': '1 hour'}, "monitoring_leak_window must be a Prometheus duration such as 1h, not '1 hour'"),
    ({'restart_loop_restarts': 2.5}, 'monitoring_restart_loop_restarts must be an integer of 1 or more'),
    ({'min_output_tokens_per_second': '1200'}, "monitoring_min_output_tokens_per_second must be a number above 0 and at "
                                               "most 1000000000, not '1200'"),
    ({'p99': 1}, 'unknown threshold(s) p99'),
])
def test_wrong_thresholds_name_the_variable(thresholds, message):
    with pytest.raises(_monitoring.MonitoringError) as raised:
        _monitoring.alert_rules(thresholds)
    assert message in raised.value.msg


def test_the_thresholds_are_the_benchmarks_targets():
    """The defaults are role vllm_benchmark's targets (the guide's), as the role's documentation says."""
    with open(os.path.join(REPO, 'roles', 'vllm_benchmark', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        targets = dict((target['metric'], target.get('max', target.get('min')))
                       for target in yaml.safe_load(handle)['vllm_benchmark_targets'])
    with open(os.path.join(ROLE, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    assert (targets['e2el_ms_p99'], targets['output_throughput'], targets['npu_aicore_percent_mean']) == (
        defaults['monitoring_p99_e2e_latency_ms'], defaults['monitoring_min_output_tokens_per_second'],
        defaults['monitoring_min_npu_utilization_percent']) == (
        _monitoring.DEFAULTS['p99_e2e_latency_ms'], _monitoring.DEFAULTS['min_output_tokens_per_second'],
        _monitoring.DEFAULTS['min_npu_utilization_percent'])
    for key, value in _monitoring.DEFAULTS.items():
        assert defaults['monitoring_' + key] == value


# ------------------------------------------------------------------------------------------ the configuration

def config(urls, listen='127.0.0.1:9090', rules='/etc/prometheus/rules/kunpeng_ascend_vllm.yml'):
    return _monitoring.prometheus_config('node-1', urls, '0.0.0.0:9100', listen, rules, '15s', '15s')


def test_the_configuration_scrapes_vllm_the_node_exporter_and_itself_labelled_by_node():
    data = config(['http://0.0.0.0:8000/v1', 'http://127.0.0.1:8001'])
    assert [(job['job_name'], job['static_configs'][0]['targets']) for job in data['scrape_configs']] == [
        ('vllm', ['127.0.0.1:8000', '127.0.0.1:8001']), ('node', ['127.0.0.1:9100']), ('prometheus', ['127.0.0.1:9090'])]
    assert all(job['static_configs'][0]['labels'] == {'node': 'node-1'} for job in data['scrape_configs'])
    assert data['scrape_configs'][0]['metrics_path'] == '/metrics' and 'authorization' not in data['scrape_configs'][0]


def test_vllm_servers_of_two_schemes_are_two_jobs_both_labelled_vllm():
    jobs = config(['http://a:8000', 'https://[::1]/proxy/v1'])['scrape_configs'][:2]
    assert [(job['scheme'], job['metrics_path'], job['static_configs'][0]['targets']) for job in jobs] == [
        ('http', '/metrics', ['a:8000']), ('https', '/proxy/metrics', ['[::1]:443'])]
    assert all(job['relabel_configs'] == [{'target_label': 'job', 'replacement': 'vllm'}] for job in jobs)


def test_an_https_vllm_is_verified_against_the_ca_given_and_http_gets_no_tls_config():
    ca = '/etc/kunpeng-ascend-vllm/tls/vllm/ca.pem'
    jobs = _monitoring.prometheus_config('node-1', ['https://node1.bank.internal:8000/v1', 'http://127.0.0.1:8001'],
                                         '0.0.0.0:9100', '127.0.0.1:9090', '/r.yml', '15s', '15s',
                                         ca_file=ca)['scrape_configs'][:2]
    assert [(job['scheme'], job['static_configs'][0]['targets'], job.get('tls_config')) for job in jobs] == [
        ('https', ['node1.bank.internal:8000'], {'ca_file': ca, 'insecure_skip_verify': False}),
        ('http', ['127.0.0.1:8001'], None)]
    with pytest.raises(_monitoring.MonitoringError, match='monitoring_vllm_tls_ca must be null or an absolute path'):
        _monitoring.prometheus_config('node-1', [], '0.0.0.0:9100', '127.0.0.1:9090', '/r.yml', '15s', '15s',
                                      ca_file='ca.pem')


@pytest.mark.parametrize('urls, message', [
    (['ftp://x:1'], 'monitoring_vllm_targets[0] must be a URL'),
    (['http://x:1', 'http://user:pw@x:2'], 'monitoring_vllm_targets[1] must be a URL'),
    (['http://x:99999'], 'monitoring_vllm_targets[0] must be a URL'),
    (['http://x:1/?q=1'], 'monitoring_vllm_targets[0] must be a URL'),
    ('http://x:1', 'monitoring_vllm_targets must be a list of URLs'),
])
def test_wrong_targets_name_the_variable(urls, message):
    with pytest.raises(_monitoring.MonitoringError) as raised:
        config(urls)
    assert message in raised.value.msg


def test_a_wrong_listen_address_names_the_variable():
    with pytest.raises(_monitoring.MonitoringError) as raised:
        config([], listen='localhost')
    assert raised.value.msg.startswith('monitoring_prometheus_listen_address must be host:port')


def test_promtool_checks_the_rendered_configuration(promtool, tmp_path):
    (tmp_path / 'rules.yml').write_text(yaml.safe_dump(_monitoring.alert_rules({})), encoding='utf-8')
    data = config(['http://127.0.0.1:8000/v1', 'https://10.0.0.2:8443'], rules=str(tmp_path / 'rules.yml'))
    (tmp_path / 'prometheus.yml').write_text(yaml.safe_dump(data), encoding='utf-8')
    checked = run([promtool, 'check', 'config', str(tmp_path / 'prometheus.yml')])
    assert checked.returncode == 0 and 'is valid prometheus config file syntax' in checked.stdout, checked


# ------------------------------------------------------------------------------------ the exporter on the node

def foreign_imports(path):
    """The top-level packages a file imports, but the collection's module_utils and __future__."""
    with open(path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read())
    others = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if not node.module.startswith(PACKAGE + '.') and node.module != '__future__':
                others.add(node.module.split('.')[0])
        elif isinstance(node, ast.Import):
            others.update(alias.name.split('.')[0] for alias in node.names)
    return others


def test_the_role_copies_what_the_exporter_imports_and_none_imports_ansible():
    # The files: the lookup's answer for the entry script, computed from the imports (lay_out_node copies the same).
    assert module_utils_copy_loops('monitoring') == {
        'exporter.yml': ["{{ query('kunpeng_ascend.vllm.module_utils_closure', '%s') }}" % EXPORTER]}
    assert role_vars()['__monitoring_module_utils_dir'] == '/'.join(SHIPPED_MODULE_UTILS)
    foreign = foreign_imports(os.path.join(ROLE, 'files', EXPORTER))
    for name in module_utils_closure('monitoring', EXPORTER):
        foreign |= foreign_imports(os.path.join(MODULE_UTILS, name))
    assert 'ansible' not in foreign and 'ansible_collections' not in foreign
    assert foreign <= set(sys.stdlib_module_names), foreign - set(sys.stdlib_module_names)


def lay_out_node(tmp_path):
    """The exporter's tree as the role lays it out on the node, and the node's programs: the simulator's npu-smi and
    stand-ins for systemctl and journalctl that answer like systemd 252."""
    lib = tmp_path / 'lib'
    ship_module_utils(lib, 'monitoring', EXPORTER)
    shutil.copy(os.path.join(ROLE, 'files', EXPORTER), str(lib))
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'npu-smi').symlink_to(os.path.join(SIMULATOR, 'ascend-sim'))
    scripts = {
        'systemctl': '#!/bin/sh\necho "$@" >> %s/systemctl.args\nprintf "NRestarts=4\\nMainPID=1\\nActiveState=active\\n"\n',
        'journalctl': '#!/bin/sh\necho "$@" >> %s/journalctl.args\n'
                      'printf "EJ0001: Failed to initialize the HCCP process.\\nall good\\n-- cursor: s=1;i=2\\n"\n',
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text % tmp_path, encoding='utf-8')
        (bin_dir / name).chmod(stat.S_IRWXU)
    root = tmp_path / 'root'
    (root / 'usr/local/Ascend/driver').mkdir(parents=True)
    (root / 'usr/local/Ascend/driver/version.info').write_text('Version=24.1.rc1\n', encoding='utf-8')
    env = dict(os.environ, PATH='%s:%s' % (bin_dir, os.environ['PATH']), ASCEND_SIM_ROOT=str(root),
               ASCEND_SIM_STATE=str(tmp_path / 'sim-state.json'), ASCEND_SIM_LOG=str(tmp_path / 'calls.log'))
    sim = run([sys.executable, os.path.join(SIMULATOR, 'ascend-sim'), 'init', '--profile', '910b-8'], env=env)
    assert sim.returncode == 0, sim.stderr
    return lib, env


def test_the_exporter_runs_from_the_copied_files_without_site_packages(tmp_path, promtool):
    lib, env = lay_out_node(tmp_path)
    (tmp_path / 'textfile').mkdir()
    argv = [sys.executable, '-I', '-S', str(lib / 'kunpeng-ascend-vllm-exporter.py'),
            '--output', str(tmp_path / 'textfile' / 'kunpeng_ascend_vllm.prom'), '--state', str(tmp_path / 'state.json'),
            '--unit', 'vllm.service', '--proc', str(tmp_path / 'no-proc')]
    ran = run(argv, env=env)
    assert ran.returncode == 0 and ran.stderr == '', ran.stderr
    text = (tmp_path / 'textfile' / 'kunpeng_ascend_vllm.prom').read_text(encoding='utf-8')
    families = parse_exposition(text)
    assert families['kunpeng_ascend_vllm_npu_smi_up']['samples'][0][1] == 1
    assert len(families['npu_chip_info_hbm_total_memory']['samples']) == 8
    assert families['kunpeng_ascend_vllm_service_restarts_total']['samples'][0][1] == 4
    failures = dict((labels['failure'], value) for labels, value, _ts in families['kunpeng_ascend_vllm_journal_failures_total']['samples'])
    assert failures['ej0001'] == 1 and sum(failures.values()) == 1
    # A second run reads after the cursor and counts on.
    assert run(argv, env=env).returncode == 0
    assert (tmp_path / 'journalctl.args').read_text(encoding='utf-8').splitlines()[1].split(' ')[1] == '--after-cursor=s=1;i=2'
    families = parse_exposition((tmp_path / 'textfile' / 'kunpeng_ascend_vllm.prom').read_text(encoding='utf-8'))
    assert dict((labels['failure'], value) for labels, value, _ts in
                families['kunpeng_ascend_vllm_journal_failures_total']['samples'])['ej0001'] == 2
    assert (tmp_path / 'systemctl.args').read_text(encoding='utf-8').splitlines()[0] == \
        'show --property=NRestarts,MainPID,ActiveState -- vllm.service'
    # Prometheus's own linter reads the file as the node exporter would.
    linted = run([promtool, 'check', 'metrics'], input=text)
    assert linted.returncode == 0, linted.stdout + linted.stderr


# ------------------------------------------------------------------------------------------- the role's checks

CASES = {
    'the defaults, after vllm_service': ({'vllm_service_report': {'endpoint': 'http://127.0.0.1:8000/v1', 'unit': 'llm.service'}}, None),
    'no vLLM at all': ({}, None),
    'a threshold that is no number': ({'monitoring_min_npu_utilization_percent': 'high'}, 'monitoring_min_npu_utilization_percent'),
    'a target that is no URL': ({'monitoring_vllm_targets': ['127.0.0.1:8000']}, 'monitoring_vllm_targets[0] must be a URL'),
    'a leak window that is no duration': ({'monitoring_leak_window': '60 minutes'}, 'monitoring_leak_window must be a Prometheus duration'),
    'a textfile directory with a blank': ({'monitoring_textfile_dir': '/var/lib/my dir'}, 'monitoring_textfile_dir must be an absolute path'),
    'an exporter interval systemd reads otherwise': ({'monitoring_exporter_interval': '15'}, 'monitoring_exporter_interval must be a time span'),
    'a unit name that is an option': ({'monitoring_vllm_unit': '-H evil'}, 'monitoring_vllm_unit must be a systemd unit name'),
}


@pytest.fixture(scope='module')
def validated(tmp_path_factory):
    report = "{'targets': __monitoring_targets, 'unit': __monitoring_unit}"
    results = role_harness.run_play(tmp_path_factory.mktemp('monitoring-validate'), 'monitoring', [case for case, _message in CASES.values()],
                                    report=report)
    return dict(zip(CASES, results))


@pytest.mark.parametrize('name', sorted(CASES))
def test_validate(validated, name):
    result = validated[name]
    message = CASES[name][1]
    if message is None:
        assert result['accepted'] == ({'targets': ['http://127.0.0.1:8000/v1'], 'unit': 'llm.service'} if 'vllm_service' in name
                                      else {'targets': [], 'unit': 'vllm.service'})
    else:
        assert result['accepted'] is False and any(message in text for text in result['messages']), result
