# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The rule of a package source, once: what npu_driver, cann, container_runtime and package_fetch accept as the place
a package comes from (exactly one of src, path or url; url with a full-length checksum), checked before anything changes.

Pure: no AnsibleModule. The filter ``package_source_problems`` (plugins/filter/package_source.py) calls it.
"""

from __future__ import annotations

import json
import posixpath
import re
from urllib.parse import urlsplit

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import mask_url

# What each field accepts: a whole-value pattern (\Z: a trailing newline must not pass) that admits no control
# character, and its wording for the message.
FIELDS = {
    'src': (re.compile(r'[^\x00-\x1f\x7f]*[^/\x00-\x1f\x7f]\Z'),
            'a file on the controller (a path not ending in /) without control characters'),
    'path': (re.compile(r'/[^\x00-\x1f\x7f]*[^/\x00-\x1f\x7f]\Z'),
             'an absolute path of a file on the host (not ending in /) without control characters'),
    'url': (re.compile(r'(https?|ftp|file)://[^\s\x00-\x1f\x7f]+\Z'),
            'an http, https, ftp or file URL of a file, without spaces or control characters'),
    # A package runs as root: only a collision-resistant digest at its full length (no md5, sha1 or a cut digest).
    'checksum': (re.compile(r'(sha256:[0-9A-Fa-f]{64}|sha384:[0-9A-Fa-f]{96}|sha512:[0-9A-Fa-f]{128})\Z'),
                 'sha256:<64 hex digits> (or sha384 or sha512 at full length; md5 and sha1 are refused)'),
}
SOURCE_KEYS = ('src', 'path', 'url')
_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_.]*\Z')
_DEST_DIR = re.compile(r'/[^\x00-\x1f\x7f]*\Z')


def _json(value):
    return json.dumps(value, sort_keys=True)


def _shown(source):
    if isinstance(source, dict) and isinstance(source.get('url'), str):
        return dict(source, url=mask_url(source['url']))
    return source


def _url_names_file(url):
    try:
        return posixpath.basename(urlsplit(url).path) != ''
    except ValueError:
        return False


def source_problems(name, source):
    """The problems of one package source ``source`` that the variable ``name`` holds; [] when it is good."""
    if not isinstance(name, str) or not _NAME.match(name):
        return ['package_fetch_source_name must be a variable name (letters, digits, _ and .); got %s' % _json(name)]
    given = [key for key in SOURCE_KEYS if isinstance(source, dict) and key in source]
    checksum = source.get('checksum') if isinstance(source, dict) else None
    if (not isinstance(source, dict) or set(source) - set(FIELDS) or len(given) != 1
            or ('url' in source and not (isinstance(checksum, str) and checksum))):
        return ['%s must be a dict with exactly one of src (a file on the controller), path (a file on the host) or url, and'
                ' no other key than checksum; %s.checksum (for example "sha256:<hex>") is required with %s.url; got %s'
                % (name, name, name, _json(_shown(source)))]
    problems = []
    for key, value in source.items():
        pattern, accepts = FIELDS[key]
        if not isinstance(value, str) or not pattern.match(value) or (key == 'url' and not _url_names_file(value)):
            shown = mask_url(value) if key == 'url' and isinstance(value, str) else value
            problems.append('%s.%s must be %s; got %s' % (name, key, accepts, _json(shown)))
    return problems


def sources_problems(sources, dest_dir=None, dest_dir_name='package_fetch_dest_dir'):
    """The problems of the package sources ``sources`` (pairs of variable name and source, in order), and of the
    directory ``dest_dir`` the copied and downloaded ones go to, when given."""
    problems = []
    for name, source in sources:
        problems.extend(source_problems(name, source))
    if dest_dir is not None and not (isinstance(dest_dir, str) and _DEST_DIR.match(dest_dir)):
        problems.append('%s must be an absolute path without control characters; got %s' % (dest_dir_name, _json(dest_dir)))
    return problems
