"""The experiment judge: the rank test and the shift's interval against brute force and textbook values, the
verdicts, guardrails and the decision over arms, and its calibration on simulated fleets (issue #42)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import itertools
import math
import random
import statistics
import time
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _judge
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._judge import (
    DEFAULTS,
    arm_status,
    block_intervals,
    compare,
    configure,
    decide,
    describe,
    evaluate,
    guardrails,
    hodges_lehmann,
    host_blocks,
    host_margin,
    host_spread,
    interval_of,
    mann_whitney_u,
    pairwise_differences_at,
    summary_line,
)

REPO = Path(__file__).resolve().parents[4]


def _calibration():
    path = REPO / "tests" / "bench" / "judge_calibration.py"
    spec = importlib.util.spec_from_file_location("judge_calibration", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _u(a, b):
    return sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in a for y in b)


def _splits(pool, n):
    """Every way to deal pool into a first sample of n and the rest (the permutation distribution)."""
    for chosen in itertools.combinations(range(len(pool)), n):
        yield [pool[i] for i in chosen], [pool[i] for i in range(len(pool)) if i not in chosen]


# The rank test


def test_u_and_the_exact_p_value_are_those_of_every_split_of_the_samples():
    rng = random.Random(7)
    for n, m in ((3, 4), (4, 5), (5, 5), (2, 7)):
        a = [round(rng.uniform(0, 10), 3) for _draw in range(n)]
        b = [round(rng.uniform(0, 10), 3) + 1 for _draw in range(m)]
        observed = _u(a, b)
        extreme = [abs(_u(x, y) - n * m / 2.0) >= abs(observed - n * m / 2.0) - 1e-9 for x, y in _splits(a + b, n)]
        found = mann_whitney_u(a, b)
        assert found["u"] == observed and found["method"] == "exact"
        assert found["p_value"] == pytest.approx(sum(extreme) / len(extreme), abs=1e-6)


def test_textbook_values_exact_and_normal_with_ties_and_continuity(monkeypatch):
    # scipy.stats.mannwhitneyu's documented example (Conover): U = 17, p = 0.1111 exact, 0.11135 asymptotic.
    males, females = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    assert mann_whitney_u(males, females) == {"u": 17.0, "z": 1.71464, "p_value": 0.111111, "method": "exact"}
    monkeypatch.setattr(_judge, "EXACT_MAX_SAMPLES", 0)
    assert mann_whitney_u(males, females)["p_value"] == pytest.approx(0.11134688653314041, rel=1e-5)
    monkeypatch.undo()
    # With ties: the tie-corrected normal approximation (scipy 1.17 gives 0.051025611563728604).
    ties = mann_whitney_u([1, 2, 2, 3, 3, 3, 4, 5, 6, 7, 7], [2, 3, 4, 4, 5, 5, 6, 8, 9, 9, 10, 10])
    assert ties["u"] == 34.0 and ties["method"] == "normal"
    assert ties["p_value"] == pytest.approx(0.051025611563728604, rel=1e-5)


def test_degenerate_samples():
    assert mann_whitney_u([], [1.0]) == {"u": None, "z": None, "p_value": None, "method": None}
    assert mann_whitney_u([2.0] * 30, [2.0] * 30) == {"u": 450.0, "z": None, "p_value": 1.0, "method": "normal"}
    # None, NaN and booleans are not figures.
    assert mann_whitney_u([1.0, None, float("nan"), True], [2.0])["u"] == 0.0


def test_the_exact_distribution_gives_the_textbook_critical_values():
    # Two-sided critical U at alpha 0.02 and 0.05 (Mann-Whitney tables): the interval's rank is one more.
    for (n, m), (at_98, at_95) in {(5, 5): (1, 2), (8, 8): (9, 13), (10, 10): (19, 23), (20, 20): (114, 127)}.items():
        assert _judge._interval_rank(n, m, [], 0.98) == at_98 + 1
        assert _judge._interval_rank(n, m, [], 0.95) == at_95 + 1
    assert _judge._interval_rank(4, 4, [], 0.98) == 0  # too few for 98 %: no interval
    cumulative = _judge._u_cumulative(6, 9)
    assert len(cumulative) == 55 and cumulative[-1] == pytest.approx(1.0)
    assert cumulative[0] == pytest.approx(1 / math.comb(15, 6))


# The shift and its interval


def _brute_hodges_lehmann(a, b, confidence):
    """The median of every difference, and the Moses interval at the rank the permutation distribution gives."""
    differences = sorted(x - y for x in a for y in b)
    counts = sorted(_u(x, y) for x, y in _splits(a + b, len(a)))
    tail = (1 - confidence) / 2.0
    k = sum(1 for c in range(len(differences) + 1) if sum(u <= c for u in counts) / len(counts) <= tail + 1e-12)
    return statistics.median(differences), differences[k - 1], differences[len(differences) - k]


def test_the_shift_and_its_interval_are_the_order_statistics_of_the_differences():
    rng = random.Random(11)
    for n, m in ((6, 7), (8, 6), (7, 7)):
        a = [rng.gauss(10, 2) for _draw in range(n)]
        b = [rng.gauss(9, 2) for _draw in range(m)]
        shift, low, high = _brute_hodges_lehmann(a, b, 0.95)
        found = hodges_lehmann(a, b, 0.95)
        assert found["method"] == "exact"
        assert (found["shift"], found["low"], found["high"]) == pytest.approx((shift, low, high), rel=1e-5)


def test_selecting_order_statistics_matches_sorting_all_differences(monkeypatch):
    rng = random.Random(5)
    for n, m, ties in ((90, 110, False), (150, 70, True), (64, 64, True)):
        a = [round(rng.gauss(10, 2), 1 if ties else 9) for _draw in range(n)]
        b = [round(rng.gauss(9.5, 3), 1 if ties else 9) for _draw in range(m)]
        ranks = [1, 17, n * m // 2, n * m // 2 + 1, n * m - 3, n * m]
        differences = sorted(x - y for x in a for y in b)
        monkeypatch.setattr(_judge, "SORT_MAX_PAIRS", 0)
        assert pairwise_differences_at(a, b, ranks) == [differences[r - 1] for r in ranks]
        monkeypatch.undo()
        assert pairwise_differences_at(a, b, ranks) == [differences[r - 1] for r in ranks]


def test_selection_ends_when_every_difference_is_the_same(monkeypatch):
    monkeypatch.setattr(_judge, "SORT_MAX_PAIRS", 0)
    assert pairwise_differences_at([1.0] * 100, [1.0] * 90, [1, 4500, 9000]) == [0.0, 0.0, 0.0]
    assert hodges_lehmann([2.0] * 100, [1.0] * 90) == {"shift": 1.0, "low": 1.0, "high": 1.0, "confidence": 0.98,
                                                       "method": "normal"}


def test_the_interval_covers_the_true_shift_as_often_as_it_says():
    rng = random.Random(3)
    covered = 0
    for _experiment in range(400):
        a = [rng.gauss(10.5, 1) for _draw in range(25)]
        b = [rng.gauss(10.0, 1) for _draw in range(30)]
        found = hodges_lehmann(a, b, 0.9)
        covered += found["low"] <= 0.5 <= found["high"]
    assert 0.86 <= covered / 400.0 <= 0.95


def test_two_hundred_samples_a_side_take_well_under_a_second():
    rng = random.Random(1)
    a = [rng.gauss(40, 4) for _draw in range(200)]
    b = [rng.gauss(36, 4) for _draw in range(200)]
    started = time.process_time()
    found = compare(a, b, "higher")
    assert time.process_time() - started < 0.5
    assert found["verdict"] == "better" and 0.02 < found["low_relative"] < found["shift_relative"]


# One metric: the verdict


def test_better_worse_and_no_difference_need_the_whole_interval_beyond_the_tolerance():
    rng = random.Random(2)
    control = [100 * (1 + rng.gauss(0, 0.05)) for _draw in range(60)]
    faster = [112 * (1 + rng.gauss(0, 0.05)) for _draw in range(60)]
    found = compare(faster, control, "higher")
    assert found["verdict"] == "better" and found["tolerance"] == 0.02
    assert found["low_relative"] > 0.02 and found["shift_relative"] == pytest.approx(0.12, abs=0.04)
    assert found["shift_relative"] == pytest.approx(found["shift"] / found["median_control"], rel=1e-4)
    assert compare(control, faster, "higher")["verdict"] == "worse"
    # The same shift on a latency (lower is better) reads the other way round.
    assert compare(faster, control, "lower")["verdict"] == "worse"
    assert compare(control, faster, "lower")["verdict"] == "better"
    # A clear 12 % is no difference to a tolerance of 25 % (Kayenta's), the point of a smaller one.
    assert compare(faster, control, "higher", tolerance=0.25)["verdict"] == "no difference"
    same = compare([100 * (1 + rng.gauss(0, 0.05)) for _draw in range(60)], control, "higher")
    assert same["verdict"] == "no difference" and same["low_relative"] < 0 < same["high_relative"]


def test_too_few_samples_is_a_verdict_never_a_pass():
    found = compare([1.0] * 9 + [None], [1.0] * 40, "higher")
    assert found["verdict"] == "too few samples" and (found["n_arm"], found["n_control"]) == (9, 40)
    assert found["shift"] is None and found["median_arm"] == 1.0
    assert compare([], [], "lower", min_samples=3)["median_control"] is None
    with pytest.raises(ValueError, match="better must be 'higher' or 'lower', not 'up'"):
        compare([1.0], [1.0], "up")


def test_a_control_median_of_zero_is_judged_on_the_absolute_interval():
    found = compare([0.02] * 6 + [0.03] * 6, [0.0] * 12, "lower", min_samples=10)
    assert found["shift_relative"] is None and found["verdict"] == "worse" and found["low"] > 0


def test_the_hosts_own_offsets_widen_the_interval():
    assert host_margin((1, 1), 0.02, 0.98) == pytest.approx(2.326348 * 0.02 * math.sqrt(2), rel=1e-5)
    assert host_margin((4, 4), 0.02) == pytest.approx(host_margin((1, 1), 0.02) / 2, rel=1e-5)
    assert host_margin(None, 0.02) == 0.0 and host_margin((2, 2), None) == 0.0
    rng = random.Random(4)
    arm = [104 * (1 + rng.gauss(0, 0.03)) for _draw in range(80)]
    control = [100 * (1 + rng.gauss(0, 0.03)) for _draw in range(80)]
    pooled = compare(arm, control, "higher")
    one_host_each = compare(arm, control, "higher", hosts=(1, 1), spread=0.02)
    assert pooled["verdict"] == "better" and one_host_each["verdict"] == "no difference"
    assert one_host_each["shift"] == pooled["shift"] and one_host_each["low"] < pooled["low"]
    gap = (pooled["shift_relative"] - pooled["low_relative"], one_host_each["host_margin"])
    assert one_host_each["shift_relative"] - one_host_each["low_relative"] == pytest.approx(math.hypot(*gap), rel=1e-3)


def test_the_spread_of_hosts_is_estimated_from_hosts_serving_the_same_setting():
    rng = random.Random(8)
    sides = []
    for _side in range(3):
        hosts = {}
        for host in range(8):
            level = 100 * (1 + rng.gauss(0, 0.05))
            hosts[host] = [level * (1 + rng.gauss(0, 0.05)) for _draw in range(40)]
        sides.append(hosts)
    assert host_spread(sides) == pytest.approx(0.05, abs=0.015)
    assert host_spread([{"n1": [1.0, 2.0]}, {"n2": [1.0, 2.0]}]) is None  # one host a side: nothing to see
    assert host_spread([{"n1": [1.0, 1.1], "n2": [1.0, 1.1]}]) == 0.0


# Interval samples


def sample(host, at, running=12, **figures):
    return dict({"host": host, "at": at, "running": running}, **figures)


def test_blocks_average_a_host_s_consecutive_intervals():
    samples = [sample("n1", t, running=t, decode_per_request=float(t)) for t in (30, 10, 20, 40, 50, 60, 70)]
    samples += [sample("n2", 5, decode_per_request=None), sample("n2", 10, decode_per_request=4.0),
                sample("n3", 5, decode_per_request=9.0)]
    found = host_blocks(samples, "decode_per_request", ["n1", "n2"], 3)
    assert found == {"values": [20.0, 50.0], "running": [20.0, 50.0], "by_host": {"n1": [20.0, 50.0]}}
    assert host_blocks(samples, "decode_per_request", ["n2"], 1)["values"] == [4.0]
    unknown_load = host_blocks([sample("n1", 1, running=None, itl_p50=0.01)], "itl_p50", ["n1"])
    assert unknown_load["running"] == [None]


def test_the_interval_and_the_block_length():
    assert interval_of([sample("n1", t) for t in (10, 15, 20, 30)] + [sample("n2", 12)]) == 5.0
    assert interval_of([sample("n1", None)]) is None
    assert [block_intervals(15, s) for s in (5, 4, 10, 15, 20, None)] == [3, 4, 2, 1, 1, 1]
    assert block_intervals(0, 5) == 1


# Guardrails


def test_a_broken_guardrail_names_the_arm_the_host_the_figure_and_the_limit():
    samples = [sample("a1", 5, abort_ratio=0.0, ttft_p99=0.5), sample("a1", 10, abort_ratio=0.025, ttft_p99=0.6),
               sample("b1", 5, abort_ratio=0.0, ttft_p99=12.5, gateway_error_ratio=0.0),
               sample("c1", 5, abort_ratio=0.5)]  # the control is not an arm: never failed here
    arms = [{"name": "A", "hosts": ["a1"]}, {"name": "B", "hosts": ["b1"]}, {"name": "C", "hosts": ["c2"]}]
    found = guardrails(samples, arms)
    assert found["failed"] == ["A", "B"]
    assert found["breaches"]["A"] == [{"metric": "abort_ratio", "label": "aborted requests", "value": 0.025,
                                       "limit": 0.01, "bound": "max", "at": 10, "intervals": 1, "arm": "A",
                                       "host": "a1"}]
    assert found["reasons"] == {
        "A": "broke a guardrail: aborted requests 2.50 % on a1 at 10 (at most 1.00 %)",
        "B": "broke a guardrail: time to first token p99 12.50 s on b1 at 5 (at most 10.00 s)"}


def test_guardrails_over_consecutive_intervals_and_an_acceptance_floor():
    spikes = [sample("a1", t, abort_ratio=r, accept_length=a)
              for t, r, a in ((5, 0.2, 4.0), (10, 0.0, 1.5), (15, 0.2, None), (20, 0.3, 1.2))]
    arms = [{"name": "A", "hosts": ["a1"]}]
    assert guardrails(spikes, arms)["failed"] == ["A"]  # at once, by default
    limits = {"abort_ratio": {"max": 0.01, "intervals": 2}, "accept_length": {"min": None, "intervals": 1}}
    twice = guardrails(spikes, arms, limits)["breaches"]["A"]
    assert [(b["metric"], b["at"], b["intervals"]) for b in twice] == [("abort_ratio", 10 + 10, 2)]
    floor = guardrails(spikes, arms, {"accept_length": {"min": 2.0, "intervals": 1}})
    assert floor["reasons"]["A"] == "broke a guardrail: acceptance length 1.50 on a1 at 10 (at least 2.00)"
    # An interval without the figure neither breaks a run nor ends it.
    assert guardrails(spikes, arms, {"accept_length": {"min": 2.0, "intervals": 2}})["breaches"]["A"][0]["at"] == 20
    assert guardrails(spikes, arms, {"accept_length": {"min": 2.0, "intervals": 3}})["failed"] == []


# The decision over arms


def figure(verdict, shift=0.0, low=-0.01, high=0.01, better="higher", tolerance=0.02, n=(30, 30)):
    return {"better": better, "confidence": 0.98, "tolerance": tolerance, "min_samples": 10, "n_arm": n[0],
            "n_control": n[1], "shift_relative": shift, "low_relative": low, "high_relative": high,
            "shift": shift, "low": low, "high": high, "verdict": verdict}


BETTER = figure("better", 0.3, 0.25, 0.35)
SAME = figure("no difference", 0.01, -0.02, 0.04)
FEW = figure("too few samples", n=(6, 30))


def test_the_arm_that_beats_the_control_with_nothing_worse_wins():
    against = {"A": {"decode_per_request": SAME, "itl_p99": SAME},
               "B": {"decode_per_request": BETTER, "itl_p99": figure("no difference", better="lower")}}
    found = decide(against, {}, None, ["A", "B"])
    assert found["outcome"] == "winner" and found["winner"] == "B" and found["roll_back"] == ["A"]
    assert found["arms"]["A"] == {"status": "no difference", "reasons": [
        "not better than the control by the tolerance (2.0 %): decode tokens/s per running request +1.0 % "
        "[-2.0 %, +4.0 %] no difference"]}
    assert found["arms"]["B"]["reasons"] == [
        "decode tokens/s per running request +30.0 % [+25.0 %, +35.0 %] better against the control, and no "
        "metric worse"]
    assert found["message"].startswith("arm B wins: arm B is the only arm that beats the control. A: no difference")


def test_faster_with_a_worse_latency_loses_and_goes_back():
    worse = figure("worse", 0.3, 0.15, 0.45, better="lower", tolerance=0.1)
    found = decide({"A": {"decode_per_request": BETTER, "ttft_p99": worse}}, {}, None, ["A"])
    assert found["arms"]["A"] == {"status": "loses", "reasons": [
        "time to first token p99 +30.0 % [+15.0 %, +45.0 %] worse"]}
    assert found["outcome"] == "keep control" and found["roll_back"] == ["A"] and found["winner"] is None
    assert found["reasons"] == ["no arm beats the control: every arm goes back"]


def test_between_two_winners_the_better_on_the_objective_else_the_first_listed():
    against = {"A": {"decode_per_request": BETTER}, "B": {"decode_per_request": BETTER}}
    b_better = {"A": {"B": {"decode_per_request": figure("worse", -0.07, -0.09, -0.05)}},
                "B": {"A": {"decode_per_request": figure("better", 0.07, 0.05, 0.09)}}}
    found = decide(against, b_better, None, ["A", "B"])
    assert found["winner"] == "B" and found["roll_back"] == ["A"]
    assert found["reasons"] == ["arm B is better than arm A: decode tokens/s per running request +7.0 % "
                                "[+5.0 %, +9.0 %] better"]
    even = {"A": {"B": {"decode_per_request": SAME}}, "B": {"A": {"decode_per_request": SAME}}}
    found = decide(against, even, None, ["A", "B"])
    assert found["winner"] == "A"
    assert found["reasons"] == [
        "arms A and B both beat the control and neither is better than the other on decode tokens/s per running "
        "request (A against B: decode tokens/s per running request +1.0 % [-2.0 %, +4.0 %] no difference): A is "
        "listed first"]
    assert decide(against, {}, None, ["B", "A"])["winner"] == "B"  # not compared: the operator's order


def test_of_three_winners_one_beaten_is_out_and_the_first_listed_of_the_rest_wins():
    against = dict((arm, {"decode_per_request": BETTER}) for arm in "ABC")
    between = {"A": {"B": {"decode_per_request": SAME}, "C": {"decode_per_request": SAME}},
               "B": {"A": {"decode_per_request": SAME},
                     "C": {"decode_per_request": figure("worse", -0.06, -0.08, -0.04)}},
               "C": {"A": {"decode_per_request": SAME},
                     "B": {"decode_per_request": figure("better", 0.06, 0.04, 0.08)}}}
    assert decide(against, between, None, ["B", "C", "A"])["winner"] == "C"
    found = decide(against, between, None, ["A", "B", "C"])
    assert found["winner"] == "A" and found["roll_back"] == ["B", "C"]
    assert [reason.split(":")[0] for reason in found["reasons"]] == [
        "arms A and B both beat the control and neither is better than the other on decode tokens/s per running "
        "request (A against B", "arms A and C both beat the control and neither is better than the other on decode "
        "tokens/s per running request (A against C"]


def test_a_failed_guardrail_goes_back_at_once_and_the_others_go_on():
    checked = {"failed": ["A"], "reasons": {"A": "broke a guardrail: aborted requests 2.50 % on a1"}}
    found = decide({"A": {"decode_per_request": BETTER}, "B": {"decode_per_request": FEW}}, {}, checked, ["A", "B"])
    assert found["outcome"] == "extend" and found["roll_back"] == ["A"]
    assert found["arms"]["A"] == {"status": "failed guardrail",
                                  "reasons": ["broke a guardrail: aborted requests 2.50 % on a1"]}
    assert found["arms"]["B"]["reasons"] == [
        "decode tokens/s per running request: too few samples (6 and 30, at least 10 each)"]


def test_too_few_samples_extends_then_holds_never_passes():
    against = {"A": {"decode_per_request": FEW}}
    assert decide(against, {}, None, ["A"])["outcome"] == "extend"
    held = decide(against, {}, None, ["A"], max_window_reached=True)
    assert held["outcome"] == "hold" and held["winner"] is None and held["roll_back"] == []
    assert held["message"].startswith("held: too few samples for arm A at the longest window: held, nothing is "
                                      "decided.")
    # A winner that must still clear a metric with too few samples waits too.
    pending = decide({"A": {"decode_per_request": BETTER, "ttft_p99": FEW}}, {}, None, ["A"])
    assert pending["outcome"] == "extend" and pending["arms"]["A"]["status"] == "too few samples"
    # At the longest window, an arm that wins goes on while another still lacks samples.
    found = decide({"A": {"decode_per_request": BETTER}, "B": {"decode_per_request": FEW}}, {}, None, ["A", "B"],
                   max_window_reached=True)
    assert found["winner"] == "A" and found["reasons"][-1] == (
        "arm B still had too few samples at the longest window")
    assert decide({}, {}, None, [])["reasons"] == ["no arm to judge: the control stays"]


def test_a_canary_may_require_no_worse_instead_of_better():
    close = figure("no difference", 0.0, -0.015, 0.015)
    assert arm_status({"decode_per_request": close})[0] == "no difference"
    assert arm_status({"decode_per_request": close}, require="not worse")[0] == "wins"
    # Absence of evidence is not enough: an interval reaching past the tolerance is no pass.
    assert arm_status({"decode_per_request": figure("no difference", 0.0, -0.08, 0.08)}, require="not worse")[0] \
        == "no difference"
    assert arm_status({"itl_p50": figure("no difference", 0.0, -0.01, 0.01, better="lower")},
                      objective="itl_p50", require="not worse")[0] == "wins"
    # The acceptance length is a diagnostic: never a reason to lose.
    assert arm_status({"decode_per_request": BETTER, "accept_length": figure("worse", -0.3, -0.4, -0.2)})[0] \
        == "wins"
    assert arm_status({}) == ("too few samples", ["no figures of decode tokens/s per running request"])


def test_lines_in_words():
    assert describe("decode_per_request", figure("better", 0.123, 0.081, 0.16)) == (
        "decode tokens/s per running request +12.3 % [+8.1 %, +16.0 %] better")
    loaded = dict(figure("better", 0.123, 0.081, 0.16), running_arm=24.0, running_control=12.2)
    assert describe("decode_per_request", loaded) == (
        "decode tokens/s per running request +12.3 % [+8.1 %, +16.0 %] better (at 24 vs 12 running requests)")
    assert describe("decode_per_request", dict(loaded, running_control=17.0)).endswith("better")
    absolute = dict(figure("worse"), shift_relative=None, shift=0.012, low=0.004, high=0.02)
    assert describe("abort_ratio", absolute) == "aborted requests +0.012 [+0.004, +0.02] (absolute) worse"
    assert summary_line("A", {"decode_per_request": BETTER, "ttft_p99": FEW}, "too few samples") == (
        "arm A (too few samples): decode tokens/s per running request +30.0 % [+25.0 %, +35.0 %] better; time to "
        "first token p99: too few samples (6 and 30, at least 10 each)")
    assert summary_line("A", {}) == "arm A: no figures"


# Settings


def test_settings_merge_and_refuse_what_is_wrong():
    merged, problem = configure({"tolerance": {"itl_p99": 0.2}, "guardrails": {"accept_length": {"min": 2.0}}})
    assert problem is None and merged["tolerance"]["itl_p99"] == 0.2 and merged["tolerance"]["ttft_p99"] == 0.1
    assert merged["guardrails"]["accept_length"] == {"min": 2.0, "intervals": 1}
    assert DEFAULTS["tolerance"]["itl_p99"] == 0.1 and DEFAULTS["guardrails"]["accept_length"]["min"] is None
    assert configure({"confidence": 1.5})[1] == "confidence must be a number from 0.5 to under 1, not 1.5"
    assert configure({"windows": 3})[1].startswith("unknown judge setting 'windows' (known: block_s, compared")
    assert configure({"require": "faster"})[1] == "require must be 'better' or 'not worse', not 'faster'"
    assert configure({"guardrails": {"abort_ratio": {"maximum": 1}}})[1] == (
        "guardrails.abort_ratio: unknown key 'maximum' (known: intervals, max, min)")
    assert configure({"guardrails": {"abort_ratio": {"intervals": 0}}})[1] == (
        "guardrails.abort_ratio.intervals must be a whole number of at least 1")
    assert configure({"tolerance": {"speed": 0.1}})[1].startswith("tolerance must map metrics")
    assert configure({"min_samples": True})[1].startswith("min_samples must be a whole number")
    assert configure({"host_spread": None, "load_band": 2})[1] is None
    assert configure({"load_band": 0.5})[1] == "load_band must be null or a number of at least 1, not 0.5"
    assert configure({"compared": ["decode_per_request", "speed"]})[1].startswith("compared must be a list")


# The whole judgement from interval samples


def fleet(rng, groups, intervals=40, interval_s=5.0, accept=None):
    """Interval samples of hosts {host: (speed factor, speculates)}, with 5 % noise."""
    samples = []
    for host, (factor, speculates) in groups.items():
        for index in range(intervals):
            speed = 40.0 * factor * (1 + rng.gauss(0, 0.05))
            samples.append(sample(host, 100 + index * interval_s, running=12 + index % 5,
                                  decode_per_request=speed, itl_p50=1 / speed, itl_p99=2.5 / speed,
                                  ttft_p99=0.4 * (1 + rng.gauss(0, 0.1)), abort_ratio=0.0,
                                  accept_length=(accept or {}).get(host, 5.0) * (1 + rng.gauss(0, 0.03))
                                  if speculates else None))
    return samples


def test_an_experiment_from_its_samples():
    rng = random.Random(12)
    samples = fleet(rng, {"c1": (1.0, False), "c2": (1.0, False), "a1": (1.5, True), "a2": (1.5, True),
                          "b1": (1.3, True), "b2": (1.3, True)}, accept={"a1": 6.0, "a2": 6.0})
    arms = [{"name": "A", "hosts": ["a1", "a2"]}, {"name": "B", "hosts": ["b1", "b2"]}]
    found = evaluate(samples, arms, ["c1", "c2"])
    assert found["outcome"] == "winner" and found["winner"] == "A" and found["roll_back"] == ["B"]
    assert (found["interval_s"], found["block_intervals"]) == (5.0, 3)
    assert list(found["against_control"]["A"]) == ["decode_per_request", "itl_p50", "itl_p99", "ttft_p99"]
    objective = found["against_control"]["A"]["decode_per_request"]
    assert (objective["n_arm"], objective["hosts_arm"], objective["hosts_control"]) == (26, 2, 2)
    assert objective["running_control"] == pytest.approx(14, abs=0.5) and objective["verdict"] == "better"
    # The acceptance length is compared between the arms that both speculate, never with this control.
    assert sorted(found["between_arms"]["A"]["B"]) == ["accept_length", "decode_per_request"]
    assert found["between_arms"]["A"]["B"]["accept_length"]["verdict"] == "better"
    assert found["lines"][0].startswith("arm A (wins): decode tokens/s per running request +49.7 % [+4")
    assert found["pair_lines"] == ["arm A against arm B: " + "; ".join(
        describe(m, c) for m, c in found["between_arms"]["A"]["B"].items())]
    assert found["pair_lines"][0].startswith("arm A against arm B: decode tokens/s per running request +1")
    assert found["host_spread"]["decode_per_request"] >= DEFAULTS["host_spread"]


def test_a_canary_is_an_experiment_of_one_arm():
    rng = random.Random(13)
    samples = fleet(rng, {"c1": (1.0, True), "c2": (1.0, True), "n1": (2.0, True)}, intervals=60)
    canary = [{"name": "canary", "hosts": ["n1"]}]
    found = evaluate(samples, canary, ["c1", "c2"], control_speculates=True)
    assert found["outcome"] == "winner" and found["winner"] == "canary" and found["between_arms"] == {"canary": {}}
    assert "accept_length" in found["against_control"]["canary"]  # a control that speculates too
    short = evaluate(samples[:10] + samples[60:70] + samples[120:130], canary, ["c1", "c2"])
    assert short["outcome"] == "extend" and short["arms"]["canary"]["status"] == "too few samples"
    assert evaluate(samples[:10] + samples[60:70] + samples[120:130], canary, ["c1", "c2"],
                    max_window_reached=True)["outcome"] == "hold"
    broken = [dict(s, abort_ratio=0.2) if s["host"] == "n1" and s["at"] == 200 else s for s in samples]
    failed = evaluate(broken, canary, ["c1", "c2"])
    assert failed["outcome"] == "keep control" and failed["arms"]["canary"]["status"] == "failed guardrail"
    with pytest.raises(ValueError, match="confidence must be"):
        evaluate(samples, canary, ["c1"], settings={"confidence": 2})
    with pytest.raises(ValueError, match="host c1 is in arm canary and in the control: a host serves one setting"):
        evaluate(samples, [{"name": "canary", "hosts": ["c1"]}], ["c1"])
    with pytest.raises(ValueError, match="every arm needs a name of its own"):
        evaluate(samples, canary + canary, ["c1"])


def test_blocks_at_very_different_loads_can_be_left_out():
    rng = random.Random(14)
    samples = fleet(rng, {"c1": (1.0, False), "a1": (1.0, True)}, intervals=60)
    for index, item in enumerate(samples):
        if item["host"] == "a1" and index % 2:
            item["running"] = 60
    kept = evaluate(samples, [{"name": "A", "hosts": ["a1"]}], ["c1"], settings={"load_band": 2.0, "block_s": 0})
    objective = kept["against_control"]["A"]["decode_per_request"]
    assert objective["left_out_for_load"] == 30 and objective["n_arm"] == 30 and objective["n_control"] == 60


# Calibration: simulated fleets (tests/bench/judge_calibration.py prints the whole table)


@pytest.fixture(scope="module")
def calibration():
    return _calibration()


def test_a_fleet_sees_a_10_percent_regression_and_no_difference_between_identical_settings(calibration):
    # 8 hosts in the arm and 8 in the control, a sample every 15 s, 120 s, 200 experiments each.
    found = calibration.rates(8, 8, 120, 15, experiments=200, seed=1)
    assert found["aa_objective"] <= 0.05 and found["aa_status"] <= 0.05
    assert found["ab_objective"] >= 0.8 and found["ab_status"] >= 0.8 and found["too_few"] == 0


def test_the_lab_s_short_windows_stay_safe_and_an_arm_of_one_host_waits(calibration):
    lab = calibration.rates(2, 2, 120, 5, experiments=200, seed=2)
    assert lab["aa_objective"] <= 0.05 and lab["aa_status"] <= 0.05 and lab["too_few"] == 0
    assert lab["ab_objective"] > 0.3  # seen, if not 8 times in 10: see the calibration's table
    assert calibration.rates(1, 2, 120, 5, experiments=5, seed=2)["too_few"] == 1.0  # 8 blocks of 15 s


def test_pooled_intervals_would_call_differences_that_are_not_there(calibration):
    naive = {"block_s": 0, "host_spread": None, "tolerance": {"decode_per_request": 0.0}}
    pooled = calibration.rates(2, 2, 300, 5, experiments=200, seed=3, settings=naive, kinds=("aa",))
    judged = calibration.rates(2, 2, 300, 5, experiments=200, seed=3, kinds=("aa",))
    assert pooled["aa_objective"] > 0.1 and judged["aa_objective"] <= 0.05
