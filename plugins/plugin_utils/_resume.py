# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run the controller never finished: what the host's intent (module_utils/run_state.py) says was under way, and
what this run does about it. Read before anything else, so a rerun resumes or undoes instead of refusing.

- leaving_rotation: this collection took (or was taking) the host out of its gateways; the files are untouched.
  A switch still to make goes on (the host is already out); else the host is put back in rotation.
- switching: our files may be written and the server restarted, never proven. The switch goes on from where it is:
  the previous-state copy of that run is kept (it holds the state before it), the server is restarted, proven and
  put back; a failure rolls back to that copy.
- rolling_back: a failed switch was being undone. The rollback is finished (the previous files, the previous server,
  back in rotation) and the host fails with the reason that run recorded.
- canary: the canary's window was cut. The host keeps its switched server; this run's canary judges it again, or,
  without one, the host is left as it is and said so.

Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

LEAVING = "leaving_rotation"
SWITCHING = "switching"
RESTARTING = "restarting"
ROLLING_BACK = "rolling_back"
CANARY = "canary"


def _when(epoch):
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(epoch)))
    except (TypeError, ValueError):
        return "an unknown time"


def interrupted(intent, plan):
    """{phase, action, line, run, since, gateway, speed_before, snapshot_exists, reason, old_active} of a cut run;
    None without. old_active: whether the service ran before that run's switch (None: it had changed nothing).

    action: continue (the switch goes on), prove (restart and prove what is written), rejoin (put the host back),
    rollback (finish the rollback), canary (judge the canary again, or leave it), unreadable.
    """
    if not intent:
        return None
    unit = (plan or {}).get("unit")
    if intent.get("error"):
        return {"phase": None, "action": "unreadable", "run": None, "since": None, "gateway": None,
                "speed_before": None, "snapshot_exists": False, "reason": None, "old_active": None,
                "line": "interrupted: %s; remove it once %s is as it should be" % (intent["error"], unit)}
    phase = intent.get("phase")
    since = _when(intent.get("leaving_rotation_at") or intent.get("started"))
    run = intent.get("run") or "an earlier run"
    gateway = intent.get("gateway")
    out = "out of rotation since %s by an unfinished run (%s)" % (since, run) if gateway \
        else "switch of %s left unfinished by %s at %s" % (unit, run, since)
    action, todo = _action(phase, intent, plan or {})
    return {"phase": phase, "action": action, "run": run, "since": since, "gateway": gateway,
            "speed_before": intent.get("speed_before"), "snapshot_exists": bool(intent.get("snapshot_exists")),
            "reason": intent.get("reason"), "old_active": intent.get("old_active"),
            "line": "interrupted: %s%s; %s" % (out, _what(phase), todo)}


def _what(phase):
    return {LEAVING: "", SWITCHING: ", our files being written", RESTARTING: ", restarted and not proven",
            ROLLING_BACK: ", in the middle of a rollback", CANARY: ", during the canary's window"}.get(phase, "")


def _action(phase, intent, plan):
    if phase == ROLLING_BACK:
        return "rollback", "the next run finishes the rollback and puts the host back in rotation"
    if phase == CANARY:
        return "canary", "the next run's canary judges it again (without a canary stage it keeps the new server)"
    if plan.get("errors"):
        return "refused", "the next run is refused (%s)" % "; ".join(plan["errors"])[:300]
    if plan.get("needs_change"):
        return "continue", "the next run goes on with the switch, then proves it and puts the host back"
    if phase in (SWITCHING, RESTARTING):
        return "prove", "the next run restarts the server, proves it and puts the host back (or rolls it back)"
    return "rejoin", "the next run puts the host back in rotation"
