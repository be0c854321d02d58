# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The scenarios' Mitogen strategy (molecule/shared/plugins/strategy/mitogen_linear.py) pins no process to a CPU:
Mitogen's own policy held every scenario node to one CPU of two."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

STRATEGY = Path(__file__).resolve().parents[3] / 'molecule' / 'shared' / 'plugins' / 'strategy' / 'mitogen_linear.py'

LOAD_AND_START = '''
import importlib.util, os, subprocess, sys
import ansible_mitogen.affinity
if sys.argv[1] == 'shim':
    spec = importlib.util.spec_from_file_location('kav_mitogen_linear', sys.argv[2])
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
policy = ansible_mitogen.affinity.policy
policy.assign_controller()
policy.assign_worker()
child = subprocess.run(['grep', 'Cpus_allowed_list', '/proc/self/status'], capture_output=True, text=True, check=True)
print(sorted(os.sched_getaffinity(0)), child.stdout.split()[-1], sep='|')
'''


def affinity_after(kind):
    """The CPUs of a process that took Mitogen's controller and worker policy, and of a command it ran."""
    proc = subprocess.run([sys.executable, '-c', LOAD_AND_START, kind, str(STRATEGY)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split('|')


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason='needs a process allowed on 2 CPUs or more')
def test_the_strategy_pins_no_process_where_mitogen_would():
    every_cpu = sorted(os.sched_getaffinity(0))
    # Mitogen's own policy (the reason for the shim): the worker held to one CPU.
    mine, child = affinity_after('mitogen')
    assert mine != str(every_cpu) and len(mine.split(',')) == 1, (mine, child)
    # The scenarios' strategy: every CPU the test had, for the worker and the command it ran.
    mine, child = affinity_after('shim')
    assert mine == str(every_cpu)
    assert child == ','.join(str(cpu) for cpu in every_cpu) or child == '%d-%d' % (every_cpu[0], every_cpu[-1])


def test_the_strategy_module_is_mitogens_linear_strategy():
    spec = importlib.util.spec_from_file_location('kav_mitogen_linear_check', str(STRATEGY))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # pylint: disable-next=import-outside-toplevel
    from ansible_mitogen.plugins.strategy.mitogen_linear import StrategyModule
    assert module.StrategyModule is StrategyModule
