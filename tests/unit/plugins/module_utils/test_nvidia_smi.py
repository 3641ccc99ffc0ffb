"""nvidia-smi parsing on real captures (H200) and reconstructed outputs, cgroup -> systemd unit mapping,
query_gpus end to end (also through the lab's fake nvidia-smi)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.nvidia_smi import (
    GPU_FIELDS,
    QUERY_APPS,
    QUERY_GPUS,
    NvidiaSmiParseError,
    attach,
    parse_apps,
    parse_cuda_version,
    parse_gpus,
    query_gpus,
    read_cgroup,
    unit_from_cgroup,
    unit_of,
)

TESTS = Path(__file__).resolve().parents[3]
FIX = TESTS / "fixtures" / "nvidia-smi"
H200 = FIX / "h200"
FAKE = TESTS / "containers" / "fake-nvidia-smi"
H200_UUID = "GPU-948683f4-b969-aa0e-4158-035f42ded5bb"
# The query of the captured gpus-*.txt files (h200/README.md): gpu_info's before it read more fields.
CAPTURED_BASE_FIELDS = ("index", "name", "uuid", "memory.total", "memory.used", "utilization.gpu", "driver_version")
CAPTURED_EXTRA_FIELDS = ("index", "uuid", "compute_cap", "mig.mode.current", "pci.bus_id", "power.draw",
                         "temperature.gpu", "clocks.sm", "persistence_mode", "ecc.errors.uncorrected.volatile.total")


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
                       "driver_version": "550.90.07", "compute_capability": "9.0", "mig_mode": "Disabled",
                       "persistence_mode": "Enabled"}
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
    assert read("h200/apps-idle.txt") == "" and parse_apps(read("h200/apps-idle.txt")) == []


def test_not_available_values_and_names_with_commas():
    gpus = parse_gpus(read("l40s-4090.gpus.csv"))
    assert gpus[0]["utilization_gpu_pct"] is None and gpus[1]["name"] == "NVIDIA GeForce RTX 4090"
    # GPUs without MIG say [N/A]: null, not the text.
    assert [(g["compute_capability"], g["mig_mode"], g["persistence_mode"]) for g in gpus] == [
        ("8.9", None, "Enabled"), ("8.9", None, "Disabled")]
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


# Real output of one H200 (driver 580.159.04), byte for byte: tests/fixtures/nvidia-smi/h200/README.md.

def test_captured_idle_and_busy_h200():
    idle = parse_gpus(read("h200/gpus-idle.txt"), CAPTURED_BASE_FIELDS)
    assert idle == [{"index": 0, "name": "NVIDIA H200", "uuid": H200_UUID, "memory_total_mib": 143771,
                     "memory_used_mib": 0, "utilization_gpu_pct": 0, "driver_version": "580.159.04"}]
    busy = parse_gpus(read("h200/gpus-busy.txt"), CAPTURED_BASE_FIELDS)
    assert busy[0]["memory_used_mib"] == 21099
    apps = parse_apps(read("h200/apps-busy.txt"))
    # The process name is the executable's full path; 21090 of the GPU's 21099 MiB are the process's.
    assert apps == [{"pid": 620, "process_name": "/opt/torch/.venv/bin/python3", "used_memory_mib": 21090,
                     "gpu_uuid": H200_UUID}]
    # Its cgroup (captured too) is cgroup v2 outside systemd: no unit, and it is not "gone".
    gpus, apps = attach(busy, apps, proc_files({620: read("h200/proc-pid-cgroup.txt")}))
    assert (apps[0]["gpu_index"], apps[0]["unit"], apps[0]["unit_source"]) == (0, None, "no unit")
    assert gpus[0]["processes"] == [620]


def test_captured_extra_fields_are_what_gpu_info_reads():
    extra = parse_gpus(read("h200/gpus-extra.txt"), CAPTURED_EXTRA_FIELDS)[0]
    assert (extra["compute_capability"], extra["mig_mode"], extra["persistence_mode"]) == ("9.0", "Disabled", "Enabled")
    # Fields gpu_info does not ask for keep their name and their text.
    assert (extra["pci_bus_id"], extra["power_draw"], extra["ecc_errors_uncorrected_volatile_total"]) == (
        "00000000:00:06.0", "79.74", "0")
    # Every field gpu_info asks for is one this nvidia-smi answered in the captured queries.
    assert set(GPU_FIELDS) <= set(CAPTURED_BASE_FIELDS) | set(CAPTURED_EXTRA_FIELDS)
    assert QUERY_GPUS[1] == QUERY_APPS[1] == "--format=csv,noheader,nounits"


def test_captured_gpu_info_query_on_a_real_h200():
    """gpu_info's exact query, as the driver answered it (h200-gpu-info/README.md)."""
    assert parse_gpus(read("h200-gpu-info/gpus-gpuinfo.txt")) == [{
        "index": 0, "name": "NVIDIA H200", "uuid": "GPU-3ad8fb19-eab8-8e99-96a7-7b17ce3f481c",
        "memory_total_mib": 143771, "memory_used_mib": 0, "utilization_gpu_pct": 0, "driver_version": "580.159.04",
        "compute_capability": "9.0", "mig_mode": "Disabled", "persistence_mode": "Enabled"}]
    # There is no CUDA version field; the banner of plain nvidia-smi (and --version) says it.
    assert read("h200-gpu-info/cuda-version-field.txt").startswith('Field "cuda_version" is not a valid field')
    assert parse_cuda_version(read("h200-gpu-info/plain-idle.txt")) == "13.0"
    assert parse_cuda_version(read("h200-gpu-info/version.txt")) == "13.0"
    assert parse_apps("") == [] and "No running processes found" in read("h200-gpu-info/plain-idle.txt")


def test_the_lab_h200_line_is_the_captures_joined():
    gpu = parse_gpus(read("h200x1.gpus.csv"))[0]
    idle = parse_gpus(read("h200/gpus-idle.txt"), CAPTURED_BASE_FIELDS)[0]
    extra = parse_gpus(read("h200/gpus-extra.txt"), CAPTURED_EXTRA_FIELDS)[0]
    assert gpu == dict(idle, compute_capability=extra["compute_capability"], mig_mode=extra["mig_mode"],
                       persistence_mode=extra["persistence_mode"])


def test_captured_header_and_units_are_refused_not_misread():
    # --format=csv keeps a header and units ("143771 MiB"): not the CSV gpu_info asks for.
    with pytest.raises(NvidiaSmiParseError, match="unexpected nvidia-smi line: 'index, name, uuid"):
        parse_gpus(read("h200/gpus-header.txt"), CAPTURED_BASE_FIELDS)


def test_cuda_version_from_the_captured_banner_agrees_with_the_xml():
    assert parse_cuda_version(read("h200/plain-busy.txt")) == "13.0"
    for name in ("h200/xml-idle.txt", "h200/xml-busy.txt"):
        root = ET.fromstring(read(name).split("\n", 2)[2])  # after the XML declaration and the DOCTYPE line
        assert root.findtext("cuda_version") == "13.0" and root.findtext("driver_version") == "580.159.04"
        gpu = root.find("gpu")
        assert gpu.findtext("persistence_mode") == "Enabled" and gpu.findtext("mig_mode/current_mig") == "Disabled"
    # `nvidia-smi -q` spells it with padding; a driver without CUDA says N/A.
    assert parse_cuda_version("CUDA Version                              : 12.4\n") == "12.4"
    assert parse_cuda_version("| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: N/A |") is None
    assert parse_cuda_version(read("h200/list.txt")) is None


def test_captured_bad_field_message_is_not_csv():
    # nvidia-smi prints it on stdout with exit code 2: it must never parse as a GPU.
    assert read("h200/badfield.stdout.txt").startswith('Field "nosuchfield" is not a valid field to query.')
    with pytest.raises(NvidiaSmiParseError, match="is not a valid field"):
        parse_gpus(read("h200/badfield.stdout.txt"))


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
    """An nvidia-smi that prints the recorded H100 GPUs, as compute apps a live and a gone PID, and with no
    arguments the captured H200 table (its banner says CUDA 13.0)."""
    apps = tmp_path / "apps.csv"
    apps.write_text("%d, python3 train.py, 1000, GPU-5b3a7e1c-2f4d-4e8a-9c1b-7d6e5f4a3b21\n"
                    "%d, sglang::scheduler, 2000, GPU-unknown\n" % (os.getpid(), gone_pid()))
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!%s\nimport sys\nquery = ' '.join(sys.argv[1:])\n"
                   "sys.stdout.write(open(%r if '--query-gpu' in query else %r if query else %r).read())\n"
                   % (sys.executable, str(FIX / "h100x8.gpus.csv"), str(apps), str(H200 / "plain-busy.txt")))
    smi.chmod(0o755)
    return smi


def test_query_gpus_end_to_end(recorded_smi):
    r = query_gpus(str(recorded_smi), timeout=30)
    assert (r["nvidia_smi"], r["nvidia_smi_path"], r["gpu_count"], r["driver_version"], r["cuda_version"]) == (
        "present", str(recorded_smi), 8, "550.90.07", "13.0")
    assert r["gpus"][7]["compute_capability"] == "9.0" and r["gpus"][7]["mig_mode"] == "Disabled"
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


def fake_smi_env(gpus_csv, mode=""):
    env = dict(os.environ, GPUFLEET_FAKE_GPUS=str(FIX / gpus_csv), GPUFLEET_FAKE_SMI_MODE=mode)
    return env


def test_query_gpus_through_the_lab_fake_on_the_h200_line(monkeypatch):
    """The lab's fake nvidia-smi answers gpu_info's three calls as the captured H200 did."""
    monkeypatch.setenv("GPUFLEET_FAKE_GPUS", str(FIX / "h200x1.gpus.csv"))
    monkeypatch.setenv("GPUFLEET_FAKE_SMI_MODE", "")
    r = query_gpus(str(FAKE), timeout=30)
    assert (r["nvidia_smi"], r["driver_version"], r["cuda_version"], r["gpu_count"]) == (
        "present", "580.159.04", "13.0", 1)
    gpu = dict(r["gpus"][0])
    # Live processes of this machine may claim fake GPU memory: the rest is the capture's.
    gpu.pop("memory_used_mib"), gpu.pop("processes")
    assert gpu == {"index": 0, "name": "NVIDIA H200", "uuid": H200_UUID, "memory_total_mib": 143771,
                   "utilization_gpu_pct": 0, "driver_version": "580.159.04", "compute_capability": "9.0",
                   "mig_mode": "Disabled", "persistence_mode": "Enabled", "architecture": "Hopper", "sm": "sm_90"}


def test_the_lab_fake_prints_the_captured_formats():
    run = subprocess.run([str(FAKE), "--query-gpu=index,nosuchfield", "--format=csv,noheader,nounits"],
                         env=fake_smi_env("h200x1.gpus.csv"), capture_output=True, text=True, check=False)
    assert (run.returncode, run.stdout) == (2, read("h200/badfield.stdout.txt"))
    run = subprocess.run([str(FAKE)], env=fake_smi_env("h200x1.gpus.csv"), capture_output=True, text=True,
                         check=True)
    # The banner line, byte for byte as the H200 printed it.
    assert run.stdout.splitlines()[2] == read("h200/plain-busy.txt").splitlines()[2]


def test_a_driver_without_a_queried_field_is_a_clear_error(monkeypatch):
    """An older driver's nvidia-smi rejects compute_cap as the capture shows for an unknown field."""
    monkeypatch.setenv("GPUFLEET_FAKE_GPUS", str(FIX / "a100x4.gpus.csv"))
    monkeypatch.setenv("GPUFLEET_FAKE_SMI_MODE", "old-driver")
    r = query_gpus(str(FAKE), timeout=30)
    assert (r["nvidia_smi"], r["gpus"], r["cuda_version"]) == ("error", [], None)
    assert r["error"].startswith('%s --query-gpu failed (rc=2: Field "compute_cap" is not a valid field to query. '
                                 "(this NVIDIA driver is older than gpu_info needs: it asks for index,name," % FAKE)


def test_the_cuda_version_is_kept_by_driver_version(recorded_smi, tmp_path):
    """The banner (plain nvidia-smi, 105 ms on the H200) is read once a driver; the GPUs and processes every run."""
    cache = tmp_path / "cache"
    calls = tmp_path / "calls"
    real = recorded_smi.read_text()
    # Each call logged: the same recorded answers.
    recorded_smi.write_text(real.replace("import sys\n", "import sys\nopen(%r, 'a').write(repr(sys.argv[1:]) + '\\n')\n"
                                         % str(calls), 1))
    assert query_gpus(str(recorded_smi), 30, str(cache), check_mode=True)["cuda_version"] == "13.0"
    assert not cache.exists()
    first = query_gpus(str(recorded_smi), 30, str(cache))
    again = query_gpus(str(recorded_smi), 30, str(cache))
    assert again == first and first["cuda_version"] == "13.0"
    asked = calls.read_text().splitlines()
    assert asked.count("[]") == 2 and len(asked) == 8  # the banner in check mode and the first run only
    # Another driver (the GPUs' query says which): the banner again.
    csv = tmp_path / "other-driver.csv"
    csv.write_text((FIX / "h100x8.gpus.csv").read_text().replace("550.90.07", "560.35.03"))
    recorded_smi.write_text(recorded_smi.read_text().replace(str(FIX / "h100x8.gpus.csv"), str(csv)))
    assert query_gpus(str(recorded_smi), 30, str(cache))["driver_version"] == "560.35.03"
    assert calls.read_text().splitlines().count("[]") == 3
