# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The role monitoring's choices (each filter documented in its own .yml): monitoring_service and
monitoring_prometheus_url (module_utils/operations/_monitoring_role.py), monitoring_alert_names
(module_utils/operations/_monitoring.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_monitoring = lazy_module('operations._monitoring')
_monitoring_role = lazy_module('operations._monitoring_role')


def monitoring_service(report, targets=None, unit=None, tls_ca=None):
    """``{'targets', 'unit', 'tls_ca'}`` the role watches: the variables, else vllm_service_report's (``report``)."""
    try:
        return _monitoring_role.service_inputs(report, targets, unit, tls_ca)
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError('monitoring_service: vllm_service_report lacks or mistypes %s' % error)


def monitoring_prometheus_url(config):
    """Where a client on the node reaches Prometheus, from prometheus.yml as data (monitoring_prometheus_config)."""
    try:
        return _monitoring_role.prometheus_url(config)
    except (KeyError, IndexError, TypeError) as error:
        raise AnsibleFilterError('monitoring_prometheus_url: the input must be monitoring_prometheus_config\'s '
                                 'result (%s)' % error)


def monitoring_alert_names(_thresholds=None):
    """The names of the alerts of the role's rule file, in its order."""
    return _monitoring.alert_names()


class FilterModule:
    def filters(self):
        return {'monitoring_service': monitoring_service, 'monitoring_prometheus_url': monitoring_prometheus_url,
                'monitoring_alert_names': monitoring_alert_names}
