"""source_search's ripgrep backend: identical hits, skipped and unreadable files as the Python backend."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess

import pytest
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
