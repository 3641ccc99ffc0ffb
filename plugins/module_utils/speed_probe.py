# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How fast does an SGLang server decode, and how many draft tokens does it accept?

One client, one request at a time (the single-stream decode speed is what speculative decoding
changes), and then at each further concurrency level asked for (the load the host carries: the
speed-up of speculative decoding shrinks with it), through SGLang's native ``POST /generate``: raw
text with no chat template, so no thinking mode, no grammar, greedy, ``ignore_eos`` so every request
produces exactly ``max_new_tokens``.
The acceptance length comes from where the release reports it (read in 0.5.11-0.5.23):
``meta_info.spec_verify_ct`` with ``completion_tokens`` (token-weighted over the prompts), else
``meta_info.spec_accept_length``, else ``/server_info`` ``internal_states[].avg_spec_accept_length``
(the server's average since it started).

The role's gates on two measurements are decided on the controller (plugin_utils/_speed_gates.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time

from ansible.module_utils.six.moves import http_client
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible.module_utils.urls import open_url

# Plain, non-thinking prompts of everyday serving; the operator can pass their own.
DEFAULT_PROMPTS = (
    "Write a short paragraph explaining what a load balancer does.",
    "List five practical tips for writing readable Python code, one sentence each.",
    "Summarise the causes of the French Revolution in a few sentences.",
    "Explain step by step how to compute the median of a list of numbers.",
)
MAX_BODY_BYTES = 4 * 1024 * 1024


def _plain_http_post(url, body, timeout):
    """(status, text) of a POST over plain HTTP, with the standard library's client: open_url builds a TLS context
    for every request (about 20 ms of CPU loading the CA store, under the GIL), which at concurrency 8-32 would be
    the probe's own cost rather than the server's speed."""
    parts = urlsplit(url)
    connection = http_client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        connection.request("POST", (parts.path or "/") + ("?" + parts.query if parts.query else ""), body,
                           {"Content-Type": "application/json", "Accept": "application/json"})
        response = connection.getresponse()
        return response.status, response.read(MAX_BODY_BYTES).decode("utf-8", "replace")
    finally:
        connection.close()


def http_post_json(url, payload, timeout):
    """(status, parsed JSON or None, text); status 0 with the reason when nothing answered."""
    try:
        if urlsplit(url).scheme == "http":
            status, text = _plain_http_post(url, json.dumps(payload), timeout)
        else:
            response = open_url(url, data=json.dumps(payload), method="POST", timeout=timeout, use_proxy=False,
                                headers={"Content-Type": "application/json", "Accept": "application/json"})
            status, text = response.getcode(), response.read(MAX_BODY_BYTES).decode("utf-8", "replace")
    except HTTPError as exc:
        status, text = exc.code, exc.read(MAX_BODY_BYTES).decode("utf-8", "replace") if exc.fp else ""
    except (URLError, http_client.HTTPException, OSError, ValueError) as exc:
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
            "meta": meta, "problem": None, "body": body}


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


def _text(answer):
    return str(answer.get("text") or "")


def degenerate(text, share=0.6, min_words=8):
    """Why an answer is degenerate (one word over `share` of it), or None. Cheap: words, not tokens."""
    words = text.split()
    if len(words) < min_words:
        return None
    top = max(set(words), key=words.count)
    if words.count(top) > share * len(words):
        return "%r is %d%% of the answer" % (top, round(100.0 * words.count(top) / len(words)))
    return None


def measure_level(base_url, prompts, max_new_tokens, timeout, concurrency, post=http_post_json,
                  clock=time.monotonic):
    """`concurrency` clients at once, each sending every prompt once: {concurrency, requests, output_tokens,
    elapsed_s, tokens_per_s (all clients), tokens_per_s_per_request (median of one request's), latency_s_median,
    latency_s_p99, problem}."""
    answers, lock = [], threading.Lock()

    def client(offset):
        for i in range(len(prompts)):
            answer = generate_once(base_url, prompts[(i + offset) % len(prompts)], max_new_tokens, timeout, post,
                                   clock)
            with lock:
                answers.append(answer)

    started = clock()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = clock() - started
    failed = [a for a in answers if not a["ok"]]
    level = {"concurrency": concurrency, "requests": len(answers), "problem": None}
    if failed:
        level["problem"] = "%d of %d requests at concurrency %d: %s" % (len(failed), len(answers), concurrency,
                                                                        failed[0]["problem"])
        return level
    tokens = sum(a["completion_tokens"] for a in answers)
    latencies = sorted(a["latency_s"] for a in answers)
    per_request = [a["completion_tokens"] / a["latency_s"] for a in answers if a["latency_s"] > 0]
    level.update(output_tokens=tokens, elapsed_s=round(elapsed, 3),
                 tokens_per_s=round(tokens / elapsed, 1) if elapsed > 0 else None,
                 tokens_per_s_per_request=round(_median(per_request), 1) if per_request else None,
                 latency_s_median=round(_median(latencies), 3),
                 latency_s_p99=round(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 3))
    return level


def measure(base_url, prompts, max_new_tokens, timeout, warmup=1, post=http_post_json, read_info=None,
            clock=time.monotonic, concurrency=(1,)):
    """Run the prompts one after another (after `warmup` unmeasured requests).

    Returns {measured, problem, requests, output_tokens, elapsed_s, tokens_per_s, latency_s_median,
    latency_s_max, accept_length, accept_length_source}.
    read_info: callable returning /server_info as a dict (or None), for releases without meta_info figures.
    concurrency: the levels; 1 is always measured first (the figures at the top level of the result), each other
    one by measure_level, all in `levels` ({concurrency, tokens_per_s, tokens_per_s_per_request, latency_s_median,
    latency_s_p99, ...}). `outputs` holds the answers at concurrency 1 (for the output checks), `degenerate` the
    answers that repeat one word over most of their length.
    """
    prompts = [str(p) for p in prompts or DEFAULT_PROMPTS]
    result = {"measured": False, "problem": None, "requests": 0, "output_tokens": 0, "elapsed_s": None,
              "tokens_per_s": None, "latency_s_median": None, "latency_s_max": None, "accept_length": None,
              "accept_length_source": None, "max_new_tokens": int(max_new_tokens), "levels": [], "outputs": [],
              "degenerate": []}
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
    texts = [_text(a.get("body") or {}) for a in answers]
    result["outputs"] = [t[:400] for t in texts]
    result["degenerate"] = ["prompt %d: %s" % (i + 1, why) for i, why in enumerate(degenerate(t) for t in texts) if why]
    result["levels"].append({"concurrency": 1, "requests": len(answers), "output_tokens": tokens,
                             "elapsed_s": result["elapsed_s"], "tokens_per_s": result["tokens_per_s"],
                             "tokens_per_s_per_request": result["tokens_per_s"],
                             "latency_s_median": result["latency_s_median"], "latency_s_p99": result["latency_s_max"],
                             "problem": None})
    for level in sorted(set(int(c) for c in concurrency or () if int(c) > 1)):
        figures = measure_level(base_url, prompts, max_new_tokens, timeout, level, post, clock)
        result["levels"].append(figures)
        if figures["problem"]:
            result.update(measured=False, problem=figures["problem"])
            return result
    return result
