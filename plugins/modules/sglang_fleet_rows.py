#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The documentation of an action plugin (plugins/action/sglang_fleet_rows.py): it runs gpufleet.sglang.sglang_info
# on the host and judges the facts on the controller.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_fleet_rows
short_description: The fleet report's rows of a host, judged as a deployment would judge it
version_added: "0.2.0"
description:
  - Runs M(gpufleet.sglang.sglang_info) on the host with the options below, then judges each selected service's facts
    on the controller with the deployment's own plan (the role gpufleet.sglang.sglang_dflash's), so that the report
    refuses exactly what a deployment would.
  - Returns only RV(fleet_rows) - a host's facts are about 230 KB, most of it the release's flags, and are never kept.
  - A failure of M(gpufleet.sglang.sglang_info) is one C(blocked) row with the module's message, not a failed task.
  - The role's C(fleet_row) tasks (C(playbooks/gather_facts.yml)) run it.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  plan_settings:
    description:
      - The role gpufleet.sglang.sglang_dflash's settings, its variables without the C(sglang_dflash_) prefix; one
        left out takes the role's default. Read on the controller, never sent to the host.
      - Unset, the C(sglang_dflash_*) variables this task sees (inventory, play or extra vars; the role's argument
        spec lists them), each templated on its own.
    type: dict
requirements:
  - As for M(gpufleet.sglang.sglang_info) - Python 3.8 or newer on the target, standard library only, and systemd.
attributes:
  action:
    description: Runs on the controller around M(gpufleet.sglang.sglang_info) (not asynchronously - the rows need
      the facts at once).
    support: full
  check_mode:
    details:
      - Runs the same in check mode, but M(gpufleet.sglang.sglang_info) writes no O(cache).
extends_documentation_fragment:
  - gpufleet.sglang.sglang_info
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
seealso:
  - module: gpufleet.sglang.sglang_info
  - module: gpufleet.sglang.sglang_fleet_report
"""

EXAMPLES = r"""
- name: The report's rows of every SGLang service of the host
  gpufleet.sglang.sglang_fleet_rows:
    services:
      - name: "sglang@*"
    managed_env_dir: /etc/sglang
    rollout_record_dir: /var/lib/gpufleet-sglang
  register: rows

- name: The same rows judged for DDTree with a drafter of the host's (over the sglang_dflash_* variables)
  gpufleet.sglang.sglang_fleet_rows:
    services:
      - name: "sglang@*"
    plan_settings:
      algorithm: DDTREE
      draft_model_path: /models/qwen3-8b-dflash
  register: rows
"""

RETURN = r"""
fleet_rows:
  description:
    - One row of the fleet report for each selected service (C(host), C(unit), C(port), C(gpus) (of the running
      process), C(environment_drift) and C(environment_note) (the unit's files edited since the start, see
      RV(gpufleet.sglang.sglang_info#module:sglang_units)), C(gpu_map), C(status) C(ready) or C(blocked), every reason,
      the flag names and changes a deployment would make, its gateway and switch state, and the facts without the
      release's flag list).
    - M(gpufleet.sglang.sglang_dflash_plan) with O(gpufleet.sglang.sglang_dflash_plan#module:mode=report) returns
      the same rows.
  returned: always
  type: list
  elements: dict
"""
