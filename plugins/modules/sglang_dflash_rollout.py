#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The documentation of an action plugin (plugins/action/sglang_dflash_rollout.py): the rolling deployment's decisions
# across hosts, on the controller (plugins/plugin_utils/_rollout.py, _canary.py, _messages.py).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_dflash_rollout
short_description: The rolling deployment's decisions across hosts, from each host's sglang_dflash_result
version_added: "0.2.0"
description:
  - The steps of C(playbooks/deploy_dflash.yml) that decide across hosts. Of every other host only its one result fact,
    C(sglang_dflash_result), is read, and only as this run wrote it (a former run's, kept by Ansible's fact cache, is
    not this run's); the host's own result is passed in as O(result) and returned as that fact.
  - C(step=batch) - whether this host's batch starts (an earlier batch over its failure budget, or a canary that failed
    or held, stops it; a host the survey found nothing to do on ends done), and the canary's hosts and metrics targets.
  - C(step=canary_check) - the canary's settings and its metrics source, before any change.
  - C(step=canary_judge) - the canary's verdict over the observed window (run once).
  - C(step=canary_record) - the verdict kept on a canary host (its result, and its services' records on the host).
  - C(step=failed), C(step=canary_failed), C(step=finished) - the host's result when it failed or ended.
  - C(step=summary) - the run's lines per host (RV(lines)).
  - C(step=experiment_assign) - the experiment's arms across the surveyed fleet (like with like; the same assignment on
    every host) and this host's own arm or the control; a fleet whose arms cannot be like the control is refused on
    every host before any change (C(playbooks/experiment_dflash.yml)).
  - C(step=experiment_judge) - one more chunk of the experiment's window judged (run once), with the report's files
    once decided.
  - C(step=experiment_end) - the verdict kept on each host; the hosts of every arm but the winner go back.
  - C(step=experiment_rollout) - whether this host's batch takes the winner (every host not already on it).
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  step:
    description: The decision (see the description).
    type: str
    required: true
    choices: [batch, failed, finished, summary, canary_check, canary_judge, canary_record, canary_failed,
              experiment_assign, experiment_judge, experiment_end, experiment_rollout]
  hosts:
    description: The play's hosts (C(ansible_play_hosts_all)).
    type: list
    elements: str
    default: []
  batch:
    description: With C(step=batch), this host's batch (C(ansible_play_batch)).
    type: list
    elements: str
    default: []
  result:
    description: This host's C(sglang_dflash_result) so far.
    type: dict
    default: {}
  canary:
    description: The canary's size, a host count or a percentage (C(sglang_dflash_canary)); unset - no canary.
    type: raw
  max_fail_percentage:
    description: The share of a batch that may fail before the later batches are not started.
    type: raw
    default: 0
  reason:
    description: With C(step=failed) or C(step=canary_failed), why.
    type: str
  drafters:
    description: With C(step=finished), the host's drafters (C(sglang_dflash_drafters)).
    type: list
    elements: dict
    default: []
  source:
    description: With C(step=canary_check), the metrics source's check (M(gpufleet.sglang.sglang_live_metrics),
      window 0).
    type: dict
  observed:
    description: With C(step=canary_judge), the observed window (M(gpufleet.sglang.sglang_live_metrics)'s result).
    type: dict
  verdict:
    description: With C(step=canary_record), the canary's verdict.
    type: dict
  judge:
    description: With C(step=canary_judge), how the judge tells a real difference from noise (C(sglang_dflash_judge)).
    type: dict
    default: {}
  min_requests:
    description: With C(step=canary_judge), the requests each host must serve in the window.
    type: int
    default: 10
  on_inconclusive:
    description: With C(step=canary_judge), what an inconclusive window does, C(hold) or C(rollback).
    type: str
    default: hold
  state_dir:
    description: With C(step=canary_record), the state directory on the host (its services' records).
    type: path
  experiment:
    description: With the C(experiment_*) steps, the experiment (C(sglang_dflash_experiment) - its arms, window and
      judge; docs/experiments.md).
    type: raw
  state:
    description: With C(step=experiment_judge) and C(step=experiment_end), the judging so far (the last chunk's
      RV(state); unset - the first chunk).
    type: dict
requirements:
  - Python 3.8 or newer on the target, standard library only (the modules it runs there).
attributes:
  action:
    description: Decides on the controller; C(step=canary_record) writes on the host.
    support: full
  check_mode:
    support: full
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.sglang_dflash_plan
  - module: gpufleet.sglang.sglang_live_metrics
"""

EXAMPLES = r"""
- name: Decide whether this host's batch starts
  gpufleet.sglang.sglang_dflash_rollout:
    step: batch
    hosts: "{{ ansible_play_hosts_all }}"
    batch: "{{ ansible_play_batch }}"
    result: "{{ sglang_dflash_result | default({}) }}"
  register: batch

- name: The run's lines per host
  gpufleet.sglang.sglang_dflash_rollout:
    step: summary
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true
  register: summary
"""

RETURN = r"""
start:
  description: With C(step=batch) or C(step=experiment_rollout), whether this host's batch starts.
  returned: C(step=batch) and C(step=experiment_rollout)
  type: bool
check_canary:
  description: With C(step=batch), whether this host runs the canary stage.
  returned: C(step=batch)
  type: bool
targets:
  description: With C(step=batch), where the canary's and the baseline's metrics are read (C(name), C(url),
    C(instance)).
  returned: C(step=batch)
  type: list
  elements: dict
verdict:
  description: With C(step=canary_judge), the canary's verdict, action (continue, rollback, hold), figures and message.
  returned: C(step=canary_judge)
  type: dict
state:
  description: With C(step=experiment_judge), the judging so far - its samples, seconds, C(done), C(outcome),
    C(winner), the hosts to put back now (C(roll_back_now)) and the decision.
  returned: C(step=experiment_judge)
  type: dict
line:
  description: With C(step=experiment_judge), the experiment's state in one line.
  returned: C(step=experiment_judge)
  type: str
report_files:
  description: With C(step=experiment_judge) once decided, the experiment report's files by name (JSON and HTML).
  returned: C(step=experiment_judge), once decided
  type: dict
roll_back:
  description: With C(step=experiment_end), whether this host goes back to its previous server.
  returned: C(step=experiment_end)
  type: bool
arm:
  description: With C(step=experiment_rollout), the winning arm this host's batch takes.
  returned: C(step=experiment_rollout)
  type: str
lines:
  description: With C(step=summary), a few lines per host.
  returned: C(step=summary)
  type: list
  elements: str
ansible_facts:
  description: This host's C(sglang_dflash_result), where the step decides it.
  returned: when the step decides the host's result
  type: dict
"""
