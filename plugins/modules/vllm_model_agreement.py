#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_model_agreement
short_description: Compare a quantized model served by vLLM with its float parent, and record the result
version_added: 0.4.0
description:
  - Sends the same fixed prompts, greedy (temperature 0), to two vLLM OpenAI-compatible endpoints, the O(reference)
    (the float model) and the O(candidate) (its quantization, served with the same tokenizer), and measures through
    vLLM's own log-probabilities how closely the candidate follows the reference.
  - "For each prompt both endpoints generate O(max_tokens) tokens: the first token where the candidate's greedy text
    leaves the reference's is the first divergence. Then both score the same tokens, the prompt followed by the
    reference's continuation (vLLM's C(prompt_logprobs), teacher forcing): at each position, whether both pick the same
    top-1 token (C(top1_agreement) in RV(agreement.measures), the share of positions), and the log-probability each gives the
    text's token (C(mean_abs_logprob_diff), the mean absolute difference per token in nats)."
  - RV(agreement.status) is C(FAIL) when a measure misses its threshold (O(min_top1_agreement),
    O(max_mean_abs_logprob_diff), O(min_first_divergence)); a C(FAIL) does not fail the module. An endpoint that does
    not answer, or answers without the token ids and log-probabilities, does.
  - With O(candidate_digest) (the manifest SHA-256 that M(kunpeng_ascend.vllm.model_manifest) returns for the
    candidate's directory), the result is written as the candidate's quality record,
    C(<record_dir>/<candidate_digest>.json), which role C(vllm_service) reads before it serves a quantized model
    (C(vllm_service_require_agreement)). The record holds no secret and no time, so the same measures leave it
    unchanged.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - The requests are sent in check mode too (they change nothing); the record is not written, only predicted.
  diff_mode:
    support: full
    details:
      - The record's text before and after.
  platform:
    support: full
    platforms: posix
options:
  reference:
    description: The float model's endpoint.
    type: dict
    required: true
    suboptions: &endpoint
      url:
        description: The endpoint's base URL, C(http[s]://HOST[:PORT]), without C(/v1); a URL with credentials
          (C(user:password@), an C(@) anywhere) is refused without showing them (give the key as C(api_key)).
        type: str
        required: true
      served_model_name:
        description: The model name the endpoint serves (the C(model) of a request).
        type: str
        required: true
      api_key:
        description: The endpoint's API key, sent as a bearer token; none for an open endpoint.
        type: str
  candidate:
    description: The quantized model's endpoint; it must use the reference's tokenizer.
    type: dict
    required: true
    suboptions: *endpoint
  prompts:
    description:
      - The prompts. Default, six short everyday prompts (the module's C(DEFAULT_PROMPTS)), which with the default
        O(max_tokens) fit a 256-token context.
      - Mutually exclusive with O(prompts_file).
    type: list
    elements: str
  prompts_file:
    description: A file on the managed host with one prompt per line (blank lines skipped, C(\n) for a line break).
    type: path
  max_tokens:
    description: Tokens each prompt's greedy continuation has, 1 to 4096; prompt and continuation must fit both
      contexts.
    type: int
    default: 32
  min_top1_agreement:
    description: The least share (0 to 1, a finite number) of positions where both models pick the same top-1 token;
      null skips it.
    type: float
    default: 0.9
  max_mean_abs_logprob_diff:
    description: The most mean absolute log-probability difference per token, nats (a finite number, 0 to 100); null
      skips it.
    type: float
    default: 0.15
  min_first_divergence:
    description: The earliest token (0 to O(max_tokens)) at which a free greedy generation may leave the reference's;
      null (default) only reports it.
    type: int
  candidate_digest:
    description: The SHA-256 of the candidate's model manifest; given, the result becomes its quality record.
    type: str
  reference_digest:
    description: The SHA-256 of the reference's model manifest, kept in the record.
    type: str
  record_dir:
    description: Where the quality records are.
    type: path
    default: /var/lib/kunpeng_ascend/model_quality
  request_timeout:
    description: Seconds each request may take, above 0 and at most a year (31622400).
    type: float
    default: 120
notes:
  - The endpoints are asked one request at a time, so that batching does not change the numbers between runs.
"""

EXAMPLES = r"""
- name: Compare the W8A8 service with the float one and record the result
  kunpeng_ascend.vllm.vllm_model_agreement:
    reference:
      url: http://127.0.0.1:8000
      served_model_name: deepseek-r1-distill-qwen-7b
      api_key: "{{ vllm_api_key }}"
    candidate:
      url: http://127.0.0.1:8001
      served_model_name: deepseek-r1-distill-qwen-7b-w8a8
      api_key: "{{ vllm_api_key }}"
    candidate_digest: "{{ w8a8_manifest.manifest_sha256 }}"
  register: agreement

- name: Refuse a quantization that does not follow its parent
  ansible.builtin.assert:
    that: agreement.agreement.status == 'PASS'
    fail_msg: "{{ agreement.agreement.failures | join('; ') }}"
"""

RETURN = r"""
agreement:
  description: The comparison.
  returned: success
  type: dict
  contains:
    status:
      description: C(PASS) or C(FAIL).
      type: str
      sample: PASS
    failures:
      description: Each threshold missed, saying by how much.
      type: list
      elements: str
    measures:
      description:
        - C(top1_agreement) (0 to 1), C(mean_abs_logprob_diff) (nats per token), C(reference_mean_logprob) and
          C(candidate_mean_logprob) (nats per token of the scored text), C(first_divergence_min) (the earliest token
          where a free greedy generation diverged, null when none did), C(prompts_diverged), C(prompts), C(positions).
      type: dict
      sample: {top1_agreement: 0.9853, mean_abs_logprob_diff: 0.0412, first_divergence_min: 11, prompts: 6}
    thresholds:
      description: The thresholds applied.
      type: dict
    per_prompt:
      description: Each prompt's C(prompt), C(prompt_tokens), C(positions), C(top1_agreeing) and C(first_divergence).
      type: list
      elements: dict
    record:
      description: The quality record's path, null without O(candidate_digest).
      type: str
      sample: /var/lib/kunpeng_ascend/model_quality/5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef.json
    seconds:
      description: How long the requests took.
      type: float
diff:
  description: The record before and after.
  returned: in diff mode, with O(candidate_digest)
  type: dict
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _agreement, _agreement_check

ENDPOINT_SPEC = dict(
    url=dict(type='str', required=True),
    served_model_name=dict(type='str', required=True),
    api_key=dict(type='str', no_log=True),
)


def main(clock=time.monotonic):
    module = AnsibleModule(
        argument_spec=dict(
            reference=dict(type='dict', required=True, options=ENDPOINT_SPEC),
            candidate=dict(type='dict', required=True, options=ENDPOINT_SPEC),
            prompts=dict(type='list', elements='str'),
            prompts_file=dict(type='path'),
            max_tokens=dict(type='int', default=_agreement.DEFAULT_MAX_TOKENS, no_log=False),
            min_top1_agreement=dict(type='float', default=_agreement.DEFAULT_MIN_TOP1_AGREEMENT),
            max_mean_abs_logprob_diff=dict(type='float', default=_agreement.DEFAULT_MAX_MEAN_ABS_LOGPROB_DIFF),
            min_first_divergence=dict(type='int'),
            candidate_digest=dict(type='str'),
            reference_digest=dict(type='str'),
            record_dir=dict(type='path', default=_agreement.RECORD_DIR),
            request_timeout=dict(type='float', default=120.0),
        ),
        mutually_exclusive=[('prompts', 'prompts_file')],
        supports_check_mode=True,
    )
    module.exit_json(**_agreement_check.run(module, clock))


if __name__ == '__main__':
    main()
