"""run_search, the source_search_info module without Ansible: options, the cache, the ripgrep fallback."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import shutil

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import SearchError
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.run import run_search

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep not installed (scripts/setup.sh installs it)")


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
