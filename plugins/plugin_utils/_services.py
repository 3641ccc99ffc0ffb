# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several SGLang services on one host: each service's own settings, and its GPUs against its siblings'.

An entry of sglang_dflash_services names a unit or a pattern and may override the settings that belong
to one server (its drafter, block size, port, ...); what belongs to the host (the units to stop, the
gateways, where this collection keeps its files) stays one setting for every service. Controller-only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_services import visible_gpus

# The role's settings (without the sglang_dflash_ prefix) one service may set for itself.
PER_SERVICE_SETTINGS = (
    "python", "launcher_module", "user", "model_path", "draft_model_path", "algorithm", "block_size",
    "draft_window_size", "ddtree_budget", "fallback_algorithm", "speed_probe", "speed_probe_prompts",
    "speed_probe_max_new_tokens", "min_accept_length", "min_speedup", "host", "port", "tp_size", "extra_args",
    "environment", "require_free_gpus", "health_timeout", "limit_nofile", "drain_timeout", "stop_drain",
    "gateway_worker_url", "drafter",
)


def entry_label(entry, index=None):
    """How messages name an entry of sglang_dflash_services."""
    where = "" if index is None else " entry %d" % (index + 1)
    return "sglang_dflash_services%s (%s)" % (where, (entry or {}).get("name"))


def settings_for_service(raw_settings, facts):
    """The role's variables for one selected service, from the host-level ones and that service's facts.

    raw_settings["services"] is sglang_dflash_services: the entry that selected this service (the facts'
    selected_by) becomes raw["service_entry"]; the service's unit name and this collection's environment file
    for it (the facts' managed_paths) fill service_name and env_file. A caller's own service_entry or env_file
    is kept (the unit tests give them directly).
    """
    raw = dict(raw_settings)
    facts = facts or {}
    services = raw.pop("services", None) or []
    selected_by = facts.get("selected_by")
    if "service_entry" not in raw:
        raw["service_entry"] = services[selected_by] \
            if isinstance(selected_by, int) and 0 <= selected_by < len(services) else None
    name = (facts.get("unit") or {}).get("name")
    if name:
        raw["service_name"] = name
    if "env_file" not in raw:
        raw["env_file"] = (facts.get("managed_paths") or {}).get("env_file")
    return raw


def apply_service_entry(raw_settings, entry):
    """(settings with the entry's overrides, problems, {key: label}) for one selected service.

    The labels let a problem of an overridden value name the entry instead of the role variable.
    """
    settings = dict(raw_settings)
    if entry is None:
        return settings, [], {}
    if not isinstance(entry, dict):
        return settings, ["each entry of sglang_dflash_services must be a dict with a name, not %r" % (entry,)], {}
    label = entry_label(entry)
    problems = []
    unknown = sorted(k for k in entry if k != "name" and k not in PER_SERVICE_SETTINGS)
    if unknown:
        problems.append("%s: %s cannot be set per service (%s); per service: %s" % (
            label, ", ".join(unknown), "set them once for the host as sglang_dflash_<name>",
            ", ".join(PER_SERVICE_SETTINGS)))
    labels = {}
    for key in PER_SERVICE_SETTINGS:
        if key in entry:
            settings[key] = entry[key]
            labels[key] = "%s %s" % (label, key)
    return settings, problems, labels


def relabel(problems, labels):
    """Problems of overridden settings name the entry of sglang_dflash_services that set them."""
    out = []
    for problem in problems:
        for key, label in labels.items():
            if problem.startswith("sglang_dflash_%s " % key):
                problem = label + problem[len("sglang_dflash_%s" % key):]
                break
        out.append(problem)
    return out


def gpus_text(indexes):
    if indexes is None:
        return "every GPU"
    return "GPU%s %s" % ("s" if len(indexes) != 1 else "", ",".join(str(i) for i in indexes))


def own_gpus(facts, settings):
    """(GPU indexes or None for all, where they come from) of the service after the switch."""
    environment = settings.get("environment") or {}
    gpus = (facts.get("gpus") or {}).get("gpus") or []
    if isinstance(environment, dict) and "CUDA_VISIBLE_DEVICES" in environment:
        # Read as the facts read a unit's (and as CUDA does); a value naming no single GPU leaves every GPU.
        indexes = visible_gpus(str(environment["CUDA_VISIBLE_DEVICES"]), gpus)[0]
        return indexes, "CUDA_VISIBLE_DEVICES of sglang_dflash_environment"
    service = facts.get("service") or {}
    # The switch restarts the service: it then runs on the GPUs its unit's files give now.
    mapped = (service.get("after_restart") or service).get("gpus") or {}
    return mapped.get("indexes"), mapped.get("source")


def overlapping_services(facts, unit_id, indexes, source, stop_units):
    """Problems: another SGLang service that runs (or is switched in this run) shares this service's GPUs."""
    selected = set(facts.get("selected_units") or [])
    problems = []
    for other in facts.get("sglang_units") or []:
        if other["unit"] == unit_id or other["unit"] in stop_units:
            continue
        if other.get("active_state") not in ("active", "activating", "reloading") and other["unit"] not in selected:
            continue
        theirs = (other.get("gpus") or {}).get("indexes")
        meet, shared = _shared(indexes, theirs)
        if not meet:
            continue
        problems.append(
            "%s (%s%s) and %s (%s%s) share %s: give each service its own GPUs (CUDA_VISIBLE_DEVICES in its unit or "
            "its entry's environment), add %s to sglang_dflash_stop_units, "
            "or set sglang_dflash_require_free_gpus=false" % (
                unit_id, gpus_text(indexes), " from %s" % source if source else "", other["unit"], gpus_text(theirs),
                " from %s" % other["gpus"]["source"] if (other.get("gpus") or {}).get("source") else "",
                gpus_text(shared), other["unit"]))
    return problems


def _shared(mine, theirs):
    """(whether two GPU sets meet, the GPUs they share); None stands for every GPU of the host."""
    if mine is None or theirs is None:
        other = theirs if mine is None else mine
        return other is None or len(other) > 0, None if other is None else sorted(other)
    both = sorted(set(mine) & set(theirs))
    return bool(both), both
