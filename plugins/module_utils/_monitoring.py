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

import math
import re
from urllib.parse import urlsplit

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils import _npu_metrics

GROUP = 'kunpeng_ascend_vllm'
# A Prometheus duration of one unit (5m, 1h, 30s): what the thresholds take.
_DURATION = re.compile(r'^([1-9][0-9]*)(ms|s|m|h|d|w)$')
_SECONDS = {'ms': 0.001, 's': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 604800}
# A host:port a scrape target or a listen address is (host: a name, an IPv4 address or [IPv6]; empty: every address).
_ADDRESS = re.compile(r'^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]*):(?P<port>[0-9]{1,5})$')
_NODE = re.compile(r'^[A-Za-z0-9_.:@/-]{1,253}$')

# (key, what it is, check) of every threshold; the role's variable is monitoring_<key>.
THRESHOLDS = (
    ('p99_e2e_latency_ms', 'a number of milliseconds above 0', 'positive'),
    ('min_output_tokens_per_second', 'a number above 0', 'positive'),
    ('min_npu_utilization_percent', 'a number above 0 and up to 100', 'percent'),
    ('rate_window', 'a Prometheus duration such as 5m', 'duration'),
    ('alert_for', 'a Prometheus duration such as 5m', 'duration'),
    ('leak_window', 'a Prometheus duration such as 1h', 'duration'),
    ('max_hbm_growth_mb_per_hour', 'a number above 0', 'positive'),
    ('max_resident_growth_mb_per_hour', 'a number above 0', 'positive'),
    ('restart_loop_restarts', 'an integer of 1 or more', 'count'),
    ('restart_loop_window', 'a Prometheus duration such as 15m', 'duration'),
    ('failure_window', 'a Prometheus duration such as 10m', 'duration'),
    ('stale_after', 'a Prometheus duration such as 5m', 'duration'),
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


def duration_seconds(text):
    """The seconds of a Prometheus duration (``5m``), None when it is not one."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    return int(match.group(1)) * _SECONDS[match.group(2)] if match else None


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def _threshold_ok(kind, value):
    if kind == 'duration':
        return duration_seconds(value) is not None
    if kind == 'count':
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if not _is_number(value) or value <= 0:
        return False
    return kind != 'percent' or value <= 100


def check_thresholds(thresholds, prefix='monitoring_'):
    """The thresholds with the defaults filled in; MonitoringError naming every variable that is wrong."""
    if not isinstance(thresholds, dict):
        raise MonitoringError('the thresholds must be a dict, not %s' % type(thresholds).__name__)
    known = set(key for key, _what, _kind in THRESHOLDS)
    unknown = sorted(str(key) for key in thresholds if key not in known)
    problems = ['unknown threshold(s) %s (known: %s)' % (', '.join(unknown), ', '.join(sorted(known)))] if unknown else []
    merged = dict(DEFAULTS, **dict((key, value) for key, value in thresholds.items() if key in known))
    for key, what, kind in THRESHOLDS:
        if not _threshold_ok(kind, merged[key]):
            problems.append('%s%s must be %s, not %r' % (prefix, key, what, merged[key]))
    if problems:
        raise MonitoringError('; '.join(problems))
    return merged


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
        raise MonitoringError('%s must be host:port (port 1-65535; an empty or 0.0.0.0 host listens everywhere), not %r'
                              % (option, text))
    return match.group('host'), int(match.group('port'))


def client_target(listen, option):
    """The target a scraper on the node reaches ``listen`` (host:port) at: a wildcard address through loopback."""
    host, port = _address(listen, option)
    host = {'': '127.0.0.1', '0.0.0.0': '127.0.0.1', '[::]': '[::1]'}.get(host, host)
    return '%s:%d' % (host, port)


def vllm_target(url, option):
    """(scheme, host:port, metrics path) of a vLLM server's URL (``http://host:port``, or the endpoint
    vllm_service_report gives, ending in /v1)."""
    parts = urlsplit(url) if isinstance(url, str) else None
    try:
        port = parts.port if parts else None
        bad_port = False
    except ValueError:  # not a number, or beyond 65535
        port, bad_port = None, True
    path = parts.path.rstrip('/') if parts else ''
    if path.endswith('/v1'):
        path = path[:-3]
    if (parts is None or bad_port or parts.scheme not in ('http', 'https') or not parts.hostname or parts.query
            or parts.fragment or parts.username or parts.password):
        raise MonitoringError('%s must be a URL such as http://127.0.0.1:8000 (its /v1 endpoint is taken too), not %r'
                              % (option, url))
    port = port or (443 if parts.scheme == 'https' else 80)
    host = '[%s]' % parts.hostname if ':' in parts.hostname else parts.hostname
    return parts.scheme, client_target('%s:%d' % (host, port), option), path + '/metrics'


def prometheus_config(node, vllm_urls, node_exporter, prometheus, rule_file, scrape_interval, evaluation_interval,
                      option='monitoring_vllm_targets', ca_file=None):
    """prometheus.yml as data: vLLM's /metrics at each of ``vllm_urls`` (no key: vLLM serves its metrics without
    one; an https one verified against the CA file ``ca_file`` when given, for the name of its URL), the node exporter
    at ``node_exporter`` and Prometheus itself at ``prometheus`` (their listen addresses), every target labelled
    ``node``; the rules of ``rule_file``."""
    if ca_file is not None and (not isinstance(ca_file, str) or not ca_file.startswith('/')
                                or re.search(r'[\x00-\x1f\x7f]', ca_file)):
        raise MonitoringError('monitoring_vllm_tls_ca must be null or an absolute path on the node, not %r' % (ca_file,))
    if not isinstance(node, str) or not _NODE.match(node):
        raise MonitoringError('monitoring_node_label must be a name of letters, digits and _.:@/- (up to 253), not %r'
                              % (node,))
    for name, value in (('monitoring_scrape_interval', scrape_interval),
                        ('monitoring_evaluation_interval', evaluation_interval)):
        if duration_seconds(value) is None:
            raise MonitoringError('%s must be a Prometheus duration such as 15s, not %r' % (name, value))
    if not isinstance(rule_file, str) or not rule_file.startswith('/'):
        raise MonitoringError('the rule file must be an absolute path, not %r' % (rule_file,))
    if not isinstance(vllm_urls, list):
        raise MonitoringError('%s must be a list of URLs, not %r' % (option, vllm_urls))
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
