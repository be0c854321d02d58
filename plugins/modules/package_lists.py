#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: package_lists
short_description: Refresh the package lists when they do not know a package that is still to be installed
version_added: 0.2.0
description:
  - Run before a package install. Refreshes the host's package lists only when a wanted package is not installed
    and the lists cannot install it, whatever the lists' age - a freshly built image or golden image has an empty
    C(/var/lib/apt/lists) whose time stamp is minutes old, which C(cache_valid_time) takes for a fresh cache.
  - Debian family (APT) - the packages not installed (C(dpkg-query)) are looked up with C(apt-cache policy); the
    lists are refreshed with C(apt-get update) when C(/var/lib/apt/lists) holds no package index, or when a package
    to install has no candidate (a stale list, or a repository just added). Nothing runs when every package is
    installed.
  - RedHat family (dnf) - nothing is refreshed, as dnf refreshes expired metadata itself; the module reports which
    packages are missing.
  - A package that still has no candidate after the refresh is reported in a warning naming the APT sources to
    check; the install that follows then fails with APT's own message.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Check mode refreshes nothing and reports changed when the real run would refresh. The install task that
        follows cannot find a package the lists do not know yet in check mode; skip it when RV(refresh) is true
        (the change is reported here).
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  names:
    description:
      - The packages the next task installs, as given to it (C(name), C(name=version), C(name:arch)).
    type: list
    elements: str
    required: true
  manager:
    description:
      - The package manager. V(auto) takes APT where C(apt-get) exists, else dnf where C(dnf) or C(yum) exists.
    type: str
    choices: [auto, apt, dnf]
    default: auto
  lists_path:
    description:
      - APT's list folder.
    type: path
    default: /var/lib/apt/lists
  timeout:
    description:
      - Seconds each command may take (C(apt-get update) included) before coreutils C(timeout) stops it; V(0) runs
        without a limit.
    type: int
    default: 600
"""

EXAMPLES = r"""
- name: Refresh the package lists when they do not know numactl or libnuma1
  kunpeng_ascend.vllm.package_lists:
    names: [numactl, libnuma1]
  register: lists

- name: Install numactl and libnuma1
  ansible.builtin.package:
    name: [numactl, libnuma1]
    state: present
  # In check mode the lists are not refreshed, so the package cannot be found yet: the change was reported above.
  when: not (ansible_check_mode and lists.refresh)
"""

RETURN = r"""
manager:
  description: The package manager, V(apt) or V(dnf).
  returned: success
  type: str
  sample: apt
missing:
  description: The wanted packages that are not installed (names without version).
  returned: success
  type: list
  elements: str
  sample: [python3-venv]
unknown:
  description: Of RV(missing), those the lists had no candidate for before any refresh.
  returned: success
  type: list
  elements: str
  sample: [python3-venv]
refresh:
  description: Whether the lists were refreshed (in check mode, whether they would be).
  returned: success
  type: bool
  sample: true
reason:
  description: Why they were (or would be) refreshed; empty when not.
  returned: success
  type: str
  sample: the package lists are empty, and python3-venv is not installed
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner, find_executable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._package_lists import (
    AptLists,
    DnfLists,
    decide,
    invalid_names,
    missing_packages,
    package_name,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap


def backend(module, runner, warnings):
    manager = module.params['manager']
    if manager == 'auto':
        manager = 'apt' if module.get_bin_path('apt-get') else 'dnf' if (
            module.get_bin_path('dnf') or module.get_bin_path('yum')) else None
        if manager is None:
            module.fail_json(msg='neither apt-get nor dnf nor yum was found on the host: set manager')
    if manager == 'apt':
        executables = dict((tool, find_executable(module, tool, missing_hint='it comes with APT'))
                           for tool in ('apt-get', 'apt-cache', 'dpkg-query'))
        return AptLists(runner, executables, module.params['lists_path'], warnings)
    return DnfLists(runner, {'rpm': find_executable(module, 'rpm')}, warnings)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            names=dict(type='list', elements='str', required=True),
            manager=dict(type='str', default='auto', choices=['auto', 'apt', 'dnf']),
            lists_path=dict(type='path', default='/var/lib/apt/lists'),
            timeout=dict(type='int', default=600),
        ),
        supports_check_mode=True,
    )
    names = module.params['names']
    bad = invalid_names(names)
    if bad:
        module.fail_json(msg='names: %s %s no package name'
                             % (', '.join(repr(name) for name in bad), 'is' if len(bad) == 1 else 'are'))
    warnings = WarningCap()
    lists = backend(module, CommandRunner(module, module.params['timeout']), warnings)
    wanted = list(dict.fromkeys(package_name(name) for name in names))
    missing = missing_packages(wanted, lists.installed(wanted)) if wanted else []
    decision = decide(missing, lists.candidates(missing) if missing else {}, lists.lists_empty() if missing else False)
    if decision.refresh and not module.check_mode:
        lists.refresh()
        after = lists.candidates(decision.missing)
        still = [name for name in decision.missing if after.get(name) is None]
        if still:
            warnings('after apt-get update the package lists still have no candidate for %s: unless %s virtual, add an '
                     'APT source that has %s (/etc/apt/sources.list, /etc/apt/sources.list.d/)'
                     % (', '.join(still), 'it is' if len(still) == 1 else 'they are', 'it' if len(still) == 1 else 'them'))
    result = dict(changed=decision.refresh, manager=lists.name, missing=decision.missing, unknown=decision.unknown,
                  refresh=decision.refresh, reason=decision.reason)
    warnings.emit(module.warn)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
