# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One search: run a backend, then rank, limit and shape the result (identical for both backends)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.definitions import (
    definitions_in,
    may_define,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.python_backend import python_search
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.ripgrep_backend import ripgrep_search
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import Stats

UNREADABLE_LISTED = 50


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
        if definitions and may_define(path, hits):
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
