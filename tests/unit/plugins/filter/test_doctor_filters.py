# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor role's record filters: doctor_lines, doctor_host_report and doctor_fleet (hostvars as Ansible gives it:
a mapping per host, where a host the doctor did not reach has no result)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.doctor import FilterModule

FILTERS = FilterModule().filters()
RESULT = {'status': 'broken', 'mode': 'container',
          'findings': [{'check': 'versions', 'status': 'fail', 'summary': 'no driver', 'details': {}, 'fix': 'install'}],
          'compliance': [],
          'service': {'name': 'vllm', 'vllm_ascend': None, 'unit': 'vllm.service', 'record': None}}


def test_doctor_lines():
    assert FILTERS['doctor_lines'](RESULT) == ['FAIL    versions          no driver -- fix: install']


def test_doctor_host_report():
    report = FILTERS['doctor_host_report'](RESULT, 'n1', None, 'now')
    assert report['schema'] == 'kunpeng_ascend.vllm/doctor-report/1' and report['host'] == 'n1'
    assert report['inputs']['recorded'] is False and report['status'] == 'broken'


def test_doctor_fleet_reads_each_hosts_result_and_marks_the_missing_unreachable():
    hostvars = {'n1': {'__doctor_result': RESULT}, 'n2': {'other': 1}}
    fleet = FILTERS['doctor_fleet'](['n1', 'n2'], hostvars, 'now')
    assert list(fleet['hosts']) == ['n1', 'n2']
    assert fleet['hosts']['n1']['failing'] == ['versions']
    assert fleet['hosts']['n2']['status'] == 'unreachable' and fleet['status'] == 'broken'


@pytest.mark.parametrize('name, args', [
    ('doctor_lines', ({'status': 'ok'},)),
    ('doctor_host_report', ({'status': 'x', 'findings': [], 'compliance': []}, 'n', None, 'now')),
    ('doctor_fleet', ('n1', {}, 'now'))])
def test_the_filters_refuse_what_is_not_a_doctor_result(name, args):
    with pytest.raises(AnsibleFilterError):
        FILTERS[name](*args)
