"""The rolling deployment's decisions across hosts, from each host's result (plugin_utils/_rollout.py)."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._rollout import (
    canary_plan,
    failed,
    finished,
    metrics_targets,
    rollout_stopped,
    start_batch,
)


def test_the_rollout_stops_after_a_batch_over_the_failure_budget():
    results = {"a": {"batch": ["a", "b"], "state": "done"}, "b": {"batch": ["a", "b"], "state": "failed"},
               "c": {"batch": ["c"], "state": "done"}}
    assert rollout_stopped(results, ["a", "b", "c"], 50) == ""
    stopped = rollout_stopped(results, ["a", "b", "c"], 0)
    assert stopped.startswith("the rollout stopped after batch 1 (a, b): 1 of 2 host(s) failed (b)")
    # A host of an earlier batch that never ended (unreachable mid-way) counts as failed too.
    results["b"] = {"batch": ["a", "b"], "state": None}
    assert rollout_stopped(results, ["a", "b", "c"], 0).endswith("failed (b), more than "
                                                                 "sglang_dflash_max_fail_percentage=0%")


def test_the_rollout_goes_on_when_every_batch_ended_done_or_none_ran_yet():
    assert rollout_stopped({"a": {"batch": ["a"], "state": "done"}, "b": {}}, ["a", "b"]) == ""
    assert rollout_stopped({"a": {}}, ["a"], 0) == ""


def test_a_host_with_nothing_to_do_ends_done_at_its_batch_unless_it_is_a_canary():
    results = {"a": {"nothing_to_do": True, "services": [{"unit": "sglang.service"}]}, "b": {"nothing_to_do": False}}
    quiet = start_batch(results, ["a", "b"], ["a"], "a")
    assert quiet["start"] is False and quiet["result"]["state"] == "done"
    assert quiet["result"]["services"] == [{"unit": "sglang.service"}] and quiet["result"]["batch"] == ["a"]
    busy = start_batch(results, ["a", "b"], ["b"], "b")
    assert busy["start"] is True and busy["result"]["state"] is None and busy["result"]["services"] == []
    canary = start_batch(results, ["a", "b"], ["a"], "a", canary=1)
    assert canary["start"] is True and canary["in_canary"] is True


def test_a_batch_does_not_start_after_a_failed_batch_or_a_held_canary():
    results = {"a": {"batch": ["a"], "state": "failed"}, "b": {}}
    later = start_batch(results, ["a", "b"], ["b"], "b")
    assert later["start"] is False and later["result"]["state"] == "not started"
    assert later["result"]["reason"].startswith("the rollout stopped after batch 1 (a)")
    results = {"a": {"batch": ["a"], "state": "done", "canary": {"action": "hold", "message": "inconclusive"}},
               "b": {}}
    held = start_batch(results, ["a", "b"], ["b"], "b", canary=1)
    assert held["start"] is False
    assert held["result"]["reason"] == "not started: the canary stopped the rollout (inconclusive)"


def test_the_canary_plan_and_the_metrics_targets_come_from_the_hosts_surveys():
    assert canary_plan(["a", "b", "c", "d"], "50%") == {
        "count": 2, "hosts": ["a", "b"], "baseline_hosts": ["c", "d"], "problem": None}
    assert canary_plan(["a"], "ten")["problem"].startswith("sglang_dflash_canary must be a host count")
    results = {"a": {"metrics_target": {"name": "a", "url": "http://10.0.0.1:30000"}}, "b": {}}
    assert metrics_targets(results, ["a", "b"]) == [{"name": "a", "url": "http://10.0.0.1:30000"},
                                                    {"name": "b", "url": None}]


def test_a_hosts_result_when_it_failed_or_finished():
    assert failed({"services": [1]}, "a", "boom") == {
        "services": [1], "host": "a", "state": "failed", "reason": "boom"}
    assert finished({"state": None}, "a", [{"repo": "x"}]) == {
        "state": "done", "host": "a", "drafters": [{"repo": "x"}]}
    assert finished({"state": "failed", "reason": "r"}, "a")["state"] == "failed"


def test_the_hosts_of_one_batch_never_stop_each_other():
    # serial 100% at 32 hosts and 16 forks: the 7th host starts while the first 6 are switching (their results say
    # batch = all 32, state None) and the other 25 have no result yet. None of that is an earlier batch's failure.
    hosts = ["h%02d" % i for i in range(32)]
    results = dict((h, {"batch": hosts, "state": None}) for h in hosts[:6])
    results.update((h, {"surveyed": True}) for h in hosts[6:])
    assert rollout_stopped(results, hosts, 0, batch=hosts) == ""
    seventh = start_batch(results, hosts, hosts, "h06")
    assert seventh["start"] is True and seventh["result"]["state"] is None
    # One of them failed already: the batch still goes on (the budget applies to the later batches, as Ansible's).
    results["h00"]["state"] = "failed"
    assert start_batch(results, hosts, hosts, "h07")["start"] is True


def test_a_stopped_rollout_names_a_few_hosts_not_all():
    hosts = ["h%02d" % i for i in range(100)]
    results = dict((h, {"batch": hosts[:50], "state": "failed"}) for h in hosts[:50])
    stopped = start_batch(results, hosts, hosts[50:], "h50")["result"]["reason"]
    assert stopped == ("the rollout stopped after batch 1 (h00, h01, h02, h03, h04 and 45 more): 50 of 50 host(s) "
                       "failed (h00, h01, h02, h03, h04 and 45 more), more than sglang_dflash_max_fail_percentage=0%")
