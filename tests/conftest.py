"""Shared test plumbing: the collection as an installed collection, real venvs, playbook runs."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from helpers import collections_root  # noqa: E402


@pytest.fixture(scope="session")
def installed_collection():
    """Path on which gpufleet.sglang is installed from the built tarball."""
    return collections_root()


@pytest.fixture(scope="session")
def ansible_env(installed_collection):
    env = dict(os.environ)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed_collection)
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_RETRY_FILES_ENABLED"] = "0"
    env["ANSIBLE_LOCALHOST_WARNING"] = "0"
    env["ANSIBLE_INVENTORY_UNPARSED_WARNING"] = "0"
    env.pop("ANSIBLE_CONFIG", None)
    return env


class PlaybookRunner:
    """Runs one module through a real ansible-playbook and returns its registered result."""

    def __init__(self, env, workdir):
        self.env = env
        self.workdir = workdir
        self.count = 0

    def module(self, name, args, check=False, extra_env=None, interpreter=sys.executable):
        """interpreter runs the module (a wrapper script may switch users); the test's Python saves the result."""
        self.count += 1
        out = self.workdir / ("result-%d.json" % self.count)
        play = [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "vars": {"ansible_python_interpreter": sys.executable},
                "tasks": [
                    {"name": "run module", "register": "r", "ignore_errors": True, name: args,
                     "vars": {"ansible_python_interpreter": str(interpreter)}},
                    {
                        "name": "save result",
                        "check_mode": False,
                        "ansible.builtin.copy": {"content": "{{ r | to_json }}", "dest": str(out), "mode": "0600"},
                    },
                ],
            }
        ]
        book = self.workdir / ("play-%d.yml" % self.count)
        book.write_text(json.dumps(play))
        env = dict(self.env)
        env.update(extra_env or {})
        argv = ["ansible-playbook", "-i", "localhost,", "-c", "local", str(book)]
        if check:
            argv.append("--check")
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert out.exists(), "playbook did not save a result:\n%s\n%s" % (proc.stdout, proc.stderr)
        result = json.loads(out.read_text())
        result["_stdout"] = proc.stdout
        return result


@pytest.fixture
def playbook(ansible_env, tmp_path):
    return PlaybookRunner(ansible_env, tmp_path)


@pytest.fixture(scope="session")
def venvs():
    from helpers import real_venvs

    return real_venvs()


def write_file(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def scratch_copy(tmp_path):
    def copy(src):
        dst = tmp_path / Path(src).name
        shutil.copytree(src, dst, symlinks=True)
        return dst
    return copy


@pytest.fixture
def unreadable_tree():
    """A source tree, in a directory everyone can reach, with what a non-root search cannot read.

    pkg/locked.py, pkg/sub/locked2.py (also reachable as pkg/zlink/locked2.py) and the directory
    pkg/secret are mode 000; pkg/big.py is 7,000 bytes; pkg/sub/loop is a symlink loop; pkg/dangling.py
    points nowhere. Root reads everything: search it as another user (setpriv) to see the difference.
    """
    base = Path(tempfile.mkdtemp(prefix="gpufleet-unreadable-"))
    base.chmod(0o755)
    pkg = base / "src" / "pkg"
    (pkg / "secret").mkdir(parents=True)
    (pkg / "sub").mkdir()
    (pkg / "a.py").write_text("DFLASH = 1\n")
    (pkg / "locked.py").write_text("DFLASH = 2\n")
    (pkg / "sub" / "locked2.py").write_text("DFLASH = 3\n")
    (pkg / "secret" / "s.py").write_text("DFLASH = 4\n")
    (pkg / "big.py").write_text("DFLASH\n" * 1000)
    os.symlink("..", pkg / "sub" / "loop")
    os.symlink("sub", pkg / "zlink")
    os.symlink("gone", pkg / "dangling.py")
    for path in (pkg / "locked.py", pkg / "sub" / "locked2.py", pkg / "secret"):
        path.chmod(0)
    yield base / "src"
    (pkg / "secret").chmod(0o755)
    shutil.rmtree(base)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With GPUFLEET_TESTS_NO_SKIP=1 (scripts/test.sh sets it) a skipped test fails: a missing tool
    (ripgrep, setpriv, chromium) must not turn into a green run that tested less."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and os.environ.get("GPUFLEET_TESTS_NO_SKIP") == "1":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = "skipped, and GPUFLEET_TESTS_NO_SKIP=1 forbids it: %s" % reason
