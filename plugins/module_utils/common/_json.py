# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""JSON from files and programs the collection does not control, read one way: a message on anything malformed,
hostile or huge, never a traceback nor a value JSON does not have."""

from __future__ import annotations

import json
import re

# Deeper documents are refused before the parser recurses (Python's stops at about 1000 levels with RecursionError).
MAX_DEPTH = 64
# A JSON string: from a double quote to the next one no backslash escapes, or to the end of the text.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"?'
# One compiled scanner per set of characters looked for (outside_strings).
_SCANNERS = {}


class JsonError(ValueError):
    """The text is no JSON document this collection reads; the message says why (never the document)."""


def _refuse_constant(name):
    raise JsonError('%s is not a JSON number' % name)


def _finite_float(text):
    # A number too large for a float (1e400) reads as infinity: a value JSON does not have either.
    value = float(text)
    if value in (float('inf'), float('-inf')):
        raise JsonError('%s is too large for a number' % text)
    return value


def outside_strings(text, characters):
    """Each ``(index, character)`` of ``text`` that is one of ``characters`` and lies outside every JSON string
    (see _STRING), in order: the one scanner of JSON's strings, linear in the text."""
    scanner = _SCANNERS.get(characters)
    if scanner is None:
        scanner = _SCANNERS[characters] = re.compile('%s|[%s]' % (_STRING, re.escape(characters)), re.S)
    for match in scanner.finditer(text):
        if match.group()[0] != '"':
            yield match.start(), match.group()


def _depth(text):
    """The deepest nesting of brackets and braces outside strings, counted in one pass (linear, no recursion)."""
    depth = deepest = 0
    for _index, char in outside_strings(text, '[]{}'):
        if char in '[{':
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest
        else:
            depth -= 1
    return deepest


def loads(data, max_bytes=None, max_depth=MAX_DEPTH, allow_nan=False):
    """The document in ``data`` (str, or UTF-8 bytes). :raises JsonError: when it is larger than ``max_bytes``,
    not UTF-8, nested deeper than ``max_depth``, holds NaN, Infinity or a number too large for a float (unless
    ``allow_nan``: documents this collection wrote from Python, whose readers show them as n/a), or is not JSON."""
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
        return (json.loads(data) if allow_nan
                else json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float))
    except JsonError:
        raise
    except (ValueError, RecursionError) as error:
        raise JsonError(str(error))
