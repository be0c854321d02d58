# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""container_image_load's main() against the fake host (the engine CLI's answers mocked) with real archives."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import container_image_load
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FailJson, run_main
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.stack.test__image_archive import (
    OTHER,
    VLLM,
    docker_archive,
    oci_archive,
    sha256,
    write_tar,
)

TAG = 'quay.io/ascend/vllm-ascend:v0.9.1'
VLLM_ID = sha256(VLLM)
OTHER_ID = sha256(OTHER)
DOCKER = '/usr/bin/docker'
PODMAN = '/usr/bin/podman'
NO_SUCH = (1, '', 'Error response from daemon: No such image: sha256:%s\n' % VLLM_ID)
PODMAN_NO_SUCH = (125, '', 'Error: %s: image not known\n' % VLLM_ID)


class Engine:
    """The images a fake docker or podman has (hex ID by reference), answering image inspect, load and tag."""

    def __init__(self, host, name, path, images=None):
        self.host = host
        self.name = name
        self.path = path
        self.images = dict(images or {})
        self.loads = []
        host.on_path[name] = path
        host.executables.add(path)

    def ids(self, hex_id):
        return 'sha256:' + hex_id if self.name == 'docker' else hex_id

    def inspect(self, reference):
        def answer():
            key = reference[len('sha256:'):] if reference.startswith('sha256:') else reference
            found = key if key in self.images.values() else self.images.get(key)
            if found is None:
                return NO_SUCH if self.name == 'docker' else PODMAN_NO_SUCH
            return 0, self.ids(found) + '\n', ''
        self.host.answers[(self.path, 'image', 'inspect', '--format', '{{.Id}}', reference)] = answer

    def on_load(self, archive, adds):
        def answer():
            self.loads.append(archive)
            self.images.update(adds)
            return 0, 'Loaded image: %s\n' % TAG, ''
        self.host.answers[(self.path, 'load', '-i', archive)] = answer

    def on_tag(self, source, name):
        def answer():
            self.images[name] = source[len('sha256:'):] if source.startswith('sha256:') else source
            return 0, '', ''
        self.host.answers[(self.path, 'tag', source, name)] = answer


def run_module(args, outcome=None):
    if outcome is None:
        return run_main(container_image_load.main, args)
    return run_main(container_image_load.main, args, outcome)


@pytest.fixture
def archive(tmp_path):
    return docker_archive(tmp_path / 'vllm.tar', {TAG: VLLM})


@pytest.mark.parametrize('engine_name, path', [('docker', DOCKER), ('podman', PODMAN)])
def test_an_absent_image_is_loaded_then_present_ones_are_not(fake_host, archive, engine_name, path):
    engine = Engine(fake_host, engine_name, path)
    reference = engine.ids(VLLM_ID)
    engine.inspect(reference)
    engine.on_load(archive, {TAG: VLLM_ID})
    result = run_module({'engine': engine_name, 'archive': archive})
    assert result['changed'] is True and result['loaded'] is True and result['tagged'] is False
    assert result['images'] == [{'id': 'sha256:' + VLLM_ID, 'tags': [TAG], 'present_before': False}]
    assert result['format'] == 'docker-archive'
    assert fake_host.commands()[-3:] == [
        ['/usr/bin/timeout', '--kill-after=5', '1800', path, 'image', 'inspect', '--format', '{{.Id}}', reference],
        ['/usr/bin/timeout', '--kill-after=5', '1800', path, 'load', '-i', archive],
        ['/usr/bin/timeout', '--kill-after=5', '1800', path, 'image', 'inspect', '--format', '{{.Id}}', reference]]
    again = run_module({'engine': engine_name, 'archive': archive})
    assert (again['changed'], again['loaded'], again['images'][0]['present_before']) == (False, False, True)
    assert engine.loads == [archive]


def test_check_mode_predicts_the_load_and_runs_only_inspect(fake_host, archive):
    engine = Engine(fake_host, 'docker', DOCKER)
    engine.inspect('sha256:' + VLLM_ID)
    result = run_module({'archive': archive, 'name': TAG, '_ansible_check_mode': True})
    assert (result['changed'], result['loaded'], result['tagged']) == (True, True, False)
    assert [argv[4] for argv in fake_host.commands()] == ['image']
    assert engine.loads == []


def test_a_present_image_gets_a_missing_name(fake_host, archive):
    engine = Engine(fake_host, 'docker', DOCKER, {'old:tag': VLLM_ID})
    engine.inspect('sha256:' + VLLM_ID)
    engine.inspect('local/vllm:prod')
    engine.on_tag('sha256:' + VLLM_ID, 'local/vllm:prod')
    args = {'archive': archive, 'name': 'local/vllm:prod'}
    predicted = run_module(dict(args, _ansible_check_mode=True))
    assert (predicted['changed'], predicted['loaded'], predicted['tagged']) == (True, False, True)
    assert 'local/vllm:prod' not in engine.images
    result = run_module(args)
    assert (result['changed'], result['loaded'], result['tagged']) == (True, False, True)
    assert engine.images['local/vllm:prod'] == VLLM_ID
    assert run_module(args)['changed'] is False


def test_a_name_on_another_image_is_moved_to_this_one(fake_host, archive):
    engine = Engine(fake_host, 'podman', PODMAN, {TAG: OTHER_ID, 'x': VLLM_ID})
    engine.inspect(VLLM_ID)
    engine.inspect(TAG)
    engine.on_tag(VLLM_ID, TAG)
    result = run_module({'engine': 'podman', 'archive': archive, 'name': TAG})
    assert result['tagged'] is True and engine.images[TAG] == VLLM_ID


def test_oci_archive_is_loaded_by_its_config_digest(fake_host, tmp_path):
    path = oci_archive(tmp_path / 'vllm-oci.tar', VLLM)
    engine = Engine(fake_host, 'podman', PODMAN)
    engine.inspect(VLLM_ID)
    engine.on_load(path, {TAG: VLLM_ID})
    result = run_module({'engine': 'podman', 'archive': path})
    assert result['loaded'] is True and result['format'] == 'oci-archive'


def test_an_archive_of_several_images_loads_when_one_is_missing(fake_host, tmp_path):
    path = docker_archive(tmp_path / 'two.tar', {'a:1': VLLM, 'b:1': OTHER})
    engine = Engine(fake_host, 'docker', DOCKER, {'a:1': VLLM_ID})
    engine.inspect('sha256:' + VLLM_ID)
    engine.inspect('sha256:' + OTHER_ID)
    engine.on_load(path, {'b:1': OTHER_ID})
    result = run_module({'archive': path})
    assert [image['present_before'] for image in result['images']] == [True, False]
    assert result['loaded'] is True
    failed = run_module({'archive': path, 'name': 'c:1'}, FailJson)
    assert failed['msg'] == ('archive %s holds 2 images; name c:1 can tag only an archive of one image: leave name out'
                             % path)


def test_a_bad_archive_fails_before_any_command(fake_host, tmp_path):
    path = write_tar(tmp_path / 'notes.tar', {'README': b'not an image'})
    Engine(fake_host, 'docker', DOCKER)
    result = run_module({'archive': path}, FailJson)
    assert result['msg'] == ('%s holds neither manifest.json (docker-archive, docker save) nor index.json (OCI image '
                             'layout): it is no image archive; nothing was loaded' % path)
    assert fake_host.commands() == []


def test_a_missing_archive_fails_naming_it(fake_host, tmp_path):
    result = run_module({'archive': str(tmp_path / 'none.tar')}, FailJson)
    assert result['msg'] == 'archive %s is not a file on the host: copy the image archive there first' % (tmp_path / 'none.tar')


def test_a_load_that_fails_reports_the_command(fake_host, archive):
    engine = Engine(fake_host, 'docker', DOCKER)
    engine.inspect('sha256:' + VLLM_ID)
    fake_host.answers[(DOCKER, 'load', '-i', archive)] = (1, '', 'Error processing tar file(exit status 1): unexpected EOF\n')
    result = run_module({'archive': archive}, FailJson)
    assert result['msg'] == 'docker load -i %s failed' % archive
    assert result['rc'] == 1 and 'unexpected EOF' in result['stderr']


def test_a_load_that_leaves_no_image_fails(fake_host, archive):
    engine = Engine(fake_host, 'docker', DOCKER)
    engine.inspect('sha256:' + VLLM_ID)
    engine.on_load(archive, {})
    result = run_module({'archive': archive}, FailJson)
    assert result['msg'] == ('docker load -i %s ended without error, but the engine has no image sha256:%s afterwards: '
                             'is the archive complete?' % (archive, VLLM_ID))


def test_an_engine_that_does_not_answer_fails_with_a_hint(fake_host, archive):
    Engine(fake_host, 'docker', DOCKER)
    fake_host.answers[(DOCKER, 'image', 'inspect', '--format', '{{.Id}}', 'sha256:' + VLLM_ID)] = (
        1, '', 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n')
    result = run_module({'archive': archive}, FailJson)
    assert result['msg'] == ('docker image inspect sha256:%s failed: is the docker engine running and may this user use it?'
                             % VLLM_ID)


def test_no_engine_cli_fails_naming_the_option(fake_host, archive):
    result = run_module({'archive': archive, 'engine': 'podman'}, FailJson)
    assert result['msg'] == 'podman was found not in PATH: install podman, or set executable to its location'
