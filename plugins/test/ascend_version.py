# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ascend_version test (documented in ascend_version.yml)."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_version = lazy_module('common._version')


def ascend_version(value):
    """Whether ``value`` is a version string as Huawei writes them (24.1.rc1, 7.5.0.3.220, 8.1.RC1, 25.0.rc1.b010)."""
    return _version.is_written_ascend_version(value)


class TestModule:
    """The Ascend version test."""

    def tests(self):
        return {'ascend_version': ascend_version}
