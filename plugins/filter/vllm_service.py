# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What role vllm_service decides beyond the serving plan, each filter documented in its own .yml and computed once in
module_utils/serving/_vllm_service.py: the unit, the environment file's values, the host probe, the model's reads and
copy, the service's state, its NPUs' holders, the stop's wait, the API key, the native install, the deployment's view
for its gate and known good, and the report vllm_service_report."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_service = lazy_module('serving._vllm_service')
_serving = lazy_module('serving._serving')


def _dict(value, what, name):
    if not isinstance(value, dict):
        raise AnsibleFilterError('%s: %s must be a dict, not %s' % (name, what, type(value).__name__))
    return value


def _plan(plan, name):
    if not isinstance(plan, dict) or not all(key in plan for key in ('name', 'unit', 'mode', 'has_npus')):
        raise AnsibleFilterError('%s: the input must be the serving plan (vllm_service_plan)' % name)
    return plan


def vllm_service_unit(plan, inputs, digest='', libexec='/usr/local/libexec/kunpeng-ascend-vllm'):
    """``{'text', 'waits_before_start'}``: the unit of ``plan`` (vllm_service_plan), without its header."""
    return _service.unit_of(_plan(plan, 'vllm_service_unit'), _dict(inputs, 'inputs', 'vllm_service_unit'),
                            digest or '', libexec)


def vllm_service_environment(environment, key=''):
    """The environment file's values: the plan's ``environment`` and the API ``key`` when there is one."""
    return _service.environment_of(_dict(environment or {}, 'the environment', 'vllm_service_environment'), key or '')


def vllm_service_probe_argv(inputs):
    """The argv of the host probe of preflight, from the role's ``inputs`` (user, api_key_file)."""
    inputs = _dict(inputs, 'the input', 'vllm_service_probe_argv')
    return _service.probe_argv(inputs.get('user'), inputs.get('api_key_file'), _serving.PROBE_PATHS)


def vllm_service_probe_facts(lines):
    """What the host probe's output lines say, as serving_plan's facts."""
    if not isinstance(lines, list):
        raise AnsibleFilterError('vllm_service_probe_facts: the input must be the probe\'s stdout_lines')
    return _service.probe_facts(lines)


def vllm_service_model_reads(model, source=None, read=True, check_mode=False):
    """Where the model's format is read, and how the model is copied (the controller's source, rsync's argv)."""
    if source is not None:
        _dict(source, 'vllm_service_model_source', 'vllm_service_model_reads')
    reads = _service.model_reads(model, source, read)
    reads['rsync_argv'] = (_service.rsync_argv(source['path'], model, check_mode)
                           if source is not None and 'path' in source else None)
    return reads


def vllm_service_model_digests(hostvars, hosts, served_name):
    """``{'by_host', 'agree'}``: the manifests the ``hosts`` serving ``served_name`` verified, and whether they agree."""
    identities = {}
    for host in hosts or ():
        variables = hostvars[host]
        identities[host] = variables['__vllm_service_model_identity'] if '__vllm_service_model_identity' in variables else {}
    return _service.digests_by_host(identities, served_name)


def vllm_service_active(lines):
    """Whether the service runs, from ``systemctl show --property=ActiveState``'s stdout_lines."""
    return _service.service_active(lines)


def vllm_service_npu_holders(processes, cards):
    """The processes (npu_smi_info's) holding one of the service's ``cards``."""
    return _service.npu_holders(processes, cards)


def vllm_service_api_key(key, key_file=None, file_content=None):
    """The API key: vllm_service_api_key, else the first line of the key file, else ''."""
    return _service.api_key_of(key, key_file, file_content)


def vllm_service_native_install(plan, inputs, row=None, cpu_pins=(), cpu_remove=(), os_packages=None):
    """What native mode installs: OS packages, the account's groups, pip's pins and removals, the CPU build's version."""
    return _service.native_install(_plan(plan, 'vllm_service_native_install'),
                                   _dict(inputs, 'inputs', 'vllm_service_native_install'), row, cpu_pins or (),
                                   cpu_remove or (), os_packages)


def vllm_service_view(plan, inputs):
    """The deployment in force as its gate, known good and report name it."""
    return _service.deployment_view(_plan(plan, 'vllm_service_view'), _dict(inputs, 'inputs', 'vllm_service_view'))


def vllm_service_rollback_view(restored, name):
    """What the rollback's gate asks of the restored known good."""
    return _service.rollback_view(_dict(restored, 'the input', 'vllm_service_rollback_view'), name)


def vllm_service_report(source, inputs=None, rolled_back_to=None, **values):
    """The report vllm_service_report, one shape: after the gate (``source`` the serving plan, with ``inputs``), or
    after a rollback (``source`` vllm_known_good's restore result, with ``rolled_back_to``)."""
    try:
        if rolled_back_to is not None:
            return _service.rollback_report(_dict(source, 'the input', 'vllm_service_report'), rolled_back_to, **values)
        return _service.service_report(_plan(source, 'vllm_service_report'),
                                       _dict(inputs, 'inputs', 'vllm_service_report'), **values)
    except TypeError as error:
        raise AnsibleFilterError('vllm_service_report: %s' % error)


class FilterModule(object):
    def filters(self):
        return {
            'vllm_service_unit': vllm_service_unit,
            'vllm_service_environment': vllm_service_environment,
            'vllm_service_probe_argv': vllm_service_probe_argv,
            'vllm_service_probe_facts': vllm_service_probe_facts,
            'vllm_service_model_reads': vllm_service_model_reads,
            'vllm_service_model_digests': vllm_service_model_digests,
            'vllm_service_active': vllm_service_active,
            'vllm_service_npu_holders': vllm_service_npu_holders,
            'vllm_service_api_key': vllm_service_api_key,
            'vllm_service_native_install': vllm_service_native_install,
            'vllm_service_view': vllm_service_view,
            'vllm_service_rollback_view': vllm_service_rollback_view,
            'vllm_service_report': vllm_service_report,
        }
