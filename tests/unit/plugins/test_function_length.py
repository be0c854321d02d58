# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""No long function in plugins/ without its reason beside it (issue "A structure that shows the architecture", step 2):
a function of more than MAX_CODE_LINES code lines - its docstring, comments and blank lines not counted - has a
comment ``# Long: <why>`` on one of the lines just above its ``def``. A new long function fails here until it is split
or says why it is not."""

from __future__ import annotations

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MAX_CODE_LINES = 60
REASON = '# Long: '


def code_lines(lines, function):
    """The code lines of ``function`` (an ast node of ``lines``): its def and body, no docstring, comment or blank."""
    body = function.body
    first = body[0]
    if (len(body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        first = body[1]
    kept = [line for line in lines[first.lineno - 1:function.end_lineno] if line.strip() and not line.strip().startswith('#')]
    return len(kept) + 1


def has_reason(lines, function):
    """Whether one of the three lines above the def (or its decorators) is a ``# Long: <why>`` comment with a why."""
    top = min([function.lineno] + [decorator.lineno for decorator in function.decorator_list])
    above = [line.strip() for line in lines[max(0, top - 4):top - 1]]
    return any(line.startswith(REASON) and len(line) > len(REASON) + 10 for line in above)


def long_functions_without_reason(path, text):
    lines = text.splitlines()
    return ['%s:%d %s (%d code lines)' % (path, node.lineno, node.name, code_lines(lines, node))
            for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and code_lines(lines, node) > MAX_CODE_LINES and not has_reason(lines, node)]


def test_every_long_function_in_plugins_says_why():
    found = []
    for folder, _dirs, files in os.walk(os.path.join(REPO, 'plugins')):
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                with open(path, encoding='utf-8') as handle:
                    found += long_functions_without_reason(os.path.relpath(path, REPO), handle.read())
    assert not found, 'split these, or say why above the def (%s...):\n%s' % (REASON, '\n'.join(found))


def _function(statements, reason=None):
    body = ''.join('    x%d = %d\n' % (number, number) for number in range(statements))
    return ('%s\n' % reason if reason else '') + 'def f():\n    """Its docstring\n    is not counted."""\n' + body


def test_a_long_function_without_a_reason_is_named_and_a_reason_or_a_short_one_passes():
    assert long_functions_without_reason('m.py', _function(MAX_CODE_LINES)) == ['m.py:1 f (61 code lines)']
    assert long_functions_without_reason('m.py', _function(MAX_CODE_LINES - 1)) == []
    assert long_functions_without_reason('m.py', _function(MAX_CODE_LINES, '# Long: one table read top to bottom')) == []
    assert long_functions_without_reason('m.py', _function(MAX_CODE_LINES, '# Long: ')) == ['m.py:2 f (61 code lines)']
