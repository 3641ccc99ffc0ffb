# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the rollback of a failed switch did (roles/sglang_dflash/tasks/rollback.yml), from the results its tasks
registered, as _messages.rollback_message words it.

Controller-only and pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _seconds(value):
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _ran(result):
    """A registered result, or None when its task was skipped (or never ran)."""
    return result if isinstance(result, dict) and result and not result.get("skipped") else None


def rollback_observed(observed):
    """The derived observations (restarted, rollback_s, journal_lines, taken_out_of_rotation, back_in_rotation)
    from the tasks' raw results where observed has them: restart (the restart task's result), journal
    (unit_journal's), rollback_started and now (timestamps), out_of_rotation_at and out_of_rotation_s (null
    when the host never left rotation, or was not put back). Keys given already derived are kept."""
    derived = dict(observed)
    if "restart" in observed:
        derived.setdefault("restarted", bool((_ran(observed["restart"]) or {}).get("changed")))
    if "rollback_started" in observed and "now" in observed:
        started, now = _seconds(observed["rollback_started"]), _seconds(observed["now"])
        derived.setdefault("rollback_s", now - started if started is not None and now is not None else None)
    if "journal" in observed:
        derived.setdefault("journal_lines", (_ran(observed["journal"]) or {}).get("lines") or [])
    if "out_of_rotation_at" in observed:
        derived.setdefault("taken_out_of_rotation", observed["out_of_rotation_at"] is not None)
    if "out_of_rotation_s" in observed:
        derived.setdefault("back_in_rotation", observed["out_of_rotation_s"] is not None)
    return derived


def rollback_outcome(observed):
    """What the rollback of a failed switch did, as rollback_message reads it.

    observed: failure (the failed task's result), old_ready (sglang_wait_ready's result for the previous service;
    None or skipped when not checked), back_failed (why putting the host back failed), and the tasks' raw results
    of rollback_observed, or what it derives from them: restarted (the new server was started), rollback_s,
    journal_lines (unit_journal's lines, read when the failure did not bring the journal itself),
    taken_out_of_rotation, back_in_rotation.
    """
    observed = rollback_observed(observed)
    failure = observed.get("failure") or {}
    old_ready = observed.get("old_ready")
    if not old_ready or old_ready.get("skipped"):
        old_ready = None
    if not observed.get("taken_out_of_rotation"):
        rotation = None
    elif observed.get("back_failed"):
        rotation = "left OUT of rotation: %s" % observed["back_failed"]
    elif observed.get("back_in_rotation"):
        rotation = "back in rotation"
    else:
        rotation = "left OUT of rotation: the previous service is not healthy"
    journal = failure["journal"] if "journal" in failure else observed.get("journal_lines")
    return {"failure": failure, "restarted": bool(observed.get("restarted")), "old_ready": old_ready,
            "rollback_s": _seconds(observed.get("rollback_s")) or 0.0, "rotation": rotation,
            "journal": list(journal or [])}


def units_stopped_by_switch(related_units, stopped):
    """The related units this service's switch stopped, in dict2items' shape ({key, value}, the value as gathered
    before the switch: active_state, unit_file_state), so the rollback starts and enables each as it was.

    stopped: the stop task's registered loop (its changed items are the units it stopped); the units that were
    already stopped, or stopped by an earlier service's switch, are not among them."""
    names = set(r.get("item") for r in (stopped or {}).get("results") or [] if isinstance(r, dict) and r.get("changed"))
    return [{"key": name, "value": state} for name, state in (related_units or {}).items() if name in names]
