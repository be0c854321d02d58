#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_manifest
short_description: Verify a model directory against a SHA-256 manifest, or create the manifest
version_added: 0.2.0
description:
  - With O(state=verified), checks every file listed in a manifest in the format of C(sha256sum) (one
    C(<64 hex digits>  <relative path>) line per file; C(<hex> *<path>) and C(sha256sum)'s backslash-escaped names
    are read too) against the files of the model directory O(path), and fails when one is missing, unreadable or
    different.
  - Files are hashed in parallel on O(workers) threads, 1 MiB at a time.
  - "After a successful verification a record is kept in O(cache): per file its size, modification time (ns),
    inode and SHA-256, and the digest of the manifest. A later run against the same manifest does not hash again a
    file whose size, modification time and inode are those recorded and whose digest in the manifest is the one
    recorded: re-verifying an unchanged model of hundreds of GB takes a moment. Any other file is hashed."
  - A record that cannot be read, is corrupt, or was made for another directory or another manifest is ignored with
    a warning (every file is then hashed) and replaced after the next success.
  - RV(manifest_sha256) is the digest of the manifest file; nodes that verified the same digest hold the same model.
  - With O(state=created), hashes every file of the directory and writes the manifest (sorted by path), and the
    record.
  - Paths in the manifest must be relative and normalized (no C(..), C(.), empty component, absolute path or NUL);
    any other is an error naming the manifest line.
  - Symbolic links are followed when their target stays inside O(links_within) (by default the model directory
    itself); one that leads out of it, to nothing, or round a loop is an error naming it. Entries stay the model
    directory's own relative names, and each is hashed as the file its links lead to.
  - The model directory is only read; only O(state=created) writes in it, and only the manifest (when O(manifest)
    is inside it).
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - O(state=verified) verifies in check mode too (it only reads) but does not write the record.
      - O(state=created) hashes the files and predicts whether the manifest would change, without writing it or
        the record.
  diff_mode:
    support: full
    details:
      - For O(state=created), the manifest text before and after.
  platform:
    support: full
    platforms: posix
options:
  path:
    description:
      - The model directory on the managed host. It may be read-only.
    type: path
    required: true
  manifest:
    description:
      - Path of the manifest file on the managed host.
      - Defaults to C(SHA256SUMS) in O(path). For a read-only directory, O(state=created) needs it elsewhere.
    type: path
  state:
    description:
      - V(verified) checks the directory against the manifest.
      - V(created) writes the manifest of the directory's files (changed when it differs from the manifest there).
    type: str
    choices: [verified, created]
    default: verified
  cache:
    description:
      - Path of the verification record.
      - Defaults to C(/var/lib/kunpeng_ascend/model_manifest/<SHA-256 of the real path of path>.json).
      - Its directory is created when missing. A record that cannot be written is a warning, not a failure.
    type: path
  workers:
    description:
      - How many files are hashed at once.
      - Defaults to the number of CPUs, at most 8.
    type: int
  extra_files:
    description:
      - What a file of the directory that the manifest does not list does to a verification.
      - V(fail) fails it, V(warn) warns and lists it in RV(extra), V(ignore) does not look for such files.
      - Hidden files (a name or directory starting with C(.), such as C(.cache/huggingface)), the manifest and the
        record are never extra.
    type: str
    choices: [fail, warn, ignore]
    default: warn
  links_within:
    description:
      - A directory that holds O(path), into which the symbolic links of O(path) may lead - such as a Hugging Face
        cache of one model, whose C(snapshots/<revision>/<file>) are links to C(../../blobs/<sha256>) (give the
        cache as O(links_within) and the snapshot as O(path)).
      - Both are judged with their links resolved; one that does not hold O(path) is an error. A link to a
        directory outside O(path) but inside O(links_within) is followed, its files named under the link's name.
      - Defaults to O(path) itself.
    type: path
  timeout:
    description:
      - Seconds the hashing may take; when they pass, the module fails saying how many files were hashed.
      - V(0) sets no limit.
    type: int
    default: 0
notes:
  - A file that is replaced keeping its size, modification time and inode (which a normal copy or edit does not do)
    is not hashed again on a re-run. Remove the record (O(cache)) to hash everything.
  - A read that hangs (a dead NFS server) cannot be interrupted by O(timeout).
"""

EXAMPLES = r"""
- name: Verify the model before serving it
  kunpeng_ascend.vllm.model_manifest:
    path: /data/models/DeepSeek-R1-W8A8
    extra_files: fail
  register: model

- name: Every node holds the same model
  ansible.builtin.assert:
    that:
      - ansible_play_hosts | map('extract', hostvars, ['model', 'manifest_sha256']) | unique | length == 1

- name: Verify a snapshot of a Hugging Face cache, whose files are links into the cache's blobs
  kunpeng_ascend.vllm.model_manifest:
    path: /data/hf/models--deepseek-ai--DeepSeek-V3/snapshots/1d044fd82b15f1cedb197a288e50cc96a2c27205
    links_within: /data/hf/models--deepseek-ai--DeepSeek-V3
    manifest: /srv/manifests/DeepSeek-V3.sha256

- name: Write the manifest of a model directory next to it (the directory is read-only)
  kunpeng_ascend.vllm.model_manifest:
    path: /mnt/nfs/models/DeepSeek-R1-W8A8
    manifest: /srv/manifests/DeepSeek-R1-W8A8.sha256
    state: created
    workers: 16
"""

RETURN = r"""
files:
  description: How many files the manifest lists (with O(state=created), how many it lists now).
  returned: success and failure to match
  type: int
  sample: 171
bytes:
  description: Their size in bytes (of those that could be looked at).
  returned: success and failure to match
  type: int
  sample: 689573953536
hashed:
  description: How many files were hashed in this run.
  returned: success and failure to match
  type: int
  sample: 2
hashed_bytes:
  description: How many bytes were hashed in this run.
  returned: success and failure to match
  type: int
  sample: 8589934592
reused:
  description: How many files were not hashed because the record shows them unchanged since verified.
  returned: success and failure to match
  type: int
  sample: 169
manifest_sha256:
  description: SHA-256 of the manifest file (with O(state=created), of the manifest written or predicted).
  returned: success and failure to match
  type: str
  sample: 5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef
seconds:
  description: How long the run took.
  returned: success
  type: float
  sample: 0.42
cache:
  description: Path of the verification record.
  returned: success and failure to match
  type: str
  sample: /var/lib/kunpeng_ascend/model_manifest/0d5b0c0e4f0e2e7f0b8e3f2a0b1c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c.json
mismatched:
  description: The files whose SHA-256 differs from the manifest, sorted.
  returned: O(state=verified), success and failure to match
  type: list
  elements: str
  sample: [model-00003-of-00163.safetensors]
missing:
  description: The files the manifest lists that are not in the directory, sorted.
  returned: O(state=verified), success and failure to match
  type: list
  elements: str
  sample: [tokenizer.json]
unreadable:
  description: The files that could not be read, with why.
  returned: failure to read, and O(state=verified)
  type: list
  elements: dict
  contains:
    path:
      description: The file, relative to O(path).
      type: str
      sample: config.json
    error:
      description: Why it could not be read.
      type: str
      sample: Permission denied
extra:
  description: The files of the directory the manifest does not list, sorted; empty with O(extra_files=ignore).
  returned: O(state=verified), success and failure to match
  type: list
  elements: str
  sample: [notes.txt]
diff:
  description: The manifest text before (empty when there was none) and after.
  returned: O(state=created) in diff mode
  type: dict
  sample:
    before: ""
    after: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae  config.json\n"
manifest_line:
  description: The manifest line a failure is about.
  returned: when the manifest has a line that is not valid
  type: int
  sample: 3
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_manifest import (
    MANIFEST_NAME,
    ManifestError,
    create_manifest,
    default_cache_path,
    default_workers,
    verify_manifest,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import replace_undecodable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            manifest=dict(type='path'),
            state=dict(type='str', default='verified', choices=['verified', 'created']),
            cache=dict(type='path'),
            workers=dict(type='int'),
            extra_files=dict(type='str', default='warn', choices=['fail', 'warn', 'ignore']),
            timeout=dict(type='int', default=0),
            links_within=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path = params['path']
    manifest = params['manifest'] or path.rstrip('/') + '/' + MANIFEST_NAME
    cache = params['cache'] or default_cache_path(path)
    workers = default_workers() if params['workers'] is None else params['workers']
    if workers < 1:
        module.fail_json(msg='workers must be 1 or more, not %d' % workers)
    if params['timeout'] < 0:
        module.fail_json(msg='timeout must be 0 (no limit) or more seconds, not %d' % params['timeout'])

    warnings = WarningCap()

    def warn(message):
        warnings(replace_undecodable(message))

    try:
        if params['state'] == 'created':
            result = create_manifest(path, manifest, cache, workers, params['timeout'], warn, module.check_mode,
                                     links_within=params['links_within'])
            if not module._diff:
                result.pop('diff')
        else:
            result = verify_manifest(path, manifest, cache, workers, params['extra_files'], params['timeout'], warn,
                                     module.check_mode, links_within=params['links_within'])
            result['changed'] = False
    except ManifestError as error:
        warnings.emit(module.warn)
        module.fail_json(msg=replace_undecodable(error.msg), **replace_undecodable(error.extra))
    warnings.emit(module.warn)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
