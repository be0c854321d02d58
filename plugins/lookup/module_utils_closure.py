# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The module_utils_closure lookup: the module_utils files that programs shipped to a host import."""

from __future__ import annotations

DOCUMENTATION = r"""
name: module_utils_closure
short_description: The collection's module_utils files that programs import, to ship them beside the programs
version_added: 0.8.0
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
description:
  - Reads each program and follows its imports of this collection's C(plugins/module_utils), directly and through each
    other, from the source (nothing is imported or run).
  - Returns each file it needs as a path relative to C(plugins/module_utils/) (C(<layer>/_<name>.py)), with the
    C(__init__.py) of each package on the way, sorted - what a program that runs on a host without Ansible needs under
    C(lib/ansible_collections/kunpeng_ascend/vllm/plugins/module_utils/) beside it.
  - Runs on the controller. The module_utils are this collection's own, found from the lookup's own file, so the
    answer is the same in a checkout and in an installed collection.
  - Private to the collection's roles (the waits of C(vllm_service), the watch of C(vllm_cluster), the exporter of
    C(monitoring)); it may change without notice.
options:
  _terms:
    description:
      - The programs, searched like the C(ansible.builtin.file) lookup searches (a role's C(files/) first); a list
        counts as its items.
    type: list
    elements: str
    required: true
notes:
  - A program that imports a module_utils that does not exist, or imports one relatively, is an error naming it.
"""

EXAMPLES = r"""
- name: Install the collection's module_utils the waits import, in their layers
  ansible.builtin.copy:
    src: "{{ role_path }}/../../plugins/module_utils/{{ item }}"
    # Into the file's layer folder (a dest ending in /), which the copy creates.
    dest: "/usr/local/libexec/example/lib/ansible_collections/kunpeng_ascend/vllm/plugins/module_utils/{{ item | dirname }}/"
    owner: root
    group: root
    mode: "0644"
    directory_mode: "0755"
  loop: "{{ query('kunpeng_ascend.vllm.module_utils_closure', 'npu-free-wait', 'tcp-port-wait') }}"
"""

RETURN = r"""
_raw:
  description: The files, relative to the collection's C(plugins/module_utils/), sorted.
  type: list
  elements: str
  sample: [common/__init__.py, common/_bounded_wait.py, serving/__init__.py, serving/_group_watch.py]
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._import_closure import import_closure

# This file is plugins/lookup/module_utils_closure.py of the collection.
MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'module_utils')


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        programs = []
        for term in self._flatten(terms):
            path = self.find_file_in_search_path(variables or {}, 'files', term, ignore_missing=True)
            if not path:
                raise AnsibleLookupError('module_utils_closure: the program %s was not found' % term)
            programs.append(path)
        try:
            return import_closure(MODULE_UTILS, programs)
        except (OSError, SyntaxError, ValueError) as error:
            raise AnsibleLookupError('module_utils_closure: %s' % error) from error
