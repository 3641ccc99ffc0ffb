"""Day-two evidence read on the host (module_utils/speculation.py): the window's verify steps and acceptance from two
reads of /metrics, and the greedy probe where the window holds none."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.sglang.plugins.module_utils.metrics_text import snapshot
from ansible_collections.gpufleet.sglang.plugins.module_utils.speculation import observe, probe, traffic

SERVER = [{"unit": "sglang-qwen.service", "url": "http://127.0.0.1:30001"}]


def metrics(requests, tokens, steps=None, gauge=None):
    """SGLang 0.5.23's exposition of these totals (the verify counter only once a verify step ran)."""
    text = ("# TYPE sglang:generation_tokens_total counter\n"
            'sglang:generation_tokens_total{model_name="m",is_streaming="false"} %s\n'
            "# TYPE sglang:e2e_request_latency_seconds histogram\n"
            'sglang:e2e_request_latency_seconds_bucket{le="+Inf"} %s\n'
            "sglang:e2e_request_latency_seconds_count %s\nsglang:e2e_request_latency_seconds_sum 1\n"
            % (tokens, requests, requests))
    if steps is not None:
        text += '# TYPE sglang:spec_verify_calls counter\nsglang:spec_verify_calls_total{tp_rank="0"} %s\n' % steps
    if gauge is not None:
        text += "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length %s\n" % gauge
    return text


class Server(object):
    """/metrics answers the next of its texts at each read; /generate answers the given status and meta_info."""

    def __init__(self, texts, status=200, meta=None):
        self.texts, self.status, self.meta = list(texts), status, meta
        self.posts = []
        self.now = 1000.0

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

    def get(self, url, timeout):
        assert url.endswith("/metrics")
        if not self.texts:
            return 404, "Not Found"
        return 200, self.texts.pop(0)

    def post(self, url, payload, timeout):
        self.posts.append(payload)
        if self.status != 200:
            return self.status, None, "generation failed"
        return 200, {"text": "x", "meta_info": self.meta}, json.dumps({"meta_info": self.meta})


def test_the_window_counts_requests_tokens_and_verify_steps():
    first = snapshot(metrics(10, 1000, steps=200), at=1000.0)
    last = snapshot(metrics(30, 4200, steps=800, gauge=5.1), at=1010.0)
    window = traffic(first, last)
    assert window == {"seconds": 10.0, "requests": 20.0, "tokens": 3200.0, "verify_steps": 600.0,
                      "accept_length": 5.333, "accept_length_gauge": 5.1, "accept_rate_gauge": None}


def test_without_a_verify_counter_the_window_cannot_say_and_a_restart_voids_it():
    # A release that exports no speculative metric: requests ran, no counter, no gauge.
    window = traffic(snapshot(metrics(10, 1000), at=1.0), snapshot(metrics(30, 3000), at=11.0))
    assert window["requests"] == 20.0 and window["verify_steps"] is None and window["accept_length"] is None
    # The decode side of PD (0.5.23): its speculative gauges at 0 from the start, the counter never: no step ran.
    window = traffic(snapshot(metrics(10, 1000, gauge=0), at=1.0), snapshot(metrics(30, 3000, gauge=0), at=11.0))
    assert window["verify_steps"] == 0.0
    # The counter appears with the first verify step: absent before, present after, counts from 0.
    window = traffic(snapshot(metrics(0, 0), at=1.0), snapshot(metrics(2, 64, steps=12), at=11.0))
    assert window["verify_steps"] == 12.0
    # Counters went down: the server restarted within the window, which then says nothing.
    window = traffic(snapshot(metrics(30, 3000, steps=500), at=1.0), snapshot(metrics(2, 64, steps=12), at=11.0))
    assert window["requests"] is None and window["verify_steps"] is None


def test_traffic_is_the_evidence_and_no_probe_is_sent():
    server = Server([metrics(10, 1000, steps=200), metrics(30, 4200, steps=800)])
    out = observe(SERVER, 10, get=server.get, post=server.post, clock=server.clock, sleep=server.sleep)
    assert out[0]["window"]["verify_steps"] == 600.0 and out[0]["probe"] is None and server.posts == []
    assert out[0]["time"] == 1010.0 and out[0]["metrics_problem"] is None


def test_no_traffic_sends_one_greedy_probe_and_reads_its_meta_info():
    meta = {"completion_tokens": 32, "spec_verify_ct": 6, "spec_accept_length": 5.333}
    server = Server([metrics(10, 1000, steps=200)] * 2, meta=meta)
    out = observe(SERVER, 10, get=server.get, post=server.post, clock=server.clock, sleep=server.sleep)
    assert out[0]["window"]["requests"] == 0.0
    assert out[0]["probe"]["ok"] and out[0]["probe"]["verify_steps"] == 6 and out[0]["probe"]["accept_length"] == 5.333
    assert server.posts[0]["sampling_params"]["temperature"] == 0  # greedy


def test_a_probe_without_spec_fields_ran_no_verify_step_and_a_refused_probe_says_why():
    server = Server([], meta={"completion_tokens": 32})  # /metrics 404: no --enable-metrics
    out = observe(SERVER, 5, get=server.get, post=server.post, clock=server.clock, sleep=server.sleep)
    assert "--enable-metrics" in out[0]["metrics_problem"] and out[0]["window"] is None
    assert out[0]["probe"]["ok"] and out[0]["probe"]["verify_steps"] == 0
    refused = probe("http://127.0.0.1:30001", "p", 8, 5, post=Server([], status=500).post)
    assert refused["ok"] is False and refused["verify_steps"] is None and "500" in refused["problem"]


def test_too_few_requests_for_evidence_send_the_probe():
    meta = {"completion_tokens": 32, "spec_verify_ct": 6, "spec_accept_length": 5.333}
    server = Server([metrics(10, 1000, steps=200), metrics(12, 1320, steps=260)], meta=meta)
    out = observe(SERVER, 10, min_requests=5, get=server.get, post=server.post, clock=server.clock,
                  sleep=server.sleep)
    assert out[0]["window"]["requests"] == 2.0 and out[0]["probe"]["verify_steps"] == 6
    # Requests of one token each decoded nothing: no evidence, the probe.
    server = Server([metrics(10, 1000, steps=200), metrics(30, 1020, steps=200)], meta=meta)
    out = observe(SERVER, 10, get=server.get, post=server.post, clock=server.clock, sleep=server.sleep)
    assert out[0]["probe"] is not None


def test_probe_never_or_always():
    server = Server([metrics(1, 10, steps=2)] * 2, meta={"completion_tokens": 8, "spec_verify_ct": 2})
    assert observe(SERVER, 1, probe_when="never", get=server.get, post=server.post, clock=server.clock,
                   sleep=server.sleep)[0]["probe"] is None
    server = Server([metrics(1, 10, steps=2), metrics(9, 90, steps=20)], meta={"completion_tokens": 8,
                                                                               "spec_verify_ct": 2})
    assert observe(SERVER, 1, probe_when="always", get=server.get, post=server.post, clock=server.clock,
                   sleep=server.sleep)[0]["probe"]["verify_steps"] == 2
