#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cli_flags
short_description: Read the real command-line flags of an argparse program (SGLang in particular)
version_added: "0.1.0"
description:
  - Runs a command's C(--help) (argv list, no shell, C(LC_ALL=C), wide C(COLUMNS), a hard timeout that
    kills the whole process group) and parses the argparse help into structured flags.
  - For C(PYTHON -m PACKAGE.module) commands it can also read the flags from the package's own source
    with C(ast), importing nothing (O(method=source)); for SGLang that is about 40 times faster than
    C(--help), which imports torch, and it also sees hidden deprecated aliases.
  - With O(method=auto) (the default) C(--help) is run and cross-checked against the source; when
    C(--help) cannot run (missing dependencies on the host) the source is used and the result says so.
  - For SGLang it returns RV(capabilities), the map from deployment intent (algorithm, drafter path,
    block size, draft window) to the flag names this release really has.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  argv:
    description:
      - The command that prints the help, as a list, for example
        C([/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]).
    type: list
    elements: str
    required: true
  method:
    description:
      - C(help) parses the command's output; C(source) reads the package's parser sources (needs the
        C(PYTHON -m MODULE) form or O(source_dir)); C(auto) does both and falls back to the source.
    type: str
    choices: [auto, help, source]
    default: auto
  source_dir:
    description:
      - Package directory to read in source mode, for example the first of the C(search_roots) that
        M(gpufleet.sglang.python_package_info) returns.
      - Defaults to the directory the interpreter in O(argv) imports the package from.
    type: path
  timeout:
    description: Seconds before the help command and its children are killed.
    type: int
    default: 120
  environment:
    description: Extra environment variables for the command (for example the service's C(PYTHONPATH)).
    type: dict
    default: {}
  filter:
    description: Only return flags one of whose option strings matches (see O(filter_type)).
    type: str
  filter_type:
    description: How O(filter) matches option strings.
    type: str
    choices: [prefix, regex]
    default: prefix
  cache:
    description:
      - Directory on the target for cached results, keyed by the interpreter, the package version, its
        dist-info and the parser source files' mtimes. A hit skips C(--help) entirely.
      - Nothing is written in check mode.
    type: path
attributes:
  check_mode:
    support: full
    description: Runs the same in check mode, but does not write the cache.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
notes:
  - Choice lists that SGLang computes at run time are only seen through C(--help).
seealso:
  - module: gpufleet.sglang.python_package_info
"""

EXAMPLES = r"""
- name: Flags of the SGLang release the service runs
  gpufleet.sglang.cli_flags:
    argv: [/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]
    cache: /var/cache/gpufleet-sglang
  register: sglang_flags

- name: Fail early when this release cannot do DFlash
  ansible.builtin.assert:
    that: sglang_flags.capabilities.supports_dflash
    fail_msg: "sglang {{ sglang_flags.package.version }} has no DFLASH"

- name: Only the speculative flags, from source (no torch import)
  gpufleet.sglang.cli_flags:
    argv: [/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]
    method: source
    filter: --speculative-
"""

RETURN = r"""
flags:
  description:
    - Flags the command accepts. Hidden flags (argparse accepts them, C(--help) hides them; SGLang's
      deprecated aliases) are included with C(hidden=true) when the source was read.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Primary option string (the first long one).
      type: str
    aliases:
      description: Other option strings for the same flag.
      type: list
      elements: str
    takes_value:
      description: Whether the flag takes a value.
      type: bool
    metavar:
      description: The value's placeholder in the help (C(help) method only).
      type: str
    choices:
      description: Allowed values, where the help or source lists them; compare as a set.
      type: list
    default:
      description: Default value when the help prints it as C((default VALUE)) in argparse's format.
      type: str
    help:
      description: Help text, unwrapped.
      type: str
    group:
      description: Argument group title in the help.
      type: str
    negated_by:
      description: The C(--no-) twin of a boolean flag.
      type: str
    hidden:
      description: Whether C(--help) hides the flag.
      type: bool
  sample:
    - name: --speculative-draft-window-size
      aliases: []
      takes_value: true
      metavar: SPECULATIVE_DRAFT_WINDOW_SIZE
      choices: null
      hidden: false
flag_count:
  description: Number of flags returned (after O(filter)).
  returned: always
  type: int
method:
  description: What produced the flags, C(help) or C(source).
  returned: always
  type: str
fallback_reason:
  description: Why O(method=auto) used the source instead of C(--help).
  returned: when the source was used as a fallback
  type: str
source_check:
  description: With O(method=auto), whether C(--help) and the source list the same visible option strings.
  returned: when both were read
  type: dict
  contains:
    agrees:
      description: True when both give the same set.
      type: bool
    help_only:
      description: Option strings only C(--help) shows.
      type: list
    source_only:
      description: Option strings only the source defines.
      type: list
source_files:
  description: Source files read in source mode.
  returned: when the source was read
  type: list
  elements: str
raw_help_sha256:
  description: SHA-256 of the raw C(--help) output; null when it was not run.
  returned: always
  type: str
prog:
  description: Program name from the usage line.
  returned: when C(--help) was parsed
  type: str
package:
  description: Version, install kind and directory of the package the interpreter imports (C(-m) form only).
  returned: always
  type: dict
capabilities:
  description:
    - Speculative-decoding capabilities of an SGLang release, null for other programs.
    - C(flags) maps intent (algorithm, draft_model_path, block_size, draft_window_size, num_draft_tokens)
      to this release's flag name or null; C(deprecated_aliases) maps hidden old names to the name to use.
  returned: always
  type: dict
  sample:
    speculative_algorithms: [DFLASH, EAGLE, EAGLE3, NEXTN, NGRAM, STANDALONE]
    supports_dflash: true
    supports_ddtree: false
    flags:
      algorithm: --speculative-algorithm
      block_size: --speculative-dflash-block-size
      draft_window_size: --speculative-dflash-draft-window-size
    deprecated_aliases: {}
cached:
  description: Whether the result came from the cache.
  returned: always
  type: bool
cache_file:
  description: The cache entry read or written.
  returned: when O(cache) is set
  type: str
elapsed_s:
  description: Seconds this module took.
  returned: always
  type: float
"""

import hashlib
import os
import re
import shutil
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils import argparse_help, cli_flags, sglang_capabilities
from ansible_collections.gpufleet.sglang.plugins.module_utils.argparse_source import (
    SourceReadError,
    parser_source_files,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import c_locale_env, run_argv
from ansible_collections.gpufleet.sglang.plugins.module_utils.python_package import (
    PROBE_SOURCE,
    BrokenInstall,
    ProbeError,
    classify,
    parse_probe_output,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import cache_read, cache_write

HELP_COLUMNS = 250


class FlagsError(Exception):
    pass


def resolve_package(python, module_name, env, timeout):
    """python_package_info's probe for the top-level package of module_name (cheap: no import)."""
    top = module_name.split(".")[0]
    run = run_argv([python, "-c", PROBE_SOURCE, top], timeout=timeout, env=env)
    if not run.ok:
        return None
    try:
        return classify(parse_probe_output(run.stdout), top)
    except (ProbeError, BrokenInstall):
        return None


def run_help(argv, env, timeout):
    run = run_argv(argv, timeout=timeout, env=env)
    if run.error:
        raise FlagsError("cannot run %s: %s" % (argv[0], run.error))
    if run.timed_out:
        raise FlagsError("%s did not finish within %ss (killed with its process group)" % (" ".join(argv), timeout))
    if run.rc != 0:
        raise FlagsError("%s exited with rc=%s: %s" % (" ".join(argv), run.rc, run.stderr_tail(5)))
    try:
        flags, info = cli_flags.help_flags(run.stdout)
    except argparse_help.HelpParseError as exc:
        raise FlagsError("output of %s is not argparse help (%s); first line: %r"
                         % (" ".join(argv), exc, (run.stdout.strip().splitlines() or [""])[0][:120])) from None
    return flags, info, hashlib.sha256(run.stdout.encode("utf-8")).hexdigest()


def discover(params, check_mode):
    argv = params["argv"]
    env = c_locale_env(params["environment"], columns=HELP_COLUMNS)
    python, module_name = cli_flags.python_module_form(argv)
    package = resolve_package(python, module_name, env, min(params["timeout"], 60)) if python else None
    source_dir = params["source_dir"] or ((package or {}).get("search_roots") or [None])[0]
    method = params["method"]
    if method == "source" and not source_dir:
        raise FlagsError("method=source needs the 'PYTHON -m MODULE' form of argv with the package installed, "
                         "or source_dir")

    result = {"package": package or {}, "raw_help_sha256": None, "cached": False, "method": None}
    watched = parser_source_files(source_dir) if source_dir else []
    if package and package.get("dist_info"):
        watched.append(os.path.join(package["dist_info"], "RECORD"))
    key = None
    if params["cache"]:
        key = cli_flags.cache_key(argv + [method], params["environment"], package, watched)
        hit, path = cache_read(params["cache"], key)
        result["cache_file"] = path
        if hit:
            hit.pop("format", None)
            hit.update(cached=True, package=package or {}, cache_file=path)
            return hit

    src = None
    if source_dir and method in ("auto", "source"):
        try:
            src_flags, files = cli_flags.source_flags(source_dir)
            src = (src_flags, files)
            result["source_files"] = files
        except SourceReadError as exc:
            if method == "source":
                raise FlagsError("cannot read the parser sources: %s" % exc) from None
            result["source_error"] = str(exc)

    if method == "source":
        flags = src[0]
        result["method"] = "source"
    else:
        try:
            flags, info, digest = run_help(argv, env, params["timeout"])
            result.update(method="help", raw_help_sha256=digest, prog=info["prog"])
            if src:
                result["source_check"] = cli_flags.compare(flags, src[0])
                flags = cli_flags.merge_hidden(flags, src[0])
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
        result["cache_file"] = cache_write(params["cache"], key, dict(result, package={}))
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            argv=dict(type="list", elements="str", required=True),
            method=dict(type="str", default="auto", choices=["auto", "help", "source"]),
            source_dir=dict(type="path"),
            timeout=dict(type="int", default=120),
            environment=dict(type="dict", default={}),
            filter=dict(type="str"),
            filter_type=dict(type="str", default="prefix", choices=["prefix", "regex"]),
            cache=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    started = time.monotonic()
    host = socket.gethostname()
    argv = module.params["argv"]
    if not argv:
        module.fail_json(msg="host %s: argv is empty; give the command as a list, e.g. "
                             "[/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]" % host)
    exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
    if not exe or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        module.fail_json(msg="host %s: command %s not found or not executable; give the full path of the "
                             "interpreter the service runs" % (host, argv[0]))
    if module.params["filter"] and module.params["filter_type"] == "regex":
        try:
            re.compile(module.params["filter"])
        except re.error as exc:
            module.fail_json(msg="host %s: filter %r is not a valid regex: %s" % (host, module.params["filter"], exc))
    if module.params["source_dir"] and not os.path.isdir(module.params["source_dir"]):
        module.fail_json(msg="host %s: source_dir %s is not a directory" % (host, module.params["source_dir"]))

    try:
        result = discover(module.params, module.check_mode)
    except FlagsError as exc:
        module.fail_json(msg="host %s: %s" % (host, exc), method=module.params["method"])
    except OSError as exc:
        module.fail_json(msg="host %s: cannot use the cache directory %s: %s" % (host, module.params["cache"], exc))

    if module.params["filter"]:
        prefix = module.params["filter"] if module.params["filter_type"] == "prefix" else None
        regex = module.params["filter"] if module.params["filter_type"] == "regex" else None
        result["flags"] = argparse_help.filter_flags(result["flags"], prefix=prefix, regex=regex)
    result["flag_count"] = len(result["flags"])
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
