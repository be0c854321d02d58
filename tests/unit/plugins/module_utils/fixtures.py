# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read the real samples under tests/unit/fixtures/<topic>/, which carry their source on top."""

from __future__ import annotations

import os

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, 'fixtures')


def fixture_text(topic, name):
    """A fixture's captured text: what follows its SOURCE/NOTE header and the first '---' line."""
    with open(os.path.join(FIXTURES, topic, name), encoding='utf-8') as fixture:
        lines = fixture.read().splitlines(True)
    return ''.join(lines[[line.rstrip('\n') for line in lines].index('---') + 1:])
