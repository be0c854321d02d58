# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor_input_problems and restart_storm filters (documented in doctor_input_problems.yml, restart_storm.yml)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._doctor import check_inputs, check_restart_storm
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import parse_show_one


def doctor_input_problems(inputs, prefix='doctor_'):
    """The problems of the doctor role's inputs ``inputs`` (its variables without the prefix), each naming the
    variable with ``prefix``."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('doctor_input_problems: the input must be a dict of the doctor variables, not %s'
                                 % type(inputs).__name__)
    return check_inputs(inputs, prefix)


def restart_storm(show, unit, journal=''):
    """The doctor's restart_storm finding of ``unit`` from the text of ``systemctl show`` (``show``) and of its
    journal (``journal``, ``-o cat``; its last failure lines are quoted)."""
    if not isinstance(show, str) or not isinstance(unit, str) or not isinstance(journal, str):
        raise AnsibleFilterError('restart_storm: the systemctl show output, the unit and the journal must be strings')
    return check_restart_storm(unit, parse_show_one(show), journal.splitlines())


class FilterModule(object):
    def filters(self):
        return {'doctor_input_problems': doctor_input_problems, 'restart_storm': restart_storm}
