# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The line matcher both backends share, and the hits of one file it makes.

Both backends only *find candidate lines*; every hit is then judged by the same ``LineMatcher``,
which is what makes their results identical.

Match rules (``match``):
- ``substring``: the term anywhere.
- ``word``: not preceded or followed by a letter, digit or underscore (regex ``\\b`` semantics).
- ``identifier``: the term is a whole identifier or a whole *part* of one. Parts of an identifier
  are separated by ``_`` and by a lower-case letter or digit followed by an upper-case letter
  (camelCase). So ``DFLASH`` matches ``DFLASH``, ``is_dflash_family``, ``DFlashWorker`` and
  ``SPECULATIVE_DFLASH_BLOCK``, but not ``DFLASHINFER`` or ``-DFLASHINFER_ENABLE_F16``.
  A term that itself contains ``_`` (``speculative_dflash``) must match whole parts at both ends.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import bisect
import itertools
import operator
import re

LINE_TEXT_LIMIT = 400


class SearchError(Exception):
    """Bad search input (such as a regex that does not compile)."""


class RegexDialectError(SearchError):
    """ripgrep cannot compile a pattern that Python can: use the Python backend."""


def _is_ident_char(ch):
    return ch.isalnum() or ch == "_"


class LineMatcher(object):
    """Judges one line: which terms/patterns hit it, where (1-based character columns)."""

    def __init__(self, terms, patterns, match="identifier", case_sensitive=False):
        if match not in ("substring", "word", "identifier"):
            raise SearchError("match must be substring, word or identifier, not %r" % match)
        self.match = match
        flags = 0 if case_sensitive else re.IGNORECASE
        self.case_sensitive = case_sensitive
        self.items = []  # (label, compiled regex, apply boundary rule)
        # ASCII terms on ASCII lines are found with str.find (same non-overlapping leftmost
        # matches as the regex, several times faster); anything else goes through the regex.
        self.fast_terms = []
        for term in terms or []:
            if not term:
                raise SearchError("empty term")
            self.items.append((term, re.compile(re.escape(term), flags), True))
            self.fast_terms.append((term, term if case_sensitive else term.lower(), term.isascii()))
        self.all_fast = all(fast for _t, _n, fast in self.fast_terms)
        for pattern in patterns or []:
            try:
                self.items.append((pattern, re.compile(pattern, flags), False))
            except re.error as exc:
                raise SearchError("pattern %r does not compile: %s" % (pattern, exc)) from None
        if not self.items:
            raise SearchError("give at least one of terms or patterns")
        self.terms = list(terms or [])
        self.patterns = list(patterns or [])
        self.pattern_items = self.items[len(self.fast_terms):]  # what str.find cannot judge

    def _bounded(self, line, start, end):
        if self.match == "substring":
            return True
        before = line[start - 1] if start > 0 else ""
        after = line[end] if end < len(line) else ""
        first, last = line[start], line[end - 1]
        if self.match == "word":
            return not (before and _is_ident_char(before)) and not (after and _is_ident_char(after))
        # identifier: each side is a non-identifier char, "_", or a camelCase part boundary.
        left_ok = (not before or not _is_ident_char(before) or before == "_" or first == "_"
                   or ((before.islower() or before.isdigit()) and first.isupper()))
        right_ok = (not after or not _is_ident_char(after) or after == "_" or last == "_"
                    or ((last.islower() or last.isdigit()) and after.isupper()))
        return left_ok and right_ok

    def hits(self, line):
        """[(column, label)] for one line (no line terminator), in column order."""
        found = []
        items = self.items
        if self.all_fast and line.isascii():
            haystack = line if self.case_sensitive else line.lower()
            bounded = self.match != "substring"
            for label, needle, _fast in self.fast_terms:
                i = haystack.find(needle)
                while i != -1:
                    end = i + len(needle)
                    if not bounded or self._bounded(line, i, end):
                        found.append((i + 1, label))
                    i = haystack.find(needle, end)
            items = self.pattern_items
        for label, regex, bounded in items:
            for m in regex.finditer(line):
                if m.end() == m.start():
                    continue
                if bounded and not self._bounded(line, m.start(), m.end()):
                    continue
                found.append((m.start() + 1, label))
        if len(found) > 1:
            found.sort()
        return found

    def hits_in_lines(self, lines, text=None):
        """{k: self.hits(lines[k])} for the lines with hits, with one pass of str.find per term.

        The lines joined by newlines (text, where the caller has it) hold each term at the same
        places, none across two lines (a term holds no newline), so each hit falls in one line at the
        same column: one Python step per hit instead of one per term and line. Anything else
        (patterns, non-ASCII text) goes line by line.
        """
        if text is None:
            text = "\n".join(lines)
        if not self.all_fast or self.pattern_items or "\n" in "".join(self.terms) or not text.isascii():
            return dict((k, found) for k, found in enumerate(map(self.hits, lines)) if found)
        haystack = text if self.case_sensitive else text.lower()
        # ends[k]: the offset just past line k and its newline.
        ends = list(map(operator.add, itertools.accumulate(map(len, lines)), range(1, len(lines) + 1)))
        found = {}
        bounded = self.match != "substring"
        for label, needle, _fast in self.fast_terms:
            i = haystack.find(needle)
            while i != -1:
                k = bisect.bisect_right(ends, i)
                column = i - ends[k] + len(lines[k]) + 1
                if not bounded or self._bounded(lines[k], column, column + len(needle)):
                    found.setdefault(k, []).append((column + 1, label))
                i = haystack.find(needle, i + len(needle))
        for line_hits in found.values():
            line_hits.sort()
        return found

    def is_definition_name(self, name):
        return bool(self.hits(name))

    def prefilter_literals(self):
        """Lower-cased ASCII literals that every hit must contain, or None (patterns, non-ASCII)."""
        if self.patterns:
            return None
        lits = []
        for term in self.terms:
            try:
                term.encode("ascii")
            except UnicodeEncodeError:
                return None
            lits.append(term.encode("ascii") if self.case_sensitive else term.lower().encode("ascii"))
        return lits


def split_lines(text):
    """Lines as ripgrep sees them: split on \\n, a trailing \\r dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _clip(text):
    return text if len(text) <= LINE_TEXT_LIMIT else text[:LINE_TEXT_LIMIT] + "..."


def file_hits(matcher, lines_by_number, candidate_numbers, context):
    """Judge candidate lines; attach context from lines_by_number (a dict or list-like getter)."""
    numbered = [(number, line) for number, line in ((n, lines_by_number(n)) for n in candidate_numbers)
                if line is not None]
    found = matcher.hits_in_lines([line for _n, line in numbered])
    hits = []
    for k in sorted(found):
        number, line = numbered[k]
        text = _clip(line)
        for column, label in found[k]:
            hit = {"line": number, "column": column, "term": label, "text": text}
            if context:
                hit["before"] = [_clip(t) for t in (lines_by_number(n) for n in range(max(1, number - context), number))
                                 if t is not None]
                hit["after"] = [_clip(t) for t in (lines_by_number(n) for n in range(number + 1, number + context + 1))
                                if t is not None]
            hits.append(hit)
    return hits


def text_hits(matcher, numbers, text):
    """file_hits without context, for lines given as one text: its line k is line numbers[k]."""
    lines = text.split("\n")
    found = matcher.hits_in_lines(lines, text)
    hits = []
    for k in sorted(found):
        number, clipped = numbers[k], _clip(lines[k])
        for column, label in found[k]:
            hits.append({"line": number, "column": column, "term": label, "text": clipped})
    return hits
