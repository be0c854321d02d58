# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The choices of the role monitoring, on the controller: what it watches when the role vllm_service ran in the same
play (its exported fact vllm_service_report) and the variables do not say, where a client on the node reaches
Prometheus. Checking the values is _monitoring.input_problems's business:
here nothing is refused. Pure functions: no I/O.
"""

from __future__ import annotations

DEFAULT_UNIT = 'vllm.service'


def service_inputs(report, targets, unit, tls_ca):
    """``{'targets', 'unit', 'tls_ca'}`` the role watches: ``targets`` (monitoring_vllm_targets), else the endpoint of
    ``report`` (vllm_service_report; {} when vllm_service did not run), else none; ``unit`` (monitoring_vllm_unit),
    else the report's, else vllm.service; ``tls_ca`` (monitoring_vllm_tls_ca), else the CA of the report's TLS."""
    report = report if isinstance(report, dict) else {}
    if targets is None:
        targets = [report['endpoint']] if report.get('endpoint') is not None else []
    if tls_ca is None and report.get('tls') is not None:
        tls_ca = report['tls']['ca']
    return {'targets': targets, 'unit': unit or report.get('unit', DEFAULT_UNIT), 'tls_ca': tls_ca}


def prometheus_url(config):
    """Where a client on the node reaches Prometheus: its own scrape target in ``config`` (prometheus.yml as
    _monitoring.prometheus_config makes it; a wildcard listen address is reached through loopback)."""
    job = [item for item in config['scrape_configs'] if item['job_name'] == 'prometheus'][0]
    return 'http://%s' % job['static_configs'][0]['targets'][0]
