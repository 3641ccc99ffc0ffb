"""The canary's verdict: canary hosts against the hosts not yet switched, over the same window."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._canary import (
    DEFAULT_THRESHOLDS,
    canary_count,
    decide,
    judge,
    refusal,
    source_line,
    stage_failed,
    stopped,
    thresholds,
)

HOSTS = ["n1", "n2", "n3", "n4"]


def figures(per_request, itl, ttft=0.3, accept=None, requests=40, aborted=0):
    done = requests + aborted
    return {"tokens_per_s_per_request": per_request, "itl_p50_s": itl / 2 if itl else None, "itl_p99_s": itl,
            "ttft_p99_s": ttft,
            "accept_length": accept, "requests": requests, "aborted": aborted,
            "abort_ratio": round(aborted / float(done), 4) if done else None}


def test_canary_count_from_a_count_or_a_percentage():
    assert canary_count(None, HOSTS) == (0, None)
    assert canary_count(1, HOSTS) == (1, None)
    assert canary_count("25%", HOSTS) == (1, None)
    assert canary_count("50%", HOSTS) == (2, None)
    assert canary_count("10%", HOSTS) == (1, None)  # as Ansible sizes serial batches: down, at least 1
    assert canary_count(9, HOSTS) == (4, None)
    assert canary_count("-1", HOSTS)[1].startswith("sglang_dflash_canary must be a host count (2)")
    assert canary_count("150%", HOSTS)[0] == 0 and canary_count("lots", HOSTS)[1]


def test_thresholds_merge_and_refuse_unknown_names():
    merged, problem = thresholds({"itl_p99": {"max": 0.05}})
    assert problem is None and merged["itl_p99"] == {"max": 0.05, "max_ratio": 1.25}
    assert DEFAULT_THRESHOLDS["itl_p99"]["max"] is None  # the defaults are not changed
    assert thresholds({"itl": {}})[1].startswith("sglang_dflash_canary_thresholds: unknown metric 'itl'")
    assert "unknown key 'maximum'" in thresholds({"itl_p99": {"maximum": 1}})[1]
    assert thresholds({"itl_p99": {"max": "fast"}})[1] == \
        "sglang_dflash_canary_thresholds.itl_p99.max must be a number or null"


def test_a_good_drafter_passes_with_the_figures_side_by_side():
    data = {"n1": figures(330.0, 0.004, accept=6.3), "n2": figures(85.0, 0.012), "n3": figures(87.0, 0.012)}
    result = judge(data, ["n1"], ["n2", "n3"], probe_accept={"n1": 6.4}, gateway={"error_ratio": 0.0},
                   source="scrape", window_s=40)
    assert result["verdict"] == "pass", result
    assert result["figures"]["decode_per_request"] == {"canary": 330.0, "baseline": 86.0}
    assert result["figures"]["accept_length"] == {"canary": 6.3, "baseline": 6.4}
    assert result["message"].startswith("the canary passed, canary n1 against n2,n3 over 40 s (scrape): "
                                        "decode tokens/s per running request 330.00 vs 86.00")


def test_slower_under_load_fails_naming_each_metric_with_both_figures():
    data = {"n1": figures(47.0, 0.021, accept=5.0), "n2": figures(88.0, 0.0115), "n3": figures(86.0, 0.0115)}
    result = judge(data, ["n1"], ["n2", "n3"], probe_accept={"n1": 4.9}, window_s=40)
    assert result["verdict"] == "fail"
    assert [f["metric"] for f in result["failed"]] == ["decode_per_request", "itl_p99"]
    assert result["message"] == (
        "the canary failed, canary n1 against n2,n3 over 40 s: decode tokens/s per running request 47.00 "
        "(baseline 87.00): must be >= 0.90x the baseline; inter-token latency p99 21.0 ms (baseline 11.5 ms): "
        "must be <= 1.25x the baseline")


def test_another_language_lowers_the_acceptance_length_and_the_gate_names_it():
    data = {"n1": figures(200.0, 0.005, accept=3.3), "n2": figures(88.0, 0.0115)}
    result = judge(data, ["n1"], ["n2"], probe_accept={"n1": 6.4})
    assert result["verdict"] == "fail"
    assert result["failed"][0]["metric"] == "accept_length"
    assert "acceptance length (sglang:spec_accept_length) 3.30 (baseline 6.40): must be >= 0.75x the baseline" \
        in result["message"]
    # An absolute floor too, whatever the reference.
    low = judge({"n1": figures(200.0, 0.005, accept=1.6), "n2": figures(88.0, 0.0115)}, ["n1"], ["n2"])
    assert "must be >= 2.00" in low["message"]


def test_aborts_and_gateway_errors_are_ratios():
    data = {"n1": figures(300.0, 0.004, accept=6.0, aborted=3), "n2": figures(88.0, 0.0115)}
    result = judge(data, ["n1"], ["n2"], gateway={"error_ratio": 0.05})
    assert [f["metric"] for f in result["failed"]] == ["abort_ratio", "gateway_error_ratio"]
    assert "aborted requests 6.98% (baseline 0.00%): must be <= 1.00%, must be at most 0.50% above the baseline" \
        in result["message"]


def test_no_traffic_is_inconclusive_never_a_pass():
    data = {"n1": figures(None, None, ttft=None, requests=0), "n2": figures(None, None, ttft=None, requests=0)}
    result = judge(data, ["n1"], ["n2"], window_s=30)
    assert result["verdict"] == "inconclusive"
    assert result["message"] == (
        "the canary is inconclusive, canary n1 against n2 over 30 s: canary host n1 served 0 request(s) in the "
        "window, fewer than 10 (no traffic, or no series); baseline host n2 served 0 request(s) in the window, "
        "fewer than 10 (no traffic, or no series)")


def test_a_source_that_does_not_answer_or_no_baseline_is_inconclusive():
    result = judge({}, ["n1"], ["n2"], problem="Prometheus http://127.0.0.1:9 cannot be reached (refused)")
    assert result["verdict"] == "inconclusive" and result["inconclusive"] == [
        "Prometheus http://127.0.0.1:9 cannot be reached (refused)"]
    alone = judge({"n1": figures(300.0, 0.004, accept=6.0)}, ["n1"], [])
    assert alone["verdict"] == "inconclusive" and "no host is left out of the canary" in alone["message"]


def test_a_speculating_baseline_is_the_acceptance_reference():
    data = {"n1": figures(300.0, 0.004, accept=3.0), "n2": figures(200.0, 0.006, accept=2.6)}
    result = judge(data, ["n1"], ["n2"], probe_accept={"n1": 6.4})
    assert result["figures"]["accept_length"] == {"canary": 3.0, "baseline": 2.6} and result["verdict"] == "pass"


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
