"""source_search's line matcher: the identifier, word and substring rules, case, bad input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import (
    LineMatcher,
    SearchError,
    file_hits,
    text_hits,
)


def hits(line, term="DFLASH", match="identifier", case_sensitive=False):
    return [column for column, _label in LineMatcher([term], [], match, case_sensitive).hits(line)]


@pytest.mark.parametrize("line, expected", [
    ("DFLASH", [1]),
    ("algo = 'DFLASH'", [9]),
    ("def is_dflash_family(self):", [8]),
    ("class DFlashWorkerV2(BaseSpecWorker):", [7]),
    ("SPECULATIVE_DFLASH_BLOCK = 16", [13]),
    ("cflags = ['-DFLASHINFER_ENABLE_F16']", []),
    ("DFLASHINFER = 1", []),
    ("from flashinfer import x  # DFLASHY", []),
    ("self.dflash2 = None", []),
    ("dflash_v2", [1]),
    ("use_DFLASH_and_DDTREE", [5]),
])
def test_identifier_rule(line, expected):
    assert hits(line) == expected


def test_term_with_underscore_must_match_whole_parts():
    assert hits("speculative_dflash_block_size", "speculative_dflash") == [1]
    assert hits("nonspeculative_dflash", "speculative_dflash") == []
    assert hits("speculative_dflashy", "speculative_dflash") == []


def test_word_substring_and_case():
    assert hits("is_dflash_family", match="word") == []
    assert hits("x DFLASH y", match="word") == [3]
    assert hits("-DFLASHINFER", match="substring") == [2]
    assert hits("dflash", case_sensitive=True) == []
    assert hits("DFlashWorker DFLASH", case_sensitive=True) == [14]


def test_non_overlapping_and_unicode_lines():
    assert hits("DFLASH_DFLASH", match="substring") == [1, 8]
    # A non-ASCII line takes the regex path; columns are characters, not bytes.
    assert hits("é = 'DFLASH'  # ünïcode") == [6]


def test_bad_input():
    with pytest.raises(SearchError, match="does not compile"):
        LineMatcher([], ["(unclosed"])
    with pytest.raises(SearchError, match="at least one"):
        LineMatcher([], [])
    with pytest.raises(SearchError, match="empty term"):
        LineMatcher([""], [])


LINES = [
    "algo = 'DFLASH'  # DFLASH_DFLASH",
    "",
    "def is_dflash_family(self): return speculative_dflash_block",
    "é = 'DFLASH'  # ünïcode",
    "cflags = ['-DFLASHINFER_ENABLE_F16'] DFlashWorker",
    "nothing here",
    "DFLASH",
]


@pytest.mark.parametrize("match", ["identifier", "word", "substring"])
@pytest.mark.parametrize("case_sensitive", [False, True])
@pytest.mark.parametrize("lines", [LINES, [line for line in LINES if line.isascii()], LINES[:1]])
def test_hits_in_lines_are_the_hits_of_each_line(match, case_sensitive, lines):
    """The one pass over the joined lines (ASCII) and the line-by-line way (else) find what hits() finds."""
    matcher = LineMatcher(["DFLASH", "dflash", "speculative_dflash", "DFLASH_DFLASH"], [], match, case_sensitive)
    expected = {k: matcher.hits(line) for k, line in enumerate(lines) if matcher.hits(line)}
    assert matcher.hits_in_lines(lines) == expected
    numbers = [10 * (k + 1) for k in range(len(lines))]
    by_number = dict(zip(numbers, lines))
    assert text_hits(matcher, numbers, "\n".join(lines)) == file_hits(matcher, by_number.get, numbers, 0)


def test_hits_in_lines_with_patterns_go_line_by_line():
    matcher = LineMatcher(["DFLASH"], [r"is_\w+_family"], "identifier")
    assert matcher.hits_in_lines(LINES) == {k: matcher.hits(line) for k, line in enumerate(LINES)
                                            if matcher.hits(line)}
