# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Flag discovery for one command: --help, source, cache. The module is a thin shell around discover().

Methods: ``source`` reads the package's parser sources with ``ast`` (no import, about 0.07 s for SGLang);
``help`` runs the command's ``--help`` (SGLang imports torch: about 2 s on a CPU machine, 18-21 s on a
GPU host with CUDA torch); ``auto`` reads the source and runs ``--help`` only where the source cannot be
read; ``cross_check`` runs both, compares them, and falls back to the source where ``--help`` fails.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import hashlib
import os
import re
import shutil
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils import argparse_help, argparse_source, sglang_capabilities
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import shebang_python
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import c_locale_env, run_argv
from ansible_collections.gpufleet.sglang.plugins.module_utils.python_package import PackageInfoError, resolve_package
from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import (
    CACHE_FORMAT,
    cache_read,
    cache_write,
    entry_key,
    fingerprint_files,
    is_type,
    matches_shape,
)

HELP_COLUMNS = 250
# SGLang's --help is about 150 kB; a command printing more than this is not printing its help.
DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024
METHODS = ("auto", "cross_check", "help", "source")
# A Python warning as the warnings module prints it: "FILE:LINE: CATEGORY: MESSAGE" (the location optional).
_PYTHON_WARNING = re.compile(r"^(?:\S.*?:\d+: )?(?P<warning>(?:[A-Z][A-Za-z0-9_]*)?Warning: \S.*?)\s*$")
MAX_WARNINGS = 20
MAX_WARNING_CHARS = 500
# Names of interpreters a console script's '#!' line may name (python, python3, python3.12, pypy3).
_PYTHON_NAME = re.compile(r"^(python|pypy)(\d+(\.\d+)?)?$")
# A console script is a few hundred bytes; a bigger '#!' file is not one pip wrote.
MAX_SCRIPT_BYTES = 64 * 1024


class FlagsError(Exception):
    """Flags cannot be read: the message says why (without the host name).

    warnings: Python warnings the command printed on stderr before it failed.
    """

    def __init__(self, message, warnings=None):
        super(FlagsError, self).__init__(message)
        self.warnings = list(warnings or [])


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


def executable(name):
    """The file argv[0] runs: name itself when it has a '/', else the first match on PATH; None when not found."""
    return name if os.sep in name else shutil.which(name)


def script_module(path):
    """The module a console script imports its entry point from (`from sglang.cli.main import main`), or None."""
    try:
        if os.path.getsize(path) > MAX_SCRIPT_BYTES:
            return None
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level and node.module != "__future__":
            return node.module
    return None


def command_form(argv):
    """How argv starts a Python program: {form, python, module}.

    form: "python -m" for `PYTHON -m MODULE ...`; "console script" for a script whose '#!' line names a
    Python interpreter (`/venv/bin/sglang serve --help`), python being that interpreter and module the one
    the script imports its entry point from (else the script's name); None for anything else.
    """
    python, module = python_module_form(argv)
    if python:
        return {"form": "python -m", "python": python, "module": module}
    script = executable(argv[0]) if argv else None
    python = shebang_python(script) if script else None
    if python and _PYTHON_NAME.match(os.path.basename(python)):
        return {"form": "console script", "python": python,
                "module": script_module(script) or os.path.basename(script)}
    return {"form": None, "python": None, "module": None}


def split_warnings(stderr):
    """(warnings, rest) of a command's stderr.

    warnings: the Python warnings in it as "CATEGORY: MESSAGE" (first line, without the file:line
    prefix), deduplicated, at most MAX_WARNINGS of at most MAX_WARNING_CHARS characters each.
    rest: stderr without the warning lines and the indented lines after them (the source line the
    warnings module prints, a message's continuation), so an error message quotes the real error.
    """
    warnings = []
    rest = []
    in_warning = False
    for line in stderr.splitlines():
        match = _PYTHON_WARNING.match(line)
        if match:
            text = match.group("warning")[:MAX_WARNING_CHARS]
            if text not in warnings and len(warnings) < MAX_WARNINGS:
                warnings.append(text)
            in_warning = True
        elif in_warning and line[:1] in (" ", "\t"):
            continue
        else:
            in_warning = False
            rest.append(line)
    return warnings, "\n".join(rest)


def cache_key(argv, environment, package, watched_files, executables=None):
    """Key of a cached result: the interpreter, the package version and the files that define it.

    executables: the files the command runs (the interpreter; a console script and its '#!'
    interpreter), fingerprinted through their symlinks; argv[0] when not given.
    """
    reals = [os.path.realpath(path) for path in (executables or [argv[0]])]
    payload = {
        "format": CACHE_FORMAT,  # a new result shape must never read old entries
        "argv": list(argv),
        "environment": sorted((str(k), str(v)) for k, v in (environment or {}).items()),
        "interpreter": fingerprint_files(reals) or reals,
        "version": (package or {}).get("version"),
        "dist_info": (package or {}).get("dist_info"),
        "files": fingerprint_files(watched_files),
    }
    return entry_key(payload)


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
                  "raw_help_sha256": (str, type(None)), "warnings": list}
_CACHED_FLAG_FIELDS = {"name": str, "aliases": list, "takes_value": bool, "hidden": bool}


def valid_cached_result(entry):
    """True when a cache entry has the shape of a discover result of this format."""
    return (matches_shape(entry, _CACHED_FIELDS)
            and entry["method"] in ("help", "source")
            and all(isinstance(w, str) for w in entry["warnings"])
            and all(isinstance(f, dict) and all(k in f and is_type(f[k], t) for k, t in _CACHED_FLAG_FIELDS.items())
                    and all(isinstance(a, str) for a in f["aliases"]) for f in entry["flags"]))


def package_of(python, module_name, environment, timeout, known=None):
    """(package, error): python_package_info's answer for the top-level package of module_name, or why not.

    known: that answer when the caller already has it (sglang_info probes the same interpreter with the same
    environment just before), so the interpreter is not started a second time.
    """
    name = module_name.split(".")[0]
    try:
        package = known if known is not None else resolve_package(python, name, environment, timeout)
    except PackageInfoError as exc:
        return None, "cannot probe %s for the package %s: %s" % (python, name, exc)
    if not package.get("search_roots"):
        return package, "%s does not import the package %s (install: %s)" % (python, name, package.get("install"))
    return package, None


def run_help(argv, env, timeout, max_output_bytes):
    """(flags, info, sha256 of stdout, warnings): only stdout is parsed; stderr gives the Python warnings."""
    run = run_argv(argv, timeout=timeout, env=env, max_output_bytes=max_output_bytes)
    if run.error:
        raise FlagsError("cannot run %s: %s" % (argv[0], run.error))
    warnings, rest = split_warnings(run.stderr)
    if run.timed_out:
        raise FlagsError("%s did not finish within %ss (killed with its process group)" % (" ".join(argv), timeout),
                         warnings)
    if run.output_cut:
        raise FlagsError("%s printed more than max_output_bytes=%s bytes, which is not a program's help (stopped "
                         "after %.1fs and killed it); raise max_output_bytes if it really is"
                         % (" ".join(argv), max_output_bytes, run.elapsed_s), warnings)
    if run.rc != 0:
        tail = "\n".join(rest.strip().splitlines()[-5:]) or run.stderr_tail(5)
        raise FlagsError("%s exited with rc=%s: %s" % (" ".join(argv), run.rc, tail), warnings)
    try:
        flags, info = help_flags(run.stdout)
    except argparse_help.HelpParseError as exc:
        raise FlagsError("output of %s is not argparse help (%s); first line: %r"
                         % (" ".join(argv), exc, (run.stdout.strip().splitlines() or [""])[0][:120]),
                         warnings) from None
    return flags, info, hashlib.sha256(run.stdout.encode("utf-8")).hexdigest(), warnings


def check_params(params):
    """Raise FlagsError for arguments discover cannot work with. Returns max_output_bytes to use."""
    argv = params["argv"]
    if not argv:
        raise FlagsError("argv is empty; give the command as a list, e.g. "
                         "[/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]")
    if (params.get("method") or "auto") not in METHODS:
        raise FlagsError("method must be one of %s, not %r" % (", ".join(METHODS), params["method"]))
    exe = executable(argv[0])
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
    """The flags of params["argv"]: from the package's source, --help, or the on-host cache.

    params: argv, method (auto, cross_check, help, source), source_dir, timeout, environment, cache
    and max_output_bytes (None for the default); optionally package, python_package_info's answer for
    the command's interpreter and package when the caller has it already. Returns the cli_flags_info module's
    result (before its filter), with the Python warnings --help printed in "warnings"; raises FlagsError.
    """
    started = time.monotonic()
    max_output_bytes = check_params(params)
    argv = params["argv"]
    environment = params.get("environment") or {}
    env = c_locale_env(environment, columns=HELP_COLUMNS)
    method = params.get("method") or "auto"
    command = command_form(argv)
    package, source_dir, no_source = _locate_source(params, command, environment, method)

    result = {"package": package or {}, "command": command, "raw_help_sha256": None, "cached": False,
              "method": None, "warnings": []}
    key = None
    if params.get("cache"):
        key, hit = _cache_lookup(params, method, environment, command, package, source_dir, result)
        if hit:
            return _finish(hit, started)

    src, no_source = _read_source(source_dir, method, no_source, result)
    if method == "source" or (method == "auto" and src):
        flags = src[0]
        result["method"] = "source"
    else:
        flags = _help_or_fallback(argv, env, params["timeout"], max_output_bytes, method, src, no_source, result)

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


def _locate_source(params, command, environment, method):
    """(package, source_dir, no_source): the command's package (None when argv runs no Python module), the
    directory of its parser sources (None when not known) and why the source may not be readable (None when
    nothing says so). Raises FlagsError for method=source without a source directory."""
    python = command["python"]
    package, no_source = (package_of(python, command["module"], environment, min(params["timeout"], 60),
                                     params.get("package"))
                          if python else (None, None))
    source_dir = params.get("source_dir") or ((package or {}).get("search_roots") or [None])[0]
    if not source_dir:
        no_source = no_source or ("argv is neither 'PYTHON -m MODULE ...' nor a Python console script (a '#!' line "
                                  "naming python), and source_dir is not set")
        if method == "source":
            raise FlagsError("method=source needs argv in the 'PYTHON -m MODULE' or console script form with the "
                             "package installed, or source_dir: %s" % no_source)
    return package, source_dir, no_source


def _cache_lookup(params, method, environment, command, package, source_dir, result):
    """(key, hit): the cache key of this discovery, and the cached result ready to return (None on a miss).

    Sets result["cache_file"] to the entry read.
    """
    argv = params["argv"]
    python = command["python"]
    watched = argparse_source.parser_source_files(source_dir) if source_dir else []
    if package and package.get("dist_info"):
        watched.append(os.path.join(package["dist_info"], "RECORD"))
    # The console script and its interpreter, or the interpreter of the -m form.
    runs = [executable(argv[0])] + ([executable(python)] if python and python != argv[0] else [])
    key = cache_key(argv + [method], environment, package, watched, [r for r in runs if r])
    hit, path = cache_read(params["cache"], key, valid_cached_result)
    result["cache_file"] = path
    if hit:
        hit.update(cached=True, package=package or {}, command=command, cache_file=path)
    return key, hit


def _read_source(source_dir, method, no_source, result):
    """(src, no_source): the source's (flags, files) unless method is help or there is no source directory (None),
    and why the source cannot be used. Sets result["source_files"]; raises FlagsError for method=source."""
    src = None
    if method != "help" and source_dir:
        try:
            src = source_flags(source_dir)
            result["source_files"] = src[1]
        except argparse_source.SourceReadError as exc:
            if method == "source":
                raise FlagsError("cannot read the parser sources: %s" % exc) from None
            no_source = "cannot read the parser sources: %s" % exc
    return src, no_source


def _help_or_fallback(argv, env, timeout, max_output_bytes, method, src, no_source, result):
    """The flags from --help (for help, cross_check, and auto without the source), the source's where --help fails
    and the method allows it; sets result's method, raw_help_sha256, prog, warnings and fallback_reason,
    source_check or source_error. Raises FlagsError when neither can be used."""
    try:
        flags, info, digest, warnings = run_help(argv, env, timeout, max_output_bytes)
    except FlagsError as exc:
        if method == "help":
            raise
        if not src:
            raise FlagsError("%s; and the source cannot be read: %s" % (exc, no_source), exc.warnings) from None
        # cross_check: --help cannot run here (missing dependencies), the source still tells the truth.
        result.update(method="source", fallback_reason=str(exc), warnings=exc.warnings)
        return src[0]
    result.update(method="help", raw_help_sha256=digest, prog=info["prog"], warnings=warnings)
    if method == "auto":
        result["fallback_reason"] = "the source was not read: %s" % no_source
    elif src:
        result["source_check"] = compare(flags, src[0])
        flags = merge_hidden(flags, src[0])
    elif method == "cross_check":
        result["source_error"] = no_source
    return flags


def _finish(result, started):
    result["flag_count"] = len(result["flags"])
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    return result


def filter_result(result, pattern, filter_type):
    """Keep in discover's result the flags that pattern selects; flag_count counts what is left.

    filter_type "prefix": an option string of the flag starts with pattern; "regex": one matches it.
    """
    prefix = pattern if filter_type == "prefix" else None
    regex = pattern if filter_type == "regex" else None
    result["flags"] = argparse_help.filter_flags(result["flags"], prefix=prefix, regex=regex)
    result["flag_count"] = len(result["flags"])
    return result
