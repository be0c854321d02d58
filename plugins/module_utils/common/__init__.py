# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Layer common: the plumbing, with no knowledge of Ascend or vLLM - JSON and text read one way, warnings capped,
bounded file reads, numbers and paths checked, secrets masked, commands run, atomic writes, bounded waits, /proc,
systemd's unit files and `systemctl show`, IPv4, TOML, version strings, CPU architectures.

May import: nothing of the collection outside common (the standard library and ansible.module_utils only).
The layers, lowest first: common < ascend < stack < serving < operations (docs/architecture.md)."""
