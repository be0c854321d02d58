# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The one cap on the warnings of a module run. Parsers warn once per line they cannot read and quote that line, so
megabytes of garbage would otherwise become hundreds of thousands of warnings, or one warning of megabytes, in the
task result.
"""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import shorten

# How many warnings a module run reports; the others are counted in one last warning.
MAX_WARNINGS = 20


def ignore(message):
    """A ``warn`` callback that drops every warning: the parsers' stand-in when the caller gives none."""


class WarningCap:
    """A ``warn`` callback that keeps the first ``limit`` warnings, each shortened, and counts the others.

    A module collects every warning of its run in one WarningCap and hands them to ``AnsibleModule.warn`` with
    ``emit`` just before it exits or fails.
    """

    def __init__(self, limit=MAX_WARNINGS):
        self._limit = limit
        self.messages = []
        self.dropped = 0

    def __call__(self, message):
        if len(self.messages) < self._limit:
            self.messages.append(shorten(message))
        else:
            self.dropped += 1

    def extend(self, other):
        """Take over the warnings another WarningCap collected (held back until they were known to matter)."""
        kept = other.messages[:self._limit - len(self.messages)]
        self.messages.extend(kept)
        self.dropped += other.dropped + len(other.messages) - len(kept)

    def emit(self, warn):
        """Pass the kept warnings and a count of the others to ``warn``, once."""
        for message in self.messages:
            warn(message)
        if self.dropped:
            warn('... and %d more warnings' % self.dropped)
        self.messages = []
        self.dropped = 0
