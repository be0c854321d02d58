# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The collection's module_utils that programs need: every file they import, directly or through each other, with the
``__init__.py`` of each package on the way, read from the source (``ast``) and never imported. The roles that ship
module_utils to a host, to run there without Ansible, copy exactly these (lookup
kunpeng_ascend.vllm.module_utils_closure). Standard library only.
"""

from __future__ import annotations

import ast
import os

PACKAGE = 'ansible_collections.kunpeng_ascend.vllm.plugins.module_utils'


def imported_names(tree):
    """(line, full name, whether it must exist) of each name below PACKAGE that the parsed module ``tree`` imports,
    and (line, None, True) for a relative import. ``from X import a`` gives X, which must exist, and X.a, which is a
    module or a name inside X."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            yield node.lineno, None, True
            continue
        if isinstance(node, ast.Import):
            names = [(alias.name, True) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module, True)] + [('%s.%s' % (node.module, alias.name), False) for alias in node.names]
        else:
            continue
        for name, required in names:
            if name.startswith(PACKAGE + '.'):
                yield node.lineno, name, required


def _imports(path):
    """The collection's module_utils ``path`` imports: (the parts of the name below PACKAGE, whether it must exist)."""
    with open(path, 'rb') as handle:
        tree = ast.parse(handle.read(), filename=path)
    found = []
    for line, name, required in imported_names(tree):
        if name is None:
            raise ValueError('%s, line %d: a relative import, which is not followed (import by the full name)'
                             % (path, line))
        found.append((name[len(PACKAGE) + 1:].split('.'), required))
    return found


def _files_of(module_utils_dir, parts, required, importer):
    """The file of the module ``parts`` (its ``.py``, or a package's ``__init__.py``) and the ``__init__.py`` of each
    package above it, relative to ``module_utils_dir``; none for a name that is no module and need not be one, or for
    a namespace package."""
    for candidate in ('/'.join(parts) + '.py', '/'.join(parts + ['__init__.py'])):
        if os.path.isfile(os.path.join(module_utils_dir, candidate)):
            break
    else:
        # A folder without __init__.py is a namespace package: nothing to ship for it.
        if required and not os.path.isdir(os.path.join(module_utils_dir, *parts)):
            raise ValueError('%s imports %s.%s, which is no file under %s'
                             % (importer, PACKAGE, '.'.join(parts), module_utils_dir))
        return []
    packages = ['/'.join(parts[:depth] + ['__init__.py']) for depth in range(1, len(parts))]
    return [candidate] + [init for init in packages if os.path.isfile(os.path.join(module_utils_dir, init))]


def import_closure(module_utils_dir, starts):
    """The sorted paths, relative to ``module_utils_dir`` (the collection's plugins/module_utils), of every file of it
    that the files ``starts`` import, directly or transitively, and of the ``__init__.py`` of their packages.
    ValueError names a file that imports a module_utils that does not exist, or imports relatively."""
    found, todo = set(), list(starts)
    while todo:
        importer = todo.pop()
        for parts, required in _imports(importer):
            for relative in _files_of(module_utils_dir, parts, required, importer):
                if relative not in found:
                    found.add(relative)
                    todo.append(os.path.join(module_utils_dir, relative))
    return sorted(found)
