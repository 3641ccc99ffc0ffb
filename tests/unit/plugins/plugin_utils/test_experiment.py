"""An experiment's settings, its like-for-like arms, its window judged chunk by chunk (plugin_utils/_experiment.py),
and its report (plugin_utils/_experiment_report.py)."""

import random

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _experiment, _experiment_report

ARMS = [{"name": "checkpoint", "hosts": 1, "settings": {"draft_model_path": "/models/step4000"}},
        {"name": "zlab", "hosts": 1, "settings": {"draft_model_path": "/models/zlab", "block_size": 16}}]
LAB = {"arms": ARMS, "window": 20, "max_window": 40, "interval": 2, "chunk": 10,
       "judge": {"block_s": 2, "host_spread": 0.005}}
H100 = {"gpu": "NVIDIA H100 80GB HBM3", "release": "0.5.23", "tp": 1}


def surveyed(kind=None, refused=False):
    return {"surveyed": True, "refused": refused, "kind": dict(H100, **(kind or {}))}


def test_the_settings_with_their_defaults_or_what_is_wrong():
    config, problem = _experiment.settings({"arms": ARMS})
    assert problem is None and config["window"] == 600 and config["interval"] == 15 and config["rollout"] is True
    for raw, message in (
            (None, "sglang_dflash_experiment must be a mapping with arms"),
            ({"arms": [ARMS[0], ARMS[0]]}, "arm 2: the name checkpoint is used twice"),
            ({"arms": [dict(ARMS[0], hosts="half")]}, "hosts must be a count (1) or a percentage"),
            ({"arms": [dict(ARMS[0], settings={"port": 1})]}, "settings may set draft_model_path, drafter"),
            ({"arms": ARMS, "windows": 3}, "unknown key(s) windows"),
            ({"arms": ARMS, "window": 60, "max_window": 30}, "max_window (30) must be at least window (60)"),
            ({"arms": ARMS, "judge": {"confidence": 3}}, "sglang_dflash_experiment.judge: ")):
        assert message in _experiment.settings(raw)[1], raw


def test_the_arms_and_the_control_are_hosts_of_one_kind():
    config = _experiment.settings(LAB)[0]
    results = {"a": surveyed(), "b": surveyed({"gpu": "NVIDIA L40S"}), "c": surveyed(), "d": surveyed(),
               "e": surveyed(refused=True)}
    assignment = _experiment.assign(results, ["a", "b", "c", "d", "e"], config)
    assert assignment["problem"] is None and assignment["kind"] == H100
    assert assignment["arms"] == {"checkpoint": ["a"], "zlab": ["c"]} and assignment["control"] == ["d"]
    assert assignment["others"] == ["b", "e"]
    assert _experiment.arm_of(assignment, "c") == "zlab" and _experiment.arm_of(assignment, "d") is None
    assert _experiment.arm_settings(config, "zlab") == {"draft_model_path": "/models/zlab", "block_size": 16}


def test_a_fleet_that_cannot_give_each_arm_and_the_control_one_kind_is_refused_naming_the_arm():
    config = _experiment.settings(dict(LAB, arms=[dict(ARMS[0], hosts=2), ARMS[1]]))[0]
    results = {"a": surveyed(), "b": surveyed(), "c": surveyed({"release": "0.5.11"})}
    problem = _experiment.assign(results, ["a", "b", "c"], config)["problem"]
    assert problem.startswith("arm checkpoint lacks hosts of one kind with the control: it needs 2 host(s) of "
                              "NVIDIA H100 80GB HBM3, sglang 0.5.23, tensor parallelism 1, and 2 are left")
    assert "(other kinds: 1 of NVIDIA H100 80GB HBM3, sglang 0.5.11, tensor parallelism 1)" in problem


def window(speeds, seconds, start=1000.0, interval=2, seed=3):
    rng = random.Random(seed)
    samples = {}
    for host, speed in speeds.items():
        samples[host] = [{"host": host, "at": start + interval * i, "running": 4,
                          "decode_per_request": None if speed is None else rng.gauss(speed, 0.03 * speed),
                          "itl_p50": 0.004, "itl_p99": 0.008, "ttft_p99": 0.1, "accept_length": 5.0,
                          "abort_ratio": 0.0} for i in range(1, seconds // interval + 1)]
    return {"samples": samples, "window_s": seconds}


ASSIGNMENT = {"arms": {"checkpoint": ["a"], "zlab": ["b"]}, "control": ["c", "d"]}


def test_the_window_is_judged_chunk_by_chunk_and_decided_past_its_length():
    config = _experiment.settings(LAB)[0]
    speeds = {"a": 250.0, "b": 380.0, "c": 90.0, "d": 92.0}
    state = _experiment.judge(None, window(speeds, 10), ASSIGNMENT, config)
    assert state["done"] is False and state["outcome"] == "observing" and state["seconds"] == 10
    state = _experiment.judge(state, window(speeds, 10, start=1010.0, seed=4), ASSIGNMENT, config)
    assert state["done"] is True and state["outcome"] == "winner" and state["winner"] == "zlab"
    assert _experiment.final_roll_back(state, ASSIGNMENT) == ["a"]
    assert "arm zlab wins" in _experiment.message(state, ASSIGNMENT)
    # Decided: a later chunk changes nothing.
    assert _experiment.judge(state, window(speeds, 10, start=1020.0), ASSIGNMENT, config)["winner"] == "zlab"


def test_a_broken_guardrail_sends_its_arm_back_at_once_and_the_others_go_on():
    config = _experiment.settings(dict(LAB, judge=dict(LAB["judge"], guardrails={"itl_p99": {"max": 0.012}})))[0]
    chunk = window({"a": 250.0, "b": 380.0, "c": 90.0, "d": 92.0}, 10)
    for sample in chunk["samples"]["a"]:
        sample["itl_p99"] = 0.015
    state = _experiment.judge(None, chunk, ASSIGNMENT, config)
    assert state["failed"] == ["checkpoint"] and state["roll_back_now"] == ["a"] and not state["done"]
    state = _experiment.judge(state, window({"a": 250.0, "b": 380.0, "c": 90.0, "d": 92.0}, 10, start=1010.0),
                              ASSIGNMENT, config)
    assert state["roll_back_now"] == [] and state["winner"] == "zlab"
    assert _experiment.final_roll_back(state, ASSIGNMENT) == []  # the failed arm went back already
    assert "arm(s) checkpoint went back at once for a broken guardrail" in _experiment.message(state, ASSIGNMENT)


def test_no_traffic_extends_the_window_then_holds_and_sends_nothing_back():
    config = _experiment.settings(LAB)[0]
    quiet = {"a": None, "b": None, "c": None, "d": None}
    state = None
    for chunk in range(4):
        state = _experiment.judge(state, window(quiet, 10, start=1000.0 + 10 * chunk), ASSIGNMENT, config)
        if state["done"]:
            break
    assert state["outcome"] == "hold" and state["seconds"] == 40
    assert _experiment.final_roll_back(state, ASSIGNMENT) == []


def test_no_arm_better_than_the_control_keeps_it_and_sends_every_arm_back():
    config = _experiment.settings(LAB)[0]
    speeds = {"a": 70.0, "b": 72.0, "c": 90.0, "d": 92.0}
    state = _experiment.judge(None, window(speeds, 20), ASSIGNMENT, config)
    assert state["outcome"] == "keep control" and state["winner"] is None
    assert _experiment.final_roll_back(state, ASSIGNMENT) == ["a", "b"]


def test_the_report_stands_alone_with_its_plots_and_the_shifts():
    config = _experiment.settings(LAB)[0]
    state = _experiment.judge(None, window({"a": 250.0, "b": 380.0, "c": 90.0, "d": 92.0}, 20), ASSIGNMENT, config)
    page = _experiment_report.report_html(state, ASSIGNMENT, _experiment.message(state, ASSIGNMENT))
    assert page.count("<svg") == len(_experiment_report.PLOTTED) and "<script" not in page and "http" not in page
    assert "zlab vs checkpoint" in page and "decode tokens/s per running request" in page
    assert '"winner": "zlab"' in _experiment_report.report_json(state, ASSIGNMENT, config)
