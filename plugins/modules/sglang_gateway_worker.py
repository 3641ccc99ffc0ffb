#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_gateway_worker
short_description: Take an SGLang worker out of its gateways' rotation, or put it back
version_added: "0.1.0"
description:
  - Speaks to each gateway in its own protocol (module_utils/gateways). SMG, the SGLang Model Gateway (formerly
    sglang-router, 1.13), through its admin API; HAProxy through the Runtime API of its stats socket.
  - C(state=draining) stops routing new requests to the worker and lets those in flight go on (SMG removes it and
    the module waits until SMG no longer lists it, about 5 s; HAProxy sets the server to DRAIN).
  - C(state=absent) is C(draining), then waits until no gateway that keeps its workers (HAProxy) has a request
    in flight to it, and sets such a server to MAINT (out for good, no health check) until it is put back.
  - C(state=present) routes to the worker again through every gateway that does not (SMG adds it, waiting while a
    removal under way still holds its URL; HAProxy sets the server READY, moved to O(worker_url) first when it was
    at O(previous_worker_url)) and waits until each has it in rotation.
  - C(state=registered) changes nothing; it fails unless every gateway answers, accepts O(token) (SMG), has the
    socket at the admin level (HAProxy) and knows the worker (or, with O(allow_missing), does not need to), naming
    each gateway that does not and what to set; even then RV(gateways) says where each gateway that answered has the
    worker. Run it before a change.
  - Usually delegated to a host that reaches the gateways (the controller for SMG; the host that runs HAProxy,
    for its unix socket).
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  gateways:
    description:
      - The gateways, each C(kind) (C(smg), the default, or C(haproxy)) and C(url) (SMG, C(http://gateway-1:30000);
        HAProxy, its stats socket, C(unix:///run/haproxy/admin.sock) or C(tcp://127.0.0.1:9999)); HAProxy also
        C(backend), the backend that holds the fleet's servers.
    type: list
    elements: dict
    default: []
  gateway_urls:
    description: SMG gateways by URL alone (the same as O(gateways) entries of kind C(smg)).
    type: list
    elements: str
    default: []
  worker_url:
    description:
      - The worker's URL as the gateways know it, for example C(http://10.0.0.12:30000). HAProxy's server is the
        backend's C(server) line at that address and port.
    type: str
    required: true
  previous_worker_url:
    description:
      - With C(state=present), where the worker was before a switch that moved it to another port. A gateway
        that keeps its workers (HAProxy) moves that server to O(worker_url).
    type: str
  token:
    description: "An admin key of the SMG gateways, sent as C(Authorization: Bearer ...)."
    type: str
  state:
    description: What to make true.
    type: str
    choices: [absent, draining, present, registered]
    default: present
  allow_missing:
    description:
      - With C(state=registered), a gateway that answers but does not list the worker passes - a worker this
        collection took out in a run that was cut (its intent on the host says so) and now puts back.
    type: bool
    default: false
  restrict_to:
    description:
      - With C(state=present), put the worker back only into these gateways (their URLs) - those a switch took it out
        of - and leave it as it is in the others. Null, the default - every gateway.
    type: list
    elements: str
  timeout:
    description:
      - Seconds to wait for the gateways to stop routing to the worker (and, with C(state=absent), for HAProxy's
        requests in flight to it to finish), or to have it in rotation again.
    type: int
    default: 60
requirements:
  - Python 3.8 or newer, standard library only.
attributes:
  check_mode:
    support: full
    details:
      - Reads the gateways and says what would change.
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.sglang_gateway_info
  - module: gpufleet.sglang.sglang_wait_idle
  - name: SMG control-plane operations
    description: The gateway's worker API.
    link: https://github.com/lightseekorg/smg
  - name: HAProxy Runtime API
    description: C(set server), C(show servers state), C(show stat).
    link: https://docs.haproxy.org/2.6/management.html#9.3
"""

EXAMPLES = r"""
- name: Refuse early when a gateway does not know this host
  gpufleet.sglang.sglang_gateway_worker:
    gateways:
      - {kind: smg, url: "http://127.0.0.1:30080"}
      - {kind: haproxy, url: "unix:///run/haproxy/admin.sock", backend: sglang}
    worker_url: http://10.0.0.12:30000
    token: "{{ gateway_admin_key }}"
    state: registered
  delegate_to: lb-1.example.internal

- name: Out of rotation; the requests in flight go on
  gpufleet.sglang.sglang_gateway_worker:
    gateway_urls: [http://127.0.0.1:30080]
    worker_url: http://10.0.0.12:30000
    token: "{{ gateway_admin_key }}"
    state: draining
  delegate_to: localhost
"""

RETURN = r"""
gateways:
  description:
    - The worker in each gateway at the end, C(gateway), C(kind), C(state) (in rotation, out of rotation (why) or
      not registered), C(status), C(id), C(in_flight) (requests the gateway has in flight to it, where it says).
  returned: always
  type: list
  elements: dict
changed_gateways:
  description: The gateways the worker was taken out of, or put back into.
  returned: always
  type: list
  elements: str
in_flight:
  description:
    - With C(state=draining) or C(absent), the requests the gateways had in flight to the worker when it left
      them, where they say (HAProxy's sessions, SMG's load); null otherwise.
  returned: always
  type: int
seconds:
  description: Seconds the change and the wait took.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.base import same_url
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.seam import (
    GatewayError,
    connect,
    declarations,
    describe,
    preflight,
    put_back,
    take_out,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gateways=dict(type="list", elements="dict", default=[]),
            gateway_urls=dict(type="list", elements="str", default=[]),
            worker_url=dict(type="str", required=True),
            previous_worker_url=dict(type="str"),
            token=dict(type="str", no_log=True),
            state=dict(type="str", default="present", choices=["absent", "draining", "present", "registered"]),
            allow_missing=dict(type="bool", default=False),
            restrict_to=dict(type="list", elements="str"),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    p = module.params
    declared, problems = declarations(p["gateways"], p["gateway_urls"])
    if not problems and not declared:
        problems.append("no gateway: set gateways (or gateway_urls)")
    for option in ("worker_url", "previous_worker_url"):
        if p[option] is not None and not p[option].startswith(("http://", "https://")):
            problems.append("%s must be an http:// or https:// URL, not %r" % (option, p[option]))
    if p["timeout"] < 1:
        problems.append("timeout must be at least 1, not %d" % p["timeout"])
    if problems:
        module.fail_json(msg="; ".join(problems), gateways=[], changed_gateways=[], in_flight=None, seconds=0.0)
    if p["restrict_to"] is not None:
        declared = [d for d in declared if any(same_url(d["url"], url) for url in p["restrict_to"])]
        if not declared:
            module.exit_json(changed=False, gateways=[], changed_gateways=[], in_flight=None, seconds=0.0)
    gateways = [connect(d, p["token"]) for d in declared]
    if p["state"] == "registered":
        states, problems = preflight(gateways, p["worker_url"], p["allow_missing"])
        if problems:
            module.fail_json(msg="; ".join(problems), gateways=states, changed_gateways=[], in_flight=None,
                             seconds=0.0)
        module.exit_json(changed=False, gateways=states, changed_gateways=[], in_flight=None, seconds=0.0)
    try:
        if p["state"] in ("absent", "draining"):
            result = take_out(gateways, p["worker_url"], p["timeout"], park=p["state"] == "absent",
                              dry_run=module.check_mode)
        else:
            result = put_back(gateways, p["worker_url"], p["timeout"], previous_url=p["previous_worker_url"],
                              dry_run=module.check_mode)
        module.exit_json(changed=result["changed"], gateways=describe(gateways, p["worker_url"]),
                         changed_gateways=result["changed_gateways"], in_flight=result.get("in_flight"),
                         seconds=result["seconds"])
    except GatewayError as exc:
        module.fail_json(msg=str(exc), gateways=[], changed_gateways=[], in_flight=None, seconds=0.0)


if __name__ == "__main__":
    main()
