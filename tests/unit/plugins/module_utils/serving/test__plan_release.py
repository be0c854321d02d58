# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 2 of the serving plan on its own: the vllm-ascend release a service runs. The whole plan's cases are in
test__serving.py."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_release import release_of


@pytest.mark.parametrize('image, pins, version, mode, release', [
    ('quay.io/ascend/vllm-ascend:v0.13.0-a3', None, None, 'container', '0.13.0'),
    ('quay.io/ascend/vllm-ascend:v0.11.0rc1', None, None, 'container', '0.11.0rc1'),
    ('registry.local:5000/vllm-ascend@sha256:' + 'a' * 64, None, None, 'container', ''),
    (None, ['torch==2.5.1', 'vllm-ascend==0.9.1'], None, 'native', '0.9.1'),
    (None, ['vllm_ascend==v0.10.0rc1'], None, 'native', '0.10.0rc1'),
    (None, ['vllm==0.9.1'], None, 'native', ''),
    ('quay.io/ascend/vllm-ascend:v0.13.0', None, 'v0.12.0', 'container', '0.12.0'),
])
def test_the_release_is_the_version_given_else_the_tag_or_the_pin(image, pins, version, mode, release):
    assert release_of(image, pins, version, mode) == release
