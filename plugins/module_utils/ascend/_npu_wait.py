# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The decisions of the wait a vLLM unit runs before each start (``ExecStartPre``, role vllm_service's ``npu-free-wait``
program): whether a process still holds one of the service's NPUs, in words that name it, and the bounded wait until
none does. A crashed vLLM's workers can hold the NPUs for a while after its main process died; a start that finds
them held fails with EJ0001, and systemd's fixed restart delay then turns one crash into a restart loop.

The host's ``npu-smi info`` is read through ``_npu_smi.read_npu_smi_info`` (the one parser), given a function that
runs npu-smi. Time comes in from the caller: the wait counts tries (``_bounded_wait.tries_for``) and sleeps through a
callback, so that tests drive it without a clock. Standard library only: the role ships this file with
``_bounded_wait``, ``_npu_smi``, ``_text`` and ``_warnings`` to the host, beside the program.
"""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._bounded_wait import tries_for
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import NpuSmiFailure, read_npu_smi_info
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap

# Exit codes of the program: the NPUs are free, still held at the deadline, unreadable at the deadline, bad usage.
FREE = 0
HELD = 1
UNREADABLE = 3
USAGE = 2


def parse_npu_list(text):
    """The NPU ids of ``text`` ('0,1,4-7'); ValueError naming what is wrong."""
    npus = []
    for part in (item.strip() for item in str(text).split(',')):
        if not part:
            continue
        first, dash, last = part.partition('-')
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError('%r is not an NPU id or a range of them (such as 0,1 or 0-7)' % part)
        low, high = int(first), int(last) if dash else int(first)
        if high < low:
            raise ValueError('%r is a range that ends before it starts' % part)
        npus.extend(range(low, high + 1))
    if not npus:
        raise ValueError('no NPU id given')
    return sorted(set(npus))


def holders(processes, npus):
    """The process entries of ``processes`` (npu-smi's process table, as parsed) on one of ``npus``."""
    wanted = set(npus)
    return [process for process in processes if process.get('npu_id') in wanted]


def describe_holders(held):
    """One phrase per process, in the table's order: 'pid 4242 (VLLM::Worker) on NPU 0, 1', with the pid inside a
    container when npu-smi prints one."""
    by_pid = {}
    for process in held:
        key = (process.get('pid'), process.get('name'), process.get('container_pid'))
        npus = by_pid.setdefault(key, [])
        if process.get('npu_id') not in npus:
            npus.append(process.get('npu_id'))
    phrases = []
    for (pid, name, container_pid), npus in by_pid.items():
        where = ', pid %s in its container' % container_pid if container_pid is not None else ''
        npu_text = ', '.join(str(npu) for npu in npus)
        phrases.append('pid %s (%s%s) on NPU %s' % (pid if pid is not None else 'unknown', name or 'no name', where,
                                                    npu_text))
    return '; '.join(phrases)


def read_holders(run, npus):
    """``(held, problem)``: the process entries on ``npus`` from one ``npu-smi info`` (``run(args)`` returns a
    CommandResult), or ``(None, why)`` when the table cannot be trusted (npu-smi failed or printed it cut off)."""
    try:
        info = read_npu_smi_info(run, WarningCap())
    except NpuSmiFailure as failure:
        return None, failure.msg
    if not info['complete']:
        return None, 'npu-smi printed an incomplete table (%s)' % info['incomplete_reason']
    return holders(info['processes'], npus), None


def wait_until_free(read, npus, timeout, interval, sleep, log, unit='the service'):
    """Wait until ``read()`` (see read_holders) shows no process on ``npus``: at most ``tries_for(timeout,
    interval)`` reads, ``sleep(interval)`` between them. ``log(line)`` gets one line when the wait starts, one each time
    the holders change, and the outcome.

    :returns: ``(code, message)``: FREE, HELD (still held at the deadline, naming the holders) or UNREADABLE (npu-smi
        never gave a table to trust).
    """
    tries = tries_for(timeout, interval)
    npu_text = ', '.join(str(npu) for npu in npus)
    last = None
    waited = False
    for attempt in range(1, tries + 1):
        held, problem = read()
        seen = problem if held is None else describe_holders(held)
        if held == []:
            if waited:
                log('%s: NPU %s free after %d tries, starting' % (unit, npu_text, attempt))
            return FREE, 'NPU %s free' % npu_text
        if seen != last:
            log('%s: %s; waiting up to %s s for NPU %s to be free (try %d of %d)' % (
                unit, ('cannot read the NPUs: ' + problem) if held is None else ('NPU held by ' + seen), timeout,
                npu_text, attempt, tries))
            last = seen
        waited = True
        if attempt < tries:
            sleep(interval)
    if held is None:
        message = ('%s: cannot tell whether NPU %s is free after %d tries in %s s: %s; not starting'
                   % (unit, npu_text, tries, timeout, problem))
        log(message)
        return UNREADABLE, message
    message = ('%s: NPU %s still held after %d tries in %s s by %s; not starting (a start would fail with EJ0001). '
               'Stop that process (kill it, or stop the service or container it belongs to), then '
               '`systemctl reset-failed %s` and start the service again' % (unit, npu_text, tries, timeout, seen, unit))
    log(message)
    return HELD, message
