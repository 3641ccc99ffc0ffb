# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPUs: which processes hold them that a switch would have to stop first.

Controller-only and pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def gpu_holders(gpus, allowed_units, gpu_indexes=None):
    """GPU processes owned by none of allowed_units (on gpu_indexes only; None: every GPU), described for a message."""
    out = []
    for proc in (gpus or {}).get("processes") or []:
        if proc.get("unit") in allowed_units:
            continue
        if gpu_indexes is not None and proc.get("gpu_index") not in gpu_indexes:
            continue
        owner = proc.get("unit") or {"process gone": "exited meanwhile"}.get(proc.get("unit_source"), "no unit")
        out.append("GPU %s pid %s (%s, %s, %s MiB)" % (
            proc.get("gpu_index"), proc.get("pid"), proc.get("process_name"), owner, proc.get("used_memory_mib")))
    return out
