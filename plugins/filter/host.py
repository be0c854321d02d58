# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The host roles' filters (each documented in its own .yml): the decisions of package_fetch, container_runtime and
npu_driver, which module_utils/stack/_host_roles.py makes, container_runtime's and npu_driver's input checks
(module_utils/stack/_host_role_inputs.py), and os_tuning's input checks, settings and live plan
(module_utils/stack/_os_tuning.py), and cann's plan (module_utils/stack/_cann_plan.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_cann_plan = lazy_module('stack._cann_plan')
_host_role_inputs = lazy_module('stack._host_role_inputs')
_host_roles = lazy_module('stack._host_roles')
_os_tuning = lazy_module('stack._os_tuning')
_stack_upgrade = lazy_module('stack._stack_upgrade')
_systemd = lazy_module('common._systemd')


def _mapping(value, name, what):
    if not isinstance(value, dict):
        raise AnsibleFilterError('%s: %s must be a dict, not %s' % (name, what, type(value).__name__))
    return value


def _results(value, name):
    if not isinstance(value, list):
        raise AnsibleFilterError('%s: the input must be the list of the package tasks\' results, not %s'
                                 % (name, type(value).__name__))
    return value


def package_fetch_target(source, dest_dir):
    """``{'path', 'mode'}`` of package ``source`` (package_fetch_source) under ``dest_dir``."""
    _mapping(source, 'package_fetch_target', 'the package source')
    if not any(key in source for key in ('path', 'src', 'url')):
        raise AnsibleFilterError('package_fetch_target: the package source has none of path, src and url')
    return _host_roles.package_target(source, dest_dir)


def containerd_config_version(version_output):
    """3 or 2 from ``containerd --version``'s output, null when it names no version."""
    if version_output is not None and not isinstance(version_output, str):
        raise AnsibleFilterError('containerd_config_version: the input must be the text of containerd --version')
    return _host_roles.containerd_config_version(version_output)


def container_runtime_input_problems(inputs):
    """The problems of role container_runtime's ``inputs`` (its variables without their prefix), each naming the
    variable (module_utils/stack/_host_role_inputs.py); empty when every input is fine."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('container_runtime_input_problems: the input must be a dict of the container_runtime '
                                 'variables, not %s' % type(inputs).__name__)
    return _host_role_inputs.container_runtime_problems(inputs)


def npu_driver_input_problems(inputs):
    """The problems of role npu_driver's ``inputs`` (its variables without their prefix), each naming the variable
    (module_utils/stack/_host_role_inputs.py); empty when every input is fine."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('npu_driver_input_problems: the input must be a dict of the npu_driver variables, not %s'
                                 % type(inputs).__name__)
    return _host_role_inputs.npu_driver_problems(inputs)


def os_tuning_input_problems(inputs, nr_open=None):
    """The problems of role os_tuning's ``inputs`` (its variables without their prefix), each naming the variable, with
    ``nr_open`` the host's /proc/sys/fs/nr_open as read (module_utils/stack/_os_tuning.py); empty when all are fine."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('os_tuning_input_problems: the input must be a dict of the os_tuning variables, not %s'
                                 % type(inputs).__name__)
    return _os_tuning.input_problems(inputs, nr_open)


def container_runtime_report(engine, info, runtime_name, ascend_runtime, default_runtime, predict=False):
    """Role container_runtime's report of ``engine``'s runtimes, from ``info`` or, with ``predict``, predicted."""
    if engine not in ('docker', 'podman', 'containerd'):
        raise AnsibleFilterError('container_runtime_report: engine must be docker, podman or containerd, not %r'
                                 % (engine,))
    if not predict and not isinstance(info, str):
        raise AnsibleFilterError('container_runtime_report: info must be the text the engine printed')
    try:
        return _host_roles.runtime_report(engine, info, runtime_name, ascend_runtime, default_runtime, predict)
    except ValueError as error:
        raise AnsibleFilterError('container_runtime_report: %s info is no JSON: %s' % (engine, error))


def npu_driver_state(ascend, driver_version, firmware_version):
    """The installed driver and firmware, whether they must change, and the install order."""
    return _host_roles.npu_driver_state(_mapping(ascend, 'npu_driver_state', 'the input (ascend_facts)'),
                                        driver_version, firmware_version)


def npu_driver_after(results, ascend, check_mode, change_needed):
    """The driver and firmware versions after the run (predicted in check mode), and whether they can be checked."""
    return _host_roles.npu_driver_after(_results(results, 'npu_driver_after'),
                                        _mapping(ascend, 'npu_driver_after', 'ascend (ascend_facts)'),
                                        check_mode, change_needed)


def npu_driver_skip_checks(change_needed, force, check_mode, account_new):
    """The preflight checks role npu_driver skips."""
    return _host_roles.npu_driver_skip_checks(change_needed, force, check_mode, account_new)


def npu_driver_per_component(previous, component, value):
    """``previous`` with ``component``'s ``value``; the driver starts anew."""
    if previous is not None:
        _mapping(previous, 'npu_driver_per_component', 'the input')
    if component not in _host_roles.NPU_DRIVER_COMPONENTS:
        raise AnsibleFilterError('npu_driver_per_component: component must be driver or firmware, not %r' % (component,))
    return _host_roles.per_component(previous, component, value)


def ascend_reboot_needed(results):
    """Whether one of the package tasks' results says the host must reboot."""
    return _host_roles.reboot_needed(_results(results, 'ascend_reboot_needed'))


def os_tuning_settings(inputs, gid=None):
    """The sysctl keys, /sys values and live items of the os_tuning variables ``inputs``."""
    _mapping(inputs, 'os_tuning_settings', 'the input (the os_tuning variables)')
    missing = [key for key in _os_tuning.SETTINGS_KEYS if key not in inputs]
    if missing:
        raise AnsibleFilterError('os_tuning_settings: the input lacks %s' % ', '.join(missing))
    if inputs['sysctl_extra'] is not None and not isinstance(inputs['sysctl_extra'], dict):
        raise AnsibleFilterError('os_tuning_settings: os_tuning_sysctl_extra must be a dict')
    return _os_tuning.settings(inputs, gid)


def _live_items(items, name):
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise AnsibleFilterError('%s: the live items must be a list of dicts (os_tuning_settings\' live_items)' % name)
    return items


def os_tuning_live_read_argv(items):
    """The argv that reads the running kernel's values of ``items``."""
    return _os_tuning.live_read_argv(_live_items(items, 'os_tuning_live_read_argv'))


def os_tuning_live_plan(rows, items, apply_live, check_mode):
    """What happens to each value the read found, its report, and the argv that writes the values to write."""
    if not isinstance(rows, list):
        raise AnsibleFilterError('os_tuning_live_plan: the input must be the list the read printed')
    return _os_tuning.live_plan(_live_items(items, 'os_tuning_live_plan'), rows, apply_live, check_mode)


def os_tuning_hugepages_fit(meminfo, memtotal_mb, hugepages, max_percent):
    """Whether the hugepages fit in the share of the host's memory they may take, with the numbers."""
    if not isinstance(meminfo, str):
        raise AnsibleFilterError('os_tuning_hugepages_fit: the input must be the text of /proc/meminfo')
    try:
        return _os_tuning.hugepages_fit(meminfo, memtotal_mb, hugepages, max_percent)
    except (AttributeError, TypeError, ValueError):
        raise AnsibleFilterError('os_tuning_hugepages_fit: /proc/meminfo has no MemTotal and the facts no memtotal_mb,'
                                 ' or os_tuning_hugepages / os_tuning_hugepages_max_memory_percent is no integer')


def os_tuning_irqbalance_state(show_output):
    """The properties of irqbalance.service that ``systemctl show`` printed."""
    if not isinstance(show_output, str):
        raise AnsibleFilterError('os_tuning_irqbalance_state: the input must be the text systemctl show printed')
    return _systemd.parse_show_one(show_output)


def os_tuning_irqbalance_mode(setting, serving_plan=None):
    """os_tuning_irqbalance resolved (auto from the node's serving plan)."""
    return _os_tuning.irqbalance_mode(setting, serving_plan)


def os_tuning_irqbalance_report(mode, state, why=None):
    """What was done with irqbalance."""
    return _os_tuning.irqbalance_report(mode, state, why)


def os_tuning_packages(packages, extra, irqbalance_package, irqbalance):
    """The host tools os_tuning installs."""
    for name, value in (('the input', packages), ('os_tuning_packages_extra', extra)):
        if not isinstance(value, list):
            raise AnsibleFilterError('os_tuning_packages: %s must be a list, not %s' % (name, type(value).__name__))
    return _os_tuning.wanted_packages(packages, extra, irqbalance_package, irqbalance)


def cann_plan(inputs, ascend=None):
    """Role cann's plan from its variables and, once read, ascend_facts' ``ascend``."""
    _mapping(inputs, 'cann_plan', 'the input (the cann variables)')
    missing = [key for key in _cann_plan.INPUT_KEYS if key not in inputs]
    if missing:
        raise AnsibleFilterError('cann_plan: the input lacks %s' % ', '.join(missing))
    if ascend is not None:
        _mapping(ascend, 'cann_plan', 'ascend (ascend_facts)')
    try:
        return _cann_plan.plan(inputs, ascend)
    except ValueError as error:
        raise AnsibleFilterError('stack_upgrade_steps: %s' % error)


def cann_env_set(output):
    """What the CANN set_env.sh scripts set (``lines`` and ``env``), from ``env`` before and after them."""
    if not isinstance(output, str) or _cann_plan.ENV_MARK not in output:
        raise AnsibleFilterError('cann_env_set: the input must be the output of the read of the set_env.sh scripts')
    return _cann_plan.env_set(output)


def ascend_install_path(package, path):
    """``path`` for a ``.run`` package, null (the module's default) for any other."""
    return _cann_plan.install_path(package, path)


def cann_fetched(stat_results):
    """The fetched packages check mode cannot inspect, and the toolkit and kernels there to install."""
    if not isinstance(stat_results, list) or not all(isinstance(result, dict) for result in stat_results):
        raise AnsibleFilterError('cann_fetched: the input must be the results of the stat of the fetched packages')
    return _cann_plan.fetched(stat_results)


def stack_package_record_read(slurped):
    """The package record read back from the host (the slurp's result); {} when there is none yet."""
    if slurped is not None and not isinstance(slurped, dict):
        raise AnsibleFilterError('stack_package_record_read: the input must be the result of the slurp of the record')
    try:
        return _stack_upgrade.read_package_record(slurped)
    except (TypeError, ValueError) as error:
        raise AnsibleFilterError('stack_package_record_read: the record on the host is no JSON object: %s' % error)


class FilterModule(object):
    """The host roles' filters."""

    def filters(self):
        return {
            'package_fetch_target': package_fetch_target,
            'containerd_config_version': containerd_config_version,
            'container_runtime_report': container_runtime_report,
            'container_runtime_input_problems': container_runtime_input_problems,
            'npu_driver_state': npu_driver_state,
            'npu_driver_input_problems': npu_driver_input_problems,
            'npu_driver_after': npu_driver_after,
            'npu_driver_skip_checks': npu_driver_skip_checks,
            'npu_driver_per_component': npu_driver_per_component,
            'ascend_reboot_needed': ascend_reboot_needed,
            'os_tuning_settings': os_tuning_settings,
            'os_tuning_input_problems': os_tuning_input_problems,
            'os_tuning_live_read_argv': os_tuning_live_read_argv,
            'os_tuning_live_plan': os_tuning_live_plan,
            'os_tuning_hugepages_fit': os_tuning_hugepages_fit,
            'os_tuning_irqbalance_state': os_tuning_irqbalance_state,
            'os_tuning_irqbalance_mode': os_tuning_irqbalance_mode,
            'os_tuning_irqbalance_report': os_tuning_irqbalance_report,
            'os_tuning_packages': os_tuning_packages,
            'cann_plan': cann_plan,
            'cann_env_set': cann_env_set,
            'ascend_install_path': ascend_install_path,
            'stack_package_record_read': stack_package_record_read,
            'cann_fetched': cann_fetched,
        }
