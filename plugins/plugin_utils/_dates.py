# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ``today`` argument of the filters that read a waiver of the compatibility set (ascend_compat,
ascend_compat_waiver, vllm_service_input_problems): one reading of it for all of them."""

from __future__ import annotations

import datetime

from ansible.errors import AnsibleFilterError


def filter_day(today, name):
    """``today`` (YYYY-MM-DD, or null) as a datetime.date, or None when null; an AnsibleFilterError naming filter
    ``name`` when it is no such date."""
    if today is None:
        return None
    try:
        return datetime.date(*(int(part) for part in str(today).split('-')))
    except (TypeError, ValueError):
        raise AnsibleFilterError('%s: today must be a date as YYYY-MM-DD, not %r' % (name, today))
