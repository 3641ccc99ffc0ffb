"""The fleet report written on the controller by playbooks/gather_facts.yml, checked row by row."""

import json
import os


def test_fleet_report_has_the_right_facts_for_each_host():
    report_dir = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-report")
    with open(os.path.join(report_dir, "fleet-report.json")) as handle:
        rows = {r["host"]: r for r in json.load(handle)["hosts"]}
    nodes = ["fleet-01-0523", "fleet-02-0511", "fleet-03-ddtree", "fleet-05-056", "fleet-06-crash"] + [
        "fleet-%02d-0523" % i for i in [4, 7, 8] + list(range(9, 17))]
    assert set(rows) == set(nodes) | {"fleet-zz-offline"}
    a, b, c = rows["fleet-01-0523"], rows["fleet-02-0511"], rows["fleet-05-056"]
    assert a["status"] == "ready" and a["facts"]["package"]["version"] == "0.5.23"
    assert a["facts"]["python"] == "/opt/sglang-0.5.23/bin/python3"
    assert a["facts"]["package"]["location"] == "/opt/sglang-0.5.23/lib/python3.11/site-packages/sglang"
    assert a["flag_names"]["draft_window_size"] == "--speculative-draft-window-size"
    assert any(d["name"] == "DFlashWorkerV2" for d in a["facts"]["implementation"]["definitions"])
    assert a["facts"]["gpus"]["gpu_count"] == 8
    # The switch the deployment makes on a, as the report shows it (its own drop-in is left out).
    assert a["mode"] == "switch" and "--speculative-algorithm DFLASH" in a["changes"]["added"]
    assert a["changes"]["kept"] == ["--model-path /models/Qwen3.6-27B", "--host 127.0.0.1", "--port 30000"]
    assert "list" not in a["facts"]["flags"] and a["facts"]["flags"]["count"] > 500
    assert b["status"] == "ready" and b["facts"]["package"]["version"] == "0.5.11"
    assert b["flag_names"]["draft_window_size"] == "--speculative-dflash-draft-window-size"
    assert b["facts"]["gpus"]["gpus"][1]["name"] == "NVIDIA GeForce RTX 4090"
    fork = rows["fleet-03-ddtree"]
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
    # Each host's last switch, as the host recorded it, with the SIMULATED figures of the lab.
    assert a["facts"]["rollout_record"]["outcome"] == "switched"
    assert a["facts"]["rollout_record"]["after"]["accept_length"] == 6.4
    crashed = rows["fleet-06-crash"]["facts"]["rollout_record"]
    assert crashed["outcome"] == "rolled back" and "crash loop" in crashed["reason"] and crashed["after"] is None
    assert rows["fleet-09-0523"]["facts"]["rollout_record"] is None  # never switched
    assert rows["fleet-04-0523"]["facts"]["rollout_record"]["fallback"]["to"] == "DFLASH"
    assert rows["fleet-zz-offline"]["status"] in ("unreachable", "failed")
    with open(os.path.join(report_dir, "fleet-report.html")) as handle:
        html = handle.read()
    assert html.count('<tr class="') == 17 and "fleet-05-056" in html and "DFLASH is not supported" in html
