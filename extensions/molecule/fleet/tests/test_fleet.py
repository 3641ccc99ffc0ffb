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


def test_fleet_report_has_the_right_facts_for_each_host(host):
    import json

    if name(host) != "fleet-a-0523":
        return  # one check of the controller-side report is enough
    report_dir = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-report")
    with open(os.path.join(report_dir, "fleet-report.json")) as handle:
        rows = {r["host"]: r for r in json.load(handle)["hosts"]}
    assert set(rows) == {"fleet-a-0523", "fleet-b-0511", "fleet-b2-ddtree", "fleet-c-056", "fleet-d-offline"}
    a, b, c = rows["fleet-a-0523"], rows["fleet-b-0511"], rows["fleet-c-056"]
    assert a["status"] == "ready" and a["facts"]["package"]["version"] == "0.5.23"
    assert a["facts"]["python"] == "/opt/sglang-0.5.23/bin/python3"
    assert a["facts"]["package"]["location"] == "/opt/sglang-0.5.23/lib/python3.11/site-packages/sglang"
    assert a["flag_names"]["draft_window_size"] == "--speculative-draft-window-size"
    assert any(d["name"] == "DFlashWorkerV2" for d in a["facts"]["implementation"]["definitions"])
    assert a["facts"]["gpus"]["gpu_count"] == 8
    assert b["status"] == "ready" and b["facts"]["package"]["version"] == "0.5.11"
    assert b["flag_names"]["draft_window_size"] == "--speculative-dflash-draft-window-size"
    assert b["facts"]["gpus"]["gpus"][1]["name"] == "NVIDIA GeForce RTX 4090"
    fork = rows["fleet-b2-ddtree"]
    assert fork["status"] == "ready" and "DDTREE" in fork["facts"]["algorithms"]
    assert fork["facts"]["package"]["install"] == "editable"
    assert fork["facts"]["package"]["editable_source"] == "/srv/src/sglang-ddtree/python"
    assert any(d["name"] == "DDTreeWorker" for d in fork["facts"]["implementation"]["definitions"])
    assert "DDTREE" not in a["facts"]["algorithms"]
    assert c["status"] == "blocked" and c["facts"]["capabilities"]["supports_dflash"] is False
    assert "DFLASH" in c["facts"]["implementation"]["missing_terms"]
    assert any("DFLASH is not supported" in reason for reason in c["reasons"])
    # The training job still holds GPU 0 on the node the rollout never changed, and its unit is named.
    assert [p["unit"] for p in c["facts"]["gpus"]["processes"]] == ["train-qwen.service"]
    assert rows["fleet-d-offline"]["status"] in ("unreachable", "failed")
    with open(os.path.join(report_dir, "fleet-report.html")) as handle:
        html = handle.read()
    assert html.count('<tr class="') == 5 and "fleet-c-056" in html and "DFLASH is not supported" in html
