# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The weekly update's choice of the new model directory: the newest complete one, partial copies skipped."""

from __future__ import annotations

import hashlib

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._model_rollout import choose_model_dir

ROOT = '/data/models'
NAMES = ['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']


def sums(names):
    """A manifest as sha256sum writes it (digest, two spaces, name)."""
    return ''.join('%s  %s\n' % (hashlib.sha256(name.encode()).hexdigest(), name) for name in names)


def listing(directory, names, mtime, manifest_mtime=None):
    files = [{'path': '%s/%s/%s' % (ROOT, directory, name), 'mtime': mtime} for name in names]
    if manifest_mtime is not None:
        files.append({'path': '%s/%s/SHA256SUMS' % (ROOT, directory), 'mtime': manifest_mtime})
    return files


def test_newest_complete_directory_wins_by_manifest_time():
    files = (listing('DeepSeek-2026-11-23', NAMES, 100, 200) + listing('DeepSeek-2026-11-30', NAMES, 300, 400)
             + listing('DeepSeek-2026-11-16', NAMES, 500, 50))
    names = ('DeepSeek-2026-11-23', 'DeepSeek-2026-11-30', 'DeepSeek-2026-11-16')
    manifests = dict(('%s/%s' % (ROOT, d), sums(NAMES)) for d in names)
    result = choose_model_dir(ROOT, files, manifests)
    assert result['chosen'] == ROOT + '/DeepSeek-2026-11-30'
    assert [entry['path'] for entry in result['directories']] == [
        ROOT + '/DeepSeek-2026-11-30', ROOT + '/DeepSeek-2026-11-23', ROOT + '/DeepSeek-2026-11-16']


def test_partial_copies_are_skipped_with_their_reason():
    files = (listing('v1', NAMES, 100, 200)
             + listing('v2', NAMES[:2], 300, 400)                                   # a listed file not there yet
             + listing('v3', NAMES + ['model-00002-of-00002.safetensors.partial'], 500, 600)
             + listing('v4', NAMES, 700)                                            # no manifest yet
             + listing('.v5', NAMES, 800, 900))                                     # rsync's hidden temporary
    manifests = dict(('%s/%s' % (ROOT, d), sums(NAMES)) for d in ('v1', 'v2', 'v3', '.v5'))
    result = choose_model_dir(ROOT, files, manifests)
    assert result['chosen'] == ROOT + '/v1'
    reasons = dict((entry['path'].rsplit('/', 1)[1], entry['reason']) for entry in result['directories'])
    assert reasons == {
        'v1': None,
        'v2': '1 file(s) of its SHA256SUMS missing: model-00002-of-00002.safetensors',
        'v3': 'a copy under way: model-00002-of-00002.safetensors.partial',
        'v4': 'no SHA256SUMS',
        '.v5': 'a hidden directory (a copy under way)',
    }


def test_a_broken_manifest_is_not_complete():
    result = choose_model_dir(ROOT, listing('v1', NAMES, 1, 2), {ROOT + '/v1': 'not a manifest\n'})
    assert result['chosen'] is None
    assert 'is not a sha256sum line' in result['directories'][0]['reason']


def test_files_outside_subdirectories_are_ignored_and_nothing_is_none():
    files = [{'path': ROOT + '/README', 'mtime': 1}, {'path': '/elsewhere/x/SHA256SUMS', 'mtime': 2}]
    assert choose_model_dir(ROOT + '/', files, {}) == {'chosen': None, 'directories': []}


def test_same_manifest_time_takes_the_later_name():
    files = listing('2026-11-30', NAMES, 1, 5) + listing('2026-12-07', NAMES, 1, 5)
    manifests = {ROOT + '/2026-11-30': sums(NAMES), ROOT + '/2026-12-07': sums(NAMES)}
    assert choose_model_dir(ROOT, files, manifests)['chosen'] == ROOT + '/2026-12-07'
