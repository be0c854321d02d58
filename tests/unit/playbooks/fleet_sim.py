# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A simulated fleet on this machine for playbooks/plan.yml: many inventory hosts, all of them this machine through the
local connection (as tests/unit/roles/role_harness.py runs a role's cases), each a simulated node whose files live in
a scratch folder - its sysfs (tests/simulator/fake_sysfs.py: the NPUs the PCI bus shows, or none), its model
directory, the simulator's npu-smi on PATH (tests/simulator/ascend-sim, its state in the scratch folder) and a
stand-in ``systemctl`` (this machine may not run systemd: the stand-in answers ``--version`` and ``show`` as a host
where the service is not installed). Nothing outside the scratch folder is written; plan.yml only reads.

Used by tests/unit/playbooks/test_plan_playbook.py and tests/benchmarks/plan_fleet.py.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SIMULATOR = os.path.join(REPO, 'tests', 'simulator')
PLAYBOOK = os.path.join(REPO, 'playbooks', 'plan.yml')

# The stack of vllm-ascend v0.13.0 (CANN 8.5.0, driver 25.5), with package sources in Huawei's names. The package files
# need not exist: plan.yml checks the sources' form, fetches nothing.
IMAGE = 'quay.io/ascend/vllm-ascend:v0.13.0'
GROUP_VARS = {
    'npu_driver_version': '25.5.0',
    'npu_driver_firmware_version': '7.8.0.5.216',
    'npu_driver_driver_package': {'path': '/root/ascend-packages/Ascend-hdk-910b-npu-driver_25.5.0_linux-aarch64.run'},
    'npu_driver_firmware_package': {'path': '/root/ascend-packages/Ascend-hdk-910b-npu-firmware_7.8.0.5.216.run'},
    'cann_version': '8.5.0',
    'cann_accept_eula': True,
    'cann_toolkit_package': {'path': '/root/ascend-packages/Ascend-cann-toolkit_8.5.0_linux-aarch64.run'},
    'cann_kernels_package': {'path': '/root/ascend-packages/Ascend-cann-kernels-910b_8.5.0_linux-aarch64.run'},
    'container_runtime_install_packages': False,
    # The devices and driver mounts passed to the container (the documented recipe), not the Ascend Docker Runtime.
    'container_runtime_ascend_runtime': False,
    # A native service of vLLM's CPU build on a host without NPUs, as the demo's x86_64 node serves.
    'vllm_service_mode': 'native',
    'vllm_service_max_model_len': 256,
    'vllm_service_install_dependencies': False,
}

TINY_CONFIG = {
    'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'torch_dtype': 'bfloat16', 'hidden_size': 64,
    'intermediate_size': 128, 'num_attention_heads': 4, 'num_key_value_heads': 2, 'num_hidden_layers': 2,
    'vocab_size': 1000, 'max_position_embeddings': 2048,
}

# A fresh A2 node in container mode: its 8 NPUs on the PCI bus (fake_sysfs's 910b-8), no NPU driver, hence no npu-smi
# (make_fleet with npu_smi=False), the image of v0.13.0 loaded from an archive, TP 4 x DP 2.
FRESH_NODE = {'vllm_service_mode': 'container', 'vllm_service_image': IMAGE, 'vllm_service_sysfs_path': '@npus',
              'vllm_service_image_archive': '/root/images/vllm-ascend-v0.13.0.tar', 'vllm_service_tensor_parallel_size': 4,
              'vllm_service_data_parallel_size': 2, 'vllm_service_max_num_seqs': 16}

# A stand-in docker (make_fleet with docker=True) that has no image: what `docker image inspect` says then.
DOCKER = """#!/bin/sh
case "$1 $2" in
  "image inspect") echo "Error response from daemon: No such image: $5" >&2; exit 1 ;;
  *) echo "docker stand-in: $*: not simulated" >&2; exit 1 ;;
esac
"""

SYSTEMCTL = """#!/bin/sh
# A stand-in systemctl (tests/unit/playbooks/fleet_sim.py): a systemd 252 host where the service is not installed.
case "$1" in
  --version) echo "systemd 252 (252.36-1~deb12u1)"; echo "+PAM +AUDIT" ;;
  show) echo "ActiveState=inactive" ;;
  *) echo "systemctl stand-in: $*: not simulated" >&2; exit 1 ;;
esac
"""


def _write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    os.chmod(path, mode)


def make_fleet(root, hosts, group_vars=None, clusters=None, npu_smi=True, docker=False):
    """Write a simulated fleet under ``root`` (a str or Path): ``hosts`` maps each host name to its host variables
    (over the node's own: its sysfs and model; ``@npus`` for a sysfs with 8 910B NPUs); ``clusters`` (optional) maps a
    group name under vllm_clusters to its host names; ``npu_smi``: the simulator's npu-smi on PATH (false: a fresh
    host's, none); ``docker``: the stand-in docker on PATH. Returns ``(inventory path, environment)`` for
    ansible-playbook."""
    root = str(root)
    sys.path.insert(0, SIMULATOR)
    try:
        import fake_sysfs  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.remove(SIMULATOR)
    empty_sys = os.path.join(root, 'sys-none')
    os.makedirs(os.path.join(empty_sys, 'bus', 'pci', 'devices'), exist_ok=True)
    npu_sys = os.path.join(root, 'sys-910b-8')
    fake_sysfs.write_sysfs(npu_sys, '910b-8')
    model = os.path.join(root, 'models', 'tiny-llama')
    _write(os.path.join(model, 'config.json'), json.dumps(TINY_CONFIG))
    bin_dir = os.path.join(root, 'bin')
    _write(os.path.join(bin_dir, 'systemctl'), SYSTEMCTL, 0o755)
    if npu_smi:
        os.symlink(os.path.join(SIMULATOR, 'ascend-sim'), os.path.join(bin_dir, 'npu-smi'))
    if docker:
        _write(os.path.join(bin_dir, 'docker'), DOCKER, 0o755)
    hosts = dict((name, dict((key, npu_sys if value == '@npus' else value) for key, value in (variables or {}).items()))
                 for name, variables in hosts.items())
    node_vars = {'vllm_service_model': model, 'vllm_service_sysfs_path': empty_sys, 'os_tuning_sysfs_path': empty_sys,
                 'npu_driver_sysfs_path': empty_sys, 'cann_sysfs_path': empty_sys}
    in_clusters = set(host for members in (clusters or {}).values() for host in members)
    inventory = {'all': {
        'vars': dict({'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}, **GROUP_VARS,
                     **(group_vars or {})),
        'children': {'ascend_nodes': {
            'hosts': dict((name, dict(node_vars, **(variables or {}))) for name, variables in hosts.items()
                          if name not in in_clusters),
            'children': {'vllm_clusters': {'children': dict(
                (group, {'hosts': dict((name, dict(node_vars, **(hosts.get(name) or {}))) for name in members)})
                for group, members in (clusters or {}).items())}} if clusters else {},
        }},
    }}
    path = os.path.join(root, 'inventory.yml')
    _write(path, yaml.safe_dump(inventory, width=1000, sort_keys=False))
    env = dict(os.environ,
               PATH=bin_dir + os.pathsep + os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''),
               PWD=root,
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.cache'),
               ANSIBLE_HOME=os.path.join(root, 'ansible-home'),
               ANSIBLE_LOCAL_TEMP=os.path.join(root, 'ansible-local'),
               ANSIBLE_REMOTE_TEMP=os.path.join(root, 'ansible-remote'),
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default',
               ANSIBLE_CALLBACK_RESULT_FORMAT='json',
               ANSIBLE_CALLBACK_FORMAT_PRETTY='0',
               ANSIBLE_NOCOLOR='1',
               ANSIBLE_RETRY_FILES_ENABLED='0',
               ANSIBLE_HOST_KEY_CHECKING='0',
               ASCEND_SIM_STATE=os.path.join(root, 'ascend-sim', 'state.json'),
               ASCEND_SIM_LOG=os.path.join(root, 'ascend-sim', 'calls.log'))
    return path, env


def run_plan(root, inventory, env, *extra, forks=None, playbook=PLAYBOOK):
    """Run ``playbook`` (plan.yml) on the fleet; returns ``(completed process, wall seconds, CPU seconds of
    ansible-playbook and every process it started)``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    argv = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', inventory, playbook]
    if forks:
        argv += ['--forks', str(forks)]
    run = subprocess.run(argv + list(extra), cwd=str(root), env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return run, wall, cpu
