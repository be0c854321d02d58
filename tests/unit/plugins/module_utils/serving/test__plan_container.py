# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 8 of the serving plan on its own, in a container (serving/_plan_container.py; serving_plan's last step, after
the container engine of step 7; natively step 8 is _serving's _native_command): the container's mounts - the driver's
files, the model read-only (or the directory its links lead into, vllm_service_model_links_within, which may hide
neither the image's system nor another mount), the cache, TLS, the user's volumes - its devices and its argv. The
check of vllm_service_model_links_within against vllm_service_model is step 1's (check_inputs calls
links_within_problem). The whole plan's cases are in test__serving.py."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_container import (
    _holds,
    _mount_plan,
    _within_problems,
    container_command,
    links_within_problem,
    model_mount,
)
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import (
    CONTROL,
    DRIVER_FILES_A2,
    HF_CACHE,
    IMAGE,
    SNAPSHOT,
    inputs,
)

MODEL = '/data/models/DeepSeek-R1-W8A8'
STATE_DIR = '/var/lib/vllm/vllm'
TLS_DIR = '/etc/kunpeng-ascend-vllm/tls/vllm'
# What an A2 host has of the driver's files and control devices (test__serving.py's a2_facts).
EXISTING = set(DRIVER_FILES_A2 + CONTROL)
DRIVER_MOUNTS = ['%s:%s' % (path, path) for path in DRIVER_FILES_A2] + [
    '/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64']
OWN_MOUNTS = ['%s:%s:ro' % (MODEL, MODEL), STATE_DIR + ':/root/.cache']
HIDES = ('vllm_service_model_links_within %s is mounted read-only at the same path in the container, where it would '
         'hide the image\'s own files: give the directory that holds the model and its links only (such as the Hugging '
         'Face cache of the model)')


# ------------------------------------------------------------------------------------------- the model's mount

@pytest.mark.parametrize('directory, path, held', [
    ('/data', '/data', True), ('/data', '/data/models', True), ('/data/', '/data/models', True), ('/', '/usr', True),
    ('/data', '/data2', False), ('/data/models', '/data', False),
])
def test_a_directory_holds_itself_and_what_is_under_it_not_its_namesakes(directory, path, held):
    assert _holds(directory, path) is held


@pytest.mark.parametrize('model, within', [
    (SNAPSHOT, HF_CACHE), (SNAPSHOT, SNAPSHOT), (SNAPSHOT, SNAPSHOT + '/'), (SNAPSHOT, '//data/hf/./x/..'),
    (SNAPSHOT, None),
    # Not absolute paths (a newline, a number): refused by name by check_inputs, not here.
    (SNAPSHOT, HF_CACHE + '\n'), (SNAPSHOT, 7), ('relative/model', '/data'),
])
def test_links_within_that_holds_the_model_or_is_not_a_path_has_no_problem_here(model, within):
    assert links_within_problem(model, within) is None


@pytest.mark.parametrize('within', [HF_CACHE + '-other', HF_CACHE + '/blobs', SNAPSHOT + '/sub',
                                    HF_CACHE + '/snapshots/../blobs'])
def test_links_within_that_does_not_hold_the_model_names_both_variables(within):
    assert links_within_problem(SNAPSHOT, within) == (
        'vllm_service_model_links_within "%s" must hold vllm_service_model "%s": it is the directory the model\'s '
        'symbolic links may lead into (such as the Hugging Face cache of one model, its snapshot the model), or null '
        'for the model directory itself' % (within, SNAPSHOT))


def test_the_container_gets_links_within_normalised_else_the_model():
    assert model_mount(inputs(model=SNAPSHOT, model_links_within='//data/hf/./models--deepseek-ai--DeepSeek-V3/')) == \
        HF_CACHE
    assert model_mount(inputs(model=SNAPSHOT)) == SNAPSHOT
    assert model_mount(inputs(model=SNAPSHOT, model_links_within='')) == SNAPSHOT


@pytest.mark.parametrize('within', ['/', '/usr', '/etc/models', '/vllm-workspace', '/proc/self', '/sys/fs', '/home',
                                    '/root', '/var'])
def test_links_within_may_not_hide_the_image_s_own_system(within):
    assert _within_problems(within, []) == [HIDES % within]


def test_links_within_may_not_hold_another_mount_target():
    mounts = ['/srv/prompts:/data/prompts:ro', '/srv/x:/data', '/srv/y:/datasets']
    assert _within_problems('/data', mounts) == [
        'vllm_service_model_links_within /data is mounted read-only at the same path in the container and holds '
        '/data/prompts, where the service mounts /srv/prompts:/data/prompts:ro: give the directory that holds the '
        'model and its links only (such as the Hugging Face cache of the model)']
    assert _within_problems(HF_CACHE, OWN_MOUNTS[1:]) == []


# ---------------------------------------------------------------------------------------------- the mounts

def test_without_the_ascend_runtime_the_driver_files_the_host_has_are_mounted():
    assert _mount_plan(inputs(), EXISTING, True, False, STATE_DIR) == (DRIVER_MOUNTS + OWN_MOUNTS, [])
    # npu-smi in sbin and no hccn_tool (a 300I host): mounted as they are.
    existing = {'/usr/local/sbin/npu-smi', '/usr/local/dcmi'}
    assert _mount_plan(inputs(), existing, True, False, STATE_DIR)[0][:3] == [
        '/usr/local/dcmi:/usr/local/dcmi', '/usr/local/sbin/npu-smi:/usr/local/sbin/npu-smi',
        '/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64']
    # The 950 series mounts the whole driver directory.
    assert '/usr/local/Ascend/driver:/usr/local/Ascend/driver' in _mount_plan(
        inputs(mount_driver_dir=True), EXISTING, True, False, STATE_DIR)[0]


def test_with_the_ascend_runtime_or_without_npus_only_the_service_s_own_are_mounted():
    assert _mount_plan(inputs(), EXISTING, True, True, STATE_DIR) == (OWN_MOUNTS, [])
    assert _mount_plan(inputs(cache_dir='/srv/vllm-cache'), EXISTING, False, False, STATE_DIR) == (
        ['%s:%s:ro' % (MODEL, MODEL), '/srv/vllm-cache:/root/.cache'], [])


def test_tls_and_the_user_s_volumes_come_last():
    mounts, problems = _mount_plan(inputs(volumes=['/srv/lora:/data/lora:ro']), EXISTING, True, True, STATE_DIR,
                                   {'dir': TLS_DIR})
    assert (mounts, problems) == (OWN_MOUNTS + ['%s:%s:ro' % (TLS_DIR, TLS_DIR), '/srv/lora:/data/lora:ro'], [])


@pytest.mark.parametrize('volumes, problem', [
    (['/host/models:%s' % MODEL], 'vllm_service_volumes[0] mounts at %s, where the service already mounts %s:%s:ro: '
                                  'pick another container path' % (MODEL, MODEL, MODEL)),
    (['/x:/root/.cache/'], 'vllm_service_volumes[0] mounts at /root/.cache, where the service already mounts '
                           '/var/lib/vllm/vllm:/root/.cache: pick another container path'),
    (['/x:/usr/local/bin/npu-smi:ro'], 'vllm_service_volumes[0] mounts at /usr/local/bin/npu-smi, where the service '
                                       'already mounts /usr/local/bin/npu-smi:/usr/local/bin/npu-smi: pick another '
                                       'container path'),
    (['/a:/data', '/b:/data/'], 'vllm_service_volumes[1] mounts at /data, where the service already mounts /a:/data: '
                                'pick another container path'),
    (['/a:/', '/b://'], 'vllm_service_volumes[1] mounts at /, where the service already mounts /a:/: pick another '
                        'container path'),
])
def test_two_mounts_at_one_container_path_are_refused(volumes, problem):
    assert _mount_plan(inputs(volumes=volumes), EXISTING, True, False, STATE_DIR)[1] == [problem]


def test_links_within_is_mounted_instead_of_the_model_and_checked_against_every_other_mount():
    mounts, problems = _mount_plan(inputs(model=SNAPSHOT, model_links_within=HF_CACHE), EXISTING, True, True, STATE_DIR)
    assert (mounts, problems) == (['%s:%s:ro' % (HF_CACHE, HF_CACHE), STATE_DIR + ':/root/.cache'], [])
    assert _mount_plan(inputs(model='/usr/models/m', model_links_within='/usr'), EXISTING, True, True,
                       STATE_DIR)[1] == [HIDES % '/usr']
    assert _mount_plan(inputs(model='/data/hf/m', model_links_within='/data', volumes=['/srv/p:/data/p']), EXISTING,
                       True, True, STATE_DIR)[1][0].startswith(
        'vllm_service_model_links_within /data is mounted read-only at the same path in the container and holds '
        '/data/p, where the service mounts /srv/p:/data/p')


# ---------------------------------------------------------------------------------------------- the command

def planned(**changes):
    """The plan as steps 2 to 7 leave it for an A2 host running the role's defaults in a container."""
    plan = {'has_npus': True, 'ascend_runtime': False, 'tls': None, 'npu_ids': [0, 1],
            'numa': {'node': 0, 'cpus': '0-23', 'bind': 'none'}, 'listen': {'host': '127.0.0.1', 'port': '8000'},
            'state_dir': STATE_DIR, 'container_name': 'vllm-vllm', 'environment': {'HF_HUB_OFFLINE': '1', 'X': 'y'},
            'args': ['--host', '127.0.0.1', '--port', '8000']}
    plan.update(changes)
    return plan


def command(plan, engine_path='/usr/bin/docker', **changes):
    problems = []
    container_command(inputs(**changes), plan, EXISTING, 'docker', engine_path, problems)
    return problems


def test_the_container_of_an_a2_host_without_the_ascend_runtime():
    plan = planned()
    assert command(plan) == []
    assert plan['devices'] == ['/dev/davinci0', '/dev/davinci1', '/dev/davinci_manager', '/dev/devmm_svm',
                               '/dev/hisi_hdc']
    assert plan['mounts'] == DRIVER_MOUNTS + OWN_MOUNTS
    assert plan['command'] == (
        ['/usr/bin/docker', 'run', '--rm', '--name', 'vllm-vllm', '--network', 'host', '--shm-size', '1g']
        + ['--device=' + device for device in plan['devices']] + ['--volume=' + mount for mount in plan['mounts']]
        + ['--env=HF_HUB_OFFLINE', '--env=X', IMAGE, 'vllm', 'serve', MODEL, '--host', '127.0.0.1', '--port', '8000'])
    assert plan['cli'] == {'run': ['/usr/bin/docker', 'run', '--rm', '--network=host',
                                   '--volume=%s:%s:ro' % (MODEL, MODEL)], 'image': IMAGE, 'entrypoint': 'vllm'}


def test_the_ascend_runtime_gives_the_npus_by_their_ids_and_numactl_becomes_a_cpuset():
    plan = planned(ascend_runtime=True, numa={'node': 1, 'cpus': '24-47', 'bind': 'numactl'}, npu_ids=[4, 5])
    assert command(plan, api_key_set=True) == []
    assert plan['devices'] == [] and plan['mounts'] == OWN_MOUNTS
    tail = plan['command'][plan['command'].index('--volume=%s' % OWN_MOUNTS[-1]) + 1:]
    # The key's value never enters the argv: the engine takes it from its own environment by name.
    assert tail == ['--runtime', 'ascend', '--env', 'ASCEND_VISIBLE_DEVICES=4,5', '--cpuset-cpus', '24-47',
                    '--cpuset-mems', '1', '--env=HF_HUB_OFFLINE', '--env=X', '--env=VLLM_API_KEY', IMAGE, 'vllm',
                    'serve', MODEL, '--host', '127.0.0.1', '--port', '8000']


@pytest.mark.parametrize('host, published', [('10.0.0.5', '10.0.0.5:8000:8000'), ('::1', '[::1]:8000:8000')])
def test_a_bridge_network_publishes_the_port_on_the_service_s_host(host, published):
    plan = planned()
    command(plan, network='bridge', host=host)
    assert plan['command'][5:9] == ['--network', 'bridge', '--publish', published]


def test_ipc_host_and_capabilities_and_an_engine_not_found():
    plan = planned()
    command(plan, engine_path=None, ipc_host=True, cap_add=['SYS_PTRACE', 'IPC_LOCK'])
    assert plan['command'][:10] == ['docker', 'run', '--rm', '--name', 'vllm-vllm', '--network', 'host', '--ipc=host',
                                    '--cap-add=SYS_PTRACE', '--cap-add=IPC_LOCK']
    assert '--shm-size' not in plan['command'] and '--privileged' not in plan['command']
    assert plan['cli']['run'][0] == 'docker'


def test_with_tls_the_client_gets_the_ca_never_the_key():
    tls = {'dir': TLS_DIR, 'cert': TLS_DIR + '/cert.pem', 'key': TLS_DIR + '/key.pem', 'ca': TLS_DIR + '/ca.pem'}
    plan = planned(tls=tls)
    command(plan, volumes=['/srv/prompts:/prompts:ro'])
    assert '--volume=%s:%s:ro' % (TLS_DIR, TLS_DIR) in plan['command']
    assert plan['cli']['run'][5:] == ['--volume=/srv/prompts:/prompts:ro', '--volume=%s/ca.pem:%s/ca.pem:ro'
                                      % (TLS_DIR, TLS_DIR), '--env=SSL_CERT_FILE']


def test_a_refused_mount_is_added_to_the_plan_s_problems():
    plan = planned()
    problems = command(plan, volumes=['/x:/root/.cache'])
    assert problems == ['vllm_service_volumes[0] mounts at /root/.cache, where the service already mounts '
                        '/var/lib/vllm/vllm:/root/.cache: pick another container path']
