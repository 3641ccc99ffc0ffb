# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day two: is speculation engaged on a switched service now? The verdict of playbooks/verify_dflash.yml and of the
fleet report's "speculation now" column, from the evidence module_utils/speculation.py read on the host, against the
figure the host's record kept at the switch.

- engaged: verify steps ran and accept more than one token each;
- degraded: they accept less than `degraded_share` (0.5) of the figure at the switch;
- off: requests ran without a verify step, or each step accepts about one token (the draft weights are lost,
  sglang#31674; the decode side of PD disaggregation, sglang PR #34285);
- unknown: no evidence (no request in the window and the probe refused); never counted as engaged.

Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

STATES = ("engaged", "degraded", "off", "unknown")
# The states an action (revert, restart) may touch: never engaged, never unknown (no evidence is no reason).
ACTIONABLE = ("degraded", "off")
DEFAULTS = {"degraded_share": 0.5, "off_accept_length": 1.1, "min_requests": 1}


class SpeculationSettingsError(ValueError):
    """Bad sglang_dflash_verify_* settings; the message names the variable and what to set."""


def configure(settings):
    """DEFAULTS with the operator's sglang_dflash_verify_thresholds over them, checked."""
    merged = dict(DEFAULTS)
    for key, value in (settings or {}).items():
        if key not in DEFAULTS:
            raise SpeculationSettingsError("sglang_dflash_verify_thresholds has no key %r; the keys are %s"
                                           % (key, ", ".join(sorted(DEFAULTS))))
        merged[key] = value
    share, off, least = merged["degraded_share"], merged["off_accept_length"], merged["min_requests"]
    if not isinstance(share, (int, float)) or not 0 < share < 1:
        raise SpeculationSettingsError("sglang_dflash_verify_thresholds.degraded_share must be a number between 0 and "
                                       "1 (a share of the acceptance at the switch), not %r" % (share,))
    if not isinstance(off, (int, float)) or not 1 <= off < 2:
        raise SpeculationSettingsError("sglang_dflash_verify_thresholds.off_accept_length must be a number from 1 "
                                       "to 2 (one token a step is no speculation), not %r" % (off,))
    if not isinstance(least, int) or isinstance(least, bool) or least < 1:
        raise SpeculationSettingsError("sglang_dflash_verify_thresholds.min_requests must be a whole number of at "
                                       "least 1, not %r" % (least,))
    return merged


def at_switch(record):
    """(acceptance length, where it came from) the host's record kept at the switch; (None, None) without one.

    The speed probe's after the switch when it ran, else the canary's, else the first generation's."""
    record = record or {}
    after = (record.get("after") or {}).get("accept_length")
    if _positive(after):
        return float(after), "the speed probe after the switch"
    canary = (((record.get("canary") or {}).get("figures") or {}).get("accept_length") or {}).get("canary")
    if _positive(canary):
        return float(canary), "the canary window"
    proof = (record.get("proof") or {}).get("accept_length")
    if _positive(proof):
        return float(proof), "the first generation after the switch"
    return None, None


def _positive(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _iso(seconds):
    return datetime.datetime.utcfromtimestamp(seconds).isoformat(timespec="seconds") + "Z" if seconds else None


def _evidence(observed, thresholds):
    """(source, requests, verify_steps, accept_length, why there is none): the window when requests ended in it and
    the server counts verify steps, else the probe when it answered."""
    window = observed.get("window") or {}
    probe = observed.get("probe") or {}
    if (window.get("requests") or 0) >= thresholds["min_requests"] and window.get("verify_steps") is not None:
        return "traffic", window["requests"], window["verify_steps"], window.get("accept_length"), None
    if probe.get("ok"):
        return "probe", 1, probe.get("verify_steps"), probe.get("accept_length"), None
    reasons = []
    if observed.get("metrics_problem"):
        reasons.append(observed["metrics_problem"])
    elif window:
        reasons.append("%s request(s) ended in the %s-s window%s" % (
            int(window.get("requests") or 0), window.get("seconds"),
            "" if window.get("verify_steps") is not None or not window.get("requests")
            else " and the server counts no verify step"))
    reasons.append("the probe request failed: %s" % probe["problem"] if probe else "no probe request was sent")
    return None, None, None, None, "; ".join(reasons)


def judge(observed, record, thresholds):
    """The verdict of one service: {unit, state, reason, source, requests, verify_steps, accept_length,
    accept_length_gauge, accept_length_at_switch, at_switch_from, time, window_s}."""
    switch_figure, switch_from = at_switch(record)
    source, requests, steps, length, missing = _evidence(observed, thresholds)
    window = observed.get("window") or {}
    verdict = {"unit": observed.get("unit"), "source": source, "requests": requests, "verify_steps": steps,
               "accept_length": length, "accept_length_gauge": window.get("accept_length_gauge"),
               "accept_length_at_switch": switch_figure, "at_switch_from": switch_from,
               "time": _iso(observed.get("time")), "window_s": window.get("seconds")}
    where = ("over %s request(s) in %s s" % (int(requests), window.get("seconds")) if source == "traffic"
             else "in one probe request")
    if source is None:
        state, reason = "unknown", "no evidence: %s" % missing
    elif not steps:
        state, reason = "off", "no speculative verify step %s" % where
    elif length is not None and length <= thresholds["off_accept_length"]:
        state, reason = "off", ("acceptance length %.2f %s: each verify step accepts about one token (the draft "
                                "weights are not used)" % (length, where))
    elif length is not None and switch_figure and length < thresholds["degraded_share"] * switch_figure:
        state, reason = "degraded", "acceptance length %.2f %s, below %s of %.2f at the switch (%s)" % (
            length, where, thresholds["degraded_share"], switch_figure, switch_from)
    else:
        state = "engaged"
        reason = "%d verify step(s) %s%s" % (
            int(steps), where, "" if switch_figure else "; no figure kept at the switch to compare with")
    verdict.update(state=state, reason=reason)
    return verdict


def not_running(unit, active_state, record, now):
    """The verdict of a switched service that does not run: unknown (nothing to read), never engaged."""
    switch_figure, switch_from = at_switch(record)
    return {"unit": unit, "state": "unknown", "reason": "the service is not running (ActiveState=%s)" % active_state,
            "source": None, "requests": None, "verify_steps": None, "accept_length": None,
            "accept_length_gauge": None, "accept_length_at_switch": switch_figure, "at_switch_from": switch_from,
            "time": _iso(now), "window_s": None}


def act_on(verdicts, action):
    """The units the action (report, revert, restart) is for: only those degraded or off."""
    if action == "report":
        return []
    return [v["unit"] for v in verdicts if v["state"] in ACTIONABLE]


def line(host, verdict):
    """One line of the playbook's output and of the report's cell."""
    now = "%.2f" % verdict["accept_length"] if verdict.get("accept_length") is not None else "-"
    then = "%.2f" % verdict["accept_length_at_switch"] if verdict.get("accept_length_at_switch") else "-"
    return "%s: %s %s (acceptance now %s, at the switch %s; %s) at %s" % (
        host, verdict["unit"], verdict["state"], now, then, verdict["reason"], verdict.get("time") or "-")


def counts(verdicts):
    """[(state, how many)] in STATES' order."""
    states = [v.get("state") for v in verdicts]
    return [(state, states.count(state)) for state in STATES]
