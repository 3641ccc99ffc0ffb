# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask a Prometheus for the canary's figures: its HTTP API (GET /api/v1/query), PromQL over a window.

Part of the metrics seam, beside metrics_text.py and metrics_window.py: the same figures, computed by the
operator's Prometheus from the series it already scrapes, by its `instance` label. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math

from ansible.module_utils.six.moves.urllib.parse import urlencode
from ansible_collections.gpufleet.sglang.plugins.module_utils import metrics_window
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import http_get

# figure: PromQL with {w} the window ("60s") and {sel} the instance selector.
QUERIES = {
    "tokens_per_s": 'sum by (instance) (rate(sglang:generation_tokens_total{sel}[{w}]))',
    "running_mean": 'sum by (instance) (avg_over_time(sglang:num_running_reqs{sel}[{w}]))',
    "requests": 'sum by (instance) (increase(sglang:e2e_request_latency_seconds_count{sel}[{w}]))',
    "aborted": 'sum by (instance) (increase(sglang:num_aborted_requests_total{sel}[{w}]))',
    # decode_per_request's parts: the seconds and the tokens of the decoding steps (metrics_window.decode_per_request).
    "itl_sum": 'sum by (instance) (increase(sglang:inter_token_latency_seconds_sum{sel}[{w}]))',
    "itl_count": 'sum by (instance) (increase(sglang:inter_token_latency_seconds_count{sel}[{w}]))',
    "itl_p50_s": 'histogram_quantile(0.5, sum by (instance, le) '
                 '(rate(sglang:inter_token_latency_seconds_bucket{sel}[{w}])))',
    "itl_p99_s": 'histogram_quantile(0.99, sum by (instance, le) '
                 '(rate(sglang:inter_token_latency_seconds_bucket{sel}[{w}])))',
    "ttft_p99_s": 'histogram_quantile(0.99, sum by (instance, le) '
                  '(rate(sglang:time_to_first_token_seconds_bucket{sel}[{w}])))',
    # Only while the server had work: an idle server's gauge keeps its last value.
    "accept_length": 'avg by (instance) (avg_over_time(sglang:spec_accept_length{sel}[{w}]))',
}


def selector(instances):
    """{instance=~"a|b"} for the given instance labels (regex-quoted)."""
    quoted = "|".join(i.replace("\\", "\\\\").replace(".", "\\\\.").replace('"', '\\"') for i in instances)
    return '{instance=~"%s"}' % quoted


def promql(figure, instances, window_s):
    return QUERIES[figure].replace("{sel}", selector(instances)).replace("{w}", "%ds" % int(window_s))


def query(base_url, expression, at=None, timeout=10.0, get=http_get):
    """(vector [(labels, value)], problem) of an instant query; the problem says what did not answer."""
    params = {"query": expression}
    if at is not None:
        params["time"] = "%.3f" % at
    url = base_url.rstrip("/") + "/api/v1/query?" + urlencode(params)
    status, body = get(url, timeout)
    if status == 0:
        return None, "Prometheus %s cannot be reached (%s)" % (base_url, body)
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if status != 200 or not isinstance(answer, dict) or answer.get("status") != "success":
        detail = answer.get("error") if isinstance(answer, dict) else (body or "")[:200]
        return None, "Prometheus %s refused the query (HTTP %s: %s): %s" % (base_url, status, detail, expression)
    vector = []
    for item in (answer.get("data") or {}).get("result") or []:
        try:
            value = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if not math.isnan(value):  # NaN: no observation in the window
            vector.append((item.get("metric") or {}, value))
    return vector, None


def window_figures(base_url, instances, window_s, at=None, get=http_get):
    """({instance: figures}, problem): the figures of metrics_window.window_figures for each instance."""
    figures = dict((i, {"seconds": float(window_s), "samples": None}) for i in instances)
    for name in QUERIES:
        vector, problem = query(base_url, promql(name, instances, window_s), at=at, get=get)
        if problem:
            return None, problem
        found = dict((labels.get("instance"), value) for labels, value in vector)
        for instance in instances:
            value = found.get(instance)
            if name in ("requests", "aborted") and value is not None:
                value = int(round(value))
            figures[instance][name] = round(value, 4) if isinstance(value, float) else value
    for entry in figures.values():
        done = (entry.get("requests") or 0) + (entry.get("aborted") or 0)
        entry["abort_ratio"] = round(entry["aborted"] / float(done), 4) if done and entry.get("aborted") is not None \
            else None
        entry["tokens_per_s_per_request"] = metrics_window.decode_per_request(
            (entry.pop("itl_sum", None), entry.pop("itl_count", None)), entry.get("tokens_per_s"),
            entry.get("running_mean"))
    return figures, None


def interval_samples(base_url, instances, started, window_s, interval_s, get=http_get):
    """({instance: [samples]}, problem): one sample per interval of the window that started at `started`, each the
    figures of window_figures over that interval alone (evaluated at its end), as the judge takes them."""
    samples = dict((i, []) for i in instances)
    steps = int(window_s // interval_s)
    for step in range(1, steps + 1):
        at = started + step * interval_s
        figures, problem = window_figures(base_url, instances, interval_s, at=at, get=get)
        if problem:
            return None, problem
        for instance in instances:
            samples[instance].append(metrics_window.as_sample(figures[instance], instance, at))
    return samples, None
