# -*- coding: utf-8 -*-
# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_package_source: the one rule of a package source, every field and every shape refused with the variable named."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _package_source as ps

SHA256 = 'sha256:' + 'ab' * 32
URL = 'https://mirror.example.invalid/ascend/Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run'
ONE = ('v must be a dict with exactly one of src (a file on the controller), path (a file on the host) or url, and no other'
       ' key than checksum; v.checksum (for example "sha256:<hex>") is required with v.url; got %s')


@pytest.mark.parametrize('source', [
    {'path': '/srv/pkg/driver.run'},
    {'src': 'files/driver.run'},
    {'src': '/home/ops/Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run'},
    {'url': URL, 'checksum': SHA256},
    {'url': URL + '?token=x', 'checksum': 'sha384:' + 'c' * 96},
    {'url': 'file:///srv/pkg/x.run', 'checksum': 'sha512:' + 'D' * 128},
    {'path': '/srv/pkg/driver.run', 'checksum': SHA256},
])
def test_good_sources(source):
    assert ps.source_problems('v', source) == []


@pytest.mark.parametrize('source, shown', [
    ({}, '{}'),
    (None, 'null'),
    ('path=/srv/x.run', '"path=/srv/x.run"'),
    (['/srv/x.run'], '["/srv/x.run"]'),
    ({'path': '/a.run', 'url': URL}, '{"path": "/a.run", "url": "%s"}' % URL),
    ({'pth': '/a.run'}, '{"pth": "/a.run"}'),
    ({'url': URL}, '{"url": "%s"}' % URL),
    ({'url': URL, 'checksum': None}, '{"checksum": null, "url": "%s"}' % URL),
    ({'url': URL, 'checksum': ''}, '{"checksum": "", "url": "%s"}' % URL),
    # The user and password of a URL never reach a message.
    ({'url': 'https://ops:s3cret@mirror.invalid/x.run'}, '{"url": "https://********@mirror.invalid/x.run"}'),
])
def test_a_source_of_the_wrong_shape_is_one_message(source, shown):
    assert ps.source_problems('v', source) == [ONE % shown]


@pytest.mark.parametrize('key, value, accepts', [
    ('path', 'relative.run', 'an absolute path of a file on the host'),
    ('path', '/srv/pkg/', 'an absolute path of a file on the host'),
    ('path', 5, 'an absolute path of a file on the host'),
    ('src', 'dir/', 'a file on the controller'),
    ('url', 'https://mirror.invalid/', 'an http, https, ftp or file URL of a file'),
    ('url', 'https://mirror.invalid', 'an http, https, ftp or file URL of a file'),
    ('url', 'scp://mirror.invalid/x.run', 'an http, https, ftp or file URL of a file'),
    ('url', 'https://mirror.invalid/a b.run', 'an http, https, ftp or file URL of a file'),
    ('url', 'https://[::1/x.run', 'an http, https, ftp or file URL of a file'),
    ('checksum', 'md5:' + '0' * 32, 'sha256:<64 hex digits>'),
    ('checksum', 'sha1:' + '0' * 40, 'sha256:<64 hex digits>'),
    ('checksum', SHA256[:20], 'sha256:<64 hex digits>'),
    ('checksum', SHA256 + '\n', 'sha256:<64 hex digits>'),
    ('checksum', 'sha256:' + 'g' * 64, 'sha256:<64 hex digits>'),
])
def test_each_field_is_checked_whole(key, value, accepts):
    source = {'url': URL, 'checksum': SHA256} if key in ('url', 'checksum') else {}
    source[key] = value
    [problem] = ps.source_problems('npu_driver_driver_package', source)
    assert problem.startswith('npu_driver_driver_package.%s must be %s' % (key, accepts))


@pytest.mark.parametrize('char', ['\n', '\r', '\t', '\x00', '\x1b', '\x7f'])
@pytest.mark.parametrize('key', ['path', 'src', 'url'])
def test_no_field_holds_a_control_character(key, char):
    value = {'path': '/srv/x', 'src': 'files/x', 'url': 'https://mirror.invalid/x'}[key] + char + '.run'
    source = {key: value, 'checksum': SHA256} if key == 'url' else {key: value}
    assert ps.source_problems('v', source) != []


def test_a_masked_url_in_a_field_message():
    [problem] = ps.source_problems('v', {'url': 'https://ops:pw@mirror.invalid/', 'checksum': SHA256})
    assert 'pw' not in problem and 'https://********@mirror.invalid/' in problem


def test_several_fields_and_sources_each_reported():
    problems = ps.sources_problems([
        ('a', {'url': 'ftp://x.invalid/', 'checksum': 'md5:' + '0' * 32}),
        ('b', {'path': '/ok.run'}),
        ('c', {}),
    ])
    assert [problem.split(' must ')[0] for problem in problems] == ['a.url', 'a.checksum', 'c']


def test_the_variable_name_and_the_directory():
    assert ps.source_problems('bad name', {'path': '/a.run'}) == [
        'package_fetch_source_name must be a variable name (letters, digits, _ and .); got "bad name"']
    assert ps.source_problems('cann_kernels_package.910b', {'path': '/a.run'}) == []
    assert ps.sources_problems([], dest_dir='/var/cache/ascend-packages') == []
    assert ps.sources_problems([], dest_dir='cache', dest_dir_name='npu_driver_package_dir') == [
        'npu_driver_package_dir must be an absolute path without control characters; got "cache"']
    assert ps.sources_problems([], dest_dir='/x\n') != []
