# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The run_mode action: whether this task runs in check mode and diff mode, decided on the controller."""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    """Says whether the task runs in check mode (``--check``, or ``check_mode: true`` on it, its block, role or
    include) and in diff mode, without a connection to the host: the roles used to run ``true`` on the host and look
    for a skip, one round trip per role and node."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset()

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        # The play context of this task: --check and --diff, overridden by the task's own (inherited) keywords.
        result.update(changed=False, check_mode=bool(self._play_context.check_mode), diff_mode=bool(self._play_context.diff))
        return result
