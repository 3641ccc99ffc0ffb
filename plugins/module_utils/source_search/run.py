# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The source_search_info module without Ansible: check the options, pick the backend, serve or fill the cache.

The package's parts (its __init__.py stays empty, as ansible-test requires of module_utils packages): ``match``
(the line matcher both backends share), ``walk`` (which files, and the counters), ``python_backend``,
``ripgrep_backend``, ``definitions`` (``ast``), ``search`` (one search, shaped), ``cache`` (fingerprint and key
of a cached result) and ``run`` (this file).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import cache_read, cache_write, is_type
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.cache import (
    cache_key,
    tree_fingerprint,
    valid_cached_result,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import (
    LineMatcher,
    RegexDialectError,
    SearchError,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.search import search
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.walk import FileFilter

_LIMITS = ("context", "max_files", "max_hits_per_file", "max_total_hits", "max_filesize")


def run_search(params, check_mode):
    """The source_search_info module without Ansible: check params, serve or fill the cache, search.

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
