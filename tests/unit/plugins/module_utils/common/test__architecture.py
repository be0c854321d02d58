# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Architecture names as uname, Huawei's file names and package metadata spell them."""

from __future__ import annotations

import platform

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._architecture import host_architecture, normalise_arch


@pytest.mark.parametrize('arch,expected', [('aarch64', 'aarch64'), ('arm64', 'aarch64'), ('x86-64', 'x86_64'),
                                           ('AMD64', 'x86_64'), ('all', None), ('noarch', None), (None, None),
                                           ('ppc64le', 'ppc64le'), (' Aarch64\n', 'aarch64'), ('', None)])
def test_normalise_arch(arch, expected):
    assert normalise_arch(arch) == expected


@pytest.mark.parametrize('machine,expected', [('aarch64', 'aarch64'), ('arm64', 'aarch64'), ('x86_64', 'x86_64')])
def test_host_architecture_is_uname_normalised(monkeypatch, machine, expected):
    monkeypatch.setattr(platform, 'machine', lambda: machine)
    assert host_architecture() == expected
