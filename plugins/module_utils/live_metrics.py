# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Observe servers' live figures over a window: from a Prometheus, or by scraping each /metrics every interval.

The canary's source of figures (module sglang_live_metrics); the pieces are the metrics seam's:
metrics_text.py (a scrape), metrics_window.py (rates and quantiles), prometheus_api.py (PromQL); the error rate
through the gateway is the gateway seam's (gateways/smg.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufleet.sglang.plugins.module_utils import metrics_text, metrics_window, prometheus_api
from ansible_collections.gpufleet.sglang.plugins.module_utils.gateways.smg import error_ratio as gateway_error_ratio
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import http_get


def prometheus_ready(url, get=http_get):
    """None when the Prometheus at url answers a query, else why not."""
    _vector, problem = prometheus_api.query(url, "vector(1)", get=get)
    return problem


def observe(targets, window_s, interval_s, prometheus_url=None, fallback_to_scrape=False, gateway_metrics_url=None,
            get=http_get, clock=time.time, sleep=time.sleep):
    """{source, figures: {name: window figures}, gateway: {error_ratio} or None, problems, notes, window_s}.

    targets: [{name, url, instance}] (url: the server's base URL, instance: its Prometheus instance label).
    """
    notes, problems = [], []
    source = "scrape"
    if prometheus_url:
        down = prometheus_ready(prometheus_url, get=get)
        if down and fallback_to_scrape:
            notes.append("%s; read each host's /metrics every %ss instead" % (down, interval_s))
        elif down:
            return {"source": "prometheus", "figures": {}, "gateway": None, "problems": [down], "notes": notes,
                    "window_s": window_s}
        else:
            source = "prometheus"
    if not window_s:  # a preflight: the source answers (each server's /metrics, when scraping)
        if source == "scrape":
            for target in targets:
                problem = metrics_text.scrape(target["url"], get=get, clock=clock)[1]
                if problem:
                    problems.append("host %s: %s" % (target["name"], problem))
        return {"source": source, "figures": {}, "gateway": None, "problems": problems, "notes": notes,
                "window_s": window_s}
    gateway_first = None
    if gateway_metrics_url:
        status, gateway_first = get(gateway_metrics_url, 10.0)
        if status != 200:
            notes.append("the gateway's metrics %s do not answer (HTTP %s): its error rate is not judged"
                         % (gateway_metrics_url, status or gateway_first))
            gateway_first = None
    snapshots = dict((t["name"], []) for t in targets)
    started = clock()
    deadline = started + window_s
    while True:
        if source == "scrape":
            for target in targets:
                snap, problem = metrics_text.scrape(target["url"], get=get, clock=clock)
                if snap:
                    snapshots[target["name"]].append(snap)
                elif problem not in problems:
                    problems.append("host %s: %s" % (target["name"], problem))
        now = clock()
        if now >= deadline:
            break
        sleep(max(0.0, min(interval_s, deadline - now)))
    gateway = None
    if gateway_first is not None:
        status, last = get(gateway_metrics_url, 10.0)
        if status == 200:
            gateway = {"error_ratio": gateway_error_ratio(gateway_first, last)}
    if source == "prometheus":
        instances = [t["instance"] for t in targets]
        by_instance, problem = prometheus_api.window_figures(prometheus_url, instances, window_s, get=get)
        per_interval, interval_problem = prometheus_api.interval_samples(prometheus_url, instances, started,
                                                                         window_s, interval_s, get=get)
        if problem or interval_problem:
            return {"source": source, "figures": {}, "samples": {}, "gateway": gateway,
                    "problems": [problem or interval_problem], "notes": notes, "window_s": window_s}
        figures = dict((t["name"], by_instance[t["instance"]]) for t in targets)
        samples = dict((t["name"], [dict(s, host=t["name"]) for s in per_interval[t["instance"]]]) for t in targets)
    else:
        figures = dict((name, metrics_window.window_figures(snaps)) for name, snaps in snapshots.items())
        samples = dict((name, metrics_window.interval_samples(snaps, name)) for name, snaps in snapshots.items())
        problems = [p for p in problems if p] if any(len(s) < 2 for s in snapshots.values()) else []
    return {"source": source, "figures": figures, "samples": samples, "gateway": gateway, "problems": problems,
            "notes": notes, "window_s": window_s, "interval_s": interval_s, "started": started}
