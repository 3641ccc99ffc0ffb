"""The README's commands against the embedded lab, exactly as written: the fleet picture of the local target
(inventories/local, SSH on 127.0.0.1:22100 as ops with sudo) and the way back on it."""

import json
import os
import shlex
import subprocess

import pytest
from helpers import REPO

STATES = ("not switched", "current", "drifted", "broken by a package change")


def sh(argv, env=None, check=True, timeout=900):
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=check)


def readme_lines(playbook):
    """The README's command lines that run playbooks/PLAYBOOK against inventories/local."""
    lines = [line for line in (REPO / "README.md").read_text().splitlines()
             if line.startswith("ANSIBLE_COLLECTIONS_PATH=") and "-i inventories/local playbooks/%s" % playbook in line]
    assert lines, "README.md shows no command for %s against inventories/local" % playbook
    return lines


def run_as_written(line):
    """A README line run as a shell runs it: leading VAR=value words are its environment. It prints no warning."""
    words = shlex.split(line)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    while "=" in words[0] and not words[0].startswith(("-", "/", ".")):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    run = sh(words, env=env, check=False)
    printed = "%s printed:\n%s%s" % (line, run.stderr, run.stdout[-2000:])
    assert run.stderr == "" and "WARNING" not in run.stdout, printed
    return run


@pytest.fixture(scope="module")
def local_lab():
    """The embedded default target as scripts/deploy.sh makes it, before the rollout (left running: it is the
    README's main target and lab-node.sh reuses it)."""
    env = dict(os.environ, CONTAINERS_CONF=str(REPO / "tests" / "containers" / "containers.conf"))
    (REPO / ".cache").mkdir(exist_ok=True)
    sh(["flock", str(REPO / ".cache" / "lab-prepare.lock"), "tests/containers/build-node-image.sh"], env=env)
    sh(["tests/containers/lab-node.sh", "gpufleet-local", "22100"], env=env)
    collections = sh(["scripts/install-collection.sh", str(REPO / ".cache" / "collections")]).stdout.strip()
    run = sh(["ansible-playbook", "-i", "inventories/local", "tests/containers/provision.yml"],
             env=dict(env, ANSIBLE_COLLECTIONS_PATH=collections), check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_the_fleet_picture_of_the_lab_as_the_readme_writes_it(local_lab):
    (line,) = readme_lines("gather_facts.yml")
    run = run_as_written(line)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    (row,) = json.loads((REPO / "fleet-report" / "fleet-report.json").read_text())["hosts"]
    assert row["host"] == "gpufleet-local" and row["facts"]["package"]["version"] == "0.5.23"
    assert row["status"] == "ready" and row["switch"]["state"] in STATES, row["reasons"]
    assert "1 hosts can take the deployment" in run.stdout


def test_the_way_back_on_the_lab_as_the_readme_writes_it(local_lab):
    (line,) = readme_lines("revert_dflash.yml")
    run = run_as_written(line)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "gpufleet-local: sglang.service (revert) sglang 0.5.23: " in run.stdout
