# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ascend_version test (documented in ascend_version.yml)."""

from __future__ import annotations

import re

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_version = lazy_module('common._version')

# Written as a host writes it: numbers and tags joined by single dots, starting with a number, nothing else. The
# parser reads more (blanks, v24.1, 24.1-rc1, +local) but a role compares the text itself with the host's files
# and puts it in commands, so only what needs no reading-around passes. Huawei never glues a tag to a number
# (24.1.0rc1), which the parser reads the PEP 440 way (vllm-ascend 0.13.0rc3).
_AS_WRITTEN = re.compile(r'[0-9]+(\.([0-9]+|[A-Za-z]+[0-9]*))+\Z')


def ascend_version(value):
    """Whether ``value`` is a version string as Huawei writes them (24.1.rc1, 7.5.0.3.220, 8.1.RC1, 25.0.rc1.b010)."""
    return isinstance(value, str) and _AS_WRITTEN.match(value) is not None and _version.is_ascend_version(value)


class TestModule:
    """The Ascend version test."""

    def tests(self):
        return {'ascend_version': ascend_version}
