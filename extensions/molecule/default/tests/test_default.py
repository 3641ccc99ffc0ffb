"""The full rollout on one node: unit content, service, endpoints, secrets, GPUs."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import (  # noqa: E402
    DROPIN,
    SECRET,
    UNIT,
    exec_start,
    health_status,
    release_flags,
    rollout,
    server_info,
    written_flags,
)

testinfra_hosts = ["podman://gpufleet-default"]
PYTHON = "/opt/sglang-0.5.23/bin/python3"


def test_unit_has_the_dflash_flags_of_this_release(host):
    argv = exec_start(host)
    assert argv[:3] == [PYTHON, "-m", "gpufleet_standin"]
    pairs = dict(zip(argv[3::2], argv[4::2]))
    assert pairs["--speculative-algorithm"] == "DFLASH"
    assert pairs["--speculative-draft-model-path"] == "/models/Qwen3.6-27B-DFlash"
    assert pairs["--speculative-dflash-block-size"] == "16"
    assert pairs["--speculative-draft-window-size"] == "2048"
    assert pairs["--model-path"] == "/models/Qwen3.6-27B" and pairs["--port"] == "30000"


def test_unit_writes_only_flags_the_release_has(host):
    flags = release_flags(host, PYTHON)
    assert len(flags) > 500
    assert set(written_flags(host)) <= flags
    assert "--speculative-dflash-draft-window-size" not in written_flags(host)


def test_service_active_enabled_listening_and_healthy(host):
    service = host.service("sglang")
    assert service.is_running and service.is_enabled
    assert host.socket("tcp://127.0.0.1:30000").is_listening
    assert health_status(host) == "200"


def test_server_confirms_the_speculative_settings(host):
    info = server_info(host)
    assert info["speculative_algorithm"] == "DFLASH"
    assert int(info["speculative_dflash_block_size"]) == 16
    assert int(info["speculative_draft_window_size"]) == 2048
    assert info["speculative_draft_model_path"] == "/models/Qwen3.6-27B-DFlash"
    assert info["version"] == "0.5.23"
    # 0.5.23's own parser imports on this CPU node: the flags were checked by SGLang itself.
    assert info["gpufleet_standin"]["parser"] == "sglang"


def test_operator_unit_untouched_our_dropin_beside_it(host):
    unit = host.file(UNIT).content_string
    assert "Managed by gpufleet" not in unit and "--speculative" not in unit
    dropin = host.file("/etc/systemd/system/sglang.service.d/" + DROPIN).content_string
    assert dropin.startswith("# Managed by gpufleet.sglang")
    assert "\nExecStart=\nExecStart=/opt/sglang-0.5.23/bin/python3 -m gpufleet_standin" in dropin
    assert "EnvironmentFile=/etc/sglang/sglang.env" in dropin
    # The operator's unit sets no stop settings: ours let SGLang drain on SIGTERM (sglang#35202).
    assert dropin.endswith("KillMode=mixed\nTimeoutStopSec=330\n")


def test_secrets_only_in_the_0600_environment_file(host):
    env = host.file("/etc/sglang/sglang.env")
    assert env.mode == 0o600 and env.user == "root"
    assert SECRET in env.content_string
    assert host.file("/etc/sglang").mode == 0o700
    assert SECRET not in host.check_output("cat /etc/systemd/system/sglang.service.d/*")
    assert SECRET not in host.check_output("journalctl --no-pager -o cat")


def test_training_stopped_and_gpus_free(host):
    train = host.service("train-qwen")
    assert not train.is_running and not train.is_enabled
    apps = host.check_output("nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid "
                             "--format=csv,noheader,nounits")
    assert apps.strip() == ""
    gpus = host.check_output("nvidia-smi --query-gpu=index,name,uuid,memory.total,memory.used,utilization.gpu,"
                             "driver_version --format=csv,noheader,nounits").splitlines()
    assert len(gpus) == 8 and "H100" in gpus[0]  # this node's recorded inventory (host_vars)


def test_no_backup_files_and_no_previous_state_left(host):
    assert host.check_output("find /etc/systemd/system /etc/sglang -name '*~' | wc -l") == "0"
    assert not host.file("/var/lib/gpufleet-sglang/sglang.service").exists


def test_check_diff_shows_a_change_and_changes_nothing(host):
    """A real `ansible-playbook --check --diff` with a new window size: a diff, and nothing touched."""
    dropin = "/etc/systemd/system/sglang.service.d/" + DROPIN
    before = host.file(dropin).content_string
    pid = host.check_output("systemctl show -p MainPID --value sglang")
    run = rollout("--check", "--diff", "-e", "sglang_dflash_draft_window_size=1024")
    assert run.returncode == 0, run.output[-3000:]
    assert "-ExecStart=" in run.stdout and "--speculative-draft-window-size 1024" in run.stdout
    assert "switch sglang.service: changes" in run.stdout
    assert SECRET not in run.output  # the environment file's diff is never shown
    assert host.file(dropin).content_string == before
    assert host.check_output("systemctl show -p MainPID --value sglang") == pid
    assert host.service("sglang").is_running and health_status(host) == "200"
