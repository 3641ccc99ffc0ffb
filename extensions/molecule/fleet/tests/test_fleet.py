"""Rolling over three releases: old and new flag names, and a clean stop on the release without DFlash."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import exec_start, health_status, release_flags, server_info, written_flags  # noqa: E402

testinfra_hosts = ["podman://fleet-a-0523", "podman://fleet-b-0511", "podman://fleet-b2-ddtree",
                   "podman://fleet-c-056"]


def name(host):
    return host.backend.get_hostname()


def test_each_node_runs_what_it_should(host):
    node = name(host)
    flags = written_flags(host)
    assert host.service("sglang").is_running and health_status(host) == "200"
    if node == "fleet-c-056":
        # The rollout stopped here before any change: old unit, training still on the GPU.
        assert not any(f.startswith("--speculative") for f in flags)
        assert host.service("train-qwen").is_running
        assert server_info(host)["speculative_algorithm"] is None
        assert host.check_output("ls /etc/systemd/system | grep -c 'sglang.service.*~$' || true") == "0"
        return
    info = server_info(host)
    assert not host.service("train-qwen").is_running
    if node == "fleet-b2-ddtree":
        # The patched checkout: DDTREE, from the interpreter of its own venv.
        assert info["speculative_algorithm"] == "DDTREE"
        assert exec_start(host)[0] == "/opt/sglang-ddtree/bin/python3"
        assert "--speculative-draft-window-size" in flags
        return
    assert info["speculative_algorithm"] == "DFLASH"
    if node == "fleet-a-0523":
        assert "--speculative-draft-window-size" in flags
        assert "--speculative-dflash-draft-window-size" not in flags
        assert int(info["speculative_draft_window_size"]) == 2048
    else:
        # 0.5.11 named the window flag differently; the role wrote that name.
        assert "--speculative-dflash-draft-window-size" in flags
        assert "--speculative-draft-window-size" not in flags
        assert int(info["speculative_dflash_draft_window_size"]) == 2048


def test_written_flags_exist_in_each_release(host):
    node = name(host)
    python = exec_start(host)[0]
    if node == "fleet-a-0523":
        # Only 0.5.23's --help runs on a CPU node; its flags are checked against that.
        assert set(written_flags(host)) <= release_flags(host, python)
    # Everywhere: the server parsed the unit's flags with the release's parser (exit 2 otherwise).
    assert health_status(host) == "200"
