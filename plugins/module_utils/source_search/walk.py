# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which files a search reads: include/exclude globs, the walk of the tree, and the search's counters.

Files are streamed one at a time (os.scandir), so memory is bounded by the results, not by the tree.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os
import re
import stat


class FileFilter(object):
    """include/exclude globs: a glob with '/' matches the path relative to the root, else the name."""

    def __init__(self, include, exclude):
        self.include = list(include or [])
        self.exclude = list(exclude or [])
        # Each list as two regexes (name globs, path globs): two matches per entry instead of a
        # fnmatch call per glob, in the walk's innermost loop.
        self._include = self._compile(self.include)
        self._exclude = self._compile(self.exclude)
        # Whether a file's path relative to the root is matched at all (a glob with '/'): the walk builds
        # it only then.
        self.needs_rel = bool(self._include[1] or self._exclude[1])
        if self._include[0] and not (self._include[1] or self._exclude[0] or self._exclude[1]):
            # Name globs only, such as the default *.py: one regex match per file, the walk's hottest call.
            by_name = self._include[0].match
            self.wants_file = lambda rel, name: by_name(name) is not None

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

    def note_os_error(self, path, exc):
        self.note_unreadable(path, exc.strerror or str(exc))


def walk_files(roots, file_filter, stats):
    """Yield the path of each candidate file under roots, following symlinks.

    Each directory is entered once (told apart by device and inode: one stat, where realpath would
    lstat every component), so symlink loops and overlapping roots are walked once (the others
    count as loops_skipped). Only directories are remembered, never every file, so memory does not
    grow with the tree; a file reached through a symlinked *file* as well is collapsed in `search`.
    """
    for files in _walk(roots, file_filter, stats, True):
        yield from files


def walk_dirs(roots, file_filter, stats):
    """The walk of walk_files without its files: loops, unreadable directories, dangling links, dirs_entered.

    What the ripgrep backend needs beside rg, at a fraction of the cost (no glob match per file).
    """
    for _step in walk_steps(roots, file_filter, stats):
        pass


def walk_steps(roots, file_filter, stats, counted=None):
    """walk_dirs one directory per step (a None each), to be run between other work.

    With counted (a list), the walk also counts the files walk_files would yield, without a
    generator step per file, and appends the number to counted once it is done.
    """
    total = 0
    for files in _walk(roots, file_filter, stats, counted is not None):
        total += len(files)
        yield None
    if counted is not None:
        counted.append(total)


def _walk(roots, file_filter, stats, want_files):
    """One list per directory entered (or file root): its wanted files, where want_files, else empty."""
    seen_dirs = set()
    seen_files = set()  # root arguments that are files
    for root in roots:
        root = os.path.abspath(root)
        if os.path.isfile(root):
            real = os.path.realpath(root)
            if want_files and real not in seen_files:
                seen_files.add(real)
                yield [root]
            continue
        stack = [(root, "")]
        while stack:
            directory, rel_dir = stack.pop()
            try:
                st = os.stat(directory)
            except OSError as exc:
                stats.note_os_error(directory, exc)
                continue
            if (st.st_dev, st.st_ino) in seen_dirs:
                stats.loops_skipped += 1
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
            stats.dirs_entered.add(directory)
            try:
                entries = list(os.scandir(directory))
            except OSError as exc:
                stats.note_os_error(directory, exc)
                continue
            files = []
            subdirs = _scan(entries, rel_dir, file_filter, stats, files if want_files else None)
            # Subdirectories in name order: which of two paths to one directory is entered does not
            # depend on the file system's order. The order of the files does not matter.
            subdirs.sort(reverse=True)
            stack.extend((path, rel) for _name, path, rel in subdirs)
            yield files


def _scan(entries, rel_dir, file_filter, stats, files):
    """The subdirectories to enter, as (name, path, rel); wanted files appended to files (unless None)."""
    wants_file, needs_rel = file_filter.wants_file, file_filter.needs_rel
    subdirs = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()  # follows symlinks
            is_file = not is_dir and entry.is_file()
        except OSError as exc:
            stats.note_os_error(entry.path, exc)
            continue
        if is_dir:
            rel = rel_dir + "/" + entry.name if rel_dir else entry.name
            if file_filter.wants_dir(rel, entry.name):
                subdirs.append((entry.name, entry.path, rel))
        elif is_file:
            if files is not None:
                rel = (rel_dir + "/" + entry.name if rel_dir else entry.name) if needs_rel else None
                if wants_file(rel, entry.name):
                    files.append(entry.path)
        elif entry.is_symlink() and not os.path.exists(entry.path):
            stats.note_os_error(entry.path, OSError(2, "dangling symlink"))
    return subdirs


def sized_files(roots, file_filter, max_filesize, stats):
    """Yield (path, size) of the regular files to read; count the ones over max_filesize.

    Both backends run this walk, so they count large files, loops and unreadable directories alike.
    """
    for path in walk_files(roots, file_filter, stats):
        try:
            st = os.stat(path)
        except OSError as exc:
            stats.note_os_error(path, exc)
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if max_filesize and st.st_size > max_filesize:
            stats.large_skipped += 1
            continue
        yield path, st.st_size
