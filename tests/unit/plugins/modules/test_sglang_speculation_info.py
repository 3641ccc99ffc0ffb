"""sglang_speculation_info's main(): each server's URL, the window and the probe's settings reach observe(), whose
evidence is returned as it is; bad bounds fail naming the unit. observe(), which reads the servers, is mocked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_speculation_info

from .module_runner import Calls, always_returned, host_msg, run_module

BOUNDS = "window must be at least 0, probe_max_new_tokens, timeout and min_requests at least 1"
EVIDENCE = [{"unit": "sglang-qwen.service", "url": "http://127.0.0.1:30001", "time": 1.0, "window": None,
             "metrics_problem": None, "probe": None}]


@pytest.fixture
def observed(monkeypatch):
    calls = Calls()

    def observe(servers, window, probe_max_new_tokens, probe_when, timeout, min_requests):
        calls.append((servers, window, probe_max_new_tokens, probe_when, timeout, min_requests))
        return EVIDENCE

    monkeypatch.setattr(sglang_speculation_info, "observe", observe)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_reads_each_server_over_one_window(observed, check_mode):
    done = run_module(sglang_speculation_info, {"servers": [{"unit": "sglang-qwen.service", "port": 30001},
                                                            {"unit": "sglang@b.service", "host": "fe80::1",
                                                             "port": 30002}]}, check_mode=check_mode)
    assert not done.failed and done.result == {"changed": False, "servers": EVIDENCE}
    assert sorted(done.result) == sorted(always_returned(sglang_speculation_info) + ["changed"])
    assert observed == [([{"unit": "sglang-qwen.service", "url": "http://127.0.0.1:30001"},
                          {"unit": "sglang@b.service", "url": "http://[fe80::1]:30002"}],
                         10.0, 32, "no_traffic", 30.0, 1)]


def test_the_probe_as_asked(observed):
    run_module(sglang_speculation_info, {"servers": [{"unit": "u", "port": 1}], "window": 0, "probe": "always",
                                         "probe_max_new_tokens": 64, "timeout": 5, "min_requests": 3})
    assert observed[0][1:] == (0.0, 64, "always", 5.0, 3)


@pytest.mark.parametrize("args, message", [
    ({"servers": [{"unit": "u", "port": 0}, {"unit": "v", "port": 70000}]}, "the port of u, v must be 1-65535"),
    ({"servers": [{"unit": "u", "port": 1}], "window": -1}, BOUNDS),
    ({"servers": [{"unit": "u", "port": 1}], "timeout": 0}, BOUNDS),
    ({"servers": [{"unit": "u", "port": 1}], "probe_max_new_tokens": 0}, BOUNDS),
    ({"servers": [{"unit": "u", "port": 1}], "min_requests": 0}, BOUNDS),
])
def test_the_bounds(observed, args, message):
    done = run_module(sglang_speculation_info, args)
    assert done.failed and done.msg == host_msg(message)
    assert observed == []
