# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The layers of plugins/module_utils (docs/architecture.md), lowest first: common < ascend < stack < serving <
operations. Every file lives in a layer's folder; each layer is a package whose __init__.py docstring says what
lives there and what it may import; a file imports the collection's module_utils of its own layer and the layers
below it only, by their full name (read from the source with ast: an import inside a function counts too)."""

from __future__ import annotations

import ast
import os

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._import_closure import PACKAGE, imported_names
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import TESTS

MODULE_UTILS = os.path.join(os.path.dirname(TESTS), 'plugins', 'module_utils')
LAYERS = ('common', 'ascend', 'stack', 'serving', 'operations')


def _imported_layers(tree):
    """(line, the collection module_utils name imported, the layer it names) for each import of the module_utils, read
    by the closure's own reader (a ``from X import a`` once, as X); (line, None, None) for a relative import."""
    seen = set()
    for line, name, dummy in imported_names(tree):
        if name is None:
            yield line, None, None
        elif (line, name.rsplit('.', 1)[0]) not in seen:
            seen.add((line, name))
            yield line, name, name[len(PACKAGE) + 1:].split('.')[0]


def layer_problems(module_utils_dir):
    """What breaks the layering of the module_utils under ``module_utils_dir``, one message each."""
    problems = []
    for name in sorted(os.listdir(module_utils_dir)):
        if name not in LAYERS + ('__pycache__',) or not os.path.isdir(os.path.join(module_utils_dir, name)):
            problems.append('%s is outside a layer: each file lives in the folder of one of %s'
                            % (name, ', '.join(LAYERS)))
    for rank, layer in enumerate(LAYERS):
        init = os.path.join(module_utils_dir, layer, '__init__.py')
        if not os.path.isfile(init):
            problems.append('%s/__init__.py is missing: it says what lives in the layer and what it may import' % layer)
        else:
            with open(init, encoding='utf-8') as handle:
                if not ast.get_docstring(ast.parse(handle.read())):
                    problems.append('%s/__init__.py has no docstring: it says what lives in the layer and what it may '
                                    'import' % layer)
        for folder, dummy, files in sorted(os.walk(os.path.join(module_utils_dir, layer))):
            for name in sorted(files):
                if not name.endswith('.py'):
                    continue
                path = os.path.join(folder, name)
                where = os.path.relpath(path, module_utils_dir)
                with open(path, encoding='utf-8') as handle:
                    tree = ast.parse(handle.read(), filename=path)
                for line, imported, target in _imported_layers(tree):
                    if imported is None:
                        problems.append('%s:%d: a relative import (import the collection\'s module_utils by their full '
                                        'name)' % (where, line))
                    elif target not in LAYERS:
                        problems.append('%s:%d: %s is in no layer' % (where, line, imported))
                    elif LAYERS.index(target) > rank:
                        problems.append('%s:%d: layer %s imports %s of the higher layer %s'
                                        % (where, line, layer, imported, target))
    return problems


def test_the_module_utils_keep_to_their_layers():
    problems = layer_problems(MODULE_UTILS)
    assert not problems, '\n'.join(problems)


def test_an_upward_import_a_file_outside_the_layers_and_a_layer_without_docstring_are_reported(tmp_path):
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
        (tmp_path / layer / '__init__.py').write_text('"""Layer %s."""\n' % layer, encoding='utf-8')
    (tmp_path / 'common' / '_low.py').write_text(
        'import os\n\n\ndef later():\n    from %s.serving._high import plan\n    return plan\n' % PACKAGE, encoding='utf-8')
    (tmp_path / 'serving' / '_high.py').write_text(
        'from %s.common import _low\nfrom %s.stack._middle import x\nfrom %s import operations\n'
        'from .._low import y\nimport %s._flat\n' % (PACKAGE, PACKAGE, PACKAGE, PACKAGE), encoding='utf-8')
    (tmp_path / 'stack' / '__init__.py').write_text('# no docstring\n', encoding='utf-8')
    (tmp_path / '_flat.py').write_text('', encoding='utf-8')
    (tmp_path / 'ascend' / '__init__.py').unlink()
    assert layer_problems(str(tmp_path)) == [
        '_flat.py is outside a layer: each file lives in the folder of one of common, ascend, stack, serving, operations',
        'common/_low.py:5: layer common imports %s.serving._high of the higher layer serving' % PACKAGE,
        'ascend/__init__.py is missing: it says what lives in the layer and what it may import',
        'stack/__init__.py has no docstring: it says what lives in the layer and what it may import',
        'serving/_high.py:3: layer serving imports %s.operations of the higher layer operations' % PACKAGE,
        "serving/_high.py:4: a relative import (import the collection's module_utils by their full name)",
        'serving/_high.py:5: %s._flat is in no layer' % PACKAGE,
    ]
