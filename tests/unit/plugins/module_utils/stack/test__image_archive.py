# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_image_archive: image IDs read from real tar files built here in the layouts docker save, podman save and
OCI image layouts use; archives that are no image archive refused, naming them. ``image_archive`` and friends are
shared with the module's tests."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._image_archive import (
    ArchiveError,
    image_id_hex,
    read_archive_images,
)

OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
OCI_INDEX = 'application/vnd.oci.image.index.v1+json'


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def config_blob(name):
    """An image config (what its ID is the digest of)."""
    return json.dumps({'architecture': 'arm64', 'os': 'linux', 'config': {'Cmd': ['vllm']},
                       'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + sha256(name.encode())]}}).encode()


def write_tar(path, files, mode='w'):
    """A tar at ``path`` of ``files`` (name -> bytes, or None for a directory)."""
    with tarfile.open(str(path), mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return str(path)


def docker_archive(path, images, legacy=True, mode='w', prefix=''):
    """A docker-archive (docker save) of ``images`` (tag -> config bytes); legacy names configs <hex>.json (docker
    before 25, podman), else blobs/sha256/<hex> beside an index.json (docker 25 and later)."""
    files, manifest, index = {}, [], []
    for tag, config in images.items():
        digest = sha256(config)
        name = digest + '.json' if legacy else 'blobs/sha256/' + digest
        files[prefix + name] = config
        layer = 'layer-' + digest[:8] + '.tar'
        files[prefix + layer] = b'\0' * 1024
        manifest.append({'Config': name, 'RepoTags': [tag] if tag else None, 'Layers': [layer]})
        index.append({'mediaType': OCI_MANIFEST, 'digest': 'sha256:' + digest, 'size': len(config)})
    files[prefix + 'manifest.json'] = json.dumps(manifest).encode()
    if not legacy:
        files[prefix + 'index.json'] = json.dumps({'schemaVersion': 2, 'manifests': index}).encode()
    return write_tar(path, files, mode)


def oci_archive(path, config, ref='quay.io/ascend/vllm-ascend:v0.9.1', nested=False):
    """An OCI image layout (podman save --format oci-archive) of one image; ``nested`` puts an image index between."""
    manifest = json.dumps({'schemaVersion': 2, 'mediaType': OCI_MANIFEST,
                           'config': {'mediaType': 'application/vnd.oci.image.config.v1+json',
                                      'digest': 'sha256:' + sha256(config), 'size': len(config)},
                           'layers': []}).encode()
    files = {'oci-layout': b'{"imageLayoutVersion": "1.0.0"}', 'blobs/': None, 'blobs/sha256/': None,
             'blobs/sha256/' + sha256(config): config, 'blobs/sha256/' + sha256(manifest): manifest}
    top = {'mediaType': OCI_MANIFEST, 'digest': 'sha256:' + sha256(manifest), 'size': len(manifest)}
    if nested:
        inner = json.dumps({'schemaVersion': 2, 'mediaType': OCI_INDEX, 'manifests': [top]}).encode()
        files['blobs/sha256/' + sha256(inner)] = inner
        top = {'mediaType': OCI_INDEX, 'digest': 'sha256:' + sha256(inner), 'size': len(inner)}
    top['annotations'] = {'org.opencontainers.image.ref.name': ref}
    files['index.json'] = json.dumps({'schemaVersion': 2, 'manifests': [top]}).encode()
    return write_tar(path, files)


VLLM = config_blob('vllm')
OTHER = config_blob('other')


@pytest.mark.parametrize('legacy', [True, False], ids=['docker-before-25-and-podman', 'docker-25'])
@pytest.mark.parametrize('mode', ['w', 'w:gz', 'w:xz'])
def test_docker_archive_gives_the_config_digest_and_tags(tmp_path, legacy, mode):
    path = docker_archive(tmp_path / 'image.tar', {'quay.io/ascend/vllm-ascend:v0.9.1': VLLM}, legacy, mode)
    assert read_archive_images(path) == [{'id': sha256(VLLM), 'tags': ['quay.io/ascend/vllm-ascend:v0.9.1'],
                                          'format': 'docker-archive'}]


def test_docker_archive_of_several_images_and_no_tag(tmp_path):
    path = docker_archive(tmp_path / 'image.tar', {'a:1': VLLM, '': OTHER}, prefix='./')
    found = [(image['id'], image['tags']) for image in read_archive_images(path)]
    assert found == [(sha256(VLLM), ['a:1']), (sha256(OTHER), [])]


@pytest.mark.parametrize('nested', [False, True])
def test_oci_layout_follows_index_and_manifest_to_the_config(tmp_path, nested):
    path = oci_archive(tmp_path / 'image.tar', VLLM, nested=nested)
    assert read_archive_images(path) == [{'id': sha256(VLLM), 'tags': ['quay.io/ascend/vllm-ascend:v0.9.1'],
                                          'format': 'oci-archive'}]


def test_the_id_is_the_digest_of_the_config_not_its_name(tmp_path):
    """A config whose name says another digest: the ID engines compute is the digest of its bytes."""
    path = write_tar(tmp_path / 'image.tar', {'0' * 64 + '.json': VLLM,
                                              'manifest.json': json.dumps([{'Config': '0' * 64 + '.json'}]).encode()})
    assert read_archive_images(path)[0]['id'] == sha256(VLLM)


def broken(tmp_path, files):
    return write_tar(tmp_path / 'bad.tar', files)


@pytest.mark.parametrize('make, message', [
    (lambda t: str(t / 'missing.tar'), 'is not a readable tar archive of a container image'),
    (lambda t: write_bytes(t / 'text.tar', b'not a tar at all\n' * 100), 'is not a readable tar archive of a container image'),
    (lambda t: broken(t, {'hello.txt': b'hi'}), 'holds neither manifest.json (docker-archive, docker save) nor index.json'),
    (lambda t: broken(t, {'manifest.json': b'{not json'}), ': manifest.json (the docker-archive manifest) is not valid JSON'),
    (lambda t: broken(t, {'manifest.json': b'[]'}), ': manifest.json lists no image'),
    (lambda t: broken(t, {'manifest.json': b'[{"RepoTags": ["a:1"]}]'}), ': entry 1 of manifest.json has no Config'),
    (lambda t: broken(t, {'manifest.json': b'[{"Config": "abc.json"}]'}),
     ' has no abc.json (the config of entry 1 of manifest.json)'),
    (lambda t: broken(t, {'manifest.json': b'[{"Config": "abc.json"}]', 'abc.json': None}),
     ': abc.json (the config of entry 1 of manifest.json) is not a regular file'),
    (lambda t: broken(t, {'index.json': b'{"manifests": []}'}), ': index.json lists no manifest'),
    # Hostile or odd JSON: deep nesting, NaN, wrong types.
    (lambda t: broken(t, {'manifest.json': b'[' * 50000 + b']' * 50000}), 'is not valid JSON (nested deeper than 64 levels)'),
    (lambda t: broken(t, {'manifest.json': b'[{"Config": NaN}]'}), 'is not valid JSON (NaN is not a JSON number)'),
    (lambda t: broken(t, {'manifest.json': b'[{"Config": "abc.json", "RepoTags": "a:1"}]', 'abc.json': b'{}'}),
     'has RepoTags of JSON type str, not a list of names'),
    (lambda t: broken(t, {'index.json': b'{"manifests": "all"}'}), ': index.json lists no manifest'),
    (lambda t: broken(t, {'manifest.json': b'{"Config": "abc.json"}'}), ': manifest.json lists no image'),
    (lambda t: broken(t, {'index.json': b'{"manifests": [{"digest": "md5:abc"}]}'}),
     ": manifest 1 of index.json has digest 'md5:abc', not sha256:<64 hex digits>"),
    (lambda t: broken(t, {'index.json': json.dumps({'manifests': [{'digest': 'sha256:' + 'a' * 64}]}).encode()}),
     ' has no blobs/sha256/%s (manifest 1 of index.json)' % ('a' * 64)),
])
def test_an_archive_that_is_no_image_archive_is_refused_naming_it(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(ArchiveError) as raised:
        read_archive_images(path)
    assert str(raised.value).startswith(path)
    assert message in str(raised.value)


def test_a_truncated_archive_is_refused(tmp_path):
    path = docker_archive(tmp_path / 'image.tar', {'a:1': VLLM}, mode='w:gz')
    with open(path, 'rb') as handle:
        data = handle.read()
    write_bytes(tmp_path / 'image.tar', data[:len(data) // 2])
    with pytest.raises(ArchiveError) as raised:
        read_archive_images(path)
    assert str(raised.value).startswith(path + ' is not a readable tar archive')


def write_bytes(path, data):
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize('text, expected', [
    ('sha256:' + 'ab' * 32, 'ab' * 32),
    ('AB' * 32 + '\n', 'ab' * 32),
    ('ab' * 31, None),
    ('sha512:' + 'ab' * 32, None),
    ('', None),
    (None, None),
])
def test_image_ids_compare_by_hex(text, expected):
    assert image_id_hex(text) == expected
