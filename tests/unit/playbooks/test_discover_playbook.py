# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""playbooks/discover.yml run by ansible-playbook on this machine (by its FQCN, as from an installed collection)
against the simulated node of tests/simulator - ascend-sim's npu-smi and hccn_tool on profile 910b-8, a scratch root
with a real driver version.info sample, the fake sysfs, fake-engine's podman - as stage build of tools/run-tests.sh
runs a playbook: the host_vars written, the layout suggested for DeepSeek-R1 W8A8, the archive's contents, the
addresses masked, nothing written on the node and only read commands run, and the second run changing nothing; a
changed node's host_vars beside the kept one, replaced with discover_overwrite; check mode writing nothing."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import SIMULATOR, load_fixture, make_tree, simulator_module
from ansible_collections.kunpeng_ascend.vllm.tests.shared_data import require_shared

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# A transcript of `cat version.info`: its first line is the path, which the driver's parser does not understand.
DRIVER_CAT = load_fixture('driver-version.info_25.3.rc1_faq-indented.txt')
DAEMON_JSON = json.dumps({'runtimes': {'ascend': {'path': '/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime',
                                                  'runtimeArgs': []}},
                          'default-runtime': 'ascend',
                          'registry-mirrors': ['https://ops:s3cret-pw@mirror.corp.example:5000']}, indent=4)
HCCN_CONF = ''.join('address_%d=10.20.11.%d\nnetmask_%d=255.255.255.0\n' % (device, 11 + device, device)
                    for device in range(8))
IMAGE_ID = 'sha256:' + 'ab' * 32


class Node:
    """The simulated node: a scratch root, its sysfs, the simulator's tools on PATH and the engine's state."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.root = make_tree(tmp_path / 'root', {
            '/usr/local/Ascend/driver/version.info': DRIVER_CAT,
            '/usr/local/Ascend/firmware/version.info': 'Version=7.5.0.1.129\n',
            '/etc/hccn.conf': HCCN_CONF,
            '/etc/docker/daemon.json': DAEMON_JSON})
        self.sysfs = str(tmp_path / 'sys')
        simulator_module('fake_sysfs', 'fake_sysfs.py').write_sysfs(self.sysfs, '910b-8')
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        for name, program in (('npu-smi', 'ascend-sim'), ('hccn_tool', 'ascend-sim'), ('podman', 'fake-engine')):
            (self.bin / name).symlink_to(os.path.join(SIMULATOR, program))
        self.env = dict(os.environ, ASCEND_SIM_ROOT=self.root, ASCEND_SIM_STATE=str(tmp_path / 'state.json'),
                        ASCEND_SIM_LOG=str(tmp_path / 'calls.log'), ASCEND_SIM_ENGINE_LOG=str(tmp_path / 'engine.log'),
                        ASCEND_SIM_ENGINE_STATE=str(tmp_path / 'engine.json'),
                        PATH='%s:%s' % (self.bin, os.environ['PATH']))
        subprocess.run([os.path.join(SIMULATOR, 'ascend-sim'), 'init', '--profile', '910b-8'], env=self.env,
                       check=True, capture_output=True)
        (tmp_path / 'engine.json').write_text(json.dumps({'podman': {'images': {IMAGE_ID: {
            'tags': ['quay.io/ascend/vllm-ascend:v0.23.0'], 'loaded': 1.0, 'size': 10 ** 9}}, 'containers': {}}}))
        (tmp_path / 'inventory.yml').write_text(yaml.safe_dump({'ascend_nodes': {'hosts': {'node1': {
            'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}))
        self.out = str(tmp_path / 'discovered')

    def tree(self):
        """Every file of the node's root and sysfs with its digest: what a read-only run leaves as it was."""
        found = {}
        for top in (self.root, self.sysfs):
            for directory, _dirs, files in os.walk(top):
                for name in files:
                    path = os.path.join(directory, name)
                    with open(path, 'rb') as handle:
                        found[path] = hashlib.sha256(handle.read()).hexdigest()
        return found

    def play(self, *options, **variables):
        values = dict(discover_root=self.root, discover_sysfs_path=self.sysfs,
                      discover_hccn_tool_path=str(self.bin / 'hccn_tool'), discover_engines=['podman'],
                      discover_output_dir=self.out, **variables)
        env = dict(self.env, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.cache'), ANSIBLE_HOME=str(self.tmp / 'home'),
                   ANSIBLE_LOCAL_TEMP=str(self.tmp / 'local'), ANSIBLE_REMOTE_TEMP=str(self.tmp / 'remote'),
                   ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default', ANSIBLE_CALLBACK_RESULT_FORMAT='json',
                   ANSIBLE_CALLBACK_FORMAT_PRETTY='0', ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='0')
        playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
        run = subprocess.run([playbook, '-i', 'inventory.yml', 'kunpeng_ascend.vllm.discover', '-e', json.dumps(values)]
                             + list(options), cwd=str(self.tmp), env=env, capture_output=True, text=True, check=False)
        assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
        recap = re.search(r'node1\s+: ok=(\d+)\s+changed=(\d+)', run.stdout)
        results = [json.loads(found) for found in re.findall(r'^(?:ok|changed): \[node1(?: -> localhost)?\] => (\{.*\})$',
                                                             run.stdout, re.M)]
        return int(recap.group(2)), results, run.stdout + run.stderr

    def host_vars(self, name='node1.yml'):
        with open(os.path.join(self.out, 'host_vars', name), encoding='utf-8') as handle:
            return handle.read()

    def archive(self):
        with tarfile.open(os.path.join(self.out, 'node1-discovery.tar.gz'), 'r:gz') as tar:
            return dict((info.name, tar.extractfile(info).read().decode()) for info in tar if info.isfile())

    def calls(self, log):
        with open(str(self.tmp / log), encoding='utf-8') as handle:
            return sorted(set(' '.join(json.loads(line)['argv']) for line in handle))


@pytest.fixture(name='sim')
def fixture_sim(tmp_path):
    return Node(tmp_path)


def test_a_node_is_discovered_into_host_vars_and_an_archive_changing_nothing_on_it(sim):
    configs = require_shared('model-configs')
    before = sim.tree()
    changed, results, output = sim.play(discover_model='deepseek-r1-w8a8', discover_model_configs=configs,
                                        discover_max_model_len=16384)
    assert changed == 1, output[-3000:]
    assert sim.tree() == before
    assert sim.calls('calls.log') == ['-i %d -ip -g' % device for device in range(8)] + ['info', 'info -m']
    assert sim.calls('engine.log') == ['images --format {{.Repository}}\t{{.Tag}}\t{{.ID}}']

    values = yaml.safe_load(sim.host_vars())
    assert values['npu_driver_expected_chips'] == 8
    assert values['npu_network_addresses'] == dict((device, '10.20.11.%d/24' % (11 + device)) for device in range(8))
    assert values['discovered_product'] == 'Atlas 800I A2 (8 x 64 GB)'
    assert values['discovered_npu_numa'] == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}
    assert values['discovered_versions']['driver'] == '25.3.rc1'
    layout = values['discovered_layout']
    assert (layout['model'], layout['verdict'], layout['tensor_parallel_size']) == ('deepseek-r1-w8a8', 'refused', None)
    assert 'two A2 nodes' in layout['suggestion']

    members = sim.archive()
    assert sorted(members)[:3] == ['node1-discovery/discovery.json', 'node1-discovery/raw/commands/hccn_tool_-i_0_-ip_-g.txt',
                                   'node1-discovery/raw/commands/hccn_tool_-i_1_-ip_-g.txt']
    assert members['node1-discovery/raw/commands/hccn_tool_-i_0_-ip_-g.txt'] == 'ipaddr:<ipv4-1>\nnetmask:255.255.255.0\n'
    assert '"https://********@<host-1>:5000"' in members['node1-discovery/raw/files/etc/docker/daemon.json']
    assert members['node1-discovery/raw/files/usr/local/Ascend/driver/version.info'] == DRIVER_CAT
    everything = ''.join(members.values())
    assert '10.20.11.' not in everything and 's3cret-pw' not in everything and 'corp.example' not in everything
    report = members['node1-discovery/report.txt']
    assert ('Not understood (1), by source and line\n-------------------------------------\n'
            '/usr/local/Ascend/driver/version.info line 1: /usr/local/Ascend/driver/version.info\n') in report
    assert 'image (podman): quay.io/ascend/vllm-ascend:v0.23.0 abababababab, built for 910B: this node' in report
    assert 'deepseek-r1-w8a8 (%s/DeepSeek-R1__config.json): refused' % configs in report
    assert results[-1]['msg'][-2:] == ['not understood: 1 lines (report.txt in the archive)',
                                       'layout for deepseek-r1-w8a8: refused']

    first = dict((name, os.stat(os.path.join(sim.out, name)).st_mtime_ns)
                 for name in ('host_vars/node1.yml', 'node1-discovery.tar.gz'))
    changed, results, output = sim.play(discover_model='deepseek-r1-w8a8', discover_model_configs=configs,
                                        discover_max_model_len=16384)
    assert changed == 0, output[-3000:]
    assert dict((name, os.stat(os.path.join(sim.out, name)).st_mtime_ns) for name in first) == first
    assert sorted(os.listdir(os.path.join(sim.out, 'host_vars'))) == ['node1.yml']


def test_a_changed_node_keeps_the_host_vars_and_writes_beside_them_unless_overwrite(sim):
    sim.play()
    original = sim.host_vars()
    make_tree(sim.root, {'/etc/hccn.conf': HCCN_CONF.replace('10.20.11.11', '10.20.12.11')})
    changed, results, output = sim.play()
    assert changed == 1
    assert sim.host_vars() == original
    assert yaml.safe_load(sim.host_vars('node1.discovered.yml'))['npu_network_addresses'][0] == '10.20.12.11/24'
    assert results[-1]['msg'][0] == (
        '%s/host_vars/node1.yml differs from what was discovered and is kept (discover_overwrite: true replaces it); '
        'the discovered variables are in %s/host_vars/node1.discovered.yml' % (sim.out, sim.out))
    assert '[WARNING]: %s/host_vars/node1.yml differs from what was discovered and is kept' % sim.out in output
    changed, results, output = sim.play(discover_overwrite=True)
    assert changed == 1
    assert yaml.safe_load(sim.host_vars())['npu_network_addresses'][0] == '10.20.12.11/24'


def test_check_mode_writes_nothing_and_addresses_show_when_asked(sim):
    changed, results, output = sim.play('--check')
    assert changed == 1
    assert not os.path.exists(sim.out)
    sim.play(discover_include_addresses=True)
    assert sim.archive()['node1-discovery/raw/commands/hccn_tool_-i_0_-ip_-g.txt'] == (
        'ipaddr:10.20.11.11\nnetmask:255.255.255.0\n')
    assert 'ops:s3cret-pw' not in ''.join(sim.archive().values())


def test_a_model_without_a_config_is_named_in_the_report_not_a_failure(sim):
    changed, results, output = sim.play(discover_model='deepseek-r1-w8a8')
    assert changed == 1
    report = sim.archive()['node1-discovery/report.txt']
    assert ('Suggested layout\n----------------\nno config.json for model deepseek-r1-w8a8: set discover_model_config '
            'to its config.json') in report
    assert 'discovered_layout' not in yaml.safe_load(sim.host_vars())
