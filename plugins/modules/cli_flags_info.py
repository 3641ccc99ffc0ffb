#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cli_flags_info
short_description: Read the real command-line flags of an argparse program (SGLang in particular)
version_added: "0.1.0"
description:
  - Reads the flags a command accepts in two ways. From the package's own parser sources with C(ast),
    importing nothing, for C(PYTHON -m PACKAGE.module) commands and for console scripts such as
    C(/venv/bin/sglang serve) (the interpreter is the one on the script's C(#!) line); this also sees
    hidden deprecated aliases. Or by running C(--help) (argv list, no shell, C(LC_ALL=C), wide
    C(COLUMNS), a hard timeout that kills the whole process group) and parsing the argparse help into
    structured flags; only stdout is parsed, and the Python warnings on stderr are returned in
    RV(warnings).
  - "What that costs for SGLang 0.5.23, which imports torch for C(--help): on an NVIDIA H200 host with
    CUDA PyTorch 2.11 and Python 3.12, C(python -m sglang.launch_server --help) took 21.3 s cold and
    18.5 s and 18.8 s warm, and reading the source took 0.07 s (about 300 times faster); both gave the
    same 530 visible flags, the source 2 hidden aliases more. On a CPU-only machine C(--help) takes
    about 2 s and the source is about 21 times faster."
  - Hence O(method=auto) (the default) reads the source and runs C(--help) only where the source cannot
    be read (argv of neither form and no O(source_dir), the package not importable, unreadable parser
    sources), and then says why in RV(fallback_reason). That keeps a fleet run at a fraction of a second
    per host instead of about 20 s. Use O(method=cross_check) where you want both compared.
  - For SGLang it returns RV(capabilities), the map from deployment intent (algorithm, drafter path,
    block size, draft window) to the flag names this release really has.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  argv:
    description:
      - The command that prints the help, as a list, for example
        C([/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]) or the console script form
        C([/opt/ml-env/bin/sglang, serve, --help]).
    type: list
    elements: str
    required: true
  method:
    description:
      - C(auto) reads the package's parser sources and runs C(--help) only where they cannot be read
        (RV(fallback_reason) says why).
      - C(cross_check) runs C(--help) and reads the source, compares them (RV(source_check)), adds the hidden
        aliases only the source knows, and uses the source when C(--help) fails (missing dependencies
        on the host; RV(fallback_reason) says why). On a GPU host this costs C(--help)'s 20 s.
      - C(help) only parses the command's output; C(source) only reads the parser sources (needs the
        C(PYTHON -m MODULE) or console script form of O(argv) with the package installed, or
        O(source_dir)). Both fail rather than fall back.
    type: str
    choices: [auto, cross_check, help, source]
    default: auto
  source_dir:
    description:
      - Package directory to read in source mode, for example the first of the C(search_roots) that
        M(gpufleet.sglang.python_package_info) returns.
      - Defaults to the directory the interpreter in O(argv) imports the package from.
    type: path
  timeout:
    description: Seconds before the help command and its children are killed; more than 0.
    type: int
    default: 120
  max_output_bytes:
    description:
      - Most bytes the help command may print (stdout and stderr together). Past it, reading stops, the
        command and its process group are killed and the module fails (or, with O(method=cross_check), falls
        back to the source and says why). SGLang's help is about 150 kB.
      - 0 means no limit.
    type: int
    default: 4194304
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
      - Directory on the target for cached results, keyed by O(argv), O(method), O(environment), the
        interpreter (and console script) files, the package version, its dist-info C(RECORD) and the parser
        source files' mtimes and sizes, so a reinstall of the same version is a miss. A hit skips
        C(--help) and the source entirely.
      - Nothing is written in check mode.
    type: path
requirements:
  - Python 3.8 or newer on the target, standard library only.
attributes:
  check_mode:
    details:
      - Runs the same in check mode, but does not write the O(cache).
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
notes:
  - Choice lists that SGLang computes at run time are only seen through C(--help).
  - This module was named C(gpufleet.sglang.cli_flags) before; that name still works and runs this module.
seealso:
  - module: gpufleet.sglang.python_package_info
"""

EXAMPLES = r"""
- name: Flags of the SGLang release the service runs
  gpufleet.sglang.cli_flags_info:
    argv: [/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]
    cache: /var/cache/gpufleet-sglang
  register: sglang_flags

- name: Fail early when this release cannot do DFlash
  ansible.builtin.assert:
    that: sglang_flags.capabilities.supports_dflash
    fail_msg: "sglang {{ sglang_flags.package.version }} has no DFLASH"

- name: Only the speculative flags, from source (no torch import)
  gpufleet.sglang.cli_flags_info:
    argv: [/opt/ml-env/bin/python3, -m, sglang.launch_server, --help]
    method: source
    filter: --speculative-

- name: The console script form, --help compared with the source (about 20 s on a GPU host)
  gpufleet.sglang.cli_flags_info:
    argv: [/opt/ml-env/bin/sglang, serve, --help]
    method: cross_check
  register: sglang_checked

- name: Stop when --help and the source disagree
  ansible.builtin.assert:
    that: sglang_checked.source_check is not defined or sglang_checked.source_check.agrees
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
    - name: --speculative-dflash-block-size
      aliases: []
      takes_value: true
      metavar: SPECULATIVE_DFLASH_BLOCK_SIZE
      choices: null
      hidden: false
flag_count:
  description: Number of flags returned (after O(filter)).
  returned: always
  type: int
method:
  description: What produced the flags, C(help) or C(source) (also for a cached result).
  returned: always
  type: str
fallback_reason:
  description:
    - With O(method=auto), why the source could not be read and C(--help) was run instead.
    - With O(method=cross_check), why C(--help) failed and the source was used alone.
  returned: when the method's first choice could not be used
  type: str
  sample: "the source was not read: argv is neither 'PYTHON -m MODULE ...' nor a Python console script
    (a '#!' line naming python), and source_dir is not set"
warnings:
  description:
    - "The Python warnings (C(UserWarning), C(DeprecationWarning), C(FutureWarning), ...) that C(--help)
      printed on stderr, as C(CATEGORY: message) without the file and line, deduplicated, at most 20 of
      at most 500 characters each; kept in the cache entry, so a cache hit shows them again."
    - They are Ansible's own warnings of the task, shown with it in the play's output.
  returned: when C(--help) printed any
  type: list
  elements: str
  sample:
    - "UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is the
      recommended entrypoint."
command:
  description: How O(argv) starts a Python program, which decides the interpreter and package probed.
  returned: always
  type: dict
  contains:
    form:
      description: C(python -m), C(console script) (a script whose C(#!) line names Python), or null.
      type: str
    python:
      description: The interpreter (O(argv)'s first word, or the console script's C(#!) interpreter).
      type: str
    module:
      description: The module run with C(-m), or the one the console script imports its entry point from.
      type: str
  sample:
    form: console script
    python: /opt/ml-env/bin/python3
    module: sglang.cli.main
source_check:
  description: With O(method=cross_check), whether C(--help) and the source list the same visible option strings.
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
source_error:
  description: With O(method=cross_check), why the source could not be read (only C(--help) was used).
  returned: when O(method=cross_check) could not read the source
  type: str
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
  description:
    - Version, install kind and directory of the package the interpreter imports (C(-m) and console script
      forms; empty otherwise).
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
    speculative_algorithms: [DFLASH, DSPARK, EAGLE, EAGLE3, NEXTN, NGRAM, STANDALONE, UNO]
    supports_dflash: true
    supports_ddtree: false
    flags:
      algorithm: --speculative-algorithm
      block_size: --speculative-dflash-block-size
      draft_window_size: --speculative-draft-window-size
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

import re
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.cli_flags import (
    DEFAULT_MAX_OUTPUT_BYTES,
    FlagsError,
    discover,
    filter_result,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            argv=dict(type="list", elements="str", required=True),
            method=dict(type="str", default="auto", choices=["auto", "cross_check", "help", "source"]),
            source_dir=dict(type="path"),
            timeout=dict(type="int", default=120),
            environment=dict(type="dict", default={}),
            filter=dict(type="str"),
            filter_type=dict(type="str", default="prefix", choices=["prefix", "regex"]),
            cache=dict(type="path"),
            max_output_bytes=dict(type="int", default=DEFAULT_MAX_OUTPUT_BYTES),
        ),
        supports_check_mode=True,
    )
    host = socket.gethostname()
    p = module.params
    if p["filter"] and p["filter_type"] == "regex":
        try:
            re.compile(p["filter"])
        except re.error as exc:
            module.fail_json(msg="host %s: filter %r is not a valid regex: %s" % (host, p["filter"], exc))
    try:
        result = discover(p, module.check_mode)
    except FlagsError as exc:
        for warning in exc.warnings:
            module.warn(warning)
        module.fail_json(msg="host %s: %s" % (host, exc), method=p["method"])
    # --help's Python warnings: shown with the task and returned as its `warnings` (Ansible's own list).
    for warning in result.pop("warnings"):
        module.warn(warning)
    if p["filter"]:
        filter_result(result, p["filter"], p["filter_type"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
