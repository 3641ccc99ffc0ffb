#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The documentation of an action plugin (plugins/action/sglang_dflash_plan.py): it reads the host with
# gpufleet.sglang.sglang_info and decides on the controller (plugins/plugin_utils/_host_plan.py).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_dflash_plan
short_description: Decide a host's switch to DFlash (or its revert) - every service's plan and the steps that apply it
version_added: "0.2.0"
description:
  - The decision of the role gpufleet.sglang.sglang_dflash for one host, made on the controller. Reads the host once
    (M(gpufleet.sglang.sglang_info), with the options the settings imply), then decides for every selected service
    its plan (what to write, or every reason to refuse it), the steps that apply it (C(steps) in each of
    RV(services), each a key the role's tasks run on), the lines that show it and the gateway checks to make before
    any change.
  - The host's facts (about 230 KB, most of it the release's flags) are never kept as a host variable.
  - O(mode=survey) decides the same without keeping the plans, and keeps what the rollout needs of the host in its
    C(sglang_dflash_result) fact (whether it has anything to do, what it is, where its metrics are read).
  - O(mode=report) returns the fleet report's rows of the host instead (M(gpufleet.sglang.sglang_fleet_rows)'s).
  - O(mode=verify) is the day-two check (C(playbooks/verify_dflash.yml)) - each switched service's evidence read on the
    host over O(verify_window) seconds (M(gpufleet.sglang.sglang_speculation_info), one module run for all of them),
    judged on the controller against the figures its record kept at the switch (engaged, degraded, off or unknown),
    kept as the C(sglang_dflash_verify) fact. With O(mode=report) and O(verify_window), each row of a switched service
    gets its verdict too.
  - O(mode=drafters) lists the host's drafter sources, or, given their fetch and push O(results), what each gave
    (kept as the C(sglang_dflash_drafters) fact).
  - O(mode=rollback) decides the rollback of a failed switch from how far the host's intent says it got.
  - A run that was cut (the host's intent, M(gpufleet.sglang.sglang_run_state)) is resumed or undone, never refused.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  settings:
    description:
      - The role's settings, its variables without the C(sglang_dflash_) prefix. A setting left out takes the role's
        default. Read on the controller; never sent to the host.
      - Unset (the role's tasks), the C(sglang_dflash_*) variables this task sees, each templated on its own - every
        variable of the role's argument spec but the secrets.
    type: dict
  mode:
    description: What to decide (see the description).
    type: str
    choices: [deploy, survey, report, verify, drafters, rollback]
    default: deploy
  verify_window:
    description:
      - Seconds of each switched service's traffic that O(mode=verify) (default, the settings' C(verify_window)) or
        O(mode=report) (default, none) reads; 0 with O(mode=report) reads nothing.
    type: float
  state:
    description:
      - Over the settings' C(state) - C(absent) (a revert), C(restarted) (a switched service restarted as it is) or
        C(present), as a playbook or task of the collection asks it (the role passes its private
        C(sglang_dflash__state), which no extra var of the operator's can override).
    type: str
    choices: [present, absent, restarted]
  units:
    description:
      - Plan only these units of the selected services; an empty list plans none (the units a day-two action is
        for). Unset, the settings' C(units) (empty - every selected service).
    type: list
    elements: str
  previous:
    description:
      - With O(mode=verify), the first verification of this run (C(sglang_dflash_verify)), once its revert or restart
        ran - each service it acted on says what was done.
    type: dict
  drafters:
    description: The drafters this run fetched (C(sglang_dflash_drafters)); unset - where their copies are in the store.
    type: list
    elements: dict
  results:
    description: With O(mode=drafters), the results of the fetch and push tasks.
    type: list
    elements: dict
  plan:
    description: With O(mode=rollback), the failed service's plan (an entry of RV(services)).
    type: dict
  intent:
    description: With O(mode=rollback), the service's intent as the rollback found it.
    type: dict
  failure:
    description: With O(mode=rollback), the failed task's result.
    type: dict
requirements:
  - As for M(gpufleet.sglang.sglang_info) - Python 3.8 or newer on the target, standard library only, and systemd.
attributes:
  action:
    description: Runs on the controller around M(gpufleet.sglang.sglang_info).
    support: full
  check_mode:
    support: full
    details:
      - In check mode only the file writes are planned (they show their diff); no other step that changes the host.
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.sglang_info
  - module: gpufleet.sglang.sglang_dflash_record
  - module: gpufleet.sglang.sglang_run_state
"""

EXAMPLES = r"""
- name: Decide the switch of this host's SGLang services
  gpufleet.sglang.sglang_dflash_plan:
    settings:
      service_name: sglang-qwen
      draft_model_path: /models/Qwen3.6-27B-DFlash
      block_size: 16
      stop_units: [train-qwen.service]
  register: decided
  no_log: true  # a plan holds the environment file's content

- name: Show what would change
  ansible.builtin.debug:
    msg: "{{ decided.lines }}"

- name: Is speculation engaged on this host's switched services now?
  gpufleet.sglang.sglang_dflash_plan:
    mode: verify
    settings: {service_name: sglang-qwen, verify_window: 10}
  register: verified

- name: The fleet report's rows of this host
  gpufleet.sglang.sglang_dflash_plan:
    mode: report
    settings: {service_name: sglang, draft_model_path: /models/Qwen3.6-27B-DFlash}
  register: report
"""

RETURN = r"""
services:
  description:
    - One plan per selected service (O(mode=deploy)) - C(unit), C(mode) (switch, install, revert or restart),
      C(errors), C(needs_change), C(files), C(exec_start), C(changes), C(switch_state), C(interrupted) (the cut run
      it resumes, with its C(line)), C(outcome) (switched, reverted, restarted or unchanged), C(steps) (each step's
      key; a falsy value - the step does not run), C(lines), C(facts) (without the release's flag list) and what the
      steps need.
    - With O(mode=verify), each switched service's verdict - C(unit), C(state) (engaged, degraded, off, unknown),
      C(reason), C(source) (traffic or probe), C(requests), C(verify_steps), C(accept_length),
      C(accept_length_gauge), C(accept_length_at_switch), C(at_switch_from), C(time), C(window_s).
  returned: O(mode=deploy) and O(mode=verify)
  type: list
  elements: dict
refusals:
  description: One message per refused service, naming the host, the unit and every reason.
  returned: O(mode=deploy) and O(mode=survey)
  type: list
  elements: str
lines:
  description: What the run changes, line by line, for every service (O(mode=verify) - each service's state).
  returned: O(mode=deploy), O(mode=survey) and O(mode=verify)
  type: list
  elements: str
gateway_checks:
  description: The gateway preflight of each service that leaves rotation - C(unit), C(worker_url), C(allow_missing).
  returned: O(mode=deploy) and O(mode=survey)
  type: list
  elements: dict
nothing_to_do:
  description: Whether no service of the host has a step to run (a run with nothing to change).
  returned: O(mode=deploy) and O(mode=survey)
  type: bool
restart_units:
  description: With a revert and C(restart_stopped_units), the units to start again, C(name) and C(enable).
  returned: O(mode=deploy) and O(mode=survey)
  type: list
  elements: dict
fleet_rows:
  description: The fleet report's rows of the host (see M(gpufleet.sglang.sglang_fleet_rows)).
  returned: O(mode=report)
  type: list
  elements: dict
act_on:
  description: The units the day-two action (C(verify_on_degraded) revert or restart) is for - those degraded or off.
  returned: O(mode=verify)
  type: list
  elements: str
action:
  description: The day-two action asked (report, revert, restart).
  returned: O(mode=verify)
  type: str
failing:
  description: The lines of the services whose state is in C(verify_fail_when).
  returned: O(mode=verify)
  type: list
  elements: str
counts:
  description: How many switched services are in each state (engaged, degraded, off, unknown).
  returned: O(mode=verify)
  type: dict
steps:
  description: The rollback's steps (O(mode=rollback)).
  returned: O(mode=rollback)
  type: dict
failure:
  description:
    - The failed task's result the rollback is for (O(failure)), kept for the rollback's message and record.
    - A later step of the rollback that fails and is rescued (putting the host back in rotation) replaces
      C(ansible_failed_result), and would otherwise become the reason the switch failed.
  returned: O(mode=rollback)
  type: dict
hub:
  description: The host's drafter sources on a mirror, each with its services (O(mode=drafters) without results).
  returned: O(mode=drafters)
  type: list
  elements: dict
controller:
  description: The host's drafter sources on the controller (O(mode=drafters) without results).
  returned: O(mode=drafters)
  type: list
  elements: dict
drafters:
  description: What each drafter source gave (O(mode=drafters) with results), also kept as C(sglang_dflash_drafters).
  returned: O(mode=drafters)
  type: list
  elements: dict
"""
