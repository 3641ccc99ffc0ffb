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


ACTIONS = ("report", "revert", "restart")
PROBE_WHEN = ("no_traffic", "always", "never")


def check_settings(settings):
    """The day-two settings other than the thresholds, checked: what is wrong named with what to set."""
    action = settings.get("verify_on_degraded") or "report"
    if action not in ACTIONS:
        raise SpeculationSettingsError("sglang_dflash_verify_on_degraded must be one of %s, not %r"
                                       % (", ".join(ACTIONS), action))
    for state in settings.get("verify_fail_when") or []:
        if state not in STATES:
            hint = " (YAML reads an unquoted off as false: write \"off\")" if state is False else ""
            raise SpeculationSettingsError("sglang_dflash_verify_fail_when may list %s, not %r%s"
                                           % (", ".join(STATES), state, hint))
    if (settings.get("verify_probe") or "no_traffic") not in PROBE_WHEN:
        raise SpeculationSettingsError("sglang_dflash_verify_probe must be one of %s, not %r"
                                       % (", ".join(PROBE_WHEN), settings.get("verify_probe")))
    window = settings.get("verify_window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, (int, float)) or window < 0):
        raise SpeculationSettingsError("sglang_dflash_verify_window must be a number of seconds, 0 or more, not %r"
                                       % (window,))


def at_switch(record, source=None):
    """(acceptance length, where it came from) the host's record kept at the switch; (None, None) without one, or
    when the record is not of a switch that runs (a rollback's figures are of settings that do not).

    Judged on traffic: the speed probe's after the switch when it ran, else the canary's, else the first
    generation's. Judged on one probe request (source "probe"): only the first generation's, whose prompt the probe
    sends (the speed probe's prompts are the operator's and longer: another acceptance)."""
    record = record or {}
    if record.get("outcome") != "switched":
        return None, None
    proof = (record.get("proof") or {}).get("accept_length")
    if source == "probe":
        return (float(proof), "the first generation after the switch") if _positive(proof) else (None, None)
    after = (record.get("after") or {}).get("accept_length")
    if _positive(after):
        return float(after), "the speed probe after the switch"
    canary = (((record.get("canary") or {}).get("figures") or {}).get("accept_length") or {}).get("canary")
    if _positive(canary):
        return float(canary), "the canary window"
    if _positive(proof):
        return float(proof), "the first generation after the switch"
    return None, None


def _positive(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _iso(seconds):
    return datetime.datetime.utcfromtimestamp(seconds).isoformat(timespec="seconds") + "Z" if seconds else None


def _evidence(observed, thresholds):
    """{source, requests, tokens, verify_steps, accept_length} of the window when enough requests that decoded ended in
    it and the server counts verify steps, else of the probe when it answered; {source: None, missing: why} else.

    decoded: the tokens of verify steps, without each request's first (its prefill's): an acceptance of one token a
    step reads T/(T-1) on SGLang's own count, 1.14 for replies of 8 tokens; a request of one token ran no step."""
    window = observed.get("window") or {}
    probe = observed.get("probe") or {}
    requests, tokens = window.get("requests") or 0, window.get("tokens") or 0
    if requests >= thresholds["min_requests"] and window.get("verify_steps") is not None and tokens > requests:
        return {"source": "traffic", "requests": requests, "verify_steps": window["verify_steps"],
                "accept_length": window.get("accept_length"), "decoded": tokens - requests}
    if probe.get("ok") and (probe.get("completion_tokens") or 0) > 1:
        return {"source": "probe", "requests": 1, "verify_steps": probe.get("verify_steps"),
                "accept_length": probe.get("accept_length"), "decoded": probe["completion_tokens"] - 1}
    reasons = []
    if observed.get("metrics_problem"):
        reasons.append(observed["metrics_problem"])
    elif window:
        reasons.append("%s request(s) ended in the %s-s window%s" % (
            int(requests), window.get("seconds"),
            "" if window.get("verify_steps") is not None or not requests
            else " and the server counts no verify step"))
    reasons.append("the probe request failed: %s" % probe["problem"] if probe and not probe.get("ok") else
                   "the probe request decoded nothing" if probe else "no probe request was sent")
    return {"source": None, "missing": "; ".join(reasons)}


def judge(observed, record, thresholds):
    """The verdict of one service: {unit, state, reason, source, requests, verify_steps, accept_length,
    accept_length_gauge, accept_length_at_switch, at_switch_from, restarted_at, time, window_s}."""
    evidence = _evidence(observed, thresholds)
    source, steps, length = evidence["source"], evidence.get("verify_steps"), evidence.get("accept_length")
    switch_figure, switch_from = at_switch(record, source)
    window = observed.get("window") or {}
    verdict = {"unit": observed.get("unit"), "source": source, "requests": evidence.get("requests"),
               "verify_steps": steps, "accept_length": length, "accept_length_gauge": window.get("accept_length_gauge"),
               "accept_length_at_switch": switch_figure, "at_switch_from": switch_from,
               "restarted_at": restarted_at(record), "time": _iso(observed.get("time")),
               "window_s": window.get("seconds")}
    where = ("over %s request(s) in %s s" % (int(evidence["requests"]), window.get("seconds")) if source == "traffic"
             else "in one probe request")
    if source is None:
        state, reason = "unknown", "no evidence: %s" % evidence["missing"]
    elif not steps:
        state, reason = "off", "no speculative verify step %s" % where
    elif evidence["decoded"] / float(steps) <= thresholds["off_accept_length"]:
        state, reason = "off", ("%d verify step(s) for %d decoded token(s) %s: each step accepts about one token "
                                "(the draft weights are not used)" % (int(steps), int(evidence["decoded"]), where))
    elif length is not None and switch_figure and length < thresholds["degraded_share"] * switch_figure:
        state, reason = "degraded", "acceptance length %.2f %s, below %s of %.2f at the switch (%s)" % (
            length, where, thresholds["degraded_share"], switch_figure, switch_from)
    else:
        state = "engaged"
        reason = "%d verify step(s) %s%s" % (
            int(steps), where, "" if switch_figure else "; no figure kept at the switch to compare with")
    verdict.update(state=state, reason=reason)
    return verdict


def restarted_at(record):
    """When verify_dflash.yml restarted the service since its switch (the record's `restarted`), or None."""
    restarted = (record or {}).get("restarted") or {}
    when = restarted.get("time")
    return when if when and str(when) >= str((record or {}).get("time") or "") else None


def not_running(unit, active_state, record, now):
    """The verdict of a switched service that does not run: unknown (nothing to read), never engaged."""
    return unknown(unit, "the service is not running (ActiveState=%s)" % active_state, record, now)


def unknown(unit, reason, record, now):
    """The verdict of a switched service nothing can be read from: unknown, with why; never engaged."""
    switch_figure, switch_from = at_switch(record)
    return {"unit": unit, "state": "unknown", "reason": reason,
            "source": None, "requests": None, "verify_steps": None, "accept_length": None,
            "accept_length_gauge": None, "accept_length_at_switch": switch_figure, "at_switch_from": switch_from,
            "restarted_at": restarted_at(record), "time": _iso(now), "window_s": None}


def act_on(verdicts, action):
    """The units the action (report, revert, restart) is for: only those degraded or off; a restart only once since
    the switch (a service still degraded or off after it is for a revert, or a person)."""
    if action == "report":
        return []
    return [v["unit"] for v in verdicts
            if v["state"] in ACTIONABLE and not (action == "restart" and v.get("restarted_at"))]


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
