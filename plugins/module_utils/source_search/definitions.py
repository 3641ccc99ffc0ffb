# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Classes and functions whose names match the terms, read with ``ast`` (the file is never imported)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.ast_statements import statements

_DEFINITION_LINE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s")


def may_define(path, hits):
    """Whether a file is worth parsing: a Python file where a hit sits on a `def`/`class` line."""
    return path.endswith(".py") and any(_DEFINITION_LINE.match(hit["text"]) for hit in hits)


def definitions_in(path, matcher):
    """Classes and functions defined in a Python file whose names match the terms."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in statements(tree):
        defines = isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        if defines and matcher.is_definition_name(node.name):
            out.append({"path": path, "line": node.lineno,
                        "kind": "class" if isinstance(node, ast.ClassDef) else "function", "name": node.name})
    return sorted(out, key=lambda d: d["line"])
