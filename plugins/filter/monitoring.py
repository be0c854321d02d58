# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The monitoring filters (documented in monitoring_rules.yml, monitoring_prometheus_config.yml and
monitoring_input_problems.yml): role monitoring's input checks, alert rules and Prometheus configuration, as data,
from module_utils/operations/_monitoring.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_monitoring = lazy_module('operations._monitoring')


def _checked(function, *args):
    try:
        return function(*args)
    except _monitoring.MonitoringError as error:
        raise AnsibleFilterError(error.msg)


def monitoring_input_problems(inputs, prefix='monitoring_'):
    """What is wrong with the role's inputs, each naming its variable; [] when nothing is."""
    return _monitoring.input_problems(inputs, prefix)


def monitoring_rules(thresholds):
    """The rule file of the alerts, from the thresholds (the role's monitoring_<key> variables by key)."""
    return _checked(_monitoring.alert_rules, thresholds)


def monitoring_prometheus_config(vllm_urls, node, node_exporter, prometheus, rule_file, scrape_interval,
                                 evaluation_interval, ca_file=None):
    """prometheus.yml as data."""
    return _checked(_monitoring.prometheus_config, node, vllm_urls, node_exporter, prometheus, rule_file,
                    scrape_interval, evaluation_interval, 'monitoring_vllm_targets', ca_file)


class FilterModule:
    def filters(self):
        return {'monitoring_input_problems': monitoring_input_problems, 'monitoring_rules': monitoring_rules,
                'monitoring_prometheus_config': monitoring_prometheus_config}
