# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The Ascend version comparer against the version strings Huawei and vllm-ascend print."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import (
    compare_ascend_versions,
    is_ascend_version,
    parse_ascend_version,
    version_in_range,
    version_sort_key,
)


@pytest.mark.parametrize('older, newer', [
    ('24.1.RC1', '24.1.RC2'),
    ('24.1.rc3', '24.1.0'),          # a release candidate comes before its release
    ('24.1.rc3', '24.1.rc3.7'),      # the A3 driver's build after rc3
    ('25.0.rc1', '25.0.rc1.b010'),   # a build of rc1
    ('24.1.0', '24.1.1'),
    ('24.1.1', '25.5'),
    ('25.5', '26.0.RC1'),
    ('8.3.RC2', '8.5.0'),
    ('8.0.T63', '8.0.RC1'),          # Huawei's test builds come before the release candidates
    ('8.0.RC1', '8.0.0'),
    ('8.5.0', '8.5.1'),
    ('8.5.1', '9.1.0'),
    ('7.1.0.11.220', '7.2.99'),
    ('7.7.99', '8.9.9'),
    ('2.5.1', '2.5.1.post1'),        # torch_npu post releases
    ('2.10.0.post2', '2.10.0.post4'),
    ('2.9.0.post1', '2.10.0'),       # numeric, not text, order
    ('0.9.1', '0.13.0'),
    ('3.9', '3.10'),
    ('1.0.alpha1', '1.0.beta1'),
    ('1.0.beta2', '1.0.t1'),
    # vllm-ascend's PEP 440 versions, as its versioning policy table writes them (tags glued to the number).
    ('0.13.0rc2', '0.13.0rc3'),
    ('0.13.0rc3', '0.13.0'),
    ('0.10.2rc1', '0.11.0rc0'),
    ('0.23.0', '0.23.0.post1'),
    ('0.26.0rc1', '0.30.0'),
    ('3.2.0.dev20260322', '3.2.0'),               # triton-ascend of v0.18.0: a development release
    ('3.2.0.dev20260322', '3.2.0rc1'),            # before even the release candidates (PEP 440)
    ('2.5.1', '2.5.1.post1.dev20250619'),          # torch_npu of v0.9.2rc1: a development release of post1
    ('2.5.1.post1.dev20250619', '2.5.1.post1'),
    ('2.7.1.dev20250724', '2.7.1'),
    # The orders ascend_package relied on (its comparer is now this one), on the versions of its packages.
    ('24.1.rc1', '24.1.rc2'),
    ('24.1.rc2', '24.1.rc3.7'),
    ('24.1.RC3.7', '24.1.0'),
    ('24.1.0', '24.1.0.1'),
    ('24.1.rc3.7', '25.0.rc1'),
    ('25.0.rc1', '25.0.rc1.1'),
    ('25.0.rc1.1', '25.0.rc1.b010'),   # builds compare by their numbers
    ('23.0.rc2', '23.0.rc2.b090'),
    ('23.0.rc2.b090', '23.0.rc3'),
    ('7.5.0.2.220', '7.5.0.3.220'),
    ('7.5.0.3.220', '7.7.0.1.231'),
    ('6.3.0.1.241', '7.1.0.11.220'),
    ('8.0.0', '8.0.1'),
    ('8.0.RC3', '8.0.0'),
    ('8.0.0', '8.5.0'),
    ('8.5.T63', '8.5.RC1'),
    ('8.2.RC1', '8.3.RC2'),
    ('8.3.RC2', '9.1.0'),
    ('9.1.0', '10.0.0'),
    ('5.0.RC3', '6.0.0'),
    ('v6.0.0', '7.0.RC1'),
    # A 'b' and a number is Huawei's build number wherever it stands, never a beta: after the version it builds
    # on, before the next release number.
    ('8.0.T63', '8.0.T63.B020'),
    ('7.6.T13.0.B094', '7.6.T13.0.B095'),
    ('25.0', '25.0.b010'),
    ('24.1.0.b010', '24.1.0.1'),
    ('24.1.rc3.b5', '24.1.rc3.7'),
])
def test_order(older, newer):
    assert compare_ascend_versions(older, newer) == -1
    assert compare_ascend_versions(newer, older) == 1
    assert parse_ascend_version(older) < parse_ascend_version(newer)


@pytest.mark.parametrize('left, right', [
    ('24.1.rc1', '24.1.RC1'),        # case-insensitive
    ('25.5', '25.5.0'),              # trailing zeros
    ('25.5', '25.5.0.0'),
    ('v0.9.1', '0.9.1'),             # vllm-ascend tags
    ('0.9.1+empty', '0.9.1'),        # vLLM built for vllm-ascend, local part ignored
    ('2.5.1+cpu', '2.5.1'),
    (' 8.3.RC2 ', '8.3.rc2'),
    ('24.1.0.rc1', '24.1.rc1'),
    ('8.3-RC2', '8.3.RC2'),          # '-' and '_' separate like '.'
    ('8_3_rc2', '8.3.RC2'),
    ('24.1', '24.1.0'),
    ('8.0.0', '8.0.0.0'),
    ('23.0.rc2.b090', '23.0.RC2.B90'),  # build numbers compare as numbers
    ('v6.0.0', '6.0.0'),               # the Docker runtime's install record writes version=v6.0.0
    ('8.0.T63', '8.0.t63'),
    ('8.0.0-1', '8.0.0.1'),
])
def test_equal(left, right):
    assert compare_ascend_versions(left, right) == 0


@pytest.mark.parametrize('text, message', [
    ('V100R001C15', "'V100R001C15' is not a version: it must start with a number, as in 24.1.RC1 or 8.5.1"),
    ('', "'' is not a version: it must start with a number, as in 24.1.RC1 or 8.5.1"),
    ('rc1', "'rc1' is not a version: it must start with a number, as in 24.1.RC1 or 8.5.1"),
    ('24.1.spc006', "'24.1.spc006' is not a version: 'spc006' is neither a number nor a tag such as rc1, post2 or b010"),
    ('24..1', "'24..1' is not a version: '' is neither a number nor a tag such as rc1, post2 or b010"),
    ('2.5.1.post1.post2', "'2.5.1.post1.post2' is not a version: 'post2' is neither a number nor a tag such as rc1, "
                          "post2 or b010"),
    ('24.1 rc1', "'24.1 rc1' is not a version: '1 rc1' is neither a number nor a tag such as rc1, post2 or b010"),
    ('latest', "'latest' is not a version: it must start with a number, as in 24.1.RC1 or 8.5.1"),
    ('8.0.0~beta', "'8.0.0~beta' is not a version: '0~beta' is neither a number nor a tag such as rc1, post2 or b010"),
    ('24.1.spc1', "'24.1.spc1' is not a version: 'spc1' is neither a number nor a tag such as rc1, post2 or b010"),
    ('1.0.RC1alpha', "'1.0.RC1alpha' is not a version: 'rc1alpha' is neither a number nor a tag such as rc1, post2 "
                     "or b010"),
    ('1.0.a1', "'1.0.a1' is not a version: 'a1' is neither a number nor a tag such as rc1, post2 or b010"),
    (3.1, '3.1 is not a version: expected a string such as 24.1.RC1'),
    (None, 'None is not a version: expected a string such as 24.1.RC1'),
])
def test_not_a_version_raises_naming_the_text(text, message):
    with pytest.raises(ValueError) as raised:
        parse_ascend_version(text)
    assert str(raised.value) == message
    assert is_ascend_version(text) is False


def test_test_builds_before_candidates_before_the_release_before_its_builds():
    chain = ['8.0.alpha2', '8.0.beta1', '8.0.T63', '8.0.T63.B020', '8.0.RC1', '8.0.RC3', '8.0.RC3.7', '8.0.0',
             '8.0.0.b1', '8.0.1']
    assert sorted(reversed(chain), key=parse_ascend_version) == chain


def test_version_sort_key_orders_directory_names_without_raising():
    names = ['8.5.0', '8.0.RC1', '10.0.0', '8.0.0', '8.0.T63', '8.0.1', '9.0.0-beta.2', 'tools', '8.0.0_old']
    assert sorted(names, key=version_sort_key) == [
        '8.0.0_old', 'tools', '8.0.T63', '8.0.RC1', '8.0.0', '8.0.1', '8.5.0', '9.0.0-beta.2', '10.0.0']


def test_is_ascend_version():
    assert is_ascend_version('26.0.RC1') is True


def test_compare_raises_on_either_side():
    with pytest.raises(ValueError, match="'x' is not a version"):
        compare_ascend_versions('24.1.rc1', 'x')


@pytest.mark.parametrize('version, low, high, inside', [
    ('7.1.0.11.220', '7.0.0', '7.2.99', True),
    ('7.0.0', '7.0.0', '7.2.99', True),
    ('7.2.99', '7.0.0', '7.2.99', True),
    ('7.5.0.1.129', '7.0.0', '7.2.99', False),
    ('6.4.0', '7.0.0', '7.2.99', False),
    # firmware version.info's compatible_version_drv: a trailing dot admits every version that starts with it
    ('23.0.rc3', '23.0.rc3', '23.0.rc3.', True),
    ('23.0.rc3.1', '23.0.rc3', '23.0.rc3.', True),
    ('23.0.0.5', '23.0.0', '23.0.0.', True),
    ('23.0.1', '23.0.0', '23.0.0.', False),
    ('23.0.rc2', '23.0.rc3', '23.0.rc3.', False),
])
def test_version_in_range(version, low, high, inside):
    assert version_in_range(version, low, high) is inside
