# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_discovery on real captured outputs: the chip map, the image list and the engine configurations read, a node
discovered through a fake runner and a scratch root (what was not understood, by source and line, with the line), the
masking of addresses and secrets, the host_vars and the archive it writes and reads back, the decision of what to
write, and the layout suggested for a model of ../shared/model-configs."""

from __future__ import annotations

import copy
import io
import json
import os
import tarfile

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _discovery
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._ascend_files import RootFS
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._discovery import (
    Mask,
    archive_bytes,
    archive_members,
    discover,
    host_vars_text,
    output_dir,
    parse_chip_map,
    parse_image_list,
    plan_outputs,
    read_archive,
    read_engine_config,
    resolve_model,
    suggest_layout,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture, make_tree, simulator_module
from ansible_collections.kunpeng_ascend.vllm.tests.shared_data import require_shared

CHIP_MAP = load_fixture('npu-smi-info-m_910B4_8npu_with-mcu_atlas800IA2.txt')
INFO_910B = load_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt')
# hccn_tool -i 3 -ip -g followed, in the same capture, by -route -g: the routing table is not -ip -g's format.
IP_AND_ROUTE = load_fixture('hccn_tool-i3-ip-g_and_route-g.txt')
# A transcript of `cat version.info`: its first line is the path, which is no key=value line.
DRIVER_CAT = load_fixture('driver-version.info_25.3.rc1_faq-indented.txt')
DAEMON_JSON = load_fixture('daemon.json_ascend-docker-runtime-installer_template.txt')
CONTAINERD_V3 = load_fixture('containerd-config.toml_v3_containerd-2.3.4_cri-doc-full.txt')
CONTAINERD_V2 = load_fixture('containerd-config.toml_v2_containerd-1.7.34_cri-doc-full.txt')
DCMI_8005 = load_fixture('npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt')
NPU_SMI = '/usr/local/bin/npu-smi'
HCCN_TOOL = '/usr/local/Ascend/driver/tools/hccn_tool'
PODMAN = '/usr/bin/podman'
IMAGES = ('quay.io/ascend/vllm-ascend\tv0.23.0\tb56a9ccede32\n'
          'quay.io/ascend/vllm-ascend\tv0.23.0-a3\t7ba735a3e435\n'
          'harbor.corp.example:5000/ai/vllm-ascend\tv0.30.0-950dt\t0bd04a3bf707\n')


def collect(messages):
    return messages.append


# --- the parsers ---------------------------------------------------------------------------------------------

def test_the_chip_map_of_a_real_atlas_800i_a2_gives_each_chip_its_logic_id():
    warnings = []
    rows = parse_chip_map(CHIP_MAP, collect(warnings))
    assert warnings == []
    assert len(rows) == 16
    assert rows[:2] == [{'npu_id': 0, 'chip_id': 0, 'logic_id': 0, 'name': 'Ascend 910B4'},
                        {'npu_id': 0, 'chip_id': 1, 'logic_id': None, 'name': 'Mcu'}]
    assert [row['logic_id'] for row in rows if row['name'] != 'Mcu'] == list(range(8))


def test_a_chip_map_line_that_does_not_fit_is_reported_with_its_line():
    text = ('some log line\n' + CHIP_MAP.replace('Chip Name', 'Chip Name   Chip Phy-ID   Board', 1)
            .replace('        1                              0                              1  ', '        1  x  0  1  ', 1))
    warnings = []
    rows = parse_chip_map(text, collect(warnings))
    assert warnings[0] == "npu-smi info -m line 1: text before the header ignored: 'some log line'"
    assert warnings[1] == "npu-smi info -m line 2: unknown column 'Board', its values are ignored"
    assert all(message.startswith('npu-smi info -m line ') and ' cells for 6 columns' in message
               for message in warnings[2:])
    assert rows == []
    assert parse_chip_map('', collect(warnings)) == []
    assert warnings[-1] == 'npu-smi info -m: no "NPU ID ... Chip Logic ID" header found'


def test_the_image_list_and_a_line_it_cannot_read():
    warnings = []
    images = parse_image_list(IMAGES + 'REPOSITORY   TAG   IMAGE ID\n', collect(warnings))
    assert images[1] == {'repository': 'quay.io/ascend/vllm-ascend', 'tag': 'v0.23.0-a3', 'id': '7ba735a3e435'}
    assert warnings == ["images line 4: not \"repository<TAB>tag<TAB>id\", ignored: 'REPOSITORY   TAG   IMAGE ID'"]


def test_the_engine_configurations_as_the_runtime_installer_and_containerd_write_them():
    assert read_engine_config('docker', DAEMON_JSON, pytest.fail) == {
        'runtimes': {'ascend': '/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime'},
        'default_runtime': 'ascend'}
    v3 = read_engine_config('containerd', CONTAINERD_V3, pytest.fail)
    assert (v3['config_version'], sorted(v3['runtimes']), v3['default_runtime']) == (3, ['runc'], 'runc')
    v2 = read_engine_config('containerd', CONTAINERD_V2, pytest.fail)
    assert (v2['config_version'], sorted(v2['runtimes'])) == (2, ['runc'])
    warnings = []
    assert read_engine_config('docker', DAEMON_JSON.replace('"ascend"\n}', '"ascend",\n}'), collect(warnings)) is None
    assert warnings[0].startswith('docker configuration: not JSON: ')


# --- masking -------------------------------------------------------------------------------------------------

def test_addresses_are_masked_the_same_way_each_time_and_secrets_always():
    mask = Mask(False, ('node1', 'node1.corp.example'))
    assert mask.text('ipaddr:29.1.112.213\nnetmask:255.255.0.0\ngw 29.1.0.1 again 29.1.112.213') == (
        'ipaddr:<ipv4-1>\nnetmask:255.255.0.0\ngw <ipv4-2> again <ipv4-1>')
    assert mask.text('mac 00:1a:2b:3c:4d:5e fe80::1 bus 0000:C1:00.0 at 03:19:21 on node1 (node1.corp.example)') == (
        'mac <mac-1> <ipv6-1> bus 0000:C1:00.0 at 03:19:21 on <host-2> (<host-1>)')
    assert mask.text('"registry-mirrors": ["https://ops:s3cret@mirror.corp.example:5000"], "auth": "dXNlcg=="') == (
        '"registry-mirrors": ["https://********@<host-3>:5000"], "auth": "********"')
    assert mask.text('harbor.corp.example:5000/ai/vllm-ascend:v0.30.0 quay.io/ascend/vllm-ascend:v0.23.0') == (
        '<registry-1>/ai/vllm-ascend:v0.30.0 quay.io/ascend/vllm-ascend:v0.23.0')
    assert mask.text('runtime_type = "io.containerd.runc.v2" 0.0.0.0') == 'runtime_type = "io.containerd.runc.v2" 0.0.0.0'
    shown = Mask(True, ('node1',))
    assert shown.text('ipaddr:29.1.112.213 node1 password = "x1"') == 'ipaddr:29.1.112.213 node1 password = "********"'


# --- a node ----------------------------------------------------------------------------------------------------

class FakeRun:
    """The node's read-only commands: the answers by argv, every call recorded."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        rc, stdout, stderr = self.answers.get(tuple(argv), (1, '', 'Device ID is out of the valid range.\n'))
        return CommandResult(list(argv), rc, stdout, stderr)


def node(tmp_path, info=INFO_910B, images=IMAGES):
    root = make_tree(tmp_path / 'root', {'/usr/local/Ascend/driver/version.info': DRIVER_CAT,
                                         '/etc/docker/daemon.json': DAEMON_JSON})
    sysfs = str(tmp_path / 'sys')
    simulator_module('fake_sysfs', 'fake_sysfs.py').write_sysfs(sysfs, '910b-8')
    answers = {(NPU_SMI, 'info'): (0, info, ''), (NPU_SMI, 'info', '-m'): (0, CHIP_MAP, ''),
               (PODMAN, 'images', '--format', _discovery.IMAGES_FORMAT): (0, images, '')}
    for device in range(8):
        answers[(HCCN_TOOL, '-i', str(device), '-ip', '-g')] = (0, 'ipaddr:\nnetmask:\n', '')
    answers[(HCCN_TOOL, '-i', '3', '-ip', '-g')] = (0, IP_AND_ROUTE, '')
    run = FakeRun(answers)
    tools = {'npu-smi': NPU_SMI, 'hccn_tool': HCCN_TOOL, 'docker': None, 'podman': PODMAN}
    return run, RootFS(root), RootFS(sysfs), tools


def test_a_node_is_read_with_the_read_commands_only(tmp_path):
    run, fs, sysfs, tools = node(tmp_path)
    discovery = discover(run, fs, sysfs, tools, host_names=('node1',))
    assert run.calls == ([[NPU_SMI, 'info'], [NPU_SMI, 'info', '-m']]
                         + [[HCCN_TOOL, '-i', str(device), '-ip', '-g'] for device in range(8)]
                         + [[PODMAN, 'images', '--format', '{{.Repository}}\t{{.Tag}}\t{{.ID}}']])
    facts = discovery['facts']
    assert facts['product'] == {'key': 'a2', 'name': 'Atlas 800I A2 (8 x 64 GB)'}
    assert facts['chip_family'] == '910B'
    assert facts['versions']['driver'] == '25.3.rc1'
    assert facts['chips'][0] == {'npu_id': 0, 'chip_id': 0, 'logic_id': 0, 'name': '910B3', 'health': 'OK',
                                 'bus_id': '0000:C1:00.0', 'hbm_total_mb': 65536, 'memory_total_mb': 0,
                                 'numa_node': 0}
    assert [chip['numa_node'] for chip in facts['chips']] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert facts['nics'][3] == {'id': 3, 'address': '29.1.112.213', 'netmask': '255.255.0.0', 'error': None}
    assert facts['engines']['docker']['default_runtime'] == 'ascend' and facts['engines']['containerd'] is None
    assert [(image['reference'], image['fits']) for image in facts['images']] == [
        ('quay.io/ascend/vllm-ascend:v0.23.0', True), ('quay.io/ascend/vllm-ascend:v0.23.0-a3', False),
        ('harbor.corp.example:5000/ai/vllm-ascend:v0.30.0-950dt', None)]


def test_what_the_parsers_did_not_understand_is_listed_by_source_and_line_with_the_line(tmp_path):
    run, fs, sysfs, tools = node(tmp_path)
    notes = discover(run, fs, sysfs, tools)['not_understood']
    by_source = {}
    for note in notes:
        by_source.setdefault(note['source'], []).append(note)
    assert sorted(by_source) == ['/usr/local/Ascend/driver/version.info', 'hccn_tool -i 3 -ip -g']
    (driver,) = by_source['/usr/local/Ascend/driver/version.info']
    assert (driver['line'], driver['text']) == (1, '/usr/local/Ascend/driver/version.info')
    assert driver['message'].endswith(
        "/usr/local/Ascend/driver/version.info line 1: not a \"key=value\" line, ignored: "
        "'/usr/local/Ascend/driver/version.info'")
    route = by_source['hccn_tool -i 3 -ip -g']
    # The -route -g lines of the capture (its prompt lines are read as echoes and skipped), each with its line.
    assert [note['line'] for note in route] == [6, 7, 8, 9, 10, 11, 12]
    assert route[0]['text'] == 'Routing table:'
    assert route[2]['text'].startswith('default         <ipv4-2>        0.0.0.0')
    assert route[2]['message'] == ("hccn_tool -ip -g: line 8 was not understood and is ignored: 'default         "
                                   "<ipv4-2>        0.0.0.0         UG    0      0        0 eth3'")


def test_the_raw_outputs_are_shown_masked_and_the_facts_keep_the_addresses(tmp_path):
    run, fs, sysfs, tools = node(tmp_path)
    discovery = discover(run, fs, sysfs, tools, host_names=('node1',))
    sources = dict((source['name'], source) for source in discovery['sources'])
    assert sources['hccn_tool -i 3 -ip -g']['text'].splitlines()[1:3] == ['ipaddr:<ipv4-1>', 'netmask:255.255.0.0']
    assert sources['podman images']['text'].splitlines()[2] == '<registry-1>/ai/vllm-ascend\tv0.30.0-950dt\t0bd04a3bf707'
    assert discovery['shown_facts']['nics'][3]['address'] == '<ipv4-1>'
    assert discovery['facts']['nics'][3]['address'] == '29.1.112.213'
    assert '29.1.' not in json.dumps([discovery['sources'], discovery['not_understood'], discovery['shown_facts']])
    shown = discover(*node(tmp_path / 'again'), include_addresses=True)
    assert 'ipaddr:29.1.112.213' in json.dumps(shown['sources'])


def test_a_tool_that_fails_or_is_missing_is_recorded_not_raised(tmp_path):
    run, fs, sysfs, tools = node(tmp_path)
    run.answers[(NPU_SMI, 'info')] = (1, DCMI_8005, '')
    tools.update({'hccn_tool': None, 'podman': None})
    discovery = discover(run, fs, sysfs, tools)
    sources = dict((source['name'], source) for source in discovery['sources'])
    assert sources['npu-smi info']['error'].startswith(
        'exit code 1: dcmi module initialize failed. ret is -8005; hint: the user running npu-smi is not in group '
        'HwHiAiUser')
    assert sources['hccn_tool -i 0 -ip -g']['error'] == 'not run: hccn_tool was not found (hccn_tool_path)'
    assert discovery['facts']['npu_smi'] is None and discovery['facts']['chips'] == []
    # The NICs are the chips' logic ids (info -m still answered).
    assert [source['name'] for source in discovery['sources'] if source['name'].startswith('hccn')][-1] == \
        'hccn_tool -i 7 -ip -g'


def test_an_incomplete_table_is_a_note_of_its_own(tmp_path):
    run, fs, sysfs, tools = node(tmp_path, info=load_fixture(
        'npu-smi-info_310P3-300IPro_25.5.1_2npu_malformed-last-separator.txt'))
    discovery = discover(run, fs, sysfs, tools)
    notes = [note for note in discovery['not_understood'] if note['source'] == 'npu-smi info']
    assert notes[-1]['line'] == 12         # the last line read: the malformed border
    assert 'so it is incomplete' in notes[-1]['message']
    assert discovery['facts']['npu_smi']['complete'] is False


# --- the records ---------------------------------------------------------------------------------------------

def discovered(tmp_path):
    return discover(*node(tmp_path), host_names=('node1',))


def test_the_host_vars_hold_the_role_variables_and_the_other_facts_under_discovered(tmp_path):
    yaml = pytest.importorskip('yaml', reason='PyYAML is the controller\'s: the hosts\' Pythons need not have it')
    text = host_vars_text('node1', discovered(tmp_path))
    values = yaml.safe_load(text)
    assert values['npu_driver_expected_chips'] == 8
    assert values['npu_network_addresses'] == {3: '29.1.112.213/16'}
    assert 'npu_network_devices' not in values         # the NICs are 0 to 7
    assert values['discovered_product'] == 'Atlas 800I A2 (8 x 64 GB)'
    assert values['discovered_npu_numa'] == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}
    assert set(key for key in values if not key.startswith('discovered_')) == {'npu_driver_expected_chips',
                                                                               'npu_network_addresses'}


def test_nic_ids_that_are_not_0_to_n_are_the_npu_network_devices(tmp_path):
    yaml = pytest.importorskip('yaml', reason='PyYAML is the controller\'s: the hosts\' Pythons need not have it')
    discovery = discovered(tmp_path)
    discovery['facts']['nics'] = [dict(nic, id=nic['id'] + 4) for nic in discovery['facts']['nics'][:2]]
    assert yaml.safe_load(host_vars_text('node1', discovery))['npu_network_devices'] == [4, 5]


def test_the_archive_is_the_same_bytes_for_the_same_members_and_reads_back(tmp_path):
    discovery = discovered(tmp_path)
    members = archive_members('node1', discovery)
    data = archive_bytes(members)
    assert archive_bytes(members) == data
    assert read_archive(data) == members
    with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as tar:
        assert all(info.mtime == 0 and info.mode == 0o644 and info.uid == 0 for info in tar)
    report = members['node1-discovery/report.txt'].decode()
    assert 'hccn_tool -i 3 -ip -g line 6: Routing table:\n    hccn_tool -ip -g: line 6 was not understood' in report
    assert 'image (podman): <registry-1>/ai/vllm-ascend:v0.30.0-950dt 0bd04a3bf707' in report
    assert sorted(name for name in members if '/raw/' in name)[:2] == [
        'node1-discovery/raw/commands/hccn_tool_-i_0_-ip_-g.txt', 'node1-discovery/raw/commands/hccn_tool_-i_1_-ip_-g.txt']
    assert members['node1-discovery/raw/files/usr/local/Ascend/driver/version.info'].decode() == DRIVER_CAT
    assert '29.1.' not in b''.join(members.values()).decode()
    with pytest.raises(ValueError, match='not a discovery archive'):
        read_archive(b'not gzip')


def test_what_is_written_on_a_first_a_second_and_a_changed_run(tmp_path):
    discovery = discovered(tmp_path)
    dest = str(tmp_path / 'out')
    first = plan_outputs('node1', dest, discovery)
    assert [(os.path.relpath(item['path'], dest), item['action']) for item in first['files']] == [
        ('host_vars/node1.yml', 'create'), ('node1-discovery.tar.gz', 'create')]
    for item in first['files']:
        make_tree(dest, {os.path.relpath(item['path'], dest): ''})
        with open(item['path'], 'wb') as handle:
            handle.write(item['data'])
    again = plan_outputs('node1', dest, discovery)
    assert [item['action'] for item in again['files']] == ['unchanged', 'unchanged']
    assert (again['messages'], again['kept']) == ([], None)
    changed = copy.deepcopy(discovery)
    changed['facts']['npu_smi']['chip_count'] = 16
    kept = plan_outputs('node1', dest, changed)
    assert [(os.path.relpath(item['path'], dest), item['action']) for item in kept['files']] == [
        ('host_vars/node1.discovered.yml', 'create'), ('node1-discovery.tar.gz', 'unchanged')]
    assert kept['kept'] == ('%s/host_vars/node1.yml differs from what was discovered and is kept (discover_overwrite: '
                            'true replaces it); the discovered variables are in %s/host_vars/node1.discovered.yml'
                            % (dest, dest))
    replaced = plan_outputs('node1', dest, changed, overwrite=True)
    assert [(os.path.relpath(item['path'], dest), item['action']) for item in replaced['files']][0] == (
        'host_vars/node1.yml', 'replace')
    assert replaced['files'][0]['before'] == first['files'][0]['data']


@pytest.mark.parametrize('host, dest, message', [
    ('../x', 'out', "host: '../x' cannot name a file (letters, digits, _ . -)"),
    ('node1', 'file', 'discover_output_dir: %s/file is not a folder'),
])
def test_what_cannot_be_written_is_refused_naming_the_variable(tmp_path, host, dest, message):
    make_tree(tmp_path, {'/file': 'x'})
    with pytest.raises(ValueError) as raised:
        plan_outputs(host, str(tmp_path / dest), discovered(tmp_path / 'n'))
    assert str(raised.value) == (message % tmp_path if '%s' in message else message)


def test_the_output_folder_is_taken_from_where_the_playbook_runs():
    assert output_dir('discovered', '/srv/site') == '/srv/site/discovered'
    assert output_dir('/tmp/x/', '/srv/site') == '/tmp/x'
    with pytest.raises(ValueError, match='discover_output_dir: discovered is relative and the folder ansible-playbook '
                                         'runs in is unknown'):
        output_dir('discovered', '')


# --- the layout ----------------------------------------------------------------------------------------------

def test_deepseek_r1_w8a8_does_not_fit_one_a2_and_the_sizing_says_what_would():
    configs = require_shared('model-configs')
    model = resolve_model('deepseek-r1-w8a8', None, configs)
    assert (os.path.basename(model['path']), model['quantization']) == ('DeepSeek-R1__config.json', 'ascend')
    chips = [{'name': '910B3', 'hbm_total_mb': 65536, 'memory_total_mb': 0}] * 8
    layout = suggest_layout(model, chips, max_model_len=16384)
    assert (layout['verdict'], layout['tensor_parallel_size']) == ('refused', None)
    assert 'two A2 nodes' in layout['suggestion'] and 'one A3' in layout['suggestion']


def test_a_dense_model_that_fits_one_npu_is_suggested_tp_1():
    config = require_shared('model-configs', 'Qwen3-8B__config.json')
    model = resolve_model(None, config)
    assert model['name'] == 'model-configs'
    chips = [{'name': '910B3', 'hbm_total_mb': 65536, 'memory_total_mb': 0}] * 8
    layout = suggest_layout(dict(model, name='Qwen3-8B'), chips, max_model_len=8192)
    assert (layout['verdict'], layout['tensor_parallel_size'], layout['data_parallel_size'],
            layout['enable_expert_parallel']) == ('fits', 1, 1, False)


def test_a_model_name_without_a_config_names_the_variable_to_set(tmp_path):
    with pytest.raises(ValueError) as raised:
        resolve_model('deepseek-r1-w8a8')
    assert str(raised.value).startswith('no config.json for model deepseek-r1-w8a8: set discover_model_config')
    with pytest.raises(ValueError) as raised:
        resolve_model('deepseek-r1-w8a8', None, str(tmp_path))
    assert str(raised.value).startswith('model deepseek-r1-w8a8: discover_model_configs (%s) holds no '
                                        'deepseek-r1__config.json' % tmp_path)
    assert resolve_model() is None
