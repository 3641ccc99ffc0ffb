# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Flag discovery for one command: --help, source, cache. The module is a thin shell around discover()."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import shutil
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils import argparse_help, argparse_source, sglang_capabilities
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import c_locale_env, run_argv
from ansible_collections.gpufleet.sglang.plugins.module_utils.python_package import PackageInfoError, resolve_package
from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import (
    CACHE_FORMAT,
    cache_read,
    cache_write,
    is_type,
    matches_shape,
)

HELP_COLUMNS = 250
# SGLang's --help is about 150 kB; a command printing more than this is not printing its help.
DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024


class FlagsError(Exception):
    """Flags cannot be read: the message says why (without the host name)."""


# argparse's own flag, which no source file defines.
ARGPARSE_HELP_FLAG = {
    "name": "--help", "aliases": ["-h"], "takes_value": False, "metavar": None, "choices": None,
    "default": None, "help": "show this help message and exit", "group": None, "negated_by": None,
    "hidden": False, "source": "argparse",
}


def python_module_form(argv):
    """(python, module) when argv is `PYTHON -m MODULE ...`, else (None, None)."""
    if len(argv) >= 3 and argv[1] == "-m":
        return argv[0], argv[2]
    return None, None


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


def cache_key(argv, environment, package, watched_files):
    """Key of a cached result: the interpreter, the package version and the files that define it."""
    interpreter = argv[0]
    real = os.path.realpath(interpreter)
    payload = {
        "format": CACHE_FORMAT,  # a new result shape must never read old entries
        "argv": list(argv),
        "environment": sorted((str(k), str(v)) for k, v in (environment or {}).items()),
        "interpreter": fingerprint_files([real]) or [real],
        "version": (package or {}).get("version"),
        "dist_info": (package or {}).get("dist_info"),
        "files": fingerprint_files(watched_files),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def help_flags(stdout):
    """Flags and info from --help output (raises argparse_help.HelpParseError)."""
    flags, info = argparse_help.parse_help(stdout)
    for flag in flags:
        flag["hidden"] = False
        flag["source"] = "help"
    return flags, info


def source_flags(package_dir):
    """Flags read from the package's parser sources, argparse's --help included."""
    flags, files = argparse_source.flags_from_package(package_dir)
    return [dict(ARGPARSE_HELP_FLAG)] + flags, files


def compare(help_list, source_list):
    """How --help and the source agree on the visible option strings."""
    visible_help = argparse_help.option_strings(help_list)
    visible_source = argparse_help.option_strings([f for f in source_list if not f.get("hidden")])
    return {
        "agrees": visible_help == visible_source,
        "help_only": sorted(visible_help - visible_source),
        "source_only": sorted(visible_source - visible_help),
    }


def merge_hidden(help_list, source_list):
    """--help's flags plus the hidden ones only the source knows (deprecated aliases)."""
    known = argparse_help.option_strings(help_list)
    extra = [f for f in source_list if f.get("hidden") and f["name"] not in known]
    return help_list + extra


# What a cached entry must hold to be served (the fields discover returns from it).
_CACHED_FIELDS = {"flags": list, "method": str, "capabilities": (dict, type(None)),
                  "raw_help_sha256": (str, type(None))}
_CACHED_FLAG_FIELDS = {"name": str, "aliases": list, "takes_value": bool, "hidden": bool}


def valid_cached_result(entry):
    """True when a cache entry has the shape of a discover result of this format."""
    return (matches_shape(entry, _CACHED_FIELDS)
            and entry["method"] in ("help", "source")
            and all(isinstance(f, dict) and all(k in f and is_type(f[k], t) for k, t in _CACHED_FLAG_FIELDS.items())
                    and all(isinstance(a, str) for a in f["aliases"]) for f in entry["flags"]))


def package_of(python, module_name, environment, timeout):
    """python_package_info's answer for the top-level package of module_name; None when it has none."""
    try:
        return resolve_package(python, module_name.split(".")[0], environment, timeout)
    except PackageInfoError:
        return None


def run_help(argv, env, timeout, max_output_bytes):
    run = run_argv(argv, timeout=timeout, env=env, max_output_bytes=max_output_bytes)
    if run.error:
        raise FlagsError("cannot run %s: %s" % (argv[0], run.error))
    if run.timed_out:
        raise FlagsError("%s did not finish within %ss (killed with its process group)" % (" ".join(argv), timeout))
    if run.output_cut:
        raise FlagsError("%s printed more than max_output_bytes=%s bytes, which is not a program's help (stopped "
                         "after %.1fs and killed it); raise max_output_bytes if it really is"
                         % (" ".join(argv), max_output_bytes, run.elapsed_s))
    if run.rc != 0:
        raise FlagsError("%s exited with rc=%s: %s" % (" ".join(argv), run.rc, run.stderr_tail(5)))
    try:
        flags, info = help_flags(run.stdout)
    except argparse_help.HelpParseError as exc:
        raise FlagsError("output of %s is not argparse help (%s); first line: %r"
                         % (" ".join(argv), exc, (run.stdout.strip().splitlines() or [""])[0][:120])) from None
    return flags, info, hashlib.sha256(run.stdout.encode("utf-8")).hexdigest()


def check_params(params):
    """Raise FlagsError for arguments discover cannot work with. Returns max_output_bytes to use."""
    argv = params["argv"]
    if not argv:
        raise FlagsError("argv is empty; give the command as a list, e.g. "
                         "[/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]")
    exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
    if not exe or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        raise FlagsError("command %s not found or not executable; give the full path of the interpreter the "
                         "service runs" % argv[0])
    if params.get("source_dir") and not os.path.isdir(params["source_dir"]):
        raise FlagsError("source_dir %s is not a directory" % params["source_dir"])
    timeout = params["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise FlagsError("timeout must be more than 0 (seconds), not %r" % (timeout,))
    limit = params.get("max_output_bytes")
    if limit is None:
        return DEFAULT_MAX_OUTPUT_BYTES
    if not is_type(limit, int) or limit < 0:
        raise FlagsError("max_output_bytes must be 0 (no limit) or more, not %r" % (limit,))
    return limit


def discover(params, check_mode):
    """The flags of params["argv"]: from --help, the package's source, or the on-host cache.

    params: argv, method (auto, help, source), source_dir, timeout, environment, cache and
    max_output_bytes (None for the default). Returns the cli_flags module's result (before its
    filter); raises FlagsError.
    """
    started = time.monotonic()
    max_output_bytes = check_params(params)
    argv = params["argv"]
    environment = params.get("environment") or {}
    env = c_locale_env(environment, columns=HELP_COLUMNS)
    python, module_name = python_module_form(argv)
    package = package_of(python, module_name, environment, min(params["timeout"], 60)) if python else None
    source_dir = params.get("source_dir") or ((package or {}).get("search_roots") or [None])[0]
    method = params["method"]
    if method == "source" and not source_dir:
        raise FlagsError("method=source needs the 'PYTHON -m MODULE' form of argv with the package installed, "
                         "or source_dir")

    result = {"package": package or {}, "raw_help_sha256": None, "cached": False, "method": None}
    watched = argparse_source.parser_source_files(source_dir) if source_dir else []
    if package and package.get("dist_info"):
        watched.append(os.path.join(package["dist_info"], "RECORD"))
    key = None
    if params.get("cache"):
        key = cache_key(argv + [method], environment, package, watched)
        hit, path = cache_read(params["cache"], key, valid_cached_result)
        result["cache_file"] = path
        if hit:
            hit.pop("format", None)
            hit.update(cached=True, package=package or {}, cache_file=path)
            return _finish(hit, started)

    src = None
    if source_dir and method in ("auto", "source"):
        try:
            src = source_flags(source_dir)
            result["source_files"] = src[1]
        except argparse_source.SourceReadError as exc:
            if method == "source":
                raise FlagsError("cannot read the parser sources: %s" % exc) from None
            result["source_error"] = str(exc)

    if method == "source":
        flags = src[0]
        result["method"] = "source"
    else:
        try:
            flags, info, digest = run_help(argv, env, params["timeout"], max_output_bytes)
            result.update(method="help", raw_help_sha256=digest, prog=info["prog"])
            if src:
                result["source_check"] = compare(flags, src[0])
                flags = merge_hidden(flags, src[0])
        except FlagsError as exc:
            if method == "help" or not src:
                raise
            flags = src[0]
            result.update(method="source", fallback_reason=str(exc))

    is_sglang = any(f["name"] == "--speculative-algorithm" for f in flags)
    result["capabilities"] = sglang_capabilities.capabilities(flags) if is_sglang else None
    result["flags"] = flags
    if key and not check_mode:
        # Only the flags and their analysis are cached; the package facts are re-probed every time.
        try:
            result["cache_file"] = cache_write(params["cache"], key, dict(result, package={}))
        except OSError as exc:
            raise FlagsError("cannot use the cache directory %s: %s" % (params["cache"], exc)) from None
    return _finish(result, started)


def _finish(result, started):
    result["flag_count"] = len(result["flags"])
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    return result
