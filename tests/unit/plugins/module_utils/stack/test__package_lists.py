# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The package-list decision and its parsers, on dpkg-query and apt-cache output captured on Debian 12."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._package_lists import (
    decide,
    invalid_names,
    lists_are_empty,
    missing_packages,
    package_name,
    parse_apt_cache_policy,
    parse_dpkg_query,
)
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import load_fixture

# A Debian 12 host's list folder, as ls prints it, with the package lists and without (a freshly built image).
LISTS = ['auxfiles', 'deb.debian.org_debian_dists_bookworm_InRelease',
         'deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4', 'lock', 'partial']
NO_LISTS = ['auxfiles', 'lock', 'partial']


def test_dpkg_query_gives_the_installed_packages_with_and_without_their_architecture():
    warnings = []
    installed = parse_dpkg_query(load_fixture('dpkg-query_debian12_installed.txt'), warnings.append)
    assert {'libc6', 'libc6:amd64', 'libnuma1', 'libnuma1:amd64', 'python3', 'python3:amd64'} == installed
    assert warnings == []


def test_a_removed_package_with_its_configuration_left_is_not_installed():
    text = 'numactl\tamd64\tdeinstall ok config-files\nlibnuma1\tamd64\tinstall ok installed\n'
    assert parse_dpkg_query(text, pytest.fail) == {'libnuma1', 'libnuma1:amd64'}


def test_a_dpkg_query_line_of_another_format_is_a_warning_not_an_error():
    warnings = []
    assert parse_dpkg_query('libnuma1 install ok installed\n', warnings.append) == set()
    assert warnings == ["dpkg-query printed a line this module does not understand (skipped): "
                        "'libnuma1 install ok installed'"]


def test_apt_cache_policy_gives_each_known_package_its_candidate_and_unknown_ones_nothing():
    warnings = []
    candidates = parse_apt_cache_policy(load_fixture('apt-cache-policy_debian12_lists-present_installed-and-unknown.txt'),
                                        warnings.append)
    assert candidates == {'libnuma1': '2.0.16-1', 'python3': '3.11.2-1+b1'}
    assert warnings == []


def test_a_virtual_package_has_no_candidate():
    text = load_fixture('apt-cache-policy_debian12_virtual-package_candidate-none.txt')
    assert parse_apt_cache_policy(text, pytest.fail) == {'mail-transport-agent': None}


def test_a_line_outside_any_block_is_a_warning():
    warnings = []
    assert parse_apt_cache_policy('W: something odd\nlibnuma1:\n  Candidate: 1\n', warnings.append) == {'libnuma1': '1'}
    assert warnings == ["apt-cache policy printed a line this module does not understand (skipped): 'W: something odd'"]


def test_the_list_folder_of_a_fresh_image_is_empty_and_one_with_a_package_index_is_not():
    assert lists_are_empty(NO_LISTS)
    assert lists_are_empty([])
    assert not lists_are_empty(LISTS)
    assert not lists_are_empty(['ports.ubuntu.com_ubuntu-ports_dists_jammy_main_binary-arm64_Packages'])
    assert lists_are_empty(['deb.debian.org_debian_dists_bookworm_main_i18n_Translation-en'])


@pytest.mark.parametrize('requested, name', [('numactl', 'numactl'), ('numactl=2.0.16-1', 'numactl'),
                                             ('numactl>=2.0', 'numactl'), ('libnuma1:arm64', 'libnuma1:arm64'),
                                             (' gcc ', 'gcc')])
def test_a_version_is_cut_from_the_name(requested, name):
    assert package_name(requested) == name


def test_names_that_are_no_package_names_are_found():
    assert invalid_names(['gcc', '-o', 'a b', '', 'linux-headers-6.1.0-18-amd64', 'x;y']) == ['-o', 'a b', '', 'x;y']


def test_missing_packages_are_those_not_installed_each_once_in_order():
    installed = parse_dpkg_query(load_fixture('dpkg-query_debian12_installed.txt'), pytest.fail)
    assert missing_packages(['numactl', 'libnuma1', 'numactl=2.0', 'python3-venv', 'libc6:amd64'], installed) == [
        'numactl', 'python3-venv']


def test_nothing_is_refreshed_when_everything_is_installed_even_with_empty_lists():
    assert decide([], {}, True) == ([], [], False, '')


def test_empty_lists_are_refreshed_even_when_the_packages_seem_known():
    candidates = parse_apt_cache_policy(load_fixture('apt-cache-policy_debian12_lists-empty_numactl-missing.txt'),
                                        pytest.fail)
    decision = decide(['numactl'], candidates, lists_are_empty(NO_LISTS))
    assert decision == (['numactl'], ['numactl'], True, 'the package lists are empty, and numactl is not installed')


def test_lists_that_do_not_know_a_package_to_install_are_refreshed_whatever_their_age():
    candidates = parse_apt_cache_policy(load_fixture('apt-cache-policy_debian12_lists-present_installed-and-unknown.txt'),
                                        pytest.fail)
    decision = decide(['nosuchpkg', 'libnuma1'], candidates, lists_are_empty(LISTS))
    assert decision == (['nosuchpkg', 'libnuma1'], ['nosuchpkg'], True,
                        'the package lists know no nosuchpkg to install')


def test_lists_that_know_every_package_to_install_are_kept():
    decision = decide(['libnuma1', 'python3'], {'libnuma1': '2.0.16-1', 'python3': '3.11.2-1+b1'}, False)
    assert decision == (['libnuma1', 'python3'], [], False, '')


def test_the_reason_names_every_missing_package():
    assert decide(['gcc', 'make'], {}, True).reason == 'the package lists are empty, and gcc, make are not installed'
