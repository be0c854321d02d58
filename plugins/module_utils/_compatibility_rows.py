# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The data of the compatibility set (``_compatibility`` reads it): the final and post releases of vllm-ascend's
versioning policy table, the releases after that table, the NPU driver (HDK) each release recommends where one is
published, and the image variants. Plain data, standard library only: it runs on the managed host too.

To take a new upstream table: run ``tools/compat_rows.py <versioning_policy.md> --commit <sha>`` on a copy of the
file, replace TABLE_SOURCE and TABLE_ROWS with what it prints, and move a release it now lists out of LATER_ROWS.
``--check`` prints the differences only (an upstream edit of a released row shows there).
"""

from __future__ import annotations

# The final and post releases of the table, newest first, as tools/compat_rows.py prints them (do not edit by hand):
# vllm-ascend, vLLM, Python, CANN, torch, torch_npu, triton-ascend (None: the table says N/A).
TABLE_SOURCE = ('vllm-ascend docs/source/community/versioning_policy.md, release compatibility matrix: upstream '
                'vllm-project/vllm-ascend at commit 182b75ea84ff13ece27b57391331ef8935410aea (2026-08-22; the v0.23.0 '
                'row as corrected by PR 14579), and for v0.23.0.post1 the same table in vLLM-HUST/vllm-ascend-hust, a '
                'fork that merges upstream main, at commit 4edb35a0d2078a3f84d7e9312f536a4b6d8a6b53 (2026-09-21)')
TABLE_ROWS = (
    ('0.23.0.post1', '0.23.0', '>=3.10,<3.13', '9.1.0', '2.10.0', '2.10.0.post4', '3.2.2'),
    ('0.23.0', '0.23.0', '>=3.10,<3.13', '9.1.0', '2.10.0', '2.10.0.post4', '3.2.2'),
    ('0.18.0', '0.18.0', '>=3.10,<3.12', '8.5.1', '2.9.0', '2.9.0.post1+git4c901a4', '3.2.0.dev20260322'),
    ('0.13.0', '0.13.0', '>=3.10,<3.12', '8.5.0', '2.8.0', '2.8.0.post2', '3.2.0'),
    ('0.11.0', '0.11.0', '>=3.9,<3.12', '8.3.RC2', '2.7.1', '2.7.1.post1', None),
    ('0.9.1', '0.9.1', '>=3.9,<3.12', '8.2.RC1', '2.5.1', '2.5.1.post1', None),
    ('0.7.3.post1', '0.7.3', '>=3.9,<3.12', '8.1.RC1', '2.5.1', '2.5.1', None),
    ('0.7.3', '0.7.3', '>=3.9,<3.12', '8.1.RC1', '2.5.1', '2.5.1', None),
)

# Releases after the newest table this collection could read, each with its own source. What their sources do not
# publish is None: such a row is known for its CANN (what the NPU driver must run) and its image, so container mode
# serves it; native mode needs the package pins and refuses it unless they are given (vllm_service_pip_packages).
_GPUSTACK = 'https://github.com/gpustack/runner/releases/tag/'
LATER_ROWS = (
    {'vllm_ascend': '0.32.0rc1', 'vllm': '0.32.0', 'python': None, 'cann': '9.2', 'torch': None, 'torch_npu': None,
     'triton_ascend': None, 'status': 'rc',
     'source': 'gpustack/runner release notes (third party): vllm-ascend 0.32.0rc1 images on CANN 9.2 for 950, A3, 910B '
               'and 310P (%sv0.1.32.post6, 2026-11-15); upstream publishes no matrix row in any stored copy'
               % _GPUSTACK},
    {'vllm_ascend': '0.30.0', 'vllm': '0.30.0', 'python': None, 'cann': '9.2.1', 'torch': None, 'torch_npu': None,
     'triton_ascend': None, 'status': 'final',
     'source': 'vllm-ascend README ("[2026/10] We released the new official version v0.30.0"); CANN 9.2.1 from '
               'gpustack/runner release notes (third party, %sv0.1.32.post2, 2026-10-30); upstream publishes no matrix '
               'row in any stored copy' % _GPUSTACK},
)

# The NPU driver (Ascend HDK) a release's installation page recommends, where it names one.
DRIVERS = {
    '0.23.0': '26.0.RC1',  # docs.vllm.ai/projects/ascend/en/latest/getting_started/installation.html (CANN 9.1.0)
    '0.13.0': '25.5',
    '0.7.3': '24.1.RC1',   # written ">= 24.1.RC1"
}

IMAGE_REPOSITORY = 'quay.io/ascend/vllm-ascend'
# Image variants: tag + suffix (openEuler base, Atlas A3, both, Atlas 300I / 310P, 310P on openEuler; Ascend 950 (A5)
# from v0.26.0rc1, per the image workflow of vllm-ascend's release branches).
IMAGE_SUFFIXES = ('', '-openeuler', '-a3', '-a3-openeuler', '-310p', '-310p-openeuler', '-a5', '-a5-openeuler')
