#!/usr/bin/env python
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: parse time of a 16-chip A3 npu-smi table with processes, and npu-smi calls per module.

npu-smi takes seconds on real hosts, so the collection calls it as few times as possible; this script counts the
calls each module makes against the simulated npu-smi (its call log) and times the parser. It prints numbers and
asserts nothing: run it with `make bench` (the venv and ANSIBLE_COLLECTIONS_PATH set up by the Makefile).
"""

from __future__ import annotations

import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIMULATOR = os.path.join(REPO, 'tests', 'simulator', 'ascend-sim')
PARSE_ROUNDS = 200

# module, its arguments (besides the paths that point it at the simulated host), and what the run shows
GATHERINGS = (
    ('ascend_facts', {}, 'driver/firmware/CANN facts from files'),
    ('npu_smi_info', {}, 'the NPU table'),
    ('npu_smi_info', {'details': ['board']}, 'the NPU table plus board details'),
    ('ascend_preflight', {'fail_on': 'never'}, 'every pre-install check'),
)


def simulated_host(workdir):
    """Environment for a simulated A3 node (16 chips, a process on each) under workdir."""
    root = os.path.join(workdir, 'root')
    os.makedirs(os.path.join(root, 'usr/local/Ascend/driver'))
    with open(os.path.join(root, 'usr/local/Ascend/driver/version.info'), 'w', encoding='utf-8') as version_file:
        version_file.write('Version=24.1.rc3\n')
    bindir = os.path.join(workdir, 'bin')
    os.makedirs(bindir)
    os.symlink(SIMULATOR, os.path.join(bindir, 'npu-smi'))
    env = dict(os.environ, ASCEND_SIM_ROOT=root, ASCEND_SIM_STATE=os.path.join(workdir, 'state.json'),
               ASCEND_SIM_LOG=os.path.join(workdir, 'calls.log'), PATH=bindir + os.pathsep + os.environ['PATH'])
    for command in (['init', '--profile', 'a3-16'], ['preset', 'busy']):
        subprocess.run([SIMULATOR] + command, env=env, check=True, stdout=subprocess.DEVNULL)
    return env, root


def npu_smi_calls(env):
    out = subprocess.run([SIMULATOR, 'calls', '--tool', 'npu-smi', '--count'], env=env, check=True,
                         capture_output=True, text=True).stdout
    return int(out.strip())


def time_parser(env):
    # The collection is importable through the link the Makefile keeps in .cache/.
    sys.path.insert(0, os.path.join(REPO, '.cache'))
    parser = importlib.import_module('ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi')
    text = subprocess.run(['npu-smi', 'info'], env=env, check=True, capture_output=True, text=True).stdout
    durations = []
    for _round in range(PARSE_ROUNDS):
        start = time.perf_counter()
        parsed = parser.parse_npu_smi_info(text)
        durations.append(time.perf_counter() - start)
    return parsed, len(text.splitlines()), durations


def run_module(env, root, module, args):
    args = dict(args)
    if module in ('ascend_facts', 'ascend_preflight'):
        args.update(root=root)
    before = npu_smi_calls(env)
    start = time.perf_counter()
    argv = ['ansible', 'localhost', '-c', 'local', '-e', 'ansible_python_interpreter=' + sys.executable,
            '-m', 'kunpeng_ascend.vllm.' + module]
    if args:
        argv += ['-a', json.dumps(args)]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    return npu_smi_calls(env) - before, seconds, result.returncode == 0, result.stdout + result.stderr


def main():
    with tempfile.TemporaryDirectory() as workdir:
        env, root = simulated_host(workdir)
        parsed, lines, durations = time_parser(env)
        print('npu-smi info table: A3, %d lines, %d chips, %d processes'
              % (lines, parsed['chip_count'], len(parsed['processes'])))
        print('parse time over %d rounds: median %.3f ms, min %.3f ms, max %.3f ms'
              % (PARSE_ROUNDS, statistics.median(durations) * 1e3, min(durations) * 1e3, max(durations) * 1e3))
        print()
        print('%-18s %-30s %14s %10s' % ('module', 'arguments', 'npu-smi calls', 'seconds'))
        calls_by_module = {}
        for module, args, what in GATHERINGS:
            calls, seconds, ok, output = run_module(env, root, module, args)
            if not ok:
                print('%s failed:\n%s' % (module, output), file=sys.stderr)
                return 1
            calls_by_module.setdefault(module, calls)
            print('%-18s %-30s %14d %10.2f   (%s)' % (module, json.dumps(args), calls, seconds, what))
        print()
        print('a full gathering (ascend_facts + npu_smi_info + ascend_preflight): %d npu-smi calls'
              % sum(calls_by_module.values()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
