"""Experiments on the fleet's own traffic (playbooks/experiment_dflash.yml), behind the lab's gateway, under the lab's
load with streams: two arms of one host each, the two other hosts the control, judged by the statistical judge on
2-s samples (the stand-in's speed is SIMULATED, with its seeded noise). The fleet starts each test on its previous
server (no speculative decoding) and is left so, but for (a), which rolls the winner out, and (b), which runs on that
fleet and reverts it after.
Named to run before test_canary.py, whose last test rolls the fleet out."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests", "traffic"))

import lab  # noqa: E402
from checks import playbook, server_info  # noqa: E402

testinfra_hosts = ["podman://canary-1"]
GATEWAY = "http://127.0.0.1:30160"
NODES = ["canary-1", "canary-2", "canary-3", "canary-4"]
LOAD = {"clients": 16, "long_tokens": 400}
ZLAB = "/models/Qwen3.6-27B-DFlash"
RECORD = "/var/lib/gpufleet-sglang/sglang.service.last-rollout.json"
INTENT = "/var/lib/gpufleet-sglang/sglang.service.intent.json"
STEP4000 = "/models/Qwen3.6-27B-DFlash-step4000"
# The lab's windows: a fleet's default is 600 s (up to 1800 s) at 15-s intervals, judged every 60 s.
WINDOW = {"window": 30, "max_window": 30, "interval": 2, "chunk": 10}


def node(name):
    import testinfra

    return testinfra.get_host("podman://" + name)


REPORT_DIR = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/tmp"), "experiment-report")
# The experiment judges the arms' speed on the traffic (an arm's switch is not gated by the probe's speed-up):
# the scenario's switches leave the probe out (each is two probes of the server, before and after), and with it the
# lab's speed gate (a gate without its probe is refused).
NO_PROBE = ["-e", '{"sglang_dflash_speed_probe": false, "sglang_dflash_min_speedup": null}']


def experiment(arms, load=True, extra=(), **settings):
    """The experiment playbook with these arms (the first host(s) of the fleet in the arms' order), under the lab's
    load; (run, load counts)."""
    config = dict(WINDOW, arms=arms, **settings)
    args = ["-e", json.dumps({"sglang_dflash_experiment": config}), "-e", "sglang_dflash_serial=2",
            "-e", "sglang_dflash_experiment_report_dir=%s" % REPORT_DIR] + NO_PROBE + list(extra)
    if not load:
        return playbook("experiment_dflash.yml", *args), None
    run, counts, _seconds = lab.under_load(GATEWAY, lambda: playbook("experiment_dflash.yml", *args), **LOAD)
    return run, counts


def report_of():
    with open(os.path.join(REPORT_DIR, "experiment-report.json")) as handle:
        return json.load(handle)


def drafters():
    """{host: the drafter its server runs (None: no speculative decoding)}."""
    return dict((name, server_info(node(name))["speculative_draft_model_path"]) for name in NODES)


def fleet_on(drafter):
    """The whole fleet on drafter at block 16 (None: on its previous server), unless it is there already: each test
    starts from its own state whatever the test before it left (one failed test is one failure, not a cascade)."""
    if set(drafters().values()) == {drafter}:
        return
    if drafter is None:
        run = playbook("revert_dflash.yml", "-e", "sglang_dflash_serial=4", "-e",
                       "sglang_dflash_restart_stopped_units=true", *NO_PROBE)
    else:
        run = playbook("deploy_dflash.yml", "-e", "sglang_dflash_serial=4", "-e",
                       json.dumps({"sglang_dflash_draft_model_path": drafter, "sglang_dflash_block_size": 16}),
                       *NO_PROBE)
    assert run.returncode == 0, run.output[-3000:]
    assert set(drafters().values()) == {drafter}


@pytest.fixture
def from_previous_servers():
    """The fleet on its previous servers before the test and after it, whatever the test left."""
    fleet_on(None)
    yield
    fleet_on(None)


def said(run, title, counts=None):
    lines = [ln.strip() for ln in run.output.splitlines() if "the experiment (" in ln]
    sys.stderr.write("\n%s rc=%s %s\n%s\n" % (title, run.returncode, counts and "requests=%d failed=%d" % (
        counts["requests"], counts["failed"]), lines[-1] if lines else run.output[-1500:]))


def test_a_the_seed_case_zlab_against_the_own_checkpoint_zlab_wins_and_rolls_out():
    """The operator's own checkpoint (step 4000, about 0.65 of z-lab's acceptance) listed first, z-lab's drafter
    second: z-lab's must win on significance, not on order; the checkpoint's host goes back; z-lab rolls out."""
    fleet_on(None)
    run, counts = experiment([{"name": "checkpoint", "hosts": 1, "settings": {"draft_model_path": STEP4000}},
                              {"name": "zlab", "hosts": 1, "settings": {"draft_model_path": ZLAB}}])
    said(run, "(a) zlab against the checkpoint", counts)
    assert run.returncode == 0, run.output[-4000:]
    assert "arm zlab wins" in run.output and "arm zlab is better than arm checkpoint" in run.output
    assert counts["failed"] == 0, counts["failures"]
    assert drafters() == dict((name, ZLAB) for name in NODES)
    found = report_of()
    assert found["winner"] == "zlab" and found["assignment"]["arms"] == {"checkpoint": ["canary-1"],
                                                                         "zlab": ["canary-2"]}
    decode = found["decision"]["between_arms"]["zlab"]["checkpoint"]["decode_per_request"]
    assert decode["verdict"] == "better" and decode["low_relative"] > 0.1


def test_b_block_size_8_against_16_under_the_lab_load_8_is_chosen():
    """On the fleet (a) left on z-lab's drafter at block 16, the operator tries block 8 (z-lab's block-8 checkpoint):
    with every server about as fast, the lab's load keeps about 4 requests running on each, where a block of 8 costs
    less than it loses (SIMULATED: 9.4 % faster). 16 is listed first (its host has nothing to switch), so 8 must be
    significantly better than the control to be chosen. The verdict only; then the whole fleet goes back to its
    previous server for the tests after. A 120-s window: at 2-s samples of one host an arm, the interval of a 9-12 %
    shift was +-6 % at 60 s on a machine running the lab alone and +-11 % beside two other scenarios (the lower end
    0.6 %, under the 2 % tolerance): 120 s narrows it by a third."""
    fleet_on(ZLAB)
    try:
        run, counts = experiment([{"name": "b16", "hosts": 1, "settings": {"block_size": 16}},
                                  {"name": "b8", "hosts": 1, "settings": {
                                      "draft_model_path": "/models/Qwen3.6-27B-DFlash-b8", "block_size": 8}}],
                                 rollout=False, window=120, max_window=120)
        said(run, "(b) block size 8 against 16", counts)
        assert run.returncode == 0, run.output[-4000:]
        assert "arm b8 wins" in run.output
        assert counts["failed"] == 0, counts["failures"]
        # The verdict only: the winner's host keeps it, the other arm's is as it was, the control untouched.
        assert drafters() == {"canary-1": ZLAB, "canary-2": "/models/Qwen3.6-27B-DFlash-b8", "canary-3": ZLAB,
                              "canary-4": ZLAB}
        # The winner's window is closed on its host (a later run does not take it for a cut one); its record has the
        # verdict.
        winner = node("canary-2")
        assert not winner.file(INTENT).exists
        assert json.loads(winner.file(RECORD).content_string)["experiment"] == {
            "outcome": "winner", "winner": "b8", "arm": "b8"}
        revert = playbook("revert_dflash.yml", "-e", "sglang_dflash_serial=4", "-e",
                          "sglang_dflash_restart_stopped_units=true", *NO_PROBE)
        assert revert.returncode == 0, revert.output[-3000:]
        assert set(drafters().values()) == {None}, revert.output[-6000:]
    finally:
        fleet_on(None)


@pytest.mark.usefixtures("from_previous_servers")
def test_c_an_arm_that_breaks_a_guardrail_goes_back_at_once_and_the_experiment_goes_on():
    """A drafter that slows with the load (SIMULATED) breaks an inter-token latency guardrail of 12 ms on the first
    chunk; its host goes back at once and the other arm is judged over the rest of the window."""
    run, counts = experiment([{"name": "loadbound", "hosts": 1,
                               "settings": {"draft_model_path": "/models/Qwen3.6-27B-DFlash-loadbound"}},
                              {"name": "zlab", "hosts": 1, "settings": {"draft_model_path": ZLAB}}],
                             rollout=False, judge={"guardrails": {"itl_p99": {"max": 0.012}}},
                             )
    said(run, "(c) a guardrail broken", counts)
    assert run.returncode == 0, run.output[-4000:]
    assert "arm(s) loadbound went back at once for a broken guardrail" in run.output
    assert "inter-token latency p99" in run.output and "arm zlab wins" in run.output
    assert counts["failed"] == 0, counts["failures"]
    assert drafters() == {"canary-1": None, "canary-2": ZLAB, "canary-3": None, "canary-4": None}
    found = report_of()
    assert found["failed_arms"] == ["loadbound"] and found["winner"] == "zlab"
    revert = playbook("revert_dflash.yml", "--limit", "canary-2", "-e", "sglang_dflash_restart_stopped_units=true",
                      *NO_PROBE)
    assert revert.returncode == 0, revert.output[-3000:]


@pytest.mark.usefixtures("from_previous_servers")
def test_d_two_arms_no_better_than_the_control_keep_the_control():
    """Two arms of a drafter that the target accepts nothing from (SIMULATED acceptance 1.0: slower than no drafter at
    every load). Not the load-bound drafter: 4x faster than the control at one running request, it did beat the
    control where the gateway sent its host few requests."""
    slow = {"draft_model_path": "/models/Qwen3.6-27B-DFlash-untrained"}
    run, counts = experiment([{"name": "slow-a", "hosts": 1, "settings": slow},
                              {"name": "slow-b", "hosts": 1, "settings": slow}])
    said(run, "(d) no arm better than the control", counts)
    assert run.returncode == 0, run.output[-4000:]
    assert "the control stays" in run.output
    assert counts["failed"] == 0, counts["failures"]
    assert set(drafters().values()) == {None}
    assert report_of()["outcome"] == "keep control"


@pytest.mark.usefixtures("from_previous_servers")
def test_e_too_little_traffic_extends_the_window_then_holds():
    run, _counts = experiment([{"name": "zlab", "hosts": 1, "settings": {"draft_model_path": ZLAB}},
                               {"name": "checkpoint", "hosts": 1, "settings": {"draft_model_path": STEP4000}}],
                              load=False, window=10, max_window=20)
    said(run, "(e) no traffic")
    assert run.returncode != 0
    assert "observe longer" in run.output and "held" in run.output and "too few samples" in run.output
    # Held: every arm keeps its setting for a person to look at; nothing was rolled out.
    assert drafters() == {"canary-1": ZLAB, "canary-2": STEP4000, "canary-3": None, "canary-4": None}
    revert = playbook("revert_dflash.yml", "--limit", "canary-1,canary-2", "-e", "sglang_dflash_serial=2",
                      "-e", "sglang_dflash_restart_stopped_units=true", *NO_PROBE)
    assert revert.returncode == 0, revert.output[-3000:]
    assert set(drafters().values()) == {None}
