# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of gpufleet.sglang.sglang_info, written once: gpufleet.sglang.sglang_fleet_rows takes the same ones
and passes them to it.

extends_documentation_fragment:
  - gpufleet.sglang.sglang_info
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  service:
    description:
      - Name of the SGLang unit (with or without C(.service)).
      - Ignored when O(services) is set.
    type: str
    default: sglang
  services:
    description:
      - Several SGLang services of the host, read in one run; each entry a dict with C(name) (a unit, which need
        not exist yet, or a glob over the host's SGLang units such as C(sglang@*)) and optionally its own
        C(python), C(model_path) and C(draft_model_path).
      - A unit named exactly wins over a pattern; among patterns the first wins. Units are returned in the
        order of the entries, the matches of a pattern sorted.
      - The paths of this collection's files for each service come from O(managed_env_dir),
        O(managed_unit_dir) and O(rollout_record_dir).
    type: list
    elements: dict
  managed_env_dir:
    description: With O(services), the directory of this collection's environment files (C(UNIT.env)).
    type: path
  managed_unit_dir:
    description: With O(services), the directory of the unit files this collection writes for new services.
    type: path
  rollout_record_dir:
    description: With O(services), the directory of the switch records (C(UNIT.last-rollout.json)).
    type: path
  python:
    description: Interpreter that runs SGLang; by default the one behind the unit's ExecStart.
    type: path
  launcher_modules:
    description: Modules started as C(python -m MODULE) that are the SGLang server.
    type: list
    elements: str
    default: [sglang.launch_server]
  managed_dropin:
    description: Base name of this collection's own drop-in; it is left out of the operator's command line.
    type: str
  managed_env_file:
    description: Path of this collection's environment file; its checksum is returned, never its content.
    type: path
  managed_unit_file:
    description: Path of a unit file this collection writes for a new service; its content is returned.
    type: path
  rollout_record:
    description:
      - Path of the record the role gpufleet.sglang.sglang_dflash keeps of its last switch on the host, a JSON
        file with the time, the algorithm, the outcome and the speed before and after; returned as C(rollout_record).
    type: path
  model_path:
    description:
      - Target model directory; its C(config.json) is read.
      - By default the directory the unit's command names with C(--model-path).
    type: path
  draft_model_path:
    description: Drafter directory; its C(config.json) is read.
    type: path
  user:
    description: A user whose existence is checked.
    type: str
  related_units:
    description: Units whose states are returned (for example the training job to stop).
    type: list
    elements: str
    default: []
  search_terms:
    description: Terms searched in the code that runs (identifier match).
    type: list
    elements: str
    default: [DFLASH, DDTREE]
  flags_method:
    description:
      - How the release's flags are read; see the O(gpufleet.sglang.cli_flags_info#module:method) option of
        M(gpufleet.sglang.cli_flags_info).
      - C(auto) reads the source and runs C(--help) only where the source cannot be read (a fraction of a
        second per host; C(--help) took about 20 s on a GPU host); C(cross_check) runs both and compares.
    type: str
    choices: [auto, cross_check, help, source]
    default: auto
  flags_detail:
    description:
      - How much of each flag of the release comes back. C(full) - everything the reader found (its help text,
        metavar, default, group and source line too; most of the facts' size, about 200 KB a host of 230).
        C(plan) - what a plan reads (its name, aliases, whether it takes a value, its choices, whether it is hidden
        or negated); the role's actions ask for that.
    type: str
    choices: [full, plan]
    default: full
  cache:
    description:
      - On-host cache directory for the flags, the source search, the release's limits, which services may run
        SGLang, where each interpreter imports SGLang from and the CUDA version of the GPUs' driver (nothing is
        written in check mode). Each entry is served only while the files it was read from are unchanged; which
        services may run SGLang, also while every service's state is (C(systemctl list-units)); where an interpreter
        imports SGLang from, also while its environment, the working directory, each directory on its search path
        and the .pth files there are; the CUDA version, for that driver version and C(nvidia-smi).
    type: path
  timeout:
    description: Seconds for each probe of the interpreter and each C(nvidia-smi) call.
    type: int
    default: 30
  help_timeout:
    description: Seconds for C(--help).
    type: int
    default: 120
  max_output_bytes:
    description: Largest C(--help) output read.
    type: int
    default: 4194304
  nvidia_smi:
    description: Path of C(nvidia-smi); looked up on PATH by default.
    type: path
"""
