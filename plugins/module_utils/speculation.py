# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is a running server speculating now? The evidence, read on the host (module sglang_speculation_info); the verdict
is the controller's (plugin_utils/_speculation.py).

Two sources, as SGLang 0.5.23 reports them:
- its traffic over a short window, from two reads of /metrics (the metrics seam, metrics_text.py): the requests that
  ended (the count of sglang:e2e_request_latency_seconds), the tokens they produced (sglang:generation_tokens_total)
  and the speculative verify steps run (sglang:spec_verify_calls_total), so the window's acceptance is tokens / steps;
  with the sglang:spec_accept_length gauge, which holds only the last few seconds' steps;
- without traffic (or without /metrics), one greedy generation whose meta_info says how many verify steps it took
  (spec_verify_ct; 0.5.16-0.5.23 leave the spec_* fields out when there was none) and the acceptance length.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufleet.sglang.plugins.module_utils import metrics_text
from ansible_collections.gpufleet.sglang.plugins.module_utils.metrics_window import (
    ACCEPT_LENGTH,
    E2E,
    GENERATION_TOKENS,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import http_get
from ansible_collections.gpufleet.sglang.plugins.module_utils.speed_probe import (
    DEFAULT_PROMPTS,
    generate_once,
    http_post_json,
)

VERIFY_STEPS = "sglang:spec_verify_calls_total"
ACCEPT_RATE = "sglang:spec_accept_rate"
REQUESTS_TOTAL = "sglang:num_requests_total"  # releases without the latency histogram
# The prompt of the switch's first generation (sglang_wait_ready), so the probe's acceptance compares with its figure.
PROBE_PROMPT = DEFAULT_PROMPTS[0]


def _requests(snap):
    histogram = snap["histograms"].get(E2E)
    if histogram is not None:
        return histogram["count"]
    return snap["counters"].get(REQUESTS_TOTAL)


def _delta(first, last, read):
    """last - first of a counter in both reads; None when either lacks it, or it went down (the server restarted
    within the window: the window says nothing)."""
    before, after = read(first), read(last)
    if before is None or after is None or after < before:
        return None
    return after - before


def traffic(first, last):
    """The window between two snapshots: {seconds, requests, tokens, verify_steps, accept_length, accept_length_gauge,
    accept_rate_gauge}; verify_steps is None when the server reports no verify counter (not even 0)."""
    requests = _delta(first, last, _requests)
    tokens = _delta(first, last, lambda s: s["counters"].get(GENERATION_TOKENS))
    # Neither the counter nor the gauges: a release that exports no speculative metric; the probe decides (observe()).
    if VERIFY_STEPS in last["counters"]:
        steps = _delta(first, last, lambda s: s["counters"].get(VERIFY_STEPS, 0.0))
    elif ACCEPT_LENGTH in last["gauges"]:
        # A speculative server shows its gauges from its start and the counter from its first verify step on (0.5.23;
        # the decode side of PD disaggregation never does): none ran.
        steps = 0.0
    else:
        steps = None
    window = {"seconds": round(last["at"] - first["at"], 2) if first.get("at") and last.get("at") else None,
              "requests": requests, "tokens": tokens, "verify_steps": steps,
              "accept_length": round(tokens / steps, 3) if tokens and steps else None,
              "accept_length_gauge": last["gauges"].get(ACCEPT_LENGTH),
              "accept_rate_gauge": last["gauges"].get(ACCEPT_RATE)}
    return window


def probe(url, prompt, max_new_tokens, timeout, post=http_post_json):
    """One greedy generation: {ok, problem, completion_tokens, verify_steps, accept_length, latency_s}."""
    answer = generate_once(url, prompt, max_new_tokens, timeout, post=post)
    meta = answer.get("meta") or {}
    steps = meta.get("spec_verify_ct")
    length = meta.get("spec_accept_length")
    return {"ok": answer["ok"], "problem": answer["problem"], "completion_tokens": answer["completion_tokens"],
            "latency_s": answer["latency_s"],
            # No spec_verify_ct at all: the release leaves it out when no verify step ran.
            "verify_steps": int(steps) if isinstance(steps, (int, float)) else (0 if answer["ok"] else None),
            "accept_length": round(float(length), 3) if isinstance(length, (int, float)) and length else None}


def observe(servers, window_s, probe_prompt=PROBE_PROMPT, probe_max_new_tokens=32, probe_when="no_traffic",
            timeout=30.0, min_requests=1, get=http_get, post=http_post_json, clock=time.time, sleep=time.sleep):
    """Each server's evidence over one window shared by all: [{unit, url, time, window, metrics_problem, probe}].

    servers: [{unit, url}]. probe_when: no_traffic (a greedy probe where the window saw fewer than min_requests ended
    requests that decoded, or /metrics did not answer), always, never. time: when the window ended (seconds since
    the epoch).
    """
    first = {}
    for server in servers:
        first[server["unit"]] = metrics_text.scrape(server["url"], get=get, clock=clock)
    if window_s > 0:
        sleep(window_s)
    out = []
    for server in servers:
        unit, url = server["unit"], server["url"]
        snap_first, problem = first[unit]
        snap_last, problem_last = metrics_text.scrape(url, get=get, clock=clock) if snap_first else (None, problem)
        window = traffic(snap_first, snap_last) if snap_first and snap_last else None
        quiet = window is None or (window["requests"] or 0) < min_requests or window["verify_steps"] is None \
            or (window["tokens"] or 0) <= (window["requests"] or 0)
        evidence = {"unit": unit, "url": url, "time": clock(), "window": window,
                    "metrics_problem": problem or problem_last, "probe": None}
        if probe_when == "always" or (probe_when == "no_traffic" and quiet):
            evidence["probe"] = probe(url, probe_prompt, probe_max_new_tokens, timeout, post=post)
        out.append(evidence)
    return out
