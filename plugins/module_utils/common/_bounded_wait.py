# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The count of a bounded wait, shared by the programs that wait before a service starts (``_npu_wait``: the NPUs
free; ``_group_watch``: the head's port open). Time comes in from the caller as tries, so that tests drive a wait
without a clock. Standard library only: the roles ship this file to the host beside those programs.
"""

from __future__ import annotations


def tries_for(timeout, interval):
    """How many reads a wait of ``timeout`` seconds makes, ``interval`` seconds apart: the first at once, then one
    after each sleep, the last at or after the deadline (at least one)."""
    if interval <= 0:
        raise ValueError('the interval must be more than 0 seconds')
    if timeout < 0:
        raise ValueError('the timeout must be 0 seconds or more')
    return int(-(-timeout // interval)) + 1
