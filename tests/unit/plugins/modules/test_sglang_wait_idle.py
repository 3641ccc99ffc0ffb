"""sglang_wait_idle's main(): the server's URL and the wait's bounds reach wait_idle, a server that does not drain
fails the task (or not, with fail_when_busy false) with the figures. wait_idle, which polls the server, is mocked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_wait_idle

from .module_runner import Calls, always_returned, host_msg, run_module

IDLE = {"idle": True, "requests_at_start": 3, "most_seen": 3, "seconds": 4.5, "endpoint": "/metrics", "reason": None}
BUSY = {"idle": False, "requests_at_start": 5, "most_seen": 7, "seconds": 300.0, "endpoint": "/metrics",
        "reason": "7 requests still running after 300s"}


@pytest.fixture
def wait(monkeypatch):
    calls = Calls()
    calls.answer = IDLE

    def wait_idle(url, timeout, poll):
        calls.append((url, timeout, poll))
        return dict(calls.answer)

    monkeypatch.setattr(sglang_wait_idle, "wait_idle", wait_idle)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_an_idle_server(wait, check_mode):
    done = run_module(sglang_wait_idle, {}, check_mode=check_mode)
    assert not done.failed and done.result == dict(IDLE, changed=False)
    assert sorted(done.result) == sorted(always_returned(sglang_wait_idle) + ["changed"])
    assert wait == [("http://127.0.0.1:30000", 300, 0.5)]


def test_the_endpoint_and_the_wait_as_given(wait):
    run_module(sglang_wait_idle, {"host": "fe80::1", "port": 31000, "timeout": 60, "poll_interval": 2})
    assert wait == [("http://[fe80::1]:31000", 60, 2.0)]


def test_a_server_that_does_not_drain(wait):
    wait.answer = BUSY
    done = run_module(sglang_wait_idle, {"port": 30001})
    assert done.failed and done.msg == host_msg("http://127.0.0.1:30001 did not drain: 7 requests still running "
                                                "after 300s")
    assert dict(done.result, msg=None) == dict(BUSY, msg=None)
    done = run_module(sglang_wait_idle, {"fail_when_busy": False})
    assert not done.failed and done.result == dict(BUSY, changed=False)


@pytest.mark.parametrize("args", [{"timeout": 0}, {"poll_interval": 0}, {"poll_interval": -1.5}, {"port": 0},
                                  {"port": 65536}])
def test_the_bounds(wait, args):
    done = run_module(sglang_wait_idle, args)
    assert done.failed and done.msg == host_msg("timeout must be at least 1, poll_interval more than 0 and port "
                                                "1-65535")
    assert wait == []


@pytest.mark.parametrize("args, message", [
    ({"poll_interval": "fast"}, "poll_interval"),
    ({"fail_when_busy": "no way"}, "fail_when_busy"),
    ({"service": "sglang"}, "Unsupported parameters"),
])
def test_bad_options(wait, args, message):
    done = run_module(sglang_wait_idle, args)
    assert done.failed and message in done.msg, done.msg
