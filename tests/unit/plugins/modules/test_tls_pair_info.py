# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""tls_pair_info's main() on the TLS test set: it runs no command and only reads the three files."""

from __future__ import annotations

import os

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import tls_pair_info
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES, FailJson, run_main

TLS = os.path.join(FIXTURES, 'tls')


def args(**more):
    base = {'cert': os.path.join(TLS, 'server.crt'), 'key': os.path.join(TLS, 'server.key'),
            'ca': os.path.join(TLS, 'ca.crt'), 'server_name': 'localhost'}
    base.update(more)
    return base


def test_a_good_pair_has_no_problem_in_check_mode_too(fake_host):
    result = run_main(tls_pair_info.main, args(_ansible_check_mode=True))
    assert (result['changed'], result['problems'], result['not_after']) == (False, [], 'Jan  1 00:00:00 2126 GMT')
    assert fake_host.commands() == []


def test_the_problems_name_the_variables_given(fake_host):
    result = run_main(tls_pair_info.main, args(ca=os.path.join(TLS, 'other-ca.crt'),
                                               variables={'cert': 'vllm_service_tls_cert', 'ca': 'vllm_service_tls_ca'}))
    assert result['problems'] == [
        'certificate verification failed: vllm_service_tls_cert %s/server.crt against vllm_service_tls_ca '
        '%s/other-ca.crt for the name localhost (the server name): unable to get local issuer certificate' % (TLS, TLS)]


def test_an_unknown_variable_name_fails(fake_host):
    result = run_main(tls_pair_info.main, args(variables={'chain': 'x'}), outcome=FailJson)
    assert result['msg'] == 'variables: chain are not inputs of this module (cert, key, ca, server_name)'
