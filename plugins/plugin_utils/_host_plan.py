# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host's whole decision, from its facts and the role's settings (the action gpufleet.sglang.sglang_dflash_plan):
what to read on the host, then for every selected service its plan (deployment or revert), the steps that apply it,
the lines that show it and every reason to refuse it; the gateway checks to make before any change; or, for the fleet
report, each service's row.

The action passes the role's settings in (_settings.settings_from_vars); nothing here reads a variable by name from
Ansible. Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import base_url
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_services import SGLANG_DEFAULT_PORT
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import words_from_pairs
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import (
    _drafter_delivery,
    _experiment,
    _messages,
    _resume,
    _rollout,
    _speculation,
    _steps,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._host_state import is_switched
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._records import fleet_row, host_result
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._revert_plan import revert_plan

# The keys of an entry of sglang_dflash_services that the facts module reads (the rest stays on the controller: an
# entry's environment may hold a token).
_FACTS_ENTRY_KEYS = ("name", "python", "model_path", "draft_model_path")
# What a service's plan keeps of its facts for the steps, the record and the messages: everything but the release's
# flag list (hundreds of flags a host) and the module's own bookkeeping.
_FACTS_LEFT_OUT = ("flags", "invocation", "changed")
TP_FLAGS = ("--tp-size", "--tensor-parallel-size", "--tp")


class HostPlanError(Exception):
    """The settings cannot be read at all (a drafter source set wrong): the host is refused with this message."""


def with_arm(settings):
    """The settings of a host in an experiment's arm (settings["arm"]): the arm's own over the role's (its drafter,
    algorithm, block size, ...). A drafter source of the arm replaces the role's drafter path, and a path the
    source."""
    if not settings.get("arm"):
        return settings
    config, problem = _experiment.settings(settings.get("experiment"))
    if problem:
        raise HostPlanError(problem)
    if settings["arm"] not in [a["name"] for a in config["arms"]]:
        raise HostPlanError("sglang_dflash_arm %s is not an arm of sglang_dflash_experiment (%s)" % (
            settings["arm"], ", ".join(a["name"] for a in config["arms"])))
    overrides = _experiment.arm_settings(config, settings["arm"])
    # An arm's speed is the experiment's to judge, on the fleet's traffic, against the control: not the one-client
    # probe's against the server it replaces (an arm may be slower than a fleet already on DFLASH; that is what the
    # judge tells). The probe still checks its output and the acceptance floor.
    merged = dict(settings, min_speedup=None, **overrides)
    if "drafter" in overrides and "draft_model_path" not in overrides:
        merged["draft_model_path"] = None
    if "draft_model_path" in overrides and "drafter" not in overrides:
        merged["drafter"] = None
    return merged


def resolve_drafters(settings, host, drafters=None):
    """The settings with every service's drafter path: from the drafters this run fetched (drafters: the drafter
    report, sglang_dflash_drafters) or, in a run that fetches nothing, where the verified copy is in the store."""
    settings = dict(settings)
    if drafters is None:
        try:
            sources = _drafter_delivery.drafter_sources(settings.get("drafter"), settings.get("services"), host,
                                                        settings.get("draft_model_path"))
        except _drafter_delivery.DrafterSourceError as exc:
            raise HostPlanError(str(exc)) from None
        drafters = _drafter_delivery.expected_drafters(sources, settings.get("drafter_store_dir"))
    settings["services"] = _drafter_delivery.apply_to_services(settings.get("services") or [], drafters)
    settings["draft_model_path"] = _drafter_delivery.role_path(drafters, settings.get("draft_model_path"))
    return settings


def facts_options(settings):
    """The options of sglang_info for the services these settings select, as the deployment and the report read
    them."""
    services = settings.get("services") or []
    selection = [dict((k, v) for k, v in entry.items() if k in _FACTS_ENTRY_KEYS) for entry in services] \
        if services else [{"name": settings.get("service_name") or "sglang"}]
    launchers = ["sglang.launch_server", settings.get("launcher_module") or "sglang.launch_server"]
    launchers += [e["launcher_module"] for e in services if isinstance(e, dict) and e.get("launcher_module")]
    stop_units = settings.get("stop_units")
    options = {
        "services": selection,
        "launcher_modules": sorted(set(launchers), key=launchers.index),
        "managed_dropin": settings.get("dropin_name"), "managed_env_dir": settings.get("env_dir"),
        "managed_unit_dir": settings.get("unit_dir"), "rollout_record_dir": settings.get("state_dir"),
        "user": settings.get("user"), "flags_method": settings.get("flags_method") or "auto",
        # The plan reads the flags' names, values and choices: their help texts were most of the facts' size.
        "flags_detail": "plan",
        "related_units": stop_units if isinstance(stop_units, list) else [],
    }
    for key, option in (("python", "python"), ("model_path", "model_path"), ("draft_model_path", "draft_model_path"),
                        ("flags_cache", "cache")):
        if settings.get(key):
            options[option] = settings[key]
    return options


def service_facts(facts_result):
    """Each selected service's facts: the entries of the facts module's services, or its whole result when it failed
    before it could select any."""
    return list(facts_result.get("services") or [facts_result])


def _trimmed(facts):
    return dict((k, v) for k, v in (facts or {}).items() if k not in _FACTS_LEFT_OUT)


def plan_host(facts_result, settings, host, check_mode=False, hooks=None, run=None, prompts=None):
    """{services, refusals, lines, gateway_checks, restart_units, nothing_to_do} of one host.

    services: one plan per selected service (the deployment's, or the revert's with settings state=absent), each
    with its steps, lines, the run it resumes (interrupted), the facts it keeps (facts, without the flag list), what
    its record will say it did (outcome), this run's name (run, kept in the intents it writes on the host) and the
    speed probe's prompts (probe_prompts: the operator's list, else their file's lines, else the probe's own).
    """
    decide = PLANS[settings.get("state") or "present"]
    services, refusals, lines, checks = [], [], [], []
    stopped_before = set()
    for facts in selected_services(facts_result, settings):
        plan = decide(facts, settings)
        algorithm = plan.get("algorithm")
        plan["interrupted"] = _resume.interrupted(facts.get("intent"), plan)
        if plan["interrupted"] and plan["interrupted"]["old_active"] is not None:
            # Whether the service ran before the cut run's switch, as that run wrote it down: the unit's state now
            # is that switch's or its rollback's half-way (a crashing new server, a stopped one), and the rollback
            # starts and checks the previous server only where it ran.
            plan["old_active"] = plan["interrupted"]["old_active"]
        plan["steps"] = _steps.service_steps(plan, facts, check_mode, hooks,
                                             bool(settings.get("speed_probe_concurrency")))
        # The units this service's own switch stops (an earlier service of the host stopped the others already): the
        # ones its rollback starts again.
        plan["own_stop_units"] = [u for u in plan.get("stop_units_now") or [] if u not in stopped_before]
        if plan.get("starts_server"):
            stopped_before.update(plan.get("stop_units_now") or [])
        plan["facts"] = _trimmed(facts)
        plan.update(host=host, run=run, outcome=_outcome_of(plan), enable_unit=plan.get("mode") == "install",
                    probe_prompts=list((plan.get("settings") or {}).get("speed_probe_prompts") or prompts or []))
        plan["lines"] = _messages.plan_lines(plan) if not plan["errors"] else []
        if plan["errors"]:
            refusals.append(_messages.refusal_message(plan, facts, host, algorithm))
        elif plan["gateway"] is not None and plan.get("starts_server") and not check_mode:
            checks.append({"unit": plan["unit"], "worker_url": plan["gateway"]["worker_url"],
                           "allow_missing": bool(plan["interrupted"] and plan["interrupted"]["gateway"]),
                           "algorithm": plan.get("algorithm"), "mode": plan.get("mode")})
        lines.extend(plan["lines"])
        services.append(plan)
    restart_units = []
    for plan in services:
        restart_units.extend({"name": u, "enable": bool(plan["settings"].get("disable_stopped_units"))}
                             for u in plan.get("restart_units") or [] if u not in [r["name"] for r in restart_units])
    return {"services": services, "refusals": refusals, "lines": lines, "gateway_checks": checks,
            "restart_units": [] if check_mode else restart_units,
            "nothing_to_do": not refusals and not restart_units and not any(_has_steps(p) for p in services)}


def restart_plan(facts, settings):
    """state=restarted: a switched service restarted as it is, its files untouched, through the switch's steps (out of
    rotation, drained, restarted, proven, back in rotation; rolled back on failure). A service never switched, or
    not running, is left as it is; one whose files differ from what these settings write is refused (deploy_dflash.yml
    writes them and restarts it)."""
    unit = (facts or {}).get("unit") or {}
    if not is_switched(facts) or unit.get("active_state") != "active":
        plan = revert_plan(facts, settings)
        plan.update(mode="restart", needs_change=False, starts_server=False, runs_after=False, restart_units=[])
        plan["changes"]["removed"] = []
        for entry in plan["files"].values():
            entry["changed"] = False
        return plan
    plan = deployment_plan(facts, dict(settings, state="present"))
    if plan["errors"]:
        return plan
    if plan["needs_change"]:
        plan["errors"].append(
            "%s runs other settings than these would write (%s): deploy_dflash.yml writes them and restarts it; a "
            "restart alone uses the settings it was switched with" % (plan["unit"], "; ".join(
                "%s: %s" % (kind, "  ".join(values)) for kind, values in sorted(plan["changes"].items())
                if kind != "kept" and values) or "its files"))
        return plan
    plan.update(mode="restart", needs_change=True, starts_server=True, runs_after=True,
                # As it is: the units the switch stopped were stopped then; one running now was started since, on
                # purpose (a restart is no switch to stop it for).
                stop_units_now=[])
    # The same server before and after: no speedup to prove (its acceptance still is).
    plan["settings"] = dict(plan["settings"], min_speedup=None)
    return plan


PLANS = {"present": deployment_plan, "absent": revert_plan, "restarted": restart_plan}


def selected_services(facts_result, settings):
    """service_facts, only the units sglang_dflash_units names when it names any; with units_only (the units a
    day-two action is for: verify_dflash.yml acts on the services it found degraded or off, not on their siblings),
    only those, and none for an empty list."""
    services = service_facts(facts_result)
    only = set(unit_name(u) for u in settings.get("units") or [])
    if not only and not settings.get("units_only"):
        return services
    return [facts for facts in services if ((facts.get("unit") or {}).get("id") or
                                            unit_name((facts.get("unit") or {}).get("name") or "")) in only]


def _outcome_of(plan):
    if not plan.get("needs_change"):
        return "unchanged"
    return {"revert": "reverted", "restart": "restarted"}.get(plan.get("mode"), "switched")


def _has_steps(plan):
    steps = plan["steps"]
    return steps["wait_gpus"]["wait"] or any(value for key, value in steps.items()
                                             if key not in ("rejoin_gateways", "wait_gpus"))


def report_rows(host, facts_result, settings):
    """The fleet report's rows of one host: each selected service judged by the deployment's own plan, with the run
    that was cut on it, if any."""
    rows = []
    for facts in service_facts(facts_result):
        plan = deployment_plan(facts, settings)
        row = fleet_row(host, facts, plan, settings.get("algorithm"))
        cut = _resume.interrupted(facts.get("intent"), plan)
        row["interrupted"] = cut["line"] if cut else None
        rows.append(row)
    return rows


def verify_targets(facts_result, settings, now):
    """What the day-two check reads: ([{unit, host, port}] of the switched services that run, {unit: record},
    [verdicts of the switched services that do not run: unknown]); services never switched are not checked."""
    servers, records, verdicts = [], {}, []
    for facts in selected_services(facts_result, settings):
        if not is_switched(facts):
            continue
        unit = facts.get("unit") or {}
        record = facts.get("rollout_record") or {}
        records[unit.get("id")] = {} if "error" in record else record
        if unit.get("active_state") != "active":
            verdicts.append(_speculation.not_running(unit.get("id"), unit.get("active_state"), records[unit.get("id")],
                                                     now))
            continue
        # Where our server answers: the revert plan reads it from the command we wrote, else systemd's own expansion
        # of this service's command (the facts' map); never a guess, which could be a sibling's port.
        plan = revert_plan(facts, settings)
        port = plan.get("old_port") or (facts.get("service") or {}).get("port")
        if not port:
            verdicts.append(_speculation.unknown(unit.get("id"), "cannot tell which port its server listens on",
                                                 records[unit.get("id")], now))
            continue
        servers.append({"unit": unit.get("id"), "host": plan.get("old_health_host") or "127.0.0.1", "port": port})
    # Two units at one address: whose server answers there nobody can tell.
    shared = [s for s in servers if [(o["host"], o["port"]) for o in servers].count((s["host"], s["port"])) > 1]
    for server in shared:
        servers.remove(server)
        why = "another switched unit of this host names the same address (%s:%s)" % (server["host"], server["port"])
        verdicts.append(_speculation.unknown(server["unit"], why, records[server["unit"]], now))
    return servers, records, verdicts


def verification(host, verdicts, settings, previous=None, check_mode=False):
    """The day-two result of one host (sglang_dflash_verify): {host, action, services (verdicts), act_on (the units the
    action is for), failing (the lines of the services in sglang_dflash_verify_fail_when), lines}. previous: this run's
    first verification, when a revert or restart acted on its act_on since: each of those units says what was done
    (or would be, in check mode, or was not: a unit still switched after its revert)."""
    action = settings.get("verify_on_degraded") or "report"
    lines = [_speculation.line(host, v) for v in verdicts] or ["%s: no switched service to verify" % host]
    for verdict in verdicts:
        if action == "restart" and verdict["state"] in _speculation.ACTIONABLE and verdict.get("restarted_at"):
            lines.append("%s: %s is %s still after its restart at %s: not restarted again (revert it, or look at it)"
                         % (host, verdict["unit"], verdict["state"], verdict["restarted_at"]))
    fail_when = settings.get("verify_fail_when") or []
    done = []
    if previous:
        checked = [v["unit"] for v in verdicts]
        for before in previous.get("services") or []:
            if before["unit"] not in (previous.get("act_on") or []):
                continue
            if check_mode:
                what = "would be %s (check mode: nothing was changed)" % (
                    "reverted to its previous server" if previous.get("action") == "revert" else "restarted once")
            elif previous.get("action") == "revert":
                what = ("reverted to its previous server by this run" if before["unit"] not in checked else
                        "still switched: its revert did not happen (see the rollout's lines above)")
            else:
                what = "restarted once by this run, verified again above"
            done.append("%s: %s was %s at %s; %s" % (host, before["unit"], before["state"], before.get("time"), what))
    return {"host": host, "action": action, "services": verdicts,
            "act_on": [] if previous else _speculation.act_on(verdicts, action),
            "failing": [_speculation.line(host, v) for v in verdicts if v["state"] in fail_when],
            "lines": lines + done, "counts": dict(_speculation.counts(verdicts))}


def with_speculation(rows, verdicts):
    """The fleet report's rows with each switched service's day-two verdict (row["speculation"])."""
    by_unit = dict((v["unit"], v) for v in verdicts)
    for row in rows:
        row["speculation"] = by_unit.get(row.get("unit"))
    return rows


def metrics_target(host, settings, services):
    """Where this host's live metrics are read: sglang_dflash_metrics_url, else the gateway's worker URL, else its
    service's address (the first selected service's port, or SGLang's default); with its Prometheus instance label."""
    url = settings.get("metrics_url") or settings.get("gateway_worker_url")
    if not url:
        ports = [p.get("old_port") or p.get("port") for p in services if p.get("old_port") or p.get("port")]
        port = settings.get("port") or (ports[0] if ports else SGLANG_DEFAULT_PORT)
        url = base_url(settings.get("gateway_host") or host, port)
    target = {"name": host, "url": str(url)}
    if settings.get("prometheus_instance"):
        target["instance"] = str(settings["prometheus_instance"])
    return target


def survey(host, decided, settings, check_mode=False):
    """What the rollout needs of a host before its first batch (playbooks/deploy_dflash.yml reads every host at once):
    whether it has anything to do (a host with nothing is done: it takes no batch, one module run and no more), what it
    is (GPU model,
    release, tensor parallelism: an experiment compares like with like), where its metrics are read, and for a host
    with nothing to do, each service's result as a deployment reports it."""
    services = decided["services"]
    first = services[0] if services else {}
    facts = first.get("facts") or {}
    gpus = [g.get("name") for g in (facts.get("gpus") or {}).get("gpus") or [] if g.get("name")]
    result = {"host": host, "surveyed": True, "nothing_to_do": decided["nothing_to_do"],
              "refused": bool(decided["refusals"]),
              "metrics_target": metrics_target(host, settings, services),
              "kind": {"gpu": gpus[0] if gpus else None, "release": (facts.get("package") or {}).get("version"),
                       "tp": _tp_size(first)},
              "interrupted": [p["interrupted"]["line"] for p in services if p.get("interrupted")]}
    if decided["nothing_to_do"]:
        # Done already: deploy_dflash.yml leaves the host out of the rollout's batches.
        result["services"] = [host_result(p, p.get("facts"), host, {"check_mode": check_mode}) for p in services]
        result["state"] = _rollout.DONE
    return result


def _tp_size(plan):
    """The tensor parallelism the service runs with (its --tp-size, --tensor-parallel-size or --tp), else 1."""
    command = ((plan.get("facts") or {}).get("unit") or {}).get("command") or {}
    values = [w.value for w in words_from_pairs(command.get("args") or [])]
    for index, value in enumerate(values):
        name, _eq, inline = value.partition("=")
        if name in TP_FLAGS:
            text = inline if _eq else (values[index + 1] if index + 1 < len(values) else "")
            return int(text) if text.isdigit() else text
    return (plan.get("settings") or {}).get("tp_size") or 1
