# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A unit's journal since a start: the lines of the server that failed, not of the one before.

`journalctl --unit X --lines N` starts with whatever the unit logged last, which after a restart is
the previous server's start (an old NEXTN run) before the lines that matter. The caller marks the
host's CLOCK_MONOTONIC (the clock journald stamps entries with) right before it restarts the unit, and
reads the journal after that mark: every attempt of a crash loop is included, nothing from before. Without
a mark, the unit's last exit from the inactive state is used (systemd moves it on every automatic
restart, so that is the latest attempt only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
# systemd's catalog ids of "Starting X..." and "Started X." (sd-messages.h: SD_MESSAGE_UNIT_STARTING,
# SD_MESSAGE_UNIT_STARTED). A restart logs the old server's stop first; the new server's lines begin here.
UNIT_START_MESSAGE_IDS = ("7d4958e842da4a758f6c1cdc7b36dcc5", "39f53479d3a045ac8e11786248231fbf")


def _boot_id():
    try:
        with open(BOOT_ID_PATH) as handle:
            return handle.read().strip().replace("-", "")
    except OSError:
        return None


def _message(entry):
    message = entry.get("MESSAGE")
    if isinstance(message, list):  # journalctl writes a message that is not UTF-8 as its bytes
        return bytes(b for b in message if isinstance(b, int) and 0 <= b < 256).decode("utf-8", "replace")
    return "" if message is None else str(message)


def start_monotonic_us(unit, run_systemctl):
    """CLOCK_MONOTONIC microseconds at which the unit last left the inactive state; 0 when unknown."""
    rc, out, _err = run_systemctl(["systemctl", "show", "--no-pager", "-p", "InactiveExitTimestampMonotonic", unit])
    if rc != 0:
        return 0
    try:
        return int(out.strip().partition("=")[2] or 0)
    except ValueError:
        return 0


def now_monotonic_us(monotonic=time.monotonic):
    """The mark to read a journal after: this host's CLOCK_MONOTONIC, in microseconds."""
    return int(monotonic() * 1e6)


def journal_since_start(unit, lines, run_systemctl, since_us=None, wall_clock=time.time, monotonic=time.monotonic,
                        boot_id=_boot_id):
    """(lines, since_us): the last `lines` journal messages of the unit logged at or after since_us, from the
    first start after it on (the stop of the server before is left out).

    since_us: a mark from now_monotonic_us() taken before the start; None: the unit's last start.
    Without either (a unit that never ran) the last `lines` of its journal, since_us 0.
    """
    if not since_us:
        since_us = start_monotonic_us(unit, run_systemctl)
    argv = ["journalctl", "--unit", unit, "--lines", str(lines), "--no-pager", "--output", "json"]
    if since_us:
        # journalctl --since takes wall-clock time: the mark moved onto the wall clock, with a second of
        # slack; the exact cut is made on the entries' monotonic stamps below.
        since_wall = wall_clock() - (monotonic() - since_us / 1e6) - 1.0
        argv += ["--since", "@%.6f" % since_wall]
    rc, out, _err = run_systemctl(argv)
    if rc != 0:
        return [], since_us
    boot = boot_id()
    messages = []
    first_start = None
    for line in out.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if since_us:
            if boot and entry.get("_BOOT_ID") not in (None, boot):
                continue
            try:
                if int(entry.get("__MONOTONIC_TIMESTAMP") or 0) < since_us:
                    continue
            except ValueError:
                continue
        if first_start is None and entry.get("MESSAGE_ID") in UNIT_START_MESSAGE_IDS:
            first_start = len(messages)
        messages.append(_message(entry))
    if since_us and first_start:
        messages = messages[first_start:]
    return messages[-lines:] if lines else [], since_us


def redact(lines, secrets):
    """Lines with every secret value replaced (journal lines can echo the server's arguments)."""
    secrets = sorted((s for s in secrets if s and len(s) >= 4), key=len, reverse=True)
    out = []
    for line in lines:
        for secret in secrets:
            line = line.replace(secret, "********")
        out.append(line)
    return out
