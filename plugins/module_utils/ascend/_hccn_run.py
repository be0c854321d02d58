# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The runs of the modules ``hccn_tool`` (read and set the NPU NICs, persisted in ``/etc/hccn.conf``) and ``hccn_ping``
(ping peer NICs, several at once) on their AnsibleModule: the option checks (the one check of ``hccn_tool_path``),
``/etc/hccn.conf`` read through common/_files and written atomically, every command through common/_command's
runner, every warning through one WarningCap. What hccn_tool prints and what to set is decided in ``_hccn_tool``.
"""

from __future__ import annotations

import ipaddress
import os
import time
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _command
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._atomic_write import write_atomically
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, read_regular_file
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._hccn_tool import (
    OUT_OF_RANGE,
    HccnToolFailure,
    differences,
    parse_hccn_conf,
    ping_outcome,
    plan_changes,
    read_device,
    run_checked,
    validate_devices,
)

# What hccn_tool returns of a device, in order.
RESULT_KEYS = ('id', 'address', 'netmask', 'gateway', 'netdetect', 'tls', 'link', 'net_health')
# hccn.conf holds a few lines per device (about 2 KiB for 16 devices): a larger file is no hccn.conf.
MAX_CONF_BYTES = 1 << 20
NOT_REGULAR = 'conf_path: %s is not a regular file; fix it or set conf_path'
# hccn_ping's whole-number options and their bounds.
PING_BOUNDS = (('count', 1, 100), ('timeout', 1, 300), ('parallel', 1, 64))


class ConfError(Exception):
    """hccn.conf cannot be read or written; the message names the file."""


def tool_problem(path):
    """The message when ``path`` (the option hccn_tool_path) is no executable file, None when it is one."""
    if _command.is_executable(path):
        return None
    return ('hccn_tool_path: %s is not an executable file: install the NPU driver (role kunpeng_ascend.vllm.npu_driver) '
            'or set hccn_tool_path to hccn_tool' % path)


def read_conf(path):
    """The text of hccn.conf, '' when there is none. :raises ConfError: naming conf_path."""
    try:
        data = read_regular_file(path, MAX_CONF_BYTES, 'an hccn.conf')
    except UnreadableFile as error:
        if error.reason.endswith(', not a regular file'):
            raise ConfError(NOT_REGULAR % path)
        raise ConfError('conf_path: %s: %s; fix it or set conf_path' % (path, error.reason))
    if data is None:
        if os.path.lexists(path):
            # A symbolic link to nothing: written through, it would create a file wherever it points.
            raise ConfError(NOT_REGULAR % path)
        return ''
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as error:
        raise ConfError('conf_path: %s is not UTF-8 text (%s): fix it; it was left unchanged' % (path, error))


def write_conf(module, path, text):
    """Write ``text`` to ``path`` atomically, keeping the owner, group and mode of an existing file."""
    try:
        write_atomically(module, path, to_bytes(text))
    except (IOError, OSError) as error:
        raise ConfError('conf_path: %s cannot be written: %s' % (path, error.strerror or error))


def public(values, before=None):
    """A device's values as returned; link and health from ``before`` when ``values`` is a prediction."""
    merged = dict(before or {}, **values)
    return dict((key, merged.get(key)) for key in RESULT_KEYS)


# --------------------------------------------------------------------------------------------------------- hccn_tool

class _NicRun:
    """One hccn_tool module run: its runner, warnings and the entry (``devices[N]``) of each device id."""

    def __init__(self, module, declared):
        self.module = module
        self.tool = module.params['hccn_tool_path']
        self.runner = CommandRunner(module, module.params['timeout'])
        self.warnings = WarningCap()
        self.where = dict((item['id'], 'devices[%d]' % item['index']) for item in declared)

    def run(self, args):
        return self.runner.run([self.tool] + list(args))

    def fail(self, msg, failure=None, **extra):
        """Fail the module with ``msg`` (and the data of the HccnToolFailure ``failure``), warnings first."""
        self.warnings.emit(self.module.warn)
        if failure is not None:
            self.runner.fail(failure.result, failure.msg, **extra)
        self.module.fail_json(msg=msg, **extra)

    def read(self, device):
        return read_device(self.run, device, self.warnings, self.where.get(device))

    def apply(self, commands):
        """Run the set commands in order; the ones done, shown as ``hccn_tool ARGS``."""
        done = []
        try:
            for command in commands:
                run_checked(self.run, command, self.where.get(int(command[1])))
                done.append(' '.join(['hccn_tool'] + command))
        except HccnToolFailure as failure:
            self.fail(None, failure, commands=done)
        return done


def set_nics(module):
    """hccn_tool's run on ``module``'s options: the result to exit with; the module fails naming what to fix."""
    params = module.params
    if params['state'] == 'present' and not params['devices']:
        module.fail_json(msg='devices: give at least one device to set with state=present (or use state=read)')
    try:
        declared = validate_devices(params['devices'])
    except ValueError as error:
        module.fail_json(msg=str(error))
    problem = tool_problem(params['hccn_tool_path'])
    if problem:
        module.fail_json(msg=problem)
    conf_path = params['conf_path']
    try:
        conf_before = read_conf(conf_path)
    except ConfError as error:
        module.fail_json(msg=str(error))
    ids = [item['id'] for item in declared] or sorted(parse_hccn_conf(conf_before))
    if not ids:
        module.fail_json(msg='devices: no device given and %s names none: list the device ids to read' % conf_path)
    nics = _NicRun(module, declared)
    try:
        current = dict((device, nics.read(device)) for device in ids)
    except HccnToolFailure as failure:
        nics.fail(None, failure)
    if params['state'] == 'read':
        conf_values = parse_hccn_conf(conf_before, nics.warnings)
        nics.warnings.emit(module.warn)
        return dict(changed=False, devices=[public(current[d]) for d in ids], commands=[], conf_changed=False,
                    hccn_conf=conf_values)
    try:
        commands, conf_after, expected = plan_changes(declared, current, conf_before)
    except ValueError as error:
        nics.fail(str(error))
    if module.check_mode:
        final, values = conf_after, dict((d, public(expected[d], current[d])) for d in ids)
    else:
        final, values = _apply(nics, declared, ids, current, commands, conf_path)
    result = dict(changed=bool(commands) or final != conf_before, devices=[values[d] for d in ids],
                  commands=[' '.join(['hccn_tool'] + command) for command in commands],
                  conf_changed=final != conf_before, hccn_conf=parse_hccn_conf(final, nics.warnings))
    if module._diff:
        result['diff'] = dict(before=conf_before, after=final, before_header=conf_path, after_header=conf_path)
    nics.warnings.emit(module.warn)
    return result


def _apply(nics, declared, ids, current, commands, conf_path):
    """Run ``commands``, read the set devices back, persist hccn.conf: ``(hccn.conf text after, values by id)``."""
    done = nics.apply(commands)
    values = dict((d, public(current[d])) for d in ids)
    try:
        for device in sorted(set(int(command[1]) for command in commands)):
            values[device] = public(nics.read(device))
    except HccnToolFailure as failure:
        nics.fail(None, failure, commands=done)
    wrong = differences(declared, values)
    if wrong:
        nics.fail('hccn_tool accepted the settings but reads back other values: %s' % '; '.join(wrong),
                  commands=done, devices=[values[d] for d in ids])
    try:
        # The tool may have written hccn.conf itself: persist against what is there now.
        conf_now = read_conf(conf_path)
        final = plan_changes(declared, dict((d, values[d]) for d in ids), conf_now)[1]
        if final != conf_now:
            write_conf(nics.module, conf_path, final)
    except (ConfError, ValueError) as error:
        nics.fail(str(error), commands=done)
    return final, values


# --------------------------------------------------------------------------------------------------------- hccn_ping

def check_pings(params):
    """The pings checked: ``[{'device', 'address', 'name'}]``; a ValueError naming the option that is wrong."""
    for option, low, high in PING_BOUNDS:
        if not low <= params[option] <= high:
            raise ValueError('%s: give a whole number from %d to %d, not %d' % (option, low, high, params[option]))
    if not 0 <= params['max_loss_percent'] <= 100:
        raise ValueError('max_loss_percent: give a percentage from 0 to 100, not %s' % params['max_loss_percent'])
    checked = []
    for index, entry in enumerate(params['pings']):
        where = 'pings[%d]' % index
        if entry['device'] < 0:
            raise ValueError('%s.device: give the NPU device id (a number >= 0, as in hccn_tool -i), not %d'
                             % (where, entry['device']))
        try:
            address = ipaddress.IPv4Address(str(entry['address']).strip())
        except ValueError:
            raise ValueError('%s.address: %r is not an IPv4 address' % (where, entry['address']))
        if address.is_unspecified or address.is_multicast or address.is_loopback or \
                address == ipaddress.IPv4Address('255.255.255.255'):
            raise ValueError('%s.address: %s cannot be an NPU NIC address' % (where, address))
        checked.append({'device': entry['device'], 'address': str(address), 'name': entry.get('name')})
    return checked


def run_pings(module):
    """hccn_ping's run on ``module``'s options: the result to exit with; the module fails on wrong input."""
    params = module.params
    try:
        pings = check_pings(params)
    except ValueError as error:
        module.fail_json(msg=str(error))
    problem = tool_problem(params['hccn_tool_path'])
    if problem:
        module.fail_json(msg=problem)
    runner = CommandRunner(module, params['timeout'])
    warnings = WarningCap()

    def ping(entry):
        return runner.run([params['hccn_tool_path'], '-i', str(entry['device']), '-ping', '-g', 'address',
                           entry['address'], 'pkt', str(params['count'])])

    started = time.monotonic()
    runs = []
    if pings:
        with ThreadPoolExecutor(max_workers=min(params['parallel'], len(pings))) as pool:
            runs = list(pool.map(ping, pings))
    seconds = round(time.monotonic() - started, 3)
    results = []
    for index, (entry, result) in enumerate(zip(pings, runs)):
        outcome = ping_outcome(result, params['max_loss_percent'], warnings)
        if outcome['kind'] == OUT_OF_RANGE:
            warnings.emit(module.warn)
            module.fail_json(
                msg='pings[%d].device: device %d does not exist on this host (hccn_tool -i %d: %s); list the devices '
                    'with `npu-smi info -m` (Chip Logic ID)' % (index, entry['device'], entry['device'],
                                                                outcome['error']),
                **_command.failure_data(result))
        if outcome.pop('kind') == 'timeout':
            outcome['error'] = 'no answer within %d s (timeout)' % params['timeout']
        results.append(dict(entry, **outcome))
    warnings.emit(module.warn)
    return dict(changed=False, results=results, failed_pings=[item for item in results if not item['ok']],
                seconds=seconds)
