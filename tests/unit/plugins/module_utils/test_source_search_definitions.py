"""source_search's definitions: matching classes and functions from ast, only where a hit is on a def line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.definitions import (
    definitions_in,
    may_define,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import LineMatcher


def test_definitions_in_a_file(tmp_path):
    source = tmp_path / "worker.py"
    source.write_text("class DFlashWorker:\n"
                      "    async def run_dflash(self):\n"
                      "        pass\n"
                      "def flashinfer_dflash_x():\n"
                      "    pass\n"
                      "def dflashinfer():\n"
                      "    pass\n")
    found = definitions_in(str(source), LineMatcher(["DFLASH"], []))
    assert [(d["line"], d["kind"], d["name"]) for d in found] == [
        (1, "class", "DFlashWorker"), (2, "function", "run_dflash"), (4, "function", "flashinfer_dflash_x")]


def test_unparsable_or_missing_files_define_nothing(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def DFLASH(:\n")
    matcher = LineMatcher(["DFLASH"], [])
    assert definitions_in(str(broken), matcher) == []
    assert definitions_in(str(tmp_path / "gone.py"), matcher) == []


def test_only_python_files_with_a_hit_on_a_def_line_are_parsed():
    on_def = [{"text": "    async def run_dflash(self):"}]
    assert may_define("a.py", on_def)
    assert not may_define("a.pyi", on_def)
    assert not may_define("a.py", [{"text": "x = run_dflash()"}])
