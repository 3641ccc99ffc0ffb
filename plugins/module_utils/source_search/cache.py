# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ties a search to the on-host result cache: the tree's fingerprint, the key, a valid entry."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import entry_key, is_type, matches_shape
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import Stats, walk_files

# What a cached result must hold to be served: every field, with its type.
_CACHED_FIELDS = {
    "files": list, "definitions": list, "total_hits": int, "term_hits": dict, "missing_terms": list,
    "files_with_hits": int, "files_scanned": int, "bytes_scanned": int, "binary_skipped": int,
    "large_skipped": int, "loops_skipped": int, "unreadable": list, "unreadable_count": int,
    "truncated": bool, "truncated_reason": list, "backend": str,
}
_CACHED_FILE_FIELDS = {"path": str, "hit_count": int, "hits": list, "definitions": list}


def tree_fingerprint(roots, file_filter):
    """Hash of (path, size, mtime) of every candidate file: what invalidates a cached search.

    A walk with stat calls only (tens of milliseconds for a 4,700-file package, against reading
    its 68 MB).
    """
    digest = hashlib.sha256()
    stats = Stats()
    for path in walk_files(roots, file_filter, stats):
        try:
            st = os.stat(path)
        except OSError:
            continue
        digest.update(("%s\0%d\0%d\n" % (path, st.st_size, st.st_mtime_ns)).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def valid_cached_result(entry):
    """True when a cache entry has the shape of a search result of this format."""
    return (matches_shape(entry, _CACHED_FIELDS)
            and all(isinstance(f, dict) and all(k in f and is_type(f[k], t) for k, t in _CACHED_FILE_FIELDS.items())
                    for f in entry["files"])
            and all(isinstance(d, dict) for d in entry["definitions"])
            and all(isinstance(t, str) for t in entry["missing_terms"]))


def cache_key(options, fingerprint):
    return entry_key({"module": "source_search", "options": options, "tree": fingerprint})
