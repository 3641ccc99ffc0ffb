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
  - Talks to the admin API of SGLang gateways (SMG, the SGLang Model Gateway, formerly sglang-router, 1.13).
  - C(state=absent) removes the worker from every gateway that lists it and waits until none lists it any more
    (SMG stops routing to a removed worker at once and drops it from its list about 5 s later).
  - C(state=present) adds the worker to every gateway that lacks it (waiting while a removal under way still holds
    its URL) and waits until each lists it as ready.
  - C(state=registered) changes nothing; it fails unless every gateway answers, accepts O(token) and lists the worker,
    naming the gateway and what it lists. Run it before a change.
  - Usually delegated to a host that reaches the gateways (the controller).
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  gateway_urls:
    description: The gateways, for example C(http://gateway-1:30000).
    type: list
    elements: str
    required: true
  worker_url:
    description: The worker's URL as the gateways know it, for example C(http://10.0.0.12:30000).
    type: str
    required: true
  token:
    description: "An admin key of the gateways, sent as C(Authorization: Bearer ...)."
    type: str
  state:
    description: What to make true.
    type: str
    choices: [absent, present, registered]
    default: present
  timeout:
    description: Seconds to wait for the gateways to drop the worker, or to list it as ready.
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
  - module: gpufleet.sglang.sglang_wait_idle
  - name: SMG control-plane operations
    description: The gateway's worker API.
    link: https://github.com/lightseekorg/smg
"""

EXAMPLES = r"""
- name: Refuse early when the gateway does not know this host
  gpufleet.sglang.sglang_gateway_worker:
    gateway_urls: [http://127.0.0.1:30080]
    worker_url: http://10.0.0.12:30000
    token: "{{ gateway_admin_key }}"
    state: registered
  delegate_to: localhost

- name: Out of rotation
  gpufleet.sglang.sglang_gateway_worker:
    gateway_urls: [http://127.0.0.1:30080]
    worker_url: http://10.0.0.12:30000
    token: "{{ gateway_admin_key }}"
    state: absent
  delegate_to: localhost
"""

RETURN = r"""
gateways:
  description:
    - The worker in each gateway at the end, C(gateway), C(state) (in rotation, out of rotation or not registered),
      C(status), C(id).
  returned: always
  type: list
  elements: dict
changed_gateways:
  description: The gateways the worker was removed from, or added to.
  returned: always
  type: list
  elements: str
seconds:
  description: Seconds the change and the wait took.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateway import (
    Gateway,
    GatewayError,
    describe,
    put_back,
    require_registered,
    take_out,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gateway_urls=dict(type="list", elements="str", required=True),
            worker_url=dict(type="str", required=True),
            token=dict(type="str", no_log=True),
            state=dict(type="str", default="present", choices=["absent", "present", "registered"]),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    p = module.params
    bad = [u for u in p["gateway_urls"] if not str(u).startswith(("http://", "https://"))]
    if bad or not p["gateway_urls"]:
        module.fail_json(msg="gateway_urls must be http:// or https:// URLs, not %s" % (bad or "an empty list"))
    if not p["worker_url"].startswith(("http://", "https://")):
        module.fail_json(msg="worker_url must be an http:// or https:// URL, not %r" % p["worker_url"])
    if p["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1, not %d" % p["timeout"])
    gateways = [Gateway(url, p["token"]) for url in p["gateway_urls"]]
    try:
        if p["state"] == "registered":
            module.exit_json(changed=False, gateways=require_registered(gateways, p["worker_url"]),
                             changed_gateways=[], seconds=0.0)
        if p["state"] == "absent":
            result = take_out(gateways, p["worker_url"], p["timeout"], dry_run=module.check_mode)
            changed_gateways = result["removed_from"]
        else:
            result = put_back(gateways, p["worker_url"], p["timeout"], dry_run=module.check_mode)
            changed_gateways = result["added_to"]
        module.exit_json(changed=result["changed"], gateways=describe(gateways, p["worker_url"]),
                         changed_gateways=changed_gateways, seconds=result["seconds"])
    except GatewayError as exc:
        module.fail_json(msg=str(exc), gateways=[], changed_gateways=[], seconds=0.0)


if __name__ == "__main__":
    main()
