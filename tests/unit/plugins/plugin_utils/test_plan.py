"""The whole decision for one host (plugin_utils/_plan.py): what to write, every refusal before any change, the
stop settings, the gateways, DDTree and its fallback; on real releases' flags."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._arguments import plan_arguments
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import (
    deployment_plan,
    gateway_plan,
    stop_plan,
    time_span_seconds,
)
from plan_facts import INTENT, NEXTN, SETTINGS, ddtree_build_flags, facts_for, flags, nextn_args


def test_deployment_plan_writes_a_dropin_and_the_env_file():
    plan = deployment_plan(facts_for(NEXTN), SETTINGS)
    assert plan["errors"] == [] and plan["mode"] == "switch" and plan["needs_change"]
    dropin = plan["files"]["config"]
    assert dropin["path"] == "/etc/systemd/system/sglang-qwen.service.d/90-gpufleet-sglang.conf"
    assert "\n[Service]\nExecStart=\nExecStart=/usr/bin/env /root/ml-env/bin/python3 -m" in dropin["content"]
    assert "EnvironmentFile=/etc/sglang/sglang-qwen.env" in dropin["content"]
    assert "hf_secret_value" not in dropin["content"]
    assert 'HF_TOKEN="hf_secret_value"' in plan["env_content"] and plan["settings"]["health_timeout"] == 60
    assert plan["old_port"] == 30001 and plan["port"] == 30001


def test_deployment_plan_is_idempotent_against_what_it_wrote():
    first = deployment_plan(facts_for(NEXTN), SETTINGS)
    import hashlib

    facts = facts_for(NEXTN)
    facts["unit"]["managed_dropin"].update(exists=True, content=first["files"]["config"]["content"])
    facts["managed_env_file"] = {"exists": True, "sha256": hashlib.sha256(first["env_content"].encode()).hexdigest()}
    assert deployment_plan(facts, SETTINGS)["needs_change"] is False


def test_only_a_run_that_starts_the_server_stops_the_training_job():
    """A run with nothing to change on a running service must leave train-qwen (started again) alone."""
    import hashlib

    first = deployment_plan(facts_for(NEXTN), SETTINGS)
    assert first["starts_server"] is True
    facts = facts_for(NEXTN)
    facts["unit"]["managed_dropin"].update(exists=True, content=first["files"]["config"]["content"])
    facts["managed_env_file"] = {"exists": True, "sha256": hashlib.sha256(first["env_content"].encode()).hexdigest()}
    unchanged = deployment_plan(facts, SETTINGS)
    assert unchanged["needs_change"] is False and unchanged["starts_server"] is False
    # The service is stopped: starting it needs the GPUs, so the training job is stopped.
    facts["unit"]["active_state"] = "inactive"
    assert deployment_plan(facts, SETTINGS)["starts_server"] is True


@pytest.mark.parametrize("settings, facts, message", [
    ({"environment": {"BAD-NAME": "x"}}, {}, "'BAD-NAME' is not a valid variable name"),
    ({"environment": {"TOKEN": "a\nb"}}, {}, "the value of TOKEN contains a control character"),
    ({"gpu_release_timeout": "abc"}, {}, "sglang_dflash_gpu_release_timeout must be an integer, not 'abc'"),
    ({"health_timeout": "-5"}, {}, "sglang_dflash_health_timeout must be at least 1, not -5"),
    ({"require_free_gpus": "maybe"}, {}, "sglang_dflash_require_free_gpus must be true or false"),
    ({"draft_window_size": 8}, {}, "must be at least sglang_dflash_block_size (16)"),
    ({"stop_units": []}, {}, "GPUs are held by processes the deployment would not stop: GPU 0 pid 7 "
                             "(python3, train-qwen.service, 30000 MiB)"),
    ({}, {"draft_model": {"path": "/d/config.json", "dir_exists": True,
                          "error": "/d/config.json is not valid JSON: Expecting ',' delimiter"}},
     "/d/config.json is not valid JSON"),
    ({"block_size": 8}, {}, "/d/config.json: the drafter was trained with block_size 16 but 8 was requested"),
    ({}, {"problems": ["interpreter /nonexistent/python3: does not exist"]}, "interpreter /nonexistent/python3"),
])
def test_every_refusal_is_decided_before_any_change(settings, facts, message):
    plan = deployment_plan(facts_for(NEXTN, **facts), dict(SETTINGS, **settings))
    assert any(message in e for e in plan["errors"]), plan["errors"]
    assert plan["needs_change"] is False and plan["files"] == {}
    assert "hf_secret_value" not in str(plan["errors"]) and "a\nb" not in str(plan["errors"])


def test_a_later_operator_dropin_setting_execstart_is_refused():
    facts = facts_for(NEXTN)
    facts["unit"]["later_exec_start_dropins"] = ["/etc/systemd/system/sglang-qwen.service.d/99-local.conf"]
    plan = deployment_plan(facts, SETTINGS)
    assert any("99-local.conf sort after 90-gpufleet-sglang.conf" in e for e in plan["errors"])


def test_a_new_unit_uses_the_entry_point_the_release_recommends():
    facts = facts_for(NEXTN)
    facts["unit"] = {"exists": False, "id": "sglang.service"}
    facts["managed_unit_file"] = {"path": "/etc/systemd/system/sglang.service", "exists": False, "content": None}
    facts["entry_point"] = {"recommended": "sglang serve", "console_script": "/root/ml-env/bin/sglang"}
    settings = dict(SETTINGS, service_name="sglang", model_path="/models/M", launcher_module="sglang.launch_server")
    plan = deployment_plan(facts, settings)
    assert plan["errors"] == [] and plan["mode"] == "install"
    assert plan["exec_start"].startswith("/root/ml-env/bin/sglang serve --model-path /models/M --host 0.0.0.0")
    assert "ExecStart=/root/ml-env/bin/sglang serve " in plan["files"]["config"]["content"]
    facts["entry_point"] = {"recommended": "python -m sglang.launch_server", "console_script": None}
    assert deployment_plan(facts, settings)["exec_start"].startswith(
        "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /models/M")


@pytest.mark.parametrize("drafter, target, message", [
    ({"architectures": ["LlamaForCausalLM"]}, None, "architectures ['LlamaForCausalLM'] is not a DFlash drafter"),
    ({"dflash_config": {"target_layer_ids": [1, 20, 40]}}, {"text_config": {"num_hidden_layers": 36}},
     "target_layer_ids reach layer 40 but the target model has 36 layers"),
    ({"num_target_layers": 64}, {"num_hidden_layers": 48}, "num_target_layers is 64 but the target model has 48"),
])
def test_drafter_preflight_against_the_target(drafter, target, message):
    config = {"architectures": ["DFlash2DraftModel"], "num_hidden_layers": 5, "block_size": 16}
    config.update(drafter)
    facts = facts_for(NEXTN, model={"path": "/m/config.json", "dir_exists": True, "config": target},
                      draft_model={"path": "/d/config.json", "dir_exists": True, "config": config})
    errors = deployment_plan(facts, SETTINGS)["errors"]
    assert any(e.startswith("/d/config.json: ") and message in e for e in errors), errors


def test_drafter_schemas_old_and_new_pass():
    old = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5, "block_size": 16,
           "dflash_config": {"mask_token_id": 1, "target_layer_ids": [1, 30, 60]}}
    new = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5,
           "dflash_config": {"block_size": 16, "mask_token_id": 1, "target_layer_ids": [1, 30, 60]}}
    for config in (old, new):
        target = {"path": "/m/config.json", "dir_exists": True, "config": {"num_hidden_layers": 64}}
        facts = facts_for(NEXTN, model=target,
                          draft_model={"path": "/d/config.json", "dir_exists": True, "config": config})
        assert deployment_plan(facts, SETTINGS)["errors"] == []


def test_ddtree_budget_is_written_and_confirmed_where_the_build_has_it():
    plan = plan_arguments(ddtree_build_flags(), dict(INTENT, algorithm="DDTREE", ddtree_budget="15"), nextn_args(),
                          extra_algorithms=["DDTREE"])
    assert plan["errors"] == [] and plan["algorithm"] == "DDTREE" and plan["fallback"] is None
    assert "--speculative-ddtree-budget 15" in plan["changes"]["added"]
    assert plan["expected_server_info"]["speculative_ddtree_budget"] == 15
    plan = plan_arguments(flags("0.5.23"), dict(INTENT, algorithm="DDTREE", ddtree_budget=15), nextn_args(),
                          extra_algorithms=["DDTREE"])
    assert plan["errors"] == ["no flag for ddtree budget in this release"]


def test_a_build_without_ddtree_falls_back_only_when_opted_in():
    plan = plan_arguments(flags("0.5.23"), dict(INTENT, algorithm="DDTREE", ddtree_budget=15), nextn_args())
    assert len(plan["errors"]) == 1, plan["errors"]
    assert plan["errors"][0].startswith("speculative algorithm DDTREE is not supported by this release (it knows "
                                        "DFLASH, DSPARK, EAGLE")
    assert plan["errors"][0].endswith("; sglang_dflash_fallback_algorithm=DFLASH would run DFLASH on such hosts")
    plan = plan_arguments(flags("0.5.23"), dict(INTENT, algorithm="DDTREE", ddtree_budget=15,
                                                fallback_algorithm="DFLASH"), nextn_args())
    assert plan["errors"] == [] and plan["algorithm"] == "DFLASH"
    assert plan["fallback"]["from"] == "DDTREE" and plan["fallback"]["to"] == "DFLASH"
    assert "--speculative-algorithm DFLASH" in plan["changes"]["added"]
    assert not any("ddtree" in a for a in plan["changes"]["added"])
    # A build with DDTREE ignores the fallback.
    plan = plan_arguments(ddtree_build_flags(), dict(INTENT, algorithm="DDTREE", fallback_algorithm="DFLASH"),
                          nextn_args(), extra_algorithms=["DDTREE"])
    assert plan["algorithm"] == "DDTREE" and plan["fallback"] is None


def test_the_fallback_is_in_our_dropin_and_the_plan():
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, algorithm="DDTREE", fallback_algorithm="DFLASH"))
    assert plan["errors"] == [] and plan["algorithm"] == "DFLASH" and plan["fallback"]["to"] == "DFLASH"
    assert "# DFLASH instead of DDTREE: this build has no DDTREE" in plan["files"]["config"]["content"]


@pytest.mark.parametrize("settings, message", [
    ({"ddtree_budget": 15}, "sglang_dflash_ddtree_budget applies to the DDTREE algorithm only (asked: DFLASH)"),
    ({"min_accept_length": "abc"}, "sglang_dflash_min_accept_length must be a number, not 'abc'"),
    ({"min_accept_length": "0.5"}, "sglang_dflash_min_accept_length must be at least 1.0, not 0.5"),
    ({"min_speedup": 0}, "sglang_dflash_min_speedup must be more than 0.0, not 0"),
    ({"min_speedup": 1.1, "speed_probe": "false"}, "sglang_dflash_min_speedup need(s) the speed probe"),
    ({"fallback_algorithm": "EAGLE"}, "sglang_dflash_fallback_algorithm must be DFLASH or unset, not 'EAGLE'"),
])
def test_ddtree_and_gate_settings_are_checked_before_any_change(settings, message):
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, **settings))
    assert any(message in e for e in plan["errors"]), plan["errors"]
    assert plan["files"] == {}


def test_gates_are_converted_from_extra_vars_strings():
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, min_accept_length="4", min_speedup="1.25",
                                                  speed_probe="yes"))
    assert plan["errors"] == [] and plan["settings"]["min_accept_length"] == 4.0
    assert plan["settings"]["min_speedup"] == 1.25 and plan["settings"]["speed_probe"] is True


# ---- how a stop goes, and where the gateways know the host ---------------------------------------

@pytest.mark.parametrize("text, seconds", [
    ("45", 45), ("45s", 45), ("1min 30s", 90), ("5min 30s", 330), ("2h", 7200), ("500ms", 0.5),
    ("infinity", None), ("soon", None), ("5 parsecs", None),
])
def test_systemd_time_spans(text, seconds):
    assert time_span_seconds(text) == seconds


def test_our_stop_settings_when_the_operator_set_none():
    stop = stop_plan({"stop": {"operator_set": {}}}, {"drain_timeout": 300}, install=False)
    assert stop["lines"] == ["KillMode=mixed", "TimeoutStopSec=330"] and stop["drains"] and stop["notes"] == []
    assert stop["summary"].startswith("SIGTERM to the main process only (KillMode=mixed, ours)")


def test_the_operators_stop_settings_are_kept_and_what_they_do_is_said():
    stop = stop_plan({"stop": {"operator_set": {"KillMode": "control-group", "TimeoutStopSec": "45"}}},
                     {"drain_timeout": 300}, install=False)
    assert stop["lines"] == [] and stop["drains"] is False
    assert "requests in flight are cut" in stop["summary"] and "sglang#35202" in stop["notes"][0]
    short = stop_plan({"stop": {"operator_set": {"TimeoutSec": "45s"}}}, {"drain_timeout": 300}, install=False)
    assert short["lines"] == ["KillMode=mixed"]
    assert "TimeoutStopSec=45s (yours) is shorter than sglang_dflash_drain_timeout + 30 s (330 s)" in short["notes"][0]


def test_no_stop_settings_of_ours_when_switched_off():
    stop = stop_plan({"stop": {"operator_set": {}}}, {"stop_drain": False}, install=False)
    assert stop["lines"] == [] and "sglang_dflash_stop_drain=false" in stop["summary"]


def test_the_dropin_carries_the_stop_settings():
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, drain_timeout="120"))
    assert plan["files"]["config"]["content"].endswith("KillMode=mixed\nTimeoutStopSec=150\n")
    assert plan["gateway"] is None


def test_where_the_gateways_know_the_host():
    settings = {"gateway_urls": ["http://gw:30080/"], "gateway_host": "10.0.0.12"}
    assert gateway_plan(settings, 30001, 30002) == {
        "gateways": [{"kind": "smg", "url": "http://gw:30080"}], "urls": ["http://gw:30080"],
        "worker_url": "http://10.0.0.12:30001", "new_worker_url": "http://10.0.0.12:30002"}
    haproxy = {"kind": "haproxy", "url": "unix:///run/haproxy/admin.sock", "backend": "sglang"}
    both = gateway_plan(dict(settings, gateways=[haproxy, {"url": "http://gw2:30080/"}]), 30001, 30001)
    assert both["gateways"] == [{"kind": "smg", "url": "http://gw:30080"}, haproxy,
                                {"kind": "smg", "url": "http://gw2:30080"}]
    assert gateway_plan({"gateways": [haproxy]}, 30001, 30001)["urls"] == ["unix:///run/haproxy/admin.sock"]
    assert gateway_plan(dict(settings, gateway_host="fd00::1"), 30001, 30001)["worker_url"] == "http://[fd00::1]:30001"
    explicit = gateway_plan(dict(settings, gateway_worker_url="http://127.0.0.1:31121/"), 30001, 30001)
    assert explicit["worker_url"] == explicit["new_worker_url"] == "http://127.0.0.1:31121"
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, **settings))
    assert plan["errors"] == [] and plan["gateway"]["worker_url"] == "http://10.0.0.12:30001"


@pytest.mark.parametrize("settings, message", [
    ({"gateway_urls": "http://gw:30080"}, "sglang_dflash_gateway_urls must be a list of http:// or https:// URLs"),
    ({"gateway_urls": ["gw:30080"]}, "sglang_dflash_gateway_urls must be a list of http:// or https:// URLs"),
    ({"gateway_worker_url": "10.0.0.12:30000"}, "sglang_dflash_gateway_worker_url must be an http:// or https://"),
    ({"gateways": [{"kind": "haproxy", "url": "unix:///run/haproxy/admin.sock"}]},
     "sglang_dflash_gateways entry 1: set backend (the HAProxy backend that holds the fleet's servers)"),
    ({"gateways": [{"kind": "nginx", "url": "http://lb:80"}]},
     "sglang_dflash_gateways entry 1: kind must be smg or haproxy, not 'nginx'"),
    ({"drain_timeout": "0"}, "sglang_dflash_drain_timeout must be at least 1, not 0"),
    ({"stop_drain": "perhaps"}, "sglang_dflash_stop_drain must be true or false"),
])
def test_traffic_settings_are_checked_before_any_change(settings, message):
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, **settings))
    assert any(message in e for e in plan["errors"]), plan["errors"]


def test_no_drafter_path_is_refused_once_by_its_variable():
    """Issue #41: no drafter path set gave a second reason about `?/config.json`, a file nobody read."""
    from ansible_collections.gpufleet.sglang.plugins.plugin_utils._messages import refusal_message

    facts = facts_for(NEXTN)
    del facts["draft_model"]  # sglang_facts reads no drafter without a path
    plan = deployment_plan(facts, dict(SETTINGS, draft_model_path=None))
    assert plan["errors"] == ["sglang_dflash_draft_model_path is required (the drafter directory on the host), or "
                              "sglang_dflash_drafter (where it comes from)"]
    message = refusal_message(plan, facts, "box-a", "DFLASH")
    assert "config.json" not in message and "?/" not in message
    assert message.endswith("or sglang_dflash_drafter (where it comes from). Nothing was changed on this host.")
