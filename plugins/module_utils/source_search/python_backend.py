# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure-Python backend: read every candidate file, find candidate lines, let the matcher judge them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import file_hits, split_lines
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import sized_files


def _minimal_literals(literals):
    """Drop literals that contain another one: a file holding the longer holds the shorter."""
    return [lit for lit in literals if not any(o != lit and o in lit for o in literals)]


def _candidate_lines(text, haystack, literals):
    """{1-based line number: line text} for the lines where haystack (text or its lower()) has a literal."""
    offsets = set()
    for lit in literals:
        i = haystack.find(lit)
        while i != -1:
            offsets.add(i)
            i = haystack.find(lit, i + 1)
    found = {}
    line, last = 1, 0
    for off in sorted(offsets):
        line += text.count("\n", last, off)
        last = off
        if line not in found:
            start = text.rfind("\n", 0, off) + 1
            end = text.find("\n", off)
            found[line] = text[start:] if end == -1 else text[start:end]
            if found[line].endswith("\r"):
                found[line] = found[line][:-1]
    return found


class _Lines(object):
    """Line n of a text: the candidate lines are known; the rest is split only for context."""

    def __init__(self, text, known=None):
        self.text = text
        self.known = known or {}
        self.lines = None

    def __call__(self, number):
        if number in self.known:
            return self.known[number]
        if self.lines is None:
            self.lines = split_lines(self.text)
        return self.lines[number - 1] if 0 < number <= len(self.lines) else None


def python_search(roots, matcher, file_filter, context, max_filesize, stats):
    """Pure-Python backend: yield (path, hits) for files with hits."""
    literals = matcher.prefilter_literals()
    if literals is not None:
        literals = _minimal_literals(literals)
        text_literals = [lit.decode("ascii") for lit in literals]
    for path, _size in sized_files(roots, file_filter, max_filesize, stats):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            stats.note_os_error(path, exc)
            continue
        stats.files_scanned += 1
        stats.bytes_scanned += len(data)
        if literals is not None:
            haystack = data if matcher.case_sensitive else data.lower()
            if not any(lit in haystack for lit in literals):
                # No hit possible; binary or not does not matter.
                continue
        if b"\x00" in data:
            stats.binary_skipped += 1
            continue
        text = data.decode("utf-8", "replace")
        if literals is not None:
            known = _candidate_lines(text, text if matcher.case_sensitive else text.lower(), text_literals)
            lines = _Lines(text, known)
            candidates = sorted(known)
        else:
            lines = _Lines(text)
            candidates = range(1, len(split_lines(text)) + 1)
        hits = file_hits(matcher, lines, candidates, context)
        if hits:
            yield path, hits
