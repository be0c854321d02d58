# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The weekly update's choice of the new model directory: the newest complete one, partial copies skipped, symbolic
links followed inside the root (the Hugging Face cache's layout), the root in any spelling, malformed input named."""

from __future__ import annotations

import base64
import hashlib
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_rollout import MAX_LINK_HOPS, choose_model_dir

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
    assert choose_model_dir(ROOT + '/', files, {}) == {'chosen': None, 'directories': [], 'manifests': {},
                                                       'problems': []}


def test_same_manifest_time_takes_the_later_name():
    files = listing('2026-11-30', NAMES, 1, 5) + listing('2026-12-07', NAMES, 1, 5)
    manifests = {ROOT + '/2026-11-30': sums(NAMES), ROOT + '/2026-12-07': sums(NAMES)}
    assert choose_model_dir(ROOT, files, manifests)['chosen'] == ROOT + '/2026-12-07'


# ---------------------------------------------------------------------------------------------- a real tree

def scan(root):
    """What the playbook gives the filter for the tree at ``root``: ansible.builtin.find's entries (recurse, hidden,
    file_type any: os.walk without following links, lstat of each), and the links' targets as find -printf
    '%p\\0%l\\0' prints them."""
    files, links = [], []
    for folder, dirs, names in os.walk(root):
        for name in names + dirs:
            path = os.path.normpath(os.path.join(folder, name))
            info = os.lstat(path)
            files.append({'path': path, 'mtime': info.st_mtime, 'isreg': os.path.isfile(path) and not os.path.islink(path),
                          'isdir': os.path.isdir(path) and not os.path.islink(path), 'islnk': os.path.islink(path)})
            if os.path.islink(path):
                links.append('%s\0%s\0' % (path, os.readlink(path)))
    return files, ''.join(links)


def choose(root, spelled=None):
    """The two passes of the playbook over the tree at ``root`` (``spelled``: the root as the user wrote it): the
    manifests to read, then the choice with them read as ansible.builtin.slurp returns them."""
    root = spelled or str(root)
    files, links = scan(root)
    first = choose_model_dir(root, files, links=links)
    read = dict((directory, {'content': base64.b64encode(open(path, 'rb').read()).decode(), 'encoding': 'base64'})
                for directory, path in first['manifests'].items())
    return choose_model_dir(root, files, read, links)


def hf_snapshot(repo, revision, names, mtime, linked=None):
    """A Hugging Face cache revision with a manifest of ``names``: each of its files (``linked``, default all) a link
    ../../blobs/<sha>, the blob its content (one per revision, so that each manifest has its own time)."""
    snapshot = repo / 'snapshots' / revision
    snapshot.mkdir(parents=True)
    (repo / 'blobs').mkdir(exist_ok=True)
    for name in (names if linked is None else linked) + ['SHA256SUMS']:
        content = sums(names) if name == 'SHA256SUMS' else name + revision
        blob = repo / 'blobs' / hashlib.sha256((content + revision).encode()).hexdigest()
        blob.write_text(content)
        os.utime(blob, (mtime, mtime))
        (snapshot / name).symlink_to('../../blobs/' + blob.name)


def test_the_hugging_face_cache_layout_chooses_the_newest_snapshot_through_its_links(tmp_path):
    repo = tmp_path / 'models--deepseek-ai--DeepSeek-V3'
    hf_snapshot(repo, '1a2b', NAMES, 100)
    hf_snapshot(repo, '3c4d', NAMES, 200)
    hf_snapshot(repo, '5e6f', NAMES, 300, linked=NAMES[:2])           # a revision still downloading
    (repo / 'refs').mkdir()
    (repo / 'refs' / 'main').write_text('3c4d')
    result = choose(repo)
    snapshots = str(repo / 'snapshots')
    assert result['chosen'] == snapshots + '/3c4d'
    assert result['problems'] == []
    assert [(entry['path'], entry['reason']) for entry in result['directories']] == [
        (snapshots + '/3c4d', None), (snapshots + '/1a2b', None),
        (snapshots + '/5e6f', '1 file(s) of its SHA256SUMS missing: model-00002-of-00002.safetensors')]
    # The manifest read is the blob the link names, not the link.
    assert choose_model_dir(str(repo), *scan(str(repo))[:1], links=scan(str(repo))[1])['manifests'][
        snapshots + '/3c4d'].startswith(str(repo / 'blobs') + '/')


def test_a_snapshot_link_to_a_blob_not_there_yet_is_missing(tmp_path):
    repo = tmp_path / 'models--org--m'
    hf_snapshot(repo, 'r1', NAMES, 100)
    blob = (repo / 'snapshots' / 'r1' / NAMES[0]).resolve()
    blob.unlink()
    result = choose(repo)
    assert result['chosen'] is None
    assert result['directories'][0]['reason'] == '1 file(s) of its SHA256SUMS missing: config.json'


def test_links_inside_a_plain_root_are_followed_whatever_their_spelling(tmp_path):
    root = tmp_path / 'models'
    (root / 'store').mkdir(parents=True)
    for name in NAMES:
        (root / 'store' / name).write_text(name)
    (root / 'v2').mkdir()
    (root / 'v2' / NAMES[0]).symlink_to('../store/' + NAMES[0])                       # relative
    (root / 'v2' / NAMES[1]).symlink_to(str(root / 'store' / NAMES[1]))               # absolute, inside
    (root / 'v2' / 'sub').symlink_to('../store')                                      # a linked directory
    (root / 'v2' / NAMES[2]).symlink_to('sub/./' + NAMES[2])                          # a chain through it
    (root / 'v2' / 'SHA256SUMS').write_text(sums(NAMES))
    result = choose(root)
    assert result['chosen'] == str(root / 'v2')
    assert [entry['reason'] for entry in result['directories']] == [None, 'no SHA256SUMS']    # v2, store


@pytest.mark.parametrize('target, why', [
    ('/etc/passwd', 'leads out of the model root'),
    ('../../outside/x', 'leads out of the model root'),
    ('../../models/store/x', 'leads out of the model root'),     # out and back in: not followed
    ('loop', 'more than %d symbolic links to follow (a loop)' % MAX_LINK_HOPS),
])
def test_a_link_out_of_the_root_or_in_a_loop_is_not_followed_and_named(tmp_path, target, why):
    root = tmp_path / 'models'
    (root / 'store').mkdir(parents=True)
    (root / 'store' / 'x').write_text('x')
    (tmp_path / 'outside').mkdir()
    (tmp_path / 'outside' / 'x').write_text('x')
    (root / 'v1').mkdir()
    (root / 'v1' / 'x').symlink_to(target)
    if target == 'loop':
        (root / 'v1' / 'loop').symlink_to('x')
    (root / 'v1' / 'SHA256SUMS').write_text(sums(['x']))
    result = choose(root)
    assert result['chosen'] is None
    reason = result['directories'][-1]['reason']
    assert reason.startswith('1 file(s) of its SHA256SUMS not usable: ') and why in reason
    if why.startswith('leads'):
        assert '%s/v1/x is a symbolic link to %s' % (root, target) in reason and 'not followed' in reason


def test_the_snapshots_folder_as_root_says_to_give_the_cache_folder(tmp_path):
    repo = tmp_path / 'models--org--m'
    hf_snapshot(repo, 'r1', NAMES, 100)
    result = choose(repo / 'snapshots')
    assert result['chosen'] is None
    assert 'give its model folder %s, which holds snapshots/ and blobs/, as the root' % repo in \
        result['directories'][0]['reason']


def test_a_model_directory_that_is_a_link_is_reported_not_chosen_twice(tmp_path):
    root = tmp_path / 'models'
    (root / 'v1').mkdir(parents=True)
    for name in NAMES:
        (root / 'v1' / name).write_text(name)
    (root / 'v1' / 'SHA256SUMS').write_text(sums(NAMES))
    (root / 'latest').symlink_to('v1')
    (root / 'elsewhere').symlink_to(str(tmp_path))
    result = choose(root)
    assert result['chosen'] == str(root / 'v1')
    reasons = dict((entry['path'].rsplit('/', 1)[1], entry['reason']) for entry in result['directories'])
    assert reasons['latest'] == 'a symbolic link to %s/v1, which is judged under its own name' % root
    assert 'leads out of the model root' in reasons['elsewhere']


@pytest.mark.parametrize('spelling', ['{root}', '{root}/', '{root}//', '/{root}', '{root}/.', '{root}/./',
                                      '{parent}/./models', '{parent}//models/.', '{parent}/x/../models'])
def test_the_root_in_any_spelling_finds_the_same_directory(tmp_path, spelling):
    root = tmp_path / 'models'
    (root / 'v1').mkdir(parents=True)
    (tmp_path / 'x').mkdir()
    for name in NAMES:
        (root / 'v1' / name).write_text(name)
    (root / 'v1' / 'SHA256SUMS').write_text(sums(NAMES))
    result = choose(root, spelling.format(root=root, parent=tmp_path))
    assert result['chosen'] == str(root / 'v1')
    assert result['problems'] == []


MTIMES = 'a finite number at least -9007199254740992 and at most 9007199254740992'
MALFORMED = [
    ('a string', "files[1] is not an entry of ansible.builtin.find's files (a dict with path); got 'a string'"),
    (None, "files[1] is not an entry of ansible.builtin.find's files (a dict with path); got None"),
    (7, "files[1] is not an entry of ansible.builtin.find's files (a dict with path); got 7"),
    (['/data/models/v1/x'], "files[1] is not an entry of ansible.builtin.find's files (a dict with path); got "
                            "['/data/models/v1/x']"),
    ({}, 'files[1]: path must be an absolute path; got None'),
    ({'path': None}, 'files[1]: path must be an absolute path; got None'),
    ({'path': 42}, 'files[1]: path must be an absolute path; got 42'),
    ({'path': 'v1/x'}, "files[1]: path must be an absolute path; got 'v1/x'"),
    ({'path': ROOT + '/v1/x\0'}, "files[1]: path must be an absolute path; got '/data/models/v1/x\\x00'"),
    ({'path': ROOT + '/v1/x', 'mtime': 'soon'}, "files[1] (/data/models/v1/x): mtime must be %s; got 'soon'" % MTIMES),
    ({'path': ROOT + '/v1/x', 'mtime': float('nan')}, 'files[1] (/data/models/v1/x): mtime must be %s; got nan' % MTIMES),
    ({'path': ROOT + '/v1/x', 'mtime': float('inf')}, 'files[1] (/data/models/v1/x): mtime must be %s; got inf' % MTIMES),
    ({'path': ROOT + '/v1/x', 'mtime': 10 ** 400},
     'files[1] (/data/models/v1/x): mtime must be %s; got %d' % (MTIMES, 10 ** 400)),
    ({'path': ROOT + '/v1/x', 'mtime': None}, 'files[1] (/data/models/v1/x): mtime must be %s; got None' % MTIMES),
    ({'path': ROOT + '/v1/x', 'mtime': True}, 'files[1] (/data/models/v1/x): mtime must be %s; got True' % MTIMES),
    ({'path': ROOT + '/v1/x', 'mtime': [1]}, 'files[1] (/data/models/v1/x): mtime must be %s; got [1]' % MTIMES),
    ({'path': ROOT + '/v1/x', 'mtime': 1, 'isreg': 'yes'},
     "files[1] (/data/models/v1/x): isreg must be true or false; got 'yes'"),
    ({'path': ROOT + '/v1/x', 'mtime': 1, 'islnk': 1}, 'files[1] (/data/models/v1/x): islnk must be true or false; got 1'),
]


@pytest.mark.parametrize('entry, problem', MALFORMED)
def test_a_malformed_entry_is_named_never_raised_and_its_directory_is_not_chosen(entry, problem):
    files = [{'path': ROOT + '/v2/SHA256SUMS', 'mtime': 1}, entry] + listing('v2', NAMES, 1) + listing('v1', NAMES, 1, 2)
    manifests = {ROOT + '/v1': sums(NAMES), ROOT + '/v2': sums(NAMES)}
    result = choose_model_dir(ROOT, files, manifests)
    assert result['problems'] == [problem]
    in_v1 = isinstance(entry, dict) and entry.get('path') == ROOT + '/v1/x'
    assert result['chosen'] == (ROOT + '/v2' if in_v1 else ROOT + '/v1')
    if in_v1:
        assert result['directories'][-1]['reason'] == 'a malformed entry of the listing: ' + problem


@pytest.mark.parametrize('links, problem', [
    (42, "links must be the text of find -printf '%p\\0%l\\0' or a dict of link to target; got int"),
    (ROOT + '/v1/x\0',
     "links: the output of find -printf '%p\\0%l\\0' comes in pairs of a path and its target; the last field "
     "'/data/models/v1/x' has none"),
    ({'v1/x': 'y'}, "links: 'v1/x' is not an absolute path"),
    ({ROOT + '/v1/x': None}, 'links: the target of /data/models/v1/x must be a non-empty path; got None'),
    ({ROOT + '/v1/x': ''}, "links: the target of /data/models/v1/x must be a non-empty path; got ''"),
])
def test_malformed_links_are_named(links, problem):
    result = choose_model_dir(ROOT, listing('v1', NAMES, 1, 2), {ROOT + '/v1': sums(NAMES)}, links)
    assert result['problems'] == [problem]
    assert result['chosen'] == ROOT + '/v1'


def test_a_link_whose_target_was_not_read_is_not_followed():
    files = listing('v1', NAMES[:2], 1, 2) + [{'path': ROOT + '/v1/' + NAMES[2], 'mtime': 1, 'islnk': True,
                                               'isreg': False, 'isdir': False}]
    result = choose_model_dir(ROOT, files, {ROOT + '/v1': sums(NAMES)})
    assert result['directories'][0]['reason'] == (
        '1 file(s) of its SHA256SUMS not usable: %s/v1/%s is a symbolic link whose target was not read (links)'
        % (ROOT, NAMES[2]))


@pytest.mark.parametrize('manifest, reason', [
    (None, "its SHA256SUMS was given as NoneType, not its text (nor ansible.builtin.slurp's result)"),
    (42, "its SHA256SUMS was given as int, not its text (nor ansible.builtin.slurp's result)"),
    ({'content': '!!!', 'encoding': 'base64'}, 'its SHA256SUMS was read as something that is not base64'),
    ({'content': 'eA==', 'encoding': 'utf-8'}, "its SHA256SUMS was read with encoding 'utf-8', not base64"),
    ({'content': base64.b64encode(b'\xff\xfe').decode()}, 'is not a sha256sum line'),
])
def test_a_manifest_given_wrong_is_the_directorys_reason(manifest, reason):
    result = choose_model_dir(ROOT, listing('v1', NAMES, 1, 2), {ROOT + '/v1': manifest})
    assert result['chosen'] is None and reason in result['directories'][0]['reason']


@pytest.mark.parametrize('manifests', [[], 'text', 3])
def test_manifests_that_are_not_a_dict_are_a_problem(manifests):
    result = choose_model_dir(ROOT, listing('v1', NAMES, 1, 2), manifests)
    assert result['problems'] == ['manifests must be a dict of directory to its SHA256SUMS; got %s'
                                  % type(manifests).__name__]
    assert result['chosen'] is None


@pytest.mark.parametrize('root', [None, '', 'data/models', 3, '/data/\nmodels', ['/data']])
def test_a_root_that_is_not_an_absolute_path_is_an_error_naming_root(root):
    with pytest.raises(ValueError, match='^root must be the absolute path'):
        choose_model_dir(root, [], {})


def test_without_manifests_the_first_pass_names_the_manifests_to_read():
    files = listing('v1', NAMES, 1, 2) + listing('v2', NAMES, 1)
    result = choose_model_dir(ROOT, files)
    assert result['manifests'] == {ROOT + '/v1': ROOT + '/v1/SHA256SUMS'}
    assert result['chosen'] is None
    assert [entry['reason'] for entry in result['directories']] == ['SHA256SUMS not read yet', 'no SHA256SUMS']


def test_a_file_name_with_a_newline_is_a_file_and_a_directory_name_with_one_is_not_served(tmp_path):
    """sha256sum escapes such a name (a line starting with a backslash); a directory named so is no model to serve."""
    root = tmp_path / 'models'
    for directory in ('v1', 'v2\nx'):
        (root / directory).mkdir(parents=True)
        (root / directory / 'we ird\nname').write_text('x')
        (root / directory / 'SHA256SUMS').write_text('\\%s  we ird\\nname\n' % ('0' * 64))
    result = choose(root)
    assert result['chosen'] == str(root / 'v1') and result['problems'] == []
    assert result['directories'][1]['reason'] == 'a name with a control character, which no service is given'


def test_a_listed_name_that_is_a_directory_or_a_fifo_is_not_a_file(tmp_path):
    root = tmp_path / 'models'
    (root / 'v1' / NAMES[0]).mkdir(parents=True)
    os.mkfifo(str(root / 'v1' / NAMES[1]))
    (root / 'v1' / NAMES[2]).symlink_to(NAMES[1])
    (root / 'v1' / 'SHA256SUMS').write_text(sums(NAMES))
    reason = choose(root)['directories'][0]['reason']
    assert reason == ('3 file(s) of its SHA256SUMS not usable: %s/v1/%s is a directory, not a regular file; %s/v1/%s is '
                      'a FIFO, device or socket, not a regular file; %s/v1/%s (%s/v1/%s) is a FIFO, device or socket, '
                      'not a regular file' % (root, NAMES[0], root, NAMES[1], root, NAMES[2], root, NAMES[1]))
