"""gpufleet.sglang.sglang_dflash_rollout: the rollout's decisions across hosts, reading of another host only its result
fact of this run (plugins/action/sglang_dflash_rollout.py)."""

from ansible_collections.gpufleet.sglang.plugins.action.sglang_dflash_rollout import ActionModule
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name
from conftest import Host


def hostvars(**results):
    return {"hostvars": dict((h, {"sglang_dflash_result": r, "sglang_dflash_block_size": 8})
                             for h, r in results.items())}


def test_a_former_runs_result_in_the_fact_cache_does_not_stop_this_run(run_action):
    # gpu-2 failed in a former run (its result still in Ansible's fact cache); in this run it has not started yet.
    stale = {"run": "ctl pid 1 (9)", "batch": ["gpu-2"], "state": "failed"}
    mine = {"run": run_name(), "nothing_to_do": False}
    result = run_action(ActionModule, {"step": "batch", "hosts": ["gpu-2", "gpu-1"], "batch": ["gpu-1"],
                                       "result": mine}, task_vars=hostvars(**{"gpu-2": stale, "gpu-1": mine}))
    assert result["start"] is True
    assert result["ansible_facts"]["sglang_dflash_result"]["run"] == run_name()
    this_run = dict(stale, run=run_name())
    result = run_action(ActionModule, {"step": "batch", "hosts": ["gpu-2", "gpu-1"], "batch": ["gpu-1"],
                                       "result": mine}, task_vars=hostvars(**{"gpu-2": this_run, "gpu-1": mine}))
    assert result["start"] is False and result["reason"].startswith("the rollout stopped after batch 1 (gpu-2)")


def test_the_canary_hosts_check_their_metrics_source_and_a_refusal_holds_the_rollout(run_action):
    targets = {"gpu-1": {"run": run_name(), "metrics_target": {"name": "gpu-1", "url": "http://a:1"}},
               "gpu-2": {"run": run_name(), "metrics_target": {"name": "gpu-2", "url": "http://b:1"}}}
    batch = run_action(ActionModule, {"step": "batch", "hosts": ["gpu-1", "gpu-2"], "batch": ["gpu-1"], "canary": 1,
                                      "result": targets["gpu-1"]}, task_vars=hostvars(**targets))
    assert batch["check_canary"] is True and [t["url"] for t in batch["targets"]] == ["http://a:1", "http://b:1"]
    refused = run_action(ActionModule, {"step": "canary_check", "hosts": ["gpu-1", "gpu-2"], "canary": 1,
                                        "source": {"problems": ["Prometheus http://p:9090 cannot be reached"]},
                                        "result": targets["gpu-1"]})
    failed = refused["ansible_facts"]["sglang_dflash_result"]
    assert failed["state"] == "failed" and failed["canary"]["action"] == "hold"
    assert failed["reason"].startswith("host gpu-1: cannot start the canary: Prometheus http://p:9090")


def test_the_canary_verdict_is_kept_in_the_hosts_result_and_its_records(run_action):
    host = Host({"gpufleet.sglang.sglang_run_state": {"changed": True}})
    result = {"run": run_name(), "services": [{"unit": "sglang.service", "changed": True},
                                              {"unit": "other.service", "changed": False}]}
    verdict = {"verdict": "pass", "action": "continue", "message": "the canary passed, x", "figures": {}}
    kept = run_action(ActionModule, {"step": "canary_record", "result": result, "verdict": verdict,
                                     "state_dir": "/var/lib/gpufleet-sglang"}, host)
    assert kept["ansible_facts"]["sglang_dflash_result"]["canary"] == verdict
    assert [(name, args["unit"], args["record_update"]["canary"]["verdict"]) for name, args in host.runs] == [
        ("gpufleet.sglang.sglang_run_state", "sglang.service", "pass"),
        ("gpufleet.sglang.sglang_run_state", "other.service", "pass")]


def test_the_summary_reads_each_hosts_result_of_this_run(run_action):
    results = {"gpu-1": {"run": run_name(), "state": "failed", "reason": "boom"},
               "gpu-2": {"run": "ctl pid 1 (9)", "state": "done"}}
    lines = run_action(ActionModule, {"step": "summary", "hosts": ["gpu-1", "gpu-2"]},
                       task_vars=hostvars(**results))["lines"]
    assert lines == ["gpu-1: FAILED: boom", "gpu-2: not reached (unreachable, or the play ended before it)"]


def test_an_arm_host_the_experiment_did_not_change_stays_as_it_is_when_its_arm_loses(run_action):
    """Block 16 against 8 on a fleet already on block 16: the b16 arm's host had nothing to switch. b8 wins; b16's
    host is not reverted to the operator's command (it ran block 16 before the experiment), a changed loser is."""
    assignment = {"arms": {"b16": ["gpu-1"], "b8": ["gpu-2"]}, "control": ["gpu-3"]}
    state = {"outcome": "winner", "winner": "b8", "failed": [], "done": True}

    def end(changed):
        result = {"run": run_name(), "experiment": {"assignment": assignment},
                  "services": [{"unit": "sglang.service", "changed": changed}]}
        return run_action(ActionModule, {"step": "experiment_end", "result": result, "state": state})["roll_back"]

    assert end(changed=False) is False
    assert end(changed=True) is True


def test_a_host_that_keeps_its_arm_has_its_window_closed_on_the_host_and_the_verdict_recorded(run_action):
    """The winner's host (changed by the experiment) keeps its arm: its window's intent is cleared (else every later
    run took it for a cut canary window) and the verdict is merged into its record; a host going back records it with
    its revert, and a host the experiment did not change has no window to close."""
    assignment = {"arms": {"zlab": ["gpu-1"], "checkpoint": ["gpu-2"]}, "control": ["gpu-3"]}
    state = {"outcome": "winner", "winner": "zlab", "failed": [], "done": True}

    def end(arm, changed):
        host = Host({"gpufleet.sglang.sglang_run_state": {"changed": True}})
        result = {"run": run_name(), "experiment": {"assignment": assignment, "arm": arm},
                  "services": [{"unit": "sglang.service", "changed": changed}]}
        back = run_action(ActionModule, {"step": "experiment_end", "result": result, "state": state,
                                         "state_dir": "/var/lib/gpufleet-sglang"}, host,
                          task_vars={"inventory_hostname": assignment["arms"][arm][0]})["roll_back"]
        return back, [(args["unit"], args["clear_intent"], args["record_update"]) for _name, args in host.runs]

    assert end("zlab", changed=True) == (False, [("sglang.service", True, {"experiment": {
        "outcome": "winner", "winner": "zlab", "arm": "zlab"}})])
    assert end("checkpoint", changed=True) == (True, [])
    assert end("zlab", changed=False) == (False, [])
