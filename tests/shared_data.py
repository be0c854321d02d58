# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The project's shared reference data beside the checkout (``../shared``: real model configurations, documented
layouts, Ascend samples), for the tests that read it.

Where it is: the environment variable KAV_SHARED_DIR when set, else ``<repository>/../shared``. A test that needs it
and does not find it is skipped with a note on a workstation, and fails in CI (the environment variable CI set, as
tests/conftest.py's ``in_ci`` reads it), where the data must be there.
"""

from __future__ import annotations

import json
import os

import pytest

REPOSITORY = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def in_ci():
    """Whether this runs in CI: the environment variable CI set (the same rule as tests/conftest.py's in_ci)."""
    return os.environ.get('CI', '').strip().lower() not in ('', '0', 'false', 'no')


def shared_dir():
    """The shared data folder: KAV_SHARED_DIR, else ``<repository>/../shared`` (the path may not exist)."""
    return os.environ.get('KAV_SHARED_DIR') or os.path.join(os.path.dirname(REPOSITORY), 'shared')


def require_shared(*parts):
    """The path of ``parts`` under the shared folder; skips the test (fails it in CI) when it is not there."""
    path = os.path.join(shared_dir(), *parts)
    if not os.path.exists(path):
        reason = ('%s not found: the shared reference data is the folder KAV_SHARED_DIR names, or ../shared beside the '
                  'repository' % path)
        if in_ci():
            pytest.fail('%s; CI must run this test, so the environment variable CI makes this a failure' % reason,
                        pytrace=False)
        pytest.skip(reason)
    return path


def load_model_config(name):
    """The JSON document ``../shared/model-configs/<name>`` (a real model's config.json copy, see its SOURCES.md)."""
    with open(require_shared('model-configs', name), encoding='utf-8') as handle:
        return json.load(handle)
