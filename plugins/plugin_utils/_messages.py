# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the role says: why a host is refused, what a rollback put back, what a run changes, the rollout's
summary. Each message names the host and the unit. Whether the next batch starts is _rollout.py's.

Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _drafter_delivery


def refusal_message(plan, facts, host, algorithm):
    """Why this host cannot take the deployment: host, unit, release, every reason, and only what bears on them.

    The release's install, algorithms and speculative flags come with a refusal about flags or the algorithm
    (plan flag_errors) only: elsewhere they would bury the reason in a terminal line or a job summary.
    """
    facts = facts or {}
    package = facts.get("package") or {}
    about_flags = bool(plan.get("flag_errors"))
    action = "cannot revert the switch" if plan.get("mode") == "revert" else "cannot deploy %s" % algorithm
    text = "host %s, unit %s: %s" % (host, plan.get("unit"), action)
    if package:
        text += " with sglang %s" % package.get("version")
        if about_flags:
            text += " (%s install at %s, python %s)" % (
                package.get("install"), package.get("location"), facts.get("python"))
    text += ": %s." % "; ".join(plan.get("errors") or [])
    if about_flags and facts.get("capabilities"):
        speculative = [f["name"] for f in (facts.get("flags") or {}).get("list") or []
                       if not f.get("hidden") and f["name"].startswith("--speculative-")]
        text += " Algorithms this release knows: %s. Speculative flags it has: %s." % (
            ", ".join(facts.get("algorithms") or []) or "none", " ".join(speculative) or "none")
    return text + " Nothing was changed on this host."


def gateway_refusal_message(check, host, problem, states=None):
    """Why this host is refused when a gateway cannot take its service out of rotation (the preflight's problem), and
    nothing was changed. Where the worker is in the traffic is said only as the gateways that answered said it
    (states: the preflight's [{gateway, state}]): a gateway that was not asked, or did not answer, is not guessed."""
    revert = check.get("mode") == "revert"
    action = "cannot revert the switch" if revert else "cannot deploy %s" % check.get("algorithm")
    text = "host %s, unit %s: %s: %s. Nothing was changed on this host" % (host, check.get("unit"), action, problem)
    answered = ["%s %s" % (s["gateway"], s["state"]) for s in states or [] if s.get("state")]
    if answered:
        text += "; the gateways that answered have worker %s as: %s" % (check.get("worker_url"), "; ".join(answered))
    return text + "."


def rollback_message(plan, facts, host, algorithm, outcome):
    """What failed in the switch and what the rollback put back.

    outcome: failure (the failed task's result), restarted (the new server was started),
    old_ready (the previous service's readiness after the rollback, or None), rollback_s, journal,
    rotation (None when the host was never out of rotation, else where it is now: "back in rotation", ...).
    """
    failure = outcome.get("failure") or {}
    old_ready = outcome.get("old_ready") or {}
    why = failure.get("msg") or "unknown failure"
    if failure.get("crashed"):
        why += ", detected %ss after the restart" % failure.get("elapsed_s")
    if not outcome.get("restarted"):
        how = "%s was not restarted and runs as before" % plan.get("unit")
        if not plan.get("needs_change"):
            how += "; its files were not changed by this run"
    elif plan.get("old_active") and old_ready.get("ready"):
        how = "the previous service is back and healthy, %.1fs after the rollback started" % float(
            outcome.get("rollback_s") or 0)
    elif plan.get("old_active"):
        how = "the previous files are back but the service is NOT healthy (%s): check it now" % (
            old_ready.get("reason") or "not checked")
    elif plan.get("mode") == "install":
        how = "the previous files are back (there was no unit before; ours was removed)"
    else:
        how = "the previous files are back (the service was not running before and is stopped again)"
    what = "the revert to the operator's command" if plan.get("mode") == "revert" else "the switch to %s" % algorithm
    text = "host %s, unit %s: %s failed (%s); %s." % (host, plan.get("unit"), what, why, how)
    started_again = sorted(name for name, state in (facts.get("related_units") or {}).items()
                           if state.get("active_state") == "active") \
        if plan.get("starts_server") and plan.get("mode") != "revert" else []
    if started_again:
        text += " Units started again: %s." % ", ".join(started_again)
    if outcome.get("rotation"):
        text += " This host is %s." % outcome["rotation"]
    return text + " Last journal lines of %s: %s" % (plan.get("unit"), " | ".join(outcome.get("journal") or []))


def gpus_busy_message(holders, timeout, stopped_units):
    """Why the new server is not started: the processes that still hold its GPUs timeout seconds after the
    stopped_units were stopped (holders: _gpus.gpu_holders')."""
    return "GPUs still in use %ss after stopping %s: %s" % (
        timeout, ", ".join(stopped_units or []), "; ".join(holders or []))


def speed_gates_message(verdict):
    """Why a healthy new server is rolled back: the speed gates it does not pass (verdict: the filter
    the speed probe's verdict, with problems and summary)."""
    return "the new server is healthy but does not pass the speed gates: %s (%s)" % (
        "; ".join(verdict.get("problems") or []), verdict.get("summary"))


def plan_lines(plan):
    """What a run changes on the host, line by line, before it changes it."""
    changes = plan.get("changes") or {}
    stop = plan.get("stop") or {}
    gateway = plan.get("gateway")
    doing = "changes" if plan.get("needs_change") else "already as asked"
    if plan.get("mode") == "restart":
        doing = "restarted as it is (its files untouched)" if plan.get("needs_change") else "not switched or not " \
            "running: left as it is"
    lines = ["%s %s: %s" % (plan.get("mode"), plan.get("unit"), doing)]
    state = plan.get("switch_state")
    if state:
        lines.append("now: %s (%s)" % (state["state"], state["reason"]))
    if plan.get("interrupted"):
        lines.append(plan["interrupted"]["line"])
    lines += ["%s: %s" % (kind, "  ".join(changes.get(kind) or []))
              for kind in ("kept", "removed", "added", "overridden")]
    lines.append("stop: %s%s" % (stop.get("summary"), ("; " + "; ".join(stop["notes"])) if stop.get("notes") else ""))
    lines.append("gateway: %s" % (("out of %s as %s while it is switched, then back"
                                   % (", ".join(gateway["urls"]), gateway["worker_url"])) if gateway
                                  else "none (sglang_dflash_gateway_urls)"))
    accepted = (plan.get("release_limits") or {}).get("accepted") or []
    lines.extend("release limits accepted: %s" % text for text in accepted)
    return lines


def rollout_summary(results, hosts):
    """Lines per host after a rollout, from each host's result (sglang_dflash_result): for each service it switched
    (reverted, left unchanged) the unit, mode, release, health and the argument changes, the canary's verdict where
    it passed, the drafters, and how the host ended when it did not end done."""
    lines = []
    for host in hosts:
        result = results.get(host) or {}
        for service in result.get("services") or []:
            lines.extend(_service_lines(host, service))
        canary = result.get("canary") or {}
        if canary.get("action") == "continue":  # a failed or held canary's message is the host's FAILED line
            lines.append("  %s" % str(canary.get("message") or "")[:600])
        lines.extend(drafter_lines(host, result.get("drafters")))
        state = result.get("state")
        if state == "failed":
            lines.append("%s: FAILED: %s" % (host, str(result.get("reason") or "")[:400]))
        elif state == "not started":
            lines.append("%s: not started, left as it was: %s" % (host, result.get("reason")))
        elif state != "done":
            lines.append("%s: not reached (unreachable, or the play ended before it)" % host)
    return lines


def _service_lines(host, r):
    """The summary lines of one service the rollout switched (or reverted, or left unchanged)."""
    lines = []
    # An unchanged service that was running is not restarted, so its health is not what this run proved.
    healthy = "healthy=%s" % r["healthy"] if r["changed"] or r["healthy"] else "running, not restarted"
    if r.get("time_to_healthy_s") is not None:
        healthy += ", healthy %ss after the server started" % r["time_to_healthy_s"]
    changes = r.get("changes") or {}
    check = " (check mode)" if r.get("check_mode") else ""
    if r["mode"] == "revert":
        lines.append("%s: %s (revert) sglang %s: %s%s, %s" % (
            host, r["unit"], r["release"], ("back to the operator's command (%s)" % (
                r["algorithm"] or "no speculative decoding")) if r["changed"] else "not switched, unchanged",
            check, healthy if r["changed"] else "left as it is"))
        lines.append("  removed: %s" % ("  ".join(changes.get("removed") or []) or "-"))
    elif r["mode"] == "restart":
        lines.append("%s: %s (restart) sglang %s %s: %s%s, %s" % (
            host, r["unit"], r["release"], r["algorithm"], "restarted as it is" if r["changed"] else
            "not switched or not running, left as it is", check, healthy))
    else:
        lines += ["%s: %s (%s) sglang %s %s %s%s, %s" % (
            host, r["unit"], r["mode"], r["release"], r["algorithm"], "changed" if r["changed"] else "unchanged",
            check, healthy)]
        lines += ["  %s: %s" % (kind, "  ".join(changes.get(kind) or []) or "-")
                  for kind in ("removed", "added", "overridden")]
        lines.append("  kept: %d argument(s)" % len(changes.get("kept") or []))
    if r.get("resumed"):
        lines.append("  resumed: %s" % r["resumed"])
    if r.get("fallback"):
        lines.append("  fallback: %(to)s instead of %(from)s, %(reason)s" % r["fallback"])
    lines.extend("  release limit accepted: %s" % text for text in r.get("accepted_limits") or [])
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


def drafter_lines(host, drafters):
    """The deploy summary's lines of a host's drafters (sglang_dflash_drafters): one per source, with the services
    that use it, the copy, and whether this run transferred it."""
    lines = []
    for d in drafters or []:
        services = ", ".join("every other service" if s == _drafter_delivery.ALL_SERVICES else s
                             for s in d.get("services") or [])
        what = ("%s@%s" % (d.get("repo"), d.get("commit"))) if d.get("source") == "hub" else (
            "%s (%s)" % (d.get("repo"), d.get("commit")))
        lines.append("%s: drafter for %s: %s %s, %s bytes, %s, %s" % (
            host, services, d.get("source"), what, d.get("size"), "verified" if d.get("verified") else "NOT verified",
            ("fetched %s bytes" % d.get("bytes_transferred")) if d.get("changed") else "already there"))
    return lines
