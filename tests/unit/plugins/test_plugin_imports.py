# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The filter, test and lookup plugins import nothing heavy.

Ansible forks a worker process for each task and host, and a worker that templates an expression with one of the
collection's filters loads the collection's filter files anew, in name order until one has the filter. Whatever they import at the top of a file is paid
once per task and host: matplotlib, imported by the benchmark report's module_utils for the schema names two filters
use, was about half the controller's CPU time of a converged site.yml run (py-spy, a simulated node under Mitogen).
The libraries a plugin needs for one task's work are imported where that work is done.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# The fresh interpreters find the collection as pytest does (pytest.ini's pythonpath).
FRESH_ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE='1',
                 PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(REPO, '.cache'), os.environ.get('PYTHONPATH')])))
# What the controller-side plugins may import when they load, besides the standard library: Ansible itself, the
# collection, and what ansible-core needs anyway (Jinja2, PyYAML, MarkupSafe), and netaddr, small, which the
# network plan's filter uses.
ALLOWED = {'ansible', 'ansible_collections', 'jinja2', 'yaml', 'markupsafe', 'netaddr', '_yaml'}

IMPORT_ALL = """
import glob, importlib, json, os, sys
# What every worker has loaded already: only what a plugin adds to it counts.
import ansible.errors, ansible.module_utils.basic, ansible.plugins.filter, jinja2, yaml
loaded = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], 'plugins', '*', '*.py'))):
    kind, name = path.split(os.sep)[-2], os.path.basename(path)[:-3]
    if kind not in ('filter', 'test', 'lookup') or name == '__init__':
        continue
    ahead = set(sys.modules)
    importlib.import_module('ansible_collections.kunpeng_ascend.vllm.plugins.%s.%s' % (kind, name))
    loaded[kind + '/' + name] = sorted(set(sys.modules) - ahead)
print(json.dumps({'plugins': loaded, 'stdlib': sorted(sys.stdlib_module_names)}))
"""


@pytest.fixture(scope='module')
def imports_by_plugin():
    """For each filter, test and lookup plugin: the modules its import added, in a fresh interpreter; and the names
    of the standard library's modules."""
    run = subprocess.run([sys.executable, '-c', IMPORT_ALL, REPO], capture_output=True, text=True, check=True,
                         env=FRESH_ENV)
    answer = json.loads(run.stdout)
    return answer['plugins'], set(answer['stdlib'])


def _fresh_python(*lines):
    """The words ``lines`` of Python print, run in a fresh interpreter with sys imported."""
    run = subprocess.run([sys.executable, '-c', '\n'.join(('import sys',) + lines)], capture_output=True, text=True,
                         check=True, env=FRESH_ENV)
    return run.stdout.split()


def test_every_plugin_file_is_imported(imports_by_plugin):
    plugins = imports_by_plugin[0]
    files = {kind + '/' + os.path.basename(path)[:-3] for kind in ('filter', 'test', 'lookup')
             for path in glob.glob(os.path.join(REPO, 'plugins', kind, '*.py'))}
    assert set(plugins) == files - {'filter/__init__', 'test/__init__', 'lookup/__init__'}
    assert 'filter/benchmark' in plugins and 'filter/benchmark_run' in plugins


def test_no_plugin_imports_a_heavy_library_when_it_loads(imports_by_plugin):
    plugins, stdlib = imports_by_plugin
    heavy = {plugin: sorted({module.split('.')[0] for module in modules} - ALLOWED - stdlib)
             for plugin, modules in plugins.items()}
    assert {plugin: modules for plugin, modules in heavy.items() if modules} == {}


def test_no_filter_or_test_plugin_imports_module_utils_when_it_loads(imports_by_plugin):
    """A worker that looks for a filter loads the filter files before it in name order: they must cost it only their
    own code (plugin_utils/_lazy_import.py), not the module_utils of filters it does not call."""
    plugins = imports_by_plugin[0]
    module_utils = 'ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.'
    imported = {plugin: [module for module in modules if module.startswith(module_utils)]
                for plugin, modules in plugins.items() if not plugin.startswith('lookup/')}
    assert {plugin: modules for plugin, modules in imported.items() if modules} == {}


def test_a_lazy_module_imports_on_first_use_and_says_what_it_stands_for():
    from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import import lazy_module
    assert _fresh_python('from ansible_collections.kunpeng_ascend.vllm.plugins.plugin_utils._lazy_import '
                         'import lazy_module',
                         'name = "ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version"',
                         'version = lazy_module("common._version")',
                         'print(name in sys.modules, version.is_ascend_version("8.1.RC1"), name in sys.modules)') == [
        'False', 'True', 'True']
    assert repr(lazy_module('common._version')) == (
        '<module ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._version, imported on first use>')
    missing = lazy_module('common._no_such_file')
    with pytest.raises(ImportError):
        missing.anything  # pylint: disable=pointless-statement


def test_the_benchmark_report_imports_matplotlib_only_to_draw():
    """The rule above holds by the report's lazy import, not by chance: importing the report's module_utils does not
    import matplotlib, and a report still finds it when it draws."""
    assert _fresh_python('from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations '
                         'import _benchmark_report',
                         'loaded = "matplotlib" in sys.modules',
                         'error = _benchmark_report.matplotlib_import_error()',
                         'print(loaded, error is None, "matplotlib" in sys.modules)') == ['False', 'True', 'True']


def test_without_matplotlib_the_report_gives_the_import_traceback(monkeypatch):
    from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.operations import _benchmark_report
    # A None in sys.modules makes the import raise ImportError, as on a controller without matplotlib.
    for name in ('matplotlib', 'matplotlib.backends.backend_agg', 'matplotlib.figure'):
        monkeypatch.setitem(sys.modules, name, None)
    error = _benchmark_report.matplotlib_import_error()
    assert error.startswith('Traceback') and 'import of matplotlib halted' in error
