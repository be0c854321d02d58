#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_known_good
short_description: Record a vLLM service's known good stack on the node, read it, or restore the service to it
version_added: 0.1.0
description:
  - With O(state=record) (after the service passed its health gate), records what the node runs - the Ascend stack
    (driver, firmware, CANN toolkit, kernels, NNAL), the mode, the image and its id in the engine (container) or the
    venv and its vLLM version (native), the model and its manifest's SHA-256, the served name, the endpoint, the
    serving argv and parameters, and the unit file's and environment file's contents with their SHA-256 - with the
    time. The whole record is kept in C(<record_dir>/<name>.json) (mode 0600, the environment file may hold the API
    key), a summary without secrets or file contents as the local fact O(fact_path) (0644, C(ansible_local)).
  - A record equal to the current one but for its time changes nothing; another one becomes current, and the current
    one previous.
  - With O(state=restore), writes the unit file and the environment file of the known good O(which) back, after
    checking that the node still has what it needs - the model directory matching its recorded manifest digest, the
    image in the engine with its recorded id (container), the venv's vLLM of the recorded version (native). When
    something is missing it fails naming it, and changes nothing. It neither reloads systemd nor restarts the service
    (RV(unit_changed), RV(env_changed) tell the caller).
  - With O(state=read), returns the local fact's summaries (nothing changes).
  - Each file it reads - the record, the local fact, the unit file and the environment file - is read only when it is
    a regular file of at most 1 MiB; anything else there (a FIFO, a device, a socket, a directory, a larger file)
    fails the module naming the option or file, before anything changes, instead of blocking or reading without end.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - O(state=record) and O(state=restore) read and check everything and return the changed status and diff the
        real run would give; they write nothing.
  diff_mode:
    support: full
    details:
      - O(state=record) - the summary before and after. O(state=restore) - the unit file's text before and after;
        never the environment file's (it can hold the API key), only whether it changes.
  platform:
    support: full
    platforms: posix
options:
  name:
    description:
      - The service's name (C(vllm_service_name)), without C(.service).
    type: str
    required: true
  state:
    description:
      - V(record) records the service as it runs now; V(restore) writes the known good O(which) back; V(read)
        returns the local fact.
    type: str
    choices: [record, restore, read]
    default: read
  which:
    description:
      - With O(state=restore), the known good to restore - V(current) (the last stack that passed its gate) or
        V(previous) (the one before it).
    type: str
    choices: [current, previous]
    default: current
  ascend:
    description:
      - With O(state=record), C(ansible_facts.ascend) as M(kunpeng_ascend.vllm.ascend_facts) returns it; the stack's
        versions are read from it (all null when it is empty, on hosts without NPUs).
    type: dict
    default: {}
  mode:
    description:
      - With O(state=record), the service's mode.
    type: str
    choices: [native, container]
  model:
    description:
      - With O(state=record), the model directory the service serves.
    type: path
  model_manifest:
    description:
      - With O(state=record), the model's manifest; its SHA-256 is the recorded digest. Default C(SHA256SUMS) in
        O(model). A model without one is recorded without a digest.
    type: path
  model_digest:
    description:
      - With O(state=record), the SHA-256 of the manifest the model was verified against in this run (role
        vllm_service's check); the module then does not verify it again.
    type: str
  verify_model:
    description:
      - With O(state=record) and no O(model_digest), verify the model against its manifest (with
        M(kunpeng_ascend.vllm.model_manifest)'s record, so an unchanged model is not hashed again) to record its digest;
        V(false) records no digest.
    type: bool
    default: true
  served_model_name:
    description:
      - With O(state=record), the name clients ask for.
    type: str
  endpoint:
    description:
      - With O(state=record), the service's OpenAI base URL (null for a headless node).
    type: str
  image:
    description:
      - With O(state=record) in container mode, the image the service runs; its id is read from O(engine).
    type: str
  engine:
    description:
      - With O(state=record) in container mode, the container engine's command (path or name) the unit runs.
    type: str
  venv:
    description:
      - With O(state=record) in native mode, the venv the service runs from; its vLLM's version is read from it.
    type: path
  npus:
    description:
      - With O(state=record), the NPUs (npu-smi's NPU column) the service runs on.
    type: list
    elements: int
    default: []
  argv:
    description:
      - With O(state=record), the service's command line (never with the key; the key is in the environment file).
    type: list
    elements: str
    default: []
  serving:
    description:
      - With O(state=record), the serving parameters in force (C(vllm_service_plan.serving)).
    type: dict
    default: {}
  unit_file:
    description:
      - The unit file; default C(/etc/systemd/system/<name>.service).
    type: path
  env_file:
    description:
      - The service's environment file; default C(/etc/vllm/<name>.env).
    type: path
  record_dir:
    description:
      - Where the records are kept (created 0700 when missing).
    type: path
    default: /etc/kunpeng-ascend-vllm/known-good
  fact_path:
    description:
      - The local fact.
    type: path
    default: /etc/ansible/facts.d/kunpeng_ascend_vllm_known_good.fact
  timeout:
    description:
      - Seconds each command (the engine's image inspect, the venv's Python) and the model's re-verification may
        take.
    type: int
    default: 120
notes:
  - The model is re-verified against its manifest with the record of M(kunpeng_ascend.vllm.model_manifest), so an
    unchanged model is not hashed again.
"""

EXAMPLES = r"""
- name: Record the known good after the health gate
  kunpeng_ascend.vllm.vllm_known_good:
    name: vllm
    state: record
    ascend: "{{ ansible_facts['ascend'] }}"
    mode: container
    image: quay.io/ascend/vllm-ascend:v0.9.1
    engine: /usr/bin/docker
    model: /data/models/DeepSeek-R1-W8A8
    served_model_name: deepseek-r1
    endpoint: http://127.0.0.1:8000/v1

- name: Go back to the stack before the last one
  kunpeng_ascend.vllm.vllm_known_good:
    name: vllm
    state: restore
    which: previous
  register: restored

- name: Read every service's known good
  kunpeng_ascend.vllm.vllm_known_good:
    name: vllm
  register: known_good
"""

RETURN = r"""
known_good:
  description:
    - With O(state=record), the service's summaries after the run, C(current) and C(previous) (null when there is
      none); with O(state=read), the same read from the local fact (null when the service has none); with
      O(state=restore), the summary restored.
    - A summary holds time, stack (driver, firmware, cann_toolkit, cann_kernels, nnal), mode, image, image_id, venv,
      vllm_version, model, model_digest, served_model_name, endpoint, unit_sha256 and env_sha256.
  returned: success
  type: dict
  sample:
    current: {time: "2026-12-05T16:40:02Z", mode: container, image: "quay.io/ascend/vllm-ascend:v0.9.1",
              model: /data/models/DeepSeek-R1-W8A8, served_model_name: deepseek-r1}
    previous: null
services:
  description: With O(state=read), every service of the local fact, by name.
  returned: O(state=read)
  type: dict
record_path:
  description: The record's path.
  returned: success
  type: str
  sample: /etc/kunpeng-ascend-vllm/known-good/vllm.json
which:
  description: With O(state=restore), the known good restored.
  returned: O(state=restore)
  type: str
  sample: previous
unit:
  description: With O(state=restore), the systemd unit of the known good.
  returned: O(state=restore)
  type: str
  sample: vllm.service
unit_changed:
  description: With O(state=restore), whether the unit file changed (the caller reloads systemd).
  returned: O(state=restore)
  type: bool
env_changed:
  description: With O(state=restore), whether the environment file changed.
  returned: O(state=restore)
  type: bool
env_file:
  description: With O(state=restore), the environment file of the known good.
  returned: O(state=restore)
  type: str
  sample: /etc/vllm/vllm.env
npus:
  description: With O(state=restore), the NPUs the known good runs on.
  returned: O(state=restore)
  type: list
  elements: int
missing:
  description: What the node lacks to run the known good again (each a sentence); the module fails when any.
  returned: failure of O(state=restore)
  type: list
  elements: str
problems:
  description: What is wrong with a record or fact that cannot be read.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._warnings import WarningCap
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _known_good as kg
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._known_good_run import KnownGoodFailure, run_module


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            state=dict(type='str', default='read', choices=['record', 'restore', 'read']),
            which=dict(type='str', default='current', choices=list(kg.WHICH)),
            ascend=dict(type='dict', default={}),
            mode=dict(type='str', choices=list(kg.MODES)),
            model=dict(type='path'),
            model_manifest=dict(type='path'),
            model_digest=dict(type='str'),
            verify_model=dict(type='bool', default=True),
            served_model_name=dict(type='str'),
            endpoint=dict(type='str'),
            image=dict(type='str'),
            engine=dict(type='str'),
            venv=dict(type='path'),
            npus=dict(type='list', elements='int', default=[]),
            argv=dict(type='list', elements='str', default=[]),
            serving=dict(type='dict', default={}),
            unit_file=dict(type='path'),
            env_file=dict(type='path'),
            record_dir=dict(type='path', default=kg.RECORD_DIR),
            fact_path=dict(type='path', default=kg.FACT_PATH),
            timeout=dict(type='int', default=120),
        ),
        required_if=[('state', 'record', ('mode', 'model'))],
        supports_check_mode=True,
    )
    warnings = WarningCap()
    try:
        result = run_module(module, warnings)
    except KnownGoodFailure as failure:
        warnings.emit(module.warn)
        module.fail_json(msg=failure.msg, **failure.data)
    warnings.emit(module.warn)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
