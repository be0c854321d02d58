# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The docs against the tree, so that they cannot drift (issue "Docs that cannot drift").

The tree gives the names: the roles (``roles/*/`` with ``tasks/``), the modules (``plugins/modules/*.py``), the
``plugins/module_utils/<layer>/_*.py`` files (named ``<layer>/_*.py``), the filter and test plugins (the ``name`` of each ``.yml`` sidecar), the
playbooks, the Molecule scenarios (``molecule/*/molecule.yml``) and the facts the roles export (the ``set_fact`` keys
of ``roles/*/tasks/*.yml`` that do not start with ``__``, read from the YAML, blocks walked). The docs are read by
structure: the table under a heading, its rows split at unescaped ``|``, the names in backticks of each cell. A name
in parentheses is a mention, not an entry: ``operations/_doctor.py`` (observations in, findings with their fix out)
lists ``operations/_doctor.py`` alone. A module_utils file is named with its layer; a bare ``_doctor.py`` is no file of the
tree.

Checked: docs/reference.md's "What is here today" table (moved there from README.md, which keeps to the three
paths to a first service) names every role, module, filter, test plugin and playbook;
docs/architecture.md's layout table has each role, module, module_utils file, filter, test plugin and scenario in its
column; its public table ("What you may touch") names every public role, filter, test plugin, playbook and exported
fact; roles/README.md names every role and, for every playbook, the roles it runs; every exported fact is named in
its role's README, in the hand-kept part. Lists in the prose that name a set the tree decides (PROSE_LISTS: the roles
that refresh the package lists, that use package_fetch, that ship programs with their module_utils, plan.yml's
default roles) name exactly that set. The other way round, a name in those tables that is not in the tree fails:
a module, role, filter, module_utils file, scenario, test file, playbook or path that does not exist.
"""

from __future__ import annotations

import functools
import os
import re

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMESPACE = 'kunpeng_ascend.vllm.'
MARKER = '<!-- hand-kept below -->'
FACT = re.compile(r'^[a-z][a-z0-9_]*$')
REPORT_FACT = re.compile(r'^[a-z][a-z0-9_]*_report$')
IDENTIFIER = re.compile(r'^[a-z][a-z0-9_]*$')
# A module_utils file as the docs name it: <layer>/_name.py, optionally under plugins/module_utils/ (a bare _name.py
# matches too, and is reported: it names no file of the tree).
MODULE_UTILS_FILE = re.compile(r'^(?:plugins/module_utils/)?((?:[a-z]+/)?_[a-z0-9_]+\.py)$')
TEST_FILE = re.compile(r'^test_[a-z0-9_]+\.py$')
QUALIFIED = re.compile(r'\bkunpeng_ascend\.vllm\.([a-z0-9_]+)')
# The folders of this repository a path in backticks may start with (role-relative paths such as tasks/validate.yml
# or meta/argument_specs.yml do not).
ROOTS = ('roles/', 'plugins/', 'playbooks/', 'molecule/', 'tests/', 'tools/', 'docs/', 'inventories/', 'changelogs/')
SET_FACT = ('set_fact', 'ansible.builtin.set_fact', 'ansible.legacy.set_fact')
INCLUDE_ROLE = ('include_role', 'import_role', 'ansible.builtin.include_role', 'ansible.builtin.import_role',
                'ansible.legacy.include_role', 'ansible.legacy.import_role')


# --- the tree ----------------------------------------------------------------------------------------------------

class _Loader(yaml.SafeLoader):
    """SafeLoader that reads Ansible's tags (!unsafe, !vault) as the plain value they tag."""


def _tagged(loader, _suffix, node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node)


_Loader.add_multi_constructor('!', _tagged)


def load_yaml(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.load(handle, Loader=_Loader)


def _listdir(*parts):
    path = os.path.join(REPO, *parts)
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def _fact_keys(args):
    """The keys a set_fact task sets, from its arguments (a dict, or the key=value string form)."""
    if isinstance(args, dict):
        return [key for key in args if key != 'cacheable']
    if isinstance(args, str):
        return [token.split('=', 1)[0] for token in args.split() if '=' in token and token.split('=', 1)[0] != 'cacheable']
    return []


def set_fact_keys(tasks):
    """Every key the set_fact tasks of a task list set, blocks, rescue and always walked."""
    keys = []
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        for section in ('block', 'rescue', 'always'):
            keys += set_fact_keys(task.get(section))
        for module in SET_FACT:
            if module in task:
                keys += _fact_keys(task[module])
    return keys


def _roles_of_tasks(tasks):
    names = []
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        for section in ('block', 'rescue', 'always'):
            names += _roles_of_tasks(task.get(section))
        for module in INCLUDE_ROLE:
            if isinstance(task.get(module), dict) and task[module].get('name'):
                names.append(task[module]['name'])
    return names


def playbook_roles(path, seen=None):
    """The roles a playbook runs itself (its plays' roles and include_role / import_role tasks, and those of the
    playbooks it imports), without the collection's prefix."""
    seen = set() if seen is None else seen
    if path in seen:
        return []
    seen.add(path)
    names = []
    for play in load_yaml(path) or []:
        if not isinstance(play, dict):
            continue
        imported = play.get('ansible.builtin.import_playbook') or play.get('import_playbook')
        if imported:
            names += playbook_roles(os.path.join(os.path.dirname(path), imported), seen)
        for role in play.get('roles') or []:
            names.append(role if isinstance(role, str) else role.get('role') or role.get('name'))
        for section in ('pre_tasks', 'tasks', 'post_tasks', 'handlers'):
            names += _roles_of_tasks(play.get(section))
    return [name[len(NAMESPACE):] if name.startswith(NAMESPACE) else name for name in names if name]


class Tree:
    """What the repository holds, by name."""

    def __init__(self):
        self.roles = [name for name in _listdir('roles') if os.path.isdir(os.path.join(REPO, 'roles', name, 'tasks'))]
        self.modules = [name[:-3] for name in _listdir('plugins', 'modules')
                        if name.endswith('.py') and name != '__init__.py']
        self.module_utils = ['%s/%s' % (layer, name) for layer in _listdir('plugins', 'module_utils')
                             for name in _listdir('plugins', 'module_utils', layer)
                             if name.startswith('_') and not name.startswith('__') and name.endswith('.py')]
        self.filters = self._sidecar_names('filter')
        self.tests = self._sidecar_names('test')
        self.playbooks = [name[:-4] for name in _listdir('playbooks') if name.endswith('.yml')]
        self.scenarios = [name for name in _listdir('molecule')
                          if os.path.isfile(os.path.join(REPO, 'molecule', name, 'molecule.yml'))]
        self.facts = {}  # fact -> role
        for role in self.roles:
            for name in _listdir('roles', role, 'tasks'):
                if name.endswith('.yml'):
                    for key in set_fact_keys(load_yaml(os.path.join(REPO, 'roles', role, 'tasks', name))):
                        if FACT.match(key):
                            self.facts.setdefault(key, role)
        self.internal_roles = [role for role in self.roles if re.search(r'^## Internal$', self.hand_kept(role), re.M)]
        self.entry_points = {'main'}
        for role in self.roles:
            spec = os.path.join(REPO, 'roles', role, 'meta', 'argument_specs.yml')
            if os.path.isfile(spec):
                self.entry_points.update((load_yaml(spec) or {}).get('argument_specs') or {})
        self.test_files = {name for dummy, dummy, files in os.walk(os.path.join(REPO, 'tests'))
                           for name in files if TEST_FILE.match(name)}

    @staticmethod
    def _sidecar_names(kind):
        names = []
        for name in _listdir('plugins', kind):
            if name.endswith('.yml'):
                names.append(((load_yaml(os.path.join(REPO, 'plugins', kind, name)) or {}).get('DOCUMENTATION') or {})['name'])
        return sorted(names)

    @staticmethod
    def hand_kept(role):
        path = os.path.join(REPO, 'roles', role, 'README.md')
        if not os.path.isfile(path):
            return ''
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
        return text.partition('\n' + MARKER + '\n')[2]

    def report_facts(self):
        return sorted(fact for fact in self.facts if REPORT_FACT.match(fact))

    def public_facts(self):
        return sorted(fact for fact, role in self.facts.items() if role not in self.internal_roles)

    def kinds(self, name):
        """What a bare name is in the tree: a set of 'module', 'role', 'filter', 'test', 'playbook', 'fact'."""
        return {kind for kind, names in (('module', self.modules), ('role', self.roles), ('filter', self.filters),
                                         ('test', self.tests), ('playbook', self.playbooks), ('fact', self.facts))
                if name in names}


@functools.lru_cache(maxsize=None)
def tree():
    return Tree()


# --- Markdown, by structure --------------------------------------------------------------------------------------

def split_row(line):
    """The cells of a table row: split at every '|' not escaped by a backslash; '\\|' becomes '|'."""
    cells, cell, index = [], [], 0
    line = line.strip()
    while index < len(line):
        char = line[index]
        if char == '\\' and line[index + 1:index + 2] == '|':
            cell.append('|')
            index += 2
            continue
        if char == '|':
            cells.append(''.join(cell))
            cell = []
        else:
            cell.append(char)
        index += 1
    cells.append(''.join(cell))
    if line.startswith('|'):
        cells = cells[1:]
    if line.endswith('|') and not line.endswith('\\|'):
        cells = cells[:-1]
    return [cell.strip() for cell in cells]


def code_spans(cell):
    """[(text, depth)]: each code span of a cell and the depth of the parentheses around it in the prose."""
    spans, depth, index = [], 0, 0
    while index < len(cell):
        char = cell[index]
        if char == '`':
            run = len(cell[index:]) - len(cell[index:].lstrip('`'))
            closer = re.compile(r'(?<!`)`{%d}(?!`)' % run).search(cell, index + run)
            if closer:
                text = cell[index + run:closer.start()]
                if text.startswith(' ') and text.endswith(' ') and text.strip():
                    text = text[1:-1]
                spans.append((text, depth))
                index = closer.end()
                continue
            index += run
            continue
        if char == '(':
            depth += 1
        elif char == ')':
            depth = max(0, depth - 1)
        index += 1
    return spans


def entries(cell):
    """The names a cell lists: its code spans outside parentheses."""
    return [text for text, depth in code_spans(cell) if depth == 0]


def mentions(cell):
    """Every code span of a cell."""
    return [text for text, depth in code_spans(cell)]


def _headings(lines):
    fenced = False
    for number, line in enumerate(lines):
        if line.startswith('```'):
            fenced = not fenced
        elif not fenced and re.match(r'^#{1,6} ', line):
            yield number, len(line) - len(line.lstrip('#')), line.lstrip('#').strip()


class Table:
    def __init__(self, doc, heading, header, rows):
        self.doc, self.heading, self.header, self.rows = doc, heading, header, rows

    def column(self, name):
        wanted = name.lower()
        for index, cell in enumerate(self.header):
            if cell.strip().lower() == wanted:
                return index
        raise AssertionError('%s: the table under "%s" has no column "%s" (columns: %s)'
                             % (self.doc, self.heading, name, ', '.join(self.header)))

    def cells(self, column):
        index = self.column(column) if isinstance(column, str) else column
        return [(row, row[index] if index < len(row) else '') for row in self.rows]

    @staticmethod
    def label(row):
        text = re.sub(r'[`*]', '', row[0]).split(':')[0].strip()
        return text if len(text) <= 60 else text[:57] + '...'


def tables(text, doc):
    """Every table of a Markdown text, with the heading it is under."""
    lines = text.splitlines()
    heading_at = {number: title for number, dummy, title in _headings(lines)}
    found, heading, index = [], '', 0
    while index < len(lines):
        if index in heading_at:
            heading = heading_at[index]
        if (lines[index].lstrip().startswith('|') and index + 1 < len(lines)
                and re.match(r'^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$', lines[index + 1])):
            header, rows, index = split_row(lines[index]), [], index + 2
            while index < len(lines) and lines[index].lstrip().startswith('|'):
                rows.append(split_row(lines[index]))
                index += 1
            found.append(Table(doc, heading, header, rows))
            continue
        index += 1
    return found


def table(text, doc, heading, first_column):
    """The table under ``heading`` (the heading's own section, before any other heading) whose first column is
    ``first_column``."""
    for candidate in tables(text, doc):
        if candidate.heading == heading and candidate.header and candidate.header[0].lower() == first_column.lower():
            return candidate
    raise AssertionError('%s: no table under the heading "%s" whose first column is "%s"' % (doc, heading, first_column))


def read(doc):
    with open(os.path.join(REPO, doc), encoding='utf-8') as handle:
        return handle.read()


# --- the checks: each gives a list of problems -------------------------------------------------------------------

def _missing(doc_table, names, kind, present, how=''):
    return ['%s lacks %s %s%s' % (doc_table, kind, name, how % name if how else '') for name in names if name not in present]


def check_reference(text, doc='docs/reference.md'):
    """docs/reference.md's "What is here today" table: every role, module, filter, test plugin and playbook."""
    here, tr = table(text, doc, 'What is here today', 'piece'), tree()
    names = [span for row in here.rows for cell in row for span in mentions(cell)]
    qualified = {match for span in names for match in QUALIFIED.findall(span)}
    roles = {match.group(1) for span in names for match in [re.match(r'^roles/([a-z0-9_]+)/?$', span)] if match}
    playbooks = {match.group(1) for span in names for match in [re.match(r'^playbooks/([a-z0-9_]+)\.yml$', span)] if match}
    where = '%s\'s "What is here today" table' % doc
    return (_missing(where, tr.modules, 'module', qualified, ' (as `kunpeng_ascend.vllm.%s`)')
            + _missing(where, tr.filters, 'filter', qualified, ' (as `kunpeng_ascend.vllm.%s`)')
            + _missing(where, tr.tests, 'test plugin', qualified, ' (as `kunpeng_ascend.vllm.%s`)')
            + _missing(where, tr.roles, 'role', roles, ' (as `roles/%s`)')
            + _missing(where, tr.playbooks, 'playbook', playbooks, ' (as `playbooks/%s.yml`)'))


# The layout table's typed columns: the kind of name each lists, and where those names come from.
LAYOUT_COLUMNS = (('role', 'role'), ('modules', 'module'), ('module_utils', 'module_utils file'),
                  ('filters and tests', 'filter or test plugin'), ('unit tests', 'test file'), ('scenario', 'scenario'))


def _layout_names(kind):
    tr = tree()
    return {'role': tr.roles, 'module': tr.modules, 'module_utils file': tr.module_utils,
            'filter or test plugin': tr.filters + tr.tests, 'test file': sorted(tr.test_files),
            'scenario': tr.scenarios}[kind]


def check_architecture_layout(text, doc='docs/architecture.md'):
    """The layout table: each role, module, module_utils file, filter, test plugin and scenario in its column, and
    nothing in a column that the tree does not have."""
    layout, tr, problems = table(text, doc, 'Layout', 'concern'), tree(), []
    listed = {}
    for column, kind in LAYOUT_COLUMNS:
        listed[kind] = set()
        for row, cell in layout.cells(column):
            for name in entries(cell):
                name = MODULE_UTILS_FILE.sub(r'\1', name)
                listed[kind].add(name)
                if name not in _layout_names(kind):
                    problems.append('%s layout table, row "%s", column %s: `%s` is no %s of the tree'
                                    % (doc, layout.label(row), column, name, kind))
    where = '%s layout table' % doc
    problems += _missing(where, tr.roles, 'role', listed['role'])
    problems += _missing(where, tr.modules, 'module', listed['module'])
    problems += _missing(where, tr.module_utils, 'module_utils', listed['module_utils file'])
    problems += _missing(where, tr.filters, 'filter', listed['filter or test plugin'])
    problems += _missing(where, tr.tests, 'test plugin', listed['filter or test plugin'])
    problems += _missing(where, tr.scenarios, 'scenario', listed['scenario'])
    return problems


def check_architecture_public(text, doc='docs/architecture.md'):
    """The public table: every public role, filter, test plugin, playbook and exported fact."""
    public, tr, problems = table(text, doc, 'What you may touch', ''), tree(), []
    column = public.column('public')
    rows = {re.sub(r'[`*]', '', row[0]).strip().lower(): row for row in public.rows}
    where = '%s public table ("What you may touch")' % doc

    def cell(name):
        if name not in rows:
            problems.append('%s has no row "%s"' % (where, name))
            return ''
        return rows[name][column]

    plugins = {span[len(NAMESPACE):] if span.startswith(NAMESPACE) else span for span in mentions(cell('filters and tests'))}
    problems += _missing(where, tr.filters, 'filter', plugins)
    problems += _missing(where, tr.tests, 'test plugin', plugins)
    problems += ['%s, row "filters and tests": `%s` is no filter or test plugin of the tree' % (where, name)
                 for name in sorted(plugins) if name not in tr.filters + tr.tests]

    playbook_spans = mentions(cell('playbooks'))
    playbooks = {match for span in playbook_spans for match in QUALIFIED.findall(span)}
    playbooks |= {m.group(1) for span in playbook_spans for m in [re.match(r'^playbooks/([a-z0-9_]+)\.yml$', span)] if m}
    problems += _missing(where, tr.playbooks, 'playbook', playbooks, ' (as `kunpeng_ascend.vllm.%s`)')
    problems += ['%s, row "playbooks": `kunpeng_ascend.vllm.%s` is no playbook of the tree' % (where, name)
                 for name in sorted(playbooks) if name not in tr.playbooks]

    role_spans = set(mentions(cell('roles')))
    problems += _missing(where, [role for role in tr.roles if role not in tr.internal_roles], 'role', role_spans)
    problems += _missing(where, tr.public_facts(), 'fact', role_spans)
    private_column = public.column('private')
    private = set(mentions(rows['roles'][private_column])) if 'roles' in rows and private_column < len(rows['roles']) else set()
    problems += ['%s: the internal role %s is not in the private column of row "roles"' % (where, role)
                 for role in tr.internal_roles if role not in private]
    for name in sorted(role_spans | private):
        if IDENTIFIER.match(name) and not (tr.kinds(name) or name in tr.entry_points):
            problems.append('%s, row "roles": `%s` is no role, fact, module or entry point of the tree' % (where, name))
    return problems


def check_roles_readme(text, doc='roles/README.md'):
    """roles/README.md: every role (an internal one said to be internal), every playbook and the roles it runs."""
    tr, problems = tree(), []
    roles_table = table(text, doc, 'Roles', 'role')
    listed = {}
    for row, cell in roles_table.cells(0):
        for name in entries(cell):
            listed[name] = row
            if name not in tr.roles:
                problems.append('%s role table: `%s` is no role of the tree' % (doc, name))
    problems += _missing('%s role table' % doc, tr.roles, 'role', listed)
    for role in tr.internal_roles:
        if role in listed and not re.sub(r'[`*]', '', listed[role][1]).strip().lower().startswith('internal'):
            problems.append('%s role table: the row of %s does not say it is internal' % (doc, role))

    playbook_table = table(text, doc, 'Roles', 'playbook')
    roles_column = playbook_table.column('roles, in order')
    runs = {}
    for row in playbook_table.rows:
        for span in entries(row[0]):
            match = re.match(r'^playbooks/([a-z0-9_]+)\.yml$', span)
            if not match or match.group(1) not in tr.playbooks:
                problems.append('%s playbook table: `%s` is no playbook of the tree' % (doc, span))
                continue
            runs[match.group(1)] = set(mentions(row[roles_column]))
            for name in runs[match.group(1)]:
                if IDENTIFIER.match(name) and name not in tr.roles:
                    problems.append('%s playbook table, row %s: `%s` is no role of the tree' % (doc, span, name))
    problems += _missing('%s playbook table' % doc, tr.playbooks, 'playbook', runs, ' (as `playbooks/%s.yml`)')
    for playbook, named in sorted(runs.items()):
        for role in playbook_roles(os.path.join(REPO, 'playbooks', playbook + '.yml')):
            if role not in named:
                problems.append('%s playbook table: the row of playbooks/%s.yml lacks role %s, which it runs'
                                % (doc, playbook, role))
    return problems


def check_names_exist(text, doc):
    """Every table of a doc: a qualified name, role or playbook path, module_utils file, test file or repository path
    in backticks that the tree does not have; and anywhere in the doc, a scenario named as scenario `x`."""
    tr, problems = tree(), []
    known = set(tr.modules + tr.roles + tr.filters + tr.tests + tr.playbooks)
    for doc_table in tables(text, doc):
        for row in doc_table.rows:
            for cell in row:
                for span in mentions(cell):
                    where = '%s, table under "%s", row "%s"' % (doc, doc_table.heading, doc_table.label(row))
                    problems += ['%s: `%s` names %s, which is no module, filter, test plugin, role or playbook of the tree'
                                 % (where, span, name) for name in QUALIFIED.findall(span) if name not in known]
                    utils = MODULE_UTILS_FILE.match(span)
                    if utils and utils.group(1) not in tr.module_utils:
                        problems.append('%s: `%s` is no file of plugins/module_utils/' % (where, span))
                    if TEST_FILE.match(span) and span not in tr.test_files:
                        problems.append('%s: `%s` is no test file under tests/' % (where, span))
                    if (span.startswith(ROOTS) and not re.search(r'[<*\s]', span)
                            and not os.path.exists(os.path.join(REPO, span.rstrip('/')))):
                        problems.append('%s: `%s` does not exist' % (where, span))
                    if IDENTIFIER.match(span) and REPORT_FACT.match(span) and not tr.kinds(span):
                        problems.append('%s: `%s` is no fact a role sets, nor a module' % (where, span))
    for name in re.findall(r'[Ss]cenarios? `([a-z0-9_]+)`', text):
        if name not in tr.scenarios:
            problems.append('%s: scenario `%s` is no folder of molecule/ with a molecule.yml' % (doc, name))
    return problems


def check_role_readmes_name_their_facts():
    tr = tree()
    problems = []
    for fact, role in sorted(tr.facts.items()):
        if '`%s`' % fact not in tr.hand_kept(role):
            problems.append('roles/%s/README.md does not name the fact %s in its hand-kept part (below %s)'
                            % (role, fact, MARKER))
    return problems


# --- lists in the prose: each sentence or cell that lists a set the tree decides ----------------------------------

def _role_files_text(role):
    """The text of a role's task and vars files (what it runs and what it passes)."""
    texts = []
    for sub in ('tasks', 'vars'):
        for name in _listdir('roles', role, sub):
            if name.endswith(('.yml', '.yaml')):
                with open(os.path.join(REPO, 'roles', role, sub, name), encoding='utf-8') as handle:
                    texts.append(handle.read())
    return '\n'.join(texts)


def roles_using(pattern):
    """The roles whose task or vars files match ``pattern`` (a regular expression), sorted."""
    return sorted(role for role in tree().roles if re.search(pattern, _role_files_text(role), re.M))


def plan_roles_default():
    """The roles playbooks/plan.yml checks the inputs of by default (its ``plan_roles`` default)."""
    match = re.search(r"plan_roles \| default\(\[([^\]]*)\]\)", read('playbooks/plan.yml'))
    assert match, 'playbooks/plan.yml no longer gives plan_roles a default list'
    return sorted(re.findall(r"'([a-z_]+)'", match.group(1)))


# (doc, where the list is: a table row's first-cell start and the cell's index, or a sentence's start and its end,
# what it lists, the rule that gives the set)
PROSE_LISTS = (
    ('docs/architecture.md', ('row', '| OS packages: the package lists refreshed', 1),
     'the roles that refresh the package lists', lambda: roles_using(r'kunpeng_ascend\.vllm\.package_lists:')),
    ('docs/reference.md', ('row', '| `kunpeng_ascend.vllm.package_lists` |', 1),
     'the roles that refresh the package lists', lambda: roles_using(r'kunpeng_ascend\.vllm\.package_lists:')),
    ('docs/reference.md', ('row', '| `roles/package_fetch` |', 1),
     'the roles that put a package file with package_fetch',
     lambda: roles_using(r'name: kunpeng_ascend\.vllm\.package_fetch$')),
    ('docs/architecture.md', ('text', 'The programs the roles ship to a host', ') take the module_utils'),
     'the roles that ship programs with their module_utils', lambda: roles_using(r'module_utils_closure')),
    ('docs/plan.md', ('row', '| `plan_roles` |', 2), "plan.yml's default plan_roles", plan_roles_default),
)


def _fragment(text, where):
    kind, start, end = where
    if kind == 'row':
        rows = [line for line in text.splitlines() if line.startswith(start)]
        if len(rows) != 1:
            return None
        cells = split_row(rows[0])
        return cells[end] if end < len(cells) else None
    begin = text.find(start)
    stop = text.find(end, begin)
    return None if begin < 0 or stop < 0 else text[begin:stop]


def check_prose_lists(texts=None):
    """Each list of PROSE_LISTS names exactly the roles its rule gives."""
    problems = []
    roles = set(tree().roles)
    for doc, where, what, rule in PROSE_LISTS:
        fragment = _fragment((texts or {}).get(doc) or read(doc), where)
        if fragment is None:
            problems.append('%s: the list of %s is not found (%s)' % (doc, what, where[1]))
            continue
        named = sorted(set(name[len(NAMESPACE):] if name.startswith(NAMESPACE) else name
                           for name in mentions(fragment)) & roles)
        expected = rule()
        if named != expected:
            problems.append('%s: the list of %s names %s; the tree has %s' % (
                doc, what, ', '.join(named) or 'none', ', '.join(expected) or 'none'))
    return problems


def _assert_none(problems):
    assert not problems, '\n'.join(problems)


# --- the tests ---------------------------------------------------------------------------------------------------

def test_the_tree_is_read():
    tr = tree()
    assert {'vllm_cluster', 'npu_network', 'package_fetch'} <= set(tr.roles)
    assert {'package_lists', 'python_venv'} <= set(tr.modules) and '__init__' not in tr.modules
    assert {'common/_toml.py', 'stack/_compatibility_rows.py'} <= set(tr.module_utils)
    assert 'ascend_compat_waiver' in tr.filters and tr.tests == ['ascend_version']
    assert 'multinode' in tr.playbooks and 'shared' not in tr.scenarios
    assert {'npu_network_report', 'vllm_cluster_ray_report', 'vllm_service_report'} <= set(tr.report_facts())
    assert tr.facts['vllm_cluster_ray_report'] == 'vllm_cluster'
    assert tr.internal_roles == ['package_fetch']
    assert not [fact for fact in tr.facts if fact.startswith('__')]


def test_reference_lists_every_role_module_plugin_and_playbook():
    _assert_none(check_reference(read('docs/reference.md')))


def test_architecture_layout_has_every_file_in_its_column():
    _assert_none(check_architecture_layout(read('docs/architecture.md')))


def test_architecture_public_table_names_every_public_piece():
    _assert_none(check_architecture_public(read('docs/architecture.md')))


def test_roles_readme_lists_every_role_and_what_each_playbook_runs():
    _assert_none(check_roles_readme(read('roles/README.md')))


def test_no_table_names_what_the_tree_does_not_have():
    _assert_none([problem for doc in ('README.md', 'docs/reference.md', 'docs/architecture.md', 'roles/README.md')
                  for problem in check_names_exist(read(doc), doc)])


def test_every_exported_fact_is_named_in_its_role_readme():
    _assert_none(check_role_readmes_name_their_facts())


def test_every_list_in_the_prose_names_what_the_tree_has():
    _assert_none(check_prose_lists())


def test_a_list_in_the_prose_that_lacks_a_role_is_named():
    text = _drop(read('docs/reference.md'), 'for `npu_driver`, `cann` and `container_runtime`', 'for `npu_driver` and `cann`')
    assert check_prose_lists({'docs/reference.md': text}) == [
        'docs/reference.md: the list of the roles that put a package file with package_fetch names cann, npu_driver;'
        ' the tree has cann, container_runtime, npu_driver']


def test_a_list_in_the_prose_that_is_gone_is_named():
    text = _drop(read('docs/plan.md'), '| `plan_roles` |', '| `plan_roles_gone` |')
    assert check_prose_lists({'docs/plan.md': text}) == [
        'docs/plan.md: the list of plan.yml\'s default plan_roles is not found (| `plan_roles` |)']


# --- the checks can fail -----------------------------------------------------------------------------------------

def _drop(text, old, new=''):
    assert old in text, old
    return text.replace(old, new)


def test_a_module_missing_from_the_reference_is_named():
    text = _drop(read('docs/reference.md'), '`kunpeng_ascend.vllm.package_lists`', 'package lists')
    assert check_reference(text) == ['docs/reference.md\'s "What is here today" table lacks module package_lists'
                                     ' (as `kunpeng_ascend.vllm.package_lists`)']


def test_a_name_in_parentheses_is_not_an_entry_of_the_layout():
    text = _drop(read('docs/architecture.md'), '| `package_lists` |', '| — (`package_lists`) |')
    assert check_architecture_layout(text) == ['docs/architecture.md layout table lacks module package_lists']


def test_a_stale_name_in_the_layout_is_named():
    text = _drop(read('docs/architecture.md'), '| `stack/_package_lists.py` |',
                 '| `stack/_package_lists.py`, `stack/_apt.py`, `_package_source.py` |')
    problems = check_architecture_layout(text)
    assert problems == ['docs/architecture.md layout table, row "OS packages", column module_utils: `stack/_apt.py` is no'
                        ' module_utils file of the tree',
                        'docs/architecture.md layout table, row "OS packages", column module_utils: `_package_source.py`'
                        ' is no module_utils file of the tree'], problems


def test_a_fact_missing_from_the_public_table_is_named():
    text = _drop(read('docs/architecture.md'), '`vllm_cluster_ray_report`, ', '')
    assert check_architecture_public(text) == [
        'docs/architecture.md public table ("What you may touch") lacks fact vllm_cluster_ray_report']


def test_a_role_a_playbook_runs_missing_from_roles_readme_is_named():
    text = _drop(read('roles/README.md'), '| `playbooks/quantize.yml` | `model_quantize` |', '| `playbooks/quantize.yml` | none |')
    assert check_roles_readme(text) == [
        'roles/README.md playbook table: the row of playbooks/quantize.yml lacks role model_quantize, which it runs']


def test_stale_names_in_any_table_are_named():
    text = '\n'.join(['## Some heading', '', '| a | b |', '|---|---|',
                      '| `kunpeng_ascend.vllm.gone` | `roles/gone/tasks` and `_gone.py` \\| `test_gone.py` |',
                      '| `old_report` | scenario `gone` |',
                      '| `common/_json.py`, `plugins/module_utils/common/_json.py` | `_json.py`, `stack/_json.py` |'])
    assert check_names_exist(text, 'x.md') == [
        'x.md, table under "Some heading", row "kunpeng_ascend.vllm.gone": `kunpeng_ascend.vllm.gone` names gone, which'
        ' is no module, filter, test plugin, role or playbook of the tree',
        'x.md, table under "Some heading", row "kunpeng_ascend.vllm.gone": `roles/gone/tasks` does not exist',
        'x.md, table under "Some heading", row "kunpeng_ascend.vllm.gone": `_gone.py` is no file of plugins/module_utils/',
        'x.md, table under "Some heading", row "kunpeng_ascend.vllm.gone": `test_gone.py` is no test file under tests/',
        'x.md, table under "Some heading", row "old_report": `old_report` is no fact a role sets, nor a module',
        'x.md, table under "Some heading", row "common/_json.py, plugins/module_utils/common/_json.py": `_json.py` is no'
        ' file of plugins/module_utils/',
        'x.md, table under "Some heading", row "common/_json.py, plugins/module_utils/common/_json.py": `stack/_json.py`'
        ' is no file of plugins/module_utils/',
        'x.md: scenario `gone` is no folder of molecule/ with a molecule.yml',
    ]


def test_rows_split_at_unescaped_pipes_and_spans_keep_their_depth():
    assert split_row('| `a` | b \\| c | ``d`e`` |') == ['`a`', 'b | c', '``d`e``']
    assert code_spans('`x` (`y`, [l](u)) `z`') == [('x', 0), ('y', 1), ('z', 0)]
    assert code_spans('``a`b`` and ` c `') == [('a`b', 0), ('c', 0)]


def test_set_facts_are_found_in_blocks_rescue_and_always():
    tasks = [{'name': 'a', 'ansible.builtin.set_fact': {'one_report': 1, 'cacheable': True}},
             {'block': [{'set_fact': 'two_report={{ x }} three=3'}],
              'rescue': [{'block': [{'ansible.builtin.set_fact': {'__four': 4}}]}],
              'always': [{'ansible.builtin.debug': {'msg': 'no fact'}}]}]
    assert set_fact_keys(tasks) == ['one_report', 'two_report', 'three', '__four']
