# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Step 8 of the serving plan in a container (_serving.py): what a container needs - the model's and the driver's
mounts, the user's volumes checked against system paths, the cache - its devices and its argv.
Its tests: tests/unit/plugins/module_utils/serving/test__plan_container.py.
"""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import (
    SYSTEM_DIRECTORIES,
    SYSTEM_TREES,
    normalise,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import (
    CONTROL_DEVICES,
    CONTAINER_CACHE,
    DRIVER_DIR,
    DRIVER_FILES,
    DRIVER_LIB,
    IMAGE_SYSTEM,
    _PATH,
    _show,
    _volume_parts,
)


def _holds(directory, path):
    """Whether the normalised ``directory`` is ``path`` (normalised) or holds it."""
    return path == directory or path.startswith(directory.rstrip('/') + '/')


def links_within_problem(model, links_within):
    """Why vllm_service_model_links_within cannot be the directory the model's symbolic links may lead into (None when
    it can, is null, or either is not an absolute path, which is refused by name elsewhere): judged normalised, it
    must be the model directory or hold it. It is only read, so it may be any directory, but in a container
    (``_mount_plan``) it is mounted whole."""
    if links_within is None or not all(isinstance(value, str) and _PATH.match(value) for value in (model, links_within)):
        return None
    if _holds(normalise(links_within), normalise(model)):
        return None
    return ('vllm_service_model_links_within %s must hold vllm_service_model %s: it is the directory the model\'s '
            'symbolic links may lead into (such as the Hugging Face cache of one model, its snapshot the model), or '
            'null for the model directory itself' % (_show(links_within), _show(model)))


def model_mount(inputs):
    """The host directory a container gets read-only at the same path, for the model: vllm_service_model_links_within
    normalised when it is set (it holds the model directory, so the model's path and every link of it that stays
    inside resolve in the container too), else the model directory."""
    within = inputs.get('model_links_within')
    return normalise(within) if within else inputs['model']


def _within_problems(within, mounts):
    """What the read-only mount of vllm_service_model_links_within ``within`` (normalised) at the same path would hide:
    the image's own system, or the service's other mounts (``mounts``, host:container[:options])."""
    if (within in IMAGE_SYSTEM or within in SYSTEM_DIRECTORIES
            or any(_holds(tree, within) for tree in SYSTEM_TREES)):
        return ['vllm_service_model_links_within %s is mounted read-only at the same path in the container, where it '
                'would hide the image\'s own files: give the directory that holds the model and its links only (such '
                'as the Hugging Face cache of the model)' % within]
    problems = []
    for mount in mounts:
        target = normalise(mount.split(':')[1])
        if target != within and _holds(within, target):  # at the same path: refused as two mounts at one path
            problems.append('vllm_service_model_links_within %s is mounted read-only at the same path in the container '
                            'and holds %s, where the service mounts %s: give the directory that holds the model and '
                            'its links only (such as the Hugging Face cache of the model)'
                            % (within, mount.split(':')[1], mount))
    return problems


def _mount_plan(inputs, existing, has_npus, ascend_runtime, state_dir, tls=None):
    """The container's volumes (host:container[:options]) and the problems: the driver files the host has (no Ascend
    runtime), the model read-only - with vllm_service_model_links_within, that whole directory (``model_mount``),
    which may hide neither the image's system nor the service's other mounts -, the state directory as vLLM's cache,
    the TLS directory read-only, then the user's; two mounts at one container path are refused."""
    mounts = []
    if has_npus and not ascend_runtime:
        mounts += ['%s:%s' % (path, path) for path in DRIVER_FILES if path in existing]
        lib = DRIVER_DIR if inputs.get('mount_driver_dir') else DRIVER_LIB
        mounts.append('%s:%s' % (lib, lib))
    model = model_mount(inputs)
    model_volume = '%s:%s:ro' % (model, model)
    mounts += [model_volume, '%s:%s' % (inputs.get('cache_dir') or state_dir, CONTAINER_CACHE)]
    if tls:
        mounts.append('%s:%s:ro' % (tls['dir'], tls['dir']))
    owned = {}
    for mount in mounts:
        owned.setdefault(mount.split(':')[1].rstrip('/') or '/', mount)
    problems = []
    if inputs.get('model_links_within'):
        problems += _within_problems(model, [mount for mount in mounts if mount != model_volume]
                                     + list(inputs.get('volumes') or ()))
    for position, volume in enumerate(inputs.get('volumes') or ()):
        target = _volume_parts(volume)[1].rstrip('/') or '/'
        if target in owned:
            problems.append('vllm_service_volumes[%d] mounts at %s, where the service already mounts %s: pick another '
                            'container path' % (position, target, owned[target]))
        owned[target] = volume
        mounts.append(volume)
    return mounts, problems


def container_command(inputs, plan, existing, engine, engine_path, problems):
    """The container's argv (``command``), its ``mounts`` and ``devices``, and how a client runs the service's vLLM
    CLI in the same image (``cli``), into ``plan``; a mount refused is appended to ``problems``."""
    has_npus, ascend_runtime, tls = plan['has_npus'], plan['ascend_runtime'], plan['tls']
    npu_ids, numa, port = plan['npu_ids'], plan['numa'], plan['listen']['port']
    mounts, mount_problems = _mount_plan(inputs, existing, has_npus, ascend_runtime, plan['state_dir'], tls)
    problems.extend(mount_problems)
    devices = []
    if has_npus and not ascend_runtime:
        devices = ['/dev/davinci%d' % npu for npu in npu_ids] + sorted(path for path in CONTROL_DEVICES if path in existing)
    command = [engine_path or engine, 'run', '--rm', '--name', plan['container_name']]
    if inputs.get('network') == 'bridge':
        publish = '[%s]' % inputs['host'] if ':' in inputs['host'] else inputs['host']
        command += ['--network', 'bridge', '--publish', '%s:%s:%s' % (publish, port, port)]
    else:
        command += ['--network', 'host']
    # The host's IPC namespace (a recipe's --ipc=host) brings its /dev/shm; else the container's own, of shm_size.
    command += ['--ipc=host'] if inputs.get('ipc_host') else ['--shm-size', inputs['shm_size']]
    command += ['--cap-add=%s' % cap for cap in inputs.get('cap_add') or ()]
    command += ['--device=%s' % device for device in devices]
    command += ['--volume=%s' % mount for mount in mounts]
    if ascend_runtime and has_npus:
        command += ['--runtime', 'ascend', '--env', 'ASCEND_VISIBLE_DEVICES=%s' % ','.join(str(n) for n in npu_ids)]
    # The container's CPU set: the NPUs' node's CPUs and memory (numactl's in a container), or the CPUs vllm-ascend
    # may bind its workers inside (its memory left to it).
    if numa['bind'] == 'numactl' and numa['cpus'] is not None:
        command += ['--cpuset-cpus', str(numa['cpus']), '--cpuset-mems', str(numa['node'])]
    elif numa['bind'] == 'vllm_ascend' and numa.get('allowed_cpus'):
        command += ['--cpuset-cpus', str(numa['allowed_cpus'])]
    command += ['--env=%s' % key for key in plan['environment']]
    if inputs.get('api_key_set'):
        command.append('--env=VLLM_API_KEY')
    command += [inputs['image'], 'vllm', 'serve', inputs['model']] + plan['args']
    # How a client runs the service's own vLLM CLI (the benchmark's load generator): the same engine and image, on
    # the host network, with the model and the user's volumes; the caller adds its own mounts, then the image.
    cli_run = [engine_path or engine, 'run', '--rm', '--network=host', '--volume=%s:%s:ro' % ((model_mount(inputs),) * 2)]
    cli_run += ['--volume=%s' % volume for volume in inputs.get('volumes') or ()]
    # With TLS the client verifies against the CA (never the key): mounted, and named by SSL_CERT_FILE, whose value the
    # caller gives in the engine's environment.
    if tls:
        cli_run += ['--volume=%s:%s:ro' % (tls['ca'], tls['ca']), '--env=SSL_CERT_FILE']
    plan.update(mounts=mounts, devices=devices, command=command,
                cli={'run': cli_run, 'image': inputs['image'], 'entrypoint': 'vllm'})
