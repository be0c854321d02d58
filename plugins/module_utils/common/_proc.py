# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The one reader of the process table (proc(5)) for the whole collection: a process's parent, CPU time and resident
memory, its ancestors and descendants. ``parse_stat`` and ``parse_status_rss`` are pure; ProcReader reads a
``/proc`` tree (tests give it a planted one). A process that ends while it is read is skipped, never an error.
Standard library only.
"""

from __future__ import annotations

import os

PROC = '/proc'
# Bytes a stat, status or cmdline file is read to.
_READ_LIMIT = 1 << 16


def parse_stat(text):
    """``/proc/<pid>/stat`` as ``{'comm', 'state', 'ppid', 'cpu_ticks'}`` (CPU: utime + stime + cutime + cstime),
    None when it is not one. The command name may hold spaces and parentheses: the fields after it start after
    the last ``)``."""
    if not text or ')' not in text or '(' not in text:
        return None
    head, tail = text.rsplit(')', 1)
    fields = tail.split()
    # After the command name: state is field 3 of proc(5), ppid field 4, utime..cstime fields 14-17.
    try:
        return {'comm': head.split('(', 1)[1], 'state': fields[0], 'ppid': int(fields[1]),
                'cpu_ticks': sum(int(value) for value in fields[11:15])}
    except (IndexError, ValueError):
        return None


def parse_status_rss(text):
    """The ``VmRSS`` line of ``/proc/<pid>/status`` in bytes, None when there is none (a kernel thread, a zombie)."""
    for line in (text or '').splitlines():
        if line.startswith('VmRSS:'):
            words = line.split()
            if len(words) >= 2 and words[1].isdigit():
                unit = words[2].lower() if len(words) > 2 else 'kb'
                return int(words[1]) * {'kb': 1024, 'mb': 1024 ** 2, 'gb': 1024 ** 3}.get(unit, 1024)
    return None


class ProcReader:
    """A ``/proc`` tree (``root``) read on demand."""

    def __init__(self, root=PROC):
        self.root = root

    def _read(self, pid, name, binary=False):
        try:
            with open(os.path.join(self.root, str(int(pid)), name), 'rb') as handle:
                data = handle.read(_READ_LIMIT)
        except (OSError, ValueError):
            return None
        return data if binary else data.decode('utf-8', 'replace')

    def stat(self, pid):
        """parse_stat of one process, None when it is gone."""
        return parse_stat(self._read(pid, 'stat'))

    def rss_bytes(self, pid):
        """Resident memory of one process in bytes, None when it is gone or has none."""
        return parse_status_rss(self._read(pid, 'status'))

    def cmdline(self, pid):
        """The argv of one process ([] for a kernel thread or a process that is gone)."""
        data = self._read(pid, 'cmdline', binary=True)
        if not data:
            return []
        return data.decode('utf-8', 'replace').split('\0')[:-1] if data.endswith(b'\0') else \
            data.decode('utf-8', 'replace').split('\0')

    def pids(self):
        """Every PID the tree shows."""
        try:
            names = os.listdir(self.root)
        except OSError:
            return []
        return sorted(int(name) for name in names if name.isdigit())

    def table(self):
        """``{pid: parse_stat}`` of every process that could be read."""
        table = {}
        for pid in self.pids():
            stat = self.stat(pid)
            if stat is not None:
                table[pid] = stat
        return table

    def ancestors(self, pid, limit=64):
        """The parent, grandparent, ... of ``pid`` up to (not including) init."""
        chain = []
        while len(chain) < limit:
            stat = self.stat(pid)
            if stat is None or stat['ppid'] <= 1:
                break
            pid = stat['ppid']
            chain.append(pid)
        return chain

    def descendants(self, root, table=None):
        """``root`` and every process below it that ``table`` (default: read now) shows; [] when root is gone."""
        table = self.table() if table is None else table
        if root not in table:
            return []
        children = {}
        for pid, stat in table.items():
            children.setdefault(stat['ppid'], []).append(pid)
        found = []
        below = [root]
        seen = set()
        while below:
            pid = below.pop()
            if pid in seen:
                continue
            seen.add(pid)
            found.append(pid)
            below.extend(children.get(pid, ()))
        return sorted(found)

    def tree_rss_bytes(self, root):
        """Resident memory of ``root`` and its descendants in bytes (None when root is gone)."""
        pids = self.descendants(root)
        if not pids:
            return None
        return sum(self.rss_bytes(pid) or 0 for pid in pids)


# ----------------------------------------------------------------------------------------------- a container's PID

def container_pid_argv(engine, name):
    """The engine's (docker, podman, nerdctl) ``inspect`` of a container's init PID, the name after ``--``."""
    return [engine, 'inspect', '--format', '{{.State.Pid}}', '--', name]


def parse_container_pid(stdout):
    """The PID ``inspect`` printed; None for a stopped container (0) or output that is no PID."""
    text = (stdout or '').strip()
    return int(text) if text.isdigit() and int(text) > 0 else None
