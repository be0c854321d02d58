# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The captured samples of tests/fixtures/: each says where it comes from, and the loader gives what was captured."""

from __future__ import annotations

import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES, load_fixture


FILES = sorted(name for name in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, name)))
# A directory holds a set of files that belong together (a benchmark run directory); its README.md names the source.
DIRECTORIES = sorted(name for name in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, name)))


@pytest.mark.parametrize('name', FILES)
def test_every_fixture_names_its_source_above_the_captured_text(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as fixture:
        header, separator, captured = fixture.read().partition('\n---\n')
    assert header.startswith('SOURCE: ') and separator
    assert load_fixture(name) == captured


@pytest.mark.parametrize('name', DIRECTORIES)
def test_every_fixture_directory_names_its_source_in_its_readme(name):
    with open(os.path.join(FIXTURES, name, 'README.md'), encoding='utf-8') as readme:
        assert '\nSOURCE: ' in readme.read()
