# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

``vllm bench serve`` run by a module while it samples the host: its command line, the run in a thread of its own
through the module's command runner (so that the calling thread samples beside it), its result file read and
checked, the NPU sampler and the reader of the load generator's CPU. The benchmark (vllm_benchmark) and the soak
run (vllm_soak) share them.
"""

from __future__ import annotations

import os
import stat
import threading

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import FILE_TYPES, UnreadableFile, read_regular_file
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import (
    PERCENTILES,
    BenchmarkError,
    metrics_from_vllm_bench,
    npu_sample_rows,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner, failure_data, locate_executable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import (
    NPU_SMI_FALLBACK_PATHS,
    NpuSmiFailure,
    read_npu_smi_info,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._proc import ProcReader

# vllm bench's result is a small JSON document (its per-request lists included: some MB at most).
RESULT_MAX_BYTES = 256 * 1024 * 1024
RESULT_FILE = 'vllm-bench-result.json'
OUTPUT_TAIL_CHARS = 4000
THREAD_NAME = 'vllm-bench-serve'


def argument_spec():
    """The options of the modules that run vllm bench serve and sample the NPUs (doc fragment load_generator)."""
    return dict(
        command=dict(type='list', elements='str', required=True),
        base_url=dict(type='str', required=True),
        endpoint=dict(type='str', default='/v1/completions'),
        backend=dict(type='str', default='openai', choices=['openai', 'openai-chat', 'vllm']),
        model=dict(type='str', required=True),
        # A model directory, not a token.
        tokenizer=dict(type='str', required=True, no_log=False),
        api_key=dict(type='str', no_log=True),
        ca_path=dict(type='path'),
        input_len=dict(type='int', default=128),
        output_len=dict(type='int', default=128),
        seed=dict(type='int', default=0),
        extra_args=dict(type='list', elements='str', default=[]),
        sample_npus=dict(type='str', default='auto', choices=['auto', 'always', 'never']),
        npu_ids=dict(type='list', elements='int', default=[]),
        npu_smi_path=dict(type='path'),
    )


def bench_argv(params, work_dir, result_file=RESULT_FILE, extra=()):
    """``vllm bench serve``'s argv from the module's ``params`` (command, backend, base_url, endpoint, model,
    tokenizer, input_len, output_len, num_prompts, max_concurrency, request_rate, seed, extra_args), its result
    written to ``result_file`` in ``work_dir``, with the arguments ``extra`` before extra_args."""
    argv = list(params['command']) + [
        'bench', 'serve', '--backend', params['backend'], '--base-url', params['base_url'],
        '--endpoint', params['endpoint'], '--model', params['model'], '--served-model-name', params['model'],
        '--tokenizer', params['tokenizer'], '--dataset-name', 'random',
        '--random-input-len', str(params['input_len']), '--random-output-len', str(params['output_len']),
        '--num-prompts', str(params['num_prompts']), '--max-concurrency', str(params['max_concurrency']),
        '--request-rate', str(params['request_rate']), '--seed', str(params['seed']), '--ignore-eos',
        '--percentile-metrics', 'ttft,tpot,itl,e2el', '--metric-percentiles', ','.join(PERCENTILES),
        '--save-result', '--result-dir', work_dir, '--result-filename', result_file, '--disable-tqdm']
    return argv + list(extra) + list(params['extra_args'])


def output_tail(result):
    """The failure data of the load generator's CommandResult, its output cut to its end."""
    data = failure_data(result)
    data['stdout'] = data['stdout'][-OUTPUT_TAIL_CHARS:]
    data['stderr'] = data['stderr'][-OUTPUT_TAIL_CHARS:]
    return data


class ProcessReader:
    """The load generator's CPU time as ``proc`` (/proc, read by _proc.ProcReader) shows it, for the CPU sampler;
    main() takes another reader (the tests give it scripted readings). ``pid``: the process whose child runs the
    load generator (this one); ``ticks``: clock ticks per second of /proc's CPU times."""

    def __init__(self, proc='/proc', pid=None, ticks=None):
        self.reader = ProcReader(proc)
        self.pid = os.getpid() if pid is None else pid
        self.ticks = ticks or os.sysconf('SC_CLK_TCK')

    def table(self):
        """``{pid: (ppid, cpu seconds)}`` of every process /proc shows (CPU: user + system, with reaped children)."""
        return dict((pid, (entry['ppid'], entry['cpu_ticks'] / self.ticks)) for pid, entry in self.reader.table().items())

    def find_child(self, argv):
        """The PID of ``pid``'s child running ``argv`` (behind the runner's time limit), or None."""
        for pid, entry in self.reader.table().items():
            if entry['ppid'] == self.pid and self.reader.cmdline(pid)[-len(argv):] == argv:
                return pid
        return None

    def tree_cpu_seconds(self, root):
        """CPU seconds of process ``root`` and every process below it; None once it is gone."""
        table = self.reader.table()
        pids = self.reader.descendants(root, table)
        if not pids:
            return None
        return sum(table[pid]['cpu_ticks'] for pid in pids) / self.ticks


class LoadGenerator:
    """``argv`` (vllm bench serve) run once through ``module``'s command runner in a thread, under ``timeout``
    seconds; the key goes in its environment only (vllm bench serve sends OPENAI_API_KEY as the bearer token, and
    an empty one replaces any the module's own environment has), and so does ``ca_path``, the CA an https server's
    certificate is verified against (SSL_CERT_FILE, which Python's ssl and so vllm bench serve's aiohttp read)."""

    def __init__(self, module, argv, api_key, timeout, clock, ca_path=None):
        self.argv = argv
        self.clock = clock
        self.runner = CommandRunner(module, timeout)
        self.environ = {'PYTHONUNBUFFERED': '1', 'OPENAI_API_KEY': api_key or ''}
        if ca_path:
            self.environ['SSL_CERT_FILE'] = ca_path
        self.outcome = {}
        self.started = None
        self.thread = threading.Thread(target=self._run, name=THREAD_NAME)
        self.thread.daemon = True

    def _run(self):
        self.outcome['result'] = self.runner.run(self.argv, environ_update=self.environ)
        self.outcome['moment'] = self.clock() - self.started

    def start(self):
        self.started = self.clock()
        self.thread.start()

    def poll(self):
        """None while it runs, 0 once it ended (for _benchmark.sample_until_done)."""
        return None if self.thread.is_alive() else 0

    def wait(self):
        """(CommandResult, seconds from the start to its end)."""
        self.thread.join()
        return self.outcome['result'], self.outcome['moment']


def read_bench_result(module, result, work_dir, base_url, warn, killed_msg, result_file=RESULT_FILE):
    """(raw result, metrics) of the run that ``result`` (its CommandResult) ended; fails the module, with the load
    generator's output, when it was killed (``killed_msg``: which limit to raise), failed, or left no readable
    result."""
    if result.timed_out:
        module.fail_json(msg=killed_msg, **output_tail(result))
    if result.rc != 0:
        module.fail_json(msg='vllm bench serve failed with exit code %d against %s (see stdout and stderr)'
                             % (result.rc, base_url), **output_tail(result))
    result_path = os.path.join(work_dir, result_file)
    try:
        data = read_regular_file(result_path, RESULT_MAX_BYTES, 'a vllm bench result')
        if data is None:
            raise ValueError('it was not written')
        raw = _json.loads(data)
        return raw, metrics_from_vllm_bench(raw, warn)
    except UnreadableFile as error:
        module.fail_json(msg='vllm bench serve exited 0 but its result %s' % error, **output_tail(result))
    except (OSError, ValueError, RecursionError) as error:
        module.fail_json(msg='vllm bench serve exited 0 but its result %s could not be read: %s' % (result_path, error),
                         **output_tail(result))
    except BenchmarkError as error:
        module.fail_json(msg='%s: %s' % (result_path, error.msg), **output_tail(result))


def result_path_problems(work_dir, result_files, option='work_dir'):
    """What stops the load generator from writing ``result_files`` in ``work_dir`` (the module's option ``option``),
    each naming the option, before any load runs: ``work_dir`` not a directory, or something other than a regular
    file or a symbolic link (which remove_old_result removes) where a result file goes - a directory, a FIFO, a
    device, a socket, which vllm bench serve cannot write and this module must not remove. [] when none."""
    try:
        mode = os.stat(work_dir).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return ['%s %s is not a directory (nothing is there): give an existing directory for the result file'
                % (option, work_dir)]
    except OSError as error:
        return ['%s %s cannot be used for the result file: %s' % (option, work_dir, error.strerror or error)]
    if not stat.S_ISDIR(mode):
        kind = 'a regular file' if stat.S_ISREG(mode) else next(
            (what for test, what in FILE_TYPES if test(mode)), 'a special file')
        return ['%s %s is not a directory (it is %s): give an existing directory for the result file'
                % (option, work_dir, kind)]
    problems = []
    for name in result_files:
        path = os.path.join(work_dir, name)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError as error:
            problems.append('%s: %s cannot be checked: %s' % (option, path, error.strerror or error))
            continue
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            continue
        kind = next((what for test, what in FILE_TYPES if test(mode)), 'a special file')
        problems.append('%s %s holds %s named %s, where the load generator writes its result file: remove it or give '
                        'another %s' % (option, work_dir, kind, name, option))
    return problems


def remove_old_result(work_dir, result_file=RESULT_FILE):
    """The last run's result file removed, so that a run that writes none is not read as this one's.
    :raises ValueError: naming work_dir when something else than a file is there or it cannot be removed."""
    problems = result_path_problems(work_dir, [result_file])
    if problems:
        raise ValueError('; '.join(problems))
    path = os.path.join(work_dir, result_file)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as error:
        raise ValueError('work_dir: the last result file %s cannot be removed: %s' % (path, error.strerror or error))


def find_npu_smi(module, sample_npus, configured):
    """npu-smi's path for sampling (``sample_npus``: auto, always, never), None when it is not sampled; fails the
    module when ``always`` finds none."""
    if sample_npus == 'never':
        return None
    try:
        npu_smi = locate_executable(module, 'npu-smi', configured, 'npu_smi_path', NPU_SMI_FALLBACK_PATHS)
    except ValueError as error:
        module.fail_json(msg=str(error))
    if npu_smi is None and sample_npus == 'always':
        module.fail_json(msg='sample_npus is always but npu-smi was found neither in PATH nor as %s: set '
                             'npu_smi_path, or sample_npus: auto' % ' or '.join(NPU_SMI_FALLBACK_PATHS))
    return npu_smi


class NpuSampler:
    """Samples ``npu-smi info`` (through ``runner``) at each call into ``samples``; the first failure stops the
    sampling with a warning (the run itself goes on) and is kept in ``errors``."""

    def __init__(self, runner, npu_smi, npu_ids, warnings):
        self.runner = runner
        self.npu_smi = npu_smi
        self.npu_ids = npu_ids
        self.warnings = warnings
        self.samples = []
        self.errors = []

    def __call__(self, moment):
        if self.errors:
            return
        try:
            info = read_npu_smi_info(lambda args: self.runner.run([self.npu_smi] + args), self.warnings)
        except NpuSmiFailure as failure:
            self.errors.append(failure.msg)
            self.warnings('NPU sampling stopped: %s' % failure.msg)
            return
        self.samples.extend(npu_sample_rows(info, moment, self.npu_ids))
