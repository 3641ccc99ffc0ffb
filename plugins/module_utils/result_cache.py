# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""On-target cache of module results: one JSON file per key in a directory.

A cache file is read back only when its caller's validator accepts it: files can be hand-edited,
half-restored from a backup or written by another version, and a bad entry must be a miss (then
rebuilt), never a crash or a wrong answer served as cached.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import tempfile

# Bump when the shape of cached results changes, so old entries are never read.
# 3: source_search results gained loops_skipped.
CACHE_FORMAT = 3


def entry_key(payload):
    """The name of a cache entry: the sha256 of payload (everything the entry depends on) as sorted JSON."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def cache_read(cache_dir, key, validate):
    """(entry, path): entry is None (a miss) unless the file is a JSON object that validate(entry) accepts; a hit is
    returned without its format (what cache_write adds)."""
    path = os.path.join(cache_dir, key + ".json")
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None, path
    if not isinstance(data, dict) or not validate(data):
        return None, path
    data.pop("format", None)
    return data, path


def matches_shape(entry, types):
    """True when entry has every field of types (name -> type or tuple of types) with that type.

    bool is not accepted for int (JSON true is not a count), and the entry's format must be CACHE_FORMAT.
    """
    return entry.get("format") == CACHE_FORMAT and all(
        name in entry and is_type(entry[name], kind) for name, kind in types.items())


def is_type(value, kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


def fingerprint_files(paths):
    """(path, mtime_ns, size) for each existing path: what invalidates a cache entry."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append([path, st.st_mtime_ns, st.st_size])
    return out


def cache_write(cache_dir, key, data):
    """Write atomically so a concurrent run never reads half a file."""
    if not os.path.isdir(cache_dir):
        os.makedirs(cache_dir, 0o755)
    path = os.path.join(cache_dir, key + ".json")
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(dict(data, format=CACHE_FORMAT), handle)
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def cache_keep(cache_dir, key, data):
    """cache_write for a cache that is only an optimisation: a directory that cannot be written is a miss next time,
    never an error of the run."""
    try:
        cache_write(cache_dir, key, data)
    except OSError:
        pass
