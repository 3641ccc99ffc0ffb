"""sglang_speed_probe's main(): the measurement's arguments (the server's URL, IPv6 in brackets, the server info read
through read_server_info), the bounds of each number, a server that cannot be measured as a failure with the
figures, the options only its action reads (taken, never used here). measure and read_server_info, which talk to the
server, are mocked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.action import sglang_speed_probe as action
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_speed_probe

from .module_runner import Calls, always_returned, argument_spec, host_msg, run_module

MEASURED = {"measured": True, "problem": None, "requests": 4, "output_tokens": 512, "elapsed_s": 2.0,
            "tokens_per_s": 256.0, "latency_s_median": 0.5, "latency_s_max": 0.6, "accept_length": 3.2,
            "accept_length_source": "server_info", "max_new_tokens": 128, "levels": [], "outputs": [],
            "degenerate": False}


@pytest.fixture
def server(monkeypatch):
    """measure and read_server_info mocked; calls holds what they were given. measure reads the server info once."""
    calls = Calls()
    calls.answer = MEASURED

    def measure(url, prompts, max_new_tokens, timeout, warmup, read_info, concurrency):
        calls.append(("measure", url, prompts, max_new_tokens, timeout, warmup, concurrency))
        calls.append(("info", read_info()))
        return dict(calls.answer)

    def read_server_info(url, timeout):
        calls.append(("read_server_info", url, timeout))
        return {"speculative_algorithm": "DFLASH"}, "/server_info"

    monkeypatch.setattr(sglang_speed_probe, "measure", measure)
    monkeypatch.setattr(sglang_speed_probe, "read_server_info", read_server_info)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_defaults_reach_the_measurement(server, check_mode):
    done = run_module(sglang_speed_probe, {}, check_mode=check_mode)
    assert not done.failed and done.result == dict(MEASURED, changed=False)
    assert sorted(done.result) == sorted(always_returned(sglang_speed_probe) + ["changed"])
    assert server == [("measure", "http://127.0.0.1:30000", [], 128, 120, 1, [1]),
                      ("read_server_info", "http://127.0.0.1:30000", 10.0),
                      ("info", {"speculative_algorithm": "DFLASH"})]


def test_the_options_as_given_and_an_ipv6_host(server):
    run_module(sglang_speed_probe, {"host": "::1", "port": 31000, "prompts": ["Hello"], "max_new_tokens": 64,
                                    "warmup_requests": 0, "timeout": 30, "concurrency": [1, 8]})
    assert server[0] == ("measure", "http://[::1]:31000", ["Hello"], 64, 30, 0, [1, 8])


def test_the_options_of_the_action_are_taken_and_not_used(server):
    # plugins/action/sglang_speed_probe.py reads them on the controller; the module documents and ignores them.
    assert set(action.CONTROLLER_OPTIONS) <= set(argument_spec(sglang_speed_probe))
    done = run_module(sglang_speed_probe, {"load": 6, "max_concurrency": 8, "baseline": {"tokens_per_s": 100.0},
                                           "min_speedup": 1.5, "min_accept_length": 2.0})
    assert not done.failed and "verdict" not in done.result
    assert server[0] == ("measure", "http://127.0.0.1:30000", [], 128, 120, 1, [1])


def test_a_server_that_cannot_be_measured_fails_with_the_figures(server):
    server.answer = dict(MEASURED, measured=False, problem="every request failed: connection refused")
    done = run_module(sglang_speed_probe, {"port": 30001})
    assert done.failed and done.msg == host_msg("the server at http://127.0.0.1:30001 could not be measured: every "
                                                "request failed: connection refused")
    assert dict(done.result, msg=None) == dict(server.answer, msg=None)


@pytest.mark.parametrize("option, value, low, high", [
    ("port", 0, 1, 65535), ("port", 65536, 1, 65535), ("max_new_tokens", 0, 1, 65536),
    ("max_new_tokens", 65537, 1, 65536), ("warmup_requests", -1, 0, 100), ("warmup_requests", 101, 0, 100),
    ("timeout", 0, 1, 86400), ("timeout", 86401, 1, 86400),
])
def test_each_number_within_its_bounds(server, option, value, low, high):
    done = run_module(sglang_speed_probe, {option: value})
    assert done.failed and done.msg == host_msg("%s must be between %d and %d, not %s" % (option, low, high, value))
    assert server == []


@pytest.mark.parametrize("levels", [[0], [1, 257]])
def test_each_concurrency_level_within_1_and_256(server, levels):
    done = run_module(sglang_speed_probe, {"concurrency": levels})
    assert done.failed and done.msg == host_msg("every concurrency level must be between 1 and 256, not %s (set "
                                                "sglang_dflash_speed_probe_concurrency)" % levels)
    assert server == []


@pytest.mark.parametrize("args, message", [
    ({"concurrency": ["many"]}, "concurrency"),
    ({"prompts": {"a": 1}}, "prompts"),
    ({"url": "http://127.0.0.1:30000"}, "Unsupported parameters"),
])
def test_bad_options(server, args, message):
    done = run_module(sglang_speed_probe, args)
    assert done.failed and message in done.msg, done.msg
