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
filter ``serving_plan`` exposes it)."""

from __future__ import annotations

import ipaddress
import json
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _sizing
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._deployment import STATE_ROOT, deployment_names
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._group_watch import parse_endpoint
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_format import (
    dtype_problems,
    format_problems,
    product_family,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._ranks import npus_for_ranks
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import (
    SYSTEM_DIRECTORIES,
    SYSTEM_TREES,
    normalise,
    path_problem,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import (
    CREDENTIALS_SINCE,
    env_value_problem,
    parse_version,
)

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
)
# The switches the role sets from its booleans: (variable, option).
SWITCH_FLAGS = (
    ('enable_expert_parallel', '--enable-expert-parallel'),
    ('enforce_eager', '--enforce-eager'),
    ('headless', '--headless'),
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
SERVING_PARAMS = ('tensor_parallel_size', 'data_parallel_size', 'enable_expert_parallel', 'max_model_len',
                  'max_num_seqs', 'max_num_batched_tokens', 'gpu_memory_utilization', 'quantization', 'dtype',
                  'scheduling_policy', 'enforce_eager', 'cpu_kvcache_space', 'extra_args')

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
    'quantization', 'dtype', 'scheduling_policy', 'enforce_eager', 'extra_args', 'env', 'cpu_kvcache_space',
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
    'npu_count', 'npu_devices', 'chips', 'npu_smi_found', 'npu_smi_complete', 'npu_smi_incomplete_reason',
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


def _show(value, limit=200):
    """A value for a message, as JSON (the roles' other messages show values so), shortened."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + '...'


# ------------------------------------------------------------------------------------------------------ the release

def release_of(image=None, pip_packages=None, version=None, mode='container'):
    """The vllm-ascend release a service runs: ``version`` when given, else the image's tag (container mode, such
    as ``quay.io/ascend/vllm-ascend:v0.13.0-a3`` -> 0.13.0) or the ``vllm-ascend==`` pin (native mode); '' when
    none says. The leading v is dropped."""
    if version:
        return str(version).strip().lstrip('v')
    if mode == 'container':
        match = _RELEASE_IN_TAG.search(image or '')
        return match.group(1) if match else ''
    for pin in pip_packages or ():
        match = _RELEASE_IN_PIN.match(str(pin))
        if match:
            return match.group(1)
    return ''


def environment_defaults(release, has_npus, cpu_kvcache_space=4):
    """The environment defaults of a service: offline, plus the release's NPU tutorial environment on NPU hosts (the
    newest entry not above the release; the oldest when the release says no number), or the CPU backend's KV cache
    size elsewhere."""
    env = dict(ENV_BASE)
    if not has_npus:
        env['VLLM_CPU_KVCACHE_SPACE'] = str(cpu_kvcache_space)
        return env
    match = _RELEASE_NUMBERS.match(release or '')
    numbers = tuple(int(part) for part in match.groups()) if match else (0, 0, 0)
    for first, release_env in ENV_NPU_BY_RELEASE:
        if numbers >= first:
            env.update(release_env)
            break
    return env


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


def client_host(host):
    """The host a client on the node reaches a service listening on ``host`` at (a wildcard address through
    loopback)."""
    return '127.0.0.1' if host in ('0.0.0.0', '', None) else '::1' if host == '::' else host


def client_url(host, port, scheme='http'):
    """The URL a client on the node reaches the service at (a wildcard address through loopback)."""
    client = client_host(host)
    return '%s://%s:%s' % (scheme, '[%s]' % client if ':' in client else client, port)


def tls_paths(name):
    """Where the role puts service ``name``'s certificate, key and CA on the node (TLS_DIR/<name>/), and the
    directory."""
    directory = '%s/%s' % (TLS_DIR, name)
    paths = dict((role, '%s/%s' % (directory, file_name)) for role, file_name in TLS_FILES)
    paths['dir'] = directory
    return paths


def tls_plan(inputs, host):
    """The service's TLS on the node, None without it: where the role puts the certificate, key and CA
    (TLS_DIR/<name>/), the name clients ask for (vllm_service_tls_server_name, else the host of the service's URL:
    it must be in the certificate's subjectAltName) and the files on the controller they come from."""
    if not inputs.get('tls_cert'):
        return None
    plan = tls_paths(inputs['name'])
    plan.update(server_name=inputs.get('tls_server_name') or client_host(host),
                source=dict((role, inputs['tls_' + role]) for role, _name in TLS_FILES))
    return plan


def tls_args(tls, mode):
    """vLLM's TLS options: the certificate, and the key from its place (natively the systemd credential: the
    unprivileged service reads it without the file being opened to it)."""
    if not tls:
        return []
    key = '${CREDENTIALS_DIRECTORY}/%s' % TLS_CREDENTIAL if mode == 'native' else tls['key']
    return ['--ssl-certfile', tls['cert'], '--ssl-keyfile', key]


# -------------------------------------------------------------------------------------------------- input checks

def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_args(name, args, problems):
    """The extra or cluster arguments: a list of strings without control characters, none of the forbidden options
    in any spelling, no abbreviation of a guarded option that is ambiguous."""
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        kind = type(args).__name__ if not isinstance(args, list) else 'a list with a non-string'
        problems.append('%s must be a list of strings; got %s' % (name, kind))
        return
    for position, arg in enumerate(args):
        if not _NO_CONTROL.match(arg):
            problems.append('%s[%d] holds a control character' % (name, position))
            continue
        option = _option_name(arg)
        if option is None:
            continue
        resolved = resolve_option(option)
        if resolved is None:
            problems.append('%s[%d] (%s) abbreviates several options vLLM reads; spell the option out'
                            % (name, position, option))
        elif resolved in FORBIDDEN_FLAGS:
            # The value is never shown: it may be the key.
            written = arg.split('=', 1)[0]
            spelling = '' if written == resolved else ' (written %s)' % written
            problems.append('%s[%d] gives %s%s: %s' % (name, position, resolved, spelling, FORBIDDEN_FLAGS[resolved]))


def _check_env(name, env, problems):
    if not isinstance(env, dict):
        problems.append('%s must be a mapping of variable names to values; got %s' % (name, type(env).__name__))
        return
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            problems.append('%s: %s is not a variable name (letters, digits and _, not first a digit)'
                            % (name, _show(key)))
        elif key == 'VLLM_API_KEY':
            problems.append('%s sets VLLM_API_KEY: the key goes in vllm_service_api_key or vllm_service_api_key_file'
                            % name)
        elif value is not None and env_value_problem(key, str(value)):
            # The environment file's writer's own rule (_systemd.env_value_problem), checked before any change.
            problems.append('%s: %s' % (name, env_value_problem(key, str(value))))


def _volume_parts(volume):
    match = _VOLUME.match(volume) if isinstance(volume, str) else None
    return (match.group(1), match.group(2), match.group(3) or '') if match else None


# Inputs that are numbers or booleans; `-e name=value` on the command line gives every value as a string.
INT_INPUTS = ('port', 'tensor_parallel_size', 'data_parallel_size', 'data_parallel_size_local', 'max_model_len',
              'max_num_seqs', 'max_num_batched_tokens', 'cpu_kvcache_space', 'headless_settle', 'manifest_workers',
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
BOOL_INPUTS = ('enable_expert_parallel', 'enforce_eager', 'headless', 'mount_driver_dir', 'api_key_set', 'ipc_host')
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


def _check_role_inputs(get, problems):
    """The role's inputs beyond the deployment's that are not single strings: the pins, the model's source and the
    role's numbers."""
    for name, pattern, accepts in (('pip_packages', _PIN, 'exact pins, name==version (such as vllm-ascend==0.13.0)'),
                                   ('pip_remove', _PACKAGE, 'package names')):
        value = get(name)
        if value is not None and (not isinstance(value, list)
                                  or not all(isinstance(item, str) and pattern.match(item) for item in value)):
            problems.append('vllm_service_%s must be null or a list of %s; got %s' % (name, accepts, _show(value)))
    source = get('model_source')
    if source is not None:
        kind, where = (list(source.items())[0] if isinstance(source, dict) and len(source) == 1 else (None, None))
        if (kind not in ('src', 'path') or not isinstance(where, str) or not _NO_CONTROL_NOT_OPTION.match(where)
                or (kind == 'path' and not _NODE_DIR.match(where))):
            problems.append("vllm_service_model_source must be null, {src: <directory on the controller>} or {path: "
                            "<absolute directory on the node, without ':'>} (rsync reads host:path as a remote and a "
                            "leading - as an option); got %s" % _show(source))
    endpoints = get('wait_for_endpoints', [])
    if not isinstance(endpoints, list):
        problems.append('vllm_service_wait_for_endpoints must be a list of host:port; got %s' % _show(endpoints))
    else:
        for position, endpoint in enumerate(endpoints):
            try:
                if not isinstance(endpoint, str) or not _NO_CONTROL_NOT_OPTION.match(endpoint):
                    raise ValueError(endpoint)
                parse_endpoint(endpoint)
            except ValueError:
                problems.append('vllm_service_wait_for_endpoints[%d] must be host:port (such as 10.0.0.1:13389); got %s'
                                % (position, _show(endpoint)))
    for name, lowest, highest, accepts in ROLE_NUMBERS:
        value = get(name)
        if not _is_int(value) or value < lowest or (highest is not None and value > highest):
            problems.append('vllm_service_%s must be %s; got %s' % (name, accepts, _show(value)))


def check_inputs(inputs):
    """The problems the role's inputs alone show (``inputs``: the vllm_service variables without their prefix), each
    naming the variable; empty when they are fine. Facts about the host are checked by ``serving_plan``."""
    problems = []
    inputs = normalize_inputs(inputs)
    get = inputs.get

    def string(name, pattern, accepts, optional=False):
        value = get(name)
        if value is None and optional:
            return
        if not isinstance(value, str) or not pattern.match(value) or value.startswith('-'):
            problems.append('vllm_service_%s must be %s%s; got %s'
                            % (name, 'null or ' if optional else '', accepts, _show(value)))

    string('name', _NAME, "1 to 64 letters, digits, '.', '_' or '-', not first a '-'")
    string('host', _HOST, 'an IP address or host name to listen on')
    string('served_model_name', _SERVED_NAME, 'a model name without blanks or control characters, not first a -',
           optional=True)
    string('shm_size', _SHM, 'a size such as 1g or 512m')
    string('quantization', _NO_BLANK, 'a method name without blanks, not first a -', optional=True)
    string('image', _IMAGE, 'an image reference such as quay.io/ascend/vllm-ascend:v0.13.0', optional=True)
    string('model', _PATH, 'an absolute path without control characters')
    string('model_links_within', _PATH, 'an absolute path without control characters', optional=True)
    within_problem = links_within_problem(get('model'), get('model_links_within'))
    if within_problem:
        problems.append(within_problem)
    string('venv', _PATH, 'an absolute path without control characters')
    string('user', _USER, 'a system account name (lower-case letters, digits, _ and -, up to 32)')
    string('cann_env_file', _PATH, 'an absolute path without control characters', optional=True)
    string('api_key_file', _PATH, 'an absolute path without control characters', optional=True)
    for name in TLS_INPUTS:
        string(name, _NO_CONTROL_NOT_OPTION, 'a file on the controller (a path without control characters, not first '
               'a -)', optional=True)
    string('tls_server_name', _HOST, 'a host name or IP address clients ask for', optional=True)
    given = [name for name in TLS_INPUTS if get(name) is not None]
    if given and len(given) < len(TLS_INPUTS):
        problems.append('TLS needs vllm_service_tls_cert, vllm_service_tls_key and vllm_service_tls_ca together (the '
                        'CA is what the health gate and the clients verify the certificate against); only %s %s set'
                        % (' and '.join('vllm_service_' + name for name in given), 'is' if len(given) == 1 else 'are'))
    if get('tls_server_name') is not None and not given:
        problems.append('vllm_service_tls_server_name is the name in the certificate: set it with vllm_service_tls_cert, '
                        'vllm_service_tls_key and vllm_service_tls_ca, or leave it null')
    # The role's own strings, which the plan does not read (null: the role's default, or nothing).
    string('vllm_ascend_version', _RELEASE, 'a release such as v0.13.0 (no blanks, not first a -)', optional=True)
    for name in ('model_manifest', 'python', 'pip_wheelhouse', 'image_archive', 'sysfs_path'):
        string(name, _PATH, 'an absolute path without control characters', optional=True)
    string('npu_smi_path', _UNIT_PATH, "an absolute path of letters, digits and ._+,:@=/- (the unit runs it)",
           optional=True)

    port = get('port')
    if not _is_int(port) or not 1 <= port <= 65535:
        problems.append('vllm_service_port must be a whole number from 1 to 65535; got %s' % _show(port))
    for name in ('tensor_parallel_size', 'data_parallel_size'):
        if not _is_int(get(name)) or get(name) < 1:
            problems.append('vllm_service_%s must be a whole number of 1 or more; got %s' % (name, _show(get(name))))
    local = get('data_parallel_size_local')
    if local is not None and (not _is_int(local) or local < 1
                              or (_is_int(get('data_parallel_size')) and local > get('data_parallel_size'))):
        problems.append('vllm_service_data_parallel_size_local must be null or 1 to vllm_service_data_parallel_size; '
                        'got %s' % _show(local))
    for name in ('max_model_len', 'max_num_seqs', 'max_num_batched_tokens'):
        value = get(name)
        if value is not None and (not _is_int(value) or value < 1):
            problems.append('vllm_service_%s must be null or a whole number of 1 or more; got %s' % (name, _show(value)))
    memory = get('gpu_memory_utilization')
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, (int, float))
                               or not 0 < memory <= 1):
        problems.append('vllm_service_gpu_memory_utilization must be null or a fraction above 0 and at most 1, such '
                        'as 0.92; got %s' % _show(memory))
    space = get('cpu_kvcache_space')
    if not _is_int(space) or space < 1:
        problems.append('vllm_service_cpu_kvcache_space must be a whole number of GiB, 1 or more; got %s' % _show(space))
    for name, choices in CHOICES.items():
        value = get(name)
        if value is not None and value not in choices:
            problems.append('vllm_service_%s must be %sone of %s; got %s' % (
                name, '' if name in NOT_NULL_CHOICES else 'null or ', ', '.join(choices), _show(value)))
    for name in ('enable_expert_parallel', 'enforce_eager', 'headless', 'mount_driver_dir'):
        if not isinstance(get(name, False), bool):
            problems.append('vllm_service_%s must be true or false; got %s' % (name, _show(get(name))))
    npus = get('npus')
    if npus is not None and (not isinstance(npus, list) or not npus or not all(_is_int(npu) and npu >= 0 for npu in npus)
                             or len(set(npus)) != len(npus)):
        problems.append('vllm_service_npus must be null or a non-empty list of distinct NPU ids (0 or more); got %s'
                        % _show(npus))
    cap_add = get('cap_add', [])
    if not isinstance(cap_add, list) or any(cap not in CAP_ADD_ALLOWED for cap in cap_add):
        problems.append('vllm_service_cap_add must be a list of %s (never SYS_ADMIN, never --privileged); got %s'
                        % (', '.join(CAP_ADD_ALLOWED), _show(cap_add)))
    if get('network', 'host') not in NETWORKS:
        problems.append('vllm_service_network must be host or bridge (the port published on vllm_service_host); got %s'
                        % _show(get('network')))
    if not isinstance(get('ipc_host', False), bool):
        problems.append('vllm_service_ipc_host must be true or false; got %s' % _show(get('ipc_host')))
    string('cache_dir', _PATH, 'an absolute path without control characters', optional=True)
    # The directories the role makes, replaces or hands to the service to write: the venv (a link switched to each new
    # build), the model directory when the role copies the model into it (created, chowned and filled), the cache a
    # container writes as root. None may be a system or home directory, however it is spelt (_paths.path_problem).
    for name in ('venv', 'cache_dir') + (('model',) if get('model_source') is not None else ()):
        value = get(name)
        if isinstance(value, str) and _PATH.match(value):  # any other value is already refused above, by name
            problem = path_problem('vllm_service_' + name, value)
            if problem:
                problems.append(problem)
    _check_args('vllm_service_extra_args', get('extra_args', []), problems)
    _check_args('vllm_service_cluster_args', get('cluster_args', []), problems)
    _check_env('vllm_service_env', get('env', {}), problems)
    _check_env('vllm_service_cluster_env', get('cluster_env', {}), problems)
    volumes = get('volumes', [])
    if not isinstance(volumes, list):
        problems.append('vllm_service_volumes must be a list of "/host/path:/container/path[:options]"')
    else:
        for position, volume in enumerate(volumes):
            if _volume_parts(volume) is None:
                problems.append('vllm_service_volumes[%d] must be "/host/path:/container/path[:options]"; got %s'
                                % (position, _show(volume)))
    _check_role_inputs(get, problems)
    if get('mode') == 'container' and get('image') is None:
        problems.append('vllm_service_image must name the vLLM image (such as quay.io/ascend/vllm-ascend:v0.13.0) in '
                        'container mode')
    if not problems and get('network') == 'bridge' and last_value(
            list(get('cluster_args') or []) + list(get('extra_args') or []), '--host') is not None:
        problems.append('vllm_service_network bridge: the container listens on all its addresses and the port is '
                        'published on vllm_service_host; a --host in vllm_service_extra_args or '
                        'vllm_service_cluster_args would not be reached: leave it out')
    if not problems:
        host = listen_host(inputs)
        if not is_loopback(host) and not get('api_key_set'):
            problems.append('the service listens on %s (vllm_service_host, or a --host in vllm_service_extra_args or '
                            'vllm_service_cluster_args), which is reachable beyond this host: set vllm_service_api_key '
                            'or vllm_service_api_key_file, or listen on 127.0.0.1' % host)
    return problems


# ----------------------------------------------------------------------------------------------- the account

NOLOGIN_SHELLS = ('/usr/sbin/nologin', '/sbin/nologin', '/bin/false', '/usr/bin/false')
# Accounts of the operating system and of other programs (Debian's base-passwd, the RedHat family's setup package,
# the daemons a server commonly runs): never the service's, even on a host that does not have them yet.
SYSTEM_ACCOUNTS = frozenset((
    'root', 'daemon', 'bin', 'sys', 'sync', 'games', 'man', 'lp', 'mail', 'news', 'uucp', 'proxy', 'www-data',
    'backup', 'list', 'irc', 'gnats', 'nobody', 'nfsnobody', 'adm', 'operator', 'ftp', 'halt', 'shutdown',
    'messagebus', 'dbus', 'sshd', 'syslog', 'polkitd', 'tss', 'chrony', '_chrony', 'ntp', '_apt', 'postfix',
    'rpc', 'rpcuser', 'avahi', 'nginx', 'apache', 'mysql', 'postgres', 'redis', 'prometheus', 'node_exporter',
    'docker', 'dockremap', 'containerd', 'hwhiaiuser',
))


def check_account(name, passwd_line, uid_min=1000):
    """Why the native service may not run as ``name``, given its ``getent passwd`` line (None when the account does
    not exist yet: the role creates it as a system account with its home in STATE_ROOT); '' when it may.

    The service runs as an account of its own. Refused: root; the well-known accounts of the system and of other
    programs (SYSTEM_ACCOUNTS, ``systemd-*``), whether or not the host has them; login accounts (a UID of ``uid_min``
    or more, from /etc/login.defs, or a login shell); and any other existing account the role did not create - one
    whose home is not in STATE_ROOT, where the role puts the home of every account it creates. vLLM would otherwise
    run with another program's files and rights, and the role would change that account's home, shell and groups."""
    if name == 'root':
        return 'vllm_service_user is root: the service runs as a dedicated system account (such as vllm)'
    if name in SYSTEM_ACCOUNTS or name.startswith('systemd-'):
        return ('vllm_service_user %s is an account of the operating system or of another program: the service runs '
                'as an account of its own, which the role creates (such as vllm)' % name)
    if not passwd_line:
        return ''
    fields = passwd_line.strip().split(':')
    if len(fields) != 7 or fields[0] != name or not fields[2].isdigit():
        return 'vllm_service_user %s: its passwd entry is not understood (%s)' % (name, _show(passwd_line))
    uid, home, shell = int(fields[2]), fields[5], fields[6]
    if uid == 0:
        return 'vllm_service_user %s has UID 0: the service runs as a dedicated system account' % name
    if uid >= uid_min or shell not in NOLOGIN_SHELLS:
        return ('vllm_service_user %s is an existing login account (UID %d, shell %s): the role would change its home '
                'and shell and vLLM would run with its rights; pick a dedicated name (such as vllm) for the role to '
                'create as a system account' % (name, uid, shell or 'none'))
    home_dir = normalise(home) if home.startswith('/') else ''
    if home_dir != STATE_ROOT and not home_dir.startswith(STATE_ROOT + '/'):
        return ('vllm_service_user %s is an existing account (UID %d, home %s) that the role did not create (the '
                'accounts it creates have their home in %s): it belongs to another program, whose files and rights '
                'vLLM would get; pick a name that does not exist yet (such as vllm), which the role creates as a '
                'system account' % (name, uid, home or 'none', STATE_ROOT))
    return ''


def check_key_file(path, stat_line):
    """Why the key file at ``path`` may not be used, from ``stat -L -c '%a %U %F'`` (None: it does not exist); ''
    when it may: a regular file (a FIFO would block the read), owned by root, readable by nobody else."""
    if not stat_line:
        return 'vllm_service_api_key_file %s does not exist' % path
    parts = stat_line.strip().split(' ', 2)
    if len(parts) != 3 or not re.match(r'[0-7]{3,4}\Z', parts[0]):
        return 'vllm_service_api_key_file %s: its state is not understood (%s)' % (path, _show(stat_line))
    mode, owner, kind = int(parts[0], 8), parts[1], parts[2]
    if kind != 'regular file':
        return 'vllm_service_api_key_file %s is a %s, not a regular file' % (path, kind)
    if owner != 'root' or mode & 0o077:
        return ('vllm_service_api_key_file %s is owned by %s with mode %04o: the key must be readable by root only '
                '(chown root and chmod 600 it)' % (path, owner, mode))
    return ''


# ------------------------------------------------------------------------------------------------------ the plan

def served_name(inputs):
    """The name clients ask for: vllm_service_served_model_name, else the model directory's name."""
    return inputs.get('served_model_name') or str(inputs.get('model') or '').rstrip('/').rsplit('/', 1)[-1]


def listen_host(inputs):
    """Where the API is reachable: on the host network, the last --host of the final argv; on a bridge network, the
    address the port is published on (vllm_service_host)."""
    if inputs.get('network') == 'bridge':
        return inputs['host']
    return last_value(service_args(inputs), '--host')


def service_args(inputs, tls=()):
    """The `vllm serve` arguments after the model: the address (on a bridge network every address of the container,
    whose port the engine publishes), the served name, the valued options (null ones left out), the switches, the
    TLS options ``tls`` (tls_args), then what the cluster and the user add (argparse keeps the last of an option)."""
    bind = '0.0.0.0' if inputs.get('network') == 'bridge' else inputs['host']
    args = ['--host', bind, '--port', str(inputs['port']), '--served-model-name', served_name(inputs)]
    for name, flag in VALUED_FLAGS:
        if inputs.get(name) is not None:
            args += [flag, str(inputs[name])]
    for name, flag in SWITCH_FLAGS:
        if inputs.get(name):
            args.append(flag)
    return args + list(tls) + list(inputs.get('cluster_args') or []) + list(inputs.get('extra_args') or [])


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


def _numa_plan(inputs, facts, npu_ids, has_npus):
    """The NUMA node and CPUs of the service's NPUs (their devices in PCI bus order, like the logical ids), and the
    binding: numactl when asked or auto and the NPUs sit on one known node."""
    devices = facts.get('npu_devices') or []
    nodes = []
    if has_npus:
        for npu in npu_ids:
            if npu < len(devices) and devices[npu].get('numa_node') is not None and devices[npu]['numa_node'] not in nodes:
                nodes.append(devices[npu]['numa_node'])
    node = nodes[0] if len(nodes) == 1 else None
    cpus = None
    if node is not None:
        cpus = next((device.get('numa_cpulist') for device in devices if device.get('numa_node') == node), None)
    bind = 'numactl' if inputs.get('numa_bind') in ('auto', 'numactl') and node is not None else 'none'
    return {'node': node, 'cpus': cpus, 'bind': bind}


# ------------------------------------------------------------------------------------------- a host without a driver

# A host whose NPUs the PCI bus shows (ascend_facts) but npu-smi cannot yet (no NPU driver): by the chip family of its
# PCI devices, the product _sizing plans it as, the NPUs vLLM counts per PCI device and per card (npu-smi's NPU id).
# An A3 shows one PCI device per die, two dies a card; a 300I Duo card one PCI device for its two 310P chips
# (tests/simulator/fake_sysfs.py lays them out so).
FRESH_PRODUCTS = {
    '910B': ('a2', 1, 1),
    '910_93': ('a3', 1, 2),
    '310P': ('300i_duo', 2, 2),
}


# What an NPU driver's install puts on a host (the Atlas 800I A2's: npu-smi in /usr/local/bin) and the control devices
# it loads, taken as there when a fresh host is planned.
FRESH_DRIVER_PATHS = tuple(path for path in DRIVER_FILES if path != '/usr/local/sbin/npu-smi') + CONTROL_DEVICES[:3]


def fresh_host(npu_devices):
    """What a plan assumes of a host whose NPUs only the PCI bus shows (npu-smi not installed yet): ``chips`` as
    npu-smi would list them (npu_id, chip_id, and the product's memory), the ``product`` (a _sizing.PRODUCTS key, None
    when the chip family is not one the sizing knows) and the ``assumed`` sentence saying so."""
    devices = [device for device in npu_devices or () if isinstance(device, dict)]
    families = sorted(set(str(device.get('chip_family') or 'unknown') for device in devices))
    family = families[0] if len(families) == 1 else None
    product, per_device, per_card = FRESH_PRODUCTS.get(family, (None, 1, 1))
    count = len(devices) * per_device
    spec = _sizing.PRODUCTS.get(product)
    chips = [{'npu_id': index // per_card, 'chip_id': index % per_card, 'name': None,
              'hbm_total_mb': spec['hbm_mb'] if spec else None} for index in range(count)]
    seen = '%d NPU PCI device%s (chip family %s)' % (len(devices), '' if len(devices) == 1 else 's',
                                                     ', '.join(families) or 'none')
    if spec is None:
        sentence = ('npu-smi is not on this host yet (no NPU driver): planned from the %s on its PCI bus, %d NPUs, '
                    'whose product and memory are not known, so the model is not sized against them' % (seen, count))
    else:
        sentence = ('npu-smi is not on this host yet (no NPU driver): planned from the %s on its PCI bus as %s, %d NPUs '
                    'of %d MB as npu-smi would show them%s' % (
                        seen, spec['name'], count, spec['hbm_mb'],
                        ' (a 32 GB 910B holds half: the real memory is read once the driver is there)'
                        if family == '910B' else ''))
    return {'chips': chips, 'product': product, 'family': family, 'assumed': sentence}


def driver_plan(facts, fresh, release):
    """The NPU driver the release is checked against (role vllm_service's checks.yml): ``version`` (the installed
    one, or on a fresh host vllm_service_target_driver_version, the inventory's npu_driver_version that the playbooks
    pass and role npu_driver installs first), its
    ``source`` and ``check`` (false only on a fresh host without a target: nothing to check against); and the
    sentence the plan assumes, on a fresh host."""
    installed = facts.get('driver_version')
    target = facts.get('target_driver_version')
    if installed or not fresh:
        return {'version': installed or None, 'source': 'installed' if installed else None, 'check': True}, None
    if target:
        return ({'version': str(target), 'source': 'vllm_service_target_driver_version', 'check': True},
                'the NPU driver is the one the inventory targets, %s (vllm_service_target_driver_version; the playbooks '
                'pass npu_driver_version), which role npu_driver installs before this service (playbooks/site.yml): '
                'vllm-ascend %s is checked against it'
                % (target, release or '(release unknown)'))
    return ({'version': None, 'source': None, 'check': False},
            'the NPU driver\'s version is not known (no driver installed, vllm_service_target_driver_version not set: '
            'set npu_driver_version in the inventory): vllm-ascend %s '
            'is not checked against it' % (release or '(release unknown)'))


# ------------------------------------------------------------------------------------------------------ the sizing

# What the sizing reports of the fullest NPU (_sizing.size_deployment's per_npu), null when it is not sized.
SIZING_PER_NPU = ('weights', 'kv', 'kv_per_token', 'mask', 'reserve', 'budget', 'capacity', 'need')
# Methods of --speculative-config that load MTP layers (vLLM's speculative config: deepseek_mtp and the mtp alias).
_MTP = re.compile(r'([a-z0-9_]*_)?mtp\Z')
_HUMAN_INT = re.compile(r'([0-9]+(?:[.][0-9]+)?)([kKmMgGtT])\Z')
_HUMAN_MULTIPLIERS = {'k': 10 ** 3, 'm': 10 ** 6, 'g': 10 ** 9, 't': 10 ** 12,
                      'K': 2 ** 10, 'M': 2 ** 20, 'G': 2 ** 30, 'T': 2 ** 40}


def _argv_number(value, kind=int, human=False):
    """``value`` (an argv string, None when absent) as vLLM's parser reads it: an int (with ``human``, 16k and 16K as
    --max-model-len takes them, -1 and auto for the model's own length: None) or a float; a value it would refuse is
    returned as it is, for the sizing to refuse by name."""
    if value is None:
        return None
    text = value.strip()
    if human and (text == '-1' or text.lower() == 'auto'):
        return None
    match = _HUMAN_INT.match(text) if human else None
    try:
        if match:
            number, suffix = match.groups()
            return int(float(number) * _HUMAN_MULTIPLIERS[suffix]) if suffix.islower() else int(number) * _HUMAN_MULTIPLIERS[suffix]
        return kind(text)
    except ValueError:
        return value


def _last_switch(args, flag, short=None):
    """Whether the final argv turns the switch ``flag`` on (``flag`` or ``short``), off (``--no-`` + its name), or
    None when it does not say: the last one counts."""
    negative = '--no-' + flag[2:]
    value = None
    for arg in args:
        name = _option_name(arg)
        if arg == short or (name is not None and resolve_option(name, (flag,)) == flag):
            value = True
        elif name is not None and resolve_option(name, (negative,)) == negative:
            value = False
    return value


def _json_value(value):
    try:
        return json.loads(value)
    except ValueError:
        return value


def _json_option(args, flag, short=None):
    """The JSON object a dict option of vLLM's gets from the final argv, in order: ``--flag JSON`` (or ``short``)
    sets it, ``--flag.key.subkey value`` sets one key of it, as vLLM's parser reads them (a value read as JSON where
    it is, else as a string); a value it would refuse is returned as it is, None when the option is absent."""
    result = None
    index = 0
    while index < len(args):
        arg = args[index]
        name, has_value, value = arg.partition('=') if isinstance(arg, str) else ('', '', '')
        if not has_value and index + 1 < len(args):
            value = args[index + 1]
        spelled = '--' + name[2:].replace('_', '-') if name.startswith('--') else name
        if name == short or spelled == flag:
            result = _json_value(value)
        elif spelled.startswith(flag + '.') and len(spelled) > len(flag) + 1:
            keys = name[len(flag) + 1:].split('.')
            result = result if isinstance(result, dict) else {}
            target = result
            for key in keys[:-1]:
                if not isinstance(target.get(key), dict):
                    target[key] = {}
                target = target[key]
            target[keys[-1]] = _json_value(value)
        else:
            index += 1
            continue
        index += 1 if has_value else 2
    return result


# The options serving_layout reads, for the abbreviations argparse would take: --data-parallel-size is itself, not an
# abbreviation of --data-parallel-size-local.
LAYOUT_FLAGS = ('--tensor-parallel-size', '--data-parallel-size', '--data-parallel-size-local',
                '--pipeline-parallel-size', '--decode-context-parallel-size', '--max-model-len', '--max-num-seqs',
                '--gpu-memory-utilization', '--dtype', '--quantization', '--kv-cache-dtype', '--hf-overrides',
                '--speculative-config', '--distributed-executor-backend')


def serving_layout(args, environment):
    """The layout vLLM reads from the final argv ``args`` and the service's ``environment``, in _sizing's names
    (normalize_layout): the parallel sizes, expert parallel, max_model_len, max_num_seqs, gpu_memory_utilization,
    dtype, quantization, kv_cache_dtype, --hf-overrides, MTP layers loaded by --speculative-config, the decode context
    parallel size and VLLM_ALLOW_LONG_MAX_MODEL_LEN; and pipeline_parallel_size, which the sizing does not model."""
    def value(flag, short=None):
        return last_value(args, flag, known=LAYOUT_FLAGS, short=short)

    def number(flag, short=None, kind=int, human=False):
        return _argv_number(value(flag, short), kind, human)

    speculative = _json_option(args, '--speculative-config', '-sc')
    method = speculative.get('method') if isinstance(speculative, dict) else None
    return {
        'tensor_parallel_size': number('--tensor-parallel-size', '-tp'),
        'data_parallel_size': number('--data-parallel-size', '-dp'),
        'data_parallel_size_local': number('--data-parallel-size-local', '-dpl'),
        'pipeline_parallel_size': number('--pipeline-parallel-size', '-pp'),
        'decode_context_parallel_size': number('--decode-context-parallel-size', '-dcp'),
        'enable_expert_parallel': bool(_last_switch(args, '--enable-expert-parallel', '-ep')),
        'max_model_len': number('--max-model-len', human=True),
        'max_num_seqs': number('--max-num-seqs'),
        'gpu_memory_utilization': number('--gpu-memory-utilization', kind=float),
        'dtype': value('--dtype'),
        'quantization': value('--quantization', '-q'),
        'kv_cache_dtype': value('--kv-cache-dtype'),
        'hf_overrides': _json_option(args, '--hf-overrides'),
        'speculative_mtp': isinstance(method, str) and bool(_MTP.match(method)),
        'allow_long_max_model_len': str(environment.get('VLLM_ALLOW_LONG_MAX_MODEL_LEN', '')).lower() in ('1', 'true'),
    }


def _not_sized(reason, warn=False):
    """The sizing of a plan that does not size the model: unknown, ``reason`` in ``skipped`` (and a warning when the
    model could have been sized but the plan cannot say)."""
    return {'verdict': 'unknown', 'problems': [], 'warnings': ['not checked: %s' % reason] if warn else [],
            'suggestion': None, 'per_npu': dict.fromkeys(SIZING_PER_NPU), 'use': None, 'concurrency': None,
            'max_model_len': None, 'layout': None, 'weights': None, 'parameters': None, 'devices': None,
            'skipped': reason}


def _sizing_devices(layout, count, chips, fresh, ray, npu_devices, warn):
    """The NPUs the sizing weighs the layout against: ``count`` a node (the service's), as npu-smi shows their memory
    (or a fresh host's product), over the nodes the layout spans - those of its data-parallel ranks
    (data_parallel_size / data_parallel_size_local), and at least as many as TP x DP needs (Ray places the ranks on
    the cluster's nodes; a layout larger than this node is refused by the plan, pointing to multi-node serving)."""
    tp, dp, local = (layout[key] if _is_int(layout[key]) and layout[key] > 0 else None
                     for key in ('tensor_parallel_size', 'data_parallel_size', 'data_parallel_size_local'))
    tp, dp = tp or 1, dp or 1
    nodes = -(-dp // local) if local and not ray else 1
    nodes = max(nodes, -(-(tp * dp) // max(1, count)))
    if fresh['product'] is not None:
        return _sizing.devices_for_product(fresh['product'], nodes, count)
    if fresh['chips'] is not None:
        devices = _sizing.devices_from_hbm_mb(None, max(1, count), nodes, fresh['family'])
        devices['problems'] = ['their product and memory are not known before the NPU driver is installed (chip family '
                               '%s)' % (fresh['family'] or 'unknown or mixed')]
        return devices
    devices = _sizing.devices_from_npu_smi(chips, nodes, warn)
    # The chip family from the PCI devices when npu-smi's chip names do not say it (an A3 prints Ascend910).
    devices['family'] = devices['family'] or product_family(chips, npu_devices)
    # NPUs that are a whole product as npu-smi shows it (8 910B of 65536 MB: an A2) are named so, and the suggestion
    # does not propose the same hardware again.
    for product, spec in sorted(_sizing.PRODUCTS.items()):
        if (spec['family'], spec['hbm_mb'], spec['count']) == (devices['family'], devices['hbm_mb'], devices['count']):
            return _sizing.devices_for_product(product, nodes)
    return devices


def plan_sizing(inputs, facts, args, environment, npu_ids, chips, fresh, count_refused):
    """Whether the model fits the service's NPUs (_sizing.size_deployment): the model directory's config.json
    (``model_config``), its weights (``model_weights``) and format (``model_format``), the final argv's layout, and
    the NPUs' memory - npu-smi's, or on a fresh host the product of its PCI devices. Not sized (verdict unknown and
    the reason in ``skipped``): vllm_service_sizing skip, a host without NPUs (vLLM's CPU backend), a caller that did
    not read the model, a config.json that is not an object, pipeline parallelism (a warning: not checked).
    ``count_refused``: the plan already refused the parallel sizes against this node's NPUs, whose per-node check the
    sizing then leaves to it. Returns the sizing (size_deployment's result with ``devices`` and ``skipped``)."""
    if inputs.get('sizing') == 'skip':
        return _not_sized('vllm_service_sizing is skip')
    if not npu_ids:
        return _not_sized('the host has no NPUs (vLLM\'s CPU backend): nothing to size the model against')
    if facts.get('model_format') is None:
        return _not_sized('the model directory was not read (a caller that plans without it)')
    config = facts.get('model_config')
    if not isinstance(config, dict):
        return _not_sized('%s has no config.json object to read the model\'s shape from'
                          % (facts['model_format'].get('path') or 'the model directory'), warn=True)
    layout = serving_layout(args, environment)
    pipeline = layout.pop('pipeline_parallel_size')
    if _is_int(pipeline) and pipeline > 1:
        return _not_sized('the memory per NPU with pipeline parallelism (--pipeline-parallel-size %d), which the '
                          'sizing does not model' % pipeline, warn=True)
    if count_refused:
        layout['data_parallel_size_local'] = None
    warnings = []
    ray = last_value(args, '--distributed-executor-backend', known=LAYOUT_FLAGS) == 'ray'
    devices = _sizing_devices(layout, len(npu_ids), [chips[npu] for npu in npu_ids if npu < len(chips)], fresh, ray,
                              facts.get('npu_devices'), warnings.append)
    weights = dict(facts.get('model_weights') or {}, quantization=facts['model_format'])
    result = _sizing.size_deployment(config, weights, layout, devices)
    result['warnings'] = warnings + result['warnings']
    result['devices'] = dict((key, devices.get(key)) for key in ('name', 'count', 'nodes', 'hbm_mb', 'family', 'product'))
    result['skipped'] = None
    if result['verdict'] == 'refused' and inputs.get('sizing') == 'warn':
        result['warnings'] = ['refused, and vllm_service_sizing is warn: %s' % problem
                              for problem in result['problems']] + result['warnings']
    return result


def serving_plan(inputs, facts):
    """The whole deployment of one node: ``inputs`` are the vllm_service variables without their prefix (the key only
    as ``api_key_set``; INPUT_KEYS), ``facts`` what the host said (FACTS_KEYS, which plugins/filter/serving_plan.yml
    documents one by one) - npu-smi's chips and ascend_facts' NPU devices, the driver files and control devices
    found, the engines, the account, the key file, systemd's version, the model directory (model_format_info's
    format, config.json and weights) and the installed and targeted NPU driver.

    Returns ``problems`` (empty when the plan can run) and the plan: release, mode, has_npus, fresh (planned without
    npu-smi, from the PCI devices), assumed (what such a plan assumed, one sentence each), driver (driver_plan),
    sizing (plan_sizing: whether the model fits the NPUs; a refusal is also a problem unless vllm_service_sizing is
    warn), npu_ids, cards,
    dp_local, numa, args, command, environment (without the key), container_name, unit, env_file, unit_file,
    state_dir, served_model_name, listen (host, port), public, url, engine, ascend_runtime, mounts, devices,
    serving (SERVING_PARAMS in force), tls (tls_plan: the TLS files on the node and the name clients ask for; null
    without TLS), credentials (systemd credentials of a native unit: name -> file), unit_verbatim (argv elements the
    unit leaves for systemd to expand) and cli (how a client runs the service's vLLM CLI: natively ``run`` is that
    command, the venv's Python with vLLM's CLI module, as the unit runs it; in a container ``run`` is the engine's
    argv before the image, the caller adds its mounts, then ``--entrypoint=`` ``entrypoint`` and ``image``)."""
    problems = check_inputs(inputs)
    if problems:
        return {'problems': problems, 'assumed': [], 'sizing': _not_sized('the inputs are refused (problems)')}
    inputs = normalize_inputs(inputs)
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

    # The NPUs: logical ids (/dev/davinci<N>) are the chips in npu-smi's order; npu-smi lists processes by card.
    chips = (facts.get('chips') or []) if fresh['chips'] is None else fresh['chips']
    npu_ids = list(inputs.get('npus') or range(len(chips))) if has_npus else []
    dp_local = inputs.get('data_parallel_size_local') or inputs['data_parallel_size']
    count_refused = False
    if has_npus:
        needed = npus_for_ranks(inputs['tensor_parallel_size'], dp_local)
        if not facts.get('npu_smi_complete', True):
            problems.append('npu-smi info is incomplete: %s' % facts.get('npu_smi_incomplete_reason', 'no reason given'))
        elif npu_ids and max(npu_ids) >= len(chips):
            problems.append('vllm_service_npus %s names NPUs the host does not have: it has %d (ids 0 to %d)'
                            % (npu_ids, len(chips), len(chips) - 1))
        elif inputs.get('distributed_executor_backend') != 'ray' and needed > len(npu_ids):
            count_refused = True
            problems.append('vllm_service_tensor_parallel_size (%d) x %s (%d) = %d NPUs, but the service has %d '
                            '(vllm_service_npus %s): %s'
                            % (inputs['tensor_parallel_size'],
                               'vllm_service_data_parallel_size_local' if inputs.get('data_parallel_size_local')
                               else 'vllm_service_data_parallel_size', dp_local, needed, len(npu_ids), npu_ids,
                               'lower a parallel size or give it more NPUs' if needed <= len(chips) else
                               'this node has %d NPUs: lower a parallel size, or, to spread one model over several '
                               'nodes, put them in group vllm_clusters and run playbooks/multinode.yml '
                               '(docs/multinode.md)' % len(chips)))
    if inputs.get('api_key_file') and 'key_file' in facts:
        key_problem = check_key_file(inputs['api_key_file'], facts.get('key_file'))
        if key_problem:
            problems.append(key_problem)
    cards = []
    if has_npus and not problems:
        for npu in npu_ids:
            card = chips[npu].get('npu_id')
            if card not in cards:
                cards.append(card)
    plan.update(npu_ids=npu_ids, cards=cards, dp_local=dp_local)
    numa = _numa_plan(inputs, facts, npu_ids, has_npus)
    if inputs.get('numa_bind') == 'numactl' and numa['bind'] != 'numactl':
        problems.append('vllm_service_numa_bind is numactl, but the NUMA node of the service\'s NPUs is not known or '
                        'not one node: set vllm_service_numa_bind to auto or none, or vllm_service_npus to NPUs of one '
                        'node')
    plan['numa'] = numa

    env = environment_defaults(plan['release'], has_npus, inputs.get('cpu_kvcache_space', 4))
    env.update(inputs.get('cluster_env') or {})
    env.update(inputs.get('env') or {})
    plan['environment'] = dict((key, str(value)) for key, value in sorted(env.items()) if value is not None)

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
    # What the model directory says against the final argv's --quantization (or -q); facts without model_format
    # (a caller that did not read the model) decide nothing here.
    if facts.get('model_format') is not None:
        quantization = last_value(args, '--quantization', known=('--quantization',), short='-q')
        plan['quantization'] = quantization
        problems.extend(format_problems(facts['model_format'], quantization, has_npus, chips, facts.get('npu_devices')))
        problems.extend(dtype_problems(facts['model_format'], last_value(args, '--dtype', known=('--dtype',)), has_npus))
    # Whether the model fits the NPUs (_sizing), from the final argv and the environment: a refusal fails the plan
    # unless vllm_service_sizing says to warn only.
    sizing = plan_sizing(inputs, facts, args, plan['environment'], npu_ids, chips, fresh, count_refused)
    plan['sizing'] = sizing
    if sizing['verdict'] == 'refused' and inputs.get('sizing') != 'warn':
        problems.extend(sizing['problems'])

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
    plan.update(engine=engine if mode == 'container' else None, ascend_runtime=ascend_runtime and has_npus)
    if mode == 'native':
        if 'account' in facts:
            account_problem = check_account(plan['user'], facts.get('account'), facts.get('uid_min') or 1000)
            if account_problem:
                problems.append(account_problem)
        numactl = (['/usr/bin/numactl', '--cpunodebind=%s' % numa['node'], '--membind=%s' % numa['node']]
                   if numa['bind'] == 'numactl' else [])
        plan.update(mounts=[], devices=[], command=numactl + [
            inputs['venv'] + '/bin/python', '-m', 'vllm.entrypoints.cli.main', 'serve', inputs['model']] + args,
            cli={'run': [inputs['venv'] + '/bin/python', '-m', 'vllm.entrypoints.cli.main'], 'image': None,
                 'entrypoint': None})
        return plan

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
    if numa['bind'] == 'numactl' and numa['cpus'] is not None:
        command += ['--cpuset-cpus', str(numa['cpus']), '--cpuset-mems', str(numa['node'])]
    command += ['--env=%s' % key for key in plan['environment']]
    if inputs.get('api_key_set'):
        command.append('--env=VLLM_API_KEY')
    command += [inputs['image'], 'vllm', 'serve', inputs['model']] + args
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
    return plan
