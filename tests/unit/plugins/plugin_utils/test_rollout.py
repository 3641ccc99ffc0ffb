"""Whether the next batch of a rolling deployment starts (plugin_utils/_rollout.py)."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._rollout import rollout_stopped


def test_the_rollout_stops_after_a_batch_over_the_failure_budget():
    hostvars = {"a": {"sglang_dflash_batch": ["a", "b"], "sglang_dflash_result": {"unit": "sglang.service"}},
                "b": {"sglang_dflash_batch": ["a", "b"]},
                "c": {"sglang_dflash_batch": ["c"], "sglang_dflash_result": {"unit": "sglang.service"}}}
    assert rollout_stopped(hostvars, ["a", "b", "c"], 50) == ""
    stopped = rollout_stopped(hostvars, ["a", "b", "c"], 0)
    assert stopped.startswith("the rollout stopped after batch 1 (a, b): 1 of 2 host(s) failed (b)")


def test_the_rollout_goes_on_when_every_batch_ended_with_a_result_or_none_ran_yet():
    hostvars = {"a": {"sglang_dflash_batch": ["a"], "sglang_dflash_result": {"unit": "sglang.service"}},
                "b": {}}
    assert rollout_stopped(hostvars, ["a", "b"]) == ""
    assert rollout_stopped({"a": {}}, ["a"], 0) == ""
