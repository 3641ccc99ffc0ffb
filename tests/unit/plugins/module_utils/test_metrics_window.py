"""Rates and quantiles over a window from successive scrapes, as Prometheus computes them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.metrics_window import increase, quantile, window_figures

INF = float("inf")


def snap(at, tokens, running, itl, e2e_count, aborted=0.0, accept=None, ttft=None):
    gauges = {"sglang:num_running_reqs": running}
    if accept is not None:
        gauges["sglang:spec_accept_length"] = accept
    hist = {"sglang:inter_token_latency_seconds": {"buckets": itl, "sum": 0.0, "count": itl[-1][1]},
            "sglang:e2e_request_latency_seconds": {"buckets": [(INF, e2e_count)], "sum": 0.0, "count": e2e_count}}
    if ttft:
        hist["sglang:time_to_first_token_seconds"] = {"buckets": ttft, "sum": 0.0, "count": ttft[-1][1]}
    return {"at": at, "gauges": gauges, "histograms": hist,
            "counters": {"sglang:generation_tokens_total": tokens, "sglang:num_aborted_requests_total": aborted}}


def test_increase_counts_a_reset_from_zero():
    assert increase([10.0, 20.0, 5.0, 7.0]) == 10.0 + 5.0 + 2.0
    assert increase([3.0]) == 0.0


def test_quantile_interpolates_inside_the_bucket():
    buckets = [(0.01, 50.0), (0.02, 90.0), (0.04, 100.0), (INF, 100.0)]
    assert quantile(0.5, buckets) == pytest.approx(0.01)
    assert quantile(0.7, buckets) == pytest.approx(0.015)
    assert quantile(0.99, buckets) == pytest.approx(0.038)
    assert quantile(0.99, [(0.01, 0.0), (INF, 0.0)]) is None
    assert quantile(0.99, [(0.01, 1.0), (INF, 10.0)]) == 0.01  # in +Inf: the highest finite bound


def test_window_figures_over_three_scrapes():
    first = snap(100.0, 1000.0, 4.0, [(0.01, 0.0), (0.02, 0.0), (INF, 0.0)], 0.0, accept=6.0,
                 ttft=[(0.1, 0.0), (0.2, 0.0), (INF, 0.0)])
    middle = snap(110.0, 1500.0, 2.0, [(0.01, 50.0), (0.02, 80.0), (INF, 100.0)], 5.0, accept=5.0,
                  ttft=[(0.1, 4.0), (0.2, 5.0), (INF, 5.0)])
    last = snap(120.0, 2000.0, 3.0, [(0.01, 100.0), (0.02, 190.0), (INF, 200.0)], 10.0, aborted=1.0, accept=4.0,
                ttft=[(0.1, 8.0), (0.2, 10.0), (INF, 10.0)])
    # 200 tokens decoded in 12 s of steps: 16.67 tokens/s a request.
    middle["histograms"]["sglang:inter_token_latency_seconds"]["sum"] = 6.0
    last["histograms"]["sglang:inter_token_latency_seconds"]["sum"] = 12.0
    figures = window_figures([first, middle, last])
    assert figures["seconds"] == 20.0 and figures["samples"] == 3
    assert figures["tokens_per_s"] == 50.0 and figures["running_mean"] == 3.0
    assert figures["tokens_per_s_per_request"] == pytest.approx(16.67)
    assert figures["requests"] == 10 and figures["aborted"] == 1
    assert figures["abort_ratio"] == pytest.approx(1 / 11.0, abs=1e-4)
    assert figures["itl_p50_s"] == pytest.approx(0.01) and figures["itl_p99_s"] == 0.02
    assert 0.1 < figures["ttft_p99_s"] <= 0.2
    assert figures["accept_length"] == 5.0


def test_one_scrape_or_no_metric_gives_none():
    assert window_figures([snap(1.0, 1.0, 0.0, [(INF, 0.0)], 0.0)])["tokens_per_s"] is None
    empty = {"gauges": {}, "counters": {}, "histograms": {}}
    figures = window_figures([dict(empty, at=1.0), dict(empty, at=2.0)])
    assert figures["seconds"] == 1.0 and figures["tokens_per_s"] is None and figures["requests"] is None
    assert figures["accept_length"] is None and figures["itl_p99_s"] is None


def test_decode_per_request_is_the_inverse_of_the_mean_inter_token_latency():
    from ansible_collections.gpufleet.sglang.plugins.module_utils.metrics_window import decode_per_request

    first = snap(100.0, 1000.0, 2.0, [(0.01, 0.0), (INF, 0.0)], 0.0)
    last = snap(102.0, 1400.0, 2.0, [(0.01, 200.0), (INF, 200.0)], 1.0)
    # 200 tokens decoded in 2.5 s of steps (SGLang adds a step's time to the sum and counts its tokens): 80 tokens/s
    # a request, whatever the tokens counter says (one request of 400 tokens ended in these 2 s: 100 tokens/s a
    # request by the counter).
    last["histograms"]["sglang:inter_token_latency_seconds"]["sum"] = 2.5
    assert window_figures([first, last])["tokens_per_s_per_request"] == 80.0
    # Without the histogram: the tokens counter over the requests running.
    assert decode_per_request((None, None), 50.0, 2.0) == 25.0 and decode_per_request((None, None), None, 2.0) is None
    # With it but no step in the window: nothing decoded, no figure (not the lump of a request that ended in it).
    assert decode_per_request((0.0, 0.0), 50.0, 2.0) is None and decode_per_request((1.0, 10.0), None, None) == 10.0
