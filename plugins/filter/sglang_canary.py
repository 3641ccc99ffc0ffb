# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the canary stage (its hosts, what to observe, the verdict; logic in plugin_utils/_canary.py) and of
the speed probe at load (its levels; plugin_utils/_speed_gates.py).

Documented in plugins/filter/<name>.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _canary, _speed_gates


def sglang_speed_probe_levels(configured, load=None, cap=64):
    """The speed probe's concurrency levels (see _speed_gates.probe_levels)."""
    return _speed_gates.probe_levels(list(configured or []), load, int(cap))


def sglang_canary_plan(hosts, canary, batch=1):
    """{count, hosts, serial, problem}: the canary hosts (the first `count` of the play) and the play's batches."""
    hosts = list(hosts or [])
    count, problem = _canary.canary_count(canary, hosts)
    serial = [count, batch] if count else [batch]
    return {"count": count, "hosts": hosts[:count], "serial": serial, "problem": problem}


def sglang_canary_targets(hostvars, hosts):
    """[{name, url, instance}] to observe: sglang_dflash_metrics_url, else the gateway's worker URL of each host."""
    targets = []
    for host in hosts:
        hv = hostvars[host]
        url = hv.get("sglang_dflash_metrics_url") or hv.get("sglang_dflash_gateway_worker_url")
        if not url:
            port = hv.get("sglang_dflash_port") or 30000
            url = "http://%s:%s" % (hv.get("ansible_host") or host, port)
        target = {"name": host, "url": str(url)}
        if hv.get("sglang_dflash_prometheus_instance"):
            target["instance"] = str(hv["sglang_dflash_prometheus_instance"])
        targets.append(target)
    return targets


def sglang_canary_verdict(observed, hostvars, canary_hosts, baseline_hosts, thresholds=None, min_requests=10,
                          on_inconclusive="hold"):
    """The canary's verdict over the observed window and what the rollout does (see _canary.judge and decide).

    The acceptance length's reference, where the baseline does not speculate, is each canary host's speed probe
    after its switch (the role's sglang_dflash__speed_after)."""
    limits, problem = _canary.thresholds(dict(thresholds or {}))
    observed = dict(observed or {})
    if problem:
        return {"verdict": "fail", "action": "hold", "failed": [], "inconclusive": [], "figures": {},
                "message": problem + "; nothing more is switched"}
    probe_accept = {}
    for host in canary_hosts or []:
        after = hostvars[host].get("sglang_dflash__speed_after") or {}
        if after.get("accept_length") is not None:
            probe_accept[host] = after["accept_length"]
    problems = list(observed.get("problems") or [])
    result = _canary.judge(observed.get("figures") or {}, list(canary_hosts or []), list(baseline_hosts or []),
                           limits, int(min_requests), probe_accept, observed.get("gateway"),
                           observed.get("source"), "; ".join(problems) or None, observed.get("window_s"))
    result["notes"] = list(observed.get("notes") or [])
    if result["notes"]:
        result["message"] += " (%s)" % "; ".join(result["notes"])
    return _canary.decide(result, on_inconclusive)


def sglang_canary_record(record, result):
    """The host's record of its last switch with the canary's verdict and figures added (see _canary.record)."""
    merged = dict(record or {})
    merged["canary"] = _canary.record(result)
    return merged


def sglang_canary_stopped(hostvars, hosts):
    """Why the later batches must not start after the canary ('' to go on)."""
    return _canary.stopped(dict((h, hostvars[h].get("sglang_dflash_canary_result")) for h in hosts))


def sglang_canary_refusal(plan, source, host):
    """{problem, reason}: why the canary cannot start on host ('' both when it can; see _canary.refusal)."""
    return _canary.refusal((plan or {}).get("problem"), dict(source or {}), host)


def sglang_canary_source_line(source, hosts):
    """Where the canary's figures will come from (see _canary.source_line)."""
    return _canary.source_line(list(hosts or []), dict(source or {}))


def sglang_canary_stage_failed(result, failure_msg):
    """{reason, result}: a canary host whose stage failed, its rollout held (see _canary.stage_failed)."""
    return _canary.stage_failed(result, failure_msg)


class FilterModule(object):
    def filters(self):
        return {
            "sglang_canary_plan": sglang_canary_plan,
            "sglang_canary_targets": sglang_canary_targets,
            "sglang_canary_verdict": sglang_canary_verdict,
            "sglang_canary_stopped": sglang_canary_stopped,
            "sglang_canary_record": sglang_canary_record,
            "sglang_speed_probe_levels": sglang_speed_probe_levels,
            "sglang_canary_refusal": sglang_canary_refusal,
            "sglang_canary_source_line": sglang_canary_source_line,
            "sglang_canary_stage_failed": sglang_canary_stage_failed,
        }
