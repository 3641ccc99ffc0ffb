#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: file_snapshot
short_description: Keep one exact previous-state copy of a few files, and put it back or drop it
version_added: "0.1.0"
description:
  - C(state=saved) records, for each of O(paths), whether it exists and, if so, its bytes, mode and owner, in
    O(dir) (mode 0700, copies 0600). A path that does not exist is recorded as absent.
  - C(state=restored) puts every path back exactly as recorded (removing the ones that did not exist), then
    removes the snapshot. C(state=absent) removes the snapshot (after a successful change).
  - Refuses to save over an existing snapshot, because one left by an interrupted run still holds the only copy
    of the state before it. The message says where it is.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  dir:
    description: Directory of the snapshot, for example C(/var/lib/gpufleet-sglang/sglang-qwen.service).
    type: path
    required: true
  paths:
    description: Files to record (with C(state=saved)).
    type: list
    elements: path
    default: []
  state:
    description: What to do.
    type: str
    choices: [saved, restored, absent]
    default: saved
requirements:
  - Python 3.8 or newer on the target, standard library only.
attributes:
  check_mode:
    support: full
    details:
      - Reports what would change and changes nothing.
  diff_mode:
    support: none
    details:
      - The files may hold secrets; no diff is shown.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.sglang_wait_ready
"""

EXAMPLES = r"""
- name: Keep the previous drop-in and environment file
  gpufleet.sglang.file_snapshot:
    dir: /var/lib/gpufleet-sglang/sglang-qwen.service
    paths:
      - /etc/systemd/system/sglang-qwen.service.d/90-gpufleet-sglang.conf
      - /etc/sglang/sglang-qwen.service.env

- name: Put them back after a failed switch
  gpufleet.sglang.file_snapshot:
    dir: /var/lib/gpufleet-sglang/sglang-qwen.service
    state: restored
"""

RETURN = r"""
files:
  description: For each recorded path, C(path) and C(existed).
  returned: always
  type: list
  elements: dict
restored:
  description: Paths written back or removed by C(state=restored).
  returned: always
  type: list
  elements: str
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.file_snapshot import Snapshot, SnapshotError


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type="path", required=True),
            paths=dict(type="list", elements="path", default=[]),
            state=dict(type="str", default="saved", choices=["saved", "restored", "absent"]),
        ),
        supports_check_mode=True,
    )
    snapshot = Snapshot(module.params["dir"])
    try:
        if module.params["state"] == "saved":
            files = snapshot.save(module.params["paths"], dry_run=module.check_mode)
            module.exit_json(changed=True, files=files, restored=[])
        if module.params["state"] == "restored":
            files, restored = snapshot.restore(dry_run=module.check_mode)
            module.exit_json(changed=bool(files), files=files, restored=restored)
        module.exit_json(changed=snapshot.remove(dry_run=module.check_mode), files=[], restored=[])
    except SnapshotError as exc:
        module.fail_json(msg="host %s: %s" % (socket.gethostname(), exc))


if __name__ == "__main__":
    main()
