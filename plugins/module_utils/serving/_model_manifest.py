# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

A model directory checked against (or described by) a SHA-256 manifest in the format of C(sha256sum): one line
``<64 hex digits>  <relative path>`` per file (``<hex> *<path>`` for the binary marker, and a leading backslash
when the name holds a backslash, a newline or a carriage return, escaped as ``sha256sum`` escapes them).

Three parts, kept apart so that each is tested on its own:

* the manifest text: ``parse_manifest`` (text in, entries out; a line that is not a manifest line or names a path
  that could leave the directory is a ``ManifestError`` naming the manifest and the line) and ``format_manifest``;
* the verification record (``load_record``, ``save_record``): what a previous successful run found, per file its
  size, mtime_ns, inode and SHA-256, and the digest of the manifest it was checked against. A record that cannot
  be read, or was made for another directory or manifest, is ignored with a warning; it is written only after a
  success, by an atomic rename;
* the runs (``verify_manifest``, ``create_manifest``): files whose size, mtime_ns and inode are those of the record
  and whose expected digest is the one recorded are reused; the others are hashed on a pool of threads
  (``hashlib`` releases the GIL while it hashes, so threads use several cores), 1 MiB at a time.

The model directory is only read (it may be hundreds of GB on a read-only NFS mount); only ``create_manifest``
writes, and only the manifest. Only regular files are opened, never blocking (a FIFO is reported as unreadable).
Symbolic links are followed when their target stays inside the directory the links may resolve in: the model
directory itself, or a directory that holds it (``links_within``: a Hugging Face cache, whose
``snapshots/<revision>/<file>`` are links to ``../../blobs/<sha256>``). A link that leads out of it, to nothing, or
round in a loop is an error naming it. Manifest entries are always the model directory's own relative names; a link
to a directory outside the model directory (but within ``links_within``) is listed under the link's name.
Names that are not UTF-8 are kept as their bytes (surrogate escapes) and returned as valid UTF-8 text.
"""

from __future__ import annotations

import concurrent.futures
import errno
import hashlib
import json
import os
import stat
import tempfile
import threading
import time

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._text import replace_undecodable

MANIFEST_NAME = 'SHA256SUMS'
CACHE_DIR = '/var/lib/kunpeng_ascend/model_manifest'
RECORD_VERSION = 1
CHUNK_BYTES = 1024 * 1024
MAX_WORKERS_DEFAULT = 8
# A file modified less than this before it was hashed is hashed again on the next run: a file system with coarse
# timestamps (1 s on NFSv3, 2 s on FAT) could give a change made just after the hash the same mtime.
RACY_NS = 2 * 10 ** 9
# How many files of each kind a failure message names.
NAMED_IN_MESSAGE = 5

_HEX = frozenset('0123456789abcdefABCDEF')


class ManifestError(Exception):
    """A run that cannot succeed: ``msg`` says why and what to fix; ``extra`` is returned with the failure."""

    def __init__(self, msg, **extra):
        super().__init__(msg)
        self.msg = msg
        self.extra = extra


class HashTimeout(Exception):
    """The deadline passed while files were being hashed."""


def default_workers():
    return max(1, min(MAX_WORKERS_DEFAULT, os.cpu_count() or 1))


def default_cache_path(path):
    """The default record of the directory ``path``: named after the SHA-256 of its real path."""
    real = os.path.realpath(path)
    return os.path.join(CACHE_DIR, hashlib.sha256(real.encode('utf-8', 'surrogateescape')).hexdigest() + '.json')


# --------------------------------------------------------------------------------------------------------- manifest

def _unescape(name):
    """A name as sha256sum escapes it (after a leading backslash on the line): ``\\\\``, ``\\n``, ``\\r``."""
    out = []
    chars = iter(name)
    for char in chars:
        if char != '\\':
            out.append(char)
            continue
        following = next(chars, None)
        if following == '\\':
            out.append('\\')
        elif following == 'n':
            out.append('\n')
        elif following == 'r':
            out.append('\r')
        else:
            return None
    return ''.join(out)


def check_relative_path(path):
    """Why ``path`` cannot name a file inside the directory (None when it can): it must be relative, normalized
    (no ``.``, ``..``, empty component or trailing slash) and hold no NUL."""
    if not path:
        return 'the path is empty'
    if '\0' in path:
        return 'the path holds a NUL character'
    if path.startswith('/'):
        return 'the path is absolute; manifest paths are relative to the model directory'
    parts = path.split('/')
    if '..' in parts:
        return "the path has a '..' component, which could leave the model directory"
    if '.' in parts or '' in parts:
        return "the path is not normalized ('.' or empty components, or a trailing slash)"
    return None


def parse_manifest(text, source):
    """The entries of a manifest, ``[(relative path, lowercase hex digest, line number)]`` in file order.

    ``text`` is the manifest decoded as UTF-8 with surrogate escapes. Empty lines are skipped; a line that is not
    ``<64 hex>  <path>`` or ``<64 hex> *<path>``, a path that ``check_relative_path`` refuses, and a path listed
    twice are a ManifestError naming ``source`` and the line.
    """
    entries = []
    seen = {}
    for number, line in enumerate(text.split('\n'), 1):
        if line.endswith('\r'):
            line = line[:-1]
        if not line.strip():
            continue
        escaped = line.startswith('\\')
        body = line[1:] if escaped else line
        digest, separator, name = body[:64], body[64:66], body[66:]
        if len(digest) != 64 or not _HEX.issuperset(digest) or separator not in ('  ', ' *'):
            raise ManifestError('%s line %d is not a sha256sum line (64 hex digits, two spaces or " *", then a '
                                'path relative to the model directory): %r' % (source, number, line[:200]),
                                manifest_line=number)
        if escaped:
            name = _unescape(name)
            if name is None:
                raise ManifestError('%s line %d: the path has a backslash escape that sha256sum does not write: %r'
                                    % (source, number, line[:200]), manifest_line=number)
        problem = check_relative_path(name)
        if problem:
            raise ManifestError('%s line %d: %s: %r' % (source, number, problem, name[:200]), manifest_line=number)
        if name in seen:
            raise ManifestError('%s line %d: %r is listed twice (first on line %d)' % (source, number, name, seen[name]),
                                manifest_line=number)
        seen[name] = number
        entries.append((name, digest.lower(), number))
    return entries


def _escape(name):
    if '\\' in name or '\n' in name or '\r' in name:
        return '\\', name.replace('\\', '\\\\').replace('\n', '\\n').replace('\r', '\\r')
    return '', name


def format_manifest(digests):
    """Manifest text (as sha256sum writes it, text mode) of ``{relative path: hex digest}``, sorted by path."""
    lines = []
    for name in sorted(digests):
        prefix, escaped = _escape(name)
        lines.append('%s%s  %s\n' % (prefix, digests[name], escaped))
    return ''.join(lines)


def read_manifest(manifest_path):
    """``(bytes, text)`` of the manifest file; a ManifestError naming it when it cannot be read."""
    try:
        data = _read_regular(manifest_path)
    except OSError as error:
        if error.errno == errno.ENOENT:
            raise ManifestError('the manifest %s does not exist: give its path in manifest, or create it with '
                                'state=created' % manifest_path)
        raise ManifestError('the manifest %s cannot be read: %s' % (manifest_path, _reason(error)))
    return data, data.decode('utf-8', 'surrogateescape')


def _read_regular(path):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, 'O_CLOEXEC', 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, 'not a regular file')
        chunks = []
        while True:
            chunk = os.read(fd, CHUNK_BYTES)
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _reason(error):
    return error.strerror or str(error)


# --------------------------------------------------------------------------------------------------------- files

def _inside(real, root):
    return real == root or real.startswith(root.rstrip('/') + '/')


def real_within(root, links_within=None):
    """The real path of the directory the symbolic links of the model directory ``root`` (a real path) may lead
    into: ``links_within``, which must hold ``root`` once both are resolved, or ``root`` itself when it is None.

    :raises ManifestError: ``links_within`` is not an absolute path, or does not hold the model directory.
    """
    if links_within is None:
        return root
    if not isinstance(links_within, str) or not links_within.startswith('/'):
        raise ManifestError('links_within must be the absolute path of a directory that holds the model directory; '
                            'got %r' % (links_within,))
    within = os.path.realpath(links_within)
    if not _inside(root, within):
        raise ManifestError('links_within: %s%s does not hold the model directory %s: give the directory its links '
                            'may lead into and that holds it (such as the Hugging Face cache its snapshot is in), or '
                            'leave links_within unset' % (links_within, _resolved(links_within, within), root))
    return within


def _resolved(given, real):
    return '' if real == given.rstrip('/') else ' (that is %s)' % real


def _outside(root, within):
    """How a message names the directory links must stay in."""
    return 'the model directory %s' % root if within == root else '%s (links_within)' % within


def resolve_entry(root, name, within=None):
    """The real path of the manifest entry ``name`` of the directory whose real path is ``root``; None when a
    symbolic link takes it out of ``within`` (a real path holding ``root``; by default ``root`` itself)."""
    real = os.path.realpath(os.path.join(root, name))
    return real if _inside(real, within or root) and real != root else None


def scan_directory(root, excluded=(), within=None):
    """``{relative path: real path}`` of the files under ``root`` (a real path): regular files and symbolic
    links to files inside ``within`` (a real path holding ``root``; by default ``root`` itself), but names with a
    component starting with ``.`` (hidden files and caches such as ``.cache/huggingface``) and the real paths in
    ``excluded``. A symbolic link to a directory inside ``root`` is not descended (its files are listed under their
    own path); one to a directory outside ``root`` but inside ``within`` is, its files listed under the link's
    name. A symbolic link leading out of ``within``, to nothing, round a loop, or to a directory that holds the
    place of the link (its listing would never end) is a ManifestError naming it.
    """
    within = within or root
    found = {}

    def failed(error):
        raise ManifestError('cannot list %s: %s' % (error.filename, _reason(error)))

    def walk(top, prefix, chain):
        # chain: the real directories holding the links followed to reach ``top``.
        for dirpath, dirnames, filenames in os.walk(top, onerror=failed):
            dirnames[:] = sorted(name for name in dirnames if not name.startswith('.'))
            relative_dir = os.path.relpath(dirpath, top)
            base = prefix if relative_dir == '.' else relative_dir if not prefix else prefix + '/' + relative_dir
            for name in list(dirnames):
                full = os.path.join(dirpath, name)
                if not os.path.islink(full):
                    continue
                dirnames.remove(name)
                real = _linked_real(root, within, full)
                if _inside(real, root):
                    continue
                holders = chain + (dirpath,)
                held = next((holder for holder in holders if _inside(holder, real)), None)
                if held is not None:
                    raise ManifestError('%s is a symbolic link to %s, which holds %s, where the link is followed '
                                        'from: listing it would never end; point the link at the directory it '
                                        'means' % (full, real, held))
                walk(real, name if not base else base + '/' + name, holders)
            for name in sorted(filenames):
                if name.startswith('.'):
                    continue
                full = os.path.join(dirpath, name)
                real = _linked_real(root, within, full) if os.path.islink(full) else full
                if real in excluded:
                    continue
                found[name if not base else base + '/' + name] = real

    walk(root, '', ())
    return found


def _linked_real(root, within, link):
    real = os.path.realpath(link)
    if not _inside(real, within):
        if within == root:
            raise ManifestError('%s is a symbolic link to %s, outside the model directory %s: copy the file in, or '
                                'point the link inside' % (link, real, root))
        raise ManifestError('%s is a symbolic link to %s, outside %s (links_within), which holds the model directory '
                            '%s: copy the file in, point the link inside, or give links_within a directory that '
                            'holds its target' % (link, real, within, root))
    try:
        os.stat(link)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ManifestError('%s is a symbolic link that never resolves: a loop of links (%s)'
                                % (link, _reason(error)))
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            raise ManifestError('%s is a symbolic link to %s, which does not exist' % (link, real))
        raise ManifestError('%s is a symbolic link to %s, which cannot be looked at: %s' % (link, real, _reason(error)))
    return real


def file_key(status):
    """What tells that a file is unchanged since it was hashed: size, mtime_ns, inode."""
    return [status.st_size, status.st_mtime_ns, status.st_ino]


class Hasher:
    """Hashes files on ``workers`` threads until ``deadline`` (a ``clock()`` value, None for none; ``clock`` is
    time.monotonic unless a test gives its own).

    ``hash_file`` is what one thread does; ``calls`` counts its calls (the tests read it)."""

    def __init__(self, workers, deadline=None, clock=time.monotonic):
        self.workers = workers
        self.deadline = deadline
        self.clock = clock
        self.calls = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def hash_file(self, path):
        """``(hex digest, file_key)`` of the regular file ``path``, read 1 MiB at a time.

        :raises OSError: it cannot be opened or read, is no regular file, or changed while it was read.
        :raises HashTimeout: the deadline passed.
        """
        with self._lock:
            self.calls += 1
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, 'O_CLOEXEC', 0))
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise OSError(errno.EINVAL, 'not a regular file (%s)' % _kind(before.st_mode))
            digest = hashlib.sha256()
            buffer = bytearray(CHUNK_BYTES)
            view = memoryview(buffer)
            total = 0
            while True:
                if self._stop.is_set() or (self.deadline is not None and self.clock() > self.deadline):
                    self._stop.set()
                    raise HashTimeout(0)
                count = os.readv(fd, [buffer])
                if not count:
                    break
                digest.update(view[:count])
                total += count
                if total > before.st_size:  # it grows: do not follow a file that is being written
                    break
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if total != before.st_size or file_key(after) != file_key(before):
            raise OSError(errno.EAGAIN, 'it changed while it was read')
        return digest.hexdigest(), file_key(before)

    def hash_all(self, paths):
        """``{path: (digest, key) or OSError}`` for each of ``[(path, size)]``, the largest files first.

        :raises HashTimeout: the deadline passed before every file was hashed (its argument: how many were).
        """
        sizes = dict(paths)
        if not sizes:
            return {}
        executor = concurrent.futures.ThreadPoolExecutor(max_workers=min(self.workers, len(sizes)))
        futures = {}
        try:
            for path in sorted(sizes, key=lambda item: -sizes[item]):
                futures[executor.submit(self.hash_file, path)] = path
            timeout = None if self.deadline is None else max(0.0, self.deadline - self.clock())
            if concurrent.futures.wait(futures, timeout=timeout).not_done:
                self._stop.set()
        finally:
            if self._stop.is_set() or len(futures) < len(sizes):
                self._stop.set()
                for future in futures:
                    future.cancel()
            executor.shutdown(wait=True)
        results = {}
        for future, path in futures.items():
            error = None if future.cancelled() else future.exception()
            if future.cancelled() or isinstance(error, HashTimeout):
                continue
            if error is not None and not isinstance(error, OSError):
                raise error
            results[path] = error if error is not None else future.result()
        if len(results) < len(sizes):
            raise HashTimeout(len(results))
        return results


def _kind(mode):
    if stat.S_ISDIR(mode):
        return 'a directory'
    if stat.S_ISFIFO(mode):
        return 'a FIFO'
    if stat.S_ISSOCK(mode):
        return 'a socket'
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return 'a device'
    return 'mode %o' % mode


# --------------------------------------------------------------------------------------------------------- record

def load_record(cache_path, root, manifest_sha256, warn):
    """``{relative path: [size, mtime_ns, inode, digest]}`` from the record at ``cache_path``, but the files
    modified less than RACY_NS before the run that wrote it started; empty (with a warning naming the record) when
    it is corrupt or was made for another directory or manifest, and empty (silently) when there is none."""
    try:
        data = _read_regular(cache_path)
    except OSError as error:
        if error.errno not in (errno.ENOENT, errno.ENOTDIR):
            warn('the verification record %s cannot be read (%s): every file is hashed' % (cache_path, _reason(error)))
        return {}
    try:
        record = _json.loads(data)
        files = record['files']
        valid = (record['version'] == RECORD_VERSION and isinstance(record['path'], str)
                 and isinstance(record['started_ns'], int)
                 and isinstance(record['manifest_sha256'], str) and isinstance(files, dict)
                 and all(isinstance(name, str) and isinstance(value, list) and len(value) == 4
                         and all(isinstance(number, int) for number in value[:3]) and isinstance(value[3], str)
                         for name, value in files.items()))
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid:
        warn('the verification record %s is corrupt and is ignored: every file is hashed (it is rewritten after a '
             'successful verification)' % cache_path)
        return {}
    if record['path'] != root:
        warn('the verification record %s is for the directory %s, not %s, and is ignored: every file is hashed'
             % (cache_path, record['path'], root))
        return {}
    if record['manifest_sha256'] != manifest_sha256:
        warn('the verification record %s was made against another manifest (sha256 %s, now %s) and is ignored: '
             'every file is hashed' % (cache_path, record['manifest_sha256'], manifest_sha256))
        return {}
    return dict((name, value) for name, value in files.items() if value[1] < record['started_ns'] - RACY_NS)


def save_record(cache_path, root, manifest_sha256, files, started_ns, warn):
    """Write the record atomically (a temporary file in the same directory, renamed); a failure is a warning.
    Names that are not UTF-8 are kept exactly: JSON (ASCII only) writes their surrogate escapes as ``\\udcXX``."""
    record = {'version': RECORD_VERSION, 'path': root, 'manifest_sha256': manifest_sha256, 'files': files,
              'started_ns': started_ns}
    try:
        os.makedirs(os.path.dirname(os.path.abspath(cache_path)), mode=0o755, exist_ok=True)
        _replace_file(cache_path, json.dumps(record, separators=(',', ':'), sort_keys=True).encode('utf-8'))
    except OSError as error:
        warn('the verification record %s could not be written (%s): the next run hashes every file again'
             % (cache_path, _reason(error)))


# --------------------------------------------------------------------------------------------------------- runs

def _named(names):
    shown = ', '.join(names[:NAMED_IN_MESSAGE])
    if len(names) > NAMED_IN_MESSAGE:
        shown += ' (and %d more)' % (len(names) - NAMED_IN_MESSAGE)
    return shown


def _real_root(path):
    root = os.path.realpath(path)
    if not os.path.isdir(root):
        raise ManifestError('path: %s is not a directory%s' % (path, '' if os.path.exists(root) else ' (it does not exist)'))
    return root


def _deadline(timeout):
    return time.monotonic() + timeout if timeout else None


def _timed_out(timeout, done, total):
    return ManifestError('hashing did not finish within %d seconds (timeout); %d of %d files to hash were done: '
                         'raise timeout (or 0 for no limit) for a model this large or storage this slow'
                         % (timeout, done, total))


def _outcome(files, size, hashed, hashed_bytes, reused, manifest_sha256, started, cache_path, **lists):
    result = dict(files=files, bytes=size, hashed=hashed, hashed_bytes=hashed_bytes, reused=reused,
                  manifest_sha256=manifest_sha256, seconds=round(time.monotonic() - started, 3), cache=cache_path)
    result.update(lists)
    return replace_undecodable(result)


# Long: one pass over the manifest - its entries, the cache record, the hashing under one deadline, the lists of
# what differs, the record written back - sharing its counters and its clock.
def verify_manifest(path, manifest_path, cache_path, workers, extra_files, timeout, warn, check_mode=False,
                    hasher=None, now_ns=time.time_ns, links_within=None):
    """Check the directory ``path`` against the manifest; return the module's result. ``now_ns`` is the wall clock
    that dates the run in its record (time.time_ns unless a test gives its own); ``links_within`` the directory
    holding ``path`` that its symbolic links may lead into (None: ``path`` itself; see ``real_within``).

    :raises ManifestError: ``links_within`` does not hold the directory; the manifest cannot be read or parsed, lists
        no file or a path leading out of ``links_within``; a file is missing, unreadable or does not match; or
        (``extra_files`` fail) a file is not listed. Its ``extra`` holds the ``mismatched``, ``missing``,
        ``unreadable`` and ``extra`` lists.
    """
    started, started_ns = time.monotonic(), now_ns()
    root = _real_root(path)
    within = real_within(root, links_within)
    data, text = read_manifest(manifest_path)
    manifest_sha256 = hashlib.sha256(data).hexdigest()
    manifest_real = os.path.realpath(manifest_path)
    entries = []
    for name, digest, number in parse_manifest(text, manifest_path):
        real = resolve_entry(root, name, within)
        if real is None:
            raise ManifestError('%s line %d: %r leads out of %s through a symbolic link'
                                % (manifest_path, number, name, _outside(root, within)), manifest_line=number)
        if real == manifest_real:
            warn('%s line %d lists the manifest itself, which cannot hold its own digest: the line is skipped'
                 % (manifest_path, number))
            continue
        entries.append((name, digest, real))
    if not entries:
        raise ManifestError('the manifest %s lists no files: create it with state=created or sha256sum' % manifest_path,
                            manifest_sha256=manifest_sha256)
    record = load_record(cache_path, root, manifest_sha256, warn)
    hasher = hasher or Hasher(workers, _deadline(timeout))
    missing, unreadable, to_hash, keys, digests = [], {}, [], {}, {}
    size = reused = 0
    for name, digest, real in entries:
        try:
            status = os.stat(real)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                missing.append(name)
            else:
                unreadable[name] = _reason(error)
            continue
        if not stat.S_ISREG(status.st_mode):
            unreadable[name] = 'not a regular file (%s)' % _kind(status.st_mode)
            continue
        size += status.st_size
        recorded = record.get(name)
        if recorded is not None and recorded[:3] == file_key(status) and recorded[3] == digest:
            keys[name] = file_key(status)
            digests[name] = digest
            reused += 1
        else:
            to_hash.append((name, real, status.st_size))
    unique = dict((real, file_size) for _name, real, file_size in to_hash)  # two names of one file: hashed once
    try:
        hashed_files = hasher.hash_all(list(unique.items()))
    except HashTimeout as stopped:
        raise _timed_out(timeout, stopped.args[0], len(unique)) from None
    expected = dict((name, digest) for name, digest, _real in entries)
    mismatched = []
    hashed_bytes = sum(file_size for real, file_size in unique.items() if not isinstance(hashed_files[real], OSError))
    for name, real, _file_size in to_hash:
        outcome = hashed_files[real]
        if isinstance(outcome, OSError):
            unreadable[name] = _reason(outcome)
            continue
        if outcome[0] != expected[name]:
            mismatched.append(name)
        else:
            keys[name], digests[name] = outcome[1], outcome[0]
    extra = []
    if extra_files != 'ignore':
        listed = set(real for _name, _digest, real in entries)
        excluded = set([manifest_real, os.path.realpath(cache_path)])
        extra = [name for name, real in sorted(scan_directory(root, excluded, within).items()) if real not in listed]
    lists = dict(mismatched=sorted(mismatched), missing=sorted(missing),
                 unreadable=[dict(path=name, error=unreadable[name]) for name in sorted(unreadable)], extra=extra)
    result = _outcome(len(entries), size, len(unique), hashed_bytes, reused, manifest_sha256, started, cache_path,
                      **lists)
    problems = []
    for kind in ('mismatched', 'missing'):
        if lists[kind]:
            problems.append('%d %s (%s)' % (len(lists[kind]), kind, _named(lists[kind])))
    if unreadable:
        names = sorted(unreadable)
        problems.append('%d unreadable (%s)' % (len(names), _named(['%s: %s' % (name, unreadable[name]) for name in names])))
    if extra and extra_files == 'fail':
        problems.append('%d not in the manifest (%s; extra_files=fail)' % (len(extra), _named(extra)))
    if problems:
        result.pop('seconds')
        raise ManifestError(replace_undecodable('the model directory %s does not match the manifest %s: %s'
                                                % (path, manifest_path, '; '.join(problems))), **result)
    if extra:
        warn('%d files of %s are not in the manifest %s: %s' % (len(extra), path, manifest_path, _named(extra)))
    if not check_mode:
        save_record(cache_path, root, manifest_sha256,
                    dict((name, keys[name] + [digests[name]]) for name, _digest, _real in entries), started_ns, warn)
    return result


def create_manifest(path, manifest_path, cache_path, workers, timeout, warn, check_mode=False, hasher=None,
                    links_within=None):
    """Write the manifest of every file of the directory ``path`` (but hidden ones, the manifest and the record),
    its symbolic links followed within ``links_within`` (None: ``path`` itself); return the module's result with
    ``changed`` and ``diff`` (before and after text). In check mode the files are hashed and nothing is written.
    After a write the record is saved too, so that the next verification reuses it.

    :raises ManifestError: ``links_within`` does not hold the directory, a link leads out of it, the directory has
        no file, a file cannot be read, or the manifest cannot be written.
    """
    started, started_ns = time.monotonic(), time.time_ns()
    root = _real_root(path)
    within = real_within(root, links_within)
    manifest_real = os.path.realpath(manifest_path)
    files = scan_directory(root, set([manifest_real, os.path.realpath(cache_path)]), within)
    if not files:
        raise ManifestError('path: %s has no files to list in a manifest (hidden files are not listed)' % path)
    sizes = {}
    for real in set(files.values()):
        try:
            sizes[real] = os.stat(real).st_size
        except OSError as error:
            raise ManifestError('%s cannot be looked at: %s' % (real, _reason(error)))
    hasher = hasher or Hasher(workers, _deadline(timeout))
    try:
        hashed = hasher.hash_all(list(sizes.items()))
    except HashTimeout as stopped:
        raise _timed_out(timeout, stopped.args[0], len(sizes)) from None
    failed = sorted((name, hashed[real]) for name, real in files.items() if isinstance(hashed[real], OSError))
    if failed:
        raise ManifestError(replace_undecodable('cannot hash %d files of %s: %s' % (
            len(failed), path, _named(['%s: %s' % (name, _reason(error)) for name, error in failed]))),
            unreadable=replace_undecodable([dict(path=name, error=_reason(error)) for name, error in failed]))
    digests = dict((name, hashed[real][0]) for name, real in files.items())
    after = format_manifest(digests)
    after_bytes = after.encode('utf-8', 'surrogateescape')
    try:
        before_bytes = _read_regular(manifest_path)
    except OSError as error:
        if error.errno != errno.ENOENT:
            raise ManifestError('the manifest %s cannot be read: %s' % (manifest_path, _reason(error)))
        before_bytes = None
    changed = before_bytes != after_bytes
    manifest_sha256 = hashlib.sha256(after_bytes).hexdigest()
    if changed and not check_mode:
        _write_atomically(manifest_path, after_bytes)
    if not check_mode:
        save_record(cache_path, root, manifest_sha256,
                    dict((name, hashed[real][1] + [hashed[real][0]]) for name, real in files.items()), started_ns,
                    warn)
    total = sum(sizes[real] for real in files.values())
    result = _outcome(len(files), total, len(sizes), sum(sizes.values()), 0, manifest_sha256, started, cache_path)
    result['changed'] = changed
    result['diff'] = replace_undecodable(dict(
        before='' if before_bytes is None else before_bytes.decode('utf-8', 'surrogateescape'), after=after,
        before_header=manifest_path, after_header=manifest_path))
    return result


def _replace_file(path, data):
    """Write ``data`` to ``path`` atomically (a temporary file beside it, synced, mode 0644, renamed over it); raises
    OSError, leaving no temporary file behind."""
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix='.' + os.path.basename(path) + '.')
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
        temporary = None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _write_atomically(path, data):
    try:
        _replace_file(path, data)
    except OSError as error:
        raise ManifestError('the manifest %s cannot be written: %s (a read-only model directory needs its manifest '
                            'written elsewhere: set manifest)' % (path, _reason(error)))
