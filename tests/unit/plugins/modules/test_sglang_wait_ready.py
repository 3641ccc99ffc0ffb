"""sglang_wait_ready's main(): the unit and URL reach wait_ready with the one generation to try (or none), a ready
server that reports other settings than expected_server_info fails naming them, a server that is not ready fails with
its journal since the start, redacted (or not, with fail_when_not_ready false), and the bounds of each number.
wait_ready and the generation are mocked; systemctl and journalctl are a stand-in."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.speed_probe import DEFAULT_PROMPTS
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_wait_ready

from .module_runner import Calls, always_returned, argument_spec, host_msg, run_module

TOKEN = "sk-lab-0123456789"
READY = {"ready": True, "crashed": False, "reason": None, "elapsed_s": 12.5, "since_start_s": 12.4,
         "health_status": 200, "generation": {"ok": True, "latency_s": 0.2, "completion_tokens": 8, "problem": None},
         "server_info": {"speculative_algorithm": "DFLASH"}, "server_info_endpoint": "/server_info",
         "state": {"ActiveState": "active"}}
CRASHED = dict(READY, ready=False, crashed=True, reason="the unit failed (exit-code 1)", since_start_s=None,
               generation=None, server_info=None, state={"ActiveState": "failed"})
JOURNAL = [json.dumps({"__MONOTONIC_TIMESTAMP": str(100 + i), "MESSAGE": m}) for i, m in enumerate([
    "Started sglang-qwen.service.", "launch_server --api-key %s" % TOKEN, "RuntimeError: CUDA out of memory"])]


@pytest.fixture
def server(monkeypatch):
    """wait_ready and generate_once mocked, systemctl/journalctl a stand-in; calls holds what each was given."""
    calls = Calls()
    calls.answer = READY

    def wait_ready(unit, url, timeout, run_systemctl, poll, generate=None):
        calls.append(("wait_ready", unit, url, timeout, poll, run_systemctl is systemd))
        if generate is not None:
            calls.append(("generated", generate()))
        return dict(calls.answer)

    def generate_once(url, prompt, max_new_tokens, timeout):
        calls.append(("generate_once", url, prompt, max_new_tokens, timeout))
        return {"ok": True}

    def systemd(argv):
        calls.append((argv[0],) + tuple(argv[1:3]))
        if argv[0] == "systemctl":
            return 0, "InactiveExitTimestampMonotonic=100\n", ""
        return 0, "".join(line + "\n" for line in JOURNAL), ""

    monkeypatch.setattr(sglang_wait_ready, "wait_ready", wait_ready)
    monkeypatch.setattr(sglang_wait_ready, "generate_once", generate_once)
    monkeypatch.setattr(sglang_wait_ready, "run_systemctl", systemd)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_ready_server_after_one_generation(server, check_mode):
    done = run_module(sglang_wait_ready, {"service": "sglang-qwen"}, check_mode=check_mode)
    assert not done.failed and done.result == dict(READY, changed=False)
    assert set(always_returned(sglang_wait_ready)) <= set(done.result)
    assert server == [("wait_ready", "sglang-qwen.service", "http://127.0.0.1:30000", 600, 1.0, True),
                      ("generate_once", "http://127.0.0.1:30000", DEFAULT_PROMPTS[0], 8, 300),
                      ("generated", {"ok": True})]


def test_the_generation_is_bounded_by_the_timeout_or_skipped(server):
    run_module(sglang_wait_ready, {"service": "sglang@b", "port": 30001, "timeout": 60, "generation_tokens": 2,
                                   "poll_interval": 0.2})
    assert server[0] == ("wait_ready", "sglang@b.service", "http://127.0.0.1:30001", 60, 0.2, True)
    assert server[1] == ("generate_once", "http://127.0.0.1:30001", DEFAULT_PROMPTS[0], 2, 60)
    del server[:]
    run_module(sglang_wait_ready, {"service": "sglang-qwen", "check_generation": False})
    assert [c[0] for c in server] == ["wait_ready"]


def test_a_ready_server_must_report_the_settings_asked(server):
    server.answer = dict(READY, server_info={"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": "16",
                                             "speculative_num_draft_tokens": 8})
    expected = {"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": 16}
    done = run_module(sglang_wait_ready, {"service": "sglang-qwen", "expected_server_info": expected})
    # "16" as reported is the number 16 asked.
    assert not done.failed and "mismatch" not in done.result
    done = run_module(sglang_wait_ready, {"service": "sglang-qwen", "expected_server_info": dict(
        expected, speculative_algorithm="DDTREE", speculative_dflash_block_size=8)})
    assert done.failed and done.result["mismatch"] == [["speculative_algorithm", "DDTREE", "DFLASH"],
                                                       ["speculative_dflash_block_size", 8, "16"]]
    assert done.msg == ("the server is healthy but runs other speculative settings than asked (/server_info): "
                        "speculative_algorithm=DFLASH (asked DDTREE), speculative_dflash_block_size=16 (asked 8)")
    assert done.result["ready"] is True and "journal" not in done.result


def test_a_server_that_is_not_ready_fails_with_its_journal_redacted(server):
    server.answer = CRASHED
    done = run_module(sglang_wait_ready, {"service": "sglang-qwen", "redact": [TOKEN], "journal_lines": 2,
                                          "check_generation": False})
    assert done.failed and done.msg == host_msg("sglang-qwen.service is not ready after 12.5s: the unit failed "
                                                "(exit-code 1)")
    assert done.result["journal"] == ["launch_server --api-key ********", "RuntimeError: CUDA out of memory"]
    assert dict(done.result, msg=None, journal=None) == dict(CRASHED, msg=None, journal=None)
    # The lines since the unit's last start (no mark given).
    assert [c[0] for c in server] == ["wait_ready", "systemctl", "journalctl"]


def test_since_a_mark_and_without_failing(server):
    server.answer = CRASHED
    done = run_module(sglang_wait_ready, {"service": "sglang-qwen", "journal_since_monotonic_us": 101,
                                          "fail_when_not_ready": False, "check_generation": False})
    assert not done.failed and done.result["ready"] is False
    assert done.result["journal"][-1] == "RuntimeError: CUDA out of memory"
    assert [c[0] for c in server] == ["wait_ready", "journalctl"]


def test_the_secrets_are_kept_out_of_logs():
    spec = argument_spec(sglang_wait_ready)
    assert spec["redact"]["no_log"] is True and spec["generation_tokens"]["no_log"] is False


@pytest.mark.parametrize("args, message", [
    ({"port": 0}, "port must be at least 1, not 0"),
    ({"timeout": 0}, "timeout must be at least 1, not 0"),
    ({"journal_lines": -1}, "journal_lines must be at least 0, not -1"),
    ({"generation_tokens": 0}, "generation_tokens must be at least 1, not 0"),
    ({"port": 65536}, "port must be 1-65535 and poll_interval greater than 0"),
    ({"poll_interval": 0}, "port must be 1-65535 and poll_interval greater than 0"),
])
def test_the_bounds(server, args, message):
    done = run_module(sglang_wait_ready, dict({"service": "sglang-qwen"}, **args))
    assert done.failed and done.msg == host_msg(message)
    assert server == []


@pytest.mark.parametrize("args, message", [
    ({}, "missing required arguments: service"),
    ({"service": "sglang", "check_generation": "maybe"}, "check_generation"),
    ({"service": "sglang", "url": "http://127.0.0.1:30000"}, "Unsupported parameters"),
])
def test_bad_options(server, args, message):
    done = run_module(sglang_wait_ready, args)
    assert done.failed and message in done.msg, done.msg
    assert server == []
