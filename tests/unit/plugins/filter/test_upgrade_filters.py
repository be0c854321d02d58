# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The filters of playbooks/upgrade.yml: what they pass to module_utils, and their refusals."""

from __future__ import annotations

import base64
import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.filter.upgrade import (
    FilterModule,
    known_good_current,
    stack_package_dirs,
    stack_package_sources,
    stack_rollback_packages,
    wait_retries,
)


def test_every_filter_is_registered():
    assert sorted(FilterModule().filters()) == [
        'known_good_current', 'stack_installed_versions', 'stack_missing_packages', 'stack_package_dirs',
        'stack_package_sources', 'stack_rollback_packages', 'stack_wanted_versions', 'wait_retries']


@pytest.mark.parametrize('timeout, delay, retries', [(180, 2, 90), (181, 2, 91), (0, 2, 0), (10, 3, 4), ('60', 3, 20)])
def test_wait_retries_cover_the_timeout(timeout, delay, retries):
    assert wait_retries(timeout, delay) == retries


@pytest.mark.parametrize('timeout, delay', [(10, 0), (-1, 2), ('soon', 2), (float('nan'), 2), (float('inf'), 2)])
def test_wait_retries_refuse_what_is_no_wait(timeout, delay):
    with pytest.raises(AnsibleFilterError, match='wait_retries'):
        wait_retries(timeout, delay)


def test_the_known_good_is_the_services_current_summary_or_nothing():
    facts = {'kunpeng_ascend_vllm_known_good': {'services': {'vllm': {'current': {'model': 'm'}, 'previous': None},
                                                             'other': {'current': None}}}}
    assert known_good_current(facts, 'vllm') == {'model': 'm'}
    assert known_good_current(facts, 'other') == {}
    assert known_good_current(facts, 'absent') == {}
    assert known_good_current({'kunpeng_ascend_vllm_known_good': 'garbled'}, 'vllm') == {}


def test_records_are_read_from_slurp_base64():
    record = {'current': {'version': '8.1.RC1', 'packages': {'toolkit': '/p/Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run'}}}
    content = base64.b64encode(json.dumps(record).encode()).decode()
    result = stack_rollback_packages({'toolkit': '8.1.RC1'}, [{'item': '/r.json', 'content': content}], [], ['/d'])
    assert result['found'] == {'toolkit': '/p/Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run'}


@pytest.mark.parametrize('content', ['not base64!', base64.b64encode(b'{"current": ').decode()])
def test_a_record_that_cannot_be_read_is_named(content):
    with pytest.raises(AnsibleFilterError, match='/r.json is no package record'):
        stack_rollback_packages({'toolkit': '8.1.RC1'}, [{'item': '/r.json', 'content': content}], [], ['/d'])


def test_inputs_of_the_wrong_type_are_refused_naming_them():
    with pytest.raises(AnsibleFilterError, match='stack_package_sources: given'):
        stack_package_sources([], 'npu_driver_driver_package')
    with pytest.raises(AnsibleFilterError, match='stack_package_dirs: extra_dirs'):
        stack_package_dirs([], {}, '/srv')
