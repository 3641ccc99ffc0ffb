"""ast_statements: every statement, in ast.walk's order (the release limits keep the first of two alike)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import sys

from ansible_collections.gpufleet.sglang.plugins.module_utils.ast_statements import statements

NESTED = ("if X:\n    def a(): pass\nelse:\n    b: int = 1\n"
          "for i in y:\n    class C: pass\nelse:\n    pass\n"
          "while z:\n    pass\nelse:\n    raise E\n"
          "with a:\n    def d(): pass\n"
          "try:\n    e: int = 2\nexcept E:\n    def f(): pass\nelse:\n    g = 1\nfinally:\n    def h(): pass\n"
          "class Outer:\n    class Inner:\n        def method(self):\n            if q:\n                raise E\n"
          "x = lambda: [v for v in w]\n")
if sys.version_info >= (3, 10):
    NESTED += "match v:\n    case 1:\n        def in_case(): pass\n"


def walked(tree):
    """ast.walk's statements, except handlers and match cases."""
    kinds = (ast.stmt, ast.excepthandler) + ((ast.match_case,) if sys.version_info >= (3, 10) else ())
    return [node for node in ast.walk(tree) if isinstance(node, kinds)]


def test_every_statement_in_ast_walk_s_order():
    tree = ast.parse(NESTED)
    found = list(statements(tree))
    assert found == walked(tree)
    assert sum(isinstance(node, ast.FunctionDef) for node in found) == 5 + (sys.version_info >= (3, 10))


def test_the_releases_parser_sources_alike(release_sources):
    checked = 0
    for package in release_sources.values():
        for path in sorted(package.rglob("*.py")):
            tree = ast.parse(path.read_bytes())
            assert list(statements(tree)) == walked(tree), path
            checked += 1
    assert checked >= 8
