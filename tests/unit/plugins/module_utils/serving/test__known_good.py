# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""module_utils/serving/_known_good.py: the entries, the record's current and previous, the local fact, the readers on bad
input and what a restore finds missing."""

from __future__ import annotations

import json

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _known_good as kg

# ansible_facts.ascend as module ascend_facts returns it on a simulated 910B node (the parts the stack reads).
ASCEND = {
    'driver': {'path': '/usr/local/Ascend/driver', 'version': '24.1.rc1', 'package_version': None},
    'firmware': {'path': '/usr/local/Ascend/firmware', 'version': '7.5.0.1.129'},
    'toolkit': {'version': '8.0.0', 'arch': 'aarch64'},
    'kernels': {'version': '8.0.0'},
    'nnal': None,
    'npu_count': 8,
}
UNIT = '[Unit]\nDescription=vLLM\n[Service]\nExecStart=/usr/bin/docker run quay.io/ascend/vllm-ascend:v0.7.3\n'
ENV = 'VLLM_API_KEY="sk-0123456789abcdef"\n'


def entry(time='2026-12-05T10:00:00Z', model='/root/models/stand-in-v1', digest='a' * 64, **changes):
    made = kg.make_entry(time, kg.stack_of(ASCEND), 'container', model, digest, 'deepseek',
                         'http://127.0.0.1:8000/v1', 'vllm.service', '/etc/systemd/system/vllm.service', UNIT,
                         '/etc/vllm/vllm.env', ENV, image='quay.io/ascend/vllm-ascend:v0.7.3', image_id='sha256:' + 'b' * 64,
                         engine='/usr/bin/docker', model_manifest=model + '/SHA256SUMS', npus=[0, 1],
                         argv=['/usr/bin/docker', 'run'], serving={'tensor_parallel_size': 2})
    made.update(changes)
    return made


def test_the_stack_comes_from_the_ascend_facts_and_is_null_without_npus():
    assert kg.stack_of(ASCEND) == {'driver': '24.1.rc1', 'firmware': '7.5.0.1.129', 'cann_toolkit': '8.0.0',
                                   'cann_kernels': '8.0.0', 'nnal': None}
    assert kg.stack_of({}) == dict.fromkeys(kg.STACK_KEYS)
    assert kg.stack_of(None) == dict.fromkeys(kg.STACK_KEYS)


def test_the_summary_has_no_secret_and_no_file_content():
    summary = kg.summary_of(entry())
    assert sorted(summary) == sorted(kg.SUMMARY_KEYS)
    assert 'sk-0123456789abcdef' not in json.dumps(summary)
    assert 'ExecStart' not in json.dumps(summary)
    assert summary['unit_sha256'] == kg.sha256_text(UNIT) and summary['env_sha256'] == kg.sha256_text(ENV)
    assert kg.summary_of(None) is None


def test_the_first_record_has_no_previous():
    record, changed = kg.next_record(None, 'vllm', entry())
    assert changed is True
    assert record == {'schema': kg.SCHEMA, 'name': 'vllm', 'current': entry(), 'previous': None}


def test_the_same_stack_later_changes_nothing():
    record = kg.next_record(None, 'vllm', entry())[0]
    again, changed = kg.next_record(record, 'vllm', entry(time='2026-12-06T10:00:00Z'))
    assert changed is False
    assert again is record
    assert again['current']['time'] == '2026-12-05T10:00:00Z'


def test_another_stack_becomes_current_and_the_current_one_previous():
    first = kg.next_record(None, 'vllm', entry())[0]
    new = entry(time='2026-12-06T10:00:00Z', model='/root/models/stand-in-v2', digest='c' * 64)
    second, changed = kg.next_record(first, 'vllm', new)
    assert changed is True
    assert second['current'] == new and second['previous'] == entry()
    # A third stack drops the oldest.
    third = kg.next_record(second, 'vllm', entry(time='2026-12-07T10:00:00Z', image_id='sha256:' + 'd' * 64))[0]
    assert third['previous'] == new


def test_the_fact_keeps_the_other_services():
    record = kg.next_record(None, 'vllm', entry())[0]
    other = {'current': kg.summary_of(entry(model='/m/other')), 'previous': None}
    fact = kg.fact_with({'schema': kg.FACT_SCHEMA, 'services': {'other': other}}, 'vllm', record)
    assert fact == {'schema': kg.FACT_SCHEMA,
                    'services': {'other': other, 'vllm': {'current': kg.summary_of(entry()), 'previous': None}}}
    assert kg.parse_fact(kg.render(fact)) == (fact, [])
    assert kg.fact_with(None, 'vllm', record)['services'].keys() == {'vllm'}


def test_a_written_record_reads_back():
    first = kg.next_record(None, 'vllm', entry())[0]
    record = kg.next_record(first, 'vllm', entry(model='/root/models/stand-in-v2'))[0]
    assert kg.parse_record(kg.render(record), 'vllm') == (record, [])
    assert kg.render(record) == kg.render(json.loads(kg.render(record)))


@pytest.mark.parametrize('text, problem', [
    (None, 'it cannot be read'),
    ('{', 'it is not JSON'),
    ('[]', 'it is not a JSON object'),
    ('{"schema": "other"}', 'its schema is "other", not kunpeng_ascend.vllm/known-good-record/1'),
    ('x' * (kg.MAX_BYTES + 1), 'larger than'),
])
def test_a_record_that_is_no_record_gives_its_problem(text, problem):
    record, problems = kg.parse_record(text)
    assert record is None
    assert problem in problems[0]


def broken(**changes):
    record = kg.next_record(None, 'vllm', entry())[0]
    record = json.loads(kg.render(record))
    for key, value in changes.items():
        target = record
        *path, last = key.split('.')
        for part in path:
            target = target[part]
        target[last] = value
    return kg.render(record)


@pytest.mark.parametrize('changes, problem', [
    ({'name': '../etc'}, 'name is "../etc"'),
    ({'current': None}, 'it has no current entry'),
    ({'current.mode': 'vm'}, 'current.mode is "vm", not one of native, container'),
    ({'current.stack': {'driver': 1}},
     'current.stack is {"driver": 1}, not {driver, firmware, cann_toolkit, cann_kernels, nnal} of versions or null'),
    ({'current.unit_content': 'tampered'}, "current's unit or environment file content does not match its sha256"),
    ({'current.env_file': 'relative.env'}, 'current.unit_file and env_file must be absolute paths'),
    ({'current.npus': ['0']}, 'current.npus is ["0"], not a list of NPU numbers'),
    ({'previous': {'time': 'x'}}, 'previous has no stack'),
    ({'current.endpoint': 7}, 'current.endpoint is 7, not a string or null'),
])
def test_a_damaged_record_names_what_is_wrong(changes, problem):
    record, problems = kg.parse_record(broken(**changes))
    assert record is None
    assert problem in problems


def test_a_record_of_another_service_is_refused():
    record, problems = kg.parse_record(broken(), 'other')
    assert record is None
    assert problems == ['name is "vllm", but the file is named after other']


@pytest.mark.parametrize('text, problem', [
    ('not json', 'it is not JSON'),
    ('{"schema": "kunpeng_ascend.vllm/known-good/1", "services": []}', 'services is [], not an object'),
    ('{"schema": "kunpeng_ascend.vllm/known-good/1", "services": {"vllm": 3}}', 'services.vllm is 3, not an object'),
    ('{"schema": "kunpeng_ascend.vllm/known-good/1", "services": {"vllm": {"current": {}}}}',
     'services.vllm.current has no time'),
    (42, 'it is not text'),
])
def test_a_bad_fact_gives_its_problem_and_never_raises(text, problem):
    fact, problems = kg.parse_fact(text)
    assert fact is None
    assert problem in problems[0]


def test_the_record_path_refuses_names_that_leave_the_directory():
    assert kg.record_path('vllm') == '/etc/kunpeng-ascend-vllm/known-good/vllm.json'
    for name in ('../x', 'a/b', '', 'vllm.service'):
        with pytest.raises(ValueError):
            kg.record_path(name)


def test_which_entry_to_restore():
    record = kg.next_record(None, 'vllm', entry())[0]
    assert kg.entry_to_restore(record, 'current') == (entry(), None)
    assert kg.entry_to_restore(record, 'previous') == (
        None, 'the record of vllm has no previous known good (only one stack has passed its gate since the record '
              'began)')
    assert kg.entry_to_restore(record, 'other')[1] == 'which is "other", not one of current, previous'


FOUND = {'model_dir': True, 'model_digest': 'a' * 64, 'image_id': 'sha256:' + 'b' * 64}


@pytest.mark.parametrize('found, message', [
    ({}, None),
    ({'model_dir': False}, 'the model directory /root/models/stand-in-v1 is gone'),
    ({'model_digest': 'e' * 64}, 'the model /root/models/stand-in-v1 no longer matches its known good manifest: '
                                 'digest %s expected, %s found' % ('a' * 64, 'e' * 64)),
    ({'model_digest': None, 'model_problem': 'x.bin does not match'},
     'digest %s expected, none found (x.bin does not match)' % ('a' * 64)),
    ({'image_id': None}, 'the image quay.io/ascend/vllm-ascend:v0.7.3 (id sha256:%s) is not in the container engine'
                         % ('b' * 64)),
    ({'image_id': 'sha256:' + 'f' * 64}, 'is now id sha256:%s, not the known good id' % ('f' * 64)),
])
def test_what_a_container_restore_finds_missing(found, message):
    missing = kg.missing_for(entry(), dict(FOUND, **found))
    if message is None:
        assert missing == []
    else:
        assert len(missing) == 1 and message in missing[0]


def test_what_a_native_restore_finds_missing():
    native = entry(mode='native', image=None, image_id=None, venv='/opt/vllm/venv', vllm_version='0.32.0')
    assert kg.missing_for(native, dict(FOUND, vllm_version='0.32.0')) == []
    assert kg.missing_for(native, dict(FOUND, vllm_version=None)) == [
        'the venv /opt/vllm/venv has no vLLM (0.32.0 expected)']
    assert kg.missing_for(native, dict(FOUND, vllm_version='0.33.0')) == [
        'the venv /opt/vllm/venv has vLLM 0.33.0, not the known good 0.32.0']
