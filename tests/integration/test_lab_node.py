"""The lab node trusts this checkout's key: a second clone (or a removed .cache) gets a node it can reach."""

import os
import subprocess

import pytest
from helpers import REPO

NAME = "gpufleet-labtest"
PORT = 22190


def sh(argv, env=None, check=True):
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=check)


@pytest.fixture(scope="module")
def node_image():
    # The same lock as tests/molecule.sh: one build of the image, whoever asks first.
    (REPO / ".cache").mkdir(exist_ok=True)
    sh(["flock", str(REPO / ".cache" / "lab-prepare.lock"), "tests/containers/build-node-image.sh"])
    yield
    sh(["podman", "rm", "-f", NAME], env=_env(None), check=False)


def _env(key_dir):
    env = dict(os.environ, CONTAINERS_CONF=str(REPO / "tests" / "containers" / "containers.conf"))
    if key_dir:
        env["GPUFLEET_LAB_SSH_DIR"] = str(key_dir)
    return env


def ssh_works(key_dir):
    return sh(["ssh", "-q", "-i", str(key_dir / "id_ed25519"), "-p", str(PORT), "-o", "BatchMode=yes",
               "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "ops@127.0.0.1", "true"],
              check=False).returncode == 0


def container_id():
    return sh(["podman", "container", "inspect", NAME, "--format", "{{.Id}}"], env=_env(None)).stdout.strip()


def test_a_node_made_with_another_key_is_made_again_and_says_by_whom(node_image, tmp_path):
    first_keys, second_keys = tmp_path / "first-checkout", tmp_path / "second-checkout"
    sh(["tests/containers/lab-node.sh", NAME, str(PORT)], env=_env(first_keys))
    assert ssh_works(first_keys)
    made = container_id()

    # Another checkout's key: the node is made again with it, and the message says why.
    run = sh(["tests/containers/lab-node.sh", NAME, str(PORT)], env=_env(second_keys))
    assert "lab: %s was made by %s with another SSH key" % (NAME, REPO) in run.stderr
    assert ssh_works(second_keys) and not ssh_works(first_keys)
    remade = container_id()
    assert remade != made

    # Same checkout, same key: the node is kept as it is.
    run = sh(["tests/containers/lab-node.sh", NAME, str(PORT)], env=_env(second_keys))
    assert run.stderr == "" and container_id() == remade

    # Stopped, it is not taken as ready (the quick way needs it running and answering): started again, not made.
    sh(["podman", "stop", "-t", "0", NAME], env=_env(None))
    run = sh(["tests/containers/lab-node.sh", NAME, str(PORT)], env=_env(second_keys))
    assert run.stderr == "" and container_id() == remade and ssh_works(second_keys)


@pytest.fixture
def port_forwarded_elsewhere():
    """A DNAT rule for a lab port naming a container this podman store does not have, written as netavark
    writes its jumps: what a container of another store (or a leftover of a deleted one) leaves in iptables."""
    port, foreign_id = 22189, "f0" * 32
    chain = ["iptables", "-w", "-t", "nat"]
    sh(chain + ["-N", "GPUFLEET-LABTEST"])
    try:
        sh(chain + ["-A", "GPUFLEET-LABTEST", "-d", "127.0.0.1/32", "-p", "tcp", "--dport", str(port), "-m", "comment",
                    "--comment", "dnat name: podman id: %s" % foreign_id, "-j", "RETURN"])
        yield port, foreign_id
    finally:
        sh(chain + ["-F", "GPUFLEET-LABTEST"], check=False)
        sh(chain + ["-X", "GPUFLEET-LABTEST"], check=False)


def test_a_port_another_podman_store_forwards_is_refused_before_a_node_is_made(node_image, port_forwarded_elsewhere):
    port, foreign_id = port_forwarded_elsewhere
    run = sh(["tests/containers/lab-node.sh", "gpufleet-labtest-taken", str(port)], env=_env(None), check=False)
    assert run.returncode == 1
    assert ("lab: 127.0.0.1:%d is forwarded to container %s, which this podman store does not have"
            % (port, foreign_id[:12])) in run.stderr
    assert "podman rm -f %s" % foreign_id[:12] in run.stderr
    exists = sh(["podman", "container", "exists", "gpufleet-labtest-taken"], env=_env(None), check=False)
    assert exists.returncode == 1
