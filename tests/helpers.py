"""Builders for the things the tests run against: the installed collection and real venvs.

Venvs live in a cache directory (GPUFLEET_TEST_CACHE, default ~/.cache/gpufleet-sglang-tests)
so that a second run reuses them; each is rebuilt when its recipe changes.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Two pytest sessions run at once in CI (scripts/test.sh): each gets its own output directory.
OUTPUT = Path(os.environ.get("GPUFLEET_TEST_OUTPUT", REPO / "tests" / "output"))
CACHE = Path(os.environ.get("GPUFLEET_TEST_CACHE", Path.home() / ".cache" / "gpufleet-sglang-tests"))
FIXTURES = REPO / "tests" / "fixtures"

# Releases the discovery modules are tested against: 0.5.6 (no DFlash), 0.5.11 (DFlash, the old window
# flag --speculative-dflash-draft-window-size), 0.5.16 (the new name, the old one a hidden alias), 0.5.23
# (current); their --help and parser sources are in tests/fixtures/sglang (see its README.md).
SGLANG_RELEASES = ("0.5.6", "0.5.11", "0.5.16", "0.5.23")
# What `python -m sglang.launch_server --help` needs on a CPU machine for 0.5.23, and the build backends of the
# editable-install fixtures: locks with hashes (requirements/*.txt, made by scripts/update-locks.sh).
HELP_DEPS_LOCK = REPO / "requirements" / "sglang-help.txt"
EDITABLE_BUILD_LOCK = REPO / "requirements" / "editable-build.txt"
LEGACY_EDITABLE_LOCK = REPO / "requirements" / "legacy-editable.txt"

_collections = None

# Run as `.venv/bin/python tests/bench/NAME.py` (or `.venv/bin/python -m pytest`) without the venv on PATH,
# the programs started from here and by the callers (ansible-galaxy, ansible-playbook, ansible-test) must
# still be this interpreter's venv's: its bin directory goes first on PATH, for every subprocess.
_BIN = os.path.dirname(sys.executable)
if os.environ.get("PATH", "").split(os.pathsep)[0] != _BIN:
    os.environ["PATH"] = os.pathsep.join([_BIN, os.environ.get("PATH", "")])


def run(argv, **kw):
    check = kw.pop("check", True)
    return subprocess.run([str(a) for a in argv], check=check, **kw)


def collections_root():
    """Build the collection tarball and install it (scripts/install-collection.sh); return the path."""
    global _collections
    if not _collections:
        root = OUTPUT / "collections"
        run([REPO / "scripts" / "install-collection.sh", root], capture_output=True)
        _collections = root
    return _collections


@contextlib.contextmanager
def _cache_lock(name):
    """Hold CACHE/locks/NAME while building a cache entry: sessions running at once wait for one build."""
    locks = CACHE / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / name, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _venv(name, recipe, build, venv_args=()):
    """Create CACHE/venvs/NAME with build(path) unless the same recipe made it already."""
    path = CACHE / "venvs" / name
    stamp = path / ".recipe"
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
    with _cache_lock("venv-" + name):
        if stamp.exists() and stamp.read_text() == digest:
            return path
        shutil.rmtree(path, ignore_errors=True)
        run([sys.executable, "-m", "venv", *venv_args, path])
        build(path)
        stamp.write_text(digest)
    return path


def pip(venv, *args):
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
        capture_output=True)


def pip_locked(venv, lock):
    """Install exactly what LOCK pins, each file checked against its sha256."""
    pip(venv, "--require-hashes", "-r", lock)


def lock_pins(lock):
    """{distribution name (normalized): version} of a lock made by scripts/update-locks.sh, or of a .in file's
    exact pins."""
    pins = {}
    for line in Path(lock).read_text().splitlines():
        match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^]]*\])?==([^ ;\\]+)", line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return pins


def _lock_digest(lock):
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def sglang_venv(version):
    return _venv("sglang-%s" % version, ["sglang", version],
                 lambda p: pip(p, "--no-deps", "sglang==%s" % version))


def help_venv(version="0.5.23"):
    """A venv where `python -m sglang.launch_server --help` really runs (CPU torch)."""
    return _venv("help-sglang-%s" % version, ["help", version, _lock_digest(HELP_DEPS_LOCK)],
                 lambda p: (pip_locked(p, HELP_DEPS_LOCK), pip(p, "--no-deps", "sglang==%s" % version)))


def _local_checkout(name):
    """A copy of tests/fixtures/localpkg outside the repo, as an operator's checkout would be."""
    src = CACHE / "checkouts" / name
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(FIXTURES / "localpkg", src)
    return src


def _localpkg_digest():
    h = hashlib.sha256()
    for f in sorted((FIXTURES / "localpkg").rglob("*")):
        if f.is_file():
            h.update(f.relative_to(FIXTURES).as_posix().encode() + f.read_bytes())
    return h.hexdigest()


def editable_venv():
    """PEP 660 editable install of a small package laid out like sglang (setuptools from its lock)."""
    def build(p):
        pip_locked(p, EDITABLE_BUILD_LOCK)
        pip(p, "--no-build-isolation", "-e", _local_checkout("pep660"))
    return _venv("editable-pep660", ["pep660", _localpkg_digest(), _lock_digest(EDITABLE_BUILD_LOCK)], build)


def legacy_editable_venv():
    """Old-style editable install (setup.py develop, .egg-link) with setuptools < 64."""
    def build(p):
        pip_locked(p, LEGACY_EDITABLE_LOCK)
        pip(p, "--no-build-isolation", "-e", _local_checkout("legacy"))
    return _venv("editable-legacy", ["legacy", _localpkg_digest(), _lock_digest(LEGACY_EDITABLE_LOCK)], build)


def wheel_builder_venv():
    """The build backend of localpkg's wheel, from its lock."""
    return _venv("wheel-builder", ["wheel-builder", _lock_digest(EDITABLE_BUILD_LOCK)],
                 lambda p: pip_locked(p, EDITABLE_BUILD_LOCK))


def empty_venv():
    return _venv("empty", ["empty"], lambda p: None)


def user_site_venv():
    """A venv that sees the user site (system site packages on), so `pip install --user` works in it."""
    return _venv("user-site", ["user-site", "--system-site-packages"], lambda p: None,
                 venv_args=("--system-site-packages",))


def localpkg_wheel():
    """A wheel of tests/fixtures/localpkg, built once per content, for pip installs into directories."""
    out = CACHE / "wheels" / _localpkg_digest()[:16]
    builder = wheel_builder_venv()
    with _cache_lock("localpkg-wheel"):
        wheels = sorted(out.glob("sglang-*.whl"))
        if not wheels:
            shutil.rmtree(out, ignore_errors=True)
            run([builder / "bin" / "python", "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
                 "--no-build-isolation", "-w", out, _local_checkout("wheel")], capture_output=True)
            wheels = sorted(out.glob("sglang-*.whl"))
    return wheels[0]


def pip_install_localpkg(venv, *how, env=None):
    """`pip install WHEEL` of localpkg with venv's pip and the placement options how (--target DIR, --user...)."""
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         "--no-index", *how, localpkg_wheel()], capture_output=True, env=env)


def purelib(prefix):
    """PREFIX/lib/pythonX.Y/site-packages, where pip --prefix and --user put packages."""
    return next((Path(prefix) / "lib").glob("python3*/site-packages"))


def real_venvs():
    return {
        "0.5.23": sglang_venv("0.5.23"),
        "0.5.6": sglang_venv("0.5.6"),
        "0.5.16": sglang_venv("0.5.16"),
        "editable": editable_venv(),
        "legacy": legacy_editable_venv(),
        "empty": empty_venv(),
    }
