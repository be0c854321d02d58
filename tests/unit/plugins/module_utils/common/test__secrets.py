# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one masking rule: no URL's user information and no named secret in anything shown."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._secrets import MASK, mask, mask_text, mask_url, shown_json, url_secrets

# Passwords as users write them: URL-encoded, with @ and : inside, with characters repr() escapes.
PASSWORDS = ['s3cret', 's3cr%40t', 'p@ss:word', 'a\\b"c', "it's", 'x' * 300]


@pytest.mark.parametrize('password', PASSWORDS)
@pytest.mark.parametrize('shape', ['%s', "url: %r is not usable", 'GET %s/v1/models: refused', '["%s"]', '(%s)'])
def test_no_password_of_any_url_survives_in_any_message(password, shape):
    url = 'https://admin:%s@gpu-01.example:8000/v1' % password
    text = shape % url
    masked = mask_text(text, url_secrets(text))
    assert password not in masked
    assert repr(password)[1:-1] not in masked
    assert MASK in masked
    assert 'gpu-01.example:8000' in masked


def test_url_secrets_gives_the_password_as_written_and_decoded_and_no_user_name():
    assert url_secrets('http://bob:s3cr%40t@host/') == ['s3cr%40t', 's3cr@t']
    assert url_secrets('http://bob@host/') == [] and url_secrets('ftp://host/x') == []
    assert url_secrets(None) == [] and url_secrets(8000) == []


def test_mask_walks_dicts_and_lists_and_masks_named_secrets_too():
    value = {'msg': 'key sk-123 for http://u:p4ss@h:1', 'cmd': ['curl', '-H', 'Bearer sk-123'], 'n': 3,
             'sk-123': None}
    assert mask(value, 'sk-123', None, '') == {
        'msg': 'key %s for http://%s@h:1' % (MASK, MASK), 'cmd': ['curl', '-H', 'Bearer ' + MASK], 'n': 3, MASK: None}


def test_mask_replaces_the_secret_everywhere_and_nothing_without_one():
    value = {'msg': 'key sk-1 refused', 'lines': ['a sk-1 b', 7, None], 'sk-1': ('sk-1sk-1',)}
    assert mask(value, 'sk-1') == {'msg': 'key %s refused' % MASK, 'lines': ['a %s b' % MASK, 7, None],
                                   MASK: [MASK * 2]}
    assert mask(value, None) == mask(value, '') == dict(value, **{'sk-1': ['sk-1sk-1']})


def test_text_without_secrets_is_unchanged():
    text = 'http://127.0.0.1:8000/v1/models answered 200; mail admin@example.com'
    assert mask_text(text) == text
    assert mask_url('http://127.0.0.1:8000') == 'http://127.0.0.1:8000'


def test_a_value_is_quoted_as_the_roles_json_with_its_urls_passwords_masked():
    assert shown_json({'url': 'https://robot:s3cret@mirror/debian', 'b': [1, None, True]}) == (
        '{"url": "https://%s@mirror/debian", "b": [1, null, true]}' % MASK)
    assert shown_json('a\nb') == '"a\\nb"'
    assert shown_json(26.2) == '26.2'
