"""Two SGLang replicas on one 8-GPU box (SIMULATED GPUs), switched in one run: each keeps its own settings and GPUs,
the drop-in goes to the template's instance, a second run changes nothing; a third replica on GPUs the others use
is refused before any change, naming both; a crashing drafter on the second replica rolls back that one alone."""

import json
import os
import sys
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import DROPIN, exec_start, health_status, playbook, recap_changed, rollout, server_info, show  # noqa: E402

testinfra_hosts = ["podman://gpufleet-multi"]
HOST = "gpufleet-multi"
A, B = "sglang-qwen-a.service", "sglang@qwen-b.service"
PORTS = {A: 30000, B: 30002}
DROPINS = {unit: "/etc/systemd/system/%s.d/%s" % (unit, DROPIN) for unit in (A, B)}
BROKEN_B = json.dumps({"sglang_dflash_services": [
    {"name": "sglang-qwen-a"}, {"name": "sglang@*", "draft_model_path": "/models/Qwen3.6-27B-DFlash-broken"}]})


def main_pids(host):
    return dict((unit, show(host, unit, "MainPID")["MainPID"]) for unit in (A, B))


def gpu_holders(host):
    """{GPU index: set of units} from the fake nvidia-smi's compute apps and each process's cgroup."""
    uuids = dict(line.split(", ") for line in host.check_output(
        "nvidia-smi --query-gpu=uuid,index --format=csv,noheader,nounits").splitlines())
    held = {}
    for line in host.check_output("nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid "
                                  "--format=csv,noheader,nounits").splitlines():
        pid, _name, _mib, uuid = [f.strip() for f in line.split(",")]
        # cgroupfs without a cgroup namespace: the host's paths, the container's unit the innermost .service.
        cgroup = host.file("/proc/%s/cgroup" % pid).content_string
        unit = [part for part in cgroup.replace("\n", "/").split("/") if part.endswith(".service")][-1]
        held.setdefault(int(uuids[uuid]), set()).add(unit)
    return held


def test_both_replicas_are_switched_each_with_its_own_settings(host):
    for unit, port in PORTS.items():
        assert host.file(DROPINS[unit]).exists, unit
        assert health_status(host, port) == "200", unit
        info = server_info(host, port)
        assert info["speculative_algorithm"] == "DFLASH" and info["tp_size"] == 4, unit
    assert server_info(host, 30000)["speculative_draft_model_path"] == "/models/Qwen3.6-27B-DFlash"
    assert server_info(host, 30002)["speculative_draft_model_path"] == "/models/Qwen3.6-27B-DFlash-b8"
    assert "--speculative-dflash-block-size 16" in " ".join(exec_start(host, A))
    assert "--speculative-dflash-block-size 8" in " ".join(exec_start(host, B))
    # The drop-in of the instance, never the template's: another instance would get it too.
    assert not host.file("/etc/systemd/system/sglang@.service.d").exists
    # The instance keeps its port as the operator wrote it (from its EnvironmentFile) and its GPUs.
    assert "--port ${SGLANG_PORT}" in host.file(DROPINS[B]).content_string
    assert show(host, B, "EnvironmentFiles")["EnvironmentFiles"].startswith("/etc/sglang-replicas/qwen-b.conf")
    held = gpu_holders(host)
    assert all(held.get(i) == {A} for i in range(4)), held
    assert all(held.get(i) == {B} for i in range(4, 8)), held
    # The training job on GPU 0 was stopped once, for the first replica.
    assert host.run("systemctl is-active train-qwen.service").stdout.strip() == "inactive"


def test_the_second_run_restarted_neither_replica(host):
    # Molecule's idempotence step ran the rollout again (changed=0); each server still runs since its switch.
    for unit in (A, B):
        record = json.loads(host.file("/var/lib/gpufleet-sglang/%s.last-rollout.json" % unit).content_string)
        assert record["outcome"] == "switched" and record["unit"] == unit
        switched_at = datetime.fromisoformat(record["time"].replace("Z", "+00:00")).timestamp()
        started_at = host.check_output("date -d \"$(systemctl show -p ExecMainStartTimestamp --value %s)\" +%%s" % unit)
        assert int(started_at) <= switched_at, (unit, started_at, record["time"])


def fleet_report_rows(tmp_path):
    """{unit: row} of fleet-report.json and the text of fleet-report.md, from a real gather_facts.yml run."""
    run = playbook("gather_facts.yml", "-e", "sglang_fleet_report_dir=%s" % tmp_path)
    assert run.returncode == 0, run.output
    rows = json.loads((tmp_path / "fleet-report.json").read_text())["hosts"]
    return dict((r["unit"], r) for r in rows), (tmp_path / "fleet-report.md").read_text()


def test_the_report_shows_what_runs_and_that_the_files_were_edited_since(host, tmp_path):
    # qwen-b.conf as operators leave it (tests/containers/provision.yml): comments with old values after the real
    # ones, a continuation line, a quoted value. systemd gave the server GPUs 4-7 and port 30002; so does the report.
    environ = host.file("/proc/%s/environ" % main_pids(host)[B]).content_string.split("\0")
    assert "CUDA_VISIBLE_DEVICES=4,5,6,7" in environ and "SGLANG_PORT=30002" in environ
    assert "HF_HOME=/var/cache/hf models" in environ
    rows, _md = fleet_report_rows(tmp_path / "as-started")
    assert (rows[B]["port"], rows[B]["gpus"], rows[B]["environment_drift"]) == (30002, [4, 5, 6, 7], [])
    assert (rows[A]["port"], rows[A]["gpus"]) == (30000, [0, 1, 2, 3])
    conf = host.file("/etc/sglang-replicas/qwen-b.conf").content_string
    try:
        # Edited, not restarted: the report shows what runs, and that a restart would give another port.
        host.check_output("echo SGLANG_PORT=30012 >> /etc/sglang-replicas/qwen-b.conf")
        rows, md = fleet_report_rows(tmp_path / "edited")
        assert (rows[B]["port"], rows[B]["gpus"]) == (30002, [4, 5, 6, 7])
        assert rows[B]["environment_drift"] == ["SGLANG_PORT"]
        assert "sglang@qwen-b.service :30002 GPUs 4,5,6,7 (edited since start, restart pending: SGLANG_PORT)" in md
        assert rows[A]["environment_drift"] == []
    finally:
        host.check_output("cat > /etc/sglang-replicas/qwen-b.conf <<'EOF'\n%sEOF" % conf)


def test_a_replica_on_the_others_gpus_is_refused_before_any_change(host):
    host.check_output(
        "printf 'CUDA_VISIBLE_DEVICES=3,4\\nSGLANG_PORT=30004\\nGPUFLEET_STANDIN_GPU_MIB=1000\\n' "
        "> /etc/sglang-replicas/qwen-c.conf && systemctl start sglang@qwen-c.service")
    try:
        host.check_output("for i in $(seq 60); do curl -sf -o /dev/null http://127.0.0.1:30004/health && exit 0; "
                          "sleep 1; done; exit 1")
        before = (main_pids(host), host.check_output("sha256sum %s %s" % (DROPINS[A], DROPINS[B])))
        run = rollout()
        assert run.returncode != 0, run.output
        assert "sglang-qwen-a.service (GPUs 0,1,2,3 from CUDA_VISIBLE_DEVICES) and sglang@qwen-c.service " \
               "(GPUs 3,4 from CUDA_VISIBLE_DEVICES) share GPU 3" in run.output
        assert "sglang@qwen-b.service (GPUs 4,5,6,7 from CUDA_VISIBLE_DEVICES) and sglang@qwen-c.service " \
               "(GPUs 3,4 from CUDA_VISIBLE_DEVICES) share GPU 4" in run.output
        assert "Nothing was changed on this host" in run.output
        assert (main_pids(host), host.check_output("sha256sum %s %s" % (DROPINS[A], DROPINS[B]))) == before
        assert not host.file("/etc/systemd/system/sglang@qwen-c.service.d").exists
    finally:
        host.run("systemctl stop sglang@qwen-c.service; rm -f /etc/sglang-replicas/qwen-c.conf; "
                 "systemctl reset-failed sglang@qwen-c.service")


def test_a_crashing_drafter_on_the_second_replica_rolls_back_that_one_alone(host):
    reverted = playbook("revert_dflash.yml")
    assert reverted.returncode == 0, reverted.output
    assert recap_changed(reverted.output, HOST) > 0
    assert not any(host.file(path).exists for path in DROPINS.values())
    original_b = exec_start(host, B)

    run = rollout("-e", BROKEN_B)
    assert run.returncode != 0, run.output
    assert "unit sglang@qwen-b.service" in run.output and "rolled back" in run.output
    # The first replica was switched in this run and stays switched and healthy.
    assert host.file(DROPINS[A]).exists
    assert health_status(host, 30000) == "200"
    assert server_info(host, 30000)["speculative_algorithm"] == "DFLASH"
    # The second is as it was: no drop-in of ours, its own command, healthy, on its GPUs.
    assert not host.file(DROPINS[B]).exists
    assert exec_start(host, B) == original_b
    assert health_status(host, 30002) == "200"
    assert server_info(host, 30002).get("speculative_algorithm") in (None, "None")
    held = gpu_holders(host)
    assert all(held.get(i) == {B} for i in range(4, 8)), held
    # The training job stays stopped: the first replica now runs on its GPU.
    assert host.run("systemctl is-active train-qwen.service").stdout.strip() == "inactive"
    summary = run.output[run.output.index("TASK [A few lines per host]"):]
    assert "%s: %s (switch) sglang 0.5.23 DFLASH changed" % (HOST, A) in summary
    assert "%s: FAILED: " % HOST in summary
