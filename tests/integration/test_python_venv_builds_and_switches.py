# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""python_venv for real: venvs made by this machine's Python, pins installed offline from a wheelhouse of tiny
wheels the test builds (a "torch" and a "torch-npu" that requires it, as the real row pins them), pip check run by
the venv's own pip."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import python_venv
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FailJson, capture_results, run_main

PYTHON = sys.executable if os.path.basename(sys.executable).startswith('python') else '/usr/bin/python3'


def wheel(directory, name, version, requires=()):
    """A pure-Python wheel of one module, with its Requires-Dist lines."""
    module = name.replace('-', '_')
    dist_info = '%s-%s.dist-info' % (module, version)
    files = {
        '%s/__init__.py' % module: '__version__ = %r\n' % version,
        '%s/METADATA' % dist_info: 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s' % (
            name, version, ''.join('Requires-Dist: %s\n' % requirement for requirement in requires)),
        '%s/WHEEL' % dist_info: 'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()
        record.append('%s,sha256=%s,%d' % (path, digest, len(text.encode())))
    record.append('%s/RECORD,,' % dist_info)
    files['%s/RECORD' % dist_info] = '\n'.join(record) + '\n'
    path = os.path.join(directory, '%s-%s-py3-none-any.whl' % (module, version))
    with zipfile.ZipFile(path, 'w') as archive:
        for name_in_zip, text in files.items():
            archive.writestr(name_in_zip, text)


@pytest.fixture
def venv_args(tmp_path, monkeypatch):
    capture_results(monkeypatch)
    wheels = tmp_path / 'wheels'
    wheels.mkdir()
    wheel(str(wheels), 'torch', '2.10.0')
    wheel(str(wheels), 'torch', '2.11.0')
    wheel(str(wheels), 'torch-npu', '2.10.0.post4', ['torch==2.10.0'])
    wheel(str(wheels), 'helper', '1.0')
    wheel(str(wheels), 'app', '1.0', ['helper'])
    return tmp_path, dict(path=str(tmp_path / 'opt' / 'venv'), python=PYTHON, wheelhouse=str(wheels),
                          packages=['torch==2.10.0', 'torch_npu==2.10.0.post4'])


def pip_list(venv):
    out = subprocess.run([os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'list', '--format=json'],
                         capture_output=True, text=True, check=True).stdout
    return dict((item['name'].lower(), item['version']) for item in json.loads(out))


def test_a_new_venv_is_built_beside_the_path_linked_and_left_alone_the_second_time(venv_args):
    tmp_path, args = venv_args
    check = run_main(python_venv.main, dict(args, _ansible_check_mode=True))
    assert (check['changed'], check['installed'], check['switched']) == (True, args['packages'], True)
    assert not os.path.lexists(args['path'])
    first = run_main(python_venv.main, args)
    assert (first['changed'], first['switched'], first['previous']) == (True, True, None)
    assert os.path.islink(args['path']) and os.path.realpath(args['path']) == first['venv']
    assert os.path.dirname(first['venv']) == args['path'] + '.d'
    assert pip_list(first['venv'])['torch'] == '2.10.0' and pip_list(first['venv'])['torch-npu'] == '2.10.0.post4'
    second = run_main(python_venv.main, args)
    assert (second['changed'], second['venv'], second['installed']) == (False, first['venv'], [])
    assert second['site_packages'].startswith(first['venv'])


def test_a_changed_pin_builds_another_venv_and_keeps_the_previous(venv_args):
    tmp_path, args = venv_args
    first = run_main(python_venv.main, dict(args, packages=['torch==2.11.0']))
    second = run_main(python_venv.main, args)
    assert (second['changed'], second['previous']) == (True, first['venv'])
    assert os.path.realpath(args['path']) == second['venv'] != first['venv']
    assert pip_list(first['venv'])['torch'] == '2.11.0'   # the previous venv is still there, as it was


def test_pins_that_conflict_fail_in_pips_resolver_and_nothing_is_switched(venv_args):
    tmp_path, args = venv_args
    good = run_main(python_venv.main, args)
    # torch-npu 2.10.0.post4 requires torch==2.10.0: one pip run for every pin refuses torch 2.11.0 beside it.
    failure = run_main(python_venv.main, dict(args, packages=['torch==2.11.0', 'torch-npu==2.10.0.post4']), FailJson)
    assert failure['msg'].startswith('pip install torch==2.11.0 torch-npu==2.10.0.post4 into %s.d/' % args['path'])
    assert failure['msg'].endswith('failed; %s was left as it was' % args['path'])
    assert 'conflict' in failure['stderr'].lower()
    assert os.path.realpath(args['path']) == good['venv']


def test_a_venv_that_fails_pip_check_is_never_switched_to(venv_args):
    tmp_path, args = venv_args
    good = run_main(python_venv.main, args)
    # The venv for app==1.0 exists already, broken (app installed without what it requires, as an interrupted run or
    # a hand-made pip install leaves it): it holds the pin, but pip check fails there.
    planned = run_main(python_venv.main, dict(args, packages=['app==1.0'], _ansible_check_mode=True))['venv']
    subprocess.run([PYTHON, '-m', 'venv', planned], check=True)
    subprocess.run([os.path.join(planned, 'bin', 'python'), '-m', 'pip', 'install', '--quiet', '--no-index', '--no-deps',
                    '--find-links', args['wheelhouse'], 'app==1.0'], check=True)
    failure = run_main(python_venv.main, dict(args, packages=['app==1.0']), FailJson)
    assert failure['msg'] == ('pip check in the new venv %s reports: app 1.0 requires helper, which is not installed. %s '
                              'was not switched to it, so the service runs as before; fix the pins (packages) and run '
                              'again' % (planned, args['path']))
    assert os.path.realpath(args['path']) == good['venv']


def test_a_package_removed_on_purpose_is_no_pip_check_problem(venv_args):
    tmp_path, args = venv_args
    result = run_main(python_venv.main, dict(args, packages=['app==1.0'], remove=['helper']))
    assert result['removed'] == ['helper']
    assert 'helper' not in pip_list(result['venv'])
    assert run_main(python_venv.main, dict(args, packages=['app==1.0'], remove=['helper']))['changed'] is False


def test_a_real_venv_at_the_path_that_holds_the_pins_is_used_as_it_is(venv_args):
    tmp_path, args = venv_args
    subprocess.run([PYTHON, '-m', 'venv', args['path']], check=True)
    subprocess.run([os.path.join(args['path'], 'bin', 'python'), '-m', 'pip', 'install', '--quiet', '--no-index',
                    '--find-links', args['wheelhouse']] + args['packages'], check=True)
    result = run_main(python_venv.main, args)
    assert (result['changed'], result['venv']) == (False, args['path'])
    assert not os.path.islink(args['path'])


def test_a_real_venv_at_the_path_that_lacks_a_pin_is_moved_aside_not_removed(venv_args):
    tmp_path, args = venv_args
    subprocess.run([PYTHON, '-m', 'venv', args['path']], check=True)
    check = run_main(python_venv.main, dict(args, _ansible_check_mode=True))
    assert check['moved']['src'] == args['path'] and check['moved']['dest'].startswith(args['path'] + '.d/previous-')
    assert check['previous'] == check['moved']['dest'] and not os.path.lexists(check['moved']['dest'])
    assert not os.path.islink(args['path'])
    result = run_main(python_venv.main, args)
    assert result['previous'].startswith(args['path'] + '.d/previous-')
    assert result['moved'] == dict(src=args['path'], dest=result['previous'])
    assert os.path.isfile(os.path.join(result['previous'], 'pyvenv.cfg'))
    assert os.path.realpath(args['path']) == result['venv']
    # The check predicted this run but for the time in the name, which is the time of each.
    assert (check['venv'], check['installed'], check['switched']) == (result['venv'], result['installed'], True)


def tree(top):
    found = set()
    for root, dirs, files in os.walk(top):
        found.update(os.path.join(root, name) for name in dirs + files)
    return found


@pytest.mark.parametrize('make, what', [
    (lambda path: os.makedirs(os.path.join(path, 'data', 'keep')), 'a directory that is no venv'),
    (os.makedirs, 'a directory that is no venv'),
    (lambda path: os.makedirs(os.path.dirname(path)) or open(path, 'w').close(), 'a regular file'),
    (lambda path: os.makedirs(os.path.dirname(path)) or os.mkfifo(path), r'a FIFO \(named pipe\)'),
])
@pytest.mark.parametrize('check_mode', [True, False])
def test_anything_but_a_link_or_a_venv_at_the_path_is_refused_and_left_as_it_was(venv_args, make, what, check_mode):
    tmp_path, args = venv_args
    make(args['path'])
    before = tree(str(tmp_path))
    failure = run_main(python_venv.main, dict(args, _ansible_check_mode=check_mode), FailJson)
    assert re.match(r'path %s is %s' % (args['path'], what), failure['msg'])
    assert 'python_venv replaces only a link or a venv there, so it leaves it as it is' in failure['msg']
    assert tree(str(tmp_path)) == before


@pytest.mark.parametrize('path', ['/', '//', '/usr', '/usr/', '/usr/bin/..', '/./etc', '/etc', '/var/lib/', '/root',
                                  '/opt/vllm/../..', 'relative/venv', '/opt/venv\nx'])
@pytest.mark.parametrize('check_mode', [True, False])
def test_a_system_directory_in_any_spelling_is_refused_before_anything(venv_args, path, check_mode):
    tmp_path, args = venv_args
    failure = run_main(python_venv.main, dict(args, path=path, _ansible_check_mode=check_mode), FailJson)
    assert failure['msg'].startswith('path ')
    assert re.search('system directory|home directory|must be an absolute path|must not hold control', failure['msg'])
    assert 'cmd' not in failure       # nothing ran


def test_a_link_into_the_system_is_refused(venv_args):
    tmp_path, args = venv_args
    os.makedirs(os.path.dirname(args['path']))
    os.symlink('/usr', args['path'])
    failure = run_main(python_venv.main, dict(args, _ansible_check_mode=True), FailJson)
    assert failure['msg'].startswith('path %s resolves to /usr, which is a top-level system directory' % args['path'])
    assert os.readlink(args['path']) == '/usr'


def test_a_path_with_a_trailing_slash_is_the_same_path(venv_args):
    tmp_path, args = venv_args
    result = run_main(python_venv.main, dict(args, path=args['path'] + '/'))
    assert os.path.islink(args['path']) and os.path.dirname(result['venv']) == args['path'] + '.d'
    assert run_main(python_venv.main, args)['changed'] is False


def test_a_python_outside_the_rows_range_is_refused_before_anything(venv_args):
    tmp_path, args = venv_args
    failure = run_main(python_venv.main, dict(args, python_range='>=3.12,<3.13', python_range_of='vllm-ascend 0.99.0',
                                              python_option='vllm_service_python'), FailJson)
    version = '%d.%d.%d' % sys.version_info[:3]
    if sys.version_info[:2] == (3, 12):
        pytest.skip('this Python is inside the range')
    assert failure['msg'] == ('vllm_service_python %s is Python %s, outside >=3.12,<3.13, the Python range of '
                              'vllm-ascend 0.99.0: point vllm_service_python at a Python in that range; nothing was '
                              'installed' % (PYTHON, version))
    assert not os.path.lexists(args['path']) and not os.path.lexists(args['path'] + '.d')


def test_a_pin_of_another_form_is_refused(venv_args):
    tmp_path, args = venv_args
    failure = run_main(python_venv.main, dict(args, packages=['torch>=2.10']), FailJson)
    assert failure['msg'] == "packages: 'torch>=2.10' is not a pin such as vllm==0.23.0"


def test_a_venv_repaired_in_place_is_not_switched_to_itself_through_a_linked_parent(venv_args):
    tmp_path, args = venv_args
    os.makedirs(str(tmp_path / 'real'))
    os.symlink(str(tmp_path / 'real'), str(tmp_path / 'linked'))
    args = dict(args, path=str(tmp_path / 'linked' / 'venv'))
    first = run_main(python_venv.main, args)
    # A pin lost from the venv in use (removed by hand): the same venv is repaired, the path left pointing at it.
    subprocess.run([os.path.join(first['venv'], 'bin', 'python'), '-m', 'pip', 'uninstall', '--yes', '--quiet',
                    'torch-npu'], check=True)
    check = run_main(python_venv.main, dict(args, _ansible_check_mode=True))
    assert (check['changed'], check['installed'], check['switched'], check['previous']) == (
        True, ['torch_npu==2.10.0.post4'], False, None)
    real = run_main(python_venv.main, args)
    assert (real['switched'], real['previous'], real['moved']) == (False, None, None)
    assert os.readlink(args['path']) == first['venv']
