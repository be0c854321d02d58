# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Step 5 of the serving plan on its own (serving/_plan_argv.py; serving_plan's _argv_plan, after the environment of
step 4 and before the sizing of step 6): the `vllm serve` argv, where it listens, TLS and the URL clients use. The
whole plan's cases are in test__serving.py."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_argv import (
    client_host,
    client_url,
    listen_host,
    served_name,
    service_args,
    tls_args,
    tls_paths,
    tls_plan,
)
from ansible_collections.kunpeng_ascend.vllm.tests.unit.plugins.module_utils.serving.test__serving import (
    DEEPSEEK_W8A8,
    RECIPE_ARGS,
    inputs,
)

TLS = dict(tls_cert='files/vllm.crt', tls_key='files/vllm.key', tls_ca='files/bank-ca.crt')
TLS_DIR = '/etc/kunpeng-ascend-vllm/tls/vllm'


# ------------------------------------------------------------------------------------------------------ the argv

def test_the_role_s_defaults_give_the_address_the_model_directory_s_name_and_the_parallel_sizes():
    assert service_args(inputs()) == ['--host', '127.0.0.1', '--port', '8000', '--served-model-name',
                                      'DeepSeek-R1-W8A8', '--tensor-parallel-size', '1', '--data-parallel-size', '1']


def test_the_documented_recipe_in_argv_order():
    # vllm-ascend's DeepSeek-R1 W8A8 tutorial (test__serving.py's RECIPE_ARGS): the valued options, then the switches.
    assert service_args(inputs(**DEEPSEEK_W8A8)) == ['--host', '127.0.0.1', '--port', '8000', '--served-model-name',
                                                     'DeepSeek-R1-W8A8'] + RECIPE_ARGS


def test_the_tls_options_then_the_cluster_s_then_the_user_s_come_last():
    args = service_args(inputs(port=9000, enforce_eager=True, headless=True, max_model_len=0,
                               cluster_args=['--data-parallel-address', '10.0.0.1'], extra_args=['--port', '8001']),
                        tls=['--ssl-certfile', '/c'])
    # A number is written as a string, a false switch and a null option are left out, 0 is not null.
    assert args == ['--host', '127.0.0.1', '--port', '9000', '--served-model-name', 'DeepSeek-R1-W8A8',
                    '--tensor-parallel-size', '1', '--data-parallel-size', '1', '--max-model-len', '0', '--enforce-eager', '--headless', '--ssl-certfile', '/c',
                    '--data-parallel-address', '10.0.0.1', '--port', '8001']


def test_on_a_bridge_network_vllm_listens_on_every_address_of_the_container():
    args = service_args(inputs(network='bridge', host='10.0.0.5'))
    assert args[:2] == ['--host', '0.0.0.0']
    # Where it is reachable: the address the engine publishes the port on.
    assert listen_host(inputs(network='bridge', host='10.0.0.5', extra_args=['--host', '::'])) == '10.0.0.5'


@pytest.mark.parametrize('changes, host', [
    ({}, '127.0.0.1'), ({'host': '0.0.0.0'}, '0.0.0.0'),
    ({'host': '0.0.0.0', 'extra_args': ['--host=127.0.0.1']}, '127.0.0.1'),
    ({'cluster_args': ['--host', '::'], 'extra_args': ['--ho', '10.1.2.3']}, '10.1.2.3'),
])
def test_where_the_api_listens_is_the_last_host_of_the_final_argv(changes, host):
    assert listen_host(inputs(**changes)) == host


@pytest.mark.parametrize('changes, name', [
    ({}, 'DeepSeek-R1-W8A8'), ({'model': '/data/models/Qwen3-8B/'}, 'Qwen3-8B'), ({'model': '/'}, ''),
    ({'served_model_name': 'deepseek-r1'}, 'deepseek-r1'), ({'served_model_name': ''}, 'DeepSeek-R1-W8A8'),
    ({'model': None}, ''),
])
def test_the_served_name_is_the_one_given_else_the_model_directory_s(changes, name):
    assert served_name(inputs(**changes)) == name


# -------------------------------------------------------------------------------------------- where clients go

@pytest.mark.parametrize('host, client', [
    ('0.0.0.0', '127.0.0.1'), ('', '127.0.0.1'), (None, '127.0.0.1'), ('::', '::1'), ('10.0.0.5', '10.0.0.5'),
    ('node1.bank.internal', 'node1.bank.internal'), ('::1', '::1'),
])
def test_a_wildcard_address_is_reached_through_loopback(host, client):
    assert client_host(host) == client


def test_the_url_brackets_an_ipv6_address():
    assert client_url('0.0.0.0', '8000') == 'http://127.0.0.1:8000'
    assert client_url('::', 8000) == 'http://[::1]:8000'
    assert client_url('fd00::5', '8443', 'https') == 'https://[fd00::5]:8443'
    assert client_url('node1.bank.internal', '8443', 'https') == 'https://node1.bank.internal:8443'


# ------------------------------------------------------------------------------------------------------------ TLS

def test_the_tls_files_go_in_a_directory_of_the_service_s_own():
    assert tls_paths('vllm-w8a8') == {
        'dir': '/etc/kunpeng-ascend-vllm/tls/vllm-w8a8', 'cert': '/etc/kunpeng-ascend-vllm/tls/vllm-w8a8/cert.pem',
        'key': '/etc/kunpeng-ascend-vllm/tls/vllm-w8a8/key.pem', 'ca': '/etc/kunpeng-ascend-vllm/tls/vllm-w8a8/ca.pem'}


def test_the_tls_plan_names_the_certificate_s_name_and_the_controller_s_files():
    assert tls_plan(inputs(), '127.0.0.1') is None
    assert tls_plan(inputs(tls_server_name='node1.bank.internal', **TLS), '0.0.0.0') == {
        'dir': TLS_DIR, 'cert': TLS_DIR + '/cert.pem', 'key': TLS_DIR + '/key.pem', 'ca': TLS_DIR + '/ca.pem',
        'server_name': 'node1.bank.internal',
        'source': {'cert': 'files/vllm.crt', 'key': 'files/vllm.key', 'ca': 'files/bank-ca.crt'}}
    # Without a name clients ask for the host of the service's URL.
    assert tls_plan(inputs(**TLS), '0.0.0.0')['server_name'] == '127.0.0.1'
    assert tls_plan(inputs(**TLS), '::')['server_name'] == '::1'


def test_natively_the_key_is_the_systemd_credential_in_a_container_the_mounted_file():
    tls = tls_plan(inputs(**TLS), '127.0.0.1')
    assert tls_args(tls, 'native') == ['--ssl-certfile', TLS_DIR + '/cert.pem', '--ssl-keyfile',
                                       '${CREDENTIALS_DIRECTORY}/vllm-tls-key']
    assert tls_args(tls, 'container') == ['--ssl-certfile', TLS_DIR + '/cert.pem', '--ssl-keyfile',
                                          TLS_DIR + '/key.pem']
    assert tls_args(None, 'native') == []
