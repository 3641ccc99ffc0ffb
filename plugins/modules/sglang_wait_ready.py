#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_wait_ready
short_description: Wait until an SGLang service answers /health, failing fast when it crash-loops
version_added: "0.1.0"
description:
  - Polls the systemd unit and the server together. A unit that failed, is waiting to be restarted or was
    restarted by systemd is reported within one poll interval, with the unit's last journal lines, instead of
    after the whole O(timeout).
  - Once C(/health) answers 200, sends one real generation request (C(POST /generate), a few greedy tokens),
    since a server can answer C(/health) and still fail on its first request. Then reads C(/server_info) (or
    C(/get_server_info) on older releases) and returns it.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  service:
    description: The SGLang unit.
    type: str
    required: true
  timeout:
    description: Seconds to wait for C(/health) to answer 200.
    type: int
    default: 600
  poll_interval:
    description: Seconds between two looks at the unit and the server.
    type: float
    default: 1.0
  journal_lines:
    description:
      - Journal lines of the unit returned when it is not ready, the last ones logged after
        O(journal_since_monotonic_us), so none of them is the previous server's.
    type: int
    default: 40
  journal_since_monotonic_us:
    description:
      - A mark taken with M(gpufleet.sglang.unit_journal_info) right before the restart; the journal lines returned are
        the ones logged after it (every attempt of a crash loop). Without it, the lines since the unit's latest
        start.
    type: int
  redact:
    description: Values (secrets) replaced by C(********) in the returned journal lines.
    type: list
    elements: str
    default: []
  check_generation:
    description: Send one generation request after C(/health) answers 200; the server is ready only when it answers.
    type: bool
    default: true
  generation_tokens:
    description: Tokens the readiness generation request asks for.
    type: int
    default: 8
  fail_when_not_ready:
    description: Fail when the server is not ready; otherwise return RV(ready=false).
    type: bool
    default: true
  expected_server_info:
    description:
      - What C(/server_info) must report once the server is ready, key by key, for example
        C(speculative_algorithm=DFLASH) and C(speculative_dflash_block_size=16) (numbers compared as numbers). A
        healthy server that reports otherwise fails the task, naming each setting as reported and as asked
        (RV(mismatch)) - a build that silently ignores a flag.
    type: dict
    default: {}
requirements:
  - Python 3.8 or newer on the target, standard library only.
  - systemd (C(systemctl), C(journalctl)) on the target.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
  - gpufleet.sglang.server_endpoint
seealso:
  - module: gpufleet.sglang.sglang_info
"""

EXAMPLES = r"""
- name: Wait for the switched server, failing within seconds if it crash-loops
  gpufleet.sglang.sglang_wait_ready:
    service: sglang-qwen.service
    port: 30000
    timeout: 600
  register: ready
"""

RETURN = r"""
mismatch:
  description: With O(expected_server_info), each setting the server reports otherwise, as C([key, asked, reported]).
  returned: when the server is ready but reports other settings
  type: list
  elements: list
ready:
  description: Whether C(/health) answered 200 and the server info was read.
  returned: always
  type: bool
crashed:
  description: Whether the unit failed or crash-looped while waiting.
  returned: always
  type: bool
reason:
  description: Why the server is not ready; null when it is.
  returned: always
  type: str
elapsed_s:
  description: Seconds from the start of the wait to healthy (or to the crash, or the timeout).
  returned: always
  type: float
since_start_s:
  description: Seconds from the start of the server's main process (as systemd recorded it) to healthy.
  returned: when ready
  type: float
generation:
  description: The readiness generation request (C(ok), C(status), C(latency_s), C(completion_tokens), C(problem)).
  returned: when /health answered 200 and O(check_generation) is true
  type: dict
server_info:
  description: What C(/server_info) answered; null when not ready.
  returned: always
  type: dict
server_info_endpoint:
  description: C(/server_info) or C(/get_server_info).
  returned: always
  type: str
state:
  description:
    - The unit's C(ActiveState), C(SubState), C(NRestarts), C(MainPID), C(Result), C(InvocationID),
      C(ExecMainStartTimestampMonotonic), C(ExecMainCode), C(ExecMainStatus) and C(Restart) at the end, as
      C(systemctl show) gives them.
  returned: always
  type: dict
journal:
  description: The unit's last journal lines since O(journal_since_monotonic_us), secrets redacted.
  returned: when not ready
  type: list
  elements: str
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import (
    SERVER_ENDPOINT_ARGS,
    base_url,
    confirm_server_info,
    server_info_message,
    wait_ready,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.speed_probe import DEFAULT_PROMPTS, generate_once
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import run_systemctl, unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.unit_journal import journal_since_start, redact


def main():
    module = AnsibleModule(
        argument_spec=dict(
            SERVER_ENDPOINT_ARGS,
            service=dict(type="str", required=True),
            timeout=dict(type="int", default=600),
            poll_interval=dict(type="float", default=1.0),
            journal_lines=dict(type="int", default=40),
            journal_since_monotonic_us=dict(type="int"),
            redact=dict(type="list", elements="str", default=[], no_log=True),
            check_generation=dict(type="bool", default=True),
            generation_tokens=dict(type="int", default=8, no_log=False),
            fail_when_not_ready=dict(type="bool", default=True),
            expected_server_info=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    host = socket.gethostname()
    for option, low in (("port", 1), ("timeout", 1), ("journal_lines", 0), ("generation_tokens", 1)):
        if p[option] < low:
            module.fail_json(msg="host %s: %s must be at least %d, not %s" % (host, option, low, p[option]))
    if p["port"] > 65535 or p["poll_interval"] <= 0:
        module.fail_json(msg="host %s: port must be 1-65535 and poll_interval greater than 0" % host)
    unit = unit_name(p["service"])
    url = base_url(p["host"], p["port"])
    generate = None
    if p["check_generation"]:
        def generate():
            return generate_once(url, DEFAULT_PROMPTS[0], p["generation_tokens"], min(p["timeout"], 300))
    result = wait_ready(unit, url, p["timeout"], run_systemctl, p["poll_interval"], generate=generate)
    if result["ready"]:
        mismatch = confirm_server_info(result.get("server_info") or {}, p["expected_server_info"])
        if mismatch:
            module.fail_json(msg=server_info_message(mismatch, result.get("server_info_endpoint")),
                             mismatch=mismatch, **result)
        module.exit_json(changed=False, **result)
    lines, _since = journal_since_start(unit, p["journal_lines"], run_systemctl,
                                        since_us=p["journal_since_monotonic_us"])
    result["journal"] = redact(lines, p["redact"])
    if p["fail_when_not_ready"]:
        module.fail_json(msg="host %s: %s is not ready after %ss: %s"
                             % (host, unit, result["elapsed_s"], result["reason"]), **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
