# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Flag discovery for one command: --help, source, cache. The module is a thin shell around this."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

from ansible_collections.gpufleet.sglang.plugins.module_utils import argparse_help, argparse_source
from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import CACHE_FORMAT

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
