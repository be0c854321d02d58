# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Role model_quantize refuses, in its validation and before anything changes, a system or home directory (in any
spelling, or through a link) for every directory it creates or replaces, an output it did not make, and a space factor
or time limit that is no finite number in its range (issue 32). All cases in one ``ansible-playbook`` run
(role_harness.py): the validation's check_only run of module model_quantize reads a tiny model this test makes."""

from __future__ import annotations

import json
import os
import re

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._numbers import MAX_SECONDS
from ansible_collections.kunpeng_ascend.vllm.tests.unit.roles import role_harness

SYSTEM = ['/', '//', '/usr', '/usr/', '/usr/bin/..', '/./etc', '/etc/vllm', '/var/lib', '/usr/local/', '/root',
          '/home/alice', '/opt/x/../..']
# What a system or home directory is called, after the variable and the path as given.
SYSTEM_REASON = (r"( \(that is /[a-z/]*\))? is (the root directory|a top-level system directory|a system directory|"
                 r"a home directory|inside /etc, which holds the system's own files): the collection replaces what it "
                 r"finds there, so it never takes a system directory")
# (variable, value, the message as a regular expression from its start); '{tmp}' is the test's directory.
CASES = (
    [(name, path, re.escape('%s %s' % (name, path)) + SYSTEM_REASON)
     for name in ('model_quantize_output', 'model_quantize_venv', 'model_quantize_work_dir') for path in SYSTEM]
    + [(name, value, re.escape(message)) for name, value, message in [
        ('model_quantize_output', '{tmp}/link-to-usr', 'model_quantize_output {tmp}/link-to-usr resolves to /usr'),
        ('model_quantize_venv', '{tmp}/link-to-usr', 'model_quantize_venv {tmp}/link-to-usr resolves to /usr'),
        ('model_quantize_output', '{tmp}/srv/a\nb', 'model_quantize_output must not hold control characters'),
        ('model_quantize_output', 'relative/out', 'model_quantize_output must be an absolute path'),
        ('model_quantize_venv', '{tmp}/out/venv', 'model_quantize_venv {tmp}/out/venv is inside model_quantize_output'),
        ('model_quantize_output', '{tmp}/foreign', 'model_quantize_output {tmp}/foreign is a directory of 1 entries '
                                                   '(keep.txt) without quantize-record.json'),
        ('model_quantize_output', '{tmp}/a-file', 'model_quantize_output {tmp}/a-file is a regular file'),
        ('model_quantize_calibration_file', '{tmp}/fifo',
         'cannot read model_quantize_calibration_file {tmp}/fifo: a FIFO')]]
    + [('model_quantize_space_factor', value, re.escape('model_quantize_space_factor must be a finite number at least '
                                                        '1.0 and at most 1000000000.0; got '))
       for value in (float('nan'), 'nan', float('inf'), '-inf', '1e400', 0, 0.0, -1, 0.5, 1e10, True)]
    + [('model_quantize_timeout', value, re.escape('model_quantize_timeout must be a whole number at least 1 and at '
                                                   'most %d; got ' % MAX_SECONDS))
       for value in (0, -1, MAX_SECONDS + 1, 10 ** 30)]
)


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('model_quantize_inputs')
    source = tmp / 'tiny'
    source.mkdir()
    (source / 'config.json').write_text(json.dumps({'model_type': 'qwen2', 'dtype': 'float32'}))
    (source / 'model.safetensors').write_bytes(b'\0' * 100)
    os.symlink('/usr', str(tmp / 'link-to-usr'))
    (tmp / 'foreign').mkdir()
    (tmp / 'foreign' / 'keep.txt').write_text('mine')
    (tmp / 'a-file').write_text('mine')
    os.mkfifo(str(tmp / 'fifo'))
    good = dict(model_quantize_source=str(source), model_quantize_output=str(tmp / 'out'),
                model_quantize_venv=str(tmp / 'venv'), model_quantize_work_dir=str(tmp / 'work'))
    cases = [good, dict(good, model_quantize_space_factor='1.5', model_quantize_timeout=MAX_SECONDS)]
    cases += [dict(good, **{name: value.format(tmp=tmp) if isinstance(value, str) else value})
              for name, value, _message in CASES]
    before = sorted(os.listdir(str(tmp)))
    outcome = role_harness.run_play(tmp, 'model_quantize', cases)
    # The validation changed nothing: no output, venv or work directory was made, nothing there was moved.
    assert sorted(name for name in os.listdir(str(tmp)) if name not in ('inventory.yml', 'play.yml', 'ansible-home',
                                                                        'ansible-local', 'ansible-remote')) == before
    assert (tmp / 'foreign' / 'keep.txt').read_text() == 'mine' and os.readlink(str(tmp / 'link-to-usr')) == '/usr'
    return tmp, outcome


def test_good_inputs_pass(results):
    tmp, outcome = results
    assert outcome[:2] == [{'accepted': True}, {'accepted': True}]


@pytest.mark.parametrize('index', range(len(CASES)), ids=['%s=%r' % (name, value) for name, value, _m in CASES])
def test_each_bad_input_is_refused_naming_its_variable(results, index):
    tmp, outcome = results
    name, value, message = CASES[index]
    result = outcome[index + 2]
    assert result['accepted'] is False
    assert len(result['messages']) == 1, result
    assert re.match(message.replace('\\{tmp\\}', re.escape(str(tmp))), result['messages'][0]), result
