"""The day-two verdict (plugin_utils/_speculation.py): engaged, degraded, off, unknown, each with its figures; the
figure at the switch; the services an action may touch (a restart once); bad settings named."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._speculation import (
    DEFAULTS,
    SpeculationSettingsError,
    act_on,
    at_switch,
    check_settings,
    configure,
    counts,
    judge,
    line,
    not_running,
)

RECORD = {"outcome": "switched", "time": "2026-12-06T10:00:00Z", "after": {"accept_length": 6.0},
          "proof": {"accept_length": 4.0}}


def window(requests, steps, length=None, tokens=None):
    """What the window read: `requests` ended, `tokens` produced (by default 160 a request), `steps` verify steps."""
    tokens = requests * 160 if tokens is None else tokens
    return {"unit": "sglang-qwen.service", "time": 1796560000.0, "metrics_problem": None, "probe": None,
            "window": {"seconds": 10.0, "requests": requests, "tokens": tokens, "verify_steps": steps,
                       "accept_length": length, "accept_length_gauge": length, "accept_rate_gauge": None}}


def probed(ok=True, steps=6, length=5.3, problem=None, tokens=32):
    evidence = window(0.0, 0.0)
    evidence["probe"] = {"ok": ok, "problem": problem, "completion_tokens": tokens if ok else 0, "latency_s": 0.1,
                         "verify_steps": steps if ok else None, "accept_length": length if ok else None}
    return evidence


def test_traffic_that_accepts_as_at_the_switch_is_engaged_with_its_figures():
    verdict = judge(window(20.0, 600.0, 5.33), RECORD, DEFAULTS)
    assert verdict["state"] == "engaged" and verdict["source"] == "traffic"
    assert (verdict["accept_length"], verdict["accept_length_at_switch"]) == (5.33, 6.0)
    assert verdict["time"] == "2026-12-06T12:26:40Z"
    assert verdict["reason"] == "600 verify step(s) over 20 request(s) in 10.0 s"
    assert line("gpu-1", verdict) == ("gpu-1: sglang-qwen.service engaged (acceptance now 5.33, at the switch 6.00; "
                                      "600 verify step(s) over 20 request(s) in 10.0 s) at 2026-12-06T12:26:40Z")


def test_requests_without_a_verify_step_or_one_token_a_step_are_off():
    verdict = judge(window(20.0, 0.0), RECORD, DEFAULTS)
    assert verdict["state"] == "off" and verdict["reason"] == "no speculative verify step over 20 request(s) in 10.0 s"
    lost = judge(window(20.0, 3180.0, 1.006), RECORD, DEFAULTS)
    assert lost["state"] == "off" and lost["reason"].startswith("3180 verify step(s) for 3180 decoded token(s) over 20")
    # 1.1 decoded tokens a step is the threshold; 1.2 is degraded against 6.0 at the switch.
    assert judge(window(20.0, 2891.0, 1.1), RECORD, DEFAULTS)["state"] == "off"
    assert judge(window(20.0, 2650.0, 1.2), RECORD, DEFAULTS)["state"] == "degraded"


def test_short_replies_are_judged_on_their_decoded_tokens():
    """SGLang counts a reply's tokens over its verify steps, the prefill's token included: weights lost, 8-token
    replies read 8/7 = 1.14 a step. Without the prefill's token, 1.0: off."""
    verdict = judge(window(20.0, 140.0, 1.14, tokens=160), RECORD, DEFAULTS)
    assert verdict["state"] == "off" and "140 verify step(s) for 140 decoded token(s)" in verdict["reason"]
    # Replies of one token ran no verify step: no evidence either way (the probe decides), never off.
    single = judge(window(20.0, 0.0, tokens=20), RECORD, DEFAULTS)
    assert single["state"] == "unknown" and single["reason"].startswith("no evidence")


def test_below_half_the_figure_at_the_switch_is_degraded():
    verdict = judge(window(20.0, 1100.0, 2.9), RECORD, DEFAULTS)
    assert verdict["state"] == "degraded"
    assert "below 0.5 of 6.00 at the switch (the speed probe after the switch)" in verdict["reason"]
    assert judge(window(20.0, 1000.0, 3.0), RECORD, DEFAULTS)["state"] == "engaged"  # exactly half
    # Without a figure at the switch, nothing to be degraded against: engaged, and the line says so.
    verdict = judge(window(20.0, 1100.0, 2.9), {}, DEFAULTS)
    assert verdict["state"] == "engaged"
    assert verdict["reason"].endswith("; no figure kept at the switch to compare with")


def test_no_traffic_falls_back_to_the_probe_compared_with_the_first_generation():
    verdict = judge(probed(), RECORD, DEFAULTS)
    assert (verdict["state"], verdict["source"], verdict["accept_length"]) == ("engaged", "probe", 5.3)
    # The probe sends the first generation's prompt: its figure is that one's, not the speed probe's.
    assert (verdict["accept_length_at_switch"], verdict["at_switch_from"]) == (
        4.0, "the first generation after the switch")
    verdict = judge(probed(steps=0, length=None), RECORD, DEFAULTS)
    assert verdict["state"] == "off" and verdict["reason"] == "no speculative verify step in one probe request"
    # Without a first generation's figure, a probe is never degraded against another prompt's.
    assert judge(probed(steps=12, length=2.7), dict(RECORD, proof=None), DEFAULTS)["state"] == "engaged"
    assert judge(probed(steps=12, length=1.9), RECORD, DEFAULTS)["state"] == "degraded"


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


def test_the_figure_at_the_switch_is_a_running_switchs():
    assert at_switch(RECORD) == (6.0, "the speed probe after the switch")
    canary = {"outcome": "switched", "after": None, "proof": {"accept_length": 4.0},
              "canary": {"figures": {"accept_length": {"canary": 5.5, "baseline": None}}}}
    assert at_switch(canary) == (5.5, "the canary window")
    assert at_switch({"outcome": "switched", "proof": {"accept_length": 4.0}}) == (
        4.0, "the first generation after the switch")
    assert at_switch({"outcome": "switched", "after": {"accept_length": 0}}) == (None, None)
    # A rollback's figures are those of settings that do not run; no record, no figure.
    assert at_switch(dict(RECORD, outcome="rolled back")) == (None, None) and at_switch(None) == (None, None)


def test_only_degraded_and_off_are_acted_on_only_when_asked_and_a_restart_once():
    verdicts = [dict(unit=u, state=s) for u, s in (("a", "engaged"), ("b", "degraded"), ("c", "off"),
                                                   ("d", "unknown"))]
    assert act_on(verdicts, "report") == []
    assert act_on(verdicts, "revert") == ["b", "c"] and act_on(verdicts, "restart") == ["b", "c"]
    assert counts(verdicts) == [("engaged", 1), ("degraded", 1), ("off", 1), ("unknown", 1)]
    # Restarted since the switch and still off: not restarted again; a revert still may.
    verdicts[2]["restarted_at"] = "2026-12-06T11:00:00Z"
    assert act_on(verdicts, "restart") == ["b"] and act_on(verdicts, "revert") == ["b", "c"]
    restarted = dict(RECORD, restarted={"time": "2026-12-06T11:00:00Z"})
    assert judge(window(20.0, 0.0), restarted, DEFAULTS)["restarted_at"] == "2026-12-06T11:00:00Z"
    # A restart before the last switch (its record is newer) does not count.
    assert judge(window(20.0, 0.0), dict(restarted, time="2026-12-06T12:00:00Z"), DEFAULTS)["restarted_at"] is None


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


@pytest.mark.parametrize("given, named", [
    ({"verify_on_degraded": "revet"}, "sglang_dflash_verify_on_degraded must be one of report, revert, restart, "
                                      "not 'revet'"),
    ({"verify_fail_when": ["degraded", False]}, "sglang_dflash_verify_fail_when may list engaged, degraded, off, "
                                                "unknown, not False (YAML reads an unquoted off as false: write "
                                                "\"off\")"),
    ({"verify_probe": "sometimes"}, "sglang_dflash_verify_probe must be one of no_traffic, always, never"),
    ({"verify_window": -1}, "sglang_dflash_verify_window must be a number of seconds, 0 or more, not -1"),
])
def test_bad_day_two_settings_are_named_with_what_to_set(given, named):
    with pytest.raises(SpeculationSettingsError) as raised:
        check_settings(given)
    assert str(raised.value).startswith(named)
    check_settings({"verify_on_degraded": "restart", "verify_fail_when": ["off", "unknown"], "verify_probe": "never",
                    "verify_window": 10})
