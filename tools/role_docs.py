#!/usr/bin/env python
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write each role's README.md from its meta/argument_specs.yml and defaults/main.yml, so they never disagree.

Usage: role_docs.py [--check] [ROLE_DIR ...]   (default: every role under roles/ with an argument_specs file)

The README is generated down to the line MARKER; what follows that line is kept as it is (the facts the role sets,
its files, an example playbook), and must not be empty. Ansible's markup in the spec (C(), O(), V(), I(), B(), U(),
L(), M(), P(), E(), RV()) becomes Markdown; a description list becomes bullets. An option without a default in the
spec (one that null turns off cannot have one) shows its default from defaults/main.yml.
--check writes nothing and exits 1 naming each README that is out of date; either way a default that differs
between the two files, a variable of defaults/main.yml missing from the spec, or a required variable with a default
is an error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMESPACE = 'kunpeng_ascend.vllm'
MARKER = '<!-- hand-kept below -->'
HEADER = ('<!-- Generated from meta/argument_specs.yml and defaults/main.yml by tools/role_docs.py, down to the comment'
          ' "hand-kept below": edit those files, then run `make role-docs`. Edit what follows that comment here. -->')

# Ansible's markup: a letter code, then everything up to the first ')' (ansible-doc reads it the same way).
_MARKUP = re.compile(r'\b(RV|[COVEIBUMPL])\(([^)]*)\)')


class RoleDocsError(Exception):
    """The spec and defaults/main.yml of a role disagree."""


def _code(text):
    fence = '``' if '`' in text else '`'
    return '%s%s%s' % (fence, text, fence)


def _plain(text):
    # Outside code, '<' would start an HTML tag in Markdown.
    return text.replace('<', '&lt;')


def markdown(text):
    """``text`` with Ansible's markup turned into Markdown."""
    out, position = [], 0
    for match in _MARKUP.finditer(text):
        out.append(_plain(text[position:match.start()]))
        kind, body = match.groups()
        if kind in ('C', 'O', 'V', 'E', 'RV', 'M'):
            out.append(_code(body))
        elif kind == 'P':
            name, dummy, plugin_type = body.partition('#')
            out.append('%s %s' % (_code(name), plugin_type or 'plugin'))
        elif kind == 'I':
            out.append('*%s*' % _plain(body))
        elif kind == 'B':
            out.append('**%s**' % _plain(body))
        elif kind == 'U':
            out.append('<%s>' % body)
        else:
            label, dummy, url = body.rpartition(',')
            out.append('[%s](%s)' % (_plain(label.strip()), url.strip()))
        position = match.end()
    out.append(_plain(text[position:]))
    return ''.join(out)


def _paragraphs(value):
    """A description (a string or a list of strings) as a list of one-line texts."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [' '.join(str(item).split()) for item in items]


def _yaml_value(value):
    return yaml.safe_dump(value, default_flow_style=True, width=10000).strip().removesuffix('...').strip()


def _default(name, spec, defaults):
    if 'default' in spec:
        return _code(_yaml_value(spec['default']))
    if name in defaults:
        return _code(_yaml_value(defaults[name]))
    return 'required' if spec.get('required') else ''


def _option_rows(options, defaults, prefix=''):
    rows = []
    for name in sorted(options or {}):
        spec = options[name] or {}
        kind = spec.get('type', 'str')
        if spec.get('elements'):
            kind += ' of ' + spec['elements']
        description = ' '.join(markdown(text) for text in _paragraphs(spec.get('description')))
        if spec.get('choices'):
            description += ' Choices: ' + ', '.join(_code(str(choice)) for choice in spec['choices']) + '.'
        cells = (prefix + name, kind, _default(name, spec, defaults if not prefix else {}), description)
        rows.append('| `%s` | %s | %s | %s |' % tuple(cell.replace('|', '\\|') for cell in cells))
        rows.extend(_option_rows(spec.get('options'), defaults, prefix + name + '.'))
    return rows


def _check_defaults(role, options, defaults):
    """The errors of a role whose defaults/main.yml and main argument spec disagree."""
    errors = []
    for name, value in sorted(defaults.items()):
        spec = options.get(name)
        if spec is None:
            errors.append('%s: %s is in defaults/main.yml but not in meta/argument_specs.yml' % (role, name))
        elif spec.get('required'):
            errors.append('%s: %s is required in meta/argument_specs.yml but has a default in defaults/main.yml' % (role, name))
        elif 'default' in spec and spec['default'] != value:
            errors.append('%s: %s defaults to %s in meta/argument_specs.yml but to %s in defaults/main.yml'
                          % (role, name, _yaml_value(spec['default']), _yaml_value(value)))
    return errors


def _load_yaml(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def hand_kept(readme_text):
    """What follows the MARKER line of a README (None when it has no such line)."""
    if readme_text is None:
        return None
    lines = readme_text.splitlines(True)
    for index, line in enumerate(lines):
        if line.rstrip('\n') == MARKER:
            return ''.join(lines[index + 1:])
    return None


def render(role_dir, kept=''):
    """The README of the role in ``role_dir``, ending with the MARKER line and ``kept``.

    Raises RoleDocsError when the spec and defaults/main.yml disagree."""
    role = os.path.basename(os.path.normpath(role_dir))
    specs = _load_yaml(os.path.join(role_dir, 'meta', 'argument_specs.yml'))['argument_specs']
    defaults = _load_yaml(os.path.join(role_dir, 'defaults', 'main.yml')) or {}
    errors = _check_defaults(role, (specs.get('main') or {}).get('options') or {}, defaults)
    if errors:
        raise RoleDocsError('\n'.join(errors))
    lines = ['# %s.%s' % (NAMESPACE, role), '', HEADER, '']
    for entry_point in sorted(specs, key=lambda name: (name != 'main', name)):
        spec = specs[entry_point] or {}
        if entry_point == 'main':
            lines += [markdown(text) for text in _paragraphs(spec.get('short_description'))] + ['']
            lines += ['- ' + markdown(text) for text in _paragraphs(spec.get('description'))] + ['']
            lines += ['## Variables', '']
        else:
            lines += ['## Entry point `%s`' % entry_point, '']
            lines += [markdown(text) for text in _paragraphs(spec.get('short_description'))] + ['']
            lines += ['- ' + markdown(text) for text in _paragraphs(spec.get('description'))] + ['']
        lines += ['| variable | type | default | description |', '|---|---|---|---|']
        lines += _option_rows(spec.get('options'), defaults if entry_point == 'main' else {})
        lines.append('')
    lines.append(MARKER)
    return '\n'.join(lines) + '\n' + kept


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true')
    parser.add_argument('roles', nargs='*')
    args = parser.parse_args(argv)
    roles = args.roles or sorted(
        os.path.join(REPO, 'roles', name) for name in os.listdir(os.path.join(REPO, 'roles'))
        if os.path.isfile(os.path.join(REPO, 'roles', name, 'meta', 'argument_specs.yml')))
    stale, problems = [], []
    for role_dir in roles:
        readme = os.path.join(role_dir, 'README.md')
        current = open(readme, encoding='utf-8').read() if os.path.exists(readme) else None
        kept = hand_kept(current)
        if not (kept or '').strip():
            problems.append('%s: nothing after the line %s (the facts the role sets, an example playbook)'
                            % (os.path.relpath(readme, REPO), MARKER))
        try:
            text = render(role_dir, kept or '')
        except RoleDocsError as error:
            problems.append(str(error))
            continue
        if current == text:
            continue
        if args.check:
            stale.append(readme)
        else:
            with open(readme, 'w', encoding='utf-8') as handle:
                handle.write(text)
            print('wrote %s' % os.path.relpath(readme, REPO))
    for problem in problems:
        print(problem, file=sys.stderr)
    if stale:
        print('out of date (run `make role-docs`): %s' % ', '.join(os.path.relpath(path, REPO) for path in stale), file=sys.stderr)
    return 1 if stale or problems else 0


if __name__ == '__main__':
    sys.exit(main())
