# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Step 1 of the serving plan (_serving.py): every input checked before anything is planned, each problem naming
the variable to fix (check_inputs), and the host's account and key file checked against the inputs.
Its tests: tests/unit/plugins/module_utils/serving/test__plan_checks.py.
"""

from __future__ import annotations

import datetime
import functools
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import normalise, path_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import shown_json, url_secrets
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import env_value_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import is_written_ascend_version
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._deployment import STATE_ROOT
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._group_watch import parse_endpoint
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_argv import listen_host
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_container import links_within_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_recipe import input_problems as recipe_input_problems
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import read_waiver, with_site_rows
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import (
    CAP_ADD_ALLOWED,
    CHOICES,
    FORBIDDEN_FLAGS,
    NETWORKS,
    NOT_NULL_CHOICES,
    ROLE_NUMBERS,
    TLS_INPUTS,
    _ENV_NAME,
    _HOST,
    _IMAGE,
    _NAME,
    _NODE_DIR,
    _NO_BLANK,
    _NO_CONTROL,
    _NO_CONTROL_NOT_OPTION,
    _PACKAGE,
    _PATH,
    _PIN,
    _RELEASE,
    _SERVED_NAME,
    _SHM,
    _UNIT_PATH,
    _USER,
    _is_int,
    _option_name,
    _show,
    _volume_parts,
    is_loopback,
    last_value,
    normalize_inputs,
    resolve_option,
)


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
                or (kind == 'path' and not _NODE_DIR.match(where)) or url_secrets(where)):
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


def _string(get, problems, name, pattern, accepts, optional=False):
    """Input ``name`` must be a string ``pattern`` matches, not first a '-' (null too when ``optional``)."""
    value = get(name)
    if value is None and optional:
        return
    if not isinstance(value, str) or not pattern.match(value) or value.startswith('-'):
        problems.append('vllm_service_%s must be %s%s; got %s'
                        % (name, 'null or ' if optional else '', accepts, _show(value)))


def _check_strings(get, problems):
    """The names, addresses, paths and TLS files: each a string of its own shape; TLS's three files together."""
    string = functools.partial(_string, get, problems)
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


def _check_numbers(get, problems):
    """The port, the parallel sizes and the other numbers, each within its bounds."""
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
    seed = get('seed')
    # vLLM seeds numpy too, which takes 0 to 2**32 - 1.
    if seed is not None and (not _is_int(seed) or not 0 <= seed <= 2 ** 32 - 1):
        problems.append('vllm_service_seed must be null or a whole number from 0 to 4294967295; got %s' % _show(seed))
    memory = get('gpu_memory_utilization')
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, (int, float))
                               or not 0 < memory <= 1):
        problems.append('vllm_service_gpu_memory_utilization must be null or a fraction above 0 and at most 1, such '
                        'as 0.92; got %s' % _show(memory))
    space = get('cpu_kvcache_space')
    if not _is_int(space) or space < 1:
        problems.append('vllm_service_cpu_kvcache_space must be a whole number of GiB, 1 or more; got %s' % _show(space))


def _check_choices(get, problems):
    """The choices, the switches, the NPU ids, the capabilities, the network and the IPC namespace."""
    for name, choices in CHOICES.items():
        value = get(name)
        # A choice that may not be null is refused as null when it is given so (a key left out takes its default).
        given_null = value is None and name in NOT_NULL_CHOICES and get(name, False) is None
        if given_null or (value is not None and value not in choices):
            problems.append('vllm_service_%s must be %sone of %s; got %s' % (
                name, '' if name in NOT_NULL_CHOICES else 'null or ', ', '.join(choices), _show(value)))
    for name in ('enable_expert_parallel', 'enforce_eager', 'trust_remote_code', 'headless', 'mount_driver_dir'):
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


def _check_paths_args_env(get, problems):
    """The directories the role makes or hands to the service (never a system or home directory), the argv and
    environment the user and the cluster add, the volumes."""
    string = functools.partial(_string, get, problems)
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


def check_inputs(inputs):
    """The problems the role's inputs alone show (``inputs``: the vllm_service variables without their prefix), each
    naming the variable; empty when they are fine. Facts about the host are checked by ``serving_plan``."""
    problems = []
    inputs = normalize_inputs(inputs)
    get = inputs.get
    for check in (_check_strings, _check_numbers, _check_choices, _check_paths_args_env):
        check(get, problems)
    _check_role_inputs(get, problems)
    problems.extend(recipe_input_problems(inputs))
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


# An API key as vLLM's --api-key takes it through the environment file: printable, no blank, long enough to guess hard.
_API_KEY = re.compile(r'[\x21-\x7e]{16,4096}\Z')


def role_input_problems(inputs, waiver=None, target_driver_version=None, site_rows=None, api_key=None,
                        api_key_file=None, require_agreement=False, verify_model=True, today=None):
    """Every problem of role vllm_service's inputs, before it reads the host: the waiver of the compatibility set,
    the NPU driver a host without one yet will run, the site's compatibility rows, the serving inputs
    (check_inputs), the API key and the agreement check, in that order, each naming the variable. ``inputs`` as
    check_inputs takes them; ``api_key`` is checked here and never quoted; ``today`` a datetime.date (None: today)."""
    problems = []
    dummy, waiver_problems = read_waiver(waiver, today or datetime.date.today())
    if waiver_problems:
        problems.append('vllm_service_compat_waiver (default: ascend_compat_waiver) must be null or a waiver with reason '
                        'and expires (YYYY-MM-DD) that holds today: %s' % '; '.join(waiver_problems))
    if target_driver_version is not None and not is_written_ascend_version(target_driver_version):
        problems.append('vllm_service_target_driver_version must be null or an NPU driver version such as 26.2.RC1 '
                        '(playbooks/site.yml and plan.yml pass npu_driver_version); got %s'
                        % shown_json(target_driver_version))
    try:
        with_site_rows(site_rows or [])
    except ValueError as error:
        problems.append(str(error))
    problems.extend(check_inputs(inputs))
    if api_key is not None and (api_key_file is not None or not isinstance(api_key, str) or not _API_KEY.match(api_key)):
        problems.append('Set one of vllm_service_api_key and vllm_service_api_key_file, not both; the key must be 16 to '
                        '4096 printable characters without blanks.')
    if require_agreement and not verify_model:
        problems.append('vllm_service_require_agreement needs vllm_service_verify_model: the agreement record is looked '
                        'up by the digest of the manifest the model is verified against.')
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
