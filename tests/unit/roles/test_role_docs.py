# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""tools/role_docs.py: role READMEs generated from meta/argument_specs.yml and defaults/main.yml, in Markdown, with
a hand-kept part the generator preserves, and an error where the two files disagree."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.tools import role_docs

MARKUP = {
    'C(/proc/sys) is read-only': '`/proc/sys` is read-only',
    'O(os_tuning_apply_live=false)': '`os_tuning_apply_live=false`',
    'V(performance) or V(never)': '`performance` or `never`',
    'E(ASCEND_HOME) and RV(changed)': '`ASCEND_HOME` and `changed`',
    'M(kunpeng_ascend.vllm.ascend_facts)': '`kunpeng_ascend.vllm.ascend_facts`',
    'P(kunpeng_ascend.vllm.ascend_compat#filter)': '`kunpeng_ascend.vllm.ascend_compat` filter',
    'I(must) and B(never)': '*must* and **never**',
    'U(https://www.hiascend.com)': '<https://www.hiascend.com>',
    'L(the guide, https://example.com/guide)': '[the guide](https://example.com/guide)',
    # the body ends at the first ')', as ansible-doc reads it; markup letters inside a word are not markup
    '(C(w) lines) on PCI(e)': '(`w` lines) on PCI(e)',
    'C(<algorithm>:<hex>) or <hex>': '`<algorithm>:<hex>` or &lt;hex>',
    'C(a`b)': '``a`b``',
}


@pytest.mark.parametrize('text', sorted(MARKUP))
def test_markup_becomes_markdown(text):
    assert role_docs.markdown(text) == MARKUP[text]


def write_role(tmp_path, spec, defaults, readme=None):
    role = tmp_path / 'demo_role'
    (role / 'meta').mkdir(parents=True)
    (role / 'defaults').mkdir()
    (role / 'meta' / 'argument_specs.yml').write_text(yaml.safe_dump({'argument_specs': spec}), encoding='utf-8')
    (role / 'defaults' / 'main.yml').write_text(yaml.safe_dump(defaults), encoding='utf-8')
    if readme is not None:
        (role / 'README.md').write_text(readme, encoding='utf-8')
    return role


SPEC = {'main': {
    'short_description': 'Do C(one) thing',
    'description': ['First I(point).', 'Second point.'],
    'options': {
        'demo_count': {'type': 'int', 'description': 'How many; default V(3). null leaves it alone.'},
        'demo_name': {'type': 'str', 'default': 'x', 'description': ['A name', 'with | a pipe.'], 'choices': ['x', 'y']},
        'demo_source': {'type': 'dict', 'required': True, 'description': 'Where from.',
                        'options': {'path': {'type': 'path', 'description': 'A file.'}}},
    }}}
DEFAULTS = {'demo_count': 3, 'demo_name': 'x'}
KEPT = '\n## Example playbook\n\nHand-written <b>text</b> C(kept) as it is.\n'


def test_readme_has_bullets_defaults_and_the_hand_kept_part(tmp_path):
    text = role_docs.render(str(write_role(tmp_path, SPEC, DEFAULTS)), KEPT)
    assert text.startswith('# kunpeng_ascend.vllm.demo_role\n')
    assert 'Do `one` thing\n\n- First *point*.\n- Second point.\n' in text
    assert '| `demo_count` | int | `3` | How many; default `3`. null leaves it alone. |' in text, 'the default of defaults/main.yml'
    assert '| `demo_name` | str | `x` | A name with \\| a pipe. Choices: `x`, `y`. |' in text
    assert '| `demo_source` | dict | required | Where from. |' in text
    assert '| `demo_source.path` | path |  | A file. |' in text
    assert text.endswith('\n' + role_docs.MARKER + '\n' + KEPT)


def test_the_hand_kept_part_survives_a_rewrite(tmp_path):
    role = write_role(tmp_path, SPEC, DEFAULTS, readme='# an old generated part\n' + role_docs.MARKER + '\n' + KEPT)
    assert role_docs.main(['--check', str(role)]) == 1
    assert role_docs.main([str(role)]) == 0
    assert role_docs.hand_kept((role / 'README.md').read_text(encoding='utf-8')) == KEPT
    assert role_docs.main(['--check', str(role)]) == 0


def test_a_readme_without_a_hand_kept_part_is_refused(tmp_path, capsys):
    role = write_role(tmp_path, SPEC, DEFAULTS, readme='# generated only\n')
    assert role_docs.main([str(role)]) == 1
    assert 'nothing after the line %s' % role_docs.MARKER in capsys.readouterr().err
    assert role_docs.main(['--check', str(role)]) == 1, 'written with an empty hand-kept part, still refused'


@pytest.mark.parametrize('defaults, error', [
    ({'demo_count': 3, 'demo_name': 'y'}, 'demo_role: demo_name defaults to x in meta/argument_specs.yml but to y in defaults/main.yml'),
    ({'demo_name': 'x', 'demo_colour': 'red'}, 'demo_role: demo_colour is in defaults/main.yml but not in meta/argument_specs.yml'),
    ({'demo_source': {}}, 'demo_role: demo_source is required in meta/argument_specs.yml but has a default in defaults/main.yml'),
])
def test_spec_and_defaults_that_disagree_are_refused(tmp_path, capsys, defaults, error):
    role = write_role(tmp_path, SPEC, defaults, readme=role_docs.MARKER + '\n' + KEPT)
    with pytest.raises(role_docs.RoleDocsError, match=error):
        role_docs.render(str(role))
    assert role_docs.main(['--check', str(role)]) == 1
    assert error in capsys.readouterr().err
