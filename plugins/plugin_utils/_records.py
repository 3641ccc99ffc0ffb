# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every record the role and the fleet report keep, each built by one function here; templates only render.

- host_result: what a run did on a host (sglang_dflash_result, the play's summary);
- rollout_record: what a switch did and measured, kept on the host (JSON) for the fleet report;
- fleet_row: one host of the fleet report, with or without facts; fleet_rows: every host with its gateways.

Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways import seam as gateways
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.base import same_url
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _canary
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._drafter_delivery import drafter_state
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._host_state import switch_state, written_options
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._release_checks import why_not
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._unit_text import text_sha256

# The facts a fleet row leaves out: the module's own bookkeeping, and the release's full flag list
# (hundreds of flags per host would make the report huge).
_FACTS_NOT_IN_ROW = ("flags", "changed", "failed", "invocation")


def _number(value):
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


MEASUREMENT_FIELDS = ("measured", "problem", "tokens_per_s", "latency_s_median", "accept_length",
                      "accept_length_source", "requests", "max_new_tokens", "levels")


def _measurement(result):
    """The figures of a sglang_speed_probe result; None when it was not run (skipped or absent)."""
    if not result or result.get("skipped") or "measured" not in result:
        return None
    return dict((k, result.get(k)) for k in MEASUREMENT_FIELDS)


def traffic_figures(plan, out_of_rotation_s=None, drain=None):
    """How the host left and rejoined the traffic: gateways, time out of rotation, the drain, how a stop goes."""
    drain = drain or {}
    drained = drain if "idle" in drain else {}  # a drain that did not run (skipped) has no figures
    return {"gateways": ((plan or {}).get("gateway") or {}).get("urls"),
            "out_of_rotation_s": _number(out_of_rotation_s),
            "drain_s": drained.get("seconds"), "drained_requests": drained.get("requests_at_start"),
            "stop": ((plan or {}).get("stop") or {}).get("summary")}


def host_result(plan, facts, host, observed):
    """What this run did on the host: the plan's change and what the run observed.

    observed: ready (sglang_wait_ready's result), speed (the speed probe's verdict), out_of_rotation_s, drain
    (sglang_wait_idle's result), check_mode. Absent keys: not observed in this run.
    """
    package = (facts or {}).get("package") or {}
    ready = observed.get("ready") or {}
    return {
        "host": host, "unit": plan.get("unit"), "mode": plan.get("mode"),
        "release": package.get("version"), "install": package.get("install"),
        "algorithm": plan.get("algorithm"), "fallback": plan.get("fallback"),
        # Limits of the release the operator accepted (sglang_dflash_allow_release_limits), for the summary.
        "accepted_limits": (plan.get("release_limits") or {}).get("accepted") or [],
        "changed": plan.get("needs_change"), "changes": plan.get("changes"),
        "old_exec_start": plan.get("old_exec_start"), "new_exec_start": plan.get("exec_start"),
        "files": [f.get("path") for f in (plan.get("files") or {}).values()],
        # Where this service's record is kept (the canary adds its verdict there once judged).
        "record": ((facts or {}).get("managed_paths") or {}).get("rollout_record"),
        "healthy": bool(ready.get("ready", False)),
        "time_to_healthy_s": ready.get("since_start_s") if plan.get("needs_change") else None,
        "check_mode": bool(observed.get("check_mode")),
        "speed": observed.get("speed"),
        "traffic": traffic_figures(plan, observed.get("out_of_rotation_s"), observed.get("drain")),
    }


def rollout_record(plan, facts, measurements, outcome, reason, when):
    """What a switch did and measured, as the host keeps it (JSON) for the fleet report.

    measurements: {before, after} (sglang_speed_probe results, or None), verdict (the speed probe's),
    drain (sglang_wait_idle's result), out_of_rotation_s and canary (the canary's result, when judged).
    outcome: switched | rolled back.
    """
    measurements = measurements or {}
    verdict = measurements.get("verdict") or {}
    settings = (plan or {}).get("settings") or {}
    package = (facts or {}).get("package") or {}
    switched = outcome == "switched"
    return {
        # What later runs compare with (the host's state, the revert): the package, the operator's files and
        # what we wrote, as they were at the switch.
        "package": {"version": package.get("version"), "record_sha256": package.get("record_sha256")},
        "operator_files": ((facts or {}).get("unit") or {}).get("operator_files"),
        "files": _written_files(plan) if switched else {},
        "written_options": written_options(((plan.get("files") or {}).get("config") or {}).get("content"))
        if switched else [],
        # The units this service's switch stopped (those on its GPUs, or on none), which a revert may start again.
        "stopped_units": [unit_name(u) for u in plan.get("stop_units_now", settings.get("stop_units")) or []]
        if switched and plan.get("starts_server") else [],
        "traffic": traffic_figures(plan, measurements.get("out_of_rotation_s"), measurements.get("drain")),
        "time": when, "unit": plan.get("unit"), "outcome": outcome, "reason": reason,
        "asked_algorithm": settings.get("algorithm"), "algorithm": plan.get("algorithm"),
        "fallback": plan.get("fallback"), "release": ((facts or {}).get("package") or {}).get("version"),
        "before": _measurement(measurements.get("before")),
        "after": _measurement(measurements.get("after")),
        # The first generation of the new server (what speculation did for it; verify_dflash.yml compares with it).
        "proof": _proof(measurements.get("proof")),
        "speedup": verdict.get("speedup"), "speed_summary": verdict.get("summary"),
        "gates": {"min_accept_length": settings.get("min_accept_length"), "min_speedup": settings.get("min_speedup"),
                  "passed": verdict.get("passed"), "problems": verdict.get("problems") or [],
                  "notes": verdict.get("notes") or []},
        # The canary's verdict when this host was a canary (a rollback's record; a pass or a hold adds it to the
        # switch's record once judged).
        "canary": _canary.record(measurements.get("canary")),
    }


def _proof(generation):
    if not isinstance(generation, dict) or not generation.get("ok"):
        return None
    return {"completion_tokens": generation.get("completion_tokens"), "verify_steps": generation.get("verify_steps"),
            "accept_length": generation.get("accept_length")}


def _written_files(plan):
    """{path: sha256} of the files a switch writes, to tell a hand edit from what we wrote."""
    files = plan.get("files") or {}
    written = {}
    config = files.get("config") or {}
    if config.get("content") is not None:
        written[config["path"]] = text_sha256(config["content"])
    if (files.get("env") or {}).get("present") and plan.get("env_content") is not None:
        written[files["env"]["path"]] = text_sha256(plan["env_content"])
    return written


def fleet_row(host, facts=None, plan=None, algorithm=None, reached=True):
    """One host of the fleet report. With facts and the plan: ready or blocked, and why. Without: failed
    (reached, but no facts) or unreachable."""
    if facts is not None and facts.get("unreachable"):
        # The facts task of a play with ignore_unreachable: its result is the connection's error, not facts.
        row = fleet_row(host, algorithm=algorithm, reached=False)
        row["reasons"].append(str(facts.get("msg") or "")[:300])
        return row
    if facts is None or plan is None:
        return {"host": host, "status": "failed" if reached else "unreachable",
                "reasons": ["no facts: the host %s (see the play output)"
                            % ("failed while gathering" if reached else "was unreachable")],
                "facts": None, "flag_names": {}, "changes": None, "algorithm": algorithm or "DFLASH",
                "why_not": "other",
                "gateway": None, "switch": None, "drafter": None}
    shown = dict((k, v) for k, v in facts.items() if k not in _FACTS_NOT_IN_ROW)
    shown["flags"] = dict((k, v) for k, v in (facts.get("flags") or {}).items() if k != "list")
    service = facts.get("service") or {}
    # The algorithm asked of this service (an entry of sglang_dflash_services may ask another).
    algorithm = (plan.get("settings") or {}).get("algorithm") or algorithm
    return {"host": host, "unit": plan.get("unit"), "port": service.get("port"),
            "gpus": (service.get("gpus") or {}).get("indexes"), "gpu_map": gpu_map(facts),
            # The port and GPUs are what runs; the unit's files may say otherwise since (restart pending).
            "environment_drift": list(service.get("environment_drift") or []),
            "environment_note": service.get("environment_note"),
            "status": "blocked" if plan.get("errors") else "ready",
            "reasons": list(plan.get("errors") or []), "why_not": why_not(plan),
            "algorithm": algorithm, "mode": plan.get("mode"),
            "flag_names": plan.get("flag_names"), "changes": plan.get("changes"), "gateway": plan.get("gateway"),
            "switch": plan.get("switch_state") or switch_state(facts, plan),
            "drafter": drafter_state(plan.get("settings") or {}, facts.get("draft_model")), "facts": shown}


def gpu_map(facts):
    """[{index, name, services, holders}] of the host's GPUs: the SGLang services given each GPU (by
    CUDA_VISIBLE_DEVICES, or holding it; a service that is given none sees every GPU) and the units whose
    processes hold it."""
    gpus = (facts.get("gpus") or {}).get("gpus") or []
    processes = (facts.get("gpus") or {}).get("processes") or []
    out = []
    for gpu in gpus:
        index = gpu.get("index")
        services = [s["unit"] for s in facts.get("sglang_units") or []
                    if (s.get("gpus") or {}).get("indexes") is None or index in s["gpus"]["indexes"]]
        holders = sorted(set(p.get("unit") or "pid %s" % p.get("pid")
                             for p in processes if p.get("gpu_index") == index))
        out.append({"index": index, "name": gpu.get("name"), "services": services, "holders": holders})
    return out


def gateway_workers(read):
    """{gateway key: [workers] or the reason it could not be read} from sglang_gateway_info's gateways (each
    worker with its state, as module_utils/gateways names it)."""
    out = {}
    for gateway in read or []:
        if gateway.get("error") or not isinstance(gateway.get("workers"), list):
            out[gateway.get("key")] = "not read: %s" % (gateway.get("error") or "no answer")
        else:
            out[gateway.get("key")] = gateway["workers"]
    return out


def gateway_state(gateway, workers_by_gateway):
    """In rotation / out of rotation (why) / not registered, per gateway, for a host's row; None without
    gateways. The states are the seam's (module_utils/gateways): this only finds the host's worker."""
    if not gateway:
        return None
    states = []
    for declaration in gateway.get("gateways") or []:
        workers = workers_by_gateway.get(gateways.key(declaration))
        if workers is None:
            state = "not read"
        elif isinstance(workers, str):
            state = workers
        else:
            worker = next((w for w in workers if same_url(w.get("url"), gateway.get("worker_url"))), None)
            state = worker["state"] if worker and worker.get("state") else gateways.state(worker)
        states.append({"gateway": declaration.get("url"), "state": state})
    return {"worker_url": gateway.get("worker_url"), "states": states,
            "summary": "; ".join(sorted(set(s["state"] for s in states)))}


def collect_rows(results, hosts, cached=None, from_cache=False):
    """One report row per service, sorted by host (a host's services in the order they were selected), before their
    place in the gateways is known (place_rows).

    This run's (from_cache false): results is {host: its sglang_dflash_result of this run, or None}: its
    fleet_rows (the role's report tasks), else a row without facts, unreachable or failed with the reason the result
    gives; a host with no result was not reached by this run. From Ansible's fact cache (from_cache true, no host
    contacted): cached is {host: the rows of its last gather (sglang_fleet_cached_rows, gateway state as read then)},
    each marked from_cache, or a row of status unknown when the cache has none.
    """
    rows = []
    for host in sorted(hosts):
        if from_cache:
            kept = [dict(r, from_cache=True) for r in (cached or {}).get(host) or []]
            if not kept:
                row = fleet_row(host)
                row.update(status="unknown", gathered_at=None, from_cache=True,
                           reasons=["no row in Ansible's fact cache (not gathered with fact_caching on, or expired): "
                                    "run playbooks/gather_facts.yml"])
                kept = [row]
            rows.extend(kept)
            continue
        result = results.get(host) or {}
        services = [dict(row) for row in result.get("fleet_rows") or []]
        if not services:
            # No rows: the report tasks could not reach the host or could not read it (the result says why), or this
            # run did not target it.
            row = fleet_row(host, algorithm=result.get("algorithm"),
                            reached=bool(result) and not result.get("unreachable"))
            if result.get("msg"):
                row["reasons"].append(str(result["msg"])[:300])
            services = [row]
        rows.extend(services)
    return rows


def gateways_to_read(rows):
    """The gateways the hosts of the rows are behind, each once (sglang_dflash_gateways, sglang_dflash_gateway_urls)."""
    out = []
    for row in rows:
        for declaration in (row.get("gateway") or {}).get("gateways") or []:
            if declaration not in out:
                out.append(declaration)
    return out


def place_rows(rows, gateway_read=None, now=None):
    """The rows of this run with each service's place in its gateways (gateway_read: sglang_gateway_info's gateways)
    and the time they were gathered; rows from the fact cache are kept as they were."""
    workers = gateway_workers(gateway_read)
    placed = []
    for row in rows:
        if row.get("from_cache"):
            placed.append(row)
            continue
        placed.append(dict(row, gateway=gateway_state(row.get("gateway"), workers), gathered_at=now,
                           from_cache=False))
    return placed
