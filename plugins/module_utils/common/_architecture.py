# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Machine architecture names: ``uname -m``, Huawei's package file names (``linux-aarch64``, ``linux-x86_64``) and
package metadata (Debian's ``arm64``, ``amd64``) spell the two architectures Ascend packages exist for in several
ways; the collection compares them as ``aarch64`` and ``x86_64``.
"""

from __future__ import annotations

import platform

ARCH_ALIASES = {'aarch64': 'aarch64', 'arm64': 'aarch64', 'x86_64': 'x86_64', 'x86-64': 'x86_64', 'amd64': 'x86_64'}
# What package metadata says of a package built for every architecture.
NO_ARCH = ('all', 'noarch', 'any')


def normalise_arch(name):
    """``aarch64`` or ``x86_64`` for any spelling of them (case and surrounding blanks ignored); None for no name
    or "any architecture" (``all``, ``noarch``, ``any``); any other name in lower case."""
    name = (name or '').strip().lower()
    if not name or name in NO_ARCH:
        return None
    return ARCH_ALIASES.get(name, name)


def host_architecture():
    """This machine's architecture, normalised."""
    return normalise_arch(platform.machine())
