# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

What module container_image_load does, decided once: the images of an archive (``_image_archive``) looked up in
docker or podman by their ID, the archive loaded when any is missing (and each image seen there afterwards), the one
image tagged with ``name`` when the name points elsewhere; check mode predicts both. ``load_archive(module)`` gives
what the module exits with; the engine's commands run through ``_command.CommandRunner``.
"""

from __future__ import annotations

import os
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._command import CommandRunner, find_executable
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._image_archive import (
    ArchiveError,
    image_id_hex,
    read_archive_images,
)

# What docker and podman print when the image looked up is not there (anything else failing is an error).
NOT_FOUND = re.compile(r'no such (image|object)|image not known|not found|unknown image', re.IGNORECASE)


def engine_reference(engine, hex_id):
    """How the CLI of ``engine`` names an image by ID: docker as sha256:<hex>, podman by the hex it prints."""
    return 'sha256:' + hex_id if engine == 'docker' else hex_id


def name_problem(archive, images, name):
    """Why option ``name`` cannot tag the images of ``archive``: only an archive of one image can be; None when it
    can, or without a name."""
    if name is not None and len(images) != 1:
        return ('archive %s holds %d images; name %s can tag only an archive of one image: leave name out'
                % (archive, len(images), name))
    return None


def needs_tag(current, wanted, name, tags, check_mode, load):
    """Whether ``name`` is to be tagged onto the image ``wanted`` (hex ID), which ``current`` (the hex ID the name
    points at, None for none) is not. In check mode an archive still to be loaded tags itself when it carries the
    name (``tags``)."""
    tag = current != wanted
    if tag and check_mode and load and name in tags:
        return False
    return tag


def reported(images):
    """``(images, format)`` as the module returns them: each ID written sha256:<hex>, the archive's format once."""
    shown = [dict(((key, value) for key, value in image.items() if key != 'format'), id='sha256:' + image['id'])
             for image in images]
    return shown, images[0]['format']


class Engine:
    """The engine's CLI ``executable`` (docker or podman, ``name``) run by ``runner`` under ``timeout`` seconds."""

    def __init__(self, name, executable, runner, timeout):
        self.name = name
        self.executable = executable
        self.runner = runner
        self.timeout = timeout

    def reference(self, hex_id):
        return engine_reference(self.name, hex_id)

    def image_id(self, reference):
        """The hex ID of the image ``reference`` names, or None when the engine has none."""
        result = self.runner.run([self.executable, 'image', 'inspect', '--format', '{{.Id}}', reference])
        if result.rc == 0:
            found = image_id_hex(result.stdout.strip().splitlines()[0] if result.stdout.strip() else '')
            if found is None:
                self.runner.fail(result, '%s image inspect printed no image ID for %s' % (self.name, reference))
            return found
        if result.timed_out:
            self.runner.fail(result, '%s image inspect did not end within %d seconds (timeout): is the engine running?'
                             % (self.name, self.timeout))
        if NOT_FOUND.search(result.stderr + result.stdout):
            return None
        self.runner.fail(result, '%s image inspect %s failed: is the %s engine running and may this user use it?'
                         % (self.name, reference, self.name))

    def has(self, hex_id):
        """Whether the engine has the image of ID ``hex_id``."""
        return self.image_id(self.reference(hex_id)) == hex_id

    def run(self, args, what):
        result = self.runner.run([self.executable] + args)
        if result.rc != 0:
            self.runner.fail(result, '%s %s failed%s' % (
                self.name, what, ' (it did not end within %d seconds: timeout)' % self.timeout
                if result.timed_out else ''))
        return result


def load_archive(module):
    """Everything module container_image_load does after its options are parsed; what it exits with. Fails the
    module naming the option to fix."""
    params = module.params
    archive = params['archive']
    if not os.path.isfile(archive):
        module.fail_json(msg='archive %s is not a file on the host: copy the image archive there first' % archive)
    try:
        images = read_archive_images(archive)
    except ArchiveError as error:
        module.fail_json(msg='%s; nothing was loaded' % error)
    problem = name_problem(archive, images, params['name'])
    if problem:
        module.fail_json(msg=problem)
    executable = find_executable(module, params['engine'], params['executable'], 'executable',
                                 missing_hint='install %s' % params['engine'])
    engine = Engine(params['engine'], executable, CommandRunner(module, params['timeout']), params['timeout'])

    for image in images:
        image['present_before'] = engine.has(image['id'])
    load = not all(image['present_before'] for image in images)
    if load and not module.check_mode:
        engine.run(['load', '-i', archive], 'load -i %s' % archive)
        missing = [image['id'] for image in images if not engine.has(image['id'])]
        if missing:
            module.fail_json(msg='%s load -i %s ended without error, but the engine has no image %s afterwards: is the '
                                 'archive complete?' % (params['engine'], archive, ', '.join('sha256:' + i for i in missing)))
    tag = False
    if params['name'] is not None:
        wanted = images[0]['id']
        current = engine.image_id(params['name']) if images[0]['present_before'] or not module.check_mode else None
        tag = needs_tag(current, wanted, params['name'], images[0]['tags'], module.check_mode, load)
        if tag and not module.check_mode:
            engine.run(['tag', engine.reference(wanted), params['name']], 'tag %s' % params['name'])
    shown, kind = reported(images)
    return dict(changed=load or tag, images=shown, format=kind, loaded=load, tagged=tag)
