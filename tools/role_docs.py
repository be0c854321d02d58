#!/usr/bin/env python
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write each role's README.md from its meta/argument_specs.yml, so the two never disagree.

Usage: role_docs.py [--check] [ROLE_DIR ...]   (default: every role under roles/ with an argument_specs file)
--check writes nothing and exits 1 naming each README that is out of date.
"""

from __future__ import annotations

import argparse
import os
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMESPACE = 'kunpeng_ascend.vllm'


def _text(value):
    if value is None:
        return ''
    if isinstance(value, list):
        return ' '.join(str(line).strip() for line in value)
    return ' '.join(str(value).split())


def _default(spec):
    if 'default' not in spec:
        return 'required' if spec.get('required') else ''
    return '`%s`' % yaml.safe_dump(spec['default'], default_flow_style=True, width=10000).strip().removesuffix('...').strip()


def _option_rows(options, prefix=''):
    rows = []
    for name in sorted(options or {}):
        spec = options[name] or {}
        kind = spec.get('type', 'str')
        if spec.get('elements'):
            kind += ' of ' + spec['elements']
        choices = ', '.join('`%s`' % choice for choice in spec.get('choices', []))
        description = _text(spec.get('description'))
        if choices:
            description += ' Choices: ' + choices + '.'
        cells = (prefix + name, kind, _default(spec), description.replace('|', '\\|'))
        rows.append('| `%s` | %s | %s | %s |' % cells)
        rows.extend(_option_rows(spec.get('options'), prefix + name + '.'))
    return rows


def render(role_dir):
    role = os.path.basename(os.path.normpath(role_dir))
    with open(os.path.join(role_dir, 'meta', 'argument_specs.yml'), encoding='utf-8') as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    lines = ['# %s.%s' % (NAMESPACE, role), '',
             '<!-- Generated from meta/argument_specs.yml by tools/role_docs.py: edit that file, then run'
             ' `make role-docs`. -->', '']
    for entry_point in sorted(specs, key=lambda name: (name != 'main', name)):
        spec = specs[entry_point] or {}
        if entry_point != 'main':
            lines += ['## Entry point `%s`' % entry_point, '']
        if spec.get('short_description'):
            lines += [_text(spec['short_description']), '']
        if spec.get('description'):
            lines += [_text(spec['description']), '']
        lines += ['| variable | type | default | description |', '|---|---|---|---|']
        lines += _option_rows(spec.get('options'))
        lines.append('')
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true')
    parser.add_argument('roles', nargs='*')
    args = parser.parse_args(argv)
    roles = args.roles or sorted(
        os.path.join(REPO, 'roles', name) for name in os.listdir(os.path.join(REPO, 'roles'))
        if os.path.isfile(os.path.join(REPO, 'roles', name, 'meta', 'argument_specs.yml')))
    stale = []
    for role_dir in roles:
        readme = os.path.join(role_dir, 'README.md')
        text = render(role_dir)
        current = open(readme, encoding='utf-8').read() if os.path.exists(readme) else None
        if current == text:
            continue
        if args.check:
            stale.append(readme)
        else:
            with open(readme, 'w', encoding='utf-8') as handle:
                handle.write(text)
            print('wrote %s' % os.path.relpath(readme, REPO))
    if stale:
        print('out of date (run `make role-docs`): %s' % ', '.join(os.path.relpath(path, REPO) for path in stale))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
