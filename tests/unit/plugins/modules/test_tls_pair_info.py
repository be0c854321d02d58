# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""tls_pair_info's main() on the TLS test set: it runs no command and only reads the three files, none of which may
block it."""

from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import tls_pair_info
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FIXTURES, FailJson, fails_after, run_main


@pytest.fixture
def tls(tmp_path):
    """The test set with its keys readable by their owner only, as an operator keeps them."""
    directory = str(tmp_path / 'tls')
    shutil.copytree(os.path.join(FIXTURES, 'tls'), directory)
    for name in os.listdir(directory):
        os.chmod(os.path.join(directory, name), 0o600 if name.endswith('.key') else 0o644)
    return directory


def args(tls, **more):
    base = {'cert': os.path.join(tls, 'server.crt'), 'key': os.path.join(tls, 'server.key'),
            'ca': os.path.join(tls, 'ca.crt'), 'server_name': 'localhost'}
    base.update(more)
    return base


def test_a_good_pair_has_no_problem_in_check_mode_too(fake_host, tls):
    result = run_main(tls_pair_info.main, args(tls, _ansible_check_mode=True))
    assert (result['changed'], result['problems'], result['not_after']) == (False, [], 'Jan  1 00:00:00 2126 GMT')
    assert fake_host.commands() == []


def test_the_problems_name_the_variables_given(fake_host, tls):
    result = run_main(tls_pair_info.main, args(tls, ca=os.path.join(tls, 'other-ca.crt'),
                                               variables={'cert': 'vllm_service_tls_cert', 'ca': 'vllm_service_tls_ca'}))
    assert result['problems'] == [
        'certificate verification failed: vllm_service_tls_cert %s/server.crt against vllm_service_tls_ca '
        '%s/other-ca.crt for the name localhost (the server name): unable to get local issuer certificate' % (tls, tls)]


def test_an_unknown_variable_name_fails(fake_host, tls):
    result = run_main(tls_pair_info.main, args(tls, variables={'chain': 'x'}), outcome=FailJson)
    assert result['msg'] == 'variables: chain are not inputs of this module (cert, key, ca, server_name)'


def test_a_world_readable_key_is_a_problem_naming_the_key_variable(fake_host, tls):
    key = os.path.join(tls, 'server.key')
    os.chmod(key, 0o644)
    result = run_main(tls_pair_info.main, args(tls, variables={'key': 'vllm_service_tls_key'}))
    assert result['problems'] == [
        'vllm_service_tls_key %s has mode 0644: its group or others may read it; a private key must be readable by its '
        'owner only (chmod 600 %s)' % (key, key)]


def test_a_certificate_without_a_subject_alt_name_is_a_problem(fake_host, tls):
    result = run_main(tls_pair_info.main, args(tls, cert=os.path.join(tls, 'nosan.crt'),
                                               ca=os.path.join(tls, 'nosan-ca.crt')))
    assert len(result['problems']) == 1 and result['problems'][0].endswith(
        "it has no subjectAltName, which clients look for the name in (they ignore the subject's CN)")


@pytest.mark.parametrize('option', ['cert', 'key', 'ca'])
def test_a_fifo_in_place_of_any_file_is_a_problem_not_a_hang(fake_host, tls, option):
    fifo = os.path.join(tls, 'fifo')
    os.mkfifo(fifo)
    with fails_after(10):
        result = run_main(tls_pair_info.main, args(tls, **{option: fifo}))
    assert result['problems'] == ['the %s %s cannot be read: a FIFO (named pipe), not a regular file'
                                  % ({'cert': 'certificate', 'key': 'key', 'ca': 'CA'}[option], fifo)]
