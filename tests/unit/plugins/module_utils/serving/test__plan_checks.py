# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 1 of the serving plan on its own (serving/_plan_checks.py): every input checked before anything is planned
(check_inputs, the first thing serving_plan does; it returns at once when it refuses), then - once the NPUs are chosen
(step 3) and before the command (step 8) - the key file and the native service's account against what the host said
(check_key_file, check_account). Each problem names the variable to fix and never shows a secret. The inputs as
normalised are in test__plan_inputs.py; the whole plan's cases are in test__serving.py."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _plan_checks
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_checks import (
    _check_args,
    _check_env,
    check_account,
    check_inputs,
    check_key_file,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import CHOICES, _show
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import (
    HF_CACHE,
    SNAPSHOT,
    WELL_KNOWN,
    inputs,
)

KEY = 'sk-0123456789abcdef-secret'


# ------------------------------------------------------------------------------------------------- check_inputs

def test_the_check_of_inputs_alone_takes_no_facts():
    assert check_inputs(inputs(image=None)) == []
    assert check_inputs(inputs(port='x'))[0].startswith('vllm_service_port')


def test_the_role_s_defaults_pass_and_every_problem_is_listed_at_once():
    assert check_inputs(inputs()) == []
    assert check_inputs(inputs(port=0, user='Root', cap_add=['SYS_ADMIN'])) == [
        'vllm_service_user must be a system account name (lower-case letters, digits, _ and -, up to 32); got "Root"',
        'vllm_service_port must be a whole number from 1 to 65535; got 0',
        'vllm_service_cap_add must be a list of IPC_LOCK, SYS_NICE, SYS_PTRACE, SYS_RESOURCE (never SYS_ADMIN, never '
        '--privileged); got ["SYS_ADMIN"]']


@pytest.mark.parametrize('changes, message', [
    # NaN is no number between 0 and 1, nor a port.
    ({'gpu_memory_utilization': float('nan')}, 'vllm_service_gpu_memory_utilization must be null or a fraction above '
                                               '0 and at most 1, such as 0.92; got NaN'),
    ({'gpu_memory_utilization': 'nan'}, 'vllm_service_gpu_memory_utilization must be null or a fraction above 0 and '
                                        'at most 1, such as 0.92; got "nan"'),
    ({'port': float('nan')}, 'vllm_service_port must be a whole number from 1 to 65535; got NaN'),
    ({'port': 8080.0}, 'vllm_service_port must be a whole number from 1 to 65535; got 8080.0'),
    ({'tensor_parallel_size': True}, 'vllm_service_tensor_parallel_size must be a whole number of 1 or more; got true'),
    ({'data_parallel_size_local': 2}, 'vllm_service_data_parallel_size_local must be null or 1 to '
                                      'vllm_service_data_parallel_size; got 2'),
    ({'max_model_len': 0}, 'vllm_service_max_model_len must be null or a whole number of 1 or more; got 0'),
    ({'cpu_kvcache_space': '4g'}, 'vllm_service_cpu_kvcache_space must be a whole number of GiB, 1 or more; got "4g"'),
    # Control characters, an option where a value goes, a name too long.
    ({'model': '/data/m\n'}, 'vllm_service_model must be an absolute path without control characters; got '
                             '"/data/m\\n"'),
    ({'name': 'a' * 65}, "vllm_service_name must be 1 to 64 letters, digits, '.', '_' or '-', not first a '-'; got "
                         '"%s"' % ('a' * 65)),
    ({'served_model_name': '--api-key'}, 'vllm_service_served_model_name must be null or a model name without blanks '
                                         'or control characters, not first a -; got "--api-key"'),
    ({'npu_smi_path': '/usr/local/bin/npu smi'}, 'vllm_service_npu_smi_path must be null or an absolute path of '
                                                 'letters, digits and ._+,:@=/- (the unit runs it); got '
                                                 '"/usr/local/bin/npu smi"'),
    ({'dtype': 'fp4'}, 'vllm_service_dtype must be null or one of auto, half, float16, bfloat16, float, float32; got '
                       '"fp4"'),
    ({'mode': 'kubernetes'}, 'vllm_service_mode must be one of auto, native, container; got "kubernetes"'),
    # A choice that may not be null, given as null (the role passes every input; null is no mode to plan with).
    ({'mode': None}, 'vllm_service_mode must be one of auto, native, container; got null'),
    ({'sizing': None}, 'vllm_service_sizing must be one of %s; got null' % ', '.join(CHOICES['sizing'])),
    ({'numa_bind': None}, 'vllm_service_numa_bind must be one of %s; got null' % ', '.join(CHOICES['numa_bind'])),
    ({'npus': [0, 0]}, 'vllm_service_npus must be null or a non-empty list of distinct NPU ids (0 or more); got [0, 0]'),
    ({'network': 'container:other'}, 'vllm_service_network must be host or bridge (the port published on '
                                     'vllm_service_host); got "container:other"'),
    ({'volumes': '/a:/b'}, 'vllm_service_volumes must be a list of "/host/path:/container/path[:options]"'),
    ({'volumes': ['/srv/x:/x', '/a:b']}, 'vllm_service_volumes[1] must be "/host/path:/container/path[:options]"; got '
                                         '"/a:b"'),
    ({'mode': 'container', 'image': None}, 'vllm_service_image must name the vLLM image (such as '
                                           'quay.io/ascend/vllm-ascend:v0.13.0) in container mode'),
])
def test_a_bad_input_is_refused_with_its_exact_message(changes, message):
    assert check_inputs(inputs(**changes)) == [message]


IMAGE_REFUSED = 'vllm_service_image must be null or an image reference such as quay.io/ascend/vllm-ascend:v0.13.0; got %s'


@pytest.mark.parametrize('image, shown', [
    # A registry's password in the reference a user pasted: masked in the refusal, with a scheme or without.
    ('https://robot:%s@registry.bank.internal/vllm-ascend:v0.13.0' % KEY,
     '"https://********@registry.bank.internal/vllm-ascend:v0.13.0"'),
    ('robot:%s@registry.bank.internal/vllm-ascend:v0.13.0' % KEY, '"robot:********@registry.bank.internal/vllm-ascend:v0.13.0"'),
    # A password JSON escapes (a quote, a backslash, a newline) is masked as the message writes it.
    ('u:pa"ss\\w\n@registry/x', '"u:********@registry/x"'),
    # What may be a password is masked even where it is not one (never less).
    ('registry:5000/vllm-ascend@sha256:bad', '"registry:********@sha256:bad"'),
    ('quay.io/ascend/vllm ascend:v1', '"quay.io/ascend/vllm ascend:v1"'),
    ('-v/:/host' + 'x' * 200, '"-v/:/host' + 'x' * 190 + '...'),
    (7, '7'),
])
def test_a_refused_string_never_shows_a_password_it_may_carry(image, shown):
    assert check_inputs(inputs(image=image)) == [IMAGE_REFUSED % shown]


def test_a_public_address_needs_a_key_and_a_bridge_no_host_of_its_own():
    assert check_inputs(inputs(host='0.0.0.0')) == [
        'the service listens on 0.0.0.0 (vllm_service_host, or a --host in vllm_service_extra_args or '
        'vllm_service_cluster_args), which is reachable beyond this host: set vllm_service_api_key or '
        'vllm_service_api_key_file, or listen on 127.0.0.1']
    # The last --host of the final argv decides, also from the cluster's arguments.
    assert check_inputs(inputs(cluster_args=['--host', '::']))[0].startswith('the service listens on :: ')
    assert check_inputs(inputs(host='0.0.0.0', extra_args=['--host=127.0.0.1'])) == []
    assert check_inputs(inputs(host='0.0.0.0', api_key_set='true')) == []
    assert check_inputs(inputs(network='bridge', api_key_set=True, extra_args=['--host', '0.0.0.0'])) == [
        'vllm_service_network bridge: the container listens on all its addresses and the port is published on '
        'vllm_service_host; a --host in vllm_service_extra_args or vllm_service_cluster_args would not be reached: '
        'leave it out']


def test_the_address_is_judged_only_once_the_rest_is_fine():
    # A public address without a key is not reported beside another problem (its message reads the final argv).
    assert check_inputs(inputs(host='0.0.0.0', port=0)) == [
        'vllm_service_port must be a whole number from 1 to 65535; got 0']


# ----------------------------------------------------------------------------- the extra arguments, the environment

def check(function, name, value):
    problems = []
    function(name, value, problems)
    return problems


@pytest.mark.parametrize('args, problems', [
    (['--enforce-eager', '--max_num_seqs', '32', '--host', '0.0.0.0'], []),
    ('--enforce-eager', ['vllm_service_extra_args must be a list of strings; got str']),
    (['--max-num-seqs', 32], ['vllm_service_extra_args must be a list of strings; got a list with a non-string']),
    (['--enforce-eager', '--x\n'], ['vllm_service_extra_args[1] holds a control character']),
    (['--ssl', '/k'], ['vllm_service_extra_args[0] (--ssl) abbreviates several options vLLM reads; spell the option '
                       'out']),
    (['--config', '/tmp/serve.yaml'], ['vllm_service_extra_args[0] gives --config: a file of options would decide the '
                                       'address and the key out of the plan\'s sight; give the options themselves']),
    (['--uds=/tmp/sock'], ['vllm_service_extra_args[0] gives --uds: the service listens on TCP (vllm_service_host and '
                           'vllm_service_port)']),
    (['--ssl_certfile=/c'], ['vllm_service_extra_args[0] gives --ssl-certfile (written --ssl_certfile): the '
                             'certificate goes in vllm_service_tls_cert (the role puts it in place and its clients '
                             'verify it)']),
])
def test_the_extra_arguments(args, problems):
    assert check(_check_args, 'vllm_service_extra_args', args) == problems


@pytest.mark.parametrize('args', [['--api-key', KEY], ['--api_key=' + KEY], ['--api-k', KEY], ['--api=' + KEY]])
def test_the_key_in_the_arguments_is_refused_and_never_shown(args):
    written = args[0].split('=', 1)[0]
    assert check(_check_args, 'vllm_service_cluster_args', args) == [
        'vllm_service_cluster_args[0] gives --api-key%s: the key goes in vllm_service_api_key or '
        'vllm_service_api_key_file, never in an argv' % ('' if written == '--api-key' else ' (written %s)' % written)]


@pytest.mark.parametrize('env, problems', [
    ({'HCCL_BUFFSIZE': 200, 'HCCL_OP_EXPANSION_MODE': None, '_X1': 'a b'}, []),
    (['A=b'], ['vllm_service_env must be a mapping of variable names to values; got list']),
    ({'1BAD': 'x'}, ['vllm_service_env: "1BAD" is not a variable name (letters, digits and _, not first a digit)']),
    ({'A-B': 'x', 3: 'y'}, ['vllm_service_env: "A-B" is not a variable name (letters, digits and _, not first a digit)',
                            'vllm_service_env: 3 is not a variable name (letters, digits and _, not first a digit)']),
    ({'VLLM_API_KEY': KEY}, ['vllm_service_env sets VLLM_API_KEY: the key goes in vllm_service_api_key or '
                             'vllm_service_api_key_file']),
    # A proxy's password in its URL, with a newline that would end the environment file's line: never shown.
    ({'HTTPS_PROXY': 'http://user:%s@proxy.bank.internal:3128\n' % KEY},
     ['vllm_service_env: the value of HTTPS_PROXY holds a control character or a byte that is not UTF-8']),
    ({'A': '\x00'}, ['vllm_service_env: the value of A holds a control character or a byte that is not UTF-8']),
])
def test_the_environment(env, problems):
    assert check(_check_env, 'vllm_service_env', env) == problems


# ------------------------------------------------------------------------------------------------- the key file

@pytest.mark.parametrize('stat_line, problem', [
    ('600 root regular file', ''), ('0400 root regular file\n', ''),
    (None, 'vllm_service_api_key_file /etc/vllm/api-key does not exist'),
    ('', 'vllm_service_api_key_file /etc/vllm/api-key does not exist'),
    ('640 root regular file', 'vllm_service_api_key_file /etc/vllm/api-key is owned by root with mode 0640: the key '
                              'must be readable by root only (chown root and chmod 600 it)'),
    ('604 root regular file', 'vllm_service_api_key_file /etc/vllm/api-key is owned by root with mode 0604: the key '
                              'must be readable by root only (chown root and chmod 600 it)'),
    ('600 vllm regular file', 'vllm_service_api_key_file /etc/vllm/api-key is owned by vllm with mode 0600: the key '
                              'must be readable by root only (chown root and chmod 600 it)'),
    # A FIFO would block the read of the key.
    ('600 root fifo', 'vllm_service_api_key_file /etc/vllm/api-key is a fifo, not a regular file'),
    ('700 root directory', 'vllm_service_api_key_file /etc/vllm/api-key is a directory, not a regular file'),
    ('rw root regular file', 'vllm_service_api_key_file /etc/vllm/api-key: its state is not understood ("rw root '
                             'regular file")'),
    ('600', 'vllm_service_api_key_file /etc/vllm/api-key: its state is not understood ("600")'),
])
def test_the_key_file_is_a_regular_file_of_root_readable_by_root_only(stat_line, problem):
    assert check_key_file('/etc/vllm/api-key', stat_line) == problem


# -------------------------------------------------------------------------------------------------- the account

@pytest.mark.parametrize('name, line, problem', [
    ('vllm', None, ''),
    ('vllm', 'vllm:x:998:998::/var/lib/vllm/vllm:/usr/sbin/nologin', ''),
    ('root', None, 'vllm_service_user is root: the service runs as a dedicated system account (such as vllm)'),
    ('systemd-resolve', None, 'vllm_service_user systemd-resolve is an account of the operating system or of another '
                              'program: the service runs as an account of its own, which the role creates (such as '
                              'vllm)'),
    ('toor', 'toor:x:0:0::/root:/bin/bash', 'vllm_service_user toor has UID 0: the service runs as a dedicated system '
                                            'account'),
    ('alice', 'alice:x:1000:1000:Alice:/home/alice:/bin/bash',
     'vllm_service_user alice is an existing login account (UID 1000, shell /bin/bash): the role would change its home '
     'and shell and vLLM would run with its rights; pick a dedicated name (such as vllm) for the role to create as a '
     'system account'),
    ('svc', 'svc:x:900:900::/var/lib/vllm/svc:', 'vllm_service_user svc is an existing login account (UID 900, shell '
                                                 'none): the role would change its home and shell and vLLM would run '
                                                 'with its rights; pick a dedicated name (such as vllm) for the role to '
                                                 'create as a system account'),
    ('ollama', 'ollama:x:996:996::/usr/share/ollama:/bin/false',
     'vllm_service_user ollama is an existing account (UID 996, home /usr/share/ollama) that the role did not create '
     '(the accounts it creates have their home in /var/lib/vllm): it belongs to another program, whose files and '
     'rights vLLM would get; pick a name that does not exist yet (such as vllm), which the role creates as a system '
     'account'),
    ('vllm', 'other:x:998:998::/var/lib/vllm/vllm:/usr/sbin/nologin', 'vllm_service_user vllm: its passwd entry is not '
                                                                      'understood ("other:x:998:998::/var/lib/vllm/'
                                                                      'vllm:/usr/sbin/nologin")'),
])
def test_the_service_account_exactly(name, line, problem):
    assert check_account(name, line, uid_min=1000) == problem


def test_the_login_uid_bound_comes_from_login_defs():
    line = 'svc:x:600:600::/var/lib/vllm/svc:/usr/sbin/nologin'
    assert check_account('svc', line, uid_min=1000) == ''
    assert check_account('svc', line, uid_min=601) == ''
    assert check_account('svc', line, uid_min=600).startswith('vllm_service_user svc is an existing login account ')
    assert check_account('svc', line, uid_min=500).startswith('vllm_service_user svc is an existing login account '
                                                              '(UID 600, shell /usr/sbin/nologin)')


@pytest.mark.parametrize('within', ['relative/cache', HF_CACHE + '\n', 7, ''])
def test_links_within_must_be_an_absolute_path_without_control_characters(within):
    found = check_inputs(inputs(model=SNAPSHOT, model_links_within=within))
    assert found == ['vllm_service_model_links_within must be null or an absolute path without control characters; '
                     'got %s' % _show(within)]


# ----------------------------------------------------------------------------- directories the role manages
# The venv (a link the role switches), the model directory the role fills from vllm_service_model_source, the cache
# a container writes as root: never a system or home directory, however the path is spelt.
SYSTEM_PATHS = ['/', '//', '/usr', '/usr/', '//usr', '/usr/.', '/usr/bin/..', '/opt', '/opt/', '/opt/vllm/..', '/srv',
                '/tmp', '/var', '/var/lib', '/var/lib/', '/usr/local', '/usr/local/bin', '/usr/lib64', '/etc/vllm',
                '/proc/self', '/sys/fs', '/dev/shm', '/run/vllm', '/boot/efi', '/root', '/root/', '/home/alice',
                '/home/alice/../bob', '/data/..']


@pytest.mark.parametrize('path', SYSTEM_PATHS)
@pytest.mark.parametrize('name, changes', [
    ('venv', {'mode': 'native'}), ('cache_dir', {}), ('model', {'model_source': {'src': 'files/models/tiny'}}),
    ('model', {'model_source': {'path': '/mnt/nfs/models/tiny'}}),
])
def test_a_system_or_home_directory_is_refused_for_a_directory_the_role_manages(path, name, changes):
    found = check_inputs(inputs(**dict(changes, **{name: path})))
    assert len(found) == 1 and found[0].startswith('vllm_service_%s %s' % (name, path)), found
    assert 'choose a directory of its own' in found[0]


@pytest.mark.parametrize('name, path', [
    ('venv', '/opt/vllm/venv'), ('venv', '/srv/vllm/venv'), ('venv', '/home/alice/venvs/vllm'),
    ('cache_dir', '/srv/vllm-cache'), ('cache_dir', '/var/cache/vllm'), ('model', '/srv/models/tiny'),
    ('model', '/root/models/stand-in-v1'),
])
def test_a_directory_of_its_own_passes(name, path):
    assert check_inputs(inputs(model_source={'src': 'files/tiny'}, **{name: path})) == []


@pytest.mark.parametrize('path', ['/data', '/models', '/usr/share/models'])
def test_a_model_the_role_only_reads_is_not_held_to_the_rule(path):
    # Without vllm_service_model_source the role never writes the model directory: it only reads and mounts it.
    assert check_inputs(inputs(model=path)) == []


# ------------------------------------------------------------------------------ the role's inputs beyond the plan
@pytest.mark.parametrize('name, value, message', [
    ('vllm_ascend_version', '-v0.13.0', 'vllm_service_vllm_ascend_version must be null or a release such as v0.13.0'),
    ('vllm_ascend_version', 'v0.13.0 rc1', 'vllm_service_vllm_ascend_version must be null or a release'),
    ('vllm_ascend_version', 13, 'vllm_service_vllm_ascend_version must be null or a release'),
    ('pip_packages', ['vllm>=0.13'], 'vllm_service_pip_packages must be null or a list of exact pins'),
    ('pip_packages', 'vllm==0.13.0', 'vllm_service_pip_packages must be null or a list of exact pins'),
    ('pip_packages', ['vllm==0.13.0', None], 'vllm_service_pip_packages must be null or a list of exact pins'),
    ('pip_remove', ['torch vision'], 'vllm_service_pip_remove must be null or a list of package names'),
    ('model_manifest', 'models/SHA256SUMS', 'vllm_service_model_manifest must be null or an absolute path'),
    ('python', '/usr/bin/python3\n', 'vllm_service_python must be null or an absolute path'),
    ('pip_wheelhouse', 5, 'vllm_service_pip_wheelhouse must be null or an absolute path'),
    ('image_archive', 'image.tar', 'vllm_service_image_archive must be null or an absolute path'),
    ('sysfs_path', 'sys', 'vllm_service_sysfs_path must be null or an absolute path'),
    ('model_source', {'path': 'nas:/models/x'}, 'vllm_service_model_source must be null, {src:'),
    ('model_source', {'path': 'models/x'}, 'vllm_service_model_source must be null, {src:'),
    ('model_source', {'src': '--rsh=sh'}, 'vllm_service_model_source must be null, {src:'),
    ('model_source', {'src': '/a', 'path': '/b'}, 'vllm_service_model_source must be null, {src:'),
    ('model_source', {'url': '/a'}, 'vllm_service_model_source must be null, {src:'),
    ('model_source', '/srv/models/x', 'vllm_service_model_source must be null, {src:'),
    ('headless_settle', 0, 'vllm_service_headless_settle must be 1 to 600 seconds; got 0'),
    ('headless_settle', 601, 'vllm_service_headless_settle must be 1 to 600 seconds; got 601'),
    ('manifest_workers', 257, 'vllm_service_manifest_workers must be 0 (the default) to 256; got 257'),
    ('start_timeout', 9, 'vllm_service_start_timeout must be 10 seconds to a year (31622400); got 9'),
    ('start_timeout', 'soon', 'vllm_service_start_timeout must be 10 seconds to a year (31622400); got "soon"'),
    ('start_timeout', 10 ** 30, 'vllm_service_start_timeout must be 10 seconds to a year (31622400); got %d' % 10 ** 30),
    ('stop_timeout', -1, 'vllm_service_stop_timeout must be 0 seconds to a year (31622400); got -1'),
    ('stop_timeout', 31622401, 'vllm_service_stop_timeout must be 0 seconds to a year (31622400); got 31622401'),
    ('stop_timeout', True, 'vllm_service_stop_timeout must be 0 seconds to a year (31622400); got true'),
    ('npu_free_timeout', -1, 'vllm_service_npu_free_timeout must be 0 to 3600 seconds; got -1'),
    ('npu_free_timeout', 3601, 'vllm_service_npu_free_timeout must be 0 to 3600 seconds; got 3601'),
    ('npu_free_interval', 0, 'vllm_service_npu_free_interval must be 1 to 60 seconds; got 0'),
    ('restart_burst', 0, 'vllm_service_restart_burst must be 1 to 100; got 0'),
    ('restart_interval', None, 'vllm_service_restart_interval must be 1 to 86400 seconds; got null'),
    ('wait_for_timeout', 86401, 'vllm_service_wait_for_timeout must be 0 to 86400 seconds; got 86401'),
    ('wait_for_endpoints', '10.0.0.1:13389', 'vllm_service_wait_for_endpoints must be a list of host:port; got'),
    ('wait_for_endpoints', ['10.0.0.1'], 'vllm_service_wait_for_endpoints[0] must be host:port (such as '
                                         '10.0.0.1:13389); got "10.0.0.1"'),
    ('wait_for_endpoints', ['10.0.0.1:13389', '-x:1'], 'vllm_service_wait_for_endpoints[1] must be host:port'),
    ('wait_for_endpoints', [13389], 'vllm_service_wait_for_endpoints[0] must be host:port'),
    ('user', None, 'vllm_service_user must be a system account name'),
])
def test_the_role_s_own_inputs_are_checked_with_the_plan_s(name, value, message):
    found = check_inputs(inputs(**{name: value}))
    assert len(found) == 1 and found[0].startswith(message), found


@pytest.mark.parametrize('name, value', [
    ('vllm_ascend_version', '0.10.0rc1'), ('pip_packages', ['vllm-ascend==0.13.0', 'torch==2.8.0+cpu']),
    ('pip_remove', ['torchvision']), ('model_source', {'src': 'files/models/tiny'}),
    ('model_source', {'path': '/mnt/nfs/models/tiny'}), ('headless_settle', '30'), ('start_timeout', '600'),
    ('manifest_workers', 256), ('stop_timeout', 0), ('model_manifest', '/data/models/x.sha256'),
    ('npu_free_timeout', 0), ('npu_free_timeout', '3600'), ('npu_free_interval', 60), ('restart_burst', 100),
    ('restart_interval', '86400'), ('wait_for_endpoints', ['10.0.0.1:13389', 'head-0.example:13389']),
    ('wait_for_timeout', '0'),
])
def test_the_role_s_own_inputs_accept_what_they_document(name, value):
    assert check_inputs(inputs(**{name: value})) == []


# ---------------------------------------------------------------------------------- the accounts everyone knows
@pytest.mark.parametrize('line', WELL_KNOWN)
def test_the_home_rule_alone_refuses_every_well_known_account_that_exists(line, monkeypatch):
    # The general rule, not the list: with no name listed, each is still another program's account.
    monkeypatch.setattr(_plan_checks, 'SYSTEM_ACCOUNTS', frozenset())
    problem = check_account(line.split(':', 1)[0], line, uid_min=1000)
    assert problem and 'vllm_service_user' in problem


@pytest.mark.parametrize('changes, variable', [
    # A URL is no directory, on the controller or on the node; one with a password is refused without showing it.
    ({'model_source': {'src': 'rsync://u:%s@nas/models/DeepSeek-R1' % KEY}}, 'vllm_service_model_source'),
    ({'model_source': {'src': 'u:%s@nas:/models/DeepSeek-R1' % KEY}}, 'vllm_service_model_source'),
    ({'wait_for_endpoints': ['http://u:%s@10.0.0.1:13389' % KEY]}, 'vllm_service_wait_for_endpoints[0]'),
    ({'wait_for_endpoints': ['u:%s@10.0.0.1:13389' % KEY]}, 'vllm_service_wait_for_endpoints[0]'),
])
def test_a_source_or_endpoint_with_a_password_is_refused_never_showing_it(changes, variable):
    found = check_inputs(inputs(**changes))
    assert len(found) == 1 and found[0].startswith(variable + ' must be'), found
    assert KEY not in found[0]


KEY_PROBLEM = ('Set one of vllm_service_api_key and vllm_service_api_key_file, not both; the key must be 16 to 4096 '
               'printable characters without blanks.')
AGREEMENT_PROBLEM = ('vllm_service_require_agreement needs vllm_service_verify_model: the agreement record is looked up '
                     'by the digest of the manifest the model is verified against.')


@pytest.mark.parametrize('given, problems', [
    ({}, []),
    ({'api_key': 'k' * 16}, []),
    ({'api_key': 'k' * 4096}, []),
    ({'api_key': 'k' * 16, 'api_key_file': '/etc/vllm/api-key'}, [KEY_PROBLEM]),
    ({'api_key': 'k' * 15}, [KEY_PROBLEM]),
    ({'api_key': 'k' * 4097}, [KEY_PROBLEM]),
    ({'api_key': 'a key with blanks 0123'}, [KEY_PROBLEM]),
    ({'api_key': 'k' * 16 + '\n'}, [KEY_PROBLEM]),
    ({'api_key': 1234567890123456789}, [KEY_PROBLEM]),
    ({'api_key_file': '/etc/vllm/api-key'}, []),
    ({'require_agreement': True}, []),
    ({'require_agreement': True, 'verify_model': False}, [AGREEMENT_PROBLEM]),
    ({'target_driver_version': '26.2.RC1'}, []),
    ({'target_driver_version': 26.2}, ['vllm_service_target_driver_version must be null or an NPU driver version such as '
                                       '26.2.RC1 (playbooks/site.yml and plan.yml pass npu_driver_version); got 26.2']),
    ({'waiver': {'reason': 'CHG-4711: accepted until the upgrade', 'expires': '2099-12-31'}}, []),
    ({'waiver': 'yes'}, ['vllm_service_compat_waiver (default: ascend_compat_waiver) must be null or a waiver with reason '
                         'and expires (YYYY-MM-DD) that holds today: the waiver must be a dict with reason and expires '
                         '(YYYY-MM-DD), not str']),
    ({'site_rows': [{'vllm_ascend': '0.13.0', 'vllm': '0.13.0'}]},
     ['ascend_compat_site_rows[0].cann is missing: every row names its CANN version']),
])
def test_the_role_s_inputs_are_checked_in_one_call_never_quoting_the_key(given, problems):
    assert _plan_checks.role_input_problems(inputs(api_key_set=True), **given) == problems
    key = given.get('api_key')
    assert key is None or not any(str(key) in problem for problem in problems)
