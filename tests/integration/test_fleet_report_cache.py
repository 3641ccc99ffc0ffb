"""The fleet report rebuilt from Ansible's own fact cache (fact_caching = jsonfile), no host contacted: real
ansible-playbook runs of playbooks/gather_facts.yml, first gathering (two local "hosts" on a real 0.5.23 venv),
then with the hosts unreachable, one gone from the inventory and one never gathered. A deployment never reads
that cache: nothing that deploys or reverts names the cached row."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "playbooks" / "gather_facts.yml"


def inventory(path, hosts):
    path.write_text(json.dumps({"all": {"children": {"gpu_inference": {"hosts": hosts}}}}))
    return path


def gather(env, inv, cache, report, *extra):
    argv = ["ansible-playbook", "-i", str(inv), str(PLAYBOOK), "-e", "sglang_fleet_report_dir=%s" % report]
    run = subprocess.run(argv + list(extra), capture_output=True, text=True, timeout=600, check=False,
                         env=dict(env, ANSIBLE_CACHE_PLUGIN="jsonfile", ANSIBLE_CACHE_PLUGIN_CONNECTION=str(cache)))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run, json.loads((report / "fleet-report.json").read_text())["hosts"]


def test_the_report_is_rebuilt_from_the_fact_cache_without_contacting_any_host(ansible_env, venvs, tmp_path):
    python = str(venvs["0.5.23"] / "bin" / "python")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
             "sglang_dflash_python": python, "sglang_dflash_service_name": "gpufleet-cache-test-nope",
             "sglang_dflash_flags_cache": str(tmp_path / "flags-cache")}
    cache = tmp_path / "fact-cache"
    live_run, live = gather(ansible_env, inventory(tmp_path / "live.json", {"gpu-a": local, "gpu-b": local}),
                            cache, tmp_path / "live")
    assert [(r["host"], r["from_cache"]) for r in live] == [("gpu-a", False), ("gpu-b", False)]
    assert all(r["facts"]["package"]["version"] == "0.5.23" and r["gathered_at"] for r in live)
    assert len(list(cache.iterdir())) == 2  # one cache entry per host

    # Unreachable now (SSH to a closed port), gpu-b gone from the inventory, gpu-c never gathered.
    dead = {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_connection": "ssh"}
    run, cached = gather(ansible_env, inventory(tmp_path / "dead.json", {"gpu-a": dead, "gpu-c": dead}),
                         cache, tmp_path / "cached", "-e", "sglang_fleet_from_cache=true")
    assert "skipping: no hosts matched" in run.stdout  # the gathering play has no host
    assert "[gpu-a]" not in run.stdout and "UNREACHABLE" not in run.stdout and "unreachable=1" not in run.stdout
    a, c = cached
    assert dict(a, from_cache=False) == live[0]  # gpu-a's row exactly as gathered, time included
    assert a["from_cache"] is True and a["gathered_at"] == live[0]["gathered_at"]
    assert (c["host"], c["status"], c["facts"]) == ("gpu-c", "unknown", None) and "fact cache" in c["reasons"][0]
    html = (tmp_path / "cached" / "fleet-report.html").read_text()
    assert "From Ansible&#39;s fact cache" in html or "From Ansible's fact cache" in html
    assert "(from the fact cache)" in run.stdout

    # A new gather on the hosts of that run replaces their entries; gpu-b's stays as it was.
    before_b = (cache / next(p.name for p in cache.iterdir() if p.name.endswith("gpu-b"))).read_text()
    gather(ansible_env, inventory(tmp_path / "a.json", {"gpu-a": local}), cache, tmp_path / "again")
    assert (cache / next(p.name for p in cache.iterdir() if p.name.endswith("gpu-b"))).read_text() == before_b


def test_nothing_that_deploys_reads_the_cached_rows():
    # The deployment reads the host itself (the plan action runs sglang_info) and plans on that; only the report reads
    # the cache.
    deploying = [REPO / "playbooks" / "deploy_dflash.yml", REPO / "playbooks" / "revert_dflash.yml"] + sorted(
        (REPO / "roles" / "sglang_dflash").rglob("*.yml"))
    for path in deploying:
        text = path.read_text()
        assert "sglang_fleet_cached_rows" not in text and "sglang_fleet_from_cache" not in text, path
    main = (REPO / "roles" / "sglang_dflash" / "tasks" / "main.yml").read_text()
    assert "gpufleet.sglang.sglang_dflash_plan:" in main
    action = (REPO / "plugins" / "action" / "sglang_dflash_plan.py").read_text()
    assert 'FACTS_MODULE = "gpufleet.sglang.sglang_info"' in action
    assert "self._execute_module(module_name=FACTS_MODULE" in action
