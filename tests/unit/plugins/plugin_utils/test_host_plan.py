"""One host's whole decision (plugin_utils/_host_plan.py): what the facts module reads, each service's plan and steps,
the refusals, the gateway checks, the report's rows, what the rollout needs of the host."""

import hashlib

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._host_plan import (
    HostPlanError,
    facts_options,
    metrics_target,
    plan_host,
    report_rows,
    resolve_drafters,
    selected_services,
    survey,
    verification,
    verify_targets,
    with_arm,
    with_speculation,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._records import fleet_row
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._settings import role_settings
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._steps import rollback_steps
from plan_facts import NEXTN, SETTINGS, facts_for

ROLE = role_settings(SETTINGS, gateway_host="10.0.0.5")


def switched_facts():
    """The facts of the NEXTN host after this collection switched it (our drop-in and environment file as planned)."""
    first = deployment_plan(facts_for(NEXTN), ROLE)
    facts = facts_for(NEXTN)
    facts["unit"]["managed_dropin"].update(exists=True, content=first["files"]["config"]["content"])
    facts["managed_env_file"] = {"exists": True, "path": "/etc/sglang/sglang-qwen.env",
                                 "sha256": hashlib.sha256(first["env_content"].encode()).hexdigest()}
    return facts


def test_the_facts_module_reads_what_the_settings_select():
    options = facts_options(dict(ROLE, services=[{"name": "sglang@*", "block_size": 8, "environment": {"T": "x"},
                                                  "launcher_module": "my.launcher"}], python="/opt/py"))
    assert options["services"] == [{"name": "sglang@*"}]  # an entry's environment (a token) stays on the controller
    assert options["launcher_modules"] == ["sglang.launch_server", "my.launcher"]
    assert options["python"] == "/opt/py" and options["rollout_record_dir"] == "/var/lib/gpufleet-sglang"
    assert facts_options(ROLE)["services"] == [{"name": "sglang-qwen"}]
    assert "python" not in facts_options(ROLE)


def test_a_switch_plans_every_step_and_a_second_run_none():
    decided = plan_host({"services": [facts_for(NEXTN)]}, ROLE, "gpu-1", run="run-1")
    plan = decided["services"][0]
    steps = plan["steps"]
    assert decided["refusals"] == [] and decided["nothing_to_do"] is False
    assert (plan["outcome"], plan["run"], plan["host"]) == ("switched", "run-1", "gpu-1")
    assert steps["mark_switching"] and steps["snapshot"] and steps["write_config"] and steps["restart"]
    assert steps["prove"] and steps["probe_after"] and steps["record"]
    assert steps["stop_units"] == [{"name": "train-qwen.service", "disable": True}]
    assert steps["wait_gpus"]["wait"] and steps["wait_gpus"]["message"] == (
        "GPUs still in use 60s after stopping train-qwen.service: ")
    assert not steps["leave_rotation"]  # no gateway, no balancer tasks
    assert "flags" not in plan["facts"] and plan["facts"]["python"] == "/root/ml-env/bin/python3"
    again = plan_host({"services": [switched_facts()]}, ROLE, "gpu-1")
    assert again["nothing_to_do"] is True and again["services"][0]["outcome"] == "unchanged"


def test_check_mode_plans_the_file_writes_and_nothing_that_changes_the_host_otherwise():
    steps = plan_host({"services": [facts_for(NEXTN)]}, ROLE, "gpu-1", check_mode=True)["services"][0]["steps"]
    assert steps["write_config"] and steps["write_env"] and steps["snapshot"]
    assert not any(steps[k] for k in ("mark_switching", "restart", "prove", "probe_before", "record"))
    assert not steps["wait_gpus"]["wait"]


def test_a_refused_service_plans_no_step_and_the_refusal_names_host_and_unit():
    decided = plan_host({"services": [facts_for(NEXTN)]}, dict(ROLE, block_size=8), "gpu-1")
    assert decided["refusals"][0].startswith("host gpu-1, unit sglang-qwen.service: cannot deploy DFLASH")
    assert decided["refusals"][0].endswith("Nothing was changed on this host.")
    assert not any(v for k, v in decided["services"][0]["steps"].items() if k not in ("wait_gpus",))


def test_behind_a_gateway_the_plan_checks_it_first_and_takes_the_host_out_and_back():
    settings = dict(ROLE, gateway_urls=["http://gw:30180"])
    decided = plan_host({"services": [facts_for(NEXTN)]}, settings, "gpu-1")
    assert decided["gateway_checks"] == [{"unit": "sglang-qwen.service", "worker_url": "http://10.0.0.5:30001",
                                          "allow_missing": False, "algorithm": "DFLASH", "mode": "switch"}]
    steps = decided["services"][0]["steps"]
    assert steps["leave_rotation"] and steps["leave_gateway"] and steps["drain"] and steps["rejoin_gateway"]
    assert not steps["leave_hook"] and steps["rejoin_gateways"] == []


def test_a_run_cut_out_of_rotation_is_put_back_and_its_gateway_not_demanded():
    facts = switched_facts()
    facts["intent"] = {"phase": "leaving_rotation", "run": "ctl pid 1 (5)", "leaving_rotation_at": 1000.0,
                       "gateway": {"urls": ["http://gw:30180"], "worker_url": "http://10.0.0.5:30001"}}
    settings = dict(ROLE, gateway_urls=["http://gw:30180"])
    decided = plan_host({"services": [facts]}, settings, "gpu-1")
    plan = decided["services"][0]
    # Nothing left to switch: only back into the gateway that run took it out of, and the intent forgotten.
    assert decided["nothing_to_do"] is False and decided["gateway_checks"] == []
    assert plan["steps"]["rejoin_gateway"] and plan["steps"]["rejoin_gateways"] == ["http://gw:30180"]
    assert plan["steps"]["clear_intent"] and not plan["steps"]["restart"]
    assert "interrupted: out of rotation since 1970-01-01T00:16:40Z by an unfinished run (ctl pid 1 (5)); the " \
           "next run puts the host back in rotation" in plan["lines"]


def test_a_run_cut_after_the_restart_is_restarted_proven_and_recorded():
    facts = switched_facts()
    facts["intent"] = {"phase": "restarting", "run": "r", "snapshot_exists": True, "speed_before": {"measured": True}}
    plan = plan_host({"services": [facts]}, ROLE, "gpu-1")["services"][0]
    steps = plan["steps"]
    assert steps["restart"] and steps["prove"] and steps["record"] and steps["probe_after"]
    # The copy of that run holds the state before it; the previous server was measured by it.
    assert not steps["snapshot"] and not steps["probe_before"] and not steps["write_config"]
    assert plan["outcome"] == "switched"


def test_a_cut_rollback_is_finished():
    facts = switched_facts()
    facts["intent"] = {"phase": "rolling_back", "run": "r", "reason": "the new server crashed"}
    steps = plan_host({"services": [facts]}, ROLE, "gpu-1")["services"][0]["steps"]
    assert steps["resume_rollback"] is True and not steps["restart"]


def test_a_cut_rollback_starts_the_previous_server_that_ran_before_the_switch_whatever_the_unit_is_now():
    """Cut while the crashing new server was down (or after the cut run had stopped it): the unit is not active now,
    but the service ran before that run's switch, as its intent says, so the rollback starts and checks it."""
    facts = switched_facts()
    facts["unit"]["active_state"] = "activating"
    facts["intent"] = {"phase": "rolling_back", "run": "r", "reason": "crashed", "switching_at": 1.0,
                       "restarting_at": 2.0, "old_active": True}
    plan = plan_host({"services": [facts]}, ROLE, "gpu-1")["services"][0]
    assert plan["steps"]["resume_rollback"] is True and plan["old_active"] is True
    rollback = rollback_steps(plan, facts, facts["intent"], {"msg": "cut"})
    assert rollback["start_old"] and rollback["wait_old"] and rollback["stop_new"] and rollback["restore"]
    # Without the word of the cut run (one that had changed nothing), the unit's state now decides.
    del facts["intent"]["old_active"]
    assert plan_host({"services": [facts]}, ROLE, "gpu-1")["services"][0]["old_active"] is False


def test_a_drafter_source_set_wrong_is_refused_naming_the_host():
    with pytest.raises(HostPlanError, match="host gpu-1: sglang_dflash_drafter must set either repo"):
        resolve_drafters(dict(ROLE, drafter={"revision": "x"}), "gpu-1")
    fetched = [{"services": ["*"], "path": "/store/x/abc"}]
    assert resolve_drafters(dict(ROLE, drafter={"repo": "x", "revision": "abc"}, draft_model_path=None), "gpu-1",
                            fetched)["draft_model_path"] == "/store/x/abc"


def test_what_the_rollout_needs_of_a_host_before_its_batch():
    decided = plan_host({"services": [switched_facts()]}, ROLE, "gpu-1")
    surveyed = survey("gpu-1", decided, ROLE)
    assert surveyed["nothing_to_do"] is True and surveyed["services"][0]["changed"] is False
    assert surveyed["metrics_target"] == {"name": "gpu-1", "url": "http://10.0.0.5:30001"}
    assert surveyed["kind"]["tp"] == 1
    assert metrics_target("gpu-1", dict(ROLE, metrics_url="http://m:9000", prometheus_instance="gpu-1:9000"), []) == {
        "name": "gpu-1", "url": "http://m:9000", "instance": "gpu-1:9000"}


def test_report_rows_judge_each_selected_service_with_the_deployment_plan():
    # Two selected services; the second's entry of sglang_dflash_services asks a block size the plan refuses.
    first = facts_for(NEXTN, selected_by=0)
    second = facts_for(NEXTN.replace("--port 30001", "--port 30002"), selected_by=1)
    second["unit"] = dict(second["unit"], id="sglang-b.service", name="sglang-b")
    result = {"changed": False, "services": [first, second]}
    settings = dict(SETTINGS, services=[{"name": "sglang-qwen"}, {"name": "sglang-b", "block_size": 0}])
    rows = report_rows("gpu-1", result, settings)
    assert [(r["host"], r["unit"], r["status"]) for r in rows] == [
        ("gpu-1", "sglang-qwen.service", "ready"), ("gpu-1", "sglang-b.service", "blocked")]
    assert "sglang_dflash_services (sglang-b) block_size must be between 1 and 1024, not 0" in rows[1]["reasons"]
    assert rows[0] == dict(fleet_row("gpu-1", first, deployment_plan(first, settings), "DFLASH"), interrupted=None)


def test_each_row_says_where_its_drafter_comes_from_and_whether_its_verified_copy_is_there():
    path = "/var/lib/gpufleet-sglang/drafters/lab--qwen-dflash/" + "a" * 40
    source = {"repo": "lab/qwen-dflash", "revision": "a" * 40}
    copy = {"source": "hub", "repo": "lab/qwen-dflash", "revision": "a" * 40, "commit": "a" * 40,
            "verified_at": "2026-12-06T07:00:00Z", "files": 4, "total_bytes": 4194550, "complete": True}
    fetched = facts_for(NEXTN, draft_model=dict(facts_for(NEXTN)["draft_model"], path=path + "/config.json",
                                                store_copy=copy))
    row = report_rows("gpu-1", fetched, dict(SETTINGS, draft_model_path=path, drafter=source))[0]
    assert row["status"] == "ready" and row["drafter"]["verified"] is True
    assert row["drafter"]["summary"].startswith("hub lab/qwen-dflash@%s: verified copy present" % ("a" * 40))
    # Not fetched yet: the report says so and does not block the host (a deployment fetches it first).
    missing = facts_for(NEXTN, draft_model={"path": path + "/config.json", "dir_exists": False,
                                            "error": "no such file", "store_copy": None})
    row = report_rows("gpu-1", missing, dict(SETTINGS, draft_model_path=path, drafter=source))[0]
    assert row["status"] == "ready", row["reasons"]
    assert (row["drafter"]["present"], row["drafter"]["verified"]) == (False, False)
    assert "not on the host yet" in row["drafter"]["summary"]
    # A plain drafter path: the path and whether it is there.
    plain = report_rows("gpu-1", facts_for(NEXTN), SETTINGS)[0]
    assert plain["drafter"]["source"] == "path" and plain["drafter"]["present"] is True


def test_report_rows_of_a_failed_facts_module_is_one_blocked_row_with_its_message():
    result = {"failed": True, "msg": "host gpu-1: timeout must be greater than 0, not 0"}
    rows = report_rows("gpu-1", result, SETTINGS)
    assert [r["status"] for r in rows] == ["blocked"]
    assert "gathering the facts failed: host gpu-1: timeout must be greater than 0" in rows[0]["reasons"][0]


def test_a_restart_restarts_a_switched_service_as_it_is_through_the_switchs_steps():
    settings = dict(ROLE, state="restarted", gateway_urls=["http://gw:30180"])
    decided = plan_host({"services": [switched_facts()]}, settings, "gpu-1")
    plan = decided["services"][0]
    steps = plan["steps"]
    assert (plan["mode"], plan["outcome"], decided["refusals"]) == ("restart", "restarted", [])
    assert steps["leave_gateway"] and steps["drain"] and steps["restart"] and steps["prove"] and steps["rejoin"]
    # Its files untouched, its switch's record kept (a day-two check compares with it), its intent cleared.
    assert not steps["write_config"] and not steps["write_env"] and not steps["record"] and steps["clear_intent"]
    assert plan["settings"]["min_speedup"] is None
    assert plan["lines"][0] == "restart sglang-qwen.service: restarted as it is (its files untouched)"


def test_a_restart_leaves_a_service_never_switched_alone_and_refuses_one_whose_files_differ():
    never = plan_host({"services": [facts_for(NEXTN)]}, dict(ROLE, state="restarted"), "gpu-1")
    assert never["nothing_to_do"] is True and never["services"][0]["outcome"] == "unchanged"
    assert never["services"][0]["lines"][0] == "restart sglang-qwen.service: not switched or not running: left as it is"
    drifted = plan_host({"services": [switched_facts()]}, dict(ROLE, state="restarted", draft_window_size=2048),
                        "gpu-1")
    assert drifted["refusals"] and "runs other settings than these would write" in drifted["refusals"][0]
    assert "deploy_dflash.yml writes them and restarts it" in drifted["refusals"][0]


def test_sglang_dflash_units_selects_only_those_services():
    first = switched_facts()
    second = facts_for(NEXTN.replace("--port 30001", "--port 30002"))
    second["unit"] = dict(second["unit"], id="sglang-b.service", name="sglang-b")
    both = {"services": [first, second]}
    assert [f["unit"]["id"] for f in selected_services(both, ROLE)] == ["sglang-qwen.service", "sglang-b.service"]
    assert [f["unit"]["id"] for f in selected_services(both, dict(ROLE, units=["sglang-b"]))] == ["sglang-b.service"]
    decided = plan_host(both, dict(ROLE, units=["sglang-qwen.service"], state="absent"), "gpu-1")
    assert [p["unit"] for p in decided["services"]] == ["sglang-qwen.service"]


def test_the_day_two_check_reads_each_switched_service_where_its_server_answers():
    stopped = switched_facts()
    stopped["unit"] = dict(stopped["unit"], id="sglang-c.service", active_state="failed")
    stopped["rollout_record"] = {"outcome": "switched", "after": {"accept_length": 6.0}}
    result = {"services": [switched_facts(), facts_for(NEXTN), stopped]}
    servers, records, verdicts = verify_targets(result, ROLE, 1796560000.0)
    # The switched service that runs, at the address our command gives it; the one never switched is not checked.
    assert servers == [{"unit": "sglang-qwen.service", "host": "127.0.0.1", "port": 30001}]
    assert set(records) == {"sglang-qwen.service", "sglang-c.service"}
    assert [(v["unit"], v["state"], v["accept_length_at_switch"]) for v in verdicts] == [
        ("sglang-c.service", "unknown", 6.0)]


def test_the_day_two_result_says_each_state_what_to_act_on_and_what_fails():
    verdicts = [{"unit": "a.service", "state": "engaged", "accept_length": 6.0, "accept_length_at_switch": 6.2,
                 "reason": "r", "time": "t"},
                {"unit": "b.service", "state": "off", "accept_length": 1.0, "accept_length_at_switch": 6.2,
                 "reason": "r", "time": "t1"}]
    settings = dict(ROLE, verify_on_degraded="revert", verify_fail_when=["degraded", "off"])
    first = verification("gpu-1", verdicts, settings)
    assert first["act_on"] == ["b.service"] and first["counts"] == {"engaged": 1, "degraded": 0, "off": 1,
                                                                    "unknown": 0}
    assert first["failing"] == ["gpu-1: b.service off (acceptance now 1.00, at the switch 6.20; r) at t1"]
    # Verified again after the revert: b is no longer switched; what was done is said, nothing is acted on again.
    again = verification("gpu-1", verdicts[:1], settings, previous=first)
    assert again["act_on"] == [] and again["failing"] == []
    assert again["lines"][-1] == "gpu-1: b.service was off at t1; reverted to its previous server by this run"
    assert verification("gpu-1", [], settings)["lines"] == ["gpu-1: no switched service to verify"]
    assert verification("gpu-1", verdicts, dict(settings, verify_on_degraded="report"))["act_on"] == []
    rows = with_speculation([{"unit": "a.service"}, {"unit": "c.service"}], verdicts)
    assert rows[0]["speculation"]["state"] == "engaged" and rows[1]["speculation"] is None


def test_an_arm_sets_its_speculative_setting_and_its_speed_is_the_judges():
    experiment = {"arms": [{"name": "b8", "hosts": 1, "settings": {"draft_model_path": "/models/b8", "block_size": 8}}]}
    settings = with_arm(dict(ROLE, arm="b8", experiment=experiment, min_speedup=1.2, min_accept_length=3.0,
                             drafter={"repo": "z/d", "revision": "a" * 40}))
    assert (settings["draft_model_path"], settings["block_size"], settings["drafter"]) == ("/models/b8", 8, None)
    # The one-client probe against the server it replaces does not gate an arm; its acceptance floor still does.
    assert settings["min_speedup"] is None and settings["min_accept_length"] == 3.0
    assert with_arm(dict(ROLE, min_speedup=1.2))["min_speedup"] == 1.2
    with pytest.raises(HostPlanError, match="sglang_dflash_arm b16 is not an arm of sglang_dflash_experiment"):
        with_arm(dict(ROLE, arm="b16", experiment=experiment))
