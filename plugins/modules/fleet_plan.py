#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: fleet_plan
short_description: Write the fleet plan of playbooks/plan.yml on the controller, with its verdict and a query
version_added: 0.8.0
description:
  - Builds the fleet plan from what C(playbooks/plan.yml) observed on each node - its input checks' failure, its
    serving plan (C(vllm_service_plan)), its Ascend facts, the versions the inventory asks for, its deployment record
    and its container engine's image - and writes it to O(dest) as C(fleet-plan.json) (schema
    C(kunpeng_ascend.vllm/fleet-plan/1)) and C(fleet-plan.md) (a short Markdown table).
  - Decides for each node what would change (packages, reboot, image, service; unknown where a fact could not be
    read), what site.yml installs there (host CANN only in native mode or with C(ascend_install_cann), the container
    runtime in container mode) and the verdict - the nodes that leave the run (a failed plan, and the other nodes of a
    failed node's multi-node group) and whether the failure budget O(max_failed) lets the others go on.
  - With O(query), answers a JMESPath expression on the fleet plan (the Python package C(jmespath) on the controller).
  - The plan itself is in the files, not in the result, which plan.yml registers for every node; the result holds
    what the playbook acts on.
  - "Meant for the controller - run it with C(delegate_to: localhost) and C(run_once: true), as plan.yml does."
  - The decisions are C(plugins/module_utils/operations/_fleet_plan.py)'s, the record's one owner; docs/plan.md describes the
    record.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Check mode builds the plan and writes nothing; it reports changed when the files would change (they always
        do, since the plan holds the time it was made).
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
options:
  observations:
    description:
      - What plan.yml observed on each node that it reached - one dict per node, C(host) first (docs/plan.md).
    type: list
    elements: dict
    required: true
  hosts:
    description:
      - Every host of the run, in order; one without an observation could not be reached and counts as failed.
    type: list
    elements: str
    default: []
  max_failed:
    description:
      - The failure budget (C(plan_max_failed)) - how many nodes may leave the run while the others go on, as a number
        (V(0) - any failure stops the run) or a percentage of the nodes (V(10%)).
    type: raw
    default: 0
  dest:
    description:
      - The directory on the controller the files are written to (created).
    type: path
    required: true
  query:
    description:
      - A JMESPath expression to answer on the fleet plan (C(plan_query)), such as
        C(nodes[?sizing.verdict=='refused'].host).
    type: str
  playbook:
    description:
      - The playbook the plan ran for (recorded in the plan).
    type: str
  compat_site_rows:
    description:
      - The site's compatibility rows (the inventory variable C(ascend_compat_site_rows)), checked like the built-in
        ones; a release's row found among them is shown as a site row.
    type: list
    elements: dict
    default: []
requirements:
  - The Python package jmespath on the controller, for O(query) only.
"""

EXAMPLES = r"""
- name: Write the fleet plan
  kunpeng_ascend.vllm.fleet_plan:
    observations: "{{ ansible_play_hosts | map('extract', hostvars, '__plan_observed') | list }}"
    hosts: "{{ ansible_play_hosts_all }}"
    max_failed: "{{ plan_max_failed | default(0) }}"
    dest: "{{ playbook_dir }}/fleet-plan"
    query: "nodes[?sizing.verdict=='refused'].host"
  delegate_to: localhost
  run_once: true
  register: fleet
"""

RETURN = r"""
lines:
  description: One line per node, then the verdict.
  returned: success
  type: list
  elements: str
  sample: ["node1: vllm-ascend 0.13.0 (CANN 8.5.0, driver >= 25.5), container; 8 NPUs (8 cards); TP 4 x DP 2 x 1 node; sizing fits; would change: nothing"]
verdict:
  description: Whether the run goes on (C(proceed)), the nodes that failed, were held with their group or leave the run, and a summary.
  returned: success
  type: dict
stops:
  description: Each host that must stop, with the message it stops with (every host when the run stops).
  returned: success
  type: dict
needs:
  description: For each host, whether site.yml installs host CANN (C(cann)) and the container runtime (C(container_runtime)).
  returned: success
  type: dict
  sample: {"node1": {"cann": false, "container_runtime": true}}
paths:
  description: Where the files are, C(json) and C(markdown).
  returned: success
  type: dict
query_result:
  description: What O(query) selects of the fleet plan; null without a query.
  returned: success
  type: raw
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _fleet_plan
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._atomic_write import write_atomically
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import with_site_rows


def _current(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            observations=dict(type='list', elements='dict', required=True),
            hosts=dict(type='list', elements='str', default=[]),
            max_failed=dict(type='raw', default=0),
            dest=dict(type='path', required=True),
            query=dict(type='str'),
            playbook=dict(type='str'),
            compat_site_rows=dict(type='list', elements='dict', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    generated = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    try:
        rows = with_site_rows(params['compat_site_rows'])
        record, stops = _fleet_plan.build(params['observations'], params['hosts'], params['max_failed'], generated,
                                          params['playbook'], rows)
    except ValueError as error:
        module.fail_json(msg=str(error))
    files = {'json': (os.path.join(params['dest'], _fleet_plan.JSON_NAME), _fleet_plan.dumps(record)),
             'markdown': (os.path.join(params['dest'], _fleet_plan.MARKDOWN_NAME), _fleet_plan.markdown(record))}
    changed = False
    for path, text in files.values():
        data = to_bytes(text)
        if _current(path) == data:
            continue
        changed = True
        if not module.check_mode:
            try:
                write_atomically(module, path, data)
            except OSError as error:
                module.fail_json(msg='cannot write the fleet plan %s (plan_output_dir): %s' % (path, error))
    result = dict(changed=changed, lines=_fleet_plan.lines(record), verdict=record['verdict'], stops=stops,
                  needs=_fleet_plan.needs_by_host(record), paths=dict((key, path) for key, (path, _text) in files.items()),
                  query_result=None)
    if params['query'] is not None:
        try:
            result['query_result'] = _fleet_plan.run_query(record, params['query'])
        except _fleet_plan.QueryError as error:
            module.fail_json(msg='%s (the fleet plan is written: %s)' % (error, files['json'][0]), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
