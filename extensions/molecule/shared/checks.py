"""testinfra helpers shared by the scenarios' verifiers (imported via sys.path from each test)."""

import json
import os
import re
import subprocess

SECRET = "hf_molecule_secret_value_42"
UNIT = "/etc/systemd/system/sglang.service"
DROPIN = "90-gpufleet-sglang.conf"
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLAYBOOK = os.path.join(REPO, "playbooks", "deploy_dflash.yml")


def show(host, unit, *properties):
    """`systemctl show` of a unit: what systemd really runs, whatever file it came from."""
    out = host.check_output("systemctl show --no-pager -p %s %s" % (",".join(properties), unit))
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def exec_start(host, unit="sglang.service"):
    """The effective ExecStart argv (systemd joins it with spaces; the lab's words hold none)."""
    value = show(host, unit, "ExecStart")["ExecStart"]
    return re.search(r"argv\[\]=(.*?) ; ignore_errors=", value).group(1).split(" ")


def command_line(host, unit="sglang.service"):
    """The effective ExecStart as one line: a flag and its value are looked for here, not in the argv list."""
    return " ".join(exec_start(host, unit))


def written_flags(host, unit="sglang.service"):
    return [a for a in exec_start(host, unit) if a.startswith("--")]


def release_flags(host, python):
    """Every option string the installed release's own --help lists (run inside the node)."""
    out = host.check_output("cd /tmp && COLUMNS=250 %s -m sglang.launch_server --help 2>/dev/null" % python)
    flags = set()
    for line in out.splitlines():
        for word in line.replace(",", " ").replace("[", " ").replace("]", " ").split():
            if word.startswith("--"):
                flags.add(word.split("=")[0])
    return flags


def server_info(host, port=30000):
    return json.loads(host.check_output("curl -sf http://127.0.0.1:%d/server_info" % port))


def health_status(host, port=30000):
    return host.check_output("curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/health" % port)


def playbook(name, *args):
    """A real ansible-playbook run of playbooks/NAME against this scenario's inventory."""
    inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    run = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", name)] + list(args),
                         capture_output=True, text=True, check=False, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    run.output = run.stdout + "\n" + run.stderr
    return run


def rollout(*args):
    """A real ansible-playbook run of the rollout against this scenario's inventory."""
    return playbook(os.path.basename(PLAYBOOK), *args)


def recap_changed(output, host):
    """changed=N of a host in a play recap."""
    return int(re.search(r"^%s\s+: ok=\d+\s+changed=(\d+)" % re.escape(host), output, re.M).group(1))
