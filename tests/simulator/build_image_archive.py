#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: contributors to the kunpeng_ascend.vllm collection
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a small image archive in docker-archive format (what `docker save` writes) for the simulated node.

Usage: build_image_archive.py --tag quay.io/ascend/vllm-ascend:v0.7.3 --out /path/image.tar [--arch arm64] [--label k=v ...]

The image has one empty layer and a config naming the tag and the labels; its ID (the SHA-256 of the config) is
stable for the same tag and labels, so a rebuilt archive is "the same image" to an engine that loaded it before.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import tarfile


def _add(archive, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    info.mode = 0o644
    archive.addfile(info, io.BytesIO(data))


def build(tag, out, labels=None, arch=None):
    """Write the archive of one image tagged ``tag`` to ``out``; return the image ID (sha256:<hex>)."""
    layer_buffer = io.BytesIO()
    with tarfile.open(fileobj=layer_buffer, mode='w', format=tarfile.USTAR_FORMAT):
        pass
    layer = layer_buffer.getvalue()
    layer_digest = hashlib.sha256(layer).hexdigest()
    config = json.dumps({
        'architecture': arch or ('arm64' if os.uname().machine == 'aarch64' else 'amd64'),
        'os': 'linux',
        'config': {'Labels': dict(labels or {}), 'Cmd': ['vllm', 'serve']},
        'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + layer_digest]},
        'history': [{'created_by': 'ascend-sim build_image_archive.py ' + tag}],
    }, sort_keys=True).encode()
    config_digest = hashlib.sha256(config).hexdigest()
    manifest = json.dumps([{'Config': config_digest + '.json', 'RepoTags': [tag],
                            'Layers': [layer_digest + '/layer.tar']}]).encode()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with tarfile.open(out, 'w', format=tarfile.USTAR_FORMAT) as archive:
        _add(archive, config_digest + '.json', config)
        _add(archive, layer_digest + '/layer.tar', layer)
        _add(archive, 'manifest.json', manifest)
    return 'sha256:' + config_digest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tag', required=True)
    parser.add_argument('--out', required=True)
    parser.add_argument('--label', action='append', default=[], help='KEY=VALUE')
    parser.add_argument('--arch', help='arm64 or amd64 (default: this machine)')
    args = parser.parse_args(argv)
    labels = dict(item.split('=', 1) for item in args.label)
    print(build(args.tag, args.out, labels, args.arch))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
