# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the sglang_dflash role uses to decide, confirm and report a deployment.

Thin wrappers: the logic lives in module_utils (deployment.py, sglang_deploy.py, server_probe.py,
speed_probe.py), shared with the tests.
"""

from __future__ import absolute_import, division, print_function

from ansible_collections.gpufleet.sglang.plugins.module_utils import (
    deployment,
    server_probe,
    sglang_deploy,
    speed_probe,
)


def sglang_deployment_plan(facts, settings):
    """The change for one host from its sglang_facts and the role's settings (see deployment.deployment_plan)."""
    return deployment.deployment_plan(dict(facts or {}), dict(settings or {}))


def sglang_refusal_message(plan, facts, host, algorithm):
    """Why a host cannot take the deployment, naming the host, the unit and every reason."""
    return deployment.refusal_message(dict(plan or {}), dict(facts or {}), host, algorithm)


def sglang_rollback_message(plan, facts, host, algorithm, outcome):
    """What failed in the switch and what the rollback put back (see deployment.rollback_message)."""
    return deployment.rollback_message(dict(plan or {}), dict(facts or {}), host, algorithm, dict(outcome or {}))


def sglang_rollout_record(plan, facts, measurements, outcome, reason=None, when=None):
    """What a switch did and measured, as the host keeps it (see deployment.rollout_record)."""
    return deployment.rollout_record(dict(plan or {}), dict(facts or {}), dict(measurements or {}),
                                     outcome, reason, when)


def sglang_server_info_diff(info, expected):
    """[[key, wanted, reported]] where the running server differs from what was asked."""
    return sglang_deploy.confirm_server_info(info or {}, expected or {})


def sglang_speed_verdict(after, before=None, min_accept_length=None, min_speedup=None):
    """Do the new server's speed figures pass the gates? The verdict plus a one-line summary."""
    after = dict(after or {})
    before = dict(before or {}) if before else None
    result = speed_probe.verdict(after, before, min_accept_length, min_speedup)
    result["summary"] = speed_probe.summary_line(after, before, result["speedup"])
    return result


def sglang_redact(lines, secrets):
    """Lines with every secret value replaced by ********."""
    return server_probe.redact(list(lines or []), list(secrets or []))


def sglang_rollout_stopped(hostvars, hosts, max_fail_percentage=0):
    """Why the rollout must not start another batch ('' to go on): an earlier batch in which more
    than max_fail_percentage of the hosts did not end with a result (failed, refused, unreachable)."""
    batches = []
    for host in hosts:
        batch = hostvars[host].get("sglang_dflash_batch")
        if batch and list(batch) not in batches:
            batches.append(list(batch))
    for number, batch in enumerate(batches, 1):
        failed = [h for h in batch if not hostvars[h].get("sglang_dflash_result")]
        if failed and len(failed) * 100.0 / len(batch) > float(max_fail_percentage or 0):
            return ("the rollout stopped after batch %d (%s): %d of %d host(s) failed (%s), more than "
                    "sglang_dflash_max_fail_percentage=%s%%"
                    % (number, ", ".join(batch), len(failed), len(batch), ", ".join(failed), max_fail_percentage))
    return ""


def sglang_rollout_summary(hostvars, hosts):
    """Lines per host after a rollout: its state; for a switched host the unit, mode, release, health
    and the argument changes."""
    lines = []
    for host in hosts:
        hv = hostvars[host]
        r = hv.get("sglang_dflash_result")
        if not r:
            outcome = hv.get("sglang_dflash_outcome") or {}
            if outcome.get("state") == "failed":
                lines.append("%s: FAILED: %s" % (host, outcome.get("reason", "")[:400]))
            elif outcome.get("state") == "not started":
                lines.append("%s: not started, left as it was: %s" % (host, outcome.get("reason")))
            else:
                lines.append("%s: not reached (unreachable, or the play ended before it)" % host)
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
        if r.get("fallback"):
            lines.append("  fallback: %(to)s instead of %(from)s, %(reason)s" % r["fallback"])
        traffic = r.get("traffic") or {}
        if traffic.get("out_of_rotation_s") not in (None, ""):
            lines.append("  rotation: out of %s for %ss; drained %s request(s) in %ss" % (
                ", ".join(traffic.get("gateways") or []) or "the operator's balancer", traffic["out_of_rotation_s"],
                _or_dash(traffic.get("drained_requests")), _or_dash(traffic.get("drain_s"))))
        if (r.get("speed") or {}).get("summary"):
            speed = r["speed"]
            lines.append("  speed: %s%s" % (speed["summary"], "".join("; " + n for n in speed.get("notes") or [])))
    return lines


def _or_dash(value):
    return "-" if value in (None, "") else value


def gateway_workers(reads):
    """{gateway url: [workers] or the reason it could not be read} from ansible.builtin.uri results of GET /workers."""
    out = {}
    for read in reads or []:
        url = str(read.get("item") or "").rstrip("/")
        body = read.get("json")
        if read.get("status") == 200 and isinstance(body, dict) and isinstance(body.get("workers"), list):
            out[url] = body["workers"]
        else:
            out[url] = "not read: %s" % (read.get("msg") or "HTTP %s" % read.get("status"))
    return out


def gateway_state(gateway, workers_by_gateway):
    """In rotation / out of rotation / not registered, per gateway, for a host's row; None without gateways."""
    if not gateway:
        return None
    states = []
    for url in gateway.get("urls") or []:
        workers = workers_by_gateway.get(url)
        if workers is None:
            state = "not read"
        elif isinstance(workers, str):
            state = workers
        else:
            worker = next((w for w in workers if str(w.get("url") or "").rstrip("/").lower()
                           == str(gateway.get("worker_url") or "").lower()), None)
            state = "not registered" if worker is None else "in rotation" if worker.get("status") == "ready" \
                else "out of rotation (%s)" % worker.get("status")
        states.append({"gateway": url, "state": state})
    return {"worker_url": gateway.get("worker_url"), "states": states,
            "summary": "; ".join(sorted(set(s["state"] for s in states)))}


def sglang_fleet_rows(hostvars, hosts, gateway_reads=None):
    """One report row per host: its sglang_fleet_row, or why there is none (unreachable, failed); with the
    gateways' GET /workers answers, each host's place in them."""
    rows = []
    workers = gateway_workers(gateway_reads)
    for host in sorted(hosts):
        hv = hostvars[host]
        row = hv.get("sglang_fleet_row")
        if row:
            row = dict(row)
            row["gateway"] = gateway_state(row.get("gateway"), workers)
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
            "gateway": None,
        })
    return rows


class FilterModule(object):
    def filters(self):
        return {
            "sglang_deployment_plan": sglang_deployment_plan,
            "sglang_refusal_message": sglang_refusal_message,
            "sglang_rollback_message": sglang_rollback_message,
            "sglang_server_info_diff": sglang_server_info_diff,
            "sglang_rollout_record": sglang_rollout_record,
            "sglang_redact": sglang_redact,
            "sglang_speed_verdict": sglang_speed_verdict,
            "sglang_fleet_rows": sglang_fleet_rows,
            "sglang_rollout_stopped": sglang_rollout_stopped,
            "sglang_rollout_summary": sglang_rollout_summary,
        }
