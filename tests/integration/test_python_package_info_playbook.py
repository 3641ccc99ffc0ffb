"""python_package_info through real ansible-playbook runs against real venvs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CACHE, empty_venv, pip_install_localpkg, purelib, user_site_venv

MODULE = "gpufleet.sglang.python_package_info"


def site_packages(venv):
    return next((Path(venv) / "lib").glob("python3*/site-packages")).resolve()


@pytest.mark.parametrize("version", ["0.5.23", "0.5.6"])
def test_regular_release(playbook, venvs, version):
    venv = venvs[version]
    sp = site_packages(venv)
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python")})
    assert not r.get("failed"), r
    assert r["install"] == "regular"
    assert r["version"] == version
    assert r["version_source"] == "metadata"
    assert r["file"] == str(sp / "sglang" / "__init__.py")
    assert r["location"] == str(sp / "sglang")
    assert r["dist_info"] == str(sp / ("sglang-%s.dist-info" % version))
    assert r["search_roots"] == [str(sp / "sglang")]
    assert r["in_venv"] is True
    assert r["sys_prefix"] == str(venv)
    assert r["editable_source"] is None
    assert r["changed"] is False
    assert r["method"].startswith("importlib.util.find_spec")


def test_resolving_does_not_import_the_package(playbook, venvs):
    # 0.5.23 without its dependencies: importing it would fail on numpy/torch.
    venv = venvs["0.5.23"]
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python")},
                        extra_env={"PYTHONWARNINGS": "error"})
    assert r["install"] == "regular"
    check = subprocess.run([str(venv / "bin" / "python"), "-c", "import sglang.srt.server_args"],
                           capture_output=True, text=True, check=False)
    assert check.returncode != 0, "fixture venv unexpectedly has the heavy dependencies"


def test_pep660_editable(playbook, venvs):
    venv = venvs["editable"]
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python")})
    assert not r.get("failed"), r
    checkout = (CACHE / "checkouts" / "pep660").resolve()
    assert r["install"] == "editable"
    assert r["editable_method"] == "direct_url.json"
    assert r["editable_source"] == str(checkout)
    assert r["search_roots"] == [str(checkout / "sglang")]
    assert r["file"] == str(checkout / "sglang" / "__init__.py")
    assert r["version"] == "0.9.0.dev0+ddtree"
    assert r["dist_info"].startswith(str(site_packages(venv)))


def test_legacy_egg_link_editable(playbook, venvs):
    venv = venvs["legacy"]
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python")})
    assert not r.get("failed"), r
    checkout = (CACHE / "checkouts" / "legacy").resolve()
    assert r["install"] == "editable"
    assert r["editable_method"] == "egg-link"
    assert list((site_packages(venv)).glob("*.egg-link")), "fixture did not make an egg-link"
    assert r["editable_source"] == str(checkout)
    assert r["search_roots"] == [str(checkout / "sglang")]
    assert r["dist_info"].endswith(".egg-info")


def test_checkout_on_pythonpath_is_editable_source(playbook, venvs, tmp_path):
    checkout = tmp_path / "src"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "localpkg", checkout)
    r = playbook.module(MODULE, {"python": str(venvs["empty"] / "bin" / "python"),
                                 "environment": {"PYTHONPATH": str(checkout)}})
    assert r["install"] == "editable"
    assert r["editable_method"] == "path entry"
    assert r["editable_source"] == str(checkout.resolve())
    assert r["version"] == "0.9.0.dev0+ddtree"
    assert r["version_source"] == "version.py"
    assert r["dist_info"] is None


def test_namespace_package(playbook, venvs, tmp_path):
    for part in ("a", "b"):
        (tmp_path / part / "nspkg" / part).mkdir(parents=True)
    r = playbook.module(MODULE, {"python": str(venvs["empty"] / "bin" / "python"), "name": "nspkg",
                                 "environment": {"PYTHONPATH": "%s:%s" % (tmp_path / "a", tmp_path / "b")}})
    assert r["install"] == "namespace"
    assert r["file"] is None
    assert r["search_roots"] == [str((tmp_path / "a" / "nspkg").resolve()), str((tmp_path / "b" / "nspkg").resolve())]


def test_missing_package(playbook, venvs):
    r = playbook.module(MODULE, {"python": str(venvs["empty"] / "bin" / "python")})
    assert not r.get("failed"), r
    assert r["install"] == "missing"
    assert r["search_roots"] == []
    r = playbook.module(MODULE, {"python": str(venvs["empty"] / "bin" / "python"), "fail_on_missing": True})
    assert r["failed"]
    assert "sglang is not installed" in r["msg"] and str(venvs["empty"]) in r["msg"]


def test_default_interpreter_is_ansibles(playbook):
    r = playbook.module(MODULE, {"name": "pytest"})
    assert r["python"] == sys.executable or Path(r["python"]).resolve() == Path(sys.executable).resolve()
    assert r["install"] == "regular"


def test_check_mode(playbook, venvs):
    r = playbook.module(MODULE, {"python": str(venvs["0.5.23"] / "bin" / "python")}, check=True)
    assert r["version"] == "0.5.23" and r["changed"] is False


# --- bad input: a clear message, never a traceback -------------------------------------------------

def assert_clear_failure(r, *needles):
    assert r.get("failed"), r
    assert "Traceback" not in r["msg"] and "MODULE FAILURE" not in r["msg"], r["msg"]
    assert "host " in r["msg"]
    for needle in needles:
        assert needle in r["msg"], r["msg"]


def test_missing_interpreter(playbook, tmp_path):
    r = playbook.module(MODULE, {"python": str(tmp_path / "nope" / "python3")})
    assert_clear_failure(r, str(tmp_path / "nope" / "python3"), "does not exist", "ExecStart")


def test_not_executable(playbook, tmp_path):
    f = tmp_path / "python3"
    f.write_text("")
    f.chmod(0o644)
    assert_clear_failure(playbook.module(MODULE, {"python": str(f)}), str(f), "not an executable")


def test_not_a_python(playbook):
    assert_clear_failure(playbook.module(MODULE, {"python": "/bin/echo"}), "/bin/echo", "Python interpreter")


def test_hanging_interpreter(playbook, tmp_path):
    hang = tmp_path / "python3"
    hang.write_text("#!/bin/sh\nsleep 300 & sleep 300\n")
    hang.chmod(0o755)
    r = playbook.module(MODULE, {"python": str(hang), "timeout": 2})
    assert_clear_failure(r, "did not answer within 2s")


def test_dist_info_without_files(playbook, venvs, scratch_copy):
    venv = scratch_copy(venvs["0.5.6"])
    # A venv copy keeps absolute paths in its scripts; run its interpreter through its pyvenv.cfg.
    shutil.rmtree(site_packages(venv) / "sglang")
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python")})
    assert_clear_failure(r, "broken install", "sglang-0.5.6.dist-info", "--force-reinstall")


def test_package_dir_without_dist_info(playbook, venvs, scratch_copy):
    venv = scratch_copy(venvs["0.5.6"])
    shutil.rmtree(site_packages(venv) / "sglang-0.5.6.dist-info")
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python")})
    assert_clear_failure(r, "broken install", "has no dist-info", str(site_packages(venv) / "sglang"))


def test_bad_name(playbook):
    assert_clear_failure(playbook.module(MODULE, {"name": "sglang.srt"}), "top-level import name")


# --- pip's copies in directories of their own are not checkouts ------------------------------------

@pytest.mark.parametrize("how", ["--target", "--prefix"])
def test_pip_directory_on_pythonpath_is_a_path_install(playbook, venvs, tmp_path, how):
    dest = tmp_path / "deps"
    pip_install_localpkg(venvs["empty"], how, str(dest))
    on_path = (dest if how == "--target" else purelib(dest)).resolve()
    r = playbook.module(MODULE, {"python": str(venvs["empty"] / "bin" / "python"),
                                 "environment": {"PYTHONPATH": str(on_path)}})
    assert not r.get("failed"), r.get("msg")
    assert (r["install"], r["installed_by"]) == ("path", "pip")
    assert (r["editable_method"], r["editable_source"]) == (None, None)
    assert r["version"] == "0.9.0.dev0+ddtree" and r["version_source"] == "metadata"
    assert r["dist_info"] == str(on_path / "sglang-0.9.0.dev0+ddtree.dist-info")
    assert r["search_roots"] == [str(on_path / "sglang")]


def test_pip_user_install(playbook, tmp_path):
    venv = user_site_venv()
    userbase = tmp_path / "userbase"
    pip_install_localpkg(venv, "--user", env=dict(os.environ, PYTHONUSERBASE=str(userbase)))
    user_site = purelib(userbase).resolve()
    # The interpreter that installed it reads its user site like site-packages.
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python"),
                                 "environment": {"PYTHONUSERBASE": str(userbase)}})
    assert (r["install"], r["installed_by"], r["location"]) == ("regular", "pip", str(user_site / "sglang"))
    # Another interpreter given that directory on PYTHONPATH runs pip's copy, not a checkout.
    r = playbook.module(MODULE, {"python": str(empty_venv() / "bin" / "python"),
                                 "environment": {"PYTHONPATH": str(user_site)}})
    assert (r["install"], r["installed_by"], r["editable_source"]) == ("path", "pip", None)


def test_checkout_beside_pip_metadata_it_does_not_own_stays_editable(playbook, venvs, tmp_path):
    # A checkout whose directory also holds a dist-info of another copy (RECORD lists other files).
    checkout = tmp_path / "src"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "localpkg", checkout)
    other = tmp_path / "other"
    pip_install_localpkg(venvs["empty"], "--target", str(other))
    shutil.copytree(next(other.glob("*.dist-info")), checkout / "sglang-0.9.0.dev0+ddtree.dist-info")
    (checkout / "sglang" / "extra.py").write_text("")
    record = checkout / "sglang-0.9.0.dev0+ddtree.dist-info" / "RECORD"
    record.write_text("".join(line for line in record.read_text().splitlines(True)
                              if not line.startswith("sglang/__init__.py")))
    r = playbook.module(MODULE, {"python": str(venvs["empty"] / "bin" / "python"),
                                 "environment": {"PYTHONPATH": str(checkout)}})
    assert (r["install"], r["editable_method"], r["installed_by"]) == ("editable", "path entry", None)


# --- broken metadata: the file and the problem, never a traceback -----------------------------------

@pytest.mark.parametrize("how, problem", [
    ("missing", "is missing"),
    ("Version", "has no Version field"),
    ("Name", "has no Name field"),
    ("latin-1", "is not valid UTF-8"),
])
def test_broken_metadata(playbook, venvs, scratch_copy, how, problem):
    venv = scratch_copy(venvs["0.5.6"])
    meta = site_packages(venv) / "sglang-0.5.6.dist-info" / "METADATA"
    if how == "missing":
        meta.unlink()
    elif how == "latin-1":
        meta.write_bytes(meta.read_bytes().replace(b"Summary:", b"Summary: caf\xe9", 1))
    else:
        meta.write_text("".join(line for line in meta.read_text().splitlines(True) if not line.startswith(how + ":")))
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python")})
    assert_clear_failure(r, "broken install of sglang", "%s %s" % (meta, problem),
                         "pip install --force-reinstall sglang==0.5.6")
    assert "Traceback" not in (r.get("stderr") or "") and "is it a Python" not in r["msg"]


@pytest.mark.parametrize("timeout", [0, -5])
def test_impossible_timeout(playbook, timeout):
    assert_clear_failure(playbook.module(MODULE, {"timeout": timeout}),
                         "timeout must be more than 0 (seconds), not %d" % timeout)
