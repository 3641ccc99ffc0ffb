"""gpufleet.sglang.sglang_speed_probe's controller half: the levels, and the gates against a baseline
(plugins/action/sglang_speed_probe.py)."""

from ansible_collections.gpufleet.sglang.plugins.action.sglang_speed_probe import ActionModule
from conftest import Host

PROBE = "gpufleet.sglang.sglang_speed_probe"


def measured(tokens_per_s, accept_length=None):
    def answer(args):
        return {"measured": True, "tokens_per_s": tokens_per_s, "accept_length": accept_length, "outputs": [],
                "levels": [{"concurrency": c, "tokens_per_s": tokens_per_s * (1 if c == 1 else 0.5)}
                           for c in args.get("concurrency") or [1]]}
    return answer


def test_the_levels_are_1_and_the_load_the_host_carried_and_the_controllers_options_stay_here(run_action):
    host = Host({PROBE: measured(100.0)})
    run_action(ActionModule, {"port": 30000, "load": 6, "max_concurrency": 4, "concurrency": None}, host)
    assert host.runs[0][1] == {"port": 30000, "concurrency": [1, 4]}
    host = Host({PROBE: measured(100.0)})
    run_action(ActionModule, {"port": 30000, "load": None, "concurrency": [8, 32]}, host)
    assert host.runs[0][1]["concurrency"] == [1, 8, 32]


def test_against_a_baseline_the_gates_decide_and_say_why(run_action):
    baseline = {"measured": True, "tokens_per_s": 200.0, "levels": [{"concurrency": 1, "tokens_per_s": 200.0}]}
    passed = run_action(ActionModule, {"baseline": baseline, "min_speedup": 1.2}, Host({PROBE: measured(480.0, 6.0)}))
    assert passed["verdict"]["passed"] and passed["verdict"]["speedup"] == 2.4 and not passed.get("failed")
    assert passed["verdict"]["summary"].startswith("tokens/s 200.0 -> 480.0 (2.40x)")
    slow = run_action(ActionModule, {"baseline": baseline, "min_speedup": 1.2}, Host({PROBE: measured(210.0)}))
    assert slow["failed"] and slow["msg"].startswith(
        "the new server is healthy but does not pass the speed gates: 210.0 tokens/s is 1.05x")


def test_without_a_baseline_nothing_is_judged_and_a_previous_server_never_measured_is_noted(run_action):
    assert "verdict" not in run_action(ActionModule, {}, Host({PROBE: measured(100.0)}))
    noted = run_action(ActionModule, {"baseline": None, "min_speedup": 1.2}, Host({PROBE: measured(100.0)}))
    assert noted["verdict"]["passed"] and "not checked" in noted["verdict"]["notes"][0]
