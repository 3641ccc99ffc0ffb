#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_speculation_info
short_description: Read whether running SGLang servers speculate now (verify steps, acceptance length)
version_added: "0.1.0"
description:
  - For each server, reads C(GET /metrics) twice, O(window) seconds apart (all servers over the same window), and
    returns the requests that ended in between (the count of C(sglang:e2e_request_latency_seconds)), the tokens they
    produced (C(sglang:generation_tokens_total)), the speculative verify steps (C(sglang:spec_verify_calls_total)),
    their ratio (the window's acceptance length) and the C(sglang:spec_accept_length) gauge (the last few seconds
    only).
  - Where the window holds no evidence (no request ended, no C(/metrics), or no verify counter), sends one greedy
    generation request and returns what its C(meta_info) says (C(spec_verify_ct), C(spec_accept_length); SGLang
    0.5.16 to 0.5.23 leave them out when no verify step ran).
  - Only reads; the verdict (engaged, degraded, off, unknown) is the controller's
    (M(gpufleet.sglang.sglang_dflash_plan) C(mode=verify), run by C(playbooks/verify_dflash.yml)).
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  servers:
    description: The servers to read, each reached from the host itself.
    type: list
    elements: dict
    required: true
    suboptions:
      unit:
        description: The systemd unit that runs the server (the name its evidence is returned under).
        type: str
        required: true
      host:
        description: The address the server listens on.
        type: str
        default: 127.0.0.1
      port:
        description: Its port.
        type: int
        required: true
  window:
    description: Seconds between the two reads of C(/metrics); 0 reads once and relies on the probe.
    type: float
    default: 10
  probe:
    description:
      - When to send the greedy probe request - where the window holds no evidence, always, or never.
    type: str
    default: no_traffic
    choices: [no_traffic, always, never]
  probe_max_new_tokens:
    description: Tokens the probe request generates (greedy, C(ignore_eos)).
    type: int
    default: 32
  timeout:
    description: Seconds the probe request may take.
    type: int
    default: 30
  min_requests:
    description: The fewest requests that must end (and decode) in the window for it to count as evidence; with fewer,
      O(probe=no_traffic) sends the probe.
    type: int
    default: 1
requirements:
  - Python 3.8 or newer on the target, standard library only.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
seealso:
  - module: gpufleet.sglang.sglang_live_metrics
  - module: gpufleet.sglang.sglang_dflash_plan
"""

EXAMPLES = r"""
- name: Read whether the DFlash server on port 30000 still speculates
  gpufleet.sglang.sglang_speculation_info:
    servers:
      - unit: sglang-qwen.service
        port: 30000
    window: 10
  register: speculation

- name: Always probe, never wait
  gpufleet.sglang.sglang_speculation_info:
    servers: [{unit: sglang.service, port: 30000}]
    window: 0
    probe: always
"""

RETURN = r"""
servers:
  description: Each server's evidence, in the order asked.
  returned: always
  type: list
  elements: dict
  contains:
    unit:
      description: The unit asked.
      type: str
    url:
      description: The server's base URL.
      type: str
    time:
      description: When the window ended (seconds since the epoch).
      type: float
    window:
      description:
        - The window's figures (null when C(/metrics) did not answer) - C(seconds), C(requests) (ended in it),
          C(tokens), C(verify_steps) (null without the verify counter), C(accept_length) (tokens / verify steps),
          C(accept_length_gauge), C(accept_rate_gauge).
      type: dict
    metrics_problem:
      description: Why C(/metrics) could not be read (it needs C(--enable-metrics)), or null.
      type: str
    probe:
      description:
        - The probe request's answer, or null when none was sent - C(ok), C(problem), C(completion_tokens),
          C(latency_s), C(verify_steps) (0 when C(meta_info) has no C(spec_verify_ct)), C(accept_length).
      type: dict
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import base_url
from ansible_collections.gpufleet.sglang.plugins.module_utils.speculation import observe


def main():
    module = AnsibleModule(
        argument_spec=dict(
            servers=dict(type="list", elements="dict", required=True, options=dict(
                unit=dict(type="str", required=True),
                host=dict(type="str", default="127.0.0.1"),
                port=dict(type="int", required=True))),
            window=dict(type="float", default=10),
            probe=dict(type="str", default="no_traffic", choices=["no_traffic", "always", "never"]),
            probe_max_new_tokens=dict(type="int", default=32, no_log=False),
            timeout=dict(type="int", default=30),
            min_requests=dict(type="int", default=1),
        ),
        supports_check_mode=True,
    )
    p = module.params
    host = socket.gethostname()
    bad = [s["unit"] for s in p["servers"] if not 1 <= s["port"] <= 65535]
    if bad:
        module.fail_json(msg="host %s: the port of %s must be 1-65535" % (host, ", ".join(bad)))
    if p["window"] < 0 or p["probe_max_new_tokens"] < 1 or p["timeout"] < 1 or p["min_requests"] < 1:
        module.fail_json(msg="host %s: window must be at least 0, probe_max_new_tokens, timeout and min_requests at "
                             "least 1" % host)
    servers = [{"unit": s["unit"], "url": base_url(s["host"], s["port"])} for s in p["servers"]]
    evidence = observe(servers, p["window"], probe_max_new_tokens=p["probe_max_new_tokens"], probe_when=p["probe"],
                       timeout=float(p["timeout"]), min_requests=p["min_requests"])
    module.exit_json(changed=False, servers=evidence)


if __name__ == "__main__":
    main()
