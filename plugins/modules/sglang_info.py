#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_info
short_description: Everything about a host's SGLang service in one module run
version_added: "0.1.0"
description:
  - Reads the SGLang service as systemd sees it (C(systemctl show) for the unit's files, drop-ins,
    environment and states; the files in systemd's order for the exact ExecStart words), resolves the
    interpreter behind C(/usr/bin/env), C(bash -c '... exec python -m sglang.launch_server ...') wrappers,
    the C(sglang serve) console script and C(python -m MODULE), then runs what
    M(gpufleet.sglang.python_package_info), M(gpufleet.sglang.source_search_info), M(gpufleet.sglang.cli_flags_info)
    and M(gpufleet.sglang.gpu_info) do, in the same process, with the same code and caches.
  - Also reads the drafter's and the target model's C(config.json), whether the service user exists, the
    states of the units to stop, and the collection's own files on the host.
  - Never fails because of what it finds; every part that cannot be read is a RV(problems) entry that says
    what to set. It fails only on bad options.
author:
  - gpufleet.sglang contributors (@gpufleet)
requirements:
  - Python 3.8 or newer on the target, standard library only.
  - systemd (C(systemctl)) on the target for the service part.
  - Optionally C(nvidia-smi) and ripgrep (C(rg)) on the target, as for M(gpufleet.sglang.gpu_info) and
    M(gpufleet.sglang.source_search_info).
attributes:
  check_mode:
    details:
      - Runs the same in check mode, but writes no O(cache).
extends_documentation_fragment:
  - gpufleet.sglang.sglang_info
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
notes:
  - Needs systemd on the target for the service part; without it the unit is reported as a problem.
  - Returns its facts as the task's result (register it), not as C(ansible_facts).
  - This module was named C(gpufleet.sglang.sglang_facts) before; that name still works and runs this module.
seealso:
  - module: gpufleet.sglang.python_package_info
  - module: gpufleet.sglang.cli_flags_info
  - module: gpufleet.sglang.sglang_fleet_rows
    description: The same facts, judged as a deployment would judge them, as the fleet report's rows.
"""

EXAMPLES = r"""
- name: Both replicas of an 8-GPU box (a plain unit and the instances of a template)
  gpufleet.sglang.sglang_info:
    services:
      - name: sglang-qwen-a
      - name: "sglang@*"
        draft_model_path: /models/Qwen3.6-27B-DFlash
    managed_env_dir: /etc/sglang
    rollout_record_dir: /var/lib/gpufleet-sglang
  register: box

- name: What runs the hand-written sglang-qwen service, and can it do DFlash?
  gpufleet.sglang.sglang_info:
    service: sglang-qwen
    draft_model_path: /models/Qwen3.6-27B-DFlash
    cache: /var/cache/gpufleet-sglang
  register: host

- name: Show the interpreter, the release and what it supports
  ansible.builtin.debug:
    msg: "{{ host.python }} sglang {{ host.package.version }}: {{ host.algorithms }}; problems: {{ host.problems }}"
"""

RETURN = r"""
services:
  description:
    - With O(services), the facts of each selected service, each with the keys below (as without O(services)),
      and C(selected_by) (the index of the entry of O(services) that selected it), C(selected_units),
      C(managed_paths) (C(env_file), C(unit_file), C(rollout_record)).
    - A pattern that selects nothing is an entry with C(unit.exists=false) and the reason in C(problems).
  returned: when O(services) is set
  type: list
  elements: dict
sglang_units:
  description:
    - Every loaded service unit of the host whose ExecStart runs SGLang, sorted by name, each with C(unit),
      C(template) (C(sglang@.service) for an instance), C(active_state), C(unit_file_state), C(main_pid),
      C(python), C(version) (of sglang in that interpreter), C(port) (its last C(--port) with specifiers and
      variables expanded; SGLang's default 30000 without one; null when not a number) and C(gpus).
    - C(gpus) has C(indexes) (from C(CUDA_VISIBLE_DEVICES) in its environment, else the GPUs its processes hold,
      else null - the server sees every GPU), C(source) and C(problem).
    - The environment (C(CUDA_VISIBLE_DEVICES), the variables of its C(--port), C(PYTHONPATH), C(PATH) and the
      other Python paths) of a running service is what systemd handed its process (C(/proc/MAINPID/environ)); of a
      service that does not run, what its Environment= and EnvironmentFile= give, read with systemd 252's rules.
      C(environment_from) says which (C(process PID) or C(unit files)).
    - C(environment_drift) names the variables whose value in the unit's files differs from the running process's
      (edited since the start); C(environment_note) then says so (C(edited since start, restart pending) and the
      names) and C(after_restart) has the C(port) and C(gpus) a restart gives, which a switch plans with (null
      without drift).
  returned: always
  type: list
  elements: dict
service:
  description: The service's own entry of RV(sglang_units); null when the unit does not run SGLang (yet).
  returned: always, except in RV(services)' pattern entries
  type: dict
unit:
  description:
    - The service as systemd sees it. C(exists), C(id), C(fragment_path), C(dropin_paths), C(active_state),
      C(sub_state), C(unit_file_state), C(user), C(working_directory), C(environment) ([name, value] pairs),
      C(environment_files), C(main_pid), C(n_restarts), C(started_at), C(managed_by_us) (the unit file is this
      collection's), C(managed_dropin) (path, exists, content), C(later_exec_start_dropins).
    - C(operator_files) maps each of the operator's unit files, drop-ins and environment files (this collection's
      left out) to its SHA-256 (null when absent), so that a later run tells the operator's edits since a switch.
    - C(exec_start) has the effective ExecStart C(value), the C(file) it comes from and its C(words) as
      [value, raw]; C(command) the resolved C(form) (C(python -m) or C(console script)), C(wrapper)
      (null, C(env), C(shell)), C(python), C(launcher) and the server's C(args).
    - C(error) says why the command could not be resolved.
  returned: always
  type: dict
python:
  description: The interpreter inspected (from O(python) or the unit's ExecStart); null when none.
  returned: always
  type: str
python_from:
  description: Where RV(python) came from, C(sglang_dflash_python) or C(ExecStart).
  returned: always
  type: str
package:
  description:
    - What M(gpufleet.sglang.python_package_info) returns for sglang in that interpreter, and C(record_sha256), the
      SHA-256 of the distribution's RECORD (it changes with every install, same version or not).
  returned: always
  type: dict
entry_point:
  description:
    - How the release wants its server started, from its own code - C(recommended) (C(sglang serve) where
      C(sglang/launch_server.py) says so and the environment has the C(sglang) script, else
      C(python -m sglang.launch_server)), C(console_script), C(why). A new unit uses it; a switch keeps
      the form the operator used.
  returned: always
  type: dict
implementation:
  description: DFlash/DDTree hits in the code that runs (missing_terms, definitions, definitions_total, backend).
  returned: always
  type: dict
flags:
  description:
    - The release's flags (C(list)), how they were read (C(method), C(cached), C(fallback_reason)) and the
      seconds it took (C(elapsed_s)).
  returned: always
  type: dict
capabilities:
  description: Speculative-decoding capabilities of the release (see M(gpufleet.sglang.cli_flags_info)).
  returned: always
  type: dict
algorithms:
  description: Algorithms this install can run (the release's list plus implementations found in its code).
  returned: always
  type: list
  elements: str
limits:
  description:
    - What the installed release refuses at startup, read from its own source with C(ast) (C(srt/server_args.py),
      C(srt/arg_groups/*.py)), nothing imported; null where the package's location is not known.
    - C(limits) is a list of C(id) (C(dp_attention), C(pipeline_parallel), C(disaggregation), C(page_size),
      C(attention_backend), C(attention_backend_arch)), C(kind) (C(algorithm) for a check of DFLASH or DDTREE,
      C(architecture) for an attention backend tied to GPU architectures), C(algorithm), C(terms) (the
      conditions, all of which make the release refuse; a condition of a shape not read is an C(unknown) term,
      never guessed), C(message) (the release's own text) and C(source) (file:line).
    - C(defaults) holds the literal defaults of the settings the terms read; C(files) how many files were read;
      C(problems) what could not be read.
  returned: always
  type: dict
  sample:
    limits:
      - id: pipeline_parallel
        kind: algorithm
        algorithm: DFLASH
        terms: [{kind: setting, setting: pp_size, op: "!=", value: 1, negated: false}]
        message: Currently DFLASH speculative decoding only supports pp_size == 1.
        source: sglang/srt/arg_groups/speculative_hook.py:320
    defaults: {pp_size: 1}
    files: 39
    problems: []
gpus:
  description: What M(gpufleet.sglang.gpu_info) returns (each GPU with its C(architecture) and C(sm)).
  returned: always
  type: dict
model:
  description: The target's config.json (C(config)) or why it cannot be read (C(error)), and C(dir_exists).
  returned: when O(model_path) is set or the unit's command names a model directory
  type: dict
draft_model:
  description:
    - The drafter's config.json (C(config)) or why it cannot be read (C(error)), and C(dir_exists).
    - C(store_copy), where the directory is a copy of the drafter store of M(gpufleet.sglang.sglang_drafter), with
      its C(source), C(repo), C(revision), C(commit), C(verified_at), C(files), C(total_bytes), and C(complete) (every
      file its manifest lists is there with its size); null otherwise.
  returned: when O(draft_model_path) is set
  type: dict
user_exists:
  description: Whether O(user) exists.
  returned: when O(user) is set
  type: bool
related_units:
  description: For each of O(related_units), C(exists), C(active_state) and C(unit_file_state).
  returned: always
  type: dict
rollout_record:
  description: The content of O(rollout_record); null when there is none, C({error}) when it cannot be read.
  returned: when O(rollout_record) is set
  type: dict
managed_env_file:
  description: C(path), C(exists) and C(sha256) of O(managed_env_file).
  returned: when O(managed_env_file) is set
  type: dict
managed_unit_file:
  description: C(path), C(exists) and C(content) of O(managed_unit_file).
  returned: when O(managed_unit_file) is set
  type: dict
problems:
  description: What keeps this host from being inspected fully, each saying what to set.
  returned: always
  type: list
  elements: str
elapsed_s:
  description: Seconds the module took.
  returned: always
  type: float
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.host_facts import gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            service=dict(type="str", default="sglang"),
            services=dict(type="list", elements="dict"),
            managed_env_dir=dict(type="path"),
            managed_unit_dir=dict(type="path"),
            rollout_record_dir=dict(type="path"),
            python=dict(type="path"),
            launcher_modules=dict(type="list", elements="str", default=["sglang.launch_server"]),
            managed_dropin=dict(type="str"),
            managed_env_file=dict(type="path"),
            rollout_record=dict(type="path"),
            managed_unit_file=dict(type="path"),
            model_path=dict(type="path"),
            draft_model_path=dict(type="path"),
            user=dict(type="str"),
            related_units=dict(type="list", elements="str", default=[]),
            search_terms=dict(type="list", elements="str", default=["DFLASH", "DDTREE"]),
            flags_method=dict(type="str", default="auto", choices=["auto", "cross_check", "help", "source"]),
            flags_detail=dict(type="str", default="full", choices=["full", "plan"]),
            cache=dict(type="path"),
            timeout=dict(type="int", default=30),
            help_timeout=dict(type="int", default=120),
            max_output_bytes=dict(type="int", default=4 * 1024 * 1024),
            nvidia_smi=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    host = socket.gethostname()
    for option in ("timeout", "help_timeout", "max_output_bytes"):
        if module.params[option] <= 0:
            module.fail_json(msg="host %s: %s must be greater than 0, not %s" % (host, option, module.params[option]))
    names = [entry.get("name") for entry in module.params["services"] or []] or [module.params["service"]]
    for name in names:
        if not name or not isinstance(name, str) or "/" in name:
            module.fail_json(msg="host %s: service %r is not a unit name such as sglang-qwen or a pattern such as "
                                 "sglang@* (each entry of services needs a name)" % (host, name))
    module.exit_json(changed=False, **gather(module.params, module.check_mode))


if __name__ == "__main__":
    main()
