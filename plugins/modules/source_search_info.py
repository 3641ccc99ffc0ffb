#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: source_search_info
short_description: Search source trees on the target for terms, fast and without false hits
version_added: "0.1.0"
description:
  - Searches O(paths) (usually the C(search_roots) from M(gpufleet.sglang.python_package_info)) for literal
    O(terms) and/or regular expression O(patterns), and reports hits grouped by file, ranked by relevance.
  - Uses ripgrep (C(rg)) when the target has it, otherwise a stdlib-only Python engine that streams the
    tree. ripgrep's plain output is read (the path ends with a NUL byte, then the line number and the
    line), which is cheaper for both sides than C(rg --json). Both return identical hits, because ripgrep
    only proposes candidate lines and the same matcher judges every hit.
  - O(match=identifier) avoids the classic false hit of C(DFLASH) inside C(-DFLASHINFER_ENABLE_F16) while still
    finding C(is_dflash_family) and C(DFlashWorker).
  - Terms that match nothing are listed in RV(missing_terms), so "this release has no DFlash" is a plain fact.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  paths:
    description: Directories or files to search.
    type: list
    elements: path
    required: true
  terms:
    description: Literal strings to find.
    type: list
    elements: str
    default: []
  patterns:
    description: Python regular expressions to find (the O(match) boundary rule does not apply to them).
    type: list
    elements: str
    default: []
  match:
    description:
      - C(substring) finds the term anywhere.
      - C(word) requires no letter, digit or underscore right before and after it.
      - C(identifier) requires the term to be a whole identifier or whole parts of one; parts are separated by
        C(_) and by camelCase boundaries (a lower-case letter or digit followed by an upper-case letter). So
        C(DFLASH) matches C(DFLASH), C(is_dflash_family), C(DFlashWorker), but not C(DFLASHINFER).
    type: str
    choices: [substring, word, identifier]
    default: identifier
  case_sensitive:
    description: Whether case matters.
    type: bool
    default: false
  include:
    description:
      - Globs of files to search. A glob with C(/) matches the path relative to the searched directory,
        otherwise the file name.
    type: list
    elements: str
    default: ['*.py']
  exclude:
    description: Globs of files and directories to skip (same rule as O(include)), for example C(tests).
    type: list
    elements: str
    default: ['__pycache__', '.git']
  context:
    description: Lines of context before and after each hit.
    type: int
    default: 0
  definitions:
    description: Also report classes and functions (from C(ast)) whose names match the terms, in matching C(.py) files.
    type: bool
    default: false
  max_files:
    description: Report at most this many files (the best ranked); 0 means no limit.
    type: int
    default: 200
  max_hits_per_file:
    description: Report at most this many hits per file; RV(files[].hit_count) still counts all. 0 means no limit.
    type: int
    default: 50
  max_total_hits:
    description: Report at most this many hits in all; RV(total_hits) still counts all. 0 means no limit.
    type: int
    default: 2000
  max_filesize:
    description: Skip files larger than this many bytes; 0 means no limit.
    type: int
    default: 10485760
  backend:
    description: C(auto) uses ripgrep when C(rg) is on the target's PATH (or O(rg_path)), else Python.
    type: str
    choices: [auto, ripgrep, python]
    default: auto
  rg_path:
    description: Path of the ripgrep binary, when it is not on PATH.
    type: path
  cache:
    description:
      - Directory on the target for cached results. The key covers the options and the path, size and
        mtime of every file that would be searched, so any change to the tree is a miss; a hit costs
        one walk with stat calls instead of reading the files. Nothing is written in check mode.
    type: path
requirements:
  - Python 3.8 or newer on the target, standard library only.
  - Optionally ripgrep (C(rg)) on the target, for speed; the hits are the same without it.
attributes:
  check_mode:
    details:
      - The module only reads the searched tree; in check mode it also writes no O(cache).
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
notes:
  - Binary files (with a NUL byte) are skipped; undecodable bytes are replaced; symlinked directories are
    followed but every real directory is read once; unreadable files and directories are counted and listed.
  - This module was named C(gpufleet.sglang.source_search) before; that name still works and runs this module.
seealso:
  - module: gpufleet.sglang.python_package_info
"""

EXAMPLES = r"""
- name: Where does this SGLang implement DFlash / DDTree?
  gpufleet.sglang.source_search_info:
    paths: "{{ sglang_pkg.search_roots }}"
    terms: [DFLASH, DDTREE]
    definitions: true
    exclude: [tests, __pycache__]
  register: dflash_code

- name: A plain fact, no DFlash in this release
  ansible.builtin.debug:
    msg: "DFLASH missing on {{ inventory_hostname }}"
  when: "'DFLASH' in dflash_code.missing_terms"
"""

RETURN = r"""
files:
  description: Files with hits, ranked (files defining a matching class or function first, then by hit count).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: File path.
      type: str
    hit_count:
      description: Number of hits in the file (before O(max_hits_per_file)).
      type: int
    hits:
      description:
        - Hits with C(line), C(column) (1-based, in characters), C(term) and C(text).
        - With O(context), also C(before) and C(after) (lists of lines).
      type: list
      elements: dict
    definitions:
      description: Matching class and function definitions in the file.
      type: list
      elements: dict
definitions:
  description: All matching definitions, with C(path), C(line), C(kind) (C(class) or C(function)) and C(name).
  returned: always
  type: list
  elements: dict
  sample:
    - path: /opt/ml-env/lib/python3.11/site-packages/sglang/srt/speculative/dflash_worker_v2.py
      line: 60
      kind: class
      name: DFlashWorkerV2
total_hits:
  description: Hits in all files, before the reporting limits.
  returned: always
  type: int
term_hits:
  description: Hits per term or pattern.
  returned: always
  type: dict
missing_terms:
  description: Terms and patterns that matched nothing.
  returned: always
  type: list
  elements: str
files_with_hits:
  description: Files with at least one hit, before O(max_files).
  returned: always
  type: int
files_scanned:
  description: Files read.
  returned: always
  type: int
bytes_scanned:
  description: Bytes read.
  returned: always
  type: int
binary_skipped:
  description: Files skipped as binary.
  returned: always
  type: int
large_skipped:
  description: Files skipped for O(max_filesize) (both backends count them).
  returned: always
  type: int
loops_skipped:
  description:
    - Directories not entered again because their real path was already searched (symlink loops,
      symlinks to a directory searched under another path, overlapping O(paths)).
  returned: always
  type: int
unreadable:
  description:
    - Up to 50 unreadable files or directories (the first by path), each with C(path) and C(error)
      (such as C(Permission denied) or C(dangling symlink)); both backends list the same ones.
  returned: always
  type: list
  elements: dict
unreadable_count:
  description: Number of unreadable files or directories.
  returned: always
  type: int
truncated:
  description: Whether a reporting limit cut the result.
  returned: always
  type: bool
truncated_reason:
  description: Which limits cut the result (C(max_files), C(max_hits_per_file), C(max_total_hits)).
  returned: always
  type: list
  elements: str
backend:
  description: The engine that ran, C(ripgrep) or C(python).
  returned: always
  type: str
backend_note:
  description: Why O(backend=auto) did not use ripgrep although it is installed.
  returned: when it fell back
  type: str
cached:
  description: Whether the result came from O(cache).
  returned: always
  type: bool
elapsed_s:
  description: Seconds the search took.
  returned: always
  type: float
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import SearchError
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.run import run_search


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="path", required=True),
            terms=dict(type="list", elements="str", default=[]),
            patterns=dict(type="list", elements="str", default=[]),
            match=dict(type="str", default="identifier", choices=["substring", "word", "identifier"]),
            case_sensitive=dict(type="bool", default=False),
            include=dict(type="list", elements="str", default=["*.py"]),
            exclude=dict(type="list", elements="str", default=["__pycache__", ".git"]),
            context=dict(type="int", default=0),
            definitions=dict(type="bool", default=False),
            max_files=dict(type="int", default=200),
            max_hits_per_file=dict(type="int", default=50),
            max_total_hits=dict(type="int", default=2000),
            max_filesize=dict(type="int", default=10 * 1024 * 1024),
            backend=dict(type="str", default="auto", choices=["auto", "ripgrep", "python"]),
            rg_path=dict(type="path"),
            cache=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    try:
        result = run_search(module.params, module.check_mode)
    except SearchError as exc:
        module.fail_json(msg="host %s: %s" % (socket.gethostname(), exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
