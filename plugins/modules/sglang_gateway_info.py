#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_gateway_info
short_description: List the workers of SGLang gateways (SMG or HAProxy) and where each is in rotation
version_added: "0.1.0"
description:
  - Reads every gateway in its own protocol (module_utils/gateways), as M(gpufleet.sglang.sglang_gateway_worker)
    does, and changes nothing. The fleet report's gateway column is built from it.
  - A gateway that cannot be read is returned with its C(error) and no workers; the module itself fails only on
    bad options.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  gateways:
    description:
      - The gateways, each C(kind) (C(smg), the default, or C(haproxy)), C(url) and, for HAProxy, C(backend); as
        in M(gpufleet.sglang.sglang_gateway_worker).
    type: list
    elements: dict
    default: []
  gateway_urls:
    description: SMG gateways by URL alone.
    type: list
    elements: str
    default: []
  token:
    description: "An admin key of the SMG gateways, sent as C(Authorization: Bearer ...)."
    type: str
  timeout:
    description: Seconds to wait for each gateway's answer.
    type: int
    default: 10
requirements:
  - Python 3.8 or newer, standard library only.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
seealso:
  - module: gpufleet.sglang.sglang_gateway_worker
"""

EXAMPLES = r"""
- name: Where each worker is in rotation
  gpufleet.sglang.sglang_gateway_info:
    gateways:
      - {kind: smg, url: "http://127.0.0.1:30080"}
      - {kind: haproxy, url: "unix:///run/haproxy/admin.sock", backend: sglang}
    token: "{{ gateway_admin_key }}"
  delegate_to: lb-1.example.internal
  register: gateway_read
"""

RETURN = r"""
gateways:
  description:
    - Each gateway, C(kind), C(url), C(backend) (HAProxy), C(key) (kind, url and backend in one string), C(error)
      (null, or why it could not be read) and C(workers), each with C(url), C(id), C(status), C(state) (in
      rotation, out of rotation (why)) and C(in_flight) (requests the gateway has in flight to it, where it says).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.seam import declarations, read


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gateways=dict(type="list", elements="dict", default=[]),
            gateway_urls=dict(type="list", elements="str", default=[]),
            token=dict(type="str", no_log=True),
            timeout=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    p = module.params
    declared, problems = declarations(p["gateways"], p["gateway_urls"])
    if p["timeout"] < 1:
        problems.append("timeout must be at least 1, not %d" % p["timeout"])
    if problems:
        module.fail_json(msg="; ".join(problems), gateways=[])
    module.exit_json(changed=False, gateways=read(declared, p["token"], p["timeout"]))


if __name__ == "__main__":
    main()
