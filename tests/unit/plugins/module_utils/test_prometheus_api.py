"""The canary's figures from a Prometheus: PromQL over the window, by instance."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.module_utils.six.moves.urllib.parse import parse_qs, urlsplit
from ansible_collections.gpufleet.sglang.plugins.module_utils.prometheus_api import (
    QUERIES,
    promql,
    query,
    window_figures,
)

INSTANCES = ["10.0.0.1:30000", "10.0.0.2:30000"]


def answer(result):
    return 200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})


def test_promql_selects_the_instances_over_the_window():
    text = promql("itl_p99_s", INSTANCES, 60)
    assert text == ('histogram_quantile(0.99, sum by (instance, le) (rate(sglang:inter_token_latency_seconds_bucket'
                    '{instance=~"10\\\\.0\\\\.0\\\\.1:30000|10\\\\.0\\\\.0\\\\.2:30000"}[60s])))')


def test_query_reads_a_vector_and_drops_nan():
    seen = []

    def get(url, timeout):
        seen.append(url)
        return answer([{"metric": {"instance": "a"}, "value": [1.0, "2.5"]},
                       {"metric": {"instance": "b"}, "value": [1.0, "NaN"]}])
    vector, problem = query("http://prom:9090/", "up", at=12.0, get=get)
    assert problem is None and vector == [({"instance": "a"}, 2.5)]
    params = parse_qs(urlsplit(seen[0]).query)
    assert params == {"query": ["up"], "time": ["12.000"]} and seen[0].startswith("http://prom:9090/api/v1/query?")


def test_query_problems_name_prometheus():
    _v, problem = query("http://prom:9090", "up", get=lambda u, t: (0, "connection refused"))
    assert problem == "Prometheus http://prom:9090 cannot be reached (connection refused)"
    _v, problem = query("http://prom:9090", "bad(", get=lambda u, t: (
        400, json.dumps({"status": "error", "error": "parse error"})))
    assert problem == "Prometheus http://prom:9090 refused the query (HTTP 400: parse error): bad("


def test_window_figures_per_instance():
    values = {"tokens_per_s": {"10.0.0.1:30000": 100.0, "10.0.0.2:30000": 50.0},
              "running_mean": {"10.0.0.1:30000": 4.0, "10.0.0.2:30000": 0.0},
              "requests": {"10.0.0.1:30000": 40.2}, "aborted": {"10.0.0.1:30000": 0.0}}
    queries = dict((promql(name, INSTANCES, 30), name) for name in QUERIES)

    def get(url, timeout):
        name = queries[parse_qs(urlsplit(url).query)["query"][0]]
        return answer([{"metric": {"instance": i}, "value": [0, str(v)]} for i, v in values.get(name, {}).items()])
    figures, problem = window_figures("http://prom:9090", INSTANCES, 30, get=get)
    assert problem is None
    one, two = figures["10.0.0.1:30000"], figures["10.0.0.2:30000"]
    assert one["tokens_per_s_per_request"] == 25.0 and one["requests"] == 40 and one["abort_ratio"] == 0.0
    assert one["itl_p99_s"] is None and one["seconds"] == 30.0
    assert two["tokens_per_s_per_request"] is None and two["requests"] is None and two["abort_ratio"] is None
    # With the inter-token latency's sum and count: the inverse of the mean latency (the steps' seconds per token).
    values.update(itl_sum={"10.0.0.1:30000": 6.0}, itl_count={"10.0.0.1:30000": 480.0})
    figures, _problem = window_figures("http://prom:9090", INSTANCES, 30, get=get)
    assert figures["10.0.0.1:30000"]["tokens_per_s_per_request"] == 80.0
    assert "itl_sum" not in figures["10.0.0.1:30000"]
