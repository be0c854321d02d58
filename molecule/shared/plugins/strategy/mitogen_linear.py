# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Mitogen's linear strategy, from the mitogen package that requirements.txt pins, without its CPU pinning.

Mitogen's documentation points strategy_plugins at the installed package's folder; this file does the same from a
path that does not depend on the venv's Python version, so that a scenario can name it in its environment.

Mitogen pins its processes to CPUs (ansible_mitogen.affinity): on a machine with 2 or 3 CPUs its multiplexer takes
CPU 0 and the top-level process, the workers and every process they start are held to the others. Molecule's
create starts the nodes (podman run) from a worker, so every node and all it runs (systemd, vLLM) inherited that
one CPU: on this project's 2-CPU machines the scenarios, their vLLM included, shared one CPU while the other idled.
The nodes are this machine's own processes, so the scheduler places them: the pinning is replaced by Mitogen's own
policy that pins nothing.
"""

from __future__ import annotations

import ansible_mitogen.affinity
from ansible_mitogen.plugins.strategy.mitogen_linear import StrategyModule

ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

__all__ = ["StrategyModule"]
