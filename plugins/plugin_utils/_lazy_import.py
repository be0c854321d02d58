# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The collection's module_utils as the filter and test plugins use them: imported when a filter first needs one.

Why: Ansible forks a worker process for each task on each host. A worker that templates one of the collection's
filters looks for it file by file through ``plugins/filter/`` (in name order, until a file has it) and loads each of
those files in that worker. Every module_utils a filter file imports at its top is compiled and run again in each such
worker (the collection loader keeps no bytecode), whether or not the filter asked for needs it. Imported on first
use, a worker pays only for the module_utils of the filters it calls.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """Stands for the module named ``name``; imports it when one of its attributes is first read."""

    def __init__(self, name):
        self._lazy_module_name = name

    def __getattr__(self, attribute):
        # Only for attributes this object does not have itself: the module's names. import_module returns the module
        # from sys.modules after the first time.
        return getattr(importlib.import_module(self._lazy_module_name), attribute)

    def __repr__(self):
        return '<module %s, imported on first use>' % self._lazy_module_name


def lazy_module(name):
    """The module_utils module ``name`` (a dotted path under the collection's plugins/module_utils/, such as
    ``serving._serving``), imported when first used."""
    return LazyModule('ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.' + name)
