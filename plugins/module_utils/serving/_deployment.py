# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The deployment record: a small JSON file the vllm_service role writes on the host beside the unit
(``RECORD_DIR/<name>.json``, 0644, no secret in it), so that a tool that comes later (the doctor) learns from the host
itself what runs there: the service's name and unit, its mode, container engine and image, the vllm-ascend release,
the endpoint, the served model, the model's path, the NPUs and the TLS files (where the certificate, key and CA are;
null without TLS: the doctor checks the key's owner and mode). ``record_of`` makes it from the serving plan (the
writer), ``parse_record`` checks a record read back (the reader). Standard library only.
"""

from __future__ import annotations

import json
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import unit_name_problem

SCHEMA = 'kunpeng_ascend.vllm/deployment/1'
# The one directory the records live in; a reader reads nothing else.
RECORD_DIR = '/etc/kunpeng-ascend-vllm/services'
MODES = ('native', 'container')
ENGINES = ('docker', 'podman', 'containerd')
# A record larger than this is no record of this collection.
MAX_BYTES = 1 << 16
# A container name as docker and podman take it.
CONTAINER_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z')


# Where the role puts each service's state (StateDirectory=vllm/<name>), and the home it gives the account it creates.
STATE_ROOT = '/var/lib/vllm'


def deployment_names(name):
    """The names of service ``name``'s deployment on a host, the one rule of them (the serving plan, the known good
    and the doctor read them from here): its ``unit``, ``unit_file``, environment file ``env_file``, ``state_dir``
    and ``container_name``."""
    return {'unit': '%s.service' % name, 'unit_file': '/etc/systemd/system/%s.service' % name,
            'env_file': '/etc/vllm/%s.env' % name, 'state_dir': '%s/%s' % (STATE_ROOT, name),
            'container_name': 'vllm-%s' % name}


def record_path(name, directory=RECORD_DIR):
    """Where the record of service ``name`` lives. ValueError when ``name`` is not a unit name (it could leave the
    directory)."""
    problem = unit_name_problem(name, 'service name')
    if problem:
        raise ValueError(problem)
    return '%s/%s.json' % (directory.rstrip('/'), name)


def record_of(plan, model):
    """The record of a deployment, from the serving plan (``vllm_service_plan``) and the model's path on the node."""
    cli = plan.get('cli') or {}
    return {
        'schema': SCHEMA,
        'name': plan['name'],
        'unit': plan['unit'],
        'mode': plan['mode'],
        'container_engine': plan.get('engine') if plan['mode'] == 'container' else None,
        'container_name': plan.get('container_name') if plan['mode'] == 'container' else None,
        'image': cli.get('image') if plan['mode'] == 'container' else None,
        'vllm_ascend': plan.get('release') or None,
        'endpoint': plan.get('url'),
        'served_model_name': plan.get('served_model_name'),
        'model': model,
        'npus': list(plan.get('npu_ids') or []),
        'tls': tls_record(plan.get('tls')),
    }


# The TLS files a record names: the certificate, the key and the CA on the node.
TLS_KEYS = ('cert', 'key', 'ca')


def tls_record(tls):
    """The TLS part of a record, from the plan's ``tls`` (None without TLS)."""
    return dict((key, tls[key]) for key in TLS_KEYS) if tls else None


def _tls_problems(tls):
    """What is wrong with a record's ``tls`` (absent or null: no TLS)."""
    if tls is None:
        return []
    if not isinstance(tls, dict) or sorted(tls) != sorted(TLS_KEYS) or not all(
            isinstance(tls[key], str) and tls[key].startswith('/') and not any(ord(char) < 32 for char in tls[key])
            for key in TLS_KEYS):
        return ['tls is %s, not null or {cert, key, ca} absolute paths' % json.dumps(tls)]
    return []


def _string(record, key, problems, pattern=None, optional=True):
    value = record.get(key)
    if value is None and optional:
        return
    if not isinstance(value, str) or not value or any(ord(char) < 32 or ord(char) == 127 for char in value) or \
            (pattern is not None and not pattern.match(value)):
        problems.append('%s is %s' % (key, json.dumps(value)))


def parse_record(text, name=None):
    """``(record, problems)`` of a record's text: the record when it is one this collection wrote (problems []),
    else None and what is wrong with it. ``name``: the service the file is named after, which the record must name."""
    if text is None:
        return None, ['it cannot be read']
    if len(text) > MAX_BYTES:
        return None, ['it is larger than %d bytes' % MAX_BYTES]
    try:
        record = json.loads(text)
    except ValueError as error:
        return None, ['it is not JSON (%s)' % error]
    if not isinstance(record, dict):
        return None, ['it is not a JSON object']
    if record.get('schema') != SCHEMA:
        return None, ['its schema is %s, not %s' % (json.dumps(record.get('schema')), SCHEMA)]
    problems = []
    if unit_name_problem(record.get('name'), 'service name') or record.get('name', '').endswith('.service'):
        problems.append('name is %s' % json.dumps(record.get('name')))
    elif name is not None and record['name'] != name:
        problems.append('name is %s, but the file is named after %s' % (json.dumps(record['name']), name))
    if unit_name_problem(record.get('unit')):
        problems.append('unit is %s' % json.dumps(record.get('unit')))
    if record.get('mode') not in MODES:
        problems.append('mode is %s, not one of %s' % (json.dumps(record.get('mode')), ', '.join(MODES)))
    if record.get('container_engine') is not None and record.get('container_engine') not in ENGINES:
        problems.append('container_engine is %s, not one of %s' % (json.dumps(record.get('container_engine')),
                                                                   ', '.join(ENGINES)))
    _string(record, 'container_name', problems, CONTAINER_NAME)
    for key in ('image', 'vllm_ascend', 'endpoint', 'served_model_name', 'model'):
        _string(record, key, problems)
    npus = record.get('npus')
    if not isinstance(npus, list) or not all(isinstance(npu, int) and not isinstance(npu, bool) and npu >= 0
                                             for npu in npus):
        problems.append('npus is %s, not a list of NPU ids' % json.dumps(npus))
    problems.extend(_tls_problems(record.get('tls')))
    return (None, problems) if problems else (record, [])
