"""What the fleet report says (plugin_utils/_fleet_report.py): the Markdown report and the HTML page's view.

The Markdown and the page were compared byte for byte with the Jinja templates they replace, over the rows of
every real gather the integration tests had written and the 40 rows of test_fleet_report_html.py."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._fleet_report import (
    count_phrase,
    fleet_report_line,
    hosts_with_a_gpu_map,
    html_view,
    last_switch_line,
    markdown,
)

H200 = {"index": 0, "name": "NVIDIA H200", "memory_used_mib": 1000, "memory_total_mib": 143771,
        "architecture": "Hopper", "sm": "sm_90"}


def row(host, status="ready", **extra):
    facts = {"python": "/opt/ml-env/bin/python3", "algorithms": ["DFLASH", "NEXTN"],
             "package": {"version": "0.5.23", "install": "editable", "location": "/opt/ml-env/site",
                         "editable_source": "/root/sglang/python"},
             "capabilities": {"flags": {"block_size": "--speculative-dflash-block-size"}},
             "gpus": {"nvidia_smi": "present", "gpus": [H200, dict(H200, index=1)],
                      "processes": [{"pid": 42, "gpu_index": 0, "unit": None}]}}
    base = {"host": host, "status": status, "algorithm": "DFLASH", "unit": "sglang-qwen.service", "port": 30000,
            "gpus": [0, 1], "reasons": [], "mode": "switch", "facts": facts,
            "changes": {"removed": ["--speculative-algorithm NEXTN"], "added": ["--speculative-algorithm DFLASH"],
                        "overridden": [], "kept": ["--tp 2"]},
            "switch": {"state": "not switched", "reason": "NEXTN | by hand", "notes": [], "todo": "run the deploy"}}
    base.update(extra)
    return base


def test_counts_say_hosts_or_services_on_hosts():
    rows = [row("a"), row("b", "blocked"), row("c")]
    assert count_phrase(rows) == "2 of 3 hosts"
    assert count_phrase(rows + [row("a", unit="sglang-b.service")]) == "3 of 4 services on 3 hosts"
    assert count_phrase([]) == "0 of 0 hosts"
    assert fleet_report_line(rows, False, "/r") == "2 of 3 hosts can take the deployment; report in /r"
    assert fleet_report_line(rows, True, "/r") == (
        "2 of 3 hosts can take the deployment (from the fact cache); report in /r")


def test_the_markdown_puts_what_needs_a_person_first_and_escapes_table_cells():
    text = markdown([row("b"), row("a", "blocked", reasons=["flag --x | missing"], why_not="release"),
                     row("c", "unreachable", facts=None)])
    lines = text.splitlines()
    assert lines[:3] == ["# SGLang fleet report", "", "1 of 3 hosts can take the DFLASH deployment."]
    assert "1 blocked, 1 unreachable, 1 ready" in lines
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| host ")]
    assert [line.split(" | ")[0] for line in table] == ["| a", "| c", "| b"]
    blocked = table[0]
    assert "⛔ blocked" in blocked and blocked.endswith("flag --x \\| missing |")
    assert "**not switched**: NEXTN \\| by hand; run the deploy" in blocked
    assert "sglang-qwen.service :30000 GPUs 0,1" in blocked
    assert "/root/sglang/python" in blocked  # imported from the editable checkout, not the site-packages entry
    assert "0: NVIDIA H200 (Hopper sm_90) 1000/143771 MiB<br>1: NVIDIA H200" in blocked
    assert "42 on GPU 0 (no unit)" in blocked
    assert "switch: − `--speculative-algorithm NEXTN`<br>+ `--speculative-algorithm DFLASH`<br>" in blocked
    assert " | — | " in blocked  # no draft window flag in this release
    unreachable = table[1]
    assert "❌ unreachable" in unreachable and "| no | no |" in unreachable  # no facts: no algorithm known
    assert text.endswith("|\n") and "GPU maps" not in text


def test_the_markdown_says_when_the_rows_come_from_the_fact_cache():
    rows = [row("a", from_cache=True, gathered_at="2026-12-01T10:00:00Z"),
            row("b", from_cache=True, gathered_at="2026-12-03T10:00:00Z")]
    assert ("**From Ansible's fact cache**: no host was contacted; each row is its host's last gather "
            "(2026-12-01T10:00:00Z to 2026-12-03T10:00:00Z).") in markdown(rows)
    assert "last gather." in markdown([row("a", from_cache=True)])


def test_gpu_maps_only_where_services_share_a_host():
    shared = [{"index": 0, "services": ["a.service", "b.service"], "holders": ["train.service"]},
              {"index": 1, "services": [], "holders": []}]
    rows = [row("h1", gpu_map=shared), row("h1", unit="b.service", gpu_map=shared),
            row("h2", gpu_map=[{"index": 0, "services": [], "holders": []}])]
    assert [r["host"] for r in hosts_with_a_gpu_map(rows)] == ["h1", "h2"]
    assert markdown(rows).endswith(
        "## GPU maps (the SGLang services given each GPU, and the units whose processes hold it)\n\n"
        "- h1: 0 a.service+b.service (held by train.service); 1 -\n- h2: 0 -\n")
    assert hosts_with_a_gpu_map([row("h2", gpu_map=[{"index": 0, "services": [], "holders": []}])]) == []


def test_the_last_switch_line():
    assert last_switch_line(None) is None
    assert last_switch_line({"error": "not JSON"}) == "unreadable: not JSON"
    record = {"outcome": "switched", "algorithm": "DFLASH", "time": "2026-12-06T09:43:12Z",
              "speed_summary": "tokens/s 100 -> 200 (2.00x)",
              "canary": {"verdict": "fail", "failed": ["itl_p99", "accept_length"]},
              "traffic": {"out_of_rotation_s": 12.5, "drained_requests": 0, "drain_s": 0.0}}
    assert last_switch_line(record) == (
        "switched to DFLASH 2026-12-06T09:43: tokens/s 100 -> 200 (2.00x); canary fail (itl_p99, accept_length); "
        "out of rotation 12.5s, drained - request(s) in -s")
    reverted = {"outcome": "reverted", "algorithm": None, "time": "2026-12-06T10:00:00Z"}
    assert last_switch_line(reverted) == "reverted to the operator's command 2026-12-06T10:00"
    fallback = {"outcome": "switched", "algorithm": "DFLASH", "asked_algorithm": "DDTREE", "fallback": True,
                "time": "2026-12-06T10:00:00Z"}
    assert last_switch_line(fallback) == "switched to DFLASH instead of DDTREE 2026-12-06T10:00"


def test_the_html_view_counts_the_cards_and_groups_the_rows():
    no_gpu = row("d", "blocked", why_not="gpu")
    no_gpu["facts"] = dict(no_gpu["facts"], gpus={"nvidia_smi": "missing", "gpus": [], "processes": []},
                           package=None)
    rows = [row("b", switch={"state": "drifted", "reason": "edited", "notes": [], "todo": "look"}),
            row("a"), row("c", "unreachable", facts=None, switch=None), no_gpu]
    view = html_view(rows)
    assert view["verdict"] == "2 of 4 hosts can take the deployment."
    assert view["from_cache"] is False and view["gathered"] is None
    assert view["status_counts"] == [("ready", 2), ("blocked", 1), ("failed", 0), ("unreachable", 1)]
    assert view["switch_states"] == [("not switched", "not", 2), ("current", "current", 0),
                                     ("drifted", "drifted", 1), ("broken by a package change", "broken", 0)]
    # Only reached hosts; a host without a package or a GPU is counted as such.
    assert view["releases"] == [("0.5.23", 2), ("not installed", 1)]
    assert view["gpu_models"] == [("no GPU seen", 1), ("NVIDIA H200", 2)]
    assert [(status, [v["row"]["host"] for v in group]) for status, group in view["groups"]] == [
        ("blocked", ["d"]), ("unreachable", ["c"]), ("ready", ["a", "b"])]
    first_ready = view["groups"][2][1][0]
    assert first_ready["service"] == "sglang-qwen.service :30000 GPUs 0,1"
    assert first_ready["gpu_models"] == [(2, "NVIDIA H200 (Hopper sm_90)")]
    assert first_ready["gpu_lines"] == ["0: NVIDIA H200 (1000/143771 MiB)", "1: NVIDIA H200 (1000/143771 MiB)"]
    assert first_ready["switch_token"] == "not" and view["groups"][1][1][0]["switch_token"] == "none"
    assert first_ready["processes"] == "pid 42 GPU 0: no unit" and first_ready["last_switch"] is None
    assert html_view([row("a", from_cache=True)])["statuses"][-1] == "unknown"


def test_the_html_view_of_a_rolled_back_switch():
    record = {"outcome": "rolled back", "algorithm": "DFLASH", "time": "2026-12-06T09:43:12Z",
              "reason": "crashed: " + "x" * 400, "canary": {"verdict": "fail", "message": "m" * 400}}
    shown = html_view([row("a", facts=dict(row("a")["facts"], rollout_record=record))])["groups"][0][1][0]
    last = shown["last_switch"]
    assert last["head"] == "rolled back to DFLASH" and last["time"] == "2026-12-06T09:43"
    assert len(last["reason"]) == 300 and last["canary"] == "canary fail: " + "m" * 300
    assert last["traffic"] is None and last["speed"] == ""


def test_a_service_a_cut_run_left_says_so_first():
    from ansible_collections.gpufleet.sglang.plugins.plugin_utils._fleet_report import markdown
    line = ("interrupted: out of rotation since 2026-12-06T10:00:00Z by an unfinished run (ctl pid 1 (5)); the next "
            "run puts the host back in rotation")
    row = {"host": "gpu-1", "status": "ready", "reasons": [], "facts": {}, "unit": "sglang.service",
           "switch": {"state": "current", "reason": "ours", "todo": "nothing"}, "interrupted": line}
    text = markdown([row])
    assert "0 blocked, 1 ready, 1 interrupted by a run that was cut" in text
    assert "**%s**<br>**current**: ours |" % line in text


def test_speculation_now_is_a_column_a_count_and_a_filter():
    off = {"state": "off", "accept_length": 1.0, "accept_length_at_switch": 6.48, "time": "2026-12-06T16:03:17Z",
           "reason": "acceptance length 1.00 over 20 request(s) in 10.0 s: each verify step accepts about one token"}
    rows = [row("a", speculation=off), row("b", speculation=dict(off, state="engaged", accept_length=6.2)),
            row("c", speculation=None)]
    text = markdown(rows)
    assert "| switch state | speculation now | last switch |" in text
    assert "; speculation now: 1 engaged, 1 off" in text
    assert "| **off**: acceptance 1.00 now, 6.48 at the switch (acceptance length 1.00 over 20 request(s) in 10.0 s: " \
           "each verify step accepts about one token, 2026-12-06T16:03:17Z) |" in text
    view = html_view(rows)
    assert view["speculation_states"] == [("engaged", "engaged", 1), ("degraded", "degraded", 0), ("off", "off", 1),
                                          ("unknown", "unknown", 0), ("not verified", "not", 1)]
    tokens = [(r["row"]["host"], r["speculation_token"]) for _status, group in view["groups"] for r in group]
    assert sorted(tokens) == [("a", "off"), ("b", "engaged"), ("c", "not")]
    # Without any verdict (the report read no traffic), no count in the Markdown's line.
    assert "speculation now:" not in markdown([row("c")]).splitlines()[4]
