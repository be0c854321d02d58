# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""common/_import_closure.py on planted trees: every module_utils file a program imports, directly or through the
others, in each import form, with the __init__.py of the packages on the way; a missing file and a relative import
refused, naming the importer. The programs the roles ship run from its answer in tests/unit/roles and
tests/unit/monitoring."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._import_closure import PACKAGE, import_closure
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import make_tree

FILES = {
    '/mu/common/__init__.py': '"""common."""\n',
    '/mu/common/_a.py': 'import json\n',
    '/mu/common/_b.py': 'from %s.common._a import loads\n' % PACKAGE,
    '/mu/common/_unused.py': '',
    '/mu/ascend/__init__.py': '"""ascend."""\n',
    '/mu/ascend/_c.py': 'from %s.common import _b, CONSTANT\n' % PACKAGE,
    '/mu/ascend/_d.py': 'def f():\n    import %s.common._a\n' % PACKAGE,
    # A layer without __init__.py (a namespace package): nothing to ship for it.
    '/mu/serving/_e.py': '',
}


@pytest.fixture(name='tree')
def tree_fixture(tmp_path):
    make_tree(tmp_path, FILES)
    return tmp_path


def program(tree, text):
    path = tree / 'program'
    path.write_text('#!/usr/bin/env python3\nimport os\n' + text, encoding='utf-8')
    return str(path)


def test_every_file_imported_directly_or_through_another_with_its_packages(tree):
    start = program(tree, 'from %s.ascend import _c\n' % PACKAGE)
    assert import_closure(str(tree / 'mu'), [start]) == [
        'ascend/__init__.py', 'ascend/_c.py', 'common/__init__.py', 'common/_a.py', 'common/_b.py']


@pytest.mark.parametrize('text, expected', [
    ('import %s.ascend._d\n' % PACKAGE, ['ascend/__init__.py', 'ascend/_d.py', 'common/__init__.py', 'common/_a.py']),
    ('from %s.common._a import loads as l\n' % PACKAGE, ['common/__init__.py', 'common/_a.py']),
    ('from %s import common\n' % PACKAGE, ['common/__init__.py']),
    ('from %s.serving import _e\n' % PACKAGE, ['serving/_e.py']),
    ('import yaml\nfrom ansible.module_utils.basic import AnsibleModule\n', []),
], ids=['import inside a function', 'a name from a module', 'a package', 'a namespace package', 'nothing of ours'])
def test_each_import_form(tree, text, expected):
    assert import_closure(str(tree / 'mu'), [program(tree, text)]) == expected


def test_several_programs_share_one_answer(tree):
    starts = [program(tree, 'from %s.serving import _e\n' % PACKAGE),
              str(tree / 'mu' / 'common' / '_b.py')]
    assert import_closure(str(tree / 'mu'), starts) == ['common/__init__.py', 'common/_a.py', 'serving/_e.py']


@pytest.mark.parametrize('text, message', [
    ('from %s.common import _gone\n' % PACKAGE, None),
    ('from %s.common._gone import x\n' % PACKAGE, 'imports %s.common._gone, which is no file under ' % PACKAGE),
    ('from %s.stack import _x\n' % PACKAGE, 'imports %s.stack, which is no file under ' % PACKAGE),
    ('from .common import _a\n', ', line 3: a relative import, which is not followed (import by the full name)'),
], ids=['a name that may be no module', 'a module that is not there', 'a package that is not there', 'relative'])
def test_a_missing_file_or_a_relative_import_is_refused_naming_the_importer(tree, text, message):
    start = program(tree, text)
    if message is None:
        assert import_closure(str(tree / 'mu'), [start]) == ['common/__init__.py']
        return
    with pytest.raises(ValueError) as raised:
        import_closure(str(tree / 'mu'), [start])
    assert str(raised.value).startswith(start) and message in str(raised.value), raised.value
