"""source_search_info's main(): every option with its default reaches run_search, check mode writes no cache, the
result's shape, a SearchError as a failure naming the host; one search for real with the Python engine over a small
tree of the test's own (the identifier rule's classic false hit, -DFLASHINFER_*, included)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import SearchError
from ansible_collections.gpufleet.sglang.plugins.modules import source_search_info

from .module_runner import Calls, always_returned, host_msg, run_module

DEFAULTS = {"terms": [], "patterns": [], "match": "identifier", "case_sensitive": False, "include": ["*.py"],
            "exclude": ["__pycache__", ".git"], "context": 0, "definitions": False, "max_files": 200,
            "max_hits_per_file": 50, "max_total_hits": 2000, "max_filesize": 10485760, "backend": "auto",
            "rg_path": None, "cache": None}


@pytest.fixture
def search(monkeypatch):
    calls = Calls()
    calls.reply = mock.Mock(return_value={"files": [], "total_hits": 0, "missing_terms": ["DDTREE"],
                                          "backend": "python", "cached": False})

    def run_search(params, check_mode):
        calls.append((dict(params), check_mode))
        return dict(calls.reply())

    monkeypatch.setattr(source_search_info, "run_search", run_search)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_every_option_reaches_the_search(search, check_mode):
    done = run_module(source_search_info, {"paths": ["/opt/env/site-packages/sglang"], "terms": ["DDTREE"]},
                      check_mode=check_mode)
    assert not done.failed and done.result == dict(search.reply.return_value, changed=False)
    assert search == [(dict(DEFAULTS, paths=["/opt/env/site-packages/sglang"], terms=["DDTREE"]), check_mode)]


def test_a_search_error_names_the_host(search):
    search.reply.side_effect = SearchError("search path(s) /nope do not exist; pass directories such as the "
                                           "search_roots from gpufleet.sglang.python_package_info")
    done = run_module(source_search_info, {"paths": ["/nope"], "terms": ["DFLASH"]})
    assert done.failed and done.result == {"msg": host_msg(str(search.reply.side_effect))}


@pytest.mark.parametrize("args, message", [
    ({}, "missing required arguments: paths"),
    ({"paths": ["/src"], "match": "fuzzy"}, "value of match must be one of: substring, word, identifier"),
    ({"paths": ["/src"], "backend": "grep"}, "value of backend must be one of: auto, ripgrep, python"),
    ({"paths": ["/src"], "max_files": "all"}, "max_files"),
    ({"paths": ["/src"], "timeout": 10}, "Unsupported parameters"),
])
def test_bad_options(search, args, message):
    done = run_module(source_search_info, args)
    assert done.failed and message in done.msg, done.msg
    assert search == []


@pytest.fixture
def tree(tmp_path):
    src = tmp_path / "src" / "pkg"
    (src / "speculative").mkdir(parents=True)
    (src / "speculative" / "dflash_worker.py").write_text(
        "class DFlashWorker:\n    def is_dflash_family(self):\n        return 'DFLASH'\n")
    (src / "build.py").write_text("FLAGS = ['-DFLASHINFER_ENABLE_F16']\n")
    (src / "notes.txt").write_text("DFLASH in prose\n")
    return tmp_path / "src"


@pytest.mark.parametrize("check_mode", [False, True])
def test_for_real_with_the_python_engine(tree, tmp_path, check_mode):
    cache = tmp_path / "cache"
    args = {"paths": [str(tree)], "terms": ["DFLASH", "DDTREE"], "definitions": True, "backend": "python",
            "cache": str(cache)}
    done = run_module(source_search_info, args, check_mode=check_mode)
    assert not done.failed, done.msg
    r = done.result
    assert set(always_returned(source_search_info)) <= set(r), set(always_returned(source_search_info)) - set(r)
    assert (r["backend"], r["cached"], r["missing_terms"], r["files_with_hits"]) == ("python", False, ["DDTREE"], 1)
    # build.py's -DFLASHINFER_* is no hit; notes.txt is not a *.py file.
    assert [f["path"] for f in r["files"]] == [str(tree / "pkg" / "speculative" / "dflash_worker.py")]
    assert sorted(d["name"] for d in r["definitions"]) == ["DFlashWorker", "is_dflash_family"]
    # Check mode writes no cache; outside it the second run is a hit.
    assert cache.exists() is not check_mode
    if not check_mode:
        again = run_module(source_search_info, args).result
        assert again["cached"] is True and again["files"] == r["files"]
