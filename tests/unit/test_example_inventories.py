# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The examples a new user copies, planned against the simulated Ascend host, so that none can be refused or go
stale (issue 33, "A front door").

The examples: every inventory under ``inventories/`` but ``demo`` (which ``make demo`` and scenario ``site`` run for
real), read as Ansible reads it (``ansible-inventory``), and every role README's example playbooks (the YAML blocks
of its hand-kept part: the vars of each ``role:`` entry and of its play).

1. **The newest row.** Container examples run the image of the newest final (or post) release of the compatibility
   set (``'' | kunpeng_ascend.vllm.ascend_compat_rows``); native ones the newest release whose row publishes its pip
   pins (native mode installs them) with that row's CANN; every NPU driver is the newest row's driver minimum, every
   package file carries the version it is given as, and all examples name one firmware. A new row in
   ``plugins/module_utils/stack/_compatibility_rows.py`` fails here until the examples follow it.
2. **The plan.** Each node of each example is planned by role ``vllm_service``'s entry point ``plan`` (every input
   and host check, nothing changed) in check mode on this machine, as a simulated Ascend host
   (``tests/simulator``): the simulator's ``npu-smi`` and sysfs tree of the product the example names (an ``-a3``
   image: Atlas 800I A3, else Atlas 800I A2), the driver and firmware the example installs, and stand-ins for what
   site.yml leaves (systemd, the container engine, an idle port). The paths the example names on the node - the
   model directory and the API key file - are made under the host's scratch root (the model directory with the
   real ``config.json`` of the model it names, from ``../shared/model-configs``, and msModelSlim's description for
   a W8A8 one) and the variables pointed there. A node of group ``vllm_clusters`` is planned with the launch role
   ``vllm_cluster`` gives it (docs/multinode.md: data-parallel ranks = its NPUs / tensor parallel size, the head
   first, the others headless). The plan must report no problem; its refusal fails the test with its message.
3. **The roles' own checks.** Each example's values for the roles that run before the service (site.yml's
   ``os_tuning``, ``npu_driver``, ``cann`` in native mode, ``container_runtime`` in container mode;
   multinode.yml's ``npu_network`` and ``vllm_cluster``) pass those roles' ``validate`` entry points, as do the
   vars of every role README example.
4. **The front door.** README.md is at most 8 KB and shows each example inventory whole, file by file, exactly as
   it is in ``inventories/``; none has more than ``MAX_SETTINGS`` settings, each sets ``ansible_become`` and a user
   other than root, and none restates a role's default.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import yaml

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _compatibility
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility_rows import IMAGE_REPOSITORY, IMAGE_SUFFIXES
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version import compare_ascend_versions
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import SIMULATOR, simulator_module
from ansible_collections.kunpeng_ascend.vllm.tests.shared_data import load_model_config
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness

REPO = role_harness.REPO
INVENTORIES = os.path.join(REPO, 'inventories')
# The inventories that are no example to copy: `make demo`'s, run for real by the demo and scenario site.
NOT_EXAMPLES = ('demo',)
README_LIMIT = 8 * 1024
# The settings of one example inventory, per-host ones (ansible_host, vllm_cluster_node_address) not counted.
MAX_SETTINGS = 18
PER_HOST = ('ansible_host', 'vllm_cluster_node_address')
MARKER = '<!-- hand-kept below -->'
# Connection variables: the harness reaches this machine through the local connection instead.
CONNECTION = ('ansible_host', 'ansible_user', 'ansible_become', 'ansible_become_user', 'ansible_python_interpreter',
              'ansible_connection', 'ansible_port')

fake_sysfs = simulator_module('fake_sysfs', 'fake_sysfs.py')


# --- the newest rows ---------------------------------------------------------------------------------------------

def newest_row():
    """The newest final or post release: what container examples run (the suggestion rule of _compatibility)."""
    return next(row for row in _compatibility.compatibility_rows(_compatibility.ROWS) if row['status'] != 'rc')


def newest_native_row():
    """The newest final or post release whose row publishes the pip pins native mode installs."""
    return next(row for row in _compatibility.compatibility_rows(_compatibility.ROWS)
                if row['status'] != 'rc' and row['pins'])


def image_parts(image):
    """(repository, tag without its variant suffix, suffix) of an image reference."""
    repository, dummy, tag = image.rpartition(':')
    for suffix in sorted(IMAGE_SUFFIXES, key=len, reverse=True):
        if suffix and tag.endswith(suffix):
            return repository, tag[:-len(suffix)], suffix
    return repository, tag, ''


# Which simulated product an example runs on, from its image's variant (the image is built for it).
PROFILE_BY_SUFFIX = {'': '910b-8', '-openeuler': '910b-8', '-a3': 'a3-16', '-a3-openeuler': 'a3-16',
                     '-310p': '310p-duo', '-310p-openeuler': '310p-duo'}

# The models the examples serve: the real config.json they are planned with (../shared/model-configs) and, for
# msModelSlim weights, their quant_model_description.json (its quant types; vllm-ascend reads the file).
W8A8_DESCRIPTION = {'model_quant_type': 'W8A8_DYNAMIC', 'model.embed_tokens.weight': 'FLOAT',
                    'model.layers.0.self_attn.q_a_proj.weight': 'W8A8',
                    'model.layers.3.mlp.experts.0.gate_proj.weight': 'W8A8_DYNAMIC'}
MODELS = {
    # DeepSeek-R1-Distill-Llama-70B is Llama-3.3-70B-Instruct's architecture (deepseek-ai/DeepSeek-R1 README).
    'DeepSeek-R1-Distill-Llama-70B': ('Llama-3.3-70B-Instruct__config.json', None),
    # vllm-ascend/DeepSeek-R1-W8A8: DeepSeek-R1's config.json without the FP8 quantization_config, and the
    # description of msModelSlim's W8A8_DYNAMIC.
    'DeepSeek-R1-W8A8': ('DeepSeek-R1__config.json', W8A8_DESCRIPTION),
}


# --- the examples ------------------------------------------------------------------------------------------------

def example_inventories():
    return sorted(name for name in os.listdir(INVENTORIES)
                  if os.path.isdir(os.path.join(INVENTORIES, name)) and name not in NOT_EXAMPLES)


def inventory_files(name):
    """The files of an example inventory, relative to the repository."""
    found = []
    for top, dummy, files in os.walk(os.path.join(INVENTORIES, name)):
        found += [os.path.relpath(os.path.join(top, file), REPO) for file in files]
    return sorted(found)


def read_inventory(name):
    """{'hosts': {host: its variables}, 'groups': {group: [hosts]}} as ansible-inventory reads the example."""
    return copy.deepcopy(_read_inventory(name))


def _members(listed, group):
    """The hosts of a group of ``ansible-inventory --list``'s output, its children's included."""
    value = listed.get(group) or {}
    return list(value.get('hosts', [])) + [host for child in value.get('children', []) for host in _members(listed, child)]


@functools.lru_cache(maxsize=None)
def _read_inventory(name):
    ansible_inventory = os.path.join(os.path.dirname(sys.executable), 'ansible-inventory')
    run = subprocess.run([ansible_inventory, '-i', os.path.join(INVENTORIES, name), '--list'], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stderr
    listed = json.loads(run.stdout)
    groups = dict((group, _members(listed, group)) for group, value in listed.items()
                  if isinstance(value, dict) and group != '_meta')
    return {'hosts': listed['_meta']['hostvars'], 'groups': groups}


def _group_settings(group):
    """The variables a group of a YAML inventory file sets: its hosts', its own and its children's."""
    settings = {}
    for variables in ((group or {}).get('hosts') or {}).values():
        settings.update(variables or {})
    settings.update((group or {}).get('vars') or {})
    for child in ((group or {}).get('children') or {}).values():
        settings.update(_group_settings(child))
    return settings


def inventory_settings(name):
    """Every variable the example sets, by name (per-host values merged), and what it sets it to."""
    settings = {}
    for path in inventory_files(name):
        with open(os.path.join(REPO, path), encoding='utf-8') as handle:
            document = yaml.safe_load(handle) or {}
        if '/group_vars/' in path or '/host_vars/' in path:
            settings.update(document)
        else:
            for group in document.values():
                settings.update(_group_settings(group))
    return settings


def role_readme_examples():
    """[(label, role, variables)]: each ``role:`` entry of the YAML blocks of each role README's hand-kept part,
    with its play's vars under its own."""
    found = []
    roles = sorted(name for name in os.listdir(os.path.join(REPO, 'roles'))
                   if os.path.isfile(os.path.join(REPO, 'roles', name, 'README.md')))
    for role in roles:
        with open(os.path.join(REPO, 'roles', role, 'README.md'), encoding='utf-8') as handle:
            kept = handle.read().partition('\n' + MARKER + '\n')[2]
        for number, block in enumerate(re.findall(r'^```yaml\n(.*?)^```$', kept, re.M | re.S)):
            document = yaml.safe_load(textwrap.dedent(block))
            for play in document if isinstance(document, list) else []:
                if not isinstance(play, dict):
                    continue
                entries = play.get('roles') or ([play] if 'role' in play else [])
                for entry in entries:
                    name = entry if isinstance(entry, str) else entry.get('role', '')
                    variables = dict(play.get('vars') or {}, **((entry.get('vars') or {}) if isinstance(entry, dict) else {}))
                    found.append(('roles/%s/README.md block %d: %s' % (role, number + 1, name), name.rpartition('.')[2],
                                  variables))
    return found


def examples_variables():
    """[(label, variables)]: each node of each example inventory, and each role README example's vars."""
    found = []
    for name in example_inventories():
        inventory = read_inventory(name)
        for host, variables in sorted(inventory['hosts'].items()):
            found.append(('inventories/%s %s' % (name, host), variables))
    return found + [(label, variables) for label, dummy, variables in role_readme_examples()]


# --- 1. the newest row -------------------------------------------------------------------------------------------

def version_problems(label, variables):
    """What in one example does not follow the newest rows."""
    problems = []
    row, native = newest_row(), newest_native_row()
    driver = row['driver_minimum']
    native_mode = variables.get('vllm_service_mode') == 'native'
    images = [variables['vllm_service_image']] if variables.get('vllm_service_image') else []
    images += [image.get('name') for image in variables.get('container_runtime_images') or [] if isinstance(image, dict)]
    for image in images:
        repository, tag, dummy = image_parts(image)
        if (repository, tag) != (IMAGE_REPOSITORY, row['image_tag']):
            problems.append('%s: image %s is not %s, the newest row\'s (a variant suffix is fine)' % (label, image, row['image']))
    for archive in [variables.get('vllm_service_image_archive')] + [
            image.get('archive') for image in variables.get('container_runtime_images') or [] if isinstance(image, dict)]:
        if archive and row['image_tag'] not in os.path.basename(archive):
            problems.append('%s: image archive %s does not carry the newest tag %s' % (label, archive, row['image_tag']))
    if 'npu_driver_version' in variables and compare_ascend_versions(variables['npu_driver_version'], driver) != 0:
        problems.append('%s: npu_driver_version %s is not %s, the newest row\'s driver' % (label, variables['npu_driver_version'], driver))
    # The host's CANN is native mode's: the cann role's release is the native row's.
    for key, expected in (('vllm_service_vllm_ascend_version', native if native_mode else row),
                          ('cann_vllm_ascend_version', native)):
        if key in variables and compare_ascend_versions(variables[key], expected['vllm_ascend']) != 0:
            problems.append('%s: %s %s is not v%s' % (label, key, variables[key], expected['vllm_ascend']))
    if 'cann_version' in variables:
        # CANN on the host is native mode's; a role example of cann alone follows the native row too.
        if compare_ascend_versions(variables['cann_version'], native['cann']) != 0:
            problems.append('%s: cann_version %s is not %s, the CANN of v%s (the newest row native mode installs)'
                            % (label, variables['cann_version'], native['cann'], native['vllm_ascend']))
    if native_mode and not variables.get('vllm_service_vllm_ascend_version') and not variables.get('vllm_service_pip_packages'):
        problems.append('%s: native mode without vllm_service_vllm_ascend_version' % label)
    # Every package file carries the version it is installed as.
    for key, version_key in (('npu_driver_driver_package', 'npu_driver_version'),
                             ('npu_driver_firmware_package', 'npu_driver_firmware_version'),
                             ('cann_toolkit_package', 'cann_version'), ('cann_kernels_package', 'cann_version'),
                             ('cann_nnal_package', 'cann_version')):
        sources = variables.get(key)
        if not isinstance(sources, dict):
            continue
        for source in sources.values() if not set(sources) & {'src', 'path', 'url'} else [sources]:
            location = next((source[field] for field in ('src', 'path', 'url') if field in source), '')
            if str(variables.get(version_key)) not in os.path.basename(location):
                problems.append('%s: %s %s does not carry %s %s' % (label, key, location, version_key, variables.get(version_key)))
    return problems


def test_the_newest_rows_are_what_the_examples_can_follow():
    row, native = newest_row(), newest_native_row()
    assert row['status'] in ('final', 'post') and row['driver_minimum']
    assert native['pins'] and compare_ascend_versions(native['driver_minimum'], row['driver_minimum']) <= 0, (
        'the native row needs a newer driver than the container row: the examples share one driver')


@pytest.mark.parametrize('label, variables', examples_variables(), ids=lambda value: value if isinstance(value, str) else '')
def test_every_example_follows_the_newest_row(label, variables):
    assert version_problems(label, variables) == []


def test_the_examples_name_one_firmware():
    firmware = {str(variables['npu_driver_firmware_version']) for dummy, variables in examples_variables()
                if 'npu_driver_firmware_version' in variables}
    assert len(firmware) == 1, firmware


def test_a_new_row_fails_an_example_that_does_not_follow_it(monkeypatch):
    # A newer final release appears: the examples of today name an older image and must follow.
    later = dict(_compatibility.ROWS[0], vllm_ascend='9.99.0', vllm='9.99.0', image_tag='v9.99.0', status='final')
    monkeypatch.setattr(_compatibility, 'ROWS', _compatibility.ROWS + (later,))
    problems = version_problems('inventories/example', read_inventory('example')['hosts']['a2-node-01'])
    assert any('is not quay.io/ascend/vllm-ascend:v9.99.0' in problem for problem in problems), problems


# --- 2. the plan, against the simulated host ---------------------------------------------------------------------

# Stand-ins for what site.yml leaves on a node that the plan asks the host: systemd (its version, the service not yet
# running), an idle port (ss lists no listener), the container engine's command.
STANDINS = {
    'systemctl': '#!/bin/sh\ncase "$1" in\n  --version) echo "systemd 252 (252.39-1~deb12u1)";;\n'
                 '  show) echo "ActiveState=inactive";;\nesac\nexit 0\n',
    'ss': '#!/bin/sh\nexit 0\n',
    'docker': '#!/bin/sh\nexit 0\n',
    'podman': '#!/bin/sh\nexit 0\n',
}


class Node:
    """One node of an example to plan: its label, its variables (the example's, connection ones left out), the
    simulated product and the driver and firmware it runs."""

    def __init__(self, label, variables):
        self.label = label
        self.variables = dict((key, value) for key, value in variables.items() if key not in CONNECTION)
        suffix = image_parts(self.variables.get('vllm_service_image') or ':')[2]
        assert suffix in PROFILE_BY_SUFFIX, '%s: the simulator has no product for images %s' % (label, suffix)
        self.profile = PROFILE_BY_SUFFIX[suffix]
        self.driver = str(self.variables.get('npu_driver_version') or newest_row()['driver_minimum']).lower()
        # The firmware only has to be there (the plan does not compare it).
        self.firmware = str(self.variables.get('npu_driver_firmware_version') or '7.8.0.5.216')


def simulated_host(top, node):
    """The scratch root, sysfs tree, npu-smi state and PATH of one simulated node under ``top``; return the
    variables that point the role at them (the example's node paths moved under the root)."""
    root, sysfs, bin_dir = top / 'root', top / 'sys', top / 'bin'
    for path, text in (('usr/local/Ascend/driver/version.info', 'Version=%s\n' % node.driver),
                       ('usr/local/Ascend/firmware/version.info', 'Version=%s\n' % node.firmware)):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding='utf-8')
    fake_sysfs.write_sysfs(str(sysfs), node.profile)
    bin_dir.mkdir()
    (bin_dir / 'npu-smi').symlink_to(os.path.join(SIMULATOR, 'ascend-sim'))
    for name, script in STANDINS.items():
        (bin_dir / name).write_text(script, encoding='utf-8')
        (bin_dir / name).chmod(0o755)
    env = {'PATH': '%s:%s' % (bin_dir, os.environ['PATH']), 'ASCEND_SIM_ROOT': str(root),
           'ASCEND_SIM_STATE': str(top / 'state.json'), 'ASCEND_SIM_LOG': str(top / 'calls.log')}
    init = subprocess.run([sys.executable, os.path.join(SIMULATOR, 'ascend-sim'), 'init', '--profile', node.profile],
                          env=dict(os.environ, **env), capture_output=True, text=True, check=False)
    assert init.returncode == 0, init.stderr
    overrides = {'vllm_service_sysfs_path': str(sysfs), '__example_env': env, '__example_root': str(root)}
    model = node.variables.get('vllm_service_model')
    if model:
        name = os.path.basename(model.rstrip('/'))
        assert name in MODELS, ('%s serves %s: add its config.json and description to MODELS, so that it is planned as '
                                'the model it is' % (node.label, name))
        config_name, description = MODELS[name]
        config = load_model_config(config_name)
        if description:
            config.pop('quantization_config', None)
        directory = root / model.lstrip('/')
        directory.mkdir(parents=True, exist_ok=True)
        (directory / 'config.json').write_text(json.dumps(config), encoding='utf-8')
        if description:
            (directory / 'quant_model_description.json').write_text(json.dumps(description), encoding='utf-8')
        overrides['vllm_service_model'] = str(directory)
    key_file = node.variables.get('vllm_service_api_key_file')
    if key_file:
        path = root / key_file.lstrip('/')
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('example-key-' + 'k' * 24 + '\n', encoding='utf-8')
        path.chmod(0o600)
        overrides['vllm_service_api_key_file'] = str(path)
    return overrides


def cluster_launch(nodes, variables, npus_per_node):
    """What role vllm_cluster gives each node of a data-parallel group (docs/multinode.md, roles/vllm_cluster:
    plan.yml and dp.yml): ranks per node = its NPUs / TP (or vllm_cluster_data_parallel_size_local), the head first,
    the other nodes headless from their first rank."""
    backend = variables.get('vllm_cluster_backend', 'dp')
    assert backend == 'dp', 'plan the Ray backend of %s here as role vllm_cluster does' % nodes
    local = variables.get('vllm_cluster_data_parallel_size_local') or (
        npus_per_node // int(variables.get('vllm_service_tensor_parallel_size', 1)))
    head = variables.get('vllm_cluster_node_address') or '192.0.2.1'
    launch = {}
    for rank, host in enumerate(nodes):
        args = ['--data-parallel-address', head, '--data-parallel-rpc-port', str(variables.get('vllm_cluster_rpc_port', 13389))]
        if rank:
            args += ['--data-parallel-start-rank', str(rank * local)]
        launch[host] = {'vllm_service_data_parallel_size': local * len(nodes), 'vllm_service_data_parallel_size_local': local,
                        'vllm_service_cluster_args': args, 'vllm_service_headless': rank > 0}
    return launch


def run_plays(tmp_path, hosts, plays):
    """Run ``plays`` in one ansible-playbook run on ``hosts`` (name: variables; all this machine, through the local
    connection, in check mode); return {host: the ``accepted`` its last task reports, or the messages of the task
    that failed it}."""
    inventory = {'all': {'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                                  'ansible_become': False},
                         'hosts': hosts}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory, width=1000), encoding='utf-8')
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(plays, width=1000), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.cache'),
               ANSIBLE_HOME=str(tmp_path / 'ansible-home'), ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-local'),
               ANSIBLE_REMOTE_TEMP=str(tmp_path / 'ansible-remote'), ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default',
               ANSIBLE_CALLBACK_RESULT_FORMAT='json', ANSIBLE_CALLBACK_FORMAT_PRETTY='0', ANSIBLE_NOCOLOR='1',
               ANSIBLE_RETRY_FILES_ENABLED='0')
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    run = subprocess.run([ansible_playbook, '-i', 'inventory.yml', 'play.yml'], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, check=False)
    results = {}
    for line in run.stdout.splitlines():
        failure = re.match(r'(?:fatal: \[([\w-]+)\]: FAILED!|failed: \[([\w-]+)\] \(item=.*?\)) => (\{.*\})$', line)
        success = re.match(r'ok: \[([\w-]+)\] => (\{"msg": \{"accepted": .*\}\})$', line)
        if failure:
            results.setdefault(failure.group(1) or failure.group(2), []).append(json.loads(failure.group(3)).get('msg'))
        elif success:
            results[success.group(1)] = json.loads(success.group(2))['msg']['accepted']
    assert set(results) == set(hosts), run.stdout[-6000:] + run.stderr[-3000:]
    return results


def plan_play(tmp_path, nodes):
    """Run role vllm_service's entry point plan for every node in one check-mode play, each on its simulated host;
    return {label: the plan's mode, NPUs, release, argv and problems, or the messages of its refusal}."""
    hosts = {}
    for index, node in enumerate(nodes):
        hosts['node%d' % index] = dict(node.variables, **simulated_host(tmp_path / ('node%d' % index), node))
    play = {
        'name': 'Plan the examples on their simulated hosts', 'hosts': 'all', 'gather_facts': False, 'check_mode': True,
        'environment': '{{ __example_env }}',
        'module_defaults': {'kunpeng_ascend.vllm.ascend_facts': {'root': '{{ __example_root }}'}},
        'tasks': [
            {'name': 'Plan the service', 'ansible.builtin.include_role': {
                'name': 'kunpeng_ascend.vllm.vllm_service', 'tasks_from': 'plan', 'public': True}},
            {'name': 'Report the plan', 'ansible.builtin.debug': {'msg': {'accepted': {
                'problems': '{{ vllm_service_plan.problems }}', 'mode': '{{ vllm_service_plan.mode }}',
                'npus': '{{ vllm_service_plan.npu_ids }}', 'release': '{{ vllm_service_plan.release }}',
                'args': '{{ vllm_service_plan.args }}'}}}},
        ],
    }
    results = run_plays(tmp_path, hosts, [play])
    return dict((node.label, results['node%d' % index]) for index, node in enumerate(nodes))


def example_nodes():
    """Every node of every example inventory, and every role README example that configures the service."""
    nodes = []
    for name in example_inventories():
        inventory = read_inventory(name)
        cluster = inventory['groups'].get('vllm_clusters', [])
        launch = {}
        if cluster:
            first = inventory['hosts'][cluster[0]]
            launch = cluster_launch(cluster, first, PROFILE_NPUS[Node('', first).profile])
        for host, variables in sorted(inventory['hosts'].items()):
            if host not in inventory['groups'].get('ascend_nodes', []):
                continue
            nodes.append(Node('inventories/%s %s' % (name, host), dict(variables, **launch.get(host, {}))))
    for label, role, variables in role_readme_examples():
        if role == 'vllm_service' and variables.get('vllm_service_model'):
            nodes.append(Node(label, variables))
    return nodes


PROFILE_NPUS = {'910b-8': 8, 'a3-16': 16, '310p-duo': 8}


def refused_nodes():
    """Two nodes the plan must refuse, planned with the examples to prove the harness sees both kinds of refusal: a
    plan problem (more NPUs than the A2 has) and a check of the host (an NPU driver older than the newest row's)."""
    variables = read_inventory('example')['hosts']['a2-node-01']
    return [Node('refused: too wide', dict(variables, vllm_service_tensor_parallel_size=16)),
            Node('refused: old driver', dict(variables, npu_driver_version='25.5.0'))]


@pytest.fixture(scope='module', name='plans')
def plans_fixture(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip('the plan checks that the API key file is root\'s: run as root (make test does)')
    return plan_play(tmp_path_factory.mktemp('example-plans'), example_nodes() + refused_nodes())


def test_every_node_of_every_example_is_planned(plans):
    labels = set(plans) - set(node.label for node in refused_nodes())
    assert {label.split(' ')[0] for label in labels} >= {'inventories/%s' % name for name in example_inventories()}
    assert any(label.startswith('roles/vllm_service/README.md') for label in labels)


@pytest.mark.parametrize('label', [node.label for node in example_nodes()])
def test_the_example_is_planned_without_a_problem(plans, label):
    plan = plans[label]
    assert isinstance(plan, dict) and plan['problems'] == [], plan


def test_a_refused_example_fails_here(plans):
    assert plans['refused: too wide'] == [
        'On node%d: vllm_service_tensor_parallel_size (16) x vllm_service_data_parallel_size (1) = 16 NPUs, but the '
        'service has 8 (vllm_service_npus [0, 1, 2, 3, 4, 5, 6, 7]): this node has 8 NPUs: lower a parallel size, or, '
        'to spread one model over several nodes, put them in group vllm_clusters and run playbooks/multinode.yml '
        '(docs/multinode.md). Nothing was changed.' % len(example_nodes())]
    old_driver = plans['refused: old driver']
    assert isinstance(old_driver, list) and len(old_driver) == 1 and 'does not fit NPU driver 25.5.0' in old_driver[0], old_driver


# --- 3. the roles' own checks ------------------------------------------------------------------------------------

def validate_cases():
    """{role: [(label, variables)]}: what each role's validate entry point gets from the examples - site.yml's roles
    for every node (cann in native mode, container_runtime in container mode), multinode.yml's for a cluster's
    nodes, and each role README example that gives its role vars."""
    cases = {}
    for name in example_inventories():
        inventory = read_inventory(name)
        for host, variables in sorted(inventory['hosts'].items()):
            variables = dict((key, value) for key, value in variables.items() if key not in CONNECTION)
            native = variables.get('vllm_service_mode') == 'native'
            roles = ['os_tuning', 'npu_driver'] + (['cann'] if native else ['container_runtime'])
            if host in inventory['groups'].get('vllm_clusters', []):
                roles += ['npu_network', 'vllm_cluster']
            for role in roles:
                cases.setdefault(role, []).append(('inventories/%s %s' % (name, host), variables))
    for label, role, variables in role_readme_examples():
        if variables:
            cases.setdefault(role, []).append((label, variables))
    return cases


@pytest.fixture(scope='module', name='validated')
def validated_fixture(tmp_path_factory):
    """Every role's validate entry point for its cases, a play per role, in one run (role_harness's play, each
    case a host)."""
    hosts, plays, names = {}, [], {}
    for role, cases in sorted(validate_cases().items()):
        for index, (label, variables) in enumerate(cases):
            names[(role, label)] = '%s-%d' % (role, index)
            hosts['%s-%d' % (role, index)] = variables
        plays.append({
            'name': 'Check the inputs of %s' % role, 'hosts': ':'.join('%s-%d' % (role, index) for index in range(len(cases))),
            'gather_facts': False, 'check_mode': True,
            # A refusal is rescued and reported, so that a play whose every host is refused does not end the run.
            'tasks': [{'block': [
                {'name': 'Run validate of %s' % role, 'ansible.builtin.include_role': {
                    'name': 'kunpeng_ascend.vllm.' + role, 'tasks_from': 'validate', 'public': True,
                    'apply': {'check_mode': True}}},
                {'name': 'Report the inputs accepted', 'ansible.builtin.debug': {'msg': {'accepted': True}}}],
                'rescue': [{'name': 'Report the refusal', 'ansible.builtin.debug': {'msg': {'accepted': {'messages': (
                    "{{ ansible_failed_result.results | selectattr('failed', 'defined') | selectattr('failed')"
                    " | map(attribute='msg') | list if ansible_failed_result.results is defined"
                    " else [ansible_failed_result.msg] }}")}}}}]}]})
    results = run_plays(tmp_path_factory.mktemp('example-checks'), hosts, plays)
    return dict((key, {'accepted': True} if results[host] is True else {'accepted': False, 'messages': results[host]['messages']})
                for key, host in names.items())


@pytest.mark.parametrize('role, label', [(role, label) for role, cases in sorted(validate_cases().items())
                                         for label, dummy in cases])
def test_the_example_passes_the_roles_checks(validated, role, label):
    variables = dict(validate_cases()[role])[label]
    if role == 'model_quantize':
        # Its checks end with the source directory on the node, which this machine does not have: every other
        # check passed when that is the only refusal.
        expected = {'accepted': False, 'messages': ['model_quantize_source %s is not a directory'
                                                    % variables['model_quantize_source']]}
    else:
        expected = {'accepted': True}
    assert validated[(role, label)] == expected


# --- 4. the front door -------------------------------------------------------------------------------------------

def readme_inventory_files():
    """{path: text}: the inventory files README.md shows, each in a YAML block after a line ``# <path>``."""
    with open(os.path.join(REPO, 'README.md'), encoding='utf-8') as handle:
        text = handle.read()
    shown = {}
    for block in re.findall(r'^```yaml\n(.*?)^```$', text, re.M | re.S):
        for path, body in re.findall(r'^# (inventories/\S+)\n(.*?)(?=^# inventories/|\Z)', block, re.M | re.S):
            assert path not in shown, 'README.md shows %s twice' % path
            shown[path] = body
    return shown


def role_defaults():
    defaults = {}
    for role in os.listdir(os.path.join(REPO, 'roles')):
        path = os.path.join(REPO, 'roles', role, 'defaults', 'main.yml')
        if os.path.isfile(path):
            with open(path, encoding='utf-8') as handle:
                defaults.update(yaml.safe_load(handle) or {})
    return defaults


def test_the_readme_is_at_most_8_kb():
    assert os.path.getsize(os.path.join(REPO, 'README.md')) <= README_LIMIT


@pytest.mark.parametrize('name', example_inventories())
def test_the_readme_shows_the_example_whole_as_it_is(name):
    shown = readme_inventory_files()
    for path in inventory_files(name):
        with open(os.path.join(REPO, path), encoding='utf-8') as handle:
            text = handle.read()
        assert path in shown, 'README.md does not show %s' % path
        assert shown[path] == (text[len('---\n'):] if text.startswith('---\n') else text), path


def test_the_readme_shows_no_inventory_that_is_not_there():
    assert sorted(readme_inventory_files()) == sorted(path for name in example_inventories() for path in inventory_files(name))


@pytest.mark.parametrize('name', example_inventories())
def test_the_example_is_short_safe_and_says_nothing_twice(name):
    settings = inventory_settings(name)
    assert len([key for key in settings if key not in PER_HOST]) <= MAX_SETTINGS, sorted(settings)
    assert settings.get('ansible_become') is True
    assert settings.get('ansible_user') not in (None, 'root')
    defaults = role_defaults()
    assert [key for key, value in settings.items() if key in defaults and defaults[key] == value] == []


def test_every_playbook_the_readme_runs_is_there():
    with open(os.path.join(REPO, 'README.md'), encoding='utf-8') as handle:
        named = set(re.findall(r'\bkunpeng_ascend\.vllm\.([a-z0-9_]+)', handle.read()))
    playbooks = set(name[:-len('.yml')] for name in os.listdir(os.path.join(REPO, 'playbooks')) if name.endswith('.yml'))
    assert named and named - playbooks == set()
