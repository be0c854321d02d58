# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""package_lists' main() against a fake APT host: dpkg-query and apt-cache answer from a package state that
apt-get update changes, with the list folder a real scratch folder."""

from __future__ import annotations

import pytest

from ansible_collections.kunpeng_ascend.vllm.plugins.modules import package_lists
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FailJson, run_main

APT_GET = '/usr/bin/apt-get'
APT_CACHE = '/usr/bin/apt-cache'
DPKG_QUERY = '/usr/bin/dpkg-query'
RPM = '/usr/bin/rpm'
FORMAT = '${Package}\\t${Architecture}\\t${Status}\\n'


class FakeApt:
    """Installed packages and the lists' candidates; apt-get update fills the lists with ``after_update``."""

    def __init__(self, host, installed, candidates, after_update, lists_path):
        self.host, self.installed, self.candidates = host, set(installed), dict(candidates)
        self.after_update, self.lists_path, self.updates = dict(after_update), lists_path, 0
        for tool, path in (('apt-get', APT_GET), ('apt-cache', APT_CACHE), ('dpkg-query', DPKG_QUERY)):
            host.on_path[tool] = path
        self.host.run_command.side_effect = self.run

    def run(self, argv, **kwargs):
        argv = argv[3:] if argv[0].endswith('timeout') else argv
        if argv[0].endswith('locale'):
            return 0, 'C\nC.utf8\n', ''
        if argv[0] == DPKG_QUERY:
            assert argv[1:5] == ['-W', '-f', FORMAT, '--']
            return (0 if set(argv[5:]) <= self.installed else 1,
                    ''.join('%s\tamd64\tinstall ok installed\n' % name for name in argv[5:] if name in self.installed),
                    '')
        if argv[0] == APT_CACHE:
            assert argv[1:3] == ['policy', '--']
            known = [name for name in argv[3:] if name in self.candidates]
            return 0, ''.join('%s:\n  Installed: (none)\n  Candidate: %s\n  Version table:\n'
                              % (name, self.candidates[name] or '(none)') for name in known), ''
        if argv == [APT_GET, '-q', 'update']:
            self.updates += 1
            self.candidates.update(self.after_update)
            with open(self.lists_path + '/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4', 'w'):
                pass
            return 0, 'Reading package lists...\n', ''
        raise AssertionError(argv)


@pytest.fixture
def apt(fake_host, tmp_path):
    lists = tmp_path / 'lists'
    (lists / 'partial').mkdir(parents=True)

    def make(installed=(), candidates=None, after_update=None, with_index=False):
        if with_index:
            (lists / 'deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4').write_text('')
        return FakeApt(fake_host, installed, candidates or {}, after_update or {}, str(lists))
    return make, dict(names=['python3-venv', 'libnuma1'], lists_path=str(lists))


def test_a_fresh_image_with_empty_lists_is_refreshed_whatever_the_lists_age(apt):
    make, args = apt
    host = make(installed={'libnuma1'}, after_update={'python3-venv': '3.11.2-1+b1'})
    result = run_main(package_lists.main, args)
    assert (result['changed'], result['refresh'], result['missing'], result['unknown']) == (
        True, True, ['python3-venv'], ['python3-venv'])
    assert result['reason'] == 'the package lists are empty, and python3-venv is not installed'
    assert host.updates == 1


def test_check_mode_predicts_the_refresh_and_refreshes_nothing(apt):
    make, args = apt
    host = make(after_update={'python3-venv': '1', 'libnuma1': '1'})
    result = run_main(package_lists.main, dict(args, _ansible_check_mode=True))
    assert (result['changed'], result['refresh'], result['missing']) == (True, True, ['python3-venv', 'libnuma1'])
    assert host.updates == 0


def test_nothing_runs_beyond_dpkg_query_when_every_package_is_installed(apt, fake_host):
    make, args = apt
    host = make(installed={'libnuma1', 'python3-venv'})
    result = run_main(package_lists.main, args)
    assert (result['changed'], result['refresh'], result['missing']) == (False, False, [])
    assert [argv[3] for argv in fake_host.commands()] == [DPKG_QUERY]
    assert host.updates == 0


def test_lists_that_know_the_packages_to_install_are_kept(apt):
    make, args = apt
    host = make(candidates={'python3-venv': '3.11.2-1+b1', 'libnuma1': '2.0.16-1'}, with_index=True)
    result = run_main(package_lists.main, args)
    assert (result['changed'], result['refresh'], result['missing'], result['unknown']) == (
        False, False, ['python3-venv', 'libnuma1'], [])
    assert host.updates == 0


def test_lists_that_miss_a_package_of_a_repository_just_added_are_refreshed(apt):
    make, args = apt
    host = make(candidates={'libnuma1': '2.0.16-1'}, after_update={'docker-ce': '5:28.0'}, with_index=True)
    result = run_main(package_lists.main, dict(args, names=['docker-ce', 'libnuma1=2.0.16-1']))
    assert (result['refresh'], result['unknown'], result['reason']) == (
        True, ['docker-ce'], 'the package lists know no docker-ce to install')
    assert host.updates == 1


def test_a_package_no_source_has_after_the_refresh_is_a_warning_naming_the_sources(apt, fake_host):
    make, args = apt
    host = make(with_index=True)
    result = run_main(package_lists.main, dict(args, names=['nosuchpkg']))
    assert result['refresh'] and host.updates == 1
    assert fake_host.warnings() == [
        'after apt-get update the package lists still have no candidate for nosuchpkg: unless it is virtual, add an '
        'APT source that has it (/etc/apt/sources.list, /etc/apt/sources.list.d/)']


def test_a_failed_refresh_fails_naming_the_sources(apt, fake_host):
    make, args = apt
    host = make()
    fake_host.run_command.side_effect = lambda argv, **kw: (
        (100, '', 'E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease\n')
        if argv[-2:] == ['-q', 'update'] else host.run(argv))
    failure = run_main(package_lists.main, args, FailJson)
    assert failure['msg'] == ("apt-get update failed: check the host's APT sources (/etc/apt/sources.list, "
                              "/etc/apt/sources.list.d/) and that it reaches them")
    assert failure['rc'] == 100 and 'Failed to fetch' in failure['stderr']


def test_a_name_that_is_no_package_name_fails_before_anything_runs(apt, fake_host):
    make, args = apt
    make()
    failure = run_main(package_lists.main, dict(args, names=['gcc', '--allow-unauthenticated']), FailJson)
    assert failure['msg'] == "names: '--allow-unauthenticated' is no package name"
    assert fake_host.commands() == []


def test_dnf_hosts_refresh_nothing_and_report_what_is_missing(fake_host):
    fake_host.on_path.update(dnf='/usr/bin/dnf', rpm=RPM)
    fake_host.answers[(RPM, '-q', '--qf', '%{NAME}\\t%{ARCH}\\tinstalled\\n', 'numactl', 'gcc')] = (
        1, 'numactl\taarch64\tinstalled\npackage gcc is not installed\n', '')
    result = run_main(package_lists.main, dict(names=['numactl', 'gcc']))
    assert (result['manager'], result['changed'], result['refresh'], result['missing']) == ('dnf', False, False, ['gcc'])
