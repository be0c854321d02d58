# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The filters of playbooks/upgrade.yml's decisions before a drain - stack_installed_versions, stack_wanted_versions,
stack_package_sources, stack_package_dirs, stack_missing_packages, stack_rollback_packages, known_good_current - and
wait_retries (documented in their .yml files)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_bounded_wait = lazy_module('common._bounded_wait')
_known_good = lazy_module('serving._known_good')
_upgrade_inputs = lazy_module('stack._upgrade_inputs')


def _list(value, name, what):
    if not isinstance(value, (list, tuple)):
        raise AnsibleFilterError('%s: %s must be a list, not %s' % (name, what, type(value).__name__))
    return list(value)


def _dict(value, name, what):
    if not isinstance(value, dict):
        raise AnsibleFilterError('%s: %s must be a dict, not %s' % (name, what, type(value).__name__))
    return value


def stack_installed_versions(ascend):
    """Component -> installed version from ascend_facts' ``ascend`` fact."""
    return _upgrade_inputs.installed_versions(ascend)


def stack_wanted_versions(cann, driver, firmware, nnal_package=None):
    """Component -> version to install, from CANN's version and the driver's and firmware's."""
    return _upgrade_inputs.wanted_versions(driver, firmware, cann, nnal_package)


def stack_package_sources(steps, given):
    """The package sources of the components the ``steps`` change, by where they are looked for."""
    return _upgrade_inputs.package_sources(_list(steps, 'stack_package_sources', 'the input (the steps)'),
                                           _dict(given, 'stack_package_sources', 'given (the package variables)'))


def stack_package_dirs(role_dirs, given, extra_dirs=()):
    """The folders a rollback's package files are looked for in."""
    return _upgrade_inputs.package_dirs(_list(role_dirs, 'stack_package_dirs', "the input (the roles' folders)"),
                                        _dict(given, 'stack_package_dirs', 'given (the package variables)'),
                                        _list(extra_dirs or [], 'stack_package_dirs', 'extra_dirs'))


def stack_missing_packages(sources, on_node, on_controller, at_url):
    """A message for each component of which no package source is there."""
    return _upgrade_inputs.missing_packages(
        _list(sources, 'stack_missing_packages', 'the input (the sources)'),
        _list(on_node, 'stack_missing_packages', 'on_node'), _list(on_controller, 'stack_missing_packages', 'on_controller'),
        _list(at_url, 'stack_missing_packages', 'at_url'))


def stack_rollback_packages(needs, records, found_files, dirs, npu_devices=()):
    """The package file of each version a rollback would reinstall, and what is missing."""
    records = _list(records, 'stack_rollback_packages', 'records')
    try:
        return _upgrade_inputs.rollback_packages(
            _dict(needs, 'stack_rollback_packages', 'the input (the versions needed)'), records,
            _list(found_files, 'stack_rollback_packages', 'found_files'), _list(dirs, 'stack_rollback_packages', 'dirs'),
            _list(npu_devices or [], 'stack_rollback_packages', 'npu_devices'))
    except ValueError as error:
        raise AnsibleFilterError('stack_rollback_packages: %s' % error)


def known_good_current(local_facts, name):
    """The summary of service ``name``'s current known good in the local facts, or {}."""
    return _known_good.current_summary(local_facts, name)


def wait_retries(timeout, delay):
    """The retries of an until loop ``delay`` seconds apart that waits ``timeout`` seconds: the tries of a bounded
    wait but the first."""
    try:
        return _bounded_wait.tries_for(float(timeout), float(delay)) - 1
    except (TypeError, ValueError, OverflowError) as error:
        raise AnsibleFilterError('wait_retries: a timeout of %r s every %r s: %s' % (timeout, delay, error))


class FilterModule(object):
    def filters(self):
        return {'stack_installed_versions': stack_installed_versions, 'stack_wanted_versions': stack_wanted_versions,
                'stack_package_sources': stack_package_sources, 'stack_package_dirs': stack_package_dirs,
                'stack_missing_packages': stack_missing_packages, 'stack_rollback_packages': stack_rollback_packages,
                'known_good_current': known_good_current, 'wait_retries': wait_retries}
