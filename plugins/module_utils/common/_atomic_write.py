# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The one way this collection's modules write a whole file: a temporary file beside it, then AnsibleModule's
atomic_move, so that a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
import tempfile


def write_atomically(module, path, data, mode=0o644):
    """Write ``data`` (bytes) to ``path`` (a symbolic link: its target) atomically, creating its directory (0755)
    when missing. A new file gets ``mode`` (0644 unless told; set before any byte is written, and again after
    atomic_move, which gives a new file the umask's mode); an existing one keeps its owner, group, mode and SELinux
    context (atomic_move). OSError when the directory or the file cannot be written."""
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    existed = os.path.exists(target)
    handle, temporary = tempfile.mkstemp(prefix='.%s.' % os.path.basename(target), dir=directory)
    try:
        if not existed:
            os.chmod(temporary, mode)
        with os.fdopen(handle, 'wb') as out:
            out.write(data)
        module.atomic_move(temporary, target)
        if not existed:
            os.chmod(target, mode)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
