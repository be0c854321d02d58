# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The fleet plan: what playbooks/plan.yml learned of every node before anything changes, as one record on the
controller (``fleet-plan.json``, schema ``kunpeng_ascend.vllm/fleet-plan/1``, and a short Markdown table beside it).
This file is its one owner: it builds the record from what the playbook observed on each node (``node_entry``,
``build``), reads it back (``read``), renders it (``markdown``, ``lines``), gives the verdict (which nodes leave the
run; whether the failure budget ``plan_max_failed`` lets the run go on: ``verdict``) and answers a JMESPath query on
it (``run_query``, controller only: the ``jmespath`` package).

What a node would change is decided here from read-only observations, never guessed: the versions the inventory asks
for (``npu_driver_version``, ``npu_driver_firmware_version``, ``cann_version``) against those ``ascend_facts`` found
(``_stack_upgrade.upgrade_steps``, Huawei's order), a reboot when the driver or firmware changes, the image as the
container engine lists it, and the service's deployment record (``_deployment``) against the serving plan. What
cannot be read is ``unknown`` (null), with the reason in the node's ``unknown`` list.

A node entry (``nodes[]``): ``host``; ``status`` - ``planned``, ``failed`` (its input checks or its plan failed:
``failure`` says where and why), ``held`` (a node of a multi-node group one of whose nodes failed: the group moves as
one) or ``lost`` (it left the play before it was planned: unreachable, or a task failed outside the checks);
``group`` (the head of its multi-node group, or null) and ``rank``; ``mode``; ``release`` and ``row`` (the
compatibility set's row of the release); ``npus`` (``count`` the service uses, ``host`` the host has, ``cards``);
``layout`` (``tp``, ``dp``, ``nodes``); ``sizing`` (the serving plan's, ``verdict`` one of fits, close, refused,
unknown); ``assumed`` (what the plan assumed rather than read: a fresh host); ``changes`` (``packages``, ``reboot``,
``image``, ``service``); ``needs`` (``cann``, ``container_runtime``: what site.yml installs there); ``roles`` (whose
input checks apply); ``unknown``.

Standard library only (``jmespath`` imported when a query runs); controller-side code, Python 3.9 and later.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._compatibility import ROWS, check_combination
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving._deployment import parse_record, record_of
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._stack_upgrade import upgrade_steps

SCHEMA = 'kunpeng_ascend.vllm/fleet-plan/1'
JSON_NAME = 'fleet-plan.json'
MARKDOWN_NAME = 'fleet-plan.md'
# A plan file larger than this is no plan of this collection (100 nodes take about 200 KB).
MAX_BYTES = 64 << 20
STATUSES = ('planned', 'failed', 'held', 'lost')
SIZING_VERDICTS = ('fits', 'close', 'refused', 'unknown')
# The roles whose input checks plan.yml runs (besides the serving plan itself), in site.yml's order: those before the
# serving plan, then those whose need the plan decides.
BEFORE_PLAN = ('os_tuning', 'npu_driver', 'npu_network')
AFTER_PLAN = ('cann', 'container_runtime', 'monitoring')
ROLES = BEFORE_PLAN + AFTER_PLAN
# The stack components roles npu_driver and cann install, and the inventory variable that sets each one's version.
DRIVER_PARTS = ('driver', 'firmware')
CANN_PARTS = ('toolkit', 'kernels', 'nnal')
# What docker and podman print when the image looked up is not there (as container_image_load reads them).
IMAGE_NOT_FOUND = re.compile(r'no such (image|object)|image not known|not found|unknown image', re.IGNORECASE)
# Ansible's spellings of a boolean that may come as text from -e.
_TRUE = frozenset(['true', 'yes', 'on', 'y', '1'])
_FALSE = frozenset(['false', 'no', 'off', 'n', '0'])
# A message longer than this is cut in the one-line summary and the Markdown table (never in the JSON).
SHORT = 300
# The fields of the deployment record compared with the plan's (the record holds no argv nor environment).
RECORD_FIELDS = ('mode', 'container_engine', 'container_name', 'image', 'vllm_ascend', 'endpoint', 'served_model_name',
                 'model', 'npus', 'tls')


class QueryError(ValueError):
    """A query that cannot run: no jmespath, or an expression that is not JMESPath."""


# --------------------------------------------------------------------------------------------------------- inputs

def boolean(value, variable, default=None):
    """``value`` as a bool, or ``default`` when it is null. ValueError naming ``variable`` otherwise."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError('%s must be true or false (or null); got %s' % (variable, json.dumps(value)))


def parse_budget(value):
    """The failure budget ``plan_max_failed``: a count of nodes (0 or more) or a percentage of the planned nodes
    (``"10%"``). Returns ``{'count': n}`` or ``{'percent': p}``; ValueError naming the variable otherwise."""
    problem = ('plan_max_failed must be how many nodes may fail their plan and leave the run (0 or more, such as 2) '
               'or a percentage of the planned nodes (such as "10%%"); got %s')
    if value is None:
        return {'count': 0}
    if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
        raise ValueError(problem % json.dumps(value))
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(problem % json.dumps(value))
        return {'count': int(value)}
    if isinstance(value, str):
        text = value.strip()
        if re.match(r'[0-9]+\Z', text):
            return {'count': int(text)}
        match = re.match(r'([0-9]+(\.[0-9]+)?)\s*%\Z', text)
        if match and float(match.group(1)) <= 100:
            return {'percent': float(match.group(1))}
    raise ValueError(problem % json.dumps(value))


def allowed_failures(budget, planned):
    """How many of ``planned`` nodes may leave the run under ``budget`` (parse_budget's): a percentage rounds down."""
    if 'percent' in budget:
        return int(math.floor(planned * budget['percent'] / 100.0 + 1e-9))
    return budget['count']


def budget_text(budget):
    return ('%g%%' % budget['percent']) if 'percent' in budget else str(budget['count'])


def input_problems(inputs, jmespath_available=None):
    """The problems of plan.yml's own inputs ``inputs`` (``max_failed``, ``query``, ``output_dir``,
    ``install_cann``), each naming its variable (``plan_max_failed``, ``plan_query``, ``plan_output_dir``,
    ``ascend_install_cann``)."""
    problems = []
    try:
        parse_budget(inputs.get('max_failed'))
    except ValueError as error:
        problems.append(str(error))
    query = inputs.get('query')
    if query is not None:
        if not isinstance(query, str) or not query.strip():
            problems.append('plan_query must be a JMESPath expression such as "nodes[?sizing.verdict==\'refused\']'
                            '.host" (or null); got %s' % json.dumps(query))
        else:
            try:
                compile_query(query)
            except QueryError as error:
                problems.append(str(error))
    output_dir = inputs.get('output_dir')
    if not isinstance(output_dir, str) or not output_dir or any(ord(char) < 32 or ord(char) == 127 for char in output_dir):
        problems.append('plan_output_dir must be a directory on the controller (a path without control characters); '
                        'got %s' % json.dumps(output_dir))
    try:
        boolean(inputs.get('install_cann'), 'ascend_install_cann')
    except ValueError as error:
        problems.append(str(error))
    return problems


# ---------------------------------------------------------------------------------------------------------- query

def _jmespath():
    try:
        import jmespath  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise QueryError('plan_query needs the Python package jmespath on the controller, where the query runs: '
                         'pip install jmespath (requirements.txt pins the version this collection is tested with)')
    return jmespath


def compile_query(expression, variable='plan_query'):
    """The compiled JMESPath ``expression``; QueryError naming ``variable`` when it is not one."""
    jmespath = _jmespath()
    try:
        return jmespath.compile(expression)
    except jmespath.exceptions.JMESPathError as error:
        raise QueryError('%s %s is not a JMESPath expression: %s'
                         % (variable, json.dumps(expression), str(error).replace('\n', ' ')))


def run_query(document, expression, variable='plan_query'):
    """What JMESPath ``expression`` selects of ``document`` (a record read back), such as
    ``nodes[?sizing.verdict=='refused'].host``. QueryError naming ``variable`` when it cannot run."""
    compiled = compile_query(expression, variable)
    jmespath = _jmespath()
    try:
        return compiled.search(document)
    except jmespath.exceptions.JMESPathError as error:
        raise QueryError('%s %s failed on the fleet plan: %s'
                         % (variable, json.dumps(expression), str(error).replace('\n', ' ')))


# ----------------------------------------------------------------------------------------------------- one node

def _dict(value):
    return value if isinstance(value, dict) else {}


def _version_of(ascend, part):
    component = _dict(ascend).get(part)
    return _dict(component).get('version') if component is not None else None


def host_needs(plan, install_cann=None):
    """What site.yml installs on a node for its serving plan ``plan`` (``vllm_service_plan``; null when the plan
    failed): ``cann`` - host CANN, in native mode, or when ``install_cann`` (``ascend_install_cann``) says so either
    way; container mode needs only the driver, firmware and the container runtime, the image holding CANN - and
    ``container_runtime`` in container mode. Without a plan both are true (what site.yml did before the plan: such a
    node leaves the run anyway)."""
    explicit = boolean(install_cann, 'ascend_install_cann')
    mode = _dict(plan).get('mode')
    cann = explicit if explicit is not None else mode != 'container'
    return {'cann': cann, 'container_runtime': mode != 'native', 'mode': mode,
            'cann_reason': ('ascend_install_cann is %s' % str(explicit).lower()) if explicit is not None
            else 'container mode: the image holds CANN' if mode == 'container'
            else 'native mode' if mode == 'native' else 'no serving plan'}


def input_checks(roles, stage, plan=None, install_cann=None, monitoring=False, cluster=False, npu_network=True,
                 state='started'):
    """The roles of ``roles`` (plan_roles) whose input checks (``tasks_from: validate``) run on a node at ``stage``:
    ``before`` the serving plan - os_tuning, npu_driver, and npu_network on a node of a multi-node group (unless
    ``npu_network`` is false: multinode_npu_network) - or ``after`` it, as its plan ``plan`` decides (host_needs) -
    cann, container_runtime, and monitoring on a single node when ``monitoring`` (monitoring_enabled). ``all``: both.
    A multi-node group taken down (``state`` stopped: vllm_cluster_state) needs neither its NPU network nor the engine.
    ValueError for an unknown role or stage, naming plan_roles, or an unknown state, naming vllm_cluster_state."""
    unknown = [role for role in roles or () if role not in ROLES]
    if unknown or isinstance(roles, str):
        raise ValueError('plan_roles must be a list of the roles %s; got %s' % (', '.join(ROLES), json.dumps(roles)))
    if stage not in ('before', 'after', 'all'):
        raise ValueError('stage must be before, after or all, not %r' % (stage,))
    cluster = boolean(cluster, 'plan_as_cluster', False)
    if state not in ('started', 'stopped'):
        raise ValueError('vllm_cluster_state must be started or stopped; got %s' % json.dumps(state))
    wanted = set()
    if stage in ('before', 'all'):
        wanted |= {'os_tuning', 'npu_driver'}
        if cluster and boolean(npu_network, 'multinode_npu_network', True):
            wanted.add('npu_network')
    if stage in ('after', 'all'):
        needs = host_needs(plan, install_cann)
        wanted |= {role for role, needed in (('cann', needs['cann']), ('container_runtime', needs['container_runtime']),
                                             ('monitoring', not cluster and boolean(monitoring, 'monitoring_enabled',
                                                                                    False)))
                   if needed}
    if cluster and state == 'stopped':
        wanted -= {'npu_network', 'container_runtime'}
    return [role for role in ROLES if role in wanted and role in roles]


def _failure(observed):
    """The task and message of a node's failure: ``failure`` holds the failed task's ``task``, ``message`` and either
    ``messages`` or the loop's ``results`` (the messages of its failed items are taken from those)."""
    failure = observed.get('failure')
    if not isinstance(failure, dict):
        return None
    messages = [str(message) for message in failure.get('messages') or () if message]
    messages += [str(item.get('msg')) for item in failure.get('results') or ()
                 if isinstance(item, dict) and item.get('failed') and item.get('msg')]
    message = str(failure.get('message') or '').strip()
    # A loop's assert says "One or more items failed"; its items say what.
    if messages and (not message or message.lower().startswith('one or more items failed')):
        message = '; '.join(messages)
    return {'task': str(failure.get('task') or ''), 'message': message or 'the task failed without a message'}


def _row(release, rows=ROWS):
    """The compatibility row of ``release`` among ``rows`` (the built-in ones with the site's, ascend_compat_site_rows),
    with its ``source`` (``site`` for a site's row); None when none."""
    if not release:
        return None
    try:
        result = check_combination(vllm_ascend=release, rows=rows)
    except (ValueError, TypeError, KeyError):
        return None
    row = result.get('row')
    if not row:
        return None
    return dict((key, row.get(key)) for key in ('vllm_ascend', 'vllm', 'cann', 'driver_minimum', 'image', 'status',
                                                'source'))


def _sizing(plan):
    """The serving plan's sizing (_sizing.size_deployment's verdict, problems, warnings, suggestion, per_npu, and why
    it was not sized: ``skipped``); unknown when the plan holds none."""
    sizing = _dict(plan).get('sizing')
    if not isinstance(sizing, dict):
        return {'verdict': 'unknown', 'problems': [], 'warnings': ['not checked: the serving plan holds no sizing'],
                'suggestion': None, 'per_npu': None, 'skipped': 'the serving plan holds no sizing'}
    verdict = sizing.get('verdict') if sizing.get('verdict') in SIZING_VERDICTS else 'unknown'
    return {'verdict': verdict, 'problems': list(sizing.get('problems') or []),
            'warnings': list(sizing.get('warnings') or []), 'suggestion': sizing.get('suggestion'),
            'per_npu': sizing.get('per_npu') if isinstance(sizing.get('per_npu'), dict) else None,
            'skipped': sizing.get('skipped') or None}


def _assumed(plan):
    assumed = _dict(plan).get('assumed')
    if isinstance(assumed, dict):
        return ['%s: %s' % (key, json.dumps(value) if not isinstance(value, str) else value)
                for key, value in sorted(assumed.items())]
    if isinstance(assumed, (list, tuple)):
        return [item if isinstance(item, str) else json.dumps(item, sort_keys=True) for item in assumed]
    return []


def _integer(value):
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _npus(plan, ascend):
    plan = _dict(plan)
    ids = plan.get('npu_ids') if isinstance(plan.get('npu_ids'), list) else None
    cards = plan.get('cards') if isinstance(plan.get('cards'), list) else None
    return {'count': len(ids) if ids is not None else None, 'host': _integer(_dict(ascend).get('npu_count')),
            'cards': len(cards) if cards is not None else None}


def _layout(plan, cluster, members):
    """TP x DP x nodes of a single node's plan, or of its whole multi-node group (``members``: the group's
    observations, head first)."""
    serving = _dict(_dict(plan).get('serving'))
    tp = _integer(serving.get('tensor_parallel_size'))
    if not cluster:
        return {'tp': tp, 'dp': _integer(serving.get('data_parallel_size')), 'nodes': 1 if plan else None}
    nodes = len(cluster.get('nodes') or ()) or None
    if cluster.get('backend') == 'ray':
        dp = _integer(serving.get('data_parallel_size'))
    else:
        locals_ = [_integer(_dict(member.get('cluster')).get('dp_local')) for member in members]
        dp = sum(locals_) if locals_ and None not in locals_ and len(locals_) == nodes else None
    return {'tp': tp, 'dp': dp, 'nodes': nodes}


def package_changes(ascend, targets, roles, install_cann):
    """The stack steps a node would take (``_stack_upgrade.upgrade_steps``): the driver and firmware when role
    npu_driver runs, CANN's parts when role cann runs and the node needs host CANN. ``(steps, unknown)``: steps is
    None when the installed versions cannot be read."""
    targets = _dict(targets)
    wanted = {}
    if 'npu_driver' in roles:
        wanted.update(driver=targets.get('driver'), firmware=targets.get('firmware'))
    if 'cann' in roles and install_cann:
        # NNAL only where its package is given (targets['nnal'] says whether), at CANN's version.
        nnal = targets.get('cann') if boolean(targets.get('nnal'), 'cann_nnal_package', False) else None
        wanted.update(toolkit=targets.get('cann'), kernels=targets.get('cann'), nnal=nnal)
    wanted = dict((key, value) for key, value in wanted.items() if value not in (None, ''))
    if not wanted:
        return [], []
    if not isinstance(ascend, dict):
        return None, ['the installed versions (ascend_facts did not run: the plan failed before it)']
    installed = dict((part, _version_of(ascend, part)) for part in DRIVER_PARTS + CANN_PARTS)
    try:
        return upgrade_steps(installed, wanted)['steps'], []
    except ValueError as error:
        return None, ['the packages: %s' % error]


def image_change(plan, probe, archive):
    """Whether container mode finds its image: ``{'ref', 'state': present | absent | unknown, 'action': null | load
    | pull, 'reason'}``; null in native mode or without a plan. ``probe`` is the result of ``<engine> image inspect
    --format {{.Id}} <image>`` (skipped: not run)."""
    plan = _dict(plan)
    if plan.get('mode') != 'container':
        return None
    ref = _dict(plan.get('cli')).get('image')
    action = 'load %s' % archive if archive else 'pull'
    probe = _dict(probe)
    if not probe or probe.get('skipped') or 'rc' not in probe:
        engine = (plan.get('command') or [''])[0]
        reason = ('the container engine is not installed yet' if not str(engine).startswith('/')
                  else 'the engine was not asked (%s)' % (probe.get('skip_reason') or 'not run'))
        return {'ref': ref, 'state': 'unknown', 'action': action, 'reason': reason}
    if probe.get('rc') == 0 and str(probe.get('stdout') or '').strip():
        return {'ref': ref, 'state': 'present', 'action': None, 'reason': None}
    said = '%s %s' % (probe.get('stderr') or '', probe.get('stdout') or '')
    if probe.get('rc') not in (0, None) and IMAGE_NOT_FOUND.search(said):
        return {'ref': ref, 'state': 'absent', 'action': action, 'reason': None}
    reason = (str(probe.get('stderr') or probe.get('msg') or '').strip().splitlines() or ['no answer'])[0]
    return {'ref': ref, 'state': 'unknown', 'action': action, 'reason': 'the engine said: %s' % reason[:SHORT]}


def _shown(value):
    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else value


def service_change(plan, model, probe):
    """What happens to the service's deployment, from its record on the node (``probe``: the slurp of
    ``/etc/kunpeng-ascend-vllm/services/<name>.json``) against the plan: ``new`` (no record), ``changed`` (with the
    ``differences``), ``unchanged`` (the record matches; it holds no argv nor environment, which the role compares
    when it runs) or ``unknown`` (the record cannot be read). Null without a plan."""
    plan = _dict(plan)
    if not plan.get('name') or not plan.get('mode'):
        return None
    probe = _dict(probe)
    if not probe or probe.get('skipped'):
        return {'state': 'unknown', 'differences': [], 'reason': 'the record was not read'}
    if probe.get('failed') or 'content' not in probe:
        message = str(probe.get('msg') or '')
        if 'not found' in message.lower() or 'no such file' in message.lower():
            return {'state': 'new', 'differences': [], 'reason': None}
        return {'state': 'unknown', 'differences': [], 'reason': 'the record cannot be read: %s' % message[:SHORT]}
    try:
        text = base64.b64decode(probe['content'], validate=True).decode('utf-8')
    except (binascii.Error, TypeError, ValueError, UnicodeDecodeError):
        return {'state': 'unknown', 'differences': [], 'reason': 'the record is not UTF-8 text in base64'}
    record, problems = parse_record(text, plan['name'])
    if record is None:
        return {'state': 'unknown', 'differences': [], 'reason': 'the record is not one this collection writes: %s'
                % '; '.join(problems)}
    try:
        wanted = record_of(plan, model)
    except (KeyError, TypeError):
        return {'state': 'unknown', 'differences': [], 'reason': 'the serving plan is incomplete'}
    differences = ['%s %s -> %s' % (key, _shown(record.get(key)), _shown(wanted.get(key)))
                   for key in RECORD_FIELDS if record.get(key) != wanted.get(key)]
    return {'state': 'changed' if differences else 'unchanged', 'differences': differences, 'reason': None}


def _member(observed):
    """Whether ``observed`` is of a node of a multi-node group (its ``cluster`` names the group's nodes)."""
    cluster = _dict(_dict(observed).get('cluster'))
    return bool(cluster.get('nodes')) and cluster.get('member', True) not in (False, 'False', 'false')


def node_entry(observed, members=None, rows=ROWS):
    """The fleet plan's entry of one node from what plan.yml observed there (``observed``: ``host``, ``failure``,
    ``plan`` - vllm_service_plan -, ``model``, ``ascend`` - ansible_facts['ascend'] -, ``targets``, ``roles``,
    ``install_cann``, ``reboot_ok``, ``image_archive``, ``record`` and ``image`` - the registered reads -, and for a node
    of a multi-node group ``cluster``: ``nodes``, ``backend``, ``dp_local``). ``members``: the observations of its
    group, head first (for the group's DP)."""
    observed = _dict(observed)
    plan = observed.get('plan') if isinstance(observed.get('plan'), dict) and 'mode' in observed['plan'] else None
    ascend = observed.get('ascend') if isinstance(observed.get('ascend'), dict) else None
    cluster = observed.get('cluster') if _member(observed) else None
    failure = _failure(observed)
    unknown = []
    try:
        needs = host_needs(plan, observed.get('install_cann'))
        roles = input_checks(observed.get('roles') or [], 'all', plan, observed.get('install_cann'),
                             observed.get('monitoring'), cluster is not None, observed.get('npu_network', True))
    except ValueError as error:
        needs = host_needs(plan)
        roles = []
        failure = failure or {'task': 'Check the plan\'s inputs', 'message': str(error)}
    try:
        reboot_ok = boolean(observed.get('reboot_ok'), 'npu_driver_reboot_ok', False)
    except ValueError:
        reboot_ok = False
    steps, why = package_changes(ascend, observed.get('targets'), observed.get('roles') or [], needs['cann'])
    unknown += why
    reboot = None if steps is None else any(step['component'] in DRIVER_PARTS for step in steps)
    image = image_change(plan, observed.get('image'), observed.get('image_archive'))
    if image and image['state'] == 'unknown':
        unknown.append('the image: %s' % image['reason'])
    service = service_change(plan, observed.get('model'), observed.get('record'))
    if service and service['state'] == 'unknown':
        unknown.append('the service: %s' % service['reason'])
    if plan is None and failure is None:
        # No failure was seen, yet there is no plan: the node does not go on unplanned.
        failure = {'task': '', 'message': 'its serving plan was not made (vllm_service_plan is missing or has no mode)'}
    release = (plan or {}).get('release') or None
    group = None
    rank = None
    if cluster and cluster.get('nodes'):
        group = cluster['nodes'][0]
        rank = cluster['nodes'].index(observed.get('host')) if observed.get('host') in cluster['nodes'] else None
    return {
        'host': observed.get('host'),
        'status': 'failed' if failure else 'planned',
        'failure': failure,
        'group': group,
        'rank': rank,
        'mode': (plan or {}).get('mode'),
        'release': release,
        'row': _row(release, rows),
        'npus': _npus(plan, ascend),
        'layout': _layout(plan, cluster, members or [observed]),
        'sizing': _sizing(plan),
        'assumed': _assumed(plan),
        'endpoint': (plan or {}).get('url'),
        'changes': {'packages': steps, 'reboot': reboot, 'reboot_ok': reboot_ok, 'image': image, 'service': service},
        'needs': {'cann': needs['cann'], 'container_runtime': needs['container_runtime'],
                  'cann_reason': needs['cann_reason']},
        'roles': roles,
        'unknown': unknown,
    }


# ---------------------------------------------------------------------------------------------------- the fleet

def _lost(host):
    return {'host': host, 'status': 'lost',
            'failure': {'task': '', 'message': '%s left the play before it was planned: it could not be reached, or a '
                                               'task failed outside the checks (see the run\'s output)' % host},
            'group': None, 'rank': None, 'mode': None, 'release': None, 'row': None,
            'npus': {'count': None, 'host': None, 'cards': None}, 'layout': {'tp': None, 'dp': None, 'nodes': None},
            'sizing': _sizing(None), 'assumed': [], 'endpoint': None,
            'changes': {'packages': None, 'reboot': None, 'reboot_ok': False, 'image': None, 'service': None},
            'needs': {'cann': True, 'container_runtime': True, 'cann_reason': 'no serving plan'},
            'roles': [], 'unknown': ['everything: the node was not planned']}


def verdict(entries, budget):
    """Which nodes leave the run and whether the run goes on: the nodes whose plan failed (or that were lost) and the
    other nodes of their multi-node groups (held) leave it; when more nodes leave it than the budget (parse_budget's)
    allows, the run stops before any change on every node. ``stops`` maps each host that must stop
    to the message it stops with."""
    failed = [entry['host'] for entry in entries if entry['status'] in ('failed', 'lost')]
    held = [entry['host'] for entry in entries if entry['status'] == 'held']
    removed = failed + held
    allowed = allowed_failures(budget, len(entries))
    proceed = len(removed) <= allowed
    shown = ', '.join(failed[:10]) + (' and %d more' % (len(failed) - 10) if len(failed) > 10 else '')
    shown += ('; held with their group: %s' % ', '.join(held)) if held else ''
    if not removed:
        summary = 'every node of %d planned: nothing stops the run' % len(entries)
    elif proceed:
        summary = ('%d of %d nodes leave the run (failed: %s); plan_max_failed %s allows %d: the run goes on without '
                   'them' % (len(removed), len(entries), shown, budget_text(budget), allowed))
    else:
        summary = ('%d of %d nodes cannot be planned (failed: %s), more than plan_max_failed %s allows (%d): the run '
                   'stops before any change, on every node'
                   % (len(removed), len(entries), shown, budget_text(budget), allowed))
    stops = {}
    by_host = dict((entry['host'], entry) for entry in entries)
    if proceed:
        for host in removed:
            entry = by_host[host]
            stops[host] = ('%s leaves the run before any change: %s (fleet plan; plan_max_failed %s lets the other nodes '
                           'go on)' % (host, _why(entry), budget_text(budget)))
    else:
        for entry in entries:
            stops[entry['host']] = ('Nothing changes on %s: %s. %s' % (
                entry['host'], summary, ('Its own plan: %s.' % _why(entry).rstrip('.')) if entry['host'] in removed
                else 'Fix the failed nodes (see the fleet plan), leave them out with --limit, or raise plan_max_failed.'))
    return {'proceed': proceed, 'planned': len(entries) - len(removed), 'nodes': len(entries), 'failed': failed,
            'held': held, 'removed': removed, 'allowed': allowed, 'max_failed': budget_text(budget),
            'summary': summary, 'stops': stops}


def _why(entry):
    failure = entry.get('failure') or {}
    if entry['status'] == 'held':
        return failure.get('message') or 'a node of its group failed'
    where = failure.get('task')
    return ('%s: %s' % (where, failure.get('message')) if where else failure.get('message')) or 'its plan failed'


def build(observations, hosts=None, max_failed=0, generated=None, playbook=None, rows=ROWS):
    """The fleet plan from what plan.yml observed on each node (``observations``, node_entry's input; ``hosts``: every
    host of the run - one without an observation was lost: unreachable, or failed outside the checks), under the
    failure budget ``max_failed`` (plan_max_failed), the release's row looked up in ``rows`` (the built-in rows with the
    site's). ValueError naming plan_max_failed for a budget that is none."""
    budget = parse_budget(max_failed)
    observed = dict((item.get('host'), item) for item in observations if isinstance(item, dict) and item.get('host'))
    order = list(hosts or []) + [host for host in observed if host not in (hosts or [])]
    groups = {}
    for host in order:
        if _member(observed.get(host)):
            nodes = list(observed[host]['cluster']['nodes'])
            groups.setdefault(nodes[0], nodes)
    entries = []
    for host in order:
        if host not in observed:
            entries.append(_lost(host))
            continue
        members = None
        if _member(observed[host]):
            members = [observed.get(member, {'host': member}) for member in observed[host]['cluster']['nodes']]
        entries.append(node_entry(observed[host], members, rows))
    by_host = dict((entry['host'], entry) for entry in entries)
    for head, nodes in groups.items():
        broken = [node for node in nodes if node not in by_host or by_host[node]['status'] != 'planned']
        for node in nodes:
            entry = by_host.get(node)
            if entry is not None and entry['status'] == 'planned' and broken:
                entry['status'] = 'held'
                entry['failure'] = {'task': '', 'message': 'held with its multi-node group (head %s): %s did not plan'
                                    % (head, ', '.join(broken))}
    group_list = []
    for head, nodes in groups.items():
        entry = by_host.get(head) or {}
        group_list.append({'head': head, 'nodes': nodes, 'layout': entry.get('layout'),
                           'status': 'planned' if all(by_host.get(node, {}).get('status') == 'planned' for node in nodes)
                           else 'failed'})
    result = verdict(entries, budget)
    stops = result.pop('stops')
    return {'schema': SCHEMA, 'generated': generated, 'playbook': playbook, 'verdict': result, 'groups': group_list,
            'nodes': entries}, stops


def needs_by_host(record):
    """``{host: {'cann': bool, 'container_runtime': bool}}`` of a fleet plan: what site.yml installs on each node."""
    return dict((entry['host'], {'cann': bool(entry['needs']['cann']),
                                 'container_runtime': bool(entry['needs']['container_runtime'])})
                for entry in record['nodes'])


def dumps(record):
    """The record's file text (the one writer)."""
    return json.dumps(record, indent=2, sort_keys=True) + '\n'


def read(text):
    """``(record, problems)`` of a plan file's text: the record when it is a fleet plan this collection wrote
    (problems []), else None and what is wrong with it (the one reader)."""
    if not isinstance(text, str):
        return None, ['it is not text']
    if len(text) > MAX_BYTES:
        return None, ['it is larger than %d bytes' % MAX_BYTES]
    try:
        record = json.loads(text)
    except ValueError as error:
        return None, ['it is not JSON (%s)' % error]
    return check(record)


def check(record):
    """``(record, problems)`` of a record already parsed (see read)."""
    if not isinstance(record, dict):
        return None, ['it is not a JSON object']
    if record.get('schema') != SCHEMA:
        return None, ['its schema is %s, not %s' % (json.dumps(record.get('schema')), SCHEMA)]
    problems = []
    nodes = record.get('nodes')
    if not isinstance(nodes, list):
        problems.append('nodes is not a list')
    else:
        for position, entry in enumerate(nodes):
            if not isinstance(entry, dict) or not isinstance(entry.get('host'), str) \
                    or entry.get('status') not in STATUSES:
                problems.append('nodes[%d] is not a node of a fleet plan (host, status %s)'
                                % (position, '/'.join(STATUSES)))
    if not isinstance(record.get('verdict'), dict) or not isinstance(record['verdict'].get('proceed'), bool):
        problems.append('verdict is not a verdict (proceed true or false)')
    return (None, problems) if problems else (record, [])


# ------------------------------------------------------------------------------------------------------ rendering

def _short(text, limit=SHORT):
    text = ' '.join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def release_text(entry):
    if not entry.get('release'):
        return 'no vllm-ascend release' if entry.get('mode') == 'native' and not entry['npus'].get('count') \
            else 'release unknown'
    row = entry.get('row')
    if not row:
        return 'vllm-ascend %s (no row of the compatibility set)' % entry['release']
    return 'vllm-ascend %s (%sCANN %s, driver >= %s)' % (entry['release'], 'site row: ' if row.get('source') == 'site' else '',
                                                         row.get('cann') or '?', row.get('driver_minimum') or '?')


def npus_text(entry):
    npus = entry['npus']
    if npus.get('count') is None:
        return '? NPUs' if npus.get('host') is None else '%d NPUs on the host' % npus['host']
    if not npus['count']:
        return 'no NPUs'
    return '%d NPUs (%d cards)' % (npus['count'], npus['cards'] or 0) if npus.get('cards') is not None \
        else '%d NPUs' % npus['count']


def layout_text(entry):
    layout = entry['layout']
    shown = ['?' if layout.get(key) is None else str(layout[key]) for key in ('tp', 'dp', 'nodes')]
    return 'TP %s x DP %s x %s node%s' % (shown[0], shown[1], shown[2], '' if layout.get('nodes') == 1 else 's')


def layout_cell(entry):
    layout = entry['layout']
    return ' x '.join('?' if layout.get(key) is None else str(layout[key]) for key in ('tp', 'dp', 'nodes'))


def changes_text(entry):
    """What would change on the node, in a few words; ``?`` where it is unknown."""
    changes = entry['changes']
    parts = []
    if changes.get('packages') is None:
        parts.append('packages ?')
    else:
        for step in changes['packages']:
            parts.append('%s %s-> %s' % (step['component'], ('%s ' % step['before']) if step.get('before') else '',
                                         step['after']))
    if changes.get('reboot'):
        parts.append('reboot' if changes.get('reboot_ok') else 'reboot (by hand: npu_driver_reboot_ok is false)')
    elif changes.get('reboot') is None and changes.get('packages') is None:
        parts.append('reboot ?')
    image = changes.get('image')
    if image:
        if image['state'] == 'absent':
            parts.append('image %s' % image['action'])
        elif image['state'] == 'unknown':
            parts.append('image ? (%s if missing)' % image['action'])
    service = changes.get('service')
    if service:
        if service['state'] == 'new':
            parts.append('service new')
        elif service['state'] == 'changed':
            parts.append('service: %s' % ', '.join(service['differences']))
        elif service['state'] == 'unknown':
            parts.append('service ?')
    return ', '.join(parts) if parts else 'nothing'


def line(entry):
    """One line of text for the node."""
    if entry['status'] != 'planned':
        label = {'failed': 'FAILED', 'held': 'HELD', 'lost': 'LOST'}[entry['status']]
        return '%s: %s - %s' % (entry['host'], label, _short(_why(entry)))
    sizing = entry['sizing']['verdict'] + (' (not sized)' if entry['sizing'].get('skipped') else '')
    text = '%s: %s, %s; %s; %s; sizing %s; would change: %s' % (
        entry['host'], release_text(entry), entry.get('mode') or '?', npus_text(entry), layout_text(entry), sizing,
        changes_text(entry))
    if entry.get('group'):
        text += ' [group %s, rank %s]' % (entry['group'], entry.get('rank'))
    if entry.get('assumed'):
        text += ' [assumed: %s]' % '; '.join(entry['assumed'])
    return _short(text, 3 * SHORT)


def lines(record):
    """One line per node, then the verdict."""
    return [line(entry) for entry in record['nodes']] + ['fleet plan: %s' % record['verdict']['summary']]


def _cell(text):
    return _short(text).replace('\\', '\\\\').replace('|', '\\|')


def markdown(record):
    """The short Markdown table of a fleet plan."""
    verdict_ = record['verdict']
    out = ['# Fleet plan', '',
           'Generated %s%s. %s.' % (record.get('generated') or '-',
                                    (' by %s' % record['playbook']) if record.get('playbook') else '',
                                    verdict_['summary'][:1].upper() + verdict_['summary'][1:]),
           '',
           '| node | status | release (row) | mode | NPUs | TP x DP x nodes | sizing | would change, or why not planned |',
           '|---|---|---|---|---|---|---|---|']
    for entry in record['nodes']:
        if entry['status'] == 'planned':
            cells = [entry['host'], 'planned', release_text(entry), entry.get('mode') or '?', npus_text(entry),
                     layout_cell(entry), entry['sizing']['verdict'],
                     changes_text(entry)]
        else:
            cells = [entry['host'], entry['status'], '', entry.get('mode') or '', '', '',
                     entry['sizing']['verdict'] if entry['sizing']['verdict'] != 'unknown' else '', _why(entry)]
        out.append('| %s |' % ' | '.join(_cell(cell) for cell in cells))
    assumed = [entry for entry in record['nodes'] if entry.get('assumed')]
    if assumed:
        out += ['', 'Assumed rather than read:', '']
        out += ['- %s: %s' % (entry['host'], _short('; '.join(entry['assumed']))) for entry in assumed]
    return '\n'.join(out) + '\n'
