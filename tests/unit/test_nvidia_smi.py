"""nvidia-smi CSV parsing on recorded outputs, and cgroup -> systemd unit mapping."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.nvidia_smi import (
    NvidiaSmiParseError,
    attach,
    parse_apps,
    parse_gpus,
    unit_from_cgroup,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"


def read(name):
    return (FIX / name).read_text()


def test_h100_box_with_training_and_sglang():
    gpus = parse_gpus(read("h100x8.gpus.csv"))
    apps = parse_apps(read("h100x8.apps.csv"))
    assert [g["index"] for g in gpus] == list(range(8))
    assert gpus[0] == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5b3a7e1c-2f4d-4e8a-9c1b-7d6e5f4a3b21",
                       "memory_total_mib": 81559, "memory_used_mib": 72790, "utilization_gpu_pct": 98,
                       "driver_version": "550.90.07"}
    cgroups = {48211: "0::/system.slice/train-qwen.service\n", 51877: "0::/system.slice/sglang.service\n"}
    gpus, apps = attach(gpus, apps, cgroups.get)
    found = [(a["pid"], a["gpu_index"], a["unit"]) for a in apps[:2]]
    assert found == [(48211, 0, "train-qwen.service"), (48212, 1, None)]
    assert apps[4]["process_name"] == "sglang::scheduler_TP0" and apps[4]["unit"] == "sglang.service"
    assert gpus[0]["processes"] == [48211] and gpus[7]["processes"] == []


def test_idle_box_has_no_processes():
    assert len(parse_gpus(read("a100x4.gpus.csv"))) == 4
    assert parse_apps(read("a100x4.apps.csv")) == []


def test_not_available_values_and_names_with_commas():
    gpus = parse_gpus(read("l40s-4090.gpus.csv"))
    assert gpus[0]["utilization_gpu_pct"] is None and gpus[1]["name"] == "NVIDIA GeForce RTX 4090"
    apps = parse_apps(read("l40s-4090.apps.csv"))
    assert apps[0]["process_name"] == "python3 -m sglang.launch_server --model-path /models/a, b"
    assert apps[0]["used_memory_mib"] == 20498
    assert apps[1] == {"pid": 9902, "process_name": "/usr/bin/Xorg", "used_memory_mib": None,
                       "gpu_uuid": "GPU-0f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f"}


def test_driver_error_is_not_csv():
    with pytest.raises(NvidiaSmiParseError, match="couldn't communicate"):
        parse_gpus(read("driver-error.txt"))
    with pytest.raises(NvidiaSmiParseError):
        parse_apps(read("driver-error.txt"))


@pytest.mark.parametrize("text, unit", [
    ("0::/system.slice/sglang.service\n", "sglang.service"),
    ("0::/system.slice/sglang.service/payload\n", "sglang.service"),
    ("0::/user.slice/user-0.slice/session-3.scope\n", "session-3.scope"),
    ("12:memory:/system.slice/train.service\n1:name=systemd:/system.slice/train.service\n0::/\n", "train.service"),
    ("0::/\n", None),
    ("0::/docker/3f2a1b\n", None),
    ("", None),
])
def test_unit_from_cgroup(text, unit):
    assert unit_from_cgroup(text) == unit
