"""The plan's settings are the role's variables as each host's task sees them (_settings.settings_from_vars): real
ansible-playbook runs of playbooks/gather_facts.yml on two local "hosts" of a real 0.5.23 venv. A variable that is a
template is rendered on its own, with that host's variables; one that cannot be rendered is its host's row alone, by
the variable's name, without a traceback."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_each_host_plans_with_its_own_templated_variables_and_a_bad_one_is_named(ansible_env, venvs, tmp_path):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
             "sglang_dflash_python": str(venvs["0.5.23"] / "bin" / "python"),
             "sglang_dflash_service_name": "{{ lab_unit_prefix }}-{{ inventory_hostname }}",
             "sglang_dflash_flags_cache": str(tmp_path / "flags-cache")}
    hosts = {"gpu-a": dict(local, lab_unit_prefix="gpufleet-settings-test"),
             "gpu-b": dict(local, lab_unit_prefix="gpufleet-settings-test",
                           sglang_dflash_drafter="{{ no_such_variable }}")}
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps({"all": {"children": {"gpu_inference": {"hosts": hosts}}}}))
    run = subprocess.run(["ansible-playbook", "-i", str(inv), str(REPO / "playbooks" / "gather_facts.yml"),
                          "-e", "sglang_fleet_report_dir=%s" % (tmp_path / "report")],
                         capture_output=True, text=True, timeout=600, check=False, env=ansible_env)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "Traceback" not in out, out[-3000:]  # one bad host is a row, not the run's end
    report = json.loads((tmp_path / "report" / "fleet-report.json").read_text())
    rows = dict((row["host"], row) for row in report["hosts"])
    assert rows["gpu-b"]["status"] == "failed", rows["gpu-b"]
    reason = rows["gpu-b"]["reasons"][-1]  # (after the report's own "no facts: the host failed while gathering")
    assert reason.startswith("host gpu-b: sglang_dflash_drafter cannot be templated ('no_such_variable' is undefined")
    assert reason.endswith("): set it to a value, or to a template of variables this host has"), reason
    # gpu-a's unit name came from its own variables, rendered for it.
    assert rows["gpu-a"]["unit"] == "gpufleet-settings-test-gpu-a.service", rows["gpu-a"]
