"""One source_search search: ranking, definitions, skipped files and the reporting limits."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import LineMatcher
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.search import search
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import FileFilter

OPTIONS = dict(max_files=0, max_hits_per_file=0, max_total_hits=0, max_filesize=1_000_000)


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


def test_limits_are_reported(messy_tree):
    matcher = LineMatcher(["DFLASH"], [], "substring")
    r = search([str(messy_tree)], matcher, FileFilter(["*.py"], []), max_files=2, max_hits_per_file=1,
               max_total_hits=1, max_filesize=0)
    assert r["truncated"] is True
    assert r["truncated_reason"] == ["max_files", "max_hits_per_file", "max_total_hits"]
    assert len(r["files"]) == 2 and sum(len(f["hits"]) for f in r["files"]) == 1
    assert r["total_hits"] > 200000
