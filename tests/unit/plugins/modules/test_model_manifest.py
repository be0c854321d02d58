# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""model_manifest's main() on scratch model directories (the module runs no command: only files are real)."""

from __future__ import annotations

import hashlib
import json
import os
import time

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _model_manifest
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import model_manifest
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import ExitJson, FailJson, make_tree, run_main

FILES = {'config.json': '{}\n', 'weights/model.safetensors': 'w' * 4096}


def sha(data):
    return hashlib.sha256(data.encode('utf-8')).hexdigest()


MANIFEST = ''.join('%s  %s\n' % (sha(text), name) for name, text in sorted(FILES.items()))


@pytest.fixture
def model(fake_host, tmp_path, monkeypatch):
    """A model directory with its SHA256SUMS, files dated an hour ago; records go to a scratch directory."""
    monkeypatch.setattr(_model_manifest, 'CACHE_DIR', str(tmp_path / 'records'))
    path = make_tree(tmp_path / 'model', dict(FILES, SHA256SUMS=MANIFEST))
    for name in FILES:
        os.utime(os.path.join(path, name), (time.time() - 3600,) * 2)
    return path


def run_module(args, outcome=ExitJson):
    return run_main(model_manifest.main, args, outcome)


def test_verifies_with_the_default_manifest_and_record_then_reuses_the_record(model, fake_host, tmp_path):
    first = run_module({'path': model})
    record = str(tmp_path / 'records' / (sha(os.path.realpath(model)) + '.json'))
    assert {key: first[key] for key in ('changed', 'files', 'hashed', 'reused', 'manifest_sha256', 'cache', 'extra')} == \
        {'changed': False, 'files': 2, 'hashed': 2, 'reused': 0, 'manifest_sha256': sha(MANIFEST), 'cache': record,
         'extra': []}
    assert os.path.isfile(record)
    second = run_module({'path': model})
    assert (second['changed'], second['hashed'], second['reused']) == (False, 0, 2)
    fake_host.warn.assert_not_called()


def test_a_mismatch_fails_with_the_lists(model):
    with open(os.path.join(model, 'config.json'), 'a', encoding='utf-8') as config:
        config.write(' ')
    os.unlink(os.path.join(model, 'weights/model.safetensors'))
    result = run_module({'path': model, 'workers': 1}, FailJson)
    assert result['msg'] == ('the model directory %s does not match the manifest %s/SHA256SUMS: 1 mismatched '
                             '(config.json); 1 missing (weights/model.safetensors)' % (model, model))
    assert (result['mismatched'], result['missing'], result['unreadable'], result['extra']) == \
        (['config.json'], ['weights/model.safetensors'], [], [])
    assert result['manifest_sha256'] == sha(MANIFEST)


def test_extra_files_warn_by_default_and_fail_when_asked(model, fake_host):
    make_tree(model, {'README.md': 'r'})
    assert run_module({'path': model})['extra'] == ['README.md']
    assert fake_host.warnings() == ['1 files of %s are not in the manifest %s/SHA256SUMS: README.md' % (model, model)]
    result = run_module({'path': model, 'extra_files': 'fail'}, FailJson)
    assert result['extra'] == ['README.md']


def test_a_corrupt_record_is_a_warning_not_a_failure(model, fake_host, tmp_path):
    cache = str(tmp_path / 'record.json')
    with open(cache, 'w', encoding='utf-8') as record:
        record.write('{"version": 1, "files": ')
    assert run_module({'path': model, 'cache': cache})['hashed'] == 2
    assert fake_host.warnings() == ['the verification record %s is corrupt and is ignored: every file is hashed (it '
                                    'is rewritten after a successful verification)' % cache]
    with open(cache, encoding='utf-8') as record:
        assert json.load(record)['manifest_sha256'] == sha(MANIFEST)


def test_check_mode_verifies_but_writes_no_record(model, tmp_path):
    result = run_module({'path': model, '_ansible_check_mode': True})
    assert (result['changed'], result['hashed']) == (False, 2)
    assert not os.path.exists(str(tmp_path / 'records'))


def test_a_manifest_line_leaving_the_directory_fails_naming_the_line(model):
    with open(os.path.join(model, 'SHA256SUMS'), 'a', encoding='utf-8') as manifest:
        manifest.write('%s  /etc/shadow\n' % ('0' * 64))
    result = run_module({'path': model}, FailJson)
    assert result['msg'] == ("%s/SHA256SUMS line 3: the path is absolute; manifest paths are relative to the model "
                             "directory: '/etc/shadow'" % model)
    assert result['manifest_line'] == 3


def test_created_writes_the_manifest_with_a_diff(model, tmp_path):
    manifest = str(tmp_path / 'out' / 'model.sha256')
    os.makedirs(os.path.dirname(manifest))
    result = run_module({'path': model, 'manifest': manifest, 'state': 'created', '_ansible_diff': True})
    # The SHA256SUMS in the directory is a file like any other.
    expected = ''.join('%s  %s\n' % (sha(text), name)
                       for name, text in sorted(dict(FILES, SHA256SUMS=MANIFEST).items()))
    assert (result['changed'], result['files'], result['diff']['before'], result['diff']['after']) == \
        (True, 3, '', expected)
    with open(manifest, encoding='utf-8') as written:
        assert written.read() == expected
    again = run_module({'path': model, 'manifest': manifest, 'state': 'created'})
    assert again['changed'] is False
    assert 'diff' not in again


def test_created_in_check_mode_predicts_without_writing(model):
    os.unlink(os.path.join(model, 'SHA256SUMS'))
    result = run_module({'path': model, 'state': 'created', '_ansible_check_mode': True, '_ansible_diff': True})
    assert (result['changed'], result['diff']['before'], result['diff']['after']) == (True, '', MANIFEST)
    assert not os.path.exists(os.path.join(model, 'SHA256SUMS'))
    # The same run for real writes what it predicted.
    assert run_module({'path': model, 'state': 'created'})['manifest_sha256'] == result['manifest_sha256']
    with open(os.path.join(model, 'SHA256SUMS'), encoding='utf-8') as written:
        assert written.read() == MANIFEST


def test_an_unchanged_manifest_is_not_rewritten(model):
    result = run_module({'path': model, 'state': 'created', '_ansible_check_mode': True})
    assert result['changed'] is False


@pytest.mark.parametrize('args, msg', [
    ({'workers': 0}, 'workers must be 1 or more, not 0'),
    ({'timeout': -1}, 'timeout must be 0 (no limit) or more seconds, not -1'),
])
def test_bad_numbers_fail_naming_the_option(model, args, msg):
    assert run_module(dict(args, path=model), FailJson)['msg'] == msg


def test_a_missing_directory_fails_naming_path(tmp_path, fake_host):
    result = run_module({'path': str(tmp_path / 'none')}, FailJson)
    assert result['msg'] == 'path: %s is not a directory (it does not exist)' % (tmp_path / 'none')


def test_names_that_are_not_utf8_are_returned_as_valid_utf8(model):
    with open(os.path.join(model.encode(), b'bad\xffname'), 'wb') as handle:
        handle.write(b'x')
    result = run_module({'path': model})
    assert result['extra'] == ['bad\ufffdname']
    json.dumps(result, ensure_ascii=False).encode('utf-8')


def hf_cache(tmp_path):
    """A Hugging Face cache of one model: the snapshot's files (its SHA256SUMS too) links to ../../blobs/<sha256>."""
    root = tmp_path / 'models--deepseek-ai--DeepSeek-V3'
    snapshot = root / 'snapshots' / 'r1'
    for name, text in dict(FILES, SHA256SUMS=MANIFEST).items():
        make_tree(root, {'blobs/' + sha(text): text})
        os.utime(str(root / 'blobs' / sha(text)), (time.time() - 3600,) * 2)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(str(root / 'blobs' / sha(text)), str(link.parent)))
    return str(root), str(snapshot)


def test_links_within_verifies_a_hugging_face_snapshot(fake_host, tmp_path, monkeypatch):
    monkeypatch.setattr(_model_manifest, 'CACHE_DIR', str(tmp_path / 'records'))
    root, snapshot = hf_cache(tmp_path)
    result = run_module({'path': snapshot, 'links_within': root, 'extra_files': 'fail'})
    assert (result['changed'], result['files'], result['hashed'], result['extra']) == (False, 2, 2, [])
    # Without it, today's rule: the links lead out of the model directory.
    refused = run_module({'path': snapshot}, FailJson)
    assert refused['msg'] == ("%s/SHA256SUMS line 1: 'config.json' leads out of the model directory %s through a "
                              "symbolic link" % (snapshot, os.path.realpath(snapshot)))


def test_links_within_creates_the_snapshots_manifest_in_check_mode_and_for_real(fake_host, tmp_path, monkeypatch):
    monkeypatch.setattr(_model_manifest, 'CACHE_DIR', str(tmp_path / 'records'))
    root, snapshot = hf_cache(tmp_path)
    manifest = str(tmp_path / 'DeepSeek-V3.sha256')
    args = {'path': snapshot, 'links_within': root, 'manifest': manifest, 'state': 'created'}
    predicted = run_module(dict(args, _ansible_check_mode=True))
    assert not os.path.exists(manifest)
    written = run_module(args)
    assert (predicted['changed'], written['changed'], run_module(args)['changed']) == (True, True, False)
    assert predicted['manifest_sha256'] == written['manifest_sha256']
    with open(manifest, encoding='utf-8') as text:
        assert text.read() == ''.join('%s  %s\n' % (sha(text), name)
                                      for name, text in sorted(dict(FILES, SHA256SUMS=MANIFEST).items()))


def test_links_within_that_does_not_hold_the_path_fails_naming_it(model, tmp_path):
    other = str(tmp_path / 'other')
    os.makedirs(other)
    result = run_module({'path': model, 'links_within': other}, FailJson)
    assert result['msg'] == ('links_within: %s does not hold the model directory %s: give the directory its links may '
                             'lead into and that holds it (such as the Hugging Face cache its snapshot is in), or leave '
                             'links_within unset' % (other, os.path.realpath(model)))
