# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""On-target cache of module results: one JSON file per key in a directory."""

from __future__ import absolute_import, division, print_function

import json
import os
import tempfile

# Bump when the shape of cached results changes, so old entries are never read.
CACHE_FORMAT = 2


def cache_read(cache_dir, key):
    path = os.path.join(cache_dir, key + ".json")
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None, path
    if data.get("format") != CACHE_FORMAT:
        return None, path
    return data, path


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
