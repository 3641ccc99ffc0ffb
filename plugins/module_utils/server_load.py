# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many requests an SGLang server is working on, and a wait until it has none (the drain).

Read from SGLang's own endpoints, in this order: GET /v1/loads (0.5.23: per data-parallel rank,
num_running_reqs and num_waiting_reqs), GET /metrics (only with --enable-metrics: the gauges
sglang:num_running_reqs and sglang:num_queue_reqs), GET /get_load (older releases; 0.5.23 has none).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils.metrics_text import snapshot
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import http_get

# Counted as work in progress, whichever endpoint answers.
LOAD_FIELDS = ("num_running_reqs", "num_waiting_reqs", "num_reqs", "num_queue_reqs")
# The gauges of /metrics that count work in progress (read by the metrics seam, metrics_text.py).
LOAD_GAUGES = ("sglang:num_running_reqs", "sglang:num_queue_reqs")


def _sum_fields(records):
    total = 0
    for record in records:
        if isinstance(record, dict):
            total += sum(int(record.get(k) or 0) for k in LOAD_FIELDS if isinstance(record.get(k), (int, float)))
    return total


def read_load(url, timeout=5.0, get=http_get):
    """(requests running or queued, endpoint, problem). Nothing answering at all is (None, None, problem)."""
    status, body = get(url + "/v1/loads?include=core", timeout)
    if status == 0:
        return None, None, "the server does not answer (%s)" % body
    if status == 200:
        try:
            loads = json.loads(body).get("loads")
        except (ValueError, AttributeError):
            loads = None
        if isinstance(loads, list):
            return _sum_fields(loads), "/v1/loads", None
    status, body = get(url + "/metrics", timeout)
    gauges = snapshot(body)["gauges"] if status == 200 else {}
    if any(name in gauges for name in LOAD_GAUGES):
        return int(sum(gauges.get(name, 0.0) for name in LOAD_GAUGES)), "/metrics", None
    status, body = get(url + "/get_load", timeout)
    if status == 200:
        try:
            loads = json.loads(body)
        except ValueError:
            loads = None
        if isinstance(loads, dict):
            loads = [loads]
        if isinstance(loads, list):
            return _sum_fields(loads), "/get_load", None
    return None, None, ("the server reports no load: neither /v1/loads, /metrics (--enable-metrics) nor /get_load "
                        "answers")


def wait_idle(url, timeout, poll=0.5, idle_reads=2, clock=time.monotonic, sleep=time.sleep, get=http_get):
    """Wait until the server reports no running or queued request in idle_reads reads in a row.

    Returns {idle, requests_at_start, most_seen, seconds, endpoint, reason}. A server that does not answer
    has nothing to drain (idle, with the reason); one that answers but reports no load is not idle.
    """
    started = clock()
    first = most = None
    quiet = 0
    while True:
        count, endpoint, problem = read_load(url, get=get)
        seconds = round(clock() - started, 2)
        if count is None:
            idle = endpoint is None and problem.startswith("the server does not answer")
            return {"idle": idle, "requests_at_start": first, "most_seen": most, "seconds": seconds,
                    "endpoint": endpoint, "reason": problem}
        first = count if first is None else first
        most = max(most or 0, count)
        quiet = quiet + 1 if count == 0 else 0
        if quiet >= idle_reads:
            return {"idle": True, "requests_at_start": first, "most_seen": most, "seconds": seconds,
                    "endpoint": endpoint, "reason": None}
        if seconds >= timeout:
            return {"idle": False, "requests_at_start": first, "most_seen": most, "seconds": seconds,
                    "endpoint": endpoint,
                    "reason": "%d request(s) still running or queued after %ss (%s)" % (count, timeout, endpoint)}
        sleep(poll)
