# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speed gates of a switch: do the new server's figures pass, and the one-line summary of them.

Controller-only and pure: the measurements come from the sglang_speed_probe module (module_utils/speed_probe.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


# Share of words that must agree, position by position, between the previous and the new server's answer to
# one greedy prompt (speculative decoding does not change greedy output; numerics may, late in an answer).
MIN_OUTPUT_AGREEMENT = 0.5


def probe_levels(configured=None, load=None, cap=64):
    """The speed probe's concurrency levels: the operator's list, else 1 and the load the host carried (requests
    running or queued just before the switch, at most `cap`). 1 is always first."""
    if configured:
        return sorted(set([1] + [int(c) for c in configured]))
    levels = [1]
    if isinstance(load, (int, float)) and not isinstance(load, bool) and load > 1:
        levels.append(int(min(load, cap)))
    return levels


def level_speedups(after, before):
    """{concurrency: new tokens/s over the previous server's} at each level both were measured at."""
    old = dict((lv.get("concurrency"), lv) for lv in (before or {}).get("levels") or [] if lv.get("tokens_per_s"))
    speedups = {}
    for level in (after or {}).get("levels") or []:
        base = old.get(level.get("concurrency"))
        if base and level.get("tokens_per_s") is not None:
            speedups[level["concurrency"]] = round(level["tokens_per_s"] / base["tokens_per_s"], 2)
    return speedups


def agreement(old, new):
    """Share of word positions where two answers agree (over the shorter one); 1.0 for two empty answers."""
    a, b = str(old).split(), str(new).split()
    if not a or not b:
        return 1.0 if not a and not b else 0.0
    return sum(1 for x, y in zip(a, b) if x == y) / float(min(len(a), len(b)))


def output_problems(after, before):
    """The cheap output check: degenerate answers, and answers unlike the previous server's on greedy prompts."""
    problems = ["the new server's output is degenerate (%s)" % "; ".join(after["degenerate"])] \
        if after.get("degenerate") else []
    old, new = before.get("outputs") or [], after.get("outputs") or []
    if old and len(old) == len(new):
        for number, (a, b) in enumerate(zip(old, new), 1):
            share = agreement(a, b)
            if share < MIN_OUTPUT_AGREEMENT:
                problems.append("the answer to greedy prompt %d is unlike the previous server's (%d%% of the words "
                                "agree)" % (number, round(100 * share)))
    return problems


def verdict(after, before=None, min_accept_length=None, min_speedup=None):
    """Do the new server's figures pass the gates? {passed, speedup, speedups, speedup_at_load, load_concurrency,
    problems, notes}.

    The speed-up gate applies at the highest concurrency both servers were measured at (the load the host
    carries); `speedup` stays the one-client figure. A speed-up gate with no measured previous server (it was
    not running or not healthy) is noted, not failed: rolling back would not bring back anything faster. A gate
    on a figure the new server does not report fails: it was asked for and cannot be proven. The output check
    (degenerate answers, answers unlike the previous server's) always applies.
    """
    after, before = after or {}, before or {}
    problems, notes = [], []
    speedup = None
    if after.get("measured") and before.get("measured") and before.get("tokens_per_s"):
        speedup = round(after["tokens_per_s"] / before["tokens_per_s"], 2)
    speedups = level_speedups(after, before) if after.get("measured") and before.get("measured") else {}
    top = max(speedups) if speedups else None
    extra = {"speedups": dict((str(k), v) for k, v in sorted(speedups.items())), "load_concurrency": top,
             "speedup_at_load": speedups.get(top)}
    if not after.get("measured"):
        if min_accept_length is not None or min_speedup is not None:
            problems.append("the new server's speed could not be measured (%s)" % (after.get("problem") or "not run"))
        return dict(extra, passed=not problems, speedup=None, problems=problems, notes=notes)
    problems.extend(output_problems(after, before))
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
        elif top is not None and top > 1:
            new = [lv for lv in after["levels"] if lv.get("concurrency") == top][0]
            old = [lv for lv in before["levels"] if lv.get("concurrency") == top][0]
            if speedups[top] < float(min_speedup):
                problems.append("at concurrency %s (the host's load) %.1f tokens/s is %.2fx the previous server's "
                                "%.1f tokens/s, below sglang_dflash_min_speedup %s (%.2fx at concurrency 1)"
                                % (top, new["tokens_per_s"], speedups[top], old["tokens_per_s"], min_speedup,
                                   speedup))
        elif speedup < float(min_speedup):
            problems.append("%.1f tokens/s is %.2fx the previous server's %.1f tokens/s, below "
                            "sglang_dflash_min_speedup %s" % (after["tokens_per_s"], speedup,
                                                              before["tokens_per_s"], min_speedup))
    return dict(extra, passed=not problems, speedup=speedup, problems=problems, notes=notes)


def summary_line(after, before=None, speedup=None, speedups=None):
    """'tokens/s 198.7 -> 476.2 (2.40x), acceptance 2.60 -> 6.00, latency 0.32 -> 0.13 s' (one line), and
    ', at concurrency 8: 1.30x' for each further level measured."""
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
    parts += ["at concurrency %s: %.2fx" % (level, ratio) for level, ratio in sorted(
        (int(k), v) for k, v in (speedups or {}).items()) if level > 1]
    return ", ".join(parts)
