"""The speed proof's arithmetic (module_utils/speed_probe.py). The meta_info shapes are the
ones SGLang 0.5.11-0.5.23 build in tokenizer_manager._calculate_spec_decoding_metrics."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from ansible_collections.gpufleet.sglang.plugins.module_utils.speed_probe import (
    accept_length,
    degenerate,
    http_post_json,
    measure,
)


def answer(tokens, verify_ct=None, accept=None):
    meta = {"completion_tokens": tokens, "e2e_latency": 0.1}
    if verify_ct is not None:
        meta["spec_verify_ct"] = verify_ct
    if accept is not None:
        meta["spec_accept_length"] = accept
    return {"meta": meta, "completion_tokens": tokens}


def test_acceptance_is_token_weighted_over_the_requests():
    # 128 + 64 tokens in 20 + 16 verify steps: 5.33, not the mean of 6.4 and 4.0.
    assert accept_length([answer(128, 20), answer(64, 16)]) == (5.333, "meta_info.spec_verify_ct")


def test_acceptance_falls_back_to_the_per_request_figure_then_the_server_average():
    assert accept_length([answer(10, accept=3.0), answer(10, accept=5.0)]) == (4.0, "meta_info.spec_accept_length")
    info = {"internal_states": [{"avg_spec_accept_length": 6.25}, {"last_gen_throughput": 3}]}
    assert accept_length([answer(10)], info) == (6.25, "server_info.internal_states.avg_spec_accept_length")
    assert accept_length([answer(10)], {"internal_states": [{}]}) == (None, None)


def fake_post(responses):
    """The HTTP layer replaced by a list of (status, body) answers, in order."""
    calls = []

    def post(url, payload, timeout):
        calls.append(payload)
        status, body = responses[len(calls) - 1]
        return status, body, str(body)

    return post, calls


def clock_of(step):
    """A clock that advances `step` seconds at each reading (a request reads it twice: `step` seconds)."""
    t = [0.0]

    def clock():
        t[0] += step
        return t[0]

    return clock


def test_measure_warms_up_then_counts_only_the_prompts():
    ok = {"meta_info": {"completion_tokens": 16, "spec_verify_ct": 4}}
    post, calls = fake_post([(200, ok)] * 3)
    m = measure("http://h:1", ["a", "b"], 16, 5, warmup=1, post=post, clock=clock_of(0.5))
    assert m["measured"] and m["requests"] == 2 and m["output_tokens"] == 32 and m["elapsed_s"] == 1.0
    assert m["tokens_per_s"] == 32.0 and m["accept_length"] == 4.0 and m["latency_s_median"] == 0.5
    assert calls[0]["sampling_params"] == {"max_new_tokens": 16, "temperature": 0, "ignore_eos": True}
    assert [c["text"] for c in calls] == ["a", "a", "b"]


def test_measure_names_the_failing_request():
    post, _calls = fake_post([(200, {"meta_info": {"completion_tokens": 4}}), (400, {"error": "grammar"})])
    m = measure("http://h:1", ["a", "b"], 4, 5, warmup=0, post=post, clock=clock_of(0.1))
    assert not m["measured"] and m["problem"].startswith("request 2 of 2: POST /generate answered 400")


def test_measure_at_each_concurrency_level_and_keep_the_answers():
    ok = {"text": " one two three four five six seven eight", "meta_info": {"completion_tokens": 16}}
    post, calls = fake_post([(200, ok)] * (1 + 2 + 4 * 2))
    m = measure("http://h:1", ["a", "b"], 16, 5, warmup=1, post=post, clock=clock_of(0.5), concurrency=[1, 4])
    assert m["measured"] and len(calls) == 11
    assert [lv["concurrency"] for lv in m["levels"]] == [1, 4]
    assert m["levels"][0]["tokens_per_s"] == m["tokens_per_s"] == 32.0
    load = m["levels"][1]
    assert load["requests"] == 8 and load["output_tokens"] == 128 and load["problem"] is None
    assert load["tokens_per_s_per_request"] == 32.0 and load["tokens_per_s"] > 0
    assert m["outputs"] == [ok["text"], ok["text"]] and m["degenerate"] == []


def test_a_failure_at_a_level_is_the_measurement_s_problem():
    ok = {"text": "x", "meta_info": {"completion_tokens": 16}}
    post, _calls = fake_post([(200, ok)] * 3 + [(500, {"error": "boom"})] * 4)
    m = measure("http://h:1", ["a", "b"], 16, 5, warmup=1, post=post, clock=clock_of(0.5), concurrency=[2])
    assert not m["measured"]
    assert m["problem"].startswith("4 of 4 requests at concurrency 2: POST /generate answered 500")


def test_degenerate_answers():
    assert degenerate(" the" * 20) == "'the' is 100% of the answer"
    assert degenerate("the cat sat on the mat and then the dog came") is None
    assert degenerate("the the") is None  # too short to judge


def test_plain_http_posts_json_and_reads_the_status_and_body():
    """http:// goes through the standard library's client (no TLS context per request); what comes back is the
    same shape as before: (status, JSON, text), and (0, None, why) when nothing listens."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, self.headers["Content-Type"], json.loads(body)))
            code = 200 if self.path == "/generate" else 404
            out = json.dumps({"meta_info": {"completion_tokens": 3}}).encode() if code == 200 else b"Not Found"
            self.send_response(code)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()  # shutdown() waits one poll
    try:
        base = "http://127.0.0.1:%d" % server.server_address[1]
        assert http_post_json(base + "/generate", {"text": "x"}, 5) == (
            200, {"meta_info": {"completion_tokens": 3}}, '{"meta_info": {"completion_tokens": 3}}')
        assert http_post_json(base + "/other?a=1", {}, 5) == (404, None, "Not Found")
        assert seen == [("/generate", "application/json", {"text": "x"}), ("/other?a=1", "application/json", {})]
    finally:
        server.shutdown()
        server.server_close()
    status, body, why = http_post_json(base + "/generate", {}, 5)
    assert (status, body) == (0, None) and why
