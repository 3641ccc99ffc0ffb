# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of one service's switch (or revert), decided before the first one runs: the role's task files only apply
them, each task on one key (roles/sglang_dflash/tasks/service.yml and the files it includes).

A step that changes the host or a gateway is planned only outside check mode, except the file writes, which check
mode shows as a diff. A run with nothing to change plans no step at all, so it costs the one module run that read
the host. An interrupted run's intent (_resume.py) adds the steps that finish or undo it.

Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _messages, _resume

# The keys of `steps`, in the order the role runs them (tasks/service.yml: leave_rotation.yml, switch.yml,
# prove.yml, rejoin.yml, then the record).
STEP_KEYS = ("resume_rollback", "load_before", "leave_rotation", "leave_gateway", "leave_hook", "drain",
             "probe_before", "mark_switching", "snapshot", "stop_units", "wait_gpus", "env_dir", "write_env",
             "remove_env", "config_dir", "write_config", "stop_ours", "remove_config", "mark_restarting", "restart",
             "daemon_reload",
             "ensure_started", "prove", "probe_after", "rejoin", "rejoin_gateway", "rejoin_hook", "record",
             "clear_intent")


def service_steps(plan, facts, check_mode=False, hooks=None, probe_levels_configured=False):
    """{key: value} for every key of STEP_KEYS (a falsy value: the step does not run) and the interrupted run
    (plan["interrupted"]) it resumes, for one service whose plan has no errors.

    hooks: {"out": bool, "back": bool}, whether the operator's balancer task files are set.
    """
    hooks = hooks or {}
    steps = dict((key, False) for key in STEP_KEYS)
    steps.update(stop_units=[], wait_gpus={"wait": False, "allowed_units": [plan.get("unit")], "gpus": None,
                                           "retries": 1, "message": ""}, rejoin_gateways=[])
    cut = _resume.interrupted((facts or {}).get("intent"), plan)
    if plan.get("errors"):
        return steps
    live = not check_mode
    if cut and cut["action"] == "rollback":
        steps.update(resume_rollback=live)
        return steps
    if cut and cut["action"] == "prove":
        # Our files are as this run would write them; whether the server runs them nobody knows: restart, prove.
        plan.update(needs_change=True, starts_server=True, resumed=True)
    _switch_steps(steps, plan, facts, live, hooks, probe_levels_configured, cut)
    if cut and cut["gateway"]:
        # The host may be out of rotation since then: put it back in every gateway that run named, whatever this
        # run's own take-out finds (a worker SMG forgot is not taken out again).
        steps.update(rejoin=live and plan.get("runs_after", True), rejoin_gateway=live,
                     rejoin_gateways=list(cut["gateway"].get("urls") or []))
    if cut and cut["action"] in ("rejoin", "canary", "unreadable") and not plan.get("needs_change"):
        steps["clear_intent"] = live and cut["action"] != "unreadable"
    return steps


def _switch_steps(steps, plan, facts, live, hooks, probe_levels_configured, cut):
    settings = plan.get("settings") or {}
    change = bool(plan.get("needs_change"))
    starts = bool(plan.get("starts_server"))
    gateway = plan.get("gateway") is not None
    old_answers = bool(plan.get("old_active")) and plan.get("old_port") is not None
    probe = change and bool(settings.get("speed_probe"))
    files = plan.get("files") or {}
    config, env = files.get("config") or {}, files.get("env") or {}
    leave = live and starts and (gateway or bool(hooks.get("out")))
    resumed_snapshot = bool(cut and cut["snapshot_exists"])
    steps.update(
        load_before=live and probe and old_answers and not probe_levels_configured and not resumed_snapshot,
        leave_rotation=leave, leave_gateway=leave and gateway, leave_hook=leave and bool(hooks.get("out")),
        drain=leave and old_answers,
        # A resumed switch measured the previous server before its files were written: that run's figures stand.
        probe_before=live and probe and old_answers and not resumed_snapshot,
        mark_switching=live and change,
        # The copy an interrupted run took holds the state before that run: it is kept, not taken again.
        snapshot=change and not resumed_snapshot,
        stop_units=[{"name": u, "disable": bool(settings.get("disable_stopped_units"))}
                    for u in plan.get("stop_units_now") or []] if starts else [],
        env_dir=bool(env.get("present")) and bool(env.get("changed")),
        write_env=bool(env.get("present")) and bool(env.get("changed")),
        remove_env=not env.get("present") and bool(env.get("changed")),
        config_dir=config.get("content") is not None and bool(config.get("changed")),
        write_config=config.get("content") is not None and bool(config.get("changed")),
        stop_ours=live and change and bool(plan.get("removes_unit")),
        remove_config=change and config.get("content") is None and bool(config.get("changed")),
        mark_restarting=live and change and bool(plan.get("runs_after")),
        restart=live and change and bool(plan.get("runs_after")),
        daemon_reload=live and change and not plan.get("runs_after"),
        ensure_started=live and not change and bool(plan.get("runs_after")) and not plan.get("old_active"),
        prove=live and starts and bool(plan.get("runs_after")),
        probe_after=live and probe and bool(plan.get("runs_after")),
        rejoin=leave and bool(plan.get("runs_after")),
        rejoin_gateway=leave and gateway and bool(plan.get("runs_after")),
        rejoin_hook=leave and bool(hooks.get("back")) and bool(plan.get("runs_after")),
        # A restart keeps the switch's record (its figures are what a day-two check compares with).
        record=live and change and plan.get("mode") != "restart",
        clear_intent=live and change and plan.get("mode") == "restart",
    )
    steps["wait_gpus"] = _wait_gpus(plan, facts, settings, live and starts and bool(steps["stop_units"]))


def _wait_gpus(plan, facts, settings, stops):
    """The wait for the GPUs (wait: whether it runs): the unit whose processes may hold them, its GPUs, how often to
    look, and the start of the message when other processes still hold them."""
    wait = stops and bool(settings.get("require_free_gpus")) and \
        ((facts or {}).get("gpus") or {}).get("nvidia_smi") == "present"
    timeout = settings.get("gpu_release_timeout") or 60
    return {"wait": wait, "allowed_units": [plan.get("unit")], "gpus": plan.get("gpus"),
            "retries": -(-int(timeout) // 2),
            # The holders found after the wait follow this prefix (tasks/switch.yml).
            "message": _messages.gpus_busy_message([], timeout, plan.get("stop_units_now") or [])}


def rollback_steps(plan, facts, intent, failure, check_mode=False, hooks=None):
    """What the rollback of a failed switch does, from what the host's intent says the switch got to (never from
    results registered by the tasks, which a failed step leaves from an earlier service).

    intent: the unit's intent as the rollback found it (sglang_run_state's `previous`); failure: the failed task's
    result. Returns the rollback's steps and the units to start again ([{name, start, enable}])."""
    hooks = hooks or {}
    intent = intent or {}
    # The switch wrote its "switching" phase before its first change of the host (the copy, the stops, the files),
    # and "restarting" just before the restart.
    switching = bool(intent.get("switching_at"))
    restarted = bool(intent.get("restarting_at"))
    gateway = intent.get("gateway") or {}
    left = bool(gateway) or bool(intent.get("hook"))
    related = (facts or {}).get("related_units") or {}
    units = []
    if plan.get("starts_server") and switching and plan.get("mode") != "revert":
        for name in intent.get("stop_units") or plan.get("own_stop_units") or []:
            state = related.get(name) or {}
            units.append({"name": name, "start": state.get("active_state") == "active",
                          "enable": state.get("unit_file_state") == "enabled"})
    live = not check_mode
    old_answers = bool(plan.get("old_active")) and plan.get("old_port") is not None
    return {
        "journal": live and restarted and "journal" not in (failure or {}),
        "journal_mark_us": intent.get("restarting_us"),
        "restarted": restarted,
        "stop_new": live and restarted,
        "restore": switching,
        "start_old": live,
        "start_units": units if live else [],
        "wait_old": live and old_answers,
        "rejoin": live and left,
        "rejoin_gateway": live and bool(gateway),
        "rejoin_gateways": list(gateway.get("urls") or []),
        "rejoin_hook": live and left and bool(hooks.get("back")),
        # A failed restart (sglang_dflash_state=restarted) keeps the switch's record: its figures are still what runs.
        "record": live and restarted and plan.get("mode") != "restart",
        "speed_before": intent.get("speed_before"),
        "left_rotation_at": intent.get("leaving_rotation_at"),
    }
