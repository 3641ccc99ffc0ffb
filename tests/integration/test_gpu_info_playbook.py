"""gpu_info through ansible-playbook with the fake nvidia-smi on recorded outputs."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

MODULE = "gpufleet.sglang.gpu_info"
TESTS = Path(__file__).resolve().parents[1]
FAKE = str(TESTS / "containers" / "fake-nvidia-smi")
GPUS = str(TESTS / "fixtures" / "nvidia-smi" / "a100x4.gpus.csv")


@pytest.fixture
def gpu_holder():
    """A live process that claims 30000 MiB on GPU 2, as a training job would."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "gpufleet-holds-gpu=2:30000"])
    time.sleep(0.2)
    yield proc
    proc.kill()
    proc.wait()


def test_gpus_and_live_processes(playbook, gpu_holder):
    r = playbook.module(MODULE, {"nvidia_smi": FAKE}, extra_env={"GPUFLEET_FAKE_GPUS": GPUS})
    assert not r.get("failed"), r.get("msg")
    assert r["nvidia_smi"] == "present" and r["gpu_count"] == 4 and r["driver_version"] == "535.183.01"
    assert [p["pid"] for p in r["processes"]] == [gpu_holder.pid]
    proc = r["processes"][0]
    assert proc["gpu_index"] == 2 and proc["used_memory_mib"] == 30000
    # Its cgroup was read: it is in a unit (systemd host) or in none (a container), never "gone".
    assert proc["unit_source"] == ("cgroup" if proc["unit"] else "no unit")
    assert r["gpus"][2]["memory_used_mib"] == 30000 and r["gpus"][2]["processes"] == [gpu_holder.pid]
    assert r["gpus"][0]["processes"] == []
    # What a DFlash deployment depends on: the recorded A100s, and the CUDA version of driver 535's banner.
    assert [(g["compute_capability"], g["mig_mode"], g["persistence_mode"]) for g in r["gpus"]] == [
        ("8.0", "Disabled", "Enabled")] * 4
    assert r["cuda_version"] == "12.2"


def test_missing_nvidia_smi_is_a_fact_unless_required(playbook, tmp_path):
    r = playbook.module(MODULE, {"nvidia_smi": str(tmp_path / "nvidia-smi")})
    assert not r.get("failed") and r["nvidia_smi"] == "missing" and r["gpus"] == []
    r = playbook.module(MODULE, {"nvidia_smi": str(tmp_path / "nvidia-smi"), "required": True})
    assert r["failed"] and r["msg"].startswith("host ") and "nvidia-smi not found" in r["msg"]


def test_impossible_timeout(playbook):
    r = playbook.module(MODULE, {"nvidia_smi": FAKE, "timeout": 0})
    assert r["failed"] and r["msg"].startswith("host ") and "timeout must be more than 0 (seconds), not 0" in r["msg"]


def test_driver_error(playbook):
    env = {"GPUFLEET_FAKE_GPUS": GPUS, "GPUFLEET_FAKE_SMI_MODE": "driver-error"}
    r = playbook.module(MODULE, {"nvidia_smi": FAKE}, extra_env=env)
    assert not r.get("failed") and r["nvidia_smi"] == "error" and "couldn't communicate" in r["error"]
    r = playbook.module(MODULE, {"nvidia_smi": FAKE, "required": True}, extra_env=env)
    assert r["failed"] and "rc=9" in r["msg"] and "couldn't communicate" in r["msg"]


def test_a_driver_that_lacks_a_queried_field(playbook):
    env = {"GPUFLEET_FAKE_GPUS": GPUS, "GPUFLEET_FAKE_SMI_MODE": "old-driver"}
    r = playbook.module(MODULE, {"nvidia_smi": FAKE, "required": True}, extra_env=env)
    assert r["failed"] and r["nvidia_smi"] == "error"
    assert 'rc=2: Field "compute_cap" is not a valid field to query.' in r["msg"]
    assert "this NVIDIA driver is older than gpu_info needs" in r["msg"]
