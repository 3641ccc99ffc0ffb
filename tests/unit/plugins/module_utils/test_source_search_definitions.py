"""source_search's definitions: matching classes and functions from ast, only where a hit is on a def line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import sys

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


def test_definitions_nested_in_every_kind_of_statement(tmp_path):
    # Only statements are visited (a definition is a statement): each body a def can sit in is one.
    source = tmp_path / "nested.py"
    text = ("if X:\n    def dflash_if(): pass\nelse:\n    def dflash_else(): pass\n"
            "for i in y:\n    class DFlashFor: pass\nelse:\n    pass\n"
            "while z:\n    pass\nelse:\n    def dflash_while_else(): pass\n"
            "with a:\n    def dflash_with(): pass\n"
            "try:\n    def dflash_try(): pass\nexcept E:\n    def dflash_except(): pass\n"
            "finally:\n    def dflash_finally(): pass\n"
            "class Outer:\n    class DFlashInner:\n        def dflash_method(self):\n"
            "            def dflash_closure(): pass\n"
            "x = lambda: DFLASH\n")
    if sys.version_info >= (3, 10):
        text += "match v:\n    case 1:\n        def dflash_case(): pass\n"
    source.write_text(text)
    names = [d["name"] for d in definitions_in(str(source), LineMatcher(["DFLASH"], []))]
    expected = ["dflash_if", "dflash_else", "DFlashFor", "dflash_while_else", "dflash_with", "dflash_try",
                "dflash_except", "dflash_finally", "DFlashInner", "dflash_method", "dflash_closure"]
    assert names == expected + (["dflash_case"] if sys.version_info >= (3, 10) else [])


def test_the_same_definitions_as_a_walk_of_every_node(release_sources):
    # The releases' real parser sources: what the statement walk finds is what ast.walk over every node finds.
    matcher = LineMatcher(["DFLASH", "speculative", "parser", "args", "server"], [])
    checked = found = 0
    for package in release_sources.values():
        for source in sorted(package.rglob("*.py")):
            path = str(source)
            tree = ast.parse(source.read_bytes())
            every = sorted((n.lineno, n.name) for n in ast.walk(tree)
                           if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                           and matcher.is_definition_name(n.name))
            assert [(d["line"], d["name"]) for d in definitions_in(path, matcher)] == every, path
            checked += 1
            found += len(every)
    assert checked >= 8 and found >= 20, (checked, found)


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
