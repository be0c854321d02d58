# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The weekly update's first play (playbooks/weekly_update.yml, without the rollout it imports) run by ansible-playbook
on this machine against a Hugging Face cache on disk: the listing, the links' targets as find prints them (NUL-
separated, through Ansible's command result), the manifests read through their links, the choice; the root in an odd
spelling; a root that is not there. Then what role vllm_service does with the chosen snapshot and the root the playbook
passes it: the manifest verified through the links within the root, the container's mount of the root."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _serving
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_manifest import ManifestError, verify_manifest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NAMES = ['config.json', 'model-00001-of-00001.safetensors', 'odd name\nwith a newline.safetensors']


def sha256sum_line(name):
    """A manifest line as sha256sum writes it (a name with a newline escaped, the line starting with a backslash)."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    return ('\\%s  %s\n' % (digest, name.replace('\n', '\\n'))) if '\n' in name else '%s  %s\n' % (digest, name)


def hf_cache(root):
    """A Hugging Face cache of one model: revisions r1 (oldest), r2 (newest complete), r3 (newest, still
    downloading), each file a link ../../blobs/<sha>; r2 also links /etc/passwd, which its manifest does not list."""
    for revision, mtime, linked in (('r1', 100, NAMES), ('r2', 200, NAMES), ('r3', 300, NAMES[:1])):
        snapshot = root / 'snapshots' / revision
        snapshot.mkdir(parents=True)
        (root / 'blobs').mkdir(exist_ok=True)
        for name in linked + ['SHA256SUMS']:
            content = ''.join(sha256sum_line(item) for item in NAMES) if name == 'SHA256SUMS' else name
            blob = root / 'blobs' / hashlib.sha256((content + revision).encode()).hexdigest()
            blob.write_text(content)
            os.utime(str(blob), (mtime, mtime))
            (snapshot / name).symlink_to('../../blobs/' + blob.name)
    (root / 'refs').mkdir()
    (root / 'refs' / 'main').write_text('r2')
    (root / 'snapshots' / 'r2' / 'elsewhere').symlink_to('/etc/passwd')


def run_first_play(tmp_path, root):
    """The first play of weekly_update.yml on this machine: (rc, the JSON results of the default callback)."""
    with open(os.path.join(REPO, 'playbooks', 'weekly_update.yml'), encoding='utf-8') as handle:
        first = yaml.safe_load(handle)[0]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([first], width=1000), encoding='utf-8')
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump({'all': {'hosts': {'node': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.cache'), ANSIBLE_HOME=str(tmp_path / 'home'),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'local'), ANSIBLE_REMOTE_TEMP=str(tmp_path / 'remote'),
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default', ANSIBLE_CALLBACK_RESULT_FORMAT='json',
               ANSIBLE_CALLBACK_FORMAT_PRETTY='0', ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='0')
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    run = subprocess.run([playbook, '-i', 'inventory.yml', 'play.yml', '-e', 'rolling_update_hosts=node',
                          '-e', json.dumps({'weekly_update_model_root': root})],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False)
    line = re.compile(r'^(?:ok: \[node\]|fatal: \[node\]: FAILED!) => (\{.*\})$', re.M)
    results = [json.loads(match) for match in line.findall(run.stdout)]
    return run.returncode, results, run.stdout + run.stderr


@pytest.mark.needs_tools('find')
def test_the_newest_complete_snapshot_is_chosen_through_its_links_whatever_the_roots_spelling(tmp_path):
    cache = tmp_path / 'hub' / 'models--deepseek-ai--DeepSeek-V3'
    hf_cache(cache)
    rc, results, output = run_first_play(tmp_path, '/%s/.' % cache)           # //tmp/.../. is the same folder
    assert rc == 0, output[-3000:]
    assert results[-1] == {'msg': "This week's model: %s/snapshots/r2" % cache}, output[-3000:]


@pytest.mark.needs_tools('find')
def test_a_root_that_is_not_there_fails_naming_the_variable(tmp_path):
    rc, results, output = run_first_play(tmp_path, str(tmp_path / 'none'))
    assert rc != 0
    assert results[-1]['msg'] == ('weekly_update_model_root (%s) must be the folder the model directories are in; on '
                                  'node it is not there' % (tmp_path / 'none')), output[-3000:]


def test_the_rollout_gets_the_root_as_the_directory_the_models_links_may_lead_into():
    with open(os.path.join(REPO, 'playbooks', 'weekly_update.yml'), encoding='utf-8') as handle:
        rollout = yaml.safe_load(handle)[1]
    assert rollout['ansible.builtin.import_playbook'] == 'rolling_update.yml'
    assert rollout['vars'] == {'vllm_service_model': '{{ weekly_update_model }}',
                               'vllm_service_model_links_within': '{{ weekly_update_model_root }}'}


@pytest.mark.needs_tools('find')
def test_the_chosen_snapshot_is_servable_within_the_root_and_a_link_out_of_it_is_refused_by_name(tmp_path):
    cache = tmp_path / 'hub' / 'models--deepseek-ai--DeepSeek-V3'
    hf_cache(cache)
    root = '/%s/.' % cache
    rc, results, output = run_first_play(tmp_path, root)
    assert rc == 0, output[-3000:]
    chosen = results[-1]['msg'].split(': ', 1)[1]

    # The role's manifest check (module model_manifest, links_within: the root as the playbook passes it).
    def verify():
        return verify_manifest(chosen, chosen + '/SHA256SUMS', str(tmp_path / 'record.json'), 2, 'warn', 0, print,
                               links_within=root)

    with pytest.raises(ManifestError) as raised:
        verify()
    assert raised.value.msg == ('%s/elsewhere is a symbolic link to /etc/passwd, outside %s (links_within), which holds '
                                'the model directory %s: copy the file in, point the link inside, or give links_within '
                                'a directory that holds its target' % (chosen, cache, chosen))
    os.unlink(os.path.join(chosen, 'elsewhere'))
    result = verify()
    assert (result['files'], result['extra']) == (len(NAMES), [])
    # The serving plan takes the root (any spelling) and mounts it, normalised, read-only at its own path.
    inputs = {'name': 'vllm', 'mode': 'container', 'image': 'quay.io/ascend/vllm-ascend:v0.13.0', 'model': chosen,
              'model_links_within': root, 'host': '127.0.0.1', 'port': 8000, 'tensor_parallel_size': 1,
              'data_parallel_size': 1, 'cpu_kvcache_space': 4, 'shm_size': '1g', 'venv': '/opt/vllm/venv',
              'user': 'vllm', 'headless_settle': 10, 'manifest_workers': 0, 'start_timeout': 900, 'stop_timeout': 180,
              'npu_free_timeout': 120, 'npu_free_interval': 2, 'restart_burst': 5, 'restart_interval': 600,
              'wait_for_timeout': 600}
    plan = _serving.serving_plan(inputs, {'npu_count': 0, 'engine_paths': {'docker': '/usr/bin/docker'}})
    assert plan['problems'] == []
    assert plan['mounts'][0] == '%s:%s:ro' % (cache, cache)
