# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's variables as the plan takes them: converted to their types, or refused by name.

Values given with `-e key=value` arrive as strings; a null templated by ansible-core < 2.19 arrives as
"None". Controller-only and pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import os

import yaml
from ansible.errors import AnsibleError
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.seam import declarations
from ansible_collections.gpufleet.sglang.plugins.module_utils.release_limits import LIMIT_IDS
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._services import apply_service_entry, relabel

# Role variable -> (lowest, highest) for the integers the role uses; None: no bound.
INTEGER_SETTINGS = {
    "block_size": (1, 1024), "draft_window_size": (1, None), "port": (1, 65535), "tp_size": (1, 1024),
    "gpu_release_timeout": (1, None), "health_timeout": (1, None), "journal_lines": (0, 10000),
    "limit_nofile": (1, None), "ddtree_budget": (1, 4096), "speed_probe_max_new_tokens": (1, 65536),
    "drain_timeout": (1, None), "gateway_timeout": (1, None),
}
# Role variable -> lowest value (exclusive when the bound is 0) for the gates.
FLOAT_SETTINGS = {"min_accept_length": 1.0, "min_speedup": 0.0}
# Role variables that are true or false; a caller that gives none gets the role's default (defaults/main.yml).
BOOLEAN_SETTINGS = ("require_free_gpus", "disable_stopped_units", "speed_probe", "stop_drain", "restart_stopped_units")
PREFIX = "sglang_dflash_"
# The role's own files, beside this collection's plugins: its defaults are the one place a default is written, its
# argument spec the one list of its variables.
_ROLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles", "sglang_dflash")
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")
DRAFTER_REQUIRED = "sglang_dflash_draft_model_path is required"


def _role_file(*parts):
    with open(os.path.join(_ROLE_DIR, *parts)) as handle:
        # LibYAML's loader where PyYAML has it: a tenth of the pure-Python one's time.
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


# Read at import: ansible-playbook imports an action plugin (and so this module) once, before it forks the worker of
# each host and task, so the whole run shares one read (each worker reading them was 6 ms a host).
_DEFAULTS = dict((k[len(PREFIX):], v) for k, v in _role_file("defaults", "main.yml").items())
# The variables the plan takes: every one of the argument spec but the secrets (no_log: the tasks pass those to the
# one module that needs them).
PLAN_VARIABLES = tuple(sorted(
    name for name, spec in _role_file("meta", "argument_specs.yml")["argument_specs"]["main"]["options"].items()
    if not spec.get("no_log")))


def role_defaults():
    """{setting: default} of the role (its defaults/main.yml, the sglang_dflash_ prefix taken off)."""
    return dict(_DEFAULTS)


def settings_from_vars(task_vars, template):
    """The role's settings as a task of the role sees them: each variable of PLAN_VARIABLES that is set, by its name
    without the prefix, templated on its own (template: the action's templar's). Set by the task's variables, not as
    one templated argument: that was 79 templates compiled for every host and task (57 ms of the controller's CPU a
    host), where most values are no template at all. A value that cannot be templated raises ValueError naming its
    variable."""
    settings = {}
    for name in PLAN_VARIABLES:
        if name not in task_vars:
            continue
        try:
            settings[name[len(PREFIX):]] = template(task_vars[name])
        except AnsibleError as exc:
            raise ValueError("%s cannot be templated (%s): set it to a value, or to a template of variables this host "
                             "has" % (name, exc)) from None
    return settings


def given_or_task_settings(given, task_vars, template):
    """(settings, problem): the settings an action was given, or else the role's as its task sees them
    (settings_from_vars); problem names the host and the variable that cannot be templated. The actions return it as
    a failed result, not AnsibleActionFail, which failed_when cannot catch (the fleet report keeps it as a row)."""
    if given is not None:
        return given, None
    try:
        return settings_from_vars(task_vars, template), None
    except ValueError as exc:
        return None, "host %s: %s" % (task_vars.get("inventory_hostname"), exc)


def role_settings(raw, gateway_host=None):
    """The settings a caller passes in (the role's tasks: settings_from_vars), with the role's default for any it
    leaves out and the address this host is reached at (the default worker URL's host)."""
    settings = role_defaults()
    settings.update(raw or {})
    if gateway_host and not settings.get("gateway_host"):
        settings["gateway_host"] = gateway_host
    return settings


def normalize_settings(raw, require_drafter=True):
    """Role variables with the types the plan needs: (settings, problems), each problem naming its variable.

    require_drafter: a deployment needs sglang_dflash_draft_model_path; the way back does not.
    raw["service_entry"]: the entry of sglang_dflash_services that selected this service (None without the list);
    its settings override the role's, and a problem of one of them names the entry.
    """
    raw = dict(raw)
    settings, problems, labels = apply_service_entry(raw, raw.pop("service_entry", None))
    for convert in (_integers, _floats, _booleans, _nullable_strings, _shapes, _relations):
        problems.extend(convert(settings))
    if not require_drafter:
        problems = [p for p in problems if not p.startswith(DRAFTER_REQUIRED)]
    return settings, relabel(problems, labels)


def _is_unset(value):
    return value is None or value in ("", "None")


def _numbers(settings, bounds, parse, kind, out_of_range):
    """Convert each bounded number in place; out_of_range(number, bound) -> the allowed range in words, or None."""
    problems = []
    for key, bound in bounds.items():
        value = settings.get(key)
        if _is_unset(value):
            settings[key] = None
            continue
        try:
            number = parse(str(value).strip())
        except ValueError:
            problems.append("sglang_dflash_%s must be %s, not %r" % (key, kind, value))
            continue
        allowed = out_of_range(number, bound)
        if allowed:
            problems.append("sglang_dflash_%s must be %s, not %s" % (key, allowed, value if kind != "an integer"
                                                                     else number))
            continue
        settings[key] = number
    return problems


def _integer_range(number, bound):
    low, high = bound
    if number < low or (high is not None and number > high):
        return ("between %d and %d" % (low, high)) if high is not None else "at least %d" % low
    return None


def _float_range(number, low):
    if math.isnan(number) or number < low or (low == 0.0 and number <= 0.0):
        return ("at least %s" if low else "more than %s") % low
    return None


def _integers(settings):
    return _numbers(settings, INTEGER_SETTINGS, int, "an integer", _integer_range)


def _floats(settings):
    return _numbers(settings, FLOAT_SETTINGS, float, "a number", _float_range)


def _booleans(settings):
    problems = []
    defaults = role_defaults()
    for key in BOOLEAN_SETTINGS:
        value = settings.get(key, defaults[key])
        if isinstance(value, bool):
            settings[key] = value
            continue
        text = str(value).strip().lower()
        if text in TRUE_WORDS or text in FALSE_WORDS:
            settings[key] = text in TRUE_WORDS
        else:
            problems.append("sglang_dflash_%s must be true or false, not %r" % (key, value))
    return problems


def _nullable_strings(settings):
    for key in ("model_path", "draft_model_path", "python", "host", "fallback_algorithm", "gateway_worker_url"):
        if settings.get(key) in ("", "None"):
            settings[key] = None
    return []


def _shapes(settings):
    """Required values, choices, lists and mappings, URLs, the gates that need the speed probe."""
    problems = []
    if not settings.get("draft_model_path") and not settings.get("drafter"):
        problems.append(DRAFTER_REQUIRED + " (the drafter directory on the host), or sglang_dflash_drafter (where "
                        "it comes from)")
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
    allowed = settings.get("allow_release_limits") or []
    if not isinstance(allowed, list) or not set(allowed) <= set(LIMIT_IDS):
        problems.append("sglang_dflash_allow_release_limits must be a list of limit ids (%s), not %r"
                        % (", ".join(LIMIT_IDS), allowed))
    problems.extend(declarations(settings.get("gateways"), settings.get("gateway_urls"))[1])
    worker_url = settings.get("gateway_worker_url")
    if worker_url is not None and not str(worker_url).startswith(("http://", "https://")):
        problems.append("sglang_dflash_gateway_worker_url must be an http:// or https:// URL, not %r" % worker_url)
    return problems


def _relations(settings):
    """Numbers that are valid alone but not together."""
    problems = []
    window, block = settings.get("draft_window_size"), settings.get("block_size")
    if isinstance(window, int) and isinstance(block, int) and window < block:
        problems.append("sglang_dflash_draft_window_size (%d) must be at least sglang_dflash_block_size (%d): "
                        "SGLang refuses to start otherwise" % (window, block))
    return problems
