#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_live_metrics
short_description: Observe SGLang servers' live figures over a window, from Prometheus or their /metrics
version_added: "0.2.0"
description:
  - Observes several SGLang servers over the same window and returns, for each, the figures a canary is judged
    on; decode tokens per second and per running request, inter-token latency p50 and p99, time to first token
    p99, the acceptance length (C(sglang:spec_accept_length)), requests served and aborted.
  - With O(prometheus_url), they come from the operator's Prometheus at the end of the window (PromQL by
    C(instance) label, over the window). Without it, or when that Prometheus does not answer and
    O(fallback_to_scrape) is set, each server's C(/metrics) (SGLang's C(--enable-metrics)) is read every
    O(interval) seconds and the rates and histogram quantiles are computed from the counters.
  - Runs where it is delegated (the role runs it once, on the controller); it waits O(window) seconds.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  targets:
    description: The servers to observe.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The name the figures are returned under (the inventory host).
        type: str
        required: true
      url:
        description: The server's base URL, for C(/metrics).
        type: str
        required: true
      instance:
        description: The server's C(instance) label in Prometheus; default the URL's host and port.
        type: str
  window:
    description: Seconds to observe. 0 only checks that the source answers (a preflight).
    type: int
    default: 600
  interval:
    description: Seconds between two reads of each C(/metrics) (scraping only).
    type: int
    default: 15
  prometheus_url:
    description: The Prometheus to ask (its base URL, such as C(http://prometheus:9090)); null to scrape.
    type: str
  fallback_to_scrape:
    description: When O(prometheus_url) does not answer, scrape each server instead (and say so in RV(notes)).
    type: bool
    default: false
  gateway_metrics_url:
    description: The gateway's Prometheus metrics URL (SMG's C(--prometheus-port)), for its error rate.
    type: str
requirements:
  - Python 3.8 or newer where it runs, standard library only.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
  - gpufleet.sglang.attributes.info_module
notes:
  - It changes nothing; the role gpufleet.sglang.sglang_dflash judges the figures on the controller.
seealso:
  - module: gpufleet.sglang.sglang_speed_probe
"""

EXAMPLES = r"""
- name: Observe two hosts for 10 minutes through the fleet's Prometheus
  gpufleet.sglang.sglang_live_metrics:
    targets:
      - {name: gpu-01, url: "http://10.0.0.1:30000"}
      - {name: gpu-02, url: "http://10.0.0.2:30000"}
    window: 600
    prometheus_url: http://prometheus.example.com:9090
  delegate_to: localhost
  run_once: true
  register: observed
"""

RETURN = r"""
source:
  description: Where the figures came from, C(prometheus) or C(scrape).
  returned: always
  type: str
figures:
  description: Per target name; C(tokens_per_s), C(running_mean), C(tokens_per_s_per_request), C(itl_p50_s),
    C(itl_p99_s), C(ttft_p99_s), C(accept_length), C(requests), C(aborted), C(abort_ratio), C(seconds);
    null where the server reports no such series.
  returned: always
  type: dict
samples:
  description:
    - Per target name, one sample per interval of the window (what a statistical judge compares) - C(host), C(at)
      (the interval's end), C(running) (its running requests), C(decode_per_request), C(itl_p50), C(itl_p99),
      C(ttft_p99), C(accept_length), C(abort_ratio), C(requests), C(tokens_per_s); null where the server reports no
      such series in that interval.
  returned: with a window
  type: dict
interval_s:
  description: The interval in seconds.
  returned: with a window
  type: int
started:
  description: When the window started (seconds since the epoch, the controller's clock).
  returned: with a window
  type: float
gateway:
  description: The gateway's C(error_ratio) over the window; null without O(gateway_metrics_url).
  returned: always
  type: dict
problems:
  description: Why figures are missing (a source that does not answer); empty when all were read.
  returned: always
  type: list
  elements: str
notes:
  description: What was done instead (the fallback to scraping).
  returned: always
  type: list
  elements: str
window_s:
  description: The window in seconds.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible_collections.gpufleet.sglang.plugins.module_utils.live_metrics import observe


def main():
    module = AnsibleModule(
        argument_spec=dict(
            targets=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str", required=True), url=dict(type="str", required=True),
                instance=dict(type="str"))),
            window=dict(type="int", default=600),
            interval=dict(type="int", default=15),
            prometheus_url=dict(type="str"),
            fallback_to_scrape=dict(type="bool", default=False),
            gateway_metrics_url=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for option, low, high in (("window", 0, 86400), ("interval", 1, 3600)):
        if not low <= p[option] <= high:
            module.fail_json(msg="%s must be between %d and %d, not %s" % (option, low, high, p[option]))
    targets = []
    for target in p["targets"]:
        parts = urlsplit(target["url"])
        if parts.scheme not in ("http", "https") or not parts.netloc:
            module.fail_json(msg="host %s: metrics URL %r is not an http(s) URL; set sglang_dflash_metrics_url"
                                 % (target["name"], target["url"]))
        targets.append(dict(target, instance=target.get("instance") or parts.netloc))
    result = observe(targets, p["window"], p["interval"], p["prometheus_url"], p["fallback_to_scrape"],
                     p["gateway_metrics_url"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
