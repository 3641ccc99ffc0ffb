# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for your own tasks and templates: the tools the collection uses itself, for a playbook of yours.

The role and the playbooks decide in Python (the actions gpufleet.sglang.sglang_dflash_plan, sglang_dflash_record,
sglang_dflash_rollout and sglang_fleet_report); these filters are not their plumbing. Each is thin over the same code
the actions use, and documented with an example in plugins/filter/<name>.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import confirm_server_info
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.unit_journal import redact
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _fleet_report, _gpus


def sglang_redact(lines, secrets):
    """Lines with every secret value replaced by ********."""
    return redact(list(lines or []), list(secrets or []))


def sglang_gpu_holders(gpus, allowed_units, gpu_indexes=None):
    """The GPU processes of units other than allowed_units (on gpu_indexes only, when given), for a message."""
    return _gpus.gpu_holders(dict(gpus or {}), set(unit_name(u) for u in allowed_units or []),
                             None if gpu_indexes is None else [int(i) for i in gpu_indexes])


def sglang_server_info_diff(info, expected):
    """[[key, wanted, reported]] where the running server differs from what was asked."""
    return confirm_server_info(info or {}, expected or {})


def sglang_fleet_markdown(rows):
    """The fleet report in Markdown (see _fleet_report.markdown)."""
    return _fleet_report.markdown(list(rows or []))


def sglang_fleet_view(rows):
    """What the fleet report's HTML page shows, computed (see _fleet_report.html_view)."""
    return _fleet_report.html_view(list(rows or []))


class FilterModule(object):
    def filters(self):
        return {
            "sglang_redact": sglang_redact,
            "sglang_gpu_holders": sglang_gpu_holders,
            "sglang_server_info_diff": sglang_server_info_diff,
            "sglang_fleet_markdown": sglang_fleet_markdown,
            "sglang_fleet_view": sglang_fleet_view,
        }
