#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_wait_idle
short_description: Wait until an SGLang server has no running or queued request (drain it)
version_added: "0.1.0"
description:
  - Reads the server's own load, in this order, C(GET /v1/loads) (SGLang 0.5.23, C(num_running_reqs) and
    C(num_waiting_reqs) of each data-parallel rank), C(GET /metrics) (only with C(--enable-metrics), the gauges
    C(sglang:num_running_reqs) and C(sglang:num_queue_reqs)) or C(GET /get_load) (older releases), until it reports
    no request in two reads in a row.
  - Run it once the server is out of rotation (M(gpufleet.sglang.sglang_gateway_worker) C(state=absent), or your
    balancer's own step), so that the requests in flight finish before the service is restarted.
  - A server that does not answer has nothing to drain, and is reported idle with the reason. One that answers but
    reports no load fails with what to enable.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  timeout:
    description: Seconds to wait for the server to have no request.
    type: int
    default: 300
  poll_interval:
    description: Seconds between two reads of the load.
    type: float
    default: 0.5
  fail_when_busy:
    description: Fail when the server still has requests after O(timeout); otherwise return RV(idle=false).
    type: bool
    default: true
requirements:
  - Python 3.8 or newer on the target, standard library only.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
  - gpufleet.sglang.server_endpoint
seealso:
  - module: gpufleet.sglang.sglang_gateway_worker
"""

EXAMPLES = r"""
- name: Let the requests in flight finish
  gpufleet.sglang.sglang_wait_idle:
    port: 30000
    timeout: 300
"""

RETURN = r"""
idle:
  description: Whether the server reported no running or queued request (or does not answer).
  returned: always
  type: bool
requests_at_start:
  description: Requests running or queued at the first read.
  returned: always
  type: int
most_seen:
  description: The most requests seen in one read.
  returned: always
  type: int
seconds:
  description: Seconds the drain took.
  returned: always
  type: float
endpoint:
  description: The endpoint the load was read from.
  returned: always
  type: str
reason:
  description: Why the server is not idle, or why it counts as idle without a load (null otherwise).
  returned: always
  type: str
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_load import wait_idle
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import SERVER_ENDPOINT_ARGS, base_url


def main():
    module = AnsibleModule(
        argument_spec=dict(
            SERVER_ENDPOINT_ARGS,
            timeout=dict(type="int", default=300),
            poll_interval=dict(type="float", default=0.5),
            fail_when_busy=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    host = socket.gethostname()
    if p["timeout"] < 1 or p["poll_interval"] <= 0 or not 1 <= p["port"] <= 65535:
        module.fail_json(msg="host %s: timeout must be at least 1, poll_interval more than 0 and port 1-65535" % host)
    url = base_url(p["host"], p["port"])
    result = wait_idle(url, p["timeout"], p["poll_interval"])
    if not result["idle"] and p["fail_when_busy"]:
        module.fail_json(msg="host %s: %s did not drain: %s" % (host, url, result["reason"]), **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
