#!/usr/bin/env python
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: the first verification of a model directory of at least 2 GiB against its SHA-256 manifest, versus
a re-verification of the unchanged directory (which reuses the verification record instead of hashing).

It writes a scratch model (4 shards of 512 MiB by default, random data) in a temporary directory, writes its
manifest with state=created, then times: a first verification with no record and the files evicted from the page
cache (as after a copy, or on NFS), a first verification with the files in the page cache (hashing speed alone),
a re-verification, and the same re-verification as an Ansible task (`ansible localhost -m ...`, its start-up
included) when `ansible` is on PATH. It prints numbers and asserts nothing; the scratch data is deleted at the end.
Run it with `make bench` or `python tests/benchmarks/model_manifest_reverify.py [--shards N] [--shard-mib M]`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The collection is importable through the link the Makefile keeps in .cache/.
sys.path.insert(0, os.path.join(REPO, '.cache'))

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _model_manifest  # noqa: E402

MIB = 1024 * 1024
BLOCK_MIB = 16


def write_model(directory, shards, shard_mib):
    """``shards`` files of ``shard_mib`` MiB: one random block, each copy of it made different by a counter."""
    block = bytearray(os.urandom(BLOCK_MIB * MIB))
    counter = 0
    for shard in range(shards):
        path = os.path.join(directory, 'model-%05d-of-%05d.safetensors' % (shard + 1, shards))
        with open(path, 'wb') as handle:
            for _block in range(shard_mib // BLOCK_MIB):
                counter += 1
                block[:8] = counter.to_bytes(8, 'little')
                handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
    with open(os.path.join(directory, 'config.json'), 'w', encoding='utf-8') as config:
        json.dump({'model_type': 'benchmark', 'shards': shards}, config)
    # Dated an hour ago, as a model copied earlier (or by rsync -a, which keeps the source's times): a file modified
    # in the 2 seconds before a verification started is hashed again by the next one (_model_manifest.RACY_NS).
    for name in os.listdir(directory):
        os.utime(os.path.join(directory, name), (time.time() - 3600,) * 2)


def evict(directory):
    """Drop the directory's files from the page cache (per file; no system setting is touched)."""
    for name in os.listdir(directory):
        fd = os.open(os.path.join(directory, name), os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def verify(directory, cache, workers):
    warnings = []
    start = time.perf_counter()
    result = _model_manifest.verify_manifest(directory, os.path.join(directory, 'SHA256SUMS'), cache, workers,
                                             'fail', 0, warnings.append)
    seconds = time.perf_counter() - start
    if warnings:
        print('warnings: %s' % warnings, file=sys.stderr)
    return seconds, result


def ansible_reverify(directory, cache):
    """Seconds of the re-verification as one `ansible localhost -m` task, or None without ansible."""
    if shutil.which('ansible') is None:
        return None
    argv = ['ansible', 'localhost', '-c', 'local', '-e', 'ansible_python_interpreter=' + sys.executable,
            '-m', 'kunpeng_ascend.vllm.model_manifest', '-a', json.dumps({'path': directory, 'cache': cache})]
    env = dict(os.environ)
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', os.path.join(REPO, '.cache'))
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        print('the ansible run failed:\n%s%s' % (proc.stdout, proc.stderr), file=sys.stderr)
        return None
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--shards', type=int, default=4)
    parser.add_argument('--shard-mib', type=int, default=512)
    parser.add_argument('--workers', type=int, default=_model_manifest.default_workers())
    args = parser.parse_args()
    if args.shard_mib % BLOCK_MIB:
        parser.error('--shard-mib must be a multiple of %d' % BLOCK_MIB)
    workdir = tempfile.mkdtemp(prefix='model-manifest-bench-')
    try:
        directory = os.path.join(workdir, 'model')
        os.mkdir(directory)
        start = time.perf_counter()
        write_model(directory, args.shards, args.shard_mib)
        written = time.perf_counter() - start
        total = sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))
        print('model: %d shards of %d MiB + config.json = %.2f GiB in %s (written in %.1f s); %d workers, %d CPUs'
              % (args.shards, args.shard_mib, total / 1024 ** 3, workdir, written, args.workers, os.cpu_count()))
        start = time.perf_counter()
        created = _model_manifest.create_manifest(directory, os.path.join(directory, 'SHA256SUMS'),
                                                  os.path.join(workdir, 'created.json'), args.workers, 0, print)
        print('state=created: %d files hashed in %.2f s' % (created['hashed'], time.perf_counter() - start))

        cold_cache = os.path.join(workdir, 'cold.json')
        evict(directory)
        cold, cold_result = verify(directory, cold_cache, args.workers)
        warm, warm_result = verify(directory, os.path.join(workdir, 'warm.json'), args.workers)
        again, again_result = verify(directory, cold_cache, args.workers)
        print()
        print('%-46s %10s %8s %8s %10s' % ('run', 'seconds', 'hashed', 'reused', 'MiB/s'))
        for label, seconds, result in (('first verification, files not in page cache', cold, cold_result),
                                       ('first verification, files in page cache', warm, warm_result),
                                       ('re-verification, unchanged model', again, again_result)):
            rate = result['hashed_bytes'] / MIB / seconds
            print('%-46s %10.3f %8d %8d %10.0f' % (label, seconds, result['hashed'], result['reused'], rate))
        print()
        print('first (not in page cache) / re-verification: %.0fx' % (cold / again))
        print('first (in page cache) / re-verification:     %.0fx' % (warm / again))
        single = hashlib.sha256()
        start = time.perf_counter()
        with open(os.path.join(directory, 'model-00001-of-%05d.safetensors' % args.shards), 'rb') as shard:
            for chunk in iter(lambda: shard.read(MIB), b''):
                single.update(chunk)
        one = time.perf_counter() - start
        print('one thread, one shard from page cache: %.0f MiB/s (for the parallel speed-up)'
              % (args.shard_mib / one))
        task = ansible_reverify(directory, cold_cache)
        if task is not None:
            print('re-verification as an Ansible task (ansible localhost -m, start-up included): %.2f s' % task)
    finally:
        shutil.rmtree(workdir)
    return 0


if __name__ == '__main__':
    sys.exit(main())
