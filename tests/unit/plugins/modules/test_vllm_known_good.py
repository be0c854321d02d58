# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vllm_known_good's main() on real files in a scratch directory (unit, environment file, a model with its manifest,
the record and the local fact), the container engine's and the venv's answers mocked: record, read and restore, each
in check mode, for real, and again; the failures that change nothing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import stat
import tempfile

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _known_good as kg
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._known_good_run import VLLM_VERSION_SCRIPT
from ansible_collections.kunpeng_ascend.vllm.plugins.modules import vllm_known_good
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FailJson, fails_after, run_main

KEY = 'sk-known-good-0123456789'
IMAGE = 'quay.io/ascend/vllm-ascend:v0.7.3'
IMAGE_ID = 'sha256:' + '1' * 64
ENGINE = '/usr/bin/docker'
ASCEND = {'driver': {'version': '24.1.rc1'}, 'firmware': {'version': '7.5.0.1.129'}, 'toolkit': {'version': '8.0.0'},
          'kernels': {'version': '8.0.0'}, 'nnal': None}


class Service:
    """A deployed service's files under the fake host's root, and the module's arguments for them."""

    def __init__(self, host):
        self.host = host
        self.unit_file = host.write('/etc/systemd/system/vllm.service', self.unit('stand-in-v1'))
        self.env_file = host.write('/etc/vllm/vllm.env', 'VLLM_API_KEY="%s"\n' % KEY, mode=0o600)
        self.record_dir = host.path('/etc/kunpeng-ascend-vllm/known-good')
        self.fact_path = host.path('/etc/ansible/facts.d/kunpeng_ascend_vllm_known_good.fact')
        self.record_path = os.path.join(self.record_dir, 'vllm.json')
        self.models = {name: self.model(name) for name in ('stand-in-v1', 'stand-in-v2')}
        self.image_id = IMAGE_ID
        host.on_path['timeout'] = '/usr/bin/timeout'
        host.answers[(ENGINE, 'image', 'inspect', '--format', '{{.Id}}', IMAGE)] = \
            lambda: (0, self.image_id + '\n', '') if self.image_id else (1, '', 'Error: No such image: %s\n' % IMAGE)

    @staticmethod
    def unit(model):
        return '[Service]\nExecStart=%s run --rm %s vllm serve /root/models/%s\n' % (ENGINE, IMAGE, model)

    def model(self, name):
        weights = self.host.write('/root/models/%s/model.safetensors' % name, 'weights of %s\n' % name)
        digest = hashlib.sha256(('weights of %s\n' % name).encode()).hexdigest()
        self.host.write('/root/models/%s/SHA256SUMS' % name, '%s  model.safetensors\n' % digest)
        return os.path.dirname(weights)

    def manifest_digest(self, name):
        with open(os.path.join(self.models[name], 'SHA256SUMS'), 'rb') as handle:
            return hashlib.sha256(handle.read()).hexdigest()

    def args(self, **changes):
        args = {'name': 'vllm', 'unit_file': self.unit_file, 'env_file': self.env_file, 'record_dir': self.record_dir,
                'fact_path': self.fact_path}
        args.update(changes)
        return args

    def record_args(self, served='stand-in-v1', **changes):
        args = dict(state='record', ascend=ASCEND, mode='container', image=IMAGE, engine=ENGINE,
                    model=self.models[served], served_model_name='deepseek', endpoint='http://127.0.0.1:8000/v1',
                    npus=[0, 1], argv=[ENGINE, 'run', IMAGE], serving={'tensor_parallel_size': 2})
        args.update(changes)
        return self.args(**args)

    def deploy(self, model):
        """What the role does for a new model: the unit and the environment written anew."""
        with open(self.unit_file, 'w') as handle:
            handle.write(self.unit(model))
        with open(self.env_file, 'w') as handle:
            handle.write('VLLM_API_KEY="%s"\nMODEL=%s\n' % (KEY, model))

    def read(self, path):
        with open(path) as handle:
            return handle.read()


@pytest.fixture
def service(fake_host):
    return Service(fake_host)


def run(args, outcome=None):
    return run_main(vllm_known_good.main, args) if outcome is None else run_main(vllm_known_good.main, args, outcome)


def check(args):
    return dict(args, _ansible_check_mode=True, _ansible_diff=True)


def test_record_in_four_runs_with_the_whole_stack_and_no_secret_in_the_result(service):
    predicted = run(check(service.record_args()))
    assert predicted['changed'] is True
    assert not os.path.exists(service.record_path) and not os.path.exists(service.fact_path)
    result = run(service.record_args())
    assert result['changed'] is True
    current = result['known_good']['current']
    assert result['known_good']['previous'] is None
    assert current['stack'] == {'driver': '24.1.rc1', 'firmware': '7.5.0.1.129', 'cann_toolkit': '8.0.0',
                                'cann_kernels': '8.0.0', 'nnal': None}
    assert {key: current[key] for key in ('mode', 'image', 'image_id', 'venv', 'vllm_version', 'model', 'model_digest',
                                          'served_model_name', 'endpoint')} == {
        'mode': 'container', 'image': IMAGE, 'image_id': IMAGE_ID, 'venv': None, 'vllm_version': None,
        'model': service.models['stand-in-v1'], 'model_digest': service.manifest_digest('stand-in-v1'),
        'served_model_name': 'deepseek', 'endpoint': 'http://127.0.0.1:8000/v1'}
    assert current['env_sha256'] == hashlib.sha256(service.read(service.env_file).encode()).hexdigest()
    assert KEY not in json.dumps(result) and KEY not in json.dumps(predicted)
    # The record is root-only and holds the files; the fact is readable and holds neither.
    assert stat.S_IMODE(os.stat(service.record_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(service.record_dir).st_mode) == 0o700
    record = json.loads(service.read(service.record_path))
    assert record['current']['env_content'] == service.read(service.env_file)
    assert record['current']['unit_content'] == service.read(service.unit_file)
    assert stat.S_IMODE(os.stat(service.fact_path).st_mode) == 0o644
    fact = json.loads(service.read(service.fact_path))
    assert fact == {'schema': 'kunpeng_ascend.vllm/known-good/1',
                    'services': {'vllm': {'current': current, 'previous': None}}}
    assert KEY not in service.read(service.fact_path)
    # Again, later: the same stack changes nothing, its time stays.
    assert run(check(service.record_args()))['changed'] is False
    again = run(service.record_args())
    assert again['changed'] is False and again['known_good'] == result['known_good']


def test_a_new_stack_becomes_current_and_the_old_one_previous(service):
    first = run(service.record_args())['known_good']['current']
    service.deploy('stand-in-v2')
    result = run(service.record_args(served='stand-in-v2'))
    assert result['changed'] is True
    assert result['known_good']['previous'] == first
    assert result['known_good']['current']['model'] == service.models['stand-in-v2']
    fact = json.loads(service.read(service.fact_path))
    assert fact['services']['vllm'] == result['known_good']


def test_a_model_that_does_not_verify_is_no_known_good(service):
    with open(os.path.join(service.models['stand-in-v1'], 'model.safetensors'), 'a') as handle:
        handle.write('corrupted')
    failed = run(service.record_args(), FailJson)
    assert failed['msg'].startswith('the model %s does not verify against' % service.models['stand-in-v1'])
    assert not os.path.exists(service.record_path)


def test_a_digest_given_is_recorded_without_verifying_and_none_without_verification(service):
    with open(os.path.join(service.models['stand-in-v1'], 'model.safetensors'), 'a') as handle:
        handle.write('not verified again')
    given = run(service.record_args(model_digest='9' * 64))['known_good']['current']
    assert given['model_digest'] == '9' * 64
    unverified = run(service.record_args(served='stand-in-v2', verify_model=False))['known_good']['current']
    assert unverified['model_digest'] is None


def test_read_returns_the_fact_without_secrets(service):
    assert run(service.args())['known_good'] is None
    recorded = run(service.record_args())['known_good']
    result = run(service.args(state='read'))
    assert result['changed'] is False
    assert result['known_good'] == recorded and result['services'] == {'vllm': recorded}


def test_restore_current_after_a_failed_change_in_four_runs(service):
    run(service.record_args())
    known_unit, known_env = service.read(service.unit_file), service.read(service.env_file)
    service.deploy('stand-in-v2')  # the new model, which then fails its gate
    predicted = run(check(service.args(state='restore')))
    assert (predicted['changed'], predicted['unit_changed'], predicted['env_changed']) == (True, True, True)
    assert predicted['diff'][0] == {'before_header': service.unit_file, 'after_header': service.unit_file,
                                    'before': Service.unit('stand-in-v2'), 'after': known_unit}
    assert KEY not in json.dumps(predicted)
    assert 'stand-in-v2' in service.read(service.unit_file)
    result = run(service.args(state='restore'))
    assert {key: result[key] for key in ('changed', 'unit_changed', 'env_changed', 'which', 'unit', 'npus')} == {
        'changed': True, 'unit_changed': True, 'env_changed': True, 'which': 'current', 'unit': 'vllm.service',
        'npus': [0, 1]}
    assert (service.read(service.unit_file), service.read(service.env_file)) == (known_unit, known_env)
    assert stat.S_IMODE(os.stat(service.env_file).st_mode) == 0o600
    assert run(check(service.args(state='restore')))['changed'] is False
    assert run(service.args(state='restore'))['changed'] is False


def test_restore_previous_and_a_missing_previous(service):
    run(service.record_args())
    failed = run(service.args(state='restore', which='previous'), FailJson)
    assert failed['msg'] == ('the record of vllm has no previous known good (only one stack has passed its gate since '
                             'the record began)')
    first_unit = service.read(service.unit_file)
    service.deploy('stand-in-v2')
    run(service.record_args(served='stand-in-v2'))
    result = run(service.args(state='restore', which='previous'))
    assert result['changed'] is True and result['known_good']['model'] == service.models['stand-in-v1']
    assert service.read(service.unit_file) == first_unit
    assert run(service.args(state='restore', which='previous'))['changed'] is False


def test_restore_a_new_env_file_root_only(service):
    run(service.record_args())
    os.unlink(service.env_file)
    run(service.args(state='restore'))
    assert stat.S_IMODE(os.stat(service.env_file).st_mode) == 0o600


@pytest.mark.parametrize('damage, message', [
    ('model gone', 'the model directory {model} is gone'),
    ('model changed', 'the model {model} no longer matches its known good manifest: digest {digest} expected, none '
                      'found ('),
    ('image gone', 'the image %s (id %s) is not in the container engine' % (IMAGE, IMAGE_ID)),
    ('image replaced', 'the image %s is now id sha256:%s, not the known good id %s' % (IMAGE, '2' * 64, IMAGE_ID)),
])
def test_restore_fails_naming_what_is_missing_and_changes_nothing(service, damage, message):
    run(service.record_args())
    service.deploy('stand-in-v2')
    model = service.models['stand-in-v1']
    if damage == 'model gone':
        for name in os.listdir(model):
            os.unlink(os.path.join(model, name))
        os.rmdir(model)
    elif damage == 'model changed':
        with open(os.path.join(model, 'model.safetensors'), 'a') as handle:
            handle.write('changed')
    else:
        service.image_id = None if damage == 'image gone' else 'sha256:' + '2' * 64
    before = service.read(service.unit_file), service.read(service.env_file)
    failed = run(service.args(state='restore'), FailJson)
    expected = message.format(model=model, digest=json.loads(service.read(service.record_path))['current']['model_digest'])
    assert failed['msg'].startswith('cannot restore the current known good of vllm (%s, recorded ' % model)
    assert expected in failed['msg'] and failed['msg'].endswith('. Nothing was changed.')
    assert len(failed['missing']) == 1
    assert (service.read(service.unit_file), service.read(service.env_file)) == before


def test_restore_without_a_record_or_with_a_damaged_one(service):
    failed = run(service.args(state='restore'), FailJson)
    assert failed['msg'].startswith('vllm has no known good record (%s)' % service.record_path)
    os.makedirs(service.record_dir)
    with open(service.record_path, 'w') as handle:
        handle.write('{"schema": "kunpeng_ascend.vllm/known-good-record/1", "name": "other"}')
    failed = run(service.args(state='restore'), FailJson)
    assert failed['msg'] == ('the known good record %s cannot be used: name is "other", but the file is named after '
                             'vllm; it has no current entry. Move it away to start a new record.'
                             % service.record_path)


def test_native_mode_records_and_checks_the_venv_vllm(service, fake_host):
    venv = fake_host.path('/opt/vllm/venv')
    python = fake_host.write('/opt/vllm/venv/bin/python', '')
    version = {'value': '0.32.0'}
    fake_host.answers[(python, '-c', VLLM_VERSION_SCRIPT)] = lambda: (0, version['value'] + '\n', '')
    args = service.record_args(mode='native', venv=venv, image=None, engine=None)
    current = run(args)['known_good']['current']
    assert (current['venv'], current['vllm_version'], current['image'], current['image_id']) == (venv, '0.32.0',
                                                                                                 None, None)
    version['value'] = '0.33.0'
    failed = run(service.args(state='restore'), FailJson)
    assert 'the venv %s has vLLM 0.33.0, not the known good 0.32.0' % venv in failed['msg']


@pytest.mark.parametrize('changes, message', [
    ({'model': None}, 'state=record needs model'),
    ({'mode': 'native', 'venv': None}, 'state=record needs venv'),
    ({'image': None}, 'state=record needs image'),
    ({'name': '../x'}, 'name: '),
])
def test_record_refuses_missing_inputs(service, changes, message):
    failed = run(service.record_args(**changes), FailJson)
    assert failed['msg'].startswith(message)


def test_a_fact_that_is_not_ours_is_written_anew_with_a_warning(service, fake_host):
    fake_host.write('/etc/ansible/facts.d/kunpeng_ascend_vllm_known_good.fact', 'garbage')
    run(service.record_args())
    assert kg.parse_fact(service.read(service.fact_path))[1] == []
    assert fake_host.warnings()[0].startswith('the local fact %s is not one this collection wrote' % service.fact_path)


# ------------------------------------------------------------------------- files that are no regular file
# Every file the module reads goes through the collection's one safe read: in place of any of them, a FIFO (which
# would block the read for ever), a device (which would be read without end), a socket, a directory or a file larger
# than the bound fails at once, naming the option or file, and nothing is written.

def _created(path):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    return path


def _socket(path):
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder.bind(path)
    return holder


HOSTILE = {
    'fifo': (os.mkfifo, 'a FIFO (named pipe), not a regular file'),
    'link to /dev/zero': (lambda path: os.symlink('/dev/zero', path), 'a character device, not a regular file'),
    'directory': (os.mkdir, 'a directory, not a regular file'),
    'socket': (_socket, 'a socket, not a regular file'),
    'huge': (lambda path: os.truncate(_created(path), kg.MAX_BYTES + 1), 'larger than 1048576 bytes, not '),
}


@contextlib.contextmanager
def hostile(path, kind):
    """``path`` replaced by a ``kind`` of HOSTILE (a socket bound at a short path, linked from ``path``)."""
    if os.path.lexists(path):
        os.unlink(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    make, reason = HOSTILE[kind]
    short = tempfile.mkdtemp(prefix='kg')
    holder = None
    try:
        if kind == 'socket':
            holder = make(os.path.join(short, 's'))
            os.symlink(os.path.join(short, 's'), path)
        else:
            make(path)
        with fails_after(10):
            yield reason
    finally:
        if holder is not None:
            holder.close()
        shutil.rmtree(short)


def written(service):
    return [path for path in (service.record_path, service.fact_path) if os.path.lexists(path)]


@pytest.mark.parametrize('kind', sorted(HOSTILE))
@pytest.mark.parametrize('option', ['env_file', 'unit_file'])
def test_record_refuses_an_env_or_unit_file_that_is_no_regular_file(service, option, kind):
    path = getattr(service, option)
    with hostile(path, kind) as reason:
        failed = run(service.record_args(), FailJson)
    assert failed['msg'].startswith('%s %s cannot be read: %s' % (option, path, reason)), failed['msg']
    assert failed['msg'].endswith('Nothing was changed.') and written(service) == []


@pytest.mark.parametrize('kind', sorted(HOSTILE))
@pytest.mark.parametrize('state', ['read', 'record'])
def test_a_local_fact_that_is_no_regular_file_fails_naming_fact_path(service, state, kind):
    with hostile(service.fact_path, kind) as reason:
        failed = run(service.record_args() if state == 'record' else service.args(state='read'), FailJson)
    assert failed['msg'].startswith('fact_path %s cannot be read: %s' % (service.fact_path, reason)), failed['msg']
    assert not os.path.lexists(service.record_path)


@pytest.mark.parametrize('kind', sorted(HOSTILE))
def test_a_record_that_is_no_regular_file_fails_the_restore(service, kind):
    with hostile(service.record_path, kind) as reason:
        failed = run(service.args(state='restore'), FailJson)
    assert failed['msg'].startswith('the known good record (record_dir) %s cannot be read: %s'
                                    % (service.record_path, reason)), failed['msg']


@pytest.mark.parametrize('kind', sorted(HOSTILE))
@pytest.mark.parametrize('which', ['env_file', 'unit_file'])
def test_restore_refuses_an_env_or_unit_file_that_is_no_regular_file_and_writes_nothing(service, which, kind):
    run(service.record_args())
    record_before = service.read(service.record_path)
    other = service.unit_file if which == 'env_file' else service.env_file
    other_before = service.read(other)
    path = getattr(service, which)
    with hostile(path, kind) as reason:
        failed = run(service.args(state='restore'), FailJson)
        assert failed['msg'].startswith("the known good's %s %s cannot be read: %s" % (
            {'env_file': 'environment file', 'unit_file': 'unit file'}[which], path, reason)), failed['msg']
        # Neither file was written: the hostile one is still there, the other as it was.
        assert not os.path.isfile(path) or os.path.getsize(path) > kg.MAX_BYTES
    assert service.read(other) == other_before and service.read(service.record_path) == record_before
