#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: ascend_discover_write
short_description: Write a node's discovery on the controller - its host_vars, a suggested layout and an archive
version_added: 0.8.0
description:
  - Takes what M(kunpeng_ascend.vllm.ascend_discover) read of a node and writes, under O(dest),
    C(host_vars/<host>.yml) and C(<host>-discovery.tar.gz). Run it on the controller (delegated to C(localhost)), as
    playbook C(kunpeng_ascend.vllm.discover) does.
  - The host_vars hold only the variables the roles read - C(npu_driver_expected_chips), C(npu_network_addresses)
    (the NICs' addresses and prefixes, when any is set), C(npu_network_devices) (when the NICs' ids are not 0 to N-1) -
    and the other facts under C(discovered_*) (product, chip family, versions, chips with their NUMA node, the
    layout). An existing C(host_vars/<host>.yml) that differs is never replaced unless O(overwrite); the discovered
    text then goes beside it as C(host_vars/<host>.discovered.yml), and the result says so.
  - The archive holds C(report.txt) (the node, the layout, every source read and, line by line, what the parsers did
    not understand), C(discovery.json) and C(raw/) (each output and file as read, addresses masked unless the node's
    discovery showed them). An archive with the same contents is left alone; one that differs is replaced.
  - With O(model) or O(model_config), the layout the collection's sizing suggests for that model on the discovered
    NPUs (tensor and data parallel sizes, expert parallel), or why none fits there and what would.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Check mode says what would be written (RV(files)) and writes nothing.
  diff_mode:
    support: full
    details:
      - The host_vars file's text before and after.
  platform:
    support: full
    platforms: posix
options:
  discovery:
    description: The RV(kunpeng_ascend.vllm.ascend_discover#module:discovery) of the node.
    type: dict
    required: true
  host:
    description: The node's inventory name, which names the files.
    type: str
    required: true
  dest:
    description: The folder the files go to (created when missing); a relative one is taken from O(base_dir).
    type: str
    required: true
  base_dir:
    description: The folder a relative O(dest) is in - where ansible-playbook runs (the playbook passes E(PWD)).
    type: path
  overwrite:
    description: Whether an existing C(host_vars/<host>.yml) that differs is replaced.
    type: bool
    default: false
  model:
    description: The name of the model to suggest a layout for (such as C(deepseek-r1-w8a8); a C(-w8a8) or C(-w4a8)
      ending sizes msModelSlim's quantization), or the path of its C(config.json) or directory on the controller.
    type: str
  model_config:
    description: The model's C(config.json), or its directory (its weights' size and C(quant_model_description.json)
      are read too), on the controller.
    type: path
  model_configs:
    description: A folder on the controller of C(<Name>__config.json) files or C(<Name>/config.json) directories,
      searched for O(model) without case and without its quantization ending.
    type: path
  max_model_len:
    description: The context length the layout must hold one sequence of; null takes the model's.
    type: int
"""

EXAMPLES = r"""
- name: Write the discovery of the node on the controller
  kunpeng_ascend.vllm.ascend_discover_write:
    discovery: "{{ discovered.discovery }}"
    host: "{{ inventory_hostname }}"
    dest: discovered
    base_dir: "{{ lookup('ansible.builtin.env', 'PWD') }}"
    model: deepseek-r1-w8a8
    model_config: /srv/models/DeepSeek-R1-W8A8
  delegate_to: localhost
"""

RETURN = r"""
files:
  description: Each file, C(path) and C(action) (create, replace or unchanged; in check mode, what would be done).
  returned: success
  type: list
  elements: dict
host_vars:
  description: The host_vars file the discovered variables are in.
  returned: success
  type: str
archive:
  description: The archive.
  returned: success
  type: str
layout:
  description: The suggested layout (model, verdict, tensor_parallel_size, data_parallel_size, enable_expert_parallel,
    npus, problems, warnings, suggestion); null without a model.
  returned: success
  type: dict
messages:
  description: What was kept, written or replaced, and why.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._atomic_write import write_atomically
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._discovery import (
    output_dir,
    plan_outputs,
    resolve_model,
    suggest_layout,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            discovery=dict(type='dict', required=True),
            host=dict(type='str', required=True),
            dest=dict(type='str', required=True),
            base_dir=dict(type='path'),
            overwrite=dict(type='bool', default=False),
            model=dict(type='str'),
            model_config=dict(type='path'),
            model_configs=dict(type='path'),
            max_model_len=dict(type='int'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    layout = problem = None
    try:
        model = resolve_model(params['model'], params['model_config'], params['model_configs'])
        if model is not None:
            layout = suggest_layout(model, params['discovery']['facts']['chips'], params['max_model_len'])
    except ValueError as error:
        problem = str(error)
        module.warn(problem)
    try:
        plan = plan_outputs(params['host'], output_dir(params['dest'], params['base_dir']), params['discovery'],
                            params['overwrite'], layout, problem)
    except (KeyError, TypeError) as error:
        module.fail_json(msg='discovery: not what ascend_discover returns (%s)' % error)
    except ValueError as error:
        module.fail_json(msg=str(error))
    if plan['kept']:
        module.warn(plan['kept'])
    changed = any(item['action'] != 'unchanged' for item in plan['files'])
    if changed and not module.check_mode:
        for item in plan['files']:
            if item['action'] != 'unchanged':
                try:
                    write_atomically(module, item['path'], item['data'])
                except OSError as error:
                    module.fail_json(msg='discover_output_dir: %s cannot be written: %s' % (item['path'], error))
    host_vars = plan['files'][0]
    result = dict(changed=changed, host_vars=plan['host_vars'], archive=plan['archive'], layout=layout,
                  messages=plan['messages'], files=[dict(path=item['path'], action=item['action'])
                                                    for item in plan['files']])
    if module._diff and host_vars['action'] != 'unchanged':
        result['diff'] = dict(before=(host_vars['before'] or b'').decode('utf-8', 'replace'),
                              after=host_vars['data'].decode('utf-8'), before_header=host_vars['path'],
                              after_header=host_vars['path'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
