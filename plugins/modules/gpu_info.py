#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_info
short_description: NVIDIA GPUs of a host, what runs on them, and which systemd unit owns each process
version_added: "0.1.0"
description:
  - Runs C(nvidia-smi --query-gpu=...) and C(--query-compute-apps=...) with C(--format=csv,noheader,nounits)
    and returns the GPUs and the compute processes on them.
  - For each GPU also what a speculative-decoding deployment depends on, as nvidia-smi reports it, the compute
    capability, the MIG mode and the persistence mode; for the host the CUDA version the driver supports, read
    from the banner of plain C(nvidia-smi) (no C(--query-gpu) field gives it).
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
    description: Seconds before each C(nvidia-smi) call is killed (a wedged driver can hang it); more than 0.
    type: int
    default: 30
requirements:
  - Python 3.8 or newer on the target, standard library only.
  - C(nvidia-smi) (NVIDIA driver utilities) on the target; without it the module reports RV(nvidia_smi=missing).
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
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

- name: Hopper GPUs without MIG, and a driver for CUDA 12.4 or newer
  ansible.builtin.assert:
    that:
      - gpu.gpus | map(attribute='compute_capability') | reject('version', '9.0', '>=') | list | length == 0
      - gpu.gpus | selectattr('mig_mode', 'equalto', 'Enabled') | list | length == 0
      - gpu.cuda_version is version('12.4', '>=')
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
  description:
    - What nvidia-smi said when it failed (for example that it cannot talk to the driver), or where it was
      looked for when it is missing.
  returned: when nvidia_smi is error or missing
  type: str
driver_version:
  description: Driver version (of the first GPU); null unless RV(nvidia_smi=present).
  returned: always
  type: str
  sample: 580.159.04
cuda_version:
  description:
    - The highest CUDA version the driver supports, from the banner of plain C(nvidia-smi) (C(CUDA Version)).
    - Null when nvidia-smi says C(N/A) or does not say, and unless RV(nvidia_smi=present).
  returned: always
  type: str
  sample: "13.0"
gpus:
  description:
    - GPUs in index order, each with C(index), C(name), C(uuid), C(memory_total_mib), C(memory_used_mib),
      C(utilization_gpu_pct), C(driver_version), C(compute_capability), C(mig_mode), C(persistence_mode),
      C(architecture), C(sm) and C(processes) (the PIDs of its compute processes).
    - C(compute_capability) is the text nvidia-smi prints, for example C(9.0) (Hopper, such as H100 and H200),
      C(8.9) (L40S), C(8.0) (A100), C(10.0) (B200), C(12.0) (RTX PRO 6000 Blackwell).
    - C(architecture) is the architecture's name for that capability (C(Hopper), C(Blackwell), C(Ada Lovelace), ...)
      and C(sm) the compiler's name for it (C(sm_90), C(sm_100), C(sm_120)); both null where the capability is not
      known. One table in the collection (C(module_utils/gpu_arch.py)) gives both.
    - C(mig_mode) is the current MIG mode, C(Enabled) or C(Disabled); null on GPUs without MIG.
    - C(persistence_mode) is C(Enabled) or C(Disabled).
    - A value nvidia-smi does not know (C([N/A]), C([Not Supported])) is null.
  returned: always
  type: list
  elements: dict
  sample:
    - index: 0
      name: NVIDIA H200
      uuid: GPU-948683f4-b969-aa0e-4158-035f42ded5bb
      memory_total_mib: 143771
      memory_used_mib: 21099
      utilization_gpu_pct: 0
      driver_version: 580.159.04
      compute_capability: "9.0"
      mig_mode: Disabled
      persistence_mode: Enabled
      architecture: Hopper
      sm: sm_90
      processes: [620]
processes:
  description:
    - Compute processes, with C(pid), C(process_name), C(used_memory_mib) (null when the driver does
      not say), C(gpu_uuid), C(gpu_index), C(unit) and C(unit_source).
    - C(unit) is the systemd unit that owns the process, from C(/proc/PID/cgroup); null when there is none
      or it cannot be told, and C(unit_source) says which.
    - C(unit_source) is C(cgroup) (the unit was found), C(no unit) (the cgroup was read and the process is
      in no unit), C(process gone) (there is no C(/proc/PID), because the process exited after nvidia-smi
      listed it, or because its PID belongs to another PID namespace) or C(unreadable) (its cgroup
      cannot be read, for example permission denied).
  returned: always
  type: list
  elements: dict
  sample:
    - pid: 620
      process_name: /opt/torch/.venv/bin/python3
      used_memory_mib: 21090
      gpu_uuid: GPU-948683f4-b969-aa0e-4158-035f42ded5bb
      gpu_index: 0
      unit: null
      unit_source: no unit
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

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.nvidia_smi import query_gpus


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
    try:
        result = query_gpus(module.params["nvidia_smi"], module.params["timeout"])
    except ValueError as exc:
        module.fail_json(msg="host %s: %s" % (host, exc))
    if result["nvidia_smi"] != "present" and module.params["required"]:
        module.fail_json(msg="host %s: %s" % (host, result["error"]), **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
