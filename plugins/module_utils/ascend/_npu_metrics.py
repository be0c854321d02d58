# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The metrics of a serving node in Prometheus's text exposition format (0.0.4), for the node exporter's textfile
collector. Pure functions, standard library only, Python 3.9: the node's exporter program (role monitoring) runs this
very file without Ansible.

* The NPU metrics are named, labelled and described as MindCluster's NPU Exporter writes them
  (``npu_chip_info_utilization``, ``npu_chip_info_hbm_used_memory``, ... and ``machine_npu_nums``; its label set
  ``container_name, id, model_name, namespace, pcie_bus_info, pod_name, vdie_id``), so dashboards made for it work.
  They come from ``npu-smi info`` as _npu_smi.read_npu_smi_info reads it. Where npu-smi shows less than the
  exporter's DCMI calls: ``id`` is the chip's device id where the table prints one (the 310 family's Device, A3's
  Phy-ID column), else the NPU id of a one-chip NPU (910B, 910A: npu-smi's NPU id is then the logic id);
  ``model_name`` is npu-smi's Name (910B3, where the exporter writes 910B3-Ascend-V1 from DCMI); ``vdie_id``,
  ``container_name``, ``namespace`` and ``pod_name`` are empty, as the exporter leaves them outside Kubernetes; a
  value npu-smi prints as ``-`` or ``NA`` gives no sample (never a 0 that is not there). No timestamps: the textfile
  collector refuses files with them.
* The service's metrics are this collection's own, under ``kunpeng_ascend_vllm_``: its restarts (systemd's NRestarts,
  a counter), whether it is active, the resident memory of its processes, and, per failure of the catalogue
  (_failure_catalogue), how many lines of its journal matched it: a counter kept in a small state file between runs
  (``count_journal``, over _systemd.journal_argv's batches), so an alert takes its increase over any window.
"""

from __future__ import annotations

import collections
import math
import re

PREFIX = 'kunpeng_ascend_vllm_'
# The NPU Exporter's chip labels, in its order.
CHIP_LABELS = ('container_name', 'id', 'model_name', 'namespace', 'pcie_bus_info', 'pod_name', 'vdie_id')
# npu-smi's Health column: OK is healthy (1), these are its alarm levels (0); another word is reported unhealthy,
# with a warning.
HEALTHY = 'OK'
UNHEALTHY = frozenset(('Warning', 'Alarm', 'Critical'))

Family = collections.namedtuple('Family', 'name help type samples')

# (name, HELP as the NPU Exporter writes it, the chip key of read_npu_smi_info's result). Units as the exporter's:
# percent, MB, degrees Celsius, watts.
CHIP_FAMILIES = (
    ('npu_chip_info_utilization', 'the ai core utilization', 'aicore_percent'),
    ('npu_chip_info_hbm_used_memory', 'the npu hbm used memory', 'hbm_used_mb'),
    ('npu_chip_info_hbm_total_memory', 'the npu hbm total memory', 'hbm_total_mb'),
    ('npu_chip_info_used_memory', 'the npu used memory', 'memory_used_mb'),
    ('npu_chip_info_total_memory', 'the npu total memory', 'memory_total_mb'),
    ('npu_chip_info_temperature', 'the npu temperature', 'temp_c'),
    ('npu_chip_info_power', 'the npu power', 'power_w'),
    ('npu_chip_info_health_status', 'the npu health status', 'health'),
)
MACHINE_FAMILIES = (
    ('machine_npu_nums', 'Amount of npu installed on the machine.', 'chip_count'),
    ('machine_card_nums', 'Amount of card installed on the machine.', 'npu_count'),
)

NPU_SMI_UP = PREFIX + 'npu_smi_up'
RESTARTS = PREFIX + 'service_restarts_total'
ACTIVE = PREFIX + 'service_active'
RESIDENT = PREFIX + 'service_resident_memory_bytes'
FAILURES = PREFIX + 'journal_failures_total'
JOURNAL_LINES = PREFIX + 'journal_lines_total'
WARNINGS = PREFIX + 'exporter_warnings'

_METRIC_NAME = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*$')
_LABEL_NAME = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*$')
TYPES = ('counter', 'gauge')
STATE_VERSION = 1


# ------------------------------------------------------------------------------------------- exposition format

def escape_label_value(value):
    """A label value as the exposition format writes it: backslash, double quote and line feed escaped."""
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def escape_help(text):
    """HELP text as the exposition format writes it: backslash and line feed escaped."""
    return str(text).replace('\\', '\\\\').replace('\n', '\\n')


def format_value(value):
    """A sample value: integers as such, other numbers in Python's shortest form, NaN and infinities spelled as
    Prometheus spells them."""
    if isinstance(value, bool):
        return '1' if value else '0'
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return 'NaN'
    if math.isinf(value):
        return '+Inf' if value > 0 else '-Inf'
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def render(families):
    """The text of ``families`` (Family tuples; samples are (labels as (name, value) pairs, value)): HELP and TYPE
    before each family's samples, families without samples left out, one line feed at the end. ValueError on a
    name the format does not allow or a family named twice."""
    lines = []
    seen = set()
    for family in families:
        if not _METRIC_NAME.match(family.name):
            raise ValueError('not a metric name: %r' % (family.name,))
        if family.type not in TYPES:
            raise ValueError('%s: type %r is not one of %s' % (family.name, family.type, ', '.join(TYPES)))
        if family.name in seen:
            raise ValueError('metric %s is rendered twice' % family.name)
        seen.add(family.name)
        if not family.samples:
            continue
        lines.append('# HELP %s %s' % (family.name, escape_help(family.help)))
        lines.append('# TYPE %s %s' % (family.name, family.type))
        for labels, value in family.samples:
            for name, _value in labels:
                if not _LABEL_NAME.match(name) or name.startswith('__'):
                    raise ValueError('%s: not a label name: %r' % (family.name, name))
            text = ','.join('%s="%s"' % (name, escape_label_value(label)) for name, label in labels)
            lines.append('%s%s %s' % (family.name, '{%s}' % text if text else '', format_value(value)))
    return '\n'.join(lines) + '\n' if lines else ''


# -------------------------------------------------------------------------------------------------- the NPUs

def chip_id(chip, chips_of_npu):
    """The ``id`` label of a chip (see the module docstring), None when npu-smi's table does not tell it."""
    if chip.get('device_id') is not None:
        return chip['device_id']
    if chip.get('npu_id') is not None and chips_of_npu.get(chip['npu_id']) == 1:
        return chip['npu_id']
    return None


def health_value(health, warn):
    """1 for a healthy chip, 0 for any other, None when npu-smi printed no health."""
    if health is None or not str(health).strip():
        return None
    if health == HEALTHY:
        return 1
    if health not in UNHEALTHY:
        warn('npu-smi health %r is not one of OK, %s: reported as unhealthy (0)' % (health, ', '.join(sorted(UNHEALTHY))))
    return 0


def npu_families(info, warn):
    """The NPU Exporter's families from ``info`` (read_npu_smi_info's result), or [] for None (npu-smi failed)."""
    if info is None:
        return []
    chips_of_npu = collections.Counter(chip.get('npu_id') for chip in info['chips'])
    labelled = []
    seen_ids = set()
    for chip in info['chips']:
        ident = chip_id(chip, chips_of_npu)
        if ident is None or ident in seen_ids:
            warn('npu-smi info: NPU %s chip %s has %s, its metrics are left out' % (
                chip.get('npu_id'), chip.get('chip_id'),
                'no id of its own in the table' if ident is None else 'the id %s of another chip' % ident))
            continue
        seen_ids.add(ident)
        labels = (('container_name', ''), ('id', str(ident)), ('model_name', chip.get('name') or ''),
                  ('namespace', ''), ('pcie_bus_info', chip.get('bus_id') or ''), ('pod_name', ''), ('vdie_id', ''))
        labelled.append((labels, chip))
    families = [Family(name, text, 'gauge', [((), info[key])]) for name, text, key in MACHINE_FAMILIES]
    for name, text, key in CHIP_FAMILIES:
        samples = []
        for labels, chip in labelled:
            value = health_value(chip.get('health'), warn) if key == 'health' else chip.get(key)
            if value is not None:
                samples.append((labels, value))
        families.append(Family(name, text, 'gauge', samples))
    return families


# ------------------------------------------------------------------------------------------------ the service

def service_families(unit, show, resident_bytes):
    """Restarts, active state and resident memory of ``unit`` from ``systemctl show`` (_systemd.parse_show_one's
    dict; {} when it could not be read: no samples) and the memory of its processes (None: no sample)."""
    labels = (('unit', unit),)
    restarts = show.get('NRestarts')
    active = show.get('ActiveState')
    return [
        Family(RESTARTS, 'Restarts of the vLLM service by systemd (NRestarts).', 'counter',
               [(labels, restarts)] if isinstance(restarts, int) else []),
        Family(ACTIVE, 'Whether the vLLM service is active (systemd ActiveState).', 'gauge',
               [(labels, int(active == 'active'))] if active else []),
        Family(RESIDENT, 'Resident memory of the vLLM service main process and its descendants, bytes.', 'gauge',
               [(labels, resident_bytes)] if resident_bytes is not None else []),
    ]


# --------------------------------------------------------------------------------------------- the journal

def new_state(unit, now):
    """The journal state of a first run: nothing counted, reading from ``now`` (seconds since the epoch) on."""
    return {'version': STATE_VERSION, 'unit': unit, 'cursor': None, 'since': int(now), 'counts': {}, 'lines': 0}


def load_state(data, unit, now, entries, warn):
    """The state kept by the last run (``data``: its parsed JSON, or None), or a new one when it is missing, of
    another unit or not understood (with a warning: the counters then start again, which Prometheus takes as a
    counter reset)."""
    if data is None:
        return new_state(unit, now)
    problem = None
    if not isinstance(data, dict) or data.get('version') != STATE_VERSION:
        problem = 'not a state of version %d' % STATE_VERSION
    elif data.get('unit') != unit:
        problem = 'the state of unit %r, not %r' % (data.get('unit'), unit)
    elif not isinstance(data.get('counts'), dict) or not all(
            key in entries and isinstance(value, int) and value >= 0 for key, value in data['counts'].items()):
        problem = 'counts that are not counts of catalogue entries'
    elif not isinstance(data.get('lines'), int) or (data.get('cursor') is None and not isinstance(data.get('since'), int)):
        problem = 'no line count, or neither cursor nor start time'
    if problem:
        warn('journal state: %s; the counters start again from now' % problem)
        return new_state(unit, now)
    return data


def count_journal(state, lines, cursor, scan, max_lines, now, warn):
    """The state after this run: the catalogue's matches of ``lines`` (``scan``: _failure_catalogue.scan) added to its
    counts, the cursor moved to ``cursor`` (kept when no line came)."""
    found = scan(lines)
    counts = dict(state['counts'])
    for key, count in found['counts'].items():
        counts[key] = counts.get(key, 0) + count
    if len(lines) >= max_lines:
        warn('journal: %d new lines or more since the last run, the rest is read by the next runs (raise the '
             'exporter\'s --max-journal-lines to keep up)' % max_lines)
    updated = dict(state, counts=counts, lines=state['lines'] + found['lines_read'])
    if cursor:
        updated['cursor'] = cursor
    elif lines:
        # Without the cursor the same lines would be counted again: go on from now instead.
        warn('journalctl printed no cursor after its lines; the journal is read from now on')
        updated.update(cursor=None, since=int(now))
    return updated


def journal_failed(state, now, stderr, warn):
    """The state after journalctl failed: a cursor it no longer knows (journal rotated or vacuumed) is dropped and
    counting goes on from ``now``; the counts are kept."""
    warn('journalctl failed (%s); the journal is read from now on, the counts so far are kept'
         % ((stderr or '').strip().splitlines() or ['no message'])[-1])
    return dict(state, cursor=None, since=int(now))


def journal_families(unit, state, entries):
    """One counter sample per catalogue entry (0 until the journal shows it, so that the first match is an increase),
    and the lines read."""
    samples = [((('unit', unit), ('failure', key), ('status', entry['status'])), state['counts'].get(key, 0))
               for key, entry in entries]
    return [
        Family(FAILURES, 'Lines of the vLLM service journal that match a known failure of the catalogue, by its id.',
               'counter', samples),
        Family(JOURNAL_LINES, 'Lines of the vLLM service journal read by the exporter.', 'counter',
               [((('unit', unit),), state['lines'])]),
    ]


def exporter_families(npu_smi_up, warnings):
    return [
        Family(NPU_SMI_UP, 'Whether npu-smi info ran and its table was read whole on the last run.', 'gauge',
               [((), int(bool(npu_smi_up)))]),
        Family(WARNINGS, 'Warnings of the exporter\'s last run (its journal has them).', 'gauge', [((), warnings)]),
    ]
