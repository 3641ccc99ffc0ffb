# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Everything the role needs to know about one host, gathered in one module run.

The service as systemd sees it, the interpreter behind its ExecStart, where that interpreter
imports sglang from, the DFlash/DDTree implementation in that code, the release's flags and
capabilities, the GPUs and their processes, the drafter's and target's config.json, the states of
the units to stop, and this collection's own files on the host. Nothing here fails the run: every
part that cannot be read becomes a `problems` entry saying what to set, so a fleet report shows a
broken host as blocked with the reason, and the deployment refuses it before any change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import hashlib
import json
import os
import pwd
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils import (
    cli_flags,
    nvidia_smi,
    python_package,
    release_limits,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.drafter_store import store_copy
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import UnitError
from ansible_collections.gpufleet.sglang.plugins.module_utils.run_state import RunStateError, intent_path, read_json
from ansible_collections.gpufleet.sglang.plugins.module_utils.service_environment import (
    PYTHON_VARIABLES,
    manager_environment,
    service_environment,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_capabilities import supported_algorithms
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_services import (
    discover,
    is_pattern,
    managed_paths,
    select,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import SearchError
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.run import run_search
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import run_systemctl, unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import read_service

MAX_CONFIG_BYTES = 4 * 1024 * 1024
# The search for a release's DFlash/DDTree implementation (its terms are the module's search_terms): source files only
# (no tests, no bytecode caches), at most 10 MiB a file, by rg where the host has it. tests/bench/search_bench.py
# measures the ripgrep backend with this filter and limit.
IMPLEMENTATION_SEARCH = dict(
    patterns=[], match="identifier", case_sensitive=False, include=["*.py"],
    exclude=["tests", "test", "__pycache__", ".git"], context=0, definitions=True, max_files=50, max_hits_per_file=3,
    max_total_hits=100, max_filesize=10 * 1024 * 1024, backend="auto", rg_path=None)
# What a plan reads of each flag (flags_detail=plan): the rest (help text, metavar, default, group, source line)
# was most of the facts' size.
PLAN_FLAG_KEYS = ("name", "aliases", "takes_value", "choices", "hidden", "negated_by")


def service_python_environment(unit, manager_env=None):
    """PYTHON* variables (and PATH) of the service, which change which sglang its interpreter imports: the
    running process's, else what its Environment= and EnvironmentFile= give. Secrets are not read."""
    return service_environment(unit, PYTHON_VARIABLES, manager_env)["values"]


def read_json_file(path):
    """{path, config} or {path, error} for a config.json, with the file named in every error."""
    try:
        size = os.path.getsize(path)
        if size > MAX_CONFIG_BYTES:
            return {"path": path, "error": "%s is %d bytes, more than a config.json should be" % (path, size)}
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
        return {"path": path, "config": json.loads(text)}
    except OSError as exc:
        return {"path": path, "error": "cannot read %s: %s" % (path, exc.strerror or exc)}
    except UnicodeDecodeError as exc:
        return {"path": path, "error": "%s is not UTF-8 text: %s" % (path, exc)}
    except ValueError as exc:
        return {"path": path, "error": "%s is not valid JSON: %s" % (path, exc)}


def entry_point(package, python):
    """How this release wants its server started, decided from its own code, not a version table.

    `sglang serve` when sglang/launch_server.py itself says it is the recommended entry point and the
    interpreter's environment has the `sglang` console script (in the same bin/); else `python -m`.
    """
    result = {"recommended": "python -m sglang.launch_server", "console_script": None, "why": None}
    script = os.path.join(os.path.dirname(python or ""), "sglang")
    if python and os.path.isfile(script) and os.access(script, os.X_OK):
        result["console_script"] = script
    launcher = os.path.join(package.get("location") or "", "launch_server.py")
    try:
        with open(launcher, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        result["why"] = "cannot read %s" % launcher
        return result
    recommends = any(isinstance(node, ast.Constant) and isinstance(node.value, str) and "sglang serve" in node.value
                     and "recommended" in node.value for node in ast.walk(tree))
    if not recommends:
        result["why"] = "%s does not recommend another entry point" % launcher
    elif not result["console_script"]:
        result["why"] = "%s recommends 'sglang serve' but %s has no sglang script" % (launcher, os.path.dirname(python))
    else:
        result.update(recommended="sglang serve", why="%s recommends 'sglang serve'" % launcher)
    return result


def command_model_path(command):
    """The target model directory the running command names (--model-path / --model), if a path."""
    values = [value for value, _raw in command.get("args") or []]
    found = None
    for i, value in enumerate(values):
        option, eq, inline = value.partition("=")
        if option in ("--model-path", "--model"):
            found = inline if eq else (values[i + 1] if i + 1 < len(values) else None)
    return found if found and found.startswith("/") else None


def unit_states(names):
    """{unit: {exists, active_state, unit_file_state}} of the units to stop."""
    states = {}
    for name in names:
        unit = unit_name(name)
        rc, out, _err = run_systemctl(["systemctl", "show", "--no-pager", "-p",
                                       "LoadState,ActiveState,UnitFileState", unit])
        show = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        states[unit] = {"exists": rc == 0 and show.get("LoadState") not in (None, "not-found"),
                        "active_state": show.get("ActiveState"), "unit_file_state": show.get("UnitFileState")}
    return states


def file_digest(path):
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def operator_files(unit, managed_env_file):
    """{path: sha256} of the operator's unit file, drop-ins and environment files (ours left out; None: absent).

    Kept by the rollout record at the switch, so that a later run tells the operator's edits from its own.
    """
    ours = set([(unit.get("managed_dropin") or {}).get("path"), managed_env_file])
    paths = [unit.get("fragment_path")] + list(unit.get("dropin_paths") or []) + \
        [f["path"] for f in unit.get("environment_files") or []]
    return dict((path, file_digest(path)) for path in paths if path and path not in ours)


def gather(params, check_mode):
    """The facts of one service (params["service"]), or of every service params["services"] selects.

    With `services`: {services: [the facts of one service, each as without it], sglang_units, gpus, problems}.
    Each service's facts also carry the host's map of SGLang units (sglang_units), its own entry there
    (service), the entry of `services` that selected it (selected_by), every selected unit and its
    managed_paths.
    """
    started = time.monotonic()
    run = _Run(params, check_mode)
    if not params.get("services"):
        unit = run.read_unit(params["service"])
        facts = run.service_facts(params, unit)
        facts["sglang_units"] = run.discover([unit])
        facts["service"] = _own_entry(facts)
        facts["elapsed_s"] = round(time.monotonic() - started, 3)
        return facts
    entries = params["services"]
    named = dict((unit_name(e["name"]), run.read_unit(e["name"])) for e in entries
                 if e.get("name") and not is_pattern(e["name"]))
    sglang_units = run.discover(list(named.values()))
    chosen, problems = select(entries, sglang_units)
    selected = [name for _index, name in chosen]
    services = []
    for index, name in chosen:
        entry = entries[index]
        unit = named.get(name) or run.units.get(name) or run.read_unit(name)
        paths = managed_paths(unit.get("id") or name, params.get("managed_env_dir"), params.get("managed_unit_dir"),
                              params.get("rollout_record_dir"))
        service_params = dict(params, service=name, managed_env_file=paths["env_file"],
                              managed_unit_file=paths["unit_file"], rollout_record=paths["rollout_record"])
        service_params.update((k, entry[k]) for k in ("python", "model_path", "draft_model_path") if entry.get(k))
        facts = run.service_facts(service_params, unit)
        facts.update(sglang_units=sglang_units, selected_by=index, selected_units=selected, managed_paths=paths)
        facts["service"] = _own_entry(facts)
        services.append(facts)
    for index, entry in enumerate(entries):
        if is_pattern(entry.get("name")) and index not in [i for i, _name in chosen]:
            # A pattern that selects nothing is a row of its own that the plan refuses, with the reason.
            problem = next(p for p in problems if "entry %d " % (index + 1) in p)
            services.append(dict(run.host, unit={"name": entry["name"], "exists": False, "error": problem},
                                 problems=[problem], selected_by=index, selected_units=selected,
                                 sglang_units=sglang_units, service=None))
    return {"services": services, "sglang_units": sglang_units, "gpus": run.host["gpus"], "problems": problems,
            "elapsed_s": round(time.monotonic() - started, 3)}


def _own_entry(facts):
    """The service's entry in the host's map (port, GPUs); None for a unit that does not run SGLang (yet)."""
    unit_id = (facts.get("unit") or {}).get("id")
    return next((s for s in facts.get("sglang_units") or [] if s["unit"] == unit_id), None)


class _Run(object):
    """One module run: the host's parts read once, and each interpreter's release read once."""

    def __init__(self, params, check_mode):
        self.params = params
        self.check_mode = check_mode
        self.units = {}
        self.packages = {}
        self.releases = {}
        gpus = nvidia_smi.query_gpus(params.get("nvidia_smi"), params["timeout"], params.get("cache"), check_mode)
        self.host = {"gpus": gpus, "related_units": unit_states(params.get("related_units") or [])}
        self.manager_env = manager_environment(run_systemctl)
        if params.get("user"):
            try:
                pwd.getpwnam(params["user"])
                self.host["user_exists"] = True
            except KeyError:
                self.host["user_exists"] = False

    def read_unit(self, service):
        try:
            unit = read_service(service, list(self.params["launcher_modules"]), run_systemctl,
                                self.params.get("managed_dropin"))
        except UnitError as exc:
            return {"name": service, "exists": False, "error": str(exc), "read_failed": True}
        self.units[unit["id"]] = unit
        return unit

    def discover(self, units):
        """The host's SGLang units (sglang_services.discover), each with the release its interpreter has."""
        known = dict((u["id"], u) for u in units if u.get("id"))
        found = discover(list(self.params["launcher_modules"]), run_systemctl, self.params.get("managed_dropin"),
                         self.host["gpus"], known, self.manager_env, self.params.get("cache"), self.check_mode)
        out = []
        for entry, unit in found:
            self.units.setdefault(entry["unit"], unit)
            package = self.package(entry["python"], service_python_environment(unit, self.manager_env)) \
                if entry["python"] else None
            entry["version"] = (package or {}).get("version")
            out.append(entry)
        return out

    def package(self, python, environment):
        """python_package.resolve_package, once per interpreter and environment; None when it fails."""
        key = (python, tuple(sorted(environment.items())))
        if key not in self.packages:
            try:
                self.packages[key] = python_package.resolve_package(
                    python, "sglang", environment, self.params["timeout"], self.params.get("cache"), self.check_mode)
            except python_package.PackageInfoError as exc:
                self.packages[key] = exc
        return self.packages[key] if not isinstance(self.packages[key], Exception) else None

    def service_facts(self, params, unit):
        problems = []
        facts = {"problems": problems}
        service = params["service"]
        if unit.pop("read_failed", False):
            problems.append(unit["error"])
        if unit.get("exists") and not unit.get("managed_by_us"):
            unit["operator_files"] = operator_files(unit, params.get("managed_env_file"))
        facts["unit"] = unit
        if unit.get("exists") and unit.get("error") and not params.get("python"):
            problems.append(unit["error"] + "; or set sglang_dflash_python")

        command = unit.get("command") or {}
        python = params.get("python") or command.get("python")
        facts["python"] = python
        facts["python_from"] = "sglang_dflash_python" if params.get("python") else ("ExecStart" if python else None)
        if not python and not unit.get("error"):
            problems.append("no interpreter: %s has no unit to read ExecStart from; set sglang_dflash_python"
                            % unit.get("name", service))
        environment = service_python_environment(unit, self.manager_env)
        facts["service_python_environment"] = sorted(environment)
        if python:
            self.package(python, environment)
            failed = self.packages[(python, tuple(sorted(environment.items())))]
            if isinstance(failed, Exception):
                problems.append("%s (the interpreter came from %s)" % (failed, facts["python_from"]))
        release = self.release(python, environment) if python else _NO_RELEASE
        problems.extend(release["problems"])
        facts.update((k, v) for k, v in release.items() if k != "problems")
        facts["gpus"] = self.host["gpus"]

        paths = {"model_path": params.get("model_path") or command_model_path(command),
                 "draft_model_path": params.get("draft_model_path")}
        for key, path in paths.items():
            if path:
                entry = read_json_file(os.path.join(path, "config.json"))
                entry["dir_exists"] = os.path.isdir(path)
                if key == "draft_model_path":
                    # A copy of the drafter store (sglang_drafter): its manifest, read-only.
                    entry["store_copy"] = store_copy(path) if entry["dir_exists"] else None
                facts[key.replace("_path", "")] = entry
        facts.update((k, v) for k, v in self.host.items() if k != "gpus")
        _managed_files(facts, params)
        return facts

    def release(self, python, environment):
        """package, entry_point, implementation, flags, capabilities, algorithms of one interpreter."""
        key = (python, tuple(sorted(environment.items())))
        if key in self.releases:
            return self.releases[key]
        params, check_mode = self.params, self.check_mode
        problems = []
        release = dict(_NO_RELEASE, problems=problems, package=self.package(python, environment))
        self.releases[key] = release
        package = release["package"] or {}
        if package.get("dist_info"):
            # Changes with every install of the package, same version or not: the host's state compares it.
            package["record_sha256"] = file_digest(os.path.join(package["dist_info"], "RECORD"))
        if release["package"] and package.get("install") == "missing":
            problems.append("sglang is not installed for %s; set sglang_dflash_python to the interpreter that has it"
                            % python)

        release["entry_point"] = entry_point(package, python) if release["package"] else None

        release["implementation"] = None
        roots = package.get("search_roots") or []
        if roots:
            try:
                found = run_search(dict(IMPLEMENTATION_SEARCH, paths=roots, terms=list(params["search_terms"]),
                                        cache=params.get("cache")), check_mode)
                definitions = sorted(found["definitions"], key=lambda d: (d["kind"], d["path"], d["line"]))
                release["implementation"] = {
                    "missing_terms": found["missing_terms"], "definitions": definitions[:30],
                    "definitions_total": len(definitions), "backend": found["backend"], "cached": found["cached"],
                    "elapsed_s": found["elapsed_s"]}
            except SearchError as exc:
                problems.append("searching %s: %s" % (", ".join(roots), exc))

        release["flags"] = None
        release["capabilities"] = None
        if release["package"] and package.get("install") != "missing":
            try:
                flags = cli_flags.discover(dict(
                    argv=[python, "-m", "sglang.launch_server", "--help"], method=params["flags_method"],
                    source_dir=None, timeout=params["help_timeout"], environment=environment,
                    cache=params.get("cache"), max_output_bytes=params.get("max_output_bytes"),
                    package=release["package"]), check_mode)
                listed = flags["flags"] if params.get("flags_detail", "full") == "full" else [
                    dict((k, v) for k, v in flag.items() if k in PLAN_FLAG_KEYS) for flag in flags["flags"]]
                release["flags"] = {
                    "method": flags["method"], "cached": flags["cached"], "count": len(flags["flags"]),
                    "fallback_reason": flags.get("fallback_reason"), "source_check": flags.get("source_check"),
                    "warnings": flags.get("warnings") or [], "elapsed_s": flags["elapsed_s"], "list": listed}
                release["capabilities"] = flags["capabilities"]
            except cli_flags.FlagsError as exc:
                problems.append("reading the flags of sglang %s: %s" % (package.get("version"), exc))
        # What this release refuses at startup for DFLASH/DDTREE or a GPU architecture, from its own source.
        release["limits"] = release_limits.cached_limits_from_package(
            package["location"], params.get("cache"), check_mode) if package.get("location") else None
        release["algorithms"] = supported_algorithms(
            release["capabilities"], (release["implementation"] or {}).get("definitions") or []) \
            if release["capabilities"] else []

        return release


_NO_RELEASE = {"problems": [], "package": None, "entry_point": None, "implementation": None, "flags": None,
               "capabilities": None, "algorithms": [], "limits": None}


def _managed_files(facts, params):
    """This collection's own files of the service: the environment file (digest), the switch record, a unit of ours."""
    env_file = params.get("managed_env_file")
    if env_file:
        facts["managed_env_file"] = {"path": env_file, "exists": os.path.isfile(env_file),
                                     "sha256": file_digest(env_file)}
    record = params.get("rollout_record")
    if record:
        entry = read_json_file(record) if os.path.isfile(record) else {}
        facts["rollout_record"] = entry.get("config") if "error" not in entry else {"error": entry["error"]}
        facts["intent"] = _intent(os.path.dirname(record), (facts.get("unit") or {}).get("id") or params["service"])
    unit_file = params.get("managed_unit_file")
    if unit_file:
        exists = os.path.isfile(unit_file)
        content = None
        if exists:
            with open(unit_file) as handle:
                content = handle.read()
        facts["managed_unit_file"] = {"path": unit_file, "exists": exists, "content": content}


def _intent(state_dir, unit):
    """What an unfinished run of the role was doing to this unit (its intent file, module_utils/run_state.py) and
    whether its previous-state copy is still there; None when no run was cut."""
    try:
        intent = read_json(intent_path(state_dir, unit))
    except RunStateError as exc:
        return {"error": str(exc)}
    if intent is None:
        return None
    intent["snapshot_exists"] = os.path.isfile(os.path.join(state_dir, unit, "manifest.json"))
    return intent
