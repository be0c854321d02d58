# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 2 of the serving plan on its own: the vllm-ascend release a service runs. The whole plan's cases are in
test__serving.py."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_release import (
    environment_defaults,
    release_of,
)


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


@pytest.mark.parametrize('image, pins, version, mode, release', [
    ('quay.io/ascend/vllm-ascend:v0.13.0-a3', None, None, 'container', '0.13.0'),
    ('quay.io/ascend/vllm-ascend:v0.32.0rc1-openeuler', None, None, 'container', '0.32.0rc1'),
    ('quay.io/ascend/vllm-ascend:latest', None, None, 'container', ''),
    ('registry:5000/vllm-ascend@sha256:' + 'a' * 64, None, None, 'container', ''),
    (None, ['vllm==0.13.0', 'vllm_ascend==0.13.0'], None, 'native', '0.13.0'),
    ('quay.io/ascend/vllm-ascend:v0.13.0', None, 'v0.23.0', 'container', '0.23.0'),
])
def test_the_release(image, pins, version, mode, release):
    assert release_of(image, pins, version, mode) == release


@pytest.mark.parametrize('release, threads, extra', [
    ('0.30.0', '1', 'HCCL_OP_EXPANSION_MODE'), ('0.9.1', '100', 'VLLM_USE_V1'), ('0.7.3', '100', None),
    ('', '100', None), ('0.11.0rc1', '1', 'HCCL_OP_EXPANSION_MODE')])
def test_the_environment_follows_the_release(release, threads, extra):
    env = environment_defaults(release, has_npus=True)
    assert env['OMP_NUM_THREADS'] == threads
    assert extra is None or extra in env
