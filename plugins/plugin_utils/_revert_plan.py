# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The way back: the plan that removes our drop-in (or our unit) and our environment file, so the operator's own
service runs again as they wrote it.

It has the deployment plan's shape, so the role's switch steps run it as they run a switch: out of rotation,
drained, the previous state kept, the files removed, the service restarted and proven (health, one generation,
its speed against the DFlash server it replaces), back in rotation, rolled back on failure. The operator's files
are never written, so after a revert they are byte for byte what they were before the switch.

Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import MANAGED_MARKER, words_from_pairs
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._arguments import PlainWord, listen_address
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._host_state import (
    is_switched,
    written_arguments,
    written_command,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import gateway_plan
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._services import settings_for_service
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._settings import normalize_settings
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._unit_text import text_sha256


def hand_edit_problem(path, content, record):
    """Why our file at path cannot be removed as ours (edited by hand since the switch), or None."""
    if content is None:
        return None
    written = ((record or {}).get("files") or {}).get(path)
    if written and written != text_sha256(content):
        return ("%s was edited by hand since the switch of %s (its content is not what this collection wrote); "
                "move your change to a drop-in of your own, or remove the file yourself"
                % (path, (record or {}).get("time") or "an earlier run"))
    if not written and MANAGED_MARKER not in content:
        return "%s does not carry the line '%s': it is not ours to remove" % (path, MANAGED_MARKER)
    return None


def revert_plan(facts, raw_settings):
    """Decide the revert for one host: the deployment plan's keys, mode "revert".

    A host that was never switched needs no change (needs_change false, no errors). A unit that does not
    exist, or a file of ours edited by hand, is refused before any change.
    """
    settings, errors = normalize_settings(settings_for_service(raw_settings, facts), require_drafter=False)
    stop_units_asked = settings.get("stop_units") or []
    # No speed gates on the way back (the operator's own server is what they asked for), nothing to stop.
    settings.update(min_accept_length=None, min_speedup=None, stop_units=[], require_free_gpus=False)
    facts = facts or {}
    unit = facts.get("unit") or {}
    unit_id = unit.get("id") or unit_name(settings.get("service_name") or "sglang")
    record = facts.get("rollout_record") or {}
    if "error" in record:
        record = {}
    ours_is_unit = bool(unit.get("managed_by_us"))
    plan = {"unit": unit_id, "mode": "revert", "errors": errors, "needs_change": False, "starts_server": False,
            "runs_after": False, "removes_unit": ours_is_unit,
            "changes": {"kept": [], "removed": [], "added": [], "overridden": []},
            "exec_start": (unit.get("exec_start") or {}).get("value"), "old_exec_start": None, "files": {},
            "expected_server_info": {}, "flag_names": {}, "port": None, "health_host": "127.0.0.1",
            "old_port": None, "old_health_host": "127.0.0.1", "env_content": None, "secret_values": [],
            "old_active": unit.get("active_state") == "active", "settings": settings, "algorithm": None,
            "fallback": None, "gpus": None, "stop_units_now": [],
            "stop": {"lines": [], "drains": None, "timeout_s": None, "notes": [], "summary": (
                "as the operator's unit says (our stop settings go with our drop-in)")},
            "gateway": None, "restart_units": []}
    if facts.get("failed"):
        errors.insert(0, "gathering the facts failed: %s" % facts.get("msg", "no message"))
    if not unit.get("exists") and not ours_is_unit:
        errors.append("unit %s does not exist on this host, so there is nothing to revert; set "
                      "sglang_dflash_service_name to the unit that was switched" % unit_id)
        return plan
    env_state = facts.get("managed_env_file") or {}
    ours = (facts.get("managed_unit_file") or {}) if ours_is_unit else (unit.get("managed_dropin") or {})
    plan["files"] = {"config": {"path": ours.get("path"), "content": None, "changed": bool(ours.get("exists"))},
                     "env": {"path": env_state.get("path"), "present": False, "changed": bool(env_state.get("exists"))}}
    if not is_switched(facts):
        # Never switched, or reverted already: nothing to do, but an environment file of ours left behind
        # (nothing refers to it any more) goes, without a restart.
        if env_state.get("exists"):
            plan["changes"]["removed"] = [env_state["path"]]
            plan["needs_change"] = True
        return plan

    problem = hand_edit_problem(ours.get("path"), ours.get("content"), record)
    if problem:
        errors.append(problem)
        return plan
    _where_the_servers_answer(plan, facts, unit, ours.get("content"), settings)
    plan["old_exec_start"] = written_command(ours.get("content"))
    removed = [ours.get("path")] + ([env_state["path"]] if env_state.get("exists") else [])
    plan["changes"]["removed"] = removed
    # The server stops (and leaves the traffic) when it runs; it runs again unless the unit itself was ours.
    plan.update(needs_change=True, starts_server=plan["old_active"], runs_after=plan["old_active"] and not ours_is_unit)
    if settings.get("restart_stopped_units"):
        # The units the switch stopped (its record), else the ones the inventory names.
        plan["restart_units"] = [unit_name(u) for u in record.get("stopped_units") or stop_units_asked]
    return plan


def _where_the_servers_answer(plan, facts, unit, our_content, settings):
    """The DFlash server's address now (our command), the operator's after the revert, and the gateways'."""
    flags = (facts.get("flags") or {}).get("list")
    if not flags:
        return
    command = unit.get("command")
    if command:
        words = words_from_pairs(command["args"])
        plan["port"], plan["health_host"] = listen_address(flags, words)
        plan["algorithm"] = _speculative_algorithm([w.value for w in words])
    ours = [PlainWord(token) for token in written_arguments(our_content)]
    plan["old_port"], plan["old_health_host"] = listen_address(flags, ours) if ours \
        else (plan["port"], plan["health_host"])
    # --port ${PORT} or %i: the port as systemd expands it (the facts' map of the host's services).
    expanded = (facts.get("service") or {}).get("port")
    plan["port"] = expanded if plan["port"] is None else plan["port"]
    plan["old_port"] = expanded if plan["old_port"] is None else plan["old_port"]
    plan["gateway"] = gateway_plan(settings, plan["old_port"], plan["port"])


def _speculative_algorithm(values):
    """The operator's --speculative-algorithm value, or None (no speculative decoding)."""
    for i, value in enumerate(values):
        if value.startswith("--speculative-algorithm="):
            return value.split("=", 1)[1]
        if value == "--speculative-algorithm" and i + 1 < len(values):
            return values[i + 1]
    return None
