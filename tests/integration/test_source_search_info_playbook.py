"""source_search_info through real ansible-playbook runs on real, unpacked SGLang releases."""

import json
import os
import shutil
from pathlib import Path

import pytest

MODULE = "gpufleet.sglang.source_search_info"
TERMS = ["DFLASH", "dflash", "speculative_dflash", "draft_window_size", "num_draft_tokens", "DDTREE"]


def package_dir(venv):
    return str(next((Path(venv) / "lib").glob("python3*/site-packages")) / "sglang")


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep not installed (scripts/setup.sh installs it)")
def test_ripgrep_and_python_backends_identical_on_a_real_release(playbook, venvs):
    args = {"paths": [package_dir(venvs["0.5.23"])], "terms": TERMS, "definitions": True, "context": 1,
            "max_files": 0, "max_hits_per_file": 0, "max_total_hits": 0}
    py = playbook.module(MODULE, dict(args, backend="python"))
    rg = playbook.module(MODULE, dict(args, backend="auto"))
    assert not py.get("failed") and not rg.get("failed"), (py.get("msg"), rg.get("msg"))
    assert (py["backend"], rg["backend"]) == ("python", "ripgrep")
    assert py["files"] == rg["files"]
    assert py["definitions"] == rg["definitions"]
    assert py["total_hits"] == rg["total_hits"] > 1000
    assert py["missing_terms"] == rg["missing_terms"] == ["DDTREE"]
    assert py["files_scanned"] > 4000 and py["bytes_scanned"] > 50_000_000
    names = {(Path(d["path"]).name, d["kind"], d["name"]) for d in py["definitions"]}
    assert ("dflash_worker_v2.py", "class", "DFlashWorkerV2") in names
    # Relevance: a file that defines DFlash classes comes first.
    assert py["files"][0]["definitions"]


def test_release_without_dflash_says_so(playbook, venvs):
    r = playbook.module(MODULE, {"paths": [package_dir(venvs["0.5.6"])], "terms": ["DFLASH", "DDTREE"],
                                 "definitions": True})
    assert r["missing_terms"] == ["DFLASH", "DDTREE"]
    assert r["files"] == [] and r["total_hits"] == 0 and r["files_scanned"] > 1000


def test_editable_checkout_with_ddtree(playbook, venvs):
    info = playbook.module("gpufleet.sglang.python_package_info", {"python": str(venvs["editable"] / "bin/python")})
    r = playbook.module(MODULE, {"paths": info["search_roots"], "terms": ["DFLASH", "DDTREE"], "definitions": True})
    assert r["missing_terms"] == []
    assert [d["name"] for d in r["definitions"]] == ["DFlashWorker", "is_dflash_family", "DDTreeWorker"]


def assert_clear_failure(r, *needles):
    assert r.get("failed"), r
    assert r["msg"].startswith("host ") and "MODULE FAILURE" not in r["msg"]
    for needle in needles:
        assert needle in r["msg"], r["msg"]


def test_bad_input(playbook, tmp_path):
    assert_clear_failure(playbook.module(MODULE, {"paths": [str(tmp_path / "nope")], "terms": ["x"]}),
                         str(tmp_path / "nope"), "do not exist")
    assert_clear_failure(playbook.module(MODULE, {"paths": [str(tmp_path)], "patterns": ["(oops"]}),
                         "does not compile")
    assert_clear_failure(playbook.module(MODULE, {"paths": [str(tmp_path)]}), "at least one of terms or patterns")
    assert_clear_failure(playbook.module(MODULE, {"paths": [str(tmp_path)], "terms": ["x"], "backend": "ripgrep",
                                                  "rg_path": str(tmp_path / "rg")}), "rg is not installed")
    assert_clear_failure(playbook.module(MODULE, {"paths": [str(tmp_path)], "terms": ["x"], "context": -1}),
                         "context must be 0 or more")


def test_cache_hit_and_invalidation(playbook, tmp_path):
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "a.py").write_text("DFLASH = 1\n")
    args = {"paths": [str(tree)], "terms": ["DFLASH"], "cache": str(tmp_path / "cache")}
    cold = playbook.module(MODULE, args)
    warm = playbook.module(MODULE, args)
    assert (cold["cached"], warm["cached"]) == (False, True)
    assert warm["files"] == cold["files"] and warm["total_hits"] == 1
    (tree / "b.py").write_text("x = 'DFLASH'\n")
    changed = playbook.module(MODULE, args)
    assert changed["cached"] is False and changed["total_hits"] == 2
    fresh = tmp_path / "cache-check"
    checked = playbook.module(MODULE, dict(args, cache=str(fresh)), check=True)
    assert checked["cached"] is False and not fresh.exists()


@pytest.fixture
def python_as_nobody(tmp_path):
    """An interpreter path that runs the module as nobody (Ansible pipelines the module on stdin)."""
    wrapper = tmp_path / "python-as-nobody"
    wrapper.write_text('#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.skipif(shutil.which("rg") is None or os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs ripgrep, root and setpriv (the search runs as nobody)")
def test_backends_report_what_they_could_not_search_alike(playbook, unreadable_tree, python_as_nobody):
    args = {"paths": [str(unreadable_tree)], "terms": ["DFLASH", "DDTREE"], "max_filesize": 5000}
    runs = {backend: playbook.module(MODULE, dict(args, backend=backend), interpreter=python_as_nobody,
                                     extra_env={"ANSIBLE_PIPELINING": "1"})
            for backend in ("python", "ripgrep")}
    for backend, r in runs.items():
        assert not r.get("failed") and r["backend"] == backend, r.get("msg")
    fields = ("unreadable", "unreadable_count", "large_skipped", "loops_skipped", "missing_terms", "files")
    py, rg = ({k: r[k] for k in fields} for r in (runs["python"], runs["ripgrep"]))
    assert py == rg
    pkg = str(unreadable_tree / "pkg")
    assert [(u["path"], u["error"]) for u in py["unreadable"]] == [
        (pkg + "/dangling.py", "dangling symlink"), (pkg + "/locked.py", "Permission denied"),
        (pkg + "/secret", "Permission denied"), (pkg + "/sub/locked2.py", "Permission denied")]
    assert (py["unreadable_count"], py["large_skipped"], py["loops_skipped"], py["missing_terms"]) == (
        4, 1, 2, ["DDTREE"])


def test_cache_entries_of_the_wrong_shape_are_rebuilt(playbook, tmp_path):
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "a.py").write_text("DFLASH = 1\n")
    cache = tmp_path / "cache"
    args = {"paths": [str(tree)], "terms": ["DFLASH"], "cache": str(cache)}
    cold = playbook.module(MODULE, args)
    (cache_file,) = cache.glob("*.json")
    good = json.loads(cache_file.read_text())
    for bad in ([], {"format": good["format"], "total_hits": 999}, dict(good, files="notalist")):
        cache_file.write_text(json.dumps(bad))
        r = playbook.module(MODULE, args)
        assert not r.get("failed"), (bad, r.get("msg"))
        assert r["cached"] is False and r["total_hits"] == 1 and r["files"] == cold["files"]
        # The bad entry was overwritten with a good one.
        assert dict(json.loads(cache_file.read_text()), elapsed_s=None) == dict(good, elapsed_s=None)
    assert playbook.module(MODULE, args)["cached"] is True


def test_limits_must_be_in_range(playbook, tmp_path):
    for option in ("max_total_hits", "max_filesize"):
        r = playbook.module(MODULE, {"paths": [str(tmp_path)], "terms": ["x"], option: -1})
        assert_clear_failure(r, "%s must be 0 or more, not -1" % option)
