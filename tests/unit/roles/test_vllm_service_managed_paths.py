# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role vllm_service's validation, run by Ansible (one check-mode play): the directories the role replaces or writes
(the venv, a container's cache, the model it copies in) refused when they are system or home directories however
spelt, and an environment value the environment file's writer could not write, each naming its variable before
anything changes."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import run_play

BASE = {'vllm_service_model': '/srv/models/tiny'}
CASES = [
    ({}, None),
    ({'vllm_service_venv': '/usr/bin/..'}, 'vllm_service_venv /usr/bin/.. (that is /usr) is a top-level system directory'),
    ({'vllm_service_venv': '/opt'}, 'vllm_service_venv /opt is a top-level system directory'),
    ({'vllm_service_venv': '/'}, 'vllm_service_venv / is the root directory'),
    ({'vllm_service_venv': '/home/alice'}, 'vllm_service_venv /home/alice is a home directory'),
    ({'vllm_service_cache_dir': '/usr/local'}, 'vllm_service_cache_dir /usr/local is a system directory'),
    ({'vllm_service_model': '/etc/models', 'vllm_service_model_source': {'path': '/mnt/nfs/tiny'}},
     'vllm_service_model /etc/models is inside /etc'),
    ({'vllm_service_model': '/data', 'vllm_service_model_source': None}, None),
    ({'vllm_service_env': {'OMP_NUM_THREADS': '1\u0085'}},
     'vllm_service_env: the value of OMP_NUM_THREADS holds a control character'),
    ({'vllm_service_env': {'QUOTED': 'a "b" \\c $d #e'}}, None),
]


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    return run_play(tmp_path_factory.mktemp('managed-paths'), 'vllm_service',
                    [dict(BASE, **variables) for variables, dummy in CASES])


@pytest.mark.parametrize('index', range(len(CASES)))
def test_the_role_refuses_what_it_must_not_manage_before_any_change(results, index):
    expected = CASES[index][1]
    if expected is None:
        assert results[index] == {'accepted': True}
    else:
        assert results[index]['accepted'] is False and len(results[index]['messages']) == 1
        assert results[index]['messages'][0].startswith(expected), results[index]['messages']
