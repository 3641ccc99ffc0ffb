"""source_search's ripgrep backend: identical hits, skipped and unreadable files as the Python backend."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search import ripgrep_backend
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import LineMatcher
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.ripgrep_backend import (
    rg_unreadable_files,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.search import search
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import FileFilter, Stats, walk_files
from helpers import collections_root

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep not installed (scripts/setup.sh installs it)")

OPTIONS = dict(max_files=0, max_hits_per_file=0, max_total_hits=0, max_filesize=1_000_000)
# The trees of the size tests hold files just over this limit.
SMALL_LIMIT = dict(OPTIONS)
SMALL_LIMIT["max_filesize"] = 1000


def comparable(result):
    return [(f["path"], f["hits"], f["definitions"]) for f in result["files"]], result["missing_terms"]


@needs_rg
@pytest.mark.parametrize("match", ["identifier", "word", "substring"])
@pytest.mark.parametrize("case_sensitive", [False, True])
def test_backends_identical_on_a_messy_tree(messy_tree, match, case_sensitive):
    matcher = LineMatcher(["DFLASH", "dflash", "DDTREE"], [], match, case_sensitive)
    file_filter = FileFilter(["*.py"], ["tests"])
    py = search([str(messy_tree)], matcher, file_filter, context=2, definitions=True, **OPTIONS)
    rg = search([str(messy_tree)], matcher, file_filter, backend="ripgrep", rg=RG, context=2, definitions=True,
                **OPTIONS)
    assert comparable(py) == comparable(rg)
    assert rg["backend"] == "ripgrep" and py["backend"] == "python"


@needs_rg
def test_backends_identical_with_patterns(messy_tree):
    matcher = LineMatcher([], [r"is_\w+_family", r"'[A-Z]+'"], "identifier")
    file_filter = FileFilter(["*.py"], [])
    py = search([str(messy_tree)], matcher, file_filter, **OPTIONS)
    rg = search([str(messy_tree)], matcher, file_filter, backend="ripgrep", rg=RG, **OPTIONS)
    assert comparable(py) == comparable(rg) and py["total_hits"] >= 3


@needs_rg
@pytest.mark.parametrize("max_filesize, large", [(1_000_000, 1), (0, 0)])
def test_backends_count_skipped_files_alike(messy_tree, max_filesize, large):
    """Files over max_filesize, symlink loops and dangling links: counted and listed by both backends.

    Without a size limit the ripgrep backend walks only the directories beside rg.
    """
    matcher = LineMatcher(["DFLASH"], [])
    file_filter = FileFilter(["*.py"], ["tests"])
    options = dict(OPTIONS)
    options["max_filesize"] = max_filesize
    py = search([str(messy_tree)], matcher, file_filter, **options)
    rg = search([str(messy_tree)], matcher, file_filter, backend="ripgrep", rg=RG, **options)
    assert skipped(py) == skipped(rg)
    assert (py["large_skipped"], py["loops_skipped"], py["unreadable_count"]) == (large, 1, 1)


def skipped(result):
    return {k: result[k] for k in ("unreadable", "unreadable_count", "large_skipped", "loops_skipped",
                                   "missing_terms")}


def tree_without_loops(tmp_path, big_files):
    """A package with no second path to any directory, `big_files` of them over 1,000 bytes."""
    root = tmp_path / "src"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("X = 'DFLASH'\n")
    (root / "pkg" / "sub" / "b.py").write_text("def dflash():\n    return 'DFLASH'\n")
    (root / "pkg" / "notes.txt").write_text("DFLASH\n" * 1000)  # big, but not a *.py file
    for n in range(big_files):
        (root / "pkg" / ("big%d.py" % n)).write_text("DFLASH\n" * 200)
    if big_files:
        os.symlink(root / "pkg" / "big0.py", root / "pkg" / "sub" / "link_to_big.py")  # one big file, two paths
    return root


@pytest.fixture
def sized_file_walks(monkeypatch):
    """Counts the walks of the ripgrep backend that stat every file."""
    calls = []
    real = ripgrep_backend.sized_files

    def counted(*args):
        calls.append(args[0])
        return real(*args)

    monkeypatch.setattr(ripgrep_backend, "sized_files", counted)
    return calls


@needs_rg
def test_files_over_max_filesize_are_reported_where_rg_skipped_them(tmp_path, sized_file_walks):
    """rg skips big files without a word; its count of files searched shows it, and they are counted."""
    root = tree_without_loops(tmp_path, big_files=2)
    matcher = LineMatcher(["DFLASH"], [])
    file_filter = FileFilter(["*.py"], [])
    py = search([str(root)], matcher, file_filter, definitions=True, **SMALL_LIMIT)
    rg = search([str(root)], matcher, file_filter, backend="ripgrep", rg=RG, definitions=True, **SMALL_LIMIT)
    assert skipped(rg) == skipped(py)
    assert comparable(rg) == comparable(py)
    # big0.py, big1.py and the link to big0.py; notes.txt is not wanted.
    assert rg["large_skipped"] == 3 and rg["files_scanned"] == 2
    assert [f["path"] for f in rg["files"]] == [str(root / "pkg" / "sub" / "b.py"), str(root / "pkg" / "a.py")]
    assert len(sized_file_walks) == 1


@needs_rg
def test_no_file_is_stat_walked_when_rg_searched_every_file_wanted(tmp_path, sized_file_walks):
    """No file over the limit: rg searched as many files as the walk wants, and no file needs a stat."""
    root = tree_without_loops(tmp_path, big_files=0)
    matcher = LineMatcher(["DFLASH"], [])
    file_filter = FileFilter(["*.py"], [])
    py = search([str(root)], matcher, file_filter, **SMALL_LIMIT)
    rg = search([str(root)], matcher, file_filter, backend="ripgrep", rg=RG, **SMALL_LIMIT)
    assert skipped(rg) == skipped(py) and comparable(rg) == comparable(py)
    assert (rg["large_skipped"], rg["files_scanned"]) == (0, 2)
    assert sized_file_walks == []


@needs_rg
def test_a_directory_searched_twice_by_rg_cannot_hide_a_big_file(tmp_path, sized_file_walks):
    """rg searches a directory again by its second path, one file more that makes up for the big one.

    The counts of files searched and wanted agree, yet a file was skipped: after a second path to a
    directory the files are stat'ed.
    """
    root = tmp_path / "src"
    (root / "z_real").mkdir(parents=True)
    (root / "z_real" / "small.py").write_text("DFLASH\n")
    (root / "big.py").write_text("DFLASH\n" * 200)
    os.symlink(root / "z_real", root / "a_alias")
    matcher = LineMatcher(["DFLASH"], [])
    file_filter = FileFilter(["*.py"], [])
    py = search([str(root)], matcher, file_filter, **SMALL_LIMIT)
    rg = search([str(root)], matcher, file_filter, backend="ripgrep", rg=RG, **SMALL_LIMIT)
    assert rg["files_scanned"] == 2  # a_alias/small.py and z_real/small.py; the walk wants big.py and one small.py
    assert skipped(rg) == skipped(py)
    assert (rg["large_skipped"], rg["loops_skipped"]) == (1, 1)
    assert len(sized_file_walks) == 1


@needs_rg
def test_a_big_file_named_as_a_root_is_counted_alike(tmp_path):
    """rg searches a file named on its command line whatever its size; the count stays the Python backend's."""
    root = tree_without_loops(tmp_path, big_files=1)
    matcher = LineMatcher(["DFLASH"], [])
    file_filter = FileFilter(["*.py"], [])
    roots = [str(root / "pkg" / "big0.py"), str(root / "pkg" / "sub")]
    py = search(roots, matcher, file_filter, **SMALL_LIMIT)
    rg = search(roots, matcher, file_filter, backend="ripgrep", rg=RG, **SMALL_LIMIT)
    assert skipped(rg) == skipped(py)
    assert rg["large_skipped"] == 2  # big0.py, and again by its link in sub/


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
needs_setpriv = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                   reason="needs root and setpriv to search as another user")


def search_as_nobody(root, backend):
    code = (
        "import json, sys; sys.path.insert(0, %r)\n"
        "from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import LineMatcher\n"
        "from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.search import search\n"
        "from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import FileFilter\n"
        "r = search([%r], LineMatcher(['DFLASH', 'DDTREE'], []), FileFilter(['*.py'], []), backend=%r, rg=%r,"
        " max_filesize=5000)\n"
        "print(json.dumps(r))\n"
    ) % (str(collections_root()), str(root), backend, RG)
    out = subprocess.run(NOBODY + ["/usr/bin/python3", "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@needs_rg
@needs_setpriv
def test_backends_list_the_same_unreadable_paths(unreadable_tree):
    py = search_as_nobody(unreadable_tree, "python")
    rg = search_as_nobody(unreadable_tree, "ripgrep")
    assert (py["backend"], rg["backend"]) == ("python", "ripgrep")
    assert skipped(py) == skipped(rg)
    pkg = str(unreadable_tree / "pkg")
    assert py["unreadable"] == [
        {"path": pkg + "/dangling.py", "error": "dangling symlink"},
        {"path": pkg + "/locked.py", "error": "Permission denied"},
        {"path": pkg + "/secret", "error": "Permission denied"},
        {"path": pkg + "/sub/locked2.py", "error": "Permission denied"},
    ]
    assert (py["unreadable_count"], py["large_skipped"], py["loops_skipped"]) == (4, 1, 2)
    assert [f["path"] for f in py["files"]] == [f["path"] for f in rg["files"]] == [pkg + "/a.py"]


def test_ripgrep_error_lines_in_both_forms(unreadable_tree):
    """ripgrep 13 prints `PATH: error (os error N)`, later releases `rg: PATH: ...`; loops are no error."""
    pkg = unreadable_tree / "pkg"
    stats = Stats()
    list(walk_files([str(unreadable_tree)], FileFilter(["*.py"], []), stats))
    stderr = "\n".join([
        "%s/locked.py: Permission denied (os error 13)" % pkg,
        "rg: %s/sub/locked2.py: Permission denied (os error 13)" % pkg,
        "rg: %s/zlink/locked2.py: Permission denied (os error 13)" % pkg,  # the walk reads sub/, not zlink/
        "%s/secret: Permission denied (os error 13)" % pkg,  # a directory: the walk reports those
        "%s/dangling.py: No such file or directory (os error 2)" % pkg,
        "File system loop found: %s/sub/loop points to an ancestor %s" % (pkg, pkg),
    ])
    assert rg_unreadable_files(stderr, [str(unreadable_tree)], stats) == [
        ("%s/locked.py" % pkg, "Permission denied"), ("%s/sub/locked2.py" % pkg, "Permission denied")]
