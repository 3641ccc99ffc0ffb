# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ripgrep backend: rg finds candidate lines, the LineMatcher judges them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import threading

from ansible_collections.gpufleet.sglang.plugins.module_utils.process import run_argv
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import (
    RegexDialectError,
    SearchError,
    file_hits,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import (
    Stats,
    sized_files,
    walk_dirs,
    walk_files,
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


_RG_LINE = re.compile(rb"(\d+)([:-])")
_RG_STAT = re.compile(rb"^(\d+) (files searched|bytes searched)$")
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
    """Reads rg's plain output line by line: judges each file's candidate lines once its lines end.

    rg writes each file's lines together, so judging one file overlaps with rg searching the next.
    """

    def __init__(self, matcher, context, stats):
        self.matcher = matcher
        self.context = context
        self.stats = stats
        self.results = []
        self.current, self.lines, self.candidates = None, {}, []

    def line(self, raw):
        path, nul, rest = raw.partition(b"\0")
        if not nul:
            stat_line = _RG_STAT.match(raw.strip())
            if stat_line and stat_line.group(2) == b"files searched":
                self.stats.files_scanned = int(stat_line.group(1))
            elif stat_line:
                self.stats.bytes_scanned = int(stat_line.group(1))
            return
        m = _RG_LINE.match(rest)
        if not m:
            return
        if path != self.current:
            self.flush()
            self.current, self.lines, self.candidates = path, {}, []
        text = rest[m.end():].decode("utf-8", "replace")
        if text.endswith("\r"):
            text = text[:-1]
        number = int(m.group(1))
        self.lines[number] = text
        if m.group(2) == b":":
            self.candidates.append(number)

    def flush(self):
        if self.current is not None and self.candidates:
            hits = file_hits(self.matcher, self.lines.get, self.candidates, self.context)
            if hits:
                self.results.append((os.fsdecode(self.current), hits))


def _walk_beside_rg(roots, file_filter, max_filesize, stats):
    """What rg skips without saying so, counted as the Python backend counts it, while rg runs.

    Loops, unreadable directories and dangling links come from the walk of the directories, which
    also tells rg_unreadable_files which paths to keep; without a size limit that is all. With one,
    the walk counts the files it wants, with no stat: _large_files_after_rg compares that count
    with rg's. rg searches a file named on its command line whatever its size, so with a file among
    the roots the counts cannot tell: then each file is stat'ed here. Returns the count, or None
    where nothing is left to do after rg.
    """
    if not max_filesize:
        walk_dirs(roots, file_filter, stats)
        return None
    if any(os.path.isfile(root) for root in roots):
        for _item in sized_files(roots, file_filter, max_filesize, stats):
            pass
        return None
    return sum(1 for _item in walk_files(roots, file_filter, stats))


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

    Beside rg, in a thread, _walk_beside_rg walks the tree as the Python backend does.
    """
    walk_errors = []
    files_wanted = []

    def walk():
        try:
            files_wanted.append(_walk_beside_rg(roots, file_filter, max_filesize, stats))
        except Exception as exc:  # re-raised below, in the caller's thread
            walk_errors.append(exc)

    walker = threading.Thread(target=walk)
    walker.start()
    output = _OutputReader(matcher, context, stats)
    try:
        run = run_argv(rg_argv(rg, roots, matcher, file_filter, context, max_filesize), timeout,
                       on_stdout_line=output.line)
    finally:
        walker.join()
    if walk_errors:
        raise walk_errors[0]
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
