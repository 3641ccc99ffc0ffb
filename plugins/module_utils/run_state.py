# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's memory of a switch, kept under the state directory, one pair of files per unit:

- the intent (<unit>.intent.json): written before each step that leaves the host or a gateway in a state a later
  run must know about (out of rotation, our files written and the server restarting, a canary window, a rollback),
  and removed once the switch is recorded. A run the controller never finished leaves it behind; the next run
  reads it (module_utils/host_facts.py) and resumes or undoes (plugin_utils/_resume.py);
- the record of the last switch (<unit>.last-rollout.json), which the fleet report reads.

Each file is replaced in one step (a temporary file in the same directory, renamed over it), so a run killed at any
moment leaves the previous content or the new one, never half of either.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils.file_snapshot import Snapshot
from ansible_collections.gpufleet.sglang.plugins.module_utils.unit_journal import now_monotonic_us

INTENT_SUFFIX = ".intent.json"
RECORD_SUFFIX = ".last-rollout.json"
# The phases of an intent, in the order a switch passes them.
PHASES = ("leaving_rotation", "switching", "restarting", "canary", "rolling_back")


class RunStateError(Exception):
    pass


def intent_path(state_dir, unit):
    return os.path.join(state_dir, unit + INTENT_SUFFIX)


def record_path(state_dir, unit):
    return os.path.join(state_dir, unit + RECORD_SUFFIX)


def write_json(path, data, mode=0o644):
    """Replace path with data as JSON in one step (rename of a temporary file beside it)."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gpufleet-")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=4, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path):
    """The JSON object at path; None when there is no file; RunStateError when it is not a JSON object."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise RunStateError("%s cannot be read as JSON: %s" % (path, exc)) from None
    if not isinstance(data, dict):
        raise RunStateError("%s is not a JSON object" % path)
    return data


def update(state_dir, unit, intent=None, clear_intent=False, record=None, drop_snapshot=False, dry_run=False,
           record_update=None):
    """Merge intent into the unit's intent file (its phase and what the step will do), or clear it, write the record
    when given, and drop the unit's previous-state copy (module_utils/file_snapshot.py, <state_dir>/<unit>/) once the
    switch is recorded. record_update: keys merged into the record already there (the canary's verdict, once judged).
    Returns {changed, previous (the intent before), intent (after), now, monotonic_us}."""
    if intent is not None and intent.get("phase") not in PHASES:
        raise RunStateError("an intent's phase must be one of %s, not %r" % (", ".join(PHASES), intent.get("phase")))
    path = intent_path(state_dir, unit)
    previous = read_json(path)
    now = time.time()
    after = previous
    changed = False
    if intent is not None:
        # A value a skipped step left (its task's skipped result, or null) keeps what an earlier phase wrote: a
        # resumed switch keeps the figures the first run measured.
        kept = dict((k, v) for k, v in intent.items()
                    if v is not None and not (isinstance(v, dict) and v.get("skipped")))
        after = dict(previous or {}, **kept)
        # When each phase began, on both clocks: a rollback reads the journal from the switch's mark.
        after.update(unit=unit, updated=now)
        after.update({intent["phase"] + "_at": now, intent["phase"] + "_us": now_monotonic_us()})
        after.setdefault("started", now)
        changed = True
        if not dry_run:
            write_json(path, after, mode=0o600)
    if record is None and record_update:
        record = read_json(record_path(state_dir, unit))
        record = dict(record, **record_update) if record is not None else None
    if record is not None:
        changed = True
        if not dry_run:
            write_json(record_path(state_dir, unit), record)
    if drop_snapshot and Snapshot(os.path.join(state_dir, unit)).remove(dry_run=dry_run):
        changed = True
    if clear_intent and previous is not None:
        changed = True
        after = None
        if not dry_run:
            os.unlink(path)
    return {"changed": changed, "previous": previous, "intent": after, "now": now,
            "monotonic_us": now_monotonic_us()}
