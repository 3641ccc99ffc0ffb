"""The way back (plugin_utils/_revert_plan.py): what a revert removes, where the servers answer, and what it
refuses before any change."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._revert_plan import revert_plan
from plan_facts import NEXTN, SETTINGS, facts_for
from test_host_state import switched

DROPIN = "/etc/systemd/system/sglang-qwen.service.d/90-gpufleet-sglang.conf"
ENV = "/etc/sglang/sglang-qwen.env"


def with_env_path(facts):
    facts["managed_env_file"] = dict(facts["managed_env_file"], path=ENV)
    return facts


def test_revert_removes_our_dropin_and_env_file_and_restarts_the_operators_command():
    facts, _record = switched()
    plan = revert_plan(with_env_path(facts), dict(SETTINGS, draft_model_path=None))
    assert plan["errors"] == [] and plan["mode"] == "revert" and plan["needs_change"]
    assert plan["changes"]["removed"] == [DROPIN, ENV]
    assert plan["files"]["config"] == {"path": DROPIN, "content": None, "changed": True}
    assert plan["files"]["env"]["changed"] and not plan["files"]["env"]["present"]
    assert plan["starts_server"] and plan["runs_after"] and not plan["removes_unit"]
    assert plan["exec_start"] == NEXTN and plan["algorithm"] == "NEXTN"
    assert (plan["old_port"], plan["port"]) == (30001, 30001)
    assert plan["settings"]["min_speedup"] is None and plan["settings"]["stop_units"] == []
    assert plan["restart_units"] == []


def test_restart_stopped_units_names_the_units_the_switch_stopped():
    facts, _record = switched()
    plan = revert_plan(with_env_path(facts), dict(SETTINGS, restart_stopped_units="yes"))
    assert plan["restart_units"] == ["train-qwen.service"]


def test_a_host_never_switched_needs_nothing():
    plan = revert_plan(facts_for(NEXTN), SETTINGS)
    assert plan["errors"] == [] and not plan["needs_change"] and plan["files"]["config"]["changed"] is False


def test_a_stray_environment_file_of_ours_goes_without_a_restart():
    facts = with_env_path(facts_for(NEXTN, managed_env_file={"exists": True, "sha256": "x"}))
    plan = revert_plan(facts, SETTINGS)
    assert plan["needs_change"] and not plan["starts_server"] and plan["changes"]["removed"] == [ENV]


def test_a_unit_that_does_not_exist_is_refused_by_name():
    facts = facts_for(NEXTN)
    facts["unit"] = {"exists": False, "id": "sglang-llama.service"}
    plan = revert_plan(facts, SETTINGS)
    assert plan["errors"] == ["unit sglang-llama.service does not exist on this host, so there is nothing to revert; "
                              "set sglang_dflash_service_name to the unit that was switched"]


@pytest.mark.parametrize("with_record", [True, False])
def test_our_dropin_edited_by_hand_is_refused_naming_the_file(with_record):
    facts, _record = switched()
    content = facts["unit"]["managed_dropin"]["content"]
    if with_record:
        facts["unit"]["managed_dropin"]["content"] = content.replace("--port 30001", "--port 30002")
        words = "was edited by hand since the switch of 2026-12-05T09:00:00Z"
    else:
        facts["rollout_record"] = {}
        facts["unit"]["managed_dropin"]["content"] = content.replace("Managed by gpufleet.sglang", "mine now")
        words = "does not carry the line 'Managed by gpufleet.sglang'"
    plan = revert_plan(facts, SETTINGS)
    assert len(plan["errors"]) == 1 and plan["errors"][0].startswith(DROPIN + " ") and words in plan["errors"][0]
    assert not plan["needs_change"]
