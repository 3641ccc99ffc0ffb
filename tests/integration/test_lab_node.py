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
