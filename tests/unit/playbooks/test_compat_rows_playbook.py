# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""playbooks/compat_rows.yml run by ansible-playbook on this machine, as from an installed collection (by its FQCN):
the rows of a pinned copy of a versioning_policy.md printed as the inventory variable ascend_compat_site_rows, which
the compatibility filters then take; a missing file refused naming the variable."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import site_rows
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MIRROR = load_fixture('vllm-ascend-versioning_policy.md_hust-mirror-4edb35a_2026-09-21_to-v0.26.0rc1_table-excerpt.txt')


def run_playbook(tmp_path, *extra):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.cache'), ANSIBLE_HOME=str(tmp_path / 'home'),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'local'), ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default',
               ANSIBLE_CALLBACK_RESULT_FORMAT='json', ANSIBLE_CALLBACK_FORMAT_PRETTY='0', ANSIBLE_NOCOLOR='1',
               ANSIBLE_RETRY_FILES_ENABLED='0', ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    run = subprocess.run([playbook, 'kunpeng_ascend.vllm.compat_rows'] + list(extra), cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, check=False)
    line = re.compile(r'^(?:ok: \[localhost\]|fatal: \[localhost\]: FAILED!) => (\{.*\})$', re.M)
    return run.returncode, [json.loads(found) for found in line.findall(run.stdout)], run.stdout + run.stderr


def test_the_rows_of_a_newer_policy_are_printed_as_the_site_variable(tmp_path):
    policy = tmp_path / 'versioning_policy.md'
    policy.write_text(MIRROR.replace('| v0.23.0     | v0.23.0           | >= 3.10, < 3.13 | 9.1.0 ',
                                     '| v0.23.0     | v0.23.0           | >= 3.10, < 3.13 | 9.1.1 '), encoding='utf-8')
    rc, results, output = run_playbook(tmp_path, '-e', json.dumps({
        'compat_rows_policy': str(policy), 'compat_rows_source': 'vLLM-HUST/vllm-ascend-hust at 4edb35a'}))
    assert rc == 0, output[-3000:]
    printed = '\n'.join(results[-1]['msg'])
    assert printed.startswith('# The rows of vLLM-HUST/vllm-ascend-hust at 4edb35a that the collection lacks')
    rows = yaml.safe_load(printed)['ascend_compat_site_rows']
    assert rows == [{'vllm_ascend': '0.23.0', 'vllm': '0.23.0', 'python': '>=3.10,<3.13', 'cann': '9.1.1',
                     'torch': '2.10.0', 'torch_npu': '2.10.0.post4', 'triton_ascend': '3.2.2', 'driver': '26.0.RC1'}]
    assert site_rows(rows)[0]['source'] == 'site'


def test_without_the_file_it_fails_naming_the_variable(tmp_path):
    rc, results, output = run_playbook(tmp_path, '-e', 'compat_rows_policy=%s' % (tmp_path / 'none.md'))
    assert rc != 0
    assert results[-1]['msg'] == (
        "Set compat_rows_policy to a copy of vllm-ascend's docs/source/community/versioning_policy.md on the controller "
        "(git show <commit>:docs/source/community/versioning_policy.md > /tmp/versioning_policy.md); %s is not a file."
        % (tmp_path / 'none.md')), output[-3000:]
