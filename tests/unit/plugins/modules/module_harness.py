# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Run a module's main() in-process: exit_json and fail_json raise with the result instead of exiting."""

from __future__ import annotations

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


def exit_json(module, **result):
    raise ExitJson(result)


def fail_json(module, **result):
    raise FailJson(result)


def capture_results(monkeypatch):
    """Make AnsibleModule.exit_json / fail_json raise ExitJson / FailJson with the result."""
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)


def run_main(main, args, outcome=ExitJson):
    """Call ``main`` with module ``args``; return the result it exits with, which must be ``outcome``."""
    with patch_module_args(args):
        with pytest.raises(outcome) as raised:
            main()
    return raised.value.args[0]
