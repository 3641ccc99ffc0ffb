# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How fast does an SGLang server decode, and how many draft tokens does it accept?

One client, one request at a time (the single-stream decode speed is what speculative decoding
changes), through SGLang's native ``POST /generate``: raw text with no chat template, so no thinking
mode, no grammar, greedy, ``ignore_eos`` so every request produces exactly ``max_new_tokens``.
The acceptance length comes from where the release reports it (read in 0.5.11-0.5.23):
``meta_info.spec_verify_ct`` with ``completion_tokens`` (token-weighted over the prompts), else
``meta_info.spec_accept_length``, else ``/server_info`` ``internal_states[].avg_spec_accept_length``
(the server's average since it started).

``verdict`` is pure: it decides the role's gates from two measurements.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

# Plain, non-thinking prompts of everyday serving; the operator can pass their own.
DEFAULT_PROMPTS = (
    "Write a short paragraph explaining what a load balancer does.",
    "List five practical tips for writing readable Python code, one sentence each.",
    "Summarise the causes of the French Revolution in a few sentences.",
    "Explain step by step how to compute the median of a list of numbers.",
)
MAX_BODY_BYTES = 4 * 1024 * 1024


def http_post_json(url, payload, timeout):
    """(status, parsed JSON or None, text); status 0 with the reason when nothing answered."""
    try:
        response = open_url(url, data=json.dumps(payload), method="POST", timeout=timeout, use_proxy=False,
                            headers={"Content-Type": "application/json", "Accept": "application/json"})
        status, text = response.getcode(), response.read(MAX_BODY_BYTES).decode("utf-8", "replace")
    except HTTPError as exc:
        status, text = exc.code, exc.read(MAX_BODY_BYTES).decode("utf-8", "replace") if exc.fp else ""
    except (URLError, OSError, ValueError) as exc:
        return 0, None, str(getattr(exc, "reason", exc))
    try:
        return status, json.loads(text), text
    except ValueError:
        return status, None, text


def generate_once(base_url, prompt, max_new_tokens, timeout, post=http_post_json, clock=time.monotonic):
    """One greedy generation: {ok, status, latency_s, completion_tokens, meta, problem}."""
    payload = {"text": prompt, "sampling_params": {"max_new_tokens": int(max_new_tokens), "temperature": 0,
                                                   "ignore_eos": True}}
    started = clock()
    status, body, text = post(base_url + "/generate", payload, timeout)
    latency = clock() - started
    meta = (body or {}).get("meta_info") if isinstance(body, dict) else None
    if status != 200 or not isinstance(meta, dict):
        problem = "POST /generate answered %s: %s" % (status or "nothing", (text or "").strip()[:200])
        return {"ok": False, "status": status, "latency_s": round(latency, 3), "completion_tokens": 0,
                "meta": {}, "problem": problem}
    tokens = meta.get("completion_tokens")
    if not isinstance(tokens, int) or tokens <= 0:
        return {"ok": False, "status": status, "latency_s": round(latency, 3), "completion_tokens": 0,
                "meta": meta, "problem": "POST /generate produced no tokens (meta_info.completion_tokens=%r)"
                % tokens}
    return {"ok": True, "status": status, "latency_s": round(latency, 3), "completion_tokens": tokens,
            "meta": meta, "problem": None}


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def accept_length(requests, server_info=None):
    """(average acceptance length, where it came from); (None, None) without speculative decoding."""
    metas = [r["meta"] for r in requests]
    steps = [m.get("spec_verify_ct") for m in metas]
    if metas and all(isinstance(s, int) and s > 0 for s in steps):
        tokens = sum(m["completion_tokens"] for m in metas)
        return round(tokens / float(sum(steps)), 3), "meta_info.spec_verify_ct"
    lengths = [_number(m.get("spec_accept_length")) for m in metas]
    if metas and all(v is not None for v in lengths):
        return round(sum(lengths) / len(lengths), 3), "meta_info.spec_accept_length"
    states = (server_info or {}).get("internal_states")
    if isinstance(states, list):
        values = [_number(s.get("avg_spec_accept_length")) for s in states if isinstance(s, dict)]
        values = [v for v in values if v is not None]
        if values:
            return round(sum(values) / len(values), 3), "server_info.internal_states.avg_spec_accept_length"
    return None, None


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def measure(base_url, prompts, max_new_tokens, timeout, warmup=1, post=http_post_json, read_info=None,
            clock=time.monotonic):
    """Run the prompts one after another (after `warmup` unmeasured requests).

    Returns {measured, problem, requests, output_tokens, elapsed_s, tokens_per_s, latency_s_median,
    latency_s_max, accept_length, accept_length_source}.
    read_info: callable returning /server_info as a dict (or None), for releases without meta_info figures.
    """
    prompts = [str(p) for p in prompts or DEFAULT_PROMPTS]
    result = {"measured": False, "problem": None, "requests": 0, "output_tokens": 0, "elapsed_s": None,
              "tokens_per_s": None, "latency_s_median": None, "latency_s_max": None, "accept_length": None,
              "accept_length_source": None, "max_new_tokens": int(max_new_tokens)}
    for i in range(max(0, int(warmup))):
        answer = generate_once(base_url, prompts[i % len(prompts)], max_new_tokens, timeout, post, clock)
        if not answer["ok"]:
            result["problem"] = "warm-up request: " + answer["problem"]
            return result
    answers = []
    for prompt in prompts:
        answer = generate_once(base_url, prompt, max_new_tokens, timeout, post, clock)
        if not answer["ok"]:
            result["problem"] = "request %d of %d: %s" % (len(answers) + 1, len(prompts), answer["problem"])
            return result
        answers.append(answer)
    elapsed = sum(a["latency_s"] for a in answers)
    tokens = sum(a["completion_tokens"] for a in answers)
    length, source = accept_length(answers, read_info() if read_info else None)
    latencies = [a["latency_s"] for a in answers]
    result.update(measured=True, requests=len(answers), output_tokens=tokens, elapsed_s=round(elapsed, 3),
                  tokens_per_s=round(tokens / elapsed, 1) if elapsed > 0 else None,
                  latency_s_median=round(_median(latencies), 3), latency_s_max=round(max(latencies), 3),
                  accept_length=length, accept_length_source=source)
    return result


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
