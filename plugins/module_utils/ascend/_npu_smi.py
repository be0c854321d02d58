# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Pure parsers for the output of Huawei's ``npu-smi`` tool, a classifier for its failures, and the one way the
modules read it (``read_npu_smi_info`` and ``read_npu_smi_details``, given a function that runs npu-smi). Nothing
here touches AnsibleModule or raises on odd input: a line that cannot be read is reported through the ``warn``
callback and parsing goes on, so a new driver's layout degrades to warnings and nulls, never to a crash; only a
failed npu-smi run raises, as NpuSmiFailure.

``npu-smi info`` prints box-drawn tables whose widths and columns change with every chip family and driver
release (80 to 116 columns, with or without Chip/Device/Phy-ID/Hugepages/HBM columns, with or without a
separate ``NPU ID`` cell). The parser therefore reads the table's structure, never character offsets: it splits
rows into ``|`` cells, reads the field names of the header rows and maps every data row's cells to them.

Output cut off part way (npu-smi or its pipe broken off) must not pass for a smaller healthy host, so the result
says whether the table was read whole: ``complete`` is false, with the reason naming the last line read, unless the
output ends with a border after a process section that lists what npu-smi always lists (see ``_missing_part``).
"""

from __future__ import annotations

import collections
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import shorten
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap, ignore

# Where the Ascend driver installs npu-smi; a remote PATH often lacks /usr/local/bin.
NPU_SMI_FALLBACK_PATHS = ('/usr/local/bin/npu-smi', '/usr/local/sbin/npu-smi')

# Result keys of a chip, in the order they are returned.
CHIP_KEYS = (
    'npu_id', 'chip_id', 'device_id', 'name', 'health', 'bus_id',
    'power_w', 'temp_c', 'aicore_percent',
    'hugepages_used', 'hugepages_total',
    'memory_used_mb', 'memory_total_mb',
    'hbm_used_mb', 'hbm_total_mb',
)

# Result keys of a process, in the order they are returned.
PROCESS_KEYS = ('npu_id', 'chip_id', 'pid', 'name', 'memory_mb', 'container_pid')

# How a printed value becomes a result value.
_INT = 'int'            # ids: an integer, null for '-' / 'NA'
_NUMBER = 'number'      # measurements: int when printed without a decimal point, else float; null for '-' / 'NA'
_TEXT = 'text'          # kept as printed (health 'OK', a process name that may be empty)
_OPTIONAL_TEXT = 'optional_text'  # as printed, but null for '-' / 'NA' (a Bus-Id of 'NA' is not a bus id)

# A column of a header row: the result keys it fills (two for a 'used / total' pair) and how its values read.
_Column = collections.namedtuple('_Column', 'keys kind')

# Header names are compared after _normalise_name (lower case, no blanks, '-' or '_'), so 'Bus-Id', 'Bus Id'
# and 'BusId' are one name. Every name npu-smi has printed in the known layouts is here; a new one is
# reported once and its values are skipped.
_CHIP_COLUMNS = {
    'npu': _Column(('npu_id',), _INT),
    'npuid': _Column(('npu_id',), _INT),
    'chip': _Column(('chip_id',), _INT),
    'chipid': _Column(('chip_id',), _INT),
    # The id printed beside the chip id: 'Device' on the 310 family, the physical id on A3.
    'device': _Column(('device_id',), _INT),
    'deviceid': _Column(('device_id',), _INT),
    'phyid': _Column(('device_id',), _INT),
    'name': _Column(('name',), _TEXT),
    'health': _Column(('health',), _TEXT),
    'busid': _Column(('bus_id',), _OPTIONAL_TEXT),
    'power(w)': _Column(('power_w',), _NUMBER),
    'temp(c)': _Column(('temp_c',), _NUMBER),
    'aicore(%)': _Column(('aicore_percent',), _NUMBER),
    # Ascend 950 prints the AI core utilisation as 'NPU Util(%)'.
    'npuutil(%)': _Column(('aicore_percent',), _NUMBER),
    'hugepagesusage(page)': _Column(('hugepages_used', 'hugepages_total'), _NUMBER),
    # The only usage pair of the 310 family, and the DDR beside the HBM on 910A-class cards.
    'memoryusage(mb)': _Column(('memory_used_mb', 'memory_total_mb'), _NUMBER),
    'hbmusage(mb)': _Column(('hbm_used_mb', 'hbm_total_mb'), _NUMBER),
}

_PROCESS_COLUMNS = {
    'npu': _Column(('npu_id',), _INT),
    'npuid': _Column(('npu_id',), _INT),
    'chip': _Column(('chip_id',), _INT),
    'chipid': _Column(('chip_id',), _INT),
    'processid': _Column(('pid',), _INT),
    'pid': _Column(('pid',), _INT),
    'processname': _Column(('name',), _TEXT),
    'processmemory(mb)': _Column(('memory_mb',), _NUMBER),
    # npu-smi 26.x: the pid as seen inside the process's container ('NA' for a host process).
    'processidincontainer': _Column(('container_pid',), _INT),
}

# A header row is taken for the chip table when it names this many chip columns; data rows name none.
_MIN_CHIP_HEADER_COLUMNS = 2

_NULL_VALUES = frozenset(('-', '--', 'NA', 'N/A'))
_INTEGER = re.compile(r'^-?\d+$')
_DECIMAL = re.compile(r'^-?\d+\.\d+$')
# Border lines, including malformed ones such as '+=====+-----=+=====+' seen in real 310P output.
_BORDER = re.compile(r'^\+[-=+]*$')
_VERSION_ROW = re.compile(r'npu-smi\s+(?P<tool>\S+)\s+Version:\s*(?P<driver>\S+)')
_NO_PROCESS_ROW = re.compile(r'^No running processes found in NPU\s*(?P<npu_id>\d+)$')
# Values in a cell holding several fields are separated by blanks, and a pair's halves by '/'.
_VALUE_SEPARATOR = re.compile(r'[\s/]+')
# Field names in a header cell are separated by two or more blanks or by '/'; one blank may sit inside a name.
_HEADER_SEPARATOR = re.compile(r'\s{2,}|\s*/\s*')
# An unknown '...-Usage(unit)' column holds a 'used / total' pair, so it takes two values.
_UNKNOWN_PAIR = re.compile(r'usage\(')
_KEY_VALUE = re.compile(r'^\s*(?P<key>[^:]*?\S)\s*:\s*(?P<value>.*?)\s*$')

# closed is False for a row cut off before its final '|'.
_Row = collections.namedtuple('_Row', 'lineno text cells closed')
# One field of a header cell: its name as printed and its column (None for a name not in the dictionary).
_Field = collections.namedtuple('_Field', 'name column')


def _normalise_name(name):
    return re.sub(r'[\s_-]+', '', name).lower()


def parse_npu_smi_info(text, warn=None):
    """Parse the output of ``npu-smi info``.

    :param text: the command's standard output (log lines before the table are allowed).
    :param warn: called with one message for every line or value that could not be read.
    :returns: a dict with ``version``, ``driver_version``, ``chips``, ``processes``, ``npu_count``,
        ``chip_count``, ``all_healthy``, ``complete`` and ``incomplete_reason``, as documented in the
        ``npu_smi_info`` module. An incomplete table is also reported through ``warn``.
    """
    return _InfoTableParser(warn or ignore).parse(text or '')


class _InfoTableParser:
    """Reads ``npu-smi info`` line by line; a block is the run of rows between two border lines."""

    def __init__(self, warn):
        self._warn = warn
        self._version = None
        self._driver_version = None
        self._chips = []
        self._processes = []
        # The table being read: its column dictionary and header rows, each a list of cells of _Field lists.
        self._columns = None
        self._header = None
        self._reported_unknown_names = set()
        # What tells a whole table from a cut one: the last line read, whether the table's last line is a border,
        # whether a process section was seen, its rows (processes and 'No running processes' rows), the NPU ids
        # it names, and whether its layout names every NPU.
        self._last_line = None
        self._ends_with_border = False
        self._process_section = False
        self._process_rows = 0
        self._listed_npu_ids = set()
        self._lists_every_npu = True

    def parse(self, text):
        inside_table = False
        block = []
        for lineno, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line:
                continue  # npu-smi versions put a blank line between the chip and the process table
            self._last_line = (lineno, line)
            if _BORDER.match(line):
                inside_table = True
                self._ends_with_border = True
                self._read_block(block)
                block = []
            elif line.startswith('|'):
                inside_table = True
                self._ends_with_border = False
                block.append(self._split_row(lineno, line))
            elif inside_table:
                self._warn('npu-smi info line %d: ignored text inside the table: %r' % (lineno, line))
            # Text before the table is a shell prompt or a log line of a wrapper library (e.g. HAMi's vNPU
            # interceptor in containers): expected, so ignored silently.
        self._read_block(block)
        return self._result()

    def _result(self):
        if self._version is None and self._driver_version is None:
            self._warn("npu-smi info: no 'npu-smi ... Version: ...' line found")
        incomplete_reason = self._incomplete_reason()
        if incomplete_reason:
            self._warn('npu-smi info: ' + incomplete_reason)
        npu_ids = set(chip['npu_id'] for chip in self._chips if chip['npu_id'] is not None)
        return {
            'version': self._version,
            'driver_version': self._driver_version,
            'chips': self._chips,
            'processes': self._processes,
            'npu_count': len(npu_ids),
            'chip_count': len(self._chips),
            # A complete table lists at least one chip.
            'all_healthy': not incomplete_reason and all(chip['health'] == 'OK' for chip in self._chips),
            'complete': not incomplete_reason,
            'incomplete_reason': incomplete_reason,
        }

    def _incomplete_reason(self):
        """None for a whole table, else why not, naming the last line read."""
        if self._header is None and not self._chips:
            return 'no chip table found in the output'
        missing = self._missing_part()
        if not missing:
            return None
        lineno, line = self._last_line
        return 'the output ends at line %d before the table does (%s), so it is incomplete (cut off?): %r' % (
            lineno, missing, shorten(line))

    def _missing_part(self):
        """What a whole ``npu-smi info`` table has that this one lacks, or None.

        npu-smi always ends its table with a border and prints a process section after the chips: a header and
        rows, or only 'No running processes found in NPU N' rows (single-NPU Ascend 950). Under a header with a
        Chip column (every layout but the Ascend 950's 'NPU ID' one) it lists every NPU, with that sentence for
        an idle one, one border-closed block per NPU; so a cut between two blocks shows as NPUs not listed.
        """
        if not self._chips:
            return 'no chip row'
        if not self._ends_with_border:
            return 'no closing border'
        if not self._process_section:
            return 'no process table'
        if not self._process_rows:
            return 'no row after the process table header'
        if self._lists_every_npu:
            unlisted = [npu_id for npu_id in dict.fromkeys(chip['npu_id'] for chip in self._chips)
                        if npu_id is not None and npu_id not in self._listed_npu_ids]
            if unlisted:
                return 'the process table does not list NPU %s' % ', '.join(str(npu_id) for npu_id in unlisted)
        return None

    def _split_row(self, lineno, line):
        closed = len(line) > 1 and line.endswith('|')
        if closed:
            cells = line[1:-1].split('|')
        else:
            # A cut-off row: its last cell has no closing '|' and may be cut inside a value, so it is dropped.
            self._warn('npu-smi info line %d: row is not closed by "|" (cut off?), the fields from its last cell '
                       'on are null: %r' % (lineno, line))
            cells = line[1:].split('|')[:-1]
        return _Row(lineno, line, [cell.strip() for cell in cells], closed)

    def _read_block(self, rows):
        if not rows:
            return
        if len(rows[0].cells) == 1:
            version = _VERSION_ROW.search(rows[0].cells[0])
            if version:
                self._version = version.group('tool')
                self._driver_version = version.group('driver')
                rows = rows[1:]
                if not rows:
                    return
        header = self._read_header(rows)
        if header:
            self._columns, self._header = header
            if self._columns is _PROCESS_COLUMNS:
                self._process_section = True
                self._lists_every_npu = any('chip_id' in field.column.keys
                                            for cell in self._header[0] for field in cell if field.column)
        elif all(_no_process_npu_id(row) is not None for row in rows):
            # A process section may be these rows alone, without a header (single-NPU Ascend 950).
            self._process_section = True
            self._read_process_rows(rows)
        elif self._columns is _CHIP_COLUMNS:
            self._read_chip_rows(rows)
        elif self._columns is _PROCESS_COLUMNS:
            self._read_process_rows(rows)
        else:
            for row in rows:
                self._warn('npu-smi info line %d: row before any table header ignored: %r' % (row.lineno, row.text))

    def _read_header(self, rows):
        """Return (columns, header rows) when the block is a table header, else None."""
        process_header = [self._header_cells(row, _PROCESS_COLUMNS) for row in rows]
        if any(field.column and 'pid' in field.column.keys for cell in process_header[0] for field in cell):
            self._report_unknown_names(rows, process_header)
            return _PROCESS_COLUMNS, process_header
        chip_header = [self._header_cells(row, _CHIP_COLUMNS) for row in rows]
        known_columns = set(field.column for cell in chip_header[0] for field in cell if field.column)
        if len(known_columns) >= _MIN_CHIP_HEADER_COLUMNS:
            self._report_unknown_names(rows, chip_header)
            return _CHIP_COLUMNS, chip_header
        return None

    def _header_cells(self, row, columns):
        return [_header_fields(cell, columns) for cell in row.cells]

    def _report_unknown_names(self, rows, header):
        for row, cells in zip(rows, header):
            for field in (field for cell in cells for field in cell):
                if field.column is None and field.name not in self._reported_unknown_names:
                    self._reported_unknown_names.add(field.name)
                    self._warn('npu-smi info line %d: unknown column %r, its values are ignored'
                               % (row.lineno, field.name))

    def _read_chip_rows(self, rows):
        # A chip is one row per header row; the rows of two chips are normally split by a border, but a
        # block holding several chips is still read in header-sized groups.
        size = len(self._header)
        for start in range(0, len(rows), size):
            group = rows[start:start + size]
            if len(group) < size:
                self._warn('npu-smi info line %d: chip has %d of its %d rows, the missing fields are null: %r'
                           % (group[-1].lineno, len(group), size, group[-1].text))
            chip = dict.fromkeys(CHIP_KEYS)
            for header_cells, row in zip(self._header, group):
                self._read_row(header_cells, row, chip)
            self._chips.append(chip)

    def _read_process_rows(self, rows):
        for row in rows:
            self._process_rows += 1
            idle_npu_id = _no_process_npu_id(row)
            if idle_npu_id is not None:
                self._listed_npu_ids.add(idle_npu_id)
                continue
            process = dict.fromkeys(PROCESS_KEYS)
            self._read_row(self._header[0], row, process)
            self._processes.append(process)
            self._listed_npu_ids.add(process['npu_id'])

    def _read_row(self, header_cells, row, record):
        """Fill ``record`` from the cells of ``row`` read against the fields of one header row."""
        if row.closed and len(row.cells) != len(header_cells):
            self._warn('npu-smi info line %d: %d cells where the header has %d, fields without a cell are null: %r'
                       % (row.lineno, len(row.cells), len(header_cells), row.text))
        for fields, cell in zip(header_cells, row.cells):
            widths = [_field_width(field) for field in fields]
            if widths == [1]:
                # A lone field takes the whole cell, so a value with blanks (or an empty process name) stays whole.
                values = [cell]
            else:
                values = [value for value in _VALUE_SEPARATOR.split(cell) if value]
            if len(values) != sum(widths):
                names = ' '.join(field.name for field in fields) or '(no heading)'
                self._warn('npu-smi info line %d: %r has %d values where %r needs %d, left null: %r'
                           % (row.lineno, cell, len(values), names, sum(widths), row.text))
                continue
            position = 0
            for field, width in zip(fields, widths):
                if field.column:
                    for key, value in zip(field.column.keys, values[position:position + width]):
                        record[key] = self._convert(value, field, row)
                position += width

    def _convert(self, value, field, row):
        kind = field.column.kind
        if kind == _TEXT:
            return value
        if value in _NULL_VALUES:
            return None
        if kind == _OPTIONAL_TEXT:
            return value
        if _INTEGER.match(value):
            return int(value)
        if kind == _NUMBER and _DECIMAL.match(value):
            return float(value)
        self._warn('npu-smi info line %d: %r under %r is not %s, left null: %r'
                   % (row.lineno, value, field.name, 'an integer' if kind == _INT else 'a number', row.text))
        return None


def _no_process_npu_id(row):
    """The NPU id of a 'No running processes found in NPU N' row, else None."""
    idle = _NO_PROCESS_ROW.match(row.cells[0]) if len(row.cells) == 1 else None
    return int(idle.group('npu_id')) if idle else None


def _header_fields(cell, columns):
    """Split a header cell into _Field entries, matching the longest known name at each position.

    Names may contain single blanks ('NPU ID', 'Process id in container') and sit one blank apart
    ('NPU Util(%) Memory-Usage(MB)'), so words are joined greedily against the dictionary; a run of
    words that matches nothing becomes one unknown name.
    """
    fields = []
    for segment in _HEADER_SEPARATOR.split(cell.strip()):
        words = segment.split()
        unknown = []
        start = 0
        while start < len(words):
            for end in range(len(words), start, -1):
                name = ' '.join(words[start:end])
                column = columns.get(_normalise_name(name))
                if column:
                    if unknown:
                        fields.append(_Field(' '.join(unknown), None))
                        unknown = []
                    fields.append(_Field(name, column))
                    start = end
                    break
            else:
                unknown.append(words[start])
                start += 1
        if unknown:
            fields.append(_Field(' '.join(unknown), None))
    return fields


def _field_width(field):
    """How many values a header field takes: two for a 'used / total' pair."""
    if field.column:
        return len(field.column.keys)
    return 2 if _UNKNOWN_PAIR.search(_normalise_name(field.name)) else 1


def parse_npu_smi_key_values(text, warn=None):
    """Parse ``key : value`` output such as ``npu-smi info -t board -i N``.

    :returns: a list of sections (the blank-line separated groups npu-smi prints, e.g. the NPU, its chip and
        its MCU), each a dict of the keys and values as printed.
    """
    warn = warn or ignore
    sections = []
    section = {}
    for lineno, line in enumerate((text or '').splitlines(), 1):
        if not line.strip():
            if section:
                sections.append(section)
                section = {}
            continue
        pair = _KEY_VALUE.match(line)
        if not pair:
            warn('line %d: not a "key : value" line, ignored: %r' % (lineno, line.strip()))
            continue
        section[pair.group('key')] = pair.group('value')
    if section:
        sections.append(section)
    return sections


# Known causes of npu-smi failures, found in its stdout or stderr (it prints some errors on stdout).
_DCMI_FAILURES = (
    (re.compile(r'(?<!\d)-8005(?!\d)'),
     'the user running npu-smi is not in group HwHiAiUser, which owns the /dev/davinci* devices: add it '
     '(usermod -aG HwHiAiUser USER, then log in again) or run the task as root (become: true)'),
    (re.compile(r'(?<!\d)-8020(?!\d)'),
     'the device is busy or being reset: retry later'),
)
_NOT_INSTALLED = re.compile(r'not found|No such file or directory', re.IGNORECASE)
_NOT_INSTALLED_HINT = 'npu-smi or a library it needs is missing: the Ascend NPU driver is not installed'
_TIMED_OUT_HINT = ('npu-smi hung and was stopped by the timeout: a driver or device problem '
                   '(see dmesg and the device health; raise timeout only if the host is merely slow)')


def npu_smi_failure_hint(rc, stdout='', stderr='', timed_out=False):
    """Return a hint naming the known cause of a failed npu-smi run, or None when the cause is unknown.

    The dcmi error codes are recognised whatever ``rc`` is, because npu-smi may print them and exit 0.
    ``timed_out`` is the command runner's verdict (CommandResult.timed_out): only it knows the time limit.
    """
    output = '%s\n%s' % (stdout or '', stderr or '')
    for pattern, hint in _DCMI_FAILURES:
        if pattern.search(output):
            return hint
    if timed_out:
        return _TIMED_OUT_HINT
    if rc == 127 or (rc != 0 and _NOT_INSTALLED.search(output)):
        return _NOT_INSTALLED_HINT
    return None


def describe_npu_smi_failure(command, rc, stdout='', stderr='', timed_out=False):
    """Return a failure message: the command, its status, the telling output line and a hint if known."""
    lines = [line.strip() for line in ('%s\n%s' % (stdout or '', stderr or '')).splitlines() if line.strip()]
    telling = [line for line in lines if any(pattern.search(line) for pattern, hint in _DCMI_FAILURES)]
    errors = [line.strip() for line in (stderr or '').splitlines() if line.strip()]
    detail = (telling or errors or lines or ['no output'])[-1].rstrip('.')
    message = '%s failed (rc=%s): %s.' % (command, rc, detail)
    hint = npu_smi_failure_hint(rc, stdout, stderr, timed_out)
    if hint:
        message += ' Hint: %s.' % hint
    return message


class NpuSmiFailure(Exception):
    """An npu-smi run that failed: ``msg`` says which, how and, when the cause is known, what to do; ``result`` is
    its CommandResult."""

    def __init__(self, msg, result):
        super().__init__(msg)
        self.msg = msg
        self.result = result


def _run_checked(run, args):
    """The CommandResult of ``run(args)``; NpuSmiFailure unless npu-smi exited 0."""
    result = run(args)
    if result.rc != 0:
        raise NpuSmiFailure(describe_npu_smi_failure(' '.join(['npu-smi'] + args), result.rc, result.stdout,
                                                     result.stderr, result.timed_out), result)
    return result


def read_npu_smi_info(run, warnings):
    """Run ``npu-smi info`` and parse it (see parse_npu_smi_info); NpuSmiFailure when it fails.

    :param run: ``run(args)`` runs npu-smi with the argument list ``args`` and returns its CommandResult.
    :param warnings: the caller's WarningCap; the parser's warnings join it only when the table was read.
    """
    result = _run_checked(run, ['info'])
    held = WarningCap()
    info = parse_npu_smi_info(result.stdout, warn=held)
    # npu-smi may print a dcmi error and still exit 0; then the missing table is that error, not a parse problem.
    if not info['chips'] and npu_smi_failure_hint(result.rc, result.stdout, result.stderr, result.timed_out):
        raise NpuSmiFailure(describe_npu_smi_failure('npu-smi info', result.rc, result.stdout, result.stderr,
                                                     result.timed_out), result)
    warnings.extend(held)
    return info


def read_npu_smi_details(run, detail_types, info, warn):
    """One ``npu-smi info -t TYPE -i NPU`` run per NPU of ``info`` (read_npu_smi_info's result) for each of
    ``detail_types``, parsed by parse_npu_smi_key_values; NpuSmiFailure at the first run that fails.

    :returns: ``{TYPE: [{'npu_id', 'sections'}, ...]}``, NPUs in table order.
    """
    # An NPU with two chips (A3, 310P Duo) is listed twice; detail queries go once per NPU, in table order.
    npu_ids = list(dict.fromkeys(chip['npu_id'] for chip in info['chips'] if chip['npu_id'] is not None))
    details = {}
    for detail_type in detail_types:
        details[detail_type] = []
        for npu_id in npu_ids:
            args = ['info', '-t', detail_type, '-i', str(npu_id)]
            command = ' '.join(['npu-smi'] + args)
            sections = parse_npu_smi_key_values(
                _run_checked(run, args).stdout, warn=lambda message, command=command: warn('%s: %s' % (command, message)))
            details[detail_type].append({'npu_id': npu_id, 'sections': sections})
    return details
