# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The filters' documentation lists exactly the dict keys their code reads: each list is a constant in module_utils,
and the test derives the documented keys from the filter's .yml (its suboptions, or the C(key) markup of the option's
description) and compares. A key added to the code and not to the docs (or the reverse) fails here."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _monitoring, _soak
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _serving
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _stack_upgrade
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import a2_facts, inputs

yaml = pytest.importorskip('yaml')

REPO = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
_MARKUP = re.compile(r'\bC\(([a-z_0-9]+)\)')


def option(filter_name, name):
    with open(os.path.join(REPO, 'plugins', 'filter', filter_name + '.yml')) as handle:
        return yaml.safe_load(handle)['DOCUMENTATION']['options'][name]


def marked_keys(text):
    """The names in C(...) markup of a description (a string or a list of them), in order."""
    text = ' '.join(text) if isinstance(text, list) else text
    return _MARKUP.findall(text)


def test_serving_plan_documents_exactly_the_facts_it_reads():
    assert list(option('serving_plan', 'facts')['suboptions']) == list(_serving.FACTS_KEYS)


def test_serving_plan_documents_exactly_its_input_keys():
    keys_line = [line for line in option('serving_plan', '_input')['description'] if line.startswith('Keys:')]
    assert len(keys_line) == 1
    assert marked_keys(keys_line[0]) == list(_serving.INPUT_KEYS)


def test_the_role_gives_the_plan_exactly_its_input_keys():
    with open(os.path.join(REPO, 'roles', 'vllm_service', 'vars', 'main.yml')) as handle:
        given = yaml.safe_load(handle)['__vllm_service_inputs']
    assert sorted(given) == sorted(_serving.INPUT_KEYS)


class _Recording(dict):
    """A dict that records every key read from it, however it is read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


@pytest.mark.parametrize('facts', [
    a2_facts(),
    dict(a2_facts(), npu_smi_found=False, npu_devices=[{'chip_family': '910B', 'numa_node': 0}] * 8),
    {'npu_count': 0},
], ids=['a2', 'a2 without a driver', 'no NPUs'])
@pytest.mark.parametrize('changes', [{}, {'mode': 'native', 'api_key_file': '/etc/vllm/key', 'api_key_set': True}])
def test_serving_plan_reads_no_fact_beyond_the_documented_ones(facts, changes):
    model = {'path': '/m', 'exists': True, 'error': '', 'config_found': True, 'format': 'float'}
    recording = _Recording(facts, model_format=model, model_config={'hidden_size': 64},
                           model_weights={'file_bytes': 10}, account=None, key_file='600 root regular file',
                           systemd_version='systemd 252', driver_version='25.5.0', target_driver_version='25.5.0')
    _serving.serving_plan(inputs(**changes), recording)
    assert recording.read <= set(_serving.FACTS_KEYS), recording.read - set(_serving.FACTS_KEYS)


def test_soak_input_problems_documents_exactly_the_options_it_checks():
    assert marked_keys(option('soak_input_problems', '_input')['description']) == \
        list(_soak.OPTIONS + _soak.LOAD_OPTIONS)


def test_monitoring_rules_documents_exactly_its_thresholds():
    assert sorted(marked_keys(option('monitoring_rules', '_input')['description'])) == \
        sorted(name for name, _what, _kind, _bounds in _monitoring.THRESHOLDS)


def test_stack_upgrade_steps_documents_exactly_the_components():
    assert marked_keys(option('stack_upgrade_steps', '_input')['description']) == list(_stack_upgrade.STACK)


# --- the serving plan's keys: what it returns is what plugins/filter/serving_plan.yml documents, and every key another
# role, a playbook or a scenario reads is one of them --------------------------------------------------------------

def documented_plan_keys():
    with open(os.path.join(REPO, 'plugins', 'filter', 'serving_plan.yml')) as handle:
        return set(yaml.safe_load(handle)['RETURN']['_value']['contains'])


@pytest.mark.parametrize('facts, changes', [
    (a2_facts(), {}),
    (a2_facts(), {'mode': 'native', 'api_key_file': '/etc/vllm/key', 'api_key_set': True}),
    ({'npu_count': 0}, {}),
], ids=['a2 container', 'a2 native', 'no NPUs'])
def test_serving_plan_returns_exactly_the_documented_keys(facts, changes):
    plan = _serving.serving_plan(inputs(**changes), facts)
    assert plan['problems'] == []
    assert set(plan) == documented_plan_keys(), set(plan) ^ documented_plan_keys()


_PLAN_READ = re.compile(r"""vllm_service_plan(?:\.([a-z_]+)|\[['"]([a-z_]+)['"]\])""")


def plan_keys_read(text):
    """The serving plan's keys a YAML or Jinja text reads (``vllm_service_plan.key``, ``vllm_service_plan['key']``)."""
    return set(dotted or quoted for dotted, quoted in _PLAN_READ.findall(text))


def test_the_plan_keys_read_are_found_both_ways():
    assert plan_keys_read("{{ vllm_service_plan.unit }} {{ vllm_service_plan['tls'].ca }} vllm_service_plan") == \
        {'unit', 'tls'}


def test_every_plan_key_the_roles_playbooks_and_scenarios_read_is_documented():
    read = {}
    for top in ('roles', 'playbooks', 'molecule'):
        for folder, _dirs, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith(('.yml', '.yaml', '.j2')):
                    path = os.path.join(folder, name)
                    with open(path, encoding='utf-8') as handle:
                        for key in plan_keys_read(handle.read()):
                            read.setdefault(key, os.path.relpath(path, REPO))
    undocumented = dict((key, where) for key, where in read.items() if key not in documented_plan_keys())
    assert not undocumented, 'read but not in serving_plan.yml RETURN: %s' % undocumented
    assert len(read) >= 10  # the scan finds what the roles read: the unit, the TLS files, the sizing, ...
