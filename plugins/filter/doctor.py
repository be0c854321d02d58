# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor_input_problems filter (documented in doctor_input_problems.yml)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._doctor import check_inputs


def doctor_input_problems(inputs, prefix='doctor_'):
    """The problems of the doctor role's inputs ``inputs`` (its variables without the prefix), each naming the
    variable with ``prefix``."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('doctor_input_problems: the input must be a dict of the doctor variables, not %s'
                                 % type(inputs).__name__)
    return check_inputs(inputs, prefix)


class FilterModule(object):
    def filters(self):
        return {'doctor_input_problems': doctor_input_problems}
