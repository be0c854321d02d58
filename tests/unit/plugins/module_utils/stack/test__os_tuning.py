# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role os_tuning's settings, live plan, hugepage check and irqbalance report, as its Jinja made them before."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._os_tuning import (
    READ_SCRIPT,
    WRITE_SCRIPT,
    hugepages_fit,
    input_problems,
    irqbalance_mode,
    irqbalance_report,
    live_plan,
    live_read_argv,
    settings,
    wanted_packages,
)

# /proc/meminfo of an Atlas 800T A2 (Kunpeng 920, 1.5 TiB), its lines cut.
MEMINFO = ('MemTotal:       1584318272 kB\nMemFree:        1490712320 kB\nHugePages_Total:       0\n'
           'Hugepagesize:       2048 kB\nHugetlb:               0 kB\n')


def inputs(**changes):
    base = {'hugepages': 1024, 'hugetlb_shm_group': 'hugetlb', 'swappiness': 0, 'numa_balancing': 0,
            'sched_migration_cost_ns': 50000, 'sysctl_extra': {}, 'transparent_hugepages': 'never',
            'cpu_governor': 'performance', 'sysfs_path': '/sys/'}
    base.update(changes)
    return base


def test_settings_collects_sysctl_sys_and_live_items():
    result = settings(inputs(), '998')
    assert result['sysctl'] == {'vm.nr_hugepages': 1024, 'vm.hugetlb_shm_group': '998', 'vm.swappiness': 0,
                                'kernel.numa_balancing': 0, 'kernel.sched_migration_cost_ns': 50000}
    assert result['sys'] == [
        {'name': 'transparent_hugepage', 'path': 'kernel/mm/transparent_hugepage/enabled', 'value': 'never'},
        {'name': 'scaling_governor', 'path': 'devices/system/cpu/cpu*/cpufreq/scaling_governor', 'value': 'performance'}]
    assert result['live_items'][0] == {'name': 'vm.nr_hugepages', 'pattern': '/proc/sys/vm/nr_hugepages', 'value': '1024'}
    assert result['live_items'][-1] == {'name': 'scaling_governor',
                                        'pattern': '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor',
                                        'value': 'performance'}
    assert len(result['live_items']) == 7


def test_settings_leave_out_nulls_merge_extras_in_place_and_show_a_placeholder_gid():
    result = settings(inputs(hugetlb_shm_group='hugetlb', swappiness=None, transparent_hugepages=None, cpu_governor=None,
                             sysctl_extra={'vm.nr_hugepages': 2048, 'net.core.somaxconn': 4096, 'kernel.numa_balancing': None}),
                      None)
    assert list(result['sysctl'].items()) == [('vm.nr_hugepages', 2048), ('vm.hugetlb_shm_group', '<gid of hugetlb>'),
                                              ('kernel.sched_migration_cost_ns', 50000), ('net.core.somaxconn', 4096)]
    assert result['sys'] == []
    assert result['live_items'][-1] == {'name': 'net.core.somaxconn', 'pattern': '/proc/sys/net/core/somaxconn',
                                        'value': '4096'}
    assert 'vm.hugetlb_shm_group' not in settings(inputs(hugetlb_shm_group=None), None)['sysctl']
    assert settings(inputs(sysctl_extra={'kernel.x': True}), '1')['live_items'][5]['value'] == 'True'


def test_live_read_argv_gives_the_script_its_name_pattern_pairs():
    items = [{'name': 'vm.swappiness', 'pattern': '/proc/sys/vm/swappiness', 'value': '0'},
             {'name': 'scaling_governor', 'pattern': '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor', 'value': 'x'}]
    assert live_read_argv(items) == ['/bin/sh', '-c', READ_SCRIPT, 'read', 'vm.swappiness', '/proc/sys/vm/swappiness',
                                     'scaling_governor', '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor']
    assert READ_SCRIPT.startswith("sep=''\n") and READ_SCRIPT.endswith("printf ']\\n'\n")


ITEMS = [{'name': 'vm.swappiness', 'pattern': '/proc/sys/vm/swappiness', 'value': '0'},
         {'name': 'vm.nr_hugepages', 'pattern': '/proc/sys/vm/nr_hugepages', 'value': '1024'},
         {'name': 'kernel.numa_balancing', 'pattern': '/proc/sys/kernel/numa_balancing', 'value': '0'},
         {'name': 'transparent_hugepage', 'pattern': '/sys/kernel/mm/transparent_hugepage/enabled', 'value': ' never '},
         {'name': 'kernel.sched_migration_cost_ns', 'pattern': '/proc/sys/kernel/sched_migration_cost_ns', 'value': '5'}]
ROWS = [{'name': 'vm.swappiness', 'path': '/proc/sys/vm/swappiness', 'state': 'rw', 'value': '60'},
        {'name': 'vm.nr_hugepages', 'path': '/proc/sys/vm/nr_hugepages', 'state': 'rw', 'value': '0'},
        {'name': 'kernel.numa_balancing', 'path': '/proc/sys/kernel/numa_balancing', 'state': 'ro', 'value': '1'},
        {'name': 'transparent_hugepage', 'path': '/sys/kernel/mm/transparent_hugepage/enabled', 'state': 'rw',
         'value': 'never'},
        {'name': 'kernel.sched_migration_cost_ns', 'path': '/proc/sys/kernel/sched_migration_cost_ns',
         'state': 'absent', 'value': ''}]


def test_live_plan_decides_each_value_and_reports_it():
    plan = live_plan(ITEMS, ROWS, True, False)
    assert [row['action'] for row in plan['rows']] == ['write', 'write', 'read-only', 'set', 'absent']
    assert plan['rows'][3]['want'] == 'never'
    assert plan['report'] == [
        '/proc/sys/vm/swappiness = 0: applied live (was 60)',
        '/proc/sys/vm/nr_hugepages = 1024: applied live (was 0)',
        '/proc/sys/kernel/numa_balancing = 0: not applied live: read-only here (a container?): persisted for the next boot',
        '/sys/kernel/mm/transparent_hugepage/enabled = never: already set',
        '/proc/sys/kernel/sched_migration_cost_ns = 5: not on this host: skipped']
    assert plan['writes'] == 2 and plan['hugepages_written'] is True
    assert plan['write_argv'] == ['/bin/sh', '-c', WRITE_SCRIPT, 'write', '0', '/proc/sys/vm/swappiness', '0',
                                  '/proc/sys/vm/nr_hugepages', '1024']


def test_live_plan_in_check_mode_is_dry_and_without_apply_live_writes_nothing():
    check = live_plan(ITEMS, ROWS, True, True)
    assert check['write_argv'][4] == '1'
    assert check['report'][0] == '/proc/sys/vm/swappiness = 0: would be applied live (was 60)'
    off = live_plan(ITEMS, ROWS, False, False)
    assert [row['action'] for row in off['rows']] == ['disabled', 'disabled', 'disabled', 'set', 'absent']
    assert off['writes'] == 0 and off['hugepages_written'] is False
    assert off['report'][0] == ('/proc/sys/vm/swappiness = 0: not applied live (os_tuning_apply_live is false):'
                                ' persisted for the next boot')
    assert live_plan(ITEMS, [], True, False)['report'] == []


def test_hugepages_fit_against_the_share_of_memory():
    fit = hugepages_fit(MEMINFO, None, 1024, 10)
    assert fit == {'page_kb': 2048, 'memory_kb': 1584318272, 'wanted_kb': 2097152, 'limit_kb': 158431827,
                   'memory_mib': 1547185, 'wanted_mib': 2048, 'limit_mib': 154718, 'fits': True}
    assert hugepages_fit(MEMINFO, 1024, 1024, 50)['fits'] is False
    assert hugepages_fit(MEMINFO, 1024, 256, 50)['fits'] is True
    assert hugepages_fit('MemTotal: 1000 kB\n', None, 1, 100)['page_kb'] == 2048
    assert hugepages_fit('Hugepagesize: 524288 kB\n', 1024 * 1024, 4, 50)['wanted_kb'] == 2097152


@pytest.mark.parametrize('mode, state, expected', [
    ('unmanaged', None, 'unmanaged (left as it is)'),
    ('enabled', {'LoadState': 'not-found'}, 'enabled and started'),
    ('disabled', {'LoadState': 'loaded'}, 'stopped and disabled'),
    ('disabled', {'LoadState': 'not-found'}, 'not installed: nothing to stop'),
    ('disabled', {}, 'not installed: nothing to stop'),
])
def test_irqbalance_report(mode, state, expected):
    assert irqbalance_report(mode, state) == expected
    assert irqbalance_report(mode, state, 'auto: why') == expected + '; auto: why'


@pytest.mark.parametrize('plan, expected', [
    # Where the node's plan hands the binding to vllm-ascend (0.18.0rc1 and later on ARM): stopped.
    ({'release': '0.18.0rc1', 'numa': {'bind': 'vllm_ascend'}},
     {'mode': 'disabled', 'why': "auto: vllm-ascend 0.18.0rc1 binds the service's CPUs itself"}),
    ({'release': None, 'numa': {'bind': 'vllm_ascend'}},
     {'mode': 'disabled', 'why': "auto: vllm-ascend (release not known) binds the service's CPUs itself"}),
    # An older release binds with numactl, or nothing binds: left as it is.
    ({'release': '0.13.0', 'numa': {'bind': 'numactl'}},
     {'mode': 'unmanaged', 'why': "auto: the service's CPUs are bound by numactl, not by vllm-ascend"}),
    ({'release': '0.13.0', 'numa': {'bind': 'none'}},
     {'mode': 'unmanaged', 'why': "auto: nothing binds the service's CPUs, vllm-ascend included"}),
    # No plan (the role run alone), or one without a binding (refused inputs before this key existed).
    (None, {'mode': 'unmanaged', 'why': 'auto: no serving plan of this node says vllm-ascend binds its CPUs'}),
    ({'problems': ['x']}, {'mode': 'unmanaged', 'why': 'auto: no serving plan of this node says vllm-ascend binds its CPUs'}),
    ('not a plan', {'mode': 'unmanaged', 'why': 'auto: no serving plan of this node says vllm-ascend binds its CPUs'}),
])
def test_irqbalance_auto_follows_the_serving_plan(plan, expected):
    assert irqbalance_mode('auto', plan) == expected


def test_irqbalance_asked_is_kept_whatever_the_plan():
    for setting in ('disabled', 'enabled', 'unmanaged'):
        assert irqbalance_mode(setting, {'numa': {'bind': 'vllm_ascend'}}) == {'mode': setting, 'why': None}


def test_wanted_packages_add_irqbalance_only_when_enabled():
    assert wanted_packages(['numactl'], ['htop'], 'irqbalance', 'enabled') == ['numactl', 'htop', 'irqbalance']
    assert wanted_packages(['numactl'], [], 'irqbalance', 'disabled') == ['numactl']


def os_tuning_inputs(**given):
    """Good values of role os_tuning's inputs (without their prefix), as the role's check passes them, and ``given``."""
    values = {'packages_extra': [], 'sysctl_extra': {}, 'hugepages': None, 'hugepages_max_memory_percent': 50,
              'swappiness': 10, 'numa_balancing': 0, 'sched_migration_cost_ns': 5000000, 'nofile': 1048576,
              'sysctl_file': '/etc/sysctl.d/90-kunpeng-ascend-vllm.conf',
              'tmpfiles_file': '/etc/tmpfiles.d/90-kunpeng-ascend-vllm.conf',
              'limits_file': '/etc/security/limits.d/90-kunpeng-ascend-vllm.conf', 'sysfs_path': '/sys',
              'transparent_hugepages': 'never', 'cpu_governor': 'performance', 'hugetlb_shm_group': 'hugetlb_shm',
              'limits_domain': '*'}
    values.update(given)
    return values


@pytest.mark.parametrize('given, nr_open, problems', [
    ({}, '1048576', []),
    ({'nofile': 1048577}, '1048576\n', [
        'os_tuning_nofile must be a whole number from 1 to 1048576 or null (open files; the kernel refuses more than its '
        'fs.nr_open, read from this host); got 1048577']),
    # fs.nr_open not read (os_tuning_nofile null, or a host that hides it): no upper bound.
    ({'nofile': 1048577}, '', []),
    ({'nofile': 0}, None, [
        'os_tuning_nofile must be a whole number from 1 up or null (open files; the kernel refuses more than its '
        'fs.nr_open, read from this host); got 0']),
    ({'swappiness': '10', 'hugepages': '-0'}, '1048576', []),
    ({'swappiness': True}, '1048576', [
        "os_tuning_swappiness must be a whole number from 0 to 100 or null (vm.swappiness; kernels before 5.8, such as "
        "Kylin V10's, accept no more than 100); got true"]),
    ({'hugepages_max_memory_percent': None}, '1048576', [
        "os_tuning_hugepages_max_memory_percent must be a whole number from 1 to 100 (percent of the host's memory); "
        'got null']),
    ({'cpu_governor': 'performance\n', 'limits_domain': '#'}, '1048576', [
        'os_tuning_cpu_governor must be a governor name such as performance (lower-case letters, digits and _) or null; '
        'got "performance\\n"',
        'os_tuning_limits_domain must be one word in limits.conf syntax (a user name, @group or *), without spaces or '
        'control characters; got "#"']),
    ({'packages_extra': ['perf', None], 'sysctl_extra': {'net.core.somaxconn': 4096, 'vm.x': None, 'kernel': 'y',
                                                         'vm.overcommit_memory': True}}, '1048576', [
        'os_tuning_packages_extra[1] must be a package name (it starts with a letter or digit and has no spaces or '
        'control characters); got null',
        'a key of os_tuning_sysctl_extra must be a sysctl name such as net.core.somaxconn (words of letters, digits, _ '
        'and - joined by dots); got "kernel"',
        'os_tuning_sysctl_extra["vm.overcommit_memory"] must be a string or a number without control characters, or null '
        '(not set); got true']),
    # A list or dict variable of another shape stops the checks: its items cannot be checked.
    ({'packages_extra': 'perf', 'swappiness': -1}, '1048576', [
        'os_tuning_packages_extra must be a list of package names and os_tuning_sysctl_extra a dict of sysctl settings '
        '({key: value}); got "perf" and {}']),
])
def test_the_inputs_are_checked_in_one_call_each_problem_naming_its_variable(given, nr_open, problems):
    assert input_problems(os_tuning_inputs(**given), nr_open) == problems
