# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The names of a service's deployment, one rule for the serving plan, the known good and the doctor."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._deployment import deployment_names
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._known_good_run import paths_of


def test_the_deployment_names_are_one_rule_for_the_plan_the_known_good_and_the_doctor():
    names = deployment_names('chat')
    assert names == {'unit': 'chat.service', 'unit_file': '/etc/systemd/system/chat.service',
                     'env_file': '/etc/vllm/chat.env', 'state_dir': '/var/lib/vllm/chat', 'container_name': 'vllm-chat'}
    paths = paths_of({'name': 'chat', 'record_dir': '/etc/kunpeng-ascend-vllm/known-good', 'unit_file': None,
                      'env_file': None})
    assert (paths['unit_file'], paths['env_file']) == (names['unit_file'], names['env_file'])
