# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ascend_compat and ascend_compat_rows filters (documented in ascend_compat.yml and ascend_compat_rows.yml)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._compatibility import (
    COMPONENTS,
    check_combination,
    compatibility_rows,
    rows_for_driver,
)


def ascend_compat(versions):
    """Check the component versions in the dict ``versions`` against the compatibility set."""
    if not isinstance(versions, dict):
        raise AnsibleFilterError('ascend_compat: the input must be a dict of versions with keys among %s, not %s'
                                 % (', '.join(COMPONENTS), type(versions).__name__))
    unknown = sorted(str(key) for key in versions if key not in COMPONENTS)
    if unknown:
        raise AnsibleFilterError('ascend_compat: unknown key(s) %s; the keys are %s'
                                 % (', '.join(unknown), ', '.join(COMPONENTS)))
    return check_combination(**versions)


def ascend_compat_rows(driver=None):
    """Every row of the compatibility set (``driver`` empty or null), or the rows that NPU driver ``driver`` fits."""
    if driver is None or (isinstance(driver, str) and not driver.strip()):
        return compatibility_rows()
    if not isinstance(driver, str):
        raise AnsibleFilterError('ascend_compat_rows: the NPU driver version must be a string such as 24.1.RC1, not %s %r'
                                 % (type(driver).__name__, driver))
    try:
        return rows_for_driver(driver.strip())
    except ValueError as error:
        raise AnsibleFilterError('ascend_compat_rows: %s' % error) from error


class FilterModule:
    """The vllm-ascend compatibility filters."""

    def filters(self):
        return {
            'ascend_compat': ascend_compat,
            'ascend_compat_rows': ascend_compat_rows,
        }
