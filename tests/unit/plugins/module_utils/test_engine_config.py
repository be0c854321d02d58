# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_engine_config: the Ascend runtime merged into real daemon.json files and containerd config.toml files of
config versions 2 and 3, by value, keeping everything else; unreadable files refused, naming the file."""

from __future__ import annotations

import json
import tomllib

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils import _engine_config
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._engine_config import (
    ConfigError,
    merge_containerd_toml,
    merge_daemon_json,
    parse_key,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

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
    assert containerd['runtimes']['ascend'] == {'runtime_type': 'io.containerd.runc.v2', 'options': {'BinaryName': RUNTIME}}
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


def test_without_tomllib_the_edit_is_the_same(monkeypatch):
    """On Python before 3.11 (no tomllib) the text edit alone does the work."""
    text = load_fixture(V2_16)
    expected = merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=True).text
    monkeypatch.setattr(_engine_config, 'tomllib', None)
    assert merge_containerd_toml(text, CONFIG, 'ascend', RUNTIME, default_runtime=True).text == expected


@pytest.mark.parametrize('key, parts', [
    ('plugins."io.containerd.grpc.v1.cri".containerd', ('plugins', 'io.containerd.grpc.v1.cri', 'containerd')),
    ("plugins . 'io.containerd.cri.v1.runtime' . x", ('plugins', 'io.containerd.cri.v1.runtime', 'x')),
    (r'a."b\"c\u0041"', ('a', 'b"cA')),
])
def test_dotted_keys_are_read_with_either_quote(key, parts):
    assert parse_key(key)[0] == parts
