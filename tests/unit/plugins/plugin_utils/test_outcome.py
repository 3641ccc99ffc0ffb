"""What one service's switch did, as the run reports it and the host keeps it (plugin_utils/_outcome.py)."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._outcome import decide, refusal, with_service
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan
from plan_facts import NEXTN, SETTINGS, facts_for

SKIPPED = {"skipped": True, "changed": False}


def planned(**steps):
    plan = deployment_plan(facts_for(NEXTN), SETTINGS)
    plan.update(facts=facts_for(NEXTN), steps=dict({"rejoin": False, "record": True}, **steps), interrupted=None)
    return plan


def test_a_switch_is_recorded_with_the_figures_this_turn_measured():
    speed_after = {"measured": True, "tokens_per_s": 480.0, "accept_length": 6.2,
                   "verdict": {"passed": True, "speedup": 2.4, "summary": "tokens/s 200.0 -> 480.0 (2.40x)"}}
    observed = {"ready": {"ready": True, "since_start_s": 30.5}, "drain": SKIPPED, "leaving": SKIPPED,
                "speed_before": {"measured": True, "tokens_per_s": 200.0}, "speed_after": speed_after}
    decided = decide(planned(), "switched", observed, "gpu-1", False, 1700000000.0)
    service, record = decided["service"], decided["record"]
    assert decided["message"] is None and service["healthy"] is True
    assert service["speed"]["speedup"] == 2.4 and service["traffic"]["out_of_rotation_s"] is None
    assert record["outcome"] == "switched" and record["speedup"] == 2.4 and record["time"].startswith("2023-11-14T")
    assert record["before"]["tokens_per_s"] == 200.0


def test_the_time_out_of_rotation_runs_from_the_take_out_to_the_record():
    observed = {"leaving": {"now": 1000.0}, "ready": {"ready": True}}
    decided = decide(planned(rejoin=True), "switched", observed, "gpu-1", False, 1042.5)
    assert decided["service"]["traffic"]["out_of_rotation_s"] == 42.5


def test_an_unchanged_service_has_a_result_and_no_record():
    decided = decide(planned(record=False), "unchanged", {"ready": SKIPPED}, "gpu-1", False, 1.0)
    assert decided["record"] is None and decided["service"]["healthy"] is False


def test_a_rollback_fails_the_host_with_what_failed_what_was_put_back_and_where_the_host_is():
    steps = {"restarted": True, "record": True, "left_rotation_at": 1000.0, "speed_before": {"measured": True}}
    observed = {"steps": steps, "failure": {"msg": "crashed", "journal": ["RuntimeError: x"]},
                "old_ready": {"ready": True}, "journal": SKIPPED, "rejoined": {"changed": True},
                "rolling_back": {"now": 1040.0}}
    decided = decide(planned(), "rolled back", observed, "gpu-1", False, 1043.0)
    assert decided["message"].startswith("host gpu-1, unit sglang-qwen.service: the switch to DFLASH failed (crashed); "
                                         "the previous service is back and healthy, 3.0s after the rollback started.")
    assert "This host is back in rotation." in decided["message"]
    assert decided["message"].endswith("Last journal lines of sglang-qwen.service: RuntimeError: x")
    assert decided["record"]["outcome"] == "rolled back" and decided["record"]["reason"] == "crashed"
    # Put back failed: the host is said to be out of rotation, and why.
    observed["rejoined"] = {"failed": True, "msg": "gateway did not accept it"}
    assert "This host is left OUT of rotation: gateway did not accept it." in decide(
        planned(), "rolled back", observed, "gpu-1", False, 1043.0)["message"]


def test_the_refusal_names_every_reason_and_each_gateway_that_cannot_take_the_host_out():
    checks = {"results": [{"failed": False, "item": {"unit": "a.service"}},
                          {"failed": True, "msg": "gateway http://gw does not list worker w",
                           "gateways": [{"gateway": "http://gw", "state": "not registered"}],
                           "item": {"unit": "b.service", "algorithm": "DFLASH", "mode": "switch",
                                    "worker_url": "http://w"}}]}
    message = refusal(["host gpu-1, unit c.service: cannot deploy DFLASH: x. Nothing was changed on this host."],
                      checks, "gpu-1")
    assert message.startswith("host gpu-1, unit c.service: cannot deploy DFLASH: x.")
    assert "host gpu-1, unit b.service: cannot deploy DFLASH: gateway http://gw does not list worker w. Nothing " \
           "was changed on this host; the gateways that answered have worker http://w as: http://gw not " \
           "registered." in message
    assert refusal([], {"results": []}, "gpu-1") == ""


def test_each_service_adds_to_the_hosts_result():
    assert with_service({"state": None, "services": [1]}, "gpu-1", 2) == {
        "state": None, "services": [1, 2], "host": "gpu-1"}
