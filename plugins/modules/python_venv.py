#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: python_venv
short_description: Keep a venv holding exactly these pins, built beside the one in use, switched to once pip check passes
version_added: 0.2.0
description:
  - Keeps O(path) - the venv a service runs from - holding every pin of O(packages) (C(name==version)) and none of
    O(remove), for the Python O(python).
  - When the venv at O(path) already does (and C(pip check) passes there, the removed packages aside), nothing
    changes. Otherwise a new venv is built in C(<path>.d/<vllm pin>-<digest>) (the digest of the Python version,
    the pins and the removals, so the same set is the same folder) - every pin installed in one pip run, so that pip
    cannot replace a pinned package (such as torch) behind the others' back, then the removals, then C(pip check).
    Only when it passes does O(path) become a link to the new venv; a failure leaves O(path), and the service
    running from it, as they were, and names what pip reported.
  - A real venv found at O(path) (made by an earlier version of the role, or by hand) is moved to
    C(<path>.d/previous-<time>), never removed (RV(moved)); the venv O(path) pointed at before is kept too
    (RV(previous)).
  - Nothing else at O(path) is ever moved or replaced. A directory that is no venv (no C(pyvenv.cfg) and
    C(bin/python)), a file or anything else there is refused before anything changes, as is a C(<path>.d) that is no
    directory, and a folder of it to build the venv in that holds something other than a venv.
  - O(path) is judged normalised (C(/usr/bin/..) is C(/usr), C(/opt/venv/) is C(/opt/venv)) and after its links are
    resolved; a system directory (C(/), C(/usr), C(/etc), C(/var/lib) and the like) or a home directory is refused.
  - O(python_range) refuses a Python outside it before anything is created or installed.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Check mode reads the Python version and what the venv holds; it reports changed when it would build or
        switch, with the pins it would install in RV(installed), and what it would move aside in RV(moved).
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  path:
    description:
      - Where the service finds its venv (its C(bin/python)); the module manages it as a link.
      - Nothing, a link or a venv may be there; no system or home directory.
    type: path
    required: true
  python:
    description: The Python that makes the venv.
    type: path
    default: /usr/bin/python3
  python_range:
    description:
      - The Python versions the packages support, comma-separated clauses such as C(>=3.10,<3.13) (the row of the
        compatibility set); a Python outside is refused before anything changes.
    type: str
  python_range_of:
    description: What O(python_range) is the range of, for the message (such as C(vllm-ascend 0.23.0)).
    type: str
  python_option:
    description: The variable that sets O(python), for the message.
    type: str
    default: python
  packages:
    description: The pins, each C(name==version).
    type: list
    elements: str
    required: true
  remove:
    description:
      - Packages to uninstall after the install (pip brings them, and they break the service); C(pip check) does not
        count them as missing.
    type: list
    elements: str
    default: []
  wheelhouse:
    description: A folder of wheels on the host; pip then installs from it alone (C(--no-index --find-links)).
    type: path
  timeout:
    description:
      - Seconds each command may take (the install of several GB of wheels among them), up to a year; V(0) means no
        limit.
    type: int
    default: 3600
"""

EXAMPLES = r"""
- name: Install the whole row of vllm-ascend 0.23.0 into the service's venv
  kunpeng_ascend.vllm.python_venv:
    path: /opt/vllm/venv
    python: /usr/bin/python3.11
    python_range: ">=3.10,<3.13"
    python_range_of: vllm-ascend 0.23.0
    packages: [torch==2.10.0, torch-npu==2.10.0.post4, triton-ascend==3.2.2, vllm==0.23.0, vllm-ascend==0.23.0]
  register: venv
"""

RETURN = r"""
venv:
  description: The venv that holds the pins (the target of O(path)); in check mode the one that would.
  returned: success
  type: str
  sample: /opt/vllm/venv.d/torch-2.10.0-3f2a9c1d0b7e
previous:
  description:
    - What O(path) was before when the module switched (in check mode, would switch) it - a venv it pointed at, or
      where a real venv there was moved - null otherwise.
  returned: success
  type: str
moved:
  description:
    - The real venv found at O(path) and where it was (in check mode, would be) moved, C(<path>.d/previous-<time>),
      with the time of the run (of the check, in check mode); it is kept, never removed. Null when nothing was moved.
  returned: success
  type: dict
  contains:
    src:
      description: The venv's path, O(path).
      type: str
    dest:
      description: Where it went.
      type: str
  sample: {src: /opt/vllm/venv, dest: /opt/vllm/venv.d/previous-20250101T120000}
python_version:
  description: The version of O(python).
  returned: success
  type: str
  sample: 3.11.2
installed:
  description: The pins installed (in check mode, that would be).
  returned: success
  type: list
  elements: str
removed:
  description: The packages uninstalled (in check mode, that would be).
  returned: success
  type: list
  elements: str
switched:
  description: Whether O(path) was (in check mode, would be) pointed at another venv.
  returned: success
  type: bool
site_packages:
  description: The venv's site-packages folder; null in check mode before the venv exists.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._venv import ensure


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            python=dict(type='path', default='/usr/bin/python3'),
            python_range=dict(type='str'),
            python_range_of=dict(type='str'),
            python_option=dict(type='str', default='python'),
            packages=dict(type='list', elements='str', required=True),
            remove=dict(type='list', elements='str', default=[]),
            wheelhouse=dict(type='path'),
            timeout=dict(type='int', default=3600),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**ensure(module))


if __name__ == '__main__':
    main()
