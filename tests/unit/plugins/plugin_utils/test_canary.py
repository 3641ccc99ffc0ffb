"""The canary's verdict: canary hosts against the hosts not yet switched, over the same window."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._canary import (
    canary_count,
    decide,
    judge,
    record,
    refusal,
    source_line,
    stage_failed,
    stopped,
    verdict,
)

HOSTS = ["n1", "n2", "n3", "n4"]
# The lab's judge: 2-second intervals are its samples (block_s 2), its hosts are alike (host_spread 0.005).
LAB = {"block_s": 2, "host_spread": 0.005}


def observed(speeds, itl=None, accept=None, seconds=40, interval=2, requests=40, aborts=None, noise=0.03, seed=1,
             ttft=0.3, problems=None, gateway=None):
    """What sglang_live_metrics returns over a window: each host's window figures and one sample per interval, its
    decode speed per request drawn around speeds[host] (a few percent of noise), the other figures as given."""
    rng = random.Random(seed)
    samples, figures = {}, {}
    for host, speed in speeds.items():
        samples[host] = [{"host": host, "at": 1000.0 + interval * i, "running": 4,
                          "decode_per_request": None if speed is None else rng.gauss(speed, noise * speed),
                          "itl_p50": (itl or {}).get(host, 10.0 / speed if speed else None),
                          "itl_p99": (itl or {}).get(host, 20.0 / speed if speed else None),
                          "ttft_p99": ttft, "accept_length": (accept or {}).get(host),
                          "abort_ratio": (aborts or {}).get(host, 0.0), "requests": 2}
                         for i in range(1, seconds // interval + 1)]
        figures[host] = {"requests": requests if speed is not None else 0}
    return {"source": "scrape", "figures": figures, "samples": samples, "window_s": seconds, "interval_s": interval,
            "problems": problems or [], "gateway": gateway}


def test_canary_count_from_a_count_or_a_percentage():
    assert canary_count(None, HOSTS) == (0, None)
    assert canary_count(1, HOSTS) == (1, None)
    assert canary_count("25%", HOSTS) == (1, None)
    assert canary_count("50%", HOSTS) == (2, None)
    assert canary_count("10%", HOSTS) == (1, None)  # as Ansible sizes serial batches: down, at least 1
    assert canary_count(9, HOSTS) == (4, None)
    assert canary_count("-1", HOSTS)[1].startswith("sglang_dflash_canary must be a host count (2)")
    assert canary_count("150%", HOSTS)[0] == 0 and canary_count("lots", HOSTS)[1]


def test_a_good_drafter_passes_with_the_shift_and_its_interval():
    window = observed({"n1": 330.0, "n2": 85.0, "n3": 87.0}, accept={"n1": 6.3})
    result = judge(window, ["n1"], ["n2", "n3"], LAB)
    assert result["verdict"] == "pass", result["message"]
    decode = result["figures"]["decode_per_request"]
    assert decode["verdict"] == "better" and decode["canary"] > 3 * decode["baseline"]
    assert decode["low_relative"] > 2.5 and result["figures"]["accept_length"] == {"canary": 6.3, "baseline": None}
    assert result["message"].startswith("the canary passed, canary n1 against n2,n3 over 40 s (scrape): decode "
                                        "tokens/s per running request +")
    assert result["message"].endswith("; acceptance length 6.30 (a diagnostic, not judged)")


def test_slower_under_load_fails_naming_the_objective_with_its_interval():
    result = judge(observed({"n1": 47.0, "n2": 88.0, "n3": 86.0}), ["n1"], ["n2", "n3"], LAB)
    assert result["verdict"] == "fail" and result["failed"][0] == "decode_per_request"
    assert result["message"].startswith("the canary failed, canary n1 against n2,n3 over 40 s (scrape): ")
    assert "decode tokens/s per running request -4" in result["message"] and "worse" in result["message"]


def test_the_record_of_a_failed_canary_names_its_failed_metrics():
    """What the host keeps (and the revert records): the verdict's failed metrics by name."""
    result = verdict(observed({"n1": 47.0, "n2": 88.0, "n3": 86.0}), ["n1"], ["n2", "n3"], LAB)
    kept = record(result)
    assert kept["verdict"] == "fail"
    assert kept["failed"] == result["failed"] == ["decode_per_request", "itl_p50", "itl_p99"]
    assert kept["canary_hosts"] == ["n1"] and kept["baseline_hosts"] == ["n2", "n3"]
    assert record(None) is None and record({"verdict": None}) is None


def test_a_faster_drafter_on_another_language_passes_its_acceptance_is_not_a_gate():
    """The seed's false rollback: the drafter is faster on every prompt, its acceptance lower on Chinese traffic
    than on the probe's English prompts. The acceptance is shown, never judged against a probe's."""
    result = judge(observed({"n1": 110.0, "n2": 88.0}, accept={"n1": 1.93}), ["n1"], ["n2"], LAB)
    assert result["verdict"] == "pass", result["message"]
    assert "acceptance length 1.93 (a diagnostic, not judged)" in result["message"]


def test_a_regression_of_a_few_percent_is_not_a_pass():
    # 8 % slower with 3 % noise over 20 s: the interval of the shift lies beyond the tolerance.
    close = judge(observed({"n1": 81.0, "n2": 88.0}, seconds=20), ["n1"], ["n2"], LAB)
    assert close["verdict"] == "fail" and "decode_per_request" in close["failed"]


def test_guardrails_fail_the_canary_at_once():
    aborts = judge(observed({"n1": 300.0, "n2": 88.0}, aborts={"n1": 0.05}), ["n1"], ["n2"], LAB)
    assert aborts["verdict"] == "fail" and "abort_ratio" in aborts["failed"]
    assert "aborted requests 5.00 % on n1" in aborts["message"]
    errors = judge(observed({"n1": 300.0, "n2": 88.0}, gateway={"error_ratio": 0.05}), ["n1"], ["n2"], LAB)
    assert errors["failed"] == ["gateway_error_ratio"]
    assert "error rate through the gateway 5.00% (at most 1.00%)" in errors["message"]


def test_no_traffic_is_inconclusive_never_a_pass():
    result = judge(observed({"n1": None, "n2": None}, seconds=30), ["n1"], ["n2"], LAB)
    assert result["verdict"] == "inconclusive"
    assert result["message"] == (
        "the canary is inconclusive, canary n1 against n2 over 30 s (scrape): canary host n1 served 0 request(s) in "
        "the window, fewer than 10 (no traffic, or no series); baseline host n2 served 0 request(s) in the window, "
        "fewer than 10 (no traffic, or no series)")
    short = judge(observed({"n1": 300.0, "n2": 88.0}, seconds=10), ["n1"], ["n2"], LAB)
    assert short["verdict"] == "inconclusive" and "too few samples" in short["message"]


def test_a_metric_no_server_reports_is_left_out_not_waited_for():
    window = observed({"n1": 300.0, "n2": 88.0})
    for samples in window["samples"].values():
        for sample in samples:
            sample.update(itl_p50=None, itl_p99=None)
    result = judge(window, ["n1"], ["n2"], LAB)
    assert result["verdict"] == "pass" and "itl_p99" not in result["figures"]


def test_a_source_that_does_not_answer_a_wrong_setting_or_no_baseline_is_inconclusive():
    result = judge(observed({}, problems=["Prometheus http://127.0.0.1:9 cannot be reached (refused)"]), ["n1"],
                   ["n2"])
    assert result["verdict"] == "inconclusive" and result["inconclusive"] == [
        "Prometheus http://127.0.0.1:9 cannot be reached (refused)"]
    alone = judge(observed({"n1": 300.0}), ["n1"], [], LAB)
    assert alone["verdict"] == "inconclusive" and "no host is left out of the canary" in alone["message"]
    wrong = judge(observed({"n1": 300.0, "n2": 88.0}), ["n1"], ["n2"], {"confidence": 2})
    assert wrong["verdict"] == "inconclusive" and "sglang_dflash_judge: " in wrong["message"]


def test_the_verdict_says_what_the_rollout_does_with_the_sources_notes():
    result = verdict(dict(observed({"n1": 300.0, "n2": 88.0}), notes=["Prometheus down; read each host"]),
                     ["n1"], ["n2"], LAB)
    assert result["action"] == "continue" and result["message"].endswith("(Prometheus down; read each host)")


def test_what_the_rollout_does_and_says():
    fail = decide({"verdict": "fail", "message": "the canary failed"})
    assert fail["action"] == "rollback" and fail["message"].endswith("no other host was touched.")
    held = decide({"verdict": "inconclusive", "message": "the canary is inconclusive"}, "hold")
    assert held["action"] == "hold" and "Held (sglang_dflash_canary_on_inconclusive=hold)" in held["message"]
    assert decide({"verdict": "inconclusive", "message": "x"}, "rollback")["action"] == "rollback"
    assert decide({"verdict": "pass", "message": "x"})["action"] == "continue"
    assert decide({"verdict": "inconclusive", "message": "x"}, "wait")["message"].startswith(
        "sglang_dflash_canary_on_inconclusive must be hold or rollback, not 'wait'")
    assert stopped({"n1": {"action": "continue"}, "n2": None}) == ""
    assert stopped({"n1": {"action": "rollback", "message": "m"}}) == \
        "not started: the canary stopped the rollout (m)"


def test_a_canary_refused_names_the_host_the_problem_and_what_to_set():
    assert refusal(None, {"problems": []}, "n1") == {"problem": "", "reason": ""}
    # The check of the source was skipped (the settings were wrong): a skipped result has no problems.
    assert refusal(None, {"skipped": True}, "n1") == {"problem": "", "reason": ""}
    down = refusal(None, {"problems": ["Prometheus http://p:9090 cannot be reached (refused)", "no series"]}, "n1")
    assert down["problem"] == "Prometheus http://p:9090 cannot be reached (refused); no series"
    assert down["reason"] == (
        "host n1: cannot start the canary: Prometheus http://p:9090 cannot be reached (refused); no series (set "
        "sglang_dflash_prometheus_url to one that answers, or sglang_dflash_canary_fallback_to_scrape=true). "
        "Nothing was changed on this host.")
    # Wrong settings come first, with their own advice: the source is not the problem.
    count_problem = canary_count("ten", HOSTS)[1]
    wrong = refusal(count_problem, {"problems": ["no series"]}, "n2")
    assert wrong["problem"] == count_problem
    assert wrong["reason"].startswith("host n2: cannot start the canary: sglang_dflash_canary must be a host count")
    assert "(set sglang_dflash_canary to a host count or a percentage)" in wrong["reason"]
    assert "prometheus_url" not in wrong["reason"]


def test_the_source_line_names_the_canary_hosts_the_source_and_its_notes():
    assert source_line(["n1", "n2"], {"source": "prometheus", "notes": []}) == "canary n1,n2: figures from prometheus"
    assert source_line(["n1"], {"source": "scrape", "notes": ["Prometheus down; read each host", "no gateway"]}) == (
        "canary n1: figures from scrape (Prometheus down; read each host; no gateway)")


def test_a_failed_canary_stage_holds_the_rollout_with_the_verdict_then_the_failure():
    verdict = {"verdict": "fail", "action": "rollback", "message": "the canary failed"}
    failed = stage_failed(verdict, "previous server not healthy")
    assert failed["reason"] == "the canary failed; then previous server not healthy"
    assert failed["result"] == {"verdict": "fail", "action": "hold", "message": "the canary failed"}
    assert verdict["action"] == "rollback"  # the host's result is not changed in place
    assert stage_failed({}, "") == {"reason": "unknown failure", "result": {"action": "hold"}}
    assert stopped({"n1": stage_failed(None, "boom")["result"]}).startswith("not started: the canary stopped")
