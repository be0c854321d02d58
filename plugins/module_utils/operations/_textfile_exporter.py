# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The node's metrics exporter (role monitoring runs it from a systemd timer): one run reads ``npu-smi info``
(_npu_smi.read_npu_smi_info), ``systemctl show`` of the vLLM unit (_systemd), the resident memory of its processes
(_proc) and its journal's new lines (matched by _failure_catalogue.scan), then writes the metrics (_npu_metrics) to
the node exporter's textfile directory and its journal state, each atomically (a temporary file beside it, renamed
over it: the collector never reads half a file).

Standard library only and nothing of Ansible (Python 3.9): the role copies this file and the module_utils it
imports to the node, unchanged, and runs them there. Commands run as argv lists, never through a shell, in the C
locale, each under a time limit; a command that fails or is missing costs its metrics and a warning on stderr (the
exporter unit's journal), never the other metrics.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _npu_metrics
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json, _systemd
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _failure_catalogue
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, read_regular_file
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS, number_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import (
    NPU_SMI_FALLBACK_PATHS,
    NpuSmiFailure,
    read_npu_smi_info,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._proc import PROC, ProcReader
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap

# What read_npu_smi_info reads of a run (the fields of _command.CommandResult, which imports Ansible).
Result = collections.namedtuple('Result', 'argv rc stdout stderr timed_out')
SHOW_PROPERTIES = ('NRestarts', 'MainPID', 'ActiveState')
# Status of a command that could not be started (as a shell reports a missing command).
NOT_FOUND_RC = 127
# The journal state is a few hundred bytes (a cursor, a count per catalogue entry): a larger file is no state of ours.
MAX_STATE_BYTES = 1 << 16
# The most journal lines a run reads (role monitoring's monitoring_exporter_max_journal_lines takes as many).
MAX_JOURNAL_LINES = 1000000
# journalctl's cursors are about 150 characters (s=...;i=...;b=...;m=...;t=...;x=...).
MAX_CURSOR_CHARS = 1024


def run_command(argv, timeout):
    """Run ``argv`` in the C locale under ``timeout`` seconds; a Result, also for a missing program or a time-out."""
    environ = dict(os.environ, LANG='C', LC_ALL='C', LC_MESSAGES='C')
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=environ, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as expired:
        return Result(argv, -9, _text(expired.stdout), _text(expired.stderr), True)
    except OSError as error:
        return Result(argv, NOT_FOUND_RC, '', str(error), False)
    return Result(argv, done.returncode, _text(done.stdout), _text(done.stderr), False)


def _text(data):
    return (data or b'').decode('utf-8', 'replace')


def failure(result):
    """What a warning says of a failed command: its argv, status and last line of stderr (or stdout)."""
    lines = [line.strip() for line in (result.stderr or result.stdout or '').splitlines() if line.strip()]
    how = 'timed out' if result.timed_out else 'rc=%s' % result.rc
    return '%s failed (%s): %s' % (' '.join(result.argv), how, lines[-1] if lines else 'no output')


def find_program(name, configured, fallbacks=()):
    """``configured`` when given, else ``name`` on PATH, else the first executable of ``fallbacks``; None if none."""
    if configured:
        return configured
    return shutil.which(name) or next((path for path in fallbacks if os.access(path, os.X_OK)), None)


def read_npu(options, run, warn):
    """read_npu_smi_info's result, or None (with a warning) when npu-smi is missing, fails or its table is cut."""
    npu_smi = find_program('npu-smi', options.npu_smi, NPU_SMI_FALLBACK_PATHS)
    if npu_smi is None:
        warn('npu-smi was found neither in PATH nor as %s: no NPU metrics (is the Ascend driver installed?)'
             % ' or '.join(NPU_SMI_FALLBACK_PATHS))
        return None
    try:
        info = read_npu_smi_info(lambda args: run([npu_smi] + args, options.timeout), warn)
    except NpuSmiFailure as error:
        warn(error.msg)
        return None
    if not info['complete']:
        return None  # read_npu_smi_info warned why; a cut table must not pass for a smaller host
    return info


def read_service(options, run, warn):
    """(``systemctl show`` of the unit as a dict, {} when it failed; the resident bytes of its processes or None)."""
    result = run(_systemd.show_argv(options.systemctl, [options.unit], SHOW_PROPERTIES), options.timeout)
    if result.rc != 0:
        warn(failure(result))
        return {}, None
    show = _systemd.parse_show_one(result.stdout)
    pid = show.get('MainPID')
    resident = ProcReader(options.proc).tree_rss_bytes(pid) if isinstance(pid, int) and pid > 0 else None
    return show, resident


def state_problem(data):
    """Why the parsed journal state ``data`` cannot be used, beyond what _npu_metrics.load_state checks (its version,
    unit and counts), None when it can: the cursor None or a journal cursor (text, one line), the start time and the
    line count whole numbers of 0 or more. A cursor of another type would end every run in a traceback before the
    metrics are written, and the same state would stay for the next run."""
    if not isinstance(data, dict):
        return None  # load_state says what it is
    cursor = data.get('cursor')
    if cursor is not None and (not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR_CHARS
                               or any(ord(char) < 32 or ord(char) == 127 for char in cursor)):
        return 'its cursor %s is not a journal cursor' % _shown(cursor)
    for key in ('since', 'lines'):
        value = data.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2 ** 63):
            return 'its %s %s is not a whole number of 0 or more' % (key, _shown(value))
    return None


def _shown(value):
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:80] + '...'


def read_state(path, unit, now, warn):
    """The journal state of the last run, read as the collection reads any file it is given (_files: a regular file
    only, never a FIFO or a device, at most MAX_STATE_BYTES, JSON without NaN or deep nesting); the state of a first
    run (counting from ``now``) when there is none, and also, with a warning, when it cannot be read or used: the
    metrics are still written, and the next run goes on from the state this one writes."""
    entries = _failure_catalogue.ENTRIES
    data = None
    try:
        raw = read_regular_file(path, MAX_STATE_BYTES, 'a journal state')
        data = None if raw is None else _json.loads(raw)
    except UnreadableFile as error:
        problem = error.reason
    except _json.JsonError as error:
        problem = 'not JSON: %s' % error
    else:
        # A file holding null is no missing file: it says so like any other unusable state.
        problem = 'it holds null' if raw is not None and data is None else state_problem(data)
    if problem:
        warn('journal state %s cannot be used (%s); the counters start again from now' % (path, problem))
        data = None
    return _npu_metrics.load_state(data, unit, now, entries, warn)


def read_journal(options, state, run, now, warn):
    """The journal state after reading the unit's new lines."""
    result = run(_systemd.journal_argv(options.journalctl, options.unit, state['since'], state.get('cursor'),
                                       options.max_journal_lines), options.timeout)
    if _systemd.journal_is_empty(result.rc, result.stdout, result.stderr):
        # No line since the start time yet (journalctl --quiet exits 1 then): nothing to count, nothing wrong.
        return state
    if result.rc != 0:
        return _npu_metrics.journal_failed(state, now, failure(result), warn)
    lines, cursor = _systemd.split_journal_cursor(result.stdout)
    return _npu_metrics.count_journal(state, lines, cursor, _failure_catalogue.scan, options.max_journal_lines,
                                      now, warn)


def write_atomically(path, text):
    """``text`` to ``path`` (mode 0644) through a temporary file in its directory, renamed over it."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), suffix='.tmp', dir=directory)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def collect(options, run, now, warn):
    """One run's metrics text and journal state."""
    info = read_npu(options, run, warn)
    show, resident = read_service(options, run, warn)
    state = read_journal(options, read_state(options.state, options.unit, now, warn), run, now, warn)
    entries = [(entry['id'], entry) for entry in _failure_catalogue.CATALOGUE]
    families = (_npu_metrics.npu_families(info, warn) + _npu_metrics.service_families(options.unit, show, resident)
                + _npu_metrics.journal_families(options.unit, state, entries))
    return families, info is not None, state


def parse_args(argv):
    parser = argparse.ArgumentParser(description='Write the NPU and vLLM service metrics of this node for the node '
                                                 "exporter's textfile collector.")
    parser.add_argument('--output', required=True, help='the .prom file to write (in the textfile directory)')
    parser.add_argument('--state', required=True, help='the JSON file that keeps the journal counters between runs')
    parser.add_argument('--unit', required=True, help='the vLLM service unit, e.g. vllm.service')
    parser.add_argument('--npu-smi', default=None, help='npu-smi (default: PATH, then /usr/local/bin, /usr/local/sbin)')
    parser.add_argument('--systemctl', default='systemctl')
    parser.add_argument('--journalctl', default='journalctl')
    parser.add_argument('--proc', default=PROC)
    parser.add_argument('--timeout', type=float, default=30.0, help='seconds each command may take')
    parser.add_argument('--max-journal-lines', type=int, default=5000, help='journal lines read per run at most')
    options = parser.parse_args(argv)
    try:
        options.unit = _systemd.service_unit(options.unit)
    except ValueError as error:
        parser.error(str(error))
    # NaN passes every comparison and reaches subprocess's time limit; _numbers refuses it, infinity and overflow.
    problems = [problem for problem in (
        number_problem('--timeout', options.timeout, above=0, maximum=MAX_SECONDS),
        number_problem('--max-journal-lines', options.max_journal_lines, minimum=1, maximum=MAX_JOURNAL_LINES,
                       integer=True)) if problem]
    if problems:
        parser.error('; '.join(problems))
    return options


def main(argv=None, run=run_command, clock=time.time, stderr=None):
    """One run; 0 when the metrics were written (whatever they say), 1 when a file could not be written."""
    options = parse_args(sys.argv[1:] if argv is None else argv)
    stderr = stderr or sys.stderr
    warnings = WarningCap()
    families, npu_up, state = collect(options, run, clock(), warnings)
    count = len(warnings.messages) + warnings.dropped
    warnings.emit(lambda message: stderr.write('warning: %s\n' % message))
    text = _npu_metrics.render(families + _npu_metrics.exporter_families(npu_up, count))
    rc = 0
    # The state first, so that the counts written are never ahead of it; a state that cannot be written (its path a
    # directory, say) costs the next run's counts, never this run's metrics.
    for path, content in ((options.state, json.dumps(state, sort_keys=True) + '\n'), (options.output, text)):
        try:
            write_atomically(path, content)
        except OSError as error:
            stderr.write('error: cannot write %s: %s\n' % (path, error))
            rc = 1
    return rc
