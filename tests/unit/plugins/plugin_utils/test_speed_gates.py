"""The speed gates of a switch and their summary line (plugin_utils/_speed_gates.py)."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._speed_gates import summary_line, verdict

BEFORE = {"measured": True, "tokens_per_s": 200.0, "accept_length": 2.6, "latency_s_median": 0.64}
GOOD = {"measured": True, "tokens_per_s": 480.0, "accept_length": 6.1, "latency_s_median": 0.27}
MISMATCHED = {"measured": True, "tokens_per_s": 120.0, "accept_length": 1.6, "latency_s_median": 1.07}


def test_a_good_drafter_passes_every_gate():
    v = verdict(GOOD, BEFORE, min_accept_length=4, min_speedup=1.2)
    assert v == {"passed": True, "speedup": 2.4, "problems": [], "notes": []}


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
