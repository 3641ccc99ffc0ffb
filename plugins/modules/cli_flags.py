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
    description: Seconds before the help command and its children are killed; more than 0.
    type: int
    default: 120
  max_output_bytes:
    description:
      - Most bytes the help command may print (stdout and stderr together). Past it, reading stops, the
        command and its process group are killed and the module fails (or, with O(method=auto), falls back
        to the source and says why). SGLang's help is about 150 kB.
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

import re
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.argparse_help import filter_flags
from ansible_collections.gpufleet.sglang.plugins.module_utils.cli_flags import (
    DEFAULT_MAX_OUTPUT_BYTES,
    FlagsError,
    discover,
)


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
        module.fail_json(msg="host %s: %s" % (host, exc), method=p["method"])
    if p["filter"]:
        prefix = p["filter"] if p["filter_type"] == "prefix" else None
        regex = p["filter"] if p["filter_type"] == "regex" else None
        result["flags"] = filter_flags(result["flags"], prefix=prefix, regex=regex)
        result["flag_count"] = len(result["flags"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
