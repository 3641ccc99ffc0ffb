# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The statements of a parsed Python file, for readers that look only for statements (defs, classes, ifs)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import deque

# The fields that hold statements (or the except handlers and match cases that hold them). Only a statement holds
# a statement, so the expressions, most of a file's nodes, need no visit: ast.walk over a release's
# server_args sources took 14 times as long.
_BODIES = frozenset(("body", "orelse", "finalbody", "handlers", "cases"))


def statements(tree):
    """Every statement under tree, nested ones included, in ast.walk's order (breadth first); except handlers and
    match cases are yielded too, as ast.walk yields them."""
    queue = deque(tree.body)
    while queue:
        node = queue.popleft()
        yield node
        for field in node._fields:
            if field in _BODIES:
                queue.extend(getattr(node, field) or ())
