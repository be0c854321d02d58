# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The role monitoring's choice filters (plugins/filter/monitoring_role.py)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.monitoring_role import FilterModule
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._monitoring import alert_rules

FILTERS = FilterModule().filters()


def test_monitoring_service():
    assert FILTERS['monitoring_service']({'endpoint': 'http://a:1/v1'}) == {
        'targets': ['http://a:1/v1'], 'unit': 'vllm.service', 'tls_ca': None}
    with pytest.raises(AnsibleFilterError):
        FILTERS['monitoring_service']({'tls': {}})


def test_monitoring_prometheus_url():
    config = {'scrape_configs': [{'job_name': 'node', 'static_configs': [{'targets': ['127.0.0.1:9100']}]},
                                 {'job_name': 'prometheus', 'static_configs': [{'targets': ['127.0.0.1:9090']}]}]}
    assert FILTERS['monitoring_prometheus_url'](config) == 'http://127.0.0.1:9090'
    with pytest.raises(AnsibleFilterError):
        FILTERS['monitoring_prometheus_url']({'scrape_configs': []})


def test_monitoring_alert_names_are_the_rule_files():
    names = [rule['alert'] for rule in alert_rules({'p99_e2e_latency_ms': 5000})['groups'][0]['rules']]
    assert FILTERS['monitoring_alert_names']({'p99_e2e_latency_ms': 5000}) == names and len(names) > 3
