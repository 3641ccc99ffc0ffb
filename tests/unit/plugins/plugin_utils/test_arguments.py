"""The server's new arguments on real releases' flags (plugin_utils/_arguments.py): switch from a running command, or
install from nothing."""

import tarfile

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import cli_flags
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import (
    resolve_command,
    split_exec_start,
    split_words,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._arguments import plan_arguments
from plan_facts import FIXTURES, INTENT, LAUNCHERS, NEXTN, flags, switch


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
