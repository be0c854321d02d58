# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The serving plan's inputs (step 1 of serving_plan, _serving.py): the vllm_service variables it takes (INPUT_KEYS),
the facts (FACTS_KEYS), the flags of `vllm serve` it guards, the choices and their bounds, and the inputs normalised
(numbers, booleans). Standard library only.
Its tests: tests/unit/plugins/module_utils/serving/test__plan_inputs.py.
"""

from __future__ import annotations

import ipaddress
import json
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import mask_text, url_secrets


# The valued `vllm serve` options the role sets from its own variables, in argv order: (variable, option).
VALUED_FLAGS = (
    ('tensor_parallel_size', '--tensor-parallel-size'),
    ('data_parallel_size', '--data-parallel-size'),
    ('data_parallel_size_local', '--data-parallel-size-local'),
    ('distributed_executor_backend', '--distributed-executor-backend'),
    ('max_model_len', '--max-model-len'),
    ('max_num_seqs', '--max-num-seqs'),
    ('max_num_batched_tokens', '--max-num-batched-tokens'),
    ('gpu_memory_utilization', '--gpu-memory-utilization'),
    ('quantization', '--quantization'),
    ('dtype', '--dtype'),
    ('scheduling_policy', '--scheduling-policy'),
    ('seed', '--seed'),
)
# The switches the role sets from its booleans: (variable, option).
SWITCH_FLAGS = (
    ('enable_expert_parallel', '--enable-expert-parallel'),
    ('enforce_eager', '--enforce-eager'),
    ('headless', '--headless'),
    ('trust_remote_code', '--trust-remote-code'),
)
# Options whose last occurrence decides where the API listens and who may call it; extra arguments may give
# --host and --port (the plan reads the final argv), never the key nor a file of options the plan cannot read.
ADDRESS_FLAGS = ('--host', '--port')
FORBIDDEN_FLAGS = {
    '--api-key': 'the key goes in vllm_service_api_key or vllm_service_api_key_file, never in an argv',
    '--config': 'a file of options would decide the address and the key out of the plan\'s sight; give the options '
                'themselves',
    '--uds': 'the service listens on TCP (vllm_service_host and vllm_service_port)',
    '--ssl-certfile': 'the certificate goes in vllm_service_tls_cert (the role puts it in place and its clients '
                      'verify it)',
    '--ssl-keyfile': 'the key goes in vllm_service_tls_key (the role keeps it readable by root only)',
}
# Every option the plan reads, for the abbreviations argparse accepts (a unique prefix of an option is that option).
GUARDED_FLAGS = ADDRESS_FLAGS + tuple(sorted(FORBIDDEN_FLAGS))

# The serving parameters a run records and a tuning grid may set (vllm_service variables without their prefix).
# The recipe knobs among them: a benchmark run records them, a grid may vary them, each checked by the plan.
SERVING_PARAMS = ('tensor_parallel_size', 'data_parallel_size', 'enable_expert_parallel', 'max_model_len',
                  'max_num_seqs', 'max_num_batched_tokens', 'gpu_memory_utilization', 'quantization', 'dtype',
                  'scheduling_policy', 'seed', 'enforce_eager', 'trust_remote_code', 'additional_config',
                  'speculative_config', 'compilation_config', 'enable_chunked_prefill', 'enable_prefix_caching',
                  'kv_cache_dtype', 'cpu_kvcache_space', 'extra_args')

CHOICES = {
    'dtype': ('auto', 'half', 'float16', 'bfloat16', 'float', 'float32'),
    'scheduling_policy': ('fcfs', 'priority'),
    'distributed_executor_backend': ('mp', 'ray', 'uni', 'external_launcher'),
    'container_engine': ('docker', 'podman'),
    'mode': ('auto', 'native', 'container'),
    'numa_bind': ('auto', 'numactl', 'vllm_ascend', 'none'),
    # What a refused sizing does: fail the plan, warn only, or no sizing (a caller whose layout is not the final one).
    'sizing': ('refuse', 'warn', 'skip'),
}
# The choices that have no null.
NOT_NULL_CHOICES = ('mode', 'numa_bind', 'sizing')

# Every key of the plan's inputs: the vllm_service variables without their prefix, as roles/vllm_service/vars/main.yml
# (__vllm_service_inputs, their one producer) gives them, and api_key_set (whether there is a key, never the key).
# The filter's documentation lists exactly these (plugins/filter/serving_plan.yml; a test keeps the three equal).
INPUT_KEYS = (
    'name', 'mode', 'model', 'model_links_within', 'served_model_name', 'host', 'port', 'api_key_set', 'api_key_file',
    'tls_cert', 'tls_key', 'tls_ca', 'tls_server_name', 'tensor_parallel_size', 'data_parallel_size',
    'data_parallel_size_local', 'headless', 'distributed_executor_backend', 'cluster_args', 'cluster_env',
    'enable_expert_parallel', 'max_model_len', 'max_num_seqs', 'max_num_batched_tokens', 'gpu_memory_utilization',
    'quantization', 'dtype', 'scheduling_policy', 'seed', 'enforce_eager', 'trust_remote_code', 'additional_config', 'speculative_config',
    'compilation_config', 'enable_chunked_prefill', 'enable_prefix_caching', 'kv_cache_dtype', 'extra_args', 'env', 'cpu_kvcache_space',
    'vllm_ascend_version', 'npus', 'numa_bind', 'venv', 'pip_packages', 'image', 'container_engine', 'shm_size',
    'use_ascend_runtime', 'mount_driver_dir', 'volumes', 'network', 'ipc_host', 'cap_add', 'cache_dir', 'user',
    'cann_env_file', 'sizing', 'npu_smi_path', 'pip_remove', 'model_manifest', 'model_source', 'python', 'pip_wheelhouse',
    'image_archive', 'sysfs_path', 'headless_settle', 'manifest_workers', 'start_timeout', 'stop_timeout',
    'npu_free_timeout', 'npu_free_interval', 'restart_burst', 'restart_interval', 'wait_for_endpoints',
    'wait_for_timeout',
)
# Every key of what the host said that serving_plan reads (preflight.yml gives them): the filter's documentation lists
# exactly these, and a test that the plan reads no other.
FACTS_KEYS = (
    'npu_count', 'architecture', 'npu_devices', 'chips', 'npu_smi_found', 'npu_smi_complete', 'npu_smi_incomplete_reason',
    'existing_paths', 'engine_paths', 'engine_missing_ok', 'ascend_runtime', 'container_engine', 'systemd_version', 'account', 'uid_min',
    'key_file', 'model_format', 'model_config', 'model_weights', 'driver_version', 'target_driver_version',
)

# The environment every mode gets: offline (no model hub, no usage report).
ENV_BASE = {'HF_HUB_OFFLINE': '1', 'VLLM_NO_USAGE_STATS': '1', 'DO_NOT_TRACK': '1'}
# The vllm-ascend tutorials' environment, by the first release that documents it (newest first). OMP_NUM_THREADS
# went from 100 to 1 and HCCL_BUFFSIZE from 1024 to 200; VLLM_USE_V1 is 0.9-era only; HCCL_OP_EXPANSION_MODE=AIV
# came later.
ENV_NPU_BY_RELEASE = (
    ((0, 11, 0), {'PYTORCH_NPU_ALLOC_CONF': 'expandable_segments:True', 'OMP_PROC_BIND': 'false',
                  'OMP_NUM_THREADS': '1', 'HCCL_BUFFSIZE': '200', 'HCCL_OP_EXPANSION_MODE': 'AIV',
                  'TASK_QUEUE_ENABLE': '1'}),
    ((0, 9, 0), {'PYTORCH_NPU_ALLOC_CONF': 'expandable_segments:True', 'OMP_PROC_BIND': 'false',
                 'OMP_NUM_THREADS': '100', 'HCCL_BUFFSIZE': '1024', 'TASK_QUEUE_ENABLE': '1', 'VLLM_USE_V1': '1'}),
    ((0, 0, 0), {'PYTORCH_NPU_ALLOC_CONF': 'expandable_segments:True', 'OMP_NUM_THREADS': '100',
                 'HCCL_BUFFSIZE': '1024', 'TASK_QUEUE_ENABLE': '1'}),
)

# The driver files a container needs when no Ascend runtime injects them (vllm-ascend's documented recipe), each
# mounted only where the host has it; npu-smi is in /usr/local/bin on most products, /usr/local/sbin on some.
DRIVER_FILES = (
    '/usr/local/dcmi',
    '/usr/local/Ascend/driver/tools/hccn_tool',
    '/usr/local/bin/npu-smi',
    '/usr/local/sbin/npu-smi',
    '/usr/local/Ascend/driver/version.info',
    '/etc/ascend_install.info',
)
DRIVER_LIB = '/usr/local/Ascend/driver/lib64'
DRIVER_DIR = '/usr/local/Ascend/driver'
# The NPU control devices a container gets where the host has them (Atlas 200I-class boards have the last two).
CONTROL_DEVICES = ('/dev/davinci_manager', '/dev/devmm_svm', '/dev/hisi_hdc', '/dev/ascend_manager', '/dev/user_config')
# What the role looks for on the host before the plan: the driver files and control devices it may mount.
PROBE_PATHS = DRIVER_FILES + CONTROL_DEVICES
# Capabilities a container may add (vllm-ascend recipes add some for profiling and pinned memory); never SYS_ADMIN
# and never --privileged, which would give the container the host.
CAP_ADD_ALLOWED = ('IPC_LOCK', 'SYS_NICE', 'SYS_PTRACE', 'SYS_RESOURCE')
NETWORKS = ('host', 'bridge')
# The image's own system, which a read-only mount of vllm_service_model_links_within at the same path would hide (with
# _paths' system directories and trees): refused in container mode.
IMAGE_SYSTEM = ('/', '/bin', '/boot', '/dev', '/etc', '/home', '/lib', '/lib32', '/lib64', '/libx32', '/opt', '/proc',
                '/root', '/run', '/sbin', '/sys', '/tmp', '/usr', '/var', '/vllm-workspace')
# The container path of the service's state directory (vLLM's caches).
CONTAINER_CACHE = '/root/.cache'
# TLS: the service's certificate, key and CA on the node, in a directory of the service's own (the key root-only);
# a native service reads the key as a systemd credential of this name ($CREDENTIALS_DIRECTORY, LoadCredential=).
TLS_DIR = '/etc/kunpeng-ascend-vllm/tls'
TLS_CREDENTIAL = 'vllm-tls-key'
TLS_FILES = (('cert', 'cert.pem'), ('key', 'key.pem'), ('ca', 'ca.pem'))
TLS_INPUTS = ('tls_cert', 'tls_key', 'tls_ca')

_NAME = re.compile(r'[A-Za-z0-9_.-]{1,64}\Z')
_HOST = re.compile(r'[A-Za-z0-9_.:-]{1,253}\Z')
_ENV_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
_NO_CONTROL = re.compile(r'[^\x00-\x1f\x7f]*\Z')
_NO_BLANK = re.compile(r'[^\x00-\x20\x7f]{1,1024}\Z')
_SERVED_NAME = re.compile(r'[^\x00-\x20\x7f]{1,256}\Z')
_PATH = re.compile(r'/[^\x00-\x1f\x7f]*\Z')
_USER = re.compile(r'[a-z_][a-z0-9_-]{0,31}\Z')
_SHM = re.compile(r'[0-9]+[bkmgBKMG]?\Z')
# A release as the role takes it (v0.13.0, 0.10.0rc1): no blanks, not first a '-'.
_RELEASE = re.compile(r'[^\x00-\x20\x7f-][^\x00-\x20\x7f]{0,63}\Z')
# Exact pins only: the role installs what is not installed at exactly that version, so a re-run changes nothing.
_PIN = re.compile(r'[A-Za-z0-9._-]+==[A-Za-z0-9.+!_-]+\Z')
_PACKAGE = re.compile(r'[A-Za-z0-9._-]+\Z')
_NO_CONTROL_NOT_OPTION = re.compile(r'[^\x00-\x1f\x7f-][^\x00-\x1f\x7f]*\Z')
_NODE_DIR = re.compile(r'/[^:\x00-\x1f\x7f]*\Z')
# A path that lands in the unit's command line unquoted: no blank, nothing systemd expands (%, $) or quotes.
_UNIT_PATH = re.compile(r'/[A-Za-z0-9._+,:@=/-]{0,4095}\Z')
# An image reference: [registry[:port]/]path[:tag][@digest], lower-case path components (the engines' grammar).
_IMAGE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*'
                    r'(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?\Z')
_VOLUME = re.compile(r'(/[^:\x00-\x1f\x7f]*):(/[^:\x00-\x1f\x7f]*)(:[a-zA-Z,]+)?\Z')
_RELEASE_IN_TAG = re.compile(r':v?([0-9]+[.][0-9]+[.][0-9]+[^-@]*)')
_RELEASE_IN_PIN = re.compile(r'vllm[-_]ascend==v?(.+)\Z', re.IGNORECASE)
_RELEASE_NUMBERS = re.compile(r'v?([0-9]+)[.]([0-9]+)[.]([0-9]+)')


def release_numbers(release):
    """A vllm-ascend release's first three numbers as a tuple (``0.18.0rc1`` -> (0, 18, 0)); None when it has none."""
    match = _RELEASE_NUMBERS.match(release or '')
    return tuple(int(part) for part in match.groups()) if match else None


def _strings(value):
    """Every string in ``value`` (itself, or the keys and items of its dicts, lists and tuples, at any depth)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [string for pair in value.items() for part in pair for string in _strings(part)]
    if isinstance(value, (list, tuple)):
        return [string for item in value for string in _strings(item)]
    return []


def _show(value, limit=200):
    """A value for a message, as JSON (the roles' other messages show values so), shortened; every password a string
    in it may carry as an address (user:password@host, with a scheme or without: common/_secrets.url_secrets) masked,
    as written and as JSON escapes it, and a URL's user information too, before it is shortened."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    secrets = [secret for string in _strings(value) for secret in url_secrets(string)]
    text = mask_text(text, secrets + [json.dumps(secret)[1:-1] for secret in secrets])
    return text if len(text) <= limit else text[:limit] + '...'


# ------------------------------------------------------------------------------------------------- the final argv

def _option_name(arg):
    """The option an argv element names, as vLLM's parser reads it (``_`` becomes ``-`` in the name, ``=value``
    split off), or None for a value."""
    if not isinstance(arg, str) or not arg.startswith('--') or arg == '--':
        return None
    name = arg.split('=', 1)[0]
    return '--' + name[2:].split('.', 1)[0].replace('_', '-')


def resolve_option(name, known=GUARDED_FLAGS):
    """The guarded option ``name`` stands for: itself, or the one guarded option it abbreviates (argparse takes a
    unique prefix); '' when it stands for none; None when it abbreviates several (ambiguous, refused)."""
    if name in known:
        return name
    matches = [flag for flag in known if flag.startswith(name) and len(name) > 2]
    if len(matches) == 1:
        return matches[0]
    return None if matches else ''


def last_value(argv, flag, known=GUARDED_FLAGS, short=None):
    """The value the last ``flag`` (any spelling: ``--flag value``, ``--flag=value``, ``_`` for ``-``, a unique
    abbreviation among ``known``, the ``short`` option) gives in ``argv``, as argparse keeps it; None when it is
    absent."""
    value = None
    index = 0
    while index < len(argv):
        arg = argv[index]
        name = short if short is not None and arg == short else _option_name(arg)
        if name is not None and (name == short or resolve_option(name, known) == flag):
            if '=' in arg:
                value = arg.split('=', 1)[1]
            elif index + 1 < len(argv):
                value = argv[index + 1]
                index += 1
        index += 1
    return value


def is_loopback(host):
    """Whether ``host`` is reachable from this host only: localhost or a loopback IP address (127.0.0.0/8, ::1). A
    host name that merely starts with 127. is not."""
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -------------------------------------------------------------------------------------------------- input checks

def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _volume_parts(volume):
    match = _VOLUME.match(volume) if isinstance(volume, str) else None
    return (match.group(1), match.group(2), match.group(3) or '') if match else None


# Inputs that are numbers or booleans; `-e name=value` on the command line gives every value as a string.
INT_INPUTS = ('port', 'tensor_parallel_size', 'data_parallel_size', 'data_parallel_size_local', 'max_model_len',
              'max_num_seqs', 'max_num_batched_tokens', 'seed', 'cpu_kvcache_space', 'headless_settle', 'manifest_workers',
              'start_timeout', 'stop_timeout',
              'npu_free_timeout', 'npu_free_interval', 'restart_burst', 'restart_interval', 'wait_for_timeout')
# The role's own numbers (not the plan's): (input, lowest, highest or None, what the message says it accepts).
ROLE_NUMBERS = (
    ('headless_settle', 1, 600, '1 to 600 seconds'),
    ('manifest_workers', 0, 256, '0 (the default) to 256'),
    # A year at most: more overflows systemd's and the health gate's timers, and means "never", which no limit may.
    ('start_timeout', 10, MAX_SECONDS, '10 seconds to a year (%d)' % MAX_SECONDS),
    ('stop_timeout', 0, MAX_SECONDS, '0 seconds to a year (%d)' % MAX_SECONDS),
    ('npu_free_timeout', 0, 3600, '0 to 3600 seconds'),
    ('npu_free_interval', 1, 60, '1 to 60 seconds'),
    ('restart_burst', 1, 100, '1 to 100'),
    ('restart_interval', 1, 86400, '1 to 86400 seconds'),
    ('wait_for_timeout', 0, 86400, '0 to 86400 seconds'),
)
FLOAT_INPUTS = ('gpu_memory_utilization',)
BOOL_INPUTS = ('enable_expert_parallel', 'enforce_eager', 'trust_remote_code', 'headless', 'mount_driver_dir', 'api_key_set', 'ipc_host',
               'enable_chunked_prefill', 'enable_prefix_caching')
_TRUE = ('true', 'yes', 'on', '1')
_FALSE = ('false', 'no', 'off', '0')


def normalize_inputs(inputs):
    """The inputs with numbers and booleans given as strings (``-e vllm_service_port=8080``) read as such; a string
    that is not one stays a string, for the checks to refuse by name."""
    result = dict(inputs)
    for name in INT_INPUTS:
        value = result.get(name)
        if isinstance(value, str) and re.match(r'[0-9]{1,9}\Z', value.strip()):
            result[name] = int(value.strip())
    for name in FLOAT_INPUTS:
        value = result.get(name)
        if isinstance(value, str) and re.match(r'[0-9]{0,3}([.][0-9]{1,6})?\Z', value.strip()) and value.strip('. '):
            result[name] = float(value.strip())
    for name in BOOL_INPUTS:
        value = result.get(name)
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            result[name] = value.strip().lower() in _TRUE
    return result
