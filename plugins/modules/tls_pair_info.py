#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: tls_pair_info
short_description: Check a TLS certificate, its key and a CA as a service's clients will use them
version_added: 0.6.0
description:
  - Reads the certificate O(cert), the key O(key) and the CA certificates O(ca) on the host it runs on (the controller
    with C(delegate_to), before they are copied to a node) and returns RV(problems), empty when a client that trusts
    only O(ca) and asks for O(server_name) accepts a server with that certificate and key.
  - "It checks with Python's C(ssl) alone: each file a regular file (a FIFO, a device, a socket or a directory is
    refused, never opened to wait on) of at most 1 MiB, and PEM; the key readable by its owner only (a mode that
    opens it to its group or to others, such as 0640 or 0644, is refused: no account needs it - role vllm_service
    installs it root-only, 0600, and a native service gets it as a systemd credential read by systemd as root); the
    key unencrypted (vLLM's C(--ssl-keyfile) takes no passphrase) and the certificate's; then one TLS handshake in
    memory (no traffic) between a server with the pair and a client with O(ca) that checks the name: the chain to the
    CA, the validity dates (expired or not yet valid) and O(server_name) in the certificate's subjectAltName. A
    certificate without a subjectAltName is refused whatever its subject's CN says: browsers, Go and Python's HTTPS
    clients look for the name in the subjectAltName only."
  - Each file is read once; the certificate and key are handed to OpenSSL from memory (an anonymous memory file where
    Linux has one, else a private directory removed at once), never opened again by path.
  - Each problem names the file by the variable in O(variables), so that a role's failure says what to fix.
  - Only reads; it never changes the host, and never returns the key.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - It only reads.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  cert:
    description: The certificate (PEM; the server's first, then any intermediate CAs).
    type: path
    required: true
  key:
    description: The certificate's private key (PEM, unencrypted), readable by its owner only (mode 0600 or 0400).
    type: path
    required: true
  ca:
    description: The CA certificates (PEM) that clients verify the certificate against.
    type: path
    required: true
  server_name:
    description: The host name or IP address clients ask for; it must be in the certificate's subjectAltName (the
      subject's CN is not read).
    type: str
    required: true
  variables:
    description: "What each input is called in the messages: C({cert: NAME, key: NAME, ca: NAME, server_name: NAME})
      (default: the certificate, the key, the CA, the server name)."
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Check the service's TLS files on the controller before they are copied
  kunpeng_ascend.vllm.tls_pair_info:
    cert: files/vllm.crt
    key: files/vllm.key
    ca: files/bank-ca.crt
    server_name: node1.bank.internal
    variables: {cert: vllm_service_tls_cert, key: vllm_service_tls_key, ca: vllm_service_tls_ca}
  delegate_to: localhost
  register: tls

- name: Refuse them when a client would
  ansible.builtin.assert:
    that: tls.problems | length == 0
    fail_msg: "{{ tls.problems | join('; ') }}"
"""

RETURN = r"""
problems:
  description: Why a client would refuse the pair, or why it cannot be used; empty when it is fine.
  returned: always
  type: list
  elements: str
  sample: ["certificate verification failed: the certificate vllm.crt against the CA ca.crt for the name node1
            (the server name): certificate has expired"]
not_after:
  description: The certificate's end of validity, as Python's C(ssl) prints it; null when it did not verify.
  returned: always
  type: str
  sample: Jan  1 00:00:00 2027 GMT
subject_alt_names:
  description: The certificate's subjectAltName entries (C(DNS:name), C(IP Address:address)); empty when it did not
    verify.
  returned: always
  type: list
  elements: str
  sample: ["DNS:node1.bank.internal", "IP Address:127.0.0.1"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._tls import check_pair

VARIABLES = ('cert', 'key', 'ca', 'server_name')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cert=dict(type='path', required=True),
            key=dict(type='path', required=True, no_log=False),
            ca=dict(type='path', required=True),
            server_name=dict(type='str', required=True),
            variables=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    unknown = sorted(set(params['variables']) - set(VARIABLES))
    if unknown:
        module.fail_json(msg='variables: %s are not inputs of this module (%s)' % (', '.join(unknown), ', '.join(VARIABLES)))
    result = check_pair(params['cert'], params['key'], params['ca'], params['server_name'],
                        dict((name, str(value)) for name, value in params['variables'].items()))
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
