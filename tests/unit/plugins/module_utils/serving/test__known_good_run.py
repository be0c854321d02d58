# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""module_utils/serving/_known_good_run.py: vllm_known_good's run on a fake node (its answers given, its writes
kept): record, read and restore with their check mode, diff and failures, and the Node's questions to the runner."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _known_good as kg
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _known_good_run as run_kg

IMAGE = 'quay.io/ascend/vllm-ascend:v0.7.3'
IMAGE_ID = 'sha256:' + '1' * 64
ENGINE = '/usr/bin/docker'
UNIT = '[Service]\nExecStart=/usr/bin/docker run quay.io/ascend/vllm-ascend:v0.7.3\n'
ENV = 'VLLM_API_KEY="sk-run-0123456789"\n'
NOW = '2026-12-07T01:00:00Z'


class FakeNode:
    """The node's answers, and the questions asked."""

    def __init__(self, image_id=IMAGE_ID, vllm_version='0.32.0', digest=('d' * 64, None)):
        self.answers = {'image_id': image_id, 'vllm_version': vllm_version, 'model_digest': digest}
        self.asked = []

    def image_id(self, engine, image):
        self.asked.append(('image_id', engine, image))
        return self.answers['image_id']

    def vllm_version(self, venv):
        self.asked.append(('vllm_version', venv))
        return self.answers['vllm_version']

    def model_digest(self, model, manifest):
        self.asked.append(('model_digest', model, manifest))
        return self.answers['model_digest']


class Writes:
    """``write`` that really writes (so that a second run sees the first), and keeps what it wrote."""

    def __init__(self):
        self.done = []

    def __call__(self, path, text, mode):
        self.done.append((path, mode))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(text)
        os.chmod(path, mode)


@pytest.fixture
def host(tmp_path):
    model = tmp_path / 'models' / 'stand-in'
    model.mkdir(parents=True)
    (model / 'SHA256SUMS').write_text('%s  model.safetensors\n' % ('e' * 64))
    (tmp_path / 'vllm.service').write_text(UNIT)
    (tmp_path / 'vllm.env').write_text(ENV)
    return tmp_path


def params(host, **changes):
    values = dict(name='vllm', state='read', which='current', ascend={}, mode=None, model=None, model_manifest=None,
                  model_digest=None, verify_model=True, served_model_name=None, endpoint=None, image=None,
                  engine=None, venv=None, npus=[], argv=[], serving={}, unit_file=str(host / 'vllm.service'),
                  env_file=str(host / 'vllm.env'), record_dir=str(host / 'known-good'),
                  fact_path=str(host / 'facts.d' / 'known_good.fact'), timeout=120)
    values.update(changes)
    return values


def record_params(host, **changes):
    values = dict(state='record', mode='container', model=str(host / 'models' / 'stand-in'), image=IMAGE,
                  engine=ENGINE, served_model_name='deepseek', npus=[0])
    values.update(changes)
    return params(host, **values)


def run(p, node=None, writes=None, warnings=None, **kwargs):
    node = node or FakeNode()
    return run_kg.run(p, lambda: node, writes if writes is not None else Writes(),
                      warnings.append if warnings is not None else (lambda message: None), now=NOW, **kwargs)


def test_read_asks_the_node_nothing_and_says_none_without_a_fact(host):
    def no_node():
        raise AssertionError('read needs no node')
    result = run_kg.run(params(host), no_node, Writes(), lambda message: None)
    assert result == {'changed': False, 'services': {}, 'known_good': None,
                      'record_path': str(host / 'known-good' / 'vllm.json')}


def test_record_in_check_mode_predicts_and_writes_nothing_then_records(host):
    writes = Writes()
    predicted = run(record_params(host), writes=writes, check_mode=True, diff=True)
    assert predicted['changed'] is True and writes.done == [] and not (host / 'known-good').exists()
    assert json.loads(predicted['diff']['before']) == {'current': None, 'previous': None}
    result = run(record_params(host), writes=writes)
    assert result['known_good'] == predicted['known_good'] and 'diff' not in result
    assert writes.done == [(str(host / 'known-good' / 'vllm.json'), 0o600),
                           (str(host / 'facts.d' / 'known_good.fact'), 0o644)]
    assert oct(os.stat(str(host / 'known-good')).st_mode & 0o777) == oct(0o700)
    current = result['known_good']['current']
    assert (current['time'], current['image_id'], current['model_digest'], current['venv']) == (
        NOW, IMAGE_ID, 'd' * 64, None)
    again = Writes()
    assert run(record_params(host), writes=again)['changed'] is False and again.done == []


def test_record_asks_the_digest_unless_given_or_not_to_verify(host):
    node = FakeNode()
    run(record_params(host), node=node)
    model = str(host / 'models' / 'stand-in')
    assert node.asked == [('model_digest', model, model + '/SHA256SUMS'), ('image_id', ENGINE, IMAGE)]
    for changes in ({'model_digest': 'f' * 64}, {'verify_model': False}):
        node = FakeNode()
        run(record_params(host, **changes), node=node)
        assert node.asked == [('image_id', ENGINE, IMAGE)]


def test_native_mode_records_the_venv_vllm_and_no_image(host):
    node = FakeNode()
    current = run(record_params(host, mode='native', venv='/opt/vllm', image=IMAGE), node=node)['known_good']['current']
    assert (current['venv'], current['vllm_version'], current['image'], current['image_id']) == (
        '/opt/vllm', '0.32.0', None, None)
    assert ('vllm_version', '/opt/vllm') in node.asked


@pytest.mark.parametrize('changes, node, message', [
    ({'engine': None}, FakeNode(), 'state=record needs engine'),
    ({'mode': 'native'}, FakeNode(), 'state=record needs venv'),
    ({'name': 'a/b'}, FakeNode(), 'name: the service name \'a/b\' holds \'/\', which systemd does not allow in a unit '
                                  'name (letters, digits, ":", "-", "_", ".", "\\" and "@" only)'),
    ({}, FakeNode(image_id=None), 'the image %s is not in %s, so it is no known good' % (IMAGE, ENGINE)),
    ({}, FakeNode(digest=(None, 'model.safetensors differs')),
     'the model {host}/models/stand-in does not verify against {host}/models/stand-in/SHA256SUMS, so it is no known '
     'good: model.safetensors differs'),
    ({'unit_file': '{host}/gone.service'}, FakeNode(), 'unit_file {host}/gone.service cannot be read: the service is '
                                                       'not deployed as recorded'),
])
def test_record_failures_name_the_option_and_write_nothing(host, changes, node, message):
    changes = dict((key, value.format(host=host) if isinstance(value, str) else value) for key, value in changes.items())
    writes = Writes()
    with pytest.raises(run_kg.KnownGoodFailure) as failed:
        run(record_params(host, **changes), node=node, writes=writes)
    assert failed.value.msg == message.format(host=host)
    assert writes.done == []


def test_a_fact_not_ours_warns_and_is_written_anew(host):
    (host / 'facts.d').mkdir()
    (host / 'facts.d' / 'known_good.fact').write_text('[]')
    warnings = []
    run(record_params(host), warnings=warnings)
    assert warnings == ['the local fact %s is not one this collection wrote (it is not a JSON object): it is written '
                        'anew' % (host / 'facts.d' / 'known_good.fact')]
    assert kg.parse_fact((host / 'facts.d' / 'known_good.fact').read_text())[1] == []


def test_restore_writes_the_files_back_and_diffs_the_unit_only(host):
    run(record_params(host))
    (host / 'vllm.service').write_text('[Service]\nExecStart=/bin/false\n')
    (host / 'vllm.env').write_text('VLLM_API_KEY="sk-other"\n')
    writes = Writes()
    predicted = run(params(host, state='restore'), writes=writes, check_mode=True, diff=True)
    assert writes.done == [] and (predicted['unit_changed'], predicted['env_changed']) == (True, True)
    assert predicted['diff'] == [
        {'before_header': str(host / 'vllm.service'), 'after_header': str(host / 'vllm.service'),
         'before': '[Service]\nExecStart=/bin/false\n', 'after': UNIT},
        {'prepared': '%s changes (its contents are not shown: it can hold the API key)' % (host / 'vllm.env')}]
    assert 'sk-run' not in json.dumps(predicted)
    result = run(params(host, state='restore'), writes=writes)
    assert writes.done == [(str(host / 'vllm.service'), 0o644), (str(host / 'vllm.env'), 0o600)]
    assert (result['changed'], result['which'], result['unit'], result['npus']) == (True, 'current', 'vllm.service', [0])
    assert (host / 'vllm.env').read_text() == ENV
    assert run(params(host, state='restore'))['changed'] is False


def test_restore_fails_with_what_is_missing_and_writes_nothing(host):
    run(record_params(host))
    writes = Writes()
    with pytest.raises(run_kg.KnownGoodFailure) as failed:
        run(params(host, state='restore'), node=FakeNode(image_id='sha256:' + '2' * 64), writes=writes)
    assert failed.value.data['missing'] == ['the image %s is now id sha256:%s, not the known good id %s'
                                            % (IMAGE, '2' * 64, IMAGE_ID)]
    assert failed.value.msg.endswith('. Nothing was changed.') and writes.done == []
    assert failed.value.data['record_path'] == str(host / 'known-good' / 'vllm.json')


def test_restore_without_a_record_names_the_role(host):
    with pytest.raises(run_kg.KnownGoodFailure) as failed:
        run(params(host, state='restore'))
    assert failed.value.msg == ('vllm has no known good record (%s): it is written when the service passes its health '
                                'gate (role vllm_service)' % (host / 'known-good' / 'vllm.json'))


def test_a_write_that_fails_names_the_file(host):
    def refused(path, text, mode):
        raise OSError(30, 'Read-only file system')
    with pytest.raises(run_kg.KnownGoodFailure) as failed:
        run(record_params(host), writes=refused)
    assert failed.value.msg == 'cannot write %s: [Errno 30] Read-only file system' % (host / 'known-good' / 'vllm.json')


class FakeRunner:
    def __init__(self, answer):
        self.answer = answer
        self.argvs = []

    def run(self, argv):
        self.argvs.append(argv)
        return CommandResult(argv, *self.answer)


@pytest.mark.parametrize('answer, expected', [((0, IMAGE_ID + '\n', ''), IMAGE_ID), ((0, '\n', ''), None),
                                              ((1, '', 'Error: No such image'), None)])
def test_the_node_asks_the_engine_for_the_image_id(answer, expected):
    runner = FakeRunner(answer)
    assert run_kg.Node(runner, 120, None).image_id(ENGINE, IMAGE) == expected
    assert runner.argvs == [[ENGINE, 'image', 'inspect', '--format', '{{.Id}}', IMAGE]]


def test_the_node_asks_the_venv_python_only_when_there_is_one(tmp_path):
    runner = FakeRunner((0, '0.33.0\n', ''))
    node = run_kg.Node(runner, 120, None)
    assert node.vllm_version(str(tmp_path)) is None and runner.argvs == []
    (tmp_path / 'bin').mkdir()
    (tmp_path / 'bin' / 'python').write_text('')
    assert node.vllm_version(str(tmp_path)) == '0.33.0'
    assert runner.argvs == [[str(tmp_path / 'bin' / 'python'), '-c', run_kg.VLLM_VERSION_SCRIPT]]


def test_the_node_verifies_the_model_against_its_manifest(tmp_path, monkeypatch):
    model = tmp_path / 'model'
    model.mkdir()
    (model / 'weights').write_text('w\n')
    monkeypatch.setattr(run_kg, 'default_cache_path', lambda path: str(tmp_path / 'cache.json'))
    node = run_kg.Node(FakeRunner((0, '', '')), 120, lambda message: None)
    digest, problem = node.model_digest(str(model), str(model / 'SHA256SUMS'))
    assert digest is None and problem
    (model / 'SHA256SUMS').write_text('%s  weights\n' % hashlib.sha256(b'w\n').hexdigest())
    digest, problem = node.model_digest(str(model), str(model / 'SHA256SUMS'))
    assert (digest, problem) == (hashlib.sha256((model / 'SHA256SUMS').read_bytes()).hexdigest(), None)
