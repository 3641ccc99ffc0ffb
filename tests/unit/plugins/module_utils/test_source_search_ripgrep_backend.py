"""The source_search engine: match rules, robustness, and ripgrep/Python giving identical hits."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search import (
    FileFilter,
    LineMatcher,
    SearchError,
    Stats,
    rg_unreadable_files,
    run_search,
    search,
    walk_files,
)
from helpers import collections_root

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep not installed (scripts/setup.sh installs it)")


def hits(line, term="DFLASH", match="identifier", case_sensitive=False):
    return [column for column, _label in LineMatcher([term], [], match, case_sensitive).hits(line)]


@pytest.mark.parametrize("line, expected", [
    ("DFLASH", [1]),
    ("algo = 'DFLASH'", [9]),
    ("def is_dflash_family(self):", [8]),
    ("class DFlashWorkerV2(BaseSpecWorker):", [7]),
    ("SPECULATIVE_DFLASH_BLOCK = 16", [13]),
    ("cflags = ['-DFLASHINFER_ENABLE_F16']", []),
    ("DFLASHINFER = 1", []),
    ("from flashinfer import x  # DFLASHY", []),
    ("self.dflash2 = None", []),
    ("dflash_v2", [1]),
    ("use_DFLASH_and_DDTREE", [5]),
])
def test_identifier_rule(line, expected):
    assert hits(line) == expected


def test_term_with_underscore_must_match_whole_parts():
    assert hits("speculative_dflash_block_size", "speculative_dflash") == [1]
    assert hits("nonspeculative_dflash", "speculative_dflash") == []
    assert hits("speculative_dflashy", "speculative_dflash") == []


def test_word_substring_and_case():
    assert hits("is_dflash_family", match="word") == []
    assert hits("x DFLASH y", match="word") == [3]
    assert hits("-DFLASHINFER", match="substring") == [2]
    assert hits("dflash", case_sensitive=True) == []
    assert hits("DFlashWorker DFLASH", case_sensitive=True) == [14]


def test_non_overlapping_and_unicode_lines():
    assert hits("DFLASH_DFLASH", match="substring") == [1, 8]
    # A non-ASCII line takes the regex path; columns are characters, not bytes.
    assert hits("é = 'DFLASH'  # ünïcode") == [6]


def test_bad_input():
    with pytest.raises(SearchError, match="does not compile"):
        LineMatcher([], ["(unclosed"])
    with pytest.raises(SearchError, match="at least one"):
        LineMatcher([], [])
    with pytest.raises(SearchError, match="empty term"):
        LineMatcher([""], [])


@pytest.fixture
def messy_tree(tmp_path):
    """A tree with every kind of trouble a real host has."""
    root = tmp_path / "src"
    (root / "pkg" / "speculative").mkdir(parents=True)
    (root / "pkg" / "speculative" / "dflash_worker.py").write_text(
        "class DFlashWorker:\n    def is_dflash_family(self):\n        return 'DFLASH'\n")
    (root / "pkg" / "build.py").write_text("FLAGS = ['-DFLASHINFER_ENABLE_F16', '-DFLASHINFER_X']\n")
    (root / "pkg" / "crlf.py").write_bytes(b"a = 1\r\nalgo = 'DFLASH'\r\nb = 2\r\n")
    (root / "pkg" / "latin1.py").write_bytes(b"# caf\xe9\nX = 'DFLASH'  # \xff\xfe\n")
    (root / "pkg" / "blob.py").write_bytes(b"DFLASH\x00\x01\x02 binary")
    (root / "pkg" / "huge.py").write_text("DFLASH\n" * 200000)
    (root / "tests").mkdir()
    (root / "tests" / "test_dflash.py").write_text("DFLASH\n")
    (root / "pkg" / "notes.txt").write_text("DFLASH in prose\n")
    (root / "pkg" / "noterm.py").write_text("x = 1\n" * 10)
    os.symlink(root / "pkg", root / "pkg" / "speculative" / "loop")  # a symlink loop
    os.symlink(root / "pkg" / "crlf.py", root / "pkg" / "zz_link_to_crlf.py")  # one file, two paths
    os.symlink(root / "gone", root / "pkg" / "dangling.py")
    return root


OPTIONS = dict(max_files=0, max_hits_per_file=0, max_total_hits=0, max_filesize=1_000_000)


def comparable(result):
    return [(f["path"], f["hits"], f["definitions"]) for f in result["files"]], result["missing_terms"]


def test_python_engine_on_a_messy_tree(messy_tree):
    r = search([str(messy_tree)], LineMatcher(["DFLASH", "DDTREE"], []), FileFilter(["*.py"], ["tests"]),
               context=1, definitions=True, **OPTIONS)
    paths = [os.path.relpath(f["path"], messy_tree) for f in r["files"]]
    # Definitions rank first; the binary, the too-large, the excluded and the *.txt files are not there;
    # each file is read once although the loop makes it reachable twice.
    assert paths == ["pkg/speculative/dflash_worker.py", "pkg/crlf.py", "pkg/latin1.py"]
    assert [d["name"] for d in r["definitions"]] == ["DFlashWorker", "is_dflash_family"]
    assert r["files"][1]["hits"][0] == {"line": 2, "column": 9, "term": "DFLASH", "text": "algo = 'DFLASH'",
                                        "before": ["a = 1"], "after": ["b = 2"]}
    assert r["files"][2]["hits"][0]["text"].startswith("X = 'DFLASH'  # \ufffd")
    assert r["missing_terms"] == ["DDTREE"]
    assert r["large_skipped"] == 1
    assert r["binary_skipped"] == 1
    assert r["unreadable_count"] == 1 and r["unreadable"][0]["path"].endswith("dangling.py")


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


def test_limits_are_reported(messy_tree):
    matcher = LineMatcher(["DFLASH"], [], "substring")
    r = search([str(messy_tree)], matcher, FileFilter(["*.py"], []), max_files=2, max_hits_per_file=1,
               max_total_hits=1, max_filesize=0)
    assert r["truncated"] is True
    assert r["truncated_reason"] == ["max_files", "max_hits_per_file", "max_total_hits"]
    assert len(r["files"]) == 2 and sum(len(f["hits"]) for f in r["files"]) == 1
    assert r["total_hits"] > 200000


def test_memory_stays_bounded_on_100k_files(tmp_path):
    """Stream the tree: peak memory must not grow with the number of files (measured in a child)."""
    root = tmp_path / "many"
    for d in range(100):
        sub = root / ("d%03d" % d)
        sub.mkdir(parents=True)
        for f in range(1000):
            (sub / ("m%04d.py" % f)).write_bytes(b"x = 1\n" if f % 500 else b"DFLASH = 1\n")
    code = (
        "import resource, sys; sys.path.insert(0, %r)\n"
        "from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search import *\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "r = search([%r], LineMatcher(['DFLASH'], []), FileFilter(['*.py'], []), max_files=0)\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(r['files_scanned'], r['files_with_hits'], peak - base)\n"
    ) % (str(collections_root()), str(root))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    scanned, with_hits, grown_kib = int(out[0]), int(out[1]), int(out[2])
    assert (scanned, with_hits) == (100000, 200)
    # Only directories (100) are remembered. Keeping the 100k paths would cost about 11 MiB here.
    assert grown_kib < 3 * 1024, "memory grew by %d KiB over 100k files" % grown_kib


@needs_rg
def test_backends_count_skipped_files_alike(messy_tree):
    """Files over max_filesize, symlink loops and dangling links: counted and listed by both backends."""
    matcher = LineMatcher(["DFLASH"], [])
    file_filter = FileFilter(["*.py"], ["tests"])
    py = search([str(messy_tree)], matcher, file_filter, **OPTIONS)
    rg = search([str(messy_tree)], matcher, file_filter, backend="ripgrep", rg=RG, **OPTIONS)
    assert skipped(py) == skipped(rg)
    assert (py["large_skipped"], py["loops_skipped"], py["unreadable_count"]) == (1, 1, 1)


def skipped(result):
    return {k: result[k] for k in ("unreadable", "unreadable_count", "large_skipped", "loops_skipped",
                                   "missing_terms")}


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
needs_setpriv = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                   reason="needs root and setpriv to search as another user")


def search_as_nobody(root, backend):
    code = (
        "import json, sys; sys.path.insert(0, %r)\n"
        "from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search import *\n"
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


def search_params(roots, **over):
    base = dict(paths=[str(r) for r in roots], terms=["DFLASH"], patterns=[], match="identifier",
                case_sensitive=False, include=["*.py"], exclude=["__pycache__"], context=0, definitions=False,
                max_files=0, max_hits_per_file=0, max_total_hits=0, max_filesize=0, backend="python", rg_path=None,
                cache=None)
    base.update(over)
    return base


def test_run_search_cache_and_a_bad_entry(tmp_path):
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "a.py").write_text("DFLASH = 1\n")
    cache = tmp_path / "cache"
    p = search_params([tree], cache=str(cache))
    cold = run_search(p, check_mode=False)
    assert (cold["cached"], cold["total_hits"], cold["loops_skipped"]) == (False, 1, 0)
    assert run_search(p, check_mode=False)["cached"] is True
    (entry_file,) = cache.glob("*.json")
    entry = json.loads(entry_file.read_text())
    entry_file.write_text(json.dumps(dict(entry, total_hits="999")))
    assert run_search(p, check_mode=False)["cached"] is False
    assert json.loads(entry_file.read_text())["total_hits"] == 1
    (tree / "b.py").write_text("DFLASH = 2\n")
    assert run_search(dict(p, cache=str(tmp_path / "fresh")), check_mode=True)["total_hits"] == 2
    assert not (tmp_path / "fresh").exists()


@needs_rg
def test_run_search_falls_back_when_ripgrep_rejects_a_pattern(tmp_path):
    (tmp_path / "a.py").write_text("DFLASH = 1\n")
    p = search_params([tmp_path], terms=[], patterns=[r"DFLASH(?= = 1)"], backend="auto", rg_path=RG)
    r = run_search(p, check_mode=False)
    assert r["backend"] == "python" and "ripgrep rejected a pattern" in r["backend_note"] and r["total_hits"] == 1
    with pytest.raises(SearchError, match="regex parse error"):
        run_search(dict(p, backend="ripgrep"), check_mode=False)


@pytest.mark.parametrize("over, needle", [
    (dict(paths=["/nonexistent"]), "search path(s) /nonexistent do not exist"),
    (dict(paths=[]), "search path(s) (none) do not exist"),
    (dict(context=-1), "context must be 0 or more, not -1"),
    (dict(max_filesize=-1), "max_filesize must be 0 or more, not -1"),
    (dict(terms=[]), "give at least one of terms or patterns"),
    (dict(backend="ripgrep", rg_path="/nonexistent/rg"), "backend=ripgrep but rg is not installed"),
])
def test_run_search_bad_params(tmp_path, over, needle):
    with pytest.raises(SearchError) as info:
        run_search(search_params([tmp_path], **over), check_mode=False)
    assert needle in str(info.value)
