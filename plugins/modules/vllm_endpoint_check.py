#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_endpoint_check
short_description: Wait until a vLLM OpenAI-compatible endpoint serves a model, and prove it with a completion
version_added: 0.2.0
description:
  - Waits, under one deadline (O(timeout)), for the stages of a vLLM endpoint coming up, in order, trying each
    again every O(interval) seconds until it succeeds.
  - C(health) - C(GET /health) answers 200.
  - C(models) - C(GET /v1/models) answers 200 and lists O(served_model_name).
  - C(completion) - C(POST /v1/completions) of O(prompt) with O(max_tokens) tokens at temperature 0 (greedy)
    answers 200 with a C(choices[0].text).
  - C(chat) (when O(chat) is true) - C(POST /v1/chat/completions) of the same prompt answers 200 with a
    C(choices[0].message.content).
  - C(unauthorized) (when O(expect_unauthorized) is true) - C(GET /v1/models) without the API key answers 401.
  - "A stage that does not succeed before the deadline fails the module with
    C(waited N s for WHAT at URL: LAST ERROR). An answer that waiting cannot change fails at once - a 401 or 403
    (C(the API key was refused)), a 400 or 422 to a completion, a 2xx without the key when O(expect_unauthorized)
    is true."
  - With O(unit), a failure also reports the systemd unit's state and the end of its journal (RV(unit_state),
    RV(unit_journal)), and the wait ends early when the unit is C(failed) or C(inactive), since it will not come up
    by itself. The journal is matched against the collection's catalogue of known vLLM-Ascend serving failures, and
    the message names each one found with its cause and fix (RV(known_failures)), instead of only the wait that ran
    out.
  - The API key is sent as C(Authorization) C(Bearer KEY); it never appears in the result (it is masked in every
    message, answer and journal line quoted).
  - Only reads; it never changes the host or the service.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - The module only reads, so it asks the endpoint in check mode too and returns the same result.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  url:
    description:
      - Base URL of the endpoint, C(http[s]://HOST[:PORT][/PREFIX]); the paths C(/health) and C(/v1/...) are added
        to it.
      - Proxies from the environment are not used.
      - A URL with credentials (C(user:password@), an C(@) anywhere) is refused without showing them; give the
        key as O(api_key).
    type: str
    default: http://127.0.0.1:8000
  api_key:
    description:
      - The API key the service was started with (C(--api-key) or C(VLLM_API_KEY)), sent as a Bearer token.
      - Without it no C(Authorization) header is sent.
    type: str
  served_model_name:
    description:
      - The model name the endpoint serves (C(--served-model-name), else the model path given to C(vllm serve)).
    type: str
    required: true
  timeout:
    description:
      - Seconds all the stages together may take.
      - A large model takes minutes to load; the default suits one that loads in under ten.
      - 1 to 31622400 (a year).
    type: int
    default: 600
  interval:
    description:
      - Seconds between two tries of a stage, above 0 and at most a year (31622400); finite.
    type: float
    default: 2
  request_timeout:
    description:
      - Seconds one request may wait for the connection and for each read of its answer (never beyond the
        deadline of O(timeout)).
      - Above 0 and at most a year (31622400); finite.
    type: float
    default: 60
  prompt:
    description:
      - The prompt of the completion (and of the chat message).
    type: str
    default: Hello
  max_tokens:
    description:
      - Tokens the completion may generate, 1 to 1048576.
    type: int
    default: 8
  chat:
    description:
      - Also ask for one chat completion (C(/v1/chat/completions)); the model needs a chat template.
    type: bool
    default: false
  expect_unauthorized:
    description:
      - Also check that C(/v1/models) without the API key answers 401, that is that the endpoint is not open to
        anyone. Needs O(api_key).
    type: bool
    default: false
  validate_certs:
    description:
      - Whether an https endpoint's certificate is verified (against the system's CAs, or O(ca_path)).
    type: bool
    default: true
  ca_path:
    description:
      - PEM file of the CA certificates that an https endpoint's certificate is verified against (with the URL's
        host checked against the certificate's names).
      - A certificate that does not verify fails the module at once, without waiting, with
        C(certificate verification failed against the CA file CA_PATH) and OpenSSL's reason.
    type: path
  unit:
    description:
      - Name of the systemd unit that runs the service (such as C(vllm) or C(vllm.service)).
      - When set, a failure reports C(systemctl show -p ActiveState,SubState,NRestarts,MainPID UNIT) and the last
        O(journal_lines) lines of C(journalctl -u UNIT); those commands never fail the module themselves.
      - While waiting, the unit's state is read at most every 10 seconds, and the wait ends when the unit is
        C(failed) or C(inactive).
    type: str
  journal_lines:
    description:
      - Lines of the unit's journal a failure reports (with O(unit)), 1 to 100000.
    type: int
    default: 30
requirements:
  - C(systemctl) and C(journalctl) on the host, for O(unit).
notes:
  - vLLM answers C(/health) only once the model is loaded; until then the connection is refused.
  - C(/health) of vLLM needs no API key; the key is sent to it too, for gateways that want one.
seealso:
  - name: vLLM OpenAI-compatible server
    description: The endpoints this module asks.
    link: https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html
"""

EXAMPLES = r"""
- name: Wait for the service to serve DeepSeek, and prove it
  kunpeng_ascend.vllm.vllm_endpoint_check:
    url: http://127.0.0.1:8000
    api_key: "{{ vllm_api_key }}"
    served_model_name: deepseek-r1
    timeout: 1800
    unit: vllm
  register: endpoint

- name: Show the answer
  ansible.builtin.debug:
    msg: "{{ endpoint.completion }} ({{ endpoint.stages }})"

- name: Check a chat completion and that the endpoint refuses requests without the key
  kunpeng_ascend.vllm.vllm_endpoint_check:
    url: https://inference.example.com/vllm
    ca_path: /etc/pki/inference-ca.pem
    api_key: "{{ vllm_api_key }}"
    served_model_name: deepseek-r1
    chat: true
    expect_unauthorized: true
    timeout: 60
"""

RETURN = r"""
url:
  description: The base URL asked (without a trailing slash).
  returned: always
  type: str
  sample: http://127.0.0.1:8000
stages:
  description: Seconds each stage that succeeded took (waiting included), by name, in the order they ran.
  returned: always
  type: dict
  sample: {"health": 41.372, "models": 0.004, "completion": 0.081, "chat": 0.062, "unauthorized": 0.002}
models:
  description: The model ids C(/v1/models) lists.
  returned: success
  type: list
  elements: str
  sample: [deepseek-r1]
completion:
  description: The text of the completion (C(choices[0].text)).
  returned: success
  type: str
  sample: " world, and welcome"
chat_completion:
  description: The reply of the chat completion; null when O(chat) is false.
  returned: success
  type: str
  sample: Hello! How can I help you today?
unauthorized_status:
  description: The status C(/v1/models) answered without the API key (401); null when O(expect_unauthorized) is false.
  returned: success
  type: int
  sample: 401
seconds:
  description: Seconds the module waited in all.
  returned: always
  type: float
  sample: 41.46
stage:
  description: The stage that failed (C(health), C(models), C(completion), C(chat) or C(unauthorized)).
  returned: failure
  type: str
  sample: models
error:
  description: The last error of the stage that failed.
  returned: failure
  type: str
  sample: "GET http://127.0.0.1:8000/v1/models lists the models ['qwen'], not 'deepseek-r1' (served_model_name)"
status:
  description: The HTTP status of the last answer of the stage that failed; null when there was no answer.
  returned: failure
  type: int
  sample: 503
unit_state:
  description:
    - The unit's C(ActiveState), C(SubState), C(NRestarts) and C(MainPID) (the last two as integers) when the module
      failed, or the text of the error that kept C(systemctl) from telling.
    - Null without O(unit).
  returned: failure
  type: raw
  sample: {"ActiveState": "activating", "SubState": "auto-restart", "NRestarts": 3, "MainPID": 0}
unit_journal:
  description: The last O(journal_lines) lines of the unit's journal when the module failed (or the error of
    C(journalctl)); null without O(unit).
  returned: failure
  type: list
  elements: str
  sample: ["Nov 30 20:01:02 node1 vllm[4242]: RuntimeError: NPU out of memory."]
known_failures:
  description:
    - The known failures of the collection's catalogue (plugins/module_utils/operations/_failure_catalogue.py) that the unit's
      journal shows, in the catalogue's order, each with its cause, its fix and the last matching lines; the
      failure message names them. Empty when the journal shows none; null without O(unit).
  returned: failure
  type: list
  elements: dict
  sample: [{"id": "out_of_memory", "status": "fail", "cause": "The NPU (or the host) ran out of memory.",
            "fix": "Lower vllm_service_gpu_memory_utilization ...", "lines": ["RuntimeError: NPU out of memory."]}]
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _failure_catalogue
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._vllm_endpoint import check_endpoint


def main(clock=time.monotonic, sleep=time.sleep):
    """The module; ``clock`` and ``sleep`` time the wait, and are time's unless a test gives a fake clock."""
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type='str', default='http://127.0.0.1:8000'),
            api_key=dict(type='str', no_log=True),
            served_model_name=dict(type='str', required=True),
            timeout=dict(type='int', default=600),
            interval=dict(type='float', default=2),
            request_timeout=dict(type='float', default=60),
            prompt=dict(type='str', default='Hello'),
            max_tokens=dict(type='int', default=8, no_log=False),
            chat=dict(type='bool', default=False),
            expect_unauthorized=dict(type='bool', default=False),
            validate_certs=dict(type='bool', default=True),
            ca_path=dict(type='path'),
            unit=dict(type='str'),
            journal_lines=dict(type='int', default=30),
        ),
        required_if=[('expect_unauthorized', True, ['api_key'])],
        # The module only reads, so check mode asks the endpoint as well.
        supports_check_mode=True,
    )
    # The catalogue of known failures is of the operations layer, above serving: handed in.
    module.exit_json(changed=False, **check_endpoint(module, _failure_catalogue, clock, sleep))


if __name__ == '__main__':
    main()
