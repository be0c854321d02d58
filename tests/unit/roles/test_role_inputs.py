# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The roles refuse bad inputs before they change anything, naming the variable (issue 7, section 5).

Each role's validation entry point (``include_role`` with ``tasks_from: validate``, which every role's
``tasks/main.yml`` runs first) meets every case of this file, all cases of a role in one ``ansible-playbook`` run
(role_harness.py). The playbook only includes the validation tasks, in check mode, without become: they read
``/proc/sys/fs/nr_open`` and change nothing on this machine.
"""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark import METRICS as BENCHMARK_METRICS
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles.role_harness import REPO
ROLES = ('os_tuning', 'npu_driver', 'cann', 'package_fetch', 'container_runtime', 'vllm_service', 'vllm_cluster', 'npu_network',
         'vllm_benchmark', 'doctor')
CONTROL_CHARACTERS = ('\n', '\r', '\t', '\x00', '\x1b', '\x7f')

PACKAGES = '/root/ascend-packages/'
DRIVER = PACKAGES + 'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run'
FIRMWARE = PACKAGES + 'Ascend-hdk-910b-npu-firmware_7.5.0.3.220.run'
TOOLKIT = PACKAGES + 'Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run'
KERNELS = PACKAGES + 'Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run'
NNAL = PACKAGES + 'Ascend-cann-nnal_8.1.RC1_linux-aarch64.run'
CHECKSUM = 'sha256:' + '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'
URL_SOURCE = {'url': 'https://example.invalid/ascend/Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run', 'checksum': CHECKSUM}
MISSING = object()
# A waiver of the compatibility set that holds for years yet.
WAIVER = {'reason': 'CHG-4711: vllm-ascend 0.31.0 validated on two A2 nodes', 'expires': '2099-12-31'}
WAIVER_MESSAGE = ('%s_compat_waiver (default: ascend_compat_waiver) must be null or a waiver with reason and expires '
                  '(YYYY-MM-DD) that holds today: %s')

# Values that pass, on top of the role defaults (the inputs the roles require have none). A case drops one of them by
# giving it the value MISSING.
GOOD = {
    'os_tuning': {},
    'npu_driver': {
        'npu_driver_version': '24.1.rc1',
        'npu_driver_firmware_version': '7.5.0.3.220',
        'npu_driver_driver_package': {'path': DRIVER},
        'npu_driver_firmware_package': {'path': FIRMWARE},
    },
    'cann': {
        'cann_version': '8.1.RC1',
        'cann_accept_eula': True,
        'cann_toolkit_package': {'path': TOOLKIT},
        'cann_kernels_package': {'910b': {'path': KERNELS}},
        'cann_nnal_package': {'path': NNAL},
        'cann_vllm_ascend_version': 'v0.9.1',
    },
    'package_fetch': {'package_fetch_source': URL_SOURCE},
    'container_runtime': {
        'container_runtime_ascend_runtime_accept_eula': True,
        'container_runtime_ascend_runtime_package': {'path': PACKAGES + 'Ascend-docker-runtime_6.0.0_linux-aarch64.run'},
        'container_runtime_config_path': '/etc/docker/daemon.json',
    },
    'vllm_service': {
        'vllm_service_model': '/data/models/DeepSeek-R1-W8A8',
        'vllm_service_served_model_name': 'deepseek-r1',
        'vllm_service_model_manifest': '/data/models/DeepSeek-R1-W8A8.sha256',
        'vllm_service_model_links_within': '/data/models',
        'vllm_service_api_key_file': '/etc/vllm/api-key',
        'vllm_service_vllm_ascend_version': 'v0.13.0',
        'vllm_service_quantization': 'ascend',
        'vllm_service_kv_cache_dtype': 'auto',
        'vllm_service_pip_wheelhouse': '/srv/wheelhouse',
        'vllm_service_image': 'quay.io/ascend/vllm-ascend:v0.13.0',
        'vllm_service_image_archive': '/srv/images/vllm-ascend-v0.13.0.tar',
        'vllm_service_dtype': 'bfloat16',
        'vllm_service_scheduling_policy': 'priority',
        'vllm_service_container_engine': 'docker',
        'vllm_service_tls_cert': 'files/node1.crt',
        'vllm_service_tls_key': 'files/node1.key',
        'vllm_service_tls_ca': 'files/bank-ca.crt',
        'vllm_service_tls_server_name': 'node1.bank.internal',
        'vllm_service_npu_smi_path': '/usr/local/sbin/npu-smi',
        'vllm_service_target_driver_version': '26.2.RC1',
    },
    'npu_network': {'npu_network_cidr': '10.20.0.0/16'},
    'vllm_cluster': {
        'vllm_cluster_node_address': '10.10.0.21',
        'vllm_cluster_ray_pip_wheelhouse': '/srv/ray-wheels',
    },
    'vllm_benchmark': {},
    # The doctor's nullable strings (null: the host's deployment record says), given so that each meets a control character.
    'doctor': {'doctor_service_name': 'vllm', 'doctor_service_mode': 'native', 'doctor_container_engine': 'docker',
               'doctor_vllm_ascend_version': '0.13.0', 'doctor_public_addresses': ['1.1.1.1'],
               'doctor_ip_path': '/usr/sbin/ip'},
}
# Good strings for variables that GOOD cannot hold, because they exclude another of its values; a control-character case
# of such a variable drops that other one (the key and the key file are one or the other).
STRING_SAMPLES = {'vllm_service_api_key': 'test-key-0123456789abcdef', 'vllm_service_distributed_executor_backend': 'ray',
                  'vllm_service_cache_dir': '/srv/vllm-cache'}
EXCLUDES = {'vllm_service_api_key': {'vllm_service_api_key_file': MISSING}}

# The variables that hold a package source: package_fetch's validate entry point checks each (the one place the
# rule "one of src, path or url; url needs checksum" is declared).
PACKAGE_SOURCES = ('npu_driver_driver_package', 'npu_driver_firmware_package', 'cann_toolkit_package', 'cann_nnal_package',
                   'package_fetch_source', 'container_runtime_ascend_runtime_package')
# One source per field of a package source.
SOURCE_WITH = {'src': {'src': 'files/' + os.path.basename(DRIVER)}, 'path': {'path': DRIVER}, 'url': URL_SOURCE, 'checksum': URL_SOURCE}

# Dict options without sub-options in the spec: each string they hold, as a function of the character to put in it.
DICT_STRINGS = {
    'os_tuning_sysctl_extra': (
        lambda char: {'net.core.somaxconn' + char: 4096},
        lambda char: {'net.core.somaxconn': '4096' + char},
    ),
    'container_runtime_docker_ce_repo': (
        lambda char: {'url': 'https://download.docker.com/linux/debian' + char, 'gpg_key_url': 'https://download.docker.com/linux/debian/gpg'},
        lambda char: {'url': 'https://download.docker.com/linux/debian', 'gpg_key_url': 'https://download.docker.com/linux/debian/gpg' + char},
    ),
    'vllm_service_env': (
        lambda char: {'OMP_NUM_THREADS' + char: '1'},
        lambda char: {'OMP_NUM_THREADS': '1' + char},
    ),
    'vllm_service_additional_config': (
        lambda char: {'enable_cpu_binding' + char: False},
        lambda char: {'eplb_config': {'expert_map_path': '/srv/maps/map.json' + char}},
    ),
    'vllm_service_speculative_config': (
        lambda char: {'method': 'mtp' + char, 'num_speculative_tokens': 1},
    ),
    'vllm_service_compilation_config': (
        lambda char: {'cudagraph_mode': 'FULL_DECODE_ONLY' + char},
    ),
    'vllm_service_cluster_env': (
        lambda char: {'HCCL_IF_IP' + char: '10.10.0.21'},
        lambda char: {'HCCL_IF_IP': '10.10.0.21' + char},
    ),
    'npu_network_addresses': (
        lambda char: {0: '10.20.0.9' + char},
    ),
    'vllm_cluster_env': (
        lambda char: {'HCCL_EXEC_TIMEOUT' + char: '1800'},
        lambda char: {'HCCL_EXEC_TIMEOUT': '1800' + char},
    ),
    'vllm_service_model_source': (
        lambda char: {'src': '/srv/models/tiny' + char},
        lambda char: {'path': '/mnt/nfs/models/tiny' + char},
    ),
    'vllm_service_compat_waiver': (
        lambda char: dict(WAIVER, reason=WAIVER['reason'] + char),
        lambda char: dict(WAIVER, expires=WAIVER['expires'] + char),
        lambda char: dict(WAIVER, covers={'vllm_ascend': '0.31.0' + char}),
    ),
    'cann_compat_waiver': (
        lambda char: dict(WAIVER, reason=WAIVER['reason'] + char),
        lambda char: dict(WAIVER, covers={'cann' + char: '9.3.0'}),
    ),
    'doctor_compat_waiver': (
        lambda char: dict(WAIVER, reason=WAIVER['reason'] + char),
        lambda char: dict(WAIVER, covers={'vllm_ascend' + char: '0.31.0'}),
    ),
    'doctor_expected_sysctl': (
        lambda char: {'vm.swappiness' + char: 0},
        lambda char: {'vm.swappiness': '0' + char},
    ),
    'doctor_expected_sys': (
        lambda char: {'kernel/mm/transparent_hugepage/enabled' + char: 'never'},
        lambda char: {'/sys/kernel/mm/transparent_hugepage/enabled': 'never' + char},
    ),
    'cann_kernels_package': (
        lambda char: {'910b': {'path': KERNELS + char}},
        lambda char: {'path': KERNELS + char},
        lambda char: {'910b' + char: {'path': KERNELS}},
    ),
}


def role_spec(role):
    with open(os.path.join(REPO, 'roles', role, 'meta', 'argument_specs.yml'), encoding='utf-8') as spec:
        return yaml.safe_load(spec)['argument_specs']['main']['options']


def role_defaults(role):
    with open(os.path.join(REPO, 'roles', role, 'defaults', 'main.yml'), encoding='utf-8') as defaults:
        return yaml.safe_load(defaults) or {}


def good_value(role, name):
    return GOOD[role].get(name, role_defaults(role).get(name))


def string_inputs(role):
    """(variable, function of a character giving a value that holds it) for every string the role's spec takes."""
    inputs = []
    for name, spec in sorted(role_spec(role).items()):
        kind = spec.get('type', 'str')
        if kind in ('str', 'path'):
            sample = STRING_SAMPLES.get(name, good_value(role, name))
            assert isinstance(sample, str), 'give %s a good string value in GOOD' % name
            inputs.append((name, lambda char, sample=sample: sample + char))
        elif kind == 'list' and spec.get('elements') == 'str':
            inputs.append((name, lambda char: ['numactl' + char]))
        elif kind == 'dict' and name in PACKAGE_SOURCES:
            for field in sorted(SOURCE_WITH):
                source = SOURCE_WITH[field]
                inputs.append((name, lambda char, source=source, field=field: dict(source, **{field: source[field] + char})))
        elif kind == 'dict':
            assert name in DICT_STRINGS, 'list the strings %s holds in DICT_STRINGS' % name
            inputs.extend((name, make) for make in DICT_STRINGS[name])
    return inputs


def example_vars(prefix, inventory='example', group='ascend_nodes'):
    """The variables of inventories/<inventory>/group_vars/<group>.yml that start with ``prefix``."""
    with open(os.path.join(REPO, 'inventories', inventory, 'group_vars', group + '.yml'), encoding='utf-8') as example:
        return {name: value for name, value in yaml.safe_load(example).items() if name.startswith(prefix)}


def fixture_version(name, pattern=r'^\s*[Vv]ersion=(\S+)$'):
    """The first version ``pattern`` finds in a captured version file of tests/fixtures/."""
    return re.search(pattern, load_fixture(name), re.MULTILINE).group(1)


def nr_open():
    with open('/proc/sys/fs/nr_open', encoding='ascii') as value:
        return int(value.read())


# Cases named by what they show: the role, the variables on top of GOOD, and the exact messages of the refusal
# (None: the role accepts them). A message of the argument spec starts with 'Validation of arguments failed'.
SPEC_FAILED = 'Validation of arguments failed:\n'
NUMBER = '%s must be a whole number from %s (%s); got %s'
OS_PATH = '%s must be an absolute path ending in .conf (the only files systemd and pam_limits read there), without control characters; got %s'
ABSOLUTE = '%s must be an absolute path without control characters; got %s'
DRIVER_VERSION = 'npu_driver_version must be the driver version of npu_driver_driver_package, such as 24.1.rc1, 24.1.0 or 25.0.rc1.1; got %s'
FIRMWARE_VERSION = 'npu_driver_firmware_version must be the firmware version of npu_driver_firmware_package, such as 7.5.0.3.220; got %s'
ONE_SOURCE = ('%s must be a dict with exactly one of src (a file on the controller), path (a file on the host) or url, and no other key than'
              ' checksum; %s.checksum (for example "sha256:<hex>") is required with %s.url; got %s')
KEY_IN_ARGS = ('%s[0] gives --api-key: the key goes in vllm_service_api_key or vllm_service_api_key_file,'
               ' never in an argv')
CHECKSUM_ACCEPTS = ('package_fetch_source.checksum must be sha256:<64 hex digits> (or sha384 or sha512 at full length; md5 and'
                    ' sha1 are refused); got %s')
CASES = {
    # The example inventory users copy passes each role's checks.
    'vllm_service the example inventory': ('vllm_service', example_vars('vllm_service_'), None),
    'container_runtime the example inventory': ('container_runtime', example_vars('container_runtime_'), None),
    # The two-node DeepSeek example: its serving, cluster and NPU network values.
    'vllm_service the multi-node example inventory': ('vllm_service', example_vars('vllm_service_', 'multinode-deepseek', 'vllm_clusters'), None),
    'vllm_cluster the multi-node example inventory': ('vllm_cluster', example_vars('vllm_cluster_', 'multinode-deepseek', 'vllm_clusters'), None),
    'npu_network the multi-node example inventory': ('npu_network', dict(
        example_vars('npu_network_', 'multinode-deepseek', 'vllm_clusters'), npu_network_cidr=None), None),
    # vllm_service: the serving inputs that must fail before anything changes, each naming the variable
    'vllm_service good inputs': ('vllm_service', {}, None),
    'vllm_service every optional setting null': ('vllm_service', {
        'vllm_service_served_model_name': None, 'vllm_service_model_manifest': None, 'vllm_service_api_key_file': None,
        'vllm_service_vllm_ascend_version': None, 'vllm_service_quantization': None, 'vllm_service_pip_wheelhouse': None,
        'vllm_service_image': None, 'vllm_service_image_archive': None, 'vllm_service_dtype': None,
        'vllm_service_scheduling_policy': None, 'vllm_service_container_engine': None, 'vllm_service_mode': 'native',
        'vllm_service_model_links_within': None}, None),
    'vllm_service links allowed where they leave the model': ('vllm_service', {'vllm_service_model_links_within': '/data/other'}, [
        'vllm_service_model_links_within "/data/other" must hold vllm_service_model "/data/models/DeepSeek-R1-W8A8": it is the'
        " directory the model's symbolic links may lead into (such as the Hugging Face cache of one model, its snapshot the"
        ' model), or null for the model directory itself']),
    'vllm_service a public address without an API key': ('vllm_service', {
        'vllm_service_host': '0.0.0.0', 'vllm_service_api_key_file': None}, [
        'the service listens on 0.0.0.0 (vllm_service_host, or a --host in vllm_service_extra_args or vllm_service_cluster_args),'
        ' which is reachable beyond this host: set vllm_service_api_key or vllm_service_api_key_file, or listen on 127.0.0.1']),
    'vllm_service a public address in the extra arguments without an API key': ('vllm_service', {
        'vllm_service_extra_args': ['--host', '0.0.0.0'], 'vllm_service_api_key_file': None}, [
        'the service listens on 0.0.0.0 (vllm_service_host, or a --host in vllm_service_extra_args or vllm_service_cluster_args),'
        ' which is reachable beyond this host: set vllm_service_api_key or vllm_service_api_key_file, or listen on 127.0.0.1']),
    'vllm_service the key as --api_key is refused without showing it': ('vllm_service', {
        'vllm_service_extra_args': ['--api_key=' + 'k' * 20]}, [
        'vllm_service_extra_args[0] gives --api-key (written --api_key): the key goes in vllm_service_api_key or'
        ' vllm_service_api_key_file, never in an argv']),
    'vllm_service an image that is an option': ('vllm_service', {'vllm_service_image': '--privileged'}, [
        'vllm_service_image must be null or an image reference such as quay.io/ascend/vllm-ascend:v0.13.0; got "--privileged"']),
    'vllm_service a port from the command line': ('vllm_service', {'vllm_service_port': '8080'}, None),
    'vllm_service the recipe knobs': ('vllm_service', {
        'vllm_service_additional_config': {'enable_cpu_binding': False}, 'vllm_service_enable_chunked_prefill': True,
        'vllm_service_speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1},
        'vllm_service_compilation_config': {'cudagraph_mode': 'FULL_DECODE_ONLY'}, 'vllm_service_enable_prefix_caching': False}, None),
    'vllm_service the tutorials\' seed and remote code': ('vllm_service', {
        'vllm_service_seed': 1024, 'vllm_service_trust_remote_code': True}, None),
    'vllm_service the KV cache dtype auto': ('vllm_service', {'vllm_service_kv_cache_dtype': 'auto'}, None),
    'vllm_service a KV cache dtype that is a list': ('vllm_service', {'vllm_service_kv_cache_dtype': ['fp8']},
                                                     'vllm_service_kv_cache_dtype'),
    'vllm_service a seed from the command line': ('vllm_service', {'vllm_service_seed': '1024'}, None),
    'vllm_service a seed numpy cannot take': ('vllm_service', {'vllm_service_seed': 4294967296}, [
        'vllm_service_seed must be null or a whole number from 0 to 4294967295; got 4294967296']),
    'vllm_service a negative seed': ('vllm_service', {'vllm_service_seed': -1}, 'vllm_service_seed'),
    'vllm_service remote code maybe': ('vllm_service', {'vllm_service_trust_remote_code': 'maybe'},
                                       'vllm_service_trust_remote_code'),
    'vllm_service an additional config that is not a mapping': ('vllm_service', {
        'vllm_service_additional_config': '{"enable_cpu_binding": false}'}, 'vllm_service_additional_config'),
    'vllm_service chunked prefill sometimes': ('vllm_service', {'vllm_service_enable_chunked_prefill': 'sometimes'},
                                               'vllm_service_enable_chunked_prefill'),
    'vllm_service an npu-smi path the unit cannot run': ('vllm_service', {'vllm_service_npu_smi_path': '/opt/my tools/npu-smi'}, [
        'vllm_service_npu_smi_path must be null or an absolute path of letters, digits and ._+,:@=/- (the unit runs it);'
        ' got "/opt/my tools/npu-smi"']),
    'vllm_service sizing warns only': ('vllm_service', {'vllm_service_sizing': 'warn'}, None),
    # YAML's off is false: not a choice, whatever type it arrives as.
    'vllm_service sizing off': ('vllm_service', {'vllm_service_sizing': False}, 'vllm_service_sizing'),
    'vllm_service a model path on another host for rsync': ('vllm_service', {'vllm_service_model_source': {'path': 'nas:/models/x'}}, [
        "vllm_service_model_source must be null, {src: <directory on the controller>} or {path: <absolute directory on the node,"
        " without ':'>} (rsync reads host:path as a remote and a leading - as an option); got {\"path\": \"nas:/models/x\"}"]),
    'vllm_service a loopback address without an API key': ('vllm_service', {
        'vllm_service_host': '127.0.0.2', 'vllm_service_api_key_file': None}, None),
    'vllm_service both an API key and a key file': ('vllm_service', {'vllm_service_api_key': 'test-key-0123456789abcdef'}, [
        'Set one of vllm_service_api_key and vllm_service_api_key_file, not both; the key must be 16 to 4096 printable'
        ' characters without blanks.']),
    'vllm_service a short API key': ('vllm_service', {'vllm_service_api_key': 'short', 'vllm_service_api_key_file': MISSING}, [
        'Set one of vllm_service_api_key and vllm_service_api_key_file, not both; the key must be 16 to 4096 printable'
        ' characters without blanks.']),
    'vllm_service an agreement record required without a verified manifest': ('vllm_service', {
        'vllm_service_require_agreement': True, 'vllm_service_verify_model': False}, [
        'vllm_service_require_agreement needs vllm_service_verify_model: the agreement record is looked up by the digest'
        ' of the manifest the model is verified against.']),
    'vllm_service the key in the extra arguments': ('vllm_service', {'vllm_service_extra_args': ['--api-key', 'k' * 20]}, [
        KEY_IN_ARGS % 'vllm_service_extra_args']),
    'vllm_service a pin that is not exact': ('vllm_service', {'vllm_service_pip_packages': ['vllm>=0.13']}, [
        'vllm_service_pip_packages must be null or a list of exact pins, name==version (such as vllm-ascend==0.13.0);'
        ' got ["vllm>=0.13"]']),
    'vllm_service a fraction above 1': ('vllm_service', {'vllm_service_gpu_memory_utilization': 1.5}, [
        'vllm_service_gpu_memory_utilization must be null or a fraction above 0 and at most 1, such as 0.92; got 1.5']),
    'vllm_service no parallelism': ('vllm_service', {'vllm_service_tensor_parallel_size': 0}, [
        'vllm_service_tensor_parallel_size must be a whole number of 1 or more; got 0']),
    'vllm_service a dtype vLLM does not know': ('vllm_service', {'vllm_service_dtype': 'fp8'}, [
        'vllm_service_dtype must be null or one of auto, half, float16, bfloat16, float, float32; got "fp8"']),
    'vllm_service NPUs listed twice': ('vllm_service', {'vllm_service_npus': [0, 1, 1]}, [
        'vllm_service_npus must be null or a non-empty list of distinct NPU ids (0 or more); got [0, 1, 1]']),
    'vllm_service container mode without an image': ('vllm_service', {'vllm_service_mode': 'container', 'vllm_service_image': None}, [
        'vllm_service_image must name the vLLM image (such as quay.io/ascend/vllm-ascend:v0.13.0) in container mode']),
    'vllm_service a node of a multi-node launch': ('vllm_service', {
        'vllm_service_data_parallel_size': 4, 'vllm_service_data_parallel_size_local': 2, 'vllm_service_headless': True,
        'vllm_service_cluster_args': ['--data-parallel-address', '10.10.0.21', '--data-parallel-start-rank', '2'],
        'vllm_service_cluster_env': {'HCCL_IF_IP': '10.10.0.22', 'GLOO_SOCKET_IFNAME': 'enp189s0f0'}}, None),
    'vllm_service more local data-parallel ranks than in all': ('vllm_service', {
        'vllm_service_data_parallel_size': 2, 'vllm_service_data_parallel_size_local': 4}, [
        'vllm_service_data_parallel_size_local must be null or 1 to vllm_service_data_parallel_size; got 4']),
    'vllm_service the key in the cluster arguments': ('vllm_service', {'vllm_service_cluster_args': ['--api-key=' + 'k' * 20]}, [
        KEY_IN_ARGS % 'vllm_service_cluster_args']),
    'vllm_service an executor vLLM does not know': ('vllm_service', {'vllm_service_distributed_executor_backend': 'mpi'}, [
        'vllm_service_distributed_executor_backend must be null or one of mp, ray, uni, external_launcher; got "mpi"']),
    # vllm_benchmark: lengths, the time limit and a run name that would leave the results folder
    'vllm_benchmark good inputs': ('vllm_benchmark', {'vllm_benchmark_run_id': 'nightly-2026.12.01'}, None),
    'vllm_benchmark a run name that leaves the results folder': ('vllm_benchmark', {'vllm_benchmark_run_id': '../../../tmp/x'}, [
        "vllm_benchmark_run_id must be null or a name of letters, digits, '.', '_' and '-' (not first a '.' or '-'), up to 64;"
        ' got "../../../tmp/x"']),
    'vllm_benchmark no input': ('vllm_benchmark', {'vllm_benchmark_input_len': 0}, [
        'vllm_benchmark_input_len must be 1 token or more; got 0']),
    'vllm_benchmark a negative output': ('vllm_benchmark', {'vllm_benchmark_output_len': -1}, [
        'vllm_benchmark_output_len must be 1 token or more; got -1']),
    'vllm_benchmark no time': ('vllm_benchmark', {'vllm_benchmark_timeout': 0}, [
        'vllm_benchmark_timeout must be 1 second or more; got 0']),
    # What scenario vllm once ran a playbook for: refused before any load, from the inputs alone.
    'vllm_benchmark a target on a metric it does not know': ('vllm_benchmark', {'vllm_benchmark_targets': [{'metric': 'p99', 'max': 1}]}, [
        "Task failed: The filter plugin 'kunpeng_ascend.vllm.benchmark_targets' failed: vllm_benchmark_targets[0]: metric 'p99' is"
        ' not one of ' + ', '.join(BENCHMARK_METRICS)]),
    'vllm_benchmark fewer prompts than the concurrency': ('vllm_benchmark', {
        'vllm_benchmark_concurrency': [8, 64], 'vllm_benchmark_num_prompts': 10}, [
        'vllm_benchmark_concurrency must list positive numbers ([8, 64]), vllm_benchmark_num_prompts (10) must be at least the'
        ' highest of them, vllm_benchmark_sample_interval (1.0) 0.1 s or more, and vllm_benchmark_request_rate (inf) inf or a'
        ' positive number.']),
    'vllm_benchmark an empty grid axis': ('vllm_benchmark', {'vllm_benchmark_grid': {'max_num_seqs': []}}, [
        "Task failed: Finalization of task args for 'ansible.builtin.set_fact' failed: Error while resolving value for"
        " '__vllm_benchmark_points': The filter plugin 'kunpeng_ascend.vllm.benchmark_grid' failed: vllm_benchmark_grid.max_num_seqs"
        ' must be a non-empty list of values, not []']),
    'vllm_benchmark an objective it does not know': ('vllm_benchmark', {'vllm_benchmark_objective': {'maximize': 'speed'}}, [
        "vllm_benchmark_objective ({'maximize': 'speed'}) must be {maximize: <metric>} or {minimize: <metric>}, with"
        ' subject_to_targets optional; the metrics are ' + ', '.join(BENCHMARK_METRICS) + '.']),
    # vllm_benchmark's priority class and second target
    'vllm_benchmark a priority class and a second target': ('vllm_benchmark', {
        'vllm_benchmark_priority_share': 0.25, 'vllm_benchmark_priority': -5, 'vllm_benchmark_compare': {
            'base_url': 'http://127.0.0.1:8001', 'model': 'w8a8', 'tokenizer': '/srv/models/w8a8', 'role': 'candidate'}}, None),
    'vllm_benchmark a share above 1 at priority 0': ('vllm_benchmark', {
        'vllm_benchmark_priority_share': 1.5, 'vllm_benchmark_priority': 0}, [
        'vllm_benchmark_priority_share must be null (no priority class) or a number above 0 and up to 1, the share of the'
        ' requests sent with vllm_benchmark_priority; got 1.5; vllm_benchmark_priority must be an integer below 0 (vLLM'
        ' serves lower values first, and the other requests have 0); got 0']),
    'vllm_benchmark a second target without its model directory': ('vllm_benchmark', {
        'vllm_benchmark_compare': {'base_url': 'http://127.0.0.1:8001', 'model': 'w8a8'}}, [
        "vllm_benchmark_compare.tokenizer must be its model directory on the node, for the load generator's tokenizer;"
        ' got None']),
    # vllm_benchmark's soak: the numbers, and a run too short for its interval
    'vllm_benchmark the CI soak': ('vllm_benchmark', {'vllm_benchmark_soak_duration': 75, 'vllm_benchmark_soak_interval': 5,
                                                      'vllm_benchmark_soak_rate': '0.5'}, None),
    'vllm_benchmark a soak without rate': ('vllm_benchmark', {'vllm_benchmark_soak_rate': 0}, [
        'vllm_benchmark_soak_rate must be requests/s, more than 0; got 0']),
    'vllm_benchmark a soak too short for its interval': ('vllm_benchmark', {'vllm_benchmark_soak_duration': 60}, [
        'vllm_benchmark_soak_duration (60 s) less its warm-up (vllm_benchmark_soak_warmup 0.2) leaves 48 s, which at'
        ' vllm_benchmark_soak_interval 30 s gives fewer than the 5 samples the fit needs: make the run longer or the interval'
        ' shorter']),
    'vllm_benchmark a soak warm-up of the whole run': ('vllm_benchmark', {'vllm_benchmark_soak_warmup': 1.0,
                                                                          'vllm_benchmark_soak_max_restarts': -1}, [
        'vllm_benchmark_soak_warmup must be the fraction of the run left out of the fit, 0 to 0.9; got 1.0;'
        ' vllm_benchmark_soak_max_restarts must be a whole number, 0 or more; got -1']),
    # vllm_cluster: the multi-node inputs, each naming the variable
    'vllm_cluster good inputs': ('vllm_cluster', {}, None),
    'vllm_cluster Ray natively': ('vllm_cluster', {
        'vllm_cluster_backend': 'ray', 'vllm_service_mode': 'native', 'vllm_cluster_ray_object_store_memory': 104857600,
        'vllm_cluster_ray_pip_packages': ['ray[default]==2.56.1']}, None),
    # Ray in containers is refused once vllm_service's plan says the mode (tasks/node.yml, before anything changes):
    # the cluster's own checks do not read vllm_service_mode.
    'vllm_cluster Ray with the service in containers passes its own checks': ('vllm_cluster', {
        'vllm_cluster_backend': 'ray', 'vllm_service_mode': 'container'}, None),
    'vllm_cluster a backend it does not know': ('vllm_cluster', {'vllm_cluster_backend': 'mpi'}, [
        SPEC_FAILED + 'value of vllm_cluster_backend must be one of: dp, ray, got: mpi']),
    'vllm_cluster a node not in the play': ('vllm_cluster', {'vllm_cluster_nodes': ['a2-node-09']}, [
        'vllm_cluster_nodes names hosts that are not in this play: ["a2-node-09"]; the play must run on every node of the cluster']),
    'vllm_cluster an address that is not IPv4': ('vllm_cluster', {'vllm_cluster_node_address': '10.10.0.256'}, [
        'vllm_cluster_node_address must be null or an IPv4 address of the node (got "10.10.0.256"); vllm_cluster_env must map'
        ' names of letters, digits and _ (not VLLM_API_KEY) to values without control characters (got the names []; values are'
        ' not shown, they may be secrets).']),
    'vllm_cluster a secret in a bad environment value is not shown': ('vllm_cluster', {
        'vllm_cluster_env': {'HF_TOKEN': 'hf_secret\nvalue'}}, [
        'vllm_cluster_node_address must be null or an IPv4 address of the node (got "10.10.0.21"); vllm_cluster_env must map'
        ' names of letters, digits and _ (not VLLM_API_KEY) to values without control characters (got the names ["HF_TOKEN"];'
        ' values are not shown, they may be secrets).']),
    'vllm_cluster an HCCL timeout out of range': ('vllm_cluster', {'vllm_cluster_hccl_connect_timeout': 60}, [
        'vllm_cluster_hccl_connect_timeout must be 120 to 7200 seconds (HCCL\'s range); got 60']),
    'vllm_cluster a Ray pin that is not exact': ('vllm_cluster', {'vllm_cluster_ray_pip_packages': ['ray>=2']}, [
        'vllm_cluster_ray_pip_packages must be a list of exact pins such as ray==2.56.1; got ["ray>=2"]']),
    'vllm_cluster a small object store': ('vllm_cluster', {'vllm_cluster_ray_object_store_memory': 1024}, [
        "vllm_cluster_ray_object_store_memory must be null or at least 78643200 bytes (Ray's minimum, 75 MiB); got 1024"]),
    # npu_network: one plan, and the check's bounds
    'npu_network good inputs': ('npu_network', {}, None),
    'npu_network the Atlas 800 per-card plan': ('npu_network', {
        'npu_network_cidr': None, 'npu_network_per_card_subnets': ['192.168.100.0/24', '192.168.101.0/24'],
        'npu_network_gateway': 'first', 'npu_network_addresses': {0: '192.168.100.200'}}, None),
    'npu_network without a plan': ('npu_network', {'npu_network_cidr': None}, 'npu_network_cidr'),
    'npu_network two plans': ('npu_network', {'npu_network_per_card_subnets': ['192.168.100.0/24']}, 'npu_network_per_card_subnets'),
    'npu_network a ping scope it does not know': ('npu_network', {'npu_network_ping_scope': 'mesh'}, 'npu_network_ping_scope'),
    'npu_network no ping': ('npu_network', {'npu_network_ping_count': 0}, 'npu_network_ping_count'),
    'npu_network a negative index': ('npu_network', {'npu_network_index': -1}, 'npu_network_index'),
    # os_tuning: ranges, with null and the defaults accepted
    'os_tuning defaults': ('os_tuning', {}, None),
    'os_tuning every setting null': ('os_tuning', {
        'os_tuning_hugepages': None, 'os_tuning_hugetlb_shm_group': None, 'os_tuning_swappiness': None,
        'os_tuning_numa_balancing': None, 'os_tuning_sched_migration_cost_ns': None, 'os_tuning_transparent_hugepages': None,
        'os_tuning_cpu_governor': None, 'os_tuning_nofile': None}, None),
    'os_tuning numbers given as strings (-e)': ('os_tuning', {'os_tuning_swappiness': '10', 'os_tuning_nofile': '1024'}, None),
    'os_tuning the largest values': ('os_tuning', {
        'os_tuning_swappiness': 100, 'os_tuning_numa_balancing': 1, 'os_tuning_nofile': nr_open(),
        'os_tuning_hugepages_max_memory_percent': 100, 'os_tuning_sched_migration_cost_ns': 2147483647}, None),
    'os_tuning extra sysctl settings and packages': ('os_tuning', {
        'os_tuning_sysctl_extra': {'net.core.somaxconn': 4096, 'net.ipv4.ip_local_port_range': '1024 65000', 'vm.overcommit_memory': None},
        'os_tuning_packages_extra': ['linux-tools-common', 'perf'], 'os_tuning_limits_domain': '*',
        'os_tuning_transparent_hugepages': 'madvise', 'os_tuning_cpu_governor': 'schedutil'}, None),
    'os_tuning_swappiness=-1': ('os_tuning', {'os_tuning_swappiness': -1}, [
        NUMBER % ('os_tuning_swappiness', '0 to 100 or null', "vm.swappiness; kernels before 5.8, such as Kylin V10's, accept no more than 100", -1)]),
    'os_tuning_swappiness=1000': ('os_tuning', {'os_tuning_swappiness': 1000}, [
        NUMBER % ('os_tuning_swappiness', '0 to 100 or null', "vm.swappiness; kernels before 5.8, such as Kylin V10's, accept no more than 100", 1000)]),
    'os_tuning_swappiness=1e1': ('os_tuning', {'os_tuning_swappiness': '1e1'}, [
        NUMBER % ('os_tuning_swappiness', '0 to 100 or null', "vm.swappiness; kernels before 5.8, such as Kylin V10's, accept no more than 100", '"1e1"')]),
    'os_tuning_numa_balancing=7': ('os_tuning', {'os_tuning_numa_balancing': 7}, [
        NUMBER % ('os_tuning_numa_balancing', '0 to 1 or null', 'kernel.numa_balancing: 0 off, 1 on', 7)]),
    'os_tuning_sched_migration_cost_ns=-1': ('os_tuning', {'os_tuning_sched_migration_cost_ns': -1}, [
        NUMBER % ('os_tuning_sched_migration_cost_ns', '0 to 2147483647 or null', 'kernel.sched_migration_cost_ns, in nanoseconds', -1)]),
    'os_tuning_nofile=-1': ('os_tuning', {'os_tuning_nofile': -1}, [
        NUMBER % ('os_tuning_nofile', '1 to %d or null' % nr_open(), "open files; the kernel refuses more than its fs.nr_open, read from this host", -1)]),
    'os_tuning_nofile above fs.nr_open': ('os_tuning', {'os_tuning_nofile': nr_open() + 1}, [
        NUMBER % ('os_tuning_nofile', '1 to %d or null' % nr_open(), "open files; the kernel refuses more than its fs.nr_open, read from this host",
                  nr_open() + 1)]),
    'os_tuning_hugepages=-5 (no confusing -10 MiB)': ('os_tuning', {'os_tuning_hugepages': -5}, [
        NUMBER % ('os_tuning_hugepages', '0 up or null', "pages of the host's hugepage size; preflight then compares them with the host's memory", -5)]),
    'os_tuning_hugepages_max_memory_percent=500': ('os_tuning', {'os_tuning_hugepages_max_memory_percent': 500}, [
        NUMBER % ('os_tuning_hugepages_max_memory_percent', '1 to 100', "percent of the host's memory", 500)]),
    'os_tuning_hugepages_max_memory_percent=null': ('os_tuning', {'os_tuning_hugepages_max_memory_percent': None}, [
        SPEC_FAILED + "argument 'os_tuning_hugepages_max_memory_percent' is of type NoneType and we were unable to convert to int:"
        ' "None" cannot be converted to an int']),
    'os_tuning_sysctl_file relative': ('os_tuning', {'os_tuning_sysctl_file': 'sysctl.d/90-vllm.conf'}, [
        OS_PATH % ('os_tuning_sysctl_file', '"sysctl.d/90-vllm.conf"')]),
    'os_tuning_limits_file not .conf': ('os_tuning', {'os_tuning_limits_file': '/etc/security/limits.d/90-vllm'}, [
        OS_PATH % ('os_tuning_limits_file', '"/etc/security/limits.d/90-vllm"')]),
    'os_tuning_cpu_governor injecting a tmpfiles.d line': ('os_tuning', {'os_tuning_cpu_governor': 'performance\nw /etc/shadow - - - - x'}, [
        'os_tuning_cpu_governor must be a governor name such as performance (lower-case letters, digits and _) or null;'
        ' got "performance\\nw /etc/shadow - - - - x"']),
    'os_tuning_limits_domain injecting a limits.d line': ('os_tuning', {'os_tuning_limits_domain': '@HwHiAiUser\n* hard nofile 0'}, [
        'os_tuning_limits_domain must be one word in limits.conf syntax (a user name, @group or *), without spaces or control characters;'
        ' got "@HwHiAiUser\\n* hard nofile 0"']),
    'os_tuning_transparent_hugepages=sometimes': ('os_tuning', {'os_tuning_transparent_hugepages': 'sometimes'}, [
        'os_tuning_transparent_hugepages must be always, madvise, never or null; got "sometimes"']),
    'os_tuning_sysctl_extra key leaving /proc/sys': ('os_tuning', {'os_tuning_sysctl_extra': {'../../etc/shadow': 'x'}}, [
        'a key of os_tuning_sysctl_extra must be a sysctl name such as net.core.somaxconn (words of letters, digits, _ and - joined by dots);'
        ' got "../../etc/shadow"']),
    'os_tuning_sysctl_extra value a list': ('os_tuning', {'os_tuning_sysctl_extra': {'net.core.somaxconn': [1]}}, [
        'os_tuning_sysctl_extra["net.core.somaxconn"] must be a string or a number without control characters, or null (not set); got [1]']),
    'os_tuning_packages_extra an option': ('os_tuning', {'os_tuning_packages_extra': ['-oAPT::Get::AllowUnauthenticated=1']}, [
        'os_tuning_packages_extra[0] must be a package name (it starts with a letter or digit and has no spaces or control characters);'
        ' got "-oAPT::Get::AllowUnauthenticated=1"']),
    'os_tuning_packages_extra a string': ('os_tuning', {'os_tuning_packages_extra': 'perf'}, [
        'os_tuning_packages_extra must be a list of package names and os_tuning_sysctl_extra a dict of sysctl settings ({key: value});'
        ' got "perf" and {}']),
    # npu_driver: versions, numbers and package sources, refused before the HwHiAiUser account is created
    'npu_driver good inputs': ('npu_driver', {}, None),
    'npu_driver versions of real version files': ('npu_driver', {
        'npu_driver_version': fixture_version('driver-version.info_25.3.rc1_faq-indented.txt'),
        'npu_driver_firmware_version': fixture_version('firmware-version.info_7.1.0.11.220_mindcluster-doc.txt')}, None),
    'npu_driver versions with build numbers and upper case': ('npu_driver', {
        'npu_driver_version': '25.0.RC1.1', 'npu_driver_firmware_version': '7.7.0.1.231', 'npu_driver_min_free_gb': 0.5,
        'npu_driver_install_timeout': 0, 'npu_driver_ready_delay': 0}, None),
    'npu_driver sources from the controller and a URL': ('npu_driver', {
        'npu_driver_driver_package': {'src': 'packages/' + os.path.basename(DRIVER)},
        'npu_driver_firmware_package': {'url': 'https://example.invalid/' + os.path.basename(FIRMWARE), 'checksum': CHECKSUM}}, None),
    "npu_driver_version='24.1;rm -rf /'": ('npu_driver', {'npu_driver_version': '24.1;rm -rf /'}, [DRIVER_VERSION % '"24.1;rm -rf /"']),
    "npu_driver_version='24.1..rc1'": ('npu_driver', {'npu_driver_version': '24.1..rc1'}, [DRIVER_VERSION % '"24.1..rc1"']),
    "npu_driver_version='24.1.rc1.'": ('npu_driver', {'npu_driver_version': '24.1.rc1.'}, [DRIVER_VERSION % '"24.1.rc1."']),
    "npu_driver_version=''": ('npu_driver', {'npu_driver_version': ''}, [DRIVER_VERSION % '""']),
    "npu_driver_firmware_version='x y'": ('npu_driver', {'npu_driver_firmware_version': 'x y'}, [FIRMWARE_VERSION % '"x y"']),
    'npu_driver_min_free_gb=-1': ('npu_driver', {'npu_driver_min_free_gb': -1}, ['npu_driver_min_free_gb must be GiB, 0 or more; got -1']),
    'npu_driver_reboot_timeout=0': ('npu_driver', {'npu_driver_reboot_timeout': 0}, ['npu_driver_reboot_timeout must be seconds, 1 or more; got 0']),
    'npu_driver_ready_retries=-1': ('npu_driver', {'npu_driver_ready_retries': -1},
                                    ['npu_driver_ready_retries must be how many times to read npu-smi, 1 or more; got -1']),
    'npu_driver_ready_delay=-1': ('npu_driver', {'npu_driver_ready_delay': -1}, ['npu_driver_ready_delay must be seconds, 0 or more; got -1']),
    'npu_driver_install_timeout=-1': ('npu_driver', {'npu_driver_install_timeout': -1},
                                      ['npu_driver_install_timeout must be seconds, 0 (no limit) or more; got -1']),
    'npu_driver_expected_chips=0': ('npu_driver', {'npu_driver_expected_chips': 0},
                                    ['npu_driver_expected_chips must be the number of NPU chips npu-smi shows, 1 or more; got 0']),
    'npu_driver_package_dir relative': ('npu_driver', {'npu_driver_package_dir': 'cache'}, [ABSOLUTE % ('npu_driver_package_dir', '"cache"')]),
    "npu_driver_driver_package={'path': 5}": ('npu_driver', {'npu_driver_driver_package': {'path': 5}}, [
        'npu_driver_driver_package.path must be an absolute path of a file on the host (not ending in /) without control characters; got 5']),
    'npu_driver_driver_package {}': ('npu_driver', {'npu_driver_driver_package': {}}, [
        ONE_SOURCE % (('npu_driver_driver_package',) * 3 + ('{}',))]),
    'npu_driver_driver_package path and url': ('npu_driver', {'npu_driver_driver_package': {'path': DRIVER, 'url': URL_SOURCE['url']}}, [
        ONE_SOURCE % (('npu_driver_driver_package',) * 3 + (json.dumps({'path': DRIVER, 'url': URL_SOURCE['url']}),))]),
    'npu_driver without the packages and versions it requires': ('npu_driver', {
        'npu_driver_version': MISSING, 'npu_driver_firmware_version': MISSING, 'npu_driver_driver_package': MISSING,
        'npu_driver_firmware_package': MISSING}, [
        SPEC_FAILED + 'missing required arguments: npu_driver_driver_package, npu_driver_firmware_package, npu_driver_firmware_version,'
        ' npu_driver_version']),
    'npu_driver_version a YAML number': ('npu_driver', {'npu_driver_version': 24.1}, [DRIVER_VERSION % '24.1']),
    'npu_driver_firmware_package url without checksum': ('npu_driver', {'npu_driver_firmware_package': {'url': URL_SOURCE['url']}}, [
        ONE_SOURCE % (('npu_driver_firmware_package',) * 3 + (json.dumps({'url': URL_SOURCE['url']}),))]),
    # cann
    'cann good inputs': ('cann', {}, None),
    'cann one kernels source, a test build, no NNAL': ('cann', {
        'cann_kernels_package': {'path': KERNELS}, 'cann_nnal_package': None, 'cann_vllm_ascend_version': None,
        'cann_version': fixture_version('version.cfg_ascend-toolkit-latest_7.6.T13.0.B094-8.0.T63.txt', r'^toolkit_running_version=\[[^:]*:([^\]]+)\]$')},
        None),
    'cann a CANN 8.5 toolkit version': ('cann', {'cann_version': fixture_version('ascend_toolkit_install.info_cann8.5.0_from_issue4930.txt')}, None),
    'cann kernels keyed 910': ('cann', {'cann_kernels_package': {910: {'path': KERNELS}}}, None),
    'cann without cann_version': ('cann', {'cann_version': MISSING}, [SPEC_FAILED + 'missing required arguments: cann_version']),
    'cann_accept_eula=false': ('cann', {'cann_accept_eula': False}, [
        "The CANN packages are licensed under Huawei's End User License Agreement: read it and set cann_accept_eula: true to install them."]),
    "cann_version='8.1.RC1; reboot'": ('cann', {'cann_version': '8.1.RC1; reboot'}, [
        'cann_version must be a CANN version as Huawei writes it, such as 8.1.RC1 or 8.5.0; got "8.1.RC1; reboot"']),
    'cann_vllm_ascend_version=latest': ('cann', {'cann_vllm_ascend_version': 'latest'}, [
        'cann_vllm_ascend_version must be a vllm-ascend version such as v0.9.1 or 0.10.0rc1, or null; got "latest"']),
    'cann_env_file a directory': ('cann', {'cann_env_file': '/etc/ascend/'}, [
        'cann_env_file must be an absolute path of a file (not ending in /) without control characters; got "/etc/ascend/"']),
    'cann_install_path relative': ('cann', {'cann_install_path': 'Ascend'}, [ABSOLUTE % ('cann_install_path', '"Ascend"')]),
    'cann_kernels_package unknown SoC': ('cann', {'cann_kernels_package': {'a5': {'path': KERNELS}}}, [
        'cann_kernels_package must be one package source (src, path or url) or a dict of sources keyed by SoC, one of'
        ' 910b, a2, 910B, A2, a3, 910_93, A3, 310p, 310P, 910; got the keys ["a5"]']),
    'cann_kernels_package for 910b with two sources': ('cann', {'cann_kernels_package': {'910b': {'path': KERNELS, 'url': URL_SOURCE['url']}}}, [
        ONE_SOURCE % (('cann_kernels_package.910b',) * 3 + (json.dumps({'path': KERNELS, 'url': URL_SOURCE['url']}),))]),
    'cann_nnal_package relative path': ('cann', {'cann_nnal_package': {'path': 'nnal.run'}}, [
        'cann_nnal_package.path must be an absolute path of a file on the host (not ending in /) without control characters; got "nnal.run"']),
    # The waiver of the compatibility set: checked alone before anything, as the cann and vllm_service roles take it.
    'vllm_service waiver': ('vllm_service', {'vllm_service_compat_waiver': WAIVER}, None),
    'vllm_service waiver without a reason': ('vllm_service', {'vllm_service_compat_waiver': {'expires': '2099-12-31'}}, [
        WAIVER_MESSAGE % ('vllm_service', 'the waiver needs a reason: 10 to 500 characters on one line saying who accepted '
                          'the risk and why (a change ticket)')]),
    'vllm_service waiver past its expiry': ('vllm_service', {'vllm_service_compat_waiver': dict(WAIVER, expires='2020-01-31')}, [
        WAIVER_MESSAGE % ('vllm_service', 'the waiver expired on 2020-01-31 (reason: %s): renew it with a new date, or use a '
                          'combination of the compatibility set' % WAIVER['reason'])]),
    'cann waiver with a date of another form': ('cann', {'cann_compat_waiver': dict(WAIVER, expires='31.12.2099')}, [
        WAIVER_MESSAGE % ('cann', "the waiver needs expires, the last day it holds, as YYYY-MM-DD (not '31.12.2099')")]),
    # doctor: what it reads stays where it says, and unit names cannot be options
    'doctor good inputs': ('doctor', {}, None),
    'doctor the defaults, every service value from the host': ('doctor', {
        'doctor_service_name': None, 'doctor_service_mode': None, 'doctor_container_engine': None,
        'doctor_vllm_ascend_version': None}, None),
    'doctor a waiver past its expiry is the versions check\'s business': ('doctor', {
        'doctor_compat_waiver': dict(WAIVER, expires='2020-01-31')}, None),
    'doctor a service name that is an option': ('doctor', {'doctor_service_name': '-H x'}, [
        'the doctor_service_name \'-H x\' starts with "-", which systemd tools would read as an option']),
    'doctor a service name with a separator': ('doctor', {'doctor_service_name': 'a;b'}, [
        'the doctor_service_name \'a;b\' holds \';\', which systemd does not allow in a unit name (letters, digits, ":", "-",'
        ' "_", ".", "\\" and "@" only)']),
    'doctor a sysctl key leaving /proc/sys': ('doctor', {'doctor_expected_sysctl': {'../../etc/shadow': 1}}, [
        'a key of doctor_expected_sysctl must be a sysctl name such as vm.swappiness (words of letters, digits, _ and -'
        ' joined by dots); got "../../etc/shadow"']),
    'doctor a /sys key leaving /sys': ('doctor', {'doctor_expected_sys': {'kernel/../../etc/shadow': 'x'}}, [
        'a key of doctor_expected_sys must be a path under /sys such as kernel/mm/transparent_hugepage/enabled or'
        ' /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor (globs allowed; no .., no other absolute path);'
        ' got "kernel/../../etc/shadow"']),
    'doctor a sysctl file outside sysctl.d': ('doctor', {'doctor_sysctl_file': '/etc/shadow'}, [
        'doctor_sysctl_file must be a .conf file directly in /etc/sysctl.d or /run/sysctl.d or /usr/local/lib/sysctl.d or'
        ' /usr/lib/sysctl.d or /lib/sysctl.d; got "/etc/shadow"']),
    'doctor a mode it does not know': ('doctor', {'doctor_service_mode': 'vm'}, 'doctor_service_mode'),
    'doctor a site row of the compatibility set': ('doctor', {'ascend_compat_site_rows': [
        {'vllm_ascend': '0.30.0', 'vllm': '0.30.0', 'cann': '9.2.1', 'driver': '25.6.RC3.1'}]}, None),
    'doctor a site row without its CANN': ('doctor', {'ascend_compat_site_rows': [{'vllm_ascend': '0.30.0', 'vllm': '0.30.0'}]}, [
        'ascend_compat_site_rows[0].cann is missing: every row names its CANN version']),
    'doctor no journal line': ('doctor', {'doctor_journal_lines': 0}, 'doctor_journal_lines'),
    'doctor a negative TLS threshold': ('doctor', {'doctor_tls_warn_days': -1}, 'doctor_tls_warn_days'),
    # package_fetch, as the roles call it for each source
    'package_fetch url with checksum': ('package_fetch', {}, None),
    'package_fetch url naming no file': ('package_fetch', {'package_fetch_source': {'url': 'https://example.invalid/', 'checksum': CHECKSUM}}, [
        'package_fetch_source.url must be an http, https, ftp or file URL of a file, without spaces or control characters;'
        ' got "https://example.invalid/"']),
    'package_fetch checksum not hex': ('package_fetch', {'package_fetch_source': dict(URL_SOURCE, checksum='sha256:xyz')}, [
        CHECKSUM_ACCEPTS % '"sha256:xyz"']),
    'package_fetch an md5 checksum': ('package_fetch', {'package_fetch_source': dict(URL_SOURCE, checksum='md5:' + '0' * 32)}, [
        CHECKSUM_ACCEPTS % ('"md5:' + '0' * 32 + '"')]),
    'package_fetch a cut sha256': ('package_fetch', {'package_fetch_source': dict(URL_SOURCE, checksum=CHECKSUM[:20])}, [
        CHECKSUM_ACCEPTS % ('"' + CHECKSUM[:20] + '"')]),
    'package_fetch a sha512': ('package_fetch', {'package_fetch_source': dict(URL_SOURCE, checksum='sha512:' + 'a' * 128)}, None),
    'package_fetch the password of a URL is not shown': ('package_fetch', {'package_fetch_source': {
        'url': 'https://mirror-user:s3cret-pw@example.invalid/ascend/x.run'}}, [
        ONE_SOURCE % (('package_fetch_source',) * 3 + ('{"url": "https://********@example.invalid/ascend/x.run"}',))]),
    'package_fetch url with a null checksum': ('package_fetch', {'package_fetch_source': dict(URL_SOURCE, checksum=None)}, [
        ONE_SOURCE % (('package_fetch_source',) * 3 + (json.dumps(dict(URL_SOURCE, checksum=None), sort_keys=True),))]),
    'package_fetch a misspelt key': ('package_fetch', {'package_fetch_source': {'pth': DRIVER}}, [
        ONE_SOURCE % (('package_fetch_source',) * 3 + (json.dumps({'pth': DRIVER}),))]),
    'package_fetch without a source': ('package_fetch', {'package_fetch_source': MISSING}, [
        SPEC_FAILED + 'missing required arguments: package_fetch_source']),
    'package_fetch source not a dict': ('package_fetch', {'package_fetch_source': 'path=' + DRIVER}, [
        ONE_SOURCE % (('package_fetch_source',) * 3 + (json.dumps('path=' + DRIVER),))]),
}


def control_cases():
    """Every string every role takes, refused with a control character, naming the variable: each with a trailing
    newline (which a pattern ending in $ would let through) and with one more control character before more text,
    taking the characters in turn so that each one meets several variables."""
    cases = {}
    # vllm_benchmark's strings (its grid, targets and extra arguments) reach only its own module, which checks them.
    for role in [role for role in ROLES if role != 'vllm_benchmark']:
        for index, (name, make) in enumerate(string_inputs(role)):
            for text in ('\n', CONTROL_CHARACTERS[1 + index % (len(CONTROL_CHARACTERS) - 1)] + 'injected'):
                cases['%s: %s holding %r (%d)' % (role, name, text, index)] = (role, dict(EXCLUDES.get(name, {}), **{name: make(text)}), name)
    return cases


CONTROL_CASES = control_cases()


def host_variables(role, variables):
    """GOOD for ``role`` with the case's variables on top, without those the case sets to MISSING."""
    merged = dict(GOOD.get(role, {}), **variables)
    return {name: value for name, value in merged.items() if value is not MISSING}


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    """Every case of this file, run once per role; keyed by case name."""
    outcomes = {}
    for role in ROLES:
        named = [(name, variables) for name, (case_role, variables, dummy) in list(CASES.items()) + list(CONTROL_CASES.items())
                 if case_role == role]
        ran = role_harness.run_play(tmp_path_factory.mktemp(role), role, [host_variables(role, variables) for dummy, variables in named])
        outcomes.update(zip([name for name, dummy in named], ran))
    return outcomes


@pytest.mark.parametrize('name', sorted(CASES))
def test_input_case(results, name):
    expected = CASES[name][2]
    if expected is None:
        assert results[name] == {'accepted': True}
    elif isinstance(expected, str):
        # The refusal names the variable (its exact text is the role's README's business).
        assert not results[name]['accepted'] and expected in ' '.join(results[name]['messages'])
    else:
        assert results[name]['messages'] == expected


@pytest.mark.parametrize('name', sorted(CONTROL_CASES))
def test_string_input_with_a_control_character_is_refused(results, name):
    variable = CONTROL_CASES[name][2]
    assert not results[name]['accepted']
    assert variable in ' '.join(results[name]['messages'])


def test_control_character_cases_cover_what_lands_in_files():
    """The strings of the templates are among those CONTROL_CASES sends control characters in."""
    covered = {name for dummy, dummy_variables, name in CONTROL_CASES.values()}
    assert {'os_tuning_cpu_governor', 'os_tuning_limits_domain', 'os_tuning_sysctl_extra', 'os_tuning_transparent_hugepages',
            'npu_driver_version', 'npu_driver_driver_package', 'cann_install_path', 'cann_kernels_package'} <= covered
    for role in ROLES:
        templates = os.path.join(REPO, 'roles', role, 'templates')
        for template in os.listdir(templates) if os.path.isdir(templates) else ():
            with open(os.path.join(templates, template), encoding='utf-8') as text:
                # The role's options; its exported facts (vllm_service_plan) come from its own checked plan.
                used = set(re.findall(r'\b(%s_[a-z_]+)' % role, text.read())) - {role + '_plan'}
            spec = role_spec(role)
            assert used <= set(spec), template
            assert {name for name in used if spec[name].get('type', 'str') in ('str', 'path', 'list', 'dict')} <= covered, template
