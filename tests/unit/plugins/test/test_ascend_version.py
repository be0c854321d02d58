# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ascend_version test: the version strings the roles accept for npu_driver_version, npu_driver_firmware_version
and cann_version."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.test import ascend_version as plugin

ascend_version = plugin.ascend_version

# As printed by version.info files, npu-smi and Huawei's package names.
WRITTEN_BY_HOSTS = [
    '24.1.rc1', '24.1.RC1', '24.1.0', '25.0.rc1.1', '25.0.rc1.b010', '23.0.rc2.b090', '24.1.rc3.7', '25.5',
    '7.5.0.3.220', '7.1.0.11.220', '8.1.RC1', '8.5.0', '8.0.T63', '8.0.T63.B020', '8.3.RC1.alpha001', '2.7.1.post1',
]

NOT_AS_WRITTEN = [
    '',
    '24',              # no dot: no version Huawei prints
    '24.1..rc1',       # empty part
    '24.1.rc1.',       # trailing dot
    '.24.1',
    'v24.1.rc1',       # the parser drops a v, a host never writes one
    '24.1-rc1',
    '24.1_rc1',
    '0.9.1+empty',
    ' 24.1.rc1',
    '24.1.rc1\n',      # a trailing newline must not pass
    '24.1.rc1\x00',
    '24.1;rm -rf /',
    '24.1 rc1',
    '24.1.spc1',       # a tag the parser does not know
    '24.1.0rc1',       # letters after digits in one part
    'V100R001C15',
    'latest',
]


@pytest.mark.parametrize('text', WRITTEN_BY_HOSTS)
def test_versions_as_written_pass(text):
    assert ascend_version(text) is True


@pytest.mark.parametrize('text', NOT_AS_WRITTEN)
def test_other_text_fails(text):
    assert ascend_version(text) is False


@pytest.mark.parametrize('value', [24.1, 8, None, ['24.1.rc1'], {'version': '24.1.rc1'}, True])
def test_values_that_are_not_strings_fail(value):
    """A YAML 24.1 without quotes is a float: the roles must say so rather than compare 24.1 with '24.1'."""
    assert ascend_version(value) is False


def test_jinja_name():
    assert plugin.TestModule().tests() == {'ascend_version': ascend_version}
