# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Module vllm_soak's run, the one call its main() makes (``run``): the options checked before anything runs
(``option_problems``), the load (``load``: rate x duration requests at the rate), the service sampled while it runs
(``ServiceSampler``: its processes' resident memory, the unit's restarts, its journal against the failure
catalogue) beside the NPUs, and the run judged (``summarize``). The decisions (inputs, fits, verdict) are those of
operations/_soak.py; what runs the load generator is operations/_load_generator.py.
"""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _proc, _systemd
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import KILL_AFTER_SECONDS, CommandRunner
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _soak
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import (
    BenchmarkError,
    sample_until_done,
    scalar_fields,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._load_generator import (
    RESULT_FILE,
    LoadGenerator,
    NpuSampler,
    bench_argv,
    find_npu_smi,
    read_bench_result,
    remove_old_result,
    result_path_problems,
)

UNIT_PROPERTIES = ('MainPID', 'NRestarts')


class ServiceSampler:
    """Each call reads the service once: its processes' resident memory, the unit's restarts and the journal's new
    lines (tallied against the failure catalogue); a reading that fails is null in its sample and warned about.

    ``which(name)``: the path of a tool or None (module.get_bin_path); ``runner``: a CommandRunner; ``processes``:
    a _proc.ProcReader (or one that scripts it); ``params``: vllm_soak's options (unit, mode, engine,
    container_name); ``since_epoch``: the run's start, from which the journal is read."""

    def __init__(self, which, runner, processes, params, since_epoch, warnings):
        self.runner = runner
        self.processes = processes
        self.params = params
        self.warnings = warnings
        self.cursor = None
        self.since = since_epoch
        self.journal = _soak.JournalTally()
        self.journal_error = None
        self.samples = []
        self.systemctl = which('systemctl')
        self.journalctl = which('journalctl')
        self.engine = which(params['engine']) if params['mode'] == 'container' else None
        for name, found in (('systemctl', self.systemctl), ('journalctl', self.journalctl)):
            if not found:
                warnings('%s was not found: the unit\'s %s are not sampled'
                         % (name, 'restarts and main process' if name == 'systemctl' else 'journal'))
        if params['mode'] == 'container' and not self.engine:
            warnings('%s (engine) was not found: the container\'s memory is not sampled' % params['engine'])
        if not self.journalctl:
            self.journal_error = 'journalctl was not found'

    def _unit(self):
        if not self.systemctl:
            return {}
        result = self.runner.run(_systemd.show_argv(self.systemctl, [self.params['unit']], UNIT_PROPERTIES))
        if result.rc != 0:
            output = (result.stderr or result.stdout).strip()
            self.warnings('systemctl show %s failed (rc %s): %s' % (self.params['unit'], result.rc, output))
            return {}
        return _systemd.parse_show_one(result.stdout)

    def _root_pid(self, unit):
        if self.params['mode'] == 'native':
            return unit.get('MainPID') or None
        if not self.engine:
            return None
        result = self.runner.run(_proc.container_pid_argv(self.engine, self.params['container_name']))
        return _proc.parse_container_pid(result.stdout) if result.rc == 0 else None

    def _read_journal(self):
        if self.journal_error:
            return
        result = self.runner.run(_systemd.journal_argv(self.journalctl, self.params['unit'], self.since, self.cursor))
        if _systemd.journal_is_empty(result.rc, result.stdout, result.stderr):
            return
        if result.rc != 0:
            self.journal_error = 'journalctl failed (rc %s): %s' % (result.rc, (result.stderr or result.stdout).strip())
            self.warnings('the journal is no longer read: %s' % self.journal_error)
            return
        lines, cursor = _systemd.split_journal_cursor(result.stdout)
        self.journal.add(lines)
        self.cursor = cursor or self.cursor

    def __call__(self, moment):
        unit = self._unit()
        root = self._root_pid(unit)
        rss = self.processes.tree_rss_bytes(root) if root else None
        self._read_journal()
        self.samples.append({'t': round(moment, 3), 'rss_mib': None if rss is None else round(rss / _soak.MIB, 3),
                             'main_pid': root, 'restarts': unit.get('NRestarts'),
                             'known_failures': None if self.journal_error else self.journal.failures()})

    def journal_result(self):
        """The journal's matches (JournalTally.result()), or None when it could not be read."""
        return None if self.journal_error else self.journal.result()


def option_problems(params, check_mode):
    """Every problem of vllm_soak's options ``params`` at once, each naming its option, before anything runs (the
    numbers by _soak.input_problems, the rule the role's validation applies too); work_dir and the result file's
    place in it are checked unless in ``check_mode``, which writes none. [] when none."""
    problems = _soak.input_problems(params)
    if not params['command']:
        problems.append('command must name vLLM\'s CLI, such as [/opt/vllm/venv/bin/vllm]')
    problem = _systemd.unit_name_problem(params['unit'], 'unit')
    if problem:
        problems.append(problem)
    if params['mode'] == 'container' and not (params['engine'] and params['container_name']):
        problems.append('container mode needs engine and container_name')
    if not check_mode:
        if not params['work_dir']:
            problems.append('work_dir is required to run the load')
        else:
            problems.extend(result_path_problems(params['work_dir'], [RESULT_FILE]))
    return problems


def load(params):
    """(num_prompts, argv, work_dir) of the soak's load generator: rate x duration requests (_soak.prompts) at the
    rate, its result file in work_dir (``.`` when none is given, in check mode, which runs nothing)."""
    num_prompts = _soak.prompts(params['rate'], params['duration'])
    work_dir = params['work_dir'] or '.'
    argv = bench_argv(dict(params, num_prompts=num_prompts, request_rate='%g' % params['rate']), work_dir)
    return num_prompts, argv, work_dir


def summarize(params, num_prompts, raw, metrics, samples, npu_samples, journal, warn):
    """The soak's verdict and what it rests on (RETURN's ``soak`` but argv, the end and the warnings): the load
    generator's result ``raw`` and ``metrics`` (read_bench_result's) of ``num_prompts`` requests, the service's
    ``samples`` (ServiceSampler's), the ``npu_samples`` and the ``journal`` (None when it could not be read),
    judged by _soak.verdict against the thresholds of ``params``; failed requests warned about to ``warn``.

    :raises BenchmarkError: when every request failed, naming what to check.
    """
    if not metrics['completed']:
        raise BenchmarkError('every one of the %d requests failed against %s: check that input_len + output_len fits '
                             'the server\'s max_model_len, that the model is served as %s, and the key'
                             % (num_prompts, params['base_url'], params['model']))
    if metrics['failed']:
        warn('%d of %d requests failed: see the server\'s log'
             % (metrics['failed'], metrics['failed'] + metrics['completed']))
    judged = _soak.verdict(samples, npu_samples, journal, params['duration'], params['warmup'], params)
    return dict(judged, schema=_soak.SOAK_SCHEMA, num_prompts=num_prompts, samples=samples, npu_samples=npu_samples,
                journal=journal, metrics=metrics, vllm_bench=scalar_fields(raw),
                settings=dict((key, params[key]) for key in _soak.OPTIONS))


def run(module, clock, sleep, wall, processes=None):
    """vllm_soak's run with ``module``'s options: fails the module when an option is wrong (before anything runs),
    the load cannot run or its result cannot be read, or every request failed; else returns RETURN's ``soak`` (in
    check mode only the argv and the number of requests, nothing run), its warnings passed to module.warn.
    ``clock`` and ``sleep`` time the sampling, ``wall`` dates the journal's start and ``processes`` (a
    _proc.ProcReader; None for this host's /proc) reads the service's memory."""
    params = module.params
    processes = processes or _proc.ProcReader()
    problems = option_problems(params, module.check_mode)
    if problems:
        module.fail_json(msg='; '.join(problems))
    num_prompts, argv, work_dir = load(params)
    if module.check_mode:
        return dict(argv=argv, num_prompts=num_prompts)
    warnings = WarningCap()
    npu_smi = find_npu_smi(module, params['sample_npus'], params['npu_smi_path'])
    # Each reading must answer within the interval's order of magnitude, or the sampling would stall.
    runner = CommandRunner(module, max(10, int(params['interval'] * 2)))
    timeout = _soak.load_timeout(params)
    try:
        remove_old_result(work_dir)
    except ValueError as error:
        module.fail_json(msg=str(error))
    service = ServiceSampler(module.get_bin_path, runner, processes, params, wall(), warnings)
    npus = NpuSampler(runner, npu_smi, params['npu_ids'], warnings)
    generator = LoadGenerator(module, argv, params['api_key'], timeout, clock, params['ca_path'])
    generator.start()
    sample_until_done(generator.poll, [service] + ([npus] if npu_smi else []), params['interval'],
                      generator.started + timeout + KILL_AFTER_SECONDS + 30, clock, sleep)
    result, ended = generator.wait()
    raw, metrics = read_bench_result(
        module, result, work_dir, params['base_url'], warnings,
        'the load generator ran longer than timeout (%d s) and was killed; raise timeout' % timeout)
    try:
        soak = summarize(params, num_prompts, raw, metrics, service.samples, npus.samples, service.journal_result(),
                         warnings)
    except BenchmarkError as error:
        module.fail_json(msg=error.msg)
    soak.update(argv=argv, ended_s=round(ended, 3), warnings=list(warnings.messages))
    warnings.emit(module.warn)
    return soak
