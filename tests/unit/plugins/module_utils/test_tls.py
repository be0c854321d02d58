# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""_tls.check_pair on the TLS test set (tests/fixtures/tls): each way a client would refuse the pair."""

from __future__ import annotations

import os

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils._tls import check_pair
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES

TLS = os.path.join(FIXTURES, 'tls')
NAMES = {'cert': 'vllm_service_tls_cert', 'key': 'vllm_service_tls_key', 'ca': 'vllm_service_tls_ca',
         'server_name': 'vllm_service_tls_server_name'}


def check(cert='server.crt', key='server.key', ca='ca.crt', name='localhost'):
    return check_pair(os.path.join(TLS, cert), os.path.join(TLS, key), os.path.join(TLS, ca), name, NAMES)


@pytest.mark.parametrize('name', ['localhost', 'vllm.example.internal', '127.0.0.1'])
def test_a_pair_the_ca_signed_for_the_name_passes_with_its_dates_and_names(name):
    result = check(name=name)
    assert result == {'problems': [], 'not_after': 'Jan  1 00:00:00 2126 GMT',
                      'subject_alt_names': ['DNS:localhost', 'DNS:vllm.example.internal', 'IP Address:127.0.0.1']}


@pytest.mark.parametrize('kwargs, expected', [
    ({'name': 'node9.example.internal'},
     "certificate verification failed: vllm_service_tls_cert %s/server.crt against vllm_service_tls_ca %s/ca.crt for "
     "the name node9.example.internal (vllm_service_tls_server_name): Hostname mismatch, certificate is not valid for "
     "'node9.example.internal'."),
    ({'name': '10.0.0.1'},
     "certificate verification failed: vllm_service_tls_cert %s/server.crt against vllm_service_tls_ca %s/ca.crt for "
     "the name 10.0.0.1 (vllm_service_tls_server_name): IP address mismatch, certificate is not valid for '10.0.0.1'."),
    ({'ca': 'other-ca.crt'},
     'certificate verification failed: vllm_service_tls_cert %s/server.crt against vllm_service_tls_ca '
     '%s/other-ca.crt for the name localhost (vllm_service_tls_server_name): unable to get local issuer certificate'),
    ({'cert': 'expired.crt'},
     'certificate verification failed: vllm_service_tls_cert %s/expired.crt against vllm_service_tls_ca %s/ca.crt '
     'for the name localhost (vllm_service_tls_server_name): certificate has expired'),
    ({'key': 'other.key'},
     'vllm_service_tls_cert %s/server.crt and vllm_service_tls_key %s/other.key: it is not the key of '
     'vllm_service_tls_cert %s/server.crt'),
    ({'key': 'encrypted.key'},
     'vllm_service_tls_key %s/encrypted.key is encrypted: vLLM takes no passphrase (--ssl-keyfile); give it '
     'unencrypted, readable by root only'),
    ({'key': 'absent.key'}, 'vllm_service_tls_key %s/absent.key cannot be read: No such file or directory'),
    ({'ca': 'README.md'}, 'vllm_service_tls_ca %s/README.md is not PEM (no -----BEGIN line)'),
    ({'ca': 'server.key'}, 'vllm_service_tls_ca %s/server.key holds no CA certificate that loads ('),
])
def test_each_refusal_names_the_variable_the_file_and_why(kwargs, expected):
    result = check(**kwargs)
    text = expected.replace('%s', TLS)
    assert len(result['problems']) == 1 and result['problems'][0].startswith(text)
    assert (result['not_after'], result['subject_alt_names']) == (None, [])


def test_every_unreadable_file_is_named_at_once():
    result = check(cert='a.crt', key='b.key', ca='c.crt')
    assert [problem.split(' ', 1)[0] for problem in result['problems']] == \
        ['vllm_service_tls_cert', 'vllm_service_tls_key', 'vllm_service_tls_ca']


def test_a_name_that_is_no_host_name_is_refused_not_raised():
    result = check(name='bad\x00name')
    assert len(result['problems']) == 1 and 'is not a host name or address' in result['problems'][0]
