# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every SGLang service on a host, and which of them a run selects.

A box with 8 GPUs often runs several servers: two tensor-parallel-4 replicas, or one per GPU, each a
unit of its own or an instance of a template unit (``sglang@qwen-a.service``). Every loaded service
unit whose effective ExecStart runs SGLang is found through the same reading of the unit as the
switched service (systemd_unit.read_service), with its port, its GPUs and the interpreter behind it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import (
    cache_keep,
    cache_read,
    entry_key,
    fingerprint_files,
    matches_shape,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.service_environment import (
    DECIDING_VARIABLES,
    DRIFT_NOTE,
    service_environment,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import parse_show, read_service

SGLANG_DEFAULT_PORT = 30000
GLOB_CHARACTERS = "*?["
# Properties enough to tell an SGLang unit from the others without reading every unit's files.
_SCAN_PROPERTIES = "Id,ExecStart"
# Where systemd (the system manager) reads units from (systemd-analyze unit-paths), generators' output included.
SYSTEMD_UNIT_DIRS = ("/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
                     "/run/systemd/generator.early", "/etc/systemd/system", "/etc/systemd/system.attached",
                     "/run/systemd/system", "/run/systemd/system.attached", "/run/systemd/generator",
                     "/usr/local/lib/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system",
                     "/run/systemd/generator.late")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand(value, unit_id, env):
    """A word's value as systemd hands it to the server: specifiers (%i %I %n %N %p %%) and $VAR/${VAR}."""
    prefix, at, rest = unit_id.partition("@")
    instance = rest.rsplit(".", 1)[0] if at else ""
    specifiers = {"i": instance, "I": instance, "n": unit_id, "N": unit_id.rsplit(".", 1)[0],
                  "p": prefix if at else unit_id.rsplit(".", 1)[0], "%": "%"}
    value = re.sub(r"%(.)", lambda m: specifiers.get(m.group(1), m.group(0)), value)
    return _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), ""), value)


def command_port(unit, env):
    """The port the unit's server listens on: its last --port, expanded; SGLang's default without one."""
    values = [expand(value, unit.get("id") or "", env) for value, _raw in (unit.get("command") or {}).get("args") or []]
    port = None
    for i, value in enumerate(values):
        option, eq, inline = value.partition("=")
        if option == "--port":
            port = inline if eq else (values[i + 1] if i + 1 < len(values) else None)
    if port is None:
        return SGLANG_DEFAULT_PORT
    return int(port) if port.isdigit() else None


def visible_gpus(value, gpus):
    """CUDA_VISIBLE_DEVICES -> ([GPU index], problem): numbers or GPU UUIDs (prefixes too), as CUDA reads it."""
    indexes = []
    for entry in [e.strip() for e in value.split(",")]:
        if not entry:
            break  # CUDA stops at the first empty or invalid entry
        if entry.isdigit():
            indexes.append(int(entry))
            continue
        matches = [g["index"] for g in gpus if str(g.get("uuid") or "").startswith(entry)]
        if len(matches) != 1:
            return None, "CUDA_VISIBLE_DEVICES=%s: %s names %s GPU of this host" % (
                value, entry, "no" if not matches else "more than one")
        indexes.append(matches[0])
    return sorted(set(indexes)), None


def service_gpus(unit, env, gpu_facts):
    """{indexes, source}: the GPUs the service is given (CUDA_VISIBLE_DEVICES) or, without it, the GPUs its
    processes hold; indexes None when neither tells (the server then sees every GPU)."""
    gpus = (gpu_facts or {}).get("gpus") or []
    if "CUDA_VISIBLE_DEVICES" in env:
        indexes, problem = visible_gpus(env["CUDA_VISIBLE_DEVICES"], gpus)
        return {"indexes": indexes, "source": "CUDA_VISIBLE_DEVICES", "problem": problem}
    held = sorted(set(p["gpu_index"] for p in (gpu_facts or {}).get("processes") or []
                      if p.get("unit") == unit.get("id") and p.get("gpu_index") is not None))
    if held:
        return {"indexes": held, "source": "its processes", "problem": None}
    return {"indexes": None, "source": None, "problem": None}


def describe(unit, gpu_facts, manager_env=None):
    """The facts of one SGLang unit for the host's map: port, GPUs, interpreter, states.

    Port and GPUs are the running process's (its environment as systemd gave it); where the unit's files
    now give other values (edited since the start), environment_drift names the variables and after_restart
    has the port and GPUs a restart gives.
    """
    env = service_environment(unit, DECIDING_VARIABLES + _variables_of(unit), manager_env)
    entry = {"unit": unit["id"], "template": _template_of(unit["id"]), "active_state": unit.get("active_state"),
             "unit_file_state": unit.get("unit_file_state"), "main_pid": unit.get("main_pid"),
             "python": (unit.get("command") or {}).get("python"), "port": command_port(unit, env["values"]),
             "gpus": service_gpus(unit, env["values"], gpu_facts), "environment_from": env["source"],
             "environment_drift": env["drift"], "environment_note": None, "after_restart": None}
    if env["drift"]:
        entry["environment_note"] = "%s: %s" % (DRIFT_NOTE, ", ".join(env["drift"]))
        entry["after_restart"] = {"port": command_port(unit, env["after_restart"]),
                                  "gpus": service_gpus(unit, env["after_restart"], gpu_facts)}
    return entry


def _variables_of(unit):
    """Names of the variables the unit's server arguments use (${PORT}), read for the port only."""
    names = set()
    for value, _raw in (unit.get("command") or {}).get("args") or []:
        names.update(a or b for a, b in _VARIABLE.findall(value))
    return tuple(sorted(names))


def _template_of(unit_id):
    prefix, at, rest = unit_id.partition("@")
    return "%s@.%s" % (prefix, rest.rsplit(".", 1)[-1]) if at and rest else None


def _loaded_services(run_systemctl):
    """[(unit name, its list-units line)] of every loaded service."""
    rc, out, _err = run_systemctl(["systemctl", "list-units", "--type=service", "--all", "--plain",
                                   "--no-legend", "--no-pager"])
    if rc != 0:
        return []
    loaded = []
    for line in out.splitlines():
        words = line.replace("\u25cf", " ").split()
        if words and words[0].endswith(".service"):
            loaded.append((words[0], " ".join(words)))
    return loaded


def _may_run_sglang(exec_start_property, scripts):
    """A cheap first look at `systemctl show -p ExecStart`: the command or its script mentions sglang. Each file read
    is added to scripts (what the answer depends on)."""
    if "sglang" in exec_start_property:
        return True
    for path in re.findall(r"path=(\S+)", exec_start_property):
        scripts.add(path)
        try:
            with open(path, "rb") as handle:
                head = handle.read(65536)
        except OSError:
            continue
        if head.startswith(b"#!") and b"sglang" in head:
            return True
    return False


def _unit_files_fingerprint():
    """(path, mtime_ns, size) of every file in systemd's unit directories and their drop-in directories, through
    symlinks: a unit's ExecStart cannot change without one of them changing (or a unit appearing in list-units)."""
    paths = []
    for folder in SYSTEMD_UNIT_DIRS:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            paths.append(entry.path)
            if entry.name.endswith(".d") and entry.is_dir():
                try:
                    paths.extend(inner.path for inner in os.scandir(entry.path))
                except OSError:
                    continue
    return fingerprint_files(paths)


def _sglang_candidates(loaded, run_systemctl, cache_dir=None, check_mode=False):
    """The loaded services whose ExecStart may run SGLang (_may_run_sglang), by one `systemctl show` of every service
    (about 80 ms of CPU on a lab node, a third of it systemd's), or from the on-host cache: its entry is keyed by
    every service's list-units line and the unit files' fingerprint, and served while the scripts it read are
    unchanged."""
    key = entry_key({"kind": "sglang_candidates", "services": [line for _name, line in loaded],
                     "unit_files": _unit_files_fingerprint()}) if cache_dir else None
    if key:
        hit, _path = cache_read(cache_dir, key, _valid_candidates)
        if hit and fingerprint_files([path for path, _m, _s in hit["scripts"]]) == [
                printed for printed in hit["scripts"] if printed[1] is not None]:
            return hit["candidates"]
    rc, out, _err = run_systemctl(["systemctl", "show", "--no-pager", "-p", _SCAN_PROPERTIES]
                                  + [name for name, _line in loaded])
    if rc != 0:
        return []
    candidates, scripts = [], set()
    for block in out.split("\n\n"):
        show = parse_show(block)
        if show.get("Id") and _may_run_sglang(show.get("ExecStart") or "", scripts):
            candidates.append(show["Id"])
    if key and not check_mode:
        printed = dict((p, [p, m, n]) for p, m, n in fingerprint_files(sorted(scripts)))
        cache_keep(cache_dir, key, {"candidates": candidates,
                                    "scripts": [printed.get(p, [p, None, None]) for p in sorted(scripts)]})
    return candidates


def _valid_candidates(entry):
    return (matches_shape(entry, {"candidates": list, "scripts": list})
            and all(isinstance(c, str) for c in entry["candidates"])
            and all(isinstance(s, list) and len(s) == 3 and isinstance(s[0], str) for s in entry["scripts"]))


def discover(launchers, run_systemctl, managed_dropin, gpu_facts, known=None, manager_env=None, cache_dir=None,
             check_mode=False):
    """[(describe(unit), unit)] of every loaded service unit whose ExecStart runs SGLang, sorted by unit.

    known: {unit id: read_service result} already read by the caller (not read twice).
    manager_env: systemd's own environment for every service (service_environment.manager_environment).
    cache_dir: the on-host cache, which keeps which services may run SGLang (_sglang_candidates).
    """
    known = dict(known or {})
    loaded = [(name, line) for name, line in _loaded_services(run_systemctl) if name not in known]
    found = [unit for unit in known.values() if unit.get("exists") and unit.get("command")]
    for unit_id in _sglang_candidates(loaded, run_systemctl, cache_dir, check_mode) if loaded else []:
        try:
            unit = read_service(unit_id, launchers, run_systemctl, managed_dropin)
        except Exception:  # pylint: disable=broad-except
            continue  # a unit that cannot be read is not one of ours to map
        if unit.get("exists") and unit.get("command"):
            found.append(unit)
    return sorted(((describe(unit, gpu_facts, manager_env), unit) for unit in found), key=lambda pair: pair[0]["unit"])


def is_pattern(name):
    return any(c in str(name) for c in GLOB_CHARACTERS)


def select(entries, discovered):
    """[(entry index, unit name)] for the services the entries name, and problems.

    An entry names a unit (it need not exist: a new service) or a glob over the host's SGLang units
    (`sglang@*`). A unit named exactly wins over a pattern; among patterns the first one wins.
    """
    units = [s["unit"] for s in discovered]
    chosen, problems = {}, []
    for index, entry in enumerate(entries):
        name = str(entry.get("name") or "")
        if not is_pattern(name):
            chosen[unit_name(name)] = index
    order = []
    for index, entry in enumerate(entries):
        name = str(entry.get("name") or "")
        if is_pattern(name):
            pattern = name if "." in name.rsplit("@", 1)[-1] or name.endswith("*") else name + ".service"
            matches = [u for u in units if fnmatch.fnmatchcase(u, pattern)]
            if not matches:
                problems.append("services entry %d (%s) matches none of this host's SGLang units (%s)"
                                % (index + 1, name, ", ".join(units) or "none found"))
            for unit in matches:
                if unit not in chosen:
                    chosen[unit] = index
                    order.append(unit)
        elif unit_name(name) not in order:
            order.append(unit_name(name))
    return [(chosen[u], u) for u in order], problems


def managed_paths(unit, env_dir=None, unit_dir=None, state_dir=None):
    """Where this collection keeps its files for a unit: env file, unit file (a new service), switch record."""
    stem = unit[:-len(".service")] if unit.endswith(".service") else unit
    return {"env_file": os.path.join(env_dir, stem + ".env") if env_dir else None,
            "unit_file": os.path.join(unit_dir, unit) if unit_dir else None,
            "rollout_record": os.path.join(state_dir, unit + ".last-rollout.json") if state_dir else None}
