"""Every record the role and the fleet report keep, each built once (plugin_utils/_records.py)."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._records import (
    collect_rows,
    fleet_row,
    gateway_state,
    gateways_to_read,
    host_result,
    place_rows,
    rollout_record,
    traffic_figures,
)

PLAN = {"unit": "sglang-qwen.service", "mode": "switch", "algorithm": "DFLASH", "fallback": None, "needs_change": True,
        "changes": {"kept": ["--tp 2"], "removed": ["--speculative-algorithm NEXTN"], "added": [], "overridden": []},
        "old_exec_start": "/root/ml-env/bin/python -m sglang.launch_server --tp 2", "exec_start": "new",
        "files": {"config": {"path": "/etc/systemd/system/sglang-qwen.service.d/90-gpufleet-sglang.conf"},
                  "env": {"path": "/etc/gpufleet-sglang/sglang-qwen.env"}},
        "gateway": {"urls": ["http://127.0.0.1:30180"], "worker_url": "http://10.0.0.5:30000"},
        "stop": {"summary": "SIGTERM to the main process only"},
        "settings": {"algorithm": "DDTREE", "min_accept_length": 3.0, "min_speedup": None},
        "errors": [], "flag_names": {"block_size": "--speculative-dflash-block-size"}}
FACTS = {"package": {"version": "0.5.23", "install": "site-packages"}, "python": "/root/ml-env/bin/python",
         "flags": {"method": "source", "list": [{"name": "--port"}]}, "changed": False, "invocation": {"x": 1}}
DRAIN = {"idle": True, "seconds": 4.5, "requests_at_start": 3}


def test_traffic_figures_only_from_a_drain_that_ran():
    assert traffic_figures(PLAN, "12.5", DRAIN) == {
        "gateways": ["http://127.0.0.1:30180"], "out_of_rotation_s": 12.5, "drain_s": 4.5, "drained_requests": 3,
        "stop": "SIGTERM to the main process only"}
    skipped = traffic_figures(PLAN, None, {"skipped": True, "seconds": 9})
    assert skipped["drain_s"] is None and skipped["out_of_rotation_s"] is None
    assert traffic_figures({}, None, None)["gateways"] is None


def test_host_result_is_the_plan_and_what_the_run_observed():
    result = host_result(PLAN, FACTS, "gpu-1", {"ready": {"ready": True, "since_start_s": 41.0},
                                                "speed": {"passed": True}, "drain": DRAIN, "check_mode": False})
    assert result["host"] == "gpu-1" and result["unit"] == "sglang-qwen.service" and result["release"] == "0.5.23"
    assert result["files"] == [PLAN["files"]["config"]["path"], PLAN["files"]["env"]["path"]]
    assert result["healthy"] is True and result["time_to_healthy_s"] == 41.0 and result["changed"] is True
    assert result["new_exec_start"] == "new" and result["traffic"]["drained_requests"] == 3


def test_host_result_without_observations():
    result = host_result(dict(PLAN, needs_change=False), FACTS, "gpu-1", {"ready": {"ready": True, "since_start_s": 9}})
    assert result["time_to_healthy_s"] is None  # not restarted by this run: its start time is not ours
    assert host_result(PLAN, FACTS, "gpu-1", {})["healthy"] is False


def test_rollout_record_keeps_the_figures_and_the_gates():
    before = {"measured": True, "tokens_per_s": 200.0, "invocation": {}, "skipped": False}
    record = rollout_record(PLAN, FACTS, {"before": before, "after": {"skipped": True}, "drain": DRAIN,
                                          "verdict": {"speedup": 2.4, "summary": "s", "passed": True}},
                            "switched", None, "2026-12-05T10:00:00Z")
    assert record["before"]["tokens_per_s"] == 200.0 and "invocation" not in record["before"]
    assert record["after"] is None and record["asked_algorithm"] == "DDTREE" and record["algorithm"] == "DFLASH"
    assert record["gates"] == {"min_accept_length": 3.0, "min_speedup": None, "passed": True, "problems": [],
                               "notes": []}
    assert record["traffic"] == traffic_figures(PLAN, None, DRAIN)
    assert record["canary"] is None  # not a canary, or not judged yet


def test_a_canary_hosts_rollback_record_keeps_the_verdict_and_the_figures_side_by_side():
    canary = {"verdict": "fail", "action": "rollback", "source": "prometheus", "window_s": 20,
              "canary_hosts": ["n1"], "baseline_hosts": ["n2", "n3"], "per_host": {"n1": {}},
              "figures": {"decode_per_request": {"canary": 26.9, "baseline": 90.3}},
              "failed": [{"metric": "decode_per_request", "label": "x", "canary": 26.9, "baseline": 90.3,
                          "reasons": ["must be >= 0.90x the baseline"]}], "message": "the canary failed, ..."}
    record = rollout_record(PLAN, FACTS, {"canary": canary}, "reverted", None, "2026-12-05T10:00:00Z")
    assert record["canary"] == {"verdict": "fail", "action": "rollback", "source": "prometheus", "window_s": 20,
                                "canary_hosts": ["n1"], "baseline_hosts": ["n2", "n3"],
                                "figures": {"decode_per_request": {"canary": 26.9, "baseline": 90.3}},
                                "failed": ["decode_per_request"], "message": "the canary failed, ..."}


def test_fleet_row_with_facts_leaves_out_the_flag_list():
    row = fleet_row("gpu-1", FACTS, PLAN, "DFLASH")
    assert row["status"] == "ready" and row["reasons"] == [] and row["mode"] == "switch"
    assert row["facts"]["flags"] == {"method": "source"} and "invocation" not in row["facts"]
    assert "changed" not in row["facts"] and row["facts"]["python"] == "/root/ml-env/bin/python"
    blocked = fleet_row("gpu-1", FACTS, dict(PLAN, errors=["no drafter"]), "DFLASH")
    assert blocked["status"] == "blocked" and blocked["reasons"] == ["no drafter"]


@pytest.mark.parametrize("reached, status, words", [(True, "failed", "failed while gathering"),
                                                    (False, "unreachable", "was unreachable")])
def test_fleet_row_without_facts(reached, status, words):
    row = fleet_row("gpu-2", reached=reached)
    assert row["status"] == status and words in row["reasons"][0] and row["facts"] is None
    assert row["algorithm"] == "DFLASH"


def test_fleet_row_of_a_host_unreachable_when_its_facts_were_gathered():
    facts = {"unreachable": True, "changed": False, "msg": "Failed to connect to the host via ssh: Connection refused"}
    row = fleet_row("gpu-3", facts, {"errors": ["gathering the facts failed"]}, "DFLASH")
    assert row["status"] == "unreachable" and row["facts"] is None
    assert row["reasons"] == ["no facts: the host was unreachable (see the play output)",
                              "Failed to connect to the host via ssh: Connection refused"]


def test_fleet_rows_every_host_sorted_with_its_gateway_state():
    gateway = {"gateways": [{"kind": "smg", "url": "http://gw:30180"}, {"kind": "smg", "url": "http://gw2:30180"},
                            {"kind": "haproxy", "url": "unix:///run/haproxy/admin.sock", "backend": "sglang"}],
               "urls": ["http://gw:30180", "http://gw2:30180", "unix:///run/haproxy/admin.sock"],
               "worker_url": "http://10.0.0.5:30000"}
    # b's report tasks gave its rows; a was reached and gave none (the reason is its result's msg); c was not reached.
    results = {"b": {"fleet_rows": [dict(fleet_row("b", FACTS, PLAN, "DFLASH"), gateway=gateway)]},
               "a": {"this_run": True, "algorithm": "DDTREE", "fleet_rows": []}, "c": {}}
    # sglang_gateway_info's answer: each worker already stated by the seam.
    reads = [{"key": "smg http://gw:30180", "error": None,
              "workers": [{"url": "http://10.0.0.5:30000/", "status": "ready", "state": "in rotation"}]},
             {"key": "smg http://gw2:30180", "error": "gateway http://gw2:30180 cannot be reached: refused",
              "workers": None},
             {"key": "haproxy unix:///run/haproxy/admin.sock sglang", "error": None,
              "workers": [{"url": "http://10.0.0.5:30000", "status": "drain", "state": "out of rotation (drain)"}]}]
    collected = collect_rows(results, ["c", "b", "a"])
    assert gateways_to_read(collected) == gateway["gateways"]
    rows = place_rows(collected, reads)
    assert [(r["host"], r["status"]) for r in rows] == [("a", "failed"), ("b", "ready"), ("c", "unreachable")]
    assert rows[0]["algorithm"] == "DDTREE"
    assert rows[1]["gateway"]["states"] == [
        {"gateway": "http://gw:30180", "state": "in rotation"},
        {"gateway": "http://gw2:30180", "state": "not read: gateway http://gw2:30180 cannot be reached: refused"},
        {"gateway": "unix:///run/haproxy/admin.sock", "state": "out of rotation (drain)"}]


def test_fleet_rows_name_a_host_the_facts_task_could_not_reach_or_failed_on_with_its_message():
    # What the report tasks keep of an unreachable host (the play ignores unreachable hosts), and of one whose facts
    # could not be read: no rows, and the reason.
    results = {"a": {"this_run": True, "fleet_rows": [], "unreachable": True,
                     "msg": "Failed to connect to the host via ssh: No route to host"},
               "b": {"this_run": True, "fleet_rows": [], "unreachable": False,
                     "msg": "plan_settings needs the facts at once: run this task without async"}}
    rows = collect_rows(results, ["a", "b"])
    assert [(r["host"], r["status"]) for r in rows] == [("a", "unreachable"), ("b", "failed")]
    assert rows[0]["reasons"][-1] == "Failed to connect to the host via ssh: No route to host"
    assert rows[1]["reasons"][-1] == "plan_settings needs the facts at once: run this task without async"


def test_fleet_rows_carry_the_time_they_were_gathered():
    results = {"b": {"fleet_rows": [fleet_row("b", FACTS, PLAN, "DFLASH")]}, "a": {}}
    rows = place_rows(collect_rows(results, ["a", "b"]), now="2026-12-05T10:00:00Z")
    assert [(r["host"], r["gathered_at"], r["from_cache"]) for r in rows] == [
        ("a", "2026-12-05T10:00:00Z", False), ("b", "2026-12-05T10:00:00Z", False)]
    # the host's own row is not changed
    assert "gathered_at" not in results["b"]["fleet_rows"][0]


def test_fleet_rows_from_the_fact_cache_read_no_fresh_row():
    # The cache's row (its host's last gather), never this run's variables; a host the cache has no row for is unknown.
    cached = dict(fleet_row("b", FACTS, PLAN, "DFLASH"), gathered_at="2026-12-01T08:00:00Z", from_cache=False,
                  gateway={"worker_url": "http://10.0.0.5:30000", "states": [], "summary": ""})
    results = {"b": {"fleet_rows": [fleet_row("b", {}, {"errors": ["a fresh row"]}, "DFLASH")]},
               "a": {"fleet_rows": [fleet_row("a", FACTS, PLAN, "DFLASH")]}}
    collected = collect_rows(results, ["b", "a"], cached={"b": [cached]}, from_cache=True)
    rows = place_rows(collected, [{"item": "http://gw:30180", "status": 200, "json": {"workers": []}}],
                      now="2026-12-05T10:00:00Z")
    assert [(r["host"], r["status"], r["from_cache"], r["gathered_at"]) for r in rows] == [
        ("a", "unknown", True, None), ("b", "ready", True, "2026-12-01T08:00:00Z")]
    assert "fact cache" in rows[0]["reasons"][0] and rows[0]["facts"] is None
    assert rows[1]["gateway"] == cached["gateway"]  # as read at the gather, not looked up again
    assert dict(rows[1], from_cache=False) == cached


@pytest.mark.parametrize("workers, state", [
    ([], "not registered"),
    ([{"url": "http://10.0.0.5:30000", "status": "pending", "in_rotation": False}], "out of rotation (pending)"),
    # The copy that was here once ignored is_healthy: the seam's own state decides (smg.py sets in_rotation).
    ([{"url": "http://10.0.0.5:30000/", "status": "ready", "in_rotation": False}], "out of rotation (ready)"),
    ([{"url": "HTTP://10.0.0.5:30000", "status": "ready", "in_rotation": True}], "in rotation"),
])
def test_gateway_state(workers, state):
    gateway = {"gateways": [{"kind": "smg", "url": "http://gw:30180"}], "worker_url": "http://10.0.0.5:30000"}
    assert gateway_state(gateway, {"smg http://gw:30180": workers})["summary"] == state
    assert gateway_state(gateway, {})["summary"] == "not read"
    assert gateway_state(None, {}) is None


def test_fleet_row_shows_what_runs_and_that_the_files_were_edited_since():
    service = {"unit": "llm@gamma.service", "port": 30013, "gpus": {"indexes": [0, 1]},
               "environment_drift": ["CUDA_VISIBLE_DEVICES"],
               "environment_note": "edited since start, restart pending: CUDA_VISIBLE_DEVICES",
               "after_restart": {"port": 30013, "gpus": {"indexes": []}}}
    row = fleet_row("gpu-1", dict(FACTS, service=service), PLAN, "DFLASH")
    assert (row["port"], row["gpus"], row["environment_drift"]) == (30013, [0, 1], ["CUDA_VISIBLE_DEVICES"])
    assert row["environment_note"] == "edited since start, restart pending: CUDA_VISIBLE_DEVICES"
    assert fleet_row("gpu-1", FACTS, PLAN, "DFLASH")["environment_drift"] == []
