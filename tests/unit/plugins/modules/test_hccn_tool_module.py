# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The hccn_tool module: main() against a fake host whose hccn_tool keeps state (read, set, idempotence, check
mode, diff, bad input, missing devices and tool, failing sets, a tool that writes hccn.conf itself), then against
the simulator's hccn_tool run for real in a scratch root."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _hccn_run
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import hccn_tool
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import (
    SIMULATOR,
    FailJson,
    capture_results,
    load_fixture,
    run_main,
    simulator_module,
)

TOOL = '/usr/local/Ascend/driver/tools/hccn_tool'
OUT_OF_RANGE_TEXT = ''.join(line[4:] + '\n' for line in load_fixture(
    'hccn_tool_ip-set_errors_310_device-id-out-of-range.txt').splitlines()[1:4])
CONF = load_fixture('hccn.conf_8npu_address-netmask-only.txt').split('\n', 1)[1]


class FakeNics(dict):
    """fake_host.answers for hccn_tool: answers any argv from the NICs' state (``nics``), records the sets; device
    ids outside ``nics`` answer as the real out-of-range capture. ``fail`` maps an option (``-tls``) to the text a
    failing set prints; ``conf`` is the hccn.conf path the tool writes on ``-ip -s`` when ``writes_conf``."""

    def __init__(self, nics, conf=None, writes_conf=False):
        super().__init__()
        self.nics = nics
        self.conf = conf
        self.writes_conf = writes_conf
        self.fail = {}
        self.sets = []

    def __missing__(self, argv):
        return lambda: self.answer(list(argv))

    def answer(self, argv):
        assert argv[0] == TOOL and argv[1] == '-i', argv
        device, option, mode, rest = int(argv[2]), argv[3], argv[4], argv[5:]
        if device not in self.nics:
            return 1, OUT_OF_RANGE_TEXT, ''
        nic = self.nics[device]
        if mode == '-g':
            return 0, {
                '-ip': 'ipaddr:%s\nnetmask:%s\n' % (nic['address'] or '', nic['netmask'] or ''),
                '-gateway': 'default gateway:%s, Iface:eth%d\n' % (nic['gateway'], device) if nic['gateway'] else '',
                '-netdetect': 'netdetect address: %s\n' % nic['netdetect'] if nic['netdetect'] else '',
                '-tls': 'dev_id:%d, tls switch[%d](0:disable, 1:enable), tls alarm time threshold[60]days\n'
                        % (device, nic['tls']),
                '-link': 'link status: %s\n' % nic.get('link', 'UP'),
                '-net_health': 'net health status: %s\n' % nic.get('net_health', 'Success'),
            }[option], ''
        self.sets.append(argv[2:])
        if option in self.fail:
            return 1, self.fail[option], ''
        params = dict(zip(rest[0::2], rest[1::2]))
        if option == '-ip':
            nic.update(address=params['address'], netmask=params['netmask'])
            if self.writes_conf:
                from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._hccn_tool import render_hccn_conf
                text = open(self.conf).read() if os.path.exists(self.conf) else ''
                with open(self.conf, 'w') as handle:
                    handle.write(render_hccn_conf(text, {device: {'address': params['address'],
                                                                  'netmask': params['netmask']}}))
        elif option == '-gateway':
            nic['gateway'] = params['gateway']
        elif option == '-netdetect':
            nic['netdetect'] = params['address']
        elif option == '-tls':
            nic['tls'] = int(params['enable'])
        return 0, '', ''


def nic(address=None, netmask=None, gateway=None, netdetect=None, tls=1):
    return dict(address=address, netmask=netmask, gateway=gateway, netdetect=netdetect, tls=tls)


@pytest.fixture
def host(fake_host):
    fake_host.executables.add(TOOL)
    fake_host.conf = fake_host.write('/etc/hccn.conf', CONF)
    fake_host.nics = FakeNics({0: nic('10.20.11.11', '255.255.255.0'), 1: nic('10.20.11.12', '255.255.255.0')},
                              fake_host.conf)
    fake_host.answers = fake_host.nics
    return fake_host


DECLARED = [
    {'id': 0, 'address': '10.20.11.11', 'netmask': '255.255.255.0', 'gateway': '10.20.11.1', 'netdetect': '10.20.11.1',
     'tls': False},
    {'id': 1, 'address': '10.20.11.22', 'netmask': '24', 'tls': False},
]


def args(host, **extra):
    return dict(dict(devices=DECLARED, conf_path=host.conf), **extra)


def set_commands(host):
    return [argv[3:] for argv in host.commands() if '-s' in argv]


def test_read_reports_every_value_and_changes_nothing(host):
    # An elision as in the 910B1 sample: named, kept.
    host.write('/etc/hccn.conf', CONF + '...\n')
    result = run_main(hccn_tool.main, dict(state='read', devices=[{'id': 0}, {'id': 1}], conf_path=host.conf))
    assert result['changed'] is False and set_commands(host) == []
    assert result['devices'][0] == {'id': 0, 'address': '10.20.11.11', 'netmask': '255.255.255.0', 'gateway': None,
                                    'netdetect': None, 'tls': True, 'link': 'UP', 'net_health': 'Success'}
    assert result['hccn_conf'][1] == {'address': '10.20.11.12', 'netmask': '255.255.255.0'}
    assert open(host.conf).read() == CONF + '...\n'
    assert host.warnings() == ["hccn.conf line 17 is not KEY_N=VALUE and is left as it is: '...'"]


def test_read_without_devices_reads_those_of_hccn_conf(host):
    host.nics.nics.update((n, nic()) for n in range(2, 8))
    result = run_main(hccn_tool.main, dict(state='read', conf_path=host.conf))
    assert [device['id'] for device in result['devices']] == list(range(8))


def test_set_changes_what_differs_in_order_and_persists_then_a_second_run_changes_nothing(host):
    result = run_main(hccn_tool.main, args(host, _ansible_diff=True))
    assert result['changed'] is True
    assert host.nics.sets == [['0', '-gateway', '-s', 'gateway', '10.20.11.1'],
                              ['0', '-netdetect', '-s', 'address', '10.20.11.1'],
                              ['0', '-tls', '-s', 'enable', '0'],
                              ['1', '-ip', '-s', 'address', '10.20.11.22', 'netmask', '255.255.255.0'],
                              ['1', '-tls', '-s', 'enable', '0']]
    assert result['commands'][0] == 'hccn_tool -i 0 -gateway -s gateway 10.20.11.1'
    assert result['devices'][1]['address'] == '10.20.11.22' and result['devices'][1]['tls'] is False
    text = open(host.conf).read()
    assert 'address_1=10.20.11.22' in text and 'gateway_0=10.20.11.1' in text and 'netdetect_0=10.20.11.1' in text
    assert text.splitlines()[0] == CONF.splitlines()[0] and 'address_7=10.20.11.18' in text
    assert result['diff']['before'] == CONF and result['diff']['after'] == text
    assert result['conf_changed'] is True

    host.nics.sets = []
    again = run_main(hccn_tool.main, args(host, _ansible_diff=True))
    assert again['changed'] is False and host.nics.sets == [] and again['commands'] == []
    assert open(host.conf).read() == text and again['diff']['before'] == again['diff']['after']


def test_check_mode_runs_only_reads_and_predicts(host):
    result = run_main(hccn_tool.main, args(host, _ansible_check_mode=True, _ansible_diff=True))
    assert result['changed'] is True and host.nics.sets == []
    assert all(argv[-1] == '-g' for argv in host.commands())
    assert len(result['commands']) == 5 and result['commands'][3].startswith('hccn_tool -i 1 -ip -s address 10.20.11.22')
    assert result['devices'][1]['address'] == '10.20.11.22' and result['devices'][1]['link'] == 'UP'
    assert open(host.conf).read() == CONF
    assert 'address_1=10.20.11.22' in result['diff']['after'] and result['diff']['before'] == CONF


def test_only_the_file_differs_a_write_without_commands(host):
    os.unlink(host.conf)
    declared = [{'id': 0, 'address': '10.20.11.11', 'netmask': '255.255.255.0'}]
    result = run_main(hccn_tool.main, dict(devices=declared, conf_path=host.conf))
    assert result['changed'] is True and result['commands'] == [] and host.nics.sets == []
    assert open(host.conf).read() == 'address_0=10.20.11.11\nnetmask_0=255.255.255.0\n'
    assert oct(os.stat(host.conf).st_mode & 0o777) == '0o644'


def test_a_tool_that_writes_hccn_conf_itself_leaves_nothing_to_write(host, monkeypatch):
    host.nics.writes_conf = True
    written = []
    real = _hccn_run.write_conf
    monkeypatch.setattr(_hccn_run, 'write_conf', lambda *a: written.append(a) or real(*a))
    declared = [{'id': 1, 'address': '10.20.11.22', 'netmask': '255.255.255.0'}]
    result = run_main(hccn_tool.main, dict(devices=declared, conf_path=host.conf))
    assert result['changed'] is True and written == []
    assert open(host.conf).read().count('address_1=') == 1
    assert run_main(hccn_tool.main, dict(devices=declared, conf_path=host.conf))['changed'] is False


@pytest.mark.parametrize('devices, message', [
    ([{'id': 0, 'address': '10.20.11.300', 'netmask': '24'}], 'devices[0].address: '),
    ([{'id': 0, 'address': '10.20.11.11', 'netmask': '255.0.255.0'}], 'devices[0].netmask: '),
    ([{'id': 0, 'address': '10.20.11.11'}, {'id': 1, 'address': '10.20.11.11'}], 'devices[1].address: '),
    ([{'id': 0, 'address': '10.20.11.11', 'netmask': '0'}], "devices[0].netmask: '0' is not an IPv4 netmask (prefix 0 "),
    ([{'id': 0, 'address': '10.20.11.11', 'netmask': 0}], "devices[0].netmask: '0' is not an IPv4 netmask (prefix 0 "),
    ([{'id': 0, 'address': '10.20.11.11', 'netmask': '0.0.0.0'}], "devices[0].netmask: '0.0.0.0' is not an IPv4"),
    ([{'id': 0, 'address': '127.0.0.2', 'netmask': '24'}],
     'devices[0].address: 127.0.0.2 cannot be a NIC address: it is in the loopback network 127.0.0.0/8'),
])
def test_a_bad_address_fails_before_anything_runs(host, devices, message):
    result = run_main(hccn_tool.main, dict(devices=devices, conf_path=host.conf), FailJson)
    assert result['msg'].startswith(message) and host.commands() == []


def test_a_device_the_host_does_not_have_fails_naming_the_entry(host):
    result = run_main(hccn_tool.main, dict(devices=[{'id': 0, 'tls': False}, {'id': 9, 'tls': False}],
                                           conf_path=host.conf), FailJson)
    assert 'Device ID is out of the valid range.' in result['msg'] and 'devices[1].id' in result['msg']
    assert result['rc'] == 1 and result['cmd'][-5:] == [TOOL, '-i', '9', '-ip', '-g']
    assert host.nics.sets == [] and open(host.conf).read() == CONF


def test_a_missing_tool_fails_naming_the_option(host):
    result = run_main(hccn_tool.main, args(host, hccn_tool_path='/opt/none/hccn_tool'), FailJson)
    assert result['msg'].startswith('hccn_tool_path: /opt/none/hccn_tool is not an executable file')
    assert host.commands() == []


def test_a_set_that_fails_stops_with_its_output_and_leaves_the_file(host):
    host.nics.fail['-tls'] = 'call drvMngGetConsoleLogLevel failed , g_conLogLevel = 3\nCmd execute failed!\n'
    result = run_main(hccn_tool.main, args(host), FailJson)
    assert result['msg'] == 'hccn_tool -i 0 -tls -s enable 0 failed (rc 1): Cmd execute failed! (check devices[0])'
    assert result['commands'] == ['hccn_tool -i 0 -gateway -s gateway 10.20.11.1',
                                  'hccn_tool -i 0 -netdetect -s address 10.20.11.1']
    assert 'Cmd execute failed!' in result['stdout'] and open(host.conf).read() == CONF


def test_a_set_that_does_not_take_fails_naming_the_value(host, monkeypatch):
    original = host.nics.answer

    def ignoring_tls(argv):
        if argv[3] == '-tls' and argv[4] == '-s':
            host.nics.sets.append(argv[2:])
            return 0, '', ''
        return original(argv)
    monkeypatch.setattr(host.nics, 'answer', ignoring_tls)
    result = run_main(hccn_tool.main, args(host), FailJson)
    assert 'reads back other values' in result['msg'] and 'devices[0].tls: declared False' in result['msg']


def test_present_without_devices_fails(host):
    result = run_main(hccn_tool.main, dict(conf_path=host.conf), FailJson)
    assert result['msg'].startswith('devices:')


def test_a_conf_path_that_is_a_directory_fails_naming_it(host):
    result = run_main(hccn_tool.main, args(host, conf_path=os.path.dirname(host.conf)), FailJson)
    assert result['msg'].startswith('conf_path: ') and host.commands() == []


# --- against the simulator's hccn_tool, for real ----------------------------------------------------------------------

ASCEND_SIM = simulator_module('ascend_sim', 'ascend-sim')


@pytest.fixture
def sim(tmp_path, monkeypatch):
    """The simulator's hccn_tool (910B, 8 devices) in a scratch root, no hccn.conf yet."""
    capture_results(monkeypatch)
    tool = tmp_path / 'bin' / 'hccn_tool'
    tool.parent.mkdir()
    tool.symlink_to(os.path.join(SIMULATOR, 'ascend-sim'))
    root = tmp_path / 'root'
    (root / 'etc').mkdir(parents=True)
    state = tmp_path / 'state.json'
    state.write_text(json.dumps(ASCEND_SIM.default_state('910b-8')))
    for name, value in (('ASCEND_SIM_STATE', state), ('ASCEND_SIM_LOG', tmp_path / 'calls.log'),
                        ('ASCEND_SIM_ROOT', root)):
        monkeypatch.setenv(name, str(value))
    return dict(hccn_tool_path=str(tool), conf_path=str(root / 'etc' / 'hccn.conf'), timeout=20)


def test_the_simulator_is_set_idempotently_and_reads_back(sim):
    devices = [dict(id=n, address='10.20.11.%d' % (11 + n), netmask='255.255.255.0', gateway='10.20.11.1',
                    netdetect='10.20.11.1', tls=False) for n in (7,)]
    first = run_main(hccn_tool.main, dict(sim, devices=devices))
    assert first['changed'] is True and len(first['commands']) == 4
    assert first['devices'][0] == {'id': 7, 'address': '10.20.11.18', 'netmask': '255.255.255.0',
                                   'gateway': '10.20.11.1', 'netdetect': '10.20.11.1', 'tls': False, 'link': 'UP',
                                   'net_health': 'Success'}
    conf = open(sim['conf_path']).read()
    # The simulated tool writes hccn.conf on every set, as some real releases do: one line per key.
    assert conf.count('address_7=') == 1 and 'gateway_7=10.20.11.1' in conf

    second = run_main(hccn_tool.main, dict(sim, devices=devices))
    assert second['changed'] is False and second['commands'] == [] and open(sim['conf_path']).read() == conf

    read = run_main(hccn_tool.main, dict(sim, state='read'))
    assert [(d['id'], d['address']) for d in read['devices']] == [(7, '10.20.11.18')]


def test_the_simulator_in_check_mode_changes_nothing(sim):
    result = run_main(hccn_tool.main, dict(sim, devices=[dict(id=0, address='10.0.0.2', netmask='24', tls=False)],
                                           _ansible_check_mode=True))
    assert result['changed'] is True and not os.path.exists(sim['conf_path'])
    calls = [json.loads(line)['argv'] for line in open(os.environ['ASCEND_SIM_LOG'])]
    assert calls and all(argv[3] == '-g' for argv in calls)


def test_the_simulator_device_out_of_range(sim):
    result = run_main(hccn_tool.main, dict(sim, devices=[dict(id=8, tls=False)]), FailJson)
    assert 'device 8 does not exist' in result['msg'] and 'devices[0].id' in result['msg']
