# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_image_load's decisions for container_image_load, without AnsibleModule: how each engine names an image by ID,
which answers mean "no such image", when option name may tag, when a tag is due (check mode's self-tagging archive),
the images as returned; and the engine's commands with a stand-in runner (load_archive itself is covered by
test_container_image_load.py)."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandResult
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _image_load

HEX = 'ab' * 32
OTHER = 'cd' * 32
TAG = 'quay.io/ascend/vllm-ascend:v0.9.1'


def test_docker_names_an_image_by_sha256_and_podman_by_its_hex():
    assert _image_load.engine_reference('docker', HEX) == 'sha256:' + HEX
    assert _image_load.engine_reference('podman', HEX) == HEX


@pytest.mark.parametrize('text, found', [
    ('Error response from daemon: No such image: sha256:%s' % HEX, True),
    ('Error: no such object: "x"', True),
    ('Error: %s: image not known' % HEX, True),
    ('Error: x: image not found', True),
    ('unknown image in image store', True),
    ('Cannot connect to the Docker daemon at unix:///var/run/docker.sock', False),
    ('permission denied while trying to connect', False),
])
def test_only_the_engines_no_such_image_answers_mean_missing(text, found):
    assert bool(_image_load.NOT_FOUND.search(text)) is found


def test_name_tags_only_an_archive_of_one_image():
    one, two = [{'id': HEX}], [{'id': HEX}, {'id': OTHER}]
    assert _image_load.name_problem('/a.tar', two, None) is None
    assert _image_load.name_problem('/a.tar', one, TAG) is None
    assert _image_load.name_problem('/a.tar', two, TAG) == (
        'archive /a.tar holds 2 images; name %s can tag only an archive of one image: leave name out' % TAG)


@pytest.mark.parametrize('current, check_mode, load, tags, expected', [
    (HEX, False, False, [], False),
    (OTHER, False, False, [], True),
    (None, False, True, [TAG], True),
    (None, True, True, [TAG], False),
    (None, True, True, [], True),
    (OTHER, True, False, [TAG], True),
    (HEX, True, True, [TAG], False),
])
def test_a_tag_is_due_when_the_name_points_elsewhere_unless_the_load_in_check_mode_brings_it(
        current, check_mode, load, tags, expected):
    assert _image_load.needs_tag(current, HEX, TAG, tags, check_mode, load) is expected


def test_the_images_are_returned_with_sha256_ids_and_the_format_once():
    images = [{'id': HEX, 'tags': [TAG], 'format': 'oci-archive', 'present_before': True},
              {'id': OTHER, 'tags': [], 'format': 'oci-archive', 'present_before': False}]
    assert _image_load.reported(images) == ([
        {'id': 'sha256:' + HEX, 'tags': [TAG], 'present_before': True},
        {'id': 'sha256:' + OTHER, 'tags': [], 'present_before': False}], 'oci-archive')


class Failed(Exception):
    pass


class Runner:
    """CommandRunner's run and fail, answering each argv from ``answers``."""

    def __init__(self, answers):
        self.answers = answers
        self.ran = []

    def run(self, argv):
        self.ran.append(argv)
        rc, stdout, stderr, timed_out = self.answers[tuple(argv)]
        return CommandResult(argv, rc, stdout, stderr, timed_out)

    def fail(self, result, msg):
        raise Failed(msg)


def inspect(reference):
    return ('/usr/bin/podman', 'image', 'inspect', '--format', '{{.Id}}', reference)


def test_the_engine_reads_an_image_id_or_none_for_no_such_image():
    engine = _image_load.Engine('podman', '/usr/bin/podman', Runner({
        inspect(HEX): (0, 'sha256:%s\n' % HEX.upper(), '', False),
        inspect(OTHER): (125, '', 'Error: %s: image not known\n' % OTHER, False)}), 30)
    assert engine.has(HEX) is True
    assert engine.image_id(OTHER) is None and engine.has(OTHER) is False


@pytest.mark.parametrize('answer, message', [
    ((0, '\n', '', False), 'podman image inspect printed no image ID for %s' % HEX),
    ((124, '', '', True), 'podman image inspect did not end within 30 seconds (timeout): is the engine running?'),
    ((125, '', 'Error: cannot connect', False),
     'podman image inspect %s failed: is the podman engine running and may this user use it?' % HEX),
])
def test_an_inspect_that_says_nothing_usable_fails_naming_why(answer, message):
    engine = _image_load.Engine('podman', '/usr/bin/podman', Runner({inspect(HEX): answer}), 30)
    with pytest.raises(Failed) as failed:
        engine.image_id(HEX)
    assert str(failed.value) == message


def test_a_failed_run_names_the_command_and_a_time_limit_reached():
    engine = _image_load.Engine('docker', '/usr/bin/docker', Runner({
        ('/usr/bin/docker', 'load', '-i', '/a.tar'): (1, '', 'bad', False),
        ('/usr/bin/docker', 'tag', 'x', 'y'): (124, '', '', True)}), 60)
    with pytest.raises(Failed, match=r'^docker load -i /a\.tar failed$'):
        engine.run(['load', '-i', '/a.tar'], 'load -i /a.tar')
    with pytest.raises(Failed, match=r'^docker tag y failed \(it did not end within 60 seconds: timeout\)$'):
        engine.run(['tag', 'x', 'y'], 'tag y')
