# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What role monitoring writes for Prometheus, as data: the alert rules from the serving targets (``alert_rules``) and
the scrape configuration (``prometheus_config``), each from checked inputs; the role writes them as YAML and
Prometheus's promtool checks them on the node. Standard library only.

The thresholds are the deployment guide's targets, the ones role vllm_benchmark checks a run against (p99
end-to-end latency 150 ms, 1200 output tokens/s, 85 % NPU AI core utilisation). Every scrape target carries the
label ``node``, so that the alerts join vLLM's metrics with the NPU metrics of the same node.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _npu_metrics
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _systemd
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _textfile_exporter
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS, number_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import shown_url

GROUP = 'kunpeng_ascend_vllm'
# Every pattern below matches a whole value (\Z, never $, which also matches before a final line break): a value
# that lands in prometheus.yml, the rules, a unit or an /etc/default file is refused, never cut or written with a
# line break.
# A Prometheus duration of one unit (5m, 1h, 30s): what the thresholds, windows and intervals take.
_DURATION = re.compile(r'([1-9][0-9]{0,11})(ms|s|m|h|d|w|y)\Z')
_SECONDS = {'ms': 0.001, 's': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 604800, 'y': 31536000}
# The longest Prometheus duration taken: a century, well inside Prometheus's own limit (292 years of nanoseconds).
MAX_DURATION_SECONDS = 100 * 31536000
# A systemd time span of one unit, as the exporter's timer takes it.
_TIMESPAN = re.compile(r'([1-9][0-9]{0,11})(s|min|h)\Z')
_TIMESPAN_SECONDS = {'s': 1, 'min': 60, 'h': 3600}
# A host:port a scrape target or a listen address is (host: a name, an IPv4 address or [IPv6]; empty: every address).
_ADDRESS = re.compile(r'(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]*):(?P<port>[0-9]{1,5})\Z')
_NODE = re.compile(r'[A-Za-z0-9_.:@/-]{1,253}\Z')
# An absolute path without blanks, as a unit's ExecStart and the node exporter's arguments take it.
_PATH = re.compile(r'/[A-Za-z0-9._/+-]*\Z')
# Control characters (C0, DEL, C1) and the Unicode line separators, which YAML and systemd read as line breaks.
_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029]')
MAX_EXPORTER_TIMEOUT = 300
# The exporter's own bound, which it checks its --max-journal-lines against.
MAX_JOURNAL_LINES = _textfile_exporter.MAX_JOURNAL_LINES
# The largest threshold of a rate or a size: beyond, the alert could never fire (and MB/h times 2^20 would overflow).
MAX_AMOUNT = 1e9

# (key, what it is, check, the bounds of number_problem) of every threshold; the role's variable is monitoring_<key>.
THRESHOLDS = (
    ('p99_e2e_latency_ms', 'a number of milliseconds above 0 and at most %d' % (MAX_SECONDS * 1000), 'number',
     dict(above=0, maximum=MAX_SECONDS * 1000)),
    ('min_output_tokens_per_second', 'a number above 0 and at most %d' % MAX_AMOUNT, 'number',
     dict(above=0, maximum=MAX_AMOUNT)),
    ('min_npu_utilization_percent', 'a number above 0 and up to 100', 'number', dict(above=0, maximum=100)),
    ('rate_window', 'a Prometheus duration such as 5m', 'duration', None),
    ('alert_for', 'a Prometheus duration such as 5m', 'duration', None),
    ('leak_window', 'a Prometheus duration such as 1h', 'duration', None),
    ('max_hbm_growth_mb_per_hour', 'a number above 0 and at most %d' % MAX_AMOUNT, 'number',
     dict(above=0, maximum=MAX_AMOUNT)),
    ('max_resident_growth_mb_per_hour', 'a number above 0 and at most %d' % MAX_AMOUNT, 'number',
     dict(above=0, maximum=MAX_AMOUNT)),
    ('restart_loop_restarts', 'an integer of 1 or more, at most 1000000', 'count', dict(minimum=1, maximum=1000000)),
    ('restart_loop_window', 'a Prometheus duration such as 15m', 'duration', None),
    ('failure_window', 'a Prometheus duration such as 10m', 'duration', None),
    ('stale_after', 'a Prometheus duration such as 5m', 'duration', None),
)
DEFAULTS = {
    'p99_e2e_latency_ms': 150, 'min_output_tokens_per_second': 1200, 'min_npu_utilization_percent': 85,
    'rate_window': '5m', 'alert_for': '5m', 'leak_window': '1h', 'max_hbm_growth_mb_per_hour': 512,
    'max_resident_growth_mb_per_hour': 1024, 'restart_loop_restarts': 3, 'restart_loop_window': '15m',
    'failure_window': '10m', 'stale_after': '5m',
}


class MonitoringError(Exception):
    """Inputs that cannot make a configuration; ``msg`` names the variable."""

    def __init__(self, msg):
        super().__init__(msg)
        self.msg = msg


def _shown(value):
    """A value as a message quotes it: repr, with the password of any URL or address in it masked (_secrets)."""
    return shown_url(value) if isinstance(value, str) else repr(value)


def _duration(text, pattern, seconds, maximum):
    match = pattern.match(text) if isinstance(text, str) else None
    if not match:
        return None
    value = int(match.group(1)) * seconds[match.group(2)]
    return value if value <= maximum else None


def duration_seconds(text):
    """The seconds of a Prometheus duration of one unit (``5m``) of at most a century, None when it is not one."""
    return _duration(text, _DURATION, _SECONDS, MAX_DURATION_SECONDS)


def _control_problem(name, value):
    """The problem of a string holding a control character, None without one (or for anything but a string)."""
    if isinstance(value, str) and _CONTROL.search(value):
        return ('%s must not hold a control character (a line break, a tab, NUL, ESC, DEL...): it would be written '
                'into a configuration file; got %s' % (name, _shown(value)))
    return None


def _threshold_problem(name, what, kind, bounds, value):
    if kind == 'duration':
        ok = duration_seconds(value) is not None
    elif kind == 'count':
        ok = isinstance(value, int) and not isinstance(value, bool) and number_problem(name, value, **bounds) is None
    else:
        # A number as such (a string would reach PromQL as text); finite and in range (_numbers: NaN, infinity, an
        # overflowing value refused).
        ok = not isinstance(value, str) and number_problem(name, value, **bounds) is None
    return None if ok else '%s must be %s, not %s' % (name, what, _shown(value))


def threshold_problems(thresholds, prefix='monitoring_'):
    """What is wrong with ``thresholds`` (the defaults filled in), each problem naming its variable."""
    if not isinstance(thresholds, dict):
        return ['the thresholds must be a dict, not %s' % type(thresholds).__name__]
    known = set(key for key, _what, _kind, _bounds in THRESHOLDS)
    unknown = sorted(str(key) for key in thresholds if key not in known)
    problems = ['unknown threshold(s) %s (known: %s)' % (', '.join(unknown), ', '.join(sorted(known)))] if unknown else []
    merged = dict(DEFAULTS, **dict((key, value) for key, value in thresholds.items() if key in known))
    for key, what, kind, bounds in THRESHOLDS:
        problem = (_control_problem(prefix + key, merged[key])
                   or _threshold_problem(prefix + key, what, kind, bounds, merged[key]))
        if problem:
            problems.append(problem)
    return problems


def check_thresholds(thresholds, prefix='monitoring_'):
    """The thresholds with the defaults filled in; MonitoringError naming every variable that is wrong."""
    problems = threshold_problems(thresholds, prefix)
    if problems:
        raise MonitoringError('; '.join(problems))
    return dict(DEFAULTS, **thresholds)


def _number(value):
    """A threshold as PromQL writes it (150, 0.15, 1073741824)."""
    return _npu_metrics.format_value(value)


def _rule(name, expr, duration, severity, summary, description):
    rule = {'alert': name, 'expr': expr}
    if duration:
        rule['for'] = duration
    rule['labels'] = {'severity': severity}
    rule['annotations'] = {'summary': summary, 'description': description}
    return rule


def _under_target_while_running(name, measured, target, unit, window, hold, what, did):
    """An alert on ``measured`` (per node) under ``target`` while vLLM reported a running request at every scrape of
    the window (an idle node is not slow)."""
    running = 'on (node) min by (node) (min_over_time(vllm:num_requests_running[%s])) > 0' % window
    return _rule(name, '%s < %s and %s' % (measured, _number(target), running), hold, 'warning',
                 '%s under %s%s on {{ $labels.node }} while requests run' % (what, _number(target), unit),
                 '%s {{ $value | humanize }}%s over %s with requests running all along; the target is %s%s.'
                 % (did, unit, window, _number(target), unit))


def alert_rules(thresholds):
    """The rule file (``{'groups': [...]}``) of the alerts, from ``thresholds`` (check_thresholds' keys)."""
    t = check_thresholds(thresholds)
    window, leak, hold = t['rate_window'], t['leak_window'], t['alert_for']
    failures = _npu_metrics.FAILURES
    rules = [
        _rule('VllmEndpointDown', 'up{job="vllm"} == 0', '2m', 'critical',
              'vLLM on {{ $labels.node }} does not answer its /metrics',
              'Prometheus cannot scrape {{ $labels.instance }}: the service is down or restarting.'),
        _rule('VllmP99LatencyHigh',
              'histogram_quantile(0.99, sum by (node, le) (rate(vllm:e2e_request_latency_seconds_bucket[%s]))) > %s'
              % (window, _number(t['p99_e2e_latency_ms'] / 1000.0)), hold, 'warning',
              'p99 end-to-end latency over %s ms on {{ $labels.node }}' % _number(t['p99_e2e_latency_ms']),
              'The p99 of vllm:e2e_request_latency_seconds over %s is {{ $value | humanizeDuration }}; the target '
              'is %s ms.' % (window, _number(t['p99_e2e_latency_ms']))),
        _under_target_while_running(
            'VllmGenerationThroughputLow', 'sum by (node) (rate(vllm:generation_tokens_total[%s]))' % window,
            t['min_output_tokens_per_second'], ' tokens/s', window, hold, 'Generation throughput', 'vLLM generated'),
        _under_target_while_running(
            'NpuUtilizationLow', 'avg by (node) (avg_over_time(npu_chip_info_utilization[%s]))' % window,
            t['min_npu_utilization_percent'], ' %', window, hold, 'NPU AI core utilisation',
            'The NPUs averaged an AI core utilisation of'),
        _rule('NpuChipUnhealthy', 'npu_chip_info_health_status == 0', '1m', 'critical',
              'NPU chip {{ $labels.id }} on {{ $labels.node }} is not healthy',
              'npu-smi reports chip {{ $labels.id }} ({{ $labels.pcie_bus_info }}) as not OK: see `npu-smi info` '
              'and the doctor (playbook kunpeng_ascend.vllm.doctor).'),
        _rule('NpuHbmGrowing',
              'deriv(npu_chip_info_hbm_used_memory[%s]) * 3600 > %s' % (leak, _number(t['max_hbm_growth_mb_per_hour'])),
              hold, 'warning', 'HBM of NPU chip {{ $labels.id }} on {{ $labels.node }} keeps growing',
              'HBM use grew {{ $value | humanize }} MB/h over %s (more than %s MB/h): a leak ends in an '
              'out-of-memory crash.' % (leak, _number(t['max_hbm_growth_mb_per_hour']))),
        _rule('VllmResidentMemoryGrowing',
              'deriv(%s[%s]) * 3600 > %s' % (_npu_metrics.RESIDENT, leak,
                                             _number(t['max_resident_growth_mb_per_hour'] * 1048576)),
              hold, 'warning', 'Resident memory of {{ $labels.unit }} on {{ $labels.node }} keeps growing',
              'The service\'s processes grew {{ $value | humanize1024 }}B/h over %s (more than %s MB/h): a host '
              'memory leak.' % (leak, _number(t['max_resident_growth_mb_per_hour']))),
        _rule('VllmRestartLoop',
              'increase(%s[%s]) >= %s' % (_npu_metrics.RESTARTS, t['restart_loop_window'], t['restart_loop_restarts']),
              None, 'critical', '{{ $labels.unit }} on {{ $labels.node }} restarts in a loop',
              'systemd restarted the service {{ $value | humanize }} times in %s: its journal names the cause.'
              % t['restart_loop_window']),
        _rule('VllmKnownFailure', 'increase(%s{status="fail"}[%s]) > 0' % (failures, t['failure_window']), None,
              'critical', 'Known failure {{ $labels.failure }} in the journal of {{ $labels.unit }} on {{ $labels.node }}',
              '{{ $value | humanize }} journal lines in %s match catalogue entry {{ $labels.failure }}: its cause and '
              'fix are in docs/monitoring.md (the failure catalogue).' % t['failure_window']),
        _rule('VllmKnownWarning', 'increase(%s{status="warn"}[%s]) > 0' % (failures, t['failure_window']), None,
              'warning', 'Known warning {{ $labels.failure }} in the journal of {{ $labels.unit }} on {{ $labels.node }}',
              '{{ $value | humanize }} journal lines in %s match catalogue entry {{ $labels.failure }}.'
              % t['failure_window']),
        _rule('NpuSmiFailing', '%s == 0' % _npu_metrics.NPU_SMI_UP, hold, 'warning',
              'npu-smi fails on {{ $labels.node }}: no NPU metrics',
              'The exporter could not read npu-smi info: its journal (kunpeng-ascend-vllm-exporter.service) says why.'),
        _rule('NodeMetricsStale',
              'time() - node_textfile_mtime_seconds{file=~"(.*/)?kunpeng_ascend_vllm[.]prom"} > %d'
              % duration_seconds(t['stale_after']), None, 'warning',
              'The NPU metrics of {{ $labels.node }} are stale',
              'The exporter has not written its file for %s: see kunpeng-ascend-vllm-exporter.timer.' % t['stale_after']),
    ]
    return {'groups': [{'name': GROUP, 'rules': rules}]}


def alert_names():
    """The names of the alerts alert_rules writes, in its order."""
    return [rule['alert'] for rule in alert_rules({})['groups'][0]['rules']]


def _address(text, option):
    match = _ADDRESS.match(text) if isinstance(text, str) else None
    if not match or not 0 < int(match.group('port')) < 65536:
        raise MonitoringError('%s must be host:port (port 1-65535; an empty or 0.0.0.0 host listens everywhere), not %s'
                              % (option, _shown(text)))
    return match.group('host'), int(match.group('port'))


def client_target(listen, option):
    """The target a scraper on the node reaches ``listen`` (host:port) at: a wildcard address through loopback."""
    host, port = _address(listen, option)
    host = {'': '127.0.0.1', '0.0.0.0': '127.0.0.1', '[::]': '[::1]'}.get(host, host)
    return '%s:%d' % (host, port)


def vllm_target(url, option):
    """(scheme, host:port, metrics path) of a vLLM server's URL (``http://host:port``, or the endpoint
    vllm_service_report gives, ending in /v1). Refused, naming ``option`` and never showing a password: a URL with
    a blank or a control character (urlsplit would drop a line break and read another URL), with credentials (an
    @ anywhere: Prometheus is given none), another scheme, no host, a bad port, a query or a fragment."""
    refused = MonitoringError('%s must be a URL such as http://127.0.0.1:8000 (its /v1 endpoint is taken too; no '
                              'user:password@, no blank), not %s' % (option, _shown(url)))
    if not isinstance(url, str) or '@' in url or any(ord(char) < 33 or 127 <= ord(char) <= 159 for char in url):
        raise refused
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # not a number, or beyond 65535
        raise refused
    path = parts.path.rstrip('/')
    if path.endswith('/v1'):
        path = path[:-3]
    if parts.scheme not in ('http', 'https') or not parts.hostname or parts.query or parts.fragment \
            or url.endswith(('?', '#')) or port == 0:
        raise refused
    port = port or (443 if parts.scheme == 'https' else 80)
    host = '[%s]' % parts.hostname if ':' in parts.hostname else parts.hostname
    return parts.scheme, client_target('%s:%d' % (host, port), option), path + '/metrics'


def _targets_problems(urls, option):
    if not isinstance(urls, list):
        return ['%s must be a list of URLs, not %s' % (option, _shown(urls))]
    problems = []
    for index, url in enumerate(urls):
        name = '%s[%d]' % (option, index)
        try:
            problem = _control_problem(name, url)
            if problem:
                raise MonitoringError(problem)
            vllm_target(url, name)
        except MonitoringError as error:
            problems.append(error.msg)
    return problems


def _ca_problem(name, value):
    # Written into prometheus.yml as a YAML string (any character but a control one, refused before, is safe there).
    if value is None or (isinstance(value, str) and value.startswith('/')):
        return None
    return '%s must be null or an absolute path on the node, not %s' % (name, _shown(value))


def _unit_problem(name, value):
    problem = _systemd.unit_name_problem(value) if isinstance(value, str) else 'it is not a string'
    return '%s must be a systemd unit name: %s' % (name, problem) if problem else None


def _pattern_problem(pattern, accepts, extra=None):
    """A check of a string against a whole-value ``pattern`` (and ``extra(value)`` when given)."""
    def check(name, value):
        if isinstance(value, str) and pattern.match(value) and (extra is None or extra(value)):
            return None
        return '%s must be %s, not %s' % (name, accepts, _shown(value))
    return check


def _number_check(bounds, accepts):
    def check(name, value):
        problem = number_problem(name, value, **bounds)
        return '%s must be %s; %s' % (name, accepts, problem.split('; ', 1)[1]) if problem else None
    return check


def _address_problem(name, value):
    try:
        _address(value, name)
    except MonitoringError as error:
        return error.msg
    return None


def _scrape_duration_problem(name, value):
    if duration_seconds(value) is None:
        return '%s must be a Prometheus duration such as 15s (at most 100y), not %s' % (name, _shown(value))
    return None


# Every input of the role that input_problems checks, beyond the thresholds (threshold_problems), by key (the role's
# variable is monitoring_<key>), with its check(name, value) -> problem or None. Each value lands in a file: a string
# with a control character is refused before its check (each URL of vllm_targets by _targets_problems).
INPUTS = {
    'vllm_targets': lambda name, value: '; '.join(_targets_problems(value, name)) or None,
    'vllm_tls_ca': _ca_problem,
    'vllm_unit': _unit_problem,
    'node_label': _pattern_problem(_NODE, 'a name of letters, digits and _.:@/- (up to 253)'),
    'exporter_interval': _pattern_problem(
        _TIMESPAN, 'a time span such as 15s or 1min (s, min or h; at most a year)',
        lambda value: _duration(value, _TIMESPAN, _TIMESPAN_SECONDS, MAX_SECONDS) is not None),
    'exporter_timeout': _number_check(dict(minimum=1, maximum=MAX_EXPORTER_TIMEOUT, integer=True),
                                      '1 to %d seconds' % MAX_EXPORTER_TIMEOUT),
    'exporter_max_journal_lines': _number_check(dict(minimum=1, maximum=MAX_JOURNAL_LINES, integer=True),
                                                '1 or more, at most %d' % MAX_JOURNAL_LINES),
    'exporter_python': _pattern_problem(_PATH, 'an absolute path without blanks'),
    'textfile_dir': _pattern_problem(_PATH, 'an absolute path without blanks or ..',
                                     lambda value: '..' not in value.split('/')),
    'scrape_interval': _scrape_duration_problem,
    'evaluation_interval': _scrape_duration_problem,
    'retention': _pattern_problem(re.compile(r'[1-9][0-9]{0,11}(h|d|w|y)\Z'),
                                  'a Prometheus duration such as 15d (h, d, w or y; at most 100y)',
                                  lambda value: duration_seconds(value) is not None),
    'prometheus_listen_address': _address_problem,
    'node_exporter_listen_address': _address_problem,
}


def input_problems(inputs, prefix='monitoring_'):
    """What is wrong with the role's inputs (``inputs``: the monitoring variables without their prefix, the vLLM
    targets, unit and CA as the role resolved them; those present are checked, the thresholds' defaults filled in),
    each problem naming its variable and showing its value without a password; [] when they are all fine. A string
    with a control character is refused whatever the variable, since each lands in a file (prometheus.yml, the rules,
    a unit, /etc/default)."""
    if not isinstance(inputs, dict):
        return ['the monitoring inputs must be a dict, not %s' % type(inputs).__name__]
    thresholds = dict((key, value) for key, value in inputs.items() if key in DEFAULTS)
    problems = threshold_problems(thresholds, prefix)
    unknown = sorted(str(key) for key in inputs if key not in INPUTS and key not in DEFAULTS)
    if unknown:
        problems.append('unknown input(s) %s' % ', '.join(prefix + key for key in unknown))
    for key, check in INPUTS.items():
        if key in inputs:
            problem = _control_problem(prefix + key, inputs[key]) or check(prefix + key, inputs[key])
            if problem:
                problems.append(problem)
    return problems


def prometheus_config(node, vllm_urls, node_exporter, prometheus, rule_file, scrape_interval, evaluation_interval,
                      option='monitoring_vllm_targets', ca_file=None):
    """prometheus.yml as data: vLLM's /metrics at each of ``vllm_urls`` (no key: vLLM serves its metrics without
    one; an https one verified against the CA file ``ca_file`` when given, for the name of its URL), the node exporter
    at ``node_exporter`` and Prometheus itself at ``prometheus`` (their listen addresses), every target labelled
    ``node``; the rules of ``rule_file``. Its inputs are checked as input_problems checks them."""
    problems = input_problems({'vllm_tls_ca': ca_file, 'node_label': node, 'scrape_interval': scrape_interval,
                               'evaluation_interval': evaluation_interval,
                               'node_exporter_listen_address': node_exporter,
                               'prometheus_listen_address': prometheus})
    if not isinstance(rule_file, str) or not _PATH.match(rule_file):
        problems.append('the rule file must be an absolute path, not %s' % _shown(rule_file))
    problems.extend(_targets_problems(vllm_urls, option))
    if problems:
        raise MonitoringError('; '.join(problems))
    jobs = {}
    for index, url in enumerate(vllm_urls):
        scheme, target, path = vllm_target(url, '%s[%d]' % (option, index))
        targets = jobs.setdefault((scheme, path), [])
        if target not in targets:
            targets.append(target)
    scrape = []
    for (scheme, path), targets in jobs.items():
        # One job name for every vLLM target, so that the rules select them by job="vllm".
        scrape.append({'job_name': 'vllm' if len(jobs) == 1 else 'vllm_%d' % len(scrape), 'scheme': scheme,
                       'metrics_path': path, 'static_configs': [{'targets': targets, 'labels': {'node': node}}]})
        if scheme == 'https' and ca_file:
            scrape[-1]['tls_config'] = {'ca_file': ca_file, 'insecure_skip_verify': False}
    if len(jobs) > 1:
        for job in scrape:
            job['relabel_configs'] = [{'target_label': 'job', 'replacement': 'vllm'}]
    scrape.append({'job_name': 'node',
                   'static_configs': [{'targets': [client_target(node_exporter, 'monitoring_node_exporter_listen_address')],
                                       'labels': {'node': node}}]})
    scrape.append({'job_name': 'prometheus',
                   'static_configs': [{'targets': [client_target(prometheus, 'monitoring_prometheus_listen_address')],
                                       'labels': {'node': node}}]})
    return {'global': {'scrape_interval': scrape_interval, 'evaluation_interval': evaluation_interval},
            'rule_files': [rule_file], 'scrape_configs': scrape}
