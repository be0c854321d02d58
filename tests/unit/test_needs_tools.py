# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The needs_tools marker of tests/conftest.py: a missing tool skips a test, with the reason, except in CI."""

from __future__ import annotations

import shutil

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests import conftest


class Item:
    """What the marker's hook reads of a test: its needs_tools marker."""

    def __init__(self, *tools):
        self.marker = pytest.mark.needs_tools(*tools).mark

    def iter_markers(self, name):
        return [self.marker] if name == 'needs_tools' else []


@pytest.fixture
def missing(monkeypatch):
    """Every tool is installed but makeself and dpkg-deb."""
    monkeypatch.setattr(shutil, 'which', lambda tool: None if tool in ('makeself', 'dpkg-deb') else '/usr/bin/' + tool)


@pytest.mark.parametrize('ci', [None, '', '0', 'false', 'No'])
def test_a_missing_tool_skips_the_test_outside_ci_saying_what_to_install(monkeypatch, missing, ci):
    if ci is None:
        monkeypatch.delenv('CI', raising=False)
    else:
        monkeypatch.setenv('CI', ci)
    with pytest.raises(pytest.skip.Exception) as raised:
        conftest.pytest_runtest_setup(Item('bash', 'makeself', 'dpkg-deb'))
    assert str(raised.value) == 'makeself, dpkg-deb not installed (apt-get install makeself dpkg)'


@pytest.mark.parametrize('ci', ['true', '1', 'yes'])
def test_a_missing_tool_fails_the_test_in_ci(monkeypatch, missing, ci):
    monkeypatch.setenv('CI', ci)
    with pytest.raises(pytest.fail.Exception) as raised:
        conftest.pytest_runtest_setup(Item('dpkg-deb'))
    assert str(raised.value) == ('dpkg-deb not installed (apt-get install dpkg): CI must run this test, so the '
                                 'environment variable CI makes this a failure')


def test_with_its_tools_the_test_runs(monkeypatch, missing):
    monkeypatch.setenv('CI', 'true')
    assert conftest.pytest_runtest_setup(Item('bash', 'timeout')) is None
