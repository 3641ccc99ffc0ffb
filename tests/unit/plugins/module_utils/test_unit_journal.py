"""The journal quoted after a failed start begins at that start, not with the previous server's lines."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.sglang.plugins.module_utils.unit_journal import journal_since_start, redact

BOOT = "0123456789abcdef0123456789abcdef"


def entry(monotonic_us, message, boot=BOOT):
    return json.dumps({"__MONOTONIC_TIMESTAMP": str(monotonic_us), "_BOOT_ID": boot, "MESSAGE": message})


class Systemd(object):
    def __init__(self, start_us, entries):
        self.start_us = start_us
        self.entries = entries
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv)
        if argv[0] == "systemctl":
            return 0, "InactiveExitTimestampMonotonic=%d\n" % self.start_us, ""
        return 0, "".join(e + "\n" for e in self.entries), ""


def read(systemd, lines=40):
    # Wall clock 1000 s, monotonic 200 s: a start at monotonic 150 s was at wall clock 950 s.
    return journal_since_start("sglang.service", lines, systemd, wall_clock=lambda: 1000.0,
                               monotonic=lambda: 200.0, boot_id=lambda: BOOT)


def test_lines_before_the_start_are_left_out_and_the_since_is_on_the_wall_clock():
    systemd = Systemd(150000000, [
        entry(149000000, "sglang 0.5.23, speculative_algorithm=NEXTN"),
        entry(149999999, "Stopped sglang.service."),
        entry(150000000, "Started sglang.service."),
        entry(151000000, "RuntimeError: checksum mismatch"),
    ])
    lines, since = read(systemd)
    assert lines == ["Started sglang.service.", "RuntimeError: checksum mismatch"] and since == 150000000
    journalctl = systemd.calls[1]
    assert journalctl[journalctl.index("--since") + 1] == "@949.000000"
    assert journalctl[journalctl.index("--output") + 1] == "json"


def test_the_last_lines_since_the_start_and_other_boots_left_out():
    systemd = Systemd(100, [entry(50, "old boot", boot="f" * 32)] + [entry(100 + i, "line %d" % i) for i in range(5)])
    lines, _since = read(systemd, lines=2)
    assert lines == ["line 3", "line 4"]


def test_a_message_that_is_not_utf8_arrives_as_bytes():
    systemd = Systemd(100, [json.dumps({"__MONOTONIC_TIMESTAMP": "200", "_BOOT_ID": BOOT,
                                        "MESSAGE": list(b"caf\xe9 \xff")})])
    lines, _since = read(systemd)
    assert lines == [b"caf\xe9 \xff".decode("utf-8", "replace")]


def test_a_unit_that_never_ran_gets_its_last_lines():
    systemd = Systemd(0, [entry(10, "a"), entry(20, "b")])
    lines, since = read(systemd)
    assert lines == ["a", "b"] and since == 0 and "--since" not in systemd.calls[1]


def test_a_mark_taken_before_the_restart_keeps_every_attempt_of_a_crash_loop():
    systemd = Systemd(170000000, [
        entry(140000000, "previous server: ready"),
        entry(150000001, "attempt 1: RuntimeError: checksum mismatch"),
        entry(170000001, "attempt 2: RuntimeError: checksum mismatch"),
    ])
    lines, since = journal_since_start("sglang.service", 40, systemd, since_us=150000000,
                                       wall_clock=lambda: 1000.0, monotonic=lambda: 200.0, boot_id=lambda: BOOT)
    assert lines == ["attempt 1: RuntimeError: checksum mismatch", "attempt 2: RuntimeError: checksum mismatch"]
    assert since == 150000000 and [c[0] for c in systemd.calls] == ["journalctl"]


def test_the_stop_of_the_previous_server_is_left_out():
    started = "39f53479d3a045ac8e11786248231fbf"
    systemd = Systemd(0, [
        entry(150000001, "Stopping sglang.service - SGLang server..."),
        entry(150000002, "previous server: shutting down"),
        json.dumps({"__MONOTONIC_TIMESTAMP": "150000003", "_BOOT_ID": BOOT, "MESSAGE_ID": started,
                    "MESSAGE": "Started sglang.service - SGLang server."}),
        entry(150000004, "new server: loading weights"),
    ])
    lines, _since = journal_since_start("sglang.service", 40, systemd, since_us=150000000,
                                        wall_clock=lambda: 1000.0, monotonic=lambda: 200.0, boot_id=lambda: BOOT)
    assert lines == ["Started sglang.service - SGLang server.", "new server: loading weights"]


def test_redact_replaces_longer_secrets_first_and_ignores_short_ones():
    lines = ["--api-key sk-secret-long --x abc", "token sk-secret"]
    assert redact(lines, ["sk-secret", "sk-secret-long", "abc", "", None]) == [
        "--api-key ******** --x abc", "token ********"]
