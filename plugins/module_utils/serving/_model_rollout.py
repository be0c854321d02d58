# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The weekly update's one decision (playbooks/weekly_update.yml): which model directory under a root is "the new
one" - the newest complete directory, complete meaning it has its manifest (``SHA256SUMS``), every file the manifest
lists is there, and no file of a copy still under way (``*.partial``, ``*.part``, ``*.tmp``, ``*.incomplete``) is in
it; newest by its manifest's modification time (a copy writes the manifest last), then by name.

The model directories are those directly under the root; when the root is a Hugging Face cache of one model (it holds
``snapshots/`` and ``blobs/``), those directly under its ``snapshots/``. Symbolic links are followed while they stay
inside the root, as the kernel follows them (component by component, ``..`` included, at most MAX_LINK_HOPS), so
that a snapshot's ``model.safetensors -> ../../blobs/<sha>`` is the file it names; a link that leads out of the root
is not followed and is reported by name. The root and every listed path are judged normalised (``//data/models``,
``/data/models/.`` and ``/data/models/`` are ``/data/models``). A malformed entry of the listing is reported by its
index and path, and a directory it is in is not complete; nothing raises but a root that is not an absolute path.

Pure: the caller lists the files (``ansible.builtin.find`` with ``file_type: any``), the links' targets (``find -type
l -printf '%p\\0%l\\0'``) and reads the manifests this module names.
"""

from __future__ import annotations

import base64
import binascii
import posixpath

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._model_manifest import (
    MANIFEST_NAME,
    ManifestError,
    parse_manifest,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import number_problem
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._paths import normalise

PARTIAL_SUFFIXES = ('.partial', '.part', '.tmp', '.incomplete')
# Links followed in one resolution at most: Linux's own limit (MAXSYMLINKS), past which it says ELOOP.
MAX_LINK_HOPS = 40
# The Hugging Face cache of one model: its revisions under snapshots/, their files links into blobs/.
HF_SNAPSHOTS = 'snapshots'
HF_BLOBS = 'blobs'
# The kinds of ansible.builtin.find's entries, by its flags; an entry without any flag is a file (file_type: file).
KIND_FLAGS = (('islnk', 'link'), ('isdir', 'dir'), ('isreg', 'file'))
SHOWN = 3
# Seconds since the epoch a modification time may be, either way: any float holds it exactly (a larger integer, which
# no file system gives, would overflow one).
MAX_MTIME = 2 ** 53


def _shown(value, limit=120):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + '...'


def _controls(text):
    return any(ord(char) < 32 or ord(char) == 127 for char in text)


def _bad_path(value, controls=False):
    """Whether ``value`` is no absolute path (with ``controls``, also one with a control character: a name a file
    may have, as sha256sum's escapes show, but not the root nor a directory to serve)."""
    return not isinstance(value, str) or not value.startswith('/') or '\0' in value or (controls and _controls(value))


def _inside(path, root):
    return path == root or path.startswith(root.rstrip('/') + '/')


def _join(root, parts):
    return posixpath.join(root, *parts) if parts else root


class _Listing:
    """The files, directories and links under the root, with the links' targets; malformed input in ``problems``."""

    def __init__(self, root, files, links):
        self.root = root
        self.kinds = {}
        self.mtimes = {}
        self.targets = {}
        self.problems = []
        self.malformed = {}     # path -> the problem of its entry
        if not isinstance(files, (list, tuple)):
            self.problems.append("files must be the list of ansible.builtin.find's files; got %s"
                                 % type(files).__name__)
            files = ()
        for index, item in enumerate(files):
            self._entry(index, item)
        self._links(links)

    def _entry(self, index, item):
        where = 'files[%d]' % index
        if not isinstance(item, dict):
            self.problems.append("%s is not an entry of ansible.builtin.find's files (a dict with path); got %s"
                                 % (where, _shown(item)))
            return
        path = item.get('path')
        if _bad_path(path):
            self.problems.append('%s: path must be an absolute path; got %s' % (where, _shown(path)))
            return
        path = normalise(path)
        if not _inside(path, self.root) or path == self.root:
            return
        where = '%s (%s)' % (where, path)
        mtime = item.get('mtime', 0.0)
        problem = number_problem('mtime', mtime, minimum=-MAX_MTIME, maximum=MAX_MTIME)
        if problem:
            problem = '%s: %s' % (where, problem)
        flags = [(key, item[key]) for key, _kind in KIND_FLAGS if key in item]
        wrong = [key for key, value in flags if not isinstance(value, bool)]
        if wrong:
            problem = problem or '%s: %s must be true or false; got %s' % (where, wrong[0], _shown(item[wrong[0]]))
        kind = 'file' if not flags else next((name for key, name in KIND_FLAGS if item.get(key) is True), 'other')
        if problem:
            self.problems.append(problem)
            self.malformed[path] = problem
            kind = 'malformed'
        self.kinds[path] = kind
        self.mtimes[path] = 0.0 if problem else float(mtime)

    def _links(self, links):
        if links is None or links == '':
            return
        if isinstance(links, str):
            fields = links.split('\0')
            if fields[-1] == '':
                fields.pop()
            if len(fields) % 2:
                self.problems.append("links: the output of find -printf '%%p\\0%%l\\0' comes in pairs of a path and "
                                     "its target; the last field %s has none" % _shown(fields[-1]))
                fields.pop()
            pairs = list(zip(fields[0::2], fields[1::2]))
        elif isinstance(links, dict):
            pairs = list(links.items())
        else:
            self.problems.append("links must be the text of find -printf '%%p\\0%%l\\0' or a dict of link to "
                                 "target; got %s" % type(links).__name__)
            return
        for path, target in pairs:
            if _bad_path(path):
                self.problems.append('links: %s is not an absolute path' % _shown(path))
            elif not isinstance(target, str) or not target or '\0' in target:
                self.problems.append('links: the target of %s must be a non-empty path; got %s'
                                     % (path, _shown(target)))
            else:
                self.targets[normalise(path)] = target

    def resolve(self, path):
        """``path`` (normalised, inside the root) with its symbolic links followed inside the root, as the kernel
        follows them: ``(real path, None)``, or ``(None, why not)`` - a link out of the root, a loop, a link whose
        target is not known."""
        pending = [part for part in path[len(self.root):].split('/') if part]
        parts = []
        hops = 0
        link = None
        while pending:
            part = pending.pop(0)
            if part in ('', '.'):
                continue
            if part == '..':
                if not parts:
                    return None, self._outside(link)
                parts.pop()
                continue
            candidate = _join(self.root, parts + [part])
            if self.kinds.get(candidate) != 'link' and candidate not in self.targets:
                parts.append(part)
                continue
            hops += 1
            if hops > MAX_LINK_HOPS:
                return None, '%s: more than %d symbolic links to follow (a loop)' % (path, MAX_LINK_HOPS)
            target = self.targets.get(candidate)
            if target is None:
                return None, '%s is a symbolic link whose target was not read (links)' % candidate
            link = (candidate, target)
            if target.startswith('/'):
                components = [item for item in target.split('/') if item not in ('', '.')]
                prefix = [item for item in self.root.split('/') if item]
                if components[:len(prefix)] != prefix:
                    return None, self._outside(link)
                parts, pending = [], components[len(prefix):] + pending
            else:
                pending = target.split('/') + pending
        return _join(self.root, parts), None

    def _outside(self, link):
        if link is None:
            return 'a path that leads out of the model root %s' % self.root
        hint = ''
        if posixpath.basename(self.root) == HF_SNAPSHOTS:
            hint = (' (a Hugging Face cache: give its model folder %s, which holds snapshots/ and blobs/, as the root)'
                    % posixpath.dirname(self.root))
        return ('%s is a symbolic link to %s, which leads out of the model root %s: not followed%s'
                % (link[0], link[1], self.root, hint))

    def regular_file(self, path):
        """``(real path, None)`` when ``path`` is a regular file (through links inside the root); else ``(None,
        why)``, ``why`` None when nothing is there."""
        real, reason = self.resolve(path)
        if real is None:
            return None, reason
        kind = self.kinds.get(real)
        if kind == 'file':
            return real, None
        if kind is None:
            return None, None
        if kind == 'malformed':
            return None, self.malformed[real]
        shown = real if real == path else '%s (%s)' % (path, real)
        what = 'a directory' if kind == 'dir' else 'a FIFO, device or socket'
        return None, '%s is %s, not a regular file' % (shown, what)


def _base(listing):
    """The folder the model directories are in: the root, or its snapshots/ when it is a Hugging Face cache."""
    snapshots = _join(listing.root, [HF_SNAPSHOTS])
    if listing.kinds.get(snapshots) == 'dir' and listing.kinds.get(_join(listing.root, [HF_BLOBS])) == 'dir':
        return snapshots
    return listing.root


def _candidates(listing, base):
    """The model directories under ``base`` ({path: kind}) and the paths each holds."""
    directories = {}
    held = {}
    for path, kind in listing.kinds.items():
        if not _inside(path, base) or path == base:
            continue
        relative = path[len(base):].lstrip('/').split('/')
        directory = _join(base, relative[:1])
        if len(relative) == 1:
            directories[directory] = kind
        else:
            directories.setdefault(directory, 'dir')
            held.setdefault(directory, []).append(path)
    return dict((path, kind) for path, kind in directories.items() if kind in ('dir', 'link')), held


def _manifest_text(value, directory):
    """The text of a manifest as given (text, or ansible.builtin.slurp's result); (None, why) otherwise."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and isinstance(value.get('content'), str):
        if value.get('encoding', 'base64') != 'base64':
            return None, 'its %s was read with encoding %s, not base64' % (MANIFEST_NAME, _shown(value.get('encoding')))
        try:
            data = base64.b64decode(value['content'].encode('ascii'), validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            return None, 'its %s was read as something that is not base64' % MANIFEST_NAME
        return data.decode('utf-8', 'surrogateescape'), None
    return None, ('its %s was given as %s, not its text (nor ansible.builtin.slurp\'s result)'
                  % (MANIFEST_NAME, type(value).__name__))


def _judge(listing, directory, held, manifests):
    """``(reason or None, manifest path to read or None, manifest mtime)`` of one model directory."""
    names = [path[len(directory) + 1:] for path in held]
    partial = sorted(name for name in names if name.lower().endswith(PARTIAL_SUFFIXES))
    malformed = sorted(path for path in held if path in listing.malformed)
    if posixpath.basename(directory).startswith('.'):
        return 'a hidden directory (a copy under way)', None, 0.0
    if _controls(directory):
        return 'a name with a control character, which no service is given', None, 0.0
    if malformed:
        return 'a malformed entry of the listing: %s' % listing.malformed[malformed[0]], None, 0.0
    if partial:
        return 'a copy under way: %s' % ', '.join(partial[:SHOWN]), None, 0.0
    manifest, why = listing.regular_file(_join(directory, [MANIFEST_NAME]))
    if manifest is None:
        return why or 'no %s' % MANIFEST_NAME, None, 0.0
    mtime = listing.mtimes.get(manifest, 0.0)
    if manifests is None:
        return '%s not read yet' % MANIFEST_NAME, manifest, mtime
    if directory not in manifests:
        return 'its %s was not read' % MANIFEST_NAME, manifest, mtime
    text, why = _manifest_text(manifests[directory], directory)
    if text is None:
        return why, manifest, mtime
    try:
        entries = parse_manifest(text, _join(directory, [MANIFEST_NAME]))
    except ManifestError as error:
        return str(error), manifest, mtime
    if not entries:
        return '%s lists no file' % MANIFEST_NAME, manifest, mtime
    absent, refused = [], []
    for name, _digest, _line in entries:
        real, why = listing.regular_file(_join(directory, [name]))
        if real is None:
            (refused if why else absent).append(why or name)
    reasons = []
    if refused:
        reasons.append('%d file(s) of its %s not usable: %s' % (len(refused), MANIFEST_NAME, '; '.join(refused[:SHOWN])))
    if absent:
        reasons.append('%d file(s) of its %s missing: %s' % (len(absent), MANIFEST_NAME, ', '.join(absent[:SHOWN])))
    return '; '.join(reasons) or None, manifest, mtime


def choose_model_dir(root, files, manifests=None, links=None):
    """The newest complete model directory under ``root``.

    ``files``: everything under ``root``, as ``{path, mtime, isreg, isdir, islnk}`` (what ansible.builtin.find returns
    with recurse and file_type any; entries without the flags are regular files); ``links``: each symbolic link's
    target, the text ``find -printf '%p\\0%l\\0'`` prints or a dict link -> target; ``manifests``: directory -> its
    manifest (the text, or ansible.builtin.slurp's result), for the directories of ``manifests`` in the result
    (None: not read yet).

    Returns ``chosen`` (the directory, or None when no directory is complete), ``directories`` (each directory's
    ``{path, complete, reason, mtime}``, the complete ones first, newest first, then the others by name),
    ``manifests`` (directory -> the regular file its manifest is, to read) and ``problems`` (each malformed entry of
    the input, by index and path).

    :raises ValueError: when ``root`` is not an absolute path without control characters.
    """
    if _bad_path(root, controls=True):
        raise ValueError('root must be the absolute path, without control characters, of the folder the model '
                         'directories are in; got %s' % _shown(root))
    listing = _Listing(normalise(root), files, links)
    problems = listing.problems
    if manifests is not None and not isinstance(manifests, dict):
        problems.append('manifests must be a dict of directory to its %s; got %s'
                        % (MANIFEST_NAME, type(manifests).__name__))
        manifests = {}
    if manifests is not None:
        for key in manifests:
            if _bad_path(key):
                problems.append('manifests: %s is not the absolute path of a model directory' % _shown(key))
        manifests = dict((normalise(key), value) for key, value in manifests.items() if not _bad_path(key))
    base = _base(listing)
    directories, held = _candidates(listing, base)
    report = []
    to_read = {}
    for directory in sorted(directories):
        if directories[directory] == 'link':
            real, why = listing.resolve(directory)
            reason = why or ('a symbolic link to %s, which is judged under its own name' % real)
            report.append({'path': directory, 'complete': False, 'reason': reason, 'mtime': 0.0})
            continue
        reason, manifest, mtime = _judge(listing, directory, sorted(held.get(directory, ())), manifests)
        if manifest is not None:
            to_read[directory] = manifest
        report.append({'path': directory, 'complete': reason is None, 'reason': reason, 'mtime': mtime})
    complete = sorted((entry for entry in report if entry['complete']),
                      key=lambda entry: (entry['mtime'], entry['path']), reverse=True)
    others = [entry for entry in report if not entry['complete']]
    return {'chosen': complete[0]['path'] if complete else None, 'directories': complete + others,
            'manifests': to_read, 'problems': problems}
