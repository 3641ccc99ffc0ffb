#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The documentation of an action plugin (plugins/action/sglang_drafter_push.py).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_drafter_push
short_description: One drafter directory of the controller onto a host, verified, as one task
version_added: "0.2.0"
description:
  - Describes the directory O(src) on the controller (the size and sha256 of every file, computed once however many
    hosts ask, while no file changes), checks the store and the disk on the host before a byte is written
    (M(gpufleet.sglang.sglang_drafter) C(state=staged)), copies the files over the task's own connection into the
    revision's temporary directory (M(ansible.builtin.copy)'s action, which sends only the files that differ, so a
    rerun resumes), then checks every file against the manifest and renames the directory into place.
  - A copy that is in the store and verified already transfers nothing (C(changed=false)).
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  src:
    description: The drafter directory on the controller.
    type: path
    required: true
  name:
    description: The name of the copy in the store; unset - the directory's name.
    type: str
  services:
    description: The services that use it (kept in the result).
    type: list
    elements: str
    default: []
  store_dir:
    description: The store on the host.
    type: path
    default: /var/lib/gpufleet-sglang/drafters
  min_free_percent:
    description: Refuse before writing when the copy would leave less free space than this share of the disk.
    type: float
    default: 10
  min_free_bytes:
    description: Refuse before writing when the copy would leave fewer free bytes than this.
    type: int
    default: 0
requirements:
  - Python 3.8 or newer on the target, standard library only (the modules it runs there).
attributes:
  action:
    description: Runs on the controller; the store's checks run on the host.
    support: full
  check_mode:
    support: full
    details:
      - Checks the store and the disk and copies nothing.
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.sglang_drafter
"""

EXAMPLES = r"""
- name: Push our own checkpoint to the host
  gpufleet.sglang.sglang_drafter_push:
    src: /srv/drafters/qwen-dflash-step4000
    services: ["*"]
  throttle: 8
"""

RETURN = r"""
path:
  description: The verified copy on the host.
  returned: always
  type: str
verified:
  description: Whether every file of the copy matches the manifest.
  returned: always
  type: bool
manifest:
  description: The manifest of the controller's directory (relative path to size and sha256).
  returned: always
  type: dict
bytes_transferred:
  description: The bytes this run sent (0 when the copy was there already).
  returned: always
  type: int
"""
