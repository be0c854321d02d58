# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor role's filters, each documented in its own .yml: doctor_input_problems, restart_storm, and the
records the role writes - doctor_lines (its summary), doctor_host_report (<host>.json) and doctor_fleet (fleet.json,
the fleet's verdict) - all built by module_utils/operations/_doctor.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_doctor = lazy_module('operations._doctor')
_systemd = lazy_module('common._systemd')


def doctor_input_problems(inputs, prefix='doctor_'):
    """The problems of the doctor role's inputs ``inputs`` (its variables without the prefix), each naming the
    variable with ``prefix``."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('doctor_input_problems: the input must be a dict of the doctor variables, not %s'
                                 % type(inputs).__name__)
    return _doctor.check_inputs(inputs, prefix)


def restart_storm(show, unit, journal=''):
    """The doctor's restart_storm finding of ``unit`` from the text of ``systemctl show`` (``show``) and of its
    journal (``journal``, ``-o cat``; its last failure lines are quoted)."""
    if not isinstance(show, str) or not isinstance(unit, str) or not isinstance(journal, str):
        raise AnsibleFilterError('restart_storm: the systemctl show output, the unit and the journal must be strings')
    return _doctor.check_restart_storm(unit, _systemd.parse_show_one(show), journal.splitlines())


def _result(result, name):
    if not isinstance(result, dict) or not all(key in result for key in ('status', 'findings', 'compliance')):
        raise AnsibleFilterError('%s: the input must be the result of kunpeng_ascend.vllm.ascend_doctor' % name)
    return result


def doctor_lines(result):
    """One readable line per finding and per compliance item of an ascend_doctor ``result``."""
    return _doctor.finding_lines(_result(result, 'doctor_lines'))


def doctor_host_report(result, host, compat_waiver, generated):
    """The report (doctor-report/1) of ``host`` from its ascend_doctor ``result``, generated at ``generated``."""
    if not isinstance(_result(result, 'doctor_host_report').get('service'), dict):
        raise AnsibleFilterError('doctor_host_report: the input must be the result of kunpeng_ascend.vllm.ascend_doctor')
    return _doctor.host_report(host, result, compat_waiver, generated)


def doctor_fleet(hosts, hostvars, generated, result_var='__doctor_result'):
    """The fleet summary (doctor-fleet/1) of ``hosts`` (the play's hosts, in order): each host's ``result_var`` in
    ``hostvars`` (absent: the host is unreachable), and the fleet's verdict."""
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(host, str) for host in hosts):
        raise AnsibleFilterError('doctor_fleet: the input must be the list of the play\'s hosts')
    results = {}
    for host in hosts:
        try:
            result = hostvars[host].get(result_var)
        except (KeyError, TypeError, AttributeError):
            result = None
        results[host] = result if isinstance(result, dict) else None
    return _doctor.fleet_summary(results, generated)


class FilterModule(object):
    def filters(self):
        return {'doctor_input_problems': doctor_input_problems, 'restart_storm': restart_storm,
                'doctor_lines': doctor_lines, 'doctor_host_report': doctor_host_report, 'doctor_fleet': doctor_fleet}
