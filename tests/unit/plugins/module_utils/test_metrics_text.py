"""The metrics seam reads one /metrics scrape: SGLang 0.5.23's names and labels, summed over the series."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.metrics_text import (
    parse_samples,
    parse_types,
    scrape,
    snapshot,
)

LABELS = 'model_name="qwen",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
TEXT = """# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{%(l)s} 3.0
sglang:num_running_reqs{%(l)s,dp_rank="1"} 2.0
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{%(l)s} 6.25
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="qwen",engine_type="unified",is_streaming="true"} 1000.0
sglang:generation_tokens_total{model_name="qwen",engine_type="unified",is_streaming="false"} 24.0
sglang:generation_tokens_created{model_name="qwen"} 1.7e9
# TYPE sglang:inter_token_latency_seconds histogram
sglang:inter_token_latency_seconds_bucket{model_name="qwen",le="0.01"} 5.0
sglang:inter_token_latency_seconds_bucket{model_name="qwen",le="0.02"} 9.0
sglang:inter_token_latency_seconds_bucket{model_name="qwen",le="+Inf"} 10.0
sglang:inter_token_latency_seconds_sum{model_name="qwen"} 0.12
sglang:inter_token_latency_seconds_count{model_name="qwen"} 10.0
sglang:num_aborted_requests_total{model_name="qwen",note="a \\"quoted\\" label"} 2
""" % {"l": LABELS}


def test_samples_keep_labels_quotes_included():
    samples = parse_samples(TEXT)
    assert ("sglang:num_running_reqs", dict(model_name="qwen", engine_type="unified", tp_rank="0", pp_rank="0",
                                            moe_ep_rank="0"), 3.0) in samples
    aborted = [s for s in samples if s[0] == "sglang:num_aborted_requests_total"][0]
    assert aborted[1]["note"] == 'a "quoted" label' and aborted[2] == 2.0


def test_types_from_the_type_lines():
    assert parse_types(TEXT)["sglang:inter_token_latency_seconds"] == "histogram"


def test_snapshot_sums_series_and_sorts_buckets():
    snap = snapshot(TEXT, at=5.0)
    assert snap["at"] == 5.0
    assert snap["gauges"] == {"sglang:num_running_reqs": 5.0, "sglang:spec_accept_length": 6.25}
    assert snap["counters"] == {"sglang:generation_tokens_total": 1024.0, "sglang:num_aborted_requests_total": 2.0}
    hist = snap["histograms"]["sglang:inter_token_latency_seconds"]
    assert hist == {"buckets": [(0.01, 5.0), (0.02, 9.0), (float("inf"), 10.0)], "sum": 0.12, "count": 10.0}


def test_garbage_lines_are_skipped():
    assert snapshot("not a metric line at all\nx{ 1\nsglang:num_queue_reqs NaNx\n")["gauges"] == {}


def test_scrape_says_what_did_not_answer():
    snap, problem = scrape("http://127.0.0.1:30000/", get=lambda url, t: (200, TEXT), clock=lambda: 7.0)
    assert problem is None and snap["at"] == 7.0
    snap, problem = scrape("http://127.0.0.1:30000", get=lambda url, t: (404, '{"detail":"Not Found"}'))
    assert snap is None and problem == "GET http://127.0.0.1:30000/metrics: HTTP 404 (metrics need --enable-metrics)"
    _snap, problem = scrape("http://127.0.0.1:30000", get=lambda url, t: (0, "connection refused"))
    assert "connection refused" in problem
