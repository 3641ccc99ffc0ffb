# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From a host's facts and the role's variables to one decided change, or the reasons there is none.

Controller-only and pure (no I/O): every check that can refuse a deployment is here, so the role runs
them all before it touches the host. The change is a drop-in of ours beside the operator's unit (switch
mode) or a unit of ours (install mode, no service yet), plus an environment file of ours for variables
and secrets; the operator's files are never written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.seam import declarations
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import base_url
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_services import SGLANG_DEFAULT_PORT
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import words_from_pairs
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._arguments import listen_address, plan_arguments
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._drafter import host_drafter_problems
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._gpus import gpu_holders
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._host_state import switch_state
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._release_checks import release_limits_check
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._services import (
    gpus_text,
    overlapping_services,
    own_gpus,
    settings_for_service,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._settings import normalize_settings
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._unit_text import (
    environment_file_content,
    exec_start,
    render_dropin,
    render_exec_start,
    render_unit,
    text_sha256,
)

# Secret values shorter than this are not redacted from journal lines: "1" cannot be told from other text.
MIN_SECRET_LENGTH = 6


# After the drain itself: SGLang looks every 5 s whether a request is left, then gives its schedulers 15 s
# to exit (tokenizer_manager.py sigterm_watchdog, 0.5.23).
STOP_MARGIN_S = 30
DEFAULT_DRAIN_TIMEOUT_S = 300
_SPAN_UNITS = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1, "sec": 1, "second": 1, "seconds": 1,
               "m": 60, "min": 60, "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
               "d": 86400, "day": 86400, "days": 86400}
_SPAN = re.compile(r"(\d+(?:\.\d+)?)([a-z]*)")


def time_span_seconds(value):
    """A systemd time span ("45", "1min 30s", "infinity") in seconds; None for infinity or what is not one."""
    text = str(value).strip().lower().replace(" ", "")
    if text in ("infinity", ""):
        return None
    pieces = _SPAN.findall(text)
    if not pieces or "".join(n + u for n, u in pieces) != text or any(u and u not in _SPAN_UNITS for _n, u in pieces):
        return None
    return sum(float(amount) * _SPAN_UNITS.get(unit or "s") for amount, unit in pieces)


def stop_plan(unit, settings, install):
    """How a stop of the server will go (SGLang drains on SIGTERM only when its scheduler processes do not
    get the signal too), and the [Service] lines we write for it, where the operator set none."""
    drain_timeout = settings.get("drain_timeout")
    if not isinstance(drain_timeout, int) or isinstance(drain_timeout, bool):
        drain_timeout = DEFAULT_DRAIN_TIMEOUT_S  # unset, or refused by name in normalize_settings
    wanted_timeout = drain_timeout + STOP_MARGIN_S
    if not settings.get("stop_drain", True):
        return {"lines": [], "drains": None, "timeout_s": None, "notes": [],
                "summary": "as the unit says (sglang_dflash_stop_drain=false: no stop settings of ours)"}
    theirs = {} if install else ((unit.get("stop") or {}).get("operator_set") or {})
    lines, notes = [], []
    kill_mode, kill_mode_source = theirs.get("KillMode"), "yours"
    if kill_mode is None:
        kill_mode, kill_mode_source = "mixed", "ours"
        lines.append("KillMode=mixed")
    timeout_text = theirs.get("TimeoutStopSec", theirs.get("TimeoutSec"))
    timeout_source = "yours"
    if timeout_text is None:
        timeout_text, timeout_source = str(wanted_timeout), "ours"
        lines.append("TimeoutStopSec=%d" % wanted_timeout)
    timeout_s = time_span_seconds(timeout_text)
    drains = kill_mode in ("mixed", "process")
    if drains:
        summary = ("SIGTERM to the main process only (KillMode=%s, %s): SGLang finishes the requests in flight, "
                   "for up to %s (TimeoutStopSec=%s, %s) before SIGKILL"
                   % (kill_mode, kill_mode_source, "%d s" % timeout_s if timeout_s is not None else "ever",
                      timeout_text, timeout_source))
    else:
        summary = ("SIGTERM to every process of the unit (KillMode=%s, %s): requests in flight are cut"
                   % (kill_mode, kill_mode_source))
        notes.append("KillMode=%s (yours) sends SIGTERM to SGLang's scheduler processes too, which end at once, so "
                     "requests in flight are cut at every stop (sglang#35202): set KillMode=mixed in your unit"
                     % kill_mode)
    if drains and timeout_s is not None and timeout_s < wanted_timeout:
        notes.append("TimeoutStopSec=%s (yours) is shorter than sglang_dflash_drain_timeout + %d s (%d s): a drain "
                     "that takes longer is cut by SIGKILL" % (timeout_text, STOP_MARGIN_S, wanted_timeout))
    return {"lines": lines, "drains": drains, "timeout_s": timeout_s, "notes": notes, "summary": summary}


def gateway_plan(settings, old_port, new_port):
    """The gateways (declared by kind and URL, module_utils/gateways) and this host's worker URL in them before and
    after the switch; None without gateways. Bad declarations are refused by the settings' own checks."""
    gateways = declarations(settings.get("gateways"), settings.get("gateway_urls"))[0]
    if not gateways:
        return None

    def worker_url(port):
        if settings.get("gateway_worker_url"):
            return str(settings["gateway_worker_url"]).rstrip("/")
        host = str(settings.get("gateway_host") or "127.0.0.1")
        return base_url(host, port or new_port or SGLANG_DEFAULT_PORT)
    return {"gateways": gateways, "urls": [g["url"] for g in gateways], "worker_url": worker_url(old_port),
            "new_worker_url": worker_url(new_port)}


def new_unit_launcher(facts, settings):
    """argv before the server's arguments in a unit of ours: the entry point the release recommends."""
    launcher = settings.get("launcher_module") or "sglang.launch_server"
    entry = facts.get("entry_point") or {}
    if launcher == "sglang.launch_server" and entry.get("recommended") == "sglang serve":
        return [entry["console_script"], "serve"]
    return [facts.get("python"), "-m", launcher]


def deployment_plan(facts, raw_settings):
    """Decide the change for one host: {errors, mode, unit, files, exec_start, changes, switch_state, ...}.

    raw_settings: the role's variables without the sglang_dflash_ prefix (_settings.settings_from_vars), the
    host's: what belongs to this service comes from its facts (_services.settings_for_service).
    errors is the full list of reasons this host cannot take the deployment; when it is empty the
    rest says exactly what to write, and `needs_change` whether anything differs from the host.
    switch_state: where the host stands now against the switch (_host_state.switch_state).
    """
    plan = _decide(facts or {}, raw_settings)
    plan["switch_state"] = switch_state(facts, plan)
    return plan


def _decide(facts, raw_settings):
    settings, errors = normalize_settings(settings_for_service(raw_settings, facts))
    if facts.get("failed"):
        # The facts module itself failed (bad options, or it could not run on the host).
        errors.insert(0, "gathering the facts failed: %s" % facts.get("msg", "no message"))
    errors = list(facts.get("problems") or []) + errors
    unit = facts.get("unit") or {}
    switch = bool(unit.get("exists")) and not unit.get("managed_by_us")
    plan = _empty_plan(unit, settings, switch, errors)
    # The GPUs this service runs on after the change (None: every GPU): where the GPU checks look.
    gpus = own_gpus(facts, settings)
    plan["gpus"] = gpus[0]
    plan["stop_units_now"] = units_to_stop_for(facts, settings, plan["gpus"])
    if switch and unit.get("later_exec_start_dropins"):
        errors.append("drop-in(s) %s sort after %s and set ExecStart, so they would override the switch; "
                      "rename them or set sglang_dflash_dropin_name to sort last"
                      % (", ".join(unit["later_exec_start_dropins"]), settings.get("dropin_name")))
    args = _new_arguments(plan, facts, unit, settings, switch)
    # What this release refuses or crashes on with the new command line on these GPUs, before any change.
    plan["release_limits"] = release_limits_check(facts, settings, plan["algorithm"], (args or {}).get("args"),
                                                  gpus[0])
    errors.extend(plan["release_limits"]["errors"])
    env_vars = dict((str(k), v) for k, v in (settings.get("environment") or {}).items())
    env_vars.update((args or {}).get("secret_env") or {})
    env_content, env_problems = environment_file_content(env_vars)
    errors.extend(_host_problems(facts, settings, switch))
    errors.extend(env_problems)
    errors.extend(_gpu_problems(facts, settings, plan["unit"], gpus))
    if errors or args is None:
        if args is None and not errors:
            errors.append("the release's flags could not be read")
        return plan
    _decide_files(plan, facts, unit, settings, switch, args, env_vars, env_content)
    return plan


def _empty_plan(unit, settings, switch, errors):
    """The plan before anything is decided: what a refusal and the report show."""
    return {"unit": unit.get("id") or unit_name(settings.get("service_name") or "sglang"),
            "mode": "switch" if switch else "install", "errors": errors, "needs_change": False,
            "starts_server": False, "runs_after": True, "removes_unit": False, "restart_units": [],
            "changes": {"kept": [], "removed": [], "added": [], "overridden": []}, "exec_start": None,
            "old_exec_start": (unit.get("exec_start") or {}).get("value"), "files": {},
            "expected_server_info": {}, "flag_names": {}, "port": None, "health_host": "127.0.0.1",
            "old_port": None, "old_health_host": "127.0.0.1", "env_content": None, "secret_values": [],
            "old_active": unit.get("active_state") == "active", "settings": settings,
            "algorithm": settings.get("algorithm"), "fallback": None,
            "stop": stop_plan(unit, settings, install=not switch), "gateway": None, "gpus": None,
            "stop_units_now": [], "flag_errors": []}


def _new_arguments(plan, facts, unit, settings, switch):
    """plan_arguments' answer (None without the release's flags or the running command), merged into the plan
    with where the service answers now."""
    flags = (facts.get("flags") or {}).get("list")
    current = None
    if switch and unit.get("command"):
        command = unit["command"]
        current = {"args": words_from_pairs(command["args"]),
                   "context": "shell" if command.get("wrapper") == "shell" else "systemd"}
    args = None
    if flags and (current is not None or not switch):
        # The new server's ${PORT} as the restart expands it (the files, where edited since the start).
        service = facts.get("service") or {}
        expanded_port = (service.get("after_restart") or service).get("port")
        args = plan_arguments(flags, dict(settings, expanded_port=expanded_port), current,
                              facts.get("algorithms") or ())
        plan["errors"].extend(args["errors"])
        plan["flag_errors"] = list(args["errors"])
        plan.update(changes=args["changes"], expected_server_info=args["expected_server_info"],
                    flag_names=args["flag_names"], algorithm=args["algorithm"], fallback=args["fallback"])
    if flags and unit.get("command"):
        # Where the service as it runs now answers: the rollback checks it there.
        plan["old_port"], plan["old_health_host"] = listen_address(flags, words_from_pairs(unit["command"]["args"]))
    if plan["old_port"] is None:
        # --port ${PORT} or %i: the port as systemd expands it (the facts' map of the host's services).
        plan["old_port"] = (facts.get("service") or {}).get("port")
    # Where the gateways know this host now (the fleet report reads it even when the host is refused).
    plan["gateway"] = gateway_plan(settings, plan["old_port"], plan["old_port"])
    return args


def units_to_stop_for(facts, settings, gpus):
    """The units to stop before this service starts: all of them, except a unit that holds none of this service's GPUs
    but GPUs of another service selected in this run: that one waits for the service whose GPUs it holds."""
    processes = (facts.get("gpus") or {}).get("processes") or []
    mine = None if gpus is None else set(gpus)
    unit_id = (facts.get("unit") or {}).get("id")
    others = [s for s in facts.get("sglang_units") or []
              if s["unit"] in (facts.get("selected_units") or []) and s["unit"] != unit_id]
    out = []
    for unit in [unit_name(u) for u in settings.get("stop_units") or []]:
        held = set(p.get("gpu_index") for p in processes if p.get("unit") == unit)
        later = [s for s in others if (s.get("gpus") or {}).get("indexes") is None or held & set(s["gpus"]["indexes"])]
        if held and mine is not None and not held & mine and later:
            continue
        out.append(unit)
    return out


def _host_problems(facts, settings, switch):
    """The drafter, the model, the user."""
    problems = host_drafter_problems(facts, settings)
    model = facts.get("model")
    if settings.get("model_path") and model is not None and not model.get("dir_exists"):
        problems.append("model path %s is not a directory on this host (sglang_dflash_model_path)"
                        % settings["model_path"])
    if not switch and facts.get("user_exists") is False:
        problems.append("user %s does not exist on this host (sglang_dflash_user)" % settings.get("user"))
    return problems


def _gpu_problems(facts, settings, unit_id, own):
    """The units to stop must exist; no other service shares this one's GPUs; nothing else holds them.

    own: own_gpus' (indexes, where they come from) of this service.
    """
    problems = []
    related = facts.get("related_units") or {}
    stop_units = [unit_name(u) for u in settings.get("stop_units") or []]
    missing_units = [u for u in stop_units if not (related.get(u) or {}).get("exists")]
    if missing_units:
        problems.append("sglang_dflash_stop_units: %s do(es) not exist on this host" % ", ".join(missing_units))
    indexes, source = own
    if settings.get("require_free_gpus"):
        problems.extend(overlapping_services(facts, unit_id, indexes, source, stop_units))
    gpus = facts.get("gpus") or {}
    if settings.get("require_free_gpus") and gpus.get("nvidia_smi") == "present":
        # A sibling service on other GPUs is no holder; a process of any other unit on this service's GPUs is.
        holders = gpu_holders(gpus, set(stop_units + [unit_id]), indexes)
        if holders:
            which = "GPUs" if indexes is None else "%s of %s" % (gpus_text(indexes), unit_id)
            problems.append("%s are held by processes the deployment would not stop: %s; add their units to "
                            "sglang_dflash_stop_units, stop them, or set sglang_dflash_require_free_gpus=false"
                            % (which, "; ".join(holders)))
    return problems


def _decide_files(plan, facts, unit, settings, switch, args, env_vars, env_content):
    """What to write: the command, our drop-in or unit, our environment file; whether it differs from the host."""
    env_path = settings.get("env_file") if env_content else None
    if switch:
        exec_value = render_exec_start(unit["exec_start"]["prefix"], words_from_pairs(unit["exec_start"]["words"]),
                                       unit["command"], args["args_raw"])
    else:
        exec_value = " ".join([exec_start(new_unit_launcher(facts, settings))] + args["args_raw"])
    plan["exec_start"] = exec_value
    secret_values = sorted(set(str(v) for v in env_vars.values() if len(str(v)) >= MIN_SECRET_LENGTH))
    plan.update(port=args["port"], health_host=args["health_host"], env_content=env_content,
                secret_values=secret_values, gateway=gateway_plan(settings, plan["old_port"], args["port"]))
    if switch:
        dropin = unit.get("managed_dropin") or {}
        config = {"path": dropin.get("path") or os.path.join("/etc/systemd/system", plan["unit"] + ".d",
                                                             settings.get("dropin_name")),
                  "content": render_dropin(plan, plan["algorithm"], env_path),
                  "current": dropin.get("content")}
    else:
        current_unit = facts.get("managed_unit_file") or {}
        config = {"path": current_unit.get("path") or os.path.join(settings.get("unit_dir") or "/etc/systemd/system",
                                                                   plan["unit"]),
                  "content": render_unit(plan, settings, env_path), "current": current_unit.get("content")}
    config["changed"] = config["content"] != config["current"]
    del config["current"]
    env_state = facts.get("managed_env_file") or {}
    env_file = {"path": settings.get("env_file"), "present": env_content is not None}
    env_file["changed"] = (text_sha256(env_content) != env_state.get("sha256")) if env_content is not None \
        else bool(env_state.get("exists"))
    plan["files"] = {"config": config, "env": env_file}
    plan["needs_change"] = config["changed"] or env_file["changed"]
    # Only a run that (re)starts the server stops the units that hold its GPUs: a run with nothing
    # to change on a running service leaves a training job that was started again alone.
    plan["starts_server"] = plan["needs_change"] or not plan["old_active"]
