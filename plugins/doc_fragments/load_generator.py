# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The options of the modules that run C(vllm bench serve) and sample the NPUs meanwhile (vllm_benchmark,
    vllm_soak); _load_generator.argument_spec() is their argument spec."""

    DOCUMENTATION = r"""
options:
  command:
    description:
      - The argv that starts vLLM's CLI on this host, to which C(bench serve ...) is appended, such as
        V([/opt/vllm/venv/bin/vllm]) or a container engine's C(run) of the serving image ending in C(vllm).
      - When it runs the load generator in a container, that container must see O(work_dir) at the same path and
        reach O(base_url); the load generator is then not a child of the module, the engine's client is.
    type: list
    elements: str
    required: true
  base_url:
    description: The server, such as V(http://127.0.0.1:8000).
    type: str
    required: true
  endpoint:
    description: The API path requests go to.
    type: str
    default: /v1/completions
  backend:
    description: The request format (C(vllm bench serve --backend)).
    type: str
    choices: [openai, openai-chat, vllm]
    default: openai
  model:
    description: The model name requests ask for (the served model name).
    type: str
    required: true
  tokenizer:
    description: The tokenizer (a model directory on this host) used to make prompts of O(input_len) tokens.
    type: str
    required: true
  api_key:
    description: The key sent as a bearer token, passed to the load generator in its environment only.
    type: str
  ca_path:
    description:
      - The CA certificates (PEM) an https O(base_url)'s certificate is verified against, given to the load generator
        as E(SSL_CERT_FILE) in its environment (a load generator in a container needs the file mounted and
        C(--env=SSL_CERT_FILE) in O(command), as the serving plan's C(cli.run) has them).
      - Without it, the system's CA certificates.
    type: path
  input_len:
    description: Prompt length, tokens.
    type: int
    default: 128
  output_len:
    description: Tokens generated per request (end of sequence is ignored, so every request generates them all).
    type: int
    default: 128
  seed:
    description: Seed of the random prompts; the same seed sends the same prompts.
    type: int
    default: 0
  extra_args:
    description: More C(vllm bench serve) arguments.
    type: list
    elements: str
    default: []
  sample_npus:
    description:
      - V(auto) samples the NPUs when C(npu-smi) is found, V(always) fails without it, V(never) does not sample.
    type: str
    choices: [auto, always, never]
    default: auto
  npu_ids:
    description: The NPUs (npu-smi's NPU column) to sample; all when empty.
    type: list
    elements: int
    default: []
  npu_smi_path:
    description: Path of C(npu-smi); found in PATH or its usual places when omitted.
    type: path
"""
