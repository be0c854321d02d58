# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The module_utils_closure lookup, as Ansible runs it: the collection's own module_utils, found from the lookup's
file; the programs searched as a role's files; a program that is not there named. What it follows is tested in
tests/unit/plugins/module_utils/common/test__import_closure.py, the roles' use of it in tests/unit/roles."""

from __future__ import annotations

import os

from ansible_collections.kunpeng_ascend.vllm.plugins.lookup import module_utils_closure
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import TESTS, ansible_debug
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import module_utils_closure as in_role

COLLECTION = os.path.dirname(TESTS)
WATCH = os.path.join(COLLECTION, 'roles', 'vllm_cluster', 'files', 'vllm-group-watch')
WATCH_FILES = ['common/__init__.py', 'common/_bounded_wait.py', 'common/_systemd.py', 'serving/__init__.py',
               'serving/_group_watch.py']


def test_the_module_utils_are_the_collections_own():
    assert os.path.samefile(module_utils_closure.MODULE_UTILS, os.path.join(COLLECTION, 'plugins', 'module_utils'))


def test_ansible_finds_it_by_its_name_and_a_missing_program_is_named():
    assert ansible_debug("query('kunpeng_ascend.vllm.module_utils_closure', program)", {'program': WATCH})['msg'] == WATCH_FILES
    failed = ansible_debug("query('kunpeng_ascend.vllm.module_utils_closure', 'no-such-program')", {})
    assert failed['failed'] and 'module_utils_closure: the program no-such-program was not found' in failed['msg'], failed


def test_the_programs_are_searched_in_the_role_files_and_a_list_counts_as_its_items():
    assert in_role('vllm_cluster', 'vllm-group-watch') == WATCH_FILES
    assert in_role('vllm_cluster', ['vllm-group-watch'], WATCH) == WATCH_FILES
