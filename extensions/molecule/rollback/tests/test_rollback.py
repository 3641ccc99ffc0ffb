"""A new unit that fails its health check: the previous unit is back and healthy."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import UNIT, health_status, server_info, written_flags  # noqa: E402

testinfra_hosts = ["podman://gpufleet-rollback"]


def test_previous_unit_restored(host):
    assert not any(f.startswith("--speculative") for f in written_flags(host))
    assert "Ansible managed" not in host.file(UNIT).content_string


def test_nothing_half_written_stays(host):
    # The environment file did not exist before this rollout: it is gone again.
    assert not host.file("/etc/sglang/sglang.env").exists


def test_previous_service_healthy_again(host):
    assert host.service("sglang").is_running
    assert health_status(host) == "200"
    assert server_info(host)["speculative_algorithm"] is None


def test_failure_message_quoted_the_journal(host):
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "rollout-output.txt")
    with open(path) as handle:
        output = handle.read()
    assert "checksum mismatch in model.safetensors" in output
    assert "the previous unit was restored and is healthy again" in output
