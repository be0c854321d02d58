# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

Step 5 of the serving plan (_serving.py): the `vllm serve` argv - the address, the served name, the valued options
and switches, TLS - and where clients reach it.
Its tests: tests/unit/plugins/module_utils/serving/test__plan_argv.py.
"""

from __future__ import annotations

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_inputs import (
    SWITCH_FLAGS,
    TLS_CREDENTIAL,
    TLS_DIR,
    TLS_FILES,
    VALUED_FLAGS,
    last_value,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._plan_recipe import recipe_args


def client_host(host):
    """The host a client on the node reaches a service listening on ``host`` at (a wildcard address through
    loopback)."""
    return '127.0.0.1' if host in ('0.0.0.0', '', None) else '::1' if host == '::' else host


def client_url(host, port, scheme='http'):
    """The URL a client on the node reaches the service at (a wildcard address through loopback)."""
    client = client_host(host)
    return '%s://%s:%s' % (scheme, '[%s]' % client if ':' in client else client, port)


def tls_paths(name):
    """Where the role puts service ``name``'s certificate, key and CA on the node (TLS_DIR/<name>/), and the
    directory."""
    directory = '%s/%s' % (TLS_DIR, name)
    paths = dict((role, '%s/%s' % (directory, file_name)) for role, file_name in TLS_FILES)
    paths['dir'] = directory
    return paths


def tls_plan(inputs, host):
    """The service's TLS on the node, None without it: where the role puts the certificate, key and CA
    (TLS_DIR/<name>/), the name clients ask for (vllm_service_tls_server_name, else the host of the service's URL:
    it must be in the certificate's subjectAltName) and the files on the controller they come from."""
    if not inputs.get('tls_cert'):
        return None
    plan = tls_paths(inputs['name'])
    plan.update(server_name=inputs.get('tls_server_name') or client_host(host),
                source=dict((role, inputs['tls_' + role]) for role, _name in TLS_FILES))
    return plan


def tls_args(tls, mode):
    """vLLM's TLS options: the certificate, and the key from its place (natively the systemd credential: the
    unprivileged service reads it without the file being opened to it)."""
    if not tls:
        return []
    key = '${CREDENTIALS_DIRECTORY}/%s' % TLS_CREDENTIAL if mode == 'native' else tls['key']
    return ['--ssl-certfile', tls['cert'], '--ssl-keyfile', key]


# ------------------------------------------------------------------------------------------------------ the plan

def served_name(inputs):
    """The name clients ask for: vllm_service_served_model_name, else the model directory's name."""
    return inputs.get('served_model_name') or str(inputs.get('model') or '').rstrip('/').rsplit('/', 1)[-1]


def listen_host(inputs):
    """Where the API is reachable: on the host network, the last --host of the final argv; on a bridge network, the
    address the port is published on (vllm_service_host)."""
    if inputs.get('network') == 'bridge':
        return inputs['host']
    return last_value(service_args(inputs), '--host')


def service_args(inputs, tls=()):
    """The `vllm serve` arguments after the model: the address (on a bridge network every address of the container,
    whose port the engine publishes), the served name, the valued options (null ones left out), the switches, the
    recipe knobs (_plan_recipe.recipe_args), the TLS options ``tls`` (tls_args), then what the cluster and the user
    add (argparse keeps the last of an option)."""
    bind = '0.0.0.0' if inputs.get('network') == 'bridge' else inputs['host']
    args = ['--host', bind, '--port', str(inputs['port']), '--served-model-name', served_name(inputs)]
    for name, flag in VALUED_FLAGS:
        if inputs.get(name) is not None:
            args += [flag, str(inputs[name])]
    for name, flag in SWITCH_FLAGS:
        if inputs.get(name):
            args.append(flag)
    return args + recipe_args(inputs) + list(tls) + list(inputs.get('cluster_args') or []) + list(inputs.get('extra_args') or [])
