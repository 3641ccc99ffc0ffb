# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A systemd service as systemd sees it, and the SGLang command behind its ExecStart.

systemd tells where the unit lives (``systemctl show``: FragmentPath, DropInPaths, states); the
files are then read in systemd's order with its rules (a drop-in's empty ``ExecStart=`` resets the
list, later assignments win, backslash continues a line), so that every word of the command keeps
its raw text: what the operator wrote (``${VAR}``, ``%i``, quotes) is written back unchanged.

How the ExecStart words lead to the interpreter and the launcher is launch_command's part.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import (
    UnitError,
    Word,
    resolve_command,
    split_exec_start,
    split_words,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name

SHOW_PROPERTIES = (
    "Id", "LoadState", "ActiveState", "SubState", "UnitFileState", "FragmentPath", "DropInPaths",
    "User", "Group", "WorkingDirectory", "Environment", "EnvironmentFiles", "ExecStart", "MainPID",
    "NRestarts", "ExecMainStartTimestamp", "InvocationID", "Type", "Restart", "KillMode", "TimeoutStopUSec",
)
# How a stop reaches the server: whether SGLang can drain depends on them (deployment.stop_plan).
STOP_DIRECTIVES = ("KillMode", "KillSignal", "TimeoutStopSec", "TimeoutSec")
LIST_SETTINGS = ("ExecStart", "Environment", "EnvironmentFile")


# ---- systemctl show ----------------------------------------------------------------------

def parse_show(text):
    """`systemctl show` output -> {property: value} (the first '=' splits)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


# ---- unit files --------------------------------------------------------------------------

def logical_lines(text):
    """Lines of a unit file with backslash continuations joined and comments dropped."""
    out = []
    pending = None
    for line in text.splitlines():
        stripped = line.strip()
        if pending is None and (not stripped or stripped[0] in "#;"):
            continue
        if pending is not None and stripped[:1] in ("#", ";"):
            continue  # a comment inside a continued line is skipped, as systemd does
        if stripped.endswith("\\"):
            pending = (pending or "") + stripped[:-1] + " "
            continue
        out.append((pending or "") + stripped)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def service_assignments(files):
    """[(path, key, value)] of the [Service] sections of (path, text) pairs, in order."""
    out = []
    for path, text in files:
        section = None
        for line in logical_lines(text):
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1]
                continue
            key, sep, value = line.partition("=")
            if sep and section == "Service":
                out.append((path, key.strip(), value.strip()))
    return out


def effective_settings(assignments):
    """Apply systemd's rules: list settings accumulate and an empty value resets them; others: last wins.

    Returns {key: value or [(path, value)]}: list settings keep where each entry came from.
    """
    settings = {}
    for path, key, value in assignments:
        if key in LIST_SETTINGS:
            if value == "":
                settings[key] = []
            else:
                settings.setdefault(key, []).append((path, value))
        else:
            settings[key] = value
    return settings


def split_environment(value):
    """Environment= value -> [(name, value)] (several assignments, quotes allowed)."""
    out = []
    for word in split_words(value):
        name, sep, val = word.value.partition("=")
        if sep:
            out.append((name, val))
    return out


# ---- the service, read on the host -------------------------------------------------------------

MANAGED_MARKER = "Managed by gpufleet.sglang"


def _read(path):
    with open(path) as handle:
        return handle.read()


def environment_files(value):
    """EnvironmentFiles= of `systemctl show` -> [{path, optional}]."""
    out = []
    for match in re.finditer(r"(\S+) \(ignore_errors=(yes|no)\)", value or ""):
        out.append({"path": match.group(1), "optional": match.group(2) == "yes"})
    return out


def read_service(name, launchers, run_systemctl, managed_dropin=None):
    """The service as systemd sees it, with the SGLang command behind its ExecStart.

    run_systemctl(argv) -> (rc, stdout, stderr). managed_dropin: the base name of this
    collection's own drop-in, left out of "the operator's command" (it is what we write).
    Returns a dict; `error` says why the command could not be resolved (the rest is still filled).
    """
    unit = unit_name(name)
    rc, out, err = run_systemctl(["systemctl", "show", "--no-pager", "-p", ",".join(SHOW_PROPERTIES), unit])
    if rc != 0:
        raise UnitError("systemctl show %s failed (rc=%s): %s" % (unit, rc, (err or out).strip()[:300]))
    show = parse_show(out)
    result = {
        "name": unit, "id": show.get("Id") or unit, "exists": show.get("LoadState") not in ("not-found", None),
        "load_state": show.get("LoadState"), "active_state": show.get("ActiveState"),
        "sub_state": show.get("SubState"), "unit_file_state": show.get("UnitFileState"),
        "fragment_path": show.get("FragmentPath") or None,
        "dropin_paths": (show.get("DropInPaths") or "").split(),
        "user": show.get("User") or None, "group": show.get("Group") or None,
        "working_directory": show.get("WorkingDirectory") or None,
        "environment": [list(kv) for kv in split_environment(show.get("Environment") or "")],
        "environment_files": environment_files(show.get("EnvironmentFiles")),
        "main_pid": int(show.get("MainPID") or 0), "n_restarts": int(show.get("NRestarts") or 0),
        "started_at": show.get("ExecMainStartTimestamp") or None, "invocation_id": show.get("InvocationID") or None,
        "managed_by_us": False, "managed_dropin": None, "exec_start": None, "command": None, "error": None,
        "later_exec_start_dropins": [],
        # In effect now (systemctl show), and which of them the operator's own files set.
        "stop": {"kill_mode": show.get("KillMode") or None, "timeout_stop": show.get("TimeoutStopUSec") or None,
                 "operator_set": {}},
    }
    if not result["exists"]:
        return result
    unit_id = result["id"]
    ours = os.path.join("/etc/systemd/system", unit_id + ".d", managed_dropin) if managed_dropin else None
    result["managed_dropin"] = {"path": ours, "exists": bool(ours) and os.path.isfile(ours), "content": None}
    if result["managed_dropin"]["exists"]:
        result["managed_dropin"]["content"] = _read(ours)
    files = []
    try:
        if result["fragment_path"]:
            files.append((result["fragment_path"], _read(result["fragment_path"])))
        for path in result["dropin_paths"]:
            if path != ours:
                files.append((path, _read(path)))
    except (OSError, UnicodeDecodeError) as exc:
        result["error"] = "cannot read %s: %s" % (getattr(exc, "filename", None) or "a unit file", exc)
        return result
    result["managed_by_us"] = bool(files) and MANAGED_MARKER in files[0][1]
    if managed_dropin:
        # A drop-in that sorts after ours and sets ExecStart would silently win over ours.
        result["later_exec_start_dropins"] = [
            path for path, text in files[1:]
            if os.path.basename(path) > managed_dropin
            and any(k == "ExecStart" for _p, k, _v in service_assignments([(path, text)]))]
    settings = effective_settings(service_assignments(files))
    result["stop"]["operator_set"] = dict((k, settings[k]) for k in STOP_DIRECTIVES if k in settings)
    commands = settings.get("ExecStart") or []
    if len(commands) != 1:
        result["error"] = ("%s has %d ExecStart= commands in effect (%s); expected one"
                           % (unit_id, len(commands), ", ".join(sorted(set(p for p, _v in commands))) or "none"))
        return result
    path, value = commands[0]
    try:
        prefix, words = split_exec_start(value)
        path_value = dict((k, v) for k, v in split_environment(show.get("Environment") or "")).get("PATH")
        command = resolve_command(words, launchers, path_value)
    except UnitError as exc:
        result["exec_start"] = {"file": path, "value": value}
        result["error"] = "%s (ExecStart in %s): %s" % (unit_id, path, exc)
        return result
    result["exec_start"] = {"file": path, "value": value, "prefix": prefix,
                            "words": [[w.value, w.raw] for w in words]}
    result["command"] = command_to_dict(command)
    return result


def command_to_dict(command):
    """resolve_command's answer as plain data (Words as [value, raw])."""
    out = dict((k, v) for k, v in command.items() if k != "args")
    out["args"] = [[w.value, w.raw] for w in command["args"]]
    return out


def words_from_pairs(pairs):
    return [Word(value, raw) for value, raw in pairs]
