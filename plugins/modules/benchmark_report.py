#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: benchmark_report
short_description: Write the HTML report of a benchmark run directory
version_added: 0.1.0
description:
  - Reads the results of one benchmark run - the run files C(runs/<host>/<label>.json) and the optional
    C(summary.json) that the C(vllm_benchmark) role writes under O(path) - and writes one self-contained HTML file.
  - "The report shows: a PASS/FAIL banner per host (with the highest concurrency that met the targets), the
    targets, a table of every run (concurrency, status, throughput, latency percentiles, NPU utilisation, load
    generator CPU), the tuning grid with its best point highlighted (when the runs have grid points), plots, and
    each run's configuration (service and load) in a collapsible section."
  - "The plots, rendered with matplotlib: the latency percentiles (p50, p90, p99 of TTFT, TPOT, ITL and end-to-end
    latency) and the throughput (tokens/s, requests/s) versus concurrency per host, with the targets as dashed
    lines; per grid point the p99 end-to-end latency and the output throughput, best point marked; per run the NPU
    AI core utilisation and HBM used over time per chip (a note instead on hosts without NPU samples) and the load
    generator's CPU."
  - The file stands alone - images are embedded as PNG in C(data:) URIs, the style sheet is inline, nothing is
    loaded from elsewhere - so it can be mailed or archived as it is.
  - The same input gives the same bytes (the report holds no date of its own; the plots have fixed size and
    resolution and no metadata), so a second run reports no change.
  - A metric that is missing, null or not a number is shown as C(n/a) and left out of the plots.
  - "Meant for the controller - run it with C(delegate_to: localhost) and C(run_once: true) after the benchmark."
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Check mode builds the report and compares it with O(dest), returning the changed status the real run would
        give; it writes nothing.
  diff_mode:
    support: none
    details:
      - The report is generated HTML with embedded images, so no diff is returned; RV(dest) names the file.
  platform:
    support: full
    platforms: posix
options:
  path:
    description:
      - The run directory of a benchmark (C(<vllm_benchmark_results_dir>/<run id>)), holding
        C(runs/<host>/<label>.json) and optionally C(summary.json).
      - The task fails, naming the file, when the directory has no run files, or a run file or the summary is no
        valid JSON or not of the expected schema (C(kunpeng_ascend.vllm/benchmark-run/1),
        C(kunpeng_ascend.vllm/benchmark-summary/1)).
    type: path
    required: true
  dest:
    description:
      - The HTML file to write; C(<path>/report.html) when not set. Its directory must exist.
    type: path
  title:
    description:
      - The report's title; C(vLLM benchmark report <run id>) when not set.
    type: str
requirements:
  - matplotlib (Python library) on the host that runs the module - the controller, in the Python that runs
    Ansible (C(requirements.txt) pins it).
notes:
  - "With C(delegate_to: localhost) Ansible runs the module with the controller's Python interpreter only when
    C(localhost) is not in the inventory; when it is, set its C(ansible_python_interpreter) to a Python that has
    matplotlib, such as the one in the variable C(ansible_playbook_python)."
seealso:
  - module: kunpeng_ascend.vllm.npu_smi_info
    description: Where the NPU utilisation and HBM samples of the run files come from.
"""

EXAMPLES = r"""
- name: Write the report of the benchmark run
  kunpeng_ascend.vllm.benchmark_report:
    path: "{{ vllm_benchmark_results_dir }}/{{ run_id }}"
  delegate_to: localhost
  run_once: true
  register: report

- name: Say where the report is
  ansible.builtin.debug:
    msg: "Benchmark report: {{ report.dest }} ({{ report.hosts | dict2items | map(attribute='value.status') | list }})"
  run_once: true

- name: Write it elsewhere, with a title
  kunpeng_ascend.vllm.benchmark_report:
    path: /srv/benchmarks/20261130T234500Z
    dest: /srv/www/benchmark-latest.html
    title: Nightly benchmark of the tiny model
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
dest:
  description: The report file (written, or that would be written in check mode).
  returned: always
  type: str
  sample: /srv/benchmarks/20261130T234500Z/report.html
runs:
  description: Number of run files in the report.
  returned: success
  type: int
  sample: 4
hosts:
  description:
    - Per host, the status the report's banner shows - C(PASS), C(FAIL), or null when no run of the host has one -
      and the highest concurrency that met the targets (from C(summary.json); null without it).
  returned: success
  type: dict
  sample:
    node1:
      status: PASS
      max_concurrency_meeting_targets: 16
size:
  description: Size of the report in bytes.
  returned: success
  type: int
  sample: 498120
"""

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, read_regular_file
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._atomic_write import write_atomically
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations._benchmark_report import (
    MAX_BYTES,
    ReportError,
    build_report,
    host_statuses,
    load_run_dir,
    matplotlib_import_error,
)


def read_existing(path):
    """The bytes of ``path``, or None when it is no regular file that can be read (a FIFO is never opened to wait)."""
    try:
        return read_regular_file(path, MAX_BYTES, 'a report')
    except UnreadableFile:
        return None


def write_report(module, dest, data):
    """Write ``data`` to ``dest`` atomically; a new file gets mode 0644, an existing one keeps its own."""
    write_atomically(module, dest, data)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            dest=dict(type='path'),
            title=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    path = module.params['path']
    dest = module.params['dest'] or os.path.join(path, 'report.html')
    result = dict(changed=False, dest=dest)
    import_error = matplotlib_import_error()
    if import_error:
        module.fail_json(msg=missing_required_lib('matplotlib'), exception=import_error, **result)
    if os.path.isdir(dest):
        module.fail_json(msg='dest %s is a directory: give the path of the HTML file' % dest, **result)
    if not os.path.isdir(os.path.dirname(os.path.abspath(dest))):
        module.fail_json(msg='the directory of dest %s does not exist' % dest, **result)
    try:
        runs, summary = load_run_dir(path)
    except ReportError as error:
        module.fail_json(msg=str(error), **result)
    data = build_report(runs, summary, module.params['title']).encode('utf-8')
    result.update(runs=len(runs), hosts=host_statuses(runs, summary), size=len(data))
    if read_existing(dest) != data:
        result['changed'] = True
        if not module.check_mode:
            try:
                write_report(module, dest, data)
            except (IOError, OSError) as error:
                module.fail_json(msg='%s cannot be written: %s' % (dest, to_native(error)), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
