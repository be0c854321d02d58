# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: run_mode
short_description: Whether the task runs in check mode and diff mode, known on the controller
version_added: 0.4.0
description:
  - Returns whether this task runs in check mode - C(--check), or C(check_mode) set on the task, its block, its role
    or the include that runs it - and in diff mode. The roles of this collection read it once each, to plan what check
    mode can predict.
  - With O(supported=false) it fails with O(fail_msg) instead - the roles' shared start refuses an OS it has no
    variables for in the same task, a task fewer per role run.
  - An action plugin only - it makes no connection to the host and changes nothing.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    support: full
    platforms: posix
options:
  supported:
    description:
      - Whether the caller supports the host. When false, the task fails with O(fail_msg).
    type: bool
    default: true
  fail_msg:
    description:
      - The message of the failure when O(supported) is false.
    type: str
    default: the role does not support this host
"""

EXAMPLES = r"""
- name: Find out whether the role runs in check mode
  kunpeng_ascend.vllm.run_mode:
  register: __run_mode

- name: Say so
  ansible.builtin.debug:
    msg: "check mode: {{ __run_mode.check_mode }}"

- name: Refuse a host without per-OS variables, else find out whether the role runs in check mode
  kunpeng_ascend.vllm.run_mode:
    supported: "{{ __my_role_vars_file | length > 0 }}"
    fail_msg: "my_role does not support {{ ansible_facts['distribution'] }}"
  register: __my_role_check_probe
"""

RETURN = r"""
check_mode:
  description: Whether the task runs in check mode.
  returned: unless O(supported) is false
  type: bool
  sample: false
diff_mode:
  description: Whether the task runs in diff mode.
  returned: unless O(supported) is false
  type: bool
  sample: false
"""
