# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_monitoring_role: what the role monitoring watches (its variables, else vllm_service_report) and where a client
on the node reaches Prometheus."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _monitoring, _monitoring_role as role

REPORT = {'endpoint': 'https://10.0.0.1:8000/v1', 'unit': 'llm.service', 'tls': {'ca': '/etc/vllm/ca.pem'}}


@pytest.mark.parametrize('report, targets, unit, ca, expected', [
    ({}, None, None, None, {'targets': [], 'unit': 'vllm.service', 'tls_ca': None}),
    ('not a dict', None, None, None, {'targets': [], 'unit': 'vllm.service', 'tls_ca': None}),
    (REPORT, None, None, None, {'targets': ['https://10.0.0.1:8000/v1'], 'unit': 'llm.service',
                                'tls_ca': '/etc/vllm/ca.pem'}),
    (REPORT, ['http://a:1'], 'x.service', '/ca', {'targets': ['http://a:1'], 'unit': 'x.service', 'tls_ca': '/ca'}),
    (dict(REPORT, tls=None), [], '', None, {'targets': [], 'unit': 'llm.service', 'tls_ca': None}),
    ({'endpoint': None, 'unit': None}, None, None, None, {'targets': [], 'unit': None, 'tls_ca': None}),
])
def test_service_inputs(report, targets, unit, ca, expected):
    assert role.service_inputs(report, targets, unit, ca) == expected


@pytest.mark.parametrize('listen, url', [('0.0.0.0:9090', 'http://127.0.0.1:9090'), ('10.1.1.1:9091', 'http://10.1.1.1:9091')])
def test_prometheus_url_is_its_own_scrape_target(listen, url):
    config = _monitoring.prometheus_config('n1', [], '0.0.0.0:9100', listen, '/etc/prometheus/rules/r.yml', '15s', '15s')
    assert role.prometheus_url(config) == url
