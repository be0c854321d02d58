# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The serving plan: one vLLM deployment on one node, computed once from the role's inputs and the host's facts.

``check_inputs`` decides what the inputs alone can tell (role vllm_service's input checks, before any fact is read);
``serving_plan`` adds the host's facts and returns the whole deployment - the vllm-ascend release, the mode, the NPUs
and their cards, the NUMA binding, the ``vllm serve`` argv, the container argv (devices, mounts, environment names),
the environment, the unit, file and container names, and whether the API is reachable beyond the host (decided from
the final argv, whatever added to it) - and whether the model fits the NPUs (``plan_sizing`` over ``_sizing``), also
for a host whose NPU driver is not installed yet (``fresh_host``: its NPUs from the PCI bus, what it assumed). Every
problem is a message naming the variable to fix; no message holds a secret. Pure: no Ansible, no host access (the
filter ``serving_plan`` exposes it).

Read it as steps, each in a file of its own with its tests: the inputs and their checks (``_plan_inputs``,
``_plan_checks``), the release, its environment and the driver (``_plan_release``), the NPUs, cards and NUMA node
(``_plan_npus``), the ``vllm serve`` argv, its address and TLS (``_plan_argv``), the recipe knobs in it checked
against the release (``_plan_recipe``, over the tables of ``_recipe_knobs``), the sizing from that argv
(``_plan_sizing``), and the container (``_plan_container``); ``serving_plan`` below runs them in that order. The names
other files take from here (``__all__``) are the plan's public face."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import CREDENTIALS_SINCE, parse_version
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._deployment import deployment_names
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_format import (
    dtype_problems,
    format_problems,
    product_family,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_argv import (
    client_url,
    listen_host,
    served_name,
    service_args,
    tls_args,
    tls_paths,
    tls_plan,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_checks import (
    check_account,
    check_inputs,
    check_key_file,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_container import container_command
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import (
    CHOICES,
    FACTS_KEYS,
    INPUT_KEYS,
    PROBE_PATHS,
    SERVING_PARAMS,
    TLS_CREDENTIAL,
    _show,
    is_loopback,
    last_value,
    normalize_inputs,
    resolve_option,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_npus import NO_BINDING, cards_of, npu_selection, numa_plan
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_recipe import NO_RECIPE, recipe_plan
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_release import (
    FRESH_DRIVER_PATHS,
    driver_plan,
    environment_defaults,
    fresh_host,
    release_of,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_sizing import (
    SIZING_PER_NPU,
    _not_sized,
    plan_sizing,
)

# The plan's public face: what the filters, the other module_utils and the tests take from this file.
__all__ = ('CHOICES', 'FACTS_KEYS', 'INPUT_KEYS', 'PROBE_PATHS', 'SERVING_PARAMS', 'SIZING_PER_NPU', '_show',
           'check_account', 'check_inputs', 'environment_defaults', 'is_loopback', 'plan_sizing', 'release_of',
           'resolve_option', 'serving_plan', 'tls_paths')


def _base_plan(inputs, facts, problems):
    """Step 2: the release, the mode, the deployment's names, the driver the release is checked against and what a
    plan of a host without a driver yet assumes. Returns the plan so far, the driver files and control devices taken
    as there, and the fresh host's view (fresh_host's, chips None on a host whose npu-smi answered)."""
    has_npus = (facts.get('npu_count') or 0) > 0
    # A host whose NPUs the PCI bus shows and npu-smi does not (no driver yet): planned from what the PCI bus says.
    fresh = (fresh_host(facts.get('npu_devices')) if has_npus and facts.get('npu_smi_found') is False
             else {'chips': None, 'product': None, 'family': None, 'assumed': None})
    mode = inputs['mode'] if inputs['mode'] != 'auto' else ('container' if has_npus else 'native')
    name = inputs['name']
    plan = {
        'problems': problems, 'mode': mode, 'has_npus': has_npus,
        'serving': dict((param, inputs.get(param)) for param in SERVING_PARAMS),
        'served_model_name': served_name(inputs), 'name': name,
        'user': inputs.get('user') or 'vllm', 'cann_env_file': inputs.get('cann_env_file') or '/etc/ascend/cann.env',
        'release': release_of(inputs.get('image'), inputs.get('pip_packages'), inputs.get('vllm_ascend_version'), mode),
    }
    plan.update(deployment_names(name))
    if mode == 'container' and inputs.get('image') is None:
        problems.append('the host has NPUs, so vllm_service_mode auto runs the service in a container: set '
                        'vllm_service_image (such as quay.io/ascend/vllm-ascend:v0.13.0), or vllm_service_mode native')
    driver, driver_assumed = driver_plan(facts, fresh['chips'] is not None, plan['release'])
    plan.update(fresh=fresh['chips'] is not None, driver=driver,
                assumed=[sentence for sentence in (fresh['assumed'], driver_assumed) if sentence])
    # The driver files and control devices found; on a fresh host also those the driver's install puts there, which
    # the container gets once it is installed (so that check mode predicts the unit of the real run).
    existing = set(facts.get('existing_paths') or ())
    if plan['fresh']:
        existing.update(FRESH_DRIVER_PATHS)
    if plan['fresh'] and mode == 'container':
        plan['assumed'].append('the NPU driver\'s files and control devices (%s) are taken as there once it is '
                               'installed, for the container\'s mounts and devices' % ', '.join(FRESH_DRIVER_PATHS))
    return plan, existing, fresh


def _environment(inputs, plan):
    """Step 4: the service's environment without the key - the release's defaults, then the cluster's, then the
    user's (vllm_service_env); null values left out."""
    env = environment_defaults(plan['release'], plan['has_npus'], inputs.get('cpu_kvcache_space', 4))
    env.update(inputs.get('cluster_env') or {})
    env.update(inputs.get('env') or {})
    return dict((key, str(value)) for key, value in sorted(env.items()) if value is not None)


def _argv_plan(inputs, facts, plan, problems):
    """Step 5: the ``vllm serve`` argv, where it listens, TLS, the URL clients use and the native unit's
    credentials."""
    mode = plan['mode']
    host = listen_host(inputs)
    tls = tls_plan(inputs, host)
    args = service_args(inputs, tls_args(tls, mode))
    port = last_value(args, '--port')
    # With TLS clients ask for the certificate's name (tls_plan), over https.
    plan.update(args=args, listen={'host': host, 'port': port}, public=not is_loopback(host), tls=tls,
                url=client_url(tls['server_name'] if tls else host, port, 'https' if tls else 'http'),
                credentials={TLS_CREDENTIAL: tls['key']} if tls and mode == 'native' else {},
                # argv elements the unit leaves for systemd to expand (the credential's path), quoted but not escaped.
                unit_verbatim=[arg for arg in tls_args(tls, mode) if arg.startswith('${')])
    # A native service gets its TLS key as a systemd credential (LoadCredential=, systemd 247 or later). An older
    # systemd (RHEL 8's 239) would refuse the unit at its start; facts without the version decide nothing here.
    systemd = parse_version(facts.get('systemd_version') or '')
    if tls and mode == 'native' and systemd is not None and systemd < CREDENTIALS_SINCE:
        problems.append('TLS in native mode (vllm_service_tls_cert, vllm_service_tls_key) needs systemd %d or later, '
                        'which gives the key to the service as a credential (LoadCredential=); this host has systemd '
                        '%d: serve in a container (vllm_service_mode: container), or without TLS behind a TLS proxy'
                        % (CREDENTIALS_SINCE, systemd))


def _model_plan(inputs, facts, plan, chips, fresh, count_refused, problems):
    """Step 6: the model directory against the final argv's --quantization and --dtype, and whether the model fits
    the NPUs (a refusal fails the plan unless vllm_service_sizing is warn)."""
    args, has_npus = plan['args'], plan['has_npus']
    # What the model directory says against the final argv's --quantization (or -q); facts without model_format
    # (a caller that did not read the model) decide nothing here.
    if facts.get('model_format') is not None:
        quantization = last_value(args, '--quantization', known=('--quantization',), short='-q')
        plan['quantization'] = quantization
        problems.extend(format_problems(facts['model_format'], quantization, has_npus, chips, facts.get('npu_devices')))
        problems.extend(dtype_problems(facts['model_format'], last_value(args, '--dtype', known=('--dtype',)), has_npus))
    sizing = plan_sizing(inputs, facts, args, plan['environment'], plan['npu_ids'], chips, fresh, count_refused)
    plan['sizing'] = sizing
    if sizing['verdict'] == 'refused' and inputs.get('sizing') != 'warn':
        problems.extend(sizing['problems'])


def _engine_plan(inputs, facts, plan, problems):
    """Step 7: the container engine and its program (assumed at its package's path before role container_runtime
    installed it, in a plan before any change) and whether the Ascend Docker Runtime gives the NPUs."""
    mode = plan['mode']
    engine = inputs.get('container_engine') or (facts.get('container_engine')
                                                if facts.get('container_engine') in CHOICES['container_engine']
                                                else 'docker')
    engine_path = (facts.get('engine_paths') or {}).get(engine)
    if mode == 'container':
        if not inputs.get('container_engine') and facts.get('container_engine') == 'containerd':
            problems.append('role container_runtime installed containerd, which has no CLI this role runs containers '
                            'with: set vllm_service_container_engine to an installed docker or podman')
        elif not engine_path and facts.get('engine_missing_ok'):
            # A plan before any change (check mode, entry point plan): role container_runtime installs the engine
            # first in site.yml, at the path its package gives it; the real run checks it is there.
            engine_path = '/usr/bin/%s' % engine
            plan['assumed'].append('the container engine %s is not installed yet: taken as %s, which role '
                                   'kunpeng_ascend.vllm.container_runtime installs before this service '
                                   '(playbooks/site.yml)' % (engine, engine_path))
        elif not engine_path:
            problems.append('%s (vllm_service_container_engine) is not installed: run role '
                            'kunpeng_ascend.vllm.container_runtime first, or set vllm_service_mode native' % engine)
    ascend_runtime = (inputs['use_ascend_runtime'] if inputs.get('use_ascend_runtime') is not None
                      else bool(facts.get('ascend_runtime')))
    plan.update(engine=engine if mode == 'container' else None, ascend_runtime=ascend_runtime and plan['has_npus'])
    return engine, engine_path


def _native_command(inputs, facts, plan, problems):
    """Step 8, natively: the account checked, and the unit's argv - numactl when it binds, the venv's Python with
    vLLM's CLI module."""
    if 'account' in facts:
        account_problem = check_account(plan['user'], facts.get('account'), facts.get('uid_min') or 1000)
        if account_problem:
            problems.append(account_problem)
    numa = plan['numa']
    numactl = (['/usr/bin/numactl', '--cpunodebind=%s' % numa['node'], '--membind=%s' % numa['node']]
               if numa['bind'] == 'numactl' else [])
    plan.update(mounts=[], devices=[], command=numactl + [
        inputs['venv'] + '/bin/python', '-m', 'vllm.entrypoints.cli.main', 'serve', inputs['model']] + plan['args'],
        cli={'run': [inputs['venv'] + '/bin/python', '-m', 'vllm.entrypoints.cli.main'], 'image': None,
             'entrypoint': None})


def serving_plan(inputs, facts):
    """The whole deployment of one node: ``inputs`` are the vllm_service variables without their prefix (the key only
    as ``api_key_set``; INPUT_KEYS), ``facts`` what the host said (FACTS_KEYS, which plugins/filter/serving_plan.yml
    documents one by one) - npu-smi's chips and ascend_facts' NPU devices, the driver files and control devices
    found, the engines, the account, the key file, systemd's version, the model directory (model_format_info's
    format, config.json and weights) and the installed and targeted NPU driver.

    Returns ``problems`` (empty when the plan can run) and the plan, whose every key plugins/filter/serving_plan.yml
    documents (its RETURN; a test holds the two to each other). The steps, in order: 1 the inputs checked
    (check_inputs) and normalised; 2 the release, mode, names and driver (_base_plan); 3 the NPUs, their cards and
    NUMA node; 4 the environment; 5 the argv, address and TLS, and the recipe knobs in it checked against the release
    (_plan_recipe), then the CPU binding (numa_plan); 6 the model's format and sizing; 7 the container
    engine; 8 the command, native or in a container."""
    problems = check_inputs(inputs)
    if problems:
        return {'problems': problems, 'assumed': [], 'sizing': _not_sized('the inputs are refused (problems)'),
                'recipe': NO_RECIPE, 'numa': dict(NO_BINDING, warnings=[]), 'warnings': []}
    inputs = normalize_inputs(inputs)
    plan, existing, fresh = _base_plan(inputs, facts, problems)
    has_npus = plan['has_npus']
    # The NPUs: logical ids (/dev/davinci<N>) are the chips in npu-smi's order; npu-smi lists processes by card.
    chips = (facts.get('chips') or []) if fresh['chips'] is None else fresh['chips']
    npu_ids, dp_local, count_refused = npu_selection(inputs, facts, chips, has_npus, problems)
    if inputs.get('api_key_file') and 'key_file' in facts:
        key_problem = check_key_file(inputs['api_key_file'], facts.get('key_file'))
        if key_problem:
            problems.append(key_problem)
    plan.update(npu_ids=npu_ids, cards=cards_of(npu_ids, chips) if has_npus and not problems else [],
                dp_local=dp_local)
    plan['environment'] = _environment(inputs, plan)
    _argv_plan(inputs, facts, plan, problems)
    # The NPUs' chip family, once: the KV cache dtype and the binding both depend on it.
    family = product_family(chips, facts.get('npu_devices'))
    plan['recipe'], recipe_problems = recipe_plan(inputs, plan['release'], facts.get('model_config'), has_npus, family)
    problems.extend(recipe_problems)
    # The binding follows the release and the final --additional-config (vllm-ascend may bind by itself).
    plan['numa'] = numa_plan(inputs, facts, npu_ids, has_npus, plan['release'], plan['recipe']['additional_config'],
                             family, problems)
    _model_plan(inputs, facts, plan, chips, fresh, count_refused, problems)
    # What the role shows before any change, in one list: the sizing's, the recipe's and the binding's.
    plan['warnings'] = plan['sizing']['warnings'] + plan['recipe']['warnings'] + plan['numa']['warnings']
    engine, engine_path = _engine_plan(inputs, facts, plan, problems)
    if plan['mode'] == 'native':
        _native_command(inputs, facts, plan, problems)
    else:
        container_command(inputs, plan, existing, engine, engine_path, problems)
    return plan
