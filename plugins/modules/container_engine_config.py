#!/usr/bin/python
# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: container_engine_config
short_description: Register the Ascend container runtime in docker's daemon.json or containerd's config.toml
version_added: 0.1.0
description:
  - Makes the container engine know the Ascend Docker Runtime under O(runtime_name), merged into its configuration
    file without overwriting anything else in it.
  - "For O(engine=docker) the C(daemon.json) is parsed as JSON, the runtime set in C(runtimes) (C(path) =
    O(runtime_path); the entry's other keys, such as C(runtimeArgs), are kept, and C(runtimeArgs: []) is added when
    missing), and the result compared with the file by value: key order, spacing and indentation, which differ between
    hosts because the runtime installer re-serialises the file, never count as a change. When it changes, the file is
    written as JSON with the indentation it had."
  - "For O(engine=containerd) the C(config.toml) is edited as text, table by table, so that every other line,
    comment and blank line stays as it was. Config version 2 (containerd 1.x) gets
    C([plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.<runtime_name>]), version 3 (containerd 2.x)
    C([plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.<runtime_name>]), each with C(runtime_type =
    \"io.containerd.runc.v2\") and an C(options) table with C(BinaryName) = O(runtime_path). Table names quoted with
    C(') or C(\") are the same tables. New tables go after the last table of another runtime, indented like it."
  - The C(config.toml) is read as TOML before the edit and the edited text again after it, with Python's C(tomllib)
    or, on Python 3.9 and 3.10, the collection's own TOML 1.0 reader. An edit that does not read back as the runtime
    asked for - a runtime already defined by dotted keys or an inline table, which the edit by table would break -
    fails the task, naming the tables to define instead, and leaves the file unchanged.
  - A path that differs from O(runtime_path) only in case is set to O(runtime_path), with a warning naming the old
    one - paths are case-sensitive, so the hand-edited path names another file, which the engine would fail to run.
  - A file that cannot be read as its format (invalid JSON, a C(runtimes) that is not an object, invalid TOML, a
    containerd config of version 1 or of no version but with tables, an unknown version) fails the task, naming the
    file and what to fix; the file is never written then.
  - The file is written atomically (a temporary file in the same directory renamed over it), keeping the owner, group
    and mode of the existing file; a new file is created with mode C(0644), with its directory when missing.
author:
  - kunpeng_ascend.vllm maintainers (@kunpeng-ascend)
extends_documentation_fragment:
  - kunpeng_ascend.vllm.attributes
attributes:
  check_mode:
    support: full
    details:
      - Check mode reads the file and returns the changed status and the diff the real run would give; it writes
        nothing.
  diff_mode:
    support: full
    details:
      - The diff is the file's text before and after.
  platform:
    support: full
    platforms: posix
options:
  engine:
    description:
      - The container engine whose configuration file is merged.
    type: str
    choices: [docker, containerd]
    default: docker
  path:
    description:
      - The configuration file; C(/etc/docker/daemon.json) for docker and C(/etc/containerd/config.toml) for
        containerd when not set. A missing or empty file counts as an empty configuration.
    type: path
  runtime_name:
    description:
      - Name the runtime is registered under (the C(--runtime) of C(docker run), the runtime handler of the CRI).
    type: str
    default: ascend
  runtime_path:
    description:
      - Path of the runtime executable the Ascend Docker Runtime installer puts in place.
    type: path
    default: /usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime
  default_runtime:
    description:
      - V(true) makes O(runtime_name) the engine's default runtime (C(default-runtime) of docker,
        C(default_runtime_name) of containerd's CRI plugin).
      - V(false) makes sure it is not - a default naming O(runtime_name) is removed (docker) or set back to
        C(runc) (containerd); another default stays. The Ascend installer sets C(default-runtime) to C(ascend)
        itself, so V(false) undoes that.
      - Not set, the default runtime is left as it is.
    type: bool
  config_version:
    description:
      - The containerd config version for a C(config.toml) that has none yet (missing, empty, or only top-level
        keys such as C(disabled_plugins)) - V(2) for containerd 1.x, V(3) for containerd 2.x; the file gets that
        C(version) line. A file with its own version keeps it.
      - Without it, such a file fails the task. Ignored for docker.
    type: int
    choices: [2, 3]
  backup:
    description:
      - Keep a copy of the file, with a timestamp in its name, before changing it.
    type: bool
    default: false
notes:
  - The engine reads its configuration when it starts - restart it after a change (C(changed)).
  - For containerd the runtime serves clients of the CRI plugin (C(crictl), Kubernetes); a warning says so when the
    file disables that plugin (Docker's C(containerd.io) package does).
seealso:
  - module: kunpeng_ascend.vllm.ascend_package
    description: Installs the Ascend Docker Runtime whose executable O(runtime_path) names.
"""

EXAMPLES = r"""
- name: Register the Ascend runtime with docker, keeping docker's default runtime
  kunpeng_ascend.vllm.container_engine_config:
    engine: docker
    default_runtime: false
  register: engine_config
  become: true

- name: Make the Ascend runtime containerd 2.x's default, creating the config file when missing
  kunpeng_ascend.vllm.container_engine_config:
    engine: containerd
    config_version: 3
    default_runtime: true
    backup: true
  become: true

- name: Restart docker when its configuration changed
  ansible.builtin.systemd_service:
    name: docker
    state: restarted
  when: engine_config is changed
  become: true
"""

RETURN = r"""
path:
  description: The configuration file.
  returned: always
  type: str
  sample: /etc/docker/daemon.json
config:
  description: The parsed C(daemon.json) after the merge (docker); null for containerd.
  returned: success
  type: dict
  sample:
    runtimes:
      ascend:
        path: /usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime
        runtimeArgs: []
    log-driver: json-file
backup_file:
  description: The copy of the file made before the change, with O(backup=true).
  returned: changed and a backup was made
  type: str
  sample: /etc/docker/daemon.json.12345.2026-01-01@12:00:00~
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._atomic_write import write_atomically
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.stack._engine_config import (
    ConfigError,
    merge_containerd_toml,
    merge_daemon_json,
)
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.common._files import UnreadableFile, read_regular_file

DEFAULT_PATHS = {'docker': '/etc/docker/daemon.json', 'containerd': '/etc/containerd/config.toml'}
# Larger configuration files are refused rather than read into memory.
MAX_BYTES = 4 * 1024 * 1024


def read_config(path):
    """The file's text ('' when it does not exist); ConfigError when it is no readable regular UTF-8 file."""
    try:
        data = read_regular_file(path, MAX_BYTES, 'an engine configuration')
    except UnreadableFile as error:
        if error.reason.endswith(', not a regular file'):
            raise ConfigError('%s is not a regular file: move it away or give another path' % path)
        raise ConfigError('%s: %s: check it; it was left unchanged' % (path, error.reason))
    if data is None:
        return ''
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as error:
        raise ConfigError('%s is not UTF-8 text (%s): fix it; it was left unchanged' % (path, error))


def write_config(module, path, text):
    """Write ``text`` to ``path`` atomically, keeping the owner, group and mode of an existing file."""
    write_atomically(module, path, to_bytes(text))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type='str', default='docker', choices=['docker', 'containerd']),
            path=dict(type='path'),
            runtime_name=dict(type='str', default='ascend'),
            runtime_path=dict(type='path', default='/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime'),
            default_runtime=dict(type='bool'),
            config_version=dict(type='int', choices=[2, 3]),
            backup=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    engine = params['engine']
    path = params['path'] or DEFAULT_PATHS[engine]
    result = dict(changed=False, path=path, config=None)
    if not re.match(r'[A-Za-z0-9][A-Za-z0-9_.-]*\Z', params['runtime_name']):
        module.fail_json(msg='runtime_name must be a name of letters, digits, _, . and -; got %r' % params['runtime_name'],
                         **result)
    if not os.path.isabs(params['runtime_path']):
        module.fail_json(msg='runtime_path must be an absolute path; got %s' % params['runtime_path'], **result)
    try:
        before = read_config(path)
        if engine == 'docker':
            merged = merge_daemon_json(before, path, params['runtime_name'], params['runtime_path'], params['default_runtime'])
        else:
            merged = merge_containerd_toml(before, path, params['runtime_name'], params['runtime_path'],
                                           params['default_runtime'], params['config_version'])
    except ConfigError as error:
        module.fail_json(msg=str(error), **result)
    for warning in merged.warnings:
        module.warn(warning)
    result.update(changed=merged.changed, config=merged.config)
    if merged.changed:
        result['diff'] = dict(before=before, after=merged.text, before_header=path, after_header=path)
        if not module.check_mode:
            if params['backup'] and os.path.exists(path):
                result['backup_file'] = module.backup_local(path)
            try:
                write_config(module, path, merged.text)
            except (IOError, OSError) as error:
                module.fail_json(msg='%s cannot be written: %s' % (path, to_native(error)), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
