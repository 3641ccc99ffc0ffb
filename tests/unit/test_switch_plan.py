"""Planning the switch on real releases' flags (tests/fixtures/sglang/<release>/help.txt), from the
command a unit runs to the whole deployment decision."""

import os
import tarfile
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import cli_flags
from ansible_collections.gpufleet.sglang.plugins.module_utils.file_snapshot import Snapshot, SnapshotError
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import (
    render_exec_start,
    resolve_command,
    split_exec_start,
    split_words,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import command_to_dict
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._arguments import plan_arguments
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sglang"
LAUNCHERS = ["sglang.launch_server"]
INTENT = {"algorithm": "DFLASH", "draft_model_path": "/models/Qwen3.6-27B-DFlash", "block_size": 16,
          "draft_window_size": 4096}
NEXTN = ("/usr/bin/env /root/ml-env/bin/python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B "
         "--served-model-name qwen --port 30001 --mem-fraction-static 0.82 --context-length 32768 "
         "--trust-remote-code --speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 "
         "--speculative-num-draft-tokens 4")


def flags(version):
    return cli_flags.help_flags((FIXTURES / version / "help.txt").read_text())[0]


def switch(line, version="0.5.23", **settings):
    prefix, words = split_exec_start(line)
    command = resolve_command(words, LAUNCHERS)
    context = "shell" if command["wrapper"] == "shell" else "systemd"
    plan = plan_arguments(flags(version), dict(INTENT, **settings), {"args": command["args"], "context": context})
    rendered = render_exec_start(prefix, words, command, plan["args_raw"]) if plan["args_raw"] is not None else None
    return plan, rendered


# ---- the plan ---------------------------------------------------------------------------------------

def test_shell_wrapper_keeps_everything_around_the_server_command():
    line = ("/bin/bash -lc 'source /etc/profile.d/ml.sh && cd /srv && exec /root/ml-env/bin/python3 -m "
            "sglang.launch_server --model-path \"/models/Q 1\" --served-model-name $NAME --speculative-algorithm NEXTN "
            "--speculative-num-draft-tokens 4 >>/var/log/sglang.log 2>&1'")
    plan, rendered = switch(line, draft_model_path="/models/it's here")
    assert plan["errors"] == [] and plan["changes"]["kept"] == ["--model-path /models/Q 1", "--served-model-name $NAME"]
    prefix, words = split_exec_start(rendered)
    script = words[2].value
    assert script.startswith("source /etc/profile.d/ml.sh && cd /srv && exec /root/ml-env/bin/python3 -m "
                             "sglang.launch_server --model-path \"/models/Q 1\" --served-model-name $NAME "
                             "--speculative-algorithm DFLASH")
    assert "'/models/it'\"'\"'s here'" in script  # shell-quoted, as the shell will read it
    assert script.endswith(" >>/var/log/sglang.log 2>&1") and "NEXTN" not in script


def test_switch_from_nextn_keeps_tuning_removes_nextn_adds_dflash():
    plan, rendered = switch(NEXTN)
    assert plan["errors"] == []
    changes = plan["changes"]
    assert changes["removed"] == ["--speculative-algorithm NEXTN", "--speculative-num-steps 3",
                                  "--speculative-eagle-topk 1", "--speculative-num-draft-tokens 4"]
    assert changes["kept"] == ["--model-path /models/Qwen3.6-27B", "--served-model-name qwen", "--port 30001",
                               "--mem-fraction-static 0.82", "--context-length 32768", "--trust-remote-code"]
    assert changes["added"][0] == "--speculative-algorithm DFLASH" and changes["overridden"] == []
    assert rendered.startswith("/usr/bin/env /root/ml-env/bin/python3 -m sglang.launch_server --model-path ")
    assert plan["port"] == 30001 and plan["health_host"] == "127.0.0.1"
    assert plan["expected_server_info"]["speculative_draft_window_size"] == 4096


def test_role_variables_override_kept_values():
    plan, rendered = switch(NEXTN, port=31000, extra_args=["--mem-fraction-static", "0.85", "--enable-metrics"])
    assert plan["changes"]["overridden"] == ["--port 30001 -> --port 31000",
                                             "--mem-fraction-static 0.82 -> --mem-fraction-static 0.85"]
    assert "--enable-metrics" in plan["changes"]["added"] and plan["port"] == 31000
    assert " --port 31000 " in rendered and "0.82" not in rendered


@pytest.mark.parametrize("version, window_flag", [
    ("0.5.11", "--speculative-dflash-draft-window-size"),
    ("0.5.16", "--speculative-draft-window-size"),
    ("0.5.23", "--speculative-draft-window-size"),
])
def test_each_release_gets_its_own_flag_names(version, window_flag):
    plan, rendered = switch(NEXTN.replace(" --speculative-eagle-topk 1", ""), version=version)
    assert plan["errors"] == [], plan["errors"]
    assert "%s 4096" % window_flag in rendered
    written = {w for w in rendered.split() if w.startswith("--")}
    assert written <= cli_flags.argparse_help.option_strings(flags(version))


def test_install_mode_builds_the_command_from_the_variables():
    plan = plan_arguments(flags("0.5.23"), dict(INTENT, model_path="/models/M", tp_size=2))
    assert plan["mode"] == "install" and plan["errors"] == []
    assert plan["args"][:8] == ["--model-path", "/models/M", "--host", "0.0.0.0", "--port", "30000", "--tp-size", "2"]
    assert plan_arguments(flags("0.5.23"), INTENT)["errors"] == [
        "sglang_dflash_model_path is required to install a new service"]


def test_release_without_dflash_and_flags_it_no_longer_has():
    plan, _r = switch(NEXTN, version="0.5.6")
    assert plan["errors"][0] == ("speculative algorithm DFLASH is not supported by this release "
                                 "(it knows EAGLE, EAGLE3, NEXTN, NGRAM, STANDALONE)")
    plan, _r = switch(NEXTN + " --enable-gone-flag --max-running-requests 8")
    assert plan["errors"] == ["the running command line passes --enable-gone-flag is not accepted by this release; "
                              "remove it from the unit first"]


def test_ddtree_only_where_the_build_has_it():
    prefix, words = split_exec_start(NEXTN)
    args = {"args": resolve_command(words, LAUNCHERS)["args"], "context": "systemd"}
    plan = plan_arguments(flags("0.5.23"), dict(INTENT, algorithm="DDTREE"), args)
    assert "DDTREE is not supported" in plan["errors"][0]
    plan = plan_arguments(flags("0.5.23"), dict(INTENT, algorithm="DDTREE"), args, extra_algorithms=["DDTREE"])
    assert plan["errors"] == [] and "--speculative-algorithm DDTREE" in plan["changes"]["added"]


@pytest.mark.parametrize("extra, message", [
    (["--mem_fraction_static", "0.8"], "--mem_fraction_static is not a flag of this release "
                                       "(did you mean --mem-fraction-static?)"),
    (["--speculative-num-steps", "3"], "--speculative-num-steps is set by the role"),
    (["--port=31000"], "--port is set by the role"),
])
def test_extra_args_are_checked(extra, message):
    plan, rendered = switch(NEXTN, extra_args=extra)
    assert rendered is None and any(e.startswith(message) for e in plan["errors"]), plan["errors"]


def test_hidden_deprecated_alias_in_extra_args_names_the_replacement(tmp_path):
    with tarfile.open(FIXTURES / "0.5.16" / "parser-sources.tar.xz") as tar:
        tar.extractall(tmp_path)
    merged = cli_flags.merge_hidden(flags("0.5.16"), cli_flags.source_flags(str(tmp_path / "sglang"))[0])
    plan = plan_arguments(merged, dict(INTENT, draft_window_size=None, model_path="/m",
                                       extra_args=["--speculative-dflash-draft-window-size", "9"]))
    assert any("hidden, deprecated alias" in e and "use --speculative-draft-window-size" in e
               for e in plan["errors"]), plan["errors"]


def test_secret_flags_move_to_the_environment(tmp_path):
    plan, rendered = switch(NEXTN + " --api-key sk-old-secret", extra_args=["--admin-api-key", "adm-secret"])
    assert plan["secret_env"] == {"GPUFLEET_SGLANG_API_KEY": "sk-old-secret",
                                  "GPUFLEET_SGLANG_ADMIN_API_KEY": "adm-secret"}
    assert "sk-old-secret" not in rendered and "adm-secret" not in rendered
    assert "--api-key ${GPUFLEET_SGLANG_API_KEY}" in rendered
    assert "adm-secret" not in str(plan["changes"])
    plan, rendered = switch("/bin/sh -c 'exec /opt/venv/bin/python -m sglang.launch_server --port 1 --api-key sk-x'")
    # The shell expands it, not systemd ($$), and systemd hands the script over unchanged.
    assert '--api-key "$$GPUFLEET_SGLANG_API_KEY"' in split_words(rendered)[2].value


def test_a_port_set_from_a_variable_must_be_given():
    plan, _r = switch(NEXTN.replace("--port 30001", "--port ${PORT}"))
    assert plan["errors"] == ["cannot tell the server's port from --port ${PORT} (expanded when the service "
                              "starts); set sglang_dflash_port"]


# ---- the whole decision ------------------------------------------------------------------------------

def facts_for(line, version="0.5.23", **extra):
    prefix, words = split_exec_start(line)
    command = resolve_command(words, LAUNCHERS)
    facts = {
        "problems": [], "python": command["python"], "algorithms": [],
        "unit": {"exists": True, "id": "sglang-qwen.service", "active_state": "active", "managed_by_us": False,
                 "exec_start": {"value": line, "prefix": prefix, "words": [[w.value, w.raw] for w in words]},
                 "command": command_to_dict(command), "later_exec_start_dropins": [],
                 "managed_dropin": {"path": "/etc/systemd/system/sglang-qwen.service.d/90-gpufleet-sglang.conf",
                                    "exists": False, "content": None}},
        "flags": {"list": flags(version)},
        "draft_model": {"path": "/d/config.json", "dir_exists": True,
                        "config": {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5,
                                   "dflash_config": {"block_size": 16}}},
        "gpus": {"nvidia_smi": "present", "processes": [
            {"pid": 7, "gpu_index": 0, "process_name": "python3", "unit": "train-qwen.service",
             "used_memory_mib": 30000}]},
        "related_units": {"train-qwen.service": {"exists": True, "active_state": "active",
                                                 "unit_file_state": "enabled"}},
        "managed_env_file": {"exists": False, "sha256": None},
    }
    facts.update(extra)
    return facts


SETTINGS = dict(INTENT, service_name="sglang-qwen", dropin_name="90-gpufleet-sglang.conf",
                env_file="/etc/sglang/sglang-qwen.env", stop_units=["train-qwen.service"], require_free_gpus=True,
                disable_stopped_units=True, environment={"HF_TOKEN": "hf_secret_value"}, health_timeout="60")


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


# ---- the previous-state copy ----------------------------------------------------------------------

def test_snapshot_restores_bytes_modes_and_absence(tmp_path):
    kept = tmp_path / "etc" / "env"
    kept.parent.mkdir()
    kept.write_bytes(b"TOKEN=old\n")
    kept.chmod(0o600)
    created = tmp_path / "unit.d" / "90.conf"
    snapshot = Snapshot(str(tmp_path / "state"))
    files = snapshot.save([str(kept), str(created)])
    assert [f["existed"] for f in files] == [True, False]
    assert oct(os.stat(tmp_path / "state").st_mode & 0o777) == "0o700"
    with pytest.raises(SnapshotError, match="interrupted run"):
        snapshot.save([str(kept)])
    kept.write_bytes(b"TOKEN=new\n")
    kept.chmod(0o644)
    created.parent.mkdir()
    created.write_text("[Service]\n")
    _files, restored = snapshot.restore()
    assert kept.read_bytes() == b"TOKEN=old\n" and oct(kept.stat().st_mode & 0o777) == "0o600"
    assert not created.exists() and not created.parent.exists()
    assert sorted(restored) == sorted([str(kept), str(created)]) and not (tmp_path / "state").exists()


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


# ---- DDTree: its budget where the build has it, DFLASH only where the operator opted in -------------

def ddtree_build_flags():
    """0.5.23's flags plus the budget flag of sgl-project/sglang PR #29907, as a patched build has it."""
    budget = {"name": "--speculative-ddtree-budget", "aliases": [], "takes_value": True, "metavar": None,
              "choices": None, "default": None, "hidden": False,
              "help": "DDTREE only. Tree expansion budget. Defaults to speculative_num_draft_tokens - 1."}
    return flags("0.5.23") + [budget]


def nextn_args():
    _prefix, words = split_exec_start(NEXTN)
    return {"args": resolve_command(words, LAUNCHERS)["args"], "context": "systemd"}


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
