# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling deployment's own decisions across hosts (the action gpufleet.sglang.sglang_dflash_rollout, run by
playbooks/deploy_dflash.yml): whether a host's batch starts, what a host's result says when it ends, the summary.

Each host's one result fact, sglang_dflash_result, is all that is read of it: {host, surveyed, nothing_to_do,
metrics_target, kind, interrupted, batch, state, reason, services, canary, drafters} (the operator's guide describes
it). state: None while a host is under way, "done" when its role ended, "failed" (refused, rolled back, its canary
failed or held) or "not started" (an earlier batch or the canary stopped the rollout). Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _canary

DONE, FAILED, NOT_STARTED = "done", "failed", "not started"


def rollout_stopped(results, hosts, max_fail_percentage=0, batch=None):
    """Why the rollout must not start another batch ('' to go on): an earlier batch in which more than
    max_fail_percentage of the hosts did not end done (failed, refused, unreachable).

    batch: the asking host's own batch, which is under way and never counts. Its hosts read each other's results
    while they start (a host's worker sees the results the controller has processed before it forked): counted,
    the hosts still starting or switching were failures, and with a batch larger than the forks a whole batch
    stopped itself (serial 100% at 32 hosts and 16 forks: 26 hosts "not started", rc 0)."""
    batches = []
    for host in hosts:
        recorded = (results.get(host) or {}).get("batch")
        if recorded and list(recorded) not in batches and list(recorded) != list(batch or []):
            batches.append(list(recorded))
    for number, earlier in enumerate(batches, 1):
        failed = [h for h in earlier if (results.get(h) or {}).get("state") != DONE]
        if failed and len(failed) * 100.0 / len(earlier) > float(max_fail_percentage or 0):
            return ("the rollout stopped after batch %d (%s): %d of %d host(s) failed (%s), more than "
                    "sglang_dflash_max_fail_percentage=%s%%"
                    % (number, _some(earlier), len(failed), len(earlier), _some(failed), max_fail_percentage))
    return ""


def _some(hosts, most=5):
    """A few host names (a summary line per host must stay a line at 100 hosts)."""
    hosts = list(hosts)
    return ", ".join(hosts[:most]) + (" and %d more" % (len(hosts) - most) if len(hosts) > most else "")


def canary_plan(hosts, spec, batch=1):
    """{count, hosts, baseline_hosts, problem}: the canary hosts (the first `count` of the play) and the others."""
    hosts = list(hosts or [])
    count, problem = _canary.canary_count(spec, hosts)
    return {"count": count, "hosts": hosts[:count], "baseline_hosts": hosts[count:], "problem": problem}


def start_batch(results, hosts, batch, host, max_fail_percentage=0, canary=None):
    """{start, in_canary, canary, result}: whether this host's batch starts, and the host's result from now on.

    A host whose survey found nothing to do (and that is no canary) does not start: it ends done with the services
    the survey reported, at the cost of that one module run."""
    plan = canary_plan(hosts, canary)
    own = dict(results.get(host) or {}, host=host, batch=list(batch))
    stopped = _canary.stopped(dict((h, (results.get(h) or {}).get("canary")) for h in hosts)) or \
        rollout_stopped(results, hosts, max_fail_percentage, batch)
    in_canary = host in plan["hosts"]
    if stopped:
        own.update(state=NOT_STARTED, reason=stopped)
    elif own.get("nothing_to_do") and not in_canary:
        own.update(state=DONE, reason=None)
    else:
        own.update(state=None, reason=None, services=[])
    return {"start": own["state"] is None, "in_canary": in_canary, "canary": plan, "result": own}


def failed(result, host, reason):
    """The host's result once it failed (refused, rolled back, its canary stage failed)."""
    return dict(result or {}, host=host, state=FAILED, reason=reason or "unknown failure")


def finished(result, host, drafters=None):
    """The host's result once its role ended (every selected service done)."""
    return dict(result or {}, host=host, state=(result or {}).get("state") or DONE,
                drafters=list(drafters or (result or {}).get("drafters") or []))


def metrics_targets(results, hosts):
    """[{name, url, instance?}] of hosts, as each host's survey said its metrics are read."""
    return [(results.get(h) or {}).get("metrics_target") or {"name": h, "url": None} for h in hosts]
