# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From a host's facts and the role's variables to one decided change, or the reasons there is none.

Pure (no I/O): every check that can refuse a deployment is here, so the role runs them all before
it touches the host. The change is a drop-in of ours beside the operator's unit (switch mode) or a
unit of ours (install mode, no service yet), plus an environment file of ours for variables and
secrets; the operator's files are never written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import math
import os
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import render_exec_start
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_deploy import (
    UnsafeValue,
    drafter_problems,
    environment_line,
    exec_start,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.switch_plan import listen_address, plan_arguments
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import MANAGED_MARKER, words_from_pairs

# Role variable -> (lowest, highest) for the integers the role uses; None: no bound.
INTEGER_SETTINGS = {
    "block_size": (1, 1024), "draft_window_size": (1, None), "port": (1, 65535), "tp_size": (1, 1024),
    "gpu_release_timeout": (1, None), "health_timeout": (1, None), "journal_lines": (0, 10000),
    "limit_nofile": (1, None), "ddtree_budget": (1, 4096), "speed_probe_max_new_tokens": (1, 65536),
    "drain_timeout": (1, None), "gateway_timeout": (1, None),
}
# Role variable -> lowest value (exclusive when the bound is 0) for the gates.
FLOAT_SETTINGS = {"min_accept_length": 1.0, "min_speedup": 0.0}
MIN_SECRET_LENGTH = 6
# Role variable -> its default when the caller gives none (the plan is also called from the report).
BOOLEAN_SETTINGS = {"require_free_gpus": True, "disable_stopped_units": True, "speed_probe": True, "stop_drain": True}
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def normalize_settings(raw):
    """Role variables with the types the plan needs: (settings, problems).

    Values given with `-e key=value` arrive as strings; each is converted or refused by name.
    """
    settings = dict(raw)
    problems = []
    for key, (low, high) in INTEGER_SETTINGS.items():
        value = settings.get(key)
        if value is None or value in ("", "None"):  # "None": a null templated by ansible-core < 2.19
            settings[key] = None
            continue
        try:
            number = int(str(value).strip())
        except ValueError:
            problems.append("sglang_dflash_%s must be an integer, not %r" % (key, value))
            continue
        if number < low or (high is not None and number > high):
            problems.append("sglang_dflash_%s must be %s, not %d" % (
                key, ("between %d and %d" % (low, high)) if high is not None else "at least %d" % low, number))
            continue
        settings[key] = number
    for key, low in FLOAT_SETTINGS.items():
        value = settings.get(key)
        if value is None or value in ("", "None"):
            settings[key] = None
            continue
        try:
            number = float(str(value).strip())
        except ValueError:
            problems.append("sglang_dflash_%s must be a number, not %r" % (key, value))
            continue
        if math.isnan(number) or number < low or (low == 0.0 and number <= 0.0):
            bound = ("at least %s" if low else "more than %s") % low
            problems.append("sglang_dflash_%s must be %s, not %s" % (key, bound, value))
            continue
        settings[key] = number
    for key, default in BOOLEAN_SETTINGS.items():
        value = settings.get(key, default)
        if isinstance(value, bool):
            settings[key] = value
            continue
        text = str(value).strip().lower()
        if text in TRUE_WORDS or text in FALSE_WORDS:
            settings[key] = text in TRUE_WORDS
        else:
            problems.append("sglang_dflash_%s must be true or false, not %r" % (key, value))
    for key in ("model_path", "draft_model_path", "python", "host", "fallback_algorithm"):
        if settings.get(key) in ("", "None"):
            settings[key] = None
    if not settings.get("draft_model_path"):
        problems.append("sglang_dflash_draft_model_path is required (the drafter directory on the host)")
    if settings.get("algorithm") not in ("DFLASH", "DDTREE"):
        problems.append("sglang_dflash_algorithm must be DFLASH or DDTREE, not %r" % settings.get("algorithm"))
    if settings.get("fallback_algorithm") not in (None, "DFLASH"):
        problems.append("sglang_dflash_fallback_algorithm must be DFLASH or unset, not %r"
                        % settings.get("fallback_algorithm"))
    if not isinstance(settings.get("speed_probe_prompts") or [], list):
        problems.append("sglang_dflash_speed_probe_prompts must be a list of prompts")
    gates = [k for k in FLOAT_SETTINGS if settings.get(k) is not None]
    if gates and settings.get("speed_probe") is False:
        problems.append("%s need(s) the speed probe: set sglang_dflash_speed_probe=true or unset the gate"
                        % ", ".join("sglang_dflash_" + k for k in gates))
    if not isinstance(settings.get("extra_args") or [], list):
        problems.append("sglang_dflash_extra_args must be a list of argv tokens")
    if not isinstance(settings.get("environment") or {}, dict):
        problems.append("sglang_dflash_environment must be a mapping of variable names to values")
    if not isinstance(settings.get("stop_units") or [], list):
        problems.append("sglang_dflash_stop_units must be a list of unit names")
    gateways = settings.get("gateway_urls") or []
    if not isinstance(gateways, list) or not all(str(u).startswith(("http://", "https://")) for u in gateways):
        problems.append("sglang_dflash_gateway_urls must be a list of http:// or https:// URLs, not %r" % (gateways,))
    worker_url = settings.get("gateway_worker_url")
    if worker_url in ("", "None"):
        settings["gateway_worker_url"] = worker_url = None
    if worker_url is not None and not str(worker_url).startswith(("http://", "https://")):
        problems.append("sglang_dflash_gateway_worker_url must be an http:// or https:// URL, not %r" % worker_url)
    window, block = settings.get("draft_window_size"), settings.get("block_size")
    if isinstance(window, int) and isinstance(block, int) and window < block:
        problems.append("sglang_dflash_draft_window_size (%d) must be at least sglang_dflash_block_size (%d): "
                        "SGLang refuses to start otherwise" % (window, block))
    return settings, problems


def environment_file_content(variables):
    """(content, problems): KEY="VALUE" lines; a bad name or value is named, never its value shown."""
    lines, problems = [], []
    for key in sorted(variables or {}):
        try:
            lines.append(environment_line(key, variables[key]))
        except UnsafeValue as exc:
            problems.append("sglang_dflash_environment: %s" % _env_problem(key, exc))
    if not lines:
        return None, problems
    header = "# %s (role sglang_dflash). Mode 0600: it holds secrets.\n" % MANAGED_MARKER
    return header + "".join(line + "\n" for line in lines), problems


def _env_problem(key, exc):
    if "name" in str(exc):
        return "%r is not a valid variable name (letters, digits and _, not starting with a digit)" % str(key)
    return "the value of %s contains a control character (newline, tab, ...)" % key


def gpu_holders(gpus, allowed_units):
    """GPU processes owned by none of allowed_units, described for a message."""
    out = []
    for proc in (gpus or {}).get("processes") or []:
        if proc.get("unit") in allowed_units:
            continue
        owner = proc.get("unit") or {"process gone": "exited meanwhile"}.get(proc.get("unit_source"), "no unit")
        out.append("GPU %s pid %s (%s, %s, %s MiB)" % (
            proc.get("gpu_index"), proc.get("pid"), proc.get("process_name"), owner, proc.get("used_memory_mib")))
    return out


def _drafter_problems(facts, settings):
    drafter = facts.get("draft_model") or {}
    path = drafter.get("path") or os.path.join(settings.get("draft_model_path") or "?", "config.json")
    if not drafter.get("dir_exists", True):
        return ["drafter directory %s does not exist on this host (sglang_dflash_draft_model_path)"
                % settings.get("draft_model_path")]
    if drafter.get("error"):
        return [drafter["error"]]
    target = facts.get("model") or {}
    problems, _block = drafter_problems(drafter.get("config"), settings.get("block_size"), target.get("config"))
    return ["%s: %s" % (path, p) for p in problems]


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
    """The gateways and this host's worker URL in them before and after the switch; None without gateways."""
    urls = settings.get("gateway_urls") or []
    if not urls:
        return None

    def worker_url(port):
        if settings.get("gateway_worker_url"):
            return str(settings["gateway_worker_url"]).rstrip("/")
        host = str(settings.get("gateway_host") or "127.0.0.1")
        return "http://%s:%d" % ("[%s]" % host if ":" in host else host, int(port or new_port or 30000))
    return {"urls": [str(u).rstrip("/") for u in urls], "worker_url": worker_url(old_port),
            "new_worker_url": worker_url(new_port)}


def render_dropin(plan, algorithm, env_path):
    changes = plan["changes"]
    lines = [
        "# %s (role sglang_dflash): %s speculative decoding for %s." % (MANAGED_MARKER, algorithm, plan["unit"]),
        "# The operator's unit and drop-ins are unchanged. To undo by hand: remove this file, then",
        "#   systemctl daemon-reload && systemctl restart %s" % plan["unit"],
    ]
    if plan.get("fallback"):
        lines.append("# %s instead of %s: %s (sglang_dflash_fallback_algorithm)" % (
            plan["fallback"]["to"], plan["fallback"]["from"], plan["fallback"]["reason"]))
    for kind in ("removed", "added", "overridden"):
        if changes[kind]:
            lines.append("# %s: %s" % (kind, "; ".join(changes[kind])))
    lines += ["[Service]", "ExecStart=", "ExecStart=" + plan["exec_start"]]
    if env_path:
        lines.append("EnvironmentFile=" + env_path)
    lines += plan["stop"]["lines"]
    return "\n".join(lines) + "\n"


def render_unit(plan, settings, env_path):
    lines = [
        "# %s (role sglang_dflash): SGLang with %s speculative decoding." % (MANAGED_MARKER, plan["algorithm"]),
        "[Unit]",
        "Description=SGLang server (%s speculative decoding)" % plan["algorithm"],
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        "User=%s" % settings.get("user", "root"),
    ]
    if env_path:
        lines.append("EnvironmentFile=" + env_path)
    lines += ["ExecStart=" + plan["exec_start"], "Restart=on-failure", "RestartSec=5"] + plan["stop"]["lines"]
    if settings.get("limit_nofile"):
        lines.append("LimitNOFILE=%d" % settings["limit_nofile"])
    lines += ["", "[Install]", "WantedBy=multi-user.target"]
    return "\n".join(lines) + "\n"


def new_unit_launcher(facts, settings):
    """argv before the server's arguments in a unit of ours: the entry point the release recommends."""
    launcher = settings.get("launcher_module") or "sglang.launch_server"
    entry = facts.get("entry_point") or {}
    if launcher == "sglang.launch_server" and entry.get("recommended") == "sglang serve":
        return [entry["console_script"], "serve"]
    return [facts.get("python"), "-m", launcher]


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None


def deployment_plan(facts, raw_settings):
    """Decide the change for one host: {errors, mode, unit, files, exec_start, changes, ...}.

    raw_settings: the role's variables without the sglang_dflash_ prefix (see roles/.../vars/main.yml).
    errors is the full list of reasons this host cannot take the deployment; when it is empty the
    rest says exactly what to write, and `needs_change` whether anything differs from the host.
    """
    settings, errors = normalize_settings(raw_settings)
    facts = facts or {}
    if facts.get("failed"):
        # The facts module itself failed (bad options, or it could not run on the host).
        errors.insert(0, "gathering the facts failed: %s" % facts.get("msg", "no message"))
    errors = list(facts.get("problems") or []) + errors
    unit = facts.get("unit") or {}
    unit_id = unit.get("id") or unit_name(settings.get("service_name") or "sglang")
    switch = bool(unit.get("exists")) and not unit.get("managed_by_us")
    plan = {"unit": unit_id, "mode": "switch" if switch else "install", "errors": errors, "needs_change": False,
            "starts_server": False,
            "changes": {"kept": [], "removed": [], "added": [], "overridden": []}, "exec_start": None,
            "old_exec_start": (unit.get("exec_start") or {}).get("value"), "files": {},
            "expected_server_info": {}, "flag_names": {}, "port": None, "health_host": "127.0.0.1",
            "old_port": None, "old_health_host": "127.0.0.1", "env_content": None, "secret_values": [],
            "old_active": unit.get("active_state") == "active", "settings": settings,
            "algorithm": settings.get("algorithm"), "fallback": None,
            "stop": stop_plan(unit, settings, install=not switch), "gateway": None}
    if switch and unit.get("later_exec_start_dropins"):
        errors.append("drop-in(s) %s sort after %s and set ExecStart, so they would override the switch; "
                      "rename them or set sglang_dflash_dropin_name to sort last"
                      % (", ".join(unit["later_exec_start_dropins"]), settings.get("dropin_name")))

    flags = (facts.get("flags") or {}).get("list")
    current = None
    if switch and unit.get("command"):
        command = unit["command"]
        current = {"args": words_from_pairs(command["args"]),
                   "context": "shell" if command.get("wrapper") == "shell" else "systemd"}
    args = None
    if flags and (current is not None or not switch):
        args = plan_arguments(flags, settings, current, facts.get("algorithms") or ())
        errors.extend(args["errors"])
        plan.update(changes=args["changes"], expected_server_info=args["expected_server_info"],
                    flag_names=args["flag_names"], algorithm=args["algorithm"], fallback=args["fallback"])
    if flags and unit.get("command"):
        # Where the service as it runs now answers: the rollback checks it there.
        plan["old_port"], plan["old_health_host"] = listen_address(flags, words_from_pairs(unit["command"]["args"]))
    # Where the gateways know this host now (the fleet report reads it even when the host is refused).
    plan["gateway"] = gateway_plan(settings, plan["old_port"], plan["old_port"])

    # The drafter, the model, the user, the environment, the units to stop, the GPUs.
    errors.extend(_drafter_problems(facts, settings))
    model = facts.get("model")
    if settings.get("model_path") and model is not None and not model.get("dir_exists"):
        errors.append("model path %s is not a directory on this host (sglang_dflash_model_path)"
                      % settings["model_path"])
    if not switch and facts.get("user_exists") is False:
        errors.append("user %s does not exist on this host (sglang_dflash_user)" % settings.get("user"))
    env_vars = dict((str(k), v) for k, v in (settings.get("environment") or {}).items())
    env_vars.update((args or {}).get("secret_env") or {})
    env_content, env_problems = environment_file_content(env_vars)
    errors.extend(env_problems)
    related = facts.get("related_units") or {}
    stop_units = [unit_name(u) for u in settings.get("stop_units") or []]
    missing_units = [u for u in stop_units if not (related.get(u) or {}).get("exists")]
    if missing_units:
        errors.append("sglang_dflash_stop_units: %s do(es) not exist on this host" % ", ".join(missing_units))
    gpus = facts.get("gpus") or {}
    if settings.get("require_free_gpus") and gpus.get("nvidia_smi") == "present":
        holders = gpu_holders(gpus, set(stop_units + [unit_id]))
        if holders:
            errors.append("GPUs are held by processes the deployment would not stop: %s; add their units to "
                          "sglang_dflash_stop_units, stop them, or set sglang_dflash_require_free_gpus=false"
                          % "; ".join(holders))
    if errors or args is None:
        if args is None and not errors:
            errors.append("the release's flags could not be read")
        return plan

    # What to write.
    env_path = settings.get("env_file") if env_content else None
    if switch:
        exec_value = render_exec_start(unit["exec_start"]["prefix"], words_from_pairs(unit["exec_start"]["words"]),
                                       unit["command"], args["args_raw"])
    else:
        exec_value = " ".join([exec_start(new_unit_launcher(facts, settings))] + args["args_raw"])
    plan["exec_start"] = exec_value
    # Values to keep out of journal lines we quote; short ones ("1") cannot be told from other text.
    secret_values = sorted(set(str(v) for v in env_vars.values() if len(str(v)) >= MIN_SECRET_LENGTH))
    plan.update(port=args["port"], health_host=args["health_host"], env_content=env_content,
                secret_values=secret_values, gateway=gateway_plan(settings, plan["old_port"], args["port"]))
    if switch:
        dropin = unit.get("managed_dropin") or {}
        config = {"path": dropin.get("path") or os.path.join("/etc/systemd/system", unit_id + ".d",
                                                             settings.get("dropin_name")),
                  "content": render_dropin(plan, plan["algorithm"], env_path),
                  "current": dropin.get("content")}
    else:
        current_unit = facts.get("managed_unit_file") or {}
        config = {"path": current_unit.get("path") or os.path.join(settings.get("unit_dir") or "/etc/systemd/system",
                                                                   unit_id),
                  "content": render_unit(plan, settings, env_path), "current": current_unit.get("content")}
    config["changed"] = config["content"] != config["current"]
    del config["current"]
    env_state = facts.get("managed_env_file") or {}
    env_file = {"path": settings.get("env_file"), "present": env_content is not None}
    env_file["changed"] = (_sha256(env_content) != env_state.get("sha256")) if env_content is not None \
        else bool(env_state.get("exists"))
    plan["files"] = {"config": config, "env": env_file}
    plan["needs_change"] = config["changed"] or env_file["changed"]
    # Only a run that (re)starts the server stops the units that hold its GPUs: a run with nothing
    # to change on a running service leaves a training job that was started again alone.
    plan["starts_server"] = plan["needs_change"] or not plan["old_active"]
    return plan


def refusal_message(plan, facts, host, algorithm):
    """Why this host cannot take the deployment: host, unit, release, every reason, what it knows."""
    facts = facts or {}
    package = facts.get("package") or {}
    text = "host %s, unit %s: cannot deploy %s" % (host, plan.get("unit"), algorithm)
    if package:
        text += " with sglang %s (%s install at %s, python %s)" % (
            package.get("version"), package.get("install"), package.get("location"), facts.get("python"))
    text += ": %s." % "; ".join(plan.get("errors") or [])
    if facts.get("capabilities"):
        speculative = [f["name"] for f in (facts.get("flags") or {}).get("list") or []
                       if not f.get("hidden") and f["name"].startswith("--speculative-")]
        text += " Algorithms this release knows: %s. Speculative flags it has: %s." % (
            ", ".join(facts.get("algorithms") or []) or "none", " ".join(speculative) or "none")
    return text + " Nothing was changed on this host."


def rollback_message(plan, facts, host, algorithm, outcome):
    """What failed in the switch and what the rollback put back.

    outcome: failure (the failed task's result), restarted (the new server was started),
    old_ready (the previous service's readiness after the rollback, or None), rollback_s, journal,
    rotation (None when the host was never out of rotation, else where it is now: "back in rotation", ...).
    """
    failure = outcome.get("failure") or {}
    old_ready = outcome.get("old_ready") or {}
    why = failure.get("msg") or "unknown failure"
    if failure.get("crashed"):
        why += ", detected %ss after the restart" % failure.get("elapsed_s")
    if not outcome.get("restarted"):
        how = "%s was not restarted and runs as before" % plan.get("unit")
        if not plan.get("needs_change"):
            how += "; its files were not changed by this run"
    elif plan.get("old_active") and old_ready.get("ready"):
        how = "the previous service is back and healthy, %.1fs after the rollback started" % float(
            outcome.get("rollback_s") or 0)
    elif plan.get("old_active"):
        how = "the previous files are back but the service is NOT healthy (%s): check it now" % (
            old_ready.get("reason") or "not checked")
    elif plan.get("mode") == "install":
        how = "the previous files are back (there was no unit before; ours was removed)"
    else:
        how = "the previous files are back (the service was not running before and is stopped again)"
    text = "host %s, unit %s: the switch to %s failed (%s); %s." % (host, plan.get("unit"), algorithm, why, how)
    started_again = sorted(name for name, state in (facts.get("related_units") or {}).items()
                           if state.get("active_state") == "active") if plan.get("starts_server") else []
    if started_again:
        text += " Units started again: %s." % ", ".join(started_again)
    if outcome.get("rotation"):
        text += " This host is %s." % outcome["rotation"]
    return text + " Last journal lines of %s: %s" % (plan.get("unit"), " | ".join(outcome.get("journal") or []))


def _number(value):
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


MEASUREMENT_FIELDS = ("measured", "problem", "tokens_per_s", "latency_s_median", "accept_length",
                      "accept_length_source", "requests", "max_new_tokens")


def _measurement(result):
    """The figures of a sglang_speed_probe result; None when it was not run (skipped or absent)."""
    if not result or result.get("skipped") or "measured" not in result:
        return None
    return dict((k, result.get(k)) for k in MEASUREMENT_FIELDS)


def rollout_record(plan, facts, measurements, outcome, reason, when):
    """What a switch did and measured, as the host keeps it (JSON) for the fleet report.

    measurements: {before, after} (sglang_speed_probe results, or None), verdict (sglang_speed_verdict's),
    drain (sglang_wait_idle's result) and out_of_rotation_s.
    outcome: switched | rolled back.
    """
    verdict = (measurements or {}).get("verdict") or {}
    settings = (plan or {}).get("settings") or {}
    drain = (measurements or {}).get("drain") or {}
    drained = drain if "idle" in drain else {}
    return {
        "traffic": {"gateways": ((plan or {}).get("gateway") or {}).get("urls"),
                    "out_of_rotation_s": _number((measurements or {}).get("out_of_rotation_s")),
                    "drain_s": drained.get("seconds"), "drained_requests": drained.get("requests_at_start"),
                    "stop": ((plan or {}).get("stop") or {}).get("summary")},
        "time": when, "unit": plan.get("unit"), "outcome": outcome, "reason": reason,
        "asked_algorithm": settings.get("algorithm"), "algorithm": plan.get("algorithm"),
        "fallback": plan.get("fallback"), "release": ((facts or {}).get("package") or {}).get("version"),
        "before": _measurement((measurements or {}).get("before")),
        "after": _measurement((measurements or {}).get("after")),
        "speedup": verdict.get("speedup"), "speed_summary": verdict.get("summary"),
        "gates": {"min_accept_length": settings.get("min_accept_length"), "min_speedup": settings.get("min_speedup"),
                  "passed": verdict.get("passed"), "problems": verdict.get("problems") or [],
                  "notes": verdict.get("notes") or []},
    }
