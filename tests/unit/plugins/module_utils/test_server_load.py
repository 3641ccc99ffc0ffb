"""The drain reads the server's own load: /v1/loads (0.5.23), /metrics, /get_load."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.sglang.plugins.module_utils.server_load import read_load, wait_idle

LOADS_0523 = {"version": "0.5.23", "loads": [
    {"dp_rank": 0, "num_running_reqs": 3, "num_waiting_reqs": 2, "num_used_tokens": 900, "token_usage": 0.1},
    {"dp_rank": 1, "num_running_reqs": 1, "num_waiting_reqs": 0, "num_used_tokens": 10, "token_usage": 0.0}]}
METRICS = ('# TYPE sglang:num_running_reqs gauge\n'
           'sglang:num_running_reqs{model_name="qwen",engine_type="unified",tp_rank="0",pp_rank="0"} 4.0\n'
           'sglang:num_queue_reqs{model_name="qwen",engine_type="unified",tp_rank="0",pp_rank="0"} 1.0\n'
           'sglang:num_grammar_queue_reqs{model_name="qwen"} 7.0\n')


def server(answers):
    def get(url, timeout):
        path = url.split("127.0.0.1:30000", 1)[1].split("?")[0]
        return answers.get(path, (404, '{"detail":"Not Found"}'))
    return get


def test_v1_loads_sums_running_and_waiting_over_the_ranks():
    assert read_load("http://127.0.0.1:30000", get=server({"/v1/loads": (200, json.dumps(LOADS_0523))})) == \
        (6, "/v1/loads", None)


def test_metrics_when_there_is_no_v1_loads():
    assert read_load("http://127.0.0.1:30000", get=server({"/metrics": (200, METRICS)})) == (5, "/metrics", None)


def test_get_load_of_older_releases():
    get = server({"/get_load": (200, json.dumps([{"num_reqs": 2, "num_waiting_reqs": 1, "num_tokens": 5}]))})
    assert read_load("http://127.0.0.1:30000", get=get) == (3, "/get_load", None)


def test_a_server_without_any_load_endpoint_is_not_idle():
    result = wait_idle("http://127.0.0.1:30000", 10, get=server({}), sleep=lambda s: None)
    assert result["idle"] is False and "--enable-metrics" in result["reason"]


def test_a_server_that_does_not_answer_has_nothing_to_drain():
    result = wait_idle("http://127.0.0.1:30000", 10, get=lambda url, t: (0, "Connection refused"))
    assert result["idle"] is True and result["reason"] == "the server does not answer (Connection refused)"


def test_idle_after_two_quiet_reads_and_busy_after_the_timeout():
    counts = iter([2, 1, 0, 3, 0, 0])
    get = server({})

    def loads(url, timeout):
        if "/v1/loads" in url:
            return 200, json.dumps({"loads": [{"num_running_reqs": next(counts), "num_waiting_reqs": 0}]})
        return get(url, timeout)
    result = wait_idle("http://127.0.0.1:30000", 10, get=loads, sleep=lambda s: None)
    assert result["idle"] and result["requests_at_start"] == 2 and result["most_seen"] == 3
    ticks = iter(range(100))
    busy = wait_idle("http://127.0.0.1:30000", 3, get=lambda url, t: (200, json.dumps(LOADS_0523)),
                     clock=lambda: next(ticks), sleep=lambda s: None)
    assert busy["idle"] is False and busy["reason"] == "6 request(s) still running or queued after 3s (/v1/loads)"
