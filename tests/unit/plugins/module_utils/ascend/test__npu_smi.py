# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The npu-smi parsers against real captured output (tests/fixtures/npu-smi-*, each naming its source), and the
one way the modules run npu-smi and read it."""

from __future__ import annotations


import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.ascend._npu_smi import (
    CHIP_KEYS,
    NpuSmiFailure,
    describe_npu_smi_failure,
    npu_smi_failure_hint,
    parse_npu_smi_info,
    parse_npu_smi_key_values,
    read_npu_smi_details,
    read_npu_smi_info,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES, load_fixture


HWHIAIUSER_HINT = ('the user running npu-smi is not in group HwHiAiUser, which owns the /dev/davinci* devices: '
                   'add it (usermod -aG HwHiAiUser USER, then log in again) or run the task as root (become: true)')


def parse(text):
    warnings = []
    return parse_npu_smi_info(text, warn=warnings.append), warnings


def column(result, key):
    return [chip[key] for chip in result['chips']]


def chip(**fields):
    """A full chip dict: the given fields, every other key null."""
    return dict(dict.fromkeys(CHIP_KEYS), **fields)


def process(npu_id, chip_id, pid, name, memory_mb, container_pid=None):
    return {'npu_id': npu_id, 'chip_id': chip_id, 'pid': pid, 'name': name, 'memory_mb': memory_mb,
            'container_pid': container_pid}


def summary(result):
    return {key: result[key] for key in ('version', 'driver_version', 'npu_count', 'chip_count', 'all_healthy',
                                         'complete')}


def cut_off(lineno, line, missing='no process table'):
    """The reason an output that ends at ``line`` (number ``lineno``) lacking ``missing`` is incomplete."""
    return 'the output ends at line %d before the table does (%s), so it is incomplete (cut off?): %r' % (
        lineno, missing, line)


def snippet_warning(name, lineno):
    """The warning for a fixture that its author cut after the chip table: it ends at its last line ``lineno``."""
    return 'npu-smi info: ' + cut_off(lineno, load_fixture(name).splitlines()[-1])


# A process table of an idle host with NPUs 0 and 1, for the made-up tables below.
IDLE_PROCESS_TABLE = """\
+-------------------+-----------------+----------------------------------------+
| NPU     Chip      | Process id      | Process name      | Process memory(MB) |
+===================+=================+========================================+
| No running processes found in NPU 0                                          |
+===================+=================+========================================+
| No running processes found in NPU 1                                          |
+===================+=================+========================================+
"""


def test_fixture_loader_strips_the_source_header():
    assert load_fixture('npu-smi-info_310_21.0.3.1_1chip_busid-NA.txt').startswith('+-----')


# --- one test per captured layout ---------------------------------------------------------------------------------

def test_310_old_80_column_layout_with_bus_id_na():
    # The doc shows the chip table only, so the chips are read and the table is reported incomplete.
    name = 'npu-smi-info_310_21.0.3.1_1chip_busid-NA.txt'
    result, warnings = parse(load_fixture(name))
    assert warnings == [snippet_warning(name, 9)]
    assert summary(result) == {'version': '21.0.3.1', 'driver_version': '21.0.3.1', 'npu_count': 1, 'chip_count': 1,
                               'all_healthy': False, 'complete': False}
    assert result['chips'] == [chip(npu_id=0, chip_id=0, device_id=0, name='310', health='OK', bus_id=None,
                                    power_w=12.8, temp_c=58, aicore_percent=0,
                                    memory_used_mb=5324, memory_total_mb=8192)]
    assert result['processes'] == []


def test_910a_93_column_layout_with_hugepages_and_ddr_beside_hbm():
    name = 'npu-smi-info_910A_21.0.4_2npu_hugepages15.txt'
    result, warnings = parse(load_fixture(name))
    assert warnings == [snippet_warning(name, 12)]
    assert summary(result) == {'version': '21.0.4', 'driver_version': '21.0.4', 'npu_count': 2, 'chip_count': 2,
                               'all_healthy': False, 'complete': False}
    assert result['chips'] == [
        chip(npu_id=0, chip_id=0, name='910A', health='OK', bus_id='0000:C1:00.0', power_w=70.9, temp_c=42,
             aicore_percent=0, hugepages_used=15, hugepages_total=15, memory_used_mb=839, memory_total_mb=15170,
             hbm_used_mb=1, hbm_total_mb=32768),
        chip(npu_id=1, chip_id=0, name='910A', health='OK', bus_id='0000:81:00.0', power_w=67.2, temp_c=36,
             aicore_percent=0, hugepages_used=15, hugepages_total=15, memory_used_mb=1274, memory_total_mb=15171,
             hbm_used_mb=1, hbm_total_mb=32768),
    ]
    assert result['processes'] == []


# Real output of an Atlas 800 9000 (8x 910A) in a public cluster's user guide, first two NPUs: npu-smi 1.8.21 with
# driver 20.2.2.spc001 (so the two versions differ), no Hugepages column.
NPU_SMI_1_8_21_910A_WITHOUT_HUGEPAGES = """\
+------------------------------------------------------------------------------------+
| npu-smi 1.8.21                   Version: 20.2.2.spc001                            |
+----------------------+---------------+---------------------------------------------+
| NPU   Name           | Health        | Power(W)   Temp(C)                          |
| Chip                 | Bus-Id        | AICore(%)  Memory-Usage(MB)  HBM-Usage(MB)  |
+======================+===============+=============================================+
| 0     910A           | OK            | 68.6       36                               |
| 0                    | 0000:C1:00.0  | 0          591  / 14795      0    / 32768   |
+======================+===============+=============================================+
| 1     910A           | OK            | 63.7       31                               |
| 0                    | 0000:81:00.0  | 0          303  / 15177      0    / 32768   |
+======================+===============+=============================================+
"""


def test_910a_without_hugepages_and_tool_version_differing_from_driver():
    result, warnings = parse(NPU_SMI_1_8_21_910A_WITHOUT_HUGEPAGES)
    assert warnings == ['npu-smi info: ' + cut_off(12, '+======================+===============+'
                                                       '=============================================+')]
    assert summary(result) == {'version': '1.8.21', 'driver_version': '20.2.2.spc001', 'npu_count': 2,
                               'chip_count': 2, 'all_healthy': False, 'complete': False}
    assert result['chips'] == [
        chip(npu_id=0, chip_id=0, name='910A', health='OK', bus_id='0000:C1:00.0', power_w=68.6, temp_c=36,
             aicore_percent=0, memory_used_mb=591, memory_total_mb=14795, hbm_used_mb=0, hbm_total_mb=32768),
        chip(npu_id=1, chip_id=0, name='910A', health='OK', bus_id='0000:81:00.0', power_w=63.7, temp_c=31,
             aicore_percent=0, memory_used_mb=303, memory_total_mb=15177, hbm_used_mb=0, hbm_total_mb=32768),
    ]


def test_910a_generation_named_910b_with_no_running_processes():
    result, warnings = parse(load_fixture('npu-smi-info_910A-as-910B_24.1.0_8npu_noproc_deepseek-doc.txt'))
    assert warnings == []
    assert summary(result) == {'version': '24.1.0', 'driver_version': '24.1.0', 'npu_count': 8, 'chip_count': 8,
                               'all_healthy': True, 'complete': True}
    assert column(result, 'npu_id') == list(range(8))
    assert set(column(result, 'name')) == {'910B'}
    assert column(result, 'bus_id') == ['0000:C1:00.0', '0000:81:00.0', '0000:41:00.0', '0000:01:00.0',
                                        '0000:C2:00.0', '0000:82:00.0', '0000:42:00.0', '0000:02:00.0']
    assert column(result, 'power_w') == [65.7, 62.3, 64.9, 62.9, 67.1, 63.5, 64.2, 63.0]
    assert column(result, 'temp_c') == [38, 33, 34, 40, 38, 33, 33, 37]
    assert column(result, 'memory_used_mb') == [2382, 2378, 2382, 2384, 2385, 2355, 2384, 2355]
    assert set(column(result, 'memory_total_mb')) == {15038}
    assert set(column(result, 'hbm_used_mb')) == {0}
    assert set(column(result, 'hbm_total_mb')) == {32768}
    assert set(column(result, 'device_id')) == {None}
    assert result['processes'] == []


def test_910b1_elided_by_its_author_warns_about_the_ellipsis():
    name = 'npu-smi-info_910B1_23.0.rc2_8npu_elided.txt'
    result, warnings = parse(load_fixture(name))
    assert warnings == ["npu-smi info line 14: ignored text inside the table: '...'", snippet_warning(name, 18)]
    assert summary(result) == {'version': '23.0.rc2', 'driver_version': '23.0.rc2', 'npu_count': 3, 'chip_count': 3,
                               'all_healthy': False, 'complete': False}
    assert result['chips'][0] == chip(npu_id=0, chip_id=0, name='910B1', health='OK', bus_id='0000:C1:00.0',
                                      power_w=88.4, temp_c=46, aicore_percent=0, hugepages_used=0,
                                      hugepages_total=0, memory_used_mb=0, memory_total_mb=0,
                                      hbm_used_mb=4175, hbm_total_mb=65536)
    assert column(result, 'npu_id') == [0, 1, 7]
    assert column(result, 'power_w') == [88.4, 92.1, 92.7]
    assert column(result, 'temp_c') == [46, 47, 48]
    assert column(result, 'hbm_used_mb') == [4175, 4175, 4174]
    assert column(result, 'bus_id') == ['0000:C1:00.0', '0000:01:00.0', '0000:42:00.0']
    assert result['processes'] == []


def test_910b1_under_training_load_with_processes_and_build_suffix():
    result, warnings = parse(load_fixture('npu-smi-info_910B1_23.0.rc2.b090_8npu_training-load_elided.txt'))
    assert warnings == ["npu-smi info line 10: ignored text inside the table: '...'",
                        "npu-smi info line 22: ignored text inside the table: '...'"]
    assert summary(result) == {'version': '23.0.rc2.b090', 'driver_version': '23.0.rc2.b090', 'npu_count': 2,
                               'chip_count': 2, 'all_healthy': True, 'complete': True}
    assert result['chips'] == [
        chip(npu_id=0, chip_id=0, name='910B1', health='OK', bus_id='0000:C1:00.0', power_w=327.1, temp_c=54,
             aicore_percent=57, hugepages_used=0, hugepages_total=0, memory_used_mb=0, memory_total_mb=0,
             hbm_used_mb=64293, hbm_total_mb=65536),
        chip(npu_id=7, chip_id=0, name='910B1', health='OK', bus_id='0000:42:00.0', power_w=451.6, temp_c=76,
             aicore_percent=68, hugepages_used=0, hugepages_total=0, memory_used_mb=0, memory_total_mb=0,
             hbm_used_mb=64114, hbm_total_mb=65536),
    ]
    assert result['processes'] == [process(0, 0, 2441447, 'python', 59618),
                                   process(1, 0, 2441448, 'python', 59834),
                                   process(7, 0, 2441454, 'python', 59802)]


def test_910b3_busy_with_empty_process_names():
    result, warnings = parse(load_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'))
    assert warnings == []
    assert summary(result) == {'version': '25.0.rc1.b010', 'driver_version': '25.0.rc1.b010', 'npu_count': 8,
                               'chip_count': 8, 'all_healthy': True, 'complete': True}
    assert column(result, 'power_w') == [124.9, 122.0, 124.0, 127.3, 128.3, 122.5, 127.4, 128.6]
    assert column(result, 'temp_c') == [41, 40, 41, 39, 45, 44, 46, 45]
    assert column(result, 'aicore_percent') == [27, 29, 29, 29, 30, 29, 29, 29]
    assert column(result, 'hbm_used_mb') == [59718, 59715, 59714, 59716, 59714, 59715, 59714, 59715]
    assert set(column(result, 'hbm_total_mb')) == {65536}
    assert column(result, 'bus_id') == ['0000:C1:00.0', '0000:C2:00.0', '0000:81:00.0', '0000:82:00.0',
                                        '0000:01:00.0', '0000:02:00.0', '0000:41:00.0', '0000:42:00.0']
    pids = [1067983, 1070524, 1073093, 1075396, 1077642, 1079652, 1082071, 1084428]
    memory = [56373, 56373, 56373, 56373, 56373, 56374, 56373, 56373]
    assert result['processes'] == [process(npu, 0, pid, '', mb) for npu, (pid, mb) in enumerate(zip(pids, memory))]


def test_26x_wide_layout_with_process_id_in_container_column():
    result, warnings = parse(load_fixture('npu-smi-info_910B3_26.1.0_8npu_1proc_container-pid-col.txt'))
    assert warnings == []
    assert summary(result) == {'version': '26.1.0', 'driver_version': '26.1.0', 'npu_count': 8, 'chip_count': 8,
                               'all_healthy': True, 'complete': True}
    assert result['chips'][0] == chip(npu_id=0, chip_id=0, name='910B3', health='OK', bus_id='0000:C1:00.0',
                                      power_w=100.0, temp_c=50, aicore_percent=0, hugepages_used=0,
                                      hugepages_total=0, memory_used_mb=0, memory_total_mb=0,
                                      hbm_used_mb=8676, hbm_total_mb=65536)
    assert column(result, 'power_w') == [100.0, 94.8, 90.0, 96.5, 96.5, 97.4, 97.8, 93.3]
    assert column(result, 'temp_c') == [50, 48, 49, 48, 52, 49, 49, 51]
    assert column(result, 'hbm_used_mb') == [8676, 3403, 3403, 3407, 3403, 3402, 3402, 3403]
    # 'NA' in the container pid column: a host process.
    assert result['processes'] == [process(0, 0, 485946, 'pytest', 5175, container_pid=None)]


def test_26x_container_pid_is_read_when_printed():
    text = load_fixture('npu-smi-info_910B3_26.1.0_8npu_1proc_container-pid-col.txt').replace(
        '| NA                      |', '| 17                      |')
    result, warnings = parse(text)
    assert warnings == []
    assert result['processes'] == [process(0, 0, 485946, 'pytest', 5175, container_pid=17)]


def test_910b4_single_npu_in_container():
    result, warnings = parse(load_fixture('npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt'))
    assert warnings == []
    assert summary(result) == {'version': '24.1.rc1', 'driver_version': '24.1.rc1', 'npu_count': 1, 'chip_count': 1,
                               'all_healthy': True, 'complete': True}
    assert result['chips'] == [chip(npu_id=0, chip_id=0, name='910B4', health='OK', bus_id='0000:82:00.0',
                                    power_w=81.1, temp_c=37, aicore_percent=0, hugepages_used=0, hugepages_total=0,
                                    memory_used_mb=0, memory_total_mb=0, hbm_used_mb=2773, hbm_total_mb=32768)]
    assert result['processes'] == []


def test_910prob_with_blank_line_before_the_process_table():
    result, warnings = parse(load_fixture('npu-smi-info_910ProB_23.0.rc1_1npu_1proc_blankline-before-proc.txt'))
    assert warnings == []
    assert summary(result) == {'version': '23.0.rc1', 'driver_version': '23.0.rc1', 'npu_count': 1, 'chip_count': 1,
                               'all_healthy': True, 'complete': True}
    assert result['chips'] == [chip(npu_id=0, chip_id=0, name='910ProB', health='OK', bus_id='0000:C1:00.0',
                                    power_w=78.4, temp_c=33, aicore_percent=0, hugepages_used=0, hugepages_total=0,
                                    memory_used_mb=1198, memory_total_mb=15137,
                                    hbm_used_mb=30711, hbm_total_mb=32768)]
    assert result['processes'] == [process(0, 0, 55115, 'python', 30784)]


def test_a3_two_chips_per_npu_with_phy_id_and_dash_power():
    result, warnings = parse(load_fixture('npu-smi-info_A3-Ascend910_24.1.rc3.7_16chip_noproc.txt'))
    assert warnings == []
    assert summary(result) == {'version': '24.1.rc3.7', 'driver_version': '24.1.rc3.7', 'npu_count': 8,
                               'chip_count': 16, 'all_healthy': True, 'complete': True}
    assert column(result, 'npu_id') == [npu for npu in range(8) for _chip in (0, 1)]
    assert column(result, 'chip_id') == [0, 1] * 8
    assert column(result, 'device_id') == list(range(16))
    assert set(column(result, 'name')) == {'Ascend910'}
    assert column(result, 'power_w') == [178.5, None, 188.2, None, 176.6, None, 178.5, None,
                                         180.9, None, 188.7, None, 183.0, None, 186.4, None]
    assert column(result, 'temp_c') == [36, 36, 36, 35, 36, 37, 36, 36, 37, 36, 36, 36, 37, 36, 36, 37]
    assert column(result, 'hbm_used_mb') == [3416, 3189, 3413, 3185, 3412, 3186, 3412, 3185,
                                             3402, 3198, 3399, 3201, 3400, 3200, 3413, 3188]
    assert column(result, 'bus_id')[:4] == ['0000:9D:00.0', '0000:9F:00.0', '0000:99:00.0', '0000:9B:00.0']
    assert result['chips'][1] == chip(npu_id=0, chip_id=1, device_id=1, name='Ascend910', health='OK',
                                      bus_id='0000:9F:00.0', power_w=None, temp_c=36, aicore_percent=0,
                                      hugepages_used=0, hugepages_total=0, memory_used_mb=0, memory_total_mb=0,
                                      hbm_used_mb=3189, hbm_total_mb=65536)
    assert result['processes'] == []


def test_ascend_950_with_npu_id_cells_npu_util_and_alarm_health():
    result, warnings = parse(load_fixture('npu-smi-info_Ascend950PR_25.7.rc1_3npu_Alarm-health_procs.txt'))
    assert warnings == []
    assert summary(result) == {'version': '25.7.rc1', 'driver_version': '25.7.rc1', 'npu_count': 3, 'chip_count': 3,
                               'all_healthy': False, 'complete': True}
    assert result['chips'] == [
        chip(npu_id=0, name='Ascend950PR', health='Alarm', bus_id='0000:71:00.0', power_w=205.7, temp_c=71,
             aicore_percent=100, hugepages_used=0, hugepages_total=0, memory_used_mb=0, memory_total_mb=0,
             hbm_used_mb=90633, hbm_total_mb=114688),
        chip(npu_id=1, name='Ascend950PR', health='Alarm', bus_id='0000:61:00.0', power_w=207.7, temp_c=60,
             aicore_percent=100, hugepages_used=0, hugepages_total=0, memory_used_mb=0, memory_total_mb=0,
             hbm_used_mb=30492, hbm_total_mb=114688),
        chip(npu_id=2, name='Ascend950PR', health='OK', bus_id='0000:81:00.0', power_w=192.7, temp_c=57,
             aicore_percent=0, hugepages_used=0, hugepages_total=0, memory_used_mb=0, memory_total_mb=0,
             hbm_used_mb=5413, hbm_total_mb=131072),
    ]
    assert result['processes'] == [process(0, None, 1530715, 'python', 4724),
                                   process(0, None, 1655234, 'python', 4728)]


def test_310p3_106_column_layout_with_malformed_last_separator():
    name = 'npu-smi-info_310P3-300IPro_25.5.1_2npu_malformed-last-separator.txt'
    result, warnings = parse(load_fixture(name))
    # The malformed separator still closes the table; the lab shows no process table.
    assert warnings == [snippet_warning(name, 12)]
    assert summary(result) == {'version': '25.5.1', 'driver_version': '25.5.1', 'npu_count': 2, 'chip_count': 2,
                               'all_healthy': False, 'complete': False}
    assert result['chips'] == [
        chip(npu_id=4, chip_id=0, device_id=0, name='310P3', health='OK', bus_id='0000:81:00.0', power_w=None,
             temp_c=37, aicore_percent=0, hugepages_used=0, hugepages_total=0,
             memory_used_mb=1848, memory_total_mb=21525),
        chip(npu_id=5, chip_id=0, device_id=1, name='310P3', health='OK', bus_id='0000:85:00.0', power_w=None,
             temp_c=40, aicore_percent=0, hugepages_used=0, hugepages_total=0,
             memory_used_mb=1849, memory_total_mb=21525),
    ]
    assert result['processes'] == []


def test_310p3_duo_two_chips_per_card_with_several_processes_per_chip():
    result, warnings = parse(load_fixture('npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt'))
    assert warnings == []
    assert summary(result) == {'version': '25.2.0', 'driver_version': '25.2.0', 'npu_count': 4, 'chip_count': 8,
                               'all_healthy': True, 'complete': True}
    assert column(result, 'npu_id') == [2, 2, 3, 3, 5, 5, 6, 6]
    assert column(result, 'chip_id') == [0, 1] * 4
    assert column(result, 'device_id') == list(range(8))
    assert column(result, 'bus_id') == ['0000:01:00.0', '0000:01:00.0', '0000:03:00.0', '0000:03:00.0',
                                        '0000:81:00.0', '0000:81:00.0', '0000:84:00.0', '0000:84:00.0']
    assert set(column(result, 'power_w')) == {None}
    assert column(result, 'temp_c') == [70, 69, 69, 67, 72, 69, 73, 68]
    assert column(result, 'hugepages_used') == [0, 0, 0, 0, 16, 8, 0, 0]
    assert column(result, 'hugepages_total') == [0, 0, 0, 0, 16, 8, 0, 0]
    assert column(result, 'memory_used_mb') == [1417, 1516, 1666, 1260, 1691, 1381, 1196, 1758]
    assert column(result, 'memory_total_mb') == [44216, 43757] * 4
    assert set(column(result, 'hbm_used_mb')) == {None}
    assert result['processes'] == [process(5, 0, 904545, 'python3', 101),
                                   process(5, 0, 917047, 'mindie_llm_back', 101),
                                   process(5, 1, 904546, 'python3', 100)]


def test_310p3_hami_vnpu_in_container_after_log_lines():
    name = 'npu-smi-info_310P3_25.5.1_in-container-hami-vnpu_log-prefix_npuid32768.txt'
    result, warnings = parse(load_fixture(name))
    # The interceptor's log lines before the table are expected, not warned about; the lab shows no process table.
    assert warnings == [snippet_warning(name, 14)]
    assert summary(result) == {'version': '25.5.1', 'driver_version': '25.5.1', 'npu_count': 1, 'chip_count': 1,
                               'all_healthy': False, 'complete': False}
    assert result['chips'] == [chip(npu_id=32768, chip_id=0, device_id=0, name='310P3', health='OK',
                                    bus_id='0000:81:00.0', power_w=None, temp_c=38, aicore_percent=0,
                                    hugepages_used=0, hugepages_total=0, memory_used_mb=0, memory_total_mb=8192)]
    assert result['processes'] == []


# --- odd input ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('text', [
    '',
    None,
    'dcmi module initialize failed. ret is -8005\n',
    '\x00\x01 binary \xff noise\n|||\n+',
    'random | words | with pipes\n',
])
def test_garbage_gives_warnings_and_no_chips(text):
    result, warnings = parse(text)
    assert result == {'version': None, 'driver_version': None, 'chips': [], 'processes': [], 'npu_count': 0,
                      'chip_count': 0, 'all_healthy': False, 'complete': False,
                      'incomplete_reason': 'no chip table found in the output'}
    assert "npu-smi info: no 'npu-smi ... Version: ...' line found" in warnings
    assert 'npu-smi info: no chip table found in the output' in warnings


def test_rows_without_a_header_are_warned_about():
    result, warnings = parse('+----+----+\n| 1  | 2  |\n+----+----+\n')
    assert result['chips'] == []
    assert warnings[0] == "npu-smi info line 2: row before any table header ignored: '| 1  | 2  |'"


def test_warn_is_optional():
    assert parse_npu_smi_info('garbage')['chips'] == []


def test_truncated_table_keeps_complete_chips_and_nulls_the_cut_fields():
    full = load_fixture('npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt')
    cut_row = '| 0                         | 0000:81:00.0  | 29          0    / 0   '
    text = full[:full.index(cut_row) + len(cut_row)]
    result, warnings = parse(text)
    assert warnings == ['npu-smi info line 14: row is not closed by "|" (cut off?), the fields from its last cell '
                        'on are null: %r' % cut_row.rstrip(),
                        'npu-smi info: ' + cut_off(14, cut_row.rstrip(), 'no closing border')]
    assert (result['chip_count'], result['all_healthy'], result['complete']) == (3, False, False)
    assert result['chips'][:2] == parse(full)[0]['chips'][:2]
    assert result['chips'][2] == chip(npu_id=2, chip_id=0, name='910B3', health='OK', bus_id='0000:81:00.0',
                                      power_w=124.0, temp_c=41, hugepages_used=0, hugepages_total=0)
    assert result['processes'] == []


def test_table_cut_after_the_first_row_of_a_chip():
    full = load_fixture('npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt')
    first_row = '| 0     910B4               | OK            | 81.1        37                0    / 0             |'
    result, warnings = parse(full[:full.index(first_row) + len(first_row)])
    assert warnings == ['npu-smi info line 7: chip has 1 of its 2 rows, the missing fields are null: %r' % first_row,
                        'npu-smi info: ' + cut_off(7, first_row, 'no closing border')]
    assert result['chips'] == [chip(npu_id=0, name='910B4', health='OK', power_w=81.1, temp_c=37,
                                    hugepages_used=0, hugepages_total=0)]


# --- output cut off part way: read exactly or reported incomplete ---------------------------------------------

BUSY_910B3 = 'npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'
BORDER_910B3 = '+===========================+===============+====================================================+'

# A single-NPU Ascend 950 whose process section is the 'No running processes' row alone, without a header: the
# 950 fixture's header and its healthy NPU's block, renumbered NPU 0.
ASCEND_950_SINGLE_NPU_IDLE = """\
+-------------------------------------------------------------------------------------------------+
| npu-smi 25.7.rc1                                 Version: 25.7.rc1                              |
+--------+------------------+---------------+-----------------------------------------------------+
| NPU ID | Name             | Health        | Power(W)    Temp(C)           Hugepages-Usage(page) |
|        |                  | Bus-Id        | NPU Util(%) Memory-Usage(MB)  HBM-Usage(MB)         |
+========+==================+===============+=====================================================+
| 0      | Ascend950PR      | OK            | 192.7       57                0     / 0             |
|        |                  | 0000:81:00.0  | 0           0    / 0          5413  / 131072        |
+========+==================+===============+=====================================================+
| No running processes found in NPU 0                                                             |
+========+==================+===============+=====================================================+
"""


def test_a_table_cut_between_chips_is_incomplete_not_a_smaller_healthy_host():
    # The case: the first 15 lines of an 8-NPU table used to give 3 healthy chips and no warning.
    result, warnings = parse(''.join(load_fixture(BUSY_910B3).splitlines(True)[:15]))
    assert warnings == ['npu-smi info: ' + cut_off(15, BORDER_910B3)]
    assert summary(result) == {'version': '25.0.rc1.b010', 'driver_version': '25.0.rc1.b010', 'npu_count': 3,
                               'chip_count': 3, 'all_healthy': False, 'complete': False}
    assert result['incomplete_reason'] == cut_off(15, BORDER_910B3)


def test_a_process_table_cut_between_npus_names_the_npus_it_misses():
    result, warnings = parse(''.join(load_fixture(BUSY_910B3).splitlines(True)[:41]))
    assert warnings == ['npu-smi info: ' + cut_off(41, BORDER_910B3, 'the process table does not list NPU 4, 5, 6, 7')]
    assert [proc['npu_id'] for proc in result['processes']] == [0, 1, 2, 3]
    assert (result['chip_count'], result['all_healthy'], result['complete']) == (8, False, False)


def test_a_process_table_header_without_rows_is_incomplete():
    # The Ascend 950 layout lists only NPUs with processes, so only its rows and closing border show its end.
    text = ''.join(load_fixture('npu-smi-info_Ascend950PR_25.7.rc1_3npu_Alarm-health_procs.txt').splitlines(True)[:18])
    result, warnings = parse(text)
    last = '+===========================+===============+=====================================================+'
    assert warnings == ['npu-smi info: ' + cut_off(18, last, 'no row after the process table header')]
    assert (result['chip_count'], result['processes'], result['complete']) == (3, [], False)


def test_single_npu_950_without_a_process_header_is_one_healthy_chip():
    result, warnings = parse(ASCEND_950_SINGLE_NPU_IDLE)
    assert warnings == []
    assert summary(result) == {'version': '25.7.rc1', 'driver_version': '25.7.rc1', 'npu_count': 1, 'chip_count': 1,
                               'all_healthy': True, 'complete': True}
    assert result['chips'] == [chip(npu_id=0, name='Ascend950PR', health='OK', bus_id='0000:81:00.0', power_w=192.7,
                                    temp_c=57, aicore_percent=0, hugepages_used=0, hugepages_total=0,
                                    memory_used_mb=0, memory_total_mb=0, hbm_used_mb=5413, hbm_total_mb=131072)]
    assert result['processes'] == []


def test_a_headerless_process_section_must_list_every_npu():
    # Without a header nothing says the layout lists only busy NPUs, so an NPU left out means a cut.
    text = ASCEND_950_SINGLE_NPU_IDLE.replace('NPU 0    ', 'NPU 7    ')
    result, warnings = parse(text)
    last = '+========+==================+===============+=====================================================+'
    assert warnings == ['npu-smi info: ' + cut_off(11, last, 'the process table does not list NPU 0')]
    assert (result['chip_count'], result['all_healthy']) == (1, False)


def info_tables():
    """Every captured ``npu-smi info`` table, and the made-up ones of other layouts, by name."""
    tables = dict((name, load_fixture(name)) for name in sorted(os.listdir(FIXTURES)) if name.startswith('npu-smi-info_'))
    tables.update({'910A npu-smi 1.8.21': NPU_SMI_1_8_21_910A_WITHOUT_HUGEPAGES,
                   'Ascend 950 single NPU idle': ASCEND_950_SINGLE_NPU_IDLE})
    return tables


def cuts(text):
    """``text`` cut after every line, and inside every line where its structure changes (after each '|' and '+')
    and after its first character, in its middle and before its last character."""
    lines = text.splitlines(True)
    for count, line in enumerate(lines):
        head = ''.join(lines[:count])
        yield head
        line = line.rstrip('\n')
        inside = [1, len(line) // 2, len(line) - 1] + [index + 1 for index, char in enumerate(line) if char in '|+']
        for position in sorted(set(inside)):
            if 0 < position < len(line):
                yield head + line[:position]
    yield text


def test_cuts_are_made_after_every_line_and_inside_every_line():
    assert list(cuts('+--+\n| ab |\n')) == ['', '+', '+-', '+--', '+--+\n', '+--+\n|', '+--+\n| a', '+--+\n| ab ',
                                            '+--+\n| ab |\n']


def test_every_layout_is_cut():
    assert len(info_tables()) == 16


@pytest.mark.parametrize('name', sorted(info_tables()))
def test_a_table_cut_anywhere_is_read_exactly_or_reported_incomplete(name):
    text = info_tables()[name]
    whole = parse_npu_smi_info(text)

    def verdict(result):
        return result['chips'], result['processes'], result['all_healthy'], result['complete']

    for cut in cuts(text):
        result, warnings = parse(cut)
        if result['complete']:
            assert verdict(result) == verdict(whole), cut
        else:
            assert result['all_healthy'] is False, cut
            assert 'npu-smi info: ' + result['incomplete_reason'] in warnings, cut


UNKNOWN_COLUMN_TABLE = """\
+---------------------------------------------------------------------------------+
| npu-smi 99.0.0                   Version: 99.0.0                                |
+-------------------+-----------------+-----------------------------------------------+--------+
| NPU     Name      | Health          | Power(W)    Fan-Speed(%)    Temp(C)           | Mode   |
| Chip    Device    | Bus-Id          | AICore(%)   Flux-Usage(GB)  Memory-Usage(MB)  |        |
+===================+=================+===============================================+========+
| 0       310       | OK              | 12.8        40              58                | turbo  |
| 0       0         | NA              | 3           7 / 9           5324 / 8192       |        |
+===================+=================+===============================================+========+
| 1       310       | OK              | 13.1        41              59                | eco    |
| 0       1         | NA              | 4           8 / 9           5000 / 8192       |        |
+===================+=================+===============================================+========+
""" + IDLE_PROCESS_TABLE


def test_unknown_columns_are_warned_about_once_and_skipped():
    result, warnings = parse(UNKNOWN_COLUMN_TABLE)
    assert warnings == ["npu-smi info line 4: unknown column 'Fan-Speed(%)', its values are ignored",
                        "npu-smi info line 4: unknown column 'Mode', its values are ignored",
                        "npu-smi info line 5: unknown column 'Flux-Usage(GB)', its values are ignored"]
    assert result['chips'] == [
        chip(npu_id=0, chip_id=0, device_id=0, name='310', health='OK', power_w=12.8, temp_c=58, aicore_percent=3,
             memory_used_mb=5324, memory_total_mb=8192),
        chip(npu_id=1, chip_id=0, device_id=1, name='310', health='OK', power_w=13.1, temp_c=59, aicore_percent=4,
             memory_used_mb=5000, memory_total_mb=8192),
    ]


def test_slash_separated_header_fields():
    text = ('+---+\n| NPU / Name | Health | Power(W) / Temp(C) |\n| Chip | Bus-Id | AICore(%) |\n+===+\n'
            '| 3 / 910B4 | OK | 93.4/50 |\n| 0 | 0000:C1:00.0 | 12 |\n+===+\n'
            '| NPU / Chip | Process id | Process name | Process memory(MB) |\n+===+\n'
            '| No running processes found in NPU 3 |\n+===+\n')
    result, warnings = parse(text)
    assert warnings == ["npu-smi info: no 'npu-smi ... Version: ...' line found"]
    assert result['chips'] == [chip(npu_id=3, chip_id=0, name='910B4', health='OK', bus_id='0000:C1:00.0',
                                    power_w=93.4, temp_c=50, aicore_percent=12)]


def test_a_non_number_is_null_and_named_in_a_warning():
    fixture = load_fixture('npu-smi-info_310_21.0.3.1_1chip_busid-NA.txt') + IDLE_PROCESS_TABLE
    bad_row = '| 0       310       | OK              | 12.8              hot                  |'
    result, warnings = parse(fixture.replace('58                   |', 'hot                  |'))
    assert warnings == ["npu-smi info line 7: 'hot' under 'Temp(C)' is not a number, left null: %r" % bad_row]
    assert result['chips'][0]['temp_c'] is None
    assert result['chips'][0]['power_w'] == 12.8
    assert result['chips'][0]['memory_used_mb'] == 5324


def test_a_cell_with_the_wrong_number_of_values_is_null():
    fixture = load_fixture('npu-smi-info_910B4_24.1.rc1_1npu_noproc_fastllm-doc.txt')
    row = '| 0                         | 0000:82:00.0  | 0           0    / 0          2773                 |'
    result, warnings = parse(fixture.replace('2773 / 32768', '2773        '))
    assert warnings == ["npu-smi info line 8: '0           0    / 0          2773' has 4 values where "
                        "'AICore(%) Memory-Usage(MB) HBM-Usage(MB)' needs 5, left null: " + repr(row)]
    assert [result['chips'][0][key] for key in ('aicore_percent', 'memory_used_mb', 'hbm_used_mb', 'hbm_total_mb')] \
        == [None, None, None, None]
    assert result['chips'][0]['bus_id'] == '0000:82:00.0'


def test_a_row_with_the_wrong_number_of_cells_keeps_the_cells_it_has():
    fixture = load_fixture('npu-smi-info_910ProB_23.0.rc1_1npu_1proc_blankline-before-proc.txt')
    row = '| 0       0            | 55115         | python                   |'
    result, warnings = parse(fixture.replace('| 0       0            | 55115         | python                   '
                                             '| 30784                   |', row))
    assert warnings == ['npu-smi info line 15: 3 cells where the header has 4, fields without a cell are null: %r'
                        % row]
    assert result['processes'] == [process(0, 0, 55115, 'python', None)]


def test_all_healthy_is_false_for_a_warning_health():
    result, _warnings = parse(load_fixture('npu-smi-info_910ProB_23.0.rc1_1npu_1proc_blankline-before-proc.txt').replace(
        '| 0     910ProB        | OK            |', '| 0     910ProB        | Warning       |'))
    assert column(result, 'health') == ['Warning']
    assert (result['complete'], result['all_healthy']) == (True, False)


# --- key : value detail output ------------------------------------------------------------------------------------

def test_key_values_of_the_board_doc_example():
    warnings = []
    sections = parse_npu_smi_key_values(load_fixture('npu-smi-info-t-board-c0_A2-910B4_vs_A3-9392_doc-abridged.txt'),
                                        warn=warnings.append)
    assert sections == [
        {'NPU ID': '0', 'Chip ID': '0', 'Chip Type': 'Ascend', 'Chip Name': '910B4'},
        {'NPU ID': '0', 'NPU Name': '9392', 'Chip ID': '0', 'Chip Name': 'Ascend910'},
    ]
    # The doc's shell prompts are not key : value lines.
    assert warnings == [
        """line 1: not a "key : value" line, ignored: '[root@localhost ~]$ npu-smi info -t board -i 0 -c 0'""",
        """line 7: not a "key : value" line, ignored: '[root@localhost ~]$ npu-smi info -t board -i 0 -c 0'""",
    ]


def test_key_values_keep_colons_inside_values():
    assert parse_npu_smi_key_values('        MAC Address : 00:11:22:33:44:55\n') == [
        {'MAC Address': '00:11:22:33:44:55'}]


# --- failures ---------------------------------------------------------------------------------------------------

def test_dcmi_8005_from_the_captured_error():
    stdout = load_fixture('npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt')
    assert npu_smi_failure_hint(255, stdout, '') == HWHIAIUSER_HINT
    assert describe_npu_smi_failure('npu-smi info', 255, stdout, '') == (
        'npu-smi info failed (rc=255): dcmi module initialize failed. ret is -8005. Hint: %s.' % HWHIAIUSER_HINT)


def test_dcmi_8005_is_recognised_on_stderr_and_with_rc_0():
    assert npu_smi_failure_hint(0, '', 'dcmi module initialize failed. ret is -8005') == HWHIAIUSER_HINT


TIMED_OUT_HINT = ('npu-smi hung and was stopped by the timeout: a driver or device problem '
                  '(see dmesg and the device health; raise timeout only if the host is merely slow)')


@pytest.mark.parametrize('rc, stdout, stderr, timed_out, hint', [
    (255, 'dcmi get device health failed. ret is -8020', '', False, 'the device is busy or being reset: retry later'),
    # The command runner decides what a timeout is (it knows the limit): timeout's 124 and 137, or a kill after it.
    (124, '', '', True, TIMED_OUT_HINT),
    (137, '', '', True, TIMED_OUT_HINT),
    (-9, '', '', True, TIMED_OUT_HINT),
    (124, '', '', False, None),
    (-9, '', '', False, None),
    (127, '', 'timeout: failed to run command npu-smi: No such file or directory', False,
     'npu-smi or a library it needs is missing: the Ascend NPU driver is not installed'),
    (1, '', 'npu-smi: error while loading shared libraries: libdrvdsmi_host.so: cannot open shared object file: '
            'No such file or directory', False,
     'npu-smi or a library it needs is missing: the Ascend NPU driver is not installed'),
    (1, 'something else went wrong', '', False, None),
    (0, '', '', False, None),
])
def test_failure_hints(rc, stdout, stderr, timed_out, hint):
    assert npu_smi_failure_hint(rc, stdout, stderr, timed_out) == hint


def test_failure_message_of_a_kill_at_the_time_limit_has_the_timeout_hint():
    assert describe_npu_smi_failure('npu-smi info', -9, '', '', timed_out=True) == (
        'npu-smi info failed (rc=-9): no output. Hint: %s.' % TIMED_OUT_HINT)


def test_failure_message_without_a_known_cause_or_output():
    assert describe_npu_smi_failure('npu-smi info', 3, '', '') == 'npu-smi info failed (rc=3): no output.'
    assert describe_npu_smi_failure('npu-smi info', 3, 'first\nlast line.', '') == \
        'npu-smi info failed (rc=3): last line.'
    assert describe_npu_smi_failure('npu-smi info', 3, 'on stdout', 'on stderr') == \
        'npu-smi info failed (rc=3): on stderr.'


# --- reading npu-smi: the one way both modules run it ---------------------------------------------------------------

BUSY_910B3 = 'npu-smi-info_910B3_25.0.rc1.b010_8npu_8procs_busy.txt'
DUO_310P3 = 'npu-smi-info_310P3-Duo_25.2.0_4card-2chip_procs.txt'


class FakeNpuSmi:
    """``run(args)`` as the modules give it: npu-smi's answers by argument tuple, and the runs made."""

    def __init__(self, answers):
        self.answers = answers
        self.runs = []

    def __call__(self, args):
        self.runs.append(args)
        rc, stdout, stderr = self.answers[tuple(args)]
        return CommandResult(['npu-smi'] + args, rc, stdout, stderr)


def test_read_npu_smi_info_runs_it_once_and_passes_the_parser_warnings_on():
    run = FakeNpuSmi({('info',): (0, load_fixture('npu-smi-info_910B1_23.0.rc2.b090_8npu_training-load_elided.txt'), '')})
    warnings = WarningCap()
    info = read_npu_smi_info(run, warnings)
    assert run.runs == [['info']]
    assert (info['chip_count'], info['complete']) == (2, True)
    assert warnings.messages == ["npu-smi info line 10: ignored text inside the table: '...'",
                                 "npu-smi info line 22: ignored text inside the table: '...'"]


def test_read_npu_smi_info_fails_with_the_hint_and_no_parser_warning_on_a_dcmi_error_with_exit_code_0():
    stdout = load_fixture('npu-smi-error_dcmi-8005_user-not-in-HwHiAiUser.txt')
    warnings = WarningCap()
    with pytest.raises(NpuSmiFailure) as raised:
        read_npu_smi_info(FakeNpuSmi({('info',): (0, stdout, '')}), warnings)
    assert raised.value.msg == ('npu-smi info failed (rc=0): dcmi module initialize failed. ret is -8005. Hint: %s.'
                                % HWHIAIUSER_HINT)
    assert (raised.value.result.rc, raised.value.result.stdout) == (0, stdout)
    assert (warnings.messages, warnings.dropped) == ([], 0)


def test_read_npu_smi_info_fails_on_an_exit_code_that_is_not_0():
    with pytest.raises(NpuSmiFailure) as raised:
        read_npu_smi_info(FakeNpuSmi({('info',): (-9, '', '')}), WarningCap())
    assert raised.value.msg == 'npu-smi info failed (rc=-9): no output.'


def test_read_npu_smi_details_once_per_npu_in_table_order_with_warnings_naming_the_command():
    info = parse_npu_smi_info(load_fixture(DUO_310P3))
    answers = dict((('info', '-t', 'board', '-i', str(npu)), (0, 'NPU ID : %d\nnot a pair\n' % npu, ''))
                   for npu in (2, 3, 5, 6))
    run = FakeNpuSmi(answers)
    warnings = []
    details = read_npu_smi_details(run, ['board'], info, warnings.append)
    assert [chip['npu_id'] for chip in info['chips']] == [2, 2, 3, 3, 5, 5, 6, 6]
    assert run.runs == [['info', '-t', 'board', '-i', str(npu)] for npu in (2, 3, 5, 6)]
    assert details == {'board': [{'npu_id': npu, 'sections': [{'NPU ID': str(npu)}]} for npu in (2, 3, 5, 6)]}
    assert warnings == ["npu-smi info -t board -i %d: line 2: not a \"key : value\" line, ignored: 'not a pair'" % npu
                        for npu in (2, 3, 5, 6)]


def test_read_npu_smi_details_stops_at_the_first_failure_naming_its_command():
    info = parse_npu_smi_info(load_fixture(BUSY_910B3))
    run = FakeNpuSmi({('info', '-t', 'health', '-i', '0'): (0, 'Health : OK\n', ''),
                      ('info', '-t', 'health', '-i', '1'): (255, 'dcmi get device health failed. ret is -8020', '')})
    with pytest.raises(NpuSmiFailure) as raised:
        read_npu_smi_details(run, ['health'], info, [].append)
    assert raised.value.msg == ('npu-smi info -t health -i 1 failed (rc=255): dcmi get device health failed. ret is -8020. '
                                'Hint: the device is busy or being reset: retry later.')
    assert len(run.runs) == 2


def test_read_npu_smi_details_of_no_type_runs_nothing():
    run = FakeNpuSmi({})
    assert read_npu_smi_details(run, [], parse_npu_smi_info(load_fixture(BUSY_910B3)), [].append) == {}
    assert run.runs == []
