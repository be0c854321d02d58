# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Mitogen's linear strategy, from the mitogen package that requirements.txt pins.

Mitogen's documentation points strategy_plugins at the installed package's folder; this file does the same from a
path that does not depend on the venv's Python version, so that a scenario can name it in its environment.
"""

from __future__ import annotations

from ansible_mitogen.plugins.strategy.mitogen_linear import StrategyModule

__all__ = ["StrategyModule"]
