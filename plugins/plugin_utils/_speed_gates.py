# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speed gates of a switch: do the new server's figures pass, and the one-line summary of them.

Controller-only and pure: the measurements come from the sglang_speed_probe module (module_utils/speed_probe.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def verdict(after, before=None, min_accept_length=None, min_speedup=None):
    """Do the new server's figures pass the gates? {passed, speedup, problems, notes}.

    A speed-up gate with no measured previous server (it was not running or not healthy) is noted,
    not failed: rolling back would not bring back anything faster. A gate on a figure the new server
    does not report fails: it was asked for and cannot be proven.
    """
    after, before = after or {}, before or {}
    problems, notes = [], []
    speedup = None
    if after.get("measured") and before.get("measured") and before.get("tokens_per_s"):
        speedup = round(after["tokens_per_s"] / before["tokens_per_s"], 2)
    if not after.get("measured"):
        if min_accept_length is not None or min_speedup is not None:
            problems.append("the new server's speed could not be measured (%s)" % (after.get("problem") or "not run"))
        return {"passed": not problems, "speedup": None, "problems": problems, "notes": notes}
    if min_accept_length is not None:
        length = after.get("accept_length")
        if length is None:
            problems.append("the server reports no acceptance length, so sglang_dflash_min_accept_length (%s) "
                            "cannot be checked; unset it for this release" % min_accept_length)
        elif length < float(min_accept_length):
            problems.append("average acceptance length %.2f is below sglang_dflash_min_accept_length %s "
                            "(a drafter that does not match the target model accepts 1.4-3)"
                            % (length, min_accept_length))
    if min_speedup is not None:
        if speedup is None:
            notes.append("sglang_dflash_min_speedup not checked: the previous server was not measured (%s)"
                         % (before.get("problem") or "it was not running"))
        elif speedup < float(min_speedup):
            problems.append("%.1f tokens/s is %.2fx the previous server's %.1f tokens/s, below "
                            "sglang_dflash_min_speedup %s" % (after["tokens_per_s"], speedup,
                                                              before["tokens_per_s"], min_speedup))
    return {"passed": not problems, "speedup": speedup, "problems": problems, "notes": notes}


def summary_line(after, before=None, speedup=None):
    """'tokens/s 198.7 -> 476.2 (2.40x), acceptance 2.60 -> 6.00, latency 0.32 -> 0.13 s' (one line)."""
    def figure(m, key, fmt):
        value = (m or {}).get(key)
        return fmt % value if value is not None else "-"

    before = before or {}
    ratio = " (%.2fx)" % speedup if speedup is not None else ""
    parts = ["tokens/s %s -> %s%s" % (figure(before, "tokens_per_s", "%.1f"),
                                      figure(after, "tokens_per_s", "%.1f"), ratio),
             "acceptance %s -> %s" % (figure(before, "accept_length", "%.2f"), figure(after, "accept_length", "%.2f")),
             "latency %s -> %s s" % (figure(before, "latency_s_median", "%.2f"),
                                     figure(after, "latency_s_median", "%.2f"))]
    return ", ".join(parts)
