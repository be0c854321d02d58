# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""JSON from files and programs the collection does not control, read one way: a message on anything malformed,
hostile or huge, never a traceback nor a value JSON does not have."""

from __future__ import annotations

import json

# Deeper documents are refused before the parser recurses (Python's stops at about 1000 levels with RecursionError).
MAX_DEPTH = 64


class JsonError(ValueError):
    """The text is no JSON document this collection reads; the message says why (never the document)."""


def _refuse_constant(name):
    raise JsonError('%s is not a JSON number' % name)


def _depth(text):
    """The deepest nesting of brackets and braces outside strings, counted in one pass (linear, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in '[{':
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest
        elif char in ']}':
            depth -= 1
    return deepest


def loads(data, max_bytes=None, max_depth=MAX_DEPTH, allow_nan=False):
    """The document in ``data`` (str, or UTF-8 bytes). :raises JsonError: when it is larger than ``max_bytes``,
    not UTF-8, nested deeper than ``max_depth``, holds NaN or Infinity (unless ``allow_nan``: documents this
    collection wrote from Python, whose readers show them as n/a), or is not JSON."""
    if max_bytes is not None and len(data) > max_bytes:
        raise JsonError('larger than %d bytes' % max_bytes)
    if isinstance(data, bytes):
        try:
            data = data.decode('utf-8')
        except UnicodeDecodeError as error:
            raise JsonError('not UTF-8 text (%s)' % error.reason)
    if _depth(data) > max_depth:
        raise JsonError('nested deeper than %d levels' % max_depth)
    try:
        return json.loads(data) if allow_nan else json.loads(data, parse_constant=_refuse_constant)
    except JsonError:
        raise
    except (ValueError, RecursionError) as error:
        raise JsonError(str(error))
