# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The known good of a vLLM service: what a node ran when it last passed its health gate, kept so that it can go back to
it. Two files on the node, both written by module vllm_known_good:

* the record, ``RECORD_DIR/<service>.json`` (0600, root): ``{schema, name, current, previous}``, each an entry - the
  SUMMARY (below) and what a restore needs: the unit file's and the environment file's paths and contents (the
  environment file may hold the API key), the unit's name, the container engine, the model's manifest path, the NPUs
  and the serving argv and parameters;
* the local fact, ``FACT_PATH`` (0644): ``{schema: FACT_SCHEMA, services: {<service>: {current: SUMMARY, previous:
  SUMMARY or null}}}``, without secrets or file contents, which ``ansible_local`` and the doctor read.

SUMMARY: time (UTC, ISO 8601), stack {driver, firmware, cann_toolkit, cann_kernels, nnal} (versions; null where not
installed), mode, image and image_id (container mode), venv and vllm_version (native mode), model and model_digest
(the SHA-256 of its manifest), served_model_name, endpoint, unit_sha256, env_sha256.

A new entry that equals the current one but for its time changes nothing; another one becomes current and the
current one previous. ``parse_record`` and ``parse_fact`` return ``(value, problems)`` and never raise. Every file the
module reads (the record, the local fact, the unit and environment files) is read with ``read_file``: the collection's
one safe read (_files: a regular file only, never a FIFO or a device to block on, at most MAX_BYTES). Standard library
only.
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import read_regular_file
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._systemd import unit_name_problem

SCHEMA = 'kunpeng_ascend.vllm/known-good-record/1'
FACT_SCHEMA = 'kunpeng_ascend.vllm/known-good/1'
RECORD_DIR = '/etc/kunpeng-ascend-vllm/known-good'
FACT_PATH = '/etc/ansible/facts.d/kunpeng_ascend_vllm_known_good.fact'
STACK_KEYS = ('driver', 'firmware', 'cann_toolkit', 'cann_kernels', 'nnal')
# ansible_facts.ascend's component of each stack key.
STACK_FACTS = {'driver': 'driver', 'firmware': 'firmware', 'cann_toolkit': 'toolkit', 'cann_kernels': 'kernels',
               'nnal': 'nnal'}
SUMMARY_KEYS = ('time', 'stack', 'mode', 'image', 'image_id', 'venv', 'vllm_version', 'model', 'model_digest',
                'served_model_name', 'endpoint', 'unit_sha256', 'env_sha256')
# What an entry holds beyond its summary, for a restore.
RESTORE_KEYS = ('unit', 'unit_file', 'unit_content', 'env_file', 'env_content', 'engine', 'model_manifest', 'npus',
                'argv', 'serving')
WHICH = ('current', 'previous')
MODES = ('native', 'container')
# A record or fact larger than this is none of this collection's.
MAX_BYTES = 1 << 20


def sha256_text(text):
    return hashlib.sha256(text.encode('utf-8', 'surrogateescape')).hexdigest()


def read_file(path, what):
    """The text of the file ``path`` (None when nothing is there; bytes that are not UTF-8 kept as surrogates, as
    sha256_text hashes them). :raises _files.UnreadableFile: when it is no regular file (a FIFO, a device, a socket,
    a directory), cannot be read, or is larger than MAX_BYTES (``what`` says what it was to be)."""
    data = read_regular_file(path, MAX_BYTES, what)
    return None if data is None else data.decode('utf-8', 'surrogateescape')


def record_path(name, directory=RECORD_DIR):
    """Where the record of service ``name`` lives; ValueError when ``name`` is not a unit name (it could leave the
    directory)."""
    problem = unit_name_problem(name, 'service name')
    if problem or name.endswith('.service'):
        raise ValueError(problem or 'service name %s ends with .service: give the name without it' % name)
    return '%s/%s.json' % (directory.rstrip('/'), name)


def stack_of(ascend):
    """The stack's versions from ``ansible_facts.ascend`` (module ascend_facts); every one null without it."""
    ascend = ascend if isinstance(ascend, dict) else {}
    stack = {}
    for key in STACK_KEYS:
        component = ascend.get(STACK_FACTS[key])
        stack[key] = component.get('version') if isinstance(component, dict) else None
    return stack


def make_entry(time, stack, mode, model, model_digest, served_model_name, endpoint, unit, unit_file, unit_content,
               env_file, env_content, image=None, image_id=None, engine=None, venv=None, vllm_version=None,
               model_manifest=None, npus=None, argv=None, serving=None):
    """A whole entry of the record: its summary and what a restore needs."""
    return {
        'time': time, 'stack': dict((key, (stack or {}).get(key)) for key in STACK_KEYS), 'mode': mode,
        'image': image, 'image_id': image_id, 'venv': venv, 'vllm_version': vllm_version,
        'model': model, 'model_digest': model_digest, 'served_model_name': served_model_name, 'endpoint': endpoint,
        'unit_sha256': sha256_text(unit_content), 'env_sha256': sha256_text(env_content),
        'unit': unit, 'unit_file': unit_file, 'unit_content': unit_content, 'env_file': env_file,
        'env_content': env_content, 'engine': engine, 'model_manifest': model_manifest, 'npus': list(npus or []),
        'argv': list(argv or []), 'serving': dict(serving or {}),
    }


def summary_of(entry):
    """The entry without secrets or file contents (what the local fact and the play output show); None for None."""
    if entry is None:
        return None
    return dict((key, entry.get(key)) for key in SUMMARY_KEYS)


def same_but_time(first, second):
    """Whether two entries are the same stack, whatever their times."""
    if first is None or second is None:
        return first is second
    return dict(first, time=None) == dict(second, time=None)


def next_record(record, name, entry):
    """``(record, changed)``: the record after ``entry`` passed its gate. The same stack as the current one changes
    nothing (its time included); another one becomes current, and the current one previous."""
    current = (record or {}).get('current')
    if record is not None and same_but_time(current, entry):
        return record, False
    return {'schema': SCHEMA, 'name': name, 'current': entry, 'previous': current}, True


def fact_with(fact, name, record):
    """The local fact with service ``name``'s summaries from ``record`` (the other services' kept)."""
    services = dict((fact or {}).get('services') or {})
    services[name] = {'current': summary_of(record.get('current')), 'previous': summary_of(record.get('previous'))}
    return {'schema': FACT_SCHEMA, 'services': services}


def render(value):
    """The text of a record or a fact as written: sorted keys, so that the same value gives the same bytes."""
    return json.dumps(value, indent=2, sort_keys=True) + '\n'


def _loaded(text, schema):
    if text is None:
        return None, ['it cannot be read']
    if not isinstance(text, str):
        return None, ['it is not text']
    if len(text) > MAX_BYTES:
        return None, ['it is larger than %d bytes' % MAX_BYTES]
    try:
        value = json.loads(text)
    except ValueError as error:
        return None, ['it is not JSON (%s)' % error]
    if not isinstance(value, dict):
        return None, ['it is not a JSON object']
    if value.get('schema') != schema:
        return None, ['its schema is %s, not %s' % (json.dumps(value.get('schema')), schema)]
    return value, []


def _optional_string(value):
    return value is None or (isinstance(value, str) and len(value) > 0)


def summary_problems(summary, where):
    """What is wrong with a summary (or the summary part of an entry), each naming ``where``."""
    if not isinstance(summary, dict):
        return ['%s is %s, not an object' % (where, json.dumps(summary))]
    problems = ['%s has no %s' % (where, key) for key in SUMMARY_KEYS if key not in summary]
    if problems:
        return problems
    stack = summary['stack']
    if not isinstance(stack, dict) or sorted(stack) != sorted(STACK_KEYS) or \
            not all(_optional_string(stack[key]) for key in STACK_KEYS):
        problems.append('%s.stack is %s, not {%s} of versions or null'
                        % (where, json.dumps(stack), ', '.join(STACK_KEYS)))
    if summary['mode'] not in MODES:
        problems.append('%s.mode is %s, not one of %s' % (where, json.dumps(summary['mode']), ', '.join(MODES)))
    for key in ('time', 'model'):
        if not isinstance(summary[key], str) or not summary[key]:
            problems.append('%s.%s is %s, not a string' % (where, key, json.dumps(summary[key])))
    for key in ('image', 'image_id', 'venv', 'vllm_version', 'model_digest', 'served_model_name', 'endpoint',
                'unit_sha256', 'env_sha256'):
        if not _optional_string(summary[key]):
            problems.append('%s.%s is %s, not a string or null' % (where, key, json.dumps(summary[key])))
    return problems


def _entry_problems(entry, where):
    problems = summary_problems(entry, where)
    if problems:
        return problems
    for key in ('unit', 'unit_file', 'env_file', 'unit_content', 'env_content'):
        if not isinstance(entry.get(key), str):
            problems.append('%s.%s is %s, not a string' % (where, key, json.dumps(entry.get(key))))
    if problems:
        return problems
    if sha256_text(entry['unit_content']) != entry['unit_sha256'] or \
            sha256_text(entry['env_content']) != entry['env_sha256']:
        problems.append("%s's unit or environment file content does not match its sha256" % where)
    if not entry['unit_file'].startswith('/') or not entry['env_file'].startswith('/'):
        problems.append('%s.unit_file and env_file must be absolute paths' % where)
    npus = entry.get('npus')
    if not isinstance(npus, list) or not all(isinstance(npu, int) and not isinstance(npu, bool) for npu in npus):
        problems.append('%s.npus is %s, not a list of NPU numbers' % (where, json.dumps(npus)))
    return problems


def parse_record(text, name=None):
    """``(record, problems)`` of a record file's text: the record when it is one this collection wrote (problems
    []), else None and what is wrong. ``name``: the service the file is named after, which the record must name."""
    record, problems = _loaded(text, SCHEMA)
    if problems:
        return None, problems
    if not isinstance(record.get('name'), str) or unit_name_problem(record['name'], 'service name'):
        problems.append('name is %s' % json.dumps(record.get('name')))
    elif name is not None and record['name'] != name:
        problems.append('name is %s, but the file is named after %s' % (json.dumps(record['name']), name))
    if record.get('current') is None:
        problems.append('it has no current entry')
    else:
        problems.extend(_entry_problems(record['current'], 'current'))
    if record.get('previous') is not None:
        problems.extend(_entry_problems(record['previous'], 'previous'))
    return (None, problems) if problems else (record, [])


def parse_fact(text):
    """``(fact, problems)`` of the local fact's text: the fact when it is one this collection wrote (problems []),
    else None and what is wrong."""
    fact, problems = _loaded(text, FACT_SCHEMA)
    if problems:
        return None, problems
    services = fact.get('services')
    if not isinstance(services, dict):
        return None, ['services is %s, not an object' % json.dumps(services)]
    for name, service in sorted(services.items()):
        if not isinstance(service, dict):
            problems.append('services.%s is %s, not an object' % (name, json.dumps(service)))
            continue
        problems.extend(summary_problems(service.get('current'), 'services.%s.current' % name))
        if service.get('previous') is not None:
            problems.extend(summary_problems(service['previous'], 'services.%s.previous' % name))
    return (None, problems) if problems else (fact, [])


def entry_to_restore(record, which):
    """``(entry, problem)``: the entry ``which`` (current or previous) of a record, or None and why not."""
    if which not in WHICH:
        return None, 'which is %s, not one of %s' % (json.dumps(which), ', '.join(WHICH))
    entry = record.get(which) if record else None
    if entry is None:
        return None, 'the record of %s has no %s known good (%s)' % (
            (record or {}).get('name'), which,
            'only one stack has passed its gate since the record began' if which == 'previous' else 'none recorded')
    return entry, None


def missing_for(entry, found):
    """What the node lacks to run ``entry`` again, one message each ([]: nothing). ``found`` says what the node has:
    model_dir (bool), model_digest (the manifest's SHA-256 the model verified against, or None) with
    model_problem (why it did not verify), image_id (the engine's id of the image, or None), vllm_version (the
    venv's, or None)."""
    missing = []
    if not found.get('model_dir'):
        missing.append('the model directory %s is gone' % entry['model'])
    elif entry.get('model_digest') and found.get('model_digest') != entry['model_digest']:
        missing.append('the model %s no longer matches its known good manifest: digest %s expected, %s found%s' % (
            entry['model'], entry['model_digest'], found.get('model_digest') or 'none',
            ' (%s)' % found['model_problem'] if found.get('model_problem') else ''))
    if entry['mode'] == 'container':
        if not found.get('image_id'):
            missing.append('the image %s (id %s) is not in the container engine' % (entry['image'], entry['image_id']))
        elif entry.get('image_id') and found['image_id'] != entry['image_id']:
            missing.append('the image %s is now id %s, not the known good id %s' % (
                entry['image'], found['image_id'], entry['image_id']))
    elif entry['mode'] == 'native':
        if not found.get('vllm_version'):
            missing.append('the venv %s has no vLLM (%s expected)' % (entry['venv'], entry['vllm_version']))
        elif entry.get('vllm_version') and found['vllm_version'] != entry['vllm_version']:
            missing.append('the venv %s has vLLM %s, not the known good %s' % (
                entry['venv'], found['vllm_version'], entry['vllm_version']))
    return missing


def current_summary(local_facts, name):
    """The summary of service ``name``'s current known good in the local facts ``setup`` read (``ansible_local``:
    this collection's fact under its file name), or {} when there is none."""
    fact = (local_facts or {}).get('kunpeng_ascend_vllm_known_good') if isinstance(local_facts, dict) else None
    services = fact.get('services') if isinstance(fact, dict) else None
    service = services.get(name) if isinstance(services, dict) else None
    current = service.get('current') if isinstance(service, dict) else None
    return current if isinstance(current, dict) else {}
