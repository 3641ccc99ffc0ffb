#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: unit_journal_info
short_description: A unit's journal lines since a mark taken before its start, secrets redacted
version_added: "0.1.0"
description:
  - Returns the last O(lines) journal messages of a systemd unit logged at or after O(since_monotonic_us), from the
    first start of the unit after it on. After a restart these are the lines of the new server only (every attempt
    of a crash loop), not the previous server's that a plain C(journalctl --lines N) would begin with.
  - Take the mark with this module right before the restart (its RV(now_monotonic_us), the host's
    C(CLOCK_MONOTONIC), the clock journald stamps entries with), then read after it.
  - Without O(since_monotonic_us), the lines since the unit last left the inactive state (systemd's
    C(InactiveExitTimestampMonotonic), which an automatic restart moves, so the latest attempt only). A unit that
    never ran gets its last O(lines) journal lines.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  unit:
    description: The unit, for example C(sglang-qwen.service) (C(.service) is added to a bare name).
    type: str
    required: true
  lines:
    description: How many of the most recent messages since the start to return.
    type: int
    default: 40
  redact:
    description: Values (secrets) replaced by C(********) in the returned lines.
    type: list
    elements: str
    default: []
  since_monotonic_us:
    description: The mark (a RV(now_monotonic_us) of this module on the same host, same boot) to read after.
    type: int
requirements:
  - Python 3.8 or newer on the target, standard library only.
  - systemd (C(systemctl), C(journalctl)) on the target.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
notes:
  - This module was named C(gpufleet.sglang.unit_journal) before; that name still works and runs this module.
seealso:
  - module: gpufleet.sglang.sglang_wait_ready
"""

EXAMPLES = r"""
- name: Mark the journal before the restart
  gpufleet.sglang.unit_journal_info:
    unit: sglang-qwen.service
    lines: 0
  register: journal_mark

- name: Restart
  ansible.builtin.systemd_service:
    name: sglang-qwen.service
    state: restarted

- name: What the restarted server said (nothing from before the restart)
  gpufleet.sglang.unit_journal_info:
    unit: sglang-qwen.service
    lines: 40
    since_monotonic_us: "{{ journal_mark.now_monotonic_us }}"
    redact: ["{{ hf_token }}"]
  register: journal
"""

RETURN = r"""
lines:
  description: The messages, oldest first, secrets redacted.
  returned: always
  type: list
  elements: str
since_monotonic_us:
  description: Where the lines are cut (CLOCK_MONOTONIC microseconds); 0 when the unit never ran and no mark was given.
  returned: always
  type: int
now_monotonic_us:
  description: This host's CLOCK_MONOTONIC now, in microseconds; the mark for a later read.
  returned: always
  type: int
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import run_systemctl, unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.unit_journal import (
    journal_since_start,
    now_monotonic_us,
    redact,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type="str", required=True),
            lines=dict(type="int", default=40),
            redact=dict(type="list", elements="str", default=[], no_log=True),
            since_monotonic_us=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    if module.params["lines"] < 0:
        module.fail_json(msg="host %s: lines must be at least 0, not %d"
                             % (socket.gethostname(), module.params["lines"]))
    now_us = now_monotonic_us()
    lines, since_us = journal_since_start(unit_name(module.params["unit"]), module.params["lines"], run_systemctl,
                                          since_us=module.params["since_monotonic_us"])
    module.exit_json(changed=False, lines=redact(lines, module.params["redact"]), since_monotonic_us=since_us,
                     now_monotonic_us=now_us)


if __name__ == "__main__":
    main()
