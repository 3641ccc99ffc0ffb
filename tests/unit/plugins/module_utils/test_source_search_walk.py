"""source_search's walk: the globs, each directory once, and the directory-only walk counting alike."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import (
    FileFilter,
    Stats,
    walk_dirs,
    walk_files,
    walk_steps,
)


def test_a_glob_with_a_slash_matches_the_relative_path_else_the_name():
    file_filter = FileFilter(["*.py", "docs/*.md"], ["tests", "pkg/gen_*.py"])
    assert file_filter.wants_file("pkg/a.py", "a.py")
    assert file_filter.wants_file("docs/index.md", "index.md")
    assert not file_filter.wants_file("pkg/index.md", "index.md")
    assert not file_filter.wants_file("pkg/gen_x.py", "gen_x.py")
    assert file_filter.wants_file("other/gen_x.py", "gen_x.py")
    assert not file_filter.wants_dir("pkg/tests", "tests")


def test_name_globs_alone_match_the_name_without_a_relative_path():
    # The walk builds no relative path for them (its hottest loop); the answers are those of the general case.
    fast, general = FileFilter(["*.py", "*.pyi"], []), FileFilter(["*.py", "*.pyi", "x/*.none"], [])
    assert not fast.needs_rel and general.needs_rel
    for name in ("a.py", "b.pyi", "c.pyc", "README.md", ".hidden.py"):
        assert fast.wants_file(None, name) == general.wants_file("pkg/" + name, name)


def test_walk_enters_each_directory_once(messy_tree):
    stats = Stats()
    rels = sorted(os.path.relpath(path, str(messy_tree))
                  for path in walk_files([str(messy_tree)], FileFilter(["*.py"], ["tests"]), stats))
    # pkg/speculative/loop leads back to pkg: counted, not entered; the dangling link is unreadable.
    assert rels == ["pkg/blob.py", "pkg/build.py", "pkg/crlf.py", "pkg/huge.py", "pkg/latin1.py", "pkg/noterm.py",
                    "pkg/speculative/dflash_worker.py", "pkg/zz_link_to_crlf.py"]
    assert stats.loops_skipped == 1
    assert list(stats.unreadable) == [str(messy_tree / "pkg" / "dangling.py")]


def test_the_directory_walk_counts_as_the_file_walk(messy_tree):
    os.symlink(messy_tree / "pkg" / "speculative", messy_tree / "alias")  # one directory, two paths
    file_filter = FileFilter(["*.py"], [])
    by_files, by_dirs = Stats(), Stats()
    list(walk_files([str(messy_tree)], file_filter, by_files))
    walk_dirs([str(messy_tree)], file_filter, by_dirs)
    assert (by_dirs.loops_skipped, by_dirs.unreadable, by_dirs.dirs_entered) == (
        by_files.loops_skipped, by_files.unreadable, by_files.dirs_entered)
    # The alias sorts before pkg/, so the directory is entered by its alias path.
    assert str(messy_tree / "alias") in by_dirs.dirs_entered and by_dirs.loops_skipped == 2


def test_the_walk_in_steps_counts_the_files_of_the_file_walk(messy_tree):
    """One step per directory; the count is that of walk_files, the counters those of walk_dirs."""
    os.symlink(messy_tree / "pkg" / "speculative", messy_tree / "alias")
    for file_filter in (FileFilter(["*.py"], []), FileFilter(["*.py"], ["tests"]), FileFilter(["pkg/*.py"], [])):
        by_files, by_steps, counted = Stats(), Stats(), []
        files = list(walk_files([str(messy_tree)], file_filter, by_files))
        steps = list(walk_steps([str(messy_tree)], file_filter, by_steps, counted))
        assert counted == [len(files)] and set(steps) == {None}
        assert len(steps) == len(by_steps.dirs_entered)
        assert (by_steps.loops_skipped, by_steps.unreadable, by_steps.dirs_entered) == (
            by_files.loops_skipped, by_files.unreadable, by_files.dirs_entered)
