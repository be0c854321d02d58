#!/usr/bin/env python
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: playbooks/plan.yml on 1, 10 and 100 simulated nodes - its wall time and CPU seconds (the goal: under 1
CPU second per node on the controller).

Every node is this machine through the local connection (tests/unit/playbooks/fleet_sim.py: a simulated node's sysfs,
model directory, npu-smi and a stand-in systemctl in a scratch folder), so the modules run here too: the CPU
seconds are split into the controller's own (ansible-playbook and its worker processes) and the modules' (each run
through an interpreter wrapper that records its CPU time; on a real fleet they run on the nodes). Each node is a
single node serving vLLM's CPU build in native mode, its plan complete: the input checks of os_tuning, npu_driver,
cann and role vllm_service's plan entry point (facts, the serving plan, the host checks), the reads of what would
change, then the fleet plan written on the controller. It prints numbers and asserts nothing (the exit status is
non-zero only when a run fails): run it with `make bench-plan`.

Usage: plan_fleet.py [COUNT ...]   (default 1 10 100)
Environment: PLAN_BENCH_FORKS, the forks of each run (default: the node count, at most 100).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tests', 'unit', 'playbooks'))

import fleet_sim  # noqa: E402  pylint: disable=wrong-import-position

# The modules' interpreter: Python run as a child, the CPU time of both (user + system, with their children) appended to
# a log, one line per module run: the AnsiballZ file's name and the seconds.
WRAPPER = """#!%(python)s
import os, resource, subprocess, sys
code = subprocess.call([%(python)r] + sys.argv[1:])
used = sum(usage.ru_utime + usage.ru_stime for usage in (resource.getrusage(resource.RUSAGE_SELF),
                                                         resource.getrusage(resource.RUSAGE_CHILDREN)))
name = os.path.basename(sys.argv[-1]) if len(sys.argv) > 1 else '-'
with open(%(log)r, 'a') as log:
    log.write('%%s %%.6f\\n' %% (name, used))
sys.exit(code)
"""
# The module that runs on the controller (delegate_to: localhost), whose CPU time is the controller's.
CONTROLLER_MODULES = ('AnsiballZ_fleet_plan.py',)


def bench(count, workdir):
    root = os.path.join(workdir, 'fleet-%d' % count)
    os.makedirs(root)
    log = os.path.join(root, 'modules-cpu.log')
    wrapper = os.path.join(root, 'python-wrapper')
    with open(wrapper, 'w', encoding='utf-8') as handle:
        handle.write(WRAPPER % {'python': sys.executable, 'log': log})
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
    hosts = dict(('node%03d' % index, {}) for index in range(count))
    inventory, env = fleet_sim.make_fleet(root, hosts, group_vars={'ansible_python_interpreter': wrapper})
    forks = int(os.environ.get('PLAN_BENCH_FORKS') or min(count, 100))
    run, wall, cpu = fleet_sim.run_plan(root, inventory, env, '-e', 'plan_output_dir=%s' % os.path.join(root, 'out'),
                                        forks=forks)
    if run.returncode != 0:
        sys.stderr.write(run.stdout[-4000:] + run.stderr[-4000:])
        raise SystemExit('plan.yml failed on %d nodes (exit %d)' % (count, run.returncode))
    with open(os.path.join(root, 'out', 'fleet-plan.json'), encoding='utf-8') as handle:
        planned = json.load(handle)['verdict']['planned']
    with open(log, encoding='utf-8') as handle:
        module_runs = [line.split() for line in handle if line.strip()]
    modules = sum(float(used) for name, used in module_runs if name not in CONTROLLER_MODULES)
    return {'nodes': count, 'forks': forks, 'planned': planned, 'wall': wall, 'cpu': cpu, 'modules': modules,
            'module_runs': len(module_runs), 'controller': cpu - modules}


def main(argv):
    counts = [int(arg) for arg in argv] or [1, 10, 100]
    workdir = tempfile.mkdtemp(prefix='plan-bench-')
    try:
        results = [bench(count, workdir) for count in counts]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print('playbooks/plan.yml on simulated nodes (local connection; %d CPUs here, load %s)'
          % (os.cpu_count(), ' '.join(open('/proc/loadavg').read().split()[:3])))
    print('%6s %6s %8s %9s %12s %11s %15s %14s %12s' % ('nodes', 'forks', 'planned', 'wall s', 'controller s',
                                                        'modules s', 'controller/node', 'modules/node', 'module runs'))
    for result in results:
        print('%6d %6d %8d %9.1f %12.1f %11.1f %15.2f %14.2f %12d' % (
            result['nodes'], result['forks'], result['planned'], result['wall'], result['controller'],
            result['modules'], result['controller'] / result['nodes'], result['modules'] / result['nodes'],
            result['module_runs']))
    print('controller: ansible-playbook and its workers (the goal: under 1 CPU s per node); modules: the module runs, '
          'which on a real fleet run on the nodes')


if __name__ == '__main__':
    main(sys.argv[1:])
