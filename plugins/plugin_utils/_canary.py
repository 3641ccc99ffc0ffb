# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary stage: which hosts are the canary, and does it pass against the hosts not yet switched?

Controller-only and pure. The figures come from the sglang_live_metrics module (the metrics seam:
module_utils/metrics_text.py, metrics_window.py, prometheus_api.py), one dict per host over the same window.
The verdict is pass, fail or inconclusive; inconclusive is never a pass (the role holds or rolls back).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# metric: (figure, label, unit, better) and its default thresholds. "higher" metrics have a minimum and a
# minimum ratio to the baseline; "lower" ones a maximum and a maximum ratio (or, for ratios of requests,
# an increase over the baseline's). Relative thresholds are what a fleet needs by default (hardware, model
# and traffic set the absolute figures); the absolute ones are sane floors and ceilings.
METRICS = {
    "decode_per_request": ("tokens_per_s_per_request", "decode tokens/s per running request", "", "higher"),
    "itl_p99": ("itl_p99_s", "inter-token latency p99", " s", "lower"),
    "ttft_p99": ("ttft_p99_s", "time to first token p99", " s", "lower"),
    "accept_length": ("accept_length", "acceptance length (sglang:spec_accept_length)", "", "higher"),
    "abort_ratio": ("abort_ratio", "aborted requests", "", "lower_ratio"),
    "gateway_error_ratio": ("gateway_error_ratio", "error rate through the gateway", "", "lower_ratio"),
}
DEFAULT_THRESHOLDS = {
    "decode_per_request": {"min": None, "min_ratio": 0.9},
    "itl_p99": {"max": None, "max_ratio": 1.25},
    "ttft_p99": {"max": 10.0, "max_ratio": 1.5},
    # Relative to the baseline's when it speculates too, else to this host's own speed probe (its prompts).
    "accept_length": {"min": 2.0, "min_ratio": 0.75},
    "abort_ratio": {"max": 0.01, "max_increase": 0.005},
    "gateway_error_ratio": {"max": 0.01, "max_increase": 0.005},
}


def canary_count(spec, hosts):
    """How many hosts the first batch has: a count (3) or a percentage ("10%"), at least 1, at most all.

    The play's serial is [spec, batch]: a percentage is sized as Ansible sizes it, so both agree.

    Returns (count, problem); 0 with no problem when spec is empty (no canary stage)."""
    if spec in (None, "", 0, "0"):
        return 0, None
    total = len(hosts)
    text = str(spec).strip()
    try:
        if text.endswith("%"):
            percent = float(text[:-1])
            if not 0 < percent <= 100:
                raise ValueError(text)
            count = int(total * percent / 100.0)  # as Ansible sizes a serial batch: down, at least 1
        else:
            count = int(text)
            if count < 1:
                raise ValueError(text)
    except ValueError:
        return 0, ("sglang_dflash_canary must be a host count (2) or a percentage of the hosts (\"10%%\"), not %r"
                   % (spec,))
    return max(1, min(count, total)), None


def thresholds(overrides=None):
    """DEFAULT_THRESHOLDS with the operator's (sglang_dflash_canary_thresholds) merged in, or a problem."""
    merged = dict((k, dict(v)) for k, v in DEFAULT_THRESHOLDS.items())
    for metric, values in (overrides or {}).items():
        if metric not in merged:
            return None, ("sglang_dflash_canary_thresholds: unknown metric %r (known: %s)"
                          % (metric, ", ".join(sorted(merged))))
        if not isinstance(values, dict):
            return None, "sglang_dflash_canary_thresholds.%s must be a mapping such as %r" % (metric, merged[metric])
        for key, value in values.items():
            if key not in merged[metric]:
                return None, ("sglang_dflash_canary_thresholds.%s: unknown key %r (known: %s)"
                              % (metric, key, ", ".join(sorted(merged[metric]))))
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                return None, "sglang_dflash_canary_thresholds.%s.%s must be a number or null" % (metric, key)
            merged[metric][key] = value
    return merged, None


def _mean(values):
    values = [float(v) for v in values if v is not None]
    return round(sum(values) / len(values), 4) if values else None


def _group(figures, hosts, name):
    return _mean([(figures.get(h) or {}).get(name) for h in hosts])


def _fmt(value, unit=""):
    if value is None:
        return "none"
    if unit == " s":
        return "%.1f ms" % (1000 * value) if value < 1 else "%.2f s" % value
    if isinstance(value, float) and value < 1:
        return "%.2f%%" % (100 * value) if unit == "%" else "%.4f" % value
    return "%.2f" % value


def _check(metric, limits, canary, baseline):
    """The failures ("must be ..." reasons) of one metric's figures against its thresholds."""
    _figure, _label, unit, better = METRICS[metric]
    failures = []
    if better == "higher":
        if limits.get("min") is not None and canary < limits["min"]:
            failures.append("must be >= %s" % _fmt(float(limits["min"]), unit))
        if limits.get("min_ratio") is not None and baseline is not None and canary < baseline * limits["min_ratio"]:
            failures.append("must be >= %.2fx the baseline" % limits["min_ratio"])
    elif better == "lower":
        if limits.get("max") is not None and canary > limits["max"]:
            failures.append("must be <= %s" % _fmt(float(limits["max"]), unit))
        if limits.get("max_ratio") is not None and baseline and canary > baseline * limits["max_ratio"]:
            failures.append("must be <= %.2fx the baseline" % limits["max_ratio"])
    else:
        if limits.get("max") is not None and canary > limits["max"]:
            failures.append("must be <= %s" % _fmt(float(limits["max"]), "%"))
        if limits.get("max_increase") is not None and baseline is not None \
                and canary > baseline + limits["max_increase"]:
            failures.append("must be at most %s above the baseline" % _fmt(float(limits["max_increase"]), "%"))
    return failures


def judge(figures, canary_hosts, baseline_hosts, limits=None, min_requests=10, probe_accept=None, gateway=None,
          source=None, problem=None, window_s=None):
    """The verdict of the canary over one window.

    figures: {host: window figures}; probe_accept: {host: acceptance length the speed probe measured after the
    switch}, the reference of accept_length when the baseline does not speculate; gateway: {"error_ratio": x,
    "baseline_error_ratio": y} or None. Returns {verdict, failed: [{metric, label, canary, baseline, reasons}],
    inconclusive: [reasons], figures: {metric: {canary, baseline}}, hosts: {...}, message}.
    """
    limits = limits or DEFAULT_THRESHOLDS
    figures = figures or {}
    result = {"verdict": None, "failed": [], "inconclusive": [], "figures": {}, "source": source,
              "window_s": window_s, "canary_hosts": list(canary_hosts), "baseline_hosts": list(baseline_hosts),
              "per_host": figures}
    if problem:
        result["inconclusive"].append(problem)
    if not baseline_hosts:
        result["inconclusive"].append("no host is left out of the canary to compare it with")
    for group, hosts in (("canary", canary_hosts), ("baseline", baseline_hosts)):
        for host in hosts:
            requests = (figures.get(host) or {}).get("requests")
            if not problem and (requests is None or requests < min_requests):
                result["inconclusive"].append(
                    "%s host %s served %s request(s) in the window, fewer than %d (no traffic, or no series)"
                    % (group, host, requests if requests is not None else "no", min_requests))
    for metric, (name, label, _unit, _better) in METRICS.items():
        if metric == "gateway_error_ratio":
            canary = (gateway or {}).get("error_ratio")
            baseline = (gateway or {}).get("baseline_error_ratio")
        else:
            canary, baseline = _group(figures, canary_hosts, name), _group(figures, baseline_hosts, name)
        if metric == "abort_ratio":
            # A server that never aborted may have no series yet: 0 when it served requests.
            canary = canary if canary is not None else (0.0 if _group(figures, canary_hosts, "requests") else None)
            baseline = baseline if baseline is not None else (
                0.0 if _group(figures, baseline_hosts, "requests") else None)
        if metric == "accept_length" and baseline is None:
            baseline = _mean([(probe_accept or {}).get(h) for h in canary_hosts])
        result["figures"][metric] = {"canary": canary, "baseline": baseline}
        if metric == "gateway_error_ratio" and gateway is None:
            continue  # no gateway metrics configured
        if canary is None:
            if metric in ("accept_length", "ttft_p99") and problem is None and not result["inconclusive"]:
                result["inconclusive"].append("the canary hosts report no %s" % label)
            continue
        reasons = _check(metric, limits.get(metric, {}), canary, baseline)
        if reasons:
            result["failed"].append({"metric": metric, "label": label, "canary": canary, "baseline": baseline,
                                     "reasons": reasons})
    if result["failed"]:
        result["verdict"] = "fail"
    elif result["inconclusive"]:
        result["verdict"] = "inconclusive"
    else:
        result["verdict"] = "pass"
    result["message"] = message(result)
    return result


def message(result):
    """One line: the verdict, and each failed metric with the canary's and the baseline's figures."""
    hosts = "canary %s against %s" % (",".join(sorted(result["canary_hosts"])) or "none",
                                      ",".join(sorted(result["baseline_hosts"])) or "no other host")
    window = " over %s s" % result["window_s"] if result.get("window_s") is not None else ""
    source = " (%s)" % result["source"] if result.get("source") else ""
    if result["verdict"] == "fail":
        parts = []
        for failure in result["failed"]:
            unit = METRICS[failure["metric"]][2]
            if METRICS[failure["metric"]][3] == "lower_ratio":
                unit = "%"
            parts.append("%s %s (baseline %s): %s" % (
                failure["label"], _fmt(failure["canary"], unit), _fmt(failure["baseline"], unit),
                ", ".join(failure["reasons"])))
        return "the canary failed, %s%s%s: %s" % (hosts, window, source, "; ".join(parts))
    if result["verdict"] == "inconclusive":
        return "the canary is inconclusive, %s%s%s: %s" % (hosts, window, source, "; ".join(result["inconclusive"]))
    figures = result["figures"]
    shown = ", ".join("%s %s vs %s" % (METRICS[m][1], _fmt(v["canary"], METRICS[m][2]),
                                       _fmt(v["baseline"], METRICS[m][2]))
                      for m, v in figures.items() if v["canary"] is not None)
    return "the canary passed, %s%s%s: %s" % (hosts, window, source, shown)


ACTIONS = {"pass": "continue", "fail": "rollback"}


def decide(result, on_inconclusive="hold"):
    """Add what the rollout does (continue, rollback or hold) and say it at the end of the message."""
    if on_inconclusive not in ("hold", "rollback"):
        result.update(verdict="fail", action="hold",
                      message="sglang_dflash_canary_on_inconclusive must be hold or rollback, not %r; nothing more "
                              "is switched" % (on_inconclusive,))
        return result
    action = ACTIONS.get(result["verdict"], on_inconclusive)
    result["action"] = action
    if action == "rollback":
        result["message"] += ". Every canary host goes back to its previous server; no other host was touched."
    elif action == "hold":
        result["message"] += (". Held (sglang_dflash_canary_on_inconclusive=hold): the canary hosts keep the new "
                              "server, no other host is switched; look, then run again or revert them.")
    return result


def stopped(results):
    """Why the later batches must not start ('' to go on): {host: its canary result or None}."""
    for host in sorted(results):
        result = results[host] or {}
        if result.get("action") in ("rollback", "hold"):
            return "not started: the canary stopped the rollout (%s)" % result.get("message")
    return ""


def record(result):
    """What a host keeps of the canary's verdict in its record (the fleet report shows it): the verdict, what the
    rollout did, where the figures came from, and each metric's canary and baseline figures side by side; None
    without a verdict."""
    if not isinstance(result, dict) or not result.get("verdict"):
        return None
    return {"verdict": result.get("verdict"), "action": result.get("action"), "source": result.get("source"),
            "window_s": result.get("window_s"), "canary_hosts": list(result.get("canary_hosts") or []),
            "baseline_hosts": list(result.get("baseline_hosts") or []),
            "figures": dict(result.get("figures") or {}),
            "failed": [f.get("metric") for f in result.get("failed") or []],
            "message": result.get("message")}


def refusal(plan_problem, source, host):
    """Why the canary cannot start on host, before any change: {problem, reason}, both '' when it can start.

    plan_problem: canary_count's; source: the sglang_live_metrics check of the metrics source (its problems)."""
    if plan_problem:
        problem, advice = plan_problem, "set sglang_dflash_canary to a host count or a percentage"
    else:
        problem = "; ".join((source or {}).get("problems") or [])
        advice = ("set sglang_dflash_prometheus_url to one that answers, or "
                  "sglang_dflash_canary_fallback_to_scrape=true")
    if not problem:
        return {"problem": "", "reason": ""}
    return {"problem": problem,
            "reason": "host %s: cannot start the canary: %s (%s). Nothing was changed on this host."
                      % (host, problem, advice)}


def source_line(hosts, source):
    """Where the canary's figures will come from, with the notes of the source's check (a fallback, say)."""
    notes = (source or {}).get("notes") or []
    shown = " (%s)" % "; ".join(notes) if notes else ""
    return "canary %s: figures from %s%s" % (",".join(hosts), (source or {}).get("source"), shown)


def stage_failed(result, failure_msg):
    """A canary host whose stage failed (its rollback, say): the reason, after the verdict's message if there was
    one, and its canary result with the rollout held (the later batches do not start)."""
    result = dict(result or {})
    failure_msg = failure_msg or "unknown failure"
    reason = "%s; then %s" % (result["message"], failure_msg) if result.get("message") else failure_msg
    result["action"] = "hold"
    return {"reason": reason, "result": result}


def verdict(observed, canary_hosts, baseline_hosts, overrides=None, min_requests=10, on_inconclusive="hold",
            probe_accept=None):
    """The canary's verdict over the observed window and what the rollout does (judge, then decide).

    observed: sglang_live_metrics' result; overrides: sglang_dflash_canary_thresholds; probe_accept: {host: acceptance
    length the speed probe measured after its switch}, the acceptance's reference where the baseline does not
    speculate."""
    limits, problem = thresholds(dict(overrides or {}))
    observed = dict(observed or {})
    if problem:
        return {"verdict": "fail", "action": "hold", "failed": [], "inconclusive": [], "figures": {},
                "message": problem + "; nothing more is switched"}
    problems = list(observed.get("problems") or [])
    result = judge(observed.get("figures") or {}, list(canary_hosts or []), list(baseline_hosts or []), limits,
                   int(min_requests), dict(probe_accept or {}), observed.get("gateway"), observed.get("source"),
                   "; ".join(problems) or None, observed.get("window_s"))
    result["notes"] = list(observed.get("notes") or [])
    if result["notes"]:
        result["message"] += " (%s)" % "; ".join(result["notes"])
    return decide(result, on_inconclusive)
