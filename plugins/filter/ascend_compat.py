# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ascend_compat, ascend_compat_rows, ascend_compat_waiver and ascend_compat_policy filters (documented in their
.yml files)."""

from __future__ import annotations

import datetime

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._dates import filter_day
from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_compatibility = lazy_module('stack._compatibility')


def _rows(site_rows, name):
    """The compatibility set with the site's rows (the inventory variable ascend_compat_site_rows)."""
    try:
        return _compatibility.with_site_rows(site_rows)
    except ValueError as error:
        raise AnsibleFilterError('%s: %s' % (name, error)) from error


def _text(value, name, option):
    if value is not None and not isinstance(value, str):
        raise AnsibleFilterError('%s: %s must be a string or null, not %s' % (name, option, type(value).__name__))
    return value


def ascend_compat(versions, waiver=None, today=None, site_rows=None, release_variable=None):
    """Check the component versions in the dict ``versions`` against the compatibility set (with ``site_rows``, the
    site's rows), under ``waiver`` (a dict of reason, expires and covers, or null) on ``today`` (YYYY-MM-DD; the
    controller's date when null); ``release_variable`` names what chooses another release in the driver refusal."""
    if not isinstance(versions, dict):
        raise AnsibleFilterError('ascend_compat: the input must be a dict of versions with keys among %s, not %s'
                                 % (', '.join(_compatibility.COMPONENTS), type(versions).__name__))
    unknown = sorted(str(key) for key in versions if key not in _compatibility.COMPONENTS)
    if unknown:
        raise AnsibleFilterError('ascend_compat: unknown key(s) %s; the keys are %s'
                                 % (', '.join(unknown), ', '.join(_compatibility.COMPONENTS)))
    return _compatibility.check_combination(
        waiver=waiver, today=filter_day(today, 'ascend_compat'), rows=_rows(site_rows, 'ascend_compat'),
        release_variable=_text(release_variable, 'ascend_compat', 'release_variable'), **versions)


def ascend_compat_waiver(waiver, today=None):
    """The waiver read on ``today`` (the controller's date when null): {waiver: its fields or null, problems: why it is
    void}. Null is no waiver and no problem."""
    read, problems = _compatibility.read_waiver(waiver, filter_day(today, 'ascend_compat_waiver') or datetime.date.today())
    return {'waiver': read, 'problems': problems}


def ascend_compat_rows(driver=None, site_rows=None):
    """Every row of the compatibility set with the site's rows (``driver`` empty or null), or the rows that NPU
    driver ``driver`` fits."""
    rows = _rows(site_rows, 'ascend_compat_rows')
    if driver is None or (isinstance(driver, str) and not driver.strip()):
        return _compatibility.compatibility_rows(rows)
    if not isinstance(driver, str):
        raise AnsibleFilterError('ascend_compat_rows: the NPU driver version must be a string such as 24.1.RC1, not %s %r'
                                 % (type(driver).__name__, driver))
    try:
        return _compatibility.rows_for_driver(driver.strip(), rows)
    except ValueError as error:
        raise AnsibleFilterError('ascend_compat_rows: %s' % error) from error


def ascend_compat_policy(text, source=None, include_rc=False):
    """The rows of a versioning_policy.md (its text) as the inventory variable ascend_compat_site_rows takes them,
    with what could not be read and how they differ from the collection's rows."""
    if not isinstance(text, str):
        raise AnsibleFilterError('ascend_compat_policy: the input must be the text of a versioning_policy.md, not %s'
                                 % type(text).__name__)
    if not isinstance(include_rc, bool):
        raise AnsibleFilterError('ascend_compat_policy: include_rc must be true or false, not %r' % (include_rc,))
    try:
        return _compatibility.policy_site_rows(text, _text(source, 'ascend_compat_policy', 'source'), include_rc)
    except ValueError as error:
        raise AnsibleFilterError('ascend_compat_policy: %s' % error) from error


class FilterModule:
    """The vllm-ascend compatibility filters."""

    def filters(self):
        return {
            'ascend_compat': ascend_compat,
            'ascend_compat_rows': ascend_compat_rows,
            'ascend_compat_waiver': ascend_compat_waiver,
            'ascend_compat_policy': ascend_compat_policy,
        }
