# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_model_manifest: the manifest parser and writer, the verification record, and verify / create on scratch
model directories (real files, hashed for real)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import subprocess
import time

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _model_manifest
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_manifest import (
    Hasher,
    ManifestError,
    create_manifest,
    format_manifest,
    load_record,
    parse_manifest,
    save_record,
    scan_directory,
    verify_manifest,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import fails_after, make_tree

HOUR_AGO = time.time() - 3600
MODEL = {
    'config.json': '{"model_type": "deepseek_v3"}\n',
    'model-00001-of-00002.safetensors': 'weights one\n' * 1000,
    'model-00002-of-00002.safetensors': 'weights two\n' * 3000,
    'tokenizer/tokenizer.json': '{"version": "1.0"}\n',
}


def sha(text):
    return hashlib.sha256(text.encode('utf-8') if isinstance(text, str) else text).hexdigest()


def sha256sum_line(name, text, marker=' '):
    return '%s %s%s\n' % (sha(text), marker, name)


class Model:
    """A scratch model directory with its manifest (in it) and a record path (outside it); files dated an hour
    ago, so that the record may reuse them."""

    def __init__(self, tmp_path, files=None):
        self.files = dict(MODEL if files is None else files)
        self.path = make_tree(tmp_path / 'model', self.files)
        os.makedirs(self.path, exist_ok=True)
        self.manifest = os.path.join(self.path, 'SHA256SUMS')
        self.cache = str(tmp_path / 'records' / 'model.json')
        self.warnings = []
        self.write_manifest(''.join(sha256sum_line(name, text) for name, text in sorted(self.files.items())))
        for name in self.files:
            self.age(name)

    def full(self, name):
        return os.path.join(self.path, name)

    def age(self, name, seconds_ago=3600):
        os.utime(self.full(name), (time.time() - seconds_ago,) * 2)

    def write_manifest(self, text):
        with open(self.manifest, 'w', encoding='utf-8') as handle:
            handle.write(text)

    def verify(self, extra_files='warn', **kwargs):
        kwargs.setdefault('workers', 2)
        return verify_manifest(self.path, self.manifest, self.cache, kwargs.pop('workers'), extra_files,
                               kwargs.pop('timeout', 0), self.warnings.append, **kwargs)

    def failure(self, extra_files='warn', **kwargs):
        with pytest.raises(ManifestError) as raised:
            self.verify(extra_files, **kwargs)
        return raised.value

    def record(self):
        with open(self.cache, encoding='utf-8') as handle:
            return json.load(handle)


@pytest.fixture
def model(tmp_path):
    return Model(tmp_path)


class CountingHasher(Hasher):
    """A Hasher that remembers which files it hashed."""

    def __init__(self, workers=2, deadline=None):
        super().__init__(workers, deadline)
        self.paths = []

    def hash_file(self, path):
        self.paths.append(os.path.basename(path))
        return super().hash_file(path)


# --- the manifest text -------------------------------------------------------------------------------------------

def test_parse_reads_sha256sum_text_and_binary_lines_crlf_and_uppercase_hex():
    digest = sha('x')
    text = '%s  a.bin\r\n%s *dir/b c.bin\n\n%s  -leading-dash\n' % (digest, digest.upper(), digest)
    assert parse_manifest(text, 'M') == [('a.bin', digest, 1), ('dir/b c.bin', digest, 2), ('-leading-dash', digest, 4)]


def test_parse_reads_names_sha256sum_escapes():
    # What sha256sum writes for a name with a backslash and a newline (a leading backslash marks the line).
    digest = sha('x')
    assert parse_manifest('\\%s  a\\\\b\\nc\n' % digest, 'M') == [('a\\b\nc', digest, 1)]


@pytest.mark.parametrize('line, problem', [
    ('%s a' % ('0' * 64), 'is not a sha256sum line'),
    ('%s  a' % ('0' * 63), 'is not a sha256sum line'),
    ('%s  a' % ('g' * 64), 'is not a sha256sum line'),
    ('SHA256 (a) = %s' % ('0' * 64), 'is not a sha256sum line'),
    ('%s  /etc/passwd' % ('0' * 64), 'the path is absolute'),
    ('%s  ../outside' % ('0' * 64), "the path has a '..' component"),
    ('%s  a/../../outside' % ('0' * 64), "the path has a '..' component"),
    ('%s  ./a' % ('0' * 64), 'the path is not normalized'),
    ('%s  a//b' % ('0' * 64), 'the path is not normalized'),
    ('%s  dir/' % ('0' * 64), 'the path is not normalized'),
    ('%s  a\0b' % ('0' * 64), 'the path holds a NUL character'),
    ('\\%s  a\\tb' % ('0' * 64), 'a backslash escape that sha256sum does not write'),
])
def test_parse_refuses_a_bad_line_naming_the_manifest_and_line(line, problem):
    with pytest.raises(ManifestError) as raised:
        parse_manifest('%s  fine\n%s\n' % ('1' * 64, line), '/m/SHA256SUMS')
    assert raised.value.msg.startswith('/m/SHA256SUMS line 2')
    assert problem in raised.value.msg
    assert raised.value.extra == {'manifest_line': 2}


def test_parse_refuses_a_path_listed_twice():
    with pytest.raises(ManifestError, match=r"^M line 3: 'a' is listed twice \(first on line 1\)$"):
        parse_manifest('%s  a\n%s  b\n%s  a\n' % ('1' * 64, '2' * 64, '3' * 64), 'M')


def test_format_writes_what_sha256sum_writes_and_parse_reads_it_back(tmp_path):
    files = {'b.bin': 'b', 'a dir/a.json': 'a', 'back\\slash': 'c'}
    make_tree(tmp_path, files)
    digests = dict((name, sha(text)) for name, text in files.items())
    text = format_manifest(digests)
    assert parse_manifest(text, 'M') == [(name, digests[name], number) for number, name in enumerate(sorted(files), 1)]
    real = subprocess.run(['sha256sum'] + sorted(files), cwd=str(tmp_path), capture_output=True, text=True, check=True)
    assert text == real.stdout


# --- verification -------------------------------------------------------------------------------------------------

def test_first_verification_hashes_every_file_and_records_them(model):
    result = model.verify()
    sizes = sum(len(text) for text in MODEL.values())
    with open(model.manifest, 'rb') as manifest:
        manifest_sha256 = sha(manifest.read())
    assert {key: result[key] for key in ('files', 'bytes', 'hashed', 'hashed_bytes', 'reused', 'manifest_sha256')} == \
        {'files': 4, 'bytes': sizes, 'hashed': 4, 'hashed_bytes': sizes, 'reused': 0, 'manifest_sha256': manifest_sha256}
    assert (result['mismatched'], result['missing'], result['unreadable'], result['extra']) == ([], [], [], [])
    assert model.warnings == []
    record = model.record()
    assert (record['path'], record['manifest_sha256'], sorted(record['files'])) == \
        (os.path.realpath(model.path), manifest_sha256, sorted(MODEL))
    status = os.stat(model.full('config.json'))
    assert record['files']['config.json'] == [status.st_size, status.st_mtime_ns, status.st_ino, sha(MODEL['config.json'])]


def test_a_rerun_on_an_unchanged_model_hashes_nothing(model):
    model.verify()
    hasher = CountingHasher()
    result = model.verify(hasher=hasher)
    assert (result['hashed'], result['hashed_bytes'], result['reused']) == (0, 0, 4)
    assert hasher.calls == 0
    assert model.warnings == []


def test_a_changed_mtime_is_hashed_again_and_the_others_reused(model):
    model.verify()
    model.age('config.json', seconds_ago=60)
    hasher = CountingHasher()
    result = model.verify(hasher=hasher)
    assert (result['hashed'], result['reused'], hasher.paths) == (1, 3, ['config.json'])
    # The record now holds the new mtime: a third run hashes nothing.
    assert model.verify(hasher=CountingHasher())['hashed'] == 0


def test_a_changed_size_or_inode_is_hashed_again(model):
    model.verify()
    for name, text in (('config.json', MODEL['config.json'] + ' '), ):
        with open(model.full(name), 'w', encoding='utf-8') as handle:
            handle.write(text)
    model.age('config.json')
    # Replaced by a copy with the same size and mtime (a new inode).
    tokenizer = model.full('tokenizer/tokenizer.json')
    status = os.stat(tokenizer)
    os.rename(tokenizer, tokenizer + '.old')
    with open(tokenizer, 'w', encoding='utf-8') as handle:
        handle.write(MODEL['tokenizer/tokenizer.json'])
    os.utime(tokenizer, ns=(status.st_atime_ns, status.st_mtime_ns))
    os.unlink(tokenizer + '.old')
    hasher = CountingHasher()
    failure = model.failure(hasher=hasher)
    assert sorted(hasher.paths) == ['config.json', 'tokenizer.json']
    assert failure.extra['mismatched'] == ['config.json']


@pytest.mark.parametrize('after_ns, hashed', [(0, ['config.json']), (_model_manifest.RACY_NS, ['config.json']),
                                              (_model_manifest.RACY_NS + 1, [])])
def test_a_file_modified_just_before_it_was_hashed_is_hashed_again(model, after_ns, hashed):
    # The first run starts after_ns after config.json changed (the others changed an hour before), by a wall clock the
    # test sets: unless that is more than RACY_NS, its record does not vouch for config.json.
    model.age('config.json', seconds_ago=60)
    changed_ns = os.stat(model.full('config.json')).st_mtime_ns
    model.verify(now_ns=lambda: changed_ns + after_ns)
    hasher = CountingHasher()
    assert (model.verify(hasher=hasher)['hashed'], hasher.paths) == (len(hashed), hashed)


def test_a_mismatch_fails_naming_the_manifest_and_the_file_and_writes_no_record(model):
    with open(model.full('model-00002-of-00002.safetensors'), 'r+b') as weights:
        weights.write(b'W')
    failure = model.failure()
    assert failure.msg == ('the model directory %s does not match the manifest %s: 1 mismatched '
                           '(model-00002-of-00002.safetensors)' % (model.path, model.manifest))
    assert failure.extra['mismatched'] == ['model-00002-of-00002.safetensors']
    assert (failure.extra['hashed'], failure.extra['reused'], failure.extra['missing']) == (4, 0, [])
    assert not os.path.exists(model.cache)


def test_a_mismatch_after_a_success_is_found_when_the_mtime_changed(model):
    model.verify()
    with open(model.full('config.json'), 'r+b') as config:
        config.write(b'[')
    model.age('config.json', seconds_ago=10)
    assert model.failure().extra['mismatched'] == ['config.json']
    # The failure kept the record of the last success: the other files are still reused.
    assert model.record()['files']['config.json'][3] == sha(MODEL['config.json'])


def test_missing_files_fail_and_the_message_names_the_first_five(tmp_path):
    files = dict(('shard-%02d' % number, str(number)) for number in range(8))
    model = Model(tmp_path, files)
    for number in range(7):
        os.unlink(model.full('shard-%02d' % number))
    failure = model.failure()
    assert failure.extra['missing'] == ['shard-%02d' % number for number in range(7)]
    assert failure.msg.endswith(': 7 missing (shard-00, shard-01, shard-02, shard-03, shard-04 (and 2 more))')
    assert (failure.extra['files'], failure.extra['hashed']) == (8, 1)


def test_a_file_replaced_by_a_directory_is_unreadable(model):
    os.unlink(model.full('config.json'))
    os.mkdir(model.full('config.json'))
    assert model.failure().extra['unreadable'] == [{'path': 'config.json', 'error': 'not a regular file (a directory)'}]


def test_a_fifo_is_unreadable_and_never_blocks(model):
    os.unlink(model.full('config.json'))
    os.mkfifo(model.full('config.json'))
    with fails_after(10):
        failure = model.failure()
    assert failure.extra['unreadable'] == [{'path': 'config.json', 'error': 'not a regular file (a FIFO)'}]
    assert 'config.json: not a regular file (a FIFO)' in failure.msg


def test_a_file_that_cannot_be_opened_is_unreadable(model, monkeypatch):
    # Tests run as root, where chmod 000 does not deny: the open is refused instead.
    real_open = os.open
    denied = model.full('tokenizer/tokenizer.json')

    def refusing_open(path, *args, **kwargs):
        if path == denied:
            raise PermissionError(errno.EACCES, 'Permission denied', path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(_model_manifest.os, 'open', refusing_open)
    failure = model.failure()
    assert failure.extra['unreadable'] == [{'path': 'tokenizer/tokenizer.json', 'error': 'Permission denied'}]
    assert failure.msg.endswith('1 unreadable (tokenizer/tokenizer.json: Permission denied)')


def test_a_file_that_changes_while_it_is_read_is_unreadable(model, monkeypatch):
    real_readv = os.readv
    target = os.stat(model.full('config.json')).st_ino

    grown = []

    def growing_readv(fd, buffers):
        count = real_readv(fd, buffers)
        if os.fstat(fd).st_ino == target and not grown:
            grown.append(True)
            with open(model.full('config.json'), 'a', encoding='utf-8') as handle:
                handle.write(' ')
        return count

    monkeypatch.setattr(_model_manifest.os, 'readv', growing_readv)
    assert model.failure().extra['unreadable'] == [{'path': 'config.json', 'error': 'it changed while it was read'}]


def test_a_file_that_keeps_growing_is_not_followed_for_ever(tmp_path, monkeypatch):
    monkeypatch.setattr(_model_manifest, 'CHUNK_BYTES', 4)
    path = tmp_path / 'log'
    path.write_bytes(b'12345678')
    real_readv = os.readv

    def appending_readv(fd, buffers):
        with open(str(path), 'ab') as handle:
            handle.write(b'more')
        return real_readv(fd, buffers)

    monkeypatch.setattr(_model_manifest.os, 'readv', appending_readv)
    with fails_after(10):
        with pytest.raises(OSError, match='it changed while it was read'):
            Hasher(1).hash_file(str(path))


@pytest.mark.parametrize('extra_files', ['fail', 'warn', 'ignore'])
def test_extra_files(model, extra_files):
    make_tree(model.path, {'notes.txt': 'n', 'sub/more.bin': 'm', '.cache/huggingface/x.lock': '', '.hidden': ''})
    if extra_files == 'fail':
        failure = model.failure(extra_files)
        assert failure.msg.endswith('2 not in the manifest (notes.txt, sub/more.bin; extra_files=fail)')
        assert failure.extra['extra'] == ['notes.txt', 'sub/more.bin']
        assert not os.path.exists(model.cache)
        return
    result = model.verify(extra_files)
    if extra_files == 'warn':
        assert result['extra'] == ['notes.txt', 'sub/more.bin']
        assert model.warnings == ['2 files of %s are not in the manifest %s: notes.txt, sub/more.bin'
                                  % (model.path, model.manifest)]
    else:
        assert (result['extra'], model.warnings) == ([], [])
    assert os.path.exists(model.cache)


def test_the_manifest_and_a_record_inside_the_directory_are_not_extra(model):
    model.cache = model.full('verification.json')
    model.verify('fail')
    assert model.verify('fail')['reused'] == 4


def test_a_manifest_outside_the_directory(model, tmp_path):
    outside = str(tmp_path / 'model.sha256')
    os.rename(model.manifest, outside)
    model.manifest = outside
    assert model.verify('fail')['files'] == 4


def test_an_empty_manifest_fails(model):
    model.write_manifest('\n')
    assert model.failure().msg == ('the manifest %s lists no files: create it with state=created or sha256sum'
                                   % model.manifest)


def test_a_missing_manifest_fails_naming_it(model):
    os.unlink(model.manifest)
    assert model.failure().msg == ('the manifest %s does not exist: give its path in manifest, or create it with '
                                   'state=created' % model.manifest)


def test_a_path_that_is_no_directory_fails(tmp_path):
    with pytest.raises(ManifestError, match=r'^path: .*/nothing is not a directory \(it does not exist\)$'):
        verify_manifest(str(tmp_path / 'nothing'), 'M', 'C', 1, 'warn', 0, print)


def test_a_manifest_line_with_a_traversal_fails_before_anything_is_hashed(model):
    model.write_manifest(sha256sum_line('config.json', MODEL['config.json']) + '%s  ../etc/shadow\n' % ('0' * 64))
    hasher = CountingHasher()
    with pytest.raises(ManifestError) as raised:
        model.verify(hasher=hasher)
    assert raised.value.msg == ("%s line 2: the path has a '..' component, which could leave the model directory: "
                                "'../etc/shadow'" % model.manifest)
    assert hasher.calls == 0


def test_a_symbolic_link_inside_the_directory_is_followed(model):
    os.symlink('model-00001-of-00002.safetensors', model.full('alias.safetensors'))
    os.symlink('tokenizer', model.full('tok'))
    model.write_manifest(''.join(sha256sum_line(name, text) for name, text in sorted(MODEL.items()))
                         + sha256sum_line('alias.safetensors', MODEL['model-00001-of-00002.safetensors'])
                         + sha256sum_line('tok/tokenizer.json', MODEL['tokenizer/tokenizer.json']))
    result = model.verify('fail')
    # Two names of one file are hashed once.
    assert (result['files'], result['hashed']) == (6, 4)


def test_a_link_inside_to_a_file_listed_under_its_own_name_is_not_extra(model):
    os.symlink('config.json', model.full('config-link.json'))
    assert model.verify('fail')['extra'] == []


def test_a_manifest_entry_through_a_link_out_of_the_directory_fails_naming_the_line(model, tmp_path):
    make_tree(tmp_path / 'elsewhere', {'secret': 's'})
    os.symlink(str(tmp_path / 'elsewhere' / 'secret'), model.full('secret'))
    model.write_manifest(sha256sum_line('config.json', MODEL['config.json']) + sha256sum_line('secret', 's'))
    assert model.failure('ignore').msg == ("%s line 2: 'secret' leads out of the model directory %s through a "
                                           "symbolic link" % (model.manifest, os.path.realpath(model.path)))


def test_a_link_out_of_the_directory_is_an_error_when_looking_for_extra_files(model, tmp_path):
    os.symlink(str(tmp_path), model.full('up'))
    assert model.failure().msg == ('%s is a symbolic link to %s, outside the model directory %s: copy the file in, '
                                   'or point the link inside' % (model.full('up'), tmp_path, model.path))


def test_the_manifest_listing_itself_is_skipped_with_a_warning(model):
    with open(model.manifest, 'a', encoding='utf-8') as manifest:
        manifest.write('%s  SHA256SUMS\n' % ('0' * 64))
    assert model.verify('fail')['files'] == 4
    assert model.warnings == ['%s line 5 lists the manifest itself, which cannot hold its own digest: the line is '
                              'skipped' % model.manifest]


def test_names_that_are_not_utf8(tmp_path):
    model = Model(tmp_path, {})
    name = b'w\xff.bin'
    with open(os.path.join(model.path.encode(), name), 'wb') as handle:
        handle.write(b'data')
    with open(model.manifest, 'wb') as manifest:
        manifest.write(sha(b'data').encode() + b'  ' + name + b'\n')
    assert model.verify('fail')['files'] == 1
    os.unlink(os.path.join(model.path.encode(), name))
    failure = model.failure()
    assert failure.extra['missing'] == ['w\ufffd.bin']
    failure.msg.encode('utf-8')


# --- the record ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('content', [b'{not json', b'\xff\xfe', b'[]', b'{"version": 1}',
                                     b'{"version": 1, "path": "/m", "manifest_sha256": "x", "started_ns": 0, '
                                     b'"files": {"a": [1, 2, "3", "d"]}}'])
def test_a_corrupt_record_is_ignored_with_a_warning_and_replaced(model, content):
    os.makedirs(os.path.dirname(model.cache))
    with open(model.cache, 'wb') as record:
        record.write(content)
    assert model.verify()['hashed'] == 4
    assert model.warnings == ['the verification record %s is corrupt and is ignored: every file is hashed (it is '
                              'rewritten after a successful verification)' % model.cache]
    assert model.record()['version'] == 1


def test_a_record_of_another_manifest_is_ignored_with_a_warning(model):
    model.verify()
    old = model.record()['manifest_sha256']
    with open(model.manifest, 'a', encoding='utf-8') as manifest:
        manifest.write('\n')
    result = model.verify()
    assert (result['hashed'], result['reused']) == (4, 0)
    assert model.warnings == ['the verification record %s was made against another manifest (sha256 %s, now %s) and '
                              'is ignored: every file is hashed' % (model.cache, old, result['manifest_sha256'])]


def test_a_recorded_digest_that_is_not_the_manifest_one_is_hashed_again(model):
    # The manifest digest matches, so only the per-file check keeps a record edited by hand from hiding a change.
    model.verify()
    record = model.record()
    record['files']['config.json'][3] = '0' * 64
    with open(model.cache, 'w', encoding='utf-8') as handle:
        json.dump(record, handle)
    hasher = CountingHasher()
    assert (model.verify(hasher=hasher)['reused'], hasher.paths) == (3, ['config.json'])


def test_a_record_of_another_directory_is_ignored_with_a_warning(model, tmp_path):
    model.verify()
    moved = str(tmp_path / 'moved')
    os.rename(model.path, moved)
    old_path, model.path, model.manifest = model.path, moved, os.path.join(moved, 'SHA256SUMS')
    assert model.verify()['hashed'] == 4
    assert model.warnings == ['the verification record %s is for the directory %s, not %s, and is ignored: every '
                              'file is hashed' % (model.cache, old_path, moved)]


def test_load_record_warns_on_a_record_that_is_a_directory(tmp_path):
    warnings = []
    assert load_record(str(tmp_path), '/m', 'x', warnings.append) == {}
    assert warnings == ['the verification record %s cannot be read (not a regular file): every file is hashed'
                        % tmp_path]


def test_a_record_that_cannot_be_written_is_a_warning(model, tmp_path):
    blocker = tmp_path / 'records'
    blocker.write_text('a file where the directory should be')
    result = model.verify()
    assert result['hashed'] == 4
    assert len(model.warnings) == 1
    assert model.warnings[0].startswith('the verification record %s could not be written (' % model.cache)


def test_check_mode_verifies_without_writing_the_record(model):
    assert model.verify(check_mode=True)['hashed'] == 4
    assert not os.path.exists(model.cache)


def test_save_then_load_round_trips_and_leaves_no_temporary_file(tmp_path):
    cache = str(tmp_path / 'r' / 'x.json')
    files = {'a': [1, 10, 7, 'd' * 64], 'w\udcff': [2, 20, 8, 'e' * 64]}
    save_record(cache, '/m', 'm' * 64, files, 10 ** 19, print)
    assert load_record(cache, '/m', 'm' * 64, print) == files
    assert os.listdir(str(tmp_path / 'r')) == ['x.json']


# --- hashing ------------------------------------------------------------------------------------------------------

def test_the_timeout_stops_hashing_and_fails_naming_it(model):
    failure = model.failure(timeout=1, hasher=Hasher(1, deadline=time.monotonic() - 1))
    assert failure.msg == ('hashing did not finish within 1 seconds (timeout); 0 of 4 files to hash were done: raise '
                           'timeout (or 0 for no limit) for a model this large or storage this slow')
    assert not os.path.exists(model.cache)


def test_the_timeout_stops_threads_part_way_through_a_file(tmp_path, monkeypatch):
    monkeypatch.setattr(_model_manifest, 'CHUNK_BYTES', 1)
    real_readv = os.readv
    # Storage where each byte takes 100 s, on a clock that advances only when a byte is read (the deadline is then
    # minutes of real time away for the thread that waits for the workers: they stop by themselves).
    now = [0.0]
    reads = []

    def slow_readv(fd, buffers):
        now[0] += 100
        count = real_readv(fd, buffers)
        reads.append(count)
        return count

    monkeypatch.setattr(_model_manifest.os, 'readv', slow_readv)
    make_tree(tmp_path, {'big': 'x' * 1000, 'small': 'y'})
    with pytest.raises(_model_manifest.HashTimeout) as raised:
        Hasher(1, deadline=350, clock=lambda: now[0]).hash_all([(str(tmp_path / 'big'), 1000),
                                                                (str(tmp_path / 'small'), 1)])
    # Stopped at the deadline, four bytes into the big file's thousand; the small file was never read.
    assert reads == [1] * 4
    assert raised.value.args == (0,)


def test_hashing_uses_the_workers(tmp_path):
    files = dict(('f%d' % number, 'x' * (number + 1)) for number in range(20))
    make_tree(tmp_path, files)
    hasher = Hasher(4)
    results = hasher.hash_all([(str(tmp_path / name), len(text)) for name, text in files.items()])
    assert dict((os.path.basename(path), value[0]) for path, value in results.items()) == \
        dict((name, sha(text)) for name, text in files.items())
    assert hasher.calls == 20


def test_a_large_file_is_hashed_in_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(_model_manifest, 'CHUNK_BYTES', 7)
    data = os.urandom(100)
    (tmp_path / 'blob').write_bytes(data)
    digest, key = Hasher(1).hash_file(str(tmp_path / 'blob'))
    assert (digest, key[0]) == (sha(data), 100)


# --- creation -----------------------------------------------------------------------------------------------------

def test_create_writes_the_manifest_sha256sum_would_and_the_record(tmp_path):
    model = Model(tmp_path)
    os.unlink(model.manifest)
    make_tree(model.path, {'.cache/huggingface/download/x.metadata': 'm'})
    result = create_manifest(model.path, model.manifest, model.cache, 2, 0, model.warnings.append)
    real = subprocess.run(['sha256sum'] + sorted(MODEL), cwd=model.path, capture_output=True, text=True, check=True)
    with open(model.manifest, encoding='utf-8') as manifest:
        assert manifest.read() == real.stdout
    assert (result['changed'], result['files'], result['hashed'], result['diff']['before'], result['diff']['after']) == \
        (True, 4, 4, '', real.stdout)
    assert result['manifest_sha256'] == sha(real.stdout)
    # The record written with it makes the first verification reuse every file.
    assert model.verify('fail')['reused'] == 4


def test_create_again_changes_nothing(model):
    os.unlink(model.manifest)
    create_manifest(model.path, model.manifest, model.cache, 2, 0, print)
    mtime = os.stat(model.manifest).st_mtime_ns
    result = create_manifest(model.path, model.manifest, model.cache, 2, 0, print)
    assert (result['changed'], result['diff']['before'] == result['diff']['after']) == (False, True)
    assert os.stat(model.manifest).st_mtime_ns == mtime


def test_create_in_check_mode_predicts_and_writes_nothing(model):
    with open(model.manifest, encoding='utf-8') as manifest:
        before = manifest.read()
    make_tree(model.path, {'new.bin': 'n'})
    result = create_manifest(model.path, model.manifest, model.cache, 2, 0, print, check_mode=True)
    assert result['changed'] is True
    assert result['diff']['before'] == before
    assert result['diff']['after'] == format_manifest(dict((name, sha(text)) for name, text in
                                                           dict(MODEL, **{'new.bin': 'n'}).items()))
    with open(model.manifest, encoding='utf-8') as manifest:
        assert manifest.read() == before
    assert not os.path.exists(model.cache)


def test_create_in_an_empty_directory_fails(tmp_path):
    os.makedirs(str(tmp_path / 'empty' / '.cache'))
    with pytest.raises(ManifestError, match=r'has no files to list in a manifest \(hidden files are not listed\)$'):
        create_manifest(str(tmp_path / 'empty'), str(tmp_path / 'empty' / 'SHA256SUMS'), str(tmp_path / 'c'), 1, 0,
                        print)


def test_create_fails_on_a_file_it_cannot_read(model):
    os.mkfifo(model.full('pipe'))
    with fails_after(10):
        with pytest.raises(ManifestError) as raised:
            create_manifest(model.path, model.manifest, model.cache, 2, 0, print)
    assert raised.value.msg == 'cannot hash 1 files of %s: pipe: not a regular file (a FIFO)' % model.path
    assert raised.value.extra == {'unreadable': [{'path': 'pipe', 'error': 'not a regular file (a FIFO)'}]}


def test_create_into_a_read_only_place_fails_naming_the_manifest(model, tmp_path):
    target = str(tmp_path / 'no-such-dir' / 'SHA256SUMS')
    with pytest.raises(ManifestError, match=r'^the manifest .*/no-such-dir/SHA256SUMS cannot be written: '):
        create_manifest(model.path, target, model.cache, 2, 0, print)


def test_scan_lists_files_and_links_inside_but_not_hidden_ones(tmp_path):
    root = make_tree(tmp_path / 'm', {'a': '', 'd/b': '', '.git/c': '', 'd/.e': ''}, {'l': 'a', 'dl': 'd'})
    root = os.path.realpath(root)
    assert scan_directory(root) == {'a': root + '/a', 'd/b': root + '/d/b', 'l': root + '/a'}


# --- a Hugging Face snapshot: links into the cache's blobs (links_within) -------------------------------------------

HF_FILES = {
    'config.json': '{"model_type": "deepseek_v3"}\n',
    'model-00001-of-00001.safetensors': 'weights\n' * 2000,
    'tokenizer/tokenizer.json': '{"version": "1.0"}\n',
}


class HfCache(Model):
    """A Hugging Face cache of one model as huggingface_hub lays it out: every file of snapshots/<revision>/ (in
    subdirectories too) a relative link into blobs/<sha256>, refs/main naming the revision; the snapshot's SHA256SUMS
    a link like the others. ``path`` is the snapshot, ``root`` the cache."""

    def __init__(self, tmp_path, files=None, revision='1d044fd8'):
        self.root = str(tmp_path / 'hub' / 'models--deepseek-ai--DeepSeek-V3')
        self.files = dict(HF_FILES if files is None else files)
        self.path = os.path.join(self.root, 'snapshots', revision)
        self.cache = str(tmp_path / 'records' / 'model.json')
        self.warnings = []
        make_tree(self.root, {'refs/main': revision})
        os.makedirs(self.path)
        for name, text in self.files.items():
            self.link(name, text)
        manifest = ''.join(sha256sum_line(name, text) for name, text in sorted(self.files.items()))
        self.manifest = self.link('SHA256SUMS', manifest)
        self.links_within = self.root

    def link(self, name, text):
        """A blob of ``text`` and the snapshot's link ``name`` to it (../../blobs/<sha>, deeper for a subdirectory)."""
        blob = os.path.join(self.root, 'blobs', sha(text))
        make_tree(self.root, {'blobs/' + sha(text): text})
        os.utime(blob, (HOUR_AGO, HOUR_AGO))
        full = self.full(name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(os.path.relpath(blob, os.path.dirname(full)), full)
        return full

    def verify(self, extra_files='warn', **kwargs):
        kwargs.setdefault('links_within', self.links_within)
        return super().verify(extra_files, **kwargs)


@pytest.fixture
def snapshot(tmp_path):
    return HfCache(tmp_path)


def test_a_hugging_face_snapshot_verifies_through_its_links_within_the_cache(snapshot):
    assert os.readlink(snapshot.full('tokenizer/tokenizer.json')).startswith('../../../blobs/')
    result = snapshot.verify('fail')
    assert (result['files'], result['hashed'], result['extra']) == (3, 3, [])
    # The record names the snapshot's entries, not the blobs; a re-run reuses every one.
    assert sorted(snapshot.record()['files']) == sorted(HF_FILES)
    assert snapshot.verify('fail')['reused'] == 3


def test_without_links_within_a_snapshots_links_lead_out_of_the_model_directory(snapshot):
    assert snapshot.failure('ignore', links_within=None).msg == (
        "%s line 1: 'config.json' leads out of the model directory %s through a symbolic link"
        % (snapshot.manifest, os.path.realpath(snapshot.path)))


def test_links_within_the_model_directory_itself_is_todays_rule(model):
    assert model.verify('fail', links_within=model.path)['files'] == 4


def test_a_changed_blob_is_a_mismatch_named_by_the_snapshots_name(snapshot):
    blob = os.path.realpath(snapshot.full('config.json'))
    with open(blob, 'a', encoding='utf-8') as handle:
        handle.write(' ')
    failure = snapshot.failure()
    assert failure.extra['mismatched'] == ['config.json']


def test_a_manifest_entry_through_a_link_out_of_links_within_fails_naming_the_line(snapshot, tmp_path):
    make_tree(tmp_path / 'elsewhere', {'secret': 's'})
    os.symlink(str(tmp_path / 'elsewhere' / 'secret'), snapshot.full('secret'))
    snapshot.write_manifest(sha256sum_line('secret', 's'))
    assert snapshot.failure('ignore').msg == ("%s line 1: 'secret' leads out of %s (links_within) through a symbolic "
                                              "link" % (snapshot.manifest, os.path.realpath(snapshot.root)))


def test_a_link_out_of_links_within_is_an_error_naming_it_when_looking_for_extra_files(snapshot, tmp_path):
    os.symlink('../../../../elsewhere', snapshot.full('up'))
    root = os.path.realpath(snapshot.root)
    assert snapshot.failure().msg == (
        '%s is a symbolic link to %s, outside %s (links_within), which holds the model directory %s: copy the file '
        'in, point the link inside, or give links_within a directory that holds its target'
        % (snapshot.full('up'), tmp_path / 'elsewhere', root, os.path.realpath(snapshot.path)))


def test_a_dangling_link_within_the_cache_is_missing_or_an_error_naming_it(snapshot):
    os.unlink(os.path.realpath(snapshot.full('config.json')))
    failure = snapshot.failure('ignore')
    assert (failure.extra['missing'], failure.extra['mismatched']) == (['config.json'], [])
    assert snapshot.failure('warn').msg == ('%s is a symbolic link to %s, which does not exist' % (
        snapshot.full('config.json'), os.path.join(os.path.realpath(snapshot.root), 'blobs', sha(HF_FILES['config.json']))))


def test_a_loop_of_links_is_unreadable_or_an_error_naming_it(snapshot):
    os.symlink('b', snapshot.full('a'))
    os.symlink('a', snapshot.full('b'))
    with pytest.raises(ManifestError) as raised:
        snapshot.verify('warn')
    assert raised.value.msg.startswith('%s is a symbolic link that never resolves: a loop of links (' % snapshot.full('a'))
    snapshot.write_manifest(sha256sum_line('config.json', HF_FILES['config.json']) + sha256sum_line('a', 'x'))
    failure = snapshot.failure('ignore')
    assert [entry['path'] for entry in failure.extra['unreadable']] == ['a']
    assert failure.extra['unreadable'][0]['error'] == os.strerror(errno.ELOOP)


def test_a_link_to_a_directory_of_the_model_directory_is_not_descended(snapshot):
    os.symlink('.', snapshot.full('tokenizer/here'))
    assert snapshot.verify('fail')['extra'] == []


@pytest.mark.parametrize('target', ['../..', '../../..'])
def test_a_link_to_a_directory_that_holds_the_snapshot_is_refused(snapshot, target):
    os.symlink(target, snapshot.full('tokenizer/up'))
    held = os.path.realpath(snapshot.full('tokenizer'))
    assert snapshot.failure().msg == (
        '%s is a symbolic link to %s, which holds %s, where the link is followed from: listing it would never end; '
        'point the link at the directory it means'
        % (snapshot.full('tokenizer/up'), os.path.realpath(os.path.join(held, target)), held))


def test_a_loop_through_several_directories_outside_the_snapshot_is_refused(snapshot):
    root = snapshot.root
    make_tree(root, {'one/a.txt': 'a', 'two/b.txt': 'b'}, {'one/next': '../two', 'two/back': '../one'})
    os.symlink('../../one', snapshot.full('extras'))
    assert snapshot.failure().msg == (
        '%s/two/back is a symbolic link to %s/one, which holds %s/one, where the link is followed from: listing it '
        'would never end; point the link at the directory it means' % ((os.path.realpath(root),) * 3))


def test_a_directory_outside_the_snapshot_but_within_the_cache_is_listed_under_the_links_name(snapshot):
    make_tree(snapshot.root, {'extras/notes/a.txt': 'a', 'extras/.hidden': 'h'},
              {'extras/notes/b.txt': '../../blobs/' + sha(HF_FILES['config.json'])})
    os.symlink('../../extras', snapshot.full('more'))
    scanned = scan_directory(os.path.realpath(snapshot.path), within=os.path.realpath(snapshot.root))
    root = os.path.realpath(snapshot.root)
    assert scanned['more/notes/a.txt'] == root + '/extras/notes/a.txt'
    assert scanned['more/notes/b.txt'] == root + '/blobs/' + sha(HF_FILES['config.json'])
    assert sorted(scanned) == sorted(['SHA256SUMS', 'more/notes/a.txt', 'more/notes/b.txt'] + list(HF_FILES))


def test_create_writes_the_snapshots_manifest_sha256sum_would(tmp_path):
    snapshot = HfCache(tmp_path)
    manifest = str(tmp_path / 'DeepSeek-V3.sha256')
    result = create_manifest(snapshot.path, manifest, snapshot.cache, 2, 0, snapshot.warnings.append,
                             links_within=snapshot.root)
    names = sorted(list(HF_FILES) + ['SHA256SUMS'])
    real = subprocess.run(['sha256sum'] + names, cwd=snapshot.path, capture_output=True, text=True, check=True)
    with open(manifest, encoding='utf-8') as written:
        assert written.read() == real.stdout
    assert (result['changed'], result['files']) == (True, 4)
    with pytest.raises(ManifestError, match=r'is a symbolic link to .*, outside the model directory '):
        create_manifest(snapshot.path, manifest, snapshot.cache, 2, 0, print)


@pytest.mark.parametrize('given, problem', [
    ('relative/cache', "links_within must be the absolute path of a directory that holds the model directory; got "
                       "'relative/cache'"),
    (7, 'links_within must be the absolute path of a directory that holds the model directory; got 7'),
])
def test_links_within_must_be_absolute(snapshot, given, problem):
    assert snapshot.failure(links_within=given).msg == problem


def test_links_within_that_does_not_hold_the_model_directory_fails_naming_both(snapshot, tmp_path):
    other = str(tmp_path / 'other')
    os.makedirs(other)
    os.symlink(other, str(tmp_path / 'alias'))
    assert snapshot.failure(links_within=str(tmp_path / 'alias')).msg == (
        'links_within: %s (that is %s) does not hold the model directory %s: give the directory its links may lead '
        'into and that holds it (such as the Hugging Face cache its snapshot is in), or leave links_within unset'
        % (tmp_path / 'alias', os.path.realpath(other), os.path.realpath(snapshot.path)))
    assert snapshot.failure(links_within=os.path.join(snapshot.path, 'tokenizer')).msg.startswith(
        'links_within: %s/tokenizer does not hold the model directory ' % snapshot.path)


def test_links_within_is_judged_with_its_links_resolved(snapshot, tmp_path):
    os.symlink(snapshot.root, str(tmp_path / 'current'))
    assert snapshot.verify('fail', links_within=str(tmp_path / 'current') + '/')['files'] == 3
    # The model directory reached through a link in the cache resolves inside it too.
    os.symlink('snapshots/1d044fd8', os.path.join(snapshot.root, 'latest'))
    model = HfCache.__new__(HfCache)
    model.__dict__.update(snapshot.__dict__, path=os.path.join(snapshot.root, 'latest'), warnings=[])
    assert model.verify('fail')['files'] == 3
