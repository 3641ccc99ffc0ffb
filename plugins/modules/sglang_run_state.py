#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_run_state
short_description: A host's memory of a switch - the intent of an unfinished step, and the record of the last switch
version_added: "0.2.0"
description:
  - Before each step of a switch that leaves the host or a gateway in a state a later run must know about (out of
    rotation, our files written and the server restarting, a canary window, a rollback), the role writes what it is
    about to do into C(<dir>/<unit>.intent.json) with this module; once the switch is recorded, the intent is removed
    and the record of the switch written to C(<dir>/<unit>.last-rollout.json), in the same module run.
  - A run the controller never finished (the laptop slept, the job was cancelled) leaves the intent behind.
    M(gpufleet.sglang.sglang_info) reads it, and the next run of the role resumes the switch or undoes it instead of
    refusing (the operator's guide, "A run that was cut").
  - Every file is replaced in one step (a temporary file renamed over it), so a run killed at any moment leaves the
    previous content or the new one.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  dir:
    description: The state directory (the role's C(sglang_dflash_state_dir)).
    type: path
    required: true
  unit:
    description: The unit the files are about, for example C(sglang-qwen.service).
    type: str
    required: true
  intent:
    description:
      - Merged into the unit's intent; C(phase) is required, one of C(leaving_rotation), C(switching), C(restarting),
        C(canary), C(rolling_back). The time each phase began is kept beside it (C(<phase>_at), and C(<phase>_us) on
        the monotonic clock). A null value, or a skipped task's result, keeps what an earlier phase wrote.
        The file's mode is 0600.
    type: dict
  clear_intent:
    description: Remove the unit's intent (the switch it was about is finished).
    type: bool
    default: false
  record:
    description: The record of the switch, written as JSON (mode 0644).
    type: dict
  record_update:
    description: Keys merged into the record already on the host (nothing when there is none), for example a canary's
      verdict once judged.
    type: dict
  drop_snapshot:
    description:
      - Remove the unit's previous-state copy (C(<dir>/<unit>/), M(gpufleet.sglang.file_snapshot)'s) once the switch
        is recorded.
    type: bool
    default: false
requirements:
  - Python 3.8 or newer on the target, standard library only.
attributes:
  check_mode:
    support: full
    details:
      - Reports what would change and writes nothing.
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.file_snapshot
"""

EXAMPLES = r"""
- name: Say that this run takes the host out of rotation
  gpufleet.sglang.sglang_run_state:
    dir: /var/lib/gpufleet-sglang
    unit: sglang.service
    intent:
      phase: leaving_rotation
      gateway: {urls: ["http://gateway-1:30000"], worker_url: "http://10.0.0.7:30000"}

- name: The switch is done - keep its record and forget the intent
  gpufleet.sglang.sglang_run_state:
    dir: /var/lib/gpufleet-sglang
    unit: sglang.service
    record: "{{ record }}"
    clear_intent: true
"""

RETURN = r"""
previous:
  description: The unit's intent before this run of the module (null when there was none).
  returned: always
  type: dict
intent:
  description: The unit's intent after it (null when cleared or never written).
  returned: always
  type: dict
now:
  description: The host's clock (seconds since the epoch) when the module ran.
  returned: always
  type: float
monotonic_us:
  description:
    The host's monotonic clock in microseconds, the journal's (a mark for M(gpufleet.sglang.unit_journal_info)).
  returned: always
  type: int
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.run_state import RunStateError, update


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type="path", required=True),
            unit=dict(type="str", required=True),
            intent=dict(type="dict"),
            clear_intent=dict(type="bool", default=False),
            record=dict(type="dict"),
            drop_snapshot=dict(type="bool", default=False),
            record_update=dict(type="dict"),
        ),
        mutually_exclusive=[("intent", "clear_intent"), ("record", "record_update")],
        supports_check_mode=True,
    )
    p = module.params
    try:
        result = update(p["dir"], p["unit"], intent=p["intent"], clear_intent=p["clear_intent"], record=p["record"],
                        drop_snapshot=p["drop_snapshot"], dry_run=module.check_mode, record_update=p["record_update"])
    except (RunStateError, OSError) as exc:
        module.fail_json(msg="host %s, unit %s: %s" % (socket.gethostname(), p["unit"], exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
