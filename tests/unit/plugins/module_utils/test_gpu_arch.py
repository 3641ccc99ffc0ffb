"""GPU architecture names by compute capability (module_utils/gpu_arch.py), on the real H200 capture and the
SIMULATED B200 and RTX PRO 6000 fixtures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.gpu_arch import describe, parse_capability, sm_major
from ansible_collections.gpufleet.sglang.plugins.module_utils.nvidia_smi import parse_gpus

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia-smi"


@pytest.mark.parametrize("csv, capability, architecture, sm", [
    ("h200x1.gpus.csv", "9.0", "Hopper", "sm_90"),
    ("a100x4.gpus.csv", "8.0", "Ampere", "sm_80"),
    ("b200x8-SIMULATED.gpus.csv", "10.0", "Blackwell", "sm_100"),
    ("rtx-pro-6000x8-SIMULATED.gpus.csv", "12.0", "Blackwell", "sm_120"),
])
def test_each_fixture_s_gpus_are_named(csv, capability, architecture, sm):
    for gpu in parse_gpus((FIXTURES / csv).read_text()):
        assert gpu["compute_capability"] == capability
        assert (describe(capability)["architecture"], describe(capability)["sm"]) == (architecture, sm)


def test_the_family_tells_datacenter_from_workstation_blackwell():
    assert describe("10.0")["family"] == "Blackwell, datacenter: B200, GB200"
    assert describe("12.0")["family"] == "Blackwell, workstation and consumer: RTX PRO 6000, RTX 50"
    assert describe("8.9")["architecture"] == "Ada Lovelace" and sm_major("12.1") == 12


def test_an_unlisted_minor_takes_its_major_s_name_and_junk_is_none():
    assert describe("9.2") == {"architecture": "Hopper", "sm": "sm_92", "family": "Hopper, H100, H200, GH200"}
    assert describe("42.0")["architecture"] == "unknown architecture"
    for junk in ("[N/A]", "", None, "9", "a.b"):
        assert parse_capability(junk) is None and describe(junk) == {"architecture": None, "sm": None, "family": None}
