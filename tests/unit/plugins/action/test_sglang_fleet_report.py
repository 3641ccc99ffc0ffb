"""gpufleet.sglang.sglang_fleet_report: the gateways of this run's hosts, then the report written from their results;
any files given (plugins/action/sglang_fleet_report.py)."""

import json

from ansible_collections.gpufleet.sglang.plugins.action.sglang_fleet_report import ActionModule
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name

GATEWAY = {"gateways": [{"kind": "smg", "url": "http://gw:30180"}], "urls": ["http://gw:30180"],
           "worker_url": "http://10.0.0.5:30000"}


def hostvars():
    row = {"host": "a", "status": "ready", "reasons": [], "gateway": GATEWAY}
    return {"hostvars": {
        "a": {"sglang_dflash_result": {"run": run_name(), "fleet_rows": [row]}},
        # Another run's result is not this run's: b was not reached.
        "b": {"sglang_dflash_result": {"run": "former", "fleet_rows": [dict(row, host="b")]}},
        # No result: what the report task registered says why.
        "c": {"sglang_dflash__report": {"failed": True, "msg": "host c: sglang_dflash_drafter cannot be templated"}},
        "d": {"sglang_dflash__report": {"unreachable": True, "msg": "Failed to connect to the host via ssh"}}}}


def test_the_gateways_of_this_runs_hosts_and_no_rows(run_action):
    collected = run_action(ActionModule, {"hosts": ["a", "b", "c", "d"]}, task_vars=hostvars())
    assert collected["gateways"] == GATEWAY["gateways"]
    assert "rows" not in collected and collected["changed"] is False
    assert run_action(ActionModule, {"hosts": ["a"], "from_cache": True}, task_vars=hostvars())["gateways"] == []


def test_the_report_is_written_from_the_hosts_results_placed_in_their_gateways(run_action, tmp_path):
    args = {"hosts": ["a", "b", "c", "d"], "now": "2026-12-06T10:00:00Z", "dest": str(tmp_path), "keep_rows": True,
            "gateway_read": [{"key": "smg http://gw:30180", "workers": []}]}
    written = run_action(ActionModule, args, task_vars=hostvars())
    assert written["changed"] is True
    assert written["summary"] == "1 of 4 hosts can take the deployment; report in %s" % tmp_path
    rows = json.loads((tmp_path / "fleet-report.json").read_text())["hosts"]
    assert [(r["host"], r["status"]) for r in rows] == [
        ("a", "ready"), ("b", "unreachable"), ("c", "failed"), ("d", "unreachable")]
    assert rows[0]["gateway"]["summary"] == "not registered" and rows[0]["gathered_at"] == "2026-12-06T10:00:00Z"
    assert "host c: sglang_dflash_drafter cannot be templated" in rows[2]["reasons"]
    assert "Failed to connect to the host via ssh" in rows[3]["reasons"]
    # As to_nice_json writes it, with its newline.
    assert (tmp_path / "fleet-report.json").read_text() == json.dumps(
        {"hosts": rows}, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    assert "| a |" in (tmp_path / "fleet-report.md").read_text()
    assert not (tmp_path / "fleet-report.html").exists()  # no html_template
    # Only the reached hosts' rows are kept for the fact cache.
    assert [(k["host"], [r["status"] for r in k["rows"]]) for k in written["rows_by_host"]] == [
        ("a", ["ready"]), ("c", ["failed"])]
    again = run_action(ActionModule, dict(args, keep_rows=False), task_vars=hostvars())
    assert again["changed"] is False and "rows_by_host" not in again


def test_the_files_are_written_once(run_action, tmp_path):
    written = run_action(ActionModule, {"dest": str(tmp_path), "files": {"fleet-report.md": "# x\n"}})
    assert written["changed"] is True and (tmp_path / "fleet-report.md").read_text() == "# x\n"
    assert run_action(ActionModule, {"dest": str(tmp_path), "files": {"fleet-report.md": "# x\n"}})["changed"] is False
