# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_engine_config: the Ascend runtime merged into real daemon.json files and containerd config.toml files of
config versions 2 and 3, by value, keeping everything else; unreadable files refused, naming the file. Every test
runs with tomllib proving the TOML edit and again with the collection's own reader, which does on Python < 3.11."""

from __future__ import annotations

import importlib.util
import json
import random
import re
import sys

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _toml
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _engine_config
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._engine_config import (
    ConfigError,
    merge_containerd_toml,
    merge_daemon_json,
    parse_key,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.common.test__toml import RandomDocument

try:
    import tomllib
except ImportError:  # Python < 3.11: the collection's reader, whose loads() gives what tomllib's gives.
    tomllib = _toml

RUNTIME = '/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime'
DAEMON = '/etc/docker/daemon.json'
CONFIG = '/etc/containerd/config.toml'

INSTALLER_TEMPLATE = 'daemon.json_ascend-docker-runtime-installer_template.txt'
INSTALLER_TEST_RUNC2 = 'daemon.json_ascend-docker-runtime-test_runc2-default-runc.txt'
V2_16 = 'containerd-config.toml_v2_containerd-1.6.39_cri-doc-full.txt'
V2_17 = 'containerd-config.toml_v2_containerd-1.7.34_cri-doc-full.txt'
V3_23 = 'containerd-config.toml_v3_containerd-2.3.4_cri-doc-full.txt'
DOCKER_CONTAINERD_IO = 'containerd-config.toml_no-version_docker-containerd.io-package_cri-disabled.txt'
CRI = {2: 'io.containerd.grpc.v1.cri', 3: 'io.containerd.cri.v1.runtime'}


# Every test runs twice: with the standard library's TOML reader and with the collection's own (tests/unit/plugins/
# conftest.py).
pytestmark = pytest.mark.usefixtures('toml_reader')


def docker(text, default_runtime=None, name='ascend'):
    return merge_daemon_json(text, DAEMON, name, RUNTIME, default_runtime)


# --------------------------------------------------------------------------------------------------------- docker

def test_the_installers_own_file_is_already_merged_whatever_its_spacing():
    """The installer's template (tabs and padding after the keys) holds the runtime and the default: no change."""
    text = load_fixture(INSTALLER_TEMPLATE)
    merged = docker(text, default_runtime=True)
    assert (merged.changed, merged.text, merged.warnings) == (False, text, [])
    # Left alone when not asked about the default.
    assert docker(text).changed is False


def test_default_runtime_false_removes_the_default_the_installer_set():
    merged = docker(load_fixture(INSTALLER_TEMPLATE), default_runtime=False)
    assert merged.changed
    assert merged.config == {'runtimes': {'ascend': {'path': RUNTIME, 'runtimeArgs': []}}}
    assert json.loads(merged.text) == merged.config


def test_other_runtimes_arguments_and_another_default_are_kept():
    text = load_fixture(INSTALLER_TEST_RUNC2)
    merged = docker(text, default_runtime=False)
    assert merged.changed
    assert merged.config == {
        'runtimes': {'ascend': {'path': RUNTIME, 'runtimeArgs': [1, 2, 3]},
                     'runc2': {'path': '/test/runtime2', 'runtimeArgs': [1, 2, 3]}},
        'default-runtime': 'runc'}
    # The file's indentation (8 spaces) is kept for the rewritten file.
    assert merged.text.splitlines()[1] == '        "runtimes": {'
    assert docker(text, default_runtime=True).config['default-runtime'] == 'ascend'


@pytest.mark.parametrize('text', ['', '   \n', '{}'])
def test_an_empty_file_gets_the_runtime(text):
    merged = docker(text)
    assert merged.changed
    assert json.loads(merged.text) == {'runtimes': {'ascend': {'path': RUNTIME, 'runtimeArgs': []}}}
    assert merged.text.endswith('}\n')


def test_a_default_runtime_without_runtimes_block_gets_the_runtime():
    merged = docker('{"default-runtime": "ascend", "log-driver": "json-file"}\n', default_runtime=True)
    assert merged.config == {'default-runtime': 'ascend', 'log-driver': 'json-file',
                             'runtimes': {'ascend': {'path': RUNTIME, 'runtimeArgs': []}}}


def test_compared_by_value_not_by_text():
    text = '{"runtimes":{"ascend":{"runtimeArgs":[],"path":"%s"}},"registry-mirrors":["https://m.example"]}' % RUNTIME
    assert docker(text).changed is False


def test_a_path_differing_in_case_is_corrected_with_a_warning():
    wrong = RUNTIME.replace('Ascend-Docker-Runtime', 'ascend-docker-runtime')
    merged = docker(json.dumps({'runtimes': {'ascend': {'path': wrong, 'runtimeArgs': ['--debug']}}}))
    assert merged.config['runtimes']['ascend'] == {'path': RUNTIME, 'runtimeArgs': ['--debug']}
    assert merged.warnings == ['%s: runtime "ascend" had path %s, which differs from %s only in case; paths are '
                               'case-sensitive, so it was set to %s' % (DAEMON, wrong, RUNTIME, RUNTIME)]


def test_another_path_is_replaced_without_warning():
    merged = docker(json.dumps({'runtimes': {'ascend': {'path': '/opt/old/ascend-docker-runtime'}}}))
    assert merged.config['runtimes']['ascend'] == {'path': RUNTIME, 'runtimeArgs': []}
    assert merged.warnings == []


def test_a_runtime_name_differing_in_case_is_reported():
    merged = docker(json.dumps({'runtimes': {'Ascend': {'path': RUNTIME}}}))
    assert set(merged.config['runtimes']) == {'Ascend', 'ascend'}
    assert merged.warnings == ['%s: runtime "Ascend" differs from "ascend" only in case; docker takes them for two '
                               'runtimes, and the one named "ascend" is the one configured' % DAEMON]


def test_tab_indentation_is_kept():
    merged = docker('{\n\t"debug": true\n}\n')
    assert merged.text.splitlines()[1] == '\t"debug": true,'


@pytest.mark.parametrize('text, message', [
    ('{"runtimes": {', '%s is not valid JSON (' % DAEMON),
    ('[1, 2]', '%s holds a JSON list, not an object: fix it; it was left unchanged' % DAEMON),
    ('{"runtimes": []}', '%s: "runtimes" is a list, not an object of runtimes: fix it; it was left unchanged' % DAEMON),
    ('{"runtimes": {"ascend": "/usr/bin/x"}}',
     '%s: runtime "ascend" is a str, not an object with "path": fix it; it was left unchanged' % DAEMON),
])
def test_a_file_that_is_no_daemon_json_is_refused_naming_it(text, message):
    with pytest.raises(ConfigError) as raised:
        docker(text)
    assert str(raised.value).startswith(message)


# --------------------------------------------------------------------------------------------------------- containerd

def runtime_of(text, version, name='ascend'):
    data = tomllib.loads(text)
    return data['plugins'][CRI[version]]['containerd']


@pytest.mark.parametrize('fixture, version', [(V2_16, 2), (V2_17, 2), (V3_23, 3)])
def test_config_default_gets_the_runtime_and_keeps_every_other_line(fixture, version):
    text = load_fixture(fixture)
    merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME)
    assert merged.changed and merged.warnings == []
    containerd = runtime_of(merged.text, version)
    # runc's cgroup driver is the runtime's too (the 1.x docs set SystemdCgroup = false; 2.x's leave it out).
    inherited = {key: value for key, value in containerd['runtimes']['runc'].get('options', {}).items() if key == 'SystemdCgroup'}
    assert containerd['runtimes']['ascend'] == {'runtime_type': 'io.containerd.runc.v2',
                                                'options': dict(inherited, BinaryName=RUNTIME)}
    # Not asked: the default runtime stays runc.
    assert containerd['default_runtime_name'] == 'runc'
    # Only lines were added: every line of the file is there, in order.
    added = list(merged.text.splitlines())
    for line in text.splitlines():
        added = added[added.index(line) + 1:]
    # Everything else parses as before.
    before, after = tomllib.loads(text), tomllib.loads(merged.text)
    del after['plugins'][CRI[version]]['containerd']['runtimes']['ascend']
    assert after == before
    # Merged again: nothing to do.
    assert merge_containerd_toml(merged.text, CONFIG, 'ascend', RUNTIME).changed is False


def test_the_new_tables_follow_the_runc_runtime_quoted_and_indented_like_it():
    merged = merge_containerd_toml(load_fixture(V3_23), CONFIG, 'ascend', RUNTIME)
    lines = merged.text.splitlines()
    start = lines.index("        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.ascend]")
    assert lines[start - 1:start + 5] == [
        '',
        "        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.ascend]",
        '          runtime_type = "io.containerd.runc.v2"',
        "          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.ascend.options]",
        '            BinaryName = "%s"' % RUNTIME,
        '']
    assert lines[start - 2] == "            ShimCgroup = ''"


@pytest.mark.parametrize('fixture, version, quote', [(V2_17, 2, '"'), (V3_23, 3, "'")])
def test_default_runtime_is_set_and_unset_in_the_cri_plugins_containerd_table(fixture, version, quote):
    text = load_fixture(fixture)
    made_default = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=True)
    assert runtime_of(made_default.text, version)['default_runtime_name'] == 'ascend'
    assert made_default.text.count('default_runtime_name') == text.count('default_runtime_name')
    assert merge_containerd_toml(made_default.text, CONFIG, 'ascend', RUNTIME, default_runtime=True).changed is False
    undone = merge_containerd_toml(made_default.text, CONFIG, 'ascend', RUNTIME, default_runtime=False)
    assert undone.changed
    assert runtime_of(undone.text, version)['default_runtime_name'] == 'runc'
    # false keeps another default.
    other = text.replace('default_runtime_name = %srunc%s' % (quote, quote), 'default_runtime_name = "crun"')
    assert other != text
    kept = merge_containerd_toml(other, CONFIG, 'ascend', RUNTIME, default_runtime=False)
    assert runtime_of(kept.text, version)['default_runtime_name'] == 'crun'


def test_table_names_in_either_quote_are_the_same_table():
    text = ('version = 2\n'
            "[plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.ascend]\n"
            '  runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."ascend".options]\n'
            "  BinaryName = '%s'  # set by hand\n" % RUNTIME)
    assert merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME).changed is False


def test_an_old_entry_is_corrected_in_place():
    text = ('version = 2\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ascend]\n'
            '  runtime_type = "io.containerd.runtime.v1.linux"\n'
            '  privileged_without_host_devices = true\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ascend.options]\n'
            '  BinaryName = "%s"\n'
            '  SystemdCgroup = true\n' % RUNTIME.lower())
    merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME)
    assert merged.text == text.replace('io.containerd.runtime.v1.linux', 'io.containerd.runc.v2').replace(RUNTIME.lower(), RUNTIME)
    assert merged.warnings == [
        '%s: runtime ascend had runtime_type = "io.containerd.runtime.v1.linux"; it was set to "io.containerd.runc.v2" '
        '(the shim whose BinaryName option names the runtime)' % CONFIG,
        '%s: runtime ascend had BinaryName %s, which differs from %s only in case; paths are case-sensitive, so it was '
        'set to %s' % (CONFIG, RUNTIME.lower(), RUNTIME, RUNTIME)]


def test_a_runtime_table_without_options_gets_them_below_its_keys():
    text = ('version = 3\n\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.ascend]\n'
            '  runtime_type = "io.containerd.runc.v2"\n\n'
            '[grpc]\n  address = "/run/containerd/containerd.sock"\n')
    merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME)
    assert merged.text == ('version = 3\n\n'
                           '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.ascend]\n'
                           '  runtime_type = "io.containerd.runc.v2"\n'
                           '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.ascend.options]\n'
                           '  BinaryName = "%s"\n\n'
                           '[grpc]\n  address = "/run/containerd/containerd.sock"\n' % RUNTIME)


def test_dockers_containerd_io_file_gets_a_version_and_a_warning_about_cri():
    text = load_fixture(DOCKER_CONTAINERD_IO)
    with pytest.raises(ConfigError) as raised:
        merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME)
    assert str(raised.value) == ('%s has no version line: give the config version the installed containerd reads (2 for '
                                 'containerd 1.x, 3 for containerd 2.x); it was left unchanged' % CONFIG)
    merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=True, config_version=3)
    data = tomllib.loads(merged.text)
    assert data['version'] == 3 and data['disabled_plugins'] == ['cri']
    assert data['plugins'][CRI[3]]['containerd'] == {
        'default_runtime_name': 'ascend',
        'runtimes': {'ascend': {'runtime_type': 'io.containerd.runc.v2', 'options': {'BinaryName': RUNTIME}}}}
    assert merged.text.index('version = 3') < merged.text.index('disabled_plugins')
    assert merged.warnings == ['%s disables the CRI plugin (disabled_plugins = ["cri"]), so the runtime it configures '
                               'serves only clients of the CRI (crictl, Kubernetes) once that plugin is enabled' % CONFIG]


@pytest.mark.parametrize('version', [2, 3])
def test_an_empty_file_gets_the_version_and_the_runtime(version):
    merged = merge_containerd_toml('', CONFIG, 'ascend', RUNTIME, config_version=version)
    data = tomllib.loads(merged.text)
    assert data['version'] == version
    assert data['plugins'][CRI[version]]['containerd']['runtimes']['ascend']['options'] == {'BinaryName': RUNTIME}


def test_a_file_without_final_newline_is_not_changed_for_it():
    text = load_fixture(V2_17).rstrip('\n')
    merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME)
    again = merge_containerd_toml(merged.text.rstrip('\n'), CONFIG, 'ascend', RUNTIME)
    assert again.changed is False


@pytest.mark.parametrize('text, message', [
    ('[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "pause"\n',
     '%s has no version line, so containerd reads it as config version 1, which is not supported' % CONFIG),
    ('version = 1\n[plugins.cri]\n', '%s has config version 1; only versions 2 (containerd 1.x) and 3' % CONFIG),
    ('version = 4\n', '%s has config version 4; only versions 2' % CONFIG),
    ('version = 2\n[plugins\n', '%s is not valid TOML (' % CONFIG),
    ('version = "two"\n', '%s: version = "two" is not a containerd config version' % CONFIG),
])
def test_a_config_of_another_version_or_no_toml_is_refused_naming_the_file(text, message):
    with pytest.raises(ConfigError) as raised:
        merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, config_version=3)
    assert str(raised.value).startswith(message)
    assert str(raised.value).endswith('left unchanged')


def test_a_runtime_defined_by_an_inline_table_is_refused_not_broken():
    text = ('version = 2\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
            '  ascend = { runtime_type = "io.containerd.runc.v2" }\n')
    with pytest.raises(ConfigError) as raised:
        merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME)
    assert 'cannot be added by table without breaking the file' in str(raised.value)


RUNTIMES_V2 = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'


@pytest.mark.parametrize('definition', [
    pytest.param('  ascend.runtime_type = "io.containerd.runc.v2"\n  ascend.options.BinaryName = "%s"\n' % RUNTIME,
                 id='dotted-keys'),
    pytest.param('  ascend = { runtime_type = "io.containerd.runc.v2", options = { BinaryName = "%s" } }\n' % RUNTIME,
                 id='inline-table'),
    pytest.param('  ascend.runtime_type = "io.containerd.runc.v2"\n  ascend.options = { BinaryName = "/old" }\n',
                 id='dotted-keys-and-inline-table'),
])
@pytest.mark.parametrize('default_runtime', [None, True])
def test_a_runtime_defined_by_dotted_keys_or_an_inline_table_is_refused_not_rewritten_into_invalid_toml(
        definition, default_runtime):
    """Valid TOML, which the edit by table would break ([...ascend] defines the table a second time): refused."""
    text = 'version = 2\n' + RUNTIMES_V2 + definition
    assert tomllib.loads(text)['plugins'][CRI[2]]['containerd']['runtimes']['ascend']['runtime_type'] == \
        'io.containerd.runc.v2'
    with pytest.raises(ConfigError) as raised:
        merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=default_runtime)
    table = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ascend'
    assert str(raised.value).startswith('%s: the Ascend runtime cannot be added by table without breaking the file ('
                                        % CONFIG)
    assert re.search(r'line \d+, column \d+', str(raised.value))
    assert str(raised.value).endswith('it defines the runtime in another way (dotted keys or an inline table?): define '
                                      'it as tables %s and %s.options, or remove it; the file was left unchanged'
                                      % (table, table))


@pytest.mark.parametrize('text', [
    pytest.param('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n[plugins."io.containerd.grpc.v1.cri"]\n',
                 id='table-twice'),
    pytest.param('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "overlayfs"\n'
                 '  snapshotter = "native"\n', id='key-twice'),
    pytest.param('version = 2\n[grpc]\n  address = "/run/containerd/containerd.sock\n', id='unterminated-string'),
    pytest.param('version = 2\n[grpc]\n  address = "/run/containerd/containerd.sock\x7f"\n', id='raw-del'),
    pytest.param('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ascend]\n'
                 '  runtime_type = io.containerd.runc.v2\n', id='unquoted-string'),
    pytest.param('version = 2\n[debug]\n  level = 01\n', id='leading-zero'),
])
def test_an_invalid_file_is_refused_naming_it_not_edited(text):
    with pytest.raises(ConfigError) as raised:
        merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=True)
    assert str(raised.value).startswith('%s is not valid TOML (' % CONFIG)
    # What is wrong, and where: both readers say it in their own words.
    assert re.search(r'line \d+, column \d+', str(raised.value))
    assert str(raised.value).endswith('): fix it; it was left unchanged')


V3_SYSTEMD = '''version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          runtime_type = 'io.containerd.runc.v2'
          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
            SystemdCgroup = true
            BinaryName = ''
'''


def test_the_runtime_takes_runc_s_systemd_cgroup_driver():
    merged = merge_containerd_toml(V3_SYSTEMD, CONFIG, 'ascend', RUNTIME)
    assert runtime_of(merged.text, 3)['runtimes']['ascend']['options'] == {'SystemdCgroup': True, 'BinaryName': RUNTIME}
    assert merge_containerd_toml(merged.text, CONFIG, 'ascend', RUNTIME).changed is False


def test_a_cgroup_driver_of_its_own_is_kept():
    text = V3_SYSTEMD + ('''        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.ascend]
          runtime_type = 'io.containerd.runc.v2'
          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.ascend.options]
            SystemdCgroup = false
''')
    merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME)
    assert runtime_of(merged.text, 3)['runtimes']['ascend']['options'] == {'SystemdCgroup': False, 'BinaryName': RUNTIME}


@pytest.mark.parametrize('value', ['[' * 20000 + ']' * 20000, '{a=' * 20000 + '1' + '}' * 20000],
                         ids=['arrays', 'inline-tables'])
def test_a_hostile_nesting_is_refused_with_a_message(value):
    with pytest.raises(ConfigError) as raised:
        merge_containerd_toml('version = 2\n[debug]\n  level = %s\n' % value, CONFIG, 'ascend', RUNTIME)
    assert str(raised.value).startswith('%s is not valid TOML (' % CONFIG)


@pytest.mark.parametrize('fixture', [V2_16, V2_17, V3_23])
@pytest.mark.parametrize('default_runtime', [None, True, False])
def test_without_tomllib_the_edit_is_the_same(monkeypatch, fixture, default_runtime):
    """On Python before 3.11 (no tomllib) the collection's reader proves the same edit."""
    text = load_fixture(fixture)
    expected = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=default_runtime).text
    monkeypatch.setattr(_engine_config, 'tomllib', None)
    monkeypatch.setattr(_engine_config, 'toml_loads', _toml.loads)
    assert merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=default_runtime).text == expected


def test_without_tomllib_the_module_reads_toml_with_its_own_reader(monkeypatch):
    """A copy of the module imported where ``import tomllib`` fails, as on Python 3.9 and 3.10."""
    monkeypatch.setitem(sys.modules, 'tomllib', None)
    spec = importlib.util.spec_from_file_location('engine_config_without_tomllib', _engine_config.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.tomllib is None and module.toml_loads is _toml.loads
    with pytest.raises(module.ConfigError) as raised:
        module.merge_containerd_toml('version = 2\n[grpc]\n[grpc]\n', CONFIG, 'ascend', RUNTIME)
    assert str(raised.value) == ('%s is not valid TOML (line 3, column 1: [grpc]: the table is already defined (by a '
                                 'header, or by dotted keys), and a table is defined once): fix it; it was left '
                                 'unchanged' % CONFIG)
    dotted = 'version = 2\n' + RUNTIMES_V2 + '  ascend.runtime_type = "io.containerd.runc.v2"\n'
    with pytest.raises(module.ConfigError) as raised:
        module.merge_containerd_toml(dotted, CONFIG, 'ascend', RUNTIME)
    assert 'cannot be added by table without breaking the file' in str(raised.value)


def test_line_separators_in_comments_and_strings_do_not_split_lines():
    """U+2028 and U+2029 are no newlines in TOML: the text after them is no line of its own, no [header] here."""
    text = ('version = 2\n'
            '# see\u2028[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ascend]\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd]\n'
            '  snapshotter = "overlay\u2029fs"\n')
    merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME)
    assert merged.text.startswith(text)
    data = tomllib.loads(merged.text)
    assert data['plugins'][CRI[2]]['containerd'] == {
        'snapshotter': 'overlay\u2029fs',
        'runtimes': {'ascend': {'runtime_type': 'io.containerd.runc.v2', 'options': {'BinaryName': RUNTIME}}}}
    assert data['version'] == 2 and len(data) == 2


ASCEND_HEADER = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ascend]'


@pytest.mark.parametrize('value', [
    pytest.param('[\n["a"]\n]', id='array-of-arrays'),
    pytest.param('{ a = [\n[1]\n] }', id='inline-table-of-a-multi-line-array'),
    pytest.param('"""\n  default_runtime_name = "fake"\n%s\n"""' % ASCEND_HEADER, id='multi-line-string'),
    pytest.param("'''\n%s\n  runtime_type = \"fake\"\n'''" % ASCEND_HEADER, id='multi-line-literal-string'),
    pytest.param('"""\'\'\'"""\n  y = \'\'\'\n%s\n\'\'\'' % ASCEND_HEADER, id='quotes-of-the-other-kind'),
    pytest.param('"""a ""\\""" b"""\n  y = """\n%s\n"""' % ASCEND_HEADER, id='escaped-quotes'),
])
def test_lines_inside_a_value_are_no_headers_or_keys(value):
    text = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  x = %s\n  default_runtime_name = "runc"\n'
            % value)
    merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=True)
    before = tomllib.loads(text)['plugins'][CRI[2]]['containerd']
    after = tomllib.loads(merged.text)['plugins'][CRI[2]]['containerd']
    assert after == dict(before, default_runtime_name='ascend', runtimes={
        'ascend': {'runtime_type': 'io.containerd.runc.v2', 'options': {'BinaryName': RUNTIME}}})
    assert merged.text.startswith(text.replace('"runc"', '"ascend"'))


@pytest.mark.parametrize('text', [
    pytest.param('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  x = """\n'
                 '  default_runtime_name = "runc"\n"""\n', id='key-in-a-multi-line-string'),
    pytest.param("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  x = '''\n# not a comment'''\n",
                 id='comment-in-a-multi-line-string'),
])
def test_an_edit_that_changes_anything_else_is_refused(monkeypatch, text):
    """Were lines inside a value read as statements (as they once were), the edit would go into the string: the
    edited text, read back, shows it, and nothing is written."""
    monkeypatch.setattr(_engine_config, '_continued_lines', lambda text: set())
    with pytest.raises(ConfigError) as raised:
        merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=True)
    assert str(raised.value) == ('%s: the edit would change more than the Ascend runtime and the default runtime; the '
                                 'file defines them in a way this module cannot edit: fix it by hand; it was left '
                                 'unchanged' % CONFIG)


def test_a_plugins_array_of_tables_is_refused():
    with pytest.raises(ConfigError) as raised:
        merge_containerd_toml('version = 2\n[[plugins]]\n', CONFIG, 'ascend', RUNTIME)
    assert 'does not hold BinaryName = %s' % RUNTIME in str(raised.value)


@pytest.mark.parametrize('place, count', [('top-level', 300), ('in-the-containerd-table', 300), ('after-cri-doc', 40)])
def test_random_valid_configs_get_the_runtime_and_keep_everything_else(place, count):
    """Seeded random TOML (test_toml's generator: headers, dotted keys, inline tables, multi-line strings and arrays,
    comments) around the tables the edit adds: only the runtime's lines are added, and they read back as it."""
    rng = random.Random(place)
    writer = RandomDocument(rng)
    prefix = {'top-level': 'version = 2\n',
              'in-the-containerd-table': 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n',
              'after-cri-doc': load_fixture(V2_17)}[place]
    added_lines = {'', 'runtime_type = "io.containerd.runc.v2"', 'BinaryName = "%s"' % RUNTIME,
                   'default_runtime_name = "ascend"', 'SystemdCgroup = false'}
    for quote in '"\'':
        containerd = '[plugins.%sio.containerd.grpc.v1.cri%s.containerd' % (quote, quote)
        added_lines.update(containerd + end for end in (']', '.runtimes.ascend]', '.runtimes.ascend.options]'))
    edited = 0
    for dummy in range(count):
        text = prefix + writer.text(writer.data())
        try:
            tomllib.loads(text)
        except ValueError:  # a random key that the containerd doc's last table has already
            continue
        default_runtime = rng.choice([None, True])
        merged = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=default_runtime)
        containerd = tomllib.loads(merged.text)['plugins'][CRI[2]]['containerd']
        inherited = {'SystemdCgroup': False} if place == 'after-cri-doc' else {}
        assert containerd['runtimes']['ascend'] == {'runtime_type': 'io.containerd.runc.v2',
                                                    'options': dict(inherited, BinaryName=RUNTIME)}, merged.text
        assert default_runtime is None or containerd['default_runtime_name'] == 'ascend'
        new_lines = merged.text.split('\n')
        if default_runtime:
            text = text.replace('default_runtime_name = "runc"', 'default_runtime_name = "ascend"')
        for line in text.split('\n'):
            new_lines.remove(line)
        assert set(line.strip() for line in new_lines) <= added_lines, merged.text
        assert merge_containerd_toml(merged.text, CONFIG, 'ascend', RUNTIME, default_runtime=default_runtime).changed \
            is False
        edited += 1
    assert edited > count * 0.9


@pytest.mark.parametrize('runtime_path', [
    pytest.param('/opt/ascend\x7f/ascend-docker-runtime', id='del'),
    pytest.param('/opt/ascend\t/ascend-docker-runtime', id='tab'),
    pytest.param('/opt/"ascend"/ascend-docker-runtime', id='quote'),
    pytest.param('/opt/ascend\\/ascend-docker-runtime', id='backslash'),
    pytest.param('/opt/ascend\n/ascend-docker-runtime', id='newline'),
    pytest.param('/opt/\x00\x08\x1b\r\x0c\x85\u2028é\U0001F680\'/x', id='all-kinds'),
])
def test_a_runtime_path_of_any_characters_is_written_as_a_valid_toml_string(runtime_path):
    text = load_fixture(V2_17)
    merged = merge_containerd_toml(text, CONFIG, 'ascend', runtime_path)
    # Escaped: no control character, tab or newline of the path is written as it is.
    assert len(merged.text.split('\n')) == len(text.split('\n')) + 6
    added = set(merged.text.split('\n')) - set(text.split('\n'))
    assert not [char for line in added for char in line if char in '\t\x7f\x85\u2028' or char < ' ']
    readers = [_toml] + ([tomllib] if tomllib is not _toml else [])
    for reader in readers:
        runtimes = reader.loads(merged.text)['plugins'][CRI[2]]['containerd']['runtimes']
        assert runtimes['ascend']['options'] == {'BinaryName': runtime_path, 'SystemdCgroup': False}
    assert merge_containerd_toml(merged.text, CONFIG, 'ascend', runtime_path).changed is False
    moved = merge_containerd_toml(merged.text, CONFIG, 'ascend', RUNTIME)
    assert moved.changed and tomllib.loads(moved.text) == tomllib.loads(merge_containerd_toml(text, CONFIG, 'ascend',
                                                                                              RUNTIME).text)


@pytest.mark.parametrize('key, parts', [
    ('plugins."io.containerd.grpc.v1.cri".containerd', ('plugins', 'io.containerd.grpc.v1.cri', 'containerd')),
    ("plugins . 'io.containerd.cri.v1.runtime' . x", ('plugins', 'io.containerd.cri.v1.runtime', 'x')),
    (r'a."b\"c\u0041"', ('a', 'b"cA')),
])
def test_dotted_keys_are_read_with_either_quote(key, parts):
    assert parse_key(key)[0] == parts
