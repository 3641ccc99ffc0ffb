# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a host stands after a switch, day after day: not switched, current, drifted, or broken by a package change.

From what the facts read now (our drop-in, the operator's files, the package behind the unit's interpreter and
its flags) against what the rollout record kept at the switch and what a deploy would write now (the plan).
A broken host is found before anyone restarts it: its next restart would fail on a flag its release lacks.

Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex

from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import UnitError, split_exec_start
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_capabilities import INTENT_FLAGS
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._arguments import flag_index

NOT_SWITCHED = "not switched"
CURRENT = "current"
DRIFTED = "drifted"
BROKEN = "broken by a package change"
STATES = (NOT_SWITCHED, CURRENT, DRIFTED, BROKEN)
_LAUNCHER_WORDS = ("sglang.launch_server", "serve")


def is_switched(facts):
    """Our drop-in is beside the operator's unit, or the unit is ours (installed by the role)."""
    unit = (facts or {}).get("unit") or {}
    return bool((unit.get("managed_dropin") or {}).get("exists")) or bool(unit.get("managed_by_us"))


def written_command(content):
    """The last non-empty ExecStart= value of a unit file or drop-in we wrote; None without one."""
    value = None
    for line in (content or "").splitlines():
        if line.startswith("ExecStart=") and line[len("ExecStart="):].strip():
            value = line[len("ExecStart="):].strip()
    return value


def written_arguments(content):
    """The server's argument tokens in the ExecStart of our drop-in or unit, after the launcher.

    A shell wrapper's script is one word: its words are split again. What cannot be split gives [].
    """
    value = written_command(content)
    if value is None:
        return []
    try:
        _prefix, words = split_exec_start(value)
    except UnitError:
        return []
    tokens = []
    for word in words:
        try:
            tokens.extend(shlex.split(word.value) if any(c.isspace() for c in word.value) else [word.value])
        except ValueError:
            return []
    starts = [i for i, token in enumerate(tokens) if token.endswith(_LAUNCHER_WORDS)]
    return tokens[starts[0] + 1:] if starts else tokens


def written_options(content):
    """The --flag names of the server's arguments in our drop-in or unit."""
    return [token.split("=", 1)[0] for token in written_arguments(content) if token.startswith("--")]


def flag_problems(options, flags, capabilities):
    """The written options this release does not accept, each with its name in this release where it has one."""
    index = flag_index(flags or [])
    names = (capabilities or {}).get("flags") or {}
    problems = []
    for option in options:
        if option in index:
            continue
        renamed = next((names.get(intent) for intent, spellings in INTENT_FLAGS.items()
                        if option in spellings and names.get(intent)), None)
        problems.append({"flag": option, "now": renamed})
    return problems


def _package_change(record, package):
    """'sglang 0.5.23 -> 0.5.11' (or 'reinstalled') when the package changed after the switch; None otherwise."""
    before = (record or {}).get("package") or {"version": (record or {}).get("release")}
    if not record or not package:
        return None
    if before.get("version") != package.get("version"):
        return "sglang %s -> %s" % (before.get("version"), package.get("version"))
    if before.get("record_sha256") and package.get("record_sha256") and \
            before["record_sha256"] != package["record_sha256"]:
        return "sglang %s reinstalled (its RECORD changed)" % package.get("version")
    return None


def _changed_operator_files(record, unit):
    """The operator's unit files and environment files whose content changed (or appeared, or went) since the
    switch; None when the record or the facts do not say (a switch by an older release of this collection)."""
    then = (record or {}).get("operator_files")
    now = (unit or {}).get("operator_files")
    if then is None or now is None:
        return None
    return sorted(path for path in set(then) | set(now) if then.get(path) != now.get(path))


def switch_state(facts, plan):
    """{state, reason, todo, notes, flag_problems} of a host, from its facts and the plan a deploy would make now."""
    facts = facts or {}
    plan = plan or {}
    unit = facts.get("unit") or {}
    unit_id = plan.get("unit") or unit.get("id")
    if not is_switched(facts):
        return _state(NOT_SWITCHED, "%s runs the operator's own command" % unit_id if unit.get("exists")
                      else "%s does not exist" % unit_id, "playbooks/deploy_dflash.yml switches it")
    record = facts.get("rollout_record") or {}
    if "error" in record:
        record = {}
    package = facts.get("package") or {}
    package_change = _package_change(record, package)
    changed_files = _changed_operator_files(record, unit)
    ours = (unit.get("managed_dropin") or {}).get("content") if not unit.get("managed_by_us") \
        else (facts.get("managed_unit_file") or {}).get("content")
    options = record.get("written_options") or written_options(ours)
    problems = flag_problems(options, (facts.get("flags") or {}).get("list"), facts.get("capabilities")) \
        if (facts.get("flags") or {}).get("list") else []
    notes = []
    if problems:
        words = "; ".join(_flag_problem_words(p, package.get("version")) for p in problems)
        reason = "%s: the command in our drop-in passes %s, so %s would fail at its next restart" % (
            package_change or "the release behind the unit's interpreter changed", words, unit_id)
        result = _state(BROKEN, reason, "do not restart %s as it is: re-run playbooks/deploy_dflash.yml, which "
                        "re-bases the command on this release's flags, or playbooks/revert_dflash.yml" % unit_id)
        result["flag_problems"] = problems
        return result
    if package_change:
        notes.append("%s since the switch; every flag of the command still exists" % package_change)
    if plan.get("errors"):
        return _state(DRIFTED, "a deploy would be refused now: %s" % "; ".join(plan["errors"]),
                      "fix what the reasons name, then re-run playbooks/deploy_dflash.yml", notes)
    files = plan.get("files") or {}
    config_changed = (files.get("config") or {}).get("changed")
    env_changed = (files.get("env") or {}).get("changed")
    if config_changed or env_changed:
        if changed_files:
            cause = "the operator's files changed since the switch (%s)" % ", ".join(changed_files)
        elif package_change:
            cause = "the release changed since the switch (%s)" % package_change
        elif changed_files is None:
            cause = "the operator's files or the role's variables changed since the switch"
        else:
            cause = "the role's variables ask for something else than the switch wrote"
        what = " and ".join(kind for kind, changed in [("the command", config_changed),
                                                       ("our environment file", env_changed)] if changed)
        return _state(DRIFTED, "%s: %s in effect is not what a deploy writes now" % (cause, what),
                      "re-run playbooks/deploy_dflash.yml: it re-bases on the operator's current unit and this "
                      "release (or playbooks/revert_dflash.yml to go back)", notes)
    if changed_files:
        notes.append("the operator's files changed since the switch (%s) without changing the command; they take "
                     "effect at the next restart" % ", ".join(changed_files))
    return _state(CURRENT, "our drop-in is what a deploy writes now" if not unit.get("managed_by_us")
                  else "our unit is what a deploy writes now", "nothing", notes)


def _flag_problem_words(problem, version):
    renamed = " (it is %s there)" % problem["now"] if problem["now"] else ""
    return "%s, not a flag of sglang %s%s" % (problem["flag"], version, renamed)


def _state(state, reason, todo, notes=None):
    return {"state": state, "reason": reason, "todo": todo, "notes": list(notes or []), "flag_problems": []}
