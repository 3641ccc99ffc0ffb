"""nvidia-smi CSV parsing on recorded outputs, cgroup -> systemd unit mapping, query_gpus end to end."""

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.nvidia_smi import (
    NvidiaSmiParseError,
    attach,
    parse_apps,
    parse_gpus,
    query_gpus,
    read_cgroup,
    unit_from_cgroup,
    unit_of,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"


def read(name):
    return (FIX / name).read_text()


def proc_files(cgroups):
    """A cgroup reader over {pid: text}: other PIDs have no /proc entry, as for an exited process."""
    def reader(pid):
        if pid not in cgroups:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/proc/%d/cgroup" % pid)
        return cgroups[pid]
    return reader


def gone_pid():
    """The PID of a process that has exited and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_h100_box_with_training_and_sglang():
    gpus = parse_gpus(read("h100x8.gpus.csv"))
    apps = parse_apps(read("h100x8.apps.csv"))
    assert [g["index"] for g in gpus] == list(range(8))
    assert gpus[0] == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5b3a7e1c-2f4d-4e8a-9c1b-7d6e5f4a3b21",
                       "memory_total_mib": 81559, "memory_used_mib": 72790, "utilization_gpu_pct": 98,
                       "driver_version": "550.90.07"}
    cgroups = {48211: "0::/system.slice/train-qwen.service\n", 51877: "0::/system.slice/sglang.service\n",
               48213: "0::/user.slice\n"}
    gpus, apps = attach(gpus, apps, proc_files(cgroups))
    found = [(a["pid"], a["gpu_index"], a["unit"], a["unit_source"]) for a in apps[:3]]
    assert found == [(48211, 0, "train-qwen.service", "cgroup"), (48212, 1, None, "process gone"),
                     (48213, 2, None, "no unit")]
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


def test_unit_source_of_real_processes():
    # This test process: its cgroup is readable, in a unit or not depending on how the tests run.
    unit, source = unit_of(os.getpid())
    assert source == ("cgroup" if unit else "no unit")
    assert read_cgroup(os.getpid()) == Path("/proc/self/cgroup").read_text()
    # A process that exited between nvidia-smi's two queries and the read of its cgroup.
    assert unit_of(gone_pid()) == (None, "process gone")


def test_unreadable_cgroup_is_not_a_process_without_unit():
    def denied(pid):
        raise PermissionError(errno.EACCES, "Permission denied", "/proc/%d/cgroup" % pid)
    assert unit_of(1, denied) == (None, "unreadable")


@pytest.fixture
def recorded_smi(tmp_path):
    """An nvidia-smi that prints the recorded H100 GPUs, and as compute apps a live and a gone PID."""
    apps = tmp_path / "apps.csv"
    apps.write_text("%d, python3 train.py, 1000, GPU-5b3a7e1c-2f4d-4e8a-9c1b-7d6e5f4a3b21\n"
                    "%d, sglang::scheduler, 2000, GPU-unknown\n" % (os.getpid(), gone_pid()))
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!%s\nimport sys\nquery = ' '.join(sys.argv)\n"
                   "sys.stdout.write(open(%r if '--query-gpu' in query else %r).read())\n"
                   % (sys.executable, str(FIX / "h100x8.gpus.csv"), str(apps)))
    smi.chmod(0o755)
    return smi


def test_query_gpus_end_to_end(recorded_smi):
    r = query_gpus(str(recorded_smi), timeout=30)
    assert (r["nvidia_smi"], r["nvidia_smi_path"], r["gpu_count"], r["driver_version"]) == (
        "present", str(recorded_smi), 8, "550.90.07")
    live, gone = r["processes"]
    assert (live["pid"], live["gpu_index"], live["used_memory_mib"]) == (os.getpid(), 0, 1000)
    assert live["unit_source"] in ("cgroup", "no unit")
    assert (gone["gpu_index"], gone["unit"], gone["unit_source"]) == (None, None, "process gone")
    assert r["gpus"][0]["processes"] == [os.getpid()]
    assert r["units"] == ([live["unit"]] if live["unit"] else [])


def test_query_gpus_missing_and_failing(tmp_path):
    r = query_gpus(str(tmp_path / "nvidia-smi"))
    assert (r["nvidia_smi"], r["gpus"], r["gpu_count"]) == ("missing", [], 0)
    assert r["error"].startswith("nvidia-smi not found at %s" % (tmp_path / "nvidia-smi"))
    broken = tmp_path / "broken-smi"
    broken.write_text("#!/bin/sh\ncat %s\nexit 9\n" % (FIX / "driver-error.txt"))
    broken.chmod(0o755)
    r = query_gpus(str(broken))
    assert r["nvidia_smi"] == "error" and "rc=9" in r["error"] and "couldn't communicate" in r["error"]
    with pytest.raises(ValueError, match="timeout must be more than 0"):
        query_gpus(str(broken), timeout=0)
