# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The one safe way this collection reads a file it is given (a certificate, a record, a calibration set, a model's
``config.json``, an environment file, a local fact): only a regular file is opened - a FIFO, a device, a socket or a
directory never is, so that no read blocks on a writer that never comes nor runs until memory is gone - and at most
a bound of bytes is read. Whatever is wrong is an ``UnreadableFile`` naming the file and why. JSON goes through the
collection's one JSON reader (``_json.loads``: depth, NaN and size refused). Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json

# What a file that is not a regular file is, by the file type bits of its mode.
FILE_TYPES = (
    (stat.S_ISDIR, 'a directory'),
    (stat.S_ISFIFO, 'a FIFO (named pipe)'),
    (stat.S_ISCHR, 'a character device'),
    (stat.S_ISBLK, 'a block device'),
    (stat.S_ISSOCK, 'a socket'),
)


class UnreadableFile(Exception):
    """A file that is there but cannot be read as a regular file: ``path`` (as this machine names it) and why."""

    def __init__(self, path, reason):
        super().__init__('%s: %s' % (path, reason))
        self.path = path
        self.reason = reason


def check_regular(path, mode):
    """:raises UnreadableFile: when ``mode`` is not that of a regular file."""
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in FILE_TYPES if test(mode)), 'a special file')
        raise UnreadableFile(path, '%s, not a regular file' % kind)


def read_regular_file(path, max_bytes, what='such a file'):
    """The bytes of the regular file ``path`` (None when nothing is there), the collection's one way to read a file a
    module is given: only a regular file is opened (a FIFO, a device or a directory never is: O_NONBLOCK, then
    fstat), and at most ``max_bytes`` are read. :raises UnreadableFile: naming the file and why (``what`` says what
    it was to be, for the message of a larger one)."""
    try:
        # O_NONBLOCK: should the file be a FIFO (or have become one since a check), opening it waits for no writer.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, 'O_NOCTTY', 0) | getattr(os, 'O_CLOEXEC', 0))
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        try:
            check_regular(path, os.stat(path).st_mode)  # a socket cannot be opened (ENXIO): say what it is
        except OSError:
            pass
        raise UnreadableFile(path, 'cannot be opened: %s' % (error.strerror or error))
    try:
        check_regular(path, os.fstat(descriptor).st_mode)
        chunks = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(descriptor, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise UnreadableFile(path, 'cannot be read: %s' % (error.strerror or error))
    finally:
        os.close(descriptor)
    if size > max_bytes:
        raise UnreadableFile(path, 'larger than %d bytes, not %s' % (max_bytes, what))
    return b''.join(chunks)


def read_existing_file(path, max_bytes, what='such a file'):
    """As :func:`read_regular_file`, for a file that must be there: nothing there is an UnreadableFile too."""
    data = read_regular_file(path, max_bytes, what)
    if data is None:
        raise UnreadableFile(path, 'does not exist')
    return data


def read_text_file(path, max_bytes, what='such a file'):
    """The UTF-8 text (a BOM removed) of the regular file ``path``, which must be there. :raises UnreadableFile:
    as :func:`read_existing_file`, and when the bytes are not UTF-8."""
    data = read_existing_file(path, max_bytes, what)
    try:
        return data.decode('utf-8-sig')
    except UnicodeDecodeError as error:
        raise UnreadableFile(path, 'not UTF-8 text (%s), not %s' % (error.reason, what))


def read_json_file(path, max_bytes, what='such a file', kind=None):
    """The JSON document in the regular file ``path``, which must be there, read with the collection's JSON reader
    (no NaN, no deep nesting); ``kind`` (dict or list) is the type the document must have. :raises UnreadableFile:
    naming the file and why."""
    data = read_existing_file(path, max_bytes, what)
    try:
        document = _json.loads(data)
    except _json.JsonError as error:
        raise UnreadableFile(path, 'not %s: %s' % (what, error))
    if kind is not None and not isinstance(document, kind):
        raise UnreadableFile(path, 'not %s: a JSON %s, not an %s' % (what, json_type(document), json_type(kind())))
    return document


def json_type(value):
    """The JSON name of the type of ``value`` (object, array, string, number, boolean, null), for messages."""
    if isinstance(value, bool):
        return 'boolean'
    if value is None:
        return 'null'
    for python, name in ((dict, 'object'), (list, 'array'), (str, 'string'), ((int, float), 'number')):
        if isinstance(value, python):
            return name
    return type(value).__name__
