#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The documentation of an action plugin (plugins/action/sglang_dflash_record.py): it decides on the controller
# (plugins/plugin_utils/_outcome.py) and writes on the host with gpufleet.sglang.sglang_run_state.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_dflash_record
short_description: What one service's switch did - its record on the host, its result, or the message it fails with
version_added: "0.2.0"
description:
  - The end of one service's switch in the role gpufleet.sglang.sglang_dflash. From the service's plan
    (M(gpufleet.sglang.sglang_dflash_plan)'s) and what the steps registered in its turn, decides the service's
    result (added to the host's C(sglang_dflash_result) fact) and the record the host keeps of the switch, which
    M(gpufleet.sglang.sglang_info) reads back for the fleet report.
  - With O(write), the record is written on the host, the service's intent cleared and its previous-state copy dropped,
    in one module run (M(gpufleet.sglang.sglang_run_state)).
  - C(outcome=rolled back) fails the task with what failed, what the rollback put back and where the host is in the
    traffic; C(outcome=refused) fails it with every reason the host is refused before any change, when there is one.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  outcome:
    description: What happened to the service.
    type: str
    required: true
    choices: [switched, reverted, restarted, unchanged, rolled back, refused]
  plan:
    description: The service's plan.
    type: dict
  refusals:
    description: With C(outcome=refused), the plan's refusals.
    type: list
    elements: str
    default: []
  observed:
    description:
      - What the steps registered - C(ready), C(drain), C(leaving), C(speed_before), C(speed_after), C(canary); for a
        rollback C(steps), C(failure), C(old_ready), C(journal), C(rejoined), C(rolling_back); for a refusal
        C(gateway_checks).
    type: dict
    default: {}
  write:
    description: Write the record on the host.
    type: bool
    default: false
  clear_intent:
    description: Clear the service's intent on the host (the run it was about is finished).
    type: bool
    default: false
  result:
    description: The host's C(sglang_dflash_result) so far.
    type: dict
    default: {}
requirements:
  - Python 3.8 or newer on the target, standard library only (the modules it runs there).
attributes:
  action:
    description: Decides on the controller; writes on the host only with O(write) or O(clear_intent).
    support: full
  check_mode:
    support: full
    details:
      - Writes nothing on the host.
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.sglang_dflash_plan
  - module: gpufleet.sglang.sglang_run_state
"""

EXAMPLES = r"""
- name: Record what this service's switch did
  gpufleet.sglang.sglang_dflash_record:
    plan: "{{ service_plan }}"
    outcome: switched
    write: true
    result: "{{ sglang_dflash_result | default({}) }}"
    observed:
      ready: "{{ ready }}"
      speed_after: "{{ speed_after }}"
"""

RETURN = r"""
service:
  description: The service's result (unit, mode, release, changes, health, speed, traffic), as the summary shows it.
  returned: unless refused or rolled back
  type: dict
record:
  description: The record of the switch, as the host keeps it (null when none is written).
  returned: unless refused
  type: dict
ansible_facts:
  description: The host's C(sglang_dflash_result) with this service's result added.
  returned: unless refused or rolled back
  type: dict
"""
