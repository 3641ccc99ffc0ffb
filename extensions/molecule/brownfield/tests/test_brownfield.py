"""The user's box switched in place: every operator setting still in effect, NEXTN gone, DFlash in,
the token never printed, faster than NEXTN with a matching drafter; a second run changes nothing; a
crashing drafter and a drafter that does not match the target (speed gate) are undone exactly."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import DROPIN, exec_start, health_status, recap_changed, rollout, server_info, show  # noqa: E402

testinfra_hosts = ["podman://gpufleet-brownfield"]
UNIT = "sglang-qwen.service"
TOKEN = "hf_brownfield_token_7f3a9c"
PORT = 30001
OUR_DROPIN = "/etc/systemd/system/sglang-qwen.service.d/" + DROPIN
EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")


def ephemeral(name):
    with open(os.path.join(EPHEMERAL, name)) as handle:
        return handle.read()


def test_check_run_showed_the_argument_diff_and_changed_nothing(host):
    output = ephemeral("check-output.txt")
    assert "switch sglang-qwen.service: changes" in output
    assert "removed: --speculative-algorithm NEXTN  --speculative-num-steps 3  --speculative-eagle-topk 1  " \
           "--speculative-num-draft-tokens 4" in output
    assert "added: --speculative-algorithm DFLASH  --speculative-draft-model-path /models/Qwen3.6-27B-DFlash  " \
           "--speculative-dflash-block-size 16  --speculative-draft-window-size 2048" in output
    assert "kept: --model-path /models/Qwen3.6-27B  --served-model-name qwen3.6-27b" in output
    assert "+ExecStart=/usr/bin/env /root/ml-env/bin/python3 -m gpufleet_standin" in output  # the drop-in's diff
    # The stop: their TimeoutStopSec stays (and is named as too short for the drain), KillMode=mixed is ours.
    assert "stop: SIGTERM to the main process only (KillMode=mixed, ours): SGLang finishes the requests in flight, " \
           "for up to 45 s (TimeoutStopSec=45, yours) before SIGKILL; TimeoutStopSec=45 (yours) is shorter than " \
           "sglang_dflash_drain_timeout + 30 s (330 s)" in output
    assert "+KillMode=mixed" in output and "+TimeoutStopSec" not in output
    assert TOKEN not in output
    # What the operator saw (the README quotes it).
    start = output.index("TASK [gpufleet.sglang.sglang_dflash : Show how the command line changes]")
    sys.stderr.write("\nbrownfield --check --diff output:\n%s\n" % output[start:start + 4000])
    after = ephemeral("after-check.txt")
    assert "dropin=absent" in after and "operator-files=unchanged" in after and "training=active" in after


def test_operator_files_are_byte_identical(host):
    assert host.run("sha256sum -c /root/operator-files.sha256").rc == 0


def test_every_operator_setting_is_still_in_effect(host):
    s = show(host, UNIT, "FragmentPath", "DropInPaths", "Environment", "EnvironmentFiles", "WorkingDirectory",
             "LimitNOFILE", "TimeoutStopUSec", "Restart", "User")
    assert s["FragmentPath"] == "/etc/systemd/system/sglang-qwen.service"
    assert s["DropInPaths"].split() == ["/etc/systemd/system/sglang-qwen.service.d/10-tuning.conf", OUR_DROPIN]
    env = s["Environment"]
    assert "CUDA_VISIBLE_DEVICES=1,2,3" in env and '"SGLANG_LOG_NOTE=tuned by hand"' in env
    assert "NCCL_DEBUG=WARN" in env
    assert "/etc/sglang-qwen/secrets.env (ignore_errors=no)" in s["EnvironmentFiles"]
    assert s["WorkingDirectory"] == "/srv/sglang-qwen"
    assert s["LimitNOFILE"] == "16384" and s["TimeoutStopUSec"] == "45s" and s["Restart"] == "always"
    assert show(host, UNIT, "KillMode")["KillMode"] == "mixed"  # ours: SIGTERM reaches the main process only


def test_nextn_flags_gone_dflash_flags_in_tuned_flags_kept(host):
    argv = exec_start(host, UNIT)
    assert argv[:4] == ["/usr/bin/env", "/root/ml-env/bin/python3", "-m", "gpufleet_standin"]
    pairs = dict((a, argv[i + 1]) for i, a in enumerate(argv[:-1]) if a.startswith("--"))
    for gone in ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens"):
        assert gone not in argv
    assert argv.count("--speculative-algorithm") == 1 and "NEXTN" not in argv
    assert pairs["--speculative-algorithm"] == "DFLASH"
    assert pairs["--speculative-draft-model-path"] == "/models/Qwen3.6-27B-DFlash"
    assert pairs["--speculative-dflash-block-size"] == "16"
    for kept in ("--mem-fraction-static", "--context-length", "--trust-remote-code", "--served-model-name",
                 "--port", "--host", "--model-path"):
        assert kept in argv
    info = server_info(host, PORT)
    assert info["speculative_algorithm"] == "DFLASH" and int(info["speculative_dflash_block_size"]) == 16
    assert float(info["mem_fraction_static"]) == 0.82 and int(info["context_length"]) == 32768
    assert info["trust_remote_code"] is True and info["served_model_name"] == "qwen3.6-27b"
    # The running process got the unit's Environment=, the drop-in's and the EnvironmentFile's variables.
    names = info["gpufleet_standin"]["environment_names"]
    assert {"CUDA_VISIBLE_DEVICES", "NCCL_DEBUG", "SGLANG_LOG_NOTE", "HF_TOKEN"} <= set(names)
    assert info["gpufleet_standin"]["cwd"] == "/srv/sglang-qwen"


def test_training_stopped_and_service_healthy(host):
    assert not host.service("train-qwen").is_running
    assert host.service(UNIT).is_running and health_status(host, PORT) == "200"


def test_token_never_printed_and_no_previous_state_left(host):
    assert TOKEN not in host.file(OUR_DROPIN).content_string
    assert TOKEN not in host.check_output("journalctl --no-pager -o cat")
    assert not host.file("/var/lib/gpufleet-sglang/sglang-qwen.service").exists
    assert host.check_output("find /etc/systemd/system -name '*~' | wc -l") == "0"


RECORD = "/var/lib/gpufleet-sglang/sglang-qwen.service.last-rollout.json"


def test_the_switch_was_measured_against_nextn_and_passed_the_gates(host):
    record = json.loads(host.file(RECORD).content_string)
    assert record["outcome"] == "switched" and record["algorithm"] == "DFLASH"
    before, after = record["before"], record["after"]
    # SIMULATED by the stand-in: NEXTN accepts 2.6 tokens per step, the matching drafter 6.4; what is
    # real is the measuring: four prompts of 64 tokens each through POST /generate, before and after,
    # counted as the server reports them: 64 tokens in ceil(64 / 2.6) = 25 verify steps is 2.56.
    assert before["accept_length"] == 2.56 and after["accept_length"] == 6.4
    assert before["accept_length_source"] == after["accept_length_source"] == "meta_info.spec_verify_ct"
    assert before["requests"] == after["requests"] == 4 and after["max_new_tokens"] == 64
    assert record["gates"]["passed"] and record["speedup"] >= 1.2
    assert (record["gates"]["min_accept_length"], record["gates"]["min_speedup"]) == (4.0, 1.2)
    sys.stderr.write("\nbrownfield speed proof: %s\n" % record["speed_summary"])


def test_second_run_changes_nothing_and_does_not_restart(host):
    # The operator trains again at night: a run with nothing to change must leave the job alone.
    host.run_expect([0], "systemctl enable --now train-qwen.service")
    training = show(host, "train-qwen.service", "MainPID", "UnitFileState")
    before = show(host, UNIT, "MainPID", "ExecMainStartTimestamp")
    run = rollout()
    assert run.returncode == 0, run.output[-3000:]
    assert recap_changed(run.output, "gpufleet-brownfield") == 0
    assert show(host, UNIT, "MainPID", "ExecMainStartTimestamp") == before
    assert show(host, "train-qwen.service", "MainPID", "UnitFileState") == training
    assert training["UnitFileState"] == "enabled" and training["MainPID"] != "0"
    assert TOKEN not in run.output


def test_crashing_drafter_is_undone_exactly(host):
    dropin_before = host.file(OUR_DROPIN).content_string
    pid_before = show(host, UNIT, "MainPID")["MainPID"]
    started = time.monotonic()
    run = rollout("-e", "sglang_dflash_draft_model_path=/models/Qwen3.6-27B-DFlash-broken")
    took = time.monotonic() - started
    assert run.returncode != 0
    assert "host gpufleet-brownfield, unit sglang-qwen.service: the switch to DFLASH failed" in run.output
    assert "crash loop" in run.output and "checksum mismatch in model.safetensors" in run.output
    assert "the previous service is back and healthy" in run.output
    assert TOKEN not in run.output
    # Byte for byte: the operator's files, our drop-in as it was, no previous-state copy left.
    assert host.run("sha256sum -c /root/operator-files.sha256").rc == 0
    assert host.file(OUR_DROPIN).content_string == dropin_before
    assert not host.file("/var/lib/gpufleet-sglang/sglang-qwen.service").exists
    assert health_status(host, PORT) == "200" and show(host, UNIT, "MainPID")["MainPID"] != pid_before
    assert server_info(host, PORT)["speculative_draft_model_path"] == "/models/Qwen3.6-27B-DFlash"
    line = max((x for x in run.output.splitlines() if "the switch to DFLASH failed" in x), key=len)
    # The journal quoted is the crashing server's, from its start on: not the previous server's lines.
    journal = line[line.index("Last journal lines of sglang-qwen.service: "):]
    assert "draft=/models/Qwen3.6-27B-DFlash-broken" in journal
    assert "draft=/models/Qwen3.6-27B-DFlash," not in journal and "NEXTN" not in journal
    assert "Stopping" not in journal.split(" | ")[0]
    sys.stderr.write("\nbrownfield crash run: %.1fs in all; %s\n" % (
        took, line[line.index("(") + 1:line.index("Last journal")][:400]))


def test_a_drafter_for_another_target_is_rolled_back_by_the_speed_gate(host):
    dropin_before = host.file(OUR_DROPIN).content_string
    run = rollout("-e", "sglang_dflash_draft_model_path=/models/Qwen3.6-27B-DFlash-mismatch")
    assert run.returncode != 0
    line = max((x for x in run.output.splitlines() if "the switch to DFLASH failed" in x), key=len)
    assert "does not pass the speed gates: average acceptance length 1.60 is below " \
           "sglang_dflash_min_accept_length 4.0" in line
    assert "below sglang_dflash_min_speedup 1.2" in line and "the previous service is back and healthy" in line
    assert host.run("sha256sum -c /root/operator-files.sha256").rc == 0
    assert host.file(OUR_DROPIN).content_string == dropin_before
    assert health_status(host, PORT) == "200"
    assert server_info(host, PORT)["speculative_draft_model_path"] == "/models/Qwen3.6-27B-DFlash"
    record = json.loads(host.file(RECORD).content_string)
    assert record["outcome"] == "rolled back" and record["after"]["accept_length"] == 1.6
    assert record["gates"]["passed"] is False and "speed gates" in record["reason"]


def test_a_server_that_breaks_on_its_first_request_is_rolled_back(host):
    run = rollout("-e", "sglang_dflash_draft_model_path=/models/Qwen3.6-27B-DFlash-nogen")
    assert run.returncode != 0
    assert "/health answered 200 but the first generation failed: POST /generate answered 500" in run.output
    assert "illegal memory access" in run.output and "the previous service is back and healthy" in run.output
    assert host.run("sha256sum -c /root/operator-files.sha256").rc == 0
    assert server_info(host, PORT)["speculative_draft_model_path"] == "/models/Qwen3.6-27B-DFlash"
