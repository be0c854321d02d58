# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The serving_plan filter and its companions (each documented in its own .yml): the role's input checks, the
deployment record, the release rule, the TLS paths, and the environment file of a service written and read back as
systemd reads it."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._dates import filter_day
from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module

_deployment = lazy_module('serving._deployment')
_plan_checks = lazy_module('serving._plan_checks')
_serving = lazy_module('serving._serving')
_systemd = lazy_module('common._systemd')


def serving_plan(inputs, facts=None):
    """The serving plan of one node from the vllm_service variables ``inputs`` (without their prefix) and the host's
    ``facts``; without facts, only the problems the inputs alone show and the paths to look for on the host."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('serving_plan: the input must be a dict of the vllm_service variables, not %s'
                                 % type(inputs).__name__)
    if facts is None:
        return {'problems': _serving.check_inputs(inputs), 'probe_paths': list(_serving.PROBE_PATHS)}
    if not isinstance(facts, dict):
        raise AnsibleFilterError('serving_plan: facts must be a dict, not %s' % type(facts).__name__)
    return _serving.serving_plan(inputs, facts)


def vllm_service_input_problems(inputs, waiver=None, target_driver_version=None, site_rows=None, api_key=None,
                                api_key_file=None, require_agreement=False, verify_model=True, today=None):
    """Every problem of role vllm_service's inputs before it reads the host (module_utils serving/_plan_checks.py,
    role_input_problems), each naming the variable; never quotes ``api_key``."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('vllm_service_input_problems: the input must be a dict of the vllm_service variables, '
                                 'not %s' % type(inputs).__name__)
    return _plan_checks.role_input_problems(
        inputs, waiver=waiver, target_driver_version=target_driver_version, site_rows=site_rows, api_key=api_key,
        api_key_file=api_key_file, require_agreement=require_agreement, verify_model=verify_model,
        today=filter_day(today, 'vllm_service_input_problems'))


def vllm_ascend_release(image=None, pip_packages=None, version=None, mode='auto'):
    """The vllm-ascend release a service runs, as the serving plan reads it: ``version``, else the tag of ``image``
    (container mode, or auto with an image), else the ``vllm-ascend==`` pin of ``pip_packages``; '' when none says."""
    for name, value in (('image', image), ('version', version)):
        if value is not None and not isinstance(value, str):
            raise AnsibleFilterError('vllm_ascend_release: %s must be a string or null, not %s' % (name, type(value).__name__))
    if pip_packages is not None and not isinstance(pip_packages, list):
        raise AnsibleFilterError('vllm_ascend_release: pip_packages must be a list or null, not %s'
                                 % type(pip_packages).__name__)
    if mode not in ('auto', 'native', 'container'):
        raise AnsibleFilterError('vllm_ascend_release: mode must be auto, native or container, not %r' % (mode,))
    if mode == 'auto':
        mode = 'container' if image else 'native'
    return _serving.release_of(image, pip_packages, version, mode)


def deployment_record(plan, model):
    """``{'path', 'content'}``: where the deployment record of ``plan`` (vllm_service_plan) goes, and what it holds."""
    if not isinstance(plan, dict) or not all(key in plan for key in ('name', 'unit', 'mode')):
        raise AnsibleFilterError('deployment_record: the input must be the serving plan (vllm_service_plan)')
    return {'path': _deployment.record_path(plan['name']), 'content': _deployment.record_of(plan, model)}


def vllm_service_tls_paths(name):
    """``{'cert', 'key', 'ca', 'dir'}``: where role vllm_service puts service ``name``'s TLS files on the node."""
    if not isinstance(name, str) or not name:
        raise AnsibleFilterError('vllm_service_tls_paths: the input must be the service name, not %r' % (name,))
    return _serving.tls_paths(name)


def systemd_env_file(values, numbers=False):
    """The lines of an environment file (``EnvironmentFile=``) that give a service ``values`` (name -> value), each
    value written so that every systemd reads it back as it is (module_utils/common/_systemd.py); with ``numbers``, an
    integer or float value is written as its decimal text (an inventory's HCCL_BUFFSIZE of 200), a boolean never."""
    if numbers and isinstance(values, dict):
        values = dict((name, str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value)
                      for name, value in values.items())
    try:
        return _systemd.env_file_text(values)
    except ValueError as error:
        # The message names the variable, never its value (it may be the API key).
        raise AnsibleFilterError('systemd_env_file: %s' % error)


def systemd_env_values(text):
    """The variables an environment file's ``text`` gives a service, read as systemd reads ``EnvironmentFile=``."""
    if not isinstance(text, str):
        raise AnsibleFilterError('systemd_env_values: the input must be the text of an environment file, not %s'
                                 % type(text).__name__)
    return _systemd.parse_env_file(text)


class FilterModule(object):
    def filters(self):
        return {'serving_plan': serving_plan, 'vllm_ascend_release': vllm_ascend_release,
                'deployment_record': deployment_record, 'vllm_service_tls_paths': vllm_service_tls_paths,
                'systemd_env_file': systemd_env_file, 'systemd_env_values': systemd_env_values,
                'vllm_service_input_problems': vllm_service_input_problems}
