# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the sglang_dflash role uses to decide, confirm and report a deployment.

Thin wrappers: the logic lives in module_utils (deployment.py, sglang_deploy.py, server_probe.py),
shared with the tests.
"""

from __future__ import absolute_import, division, print_function

from ansible_collections.gpufleet.sglang.plugins.module_utils import deployment, server_probe, sglang_deploy


def sglang_deployment_plan(facts, settings):
    """The change for one host from its sglang_facts and the role's settings (see deployment.deployment_plan)."""
    return deployment.deployment_plan(dict(facts or {}), dict(settings or {}))


def sglang_refusal_message(plan, facts, host, algorithm):
    """Why a host cannot take the deployment, naming the host, the unit and every reason."""
    return deployment.refusal_message(dict(plan or {}), dict(facts or {}), host, algorithm)


def sglang_rollback_message(plan, facts, host, algorithm, outcome):
    """What failed in the switch and what the rollback put back (see deployment.rollback_message)."""
    return deployment.rollback_message(dict(plan or {}), dict(facts or {}), host, algorithm, dict(outcome or {}))


def sglang_server_info_diff(info, expected):
    """[[key, wanted, reported]] where the running server differs from what was asked."""
    return sglang_deploy.confirm_server_info(info or {}, expected or {})


def sglang_redact(lines, secrets):
    """Lines with every secret value replaced by ********."""
    return server_probe.redact(list(lines or []), list(secrets or []))


def sglang_rollout_summary(hostvars, hosts):
    """Lines per host after a rollout: unit, mode, release, health, and the argument changes."""
    lines = []
    for host in sorted(hosts):
        r = hostvars[host].get("sglang_dflash_result")
        if not r:
            lines.append("%s: not deployed (refused, failed and rolled back, or not reached; see its error above)"
                         % host)
            continue
        healthy = "healthy=%s" % r["healthy"]
        if r.get("time_to_healthy_s") is not None:
            healthy += ", healthy %ss after the server started" % r["time_to_healthy_s"]
        changes = r.get("changes") or {}
        lines += ["%s: %s (%s) sglang %s %s %s%s, %s" % (
            host, r["unit"], r["mode"], r["release"], r["algorithm"], "changed" if r["changed"] else "unchanged",
            " (check mode)" if r.get("check_mode") else "", healthy)]
        lines += ["  %s: %s" % (kind, "  ".join(changes.get(kind) or []) or "-")
                  for kind in ("removed", "added", "overridden")]
        lines.append("  kept: %d argument(s)" % len(changes.get("kept") or []))
    return lines


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
            "changes": None,
            "algorithm": hv.get("sglang_dflash_algorithm", "DFLASH"),
        })
    return rows


class FilterModule(object):
    def filters(self):
        return {
            "sglang_deployment_plan": sglang_deployment_plan,
            "sglang_refusal_message": sglang_refusal_message,
            "sglang_rollback_message": sglang_rollback_message,
            "sglang_server_info_diff": sglang_server_info_diff,
            "sglang_redact": sglang_redact,
            "sglang_fleet_rows": sglang_fleet_rows,
            "sglang_rollout_summary": sglang_rollout_summary,
        }
