# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Search source trees for terms, with ripgrep when the host has it and pure Python otherwise.

Both backends only *find candidate lines*; every hit is then judged by the same ``LineMatcher``,
which is what makes their results identical. Files are streamed one at a time (os.scandir),
so memory is bounded by the results, not by the tree.

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

import ast
import fnmatch
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import threading
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import (
    cache_read,
    cache_write,
    is_type,
    matches_shape,
)

_DEFINITION_LINE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s")
LINE_TEXT_LIMIT = 400
UNREADABLE_LISTED = 50


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
            for label, needle, _fast in self.fast_terms:
                i = haystack.find(needle)
                while i != -1:
                    end = i + len(needle)
                    if self.match == "substring" or self._bounded(line, i, end):
                        found.append((i + 1, label))
                    i = haystack.find(needle, end)
            items = items[len(self.fast_terms):]
        for label, regex, bounded in items:
            for m in regex.finditer(line):
                if m.end() == m.start():
                    continue
                if bounded and not self._bounded(line, m.start(), m.end()):
                    continue
                found.append((m.start() + 1, label))
        found.sort()
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


class FileFilter(object):
    """include/exclude globs: a glob with '/' matches the path relative to the root, else the name."""

    def __init__(self, include, exclude):
        self.include = list(include or [])
        self.exclude = list(exclude or [])
        # Each list as two regexes (name globs, path globs): two matches per entry instead of a
        # fnmatch call per glob, in the walk's innermost loop.
        self._include = self._compile(self.include)
        self._exclude = self._compile(self.exclude)

    @staticmethod
    def _compile(globs):
        def one(chosen):
            return re.compile("|".join(fnmatch.translate(g) for g in chosen)) if chosen else None
        return one([g for g in globs if "/" not in g]), one([g for g in globs if "/" in g])

    @staticmethod
    def _match(compiled, rel, name):
        by_name, by_rel = compiled
        return bool(by_name and by_name.match(name)) or bool(by_rel and by_rel.match(rel))

    def wants_dir(self, rel, name):
        return not self._match(self._exclude, rel, name)

    def wants_file(self, rel, name):
        if self._match(self._exclude, rel, name):
            return False
        return not self.include or self._match(self._include, rel, name)


class Stats(object):
    """Counters of one search. Unreadable paths are kept by path (both backends may see one twice)."""

    def __init__(self):
        self.files_scanned = 0
        self.bytes_scanned = 0
        self.binary_skipped = 0
        self.large_skipped = 0
        self.loops_skipped = 0
        self.unreadable = {}  # path -> error text; only unreadable paths, so it stays small
        self.dirs_entered = set()  # directory paths walk_files read, as it reached them

    def note_unreadable(self, path, error):
        self.unreadable.setdefault(path, error)


def walk_files(roots, file_filter, stats):
    """Yield (path, relpath) of candidate files under roots, following symlinks.

    Each directory is entered once (told apart by device and inode: one stat, where realpath would
    lstat every component), so symlink loops and overlapping roots are walked once (the others
    count as loops_skipped). Only directories are remembered, never every file, so memory does not
    grow with the tree; a file reached through a symlinked *file* as well is collapsed in `search`.
    """
    seen_dirs = set()
    seen_files = set()  # root arguments that are files

    def note_unreadable(path, exc):
        stats.note_unreadable(path, exc.strerror or str(exc))

    for root in roots:
        root = os.path.abspath(root)
        if os.path.isfile(root):
            real = os.path.realpath(root)
            if real not in seen_files:
                seen_files.add(real)
                yield root, os.path.basename(root)
            continue
        stack = [(root, "")]
        while stack:
            directory, rel_dir = stack.pop()
            try:
                st = os.stat(directory)
            except OSError as exc:
                note_unreadable(directory, exc)
                continue
            if (st.st_dev, st.st_ino) in seen_dirs:
                stats.loops_skipped += 1
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
            stats.dirs_entered.add(directory)
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError as exc:
                note_unreadable(directory, exc)
                continue
            subdirs = []
            for entry in entries:
                rel = rel_dir + "/" + entry.name if rel_dir else entry.name
                try:
                    is_dir = entry.is_dir()  # follows symlinks
                    is_file = not is_dir and entry.is_file()
                except OSError as exc:
                    note_unreadable(entry.path, exc)
                    continue
                if is_dir:
                    if file_filter.wants_dir(rel, entry.name):
                        subdirs.append((entry.path, rel))
                elif is_file:
                    if not file_filter.wants_file(rel, entry.name):
                        continue
                    yield entry.path, rel
                elif entry.is_symlink() and not os.path.exists(entry.path):
                    note_unreadable(entry.path, OSError(2, "dangling symlink"))
            stack.extend(reversed(subdirs))


def sized_files(roots, file_filter, max_filesize, stats):
    """Yield (path, size) of the regular files to read; count the ones over max_filesize.

    Both backends run this walk, so they count large files, loops and unreadable directories alike.
    """
    for path, _rel in walk_files(roots, file_filter, stats):
        try:
            st = os.stat(path)
        except OSError as exc:
            stats.note_unreadable(path, exc.strerror or str(exc))
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if max_filesize and st.st_size > max_filesize:
            stats.large_skipped += 1
            continue
        yield path, st.st_size


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
    hits = []
    for number in candidate_numbers:
        line = lines_by_number(number)
        if line is None:
            continue
        for column, label in matcher.hits(line):
            hit = {"line": number, "column": column, "term": label, "text": _clip(line)}
            if context:
                hit["before"] = [_clip(t) for t in (lines_by_number(n) for n in range(max(1, number - context), number))
                                 if t is not None]
                hit["after"] = [_clip(t) for t in (lines_by_number(n) for n in range(number + 1, number + context + 1))
                                if t is not None]
            hits.append(hit)
    return hits


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
            stats.note_unreadable(path, exc.strerror or str(exc))
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


def ripgrep_search(rg, roots, matcher, file_filter, context, max_filesize, stats, timeout=600):
    """ripgrep backend: rg finds candidate lines, the LineMatcher judges them.

    rg's output is read while it runs (it writes each file's lines together), so judging
    one file overlaps with rg searching the next. Beside it, the stat-only walk of the Python
    backend counts what rg skips without saying so (large files, loops) and unreadable directories.
    """
    argv = rg_argv(rg, roots, matcher, file_filter, context, max_filesize)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1 << 16)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    # Drain stderr beside stdout: thousands of "Permission denied" lines must not block rg.
    err_chunks = []
    err_reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()))
    err_reader.start()
    walk_errors = []

    def walk():
        try:
            for _item in sized_files(roots, file_filter, max_filesize, stats):
                pass
        except Exception as exc:  # re-raised below, in the caller's thread
            walk_errors.append(exc)

    walker = threading.Thread(target=walk)
    walker.start()
    results = []
    current, lines, candidates = None, {}, []

    def flush():
        if current is not None and candidates:
            hits = file_hits(matcher, lines.get, candidates, context)
            if hits:
                results.append((os.fsdecode(current), hits))

    try:
        for raw in proc.stdout:
            path, nul, rest = raw.partition(b"\0")
            if not nul:
                stat_line = _RG_STAT.match(raw.strip())
                if stat_line and stat_line.group(2) == b"files searched":
                    stats.files_scanned = int(stat_line.group(1))
                elif stat_line:
                    stats.bytes_scanned = int(stat_line.group(1))
                continue
            m = _RG_LINE.match(rest)
            if not m:
                continue
            if path != current:
                flush()
                current, lines, candidates = path, {}, []
            text = rest[m.end():].decode("utf-8", "replace").rstrip("\n")
            if text.endswith("\r"):
                text = text[:-1]
            number = int(m.group(1))
            lines[number] = text
            if m.group(2) == b":":
                candidates.append(number)
        flush()
        proc.wait()
        err_reader.join()
        err = b"".join(err_chunks)
    finally:
        timer.cancel()
        walker.join()
    if walk_errors:
        raise walk_errors[0]
    if proc.returncode < 0:
        raise SearchError("ripgrep did not finish within %ss (killed)" % timeout)
    if proc.returncode == 2 and b"regex parse error" in err:
        raise RegexDialectError(err.decode("utf-8", "replace").strip()[-300:])
    if proc.returncode not in (0, 1, 2):
        raise SearchError("ripgrep failed (rc=%s): %s" % (proc.returncode, err.decode("utf-8", "replace")[-500:]))
    for path, error in rg_unreadable_files(err.decode("utf-8", "surrogateescape"), roots, stats):
        stats.note_unreadable(path, error)
    return results


def tree_fingerprint(roots, file_filter):
    """Hash of (path, size, mtime) of every candidate file: what invalidates a cached search.

    A walk with stat calls only (tens of milliseconds for a 4,700-file package, against reading
    its 68 MB).
    """
    digest = hashlib.sha256()
    stats = Stats()
    for path, _rel in walk_files(roots, file_filter, stats):
        try:
            st = os.stat(path)
        except OSError:
            continue
        digest.update(("%s\0%d\0%d\n" % (path, st.st_size, st.st_mtime_ns)).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def definitions_in(path, matcher):
    """Classes and functions defined in a Python file whose names match the terms."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        defines = isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        if defines and matcher.is_definition_name(node.name):
            out.append({"path": path, "line": node.lineno,
                        "kind": "class" if isinstance(node, ast.ClassDef) else "function", "name": node.name})
    return sorted(out, key=lambda d: d["line"])


def _one_per_real_file(found):
    """Report a file reached by several paths (symlinks) once, under its smallest path.

    ripgrep --follow reports every path; this makes both backends report the same. Files are
    told apart by (device, inode): one stat each, only for files with hits.
    """
    best = {}
    for path, hits in found:
        try:
            st = os.stat(path)
            identity = (st.st_dev, st.st_ino)
        except OSError:
            identity = path
        if identity not in best or path < best[identity][0]:
            best[identity] = (path, hits)
    return sorted(best.values())


def search(roots, matcher, file_filter, backend="python", rg=None, context=0, definitions=False,
           max_files=0, max_hits_per_file=0, max_total_hits=0, max_filesize=0):
    """Run the search and shape the result (identical for both backends)."""
    started = time.monotonic()
    stats = Stats()
    if backend == "ripgrep":
        found = ripgrep_search(rg, roots, matcher, file_filter, context, max_filesize, stats)
    else:
        found = list(python_search(roots, matcher, file_filter, context, max_filesize, stats))
    term_counts = dict((label, 0) for label, _regex, _b in matcher.items)
    files = []
    for path, hits in _one_per_real_file(found):
        for hit in hits:
            term_counts[hit["term"]] += 1
        entry = {"path": path, "hit_count": len(hits), "hits": hits, "definitions": []}
        # Parse only files where a hit sits on a `def`/`class` line: a matching name is defined there.
        if definitions and path.endswith(".py") and any(_DEFINITION_LINE.match(h["text"]) for h in hits):
            entry["definitions"] = definitions_in(path, matcher)
        files.append(entry)
    # Relevance: files that define a matching class/function first, then by hit count.
    files.sort(key=lambda f: (-len(f["definitions"]), -f["hit_count"], f["path"]))
    truncated = []
    total = sum(f["hit_count"] for f in files)
    if max_files and len(files) > max_files:
        files = files[:max_files]
        truncated.append("max_files")
    budget = max_total_hits or None
    for f in files:
        if max_hits_per_file and len(f["hits"]) > max_hits_per_file:
            f["hits"] = f["hits"][:max_hits_per_file]
            if "max_hits_per_file" not in truncated:
                truncated.append("max_hits_per_file")
        if budget is not None:
            if len(f["hits"]) > budget:
                f["hits"] = f["hits"][:budget]
                if "max_total_hits" not in truncated:
                    truncated.append("max_total_hits")
            budget -= len(f["hits"])
    return {
        "files": files,
        "definitions": sorted((d for f in files for d in f["definitions"]), key=lambda d: (d["path"], d["line"])),
        "total_hits": total,
        "term_hits": term_counts,
        "missing_terms": [label for label, count in term_counts.items() if count == 0],
        "files_with_hits": len(found),
        "files_scanned": stats.files_scanned,
        "bytes_scanned": stats.bytes_scanned,
        "binary_skipped": stats.binary_skipped,
        "large_skipped": stats.large_skipped,
        "loops_skipped": stats.loops_skipped,
        "unreadable": [{"path": path, "error": stats.unreadable[path]}
                       for path in sorted(stats.unreadable)[:UNREADABLE_LISTED]],
        "unreadable_count": len(stats.unreadable),
        "truncated": bool(truncated),
        "truncated_reason": truncated,
        "backend": backend,
        "elapsed_s": round(time.monotonic() - started, 4),
    }


# What a cached result must hold to be served: every field, with its type.
_CACHED_FIELDS = {
    "files": list, "definitions": list, "total_hits": int, "term_hits": dict, "missing_terms": list,
    "files_with_hits": int, "files_scanned": int, "bytes_scanned": int, "binary_skipped": int,
    "large_skipped": int, "loops_skipped": int, "unreadable": list, "unreadable_count": int,
    "truncated": bool, "truncated_reason": list, "backend": str,
}
_CACHED_FILE_FIELDS = {"path": str, "hit_count": int, "hits": list, "definitions": list}
_LIMITS = ("context", "max_files", "max_hits_per_file", "max_total_hits", "max_filesize")


def valid_cached_result(entry):
    """True when a cache entry has the shape of a search result of this format."""
    return (matches_shape(entry, _CACHED_FIELDS)
            and all(isinstance(f, dict) and all(k in f and is_type(f[k], t) for k, t in _CACHED_FILE_FIELDS.items())
                    for f in entry["files"])
            and all(isinstance(d, dict) for d in entry["definitions"])
            and all(isinstance(t, str) for t in entry["missing_terms"]))


def cache_key(options, fingerprint):
    payload = json.dumps({"module": "source_search", "options": options, "tree": fingerprint}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def run_search(params, check_mode):
    """The source_search module without Ansible: check params, serve or fill the cache, search.

    params holds every option of the module (as AnsibleModule.params does). Raises SearchError
    with a message that names the problem (no host name).
    """
    p = params
    missing = [path for path in p["paths"] if not os.path.exists(path)]
    if missing or not p["paths"]:
        raise SearchError("search path(s) %s do not exist; pass directories such as the search_roots from "
                          "gpufleet.sglang.python_package_info" % (", ".join(missing) or "(none)"))
    for name in _LIMITS:
        if not is_type(p[name], int) or p[name] < 0:
            raise SearchError("%s must be 0 or more, not %s" % (name, p[name]))
    matcher = LineMatcher(p["terms"], p["patterns"], p["match"], p["case_sensitive"])
    rg = p["rg_path"] or shutil.which("rg")
    if p["backend"] == "ripgrep" and not (rg and os.access(rg, os.X_OK)):
        raise SearchError("backend=ripgrep but rg is not installed (install ripgrep, set rg_path, or use backend=auto)")
    backend = "ripgrep" if p["backend"] == "ripgrep" or (p["backend"] == "auto" and rg) else "python"
    options = dict(context=p["context"], definitions=p["definitions"], max_files=p["max_files"],
                   max_hits_per_file=p["max_hits_per_file"], max_total_hits=p["max_total_hits"],
                   max_filesize=p["max_filesize"])
    file_filter = FileFilter(p["include"], p["exclude"])

    key = None
    if p["cache"]:
        started = time.monotonic()
        options_key = dict((k, v) for k, v in p.items() if k not in ("cache", "backend", "rg_path"))
        key = cache_key(options_key, tree_fingerprint(p["paths"], file_filter))
        hit = cache_read(p["cache"], key, valid_cached_result)[0]
        if hit:
            hit.pop("format", None)
            hit.update(cached=True, elapsed_s=round(time.monotonic() - started, 4))
            return hit
    note = None
    try:
        result = search(p["paths"], matcher, file_filter, backend=backend, rg=rg, **options)
    except RegexDialectError as exc:
        if p["backend"] == "ripgrep":
            raise
        note = "ripgrep rejected a pattern (%s); searched with the Python engine" % exc
        result = search(p["paths"], matcher, file_filter, backend="python", **options)
    if note:
        result["backend_note"] = note
    result["cached"] = False
    if key and not check_mode:
        try:
            cache_write(p["cache"], key, result)
        except OSError as exc:
            raise SearchError("cannot write the cache in %s: %s" % (p["cache"], exc)) from None
    return result
