# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Role os_tuning's settings and its plan for the running kernel, decided once: the sysctl keys and /sys values to
persist (a setting set to null is left out), the values to read from and write to the running kernel, what happens
to each (already set, not on this host, not applied live, read-only, written) and the line that reports it. The
two small shell programs that read and write the values run on the host through ansible.builtin.command; they are
here so that their arguments and their programs are one decision.
"""

from __future__ import annotations

import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import shown_json

# Reads each (name, path pattern) pair and prints a JSON list of {name, path, state, value}: state absent, ro
# (read-only, as in a container) or rw; value the current one (the [selected] word of a sysfs choice such as
# transparent_hugepage/enabled), whitespace collapsed. Globs (cpu*) give one entry per path.
READ_SCRIPT = (
    "sep=''\n"
    "printf '['\n"
    'while [ "$#" -ge 2 ]; do\n'
    '  name=$1; pattern=$2; shift 2\n'
    '  for path in $pattern; do\n'
    "    state=absent; value=''\n"
    '    if [ -e "$path" ]; then\n'
    '      value=$(cat "$path" 2>/dev/null || true)\n'
    '      case $value in *\\[*\\]*) value=${value#*\\[}; value=${value%%\\]*};; esac\n'
    '      value=$(echo $value | tr -d \'"\\\\\')\n'
    '      if [ -w "$path" ]; then state=rw; else state=ro; fi\n'
    '    fi\n'
    '    printf \'%s{"name": "%s", "path": "%s", "state": "%s", "value": "%s"}\' "$sep" "$name" "$path" "$state" "$value"\n'
    "    sep=', '\n"
    '  done\n'
    'done\n'
    "printf ']\\n'\n"
)
WRITE_SCRIPT = (
    'set -e\n'
    'dry=$1; shift\n'
    'while [ "$#" -ge 2 ]; do\n'
    '  [ "$dry" = 1 ] || printf \'%s\\n\' "$2" > "$1"\n'
    '  shift 2\n'
    'done\n'
)
# Writes each (path, value) pair; with dry=1 (check mode) writes nothing.

# What happens to a value, and the report's words for it.
ACTIONS = ('set', 'absent', 'disabled', 'read-only', 'write')
_TEXTS = {'set': 'already set', 'absent': 'not on this host: skipped',
          'disabled': 'not applied live (os_tuning_apply_live is false): persisted for the next boot',
          'read-only': 'not applied live: read-only here (a container?): persisted for the next boot'}

# The os_tuning variables (without their prefix) the settings are made of.
SETTINGS_KEYS = ('hugepages', 'hugetlb_shm_group', 'swappiness', 'numa_balancing', 'sched_migration_cost_ns',
                 'sysctl_extra', 'transparent_hugepages', 'cpu_governor', 'sysfs_path')


def settings(inputs, gid=None):
    """``{'sysctl', 'sys', 'live_items'}`` from the os_tuning variables ``inputs`` (SETTINGS_KEYS) and the gid of the
    hugetlb group (``gid``; in check mode a group still to be created has none, and the file shows a placeholder):
    the sysctl keys (``sysctl_extra`` merged over the role's own; a null value left out), the /sys values (name,
    path under /sys, value; a null one left out), and every value to apply live as name, path pattern and text."""
    group = inputs['hugetlb_shm_group']
    sysctl = {'vm.nr_hugepages': inputs['hugepages'],
              'vm.hugetlb_shm_group': None if group is None else (gid or '<gid of %s>' % group),
              'vm.swappiness': inputs['swappiness'],
              'kernel.numa_balancing': inputs['numa_balancing'],
              'kernel.sched_migration_cost_ns': inputs['sched_migration_cost_ns']}
    sysctl.update(inputs['sysctl_extra'] or {})
    sysctl = dict((key, value) for key, value in sysctl.items() if value is not None)
    sys_values = []
    if inputs['transparent_hugepages'] is not None:
        sys_values.append({'name': 'transparent_hugepage', 'path': 'kernel/mm/transparent_hugepage/enabled',
                           'value': inputs['transparent_hugepages']})
    if inputs['cpu_governor'] is not None:
        sys_values.append({'name': 'scaling_governor', 'path': 'devices/system/cpu/cpu*/cpufreq/scaling_governor',
                           'value': inputs['cpu_governor']})
    sysfs = re.sub('/+$', '', inputs['sysfs_path'])
    live_items = [{'name': key, 'pattern': '/proc/sys/' + key.replace('.', '/'), 'value': str(value)}
                  for key, value in sysctl.items()]
    live_items += [{'name': item['name'], 'pattern': sysfs + '/' + item['path'], 'value': str(item['value'])}
                   for item in sys_values]
    return {'sysctl': sysctl, 'sys': sys_values, 'live_items': live_items}


def live_read_argv(live_items):
    """The argv that reads the running kernel's values of ``live_items`` (READ_SCRIPT and its name, pattern pairs)."""
    argv = ['/bin/sh', '-c', READ_SCRIPT, 'read']
    for item in live_items:
        argv += [item['name'], item['pattern']]
    return argv


def _action(row, value, apply_live):
    if row['value'] == value:
        return 'set'
    if row['state'] == 'absent':
        return 'absent'
    if not apply_live:
        return 'disabled'
    if row['state'] == 'ro':
        return 'read-only'
    return 'write'


def live_plan(live_items, rows, apply_live, check_mode):
    """What to do with each value the read found (``rows``: name, path, state, value) against ``live_items``:
    ``rows`` with ``want`` (the value, whitespace collapsed) and ``action`` (ACTIONS), ``report`` (one line each),
    ``writes`` (how many to write), ``write_argv`` (WRITE_SCRIPT, dry in check mode, and its path, value pairs) and
    ``hugepages_written`` (whether vm.nr_hugepages is among the writes)."""
    want = dict((item['name'], item['value']) for item in live_items)
    planned, report = [], []
    write_argv = ['/bin/sh', '-c', WRITE_SCRIPT, 'write', '1' if check_mode else '0']
    for row in rows:
        value = ' '.join(want[row['name']].split())
        action = _action(row, value, apply_live)
        planned.append(dict(row, want=value, action=action))
        if action == 'write':
            text = '%s (was %s)' % ('would be applied live' if check_mode else 'applied live', row['value'])
            write_argv += [row['path'], value]
        else:
            text = _TEXTS[action]
        report.append('%s = %s: %s' % (row['path'], value, text))
    writes = [row for row in planned if row['action'] == 'write']
    return {'rows': planned, 'report': report, 'writes': len(writes), 'write_argv': write_argv,
            'hugepages_written': any(row['name'] == 'vm.nr_hugepages' for row in writes)}


_HUGEPAGE_SIZE = re.compile(r'Hugepagesize:\s+(\d+)')
_MEM_TOTAL = re.compile(r'MemTotal:\s+(\d+)')


def hugepages_fit(meminfo, memtotal_mb, hugepages, max_percent):
    """Whether ``hugepages`` pages (of /proc/meminfo's ``Hugepagesize``, 2048 kB when it says none) fit in
    ``max_percent`` % of the host's memory (``memtotal_mb`` from the facts when given, else /proc/meminfo's
    ``MemTotal``): ``page_kb``, ``memory_kb``, ``wanted_kb``, ``limit_kb``, the three last in MiB too (rounded down,
    for the message) and ``fits``."""
    size = _HUGEPAGE_SIZE.search(meminfo or '')
    page_kb = int(size.group(1)) if size else 2048
    if memtotal_mb is not None:
        memory_kb = int(memtotal_mb) * 1024
    else:
        memory_kb = int(_MEM_TOTAL.search(meminfo or '').group(1))
    wanted_kb = int(hugepages) * page_kb
    limit_kb = memory_kb * int(max_percent) // 100
    return {'page_kb': page_kb, 'memory_kb': memory_kb, 'wanted_kb': wanted_kb, 'limit_kb': limit_kb,
            'memory_mib': memory_kb // 1024, 'wanted_mib': wanted_kb // 1024, 'limit_mib': limit_kb // 1024,
            'fits': wanted_kb <= limit_kb}


def irqbalance_mode(setting, serving_plan=None):
    """os_tuning_irqbalance resolved: ``{'mode': disabled, enabled or unmanaged, 'why': a sentence or None}``.

    ``auto`` follows the node's serving plan (vllm_service_plan, which playbooks/site.yml computes before this role;
    None when there is none): irqbalance is stopped where the plan hands the CPU binding to vllm-ascend (its
    ``numa.bind`` vllm_ascend: 0.18.0rc1 and later on ARM), whose guide asks for it stopped so that it does not move
    the NPUs' interrupts over the CPUs it binds; elsewhere (an older release, no plan) it is left as it is."""
    if setting != 'auto':
        return {'mode': setting, 'why': None}
    numa = serving_plan.get('numa') if isinstance(serving_plan, dict) else None
    bind = numa.get('bind') if isinstance(numa, dict) else None
    if bind == 'vllm_ascend':
        return {'mode': 'disabled', 'why': 'auto: vllm-ascend %s binds the service\'s CPUs itself'
                % (serving_plan.get('release') or '(release not known)')}
    if bind is None:
        return {'mode': 'unmanaged', 'why': 'auto: no serving plan of this node says vllm-ascend binds its CPUs'}
    if bind == 'none':
        return {'mode': 'unmanaged', 'why': 'auto: nothing binds the service\'s CPUs, vllm-ascend included'}
    return {'mode': 'unmanaged', 'why': 'auto: the service\'s CPUs are bound by %s, not by vllm-ascend' % bind}


def irqbalance_report(mode, state, why=None):
    """What was done with irqbalance (``mode``: os_tuning_irqbalance as irqbalance_mode resolved it, ``why`` its
    reason) given its unit's ``state`` (systemctl show)."""
    if mode == 'unmanaged':
        line = 'unmanaged (left as it is)'
    elif mode == 'enabled':
        line = 'enabled and started'
    elif (state or {}).get('LoadState') == 'loaded':
        line = 'stopped and disabled'
    else:
        line = 'not installed: nothing to stop'
    return '%s; %s' % (line, why) if why else line


def wanted_packages(packages, extra, irqbalance_package, irqbalance):
    """The host tools to install: the OS's ``packages``, then ``extra``, then irqbalance's when it is to be enabled."""
    return list(packages) + list(extra) + ([irqbalance_package] if irqbalance == 'enabled' else [])


# ----------------------------------------------------------------------------------------------- the inputs

# Whole-value patterns (\Z, not $, which lets a trailing newline through) that admit no control character, so that no
# value adds a line to the sysctl.d, tmpfiles.d or limits.d files.
_INTEGER = re.compile(r'-?[0-9]+\Z')
_CONF_FILE = (re.compile(r'/[^\x00-\x1f\x7f]*\.conf\Z'),
              'an absolute path ending in .conf (the only files systemd and pam_limits read there), without control '
              'characters')
# (variable without its prefix, lowest, highest (None: no bound; 'nr_open': the host's fs.nr_open), nullable, meaning)
NUMBERS = (
    ('hugepages', 0, None, True, "pages of the host's hugepage size; preflight then compares them with the host's memory"),
    ('hugepages_max_memory_percent', 1, 100, False, "percent of the host's memory"),
    ('swappiness', 0, 100, True, "vm.swappiness; kernels before 5.8, such as Kylin V10's, accept no more than 100"),
    ('numa_balancing', 0, 1, True, 'kernel.numa_balancing: 0 off, 1 on'),
    ('sched_migration_cost_ns', 0, 2147483647, True, 'kernel.sched_migration_cost_ns, in nanoseconds'),
    ('nofile', 1, 'nr_open', True, 'open files; the kernel refuses more than its fs.nr_open, read from this host'),
)
# (variable without its prefix, (pattern, what it accepts), nullable)
STRINGS = (
    ('sysctl_file', _CONF_FILE, False),
    ('tmpfiles_file', _CONF_FILE, False),
    ('limits_file', _CONF_FILE, False),
    ('sysfs_path', (re.compile(r'/[^\x00-\x1f\x7f]*\Z'), 'an absolute path without control characters'), False),
    ('transparent_hugepages', (re.compile(r'(always|madvise|never)\Z'), 'always, madvise, never or null'), True),
    ('cpu_governor', (re.compile(r'[a-z0-9_]+\Z'),
                      'a governor name such as performance (lower-case letters, digits and _) or null'), True),
    ('hugetlb_shm_group', (re.compile(r'[A-Za-z_][A-Za-z0-9_.-]{0,31}\Z'),
                           'a group name (letters, digits, _ . -, at most 32) or null'), True),
    ('limits_domain', (re.compile(r'[^\s#\x00-\x1f\x7f][^\s\x00-\x1f\x7f]*\Z'),
                       'one word in limits.conf syntax (a user name, @group or *), without spaces or control characters'),
     False),
)
_PACKAGE = (re.compile(r'[A-Za-z0-9][^\s\x00-\x1f\x7f]*\Z'),
            'a package name (it starts with a letter or digit and has no spaces or control characters)')
_SYSCTL_NAME = (re.compile(r'[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+\Z'),
                'a sysctl name such as net.core.somaxconn (words of letters, digits, _ and - joined by dots)')
_SYSCTL_VALUE = (re.compile(r'[^\x00-\x1f\x7f]+\Z'), 'a string or a number without control characters, or null (not set)')


def _string_problem(name, value, rule, nullable=False):
    pattern, accepts = rule
    if (value is None and nullable) or (isinstance(value, str) and pattern.match(value)):
        return None
    return '%s must be %s; got %s' % (name, accepts, shown_json(value))


def input_problems(inputs, nr_open=None):
    """The problems of role os_tuning's ``inputs`` (its variables without the ``os_tuning_`` prefix, as the inventory
    gives them), each naming the variable; ``nr_open`` is the host's /proc/sys/fs/nr_open as read (None or '': not
    read). The list and dict variables first: when one is not a list or a dict, nothing else is checked."""
    get = inputs.get
    packages, sysctl = get('packages_extra'), get('sysctl_extra')
    # The argument spec turns a string into a list or dict for its check only; the role would use the string.
    if not isinstance(packages, (list, tuple)) or not isinstance(sysctl, dict):
        return ['os_tuning_packages_extra must be a list of package names and os_tuning_sysctl_extra a dict of sysctl '
                'settings ({key: value}); got %s and %s' % (shown_json(packages), shown_json(sysctl))]
    problems = []
    host_most = int(nr_open) if isinstance(nr_open, str) and nr_open.strip().isdigit() else None
    for name, least, most, nullable, meaning in NUMBERS:
        value = get(name)
        most = host_most if most == 'nr_open' else most
        if (value is None and nullable) or (_INTEGER.match(str(value)) and int(str(value)) >= least
                                            and (most is None or int(str(value)) <= most)):
            continue
        problems.append('os_tuning_%s must be a whole number from %s%s%s (%s); got %s' % (
            name, least, ' to %s' % most if most is not None else ' up', ' or null' if nullable else '', meaning,
            shown_json(value)))
    for name, rule, nullable in STRINGS:
        problems.append(_string_problem('os_tuning_' + name, get(name), rule, nullable))
    for index, package in enumerate(packages):
        problems.append(_string_problem('os_tuning_packages_extra[%d]' % index, package, _PACKAGE))
    for key, value in sysctl.items():
        problems.append(_string_problem('a key of os_tuning_sysctl_extra', key, _SYSCTL_NAME))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        problems.append(_string_problem('os_tuning_sysctl_extra[%s]' % shown_json(key), value, _SYSCTL_VALUE, nullable=True))
    return [problem for problem in problems if problem]
