"""gpufleet.sglang.sglang_dflash_record: one service's end - its result, its record on the host, or the message it
fails with (plugins/action/sglang_dflash_record.py)."""

from ansible_collections.gpufleet.sglang.plugins.action.sglang_dflash_record import ActionModule
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name
from conftest import Host
from plan_facts import NEXTN, SETTINGS, facts_for

RUN_STATE = "gpufleet.sglang.sglang_run_state"


def plan(**steps):
    planned = deployment_plan(facts_for(NEXTN), dict(SETTINGS, state_dir="/var/lib/gpufleet-sglang"))
    planned.update(facts=facts_for(NEXTN), steps=dict({"rejoin": False}, **steps), interrupted=None)
    return planned


def test_a_switch_writes_its_record_clears_the_intent_in_one_module_run_and_adds_the_service(run_action):
    host = Host({RUN_STATE: {"changed": True}})
    former = {"run": "another run", "services": [{"unit": "old"}]}
    result = run_action(ActionModule, {"plan": plan(), "outcome": "switched", "write": True, "result": former,
                                       "observed": {"ready": {"ready": True}}}, host)
    assert host.runs[0][0] == RUN_STATE
    args = host.runs[0][1]
    assert args["record"]["outcome"] == "switched" and args["clear_intent"] and args["drop_snapshot"]
    assert args["dir"] == "/var/lib/gpufleet-sglang" and args["unit"] == "sglang-qwen.service"
    facts = result["ansible_facts"]["sglang_dflash_result"]
    # A result a former run left (Ansible's fact cache) is not this run's: this run's starts anew.
    assert facts["run"] == run_name() and [s["unit"] for s in facts["services"]] == ["sglang-qwen.service"]
    assert result["changed"] is True and not result.get("failed")


def test_an_unchanged_service_writes_nothing(run_action):
    host = Host()
    result = run_action(ActionModule, {"plan": plan(), "outcome": "unchanged", "observed": {}}, host)
    assert host.runs == [] and result["record"] is None and len(result["ansible_facts"]["sglang_dflash_result"][
        "services"]) == 1


def test_check_mode_writes_nothing(run_action):
    host = Host()
    run_action(ActionModule, {"plan": plan(), "outcome": "switched", "write": True, "observed": {}}, host,
               check_mode=True)
    assert host.runs == []


def test_a_rollback_fails_with_its_message_and_clears_the_intent(run_action):
    host = Host({RUN_STATE: {"changed": True}})
    observed = {"steps": {"restarted": False, "record": False}, "failure": {"msg": "GPUs still in use"},
                "old_ready": {"ready": True}, "journal": {"skipped": True}, "rejoined": {"skipped": True},
                "rolling_back": {"now": 1.0}}
    result = run_action(ActionModule, {"plan": plan(), "outcome": "rolled back", "clear_intent": True,
                                       "observed": observed}, host)
    assert result["failed"] is True and result["msg"].startswith(
        "host gpu-1, unit sglang-qwen.service: the switch to DFLASH failed (GPUs still in use); sglang-qwen.service "
        "was not restarted")
    assert host.runs == [(RUN_STATE, {"dir": "/var/lib/gpufleet-sglang", "unit": "sglang-qwen.service",
                                      "clear_intent": True, "drop_snapshot": False})]
    assert "ansible_facts" not in result


def test_a_refusal_fails_with_every_reason_and_nothing_fails_without_one(run_action):
    refused = run_action(ActionModule, {"outcome": "refused", "refusals": ["host gpu-1, unit a: no."],
                                        "observed": {"gateway_checks": {"results": []}}})
    assert refused["failed"] is True and refused["msg"] == "host gpu-1, unit a: no."
    assert not run_action(ActionModule, {"outcome": "refused", "observed": {}}).get("failed")
