"""gpufleet.sglang.sglang_fleet_report: the rows of this run's hosts, their place in the gateways, the files
(plugins/action/sglang_fleet_report.py)."""

from ansible_collections.gpufleet.sglang.plugins.action.sglang_fleet_report import ActionModule
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name


def test_the_rows_of_this_runs_hosts_and_the_gateways_they_are_behind(run_action):
    gateway = {"gateways": [{"kind": "smg", "url": "http://gw:30180"}], "urls": ["http://gw:30180"],
               "worker_url": "http://10.0.0.5:30000"}
    row = {"host": "a", "status": "ready", "reasons": [], "gateway": gateway}
    task_vars = {"hostvars": {"a": {"sglang_dflash_result": {"run": run_name(), "fleet_rows": [row]}},
                              "b": {"sglang_dflash_result": {"run": "former", "fleet_rows": [dict(row, host="b")]}}}}
    collected = run_action(ActionModule, {"hosts": ["a", "b"]}, task_vars=task_vars)
    assert [(r["host"], r["status"]) for r in collected["rows"]] == [("a", "ready"), ("b", "unreachable")]
    assert collected["gateways"] == gateway["gateways"]
    placed = run_action(ActionModule, {"rows": collected["rows"], "now": "2026-12-06T10:00:00Z", "dest": "/r",
                                       "gateway_read": [{"key": "smg http://gw:30180", "workers": []}]})
    assert placed["rows"][0]["gateway"]["summary"] == "not registered"
    assert placed["summary"] == "1 of 2 hosts can take the deployment; report in /r"


def test_the_files_are_written_once(run_action, tmp_path):
    written = run_action(ActionModule, {"dest": str(tmp_path), "files": {"fleet-report.md": "# x\n"}})
    assert written["changed"] is True and (tmp_path / "fleet-report.md").read_text() == "# x\n"
    assert run_action(ActionModule, {"dest": str(tmp_path), "files": {"fleet-report.md": "# x\n"}})["changed"] is False
