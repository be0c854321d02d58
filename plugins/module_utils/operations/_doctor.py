# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The doctor's judgement: what the ``ascend_doctor`` module observed on a node in, findings out. Nothing here runs
a command or reads a file; the module collects the observations (one call per tool) and hands them to the
``check_*`` functions, and the small parsers below read the text the tools and files hold.

A finding is a dict: ``check`` (its name), ``status`` (``ok``, ``warn``, ``fail`` or ``skipped``), ``summary``
(one sentence), ``details`` (data: what was seen) and ``fix`` (a concrete action naming the command, variable or
file; null when there is nothing to fix). ``overall`` makes one verdict of them: ``healthy`` (no warn or fail),
``degraded`` (warnings only) or ``broken`` (any fail).
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _failure_catalogue
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _compliance
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._deployment import CONTAINER_NAME
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import unit_name_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import texts_in
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import (
    ROWS,
    SITE_SOURCE,
    check_combination,
    format_row,
    site_rows,
)

STATUSES = ('ok', 'skipped', 'warn', 'fail')
# The order of the checks in a report.
CHECKS = ('versions', 'npu_health', 'npu_memory', 'npu_temperature', 'npu_processes', 'tuning', 'container_runtime',
          'service', 'restart_storm', 'journal', 'network')
# At most this many matching journal lines are reported per kind of error.
JOURNAL_LINES_PER_KIND = 3
# A journal line is cut to this many characters in a report.
JOURNAL_LINE_CHARS = 300


def finding(check, status, summary, details=None, fix=None):
    """One finding (see the module docstring)."""
    if status not in STATUSES:
        raise ValueError('%r is not a finding status (%s)' % (status, ', '.join(STATUSES)))
    return {'check': check, 'status': status, 'summary': summary, 'details': details if details is not None else {},
            'fix': fix}


# The health of a host, best first, and the finding status that makes each (the verdict order, kept here once).
HEALTH = ('healthy', 'degraded', 'broken')
_HEALTH_OF_STATUS = {'fail': 'broken', 'warn': 'degraded'}
# The status of a host the doctor could not check (it failed or was unreachable before): as bad as broken.
UNREACHABLE = 'unreachable'
REPORT_SCHEMA = 'kunpeng_ascend.vllm/doctor-report/1'
FLEET_SCHEMA = 'kunpeng_ascend.vllm/doctor-fleet/1'


def worst_health(healths):
    """The worst of ``healths`` in HEALTH order (an unreachable host counts as broken); ``healthy`` when empty."""
    ranks = [HEALTH.index('broken' if health == UNREACHABLE else health) for health in healths]
    return HEALTH[max(ranks)] if ranks else HEALTH[0]


def overall(findings):
    """``broken`` when a finding fails, else ``degraded`` when one warns, else ``healthy``."""
    return worst_health(_HEALTH_OF_STATUS.get(item['status'], 'healthy') for item in findings)


# --------------------------------------------------------------------------------------------------------- reports

def finding_lines(result):
    """The doctor role's readable lines of one ascend_doctor ``result``: its verdict line is the caller's; here one
    line per finding, then one per compliance item - status, check, summary and its fix."""
    def line(status, check, summary, fix):
        return '%-7s %-17s %s%s' % (status.upper(), check, summary, (' -- fix: %s' % fix) if fix else '')
    return ([line(item['status'], item['check'], item['summary'], item.get('fix'))
             for item in result.get('findings') or []]
            + [line(item['status'], 'compliance:%s' % item['id'], item['summary'], item.get('fix'))
               for item in result.get('compliance') or []])


def host_report(host, result, compat_waiver, generated):
    """The doctor's report of ``host`` (schema REPORT_SCHEMA) from its ascend_doctor ``result``: what the role writes
    to <run dir>/<host>.json."""
    service = result['service']
    return {'schema': REPORT_SCHEMA, 'host': host, 'generated': generated, 'status': result['status'],
            'mode': result['mode'],
            'inputs': {'service': service['name'], 'vllm_ascend': service['vllm_ascend'], 'unit': service['unit'],
                       'recorded': service.get('record') is not None, 'compat_waiver': compat_waiver or None},
            'findings': result['findings'],
            # Compliance evidence ({id, status pass|fail|unknown, summary, evidence, fix}): docs/compliance.md.
            'compliance': result['compliance']}


def _checks_with(findings, status, key='check'):
    return [item[key] for item in findings if item.get('status') == status]


def fleet_summary(results, generated):
    """The doctor's fleet summary (schema FLEET_SCHEMA): ``results`` maps each host of the play, in order, to its
    ascend_doctor result, or None (or {}) when the doctor did not get to it (then the host is unreachable); the
    fleet's status is the worst host's (HEALTH order, an unreachable host as broken)."""
    hosts = {}
    for host, result in results.items():
        result = result or {}
        findings = result.get('findings') or []
        hosts[host] = {'status': result.get('status', UNREACHABLE),
                       'failing': _checks_with(findings, 'fail'),
                       'warning': _checks_with(findings, 'warn'),
                       'compliance_failing': _checks_with(result.get('compliance') or [], 'fail', 'id'),
                       'report': '%s.json' % host if 'status' in result else None}
    return {'schema': FLEET_SCHEMA, 'generated': generated,
            'status': worst_health(item['status'] for item in hosts.values()), 'hosts': hosts}


# --------------------------------------------------------------------------------------------------------- inputs

# The directories the persisted files are read from (sysctl.d(5), tmpfiles.d(5)): a file elsewhere is refused.
SYSCTL_DIRS = ('/etc/sysctl.d', '/run/sysctl.d', '/usr/local/lib/sysctl.d', '/usr/lib/sysctl.d', '/lib/sysctl.d')
TMPFILES_DIRS = ('/etc/tmpfiles.d', '/run/tmpfiles.d', '/usr/local/lib/tmpfiles.d', '/usr/lib/tmpfiles.d',
                 '/lib/tmpfiles.d')
MODES = ('auto', 'native', 'container')
ENGINES = ('docker', 'podman', 'containerd')
# A sysctl name: words of letters, digits, _ and - joined by dots (as os_tuning takes them).
_SYSCTL_NAME = re.compile(r'[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\Z')
# A /sys path of the tuning check: relative to /sys or under /sys/, glob characters allowed.
_SYS_PATH = re.compile(r'[A-Za-z0-9_.:@*?\[\]!+,=-]+(?:/[A-Za-z0-9_.:@*?\[\]!+,=-]+)*\Z')
# A vllm-ascend release as vllm_service takes it: no blanks, not first a -.
_RELEASE = re.compile(r'[^\x00-\x20\x7f-][^\x00-\x20\x7f]{0,63}\Z')
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')


def _show(value):
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _whole(value):
    """``value`` as an int when it is a whole number (or its digits, as -e gives them), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'-?[0-9]{1,9}\Z', value.strip()):
        return int(value)
    return None


def container_name_problem(name):
    """Why ``name`` is not a container name (docker's rule: a letter or digit, then letters, digits, _ . -)."""
    if not isinstance(name, str) or not CONTAINER_NAME.match(name):
        return ('must be a container name (a letter or digit, then letters, digits, _, . or -, up to 128); got %s'
                % _show(name))
    return None


def sysctl_key_problem(key):
    """Why ``key`` is not a sysctl name the doctor reads (under /proc/sys only), None when it is one."""
    if not isinstance(key, str) or not _SYSCTL_NAME.match(key):
        return 'must be a sysctl name such as vm.swappiness (words of letters, digits, _ and - joined by dots); got %s' \
            % _show(key)
    return None


def sys_relative(path):
    """The path of an expected /sys value relative to /sys: ``/sys/kernel/mm/x`` and ``kernel/mm/x`` give
    ``kernel/mm/x``; None when it is not a path under /sys (another absolute path, ``..``, ``.`` or an empty part)."""
    if not isinstance(path, str):
        return None
    relative = path[len('/sys/'):] if path.startswith('/sys/') else path
    if not _SYS_PATH.match(relative) or any(part in ('.', '..') for part in relative.split('/')):
        return None
    return relative


def sys_key_problem(path):
    """Why ``path`` is not a /sys path the doctor reads (under sysfs_path only), None when it is one."""
    if sys_relative(path) is None:
        return ('must be a path under /sys such as kernel/mm/transparent_hugepage/enabled or /sys/devices/system/cpu/'
                'cpu*/cpufreq/scaling_governor (globs allowed; no .., no other absolute path); got %s' % _show(path))
    return None


def conf_file_problem(path, directories):
    """Why ``path`` is not a .conf file directly in one of ``directories``, None when it is."""
    if not isinstance(path, str) or _CONTROL.search(path) or posixpath.normpath(path) != path \
            or posixpath.dirname(path) not in directories or not path.endswith('.conf') or path.endswith('/.conf'):
        return 'must be a .conf file directly in %s; got %s' % (' or '.join(directories), _show(path))
    return None


# Long: one check per option of ascend_doctor, in the order of its argument spec, each naming the option.
def check_inputs(inputs, prefix=''):
    """The problems of the doctor's inputs (``inputs``: the options of ascend_doctor, which are the doctor role's
    variables without their ``doctor_`` prefix), each naming the variable as ``prefix`` + its name; [] when they
    are fine. Paths and keys are confined: sysctl keys are names (read under proc_path/sys), /sys keys are paths
    under /sys (read under sysfs_path), the persisted files are .conf files of SYSCTL_DIRS and TMPFILES_DIRS."""
    problems = []

    def name(key):
        return prefix + key

    service = inputs.get('service_name')
    if service is not None:
        problem = unit_name_problem(service, '%s' % name('service_name'))
        if problem:
            problems.append(problem)
    if inputs.get('container_name') is not None:
        problem = container_name_problem(inputs['container_name'])
        if problem:
            problems.append('%s %s' % (name('container_name'), problem))
    for key, choices in (('service_mode', MODES), ('container_engine', ENGINES)):
        value = inputs.get(key)
        if value is not None and value not in choices:
            problems.append('%s must be null or one of %s; got %s' % (name(key), ', '.join(choices), _show(value)))
    release = inputs.get('vllm_ascend_version')
    if release is not None and (not isinstance(release, str) or not _RELEASE.match(release)):
        problems.append('%s must be null or a release such as 0.13.0 (no blanks, not first a -); got %s'
                        % (name('vllm_ascend_version'), _show(release)))
    for key, directories in (('sysctl_file', SYSCTL_DIRS), ('tmpfiles_file', TMPFILES_DIRS)):
        if key in inputs:
            problem = conf_file_problem(inputs[key], directories)
            if problem:
                problems.append('%s %s' % (name(key), problem))
    for key in ('proc_path', 'sysfs_path'):
        value = inputs.get(key)
        if key in inputs and (not isinstance(value, str) or not value.startswith('/') or _CONTROL.search(value)):
            problems.append('%s must be an absolute path without control characters; got %s' % (name(key), _show(value)))
    # The reports' folder is on the controller; relative to where ansible-playbook runs is fine.
    report_dir = inputs.get('report_dir')
    if 'report_dir' in inputs and (not isinstance(report_dir, str) or not report_dir or _CONTROL.search(report_dir)):
        problems.append('%s must be a directory path without control characters; got %s'
                        % (name('report_dir'), _show(report_dir)))
    for key, problem_of, value_name in (('expected_sysctl', sysctl_key_problem, 'a value'),
                                        ('expected_sys', sys_key_problem, 'a value')):
        values = inputs.get(key)
        if values is None:
            continue
        if not isinstance(values, dict):
            problems.append('%s must be a dict of {key: value}; got %s' % (name(key), _show(values)))
            continue
        for item, value in sorted(values.items(), key=lambda pair: str(pair[0])):
            problem = problem_of(item)
            if problem:
                problems.append('a key of %s %s' % (name(key), problem))
            if isinstance(value, (dict, list, bool)) or value is None or _CONTROL.search(str(value)):
                problems.append('%s[%s] must be %s: a string or a number without control characters; got %s'
                                % (name(key), _show(item), value_name, _show(value)))
    waiver = inputs.get('compat_waiver')
    # What the waiver means is the versions check's business (a void or expired one waives nothing, and says so);
    # here only that it is a dict of text.
    if waiver is not None and (not isinstance(waiver, dict) or any(_CONTROL.search(text) for text in texts_in(waiver))):
        problems.append('%s must be null or a waiver ({reason, expires, covers}) without control characters; got %s'
                        % (name('compat_waiver'), 'a %s' % type(waiver).__name__ if not isinstance(waiver, dict)
                           else 'control characters in it'))
    # The site's rows (the inventory variable ascend_compat_site_rows, whatever the prefix: the role passes it as it
    # is), checked as the built-in rows are; the message names the row and the key.
    if inputs.get('compat_site_rows') is not None:
        try:
            site_rows(inputs['compat_site_rows'])
        except ValueError as error:
            problems.append(str(error))
    since = inputs.get('journal_since')
    if 'journal_since' in inputs and (not isinstance(since, str) or not since.strip() or _CONTROL.search(since)
                                      or since.startswith('-')):
        problems.append('%s must be a time journalctl --since reads, such as "1 hour ago" (not first a -, no control '
                        'characters); got %s' % (name('journal_since'), _show(since)))
    for key, low, high, what in (('journal_lines', 1, 1000000, 'lines'), ('timeout', 0, 86400, 'seconds (0: no limit)'),
                                 ('temperature_warn_c', 1, 200, 'degrees Celsius'),
                                 ('tls_warn_days', 0, 3650, 'days')):
        if key in inputs:
            value = _whole(inputs[key])
            if value is None or not low <= value <= high:
                problems.append('%s must be a whole number of %s from %d to %d; got %s'
                                % (name(key), what, low, high, _show(inputs[key])))
    if 'hbm_warn_percent' in inputs:
        value = inputs['hbm_warn_percent']
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            number = None
        if number is None or not 0 < number <= 100:
            problems.append('%s must be a percentage above 0 and at most 100; got %s'
                            % (name('hbm_warn_percent'), _show(value)))
    devices = inputs.get('network_devices')
    if devices is not None and (not isinstance(devices, list) or
                                any(_whole(device) is None or _whole(device) < 0 for device in devices)):
        problems.append('%s must be null or a list of NPU device ids (0 or more); got %s'
                        % (name('network_devices'), _show(devices)))
    problems.extend(_compliance.input_problems(inputs, prefix))
    return problems


# --------------------------------------------------------------------------------------------------------- parsers

def parse_sysctl_conf(text):
    """``key = value`` lines of a sysctl.d file as a dict (comments and blank lines skipped; a leading ``-`` that
    tells systemd-sysctl to ignore failures is dropped)."""
    values = {}
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        key, sep, value = line.partition('=')
        if sep:
            values[key.strip().lstrip('-').replace('/', '.')] = ' '.join(value.split())
    return values


def parse_tmpfiles_writes(text):
    """The ``w`` lines of a tmpfiles.d file as a dict: path (as written, may hold a glob) -> value."""
    values = {}
    for line in (text or '').splitlines():
        fields = line.split(None, 6)
        if len(fields) == 7 and fields[0] in ('w', 'w+'):
            values[fields[1]] = ' '.join(fields[6].split())
    return values


def sysfs_value(text):
    """A sysfs value as os_tuning compares it: the ``[selected]`` word of a choice such as
    ``always [madvise] never``, else the text with its whitespace collapsed."""
    text = text or ''
    selected = re.search(r'\[([^\]]*)\]', text)
    return selected.group(1).strip() if selected else ' '.join(text.split())


def parse_meminfo(text):
    """``/proc/meminfo`` as a dict of integers (kB, or pages for the HugePages_ lines)."""
    values = {}
    for line in (text or '').splitlines():
        match = re.match(r'^([^:]+):\s*(\d+)', line)
        if match:
            values[match.group(1)] = int(match.group(2))
    return values


def health_error_codes(sections):
    """``{chip_id or None: error code}`` from parsed ``npu-smi info -t health`` sections; codes ``NA`` and empty
    are left out."""
    codes = {}
    for section in sections or []:
        code = (section.get('Error Code') or '').strip()
        if code and code.upper() not in ('NA', '0', 'N/A'):
            chip = section.get('Chip ID')
            codes[int(chip) if chip is not None and str(chip).strip().isdigit() else None] = code
    return codes


# --------------------------------------------------------------------------------------------------------- versions

def _release(row):
    """``vllm-ascend X`` of a (described) row, ``(site row)`` after it for a site's row, as _compatibility names it."""
    return 'vllm-ascend %s%s' % (row['vllm_ascend'], ' (site row)' if row.get('source') == SITE_SOURCE else '')


def check_versions(driver, firmware, cann, vllm_ascend, mode=None, waiver=None, today=None, rows=ROWS):
    """The versions finding: the installed driver, firmware and CANN and the service's vllm-ascend release, and
    whether the release fits the driver (vllm_service's preflight rule, under the same ``waiver``: a waived
    combination warns, naming the waiver's reason and expiry) and, in native mode, the host's CANN.

    ``rows`` is the compatibility set: ``_compatibility.ROWS``, or with_site_rows's with the site's rows
    (ascend_compat_site_rows). A finding that rests on a site's row says so: its sentences name it "(site row)" and
    a supported combination of a site's row names the whole row (format_row)."""
    details = {'driver': driver, 'firmware': firmware, 'cann': cann, 'vllm_ascend': vllm_ascend, 'mode': mode,
               'waiver': None}
    if not driver:
        return finding('versions', 'fail', 'No NPU driver is installed (no driver version.info)', details,
                       'Install it: run playbooks/site.yml (role kunpeng_ascend.vllm.npu_driver) on this host')
    if not vllm_ascend:
        return finding('versions', 'warn',
                       'Cannot tell which vllm-ascend release the service runs, so its fit with driver %s is unknown'
                       % driver, details,
                       'Set vllm_service_vllm_ascend_version (such as 0.13.0) in the inventory, or a versioned '
                       'vllm_service_image tag')
    result = check_combination(vllm_ascend=vllm_ascend, driver=driver, waiver=waiver, today=today, rows=rows)
    details['row'] = result['row']
    details['suggestion'] = result['suggestion']
    if result['waived']:
        details['waiver'] = dict(result['waiver'], waives=result['waived_problems'])
        return finding('versions', 'warn', 'vllm-ascend %s on NPU driver %s is outside the compatibility set and runs '
                       'under a waiver until %s (reason: %s): %s'
                       % (vllm_ascend, driver, result['waiver']['expires'], result['waiver']['reason'],
                          '; '.join(result['waived_problems'])), details,
                       'Move to a row of the compatibility set before %s, or renew the waiver (ascend_compat_waiver)'
                       % result['waiver']['expires'])
    if not result['supported']:
        suggestion = result['suggestion']
        if suggestion:
            fix = ('Use the row that fits driver %s: %s with CANN %s (%s); set vllm_service_image or '
                   'vllm_service_vllm_ascend_version to it and re-run playbooks/site.yml, or upgrade the NPU driver '
                   '(npu_driver_version)' % (driver, _release(suggestion), suggestion['cann'], suggestion['image']))
        else:
            fix = 'No row of the compatibility set fits driver %s: upgrade the NPU driver (npu_driver_version)' % driver
        return finding('versions', 'fail', 'vllm-ascend %s does not fit NPU driver %s: %s'
                       % (vllm_ascend, driver, '; '.join(result['problems'] + result['waiver_problems'])), details, fix)
    problems = []
    if mode == 'native' and cann:
        cann_result = check_combination(vllm_ascend=vllm_ascend, cann=cann, rows=rows)
        problems = cann_result['problems']
        if problems:
            return finding('versions', 'warn', 'vllm-ascend %s fits driver %s, but the host\'s CANN %s does not: %s'
                           % (vllm_ascend, driver, cann, '; '.join(problems)), details,
                           'Install CANN %s, the CANN of %s (cann_version, role kunpeng_ascend.vllm.cann), or set '
                           'vllm_service_vllm_ascend_version to the release of CANN %s'
                           % (result['row']['cann'], _release(result['row']), cann))
    if not firmware:
        return finding('versions', 'warn', 'vllm-ascend %s fits driver %s, but no NPU firmware version is installed'
                       % (vllm_ascend, driver), details,
                       'Install the firmware: role kunpeng_ascend.vllm.npu_driver (npu_driver_firmware_package)')
    site = ', by the row %s' % format_row(result['row'], rows) if result['row']['source'] == SITE_SOURCE else ''
    return finding('versions', 'ok', 'driver %s, firmware %s, CANN %s, vllm-ascend %s: a supported combination%s'
                   % (driver, firmware, cann or '-', vllm_ascend, site), details)


# --------------------------------------------------------------------------------------------------------- NPUs

def _chip_name(chip):
    if chip.get('chip_id') is None:
        return 'NPU %s' % chip.get('npu_id')
    return 'NPU %s chip %s' % (chip.get('npu_id'), chip.get('chip_id'))


def npu_smi_unavailable(error):
    """The NPU findings when npu-smi did not answer: health fails with ``error``; the others are skipped."""
    fix = ('Run `npu-smi info` on the host and follow its message; reinstall or reload the NPU driver '
           '(role kunpeng_ascend.vllm.npu_driver) if it is missing or hangs')
    skipped = 'skipped: npu-smi did not answer'
    return [finding('npu_health', 'fail', 'npu-smi did not answer: %s' % error, {'error': error}, fix),
            finding('npu_memory', 'skipped', skipped),
            finding('npu_temperature', 'skipped', skipped),
            finding('npu_processes', 'skipped', skipped)]


def cpu_host():
    """The version and NPU findings of a host without any Ascend driver or npu-smi whose service runs natively: a
    CPU host (vLLM's CPU build), where there is nothing of the NPUs to check."""
    skipped = 'skipped: no Ascend driver and no npu-smi here, and the service runs natively (a CPU host)'
    checks = ('versions', 'npu_health', 'npu_memory', 'npu_temperature', 'npu_processes')
    return [finding(check, 'skipped', skipped) for check in checks]


def check_npu_health(info, error_codes=None):
    """Fail per chip whose health is not OK, naming it and npu-smi's error code (``error_codes``:
    ``{npu_id: {chip_id or None: code}}`` from ``npu-smi info -t health``); an incomplete table fails too."""
    error_codes = error_codes or {}
    bad = []
    for chip in info['chips']:
        if chip.get('health') != 'OK':
            codes = error_codes.get(chip.get('npu_id'), {})
            code = codes.get(chip.get('chip_id'), codes.get(None))
            bad.append({'npu_id': chip.get('npu_id'), 'chip_id': chip.get('chip_id'), 'health': chip.get('health'),
                        'error_code': code})
    details = {'chips': len(info['chips']), 'unhealthy': bad, 'complete': info.get('complete', True)}
    if bad:
        named = ', '.join('%s: %s%s' % (_chip_name(item), item['health'],
                                        ' (error code %s)' % item['error_code'] if item['error_code'] else '')
                          for item in bad)
        first = bad[0]
        return finding('npu_health', 'fail', '%d of %d NPU chips are not healthy: %s' % (len(bad), len(info['chips']), named),
                       details,
                       'Look the error code up in the Ascend health-code list and run `npu-smi info -t health -i %s`; '
                       'reset the chip (`npu-smi set -t reset -i %s -c %s`) or have the hardware serviced, and keep '
                       'it out of the service (vllm_service_npus) meanwhile'
                       % (first['npu_id'], first['npu_id'], first['chip_id'] if first['chip_id'] is not None else 0))
    if not info.get('complete', True):
        return finding('npu_health', 'fail', 'npu-smi info printed an incomplete table: %s' % info.get('incomplete_reason'),
                       details, 'Run `npu-smi info` on the host; a cut-off table points to a driver problem '
                       '(reinstall the driver: role kunpeng_ascend.vllm.npu_driver)')
    if not info['chips']:
        return finding('npu_health', 'fail', 'npu-smi info lists no NPU chip', details,
                       'Check that the NPU driver is loaded (`lsmod | grep drv_davinci`) and run `npu-smi info`')
    return finding('npu_health', 'ok', 'all %d NPU chips are healthy' % len(info['chips']), details)


def check_npu_memory(info, warn_percent):
    """Warn per chip whose HBM (or, without HBM, memory) use is above ``warn_percent``."""
    chips = []
    high = []
    for chip in info['chips']:
        used, total = chip.get('hbm_used_mb'), chip.get('hbm_total_mb')
        if total is None:
            used, total = chip.get('memory_used_mb'), chip.get('memory_total_mb')
        if used is None or not total:
            continue
        percent = round(100.0 * used / total, 1)
        entry = {'npu_id': chip.get('npu_id'), 'chip_id': chip.get('chip_id'), 'used_mb': used, 'total_mb': total,
                 'percent': percent}
        chips.append(entry)
        if percent > warn_percent:
            high.append(entry)
    details = {'chips': chips, 'warn_percent': warn_percent}
    if not chips:
        return finding('npu_memory', 'skipped', 'npu-smi reports no NPU memory figures', details)
    if high:
        named = ', '.join('%s at %s %% (%s of %s MB)' % (_chip_name(item), item['percent'], item['used_mb'], item['total_mb'])
                          for item in high)
        return finding('npu_memory', 'warn', 'NPU memory over %s %%: %s' % (warn_percent, named), details,
                       'See which processes hold the memory (`npu-smi info`); lower vllm_service_gpu_memory_utilization, '
                       'or raise doctor_hbm_warn_percent if this use is intended')
    peak = max(chips, key=lambda item: item['percent'])
    return finding('npu_memory', 'ok', 'NPU memory use at most %s %% (%s)' % (peak['percent'], _chip_name(peak)), details)


def check_npu_temperature(info, warn_c):
    """Warn per chip hotter than ``warn_c`` degrees Celsius."""
    temps = [{'npu_id': chip.get('npu_id'), 'chip_id': chip.get('chip_id'), 'temp_c': chip.get('temp_c')}
             for chip in info['chips'] if chip.get('temp_c') is not None]
    details = {'chips': temps, 'warn_c': warn_c}
    if not temps:
        return finding('npu_temperature', 'skipped', 'npu-smi reports no temperature', details)
    hot = [item for item in temps if item['temp_c'] > warn_c]
    if hot:
        return finding('npu_temperature', 'warn', 'NPU chips over %s C: %s' % (
            warn_c, ', '.join('%s at %s C' % (_chip_name(item), item['temp_c']) for item in hot)), details,
            'Check the server\'s cooling and fans (BMC sensor readings) and `npu-smi info -t temp -i %s`'
            % hot[0]['npu_id'])
    hottest = max(temps, key=lambda item: item['temp_c'])
    return finding('npu_temperature', 'ok', 'hottest chip %s C (%s), limit %s C'
                   % (hottest['temp_c'], _chip_name(hottest), warn_c), details)


def check_npu_processes(processes, service_pids, ancestors=None, unit=None):
    """Fail when a process holds an NPU that is neither one of ``service_pids`` (the service's control group and
    main PID) nor a descendant of one (``ancestors``: ``{pid: [parent, grandparent, ...]}``)."""
    service_pids = set(service_pids or ())
    ancestors = ancestors or {}
    foreign = []
    own = []
    for process in processes:
        pid = process.get('pid')
        lineage = [pid] + list(ancestors.get(pid, []))
        (own if any(item in service_pids for item in lineage) else foreign).append(process)
    details = {'foreign': foreign, 'service': own, 'service_pids': sorted(service_pids), 'unit': unit}
    if foreign:
        pids = sorted(set(item['pid'] for item in foreign))
        names = ', '.join('%s (%s, NPU %s)' % (item['pid'], item.get('name') or '?', item.get('npu_id')) for item in foreign)
        return finding('npu_processes', 'fail', '%d process(es) not of %s hold NPUs: %s'
                       % (len(pids), unit or 'the service', names), details,
                       'Stop them (`kill %s`, after checking what they are with `ps -o pid,user,args -p %s`), or give '
                       'the service other NPUs with vllm_service_npus; vLLM fails to start on a held NPU (EJ0001)'
                       % (' '.join(str(pid) for pid in pids), ','.join(str(pid) for pid in pids)))
    if own:
        return finding('npu_processes', 'ok', '%d NPU process(es), all of %s' % (len(own), unit or 'the service'), details)
    return finding('npu_processes', 'ok', 'no process holds an NPU', details)


# --------------------------------------------------------------------------------------------------------- tuning

def tuning_drift(live, persisted_sysctl, persisted_sys, expected_sysctl=None, expected_sys=None, meminfo=None,
                 sources=None):
    """The tuning finding.

    :param live: ``{'sysctl': {key: value or None}, 'sys': {path: value or None}}``: the live values (None when
        absent on the host), sysctl keys dotted, /sys paths relative to sysfs (globs expanded by the caller, each
        concrete path a key).
    :param persisted_sysctl: what os_tuning persisted in its sysctl.d file (None when the file is absent).
    :param persisted_sys: what it persisted in its tmpfiles.d file, ``/sys/...`` path (may be a glob) -> value
        (None when the file is absent).
    :param expected_sysctl: explicit expected sysctl values (they win over the persisted ones).
    :param expected_sys: explicit expected /sys values, path relative to /sys (may be a glob) -> value.
    :param meminfo: parsed /proc/meminfo: ``HugePages_Total`` is compared with the expected ``vm.nr_hugepages``.
    :param sources: ``{'sysctl': file, 'tmpfiles': file}`` to name in the messages.
    """
    sources = sources or {}
    want = {}
    for key, value in (persisted_sysctl or {}).items():
        want[('sysctl', key)] = (str(value), sources.get('sysctl', 'the sysctl.d file'))
    for path, value in (persisted_sys or {}).items():
        want[('sys', path[len('/sys/'):] if path.startswith('/sys/') else path.lstrip('/'))] = (
            str(value), sources.get('tmpfiles', 'the tmpfiles.d file'))
    for key, value in (expected_sysctl or {}).items():
        want[('sysctl', key)] = (str(value), 'expected')
    for path, value in (expected_sys or {}).items():
        want[('sys', path[len('/sys/'):] if path.startswith('/sys/') else path.lstrip('/'))] = (str(value), 'expected')
    if not want:
        return finding('tuning', 'skipped', 'no os_tuning settings to compare: %s is absent and no expected value '
                       'was given' % sources.get('sysctl', 'the sysctl.d file'), {'drift': [], 'compared': []})
    drift = []
    compared = []
    for (kind, name), (value, source) in sorted(want.items()):
        value = ' '.join(value.split())
        if kind == 'sysctl':
            targets = [(name, (live.get('sysctl') or {}).get(name))]
        else:
            targets = [(path, got) for path, got in sorted((live.get('sys') or {}).items()) if fnmatch.fnmatch(path, name)]
        for path, got in targets:
            if got is None:
                continue  # not on this host (no cpufreq in a VM): os_tuning skips it too
            entry = {'key': path if kind == 'sysctl' else '/sys/' + path, 'live': got, 'expected': value, 'source': source}
            compared.append(entry)
            if got != value:
                drift.append(entry)
    hugepages = want.get(('sysctl', 'vm.nr_hugepages'))
    if hugepages and meminfo and 'HugePages_Total' in meminfo and str(meminfo['HugePages_Total']) != hugepages[0]:
        entry = {'key': 'HugePages_Total (/proc/meminfo)', 'live': str(meminfo['HugePages_Total']),
                 'expected': hugepages[0], 'source': hugepages[1]}
        compared.append(entry)
        if not any(item['key'] == 'vm.nr_hugepages' for item in drift):
            drift.append(entry)
    details = {'drift': drift, 'compared': compared}
    if drift:
        return finding('tuning', 'warn', '%d tuning value(s) drifted: %s' % (
            len(drift), ', '.join('%s is %s, %s says %s' % (item['key'], item['live'], item['source'], item['expected'])
                                  for item in drift)), details,
            'Re-run role kunpeng_ascend.vllm.os_tuning (playbooks/site.yml --tags os_tuning), or apply the persisted '
            'files now: `sysctl --system` and `systemd-tmpfiles --create %s`; hugepages the kernel cannot reserve '
            'need a reboot' % sources.get('tmpfiles', ''))
    return finding('tuning', 'ok', '%d tuning value(s) as os_tuning set them' % len(compared), details)


# --------------------------------------------------------------------------------------------------------- services

def service_pids_from(properties, cgroup_pids):
    """The service's PIDs: its main PID (when not 0) and those of its control group."""
    pids = set(cgroup_pids or ())
    try:
        main = int(properties.get('MainPID') or 0)
    except ValueError:
        main = 0
    if main > 0:
        pids.add(main)
    return pids


def check_service(unit, properties, error=None):
    """Fail when the unit is not active (or not there); warn when it is active but has restarted."""
    details = dict((key, properties.get(key)) for key in ('LoadState', 'ActiveState', 'SubState', 'NRestarts', 'Result',
                                                          'MainPID', 'ControlGroup'))
    details['unit'] = unit
    logs = 'Read why: `systemctl status %s` and `journalctl -u %s -e`; then ' % (unit, unit)
    if error:
        return finding('service', 'fail', 'cannot read the state of %s: %s' % (unit, error), details,
                       'Run `systemctl status %s` on the host' % unit)
    if properties.get('LoadState') == 'not-found':
        return finding('service', 'fail', '%s is not installed' % unit, details,
                       'Deploy it: run playbooks/site.yml (role kunpeng_ascend.vllm.vllm_service); the unit name comes '
                       'from vllm_service_name')
    active = properties.get('ActiveState')
    state = '%s (%s), result %s, %s restart(s)' % (
        active, properties.get('SubState'), properties.get('Result'), properties.get('NRestarts') or 0)
    if active != 'active':
        return finding('service', 'fail', '%s is not running: %s' % (unit, state), details,
                       logs + '`systemctl restart %s`, or re-run playbooks/site.yml (role kunpeng_ascend.vllm.vllm_service)'
                       % unit)
    restarts = properties.get('NRestarts') or 0
    if isinstance(restarts, int) and restarts > 0:
        return finding('service', 'warn', '%s runs but systemd restarted it %s time(s): %s' % (unit, restarts, state),
                       details, logs + 'fix the cause of the crashes (see the journal check)')
    return finding('service', 'ok', '%s is %s' % (unit, state), details)


# Journal lines that tell why a start failed or the service died: systemd's own and vLLM's, the wait for free NPUs.
_FAILURE_LINE = re.compile(r'error|fail|exception|killed|held by|timed out|repeated too quickly|not starting', re.I)
# How many of them a restart storm finding quotes (the last ones).
STORM_LINES = 5


def last_failure_lines(lines, count=STORM_LINES):
    """The last ``count`` different lines of ``lines`` (a unit's journal, oldest first) that tell of a failure, each
    cut to JOURNAL_LINE_CHARS, in the order of their last occurrence: systemd's lines repeat at every restart and
    would push out the one line that names the cause."""
    found = [line.strip()[:JOURNAL_LINE_CHARS] for line in lines if _FAILURE_LINE.search(line)]
    last = dict((line, index) for index, line in enumerate(found))
    return sorted(last, key=last.get)[-count:] if count else []


def check_restart_storm(unit, properties, journal_lines, error=None):
    """Whether systemd is restarting the service in a loop: fail when it gave up (more than StartLimitBurst starts in
    StartLimitIntervalSec: Result ``start-limit-hit``, or the unit failed with NRestarts at StartLimitBurst), warn
    while it is waiting to restart a failed service;
    either way with the unit's NRestarts, its Result and the journal's last failure lines. Skipped when the unit
    cannot be read or is not installed (the service check says so)."""
    restarts = properties.get('NRestarts') or 0
    burst = properties.get('StartLimitBurst')
    details = {'unit': unit, 'NRestarts': restarts, 'Result': properties.get('Result'), 'StartLimitBurst': burst,
               'ActiveState': properties.get('ActiveState'), 'SubState': properties.get('SubState'),
               'last_failure_lines': last_failure_lines(journal_lines or [])}
    if error or properties.get('LoadState') in (None, 'not-found'):
        return finding('restart_storm', 'skipped', 'the state of %s is not known (see the service check)' % unit,
                       details)
    quoted = ' Last failure lines: %s' % ' | '.join(details['last_failure_lines']) if details['last_failure_lines'] \
        else ''
    limit = 'at most %s starts in the interval' % burst if burst is not None else 'its start limit'
    # systemd sets Result start-limit-hit when it refuses a start asked for; when it refuses its own automatic
    # restart (systemd 252) the unit stays failed with the last start's result, NRestarts at the burst.
    gave_up = properties.get('Result') == 'start-limit-hit' or (
        properties.get('ActiveState') == 'failed' and isinstance(burst, int) and isinstance(restarts, int)
        and restarts >= burst)
    if gave_up:
        return finding('restart_storm', 'fail', 'restart storm: systemd gave up on %s after %s restart(s), %s '
                       '(start limit hit, result %s).%s' % (unit, restarts, limit, properties.get('Result'), quoted),
                       details,
                       'Fix the cause the lines name (a process holding the NPUs: stop it; see also the journal check), '
                       'then `systemctl reset-failed %s` and `systemctl start %s`; the limit is '
                       'vllm_service_restart_burst in vllm_service_restart_interval' % (unit, unit))
    restarting = restarts and properties.get('ActiveState') in ('activating', 'failed')
    if properties.get('SubState') == 'auto-restart' or restarting:
        return finding('restart_storm', 'warn', '%s is failing and being restarted: %s restart(s) so far, %s.%s'
                       % (unit, restarts, limit, quoted), details,
                       'Read why: `journalctl -u %s -e`; fix the cause before systemd reaches its start limit' % unit)
    return finding('restart_storm', 'ok', 'no restart storm: %s restarted %s time(s), %s' % (unit, restarts, limit),
                   details)


def check_container_runtime(mode, engine, properties=None, found=True):
    """In container mode: fail when the engine (docker, containerd: their systemd unit; podman: its program) is
    not there or not active; skipped in native mode."""
    if mode != 'container':
        return finding('container_runtime', 'skipped', 'the service runs natively (mode %s), not in a container'
                       % (mode or 'native'), {'mode': mode, 'engine': engine})
    details = {'mode': mode, 'engine': engine}
    if not found:
        return finding('container_runtime', 'fail', '%s, the service\'s container engine, is not installed' % engine,
                       details, 'Install it: run playbooks/site.yml (role kunpeng_ascend.vllm.container_runtime, '
                       'container_runtime_engine %s)' % engine)
    if engine == 'podman':
        return finding('container_runtime', 'ok', 'podman is installed (it runs without a daemon)', details)
    properties = properties or {}
    unit = properties.get('Id') or '%s.service' % engine
    details.update(unit=unit, ActiveState=properties.get('ActiveState'), SubState=properties.get('SubState'))
    if properties.get('ActiveState') != 'active':
        return finding('container_runtime', 'fail', '%s is not running (%s, %s)' % (
            unit, properties.get('ActiveState') or properties.get('LoadState') or 'unknown', properties.get('SubState')),
            details, 'Start it: `systemctl enable --now %s` (`journalctl -u %s -e` says why it stopped), or re-run '
            'role kunpeng_ascend.vllm.container_runtime' % (unit, unit))
    return finding('container_runtime', 'ok', '%s is active' % unit, details)


def scan_journal(lines, unit, since, error=None, per_kind=JOURNAL_LINES_PER_KIND):
    """The journal finding: the service's recent log lines matched against the failure catalogue
    (``_failure_catalogue``: each line to the first entry it matches); at most ``per_kind`` matching lines of each
    entry are kept (the last ones). Any ``fail`` entry fails the finding, ``warn`` entries alone warn."""
    if error:
        return finding('journal', 'warn', 'cannot read the journal of %s: %s' % (unit, error), {'unit': unit},
                       'Run `journalctl -u %s --since "%s"` on the host (journald running? the user in group '
                       'systemd-journal?)' % (unit, since))
    result = _failure_catalogue.scan(lines, per_kind=per_kind, line_chars=JOURNAL_LINE_CHARS)
    found = result['found']
    details = {'unit': unit, 'since': since, 'lines_read': result['lines_read'], 'counts': result['counts'],
               'matches': result['matches'],
               'causes': dict((kind, _failure_catalogue.ENTRIES[kind]['cause']) for kind in found)}
    if not found:
        return finding('journal', 'ok', 'none of the %d known failures of the catalogue in %d journal line(s) of %s '
                       'since %s' % (len(_failure_catalogue.CATALOGUE), result['lines_read'], unit, since), details)
    entries = [_failure_catalogue.ENTRIES[kind] for kind in found]
    status = 'fail' if any(entry['status'] == 'fail' for entry in entries) else 'warn'
    summary = '; '.join('%s x%d, last: %s' % (kind, result['counts'][kind], result['matches'][kind][-1])
                        if result['matches'][kind] else '%s x%d' % (kind, result['counts'][kind]) for kind in found)
    return finding('journal', status, 'the journal of %s since %s has %s' % (unit, since, summary), details,
                   ' | '.join(entry['fix'] for entry in entries))


def _tls_problems(state):
    """(failures, warnings) of one NIC's certificates and CRL (``state['tls']``: ``{'enabled', 'certificates':
    _hccn_tool.tls_expiry entries}``): an expired one fails while TLS is on, and warns while it is off; one expiring
    within the threshold warns."""
    tls = state.get('tls') or {}
    failures, warnings = [], []
    for cert in tls.get('certificates') or []:
        left = cert.get('days_left')
        if cert['state'] == 'expired':
            text = '%s expired%s' % (cert['name'], ' on %s' % cert['end'] if cert.get('end') else '')
            if tls.get('enabled') is False:
                warnings.append(text + ' (TLS is off, so HCCL does not use it now)')
            else:
                failures.append(text)
        elif cert['state'] == 'expiring':
            warnings.append('%s expires %s' % (cert['name'], 'in %d day(s) (%s)' % (left, cert['end'])
                                               if left is not None else 'soon, hccn_tool says'))
    return failures, warnings


def check_network(enabled, devices, error=None, tls_warn_days=None):
    """The NPU network finding: ``devices`` is ``{device id: {'net_health', 'link', 'tls', 'error'}}``; fail per NIC
    whose health is not Success or link not UP, or whose TLS certificate or CRL has expired while TLS is on; warn
    per certificate or CRL that expires within ``tls_warn_days`` days (``tls``: see _tls_problems)."""
    if not enabled:
        return finding('network', 'skipped', 'NPU network not checked (doctor_check_network is false: a single-node '
                       'service)', {})
    if error:
        return finding('network', 'fail', 'cannot check the NPU network: %s' % error, {'error': error},
                       'Install the NPU driver\'s hccn_tool (/usr/local/Ascend/driver/tools/hccn_tool, role '
                       'kunpeng_ascend.vllm.npu_driver) or set doctor_hccn_tool_path')
    bad = []
    expiring = []
    for device, state in sorted(devices.items()):
        problems = []
        if state.get('error'):
            problems.append(state['error'])
        if state.get('net_health') != 'Success':
            problems.append('net health %s' % state.get('net_health'))
        if state.get('link') != 'UP':
            problems.append('link %s' % state.get('link'))
        tls_failures, tls_warnings = _tls_problems(state)
        problems.extend(tls_failures)
        if problems:
            bad.append({'device': device, 'problems': problems})
        if tls_warnings:
            expiring.append({'device': device, 'problems': tls_warnings})
    details = {'devices': devices, 'bad': bad, 'expiring': expiring, 'tls_warn_days': tls_warn_days}
    if not devices:
        return finding('network', 'skipped', 'no NPU network device to check', details)
    tls_fix = ('Replace the certificate suite before it lapses: `hccn_tool -i %s -tls -s path DIR pri pri.pem pub '
               'pub.pem ca1 ca1.pem ... crl crl.pem` (a new CRL alone: `-tls -s path DIR crl crl.pem`), on every NPU of '
               'every node, as the same suite' % (expiring or bad or [{'device': 0}])[0]['device'])
    if bad:
        first = bad[0]['device']
        fix = ('Check the cable and switch port of each, `hccn_tool -i %s -link -g` and `-net_health -g`, and the '
               'addresses in /etc/hccn.conf (`hccn_tool -i %s -ip -g`); the detection address is set with '
               '`hccn_tool -i %s -netdetect -s address ADDRESS`' % (first, first, first))
        if any('expired' in problem for item in bad for problem in item['problems']):
            fix += '; ' + tls_fix
        return finding('network', 'fail', '%d of %d NPU NICs are not healthy: %s' % (
            len(bad), len(devices), '; '.join('device %s: %s' % (item['device'], ', '.join(item['problems']))
                                              for item in bad)), details, fix)
    if expiring:
        return finding('network', 'warn', 'NPU NIC TLS certificates or CRLs expire within %s days: %s' % (
            tls_warn_days, '; '.join('device %s: %s' % (item['device'], ', '.join(item['problems']))
                                     for item in expiring)), details, tls_fix)
    return finding('network', 'ok', 'all %d NPU NICs are UP with net health Success' % len(devices), details)


def order(findings):
    """The findings in CHECKS order."""
    rank = dict((name, index) for index, name in enumerate(CHECKS))
    return sorted(findings, key=lambda item: rank.get(item['check'], len(CHECKS)))
