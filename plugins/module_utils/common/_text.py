# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The text a module returns: valid UTF-8 whatever bytes a tool printed or a directory name holds, and messages cut
to a length a task result can carry. Standard library only.
"""

from __future__ import annotations

# How many characters of one warning are kept.
MAX_WARNING_CHARS = 500


def shorten(text, limit=MAX_WARNING_CHARS):
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return '%s... (%d characters in all)' % (text[:limit], len(text))


def texts_in(value):
    """Every string in ``value`` (dict keys and values, list and tuple items), nested; keys that are not strings as
    their str()."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from texts_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from texts_in(item)


def replace_undecodable(value):
    """``value`` (str, or dicts and lists of them) with valid UTF-8 text only: bytes of a file or directory name
    that are not UTF-8 (which Python keeps as lone surrogates) become U+FFFD, as file contents do when read;
    ansible-core 2.19's controller refuses a whole task result that holds one such string."""
    if isinstance(value, dict):
        return {replace_undecodable(key): replace_undecodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [replace_undecodable(item) for item in value]
    if not isinstance(value, str):
        return value
    try:
        raw = value.encode('utf-8', 'surrogateescape')
    except UnicodeEncodeError:
        raw = value.encode('utf-8', 'replace')  # a surrogate that stands for no byte
    return raw.decode('utf-8', 'replace')
