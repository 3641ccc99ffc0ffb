"""gpu_info's main(): the real H200 capture through the module (nvidia-smi's three calls answered from
tests/fixtures/nvidia-smi, nothing run), required, the timeout, the failures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import nvidia_smi
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import CommandResult
from ansible_collections.gpufleet.sglang.plugins.modules import gpu_info

from .module_runner import always_returned, host_msg, run_module

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia-smi"
# gpu_info's own query on an H200 (h200-gpu-info/README.md), no compute process, and plain nvidia-smi's banner.
H200 = {
    tuple(nvidia_smi.QUERY_GPUS): (0, (FIX / "h200-gpu-info" / "gpus-gpuinfo.txt").read_text()),
    tuple(nvidia_smi.QUERY_APPS): (0, (FIX / "h200" / "apps-idle.txt").read_text()),
    tuple(nvidia_smi.QUERY_BANNER): (0, (FIX / "h200-gpu-info" / "plain-idle.txt").read_text()),
}


@pytest.fixture
def smi(tmp_path):
    """An executable nvidia-smi path (the recorded answers stand in for running it)."""
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\nexit 99\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def recorded(monkeypatch):
    """nvidia_smi.run_argv answering from {query argv: (rc, stdout)}; returns the calls (argv, timeout)."""
    calls = []

    def install(answers):
        def run_argv(argv, timeout, env=None, **kwargs):
            calls.append((argv, timeout))
            rc, stdout = answers[tuple(argv[1:])]
            return CommandResult(argv, rc, stdout.encode(), b"", False, 0.01)
        monkeypatch.setattr(nvidia_smi, "run_argv", run_argv)
        return calls
    return install


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_h200_capture_through_the_module(smi, recorded, check_mode):
    calls = recorded(H200)
    done = run_module(gpu_info, {"nvidia_smi": str(smi)}, check_mode=check_mode)
    assert not done.failed and done.result["changed"] is False
    r = done.result
    assert set(always_returned(gpu_info)) <= set(r), set(always_returned(gpu_info)) - set(r)
    assert (r["nvidia_smi"], r["nvidia_smi_path"], r["gpu_count"], r["driver_version"], r["cuda_version"]) == (
        "present", str(smi), 1, "580.159.04", "13.0")
    (gpu,) = r["gpus"]
    assert (gpu["name"], gpu["compute_capability"], gpu["architecture"], gpu["sm"]) == (
        "NVIDIA H200", "9.0", "Hopper", "sm_90")
    assert (gpu["mig_mode"], gpu["persistence_mode"], gpu["processes"]) == ("Disabled", "Enabled", [])
    assert r["processes"] == [] and r["units"] == []
    # Three calls, each with the default timeout; check mode reads the same.
    assert [c[0][1:] for c in calls] == [nvidia_smi.QUERY_GPUS, nvidia_smi.QUERY_APPS, nvidia_smi.QUERY_BANNER]
    assert {c[1] for c in calls} == {30}


def test_the_timeout_reaches_each_call(smi, recorded):
    calls = recorded(H200)
    assert not run_module(gpu_info, {"nvidia_smi": str(smi), "timeout": 5}).failed
    assert [c[1] for c in calls] == [5, 5, 5]


def test_a_missing_nvidia_smi_is_a_result_unless_required(tmp_path):
    absent = str(tmp_path / "nowhere" / "nvidia-smi")
    done = run_module(gpu_info, {"nvidia_smi": absent})
    assert not done.failed
    assert (done.result["nvidia_smi"], done.result["gpus"], done.result["gpu_count"]) == ("missing", [], 0)
    assert done.result["error"].startswith("nvidia-smi not found at %s" % absent)

    done = run_module(gpu_info, {"nvidia_smi": absent, "required": True})
    assert done.failed and done.msg == host_msg(done.result["error"])
    assert done.result["nvidia_smi"] == "missing" and done.result["gpus"] == []


def test_a_driver_that_does_not_answer_fails_only_when_required(smi, recorded):
    broken = dict(H200)
    broken[tuple(nvidia_smi.QUERY_GPUS)] = (9, (FIX / "driver-error.txt").read_text())
    recorded(broken)
    done = run_module(gpu_info, {"nvidia_smi": str(smi)})
    assert not done.failed and done.result["nvidia_smi"] == "error"
    assert "rc=9: NVIDIA-SMI has failed because it couldn't communicate" in done.result["error"]
    done = run_module(gpu_info, {"nvidia_smi": str(smi), "required": True})
    assert done.failed and done.msg.startswith(host_msg("%s --query-gpu failed (rc=9" % smi))


@pytest.mark.parametrize("args, message", [
    ({"timeout": 0}, host_msg("timeout must be more than 0 (seconds), not 0")),
    ({"timeout": "soon"}, "timeout"),
    ({"required": "maybe"}, "required"),
    ({"nvidia-smi": "/usr/bin/nvidia-smi"}, "Unsupported parameters"),
])
def test_bad_options_fail_with_a_message_that_names_them(args, message):
    done = run_module(gpu_info, args)
    assert done.failed and message in done.msg, done.msg
