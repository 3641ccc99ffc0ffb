#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

DOCUMENTATION = r"""
---
module: gpu_info
short_description: NVIDIA GPUs of a host, what runs on them, and which systemd unit owns each process
version_added: "0.1.0"
description:
  - Runs C(nvidia-smi --query-gpu=...) and C(--query-compute-apps=...) with C(--format=csv,noheader,nounits)
    and returns the GPUs and the compute processes on them.
  - Each process is mapped to the systemd unit that owns it, from C(/proc/PID/cgroup) (cgroup v1 or v2),
    so "the training job still holds GPU 0" names a unit that can be stopped.
  - A host without C(nvidia-smi) is not an error unless O(required=true); the result says
    RV(nvidia_smi=missing) with an empty RV(gpus).
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  nvidia_smi:
    description: Path of C(nvidia-smi); by default it is looked up on PATH.
    type: path
  required:
    description: Fail when C(nvidia-smi) is missing or cannot talk to the driver.
    type: bool
    default: false
  timeout:
    description: Seconds before each C(nvidia-smi) call is killed (a wedged driver can hang it).
    type: int
    default: 30
attributes:
  check_mode:
    support: full
    description: The module only reads.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
seealso:
  - module: gpufleet.sglang.python_package_info
"""

EXAMPLES = r"""
- name: GPUs and their processes
  gpufleet.sglang.gpu_info:
  register: gpu

- name: Which units still hold GPU memory?
  ansible.builtin.debug:
    msg: "{{ gpu.processes | map(attribute='unit') | unique }}"
"""

RETURN = r"""
nvidia_smi:
  description: C(present) (queried), C(missing) (not installed) or C(error) (installed, but failed).
  returned: always
  type: str
nvidia_smi_path:
  description: The C(nvidia-smi) that was run.
  returned: when present
  type: str
error:
  description: What nvidia-smi said when it failed (for example that it cannot talk to the driver).
  returned: when nvidia_smi is error
  type: str
driver_version:
  description: Driver version (of the first GPU).
  returned: always
  type: str
gpus:
  description: GPUs in index order.
  returned: always
  type: list
  elements: dict
  sample:
    - index: 0
      name: NVIDIA H100 80GB HBM3
      uuid: GPU-5b3a7e1c-2f4d-4e8a-9c1b-7d6e5f4a3b21
      memory_total_mib: 81559
      memory_used_mib: 72790
      utilization_gpu_pct: 98
      driver_version: 550.90.07
      processes: [48211]
processes:
  description: Compute processes, with C(pid), C(process_name), C(used_memory_mib) (null when the driver does
    not say), C(gpu_uuid), C(gpu_index) and C(unit) (null when no systemd unit owns it).
  returned: always
  type: list
  elements: dict
  sample:
    - pid: 48211
      process_name: /opt/train-env/bin/python3
      used_memory_mib: 72784
      gpu_uuid: GPU-5b3a7e1c-2f4d-4e8a-9c1b-7d6e5f4a3b21
      gpu_index: 0
      unit: train-qwen.service
gpu_count:
  description: Number of GPUs.
  returned: always
  type: int
units:
  description: Units that own GPU processes, sorted.
  returned: always
  type: list
  elements: str
"""

import os
import shutil
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.nvidia_smi import (
    QUERY_APPS,
    QUERY_GPUS,
    NvidiaSmiParseError,
    attach,
    parse_apps,
    parse_gpus,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import c_locale_env, run_argv


def read_cgroup(pid):
    try:
        with open("/proc/%d/cgroup" % pid) as handle:
            return handle.read()
    except (OSError, ValueError):
        # Gone already, or a PID of another PID namespace (nvidia-smi in a container).
        return None


def empty(state, **extra):
    result = {"nvidia_smi": state, "gpus": [], "processes": [], "gpu_count": 0, "units": [], "driver_version": None}
    result.update(extra)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="path"),
            required=dict(type="bool", default=False),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    host = socket.gethostname()
    smi = module.params["nvidia_smi"] or shutil.which("nvidia-smi")
    if not smi or not os.access(smi, os.X_OK):
        msg = "host %s: nvidia-smi not found%s; install the NVIDIA driver utilities or set nvidia_smi" % (
            host, " at %s" % smi if smi else " on PATH")
        if module.params["required"]:
            module.fail_json(msg=msg, **empty("missing"))
        module.exit_json(changed=False, **empty("missing"))

    env = c_locale_env()
    outputs = []
    for query in (QUERY_GPUS, QUERY_APPS):
        run = run_argv([smi] + query, timeout=module.params["timeout"], env=env)
        if not run.ok:
            said = (run.stdout.strip() or run.stderr.strip() or run.error or "").splitlines()
            reason = "timed out after %ss" % module.params["timeout"] if run.timed_out else (
                "rc=%s: %s" % (run.rc, said[0] if said else "no output"))
            error = "%s %s failed (%s)" % (smi, query[0].split("=", 1)[0], reason)
            if module.params["required"]:
                module.fail_json(msg="host %s: %s" % (host, error), **empty("error", error=error))
            module.exit_json(changed=False, **empty("error", error=error, nvidia_smi_path=smi))
        outputs.append(run.stdout)
    try:
        gpus = parse_gpus(outputs[0])
        apps = parse_apps(outputs[1])
    except NvidiaSmiParseError as exc:
        error = "%s printed something else than the CSV asked for: %s" % (smi, exc)
        if module.params["required"]:
            module.fail_json(msg="host %s: %s" % (host, error), **empty("error", error=error))
        module.exit_json(changed=False, **empty("error", error=error, nvidia_smi_path=smi))
    gpus, apps = attach(gpus, apps, read_cgroup)
    module.exit_json(
        changed=False,
        nvidia_smi="present",
        nvidia_smi_path=smi,
        driver_version=gpus[0]["driver_version"] if gpus else None,
        gpus=gpus,
        processes=apps,
        gpu_count=len(gpus),
        units=sorted(set(a["unit"] for a in apps if a["unit"])),
    )


if __name__ == "__main__":
    main()
