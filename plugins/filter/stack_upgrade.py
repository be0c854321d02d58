# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The stack_upgrade_steps, stack_previous_packages, stack_package_record, stack_rollback_plan and model_dir_choice filters
(documented in their .yml files)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_model_rollout = lazy_module('serving._model_rollout')
_stack_upgrade = lazy_module('stack._stack_upgrade')


def _mapping(value, name, what):
    if not isinstance(value, dict):
        raise AnsibleFilterError('%s: %s must be a dict, not %s' % (name, what, type(value).__name__))
    return value


def stack_upgrade_steps(installed, wanted):
    """The steps of an upgrade from the ``installed`` versions to the ``wanted`` ones."""
    try:
        return _stack_upgrade.upgrade_steps(
            _mapping(installed, 'stack_upgrade_steps', 'the input (the installed versions)'),
            _mapping(wanted, 'stack_upgrade_steps', 'wanted (the versions to install)'))
    except ValueError as error:
        raise AnsibleFilterError('stack_upgrade_steps: %s' % error)


def stack_previous_packages(installed, files, arch=None, chip=None, where=()):
    """The package files among ``files`` of the ``installed`` versions, and what is missing (with a message)."""
    _mapping(installed, 'stack_previous_packages', 'the input (the installed versions)')
    if not isinstance(files, (list, tuple)):
        raise AnsibleFilterError('stack_previous_packages: files must be a list of paths')
    try:
        result = _stack_upgrade.previous_packages(installed, files, arch=arch, chip=chip)
    except ValueError as error:
        raise AnsibleFilterError('stack_previous_packages: %s' % error)
    result['message'] = _stack_upgrade.missing_message(result['missing'], list(where or ()))
    return result


def stack_package_record(old, version, packages):
    """The record of the installed packages after installing ``version`` from ``packages``; ``old`` the one before."""
    try:
        return _stack_upgrade.package_record(old, version, _mapping(packages or {}, 'stack_package_record', 'packages'))
    except ValueError as error:
        raise AnsibleFilterError('stack_package_record: %s' % error)


def stack_rollback_plan(target, installed, found=None, where=()):
    """How a node goes back from the ``installed`` versions to the ``target`` ones with the package files ``found``,
    and what is missing (with a message naming the folders ``where``)."""
    try:
        result = _stack_upgrade.rollback_plan(
            _mapping(target or {}, 'stack_rollback_plan', 'the input (the stack to go back to)'),
            _mapping(installed, 'stack_rollback_plan', 'installed (the installed versions)'),
            _mapping(found or {}, 'stack_rollback_plan', 'found (the package files)'))
    except ValueError as error:
        raise AnsibleFilterError('stack_rollback_plan: %s' % error)
    result['message'] = _stack_upgrade.missing_message(result['missing'], list(where or ()), result['unknown'])
    # What is not known alone, for a check before the drain that the missing files cannot be yet.
    result['unknown_message'] = '; '.join(item['message'] for item in result['unknown'])
    return result


def model_dir_choice(files, root, manifests=None, links=None):
    """The newest complete model directory under ``root`` among ``files`` (ansible.builtin.find's files), the links
    followed inside ``root`` (``links``: their targets), with the ``manifests`` read (see _model_rollout)."""
    if not isinstance(files, (list, tuple)):
        raise AnsibleFilterError("model_dir_choice: the input must be the list of files (ansible.builtin.find's files)")
    try:
        return _model_rollout.choose_model_dir(root, files, manifests, links)
    except ValueError as error:
        raise AnsibleFilterError('model_dir_choice: %s' % error)


class FilterModule(object):
    def filters(self):
        return {'stack_upgrade_steps': stack_upgrade_steps, 'stack_previous_packages': stack_previous_packages,
                'stack_package_record': stack_package_record, 'stack_rollback_plan': stack_rollback_plan,
                'model_dir_choice': model_dir_choice}
