# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The images a container image archive holds, read without loading it: ``read_archive_images(path)`` gives each
image's ID (the SHA-256 of its config blob, the ID ``docker images`` and ``podman images`` show) and tags, from a
docker-archive (``docker save``: ``manifest.json``, each entry's ``Config``) or an OCI image layout (``index.json``
-> manifest -> ``config.digest``), plain or compressed (gzip, bzip2, xz). ``image_id_hex`` reads the ID an engine
prints - ``sha256:<hex>`` (docker) or ``<hex>`` (podman) - so that IDs compare by their hex.
"""

from __future__ import annotations

import hashlib
import re
import tarfile

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _json

# manifest.json, index.json and the blobs read to reach a config are small; a larger one is no such file.
MAX_METADATA_BYTES = 16 * 1024 * 1024
OCI_INDEX_TYPES = ('application/vnd.oci.image.index.v1+json', 'application/vnd.docker.distribution.manifest.list.v2+json')
_HEX = re.compile(r'(?:sha256:)?([0-9a-f]{64})\Z')
_DIGEST = re.compile(r'sha256:([0-9a-f]{64})\Z')


class ArchiveError(Exception):
    """The archive cannot be read as an image archive; the message names it and why."""


def image_id_hex(text):
    """The 64 hex digits of an image ID written ``sha256:<hex>`` or ``<hex>`` (case and blanks ignored); None for
    anything else."""
    match = _HEX.match((text or '').strip().lower())
    return match.group(1) if match else None


class _Archive:
    def __init__(self, path):
        self.path = path
        try:
            self.tar = tarfile.open(path, 'r:*')
            self.members = {}
            for member in self.tar.getmembers():
                name = member.name[2:] if member.name.startswith('./') else member.name
                self.members.setdefault(name, member)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise ArchiveError('%s is not a readable tar archive of a container image (%s)' % (path, error))

    def close(self):
        self.tar.close()

    def has(self, name):
        return name in self.members

    def read(self, name, what):
        member = self.members.get(name)
        if member is None:
            raise ArchiveError('%s has no %s (%s)' % (self.path, name, what))
        if not member.isfile():
            raise ArchiveError('%s: %s (%s) is not a regular file' % (self.path, name, what))
        if member.size > MAX_METADATA_BYTES:
            raise ArchiveError('%s: %s (%s) is larger than %d bytes' % (self.path, name, what, MAX_METADATA_BYTES))
        try:
            return self.tar.extractfile(member).read()
        except (tarfile.TarError, EOFError, OSError, AttributeError) as error:
            raise ArchiveError('%s: %s (%s) cannot be read (%s)' % (self.path, name, what, error))

    def json(self, name, what):
        try:
            return _json.loads(self.read(name, what))
        except (ValueError, UnicodeDecodeError) as error:
            raise ArchiveError('%s: %s (%s) is not valid JSON (%s)' % (self.path, name, what, error))

    def blob(self, digest, what):
        match = _DIGEST.match(digest if isinstance(digest, str) else '')
        if not match:
            raise ArchiveError('%s: %s has digest %r, not sha256:<64 hex digits>' % (self.path, what, digest))
        return 'blobs/sha256/' + match.group(1)


def _config_id(archive, name, what):
    """The image ID of the config ``name``: the SHA-256 of its bytes."""
    return hashlib.sha256(archive.read(name, what)).hexdigest()


def _docker_archive(archive):
    manifest = archive.json('manifest.json', 'the docker-archive manifest')
    if not isinstance(manifest, list) or not manifest:
        raise ArchiveError('%s: manifest.json lists no image' % archive.path)
    images = []
    for number, entry in enumerate(manifest):
        config = entry.get('Config') if isinstance(entry, dict) else None
        if not isinstance(config, str) or not config:
            raise ArchiveError('%s: entry %d of manifest.json has no Config' % (archive.path, number + 1))
        tags = entry.get('RepoTags') or []
        if not isinstance(tags, list):
            raise ArchiveError('%s: entry %d of manifest.json has RepoTags of JSON type %s, not a list of names'
                               % (archive.path, number + 1, type(tags).__name__))
        images.append({'id': _config_id(archive, config, 'the config of entry %d of manifest.json' % (number + 1)),
                       'tags': [tag for tag in tags if isinstance(tag, str)]})
    return images


def _oci_manifests(archive, descriptor, what, depth=0):
    """The image manifests a descriptor leads to (an image index leads to its manifests)."""
    if not isinstance(descriptor, dict):
        raise ArchiveError('%s: %s is not a descriptor' % (archive.path, what))
    document = archive.json(archive.blob(descriptor.get('digest'), what), what)
    media_type = descriptor.get('mediaType') or (document.get('mediaType') if isinstance(document, dict) else None)
    if isinstance(document, dict) and (media_type in OCI_INDEX_TYPES or 'manifests' in document):
        if depth > 4:
            raise ArchiveError('%s: image indexes nested too deep' % archive.path)
        found = []
        for number, child in enumerate(document.get('manifests') or []):
            found.extend(_oci_manifests(archive, child, '%s, manifest %d' % (what, number + 1), depth + 1))
        return found
    return [(descriptor, document, what)]


def _oci_layout(archive):
    index = archive.json('index.json', 'the OCI image index')
    manifests = index.get('manifests') if isinstance(index, dict) else None
    if not isinstance(manifests, list) or not manifests:
        raise ArchiveError('%s: index.json lists no manifest' % archive.path)
    images = []
    seen = set()
    for number, descriptor in enumerate(manifests):
        for found, document, what in _oci_manifests(archive, descriptor, 'manifest %d of index.json' % (number + 1)):
            config = document.get('config') if isinstance(document, dict) else None
            if not isinstance(config, dict):
                raise ArchiveError('%s: %s has no config' % (archive.path, what))
            image_id = _config_id(archive, archive.blob(config.get('digest'), 'the config of ' + what), 'the config of ' + what)
            # The name is on the manifest's descriptor, or on the index that leads to it.
            annotations = found.get('annotations') or descriptor.get('annotations') or {}
            if not isinstance(annotations, dict):
                raise ArchiveError('%s: the annotations of %s are a JSON %s, not an object'
                                   % (archive.path, what, type(annotations).__name__))
            tag = annotations.get('io.containerd.image.name') or annotations.get('org.opencontainers.image.ref.name')
            if image_id in seen:
                continue
            seen.add(image_id)
            images.append({'id': image_id, 'tags': [tag] if isinstance(tag, str) and tag else []})
    return images


def read_archive_images(path):
    """The images of the archive at ``path``: a list of {'id': <64 hex>, 'tags': [...], 'format': ...}.

    A docker-archive is read by its manifest.json (docker 25 and later also write index.json; manifest.json is
    the one both docker and podman load by). ArchiveError when it is none of the two or cannot be read.
    """
    archive = _Archive(path)
    try:
        if archive.has('manifest.json'):
            images, kind = _docker_archive(archive), 'docker-archive'
        elif archive.has('index.json'):
            images, kind = _oci_layout(archive), 'oci-archive'
        else:
            raise ArchiveError('%s holds neither manifest.json (docker-archive, docker save) nor index.json (OCI image '
                               'layout): it is no image archive' % path)
    finally:
        archive.close()
    for image in images:
        image['format'] = kind
    return images
