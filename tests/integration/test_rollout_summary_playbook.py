"""The rollout's summary names the hosts of this run: `--limit` leaves the others out of it."""

import subprocess
import sys

import yaml
from helpers import REPO


def test_hosts_outside_the_limit_are_not_reported_as_not_reached(ansible_env, tmp_path):
    local = {"ansible_connection": "local", "ansible_become": False, "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {"gpu_inference": {"hosts": {
        # Reached: refused before any change (no such unit, no drafter on this machine).
        "box-a": local,
        # Not reached: nothing listens on port 1.
        "box-b": {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody",
                  "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"},
        # Outside --limit.
        "box-c": local,
    }}}}}
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(yaml.safe_dump(inventory))
    run = subprocess.run(
        ["ansible-playbook", "-i", str(hosts), str(REPO / "playbooks" / "deploy_dflash.yml"), "--limit", "box-a,box-b",
         "-e", "sglang_dflash_serial=2", "-e", "sglang_dflash_service_name=gpufleet-no-such-unit",
         "-e", "sglang_dflash_draft_model_path=%s" % (tmp_path / "no-drafter")],
        env=ansible_env, capture_output=True, text=True, timeout=600, check=False)
    output = run.stdout + run.stderr
    summary = output[output.index("TASK [A few lines per host]"):]
    assert run.returncode != 0
    assert "box-a: FAILED: host box-a, unit gpufleet-no-such-unit.service: cannot deploy DFLASH" in summary
    assert "box-b: not reached" in summary
    assert "box-c" not in summary, summary[:3000]
