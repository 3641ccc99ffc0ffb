#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_speed_probe
short_description: Measure an SGLang server's decode speed and speculative acceptance length
version_added: "0.1.0"
description:
  - Sends a short fixed set of prompts, one at a time, to the server's native C(POST /generate) on the host
    itself and measures output tokens per second, request latency and the average acceptance length of
    speculative decoding.
  - Requests are raw text (no chat template, so no thinking mode), greedy, with no grammar, and use
    C(ignore_eos) so that every request produces exactly O(max_new_tokens) tokens and two servers are compared
    on the same work.
  - The acceptance length is read where SGLang 0.5.11 to 0.5.23 report it, in this order
    C(meta_info.spec_verify_ct) with C(completion_tokens) (token-weighted over the prompts),
    C(meta_info.spec_accept_length), then C(/server_info) C(internal_states[].avg_spec_accept_length)
    (the server's average since it started). It is null for a server without speculative decoding.
  - With more than one O(concurrency) level, it then measures each further level (that many clients at once,
    each sending every prompt), as speculative decoding's speed-up shrinks with the load a server carries.
  - It keeps the answers at concurrency 1 (RV(outputs)) and flags degenerate ones (one word over most of the
    answer, RV(degenerate)), so that the gates can refuse degenerate output and output unlike the previous
    server's on the same greedy prompts.
  - Its action on the controller chooses the levels from O(load) and, given a O(baseline), judges the figures against
    it with the speed gates and fails with the reason when they do not pass (RV(verdict)). The role
    gpufleet.sglang.sglang_dflash measures the previous server before the switch and the new one after it, so.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  prompts:
    description: The prompts, sent one after another. Empty uses four plain, non-thinking prompts.
    type: list
    elements: str
    default: []
  max_new_tokens:
    description: Tokens generated per request.
    type: int
    default: 128
  warmup_requests:
    description: Unmeasured requests sent first (CUDA graphs and caches warm up on them).
    type: int
    default: 1
  timeout:
    description: Seconds one request may take.
    type: int
    default: 120
  concurrency:
    description:
      - The concurrency levels to measure at (1 is always measured, first). For example V([1, 8, 32]), or 1 and
        the load the host carried just before the switch.
    type: list
    elements: int
    default: [1]
  load:
    description:
      - Read on the controller. The requests the host was running just before the switch
        (M(gpufleet.sglang.sglang_wait_idle)'s C(most_seen)); given, even as null, the levels are O(concurrency)
        when set, else 1 and this load (at most O(max_concurrency)).
    type: int
  max_concurrency:
    description: Read on the controller. The highest level O(load) may add.
    type: int
    default: 64
  baseline:
    description:
      - Read on the controller. The previous server's figures (this module's result for it, or null when it was not
        measured). Given, the new server's figures are judged by the speed gates against it (RV(verdict)), and the
        task fails with the reason when they do not pass.
    type: dict
  min_speedup:
    description:
      - Read on the controller, with O(baseline). The lowest tokens/s ratio to the baseline, at the highest level both
        were measured at.
    type: float
  min_accept_length:
    description: Read on the controller, with O(baseline). The lowest average acceptance length.
    type: float
requirements:
  - Python 3.8 or newer on the target, standard library only.
attributes:
  action:
    description: Its action on the controller chooses the levels and judges the gates; the module measures on the host.
    support: full
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
  - gpufleet.sglang.server_endpoint
notes:
  - The requests are real work for the server (a few seconds on a GPU). Run it when a few requests more
    are acceptable, for example right before and after a switch.
  - Figures of one client on a shared server vary; compare servers measured the same way, close in time.
seealso:
  - module: gpufleet.sglang.sglang_wait_ready
"""

EXAMPLES = r"""
- name: Measure the server before changing it
  gpufleet.sglang.sglang_speed_probe:
    port: 30000
    max_new_tokens: 128
  register: before

- name: Show the figures
  ansible.builtin.debug:
    msg: "{{ before.tokens_per_s }} tokens/s, acceptance length {{ before.accept_length }}"
"""

RETURN = r"""
verdict:
  description:
    - With O(baseline), the speed gates' verdict - C(passed), C(speedup) (tokens/s at concurrency 1 over the
      baseline's), C(speedups) per level, C(speedup_at_load), C(load_concurrency), C(problems), C(notes) and a
      one-line C(summary).
  returned: when O(baseline) is given
  type: dict
measured:
  description: Whether every request answered.
  returned: always
  type: bool
problem:
  description: Why the server could not be measured; null when it was.
  returned: always
  type: str
requests:
  description: Measured requests (warm-up not counted).
  returned: always
  type: int
output_tokens:
  description: Tokens the measured requests produced.
  returned: always
  type: int
elapsed_s:
  description: Seconds the measured requests took, one after another.
  returned: always
  type: float
tokens_per_s:
  description: Output tokens per second of one client (RV(output_tokens) / RV(elapsed_s)).
  returned: always
  type: float
  sample: 198.7
latency_s_median:
  description: Median seconds of one request.
  returned: always
  type: float
latency_s_max:
  description: Longest request, in seconds.
  returned: always
  type: float
accept_length:
  description: Average tokens accepted per verify step (including the bonus token); null without speculation.
  returned: always
  type: float
  sample: 6.02
accept_length_source:
  description: Where the acceptance length was read.
  returned: always
  type: str
  sample: meta_info.spec_verify_ct
max_new_tokens:
  description: Tokens generated per request.
  returned: always
  type: int
levels:
  description:
    - The figures at each concurrency level - C(concurrency), C(requests), C(output_tokens), C(elapsed_s),
      C(tokens_per_s) (all clients together), C(tokens_per_s_per_request) (median of one request's),
      C(latency_s_median), C(latency_s_p99), C(problem).
  returned: always
  type: list
  elements: dict
outputs:
  description: The answers to the prompts at concurrency 1 (their first 400 characters).
  returned: always
  type: list
  elements: str
degenerate:
  description: The answers that repeat one word over most of their length, with the word and its share.
  returned: always
  type: list
  elements: str
  sample: ["prompt 2: 'the' is 94% of the answer"]
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import (
    SERVER_ENDPOINT_ARGS,
    base_url,
    read_server_info,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.speed_probe import measure


def main():
    module = AnsibleModule(
        argument_spec=dict(
            SERVER_ENDPOINT_ARGS,
            prompts=dict(type="list", elements="str", default=[]),
            max_new_tokens=dict(type="int", default=128, no_log=False),
            warmup_requests=dict(type="int", default=1),
            timeout=dict(type="int", default=120),
            concurrency=dict(type="list", elements="int", default=[1]),
            # Read by the action on the controller (plugins/action/sglang_speed_probe.py), never here.
            load=dict(type="int"),
            max_concurrency=dict(type="int", default=64),
            baseline=dict(type="dict"),
            min_speedup=dict(type="float"),
            min_accept_length=dict(type="float"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    host = socket.gethostname()
    for option, low, high in (("port", 1, 65535), ("max_new_tokens", 1, 65536), ("warmup_requests", 0, 100),
                              ("timeout", 1, 86400)):
        if not low <= p[option] <= high:
            module.fail_json(msg="host %s: %s must be between %d and %d, not %s" % (host, option, low, high, p[option]))
    if any(not 1 <= level <= 256 for level in p["concurrency"]):
        module.fail_json(msg="host %s: every concurrency level must be between 1 and 256, not %s (set "
                             "sglang_dflash_speed_probe_concurrency)" % (host, p["concurrency"]))
    url = base_url(p["host"], p["port"])
    result = measure(url, p["prompts"], p["max_new_tokens"], p["timeout"], p["warmup_requests"],
                     read_info=lambda: read_server_info(url, 10.0)[0], concurrency=p["concurrency"])
    if not result["measured"]:
        module.fail_json(msg="host %s: the server at %s could not be measured: %s"
                             % (host, url, result["problem"]), **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
