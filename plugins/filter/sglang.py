# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the sglang_dflash role uses to plan, render and confirm a deployment.

Thin wrappers: the logic lives in module_utils/sglang_deploy.py, shared with the tests.
"""

from __future__ import absolute_import, division, print_function

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.sglang.plugins.module_utils import sglang_capabilities, sglang_deploy


def sglang_launch_plan(flags, settings, extra_algorithms=None):
    """Validated server argv for this release: {argv, errors, expected_server_info, flag_names, capabilities}."""
    return sglang_deploy.launch_plan(flags or [], dict(settings), extra_algorithms or ())


def systemd_exec_start(argv):
    """An argv list as a safely quoted ExecStart= value."""
    try:
        return sglang_deploy.exec_start(argv)
    except sglang_deploy.UnsafeValue as exc:
        raise AnsibleFilterError("refusing to write ExecStart: %s" % exc) from None


def systemd_environment_file(variables):
    """A dict as EnvironmentFile= lines (sorted, quoted)."""
    try:
        return "".join(sglang_deploy.environment_line(k, v) + "\n" for k, v in sorted((variables or {}).items()))
    except sglang_deploy.UnsafeValue as exc:
        raise AnsibleFilterError("refusing to write the environment file: %s" % exc) from None


def systemd_exec_start_argv(line):
    """Split an ExecStart= value into its argv."""
    return sglang_deploy.parse_exec_start(line or "")


def sglang_drafter_problems(config, requested_block_size=None):
    """{problems, block_size} for a DFlash drafter's config.json."""
    problems, block = sglang_deploy.drafter_problems(config, requested_block_size)
    return {"problems": problems, "block_size": block}


def sglang_server_info_diff(info, expected):
    """[[key, wanted, reported]] where the running server differs from what was asked."""
    return sglang_deploy.confirm_server_info(info or {}, expected or {})


def sglang_fleet_rows(hostvars, hosts):
    """One report row per host: its sglang_fleet_row, or why there is none (unreachable, failed)."""
    rows = []
    for host in sorted(hosts):
        hv = hostvars[host]
        row = hv.get("sglang_fleet_row")
        if row:
            rows.append(row)
            continue
        reached = bool(hv.get("sglang_fleet_reached"))
        rows.append({
            "host": host,
            "status": "failed" if reached else "unreachable",
            "reasons": ["no facts: the host %s (see the play output)"
                        % ("failed while gathering" if reached else "was unreachable")],
            "facts": None,
            "flag_names": {},
            "algorithm": hv.get("sglang_dflash_algorithm", "DFLASH"),
        })
    return rows


def sglang_supported_algorithms(capabilities, definitions):
    """Algorithms the install can run: the release's list plus implementations found in its code."""
    return sglang_capabilities.supported_algorithms(capabilities, definitions)


class FilterModule(object):
    def filters(self):
        return {
            "sglang_launch_plan": sglang_launch_plan,
            "systemd_exec_start": systemd_exec_start,
            "systemd_environment_file": systemd_environment_file,
            "systemd_exec_start_argv": systemd_exec_start_argv,
            "sglang_drafter_problems": sglang_drafter_problems,
            "sglang_server_info_diff": sglang_server_info_diff,
            "sglang_fleet_rows": sglang_fleet_rows,
            "sglang_supported_algorithms": sglang_supported_algorithms,
        }
