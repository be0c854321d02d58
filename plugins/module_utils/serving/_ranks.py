# -*- coding: utf-8 -*-

# Copyright (c) kunpeng_ascend.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private to the kunpeng_ascend.vllm collection: not a public API, it may change without notice.

The rule of a node's NPUs and its data-parallel ranks, written once: each local data-parallel rank takes
tensor-parallel-size NPUs, so a node's ranks take TP x local DP NPUs (the serving plan's refusal of a layout larger
than the node, the sizing's per-node check), and a node of N NPUs holds N // TP ranks (the multi-node plan's default
local DP, serving/_cluster_plan.py). Pure, standard library only.
"""

from __future__ import annotations


def npus_for_ranks(tensor_parallel_size, data_parallel_size_local):
    """The NPUs a node's ``data_parallel_size_local`` ranks of ``tensor_parallel_size`` NPUs each take: TP x local DP."""
    return tensor_parallel_size * data_parallel_size_local


def ranks_in_npus(npus, tensor_parallel_size):
    """The most local data-parallel ranks ``npus`` NPUs hold by npus_for_ranks: the largest local DP whose TP x local
    DP is at most ``npus`` (0 when TP is more than the NPUs)."""
    return npus // npus_for_ranks(tensor_parallel_size, 1)
