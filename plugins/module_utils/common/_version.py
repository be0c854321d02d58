# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Ordering of the version strings Huawei and the vllm-ascend project print: NPU driver ``26.0.RC1``, ``25.5``,
``24.1.rc3.7``, ``25.0.rc1.b010``; firmware ``7.1.0.11.220``; CANN ``8.5.1``, ``8.3.RC2``, ``8.0.T63``; vllm-ascend
``v0.23.0``; torch_npu ``2.10.0.post4``; vLLM ``0.9.1+empty``. Pure functions, standard library only.

How a version is read (case-insensitive, surrounding blanks ignored):

* a leading ``v`` and a local part after ``+`` (``+empty``, ``+cpu``) are dropped;
* the rest splits at ``.``, ``-`` and ``_``; the leading numbers are the release, compared numerically with
  trailing zeros ignored (``25.5`` equals ``25.5.0``, ``24.1.0.rc1`` equals ``24.1.rc1``);
* a pre-release tag follows: ``alpha`` < ``beta`` < ``t`` (Huawei's test builds) < ``rc``, each with an optional
  number (``rc1``, ``RC2``, ``T63``), and any pre-release sorts before the release itself (``24.1.rc1`` <
  ``24.1.rc3`` < ``24.1`` = ``24.1.0``; ``8.0.T63`` < ``8.0.RC1`` < ``8.0.0``);
* then ``postN`` (torch_npu), after the release it follows (``2.7.1`` < ``2.7.1.post1``);
* a PEP 440 tag may be glued to the number before it (``0.13.0rc3`` is ``0.13.0.rc3``), and ``devN`` (a
  development release) sorts before what it develops (``3.2.0.dev20260322`` < ``3.2.0rc1`` < ``3.2.0``;
  ``2.5.1.post1.dev20250619`` < ``2.5.1.post1``);
* then build numbers: numbers, or ``b``/``build`` and a number (``.7`` of ``24.1.rc3.7``, ``.b010`` of
  ``25.0.rc1.b010``, ``.B020`` of ``8.0.T63.B020``), compared by their numbers: a build sorts after the same
  version without one (``24.1.rc3`` < ``24.1.rc3.7`` < ``24.1.rc4``). A ``b`` is always Huawei's build number,
  never a beta (spell that ``beta``).

Anything else (``V100R001C15``, ``24.1.spc1``, ``8.0.0~beta``, an empty string) is not a version:
``parse_ascend_version`` raises ``ValueError`` with a sentence naming the text, so callers can report it (or
treat the order as unknown) instead of comparing wrongly. ``version_sort_key`` orders text that may not be a
version (directory names) without raising.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r'^(?P<letters>[a-z]*)(?P<number>\d*)$')
_GLUED = re.compile(r'^(\d+)((?:alpha|beta|rc|post|dev)\d*)$')
# Pre-release tags and their rank; a release without one ranks above them all.
_PRE_RELEASE_RANKS = {'alpha': 0, 'beta': 1, 't': 2, 'rc': 3}
_RELEASE_RANK = 9
_DEV_RANK = -1


def _split(text):
    if not isinstance(text, str):
        raise ValueError('%r is not a version: expected a string such as 24.1.RC1' % (text,))
    cleaned = text.strip().lower()
    if cleaned.startswith('v') and cleaned[1:2].isdigit():
        cleaned = cleaned[1:]
    cleaned = cleaned.split('+', 1)[0]
    tokens = []
    for token in re.split(r'[._-]', cleaned):
        # PEP 440 glues a tag to the number before it (0.13.0rc3, 1.0dev2): read it as 0.13.0.rc3.
        glued = _GLUED.match(token)
        tokens.extend(glued.groups() if glued else (token,))
    if not cleaned or not tokens[0].isdigit():
        raise ValueError('%r is not a version: it must start with a number, as in 24.1.RC1 or 8.5.1' % (text,))
    return tokens


def parse_ascend_version(text):
    """Return a sort key (a tuple) for the version ``text``; raise ValueError naming ``text`` if it is not one."""
    tokens = _split(text)
    release = []
    while tokens and tokens[0].isdigit():
        release.append(int(tokens.pop(0)))
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = (_RELEASE_RANK, 0)
    post = -1
    # A development release (PEP 440 devN) sorts before what it develops: 3.2.0.dev1 < 3.2.0rc1, and
    # 2.5.1.post1.dev2 < 2.5.1.post1.
    dev = (1, 0)
    builds = []
    for token in tokens:
        match = _TOKEN.match(token)
        if not match or not token:
            raise ValueError('%r is not a version: %r is neither a number nor a tag such as rc1, post2 or b010'
                             % (text, token))
        letters, number = match.group('letters'), int(match.group('number') or 0)
        if letters == 'dev' and dev == (1, 0) and not builds:
            if pre[0] == _RELEASE_RANK and post < 0:
                pre = (_DEV_RANK, number)
            else:
                dev = (0, number)
            continue
        if dev != (1, 0) and letters:
            raise ValueError('%r is not a version: %r follows a development release tag' % (text, token))
        if pre[0] == _RELEASE_RANK and post < 0 and not builds and letters in _PRE_RELEASE_RANKS:
            pre = (_PRE_RELEASE_RANKS[letters], number)
        elif letters == 'post' and post < 0 and not builds:
            post = number
        elif letters in ('', 'b', 'build') or (letters in _PRE_RELEASE_RANKS and pre[0] != _RELEASE_RANK):
            builds.append(number)
        else:
            raise ValueError('%r is not a version: %r is neither a number nor a tag such as rc1, post2 or b010'
                             % (text, token))
    return (tuple(release), pre, post, dev, tuple(builds))


def is_ascend_version(text):
    """Whether ``text`` reads as a version (see parse_ascend_version)."""
    try:
        parse_ascend_version(text)
    except ValueError:
        return False
    return True


# Written as a host writes it: numbers and tags joined by single dots, starting with a number, nothing else. The
# parser reads more (blanks, v24.1, 24.1-rc1, +local) but a role compares the text itself with the host's files
# and puts it in commands, so only what needs no reading-around passes. Huawei never glues a tag to a number
# (24.1.0rc1), which the parser reads the PEP 440 way (vllm-ascend 0.13.0rc3).
_AS_WRITTEN = re.compile(r'[0-9]+(\.([0-9]+|[A-Za-z]+[0-9]*))+\Z')


def is_written_ascend_version(value):
    """Whether ``value`` is a version string as Huawei writes them (24.1.rc1, 7.5.0.3.220, 8.1.RC1, 25.0.rc1.b010): the
    ascend_version test, and the roles' checks of a version they compare with a host's files or put in commands."""
    return isinstance(value, str) and _AS_WRITTEN.match(value) is not None and is_ascend_version(value)


def version_sort_key(text):
    """A sort key for text that may not be a version (such as a directory name): versions in version order,
    after every text that is not one (those in lower-case text order). Never raises."""
    try:
        return (1, parse_ascend_version(text), '')
    except ValueError:
        return (0, (), str(text).lower())


def compare_ascend_versions(left, right):
    """Return -1, 0 or 1 as version ``left`` is older than, the same as or newer than ``right``.

    Raises ValueError (naming the text) when either is not a version.
    """
    left_key, right_key = parse_ascend_version(left), parse_ascend_version(right)
    return (left_key > right_key) - (left_key < right_key)


def version_in_range(version, low, high):
    """Whether ``low`` <= ``version`` <= ``high``.

    A ``high`` ending in a dot (``23.0.rc3.``, as firmware version.info writes) also admits every version that
    starts with it (``23.0.rc3.1``). Raises ValueError (naming the text) when a value is not a version.
    """
    if compare_ascend_versions(version, low) < 0:
        return False
    if high.endswith('.'):
        prefix = high.rstrip('.')
        if compare_ascend_versions(version, prefix) <= 0:
            return True
        tokens, bound = _normal_tokens(version), _normal_tokens(prefix)
        return tokens[:len(bound)] == bound
    return compare_ascend_versions(version, high) <= 0


def _normal_tokens(text):
    return [str(int(token)) if token.isdigit() else token for token in _split(text)]
