# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The one masking rule of the collection: what a module, a filter or a role prints never shows a secret. A secret is
a value the caller names (an API key, a password) or the user and password of any URL in the text
(``scheme://user:password@host``), wherever the URL stands in a message. :func:`url_secrets` gives the passwords of
the URLs in a value so that a module adds them to its no-log values, which Ansible then masks in the invocation's
arguments as well.
Standard library only.
"""

from __future__ import annotations

import json
import re

from urllib.parse import unquote, urlsplit

MASK = '********'
# A URL's user information: up to the last @ before the end of the host (a path, a query, a fragment or a blank), as
# urlsplit reads it; a password may hold @, :, quotes and backslashes (which repr() doubles). Where a message quotes
# two URLs side by side this may mask more than the user information: never less.
_URL_USERINFO = re.compile(r'([A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#<>]*)@')
# The broadest reading of one value given as a URL or an address: anything before its last @.
_ANY_USERINFO = re.compile(r'\s*(?:[A-Za-z][A-Za-z0-9+.-]*://)?(.*)@', re.S)


def url_secrets(text):
    """Every password a URL or address in ``text`` may carry (each as written and URL-decoded, as a client sends it),
    for a module's no-log values and for masking a value the user gave as a URL, longest first; [] for anything but
    a str. Three readings, so that no spelling escapes: the user information of every URL in the text, the password
    urlsplit reads (it may hold a blank or an angle bracket, where the first reading stops), and what stands after a
    ``:`` before the last ``@`` (after a scheme's ``://`` if any: a password holding a ``/``, or ``user:pw@host``
    without a scheme, which no URL parser reads as credentials). A user name alone is no secret."""
    if not isinstance(text, str):
        return []
    found = set()
    for match in _URL_USERINFO.finditer(text):
        userinfo = match.group(2)
        if ':' in userinfo:
            found.add(userinfo.split(':', 1)[1])
    try:
        found.add(urlsplit(text).password or '')
    except ValueError:
        pass
    broad = _ANY_USERINFO.match(text)
    if broad and ':' in broad.group(1):
        found.add(broad.group(1).split(':', 1)[1])
    found.update([unquote(secret) for secret in found])
    return sorted((secret for secret in found if secret), key=len, reverse=True)


def mask_text(text, secrets=()):
    """``text`` with every URL's user information and every one of ``secrets`` replaced by MASK."""
    text = _URL_USERINFO.sub(lambda match: match.group(1) + MASK + '@', text)
    for secret in sorted((secret for secret in secrets if secret), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def mask(value, *secrets):
    """``value`` (a str, or dicts, lists and tuples of them) as it may be shown: every URL's user information and
    every one of ``secrets`` (None and empty ones ignored) replaced by MASK, in keys and values alike."""
    secrets = tuple(secret for secret in secrets if isinstance(secret, str) and secret)
    if isinstance(value, dict):
        return {mask(key, *secrets): mask(item, *secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask(item, *secrets) for item in value]
    if isinstance(value, str):
        return mask_text(value, secrets)
    return value


def shown_json(value):
    """``value`` as a message quotes it, in the JSON the roles' messages use (to_json's form, keys in their order),
    every URL's user information masked."""
    return json.dumps(mask(value), default=str)


def mask_url(url):
    """The URL as a message may show it: its user and password replaced by MASK."""
    return mask_text(url)


def shown_url(text):
    """``text`` (a URL or an address a user gave) as a message may quote it (repr): its passwords masked; when an
    ``@`` is left that the mask did not account for (credentials in a spelling no rule reads), nothing of it is
    quoted."""
    if not isinstance(text, str):
        return repr(text)
    shown = mask_text(text, url_secrets(text))
    if '@' in shown.replace(MASK + '@', ''):
        return '(not shown: it holds an @, as user:password@host does)'
    return repr(shown)
