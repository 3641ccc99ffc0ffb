# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ripgrep backend: rg finds candidate lines, the LineMatcher judges them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.process import run_argv
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import (
    RegexDialectError,
    SearchError,
    file_hits,
    text_hits,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import (
    Stats,
    sized_files,
    walk_steps,
)


def rg_argv(rg, roots, matcher, file_filter, context, max_filesize):
    # Plain output with NUL after the path is much cheaper for rg to write and for us to read
    # than --json; recursive searches skip binary files (rg's "quit" mode) just the same.
    argv = [rg, "--no-config", "--no-ignore", "--hidden", "--follow", "--line-number", "--with-filename",
            "--no-heading", "--null", "--color", "never", "--stats"]
    argv.append("--case-sensitive" if matcher.case_sensitive else "--ignore-case")
    if max_filesize:
        argv += ["--max-filesize", str(max_filesize)]
    if context:
        argv += ["--context", str(context)]
    for glob in file_filter.include:
        argv += ["--glob", glob]
    for glob in file_filter.exclude:
        argv += ["--glob", "!" + glob]
    if matcher.patterns:
        # Terms as escaped regexes beside the patterns; a pattern ripgrep's dialect rejects
        # makes it exit 2, and the caller falls back to the Python backend.
        for term in matcher.terms:
            argv += ["--regexp", re.escape(term)]
        for pattern in matcher.patterns:
            argv += ["--regexp", pattern]
    else:
        argv.append("--fixed-strings")
        for term in matcher.terms:
            argv += ["--regexp", term]
    argv.append("--")
    argv += [os.path.abspath(r) for r in roots]
    return argv


# rg's plain output split at the "NUL line-number kind" after each path: [before the first path and the
# path, number, kind (":" a match, "-" context), that line's text then the lines up to the next path
# and that path, number, ...]. Lines without one (the "--" between context groups, the --stats summary)
# end up among the text.
_RG_LINE_START = re.compile(rb"\0(\d+)([:-])")
_RG_STAT = re.compile(rb"^[ \t]*(\d+) (files searched|bytes searched)[ \t\r]*$", re.M)
# "PATH: Permission denied (os error 13)"; ripgrep 13 (Debian 12) prints it without the "rg: " prefix
# that later releases add. Other messages (such as "File system loop found: ...") have no os error.
_RG_OS_ERROR = re.compile(r"^(?:rg: )?(?P<path>.+): (?P<error>[^:]+?) \(os error \d+\)$")


def rg_unreadable_files(stderr, roots, stats):
    """Files ripgrep could not read, as (path, error) with Python's wording of the error.

    Only regular files whose directory walk_files entered by that same path are kept: directories,
    dangling links and paths reached through a second symlinked alias come from the walk in both
    backends, so both report the same paths.
    """
    root_files = set(os.path.abspath(r) for r in roots)
    found = []
    for line in stderr.splitlines():
        m = _RG_OS_ERROR.match(line)
        if not m:
            continue
        path = m.group("path")
        if not os.path.isfile(path):
            continue
        if path in root_files or os.path.dirname(path) in stats.dirs_entered:
            found.append((path, m.group("error")))
    return found


class _OutputReader(object):
    """Reads rg's plain output in blocks of lines: judges each file's candidate lines once its lines end.

    rg writes each file's lines together, so judging one file overlaps with rg searching the next.
    A block is split in one call at each line's "NUL number kind": no regex match per line.
    """

    def __init__(self, matcher, context, stats):
        self.matcher = matcher
        self.context = context
        self.stats = stats
        self.results = []
        self.current, self.lines, self.candidates = None, {}, []

    def block(self, data):
        parts = _RG_LINE_START.split(data)
        path = parts[0].rpartition(b"\n")[2]
        for i in range(1, len(parts) - 2, 3):
            text, _nl, after = parts[i + 2].partition(b"\n")
            if path != self.current:
                self.flush()
                self.current, self.lines, self.candidates = path, {}, []
            number = int(parts[i])
            self.lines[number] = text
            if parts[i + 1] == b":":
                self.candidates.append(number)
            path = after.rpartition(b"\n")[2]
        if b" searched" in data:  # the --stats summary, after the last file
            for count, what in _RG_STAT.findall(data):
                if what == b"files searched":
                    self.stats.files_scanned = int(count)
                else:
                    self.stats.bytes_scanned = int(count)

    def _text(self, number):
        raw = self.lines.get(number)
        if raw is None:
            return None
        text = raw.decode("utf-8", "replace")
        return text[:-1] if text.endswith("\r") else text

    def flush(self):
        if self.current is None or not self.candidates:
            return
        if self.context:
            hits = file_hits(self.matcher, self._text, self.candidates, self.context)
        else:
            # Without context every line rg printed is a candidate: decoded at once, not line by line
            # (the same text: a newline never belongs to a UTF-8 sequence).
            text = b"\n".join([self.lines[n] for n in self.candidates]).decode("utf-8", "replace")
            if "\r" in text:
                text = text.replace("\r\n", "\n")
                text = text[:-1] if text.endswith("\r") else text
            hits = text_hits(self.matcher, self.candidates, text)
        if hits:
            self.results.append((os.fsdecode(self.current), hits))


def _walk_beside_rg(roots, file_filter, max_filesize, stats, files_wanted):
    """What rg skips without saying so, counted as the Python backend counts it: steps run while rg runs.

    Loops, unreadable directories and dangling links come from the walk of the directories, which
    also tells rg_unreadable_files which paths to keep; without a size limit that is all. With one,
    the walk counts the files it wants, with no stat: _large_files_after_rg compares that count
    with rg's. rg searches a file named on its command line whatever its size, so with a file among
    the roots the counts cannot tell: then each file is stat'ed here. Appends the count to
    files_wanted, or None where nothing is left to do after rg.
    """
    if max_filesize and any(os.path.isfile(root) for root in roots):
        for _item in sized_files(roots, file_filter, max_filesize, stats):
            yield None
        files_wanted.append(None)
    elif max_filesize:
        yield from walk_steps(roots, file_filter, stats, files_wanted)
    else:
        yield from walk_steps(roots, file_filter, stats)
        files_wanted.append(None)


def _large_files_after_rg(roots, file_filter, max_filesize, files_wanted, stats):
    """large_skipped: the files over max_filesize, which rg skips without a word.

    rg stats every file for --max-filesize anyway; a second stat of each here doubled the cost of
    the walk. When rg searched exactly the files_wanted that the walk counted, it skipped
    none of them, so none is too large. That needs rg to have walked the directories as the walk
    did, each once and by one path: after any loop or second path to a directory (loops_skipped;
    rg walks a second path again), or when the counts differ (a file too large, or one rg could not
    read), the files are walked again and stat'ed, as the Python backend does.
    """
    if stats.files_scanned == files_wanted and not stats.loops_skipped:
        return
    recount = Stats()  # the walk beside rg already counted loops, directories and dangling links
    for _item in sized_files(roots, file_filter, max_filesize, recount):
        pass
    stats.large_skipped = recount.large_skipped
    for path, error in recount.unreadable.items():
        stats.note_unreadable(path, error)


def ripgrep_search(rg, roots, matcher, file_filter, context, max_filesize, stats, timeout=600):
    """ripgrep backend: [(path, hits)] for files with hits.

    While rg runs, _walk_beside_rg walks the tree as the Python backend does, in steps between the
    reads of rg's output: one thread, so neither waits for the other's turn at the interpreter lock
    while rg waits on a full pipe.
    """
    files_wanted = []
    output = _OutputReader(matcher, context, stats)
    run = run_argv(rg_argv(rg, roots, matcher, file_filter, context, max_filesize), timeout,
                   on_stdout_lines=output.block,
                   meanwhile=_walk_beside_rg(roots, file_filter, max_filesize, stats, files_wanted))
    if run.error:
        raise SearchError("cannot run ripgrep: %s" % run.error)
    if run.timed_out:
        raise SearchError("ripgrep did not finish within %ss (killed)" % timeout)
    output.flush()
    err = run.stderr_bytes
    if run.rc == 2 and b"regex parse error" in err:
        raise RegexDialectError(run.stderr.strip()[-300:])
    if run.rc not in (0, 1, 2):
        raise SearchError("ripgrep failed (rc=%s): %s" % (run.rc, run.stderr[-500:]))
    if files_wanted[0] is not None:
        _large_files_after_rg(roots, file_filter, max_filesize, files_wanted[0], stats)
    for path, error in rg_unreadable_files(err.decode("utf-8", "surrogateescape"), roots, stats):
        stats.note_unreadable(path, error)
    return output.results
