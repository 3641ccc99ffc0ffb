"""gpufleet.sglang.sglang_dflash_plan: the host read once, the decision made here
(plugins/action/sglang_dflash_plan.py)."""

import pytest
from ansible.errors import AnsibleActionFail
from ansible_collections.gpufleet.sglang.plugins.action.sglang_dflash_plan import FACTS_MODULE, ActionModule
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name
from conftest import Host
from plan_facts import NEXTN, SETTINGS, facts_for


def host_with(*facts):
    return Host({FACTS_MODULE: {"changed": False, "services": list(facts)}})


def test_the_host_is_read_once_with_the_options_the_settings_imply_and_the_facts_are_not_kept(run_action):
    host = host_with(facts_for(NEXTN))
    result = run_action(ActionModule, {"settings": SETTINGS}, host)
    assert [name for name, _args in host.runs] == [FACTS_MODULE]
    options = host.runs[0][1]
    assert options["services"] == [{"name": "sglang-qwen"}] and options["related_units"] == ["train-qwen.service"]
    plan = result["services"][0]
    assert result["changed"] is False and result["refusals"] == [] and plan["steps"]["restart"]
    assert plan["run"] == run_name() and plan["settings"]["gateway_host"] == "10.0.0.5"
    assert "flags" not in plan["facts"] and "ansible_facts" not in result


def test_check_mode_plans_no_restart(run_action):
    result = run_action(ActionModule, {"settings": SETTINGS}, host_with(facts_for(NEXTN)), check_mode=True)
    assert not result["services"][0]["steps"]["restart"] and result["services"][0]["steps"]["write_config"]


def test_the_survey_keeps_what_the_rollout_needs_as_this_runs_result(run_action):
    result = run_action(ActionModule, {"settings": SETTINGS, "mode": "survey"}, host_with(facts_for(NEXTN)))
    surveyed = result["ansible_facts"]["sglang_dflash_result"]
    assert surveyed["run"] == run_name() and surveyed["nothing_to_do"] is False and surveyed["host"] == "gpu-1"
    assert "services" not in result  # the plans (with the environment file's content) are not kept


def test_the_report_mode_returns_the_rows_and_keeps_them_as_the_hosts_result(run_action):
    result = run_action(ActionModule, {"settings": dict(SETTINGS, block_size=8), "mode": "report"},
                        host_with(facts_for(NEXTN)))
    assert [r["status"] for r in result["fleet_rows"]] == ["blocked"]
    assert result["ansible_facts"]["sglang_dflash_result"]["fleet_rows"] == result["fleet_rows"]


def test_a_drafter_source_set_wrong_refuses_the_host_before_reading_it(run_action):
    host = host_with(facts_for(NEXTN))
    result = run_action(ActionModule, {"settings": dict(SETTINGS, drafter={"src": "/a", "repo": "b"})}, host)
    assert host.runs == [] and result["refusals"][0].startswith("host gpu-1: sglang_dflash_drafter must set either")
    with pytest.raises(AnsibleActionFail, match="must set either repo"):
        run_action(ActionModule, {"settings": dict(SETTINGS, drafter={"src": "/a", "repo": "b"}), "mode": "drafters"})


def test_the_drafter_sources_and_what_each_gave(run_action):
    settings = dict(SETTINGS, draft_model_path=None, drafter={"repo": "lab/qwen", "revision": "a" * 40},
                    services=[{"name": "sglang-b", "drafter": {"src": "/srv/d"}}])
    sources = run_action(ActionModule, {"settings": settings, "mode": "drafters"})
    assert [s["source"]["repo"] for s in sources["hub"]] == ["lab/qwen"]
    assert [s["services"] for s in sources["controller"]] == [["sglang-b"]]
    gave = run_action(ActionModule, {"settings": settings, "mode": "drafters", "results": [
        {"item": sources["hub"][0], "path": "/store/lab--qwen/" + "a" * 40, "verified": True, "source": "hub"}]})
    assert gave["ansible_facts"]["sglang_dflash_drafters"][0]["path"] == "/store/lab--qwen/" + "a" * 40
    assert [d["repo"] for d in gave["collect"]] == [None]  # verified: its old revisions may go (2 are kept)


def test_the_rollback_is_decided_from_the_intent(run_action):
    plan = {"unit": "sglang-qwen.service", "mode": "switch", "starts_server": True, "old_active": True,
            "old_port": 30001, "facts": {}}
    decided = run_action(ActionModule, {"settings": SETTINGS, "mode": "rollback", "plan": plan,
                                        "intent": {"switching_at": 1.0, "restarting_at": 2.0},
                                        "failure": {"msg": "crashed", "failed": True}})
    steps = decided["steps"]
    assert steps["stop_new"] and steps["restore"] and steps["record"]
    # The switch's failure, kept for the message: a rescued failure of the rollback's rejoin replaces
    # ansible_failed_result before the record is written.
    assert decided["failure"] == {"msg": "crashed", "failed": True}
    with pytest.raises(AnsibleActionFail, match="needs the failed service's plan"):
        run_action(ActionModule, {"settings": SETTINGS, "mode": "rollback"})
