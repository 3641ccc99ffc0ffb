"""Batch 1 of the fleet rollout: each release got its own flag names (0.5.11 the old window flag)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import exec_start, release_flags, server_info, written_flags  # noqa: E402

testinfra_hosts = ["podman://fleet-01-0523", "podman://fleet-02-0511", "podman://fleet-03-ddtree"]


def test_each_release_got_its_own_flag_names(host):
    node = host.backend.get_hostname()
    flags = written_flags(host)
    info = server_info(host)
    if node == "fleet-02-0511":
        # 0.5.11 named the window flag differently; the switch wrote that name.
        assert "--speculative-dflash-draft-window-size" in flags and "--speculative-draft-window-size" not in flags
        assert int(info["speculative_dflash_draft_window_size"]) == 2048
    else:
        assert "--speculative-draft-window-size" in flags and "--speculative-dflash-draft-window-size" not in flags
        assert int(info["speculative_draft_window_size"]) == 2048
    if node == "fleet-03-ddtree":
        assert exec_start(host)[0] == "/opt/sglang-ddtree/bin/python3"
    if node == "fleet-01-0523":
        # Only 0.5.23's --help runs on a CPU node; its written flags are checked against that.
        assert set(flags) <= release_flags(host, exec_start(host)[0])
