"""The execution environment for real, with the commands of docs/operator-guide.md as written: scripts/ee.sh builds
it (ansible-builder 3 on a base image debootstrapped here, the collection from its tarball) and runs
playbooks/gather_facts.yml in it with ansible-navigator over SSH against a lab node (gpufleet-ee on
127.0.0.1:22191, user ops with sudo). The image holds this collection at galaxy.yml's version, ansible-core
and ansible-runner, and what the collection's Python code imports."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import REPO, lock_pins

IMAGE = "localhost/gpufleet-sglang-ee:bookworm"
NODE = "gpufleet-ee"
EE_COLLECTIONS = "/usr/share/ansible/collections"
EE_COLLECTION = EE_COLLECTIONS + "/ansible_collections/gpufleet/sglang"
REPORT = REPO / "fleet-report" / "fleet-report.json"


def env():
    return dict(os.environ, CONTAINERS_CONF=str(REPO / "tests" / "containers" / "containers.conf"),
                ANSIBLE_NOCOLOR="1")


def sh(argv, timeout=600, **kw):
    return subprocess.run(argv, cwd=REPO, env=env(), capture_output=True, text=True, timeout=timeout, check=False, **kw)


def in_ee(*argv, stdin=None):
    """A command in the EE image, as its entrypoint runs it (its default user)."""
    run = sh(["podman", "run", "--rm", "-i", IMAGE, *argv], input=stdin)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


def readme_command(prefix):
    """The one command line of the sh blocks of the README and docs/ (the operator's guide has the EE's) that starts
    with prefix."""
    text = "".join(p.read_text() for p in [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md")))
    lines = [line for block in re.findall(r"```sh\n(.*?)```", text, re.S) for line in block.splitlines()
             if line.startswith(prefix)]
    assert len(lines) == 1, "README.md and docs/ show %d command lines starting with %r" % (len(lines), prefix)
    return lines[0]


def the_row_of_the_node():
    rows = {row["host"]: row for row in json.loads(REPORT.read_text())["hosts"]}
    assert list(rows) == [NODE]
    row = rows[NODE]
    # Facts read on the node over SSH: the 0.5.23 venv of the lab image, the GPUs of its fake nvidia-smi.
    assert row["facts"]["package"]["version"] == "0.5.23"
    assert row["facts"]["package"]["python"] == "/opt/sglang-0.5.23/bin/python3"
    assert len(row["facts"]["gpus"]["gpus"]) == 8
    assert row["status"] == "ready" and row["switch"]["state"] == "not switched", row["reasons"]
    return row


@pytest.fixture(scope="module")
def ee_run():
    """scripts/ee.sh as the README writes it; the node is left running, as the README says."""
    assert readme_command("scripts/ee.sh") == "scripts/ee.sh"
    run = sh(["scripts/ee.sh"], timeout=1800)
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-3000:]
    return run


def test_the_script_builds_the_ee_and_runs_the_fleet_picture_in_it_over_ssh(ee_run):
    out = ee_run.stdout
    assert "ansible-navigator run playbooks/gather_facts.yml --mode stdout -i .cache/ee/inventory" in out
    # The role's facts task ran (from the one gpufleet.sglang the image holds: see the test below).
    assert "TASK [gpufleet.sglang.sglang_dflash : Gather the SGLang facts of this host]" in out
    assert re.search(r"^%s +: ok=\d+ +changed=0 +unreachable=0 +failed=0 " % NODE, out, re.M), out[-3000:]
    assert "1 of 1 hosts can take the deployment" in out
    # Without a terminal the runner's event markers are taken out of the output.
    assert "\x1b[K" not in out
    the_row_of_the_node()
    assert "ee: fleet-report/fleet-report.json: %s is ready, sglang 0.5.23, switch not switched" % NODE in out


def test_the_ee_holds_this_collection_at_galaxy_yml_version(ee_run, installed_collection):
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    listed = json.loads(in_ee("ansible-galaxy", "collection", "list", "gpufleet.sglang", "--format", "json"))
    assert listed == {EE_COLLECTIONS + "/ansible_collections": {"gpufleet.sglang": {"version": version}}}
    # Every file as this checkout builds it (FILES.json: each file's sha256), not an older build of the collection.
    files = json.loads(in_ee("cat", EE_COLLECTION + "/FILES.json"))
    built = json.loads((Path(installed_collection) / "ansible_collections/gpufleet/sglang/FILES.json").read_text())
    assert files == built


IMPORT_ALL = r"""
import importlib, json, pathlib, sys
root = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(root))
failed, imported = {}, []
for path in sorted((root / "ansible_collections/gpufleet/sglang/plugins").rglob("*.py")):
    parts = path.relative_to(root).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    try:
        importlib.import_module(name)
        imported.append(name)
    except Exception as exc:
        failed[name] = repr(exc)
print(json.dumps({"imported": imported, "failed": failed}))
"""

VERSIONS = r"""
import importlib.metadata, json, sys
print(json.dumps({name: importlib.metadata.version(name) for name in sys.argv[1:]}))
"""


def requirement_names(text):
    """Distribution names of a pip requirements file (comments and blank lines left out)."""
    names = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line).group(0))
    return names


def test_the_ee_has_the_collections_python_dependencies(ee_run):
    # What the collection declares for an EE (meta/execution-environment.yml: python), as the image holds it.
    meta = yaml.safe_load(in_ee("cat", EE_COLLECTION + "/meta/execution-environment.yml"))
    declared = in_ee("cat", "%s/%s" % (EE_COLLECTION, meta["dependencies"]["python"]))
    assert declared == (REPO / meta["dependencies"]["python"]).read_text()
    # The EE's Python packages are its lock's, each at the version the lock pins (installed with hashes), and its
    # ansible-core is the project venv's.
    locked = lock_pins(REPO / "requirements" / "ee.txt")
    names = requirement_names(declared) + sorted(locked)
    versions = json.loads(in_ee("python3", "-c", VERSIONS, *names))
    assert {name: versions[name] for name in locked} == locked
    assert versions["ansible-core"] == lock_pins(REPO / "requirements" / "dev.in")["ansible-core"]
    assert "ansible-runner" in locked
    # Every Python file of the collection imports in the EE's Python: the filters and plugin_utils that run on
    # the controller (the EE) find everything they import.
    result = json.loads(in_ee("python3", "-", EE_COLLECTIONS, stdin=IMPORT_ALL))
    assert result["failed"] == {}
    expected = {str(p.relative_to(REPO / "plugins")) for p in (REPO / "plugins").rglob("*.py")}
    assert len(result["imported"]) == len(expected) > 50
    assert "ansible_collections.gpufleet.sglang.plugins.filter.sglang" in result["imported"]
    assert "ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan" in result["imported"]


def test_the_readme_navigator_command_runs_as_written(ee_run):
    line = readme_command("CONTAINERS_CONF=")
    assert "ansible-navigator run playbooks/gather_facts.yml --mode stdout" in line
    REPORT.unlink()
    run = sh(["bash", "-c", line], timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "1 of 1 hosts can take the deployment" in run.stdout
    the_row_of_the_node()
