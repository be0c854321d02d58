# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The simulator's image archive: what container_image_load reads of it, and a stable ID for the same tag."""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._image_archive import read_archive_images
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import simulator_module

build_image_archive = simulator_module('build_image_archive', 'build_image_archive.py')

TAG = 'quay.io/ascend/vllm-ascend:v0.7.3'


def test_the_archive_reads_as_one_image_with_its_tag_and_id(tmp_path):
    image_id = build_image_archive.build(TAG, str(tmp_path / 'image.tar'), arch='arm64')
    images = read_archive_images(str(tmp_path / 'image.tar'))
    assert [(image['id'], image['tags']) for image in images] == [(image_id.split(':')[1], [TAG])]


def test_the_same_tag_gives_the_same_id_and_another_tag_another(tmp_path):
    first = build_image_archive.build(TAG, str(tmp_path / 'a.tar'), arch='arm64')
    again = build_image_archive.build(TAG, str(tmp_path / 'b.tar'), arch='arm64')
    other = build_image_archive.build(TAG.replace('v0.7.3', 'v0.13.0'), str(tmp_path / 'c.tar'), arch='arm64')
    assert first == again != other
    assert (tmp_path / 'a.tar').read_bytes() == (tmp_path / 'b.tar').read_bytes()
