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
    for a skip, one round trip per role and node. With ``supported`` false it fails with ``fail_msg`` instead."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('supported', 'fail_msg'))
    _ARGUMENT_SPEC = {
        'supported': {'type': 'bool', 'default': True},
        'fail_msg': {'type': 'str', 'default': 'the role does not support this host'},
    }

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        # The roles' shared start refuses an OS it has no variables for here, in the same task as the probe: a task
        # fewer per role run, each of which costs the controller a fork per host.
        dummy, args = self.validate_argument_spec(argument_spec=self._ARGUMENT_SPEC)
        if not args['supported']:
            result.update(failed=True, changed=False, msg=args['fail_msg'])
            return result
        # The play context of this task: --check and --diff, overridden by the task's own (inherited) keywords.
        result.update(changed=False, check_mode=bool(self._play_context.check_mode), diff_mode=bool(self._play_context.diff))
        return result
