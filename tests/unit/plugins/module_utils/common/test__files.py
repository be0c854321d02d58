# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one safe read: regular files only, bounded, never blocking; JSON through the one reader."""

from __future__ import annotations

import os
import socket

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import (
    UnreadableFile,
    read_existing_file,
    read_json_file,
    read_regular_file,
    read_text_file,
)


def _specials(tmp_path):
    fifo = tmp_path / 'fifo'
    os.mkfifo(str(fifo))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / 'sock'))
    return [(str(fifo), 'a FIFO (named pipe), not a regular file'), (str(tmp_path), 'a directory, not a regular file'),
            ('/dev/zero', 'a character device, not a regular file'), ('/dev/null', 'a character device, not a regular file'),
            (str(tmp_path / 'sock'), 'a socket, not a regular file')], sock


@pytest.mark.parametrize('reader', [read_regular_file, read_existing_file, read_text_file, read_json_file])
def test_no_reader_opens_anything_but_a_regular_file_and_none_blocks(reader, tmp_path):
    cases, sock = _specials(tmp_path)
    try:
        for path, reason in cases:
            with pytest.raises(UnreadableFile) as raised:
                reader(path, 1024, 'a certificate')
            assert raised.value.path == path and raised.value.reason == reason
    finally:
        sock.close()


def test_a_file_larger_than_the_bound_is_refused_after_reading_one_byte_more(tmp_path):
    big = tmp_path / 'big'
    big.write_bytes(b'x' * 11)
    with pytest.raises(UnreadableFile, match='larger than 10 bytes, not a calibration set'):
        read_regular_file(str(big), 10, 'a calibration set')
    assert read_regular_file(str(big), 11) == b'x' * 11


def test_missing_files_are_none_for_the_plain_read_and_refused_for_the_others(tmp_path):
    assert read_regular_file(str(tmp_path / 'nothing'), 10) is None
    for reader in (read_existing_file, read_text_file, read_json_file):
        with pytest.raises(UnreadableFile, match='does not exist'):
            reader(str(tmp_path / 'nothing'), 10)


def test_text_must_be_utf8(tmp_path):
    path = tmp_path / 'latin1'
    path.write_bytes(b'caf\xe9')
    with pytest.raises(UnreadableFile, match='not UTF-8 text'):
        read_text_file(str(path), 100, 'a calibration set')
    path.write_bytes(b'\xef\xbb\xbfcaf\xc3\xa9')
    assert read_text_file(str(path), 100) == 'caf\u00e9'


@pytest.mark.parametrize('data, reason', [
    (b'[' * 5000 + b']' * 5000, 'nested deeper than 64 levels'),
    (b'{"a": NaN}', 'NaN is not a JSON number'),
    (b'{"a": 1', 'Expecting'),
    (b'"just a string"', 'a JSON string, not an object'),
    (b'[1]', 'a JSON array, not an object'),
    (b'\xff', 'not UTF-8'),
])
def test_json_is_read_by_the_one_reader_and_its_type_checked(tmp_path, data, reason):
    path = tmp_path / 'config.json'
    path.write_bytes(data)
    with pytest.raises(UnreadableFile) as raised:
        read_json_file(str(path), 1 << 20, 'a model configuration', kind=dict)
    assert raised.value.reason.startswith('not a model configuration: ') and reason in raised.value.reason
    path.write_bytes(b'{"model_type": "deepseek_v3"}')
    assert read_json_file(str(path), 1 << 20, 'a model configuration', kind=dict) == {'model_type': 'deepseek_v3'}
