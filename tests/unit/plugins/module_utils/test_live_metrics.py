"""Observing servers over a window: Prometheus first, scraping every interval, the fallback, the gateway."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.sglang.plugins.module_utils.live_metrics import observe

TARGETS = [{"name": "n1", "url": "http://127.0.0.1:31131", "instance": "127.0.0.1:31131"}]


class Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def metrics(tokens, count):
    return ("# TYPE sglang:generation_tokens_total counter\nsglang:generation_tokens_total %s\n"
            "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 2\n"
            "# TYPE sglang:e2e_request_latency_seconds histogram\n"
            'sglang:e2e_request_latency_seconds_bucket{le="+Inf"} %s\n'
            "sglang:e2e_request_latency_seconds_count %s\nsglang:e2e_request_latency_seconds_sum 1\n"
            % (tokens, count, count))


def test_scrapes_every_interval_and_computes_the_window():
    clock = Clock()
    reads = []

    def get(url, timeout):
        reads.append(clock.now)
        n = len(reads)
        return 200, metrics(1000 * n, 10 * n)
    result = observe(TARGETS, 30, 10, get=get, clock=clock, sleep=clock.sleep)
    assert reads == [1000.0, 1010.0, 1020.0, 1030.0]
    assert result["source"] == "scrape" and result["problems"] == []
    assert result["figures"]["n1"]["tokens_per_s"] == 100.0 and result["figures"]["n1"]["requests"] == 30
    assert result["figures"]["n1"]["tokens_per_s_per_request"] == 50.0


def test_prometheus_down_is_a_problem_or_falls_back_to_scraping_and_says_so():
    clock = Clock()

    def get(url, timeout):
        if url.startswith("http://127.0.0.1:9"):
            return 0, "connection refused"
        return 200, metrics(clock.now, clock.now)
    down = observe(TARGETS, 30, 10, prometheus_url="http://127.0.0.1:9", get=get, clock=clock, sleep=clock.sleep)
    assert down["figures"] == {} and down["problems"] == [
        "Prometheus http://127.0.0.1:9 cannot be reached (connection refused)"]
    assert clock.now == 1000.0  # nothing waited
    fell_back = observe(TARGETS, 30, 10, prometheus_url="http://127.0.0.1:9", fallback_to_scrape=True, get=get,
                        clock=clock, sleep=clock.sleep)
    assert fell_back["source"] == "scrape" and fell_back["figures"]["n1"]["tokens_per_s"] == 1.0
    assert fell_back["notes"] == ["Prometheus http://127.0.0.1:9 cannot be reached (connection refused); "
                                  "read each host's /metrics every 10s instead"]


def test_prometheus_answers_after_the_window():
    clock = Clock()
    queries = []

    def get(url, timeout):
        queries.append(url)
        result = [{"metric": {"instance": "127.0.0.1:31131"}, "value": [0, "4"]}]
        return 200, json.dumps({"status": "success", "data": {"result": result}})
    result = observe(TARGETS, 60, 15, prometheus_url="http://prom:9090", get=get, clock=clock, sleep=clock.sleep)
    assert result["source"] == "prometheus" and clock.now == 1060.0
    assert result["figures"]["n1"]["requests"] == 4 and result["figures"]["n1"]["tokens_per_s_per_request"] == 1.0
    # The readiness query, one per figure over the window, then one per figure of each of its 4 intervals of 15 s.
    assert len(queries) == 1 + 10 + 4 * 10
    assert len(result["samples"]["n1"]) == 4


def test_window_zero_only_checks_the_source():
    result = observe(TARGETS, 0, 10, prometheus_url="http://prom:9090",
                     get=lambda u, t: (200, '{"status": "success", "data": {"result": []}}'))
    assert result == {"source": "prometheus", "figures": {}, "gateway": None, "problems": [], "notes": [],
                      "window_s": 0}


def test_window_zero_scrapes_each_server_once_without_prometheus():
    def get(url, timeout):
        return (404, "") if "31132" in url else (200, metrics(1, 1))
    targets = TARGETS + [{"name": "n2", "url": "http://127.0.0.1:31132", "instance": "127.0.0.1:31132"}]
    result = observe(targets, 0, 10, get=get)
    assert result["problems"] == [
        "host n2: GET http://127.0.0.1:31132/metrics: HTTP 404 (metrics need --enable-metrics)"]
