# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The NPU and service metrics in Prometheus's text format: named, labelled and described as MindCluster's NPU
Exporter writes them (its golden test output and its API document, tests/fixtures/metrics_npu-exporter_*), from real
``npu-smi info`` captures, read back by a parser of the exposition format; and the journal's failure counters."""

from __future__ import annotations

import re

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend import _npu_metrics
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _systemd
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _failure_catalogue
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import parse_npu_smi_info
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

GOLDEN = 'metrics_npu-exporter_testdata-golden_910Awn-x8.txt'
API_DOC = 'metrics_npu-exporter_api-doc_910A-x8_fenced-excerpt.txt'
ENTRIES = [(entry['id'], entry) for entry in _failure_catalogue.CATALOGUE]

_SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)(?: (?P<ts>-?\d+))?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def parse_exposition(text, allow=('```', '...', '')):
    """Families of the text format: {name: {'help', 'type', 'samples': [(labels dict, value, timestamp)]}}. Strict:
    HELP and TYPE come before a family's samples, a family is contiguous, label values are unescaped; lines in
    ``allow`` (the API document's fence and ellipses) are skipped."""
    families = {}
    current = None
    for line in text.splitlines():
        if line.strip() in allow or line.startswith('```'):
            continue
        if line.startswith('# HELP ') or line.startswith('# TYPE '):
            kind, name, rest = line[2:6], line.split(' ')[2], line.split(' ', 3)[3] if line.count(' ') >= 3 else ''
            family = families.setdefault(name, {'help': None, 'type': None, 'samples': []})
            assert not family['samples'], 'HELP/TYPE after samples of %s' % name
            family['help' if kind == 'HELP' else 'type'] = rest.replace('\\n', '\n').replace('\\\\', '\\') \
                if kind == 'HELP' else rest
            current = name
            continue
        match = _SAMPLE.match(line)
        assert match, 'not a sample line: %r' % line
        assert match.group('name') == current, '%s outside its family' % match.group('name')
        labels = {}
        text_labels = match.group('labels') or ''
        position = 0
        while position < len(text_labels):
            label = _LABEL.match(text_labels, position)
            assert label, 'bad labels: %r' % text_labels
            labels[label.group(1)] = re.sub(r'\\(.)', lambda m: {'n': '\n'}.get(m.group(1), m.group(1)), label.group(2))
            position = label.end()
        families[current]['samples'].append((labels, float(match.group('value')), match.group('ts')))
    return families


def render_fixture(name, warn=None):
    warnings = []
    info = parse_npu_smi_info(load_fixture(name))
    text = _npu_metrics.render(_npu_metrics.npu_families(info, warn or warnings.append))
    return parse_exposition(text), warnings


def test_the_npu_families_are_the_exporters_names_help_types_and_labels():
    golden = parse_exposition(load_fixture(GOLDEN))
    ours, warnings = render_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt')
    assert warnings == []
    # Every family we write, but machine_card_nums (only in the API document), is in the exporter's golden output.
    assert set(ours) - set(golden) == {'machine_card_nums'}
    for name, family in ours.items():
        reference = golden.get(name) or parse_exposition(load_fixture(API_DOC))[name]
        assert (family['help'], family['type']) == (reference['help'], reference['type']), name
        assert [sorted(labels) for labels, _value, _ts in family['samples']][:1] == \
            [sorted(labels) for labels, _value, _ts in reference['samples']][:1], name
        assert all(ts is None for _labels, _value, ts in family['samples']), 'the textfile collector refuses timestamps'


def test_the_api_documents_label_values_look_like_ours():
    doc = parse_exposition(load_fixture(API_DOC))
    ours, _warnings = render_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt')
    theirs = doc['npu_chip_info_aicore_current_freq']['samples'][0][0]
    mine = ours['npu_chip_info_utilization']['samples'][0][0]
    assert list(mine) == list(theirs) == list(_npu_metrics.CHIP_LABELS)
    assert re.match(r'^[0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9]$', theirs['pcie_bus_info'])
    assert re.match(r'^[0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9]$', mine['pcie_bus_info'])


def values(families, name):
    return dict((labels['id'], value) for labels, value, _ts in families[name]['samples'])


def test_the_910b_values_are_npu_smis():
    ours, _warnings = render_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt')
    assert ours['machine_npu_nums']['samples'] == [({}, 8.0, None)]
    assert values(ours, 'npu_chip_info_utilization')['0'] == 27
    assert values(ours, 'npu_chip_info_hbm_used_memory')['0'] == 59718
    assert values(ours, 'npu_chip_info_hbm_total_memory')['0'] == 65536
    assert values(ours, 'npu_chip_info_power')['0'] == 124.9
    assert values(ours, 'npu_chip_info_temperature')['4'] == 45
    assert set(values(ours, 'npu_chip_info_health_status').values()) == {1}
    labels = ours['npu_chip_info_utilization']['samples'][0][0]
    assert labels == {'container_name': '', 'id': '0', 'model_name': '910B3', 'namespace': '', 'pcie_bus_info': '0000:C1:00.0',
                      'pod_name': '', 'vdie_id': ''}


def test_a3_chips_are_named_by_their_phy_id_and_a_missing_power_gives_no_sample():
    ours, warnings = render_fixture('npu-smi-info_A3-Ascend910_24.1.rc3.7_16chip_noproc.txt')
    assert warnings == []
    assert ours['machine_npu_nums']['samples'][0][1] == 16
    assert ours['machine_card_nums']['samples'][0][1] == 8
    assert sorted(values(ours, 'npu_chip_info_temperature'), key=int) == [str(index) for index in range(16)]
    # Chip 1 of each NPU prints its power as '-': no sample, never a 0.
    assert sorted(values(ours, 'npu_chip_info_power'), key=int) == [str(index) for index in range(0, 16, 2)]


def test_310p_duo_has_ddr_but_no_hbm_families():
    ours, warnings = render_fixture('npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt')
    assert warnings == []
    assert 'npu_chip_info_hbm_used_memory' not in ours
    assert values(ours, 'npu_chip_info_total_memory')['0'] == 44216
    assert 'npu_chip_info_power' not in ours  # NA on every chip


def test_an_alarm_health_is_unhealthy():
    ours, warnings = render_fixture('npu-smi-info_Ascend950PR_25.7.rc1_3npu_Alarm-health_procs.txt')
    health = values(ours, 'npu_chip_info_health_status')
    assert 0 in health.values() and 1 in health.values() and warnings == []


def test_an_unknown_health_word_is_unhealthy_with_a_warning():
    warnings = []
    assert _npu_metrics.health_value('Degraded', warnings.append) == 0
    assert warnings == ["npu-smi health 'Degraded' is not one of OK, Alarm, Critical, Warning: reported as unhealthy (0)"]
    assert _npu_metrics.health_value(None, warnings.append) is None


def test_a_chip_without_an_id_of_its_own_is_left_out_with_a_warning():
    warnings = []
    info = {'npu_count': 1, 'chip_count': 2, 'chips': [
        {'npu_id': 0, 'chip_id': 0, 'device_id': None, 'name': 'X', 'health': 'OK', 'bus_id': None, 'aicore_percent': 5},
        {'npu_id': 0, 'chip_id': 1, 'device_id': None, 'name': 'X', 'health': 'OK', 'bus_id': None, 'aicore_percent': 6}]}
    families = parse_exposition(_npu_metrics.render(_npu_metrics.npu_families(info, warnings.append)))
    assert 'npu_chip_info_utilization' not in families
    assert warnings == ['npu-smi info: NPU 0 chip 0 has no id of its own in the table, its metrics are left out',
                        'npu-smi info: NPU 0 chip 1 has no id of its own in the table, its metrics are left out']


def test_label_values_and_help_are_escaped_and_read_back():
    odd = 'a "quoted" back\\slash\nnew line'
    text = _npu_metrics.render([_npu_metrics.Family('x_total', 'help with \\ and\nline', 'counter', [((('unit', odd),), 3)])])
    assert text == ('# HELP x_total help with \\\\ and\\nline\n# TYPE x_total counter\n'
                    'x_total{unit="a \\"quoted\\" back\\\\slash\\nnew line"} 3\n')
    family = parse_exposition(text)['x_total']
    assert family['samples'][0][0] == {'unit': odd} and family['help'] == 'help with \\ and\nline'


@pytest.mark.parametrize('family, error', [
    (_npu_metrics.Family('1bad', '', 'gauge', []), "not a metric name: '1bad'"),
    (_npu_metrics.Family('ok', '', 'histogram', []), "ok: type 'histogram' is not one of counter, gauge"),
    (_npu_metrics.Family('ok', '', 'gauge', [((('__name', 'x'),), 1)]), "ok: not a label name: '__name'"),
])
def test_render_refuses_what_the_format_does_not_allow(family, error):
    with pytest.raises(ValueError) as raised:
        _npu_metrics.render([family])
    assert str(raised.value) == error


@pytest.mark.parametrize('value, text', [(3, '3'), (2.5, '2.5'), (4.0, '4'), (float('nan'), 'NaN'), (float('inf'), '+Inf'),
                                         (True, '1'), (1e20, '1e+20')])
def test_values(value, text):
    assert _npu_metrics.format_value(value) == text


def test_service_families_from_systemctl_show():
    families = _npu_metrics.service_families('vllm.service', {'NRestarts': 2, 'ActiveState': 'active', 'MainPID': 7}, 1024)
    parsed = parse_exposition(_npu_metrics.render(families))
    assert parsed[_npu_metrics.RESTARTS]['samples'] == [({'unit': 'vllm.service'}, 2.0, None)]
    assert parsed[_npu_metrics.RESTARTS]['type'] == 'counter'
    assert parsed[_npu_metrics.ACTIVE]['samples'][0][1] == 1
    assert parsed[_npu_metrics.RESIDENT]['samples'][0][1] == 1024
    # systemctl failed: no samples rather than zeros.
    assert _npu_metrics.render(_npu_metrics.service_families('vllm.service', {}, None)) == ''


# ------------------------------------------------------------------------------------------------- the journal

def test_journal_argv_reads_after_the_cursor_or_from_the_start_time():
    state = _npu_metrics.new_state('vllm.service', 1700000000.5)
    assert _systemd.journal_argv('journalctl', 'vllm.service', state['since'], state.get('cursor'), 50) == [
        'journalctl', '--unit=vllm.service', '--since=@1700000000', '--output=cat', '--show-cursor', '--quiet',
        '--no-pager', '--lines=50']
    state['cursor'] = 's=abc;i=1'
    assert _systemd.journal_argv('journalctl', 'vllm.service', state['since'], state['cursor'], 50)[2] == \
        '--after-cursor=s=abc;i=1'


def test_the_counters_add_up_across_runs_and_every_entry_has_a_sample():
    log = load_fixture('serve-log_vllm-ascend-2546_EJ0001_ERR02200.txt')
    expected = _failure_catalogue.scan(log.splitlines())['counts']
    assert expected, 'the sample must show a known failure'
    warnings = []
    state = _npu_metrics.load_state(None, 'vllm.service', 100, _failure_catalogue.ENTRIES, warnings.append)
    lines, cursor = _systemd.split_journal_cursor(log + '-- cursor: s=1\n')
    assert cursor == 's=1' and lines == log.splitlines()
    state = _npu_metrics.count_journal(state, lines, cursor, _failure_catalogue.scan, 100000, 200, warnings.append)
    state = _npu_metrics.count_journal(state, lines, 's=2', _failure_catalogue.scan, 100000, 300, warnings.append)
    assert state['counts'] == dict((key, 2 * count) for key, count in expected.items())
    assert state['cursor'] == 's=2' and state['lines'] == 2 * len(lines) and warnings == []
    families = parse_exposition(_npu_metrics.render(_npu_metrics.journal_families('vllm.service', state, ENTRIES)))
    samples = families[_npu_metrics.FAILURES]['samples']
    assert [labels['failure'] for labels, _value, _ts in samples] == [key for key, _entry in ENTRIES]
    assert dict((labels['failure'], value) for labels, value, _ts in samples if value) == \
        dict((key, 2.0 * count) for key, count in expected.items())


def test_no_new_line_keeps_the_cursor_and_a_full_read_warns():
    warnings = []
    state = dict(_npu_metrics.new_state('vllm.service', 0), cursor='s=1')
    assert _npu_metrics.count_journal(state, [], None, _failure_catalogue.scan, 3, 9, warnings.append)['cursor'] == 's=1'
    after = _npu_metrics.count_journal(state, ['a', 'b', 'c'], 's=2', _failure_catalogue.scan, 3, 9, warnings.append)
    assert after['cursor'] == 's=2' and len(warnings) == 1 and 'the rest is read by the next runs' in warnings[0]


def test_lines_without_a_cursor_move_the_start_time_so_they_are_not_counted_twice():
    warnings = []
    state = _npu_metrics.new_state('vllm.service', 10)
    after = _npu_metrics.count_journal(state, ['x'], None, _failure_catalogue.scan, 100, 99, warnings.append)
    assert after['since'] == 99 and after['cursor'] is None and len(warnings) == 1


def test_a_failed_journalctl_drops_the_cursor_and_keeps_the_counts():
    warnings = []
    state = dict(_npu_metrics.new_state('vllm.service', 0), cursor='s=gone', counts={'ej0001': 4})
    after = _npu_metrics.journal_failed(state, 50, 'journalctl failed (rc=1): Failed to seek to cursor', warnings.append)
    assert after['cursor'] is None and after['since'] == 50 and after['counts'] == {'ej0001': 4}
    assert 'Failed to seek to cursor' in warnings[0]


@pytest.mark.parametrize('data, problem', [
    ({'version': 9}, 'not a state of version 1'),
    (dict(_npu_metrics.new_state('other.service', 0)), "the state of unit 'other.service', not 'vllm.service'"),
    (dict(_npu_metrics.new_state('vllm.service', 0), counts={'no_such_entry': 1}), 'counts that are not counts'),
    (dict(_npu_metrics.new_state('vllm.service', 0), counts={'ej0001': -1}), 'counts that are not counts'),
    (dict(_npu_metrics.new_state('vllm.service', 0), since=None), 'neither cursor nor start time'),
    ([], 'not a state of version 1'),
])
def test_a_state_not_understood_starts_again_with_a_warning(data, problem):
    warnings = []
    state = _npu_metrics.load_state(data, 'vllm.service', 77, _failure_catalogue.ENTRIES, warnings.append)
    assert state == _npu_metrics.new_state('vllm.service', 77)
    assert len(warnings) == 1 and problem in warnings[0]


def test_a_good_state_is_kept():
    data = dict(_npu_metrics.new_state('vllm.service', 5), cursor='s=1', counts={'ej0001': 2}, lines=10)
    assert _npu_metrics.load_state(data, 'vllm.service', 77, _failure_catalogue.ENTRIES, None) == data
