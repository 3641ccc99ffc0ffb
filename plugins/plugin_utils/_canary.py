# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary stage: which hosts are the canary, and does it pass against the hosts not yet switched?

A canary is an experiment with one arm: its verdict is the experiment's judge's (_judge.py) over the window's interval
samples, with a measure of noise. Controller-only and pure. The figures come from the sglang_live_metrics module (the
metrics seam: module_utils/metrics_text.py, metrics_window.py, prometheus_api.py), one sample per host and interval
of the same window. The verdict is pass, fail or inconclusive; inconclusive is never a pass (the role holds or rolls
back).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _judge


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


def _median(values):
    values = sorted(float(v) for v in values if v is not None)
    if not values:
        return None
    middle = len(values) // 2
    return round(values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2.0, 4)


def judge(observed, canary_hosts, baseline_hosts, settings=None, min_requests=10):
    """The verdict of the canary over one window: the canary hosts as the one arm of an experiment against the hosts
    not yet switched, judged on the interval samples of that window with a measure of noise (_judge.evaluate): the
    canary passes when it is not worse on the objective beyond the tolerance (the whole interval of the shift on the
    right side of it), no latency is worse, and no guardrail is broken; the acceptance length is shown, never judged
    (the hosts not yet switched do not speculate, and a probe's prompts are not the fleet's traffic).

    observed: sglang_live_metrics' result (figures and samples per host, source, window_s, gateway, problems);
    settings: sglang_dflash_judge. Returns {verdict (pass, fail, inconclusive), failed: [metrics], inconclusive:
    [reasons], figures: {metric: {canary, baseline, ...}}, judgement: [lines], source, window_s, canary_hosts,
    baseline_hosts, per_host, message}."""
    observed = observed or {}
    figures = observed.get("figures") or {}
    result = {"verdict": None, "failed": [], "inconclusive": [], "figures": {}, "judgement": [],
              "source": observed.get("source"), "window_s": observed.get("window_s"),
              "canary_hosts": list(canary_hosts), "baseline_hosts": list(baseline_hosts), "per_host": figures}
    problem = "; ".join(observed.get("problems") or [])
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
    config, wrong = _judge.configure(dict({"require": "not worse"}, **(settings or {})))
    if wrong:
        result["inconclusive"].append("sglang_dflash_judge: %s" % wrong)
    samples = [s for host_samples in (observed.get("samples") or {}).values() for s in host_samples]
    if not result["inconclusive"]:
        _judged(result, samples, canary_hosts, baseline_hosts, config, observed.get("interval_s"))
    _gateway(result, observed.get("gateway"), config)
    result["figures"]["accept_length"] = {"canary": _median(s.get("accept_length") for s in samples
                                                            if s.get("host") in canary_hosts),
                                          "baseline": _median(s.get("accept_length") for s in samples
                                                              if s.get("host") in baseline_hosts)}
    result["verdict"] = "fail" if result["failed"] else ("inconclusive" if result["inconclusive"] else "pass")
    result["message"] = message(result)
    return result


def _judged(result, samples, canary_hosts, baseline_hosts, config, interval_s):
    """The judge's verdict of the canary as one arm (the objective and the latencies, the guardrails)."""
    config = dict(config, compared=_judge.reported(samples, config["compared"], [canary_hosts, baseline_hosts],
                                                   config["objective"]))
    decision = _judge.evaluate(samples, [{"name": "canary", "hosts": list(canary_hosts)}], list(baseline_hosts),
                               config, interval_s, max_window_reached=True)
    status = decision["arms"]["canary"]["status"]
    comparisons = decision["against_control"]["canary"]
    for metric, comparison in comparisons.items():
        result["figures"][metric] = {
            "canary": comparison.get("median_arm"), "baseline": comparison.get("median_control"),
            "shift_relative": comparison.get("shift_relative"), "low_relative": comparison.get("low_relative"),
            "high_relative": comparison.get("high_relative"), "verdict": comparison.get("verdict")}
    result["judgement"] = decision["lines"]
    if status == "too few samples":
        result["inconclusive"].extend(decision["arms"]["canary"]["reasons"])
    elif status in ("loses", "failed guardrail"):
        worse = [m for m, c in comparisons.items() if c.get("verdict") == "worse"]
        if status == "loses" and config["objective"] not in worse:
            worse.insert(0, config["objective"])  # not shown to be no worse than the tolerance allows
        breached = sorted(set(b["metric"] for b in (decision["guardrails"]["breaches"].get("canary") or [])))
        result["failed"] = worse + [m for m in breached if m not in worse]
        result["failure_reasons"] = decision["arms"]["canary"]["reasons"]


def _gateway(result, gateway, config):
    """The error rate through the gateway over the window (the whole gateway's: SMG does not split its responses by
    worker), against its guardrail."""
    ratio = (gateway or {}).get("error_ratio")
    limit = ((config or {}).get("guardrails") or _judge.GUARDRAILS).get("gateway_error_ratio", {}).get("max")
    result["figures"]["gateway_error_ratio"] = {"canary": ratio, "baseline": ratio}
    if ratio is not None and limit is not None and ratio > limit:
        result["failed"].append("gateway_error_ratio")
        result.setdefault("failure_reasons", []).append(
            "error rate through the gateway %.2f%% (at most %.2f%%)" % (100 * ratio, 100 * limit))


def message(result):
    """One line: the verdict, the judgement of each metric (its shift and interval), and the acceptance length as a
    diagnostic."""
    hosts = "canary %s against %s" % (",".join(sorted(result["canary_hosts"])) or "none",
                                      ",".join(sorted(result["baseline_hosts"])) or "no other host")
    window = " over %s s" % result["window_s"] if result.get("window_s") is not None else ""
    source = " (%s)" % result["source"] if result.get("source") else ""
    accept = (result["figures"].get("accept_length") or {}).get("canary")
    diagnostic = "; acceptance length %.2f (a diagnostic, not judged)" % accept if accept is not None else ""
    if result["verdict"] == "fail":
        return "the canary failed, %s%s%s: %s%s" % (hosts, window, source, "; ".join(
            result.get("failure_reasons") or result["failed"]), diagnostic)
    if result["verdict"] == "inconclusive":
        return "the canary is inconclusive, %s%s%s: %s" % (hosts, window, source, "; ".join(result["inconclusive"]))
    judged = "; ".join(line.split(": ", 1)[1] for line in result["judgement"]) or "no figures"
    return "the canary passed, %s%s%s: %s%s" % (hosts, window, source, judged, diagnostic)


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
            # The metrics that failed (names; the fixed-threshold canary before the judge kept {metric: ...}).
            "failed": [f.get("metric") if isinstance(f, dict) else f for f in result.get("failed") or []],
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


def verdict(observed, canary_hosts, baseline_hosts, settings=None, min_requests=10, on_inconclusive="hold"):
    """The canary's verdict over the observed window (judge) and what the rollout does (decide)."""
    result = judge(dict(observed or {}), list(canary_hosts or []), list(baseline_hosts or []), settings,
                   int(min_requests))
    result["notes"] = list((observed or {}).get("notes") or [])
    if result["notes"]:
        result["message"] += " (%s)" % "; ".join(result["notes"])
    return decide(result, on_inconclusive)
