"""Bad input and faults on a switched node, each a real ansible-playbook run: the message names the
host, the unit and what to set, and nothing changed on the host (or it was put back exactly)."""

import base64
import contextlib
import json
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import DROPIN, REPO, health_status, recap_changed, rollout, server_info  # noqa: E402

testinfra_hosts = ["podman://gpufleet-default"]
NODE = "gpufleet-default"
OUR_DROPIN = "/etc/systemd/system/sglang.service.d/" + DROPIN


def state(host):
    """What must not change when a deployment is refused: every unit file and env file, the
    server's process, the training job's state."""
    files = host.check_output("find /etc/systemd/system /etc/sglang -type f -exec sha256sum {} + | sort")
    return {
        "files": files,
        "sglang_pid": host.check_output("systemctl show -p MainPID --value sglang.service"),
        "training": host.check_output("systemctl is-active train-qwen.service || true"),
        "training_enabled": host.check_output("systemctl is-enabled train-qwen.service || true"),
        "snapshot": host.file("/var/lib/gpufleet-sglang/sglang.service").exists,
    }


@pytest.fixture
def training_running(host):
    """The training job runs again (a refusal must come before it is stopped)."""
    host.check_output("systemctl enable --now train-qwen.service")
    yield
    host.check_output("systemctl disable --now train-qwen.service")


def extra(**variables):
    return ["-e", json.dumps(variables)]


@pytest.mark.parametrize("variables, message", [
    ({"sglang_dflash_environment": {"BAD-NAME": "x"}},
     "sglang_dflash_environment: 'BAD-NAME' is not a valid variable name"),
    ({"sglang_dflash_environment": {"HF_TOKEN": "hf_x\nExecStartPre=/bin/rm -rf /"}},
     "sglang_dflash_environment: the value of HF_TOKEN contains a control character"),
    ({"sglang_dflash_draft_model_path": "/models/Qwen3.6-27B-DFlash-badjson"},
     "/models/Qwen3.6-27B-DFlash-badjson/config.json is not valid JSON: Expecting ',' delimiter"),
    ({"sglang_dflash_draft_model_path": "/models/Qwen3.6-27B-DFlash-b8"},
     "/models/Qwen3.6-27B-DFlash-b8/config.json: the drafter was trained with block_size 8 but 16 was requested"),
    ({"sglang_dflash_python": "/nonexistent/python3"},
     "interpreter /nonexistent/python3"),
    ({"sglang_dflash_extra_args": ["--mem_fraction_static", "0.8"]},
     "--mem_fraction_static is not a flag of this release (did you mean --mem-fraction-static?)"),
    ({"sglang_dflash_draft_window_size": 8},
     "sglang_dflash_draft_window_size (8) must be at least sglang_dflash_block_size (16)"),
    ({"sglang_dflash_stop_units": ["train-qwen.service", "no-such-job.service"]},
     "sglang_dflash_stop_units: no-such-job.service do(es) not exist on this host"),
])
def test_refused_before_any_change(host, training_running, variables, message):
    before = state(host)
    run = rollout(*extra(**variables))
    assert run.returncode != 0
    assert "host %s, unit sglang.service: cannot deploy DFLASH" % NODE in run.output
    assert message in run.output, run.output[-3000:]
    assert "Nothing was changed on this host." in run.output
    assert "Traceback" not in run.output and "object of type" not in run.output
    assert state(host) == before  # the training job is still running: nothing was stopped


@pytest.mark.parametrize("option, value", [("sglang_dflash_gpu_release_timeout", "abc"),
                                           ("sglang_dflash_health_timeout", "-5"),
                                           ("sglang_dflash_min_speedup", "fast")])
def test_bad_numbers_from_the_command_line_are_refused_by_name(host, training_running, option, value):
    before = state(host)
    run = rollout("-e", "%s=%s" % (option, value))
    assert run.returncode != 0 and option in run.output, run.output[-3000:]
    assert state(host) == before


def test_ddtree_on_a_release_without_it_is_refused_unless_the_fallback_is_opted_in(host, training_running):
    before = state(host)
    run = rollout("-e", "sglang_dflash_algorithm=DDTREE")
    assert run.returncode != 0
    assert "host %s, unit sglang.service: cannot deploy DDTREE with sglang 0.5.23" % NODE in run.output
    assert "sglang_dflash_fallback_algorithm=DFLASH would run DFLASH on such hosts" in run.output
    assert "Nothing was changed on this host." in run.output and state(host) == before


def test_numbers_given_as_strings_on_the_command_line_work(host):
    before = state(host)
    run = rollout("-e", "sglang_dflash_health_timeout=60", "-e", "sglang_dflash_gpu_release_timeout=60",
                  "-e", "sglang_dflash_block_size=16", "-e", "sglang_dflash_require_free_gpus=true")
    assert run.returncode == 0, run.output[-3000:]
    assert recap_changed(run.output, NODE) == 0 and state(host) == before


def test_gpu_held_by_a_unit_not_to_be_stopped_is_refused_before_any_change(host, training_running):
    host.check_output("systemd-run --unit=rogue-job /usr/bin/python3 -c 'import time; time.sleep(600)' "
                      "gpufleet-holds-gpu=1:5000")
    try:
        before = state(host)
        run = rollout("-e", "sglang_dflash_draft_window_size=1024")
        assert run.returncode != 0
        assert "GPUs are held by processes the deployment would not stop: GPU 1 pid" in run.output
        assert "rogue-job.service, 5000 MiB" in run.output
        assert "add their units to sglang_dflash_stop_units" in run.output
        assert state(host) == before
    finally:
        host.run("systemctl stop rogue-job.service")


def test_gpus_still_held_after_stopping_puts_everything_back(host, training_running):
    """A unit in stop_units whose process survives the stop (KillMode=none): refused after the wait,
    the stopped units are started again and no file changed."""
    host.check_output(
        "printf '[Service]\\nExecStart=/usr/bin/python3 -c \"import time; time.sleep(600)\" "
        "gpufleet-holds-gpu=2:7000\\nKillMode=none\\n' > /etc/systemd/system/stubborn-train.service && "
        "systemctl daemon-reload && "
        "systemctl start stubborn-train.service")
    try:
        before = state(host)
        run = rollout("-e", "sglang_dflash_draft_window_size=1024", "-e", "sglang_dflash_gpu_release_timeout=4",
                      *extra(sglang_dflash_stop_units=["train-qwen.service", "stubborn-train.service"]))
        assert run.returncode != 0
        assert "GPUs still in use 4s after stopping train-qwen.service, stubborn-train.service" in run.output
        started_again = re.search(r"Units started again: (.+?)\. Last journal", run.output).group(1)
        assert set(started_again.split(", ")) == {"stubborn-train.service", "train-qwen.service"}
        assert "sglang.service was not restarted and runs as before" in run.output, run.output[-3000:]
        after = state(host)
        assert after["files"] == before["files"] and after["sglang_pid"] == before["sglang_pid"]
        assert after["training"] == "active" and not after["snapshot"]
    finally:
        host.run("systemctl stop stubborn-train.service; pkill -f gpufleet-holds-gpu=2; "
                 "rm -f /etc/systemd/system/stubborn-train.service; systemctl daemon-reload")


def test_server_info_mismatch_rolls_back(host):
    before = state(host)
    run = rollout("-e", "sglang_dflash_draft_model_path=/models/Qwen3.6-27B-DFlash-liar")
    assert run.returncode != 0
    assert "the server is healthy but runs other speculative settings than asked (/server_info): " \
           "speculative_algorithm=EAGLE (asked DFLASH)" in run.output, run.output[-3000:]
    assert "the previous service is back and healthy" in run.output
    after = state(host)
    assert after["files"] == before["files"] and not after["snapshot"]
    assert health_status(host) == "200"
    assert server_info(host)["speculative_draft_model_path"] == "/models/Qwen3.6-27B-DFlash"


def test_secret_flags_never_land_in_the_unit_or_a_diff(host):
    secret = "sk-gpufleet-api-key-0815"
    check = rollout("--check", "--diff", *extra(sglang_dflash_extra_args=["--api-key", secret]))
    assert check.returncode == 0, check.output[-3000:]
    assert "--api-key ${GPUFLEET_SGLANG_API_KEY}" in check.stdout and secret not in check.output
    run = rollout(*extra(sglang_dflash_extra_args=["--api-key", secret]))
    try:
        assert run.returncode == 0 and secret not in run.output, run.output[-3000:]
        assert secret not in host.file(OUR_DROPIN).content_string
        assert "--api-key ${GPUFLEET_SGLANG_API_KEY}" in host.file(OUR_DROPIN).content_string
        assert 'GPUFLEET_SGLANG_API_KEY="%s"' % secret in host.file("/etc/sglang/sglang.env").content_string
        assert server_info(host)["api_key"] == secret  # systemd expanded it for the server
    finally:
        assert rollout().returncode == 0  # back to the scenario's settings


FAKE_GPUS = "/etc/gpufleet-fake-gpu/gpus.csv"


@contextlib.contextmanager
def simulated_gpus(host, fixture):
    """The node's fake nvidia-smi reports the GPUs of tests/fixtures/nvidia-smi/FIXTURE (a SIMULATED card nobody
    here has) for the duration, then the scenario's GPUs again."""
    with open(os.path.join(REPO, "tests", "fixtures", "nvidia-smi", fixture), "rb") as handle:
        data = base64.b64encode(handle.read())
    host.check_output("cp %s /root/gpus.csv.scenario && echo %s | base64 -d > %s"
                      % (FAKE_GPUS, data.decode(), FAKE_GPUS))
    try:
        yield
    finally:
        host.check_output("mv /root/gpus.csv.scenario %s" % FAKE_GPUS)


def test_trtllm_mha_on_a_sm120_box_is_refused_before_any_change(host, training_running):
    with simulated_gpus(host, "rtx-pro-6000x8-SIMULATED.gpus.csv"):
        before = state(host)
        run = rollout(*extra(sglang_dflash_extra_args=["--attention-backend", "trtllm_mha"]))
        assert run.returncode != 0
        assert "host %s, unit sglang.service: cannot deploy DFLASH" % NODE in run.output
        assert ("sglang 0.5.23 on GPUs 0,1,2,3,4,5,6,7 (NVIDIA RTX PRO 6000 Blackwell Server Edition, Blackwell "
                "sm_120): --attention-backend trtllm_mha: trtllm_mha runs FlashInfer's TllmGenFmhaRunner") \
            in run.output, run.output[-3000:]
        assert "sglang#40558" in run.output and "sglang_dflash_allow_release_limits: [attention_backend_arch]" \
            in run.output
        assert "Nothing was changed on this host." in run.output and "Traceback" not in run.output
        assert state(host) == before  # same files, same server PID, the training job still running


def test_trtllm_mha_on_a_sm100_box_switches(host):
    with simulated_gpus(host, "b200x8-SIMULATED.gpus.csv"):
        run = rollout(*extra(sglang_dflash_extra_args=["--attention-backend", "trtllm_mha"]))
        try:
            assert run.returncode == 0, run.output[-3000:]
            assert "--attention-backend trtllm_mha" in host.file(OUR_DROPIN).content_string
            assert server_info(host)["attention_backend"] == "trtllm_mha"
        finally:
            assert rollout().returncode == 0  # back to the scenario's settings


def test_disaggregation_decode_is_refused_naming_the_upstream_issue(host, training_running):
    before = state(host)
    run = rollout(*extra(sglang_dflash_extra_args=["--disaggregation-mode", "decode"]))
    assert run.returncode != 0
    assert ("--disaggregation-mode decode: DFLASH crashes on the decode side of prefill/decode disaggregation"
            in run.output), run.output[-3000:]
    assert "upstream sglang#36140, open; the fix is pull request #34285" in run.output
    assert "Nothing was changed on this host." in run.output
    assert state(host) == before


def test_rollback_of_a_first_install_removes_what_it_created(host):
    run = rollout("-e", "sglang_dflash_service_name=sglang-fresh", "-e", "sglang_dflash_port=30007",
                  "-e", "sglang_dflash_python=/opt/sglang-0.5.23/bin/python3",
                  "-e", "sglang_dflash_draft_model_path=/models/Qwen3.6-27B-DFlash-broken",
                  "-e", "sglang_dflash_require_free_gpus=false", *extra(sglang_dflash_stop_units=[]))
    assert run.returncode != 0
    assert "host %s, unit sglang-fresh.service: the switch to DFLASH failed" % NODE in run.output
    assert "there was no unit before; ours was removed" in run.output, run.output[-3000:]
    assert not host.file("/etc/systemd/system/sglang-fresh.service").exists
    assert not host.file("/etc/sglang/sglang-fresh.env").exists
    assert host.check_output("systemctl show -p LoadState --value sglang-fresh.service") == "not-found"
    assert not host.file("/var/lib/gpufleet-sglang/sglang-fresh.service").exists


def test_fleet_report_shows_a_broken_host_as_blocked_with_the_reason(host, tmp_path):
    inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    run = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "gather_facts.yml"),
                          "-e", "sglang_dflash_python=/nonexistent/python3",
                          "-e", "sglang_fleet_report_dir=%s" % tmp_path], capture_output=True, text=True,
                         check=False, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = json.loads((tmp_path / "fleet-report.json").read_text())["hosts"]
    assert [r["status"] for r in rows] == ["blocked"]
    assert any("interpreter /nonexistent/python3" in reason for reason in rows[0]["reasons"]), rows[0]["reasons"]
    assert rows[0]["why_not"] == "other"  # not its GPU, not its release: the report's filter says so
    assert set((g["architecture"], g["sm"]) for g in rows[0]["facts"]["gpus"]["gpus"]) == {("Hopper", "sm_90")}
    assert "0 of 1 hosts can take the deployment" in run.stdout
