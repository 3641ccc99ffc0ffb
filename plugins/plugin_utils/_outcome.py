# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one service's switch did (the action gpufleet.sglang.sglang_dflash_record): the service's result for the run's
summary, the record the host keeps, and, for a refusal or a rollback, the message the host fails with.

From what the steps registered in this service's turn (a skipped step registers a skipped result, so nothing here
can be another service's) and, for a rollback, from the host's intent. Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _messages, _records, _rollback


def _ran(result):
    """A registered result, or None when its step was skipped (or never ran)."""
    return result if isinstance(result, dict) and result and not result.get("skipped") else None


def _iso(now):
    return datetime.datetime.utcfromtimestamp(now).isoformat() + "Z"


def _out_of_rotation_s(observed, plan, now):
    """Seconds the host was out of rotation, from the take-out (this run's, or that of the cut run it resumed) until
    it was put back; None when it never left."""
    if not (plan.get("steps") or {}).get("rejoin"):
        return None
    leaving = _ran(observed.get("leaving")) or {}
    started = leaving.get("now") or ((plan.get("facts") or {}).get("intent") or {}).get("leaving_rotation_at")
    return round(now - float(started), 1) if started else None


def _speed(observed):
    """The speed proof's verdict (the speed probe's gates, judged by its action) with the figures before."""
    after = _ran(observed.get("speed_after")) or {}
    return after.get("verdict")


def decide(plan, outcome, observed, host, check_mode, now):
    """{service, record, message} of a service that was switched, reverted, left unchanged, or rolled back."""
    if outcome == "rolled back":
        return _rolled_back(plan, observed, host, now)
    facts = plan.get("facts") or {}
    out_s = _out_of_rotation_s(observed, plan, now)
    service = _records.host_result(plan, facts, host, {
        "ready": _ran(observed.get("ready")), "speed": _speed(observed), "out_of_rotation_s": out_s,
        "drain": _ran(observed.get("drain")), "check_mode": check_mode})
    service["resumed"] = (plan.get("interrupted") or {}).get("line")
    if outcome == "unchanged":
        return {"service": service, "record": None, "message": None}
    if outcome == "restarted":
        # The switch's record stays (its figures are what a day-two check compares with); it learns when this restart
        # was, so that verify_dflash.yml restarts a service once, not at every run (plugin_utils/_speculation.py).
        return {"service": service, "record": None, "message": None,
                "record_update": {"restarted": {"time": _iso(now), "run": plan.get("run")}}}
    measurements = {"before": observed.get("speed_before"), "after": _ran(observed.get("speed_after")),
                    "verdict": _speed(observed), "drain": _ran(observed.get("drain")), "out_of_rotation_s": out_s,
                    "canary": observed.get("canary"), "proof": (_ran(observed.get("ready")) or {}).get("generation")}
    record = _records.rollout_record(plan, facts, measurements, outcome, None, _iso(now))
    return {"service": service, "record": record, "message": None}


def _rolled_back(plan, observed, host, now):
    """The rollback's record and the message the host fails with (what failed, what was put back, where it is)."""
    facts = plan.get("facts") or {}
    steps = observed.get("steps") or {}
    failure = observed.get("failure") or {}
    rejoined = observed.get("rejoined")
    back_failed = rejoined.get("msg") if isinstance(rejoined, dict) and rejoined.get("failed") else None
    left_at = steps.get("left_rotation_at")
    started = (_ran(observed.get("rolling_back")) or {}).get("now")
    outcome = _rollback.rollback_outcome({
        "failure": failure, "restarted": bool(steps.get("restarted")), "old_ready": observed.get("old_ready"),
        "journal": observed.get("journal"), "rollback_started": started, "now": now,
        "out_of_rotation_at": left_at,
        "out_of_rotation_s": round(now - float(left_at), 1) if left_at and _ran(rejoined) and not back_failed else None,
        "back_failed": back_failed})
    message = _messages.rollback_message(plan, facts, host, plan.get("algorithm"), outcome)
    record = None
    if steps.get("record"):
        after = failure if "measured" in failure else None
        measurements = {"before": steps.get("speed_before"), "after": after, "verdict": failure.get("verdict"),
                        "drain": None, "out_of_rotation_s": None, "canary": observed.get("canary")}
        record = _records.rollout_record(plan, facts, measurements, "rolled back", failure.get("msg") or
                                         "unknown failure", _iso(now))
    return {"service": None, "record": record, "message": message}


def refusal(refusals, gateway_checks, host):
    """Every reason this host is refused before any change, one message ('' when it is not): the plans' refusals and
    each gateway that cannot take a service out of rotation, saying where the gateways that answered have it."""
    reasons = list(refusals or [])
    for check in (gateway_checks or {}).get("results") or []:
        if not check.get("failed"):
            continue
        item = check.get("item") or {}
        reasons.append(_messages.gateway_refusal_message(item, host, check.get("msg") or "no answer",
                                                         check.get("gateways")))
    return " ".join(reasons)


def with_service(result, host, service):
    """The host's sglang_dflash_result with one more service's result."""
    merged = dict(result or {})
    merged["host"] = host
    merged["services"] = list(merged.get("services") or []) + [service]
    return merged
