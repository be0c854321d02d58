# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The package_source_problems filter (documented in package_source_problems.yml)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_package_source = lazy_module('stack._package_source')


def package_source_problems(sources, dest_dir=None, dest_dir_name='package_fetch_dest_dir'):
    """The problems of the package sources ``sources`` (a list of [variable name, source] pairs), and of ``dest_dir``."""
    if not isinstance(sources, (list, tuple)) or not all(isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in sources):
        raise AnsibleFilterError('package_source_problems: the input must be a list of [variable name, source] pairs')
    return _package_source.sources_problems(sources, dest_dir, dest_dir_name)


class FilterModule(object):
    def filters(self):
        return {'package_source_problems': package_source_problems}
