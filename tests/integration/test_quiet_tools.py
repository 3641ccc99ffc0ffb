"""The project venv is exactly its lock, and its tools, run as a user runs them, print nothing on stderr.

A package that no lock pins changes under a user's feet: cryptography 51 made every command of ansible-core 2.19
print a CryptographyDeprecationWarning on a new machine, while an older machine stayed green. These tests run the
venv scripts/setup.sh made from requirements/dev.txt, with none of the settings that quiet the other tests.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from helpers import REPO, lock_pins

VENV_BIN = REPO / ".venv" / "bin"
INSTALLED = r"""
import importlib.metadata, json, re
print(json.dumps({re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version
                  for d in importlib.metadata.distributions()}))
"""
# What `python3 -m venv` itself puts in a venv, which no lock names.
VENV_SEED = {"pip", "setuptools"}


@pytest.fixture(scope="module")
def user_env(installed_collection):
    """The environment a user runs the tools in: the collection installed, no test settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHONWARNINGS", "PY_COLORS"))}
    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed_collection)
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    return env


def run_quiet(argv, env, cwd):
    proc = subprocess.run([str(a) for a in argv], env=env, cwd=str(cwd), capture_output=True, text=True,
                          timeout=300, check=False)
    command = " ".join(str(a) for a in argv)
    assert proc.returncode == 0, "%s: rc=%s\n%s\n%s" % (command, proc.returncode, proc.stdout[-2000:], proc.stderr)
    assert proc.stderr == "", "%s printed on stderr:\n%s" % (command, proc.stderr)
    assert "WARNING" not in proc.stdout, "%s printed a warning:\n%s" % (command, proc.stdout)
    return proc.stdout


def test_the_venv_is_exactly_its_lock():
    assert sys.prefix == str(REPO / ".venv"), "run the tests with .venv/bin/python (scripts/test.sh does)"
    installed = json.loads(subprocess.run([VENV_BIN / "python", "-c", INSTALLED], capture_output=True, text=True,
                                          check=True).stdout)
    locked = lock_pins(REPO / "requirements" / "dev.txt")
    assert len(locked) > 40 and "cryptography" in locked
    assert {name: installed.get(name) for name in locked} == locked
    # Nothing else either (ansible-test sanity installs its own requirements into venvs of its own).
    assert set(installed) - set(locked) - VENV_SEED == set()


def test_ansible_version_is_quiet(user_env, tmp_path):
    assert "ansible [core %s]" % lock_pins(REPO / "requirements" / "dev.txt")["ansible-core"] in run_quiet(
        [VENV_BIN / "ansible", "--version"], user_env, tmp_path)


def test_ansible_doc_of_a_module_is_quiet(user_env, tmp_path):
    assert "gpufleet.sglang.gpu_info" in run_quiet([VENV_BIN / "ansible-doc", "gpufleet.sglang.gpu_info"], user_env,
                                                   tmp_path)


def test_a_small_playbook_is_quiet(user_env, tmp_path):
    (tmp_path / "hosts.ini").write_text("box ansible_connection=local ansible_python_interpreter=%s\n"
                                        % (VENV_BIN / "python"))
    (tmp_path / "play.yml").write_text(textwrap.dedent("""\
        - name: One module of the collection
          hosts: box
          gather_facts: false
          tasks:
            - name: The GPUs
              gpufleet.sglang.gpu_info:
              register: gpus
            - name: Say what was found
              ansible.builtin.debug:
                msg: "nvidia-smi {{ gpus.nvidia_smi }}"
        """))
    out = run_quiet([VENV_BIN / "ansible-playbook", "-i", "hosts.ini", "play.yml"], user_env, tmp_path)
    assert "ok=2" in out and "failed=0" in out
