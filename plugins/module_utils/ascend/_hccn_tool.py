# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Huawei's ``hccn_tool`` (the NPU RoCE NIC tool) and ``/etc/hccn.conf``: pure parsers of the ``-g`` answers
(``-ip``, ``-gateway``, ``-netdetect``, ``-tls``, ``-link``, ``-net_health``, ``-ping``) and of the error texts,
the reader of ``/etc/hccn.conf`` and its rewrite that keeps every line it does not set, the check of a declared
NIC state, and the decision "declared state and current state -> the ``-s`` commands to run, in order, and the
``hccn.conf`` text after". Nothing here touches AnsibleModule: commands are run through a ``run(args)`` callable
that returns a CommandResult (module_utils.common._command).

Formats (one device per run; ``N`` is the device's logical id):

* ``-ip -g``: ``ipaddr:A`` and ``netmask:M`` lines (empty values when none is set);
* ``-gateway -g``: ``default gateway:G, Iface:ethN``;
* ``-netdetect -g``: ``netdetect address: D``;
* ``-tls -g``: ``dev_id:N, tls switch[S](0:disable, 1:enable), tls preconfigured[P](...), tls alarm time
  threshold[T]days`` (older drivers print no ``preconfigured``) and one block per certificate and the CRL
  (``dev_id:N, [pub cert] info:``, ``[ca1 cert]``, ..., ``[crl]``; some builds print ``device N,``) followed by
  indented ``subject[...]``, ``issuer[...]``, ``start_time[...]``, ``end_time[Sat Feb 16 03:19:21 2030 GMT]`` and,
  from newer drivers on, ``tls expiration status[N](0:normal, 1:near expiration, 2:has expired)`` lines;
* ``-link -g``: ``link status: UP``; ``-net_health -g``: ``net health status: Success`` (or ``Init``, ``Fault``,
  ``Socket fail``, ``Receive timeout``, ...);
* ``-ping -g address X``: ``device N PING X``, ``recv seq=K,time=Tms`` lines and a summary
  ``P packets transmitted, R received, L% packet loss``.

The driver may print ``call drvMngGetConsoleLogLevel failed , g_conLogLevel = 3`` before any answer; it is noise.
A transcript line that echoes the command (``$ hccn_tool -i 3 -ip -g``, ``> hccn_tool ...``) is skipped, so that
captured sessions read as the tool's own output.
"""

from __future__ import annotations

import calendar
import ipaddress
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._ipv4 import (
    NETMASK_HELP,
    netmask_prefix,
    netmask_text,
    special_network,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import ignore

HCCN_TOOL_PATH = '/usr/local/Ascend/driver/tools/hccn_tool'
HCCN_CONF_PATH = '/etc/hccn.conf'

# What a device entry may declare, in the order its set commands run.
DEVICE_KEYS = ('address', 'netmask', 'gateway', 'netdetect', 'tls')
# The keys kept in /etc/hccn.conf (KEY_N=VALUE); tls lives in the device only.
CONF_KEYS = ('address', 'netmask', 'gateway', 'netdetect')

_NOISE = re.compile(r'getconsoleloglevel\s+failed', re.IGNORECASE)
# A transcript line that shows the command: a prompt ($, #, >, [user@host dir]#) and hccn_tool, or the bare command.
_ECHO = re.compile(r'^\s*(?:(?:\[[^\]]*\]\s*)?[$#>]\s*\S*hccn_tool\b|\S*hccn_tool\s+-)')
_IPV4 = r'[0-9]{1,3}(?:\.[0-9]{1,3}){3}'

# Error lines of hccn_tool and what they mean (first match wins).
OUT_OF_RANGE = 'out of range'
_ERRORS = (
    (re.compile(r'Device ID is out of the valid range', re.IGNORECASE), OUT_OF_RANGE),
    (re.compile(r'hccn_tool is busy', re.IGNORECASE), 'busy'),
    (re.compile(r'\b(?:Cmd|Command) execute(?:d)? failed', re.IGNORECASE), 'failed'),
    (re.compile(r'^\s*Invalid\b', re.IGNORECASE), 'invalid'),
)


class HccnToolFailure(Exception):
    """An hccn_tool run that failed: ``msg`` says which, how and what to do; ``result`` is its CommandResult;
    ``kind`` is one of the error kinds of ``hccn_error`` (None when only the exit code tells)."""

    def __init__(self, msg, result, kind=None):
        super().__init__(msg)
        self.msg = msg
        self.result = result
        self.kind = kind


# --------------------------------------------------------------------------------------------------------- lines

def output_lines(text):
    """The lines of an hccn_tool answer that carry information: (number, stripped line), blank lines, the console
    log level noise and echoed commands left out."""
    for number, line in enumerate((text or '').splitlines(), 1):
        stripped = line.strip()
        if not stripped or _NOISE.search(stripped) or _ECHO.match(line):
            continue
        yield number, stripped


def hccn_error(text):
    """``(kind, line)`` of the first error line of hccn_tool's output (kinds: ``out of range``, ``busy``,
    ``failed``, ``invalid``), or None when it prints none."""
    found = None
    for _number, line in output_lines(text):
        for pattern, kind in _ERRORS:
            if pattern.search(line):
                # "Device ID is out of the valid range." comes before "Cmd execute failed!": the cause wins.
                if found is None or (found[0] == 'failed' and kind != 'failed'):
                    found = (kind, line)
                break
    return found


def _unread(warn, what, number, line):
    warn('hccn_tool %s: line %d was not understood and is ignored: %r' % (what, number, line))


def _address(value):
    """The dotted IPv4 address of ``value``, None when empty or 0.0.0.0 (nothing set)."""
    value = (value or '').strip()
    if not value:
        return None
    parsed = ipaddress.IPv4Address(value)
    return None if parsed.is_unspecified else str(parsed)


def _read_address(warn, what, value, number, line):
    try:
        return _address(value)
    except ValueError:
        warn('hccn_tool %s: line %d has no IPv4 address: %r' % (what, number, line))
        return None


# --------------------------------------------------------------------------------------------------------- parsers

def parse_ip(text, warn=ignore):
    """``-ip -g``: ``{'address', 'netmask'}`` (None when not set or not printed; a missing line is a warning)."""
    values = {}
    for number, line in output_lines(text):
        match = re.match(r'^(ipaddr|netmask)\s*:\s*(\S*)\s*$', line, re.IGNORECASE)
        if match:
            key = 'address' if match.group(1).lower() == 'ipaddr' else 'netmask'
            values[key] = _read_address(warn, '-ip -g', match.group(2), number, line)
        elif not hccn_error(line):
            _unread(warn, '-ip -g', number, line)
    for key, label in (('address', 'ipaddr'), ('netmask', 'netmask')):
        if key not in values:
            warn('hccn_tool -ip -g printed no %s line, so the %s is unknown' % (label, key))
    return {'address': values.get('address'), 'netmask': values.get('netmask')}


def parse_gateway(text, warn=ignore):
    """``-gateway -g``: ``{'gateway', 'iface'}``; None when not set. Nothing printed means no gateway."""
    result = {'gateway': None, 'iface': None}
    for number, line in output_lines(text):
        match = re.match(r'^(?:default\s+)?gateway\s*:\s*([^,\s]*)\s*(?:,\s*Iface\s*:\s*(\S+))?\s*$', line, re.IGNORECASE)
        if match:
            result['gateway'] = _read_address(warn, '-gateway -g', match.group(1), number, line)
            result['iface'] = match.group(2)
        elif not hccn_error(line):
            _unread(warn, '-gateway -g', number, line)
    return result


def parse_netdetect(text, warn=ignore):
    """``-netdetect -g``: the detection address; None when not set. Nothing printed means none."""
    address = None
    for number, line in output_lines(text):
        match = re.match(r'^netdetect\s+address\s*:\s*(\S*)\s*$', line, re.IGNORECASE)
        if match:
            address = _read_address(warn, '-netdetect -g', match.group(1), number, line)
        elif not hccn_error(line):
            _unread(warn, '-netdetect -g', number, line)
    return address


# "Sat Feb 16 03:19:21 2030 GMT" (ctime form, the day padded with a space or not), always GMT; no strptime: %a and
# %b follow the locale.
_MONTHS = ('jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec')
_CERT_TIME = re.compile(r'^(?:[A-Za-z]{3}\s+)?([A-Za-z]{3})\s+([0-9]{1,2})\s+([0-9]{2}):([0-9]{2}):([0-9]{2})\s+([0-9]{4})'
                        r'(?:\s+GMT|\s+UTC)?$', re.IGNORECASE)
# The block header: "dev_id:0, [pub cert] info:" (the manuals), "device 0, [crl] info:" (other driver builds).
_TLS_BLOCK = re.compile(r'^(?:dev_id\s*:\s*|device\s+)[0-9]+\s*,\s*\[([^\]]+)\]\s*info', re.IGNORECASE)
# A field of a block: "issuer[...]", "end_time[...]", "tls expiration status[1](0:normal, 1:near expiration, ...)".
_TLS_FIELD = re.compile(r'^([a-z_]+(?: [a-z_]+){0,3})\s*\[([^\]]*)\](?:\s*\([^)]*\))?\s*$', re.IGNORECASE)
# What "tls expiration status[N]" means (hccn_tool prints the legend after it).
TLS_EXPIRATION = {0: 'normal', 1: 'near expiration', 2: 'expired'}


def cert_time(text):
    """Seconds since the epoch of an hccn_tool certificate time (GMT), None when it is not one."""
    match = _CERT_TIME.match((text or '').strip())
    if not match or match.group(1).lower() not in _MONTHS:
        return None
    year, day, hour, minute, second = (int(match.group(index)) for index in (6, 2, 3, 4, 5))
    month = _MONTHS.index(match.group(1).lower()) + 1
    if not (1 <= day <= calendar.monthrange(year, month)[1] and hour < 24 and minute < 60 and second < 61):
        return None
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))


def parse_tls(text, warn=ignore):
    """``-tls -g``: ``{'enabled': bool or None, 'preconfigured': bool or None, 'alarm_days': int or None,
    'certificates': [...]}``, one entry per block (``pub cert``, ``ca1 cert``..., ``crl``): ``{'name', 'subject',
    'issuer', 'start', 'end'`` (as printed), ``'end_epoch'`` (seconds, None when not understood), ``'status'`` (of
    ``tls expiration status[N]``: ``normal``, ``near expiration``, ``expired``; None when not printed, as by older
    drivers)``}``. No switch line is a warning (enabled None); so is an end time that is not understood."""
    result = {'enabled': None, 'preconfigured': None, 'alarm_days': None, 'certificates': []}
    block = None
    for number, line in output_lines(text):
        switch = re.search(r'tls\s+switch\s*\[\s*([01])\s*\]', line, re.IGNORECASE)
        if switch:
            result['enabled'] = switch.group(1) == '1'
            preset = re.search(r'preconfigured\s*\[\s*([01])\s*\]', line, re.IGNORECASE)
            result['preconfigured'] = preset.group(1) == '1' if preset else None
            alarm = re.search(r'threshold\s*\[\s*([0-9]+)\s*\]', line, re.IGNORECASE)
            result['alarm_days'] = int(alarm.group(1)) if alarm else None
            continue
        header = _TLS_BLOCK.match(line)
        if header:
            block = {'name': header.group(1).strip(), 'subject': None, 'issuer': None, 'start': None, 'end': None,
                     'end_epoch': None, 'status': None}
            result['certificates'].append(block)
            continue
        field = _TLS_FIELD.match(line)
        if field and block is not None:
            key, value = ' '.join(field.group(1).lower().split()), field.group(2).strip()
            if key in ('subject', 'issuer'):
                block[key] = value or None
            elif key == 'start_time':
                block['start'] = value
            elif key == 'end_time':
                block['end'], block['end_epoch'] = value, cert_time(value)
                if block['end_epoch'] is None:
                    warn('hccn_tool -tls -g: the end time of %s on line %d is not understood: %r'
                         % (block['name'], number, line))
            elif key == 'tls expiration status' and value.isdigit() and int(value) in TLS_EXPIRATION:
                block['status'] = TLS_EXPIRATION[int(value)]
            else:
                _unread(warn, '-tls -g', number, line)
        elif line.lower().startswith('no certificate'):
            continue
        elif not hccn_error(line):
            _unread(warn, '-tls -g', number, line)
    if result['enabled'] is None:
        warn('hccn_tool -tls -g printed no "tls switch[0|1]" line, so whether TLS is on is unknown')
    return result


def tls_expiry(tls, now, warn_days):
    """What the certificates and the CRL of one ``parse_tls`` result say at ``now`` (seconds since the epoch), with
    ``warn_days`` as the warning threshold: one entry per block, ``{'name', 'end', 'days_left'`` (whole days, negative
    once past; None when the end time is not known)``, 'state'}``: ``expired`` (past its end time, or hccn_tool says
    so), ``expiring`` (within ``warn_days`` days, or hccn_tool says near expiration under its own threshold), ``ok``,
    or ``unknown`` (neither an end time nor a status)."""
    states = []
    for cert in (tls or {}).get('certificates') or []:
        end = cert.get('end_epoch')
        days = None if end is None else int((end - now) // 86400)
        if cert.get('status') == 'expired' or (end is not None and end <= now):
            state = 'expired'
        elif cert.get('status') == 'near expiration' or (days is not None and days < warn_days):
            state = 'expiring'
        elif end is None and cert.get('status') is None:
            state = 'unknown'
        else:
            state = 'ok'
        states.append({'name': cert.get('name'), 'end': cert.get('end'), 'days_left': days, 'state': state})
    return states


def parse_status(text, label, warn=ignore):
    """The value of ``LABEL status: VALUE`` (``link`` for ``-link -g``, ``net health`` for ``-net_health -g``);
    None, with a warning, when not printed. Values may hold spaces (``Socket fail``)."""
    value = None
    for number, line in output_lines(text):
        match = re.match(r'^%s\s+status\s*:\s*(.*?)\s*$' % re.escape(label), line, re.IGNORECASE)
        if match and match.group(1):
            value = match.group(1)
        elif not hccn_error(line):
            _unread(warn, '%s status' % label, number, line)
    if value is None:
        warn('hccn_tool printed no "%s status: ..." line' % label)
    return value


def parse_ping(text, warn=ignore):
    """``-ping -g address X``: ``{'device', 'target', 'transmitted', 'received', 'loss_percent', 'times_ms'}``.

    Without the summary line the counts are None and ``complete`` is False (output cut off), with a warning.
    """
    result = {'device': None, 'target': None, 'transmitted': None, 'received': None, 'loss_percent': None,
              'times_ms': [], 'complete': False}
    for number, line in output_lines(text):
        head = re.match(r'^device\s+([0-9]+)\s+PING\s+(\S+)\s*$', line, re.IGNORECASE)
        reply = re.match(r'^recv\s+seq\s*=\s*([0-9]+)\s*,\s*time\s*=\s*([0-9.]+)\s*ms\s*$', line, re.IGNORECASE)
        summary = re.match(r'^([0-9]+)\s+packets?\s+transmitted\s*,\s*([0-9]+)\s+received\s*,\s*([0-9.]+)\s*%\s*'
                           r'packet\s+loss', line, re.IGNORECASE)
        if head:
            result['device'], result['target'] = int(head.group(1)), head.group(2)
        elif reply:
            result['times_ms'].append(float(reply.group(2)))
        elif summary:
            result['transmitted'], result['received'] = int(summary.group(1)), int(summary.group(2))
            result['loss_percent'] = float(summary.group(3))
            result['complete'] = True
        elif not hccn_error(line):
            _unread(warn, '-ping -g', number, line)
    if not result['complete']:
        warn('hccn_tool -ping -g printed no "N packets transmitted, M received" summary (cut off?)')
    return result


# --------------------------------------------------------------------------------------------------------- hccn.conf

_CONF_LINE = re.compile(r'^\s*([A-Za-z][A-Za-z0-9_]*?)_([0-9]+)\s*=\s*(.*?)\s*$')


def parse_hccn_conf(text, warn=ignore):
    """``/etc/hccn.conf`` as ``{device id: {key: value}}`` (``address_0=A`` is device 0's ``address``); every
    ``KEY_N=VALUE`` line is read, known or not (``send_arp_status_N``). Comments and blank lines are skipped; any
    other line is a warning (it is kept as it is when the file is rewritten). A key given twice: the last wins,
    with a warning."""
    devices = {}
    for number, line in enumerate((text or '').splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith('#'):
            continue
        match = _CONF_LINE.match(line)
        if not match:
            warn('hccn.conf line %d is not KEY_N=VALUE and is left as it is: %r' % (number, stripped))
            continue
        key, device, value = match.group(1), int(match.group(2)), match.group(3)
        entry = devices.setdefault(device, {})
        if key in entry and entry[key] != value:
            warn('hccn.conf sets %s_%d twice (line %d wins: %r)' % (key, device, number, value))
        entry[key] = value
    return devices


def render_hccn_conf(text, updates):
    """``text`` with the values of ``updates`` (``{device id: {key: value}}``) set: a line ``KEY_N=...`` that
    exists gets the new value (every such line, so that a duplicate cannot win later), one that does not is added
    after the last line of that device (else at the end). Every other line stays as it is, in order."""
    lines = (text or '').splitlines()
    for device in sorted(updates):
        for key in CONF_KEYS:
            if key not in updates[device]:
                continue
            value = updates[device][key]
            name = '%s_%d' % (key, device)
            found = False
            last_of_device = None
            for index, line in enumerate(lines):
                match = _CONF_LINE.match(line)
                if not match:
                    continue
                if int(match.group(2)) == device:
                    last_of_device = index
                    if match.group(1) == key:
                        lines[index] = '%s=%s' % (name, value)
                        found = True
            if not found:
                at = len(lines) if last_of_device is None else last_of_device + 1
                lines.insert(at, '%s=%s' % (name, value))
    return '\n'.join(lines) + '\n' if lines else ''


# --------------------------------------------------------------------------------------------------------- declared

def _netmask(value, where):
    """The dotted netmask of ``value`` (_ipv4's strict rule). :raises ValueError: naming ``where``."""
    try:
        return netmask_text(netmask_prefix(value))
    except ValueError as error:
        raise ValueError('%s: %r is not an IPv4 netmask (%s): %s' % (where, value, error, NETMASK_HELP))


def _host_address(value, where):
    """The dotted address ``value`` when a NIC may have it. :raises ValueError: naming ``where``."""
    try:
        address = ipaddress.IPv4Address(str(value).strip())
    except ValueError:
        raise ValueError('%s: %r is not an IPv4 address' % (where, value))
    special = special_network(address, address)
    if special:
        raise ValueError('%s: %s cannot be a NIC address: it is in %s' % (where, address, special))
    return str(address)


def validate_devices(devices):
    """The declared device entries checked and normalised: ``[{'id', 'index', KEY: value or None}]``; a ValueError
    naming the option (``devices[2].netmask``) for the first entry that is wrong."""
    checked = []
    seen_ids = {}
    seen_addresses = {}
    for index, entry in enumerate(devices or []):
        where = 'devices[%d]' % index
        if not isinstance(entry, dict):
            raise ValueError('%s: give a dict with id and the values to set, not %r' % (where, entry))
        unknown = sorted(set(entry) - set(DEVICE_KEYS) - {'id'})
        if unknown:
            raise ValueError('%s: unknown keys %s (known: id, %s)' % (where, ', '.join(unknown), ', '.join(DEVICE_KEYS)))
        device = entry.get('id')
        if isinstance(device, bool) or not re.match(r'^[0-9]+$', str(device).strip()):
            raise ValueError('%s.id: give the NPU device id (a number >= 0, as in hccn_tool -i), not %r'
                             % (where, device))
        device = int(device)
        if device in seen_ids:
            raise ValueError('%s.id: device %d is already declared by devices[%d]' % (where, device, seen_ids[device]))
        seen_ids[device] = index
        item = {'id': device, 'index': index}
        for key in ('address', 'gateway', 'netdetect'):
            value = entry.get(key)
            item[key] = None if value in (None, '') else _host_address(value, '%s.%s' % (where, key))
        netmask = entry.get('netmask')
        item['netmask'] = None if netmask in (None, '') else _netmask(netmask, '%s.netmask' % where)
        tls = entry.get('tls')
        if tls is not None and not isinstance(tls, bool):
            raise ValueError('%s.tls: give true or false, not %r' % (where, tls))
        item['tls'] = tls
        if item['address']:
            if item['address'] in seen_addresses:
                raise ValueError('%s.address: %s is already the address of devices[%d]; every NPU NIC needs its own'
                                 % (where, item['address'], seen_addresses[item['address']]))
            seen_addresses[item['address']] = index
        if item['address'] and item['netmask']:
            _check_in_subnet(item, where)
        checked.append(item)
    return checked


def _check_in_subnet(item, where):
    """The address must be a host of its subnet, and the gateway in that subnet."""
    network = ipaddress.IPv4Network('%s/%s' % (item['address'], item['netmask']), strict=False)
    address = ipaddress.IPv4Address(item['address'])
    if network.prefixlen < 31 and address in (network.network_address, network.broadcast_address):
        raise ValueError('%s.address: %s is the %s address of %s, not a host address' % (
            where, address, 'network' if address == network.network_address else 'broadcast', network))
    if item.get('gateway') and ipaddress.IPv4Address(item['gateway']) not in network:
        raise ValueError('%s.gateway: %s is outside the NIC\'s subnet %s (address %s, netmask %s)'
                         % (where, item['gateway'], network, item['address'], item['netmask']))


# --------------------------------------------------------------------------------------------------------- decision

def plan_changes(declared, current, conf_text):
    """What to do so that the devices are as ``declared`` (validate_devices's result): unset keys are left alone.

    :param current: ``{device id: {'address', 'netmask', 'gateway', 'netdetect', 'tls'}}`` as read with ``-g``.
    :param conf_text: the text of hccn.conf now ('' when there is none).
    :returns: ``(commands, conf_after, expected)``: ``commands`` the ``-s`` argument lists in order (device by
      device: ip, gateway, netdetect, tls), ``conf_after`` hccn.conf's text with the declared values (the same
      text when nothing changes), ``expected`` ``{device id: values after}``.
    :raises ValueError: naming the option when a set needs a value that is neither declared nor set on the device
      (an address without a netmask), or a gateway lands outside the subnet.
    """
    commands = []
    updates = {}
    expected = {}
    conf = parse_hccn_conf(conf_text)
    for item in declared:
        device = item['id']
        where = 'devices[%d]' % item['index']
        now = dict(current.get(device) or {})
        after = dict(now)
        for key in DEVICE_KEYS:
            if item.get(key) is not None:
                after[key] = item[key]
        if item.get('address') or item.get('netmask'):
            if not after.get('address') or not after.get('netmask'):
                missing = 'netmask' if after.get('address') else 'address'
                raise ValueError('%s.%s: device %d has no %s to keep, so give one with the %s'
                                 % (where, missing, device, missing, 'address' if missing == 'netmask' else 'netmask'))
            _check_in_subnet(dict(after, gateway=item.get('gateway')), where)
        elif item.get('gateway') and now.get('address') and now.get('netmask'):
            _check_in_subnet(dict(now, gateway=item['gateway']), where)
        if (after.get('address'), after.get('netmask')) != (now.get('address'), now.get('netmask')):
            commands.append(['-i', str(device), '-ip', '-s', 'address', after['address'], 'netmask', after['netmask']])
        if item.get('gateway') and item['gateway'] != now.get('gateway'):
            commands.append(['-i', str(device), '-gateway', '-s', 'gateway', item['gateway']])
        if item.get('netdetect') and item['netdetect'] != now.get('netdetect'):
            commands.append(['-i', str(device), '-netdetect', '-s', 'address', item['netdetect']])
        if item.get('tls') is not None and item['tls'] != now.get('tls'):
            commands.append(['-i', str(device), '-tls', '-s', 'enable', '1' if item['tls'] else '0'])
        persisted = conf.get(device, {})
        wanted = {}
        for key in CONF_KEYS:
            if item.get(key) is not None or (key in ('address', 'netmask') and (item.get('address') or item.get('netmask'))):
                if persisted.get(key) != after[key]:
                    wanted[key] = after[key]
        if wanted:
            updates[device] = wanted
        expected[device] = after
    conf_after = render_hccn_conf(conf_text, updates) if updates else conf_text
    return commands, conf_after, expected


def differences(declared, values):
    """The declared keys whose value in ``values`` (``{device id: {...}}``, read back) is not the declared one:
    ``['devices[0].address: declared 10.0.0.1, hccn_tool shows 10.0.0.2', ...]``."""
    found = []
    for item in declared:
        now = values.get(item['id']) or {}
        for key in DEVICE_KEYS:
            if item.get(key) is not None and now.get(key) != item[key]:
                found.append('devices[%d].%s: declared %s, hccn_tool -i %d shows %s'
                             % (item['index'], key, item[key], item['id'], now.get(key)))
    return found


# --------------------------------------------------------------------------------------------------------- running

# What each read runs, and the key of its value in a device's result.
READS = (('ip', '-ip'), ('gateway', '-gateway'), ('netdetect', '-netdetect'), ('tls', '-tls'), ('link', '-link'),
         ('net_health', '-net_health'))


def describe_failure(args, result, where=None):
    """The message of a failed hccn_tool run, and its error kind."""
    command = ' '.join(['hccn_tool'] + list(args))
    error = hccn_error(result.stdout) or hccn_error(result.stderr)
    kind = error[0] if error else None
    if result.timed_out:
        return ('%s did not answer within the time limit (timeout): the NPU driver may be stuck; check '
                '`npu-smi info` and dmesg' % command), 'timeout'
    if kind == OUT_OF_RANGE:
        return ('%s: hccn_tool says "%s": device %s does not exist on this host%s; list the devices with '
                '`npu-smi info -m` (Chip Logic ID)' % (command, error[1], args[1], ' (fix %s.id)' % where if where
                                                       else '')), kind
    if kind == 'busy':
        return '%s: hccn_tool is busy (another hccn_tool runs): run again when it is done' % command, kind
    if error:
        detail = error[1]
    else:
        lines = (result.stderr or result.stdout or '').strip().splitlines()
        detail = lines[-1].strip() if lines else 'no output'
    return '%s failed (rc %s): %s%s' % (command, result.rc, detail, ' (check %s)' % where if where else ''), kind


def run_checked(run, args, where=None):
    """The CommandResult of ``run(args)``; HccnToolFailure unless hccn_tool exited 0 without an error line."""
    result = run(args)
    if result.rc != 0 or result.timed_out or (hccn_error(result.stdout) or ('', ''))[0] in (OUT_OF_RANGE, 'failed'):
        msg, kind = describe_failure(args, result, where)
        raise HccnToolFailure(msg, result, kind)
    return result


def read_device(run, device, warn=ignore, where=None):
    """Every ``-g`` value of one device: ``{'id', 'address', 'netmask', 'gateway', 'netdetect', 'tls', 'link',
    'net_health'}``; HccnToolFailure at the first read that fails."""
    values = {'id': device}
    for name, option in READS:
        result = run_checked(run, ['-i', str(device), option, '-g'], where)
        if name == 'ip':
            values.update(parse_ip(result.stdout, warn))
        elif name == 'gateway':
            values['gateway'] = parse_gateway(result.stdout, warn)['gateway']
        elif name == 'netdetect':
            values['netdetect'] = parse_netdetect(result.stdout, warn)
        elif name == 'tls':
            values['tls'] = parse_tls(result.stdout, warn)['enabled']
        elif name == 'link':
            values['link'] = parse_status(result.stdout, 'link', warn)
        else:
            values['net_health'] = parse_status(result.stdout, 'net health', warn)
    return values


# --------------------------------------------------------------------------------------------------------- ping

def ping_outcome(result, max_loss_percent=0.0, warn=ignore):
    """What one ``-ping -g address X pkt K`` run (its CommandResult) says about the path:
    ``{'transmitted', 'received', 'loss_percent', 'avg_ms', 'ok', 'error', 'kind'}``.

    ``ok`` when the summary was printed and at most ``max_loss_percent`` of the packets were lost. A failed path is
    no error of the run: hccn_tool may exit non-zero after a 100% loss summary, which is then the answer. ``error``
    says why a ping is not ok (the loss, the time limit, hccn_tool's own error line, no summary); ``kind`` is
    ``timeout``, ``out of range`` (the device does not exist: the caller's input is wrong), ``busy``, ``failed``,
    ``invalid``, ``loss`` or ``no summary``, None when ok."""
    outcome = {'transmitted': None, 'received': None, 'loss_percent': None, 'avg_ms': None, 'ok': False,
               'error': None, 'kind': None}
    if result.timed_out:
        outcome.update(error='no answer within the time limit (timeout)', kind='timeout')
        return outcome
    error = hccn_error(result.stdout) or hccn_error(result.stderr)
    if error and error[0] in (OUT_OF_RANGE, 'busy', 'invalid'):
        outcome.update(error='hccn_tool says "%s"' % error[1], kind=error[0])
        return outcome
    parsed = parse_ping(result.stdout, ignore)
    if not parsed['complete']:
        lines = (result.stderr or result.stdout or '').strip().splitlines()
        detail = error[1] if error else (lines[-1].strip() if lines else 'no output')
        outcome.update(error='no "packets transmitted" summary (rc %s): %s' % (result.rc, detail),
                       kind=error[0] if error else 'no summary')
        warn('hccn_tool -ping -g printed no summary (rc %s): %s' % (result.rc, detail))
        return outcome
    times = parsed['times_ms']
    outcome.update(transmitted=parsed['transmitted'], received=parsed['received'],
                   loss_percent=parsed['loss_percent'],
                   avg_ms=round(sum(times) / len(times), 3) if times else None)
    if parsed['transmitted'] and parsed['loss_percent'] <= max_loss_percent:
        outcome['ok'] = True
    else:
        outcome.update(error='%s%% loss (%s of %s packets received)' % (
            ('%.2f' % parsed['loss_percent']).rstrip('0').rstrip('.'), parsed['received'], parsed['transmitted']),
            kind='loss')
    return outcome
