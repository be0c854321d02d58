# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Fixtures and a marker for every test under tests/ (what they are made of is in tests/helpers.py):

* ``fake_host``: a FakeHost in place of the host, for a module's main() run in this process;
* ``sim_root``: a SimRoot, a scratch root the simulator's fake Ascend installers really install into;
* ``needs_tools(name, ...)``: a test that runs these tools of this machine is skipped without one, with the reason,
  except in CI (the environment variable CI set, as CI services set it), where it fails.
"""

from __future__ import annotations

import os
import platform
import shutil

import pytest

from ansible.module_utils import basic

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common import _command
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack import _ascend_packages
from ansible_collections.kunpeng_ascend.vllm.tests.helpers import FakeHost, SimRoot, capture_results


@pytest.fixture
def fake_host(monkeypatch, tmp_path):
    """A FakeHost in place of the host: AnsibleModule's run_command, get_bin_path, warn, exit_json and fail_json,
    the command runner's executable check, platform.machine and release, os.statvfs and the directory of
    ascend_package's host-wide lock."""
    host = FakeHost(tmp_path)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', host.run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', host.get_bin_path)
    monkeypatch.setattr(basic.AnsibleModule, 'warn', host.warn)
    capture_results(monkeypatch)
    monkeypatch.setattr(_command, 'is_executable', host.executables.__contains__)
    monkeypatch.setattr(platform, 'machine', lambda: host.machine)
    monkeypatch.setattr(platform, 'release', lambda: host.release)
    monkeypatch.setattr(os, 'statvfs', host.statvfs)
    monkeypatch.setattr(_ascend_packages, 'LOCK_DIRS', (host.lock_dir,))
    return host


@pytest.fixture
def sim_root(tmp_path):
    """A SimRoot for packages of Kunpeng's architecture (aarch64), as build_packages builds them by default."""
    return SimRoot(tmp_path)


# The Debian package of each tool the tests may need, for the reason of a skip or failure.
TOOL_PACKAGES = {'bash': 'bash', 'makeself': 'makeself', 'dpkg-deb': 'dpkg', 'dpkg-query': 'dpkg', 'timeout': 'coreutils'}


def in_ci():
    """Whether this runs in CI: the environment variable CI set (CI services set CI=true)."""
    return os.environ.get('CI', '').strip().lower() not in ('', '0', 'false', 'no')


def pytest_configure(config):
    config.addinivalue_line('markers', 'needs_tools(name, ...): the test runs these tools of this machine; without '
                                       'one it is skipped, or, in CI (the environment variable CI set), it fails')


def pytest_runtest_setup(item):
    missing = [tool for marker in item.iter_markers('needs_tools') for tool in marker.args if shutil.which(tool) is None]
    if missing:
        packages = ' '.join(dict.fromkeys(TOOL_PACKAGES.get(tool, tool) for tool in missing))
        reason = '%s not installed (apt-get install %s)' % (', '.join(missing), packages)
        if in_ci():
            pytest.fail('%s: CI must run this test, so the environment variable CI makes this a failure' % reason,
                        pytrace=False)
        pytest.skip(reason)
