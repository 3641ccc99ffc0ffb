"""unit_journal_info's main(): the mark (now_monotonic_us), the lines since a given mark or since the unit's last
start, a bare unit name as a service, the secrets redacted, and the bounds of lines. systemctl and journalctl are a
stand-in that answers as systemd 252 does (JSON entries)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from ansible_collections.gpufleet.sglang.plugins.modules import unit_journal_info

from .module_runner import always_returned, argument_spec, host_msg, run_module

NOW_US = 500000000
TOKEN = "hf_abcdefgh12345678"


def entry(monotonic_us, message, message_id=None):
    fields = {"__MONOTONIC_TIMESTAMP": str(monotonic_us), "MESSAGE": message}
    if message_id:
        fields["MESSAGE_ID"] = message_id
    return json.dumps(fields)


JOURNAL = [
    entry(149000000, "sglang 0.5.23, speculative_algorithm=NEXTN"),
    entry(150000000, "Starting sglang-qwen.service...", "7d4958e842da4a758f6c1cdc7b36dcc5"),
    entry(151000000, "server_args=ServerArgs(api_key='%s', speculative_algorithm='DFLASH')" % TOKEN),
    entry(152000000, "RuntimeError: drafter block size 16 != 8"),
]


@pytest.fixture
def systemd(monkeypatch):
    """systemctl show and journalctl as the module runs them; the calls are kept. rc: journalctl's exit code."""
    class Systemd(object):
        def __init__(self):
            self.calls = []
            self.rc = 0

        def __call__(self, argv):
            self.calls.append(argv)
            if argv[0] == "systemctl":
                return 0, "InactiveExitTimestampMonotonic=150000000\n", ""
            return self.rc, "".join(e + "\n" for e in JOURNAL) if self.rc == 0 else "", ""

    stand_in = Systemd()
    monkeypatch.setattr(unit_journal_info, "run_systemctl", stand_in)
    monkeypatch.setattr(unit_journal_info, "now_monotonic_us", lambda: NOW_US)
    return stand_in


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_lines_since_a_mark_secrets_redacted(systemd, check_mode):
    done = run_module(unit_journal_info, {"unit": "sglang-qwen", "since_monotonic_us": 149500000, "redact": [TOKEN]},
                      check_mode=check_mode)
    assert not done.failed
    # From the first start after the mark on; the token never returned.
    assert done.result == {"changed": False, "since_monotonic_us": 149500000, "now_monotonic_us": NOW_US, "lines": [
        "Starting sglang-qwen.service...",
        "server_args=ServerArgs(api_key='********', speculative_algorithm='DFLASH')",
        "RuntimeError: drafter block size 16 != 8"]}
    assert sorted(done.result) == sorted(always_returned(unit_journal_info) + ["changed"])
    (journalctl,) = systemd.calls
    assert journalctl[:8] == ["journalctl", "--unit", "sglang-qwen.service", "--lines", "40", "--no-pager",
                              "--output", "json"]


def test_without_a_mark_the_units_last_start(systemd):
    done = run_module(unit_journal_info, {"unit": "sglang-qwen.service", "lines": 1})
    assert systemd.calls[0] == ["systemctl", "show", "--no-pager", "-p", "InactiveExitTimestampMonotonic",
                                "sglang-qwen.service"]
    assert done.result["since_monotonic_us"] == 150000000
    assert done.result["lines"] == ["RuntimeError: drafter block size 16 != 8"]


def test_lines_0_takes_only_the_mark(systemd):
    done = run_module(unit_journal_info, {"unit": "sglang-qwen.service", "lines": 0, "since_monotonic_us": 1})
    assert done.result["lines"] == [] and done.result["now_monotonic_us"] == NOW_US


def test_a_journal_that_cannot_be_read_is_no_lines(systemd):
    systemd.rc = 1
    done = run_module(unit_journal_info, {"unit": "sglang-qwen", "since_monotonic_us": 1})
    assert not done.failed and done.result["lines"] == []


def test_the_secrets_are_kept_out_of_logs():
    assert argument_spec(unit_journal_info)["redact"]["no_log"] is True


@pytest.mark.parametrize("args, message", [
    ({"unit": "sglang", "lines": -1}, host_msg("lines must be at least 0, not -1")),
    ({}, "missing required arguments: unit"),
    ({"unit": "sglang", "since_monotonic_us": "yesterday"}, "since_monotonic_us"),
])
def test_bad_options(systemd, args, message):
    done = run_module(unit_journal_info, args)
    assert done.failed and message in done.msg, done.msg
    assert systemd.calls == []
