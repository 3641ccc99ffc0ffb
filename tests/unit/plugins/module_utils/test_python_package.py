"""python_package: parsing the probe's answer, classifying the install, resolve_package on real interpreters."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.python_package import (
    PROBE_MARKER,
    BrokenInstall,
    PackageInfoError,
    ProbeError,
    classify,
    parse_probe_output,
    resolve_package,
)
from helpers import collections_root, pip_install_localpkg

SP = "/opt/ml-env/lib/python3.11/site-packages"


def raw(**over):
    base = {
        "python": "3.11.7", "executable": "/opt/ml-env/bin/python3", "prefix": "/opt/ml-env",
        "base_prefix": "/usr", "real_prefix": None, "site_dirs": [SP],
        "spec": {"origin": SP + "/sglang/__init__.py", "locations": [SP + "/sglang"],
                 "real_locations": [SP + "/sglang"], "loader": "SourceFileLoader"},
        "dist": {"name": "sglang", "version": "0.5.23", "path": SP + "/sglang-0.5.23.dist-info",
                 "metadata_file": SP + "/sglang-0.5.23.dist-info/METADATA", "metadata_problem": None,
                 "direct_url.json": None, "RECORD": True, "record_lists_origin": True, "installer": "pip"},
        "markers": {"egg_links": {}, "editable_pth": [], "editable_finders": []},
        "source_version": "0.5.23",
        "errors": {},
    }
    base.update(over)
    return base


def test_parse_skips_noise_printed_by_site_hooks():
    out = "sitecustomize says hi\n%s%s\n" % (PROBE_MARKER, json.dumps({"python": "3.11"}))
    assert parse_probe_output(out) == {"python": "3.11"}


@pytest.mark.parametrize("out", ["", "hello\n", PROBE_MARKER + "{not json\n"])
def test_parse_rejects_non_probe_output(out):
    with pytest.raises(ProbeError):
        parse_probe_output(out)


def test_regular():
    r = classify(raw(), "sglang")
    assert (r["install"], r["version"], r["in_venv"], r["installed_by"]) == ("regular", "0.5.23", True, "pip")
    assert r["search_roots"] == [SP + "/sglang"]
    assert r["probe_errors"] == {}


def test_pip_directory_on_the_path_is_a_path_install_not_a_checkout():
    deps = "/srv/deps"
    spec = {"origin": deps + "/sglang/__init__.py", "locations": [deps + "/sglang"],
            "real_locations": [deps + "/sglang"], "loader": "SourceFileLoader"}
    dist = dict(raw()["dist"], path=deps + "/sglang-0.5.23.dist-info")
    r = classify(raw(spec=spec, dist=dist), "sglang")
    assert (r["install"], r["installed_by"], r["editable_method"], r["editable_source"]) == ("path", "pip", None, None)
    assert r["search_roots"] == [deps + "/sglang"]
    # The same directory, but its dist-info does not list the files: a checkout that pip does not own.
    r = classify(raw(spec=spec, dist=dict(dist, record_lists_origin=False)), "sglang")
    assert (r["install"], r["editable_method"], r["installed_by"]) == ("editable", "path entry", None)


@pytest.mark.parametrize("problem, needle", [
    ("is missing", "sglang-0.5.23.dist-info/METADATA is missing"),
    ("has no Version field", "METADATA has no Version field; reinstall it with "
                             "'pip install --force-reinstall sglang==0.5.23'"),
    ("is not valid UTF-8 (...)", "METADATA is not valid UTF-8"),
])
def test_broken_metadata_names_the_file(problem, needle):
    dist = dict(raw()["dist"], metadata_problem=problem, name=None, version=None)
    with pytest.raises(BrokenInstall, match=re.escape(needle)):
        classify(raw(dist=dist), "sglang")


def test_system_python_is_not_a_venv():
    assert classify(raw(prefix="/usr", base_prefix="/usr"), "sglang")["in_venv"] is False


def test_direct_url_editable_wins_and_names_the_checkout():
    dist = dict(raw()["dist"], **{"direct_url.json": json.dumps(
        {"url": "file:///srv/src/sglang%20fork/python", "dir_info": {"editable": True}})})
    pkg = "/srv/src/sglang fork/python/sglang"
    spec = {"origin": pkg + "/__init__.py", "locations": [pkg], "real_locations": [pkg], "loader": "SourceFileLoader"}
    r = classify(raw(dist=dist, spec=spec), "sglang")
    assert r["install"] == "editable"
    assert r["editable_method"] == "direct_url.json"
    assert r["editable_source"] == "/srv/src/sglang fork/python"


def test_non_editable_direct_url_is_regular():
    dist = dict(raw()["dist"], **{"direct_url.json": json.dumps({"url": "file:///tmp/x.whl", "archive_info": {}})})
    assert classify(raw(dist=dist), "sglang")["install"] == "regular"


def test_symlinked_package_dir_counts_where_it_really_lives():
    spec = dict(raw()["spec"], real_locations=["/srv/checkout/python/sglang"])
    # The probe compares real paths: RECORD's sglang/__init__.py is not the checkout's file.
    dist = dict(raw()["dist"], record_lists_origin=False)
    r = classify(raw(spec=spec, dist=dist), "sglang")
    assert r["install"] == "editable" and r["search_roots"] == ["/srv/checkout/python/sglang"]


def test_missing_and_broken():
    assert classify(raw(spec=None, dist=None), "sglang")["install"] == "missing"
    with pytest.raises(BrokenInstall, match="files are gone"):
        classify(raw(spec=None), "sglang")
    with pytest.raises(BrokenInstall, match="has no dist-info"):
        classify(raw(dist=None), "sglang")


def test_namespace():
    spec = {"origin": None, "locations": ["/a/ns", "/b/ns"], "real_locations": ["/a/ns", "/b/ns"], "loader": None}
    r = classify(raw(spec=spec, dist=None, site_dirs=["/a", "/b"]), "ns")
    assert r["install"] == "namespace" and r["search_roots"] == ["/a/ns", "/b/ns"] and r["file"] is None


# --- resolve_package against real interpreters ------------------------------------------------------

def site_packages(venv):
    return next((Path(venv) / "lib").glob("python3*/site-packages")).resolve()


def test_resolve_regular_release(venvs):
    r = resolve_package(str(venvs["0.5.23"] / "bin" / "python"))
    sp = site_packages(venvs["0.5.23"])
    assert (r["install"], r["installed_by"], r["version"]) == ("regular", "pip", "0.5.23")
    assert r["dist_info"] == str(sp / "sglang-0.5.23.dist-info") and r["search_roots"] == [str(sp / "sglang")]
    assert r["probe_errors"] == {} and r["elapsed_s"] > 0


def test_resolve_missing_package(venvs):
    r = resolve_package(str(venvs["empty"] / "bin" / "python"), environment={"PYTHONPATH": "/nonexistent"})
    assert (r["install"], r["installed_by"], r["search_roots"]) == ("missing", None, [])


def test_resolve_pip_target_directory(venvs, tmp_path):
    target = tmp_path / "deps"
    pip_install_localpkg(venvs["empty"], "--target", str(target))
    r = resolve_package(str(venvs["empty"] / "bin" / "python"), environment={"PYTHONPATH": str(target)})
    assert (r["install"], r["installed_by"], r["editable_source"]) == ("path", "pip", None)
    assert r["search_roots"] == [str(target.resolve() / "sglang")]


@pytest.mark.parametrize("python, name, timeout, needle", [
    ("/nonexistent/python3", "sglang", 30, "interpreter /nonexistent/python3 does not exist"),
    ("/tmp", "sglang", 30, "is not an executable file"),
    (sys.executable, "sglang.srt", 30, "not a top-level import name"),
    (sys.executable, "sglang", 0, "timeout must be more than 0 (seconds), not 0"),
    (sys.executable, "sglang", -5, "timeout must be more than 0 (seconds), not -5"),
])
def test_resolve_rejects_bad_arguments(python, name, timeout, needle):
    with pytest.raises(PackageInfoError, match=re.escape(needle)):
        resolve_package(python, name, timeout=timeout)


def test_resolve_not_a_python_keeps_its_stderr(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho 'not python' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(PackageInfoError, match="is it a Python interpreter") as info:
        resolve_package(str(fake))
    assert info.value.stderr == "not python"


@pytest.mark.parametrize("answer, needle", [
    ({"python": "3.7.16", "errors": {}}, "is Python 3.7.16; the interpreter must be Python 3.8 or newer"),
    ({"errors": {"probe": "IndexError: list index out of range"}}, "the probe failed in"),
])
def test_resolve_answers_it_cannot_use(tmp_path, answer, needle):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho '%s%s'\n" % (PROBE_MARKER, json.dumps(answer)))
    fake.chmod(0o755)
    with pytest.raises(PackageInfoError, match=re.escape(needle)):
        resolve_package(str(fake))


def test_probe_source_is_read_from_a_zip_as_ansiballz_ships_it(tmp_path):
    """AnsiballZ imports module_utils from a zip: the probe's text must come from there too."""
    payload = tmp_path / "payload.zip"
    root = Path(collections_root())
    with zipfile.ZipFile(payload, "w") as zf:
        for path in (root / "ansible_collections").rglob("*.py"):
            zf.write(path, path.relative_to(root).as_posix())
        # AnsiballZ adds an __init__.py to every package directory (zipimport has no namespace packages).
        for package in {p.parent for p in (root / "ansible_collections").rglob("*.py")}:
            for level in [package, *package.parents]:
                if level == root:
                    break
                name = (level / "__init__.py").relative_to(root).as_posix()
                if name not in zf.namelist():
                    zf.writestr(name, "")
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ansible_collections.gpufleet.sglang.plugins.module_utils import python_package as pp\n"
            "assert pp.package_probe.__file__.startswith(%r), pp.package_probe.__file__\n"
            "r = pp.resolve_package(sys.executable, 'pytest')\n"
            "print(pp.probe_source() == pp.package_probe.__loader__.get_source(pp.package_probe.__name__),"
            " r['install'])\n") % (str(payload), str(payload))
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.split() == ["True", "regular"], out.stderr


def break_metadata(venv, how):
    meta = site_packages(venv) / "sglang-0.5.6.dist-info" / "METADATA"
    if how == "missing":
        meta.unlink()
    elif how == "latin-1":
        meta.write_bytes(meta.read_bytes().replace(b"Summary:", b"Summary: caf\xe9", 1))
    else:  # drop one field
        meta.write_text("".join(line for line in meta.read_text().splitlines(True)
                                if not line.startswith(how + ":")))
    return meta


@pytest.mark.parametrize("how, problem", [
    ("missing", "is missing"),
    ("Version", "has no Version field"),
    ("Name", "has no Name field"),
    ("latin-1", "is not valid UTF-8"),
])
def test_broken_metadata_is_named_never_a_traceback(venvs, scratch_copy, how, problem):
    venv = scratch_copy(venvs["0.5.6"])
    meta = break_metadata(venv, how)
    with pytest.raises(PackageInfoError) as info:
        resolve_package(str(venv / "bin" / "python"))
    assert "%s %s" % (meta, problem) in str(info.value)
    assert "pip install --force-reinstall sglang==0.5.6" in str(info.value)
    assert info.value.stderr is None


# --- the probe's answer kept in the on-host cache -----------------------------------------------------

@pytest.fixture
def probes(monkeypatch):
    """How many times an interpreter ran the probe."""
    from ansible_collections.gpufleet.sglang.plugins.module_utils import python_package

    calls = []
    real = python_package.run_argv

    def counting(argv, *args, **kwargs):
        calls.append(argv[0])
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(python_package, "run_argv", counting)
    return calls


def without_elapsed(result):
    return dict((k, v) for k, v in result.items() if k != "elapsed_s")


def test_the_probe_s_answer_is_kept_until_what_it_came_from_changes(venvs, tmp_path, probes):
    target = tmp_path / "deps"
    pip_install_localpkg(venvs["empty"], "--target", str(target))
    python, cache = str(venvs["empty"] / "bin" / "python"), str(tmp_path / "cache")
    env = {"PYTHONPATH": str(target)}
    first = resolve_package(python, environment=env, cache_dir=cache)
    again = resolve_package(python, environment=env, cache_dir=cache)
    assert len(probes) == 1 and without_elapsed(again) == without_elapsed(first)
    assert first["install"] == "path" and first["version"]
    # Another environment is another answer; so is another working directory (`python -c` imports from it first).
    resolve_package(python, environment={"PYTHONPATH": str(target), "PYTHONSAFEPATH": "1"}, cache_dir=cache)
    assert len(probes) == 2
    # pip upgrading the package in place: its dist-info goes and another comes, and the answer is read again.
    old = next(target.glob("*.dist-info"))
    new = old.with_name(old.name.replace(first["version"], "9.9.9"))
    old.rename(new)
    metadata = new / "METADATA"
    metadata.write_text(metadata.read_text().replace("Version: %s" % first["version"], "Version: 9.9.9"))
    upgraded = resolve_package(python, environment=env, cache_dir=cache)
    assert len(probes) == 3 and upgraded["version"] == "9.9.9"
    # pip uninstalling it: missing, never the kept answer.
    for path in sorted(target.iterdir()):
        subprocess.run(["rm", "-rf", str(path)], check=True)
    gone = resolve_package(python, environment=env, cache_dir=cache)
    assert len(probes) == 4 and gone["install"] == "missing"


def test_a_file_appearing_on_the_search_path_is_a_change(venvs, tmp_path, probes, monkeypatch):
    python, cache = str(venvs["empty"] / "bin" / "python"), str(tmp_path / "cache")
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    assert resolve_package(python, cache_dir=cache)["install"] == "missing"
    assert resolve_package(python, cache_dir=cache)["install"] == "missing" and len(probes) == 1
    # A checkout in the working directory: `python -c` imports it from there.
    (workdir / "sglang").mkdir()
    (workdir / "sglang" / "__init__.py").write_text("")
    (workdir / "sglang" / "version.py").write_text('__version__ = "0.9.1"\n')
    found = resolve_package(python, cache_dir=cache)
    assert len(probes) == 2 and found["location"] == str(workdir / "sglang")
    # Another working directory holds no checkout: read again.
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    assert resolve_package(python, cache_dir=cache)["install"] == "missing" and len(probes) == 3


def test_check_mode_writes_nothing_and_a_bad_entry_is_a_miss(venvs, tmp_path, probes):
    python, cache = str(venvs["0.5.23"] / "bin" / "python"), tmp_path / "cache"
    resolve_package(python, cache_dir=str(cache), check_mode=True)
    assert not cache.exists()
    first = resolve_package(python, cache_dir=str(cache))
    [entry] = list(cache.iterdir())
    entry.write_text('{"format": 3, "raw": [], "cwd": "/", "paths": [], "fingerprint": []}')
    assert without_elapsed(resolve_package(python, cache_dir=str(cache))) == without_elapsed(first)
    assert len(probes) == 3


def test_an_editable_install_is_watched_where_it_points(venvs, tmp_path):
    from ansible_collections.gpufleet.sglang.plugins.module_utils import python_package

    python = str(venvs["editable"] / "bin" / "python")
    cache = tmp_path / "cache"
    found = resolve_package(python, cache_dir=str(cache))
    [entry] = [json.loads(p.read_text()) for p in cache.iterdir()]
    watched = entry["paths"]
    sp = site_packages(venvs["editable"])
    assert str(sp) in watched and found["dist_info"] + "/RECORD" in watched
    assert set(found["search_roots"]) <= set(watched)
    assert any(p.startswith(str(sp / "__editable__")) for p in watched), watched
    assert python_package._probe_watched(python, entry["raw"]) == watched
