"""The commands of the README and of docs/, exactly as written: the fleet picture of the embedded lab target
(inventories/local: SSH on a loopback port as ops with sudo) and the way back on it, and every other command line
of their sh blocks, each checked the way it can be here (test_every_command_of_the_docs_is_checked).

The README's lab itself (gpufleet-local on 127.0.0.1:22100, as scripts/deploy.sh leaves it) is the user's: the lab
commands run on a lab of this module's own, from a checkout-like directory whose inventories/local reaches it, and
test_the_users_lab_is_left_as_it_was checks that the user's is still there, untouched."""

import json
import os
import re
import shlex
import shutil
import subprocess

import pytest
import yaml
from helpers import REPO

STATES = ("not switched", "current", "drifted", "broken by a package change")
# The README's lab (inventories/local/hosts.yml, scripts/deploy.sh): the user's, never made, changed or removed here.
USERS_LAB = "gpufleet-local"
# The lab these tests make and remove: another container and port.
LAB_NAME, LAB_PORT = "gpufleet-readme-test", 22192
NODE_IMAGE = "localhost/gpufleet-sglang-node:bookworm"
PODMAN_ENV = dict(os.environ, CONTAINERS_CONF=str(REPO / "tests" / "containers" / "containers.conf"))


def sh(argv, env=None, check=True, timeout=900, cwd=REPO):
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=check)


def readme_lines(playbook):
    """The README's command lines that run the collection's playbook PLAYBOOK (by its full name) against
    inventories/local."""
    lines = [line for line in (REPO / "README.md").read_text().splitlines()
             if line.startswith("ANSIBLE_COLLECTIONS_PATH=") and line.endswith(
                 "-i inventories/local gpufleet.sglang.%s" % playbook)]
    assert lines, "README.md shows no command for %s against inventories/local" % playbook
    return lines


def run_as_written(line, extra=(), cwd=REPO):
    """A README line run as a shell in cwd runs it: leading VAR=value words are its environment ($VAR in them
    expanded). It prints no warning."""
    words = shlex.split(line)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    while "=" in words[0] and not words[0].startswith(("-", "/", ".")):
        key, value = words.pop(0).split("=", 1)
        env[key] = re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), ""), value)
    if "/" in words[0] and not words[0].startswith("/"):
        words[0] = str(cwd / words[0])
    run = sh(words + list(extra), env=env, check=False, cwd=cwd)
    printed = "%s printed:\n%s%s" % (line, run.stderr, run.stdout[-2000:])
    assert run.stderr == "" and "WARNING" not in run.stdout, printed
    return run


def container_state(name):
    """What would show that a container was removed, made again, restarted or changed: its id, whether it runs and
    since when, and (running) a digest of its /etc/systemd/system (the units a rollout or a revert writes); None
    when there is no such container. Reads only."""
    run = sh(["podman", "container", "inspect", name], env=PODMAN_ENV, check=False)
    if run.returncode:
        return None
    (info,) = json.loads(run.stdout)
    units = None
    if info["State"]["Running"]:
        units = sh(["podman", "exec", name, "sh", "-c", "tar -C /etc/systemd/system --sort=name -cf - . | sha256sum"],
                   env=PODMAN_ENV).stdout.split()[0]
    return {"id": info["Id"], "running": info["State"]["Running"], "started_at": info["State"]["StartedAt"],
            "units": units}


@pytest.fixture(scope="module")
def node_image():
    (REPO / ".cache").mkdir(exist_ok=True)
    sh(["flock", str(REPO / ".cache" / "lab-prepare.lock"), "tests/containers/build-node-image.sh"], env=PODMAN_ENV)


@pytest.fixture(scope="module")
def users_lab(node_image):
    """The README's lab as the user left it, before this module's lab tests (test_the_users_lab_is_left_as_it_was
    compares). Where there is none (CI), a stand-in of that name takes its place and is removed at the end: a
    container of the node image without the lab's labels, which tests/containers/lab-node.sh would make again at
    once, as the lab fixture of this module did with the user's lab before it had a lab of its own."""
    stand_in = None
    if container_state(USERS_LAB) is None:
        stand_in = sh(["podman", "run", "-d", "--name", USERS_LAB, "--label", "gpufleet.test=users-lab-stand-in",
                       NODE_IMAGE, "sleep", "infinity"], env=PODMAN_ENV).stdout.strip()
    try:
        yield container_state(USERS_LAB)
    finally:
        if stand_in:
            # By its id: a gpufleet-local made meanwhile (scripts/deploy.sh run beside the tests) is not ours to remove.
            sh(["podman", "rm", "-f", "-t", "0", stand_in], env=PODMAN_ENV, check=False)


@pytest.fixture(scope="module")
def local_lab(users_lab, tmp_path_factory):
    """The embedded default target as scripts/deploy.sh makes it, before the rollout, but a lab of this module's own
    (LAB_NAME on LAB_PORT, removed at the end), and the directory to run the README's lab lines in: the checkout's
    .venv and lab key, its playbooks, this run's install of the collection in .cache/collections, and
    inventories/local as the checkout has it but for the port. Their fleet report is written there too."""
    root = tmp_path_factory.mktemp("readme-lab")
    keys = sh(["tests/containers/lab-ssh-key.sh"]).stdout.strip()
    (root / ".cache").mkdir()
    os.symlink(REPO / ".venv", root / ".venv")
    os.symlink(keys, root / ".cache" / "lab-ssh")
    shutil.copytree(REPO / "playbooks", root / "playbooks")
    shutil.copytree(REPO / "inventories" / "local", root / "inventories" / "local")
    hosts_file = root / "inventories" / "local" / "hosts.yml"
    hosts = yaml.safe_load(hosts_file.read_text())
    hosts["all"]["children"]["gpu_inference"]["hosts"][USERS_LAB]["ansible_port"] = LAB_PORT
    hosts_file.write_text(yaml.safe_dump(hosts))
    try:
        sh(["tests/containers/lab-node.sh", LAB_NAME, str(LAB_PORT)], env=PODMAN_ENV)
        collections = sh(["scripts/install-collection.sh", str(root / ".cache" / "collections")],
                         env=dict(os.environ, PATH="%s:%s" % (REPO / ".venv" / "bin", os.environ["PATH"])))
        run = sh(["ansible-playbook", "-i", str(root / "inventories" / "local"), "tests/containers/provision.yml"],
                 env=dict(PODMAN_ENV, ANSIBLE_COLLECTIONS_PATH=collections.stdout.strip()), check=False)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        yield root
    finally:
        sh(["podman", "rm", "-f", LAB_NAME], env=PODMAN_ENV, check=False)


def test_the_fleet_picture_of_the_lab_as_the_readme_writes_it(local_lab):
    (line,) = readme_lines("gather_facts")
    run = run_as_written(line, cwd=local_lab)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    (row,) = json.loads((local_lab / "fleet-report" / "fleet-report.json").read_text())["hosts"]
    assert row["host"] == "gpufleet-local" and row["facts"]["package"]["version"] == "0.5.23"
    assert row["status"] == "ready" and row["switch"]["state"] in STATES, row["reasons"]
    assert "1 hosts can take the deployment" in run.stdout


def test_the_day_two_check_of_the_lab_as_the_readme_writes_it(local_lab):
    (line,) = readme_lines("verify_dflash")
    run = run_as_written(line, cwd=local_lab)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # The lab as the fleet picture left it: switched by scripts/deploy.sh (engaged), or not (nothing to verify).
    assert re.search(r"gpufleet-local: (sglang\.service engaged \(acceptance now \d\.\d\d|no switched service to "
                     r"verify)", run.stdout), run.stdout[-3000:]


def test_the_way_back_on_the_lab_as_the_readme_writes_it(local_lab):
    (line,) = readme_lines("revert_dflash")
    run = run_as_written(line, cwd=local_lab)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "gpufleet-local: sglang.service (revert) sglang 0.5.23: " in run.stdout


def test_the_users_lab_is_left_as_it_was(users_lab, local_lab):
    """Issue #41: after a test run the README's lab was gone. The lab tests above made, provisioned and reverted
    gpufleet-local itself (tests/containers/lab-node.sh makes a container again when it was made from another
    image, port or key, or does not answer in time, and a failed start after its `podman rm -f` leaves none)."""
    assert container_state(USERS_LAB) == users_lab, "the README's lab %s was changed by the tests" % USERS_LAB


# ---- every command of the README and of docs/ ------------------------------------------------------------------

DOCS = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


def doc_commands():
    """(page, line) for every command line of the pages' sh blocks (comments and blank lines left out)."""
    out = []
    for page in DOCS:
        for block in re.findall(r"```sh\n(.*?)```", page.read_text(), re.S):
            out += [(page.name, line.split("  #")[0].strip()) for line in block.splitlines()
                    if line.strip() and not line.strip().startswith("#")]
    return out


# Commands other tests run as written: the lab's two (above), the EE's (tests/integration/test_ee.py).
RUN_ELSEWHERE = (
    re.compile(r"^ANSIBLE_COLLECTIONS_PATH=\.cache/collections \.venv/bin/ansible-playbook -i inventories/local "
               r"gpufleet\.sglang\.(gather_facts|verify_dflash|revert_dflash)$"),
    re.compile(r"^scripts/ee\.sh$"),
    re.compile(r"^CONTAINERS_CONF=\S+ ANSIBLE_NAVIGATOR_CONFIG=\S+ \.cache/ee-tools/bin/ansible-navigator run "),
)
# The set-up and test entry points: CI runs scripts/test.sh (which runs scripts/setup.sh), the lab fixture above does
# what scripts/deploy.sh does; here each must exist, parse, and take the stages a page names.
ENTRY_POINTS = re.compile(r"^(scripts/(deploy|test|update-locks)\.sh|tests/molecule\.sh)( .*)?$")
# A real fleet's commands, against the example inventory: run as written with --list-hosts, which loads the
# collection, the playbook and the inventory and contacts no host (the example's hosts do not exist).
EXAMPLE_FLEET = re.compile(r"^ANSIBLE_COLLECTIONS_PATH=\.cache/collections \.venv/bin/ansible-playbook "
                           r"-i inventories/example gpufleet\.sglang\.\w+( -e \S+)*$")
# Commands run here as written.
RUN_HERE = (
    re.compile(r"^PATH=\.venv/bin:\$PATH scripts/install-collection\.sh \.cache/collections$"),
    # The installation from the built tarball (build first: the sort below runs them in the page's order).
    re.compile(r"^\.venv/bin/ansible-galaxy collection build --force --output-path \.cache/dist$"),
    re.compile(r"^ANSIBLE_COLLECTIONS_PATH=\.cache/collections \.venv/bin/ansible-galaxy collection install --force "
               r"\.cache/dist/gpufleet-sglang-[0-9.]+\.tar\.gz$"),
    re.compile(r"^\.venv/bin/python scripts/argument-reference\.py --check$"),
)


def test_every_command_of_the_docs_is_checked():
    unchecked = [(page, line) for page, line in doc_commands()
                 if not any(p.match(line) for p in RUN_ELSEWHERE + RUN_HERE + (ENTRY_POINTS, EXAMPLE_FLEET))]
    assert unchecked == [], "commands in the docs that no test runs or checks: %s" % unchecked
    lines = [line for _page, line in doc_commands()]
    assert sum(bool(EXAMPLE_FLEET.match(line)) for line in lines) >= 3 and "scripts/deploy.sh" in lines


def test_the_entry_points_the_docs_name_exist_parse_and_take_those_stages():
    test_sh = (REPO / "scripts" / "test.sh").read_text()
    # The stages scripts/test.sh names in its own refusal of an unknown one.
    (usage,) = re.findall(r"unknown stage \$s \(([a-z ]+) molecule:SCENARIO", test_sh)
    stages = set(usage.split())
    scenarios = {p.name for p in (REPO / "extensions" / "molecule").iterdir() if (p / "molecule.yml").is_file()}
    for _page, line in doc_commands():
        match = ENTRY_POINTS.match(line)
        if not match:
            continue
        script, *args = line.split()
        assert os.access(REPO / script, os.X_OK), script
        sh(["bash", "-n", script])
        for arg in args:
            if script == "scripts/test.sh" and arg.startswith("molecule:"):
                assert set(arg.split(":", 1)[1].split(",")) <= scenarios, line
            elif script == "scripts/test.sh":
                assert arg in stages, "%s: scripts/test.sh has no stage %s (%s)" % (line, arg, sorted(stages))
            elif script == "tests/molecule.sh":
                assert arg in scenarios, line
            elif script == "scripts/update-locks.sh":
                assert arg == "--no-test", line
            else:
                assert arg.startswith("-"), line  # scripts/deploy.sh passes ansible-playbook options through


def test_the_commands_the_docs_run_here_work_as_written():
    lines = [line for _page, line in doc_commands() if any(p.match(line) for p in RUN_HERE)]
    assert lines
    for line in sorted(set(lines), key=lambda x: ("argument-reference" in x, "collection install" in x)):
        run = run_as_written(line)
        assert run.returncode == 0, line + "\n" + run.stdout[-2000:] + run.stderr[-2000:]


def test_the_real_fleets_commands_load_with_the_example_inventory():
    lines = sorted(set(line for _page, line in doc_commands() if EXAMPLE_FLEET.match(line)))
    sh(["scripts/install-collection.sh", str(REPO / ".cache" / "collections")],
       env=dict(os.environ, PATH="%s:%s" % (REPO / ".venv" / "bin", os.environ["PATH"])))
    for line in lines:
        run = run_as_written(line, ["--list-hosts"])
        assert run.returncode == 0, line + "\n" + run.stdout[-2000:] + run.stderr[-2000:]
        assert "inf-h100-01.example.internal" in run.stdout, run.stdout
