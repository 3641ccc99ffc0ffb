"""server_probe: the server's base URL, its HTTP answers, the unit's state while it starts, the wait."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import server_probe
from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import (
    base_url,
    crash_reason,
    http_get,
    read_server_info,
    seconds_since_start,
    service_state,
    wait_ready,
)

URL = "http://127.0.0.1:30000"
RUNNING = {"ActiveState": "active", "SubState": "running", "NRestarts": "0", "MainPID": "7",
           "ExecMainStartTimestampMonotonic": "5000000"}


@pytest.mark.parametrize("host, port, url", [
    ("127.0.0.1", 30000, "http://127.0.0.1:30000"),
    ("gpu-1.example", "31000", "http://gpu-1.example:31000"),
    ("::1", 30000, "http://[::1]:30000"),
])
def test_base_url(host, port, url):
    assert base_url(host, port) == url


# ---- HTTP --------------------------------------------------------------------------------------------

class Answers(BaseHTTPRequestHandler):
    routes = {"/health": (200, ""), "/server_info": (200, '{"version": "0.5.23"}'),
              "/broken": (500, "Internal Server Error")}

    def do_GET(self):
        status, body = self.routes.get(self.path, (404, '{"detail":"Not Found"}'))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)  # shutdown() waits one poll
    thread.start()
    yield base_url("127.0.0.1", httpd.server_address[1])
    httpd.shutdown()
    httpd.server_close()


def test_http_get_answers_status_and_body(server):
    assert http_get(server + "/server_info", 5) == (200, '{"version": "0.5.23"}')
    assert http_get(server + "/broken", 5) == (500, "Internal Server Error")
    assert http_get(server + "/nothing", 5) == (404, '{"detail":"Not Found"}')


def test_http_get_says_why_nothing_answered(server):
    with HTTPServer(("127.0.0.1", 0), Answers) as closed:
        port = closed.server_address[1]
    status, reason = http_get(base_url("127.0.0.1", port) + "/health", 5)
    assert status == 0 and "refused" in reason.lower()


def fake_get(monkeypatch, answers):
    """server_probe.http_get answering {path: (status, body), or a list of them in turn}, 404 elsewhere.

    Returns the paths asked, in order.
    """
    asked = []

    def get(url, timeout):
        path = url[len(URL):]
        asked.append(path)
        answer = answers.get(path, (404, "{}"))
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        return answer
    monkeypatch.setattr(server_probe, "http_get", get)
    return asked


@pytest.mark.parametrize("answers, expected", [
    ({"/server_info": (200, '{"a": 1}')}, ({"a": 1}, "/server_info", None)),
    ({"/get_server_info": (200, '{"a": 1}')}, ({"a": 1}, "/get_server_info", None)),
    ({"/server_info": (503, "")}, (None, "/server_info", "/server_info answered 503")),
    ({"/server_info": (0, "connection refused")}, (None, "/server_info", "/server_info answered connection refused")),
    ({"/server_info": (200, "<html>")}, (None, "/server_info", "/server_info did not answer JSON")),
    ({"/server_info": (200, "[1]")}, (None, "/server_info", "/server_info did not answer a JSON object")),
    ({}, (None, None, "neither /server_info nor /get_server_info exists")),
])
def test_read_server_info_tries_the_new_endpoint_then_the_old(monkeypatch, answers, expected):
    fake_get(monkeypatch, answers)
    assert read_server_info(URL, 5) == expected


# ---- the unit --------------------------------------------------------------------------------------

class Systemctl(object):
    """A fake run_systemctl: each `systemctl show` answers the next state (the last one repeats)."""

    def __init__(self, *states):
        self.states = list(states)
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv)
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return 0, "".join("%s=%s\n" % kv for kv in state.items()), ""


def test_service_state_reads_systemctl_show():
    systemctl = Systemctl(dict(RUNNING, NRestarts="2"))
    state = service_state("sglang.service", systemctl)
    assert state["NRestarts"] == 2 and state["ActiveState"] == "active"
    assert systemctl.calls[0][:4] == ["systemctl", "show", "--no-pager", "-p"]
    assert systemctl.calls[0][4].split(",") == list(server_probe.STATE_PROPERTIES)
    assert systemctl.calls[0][5] == "sglang.service"


@pytest.mark.parametrize("state, reason", [
    ({"ActiveState": "active", "SubState": "running", "NRestarts": 0}, None),
    ({"ActiveState": "activating", "SubState": "start", "NRestarts": 0}, None),
    ({"ActiveState": "failed", "SubState": "failed", "Result": "exit-code", "NRestarts": 0},
     "the unit failed (exit-code)"),
    ({"ActiveState": "failed", "SubState": "failed", "NRestarts": 0}, "the unit failed (failed)"),
    # Restarted until systemd's start limit: the crash loop seen late (fleet-06-crash on a busy machine).
    ({"ActiveState": "failed", "SubState": "failed", "Result": "exit-code", "NRestarts": 5},
     "the server exited, systemd restarted it 5 time(s), then the unit failed (exit-code): a crash loop"),
    ({"ActiveState": "activating", "SubState": "auto-restart", "NRestarts": 0},
     "the server exited and systemd is about to restart it (crash loop)"),
    ({"ActiveState": "active", "SubState": "running", "NRestarts": 3},
     "the server exited and systemd restarted it 3 time(s) (crash loop)"),
    ({"ActiveState": "inactive", "SubState": "dead", "NRestarts": 0}, "the unit is inactive (dead): the server exited"),
    # A stop while the main process runs (someone stopped the unit): the next poll tells how it ends.
    ({"ActiveState": "deactivating", "SubState": "stop-sigterm", "NRestarts": 0, "MainPID": "7"}, None),
    ({"ActiveState": "deactivating", "SubState": "stop-sigkill", "NRestarts": 0}, None),
    # The main process ended and systemd kills what it left, which may take long (fleet-06-crash in CI: 330 s, its
    # TimeoutStopSec): the exit is reported at once.
    ({"ActiveState": "deactivating", "SubState": "stop-sigkill", "NRestarts": 0, "MainPID": "0", "ExecMainCode": "1",
      "ExecMainStatus": "1", "Restart": "on-failure"},
     "the server exited (status=1) and systemd is stopping what it left (stop-sigkill): it restarts it after "
     "(Restart=on-failure), a crash loop"),
    ({"ActiveState": "deactivating", "SubState": "stop-sigterm", "NRestarts": 0, "MainPID": "0", "ExecMainCode": "2",
      "ExecMainStatus": "6", "Restart": "no"},
     "the server was killed (signal 6) and systemd is stopping what it left (stop-sigterm)"),
])
def test_crash_reason(state, reason):
    assert crash_reason(state) == reason


def test_seconds_since_start_on_the_monotonic_clock():
    assert seconds_since_start({"ExecMainStartTimestampMonotonic": "5000000"}, clock=lambda: 65.5) == 60.5
    assert seconds_since_start({"ExecMainStartTimestampMonotonic": "0"}, clock=lambda: 65.5) is None
    assert seconds_since_start({"ExecMainStartTimestampMonotonic": "n/a"}, clock=lambda: 65.5) is None
    assert seconds_since_start({}, clock=lambda: 65.5) is None


# ---- waiting for the server --------------------------------------------------------------------------

class Clock(object):
    """A monotonic clock that moves only when the wait sleeps."""

    def __init__(self, now=10.0):
        self.now = now
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def wait(systemctl, clock, timeout=30, generate=None):
    return wait_ready("sglang.service", URL, timeout, systemctl, poll=2.0, clock=clock,
                      sleep=clock.sleep, generate=generate)


def test_ready_after_health_answers_then_server_info(monkeypatch):
    asked = fake_get(monkeypatch, {"/health": [(0, "connection refused"), (503, "loading"), (200, "")],
                                   "/server_info": (200, '{"version": "0.5.23"}')})
    clock = Clock()
    result = wait(Systemctl(RUNNING), clock)
    assert asked == ["/health", "/health", "/health", "/server_info"]
    assert result["ready"] is True and result["crashed"] is False and result["reason"] is None
    assert result["server_info"] == {"version": "0.5.23"} and result["server_info_endpoint"] == "/server_info"
    assert result["elapsed_s"] == 4.0 and clock.slept == [2.0, 2.0] and result["health_status"] == 200
    assert result["generation"] is None and result["since_start_s"] == 9.0


def test_a_crash_loop_is_reported_without_waiting_for_the_timeout(monkeypatch):
    asked = fake_get(monkeypatch, {})
    clock = Clock()
    result = wait(Systemctl(dict(RUNNING, ActiveState="activating", SubState="start"),
                            dict(RUNNING, ActiveState="activating", SubState="auto-restart")), clock, timeout=600)
    assert result["ready"] is False and result["crashed"] is True
    assert result["reason"] == "the server exited and systemd is about to restart it (crash loop)"
    assert asked == ["/health"] and clock.slept == [2.0] and result["health_status"] == 404


def test_the_first_generation_must_succeed(monkeypatch):
    fake_get(monkeypatch, {"/health": (200, ""), "/server_info": (200, "{}")})
    generation = {"ok": False, "status": 500, "latency_s": 0.1, "completion_tokens": 0, "problem": "CUDA error",
                  "text": "not returned"}
    result = wait(Systemctl(RUNNING), Clock(), generate=lambda: generation)
    assert result["ready"] is False and result["crashed"] is False
    assert result["reason"] == "/health answered 200 but the first generation failed: CUDA error"
    assert result["generation"] == {"ok": False, "status": 500, "latency_s": 0.1, "completion_tokens": 0,
                                    "problem": "CUDA error", "verify_steps": None, "accept_length": None}
    ok = dict(generation, ok=True, problem=None, completion_tokens=8,
              meta={"spec_verify_ct": 2, "spec_accept_length": 4.0})
    proven = wait(Systemctl(RUNNING), Clock(), generate=lambda: ok)
    # What speculation did for the first request: the figure a day-two check compares with.
    assert proven["ready"] is True and proven["generation"]["verify_steps"] == 2
    assert proven["generation"]["accept_length"] == 4.0


def test_health_that_never_answers_times_out(monkeypatch):
    fake_get(monkeypatch, {"/health": (503, "loading")})
    clock = Clock()
    result = wait(Systemctl(RUNNING), clock, timeout=5)
    assert result["ready"] is False and result["crashed"] is False
    assert result["reason"] == ("/health did not answer 200 within 5s (last: 503; the unit was active (running), main "
                                "PID 7, started 11 s earlier, restarted 0 time(s))") and result["elapsed_s"] == 6.0


def test_server_info_confirmation():
    expected = {"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": 16}
    assert server_probe.confirm_server_info({"speculative_algorithm": "DFLASH",
                                             "speculative_dflash_block_size": 16}, expected) == []
    assert server_probe.confirm_server_info({"speculative_algorithm": None,
                                             "speculative_dflash_block_size": "16"}, expected) == [
        ["speculative_algorithm", "DFLASH", None]]


def test_the_server_info_message_names_each_setting_as_reported_and_as_asked():
    mismatch = [["speculative_algorithm", "DFLASH", None], ["speculative_num_draft_tokens", 16, "8"]]
    assert server_probe.server_info_message(mismatch, "/server_info") == (
        "the server is healthy but runs other speculative settings than asked (/server_info): "
        "speculative_algorithm= (asked DFLASH), speculative_num_draft_tokens=8 (asked 16)")
