# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The weekly update's one decision (playbooks/weekly_update.yml): which model directory under a root is "the new
one" - the newest complete directory, complete meaning it has its manifest (``SHA256SUMS``), every file the manifest
lists is there, and no file of a copy still under way (``*.partial``, ``*.part``, ``*.tmp``, ``*.incomplete``) is in
it; newest by its manifest's modification time (a copy writes the manifest last), then by name. Pure: the caller
lists the files and reads the manifests.
"""

from __future__ import annotations

import os

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._model_manifest import (
    MANIFEST_NAME,
    ManifestError,
    parse_manifest,
)

PARTIAL_SUFFIXES = ('.partial', '.part', '.tmp', '.incomplete')


def _directory_of(root, path):
    """The first folder under ``root`` that ``path`` lies in, and the path inside it; (None, None) when none."""
    relative = os.path.relpath(path, root)
    parts = relative.split(os.sep)
    if relative.startswith('..') or len(parts) < 2:
        return None, None
    return os.path.join(root, parts[0]), '/'.join(parts[1:])


def choose_model_dir(root, files, manifests):
    """The newest complete model directory directly under ``root``.

    ``files``: every file under ``root``, as ``{path, mtime}`` (what ansible.builtin.find returns with recurse);
    ``manifests``: directory -> the text of its manifest, for the directories that have one.
    Returns ``chosen`` (the directory, or None when no directory is complete) and ``directories`` (each directory's
    ``{path, complete, reason}``, newest first among the complete ones, then the others by name).
    """
    root = os.path.normpath(str(root))
    listed = {}
    for item in files or ():
        directory, inside = _directory_of(root, os.path.normpath(str(item['path'])))
        if directory is not None:
            listed.setdefault(directory, {})[inside] = float(item.get('mtime') or 0)
    report = []
    for directory in sorted(listed):
        present = listed[directory]
        reason = None
        partial = sorted(name for name in present if name.lower().endswith(PARTIAL_SUFFIXES))
        if os.path.basename(directory).startswith('.'):
            reason = 'a hidden directory (a copy under way)'
        elif partial:
            reason = 'a copy under way: %s' % ', '.join(partial[:3])
        elif MANIFEST_NAME not in present or directory not in (manifests or {}):
            reason = 'no %s' % MANIFEST_NAME
        else:
            try:
                entries = parse_manifest(manifests[directory], os.path.join(directory, MANIFEST_NAME))
            except ManifestError as error:
                reason = str(error)
            else:
                absent = [name for name, _digest, _line in entries if name not in present]
                if not entries:
                    reason = '%s lists no file' % MANIFEST_NAME
                elif absent:
                    reason = '%d file(s) of its %s missing: %s' % (len(absent), MANIFEST_NAME, ', '.join(absent[:3]))
        report.append({'path': directory, 'complete': reason is None, 'reason': reason,
                       'mtime': present.get(MANIFEST_NAME, 0.0)})
    complete = sorted((entry for entry in report if entry['complete']),
                      key=lambda entry: (entry['mtime'], entry['path']), reverse=True)
    others = [entry for entry in report if not entry['complete']]
    return {'chosen': complete[0]['path'] if complete else None, 'directories': complete + others}
