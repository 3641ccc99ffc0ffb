"""The day-two verdict (plugin_utils/_speculation.py): engaged, degraded, off, unknown, each with its figures; the
figure at the switch; the services an action may touch; bad thresholds named."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._speculation import (
    DEFAULTS,
    SpeculationSettingsError,
    act_on,
    at_switch,
    configure,
    counts,
    judge,
    line,
    not_running,
)

RECORD = {"outcome": "switched", "after": {"accept_length": 6.0}}


def window(requests, steps, length=None, tokens=None):
    return {"unit": "sglang-qwen.service", "time": 1796560000.0, "metrics_problem": None, "probe": None,
            "window": {"seconds": 10.0, "requests": requests, "tokens": tokens, "verify_steps": steps,
                       "accept_length": length, "accept_length_gauge": length, "accept_rate_gauge": None}}


def probed(ok=True, steps=6, length=5.3, problem=None):
    evidence = window(0.0, 0.0)
    evidence["probe"] = {"ok": ok, "problem": problem, "completion_tokens": 32 if ok else 0, "latency_s": 0.1,
                         "verify_steps": steps if ok else None, "accept_length": length if ok else None}
    return evidence


def test_traffic_that_accepts_as_at_the_switch_is_engaged_with_its_figures():
    verdict = judge(window(20.0, 600.0, 5.8), RECORD, DEFAULTS)
    assert verdict["state"] == "engaged" and verdict["source"] == "traffic"
    assert (verdict["accept_length"], verdict["accept_length_at_switch"]) == (5.8, 6.0)
    assert verdict["time"] == "2026-12-06T12:26:40Z"
    assert verdict["reason"] == "600 verify step(s) over 20 request(s) in 10.0 s"
    assert line("gpu-1", verdict) == ("gpu-1: sglang-qwen.service engaged (acceptance now 5.80, at the switch 6.00; "
                                      "600 verify step(s) over 20 request(s) in 10.0 s) at 2026-12-06T12:26:40Z")


def test_requests_without_a_verify_step_or_one_token_a_step_are_off():
    verdict = judge(window(20.0, 0.0), RECORD, DEFAULTS)
    assert verdict["state"] == "off" and verdict["reason"] == "no speculative verify step over 20 request(s) in 10.0 s"
    lost = judge(window(20.0, 3200.0, 1.0), RECORD, DEFAULTS)
    assert lost["state"] == "off" and lost["reason"].startswith("acceptance length 1.00 over 20 request(s)")
    assert judge(window(20.0, 2900.0, 1.1), RECORD, DEFAULTS)["state"] == "off"  # at the threshold
    assert judge(window(20.0, 2600.0, 1.2), RECORD, DEFAULTS)["state"] == "degraded"


def test_below_half_the_figure_at_the_switch_is_degraded():
    verdict = judge(window(20.0, 1100.0, 2.9), RECORD, DEFAULTS)
    assert verdict["state"] == "degraded"
    assert "below 0.5 of 6.00 at the switch (the speed probe after the switch)" in verdict["reason"]
    assert judge(window(20.0, 1000.0, 3.0), RECORD, DEFAULTS)["state"] == "engaged"  # exactly half
    # Without a figure at the switch, nothing to be degraded against: engaged, and the line says so.
    verdict = judge(window(20.0, 1100.0, 2.9), {}, DEFAULTS)
    assert verdict["state"] == "engaged"
    assert verdict["reason"].endswith("; no figure kept at the switch to compare with")


def test_no_traffic_falls_back_to_the_probe():
    verdict = judge(probed(), RECORD, DEFAULTS)
    assert (verdict["state"], verdict["source"], verdict["accept_length"]) == ("engaged", "probe", 5.3)
    verdict = judge(probed(steps=0, length=None), RECORD, DEFAULTS)
    assert verdict["state"] == "off" and verdict["reason"] == "no speculative verify step in one probe request"


def test_no_traffic_and_a_refused_probe_is_unknown_never_engaged():
    verdict = judge(probed(ok=False, problem="POST /generate answered 500: boom"), RECORD, DEFAULTS)
    assert verdict["state"] == "unknown" and verdict["source"] is None
    assert verdict["reason"] == ("no evidence: 0 request(s) ended in the 10.0-s window; the probe request failed: "
                                 "POST /generate answered 500: boom")
    # /metrics unreadable and the probe never sent (probe=never).
    evidence = window(0.0, 0.0)
    evidence.update(window=None, metrics_problem="GET http://127.0.0.1:30001/metrics: HTTP 404")
    verdict = judge(evidence, RECORD, DEFAULTS)
    assert verdict["state"] == "unknown" and verdict["reason"].endswith("HTTP 404; no probe request was sent")


def test_requests_without_a_verify_counter_do_not_count_as_evidence():
    evidence = window(20.0, None)
    evidence["probe"] = probed(ok=False, problem="timeout")["probe"]
    verdict = judge(evidence, RECORD, DEFAULTS)
    assert verdict["state"] == "unknown"
    assert "20 request(s) ended in the 10.0-s window and the server counts no verify step" in verdict["reason"]


def test_the_figure_at_the_switch_comes_from_the_probe_then_the_canary_then_the_first_generation():
    assert at_switch(RECORD) == (6.0, "the speed probe after the switch")
    canary = {"after": None, "canary": {"figures": {"accept_length": {"canary": 5.5, "baseline": None}}},
              "proof": {"accept_length": 4.0}}
    assert at_switch(canary) == (5.5, "the canary window")
    assert at_switch({"proof": {"accept_length": 4.0}}) == (4.0, "the first generation after the switch")
    assert at_switch({"after": {"accept_length": 0}}) == (None, None) and at_switch(None) == (None, None)


def test_only_degraded_and_off_are_acted_on_and_only_when_asked():
    verdicts = [dict(unit=u, state=s) for u, s in (("a", "engaged"), ("b", "degraded"), ("c", "off"),
                                                   ("d", "unknown"))]
    assert act_on(verdicts, "report") == []
    assert act_on(verdicts, "revert") == ["b", "c"] and act_on(verdicts, "restart") == ["b", "c"]
    assert counts(verdicts) == [("engaged", 1), ("degraded", 1), ("off", 1), ("unknown", 1)]


def test_a_switched_service_that_does_not_run_is_unknown():
    verdict = not_running("sglang-qwen.service", "failed", RECORD, 1796560000.0)
    assert verdict["state"] == "unknown" and verdict["reason"] == "the service is not running (ActiveState=failed)"
    assert line("gpu-1", verdict) == ("gpu-1: sglang-qwen.service unknown (acceptance now -, at the switch 6.00; the "
                                      "service is not running (ActiveState=failed)) at 2026-12-06T12:26:40Z")


@pytest.mark.parametrize("given, named", [
    ({"degraded_share": 1.5}, "degraded_share must be a number between 0 and 1"),
    ({"off_accept_length": 0.5}, "off_accept_length must be a number from 1 to 2"),
    ({"min_requests": 0}, "min_requests must be a whole number of at least 1"),
    ({"min_request": 1}, "has no key 'min_request'; the keys are degraded_share, min_requests, off_accept_length"),
])
def test_bad_thresholds_are_named_with_what_to_set(given, named):
    with pytest.raises(SpeculationSettingsError) as raised:
        configure(given)
    assert str(raised.value).startswith("sglang_dflash_verify_thresholds") and named in str(raised.value)
    assert configure({"degraded_share": 0.7})["degraded_share"] == 0.7
