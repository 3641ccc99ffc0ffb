"""The speed gates of a switch and their summary line (plugin_utils/_speed_gates.py)."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._speed_gates import (
    agreement,
    output_problems,
    summary_line,
    verdict,
)

BEFORE = {"measured": True, "tokens_per_s": 200.0, "accept_length": 2.6, "latency_s_median": 0.64}
GOOD = {"measured": True, "tokens_per_s": 480.0, "accept_length": 6.1, "latency_s_median": 0.27}
MISMATCHED = {"measured": True, "tokens_per_s": 120.0, "accept_length": 1.6, "latency_s_median": 1.07}


def test_a_good_drafter_passes_every_gate():
    v = verdict(GOOD, BEFORE, min_accept_length=4, min_speedup=1.2)
    assert v == {"passed": True, "speedup": 2.4, "problems": [], "notes": [], "speedups": {}, "load_concurrency": None,
                 "speedup_at_load": None}


def test_a_mismatched_drafter_fails_both_gates_with_the_numbers():
    v = verdict(MISMATCHED, BEFORE, min_accept_length=4, min_speedup=1.0)
    assert not v["passed"] and v["speedup"] == 0.6
    assert v["problems"][0].startswith("average acceptance length 1.60 is below sglang_dflash_min_accept_length 4")
    assert v["problems"][1] == ("120.0 tokens/s is 0.60x the previous server's 200.0 tokens/s, below "
                                "sglang_dflash_min_speedup 1.0")


@pytest.mark.parametrize("before", [None, {"measured": False, "problem": "nothing listening"}])
def test_no_baseline_notes_the_speedup_gate_instead_of_failing(before):
    v = verdict(GOOD, before, min_speedup=1.5)
    assert v["passed"] and v["speedup"] is None and "sglang_dflash_min_speedup not checked" in v["notes"][0]


def test_a_gate_on_a_figure_the_server_does_not_report_fails():
    v = verdict(dict(GOOD, accept_length=None), BEFORE, min_accept_length=3)
    assert not v["passed"] and "reports no acceptance length" in v["problems"][0]
    assert verdict({"measured": False, "problem": "x"}, BEFORE)["passed"]  # no gate asked: nothing to prove
    assert not verdict({"measured": False, "problem": "x"}, BEFORE, min_speedup=1)["passed"]


def test_summary_line():
    assert summary_line(GOOD, BEFORE, 2.4) == ("tokens/s 200.0 -> 480.0 (2.40x), acceptance 2.60 -> 6.10, "
                                               "latency 0.64 -> 0.27 s")
    assert summary_line(GOOD) == "tokens/s - -> 480.0, acceptance - -> 6.10, latency - -> 0.27 s"


def levels(*figures):
    return [{"concurrency": c, "tokens_per_s": t} for c, t in figures]


def test_min_speedup_applies_at_the_highest_level_both_were_measured_at():
    before = dict(BEFORE, levels=levels((1, 200.0), (8, 1400.0)))
    fast_alone = dict(GOOD, levels=levels((1, 480.0), (8, 1200.0)))
    v = verdict(fast_alone, before, min_speedup=1.2)
    assert not v["passed"] and v["speedup"] == 2.4 and v["speedups"] == {"1": 2.4, "8": 0.86}
    assert v["load_concurrency"] == 8 and v["speedup_at_load"] == 0.86
    assert v["problems"] == ["at concurrency 8 (the host's load) 1200.0 tokens/s is 0.86x the previous server's "
                             "1400.0 tokens/s, below sglang_dflash_min_speedup 1.2 (2.40x at concurrency 1)"]
    good = verdict(dict(GOOD, levels=levels((1, 480.0), (8, 2000.0))), before, min_speedup=1.2)
    assert good["passed"] and good["speedup_at_load"] == 1.43
    assert summary_line(GOOD, BEFORE, 2.4, good["speedups"]).endswith("latency 0.64 -> 0.27 s, at concurrency 8: 1.43x")


def test_degenerate_or_different_output_is_refused():
    assert agreement("a b c d", "a b x d") == 0.75 and agreement("", "") == 1.0 and agreement("a", "") == 0.0
    after = dict(GOOD, degenerate=["prompt 1: 'the' is 100% of the answer"], outputs=["the the the", "x y z"])
    problems = output_problems(after, dict(BEFORE, outputs=["one two three", "x y z"]))
    assert problems == ["the new server's output is degenerate (prompt 1: 'the' is 100% of the answer)",
                        "the answer to greedy prompt 1 is unlike the previous server's (0% of the words agree)"]
    assert not verdict(after, BEFORE)["passed"]
    assert output_problems(dict(GOOD, outputs=["a b"]), dict(BEFORE, outputs=["a b"])) == []


def test_probe_levels_from_the_operator_or_the_host_s_load():
    from ansible_collections.gpufleet.sglang.plugins.plugin_utils._speed_gates import probe_levels

    assert probe_levels([32, 8]) == [1, 8, 32]
    assert probe_levels(None, 12) == [1, 12] and probe_levels([], 500, cap=64) == [1, 64]
    assert probe_levels(None, 1) == [1] and probe_levels(None, None) == [1]
